"""One interface over HyTE models and plain Euclidean encoders, for retrieval, evaluation and the CLI.

* ``HyteEncoder``: a HyTE model (FH or H) and its tokenizer. Documents are hyperboloid points, queries are
  sign-flipped, and ``query_vectors @ document_vectors.T`` is the Lorentz inner product (larger = nearer).
* ``EuclideanEncoder``: any Hugging Face encoder with masked mean pooling and cosine similarity (vectors are
  L2-normalised, so the dot product is the cosine), the usual Euclidean baseline. A sentence-transformers folder
  is read the way sentence-transformers reads it (``load_encoder``): its token limit (``sentence_bert_config.json``),
  pooling mode (``1_Pooling/config.json``) and similarity, so scores match its evaluators and mteb.

Both have ``encode(texts, role)``, ``scores(queries, documents)`` and ``radii(texts)`` (time coordinate for HyTE,
the norm of the un-normalised pooled vector for Euclidean models), so evaluation code treats them alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from transformers import AutoModel, AutoTokenizer

from . import auto_classes  # noqa: F401  (checkpoints load with the installed HyTE code)
from .artifacts import holds
from .bundled import resolve_model
from .io import json_or_empty, read_json_file
from .model_kinds import MODEL_KINDS
from .modeling_hyte import (
    HyTEPreTrainedModel,
    batches_by_length,
    module_folder_message,
    not_a_model_folder,
    sentence_transformers_model_above,
)

class _Encoder:
    """What both encoders share: a model (put in eval mode) with its tokenizer, a name (by default the model's), a
    ``max_length``, and ``lowercase``: texts are lowercased before tokenizing."""

    lowercase = False

    def __init__(self, model, tokenizer, name: str | None = None, max_length: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name or model.config.name_or_path or type(model).__name__
        self.max_length = max_length

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @property
    def token_limit(self) -> int:
        """The tokens of a text that reach its vector (the rest is cut): max_length, or the model's positions."""
        return self.max_length or self.model.config.max_position_embeddings

    def count_truncated(self, texts: list[str], chunk: int = 2048) -> int:
        """How many of ``texts`` take more than ``token_limit`` tokens ([CLS] and [SEP] included; lowercased first
        with ``lowercase``, as encoded): each is encoded from its start only. Counted ``chunk`` texts at a time,
        keeping only lengths (a corpus tokenized whole, untruncated, would hold every token id at once)."""
        texts = [t.lower() for t in texts] if self.lowercase else texts
        cut = 0
        for start in range(0, len(texts), chunk):
            lengths = self.tokenizer(list(texts[start:start + chunk]), truncation=False, return_length=True,
                                     return_attention_mask=False, return_token_type_ids=False,
                                     verbose=False)["length"]  # verbose=False: no "longer than the maximum" warning
            cut += sum(length > self.token_limit for length in lengths)
        return cut


class HyteEncoder(_Encoder):
    """A HyTE model with its tokenizer: ``encode(texts, role)`` -> points (documents) or flipped points (queries);
    for the Euclidean twin (EucBERT, curvature 0) its pooled vectors, compared by cosine (``scores``)."""

    @property
    def curvature(self) -> float:
        return float(self.model.config.curvature) if self.model.is_hyperbolic else 0.0

    @property
    def kind(self) -> str:
        """"hyperbolic" (Lorentz inner products) or "euclidean" (cosines), as for ``EuclideanEncoder``."""
        return "hyperbolic" if self.curvature > 0 else "euclidean"

    @property
    def similarity(self) -> str:
        """What ``scores`` computes from ``encode``'s vectors: "lorentz" (query @ document.T of flipped queries) or
        "cosine" (the Euclidean twin's vectors keep their norms: scale them to unit length first)."""
        return "lorentz" if self.curvature > 0 else "cosine"

    def encode(self, texts: list[str], role: str = "document", batch_size: int = 32,
               show_progress_bar: bool | None = None) -> np.ndarray:
        return self.model.encode(texts, self.tokenizer, role=role, batch_size=batch_size, max_length=self.max_length,
                                 show_progress_bar=show_progress_bar)

    def scores(self, queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
        """(Q, D) encoded queries x (N, D) encoded documents -> (Q, N) similarities: Lorentz inner products, or for
        the Euclidean twin (EucBERT) cosines, the similarity it trains with (its vectors keep their norms, which
        ``radii`` reads)."""
        if self.kind == "euclidean":
            queries, documents = _unit_rows(queries), _unit_rows(documents)
        return queries @ documents.T

    def pooled(self, texts: list[str], batch_size: int = 32, show_progress_bar: bool | None = None) -> np.ndarray:
        """The Euclidean twin's pooled vectors, norms kept (as ``EuclideanEncoder.pooled``)."""
        if self.kind != "euclidean":
            raise ValueError(f"{self.name} is hyperbolic: its vectors are points (encode), not pooled vectors")
        return self.encode(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)

    def radii(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Specificity of texts as documents: x_0 (hyperbolic) or the vector norm (the Euclidean twin)."""
        return np.asarray(self.model.radii(self.encode(texts, batch_size=batch_size)))


class PhraseEncoder(HyteEncoder):
    """A phrase model (``HyTEPhraseModel``, H+) as a single-vector encoder: its global vector, which is what a
    phrase index's global index holds (documents as points, queries sign-flipped for a lorentz model). Lets plain
    search, ``hyte rag`` and the lineage check treat phrase index folders like plain ones."""

    @property
    def dim(self) -> int:
        return self.model.backbone.config.hidden_size

    @property
    def curvature(self) -> float:
        return float(self.model.curvature) if self.model.config.geometry == "lorentz" else 0.0

    @property
    def token_limit(self) -> int:
        return self.max_length or self.model.backbone.config.max_position_embeddings  # the phrase config has none

    def encode(self, texts: list[str], role: str = "document", batch_size: int = 32,
               show_progress_bar: bool | None = None) -> np.ndarray:
        encoded = self.model.encode_phrases(list(texts), self.tokenizer, role=role, batch_size=batch_size,
                                            max_length=self.max_length)
        return np.stack([e["global"] for e in encoded]).astype(np.float32)

    def radii(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        documents = self.encode(texts, batch_size=batch_size)
        return documents[:, 0] if self.model.config.geometry == "lorentz" else np.linalg.norm(documents, axis=1)


POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len_tokens", "lasttoken")  # sentence-transformers' names


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """(N, D) -> (N, D) rows scaled to norm 1 (a zero row stays zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _pool(tokens: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """(B, T, H) token states, (B, T) attention mask -> (B, H), as sentence-transformers' Pooling computes them."""
    weights = mask.unsqueeze(-1).to(tokens.dtype)
    if mode == "max":
        return tokens.masked_fill(weights == 0, float("-inf")).max(dim=1).values
    if mode in ("cls", "lasttoken"):
        positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
        # The first / last unmasked position, whichever side the tokenizer pads.
        index = (mask.argmax(1) if mode == "cls" else (positions * mask).argmax(1))
        return tokens[torch.arange(tokens.shape[0]), index]
    count = weights.sum(1).clamp_min(1e-9)
    return (tokens * weights).sum(1) / (count if mode == "mean" else count.sqrt())


class EuclideanEncoder(_Encoder):
    """A Hugging Face encoder with masked pooling (mean by default); cosine similarity through L2-normalised
    vectors, or the plain dot product with ``normalize=False``. ``lowercase``: lowercase texts before tokenizing
    (sentence-transformers' ``do_lower_case``)."""

    kind = "euclidean"
    curvature = 0.0

    def __init__(self, model, tokenizer, name: str | None = None, max_length: int | None = None,
                 pooling: str = "mean", normalize: bool = True, lowercase: bool = False):
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}; got {pooling!r}.")
        # sentence-transformers' default limit: the tokenizer's, capped at the model's positions.
        limits = [getattr(model.config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
        super().__init__(model, tokenizer, name, max_length or min([limit for limit in limits if limit] or [512]))
        self.pooling = pooling
        self.normalize = normalize
        self.lowercase = lowercase

    @property
    def similarity(self) -> str:
        """What ``scores`` computes: "cosine" (``encode`` returns unit vectors) or "dot" (``normalize=False``)."""
        return "cosine" if self.normalize else "dot"

    @torch.no_grad()
    def pooled(self, texts: list[str], batch_size: int = 32, show_progress_bar: bool | None = None) -> np.ndarray:
        """The pooled vectors before any normalisation (N, D): their norms carry what the radius carries for a
        hyperbolic model, and HiT reads them as points of a Poincaré ball."""
        texts = [text.lower() for text in texts] if self.lowercase else list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for index in batches_by_length(texts, batch_size, show_progress_bar, "encode"):
            # Right padding whatever the tokenizer's default: the base model's positions count from the first column.
            batch = self.tokenizer([texts[i] for i in index], padding=True, truncation=True,
                                   max_length=self.max_length, padding_side="right", return_tensors="pt")
            tokens = self.model(**batch).last_hidden_state
            out[index] = _pool(tokens, batch["attention_mask"], self.pooling).float().numpy()
        return out

    def encode(self, texts: list[str], role: str = "document", batch_size: int = 32,
               show_progress_bar: bool | None = None) -> np.ndarray:
        if role not in ("document", "query"):
            raise ValueError(f"role must be 'document' or 'query'; got {role!r}.")
        vectors = self.pooled(texts, batch_size, show_progress_bar)
        return _unit_rows(vectors) if self.normalize else vectors

    def scores(self, queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
        return queries @ documents.T

    def radii(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Norms of the un-normalised pooled vectors (the Euclidean analogue of the radius)."""
        return np.linalg.norm(self.pooled(texts, batch_size, None), axis=1)


# sentence-transformers' older Pooling config: one boolean per mode.
_LEGACY_POOLING_KEYS = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
                        ("pooling_mode_mean_tokens", "mean"),
                        ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
                        ("pooling_mode_weightedmean_tokens", "weightedmean"), ("pooling_mode_lasttoken", "lasttoken"))


def sentence_transformers_options(path: str | Path) -> dict:
    """``EuclideanEncoder`` options that reproduce a local sentence-transformers folder ({} for other folders).

    Reads ``modules.json`` and the module configs as sentence-transformers does: ``max_length`` from the Transformer
    module's ``max_seq_length`` (newer folders keep it as the tokenizer's ``model_max_length``), ``lowercase`` from its ``do_lower_case``, ``pooling`` from the Pooling module, and
    ``normalize``: a Normalize module, or cosine similarity (``config_sentence_transformers.json``; the default),
    which on normalised vectors is the dot product. Raises ValueError for a pipeline that this path would not
    reproduce (other modules, several pooling modes, a similarity other than cosine or dot).
    """
    path = Path(path)
    if not (path / "modules.json").is_file():
        return {}
    options = {}
    normalized = False
    for entry in json.loads((path / "modules.json").read_text(encoding="utf-8")):
        kind = entry["type"].rpartition(".")[2]
        config_dir = path / entry.get("path", "")
        if kind == "Transformer":
            config = json_or_empty(config_dir / "sentence_bert_config.json")
            if config.get("max_seq_length"):
                options["max_length"] = int(config["max_seq_length"])
            options["lowercase"] = bool(config.get("do_lower_case", False))
        elif kind == "Pooling":
            config = json_or_empty(config_dir / "config.json")
            modes = config.get("pooling_mode") or [mode for key, mode in _LEGACY_POOLING_KEYS if config.get(key)]
            modes = [modes] if isinstance(modes, str) else list(modes) or ["mean"]
            if len(modes) != 1 or modes[0] not in POOLING_MODES:
                raise ValueError(f"{path}: pooling {modes} is not supported here (one of {POOLING_MODES}).")
            options["pooling"] = modes[0]
        elif kind == "Normalize":
            normalized = True
        else:
            raise ValueError(f"{path}: the sentence-transformers module {entry['type']} is not reproduced by the "
                             "Euclidean encoder (Transformer, Pooling and Normalize are); use hyte eval mteb.")
    similarity = json_or_empty(path / "config_sentence_transformers.json").get("similarity_fn_name") or "cosine"
    if similarity not in ("cosine", "dot"):
        raise ValueError(f"{path}: similarity {similarity!r} is not supported here (cosine or dot).")
    options["normalize"] = normalized or similarity == "cosine"
    return options


# Any one of these in a model folder holds its tokenizer (fast tokenizers, or a WordPiece / SentencePiece vocabulary).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model", "spiece.model")


def _not_hyte_message(name: str, model_type: str) -> str:
    return (f"{name} is a {model_type!r} model, not a HyTE model: this takes a model hyte trained (the model folder "
            "hyte demo or hyte quickstart writes, or a run's final/ from hyte train). A plain encoder is what HyTE-H "
            "is built on (a training config's model: {build: hyte_h, path: NAME}); hyte eval retrieval scores it as "
            "a Euclidean baseline")


def load_encoder(path: str | Path, kind: str = "auto", max_length: int | None = None) -> HyteEncoder | EuclideanEncoder:
    """Load a model folder, hub id or bundled alias (``hyte.bundled``) as a HyTE encoder or, for any other encoder,
    a Euclidean one.

    ``kind``: "auto" (by config.json's model_type), "hyte" or "euclidean". A Euclidean local folder saved by
    sentence-transformers is encoded as sentence-transformers encodes it (``sentence_transformers_options``); any
    other encoder with mean pooling and cosine similarity. ``max_length`` overrides the token limit.
    """
    if kind not in ("auto", "hyte", "euclidean"):
        raise ValueError(f"kind must be 'auto', 'hyte' or 'euclidean'; got {kind!r}.")
    name, path = str(path), resolve_model(path)
    if Path(path).exists() and not holds(Path(path), "model"):
        raise FileNotFoundError(not_a_model_folder(path))
    model_type = None  # a Hub id's: known once it loads
    if Path(path).is_dir():  # a damaged config.json is named, not left to json's bare message from deeper down
        model_type = read_json_file(Path(path) / "config.json", "save the model again (save_pretrained) or download "
                                    "it again").get("model_type")
    hyte_model = model_type in MODEL_KINDS  # loaded as HyteEncoder, or PhraseEncoder for a phrase model
    if kind == "auto":
        kind = "hyte" if hyte_model else "euclidean"
    if kind == "hyte" and not hyte_model and model_type:
        # Refused before its weights load (the bundled MiniLM, offered by --help, failed after loading).
        raise ValueError(_not_hyte_message(name, model_type))
    if kind == "euclidean" and hyte_model and model_type != "hyte_euc":
        raise ValueError(f"{path} is a hyperbolic HyTE model: load it as one (kind 'hyte' or 'auto'; on the command "
                         "line drop --kind euclidean)")
    options = sentence_transformers_options(path) if kind == "euclidean" and Path(path).is_dir() else {}
    if max_length is not None and max_length < 3:
        raise ValueError(f"max_length {max_length} leaves no token of the text ([CLS] and [SEP] take 2): give 3 or "
                         "more, or leave it out for the model's own limit")
    if max_length:
        options["max_length"] = max_length
    if Path(path).is_dir() and not any((Path(path) / name).is_file() for name in TOKENIZER_FILES):
        model_above = sentence_transformers_model_above(path)
        if model_above is not None:  # a module's folder holds its own config.json, so it got this far
            raise FileNotFoundError(module_folder_message(path, model_above))
        raise FileNotFoundError(f"{path} has no tokenizer ({' or '.join(TOKENIZER_FILES)}): another tokenizer would "
                                "split the texts differently. Save the tokenizer into the model folder "
                                "(tokenizer.save_pretrained(folder))")
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    try:
        model, loading = AutoModel.from_pretrained(path, trust_remote_code=True, dtype=torch.float32,
                                                   output_loading_info=True)
    except SafetensorError as error:
        raise ValueError(f"{path}: the weights file cannot be read ({error}); it is damaged or incomplete. Copy the "
                         "model folder again, or save the model again with save_pretrained.") from None
    missing = set(loading["missing_keys"])
    if kind == "euclidean" and missing and all(key.startswith("pooler.") for key in missing):
        # Saved without its pooler (hyte's training drops it; mean pooling never reads it): transformers re-creates
        # it at random, which would change the model's fingerprint, and so its index lineage, with every load.
        model.pooler = None
    if kind == "hyte" and missing:
        # transformers would initialise them at random and only print a report: the vectors would be meaningless.
        missing = sorted(missing)
        raise ValueError(f"{path}: the weights file lacks {len(missing)} of the model's parameters ({', '.join(missing[:3])}"
                         f"{', ...' if len(missing) > 3 else ''}); it does not hold this model's weights")
    if kind == "hyte":
        if hasattr(model, "encode_phrases"):
            return PhraseEncoder(model, tokenizer, name=name, max_length=max_length)
        if not isinstance(model, HyTEPreTrainedModel) and not hasattr(model, "encode"):
            raise ValueError(_not_hyte_message(name, model.config.model_type))
        return HyteEncoder(model, tokenizer, name=name, max_length=max_length)
    if model.config.model_type == "hyte_euc":  # EucBERT pools as its config says (mean or CLS), not by default
        options.setdefault("pooling", model.config.pooling)
    return EuclideanEncoder(model, tokenizer, name=name, **options)
