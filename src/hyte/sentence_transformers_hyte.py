"""sentence-transformers modules for HyTE: hyperbolic pooling and the query time flip (shipped as remote code).

A HyTE SentenceTransformer is ``[Transformer (HyTE model) -> HyperbolicPooling -> Router(query: TimeFlip(True),
document: TimeFlip(False))]`` with the stock ``similarity_fn_name="dot"``. ``HyperbolicPooling`` gives one point per
text on the hyperboloid <x, x>_L = -c (time coordinate first); ``encode_query`` flips its sign, q~ = (-q_0, q_s), so
``q~ . d = <q, d>_L`` and every stock consumer of "dot" ranks by geodesic distance (not document-document scores:
those need ``hyte.integrations.sentence_transformers``).

This file is copied next to ``modules.json`` when the model is saved and imports only torch, sentence_transformers
and its sibling ``lorentz``, so ``SentenceTransformer(path, trust_remote_code=True)`` works where ``hyte`` is not
installed. Ordinary ``model.save`` / ``save_pretrained`` / ``push_to_hub`` / trainer checkpoints produce such a
self-contained directory (see ``_RootFileModule``).

``HyperbolicSentenceTransformer`` (shipped here too) adds the checks that no module can make, such as refusing the
Euclidean post-processing sentence-transformers applies after the last module.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import numbers
import os
import shutil
import sys
import tempfile
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module
from torch import Tensor

from .lorentz import check_curvature, flip_time, outward_einstein_midpoint, tangent_mean

__all__ = ["HyperbolicPooling", "HyperbolicSentenceTransformer", "TimeFlip", "refuse_euclidean_options"]

# "model": the model's own pooled point (below); the others pool the token points here.
POOLING_MODES = ("model", "oem", "einstein", "mean", "cls")

# The name this file has at the root of a saved model. Module types are written to modules.json and
# router_config.json as f"{cls.__module__}.{cls.__name__}"; with the bare file name as __module__ they read
# "sentence_transformers_hyte.HyperbolicPooling", which sentence-transformers resolves (trust_remote_code=True) to
# the copy of this file at the model root, whether this class came from the installed package
# (hyte.sentence_transformers_hyte) or from a checkpoint's remote code (transformers_modules.<...>).
_ROOT_MODULE_NAME = __name__.rpartition(".")[2]

# Files that must sit at the model root for this one to import: itself and the siblings it imports.
_CODE_FILES = (Path(__file__), Path(__file__).with_name("lorentz.py"))

# Written by SentenceTransformer.save into the model root before any module is saved: marks the root.
_ROOT_MARKER = "config_sentence_transformers.json"


def _model_root(module_dir: Path) -> Path:
    """The directory of the SentenceTransformer being saved that contains ``module_dir``.

    A top-level module is saved in ``<root>/<idx>_<Name>``, a routed one in ``<root>/<idx>_Router/<route_id>``; the
    root is the nearest of those holding the marker file. A module saved on its own (no marker) keeps its code in
    its own directory.
    """
    for candidate in (module_dir, module_dir.parent, module_dir.parent.parent):
        if (candidate / _ROOT_MARKER).is_file():
            return candidate
    return module_dir


def _rebuild(class_name: str, config: dict[str, Any]) -> Module:
    """Unpickling helper: a module from its class name and config (the modules here have no weights)."""
    return {"HyperbolicPooling": HyperbolicPooling, "TimeFlip": TimeFlip}[class_name](**config)


class _RootFileModule(Module):
    """A weightless module whose code travels with the model: saved as its config plus this file at the root."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__module__ = _ROOT_MODULE_NAME

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        root = _model_root(Path(output_path))
        for source in _CODE_FILES:
            target = root / source.name
            if not (target.exists() and target.samefile(source)):
                shutil.copyfile(source, target)

    def __reduce__(self):
        # Pickle by config through a function of the real (importable) module: the class's __module__ names the
        # file at a model root, which is not importable in another process.
        return _rebuild, (type(self).__name__, self.get_config_dict())


def refuse_euclidean_options(normalize_embeddings: bool, truncate_dim: int | None, precision: str = "float32") -> None:
    """Raise ``ValueError`` for the Euclidean post-processing options of ``SentenceTransformer.encode``."""
    if precision not in ("float32", None):
        raise ValueError(
            f"precision={precision!r} quantises every coordinate on a scale fitted to Euclidean vectors; the time "
            "coordinate of a HyTE point is computed from all the others, so quantised vectors are no longer points of "
            "the hyperboloid and their Lorentz inner products are not distances. Use the float32 vectors."
        )
    if normalize_embeddings:
        raise ValueError(
            "normalize_embeddings=True rescales every vector to Euclidean length 1. HyTE embeddings are points on "
            "the hyperboloid <x,x>_L = -c (time coordinate first); rescaling moves them off it and breaks the "
            "Lorentz similarity. Use the vectors as they are: model.similarity(encode_query(...), "
            "encode_document(...)) is already the Lorentz inner product, which ranks by geodesic distance."
        )
    if truncate_dim is not None:
        raise ValueError(
            f"truncate_dim={truncate_dim} keeps the first coordinates of each vector (Matryoshka truncation), a "
            "Euclidean operation. A HyTE vector's first coordinate is its time coordinate, computed from all space "
            "coordinates, so a prefix is not a point of a smaller hyperboloid and its inner products are not "
            "Lorentzian. Use the full vectors, or train a HyTE model with a smaller hidden_size."
        )


def _has_visible_text(text: str) -> bool:
    """Whether ``text`` holds a letter, digit, punctuation mark or symbol: a tokenizer drops the rest (spaces,
    zero-width and control characters, lone combining accents), leaving nothing to embed."""
    return any(unicodedata.category(character)[0] in "LNPS" for character in text)


def _at_the_origin(out, rows: list[int], c: float):
    """``out`` (what ``encode`` returned: one vector, a (N, D) array or tensor, or a list of vectors) with ``rows``
    set to the origin (sqrt(c), 0, ..., 0) of H_c, time-flipped where the route flipped them (their time coordinate
    is negative). Without this a blank text gets the point of [CLS] [SEP] alone, the same for every such text.
    Tensors are copied: encode returns inference tensors, which refuse in-place writes."""
    def origin_like(vector):
        origin = vector.clone() if isinstance(vector, Tensor) else vector.copy()
        origin[1:] = 0.0
        origin[0] = math.copysign(math.sqrt(c), float(vector[0]))
        return origin

    if getattr(out, "ndim", 2) == 1:  # one text given as a string
        return origin_like(out)
    if isinstance(out, list):
        return [origin_like(vector) if row in rows else vector for row, vector in enumerate(out)]
    out = out.clone() if isinstance(out, Tensor) else out
    for row in rows:
        out[row] = origin_like(out[row])
    return out


# Files that make a folder one of hyte's non-model artifacts (an index folder, a training run, vector shards, a
# local PostgreSQL server): a model saved into it would mix with them (and ship them on a push). A copy of
# hyte.artifacts.markers(*NOT_MODELS) (a test keeps them equal): this file travels without hyte.
_NOT_A_MODEL_FOLDER = ("run.json", "index.json", "metadata.json", "phrase_index.json", "manifest.json",
                       "hyte_postgres.json")


def saved_weights_differ(folder: str | os.PathLike, model) -> bool:
    """Whether ``folder``'s model.safetensors holds other weights than ``model`` (other names, shapes or values).
    Names and shapes come from the file's header; values are read one tensor at a time and the first difference
    ends the comparison (a fine-tuned model's first tensor differs), so a save rarely reads the whole file."""
    from safetensors import safe_open

    current = model.state_dict()
    with safe_open(str(Path(folder) / "model.safetensors"), framework="pt") as stored:
        names = list(stored.keys())
        if set(names) != set(current) or any(stored.get_slice(name).get_shape() != list(current[name].shape)
                                             for name in names):
            return True
        return any(not torch.equal(stored.get_tensor(name), current[name].detach().cpu()) for name in names)


def _route_of(embeddings, which: str) -> str:
    """"query" when every row's time coordinate is negative (flipped), "document" when every row's is positive."""
    if isinstance(embeddings, list):
        embeddings = torch.stack([torch.as_tensor(row) for row in embeddings]) if embeddings else torch.empty(0)
    vectors = torch.as_tensor(embeddings)
    time = vectors.reshape(-1, vectors.shape[-1])[:, 0] if vectors.numel() else vectors  # (N,): first coordinates
    if time.numel() and bool((time < 0).all()):
        return "query"
    if time.numel() and bool((time > 0).all()):
        return "document"
    raise ValueError(
        f"the {which} argument mixes query vectors (time coordinate < 0, from encode_query) and document vectors "
        "(> 0, from encode_document), or is empty; pass the vectors of one route per side"
    )


CARD_TASK = "hierarchy-aware semantic search in hyperbolic space: score queries against documents as under Scoring"
CARD_TAGS = ("hyte", "hyperbolic", "lorentz")
CARD_SCORING = """## Scoring

The vectors are points of the Lorentz model of hyperbolic space (the hyperboloid ⟨x, x⟩_L = -c, time coordinate
first; c is the `curvature` of the HyperbolicPooling module above), not directions. Load the model as
`HyperbolicSentenceTransformer` (the stock class plus the checks below; it ships as code in the repository with the
modules: `transformers.dynamic_module_utils.get_class_from_dynamic_module(
"sentence_transformers_hyte.HyperbolicSentenceTransformer", model_id)(model_id, trust_remote_code=True)`, or
`hyte.HyperbolicSentenceTransformer`). `SentenceTransformer(model_id, trust_remote_code=True)` gives the same vectors
without the checks.

- **Query against documents:** `encode_query` returns sign-flipped points (-q0, q1, ...), so the dot product of a
  query vector with an `encode_document` vector is their Lorentz inner product ⟨q, d⟩_L. `model.similarity` ("dot")
  computes it: larger is nearer, and the ranking is the ranking by geodesic distance.
- **Geodesic distance:** d = sqrt(c) arccosh(-⟨q, d⟩_L / c); `hyte.lorentz.distance_from_inner(scores, c)`
  computes it stably (float64).
- **FAISS:** an exact `IndexFlatIP` over the `encode_document` vectors, searched with `encode_query` vectors, is
  exact nearest-neighbour search by geodesic distance. Do not use HNSW with inner product on these vectors (its graph
  is built from document-document dot products, which are not hyperbolic); IVF-Flat with inner product works.
- **Not Euclidean:** cosine similarity, L2-normalisation (`normalize_embeddings=True`) and Matryoshka truncation
  (`truncate_dim`) destroy the geometry (HyperbolicSentenceTransformer's `encode` refuses the last two), and the dot
  product of two documents (or two queries) is not a Lorentz inner product (its `similarity` refuses it): encode one
  side with `encode_query`, or use
  `hyte.integrations.sentence_transformers.lorentz_similarity`. Clustering needs geodesic distances, not cosine.

"""


def _caller_outside_sentence_transformers() -> int:
    """The ``stacklevel`` that makes a warning raised in a module's ``on_model_ready`` name the first line outside
    the sentence-transformers package (the user's ``SentenceTransformer(...)``), not the loader's internals."""
    frame, level = sys._getframe(2), 2  # the caller of on_model_ready is stacklevel 2
    while frame.f_back is not None and "sentence_transformers" in Path(frame.f_code.co_filename).parts:
        frame, level = frame.f_back, level + 1
    return level


def _card_template(base_template: Path) -> Path:
    """sentence-transformers' card template with the Scoring section before "## Usage", written once to a file
    named after its content (``ModelCard.from_template`` reads a path)."""
    text = base_template.read_text(encoding="utf-8")
    marker = "## Usage"
    text = text.replace(marker, CARD_SCORING + marker, 1) if marker in text else text + "\n" + CARD_SCORING
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"hyte-st-card-{digest}.md"
    if not path.is_file():
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # concurrent writers never see half a file
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    return path


def _use_hyperbolic_card(card) -> None:
    """Point the model's card data at the Lorentz card; a task name or template the user set is kept."""
    defaults = type(card).__dataclass_fields__
    if card.task_name == defaults["task_name"].default:
        card.task_name = CARD_TASK
    if card.template_path == defaults["template_path"].default:
        card.template_path = _card_template(card.template_path)
    card.tags = [*card.tags, *(tag for tag in CARD_TAGS if tag not in card.tags)]


class HyperbolicPooling(_RootFileModule):
    """Sentence points (B, D) on the hyperboloid, in float32 or float64 (the geometry never runs in half precision).

    Mode ``"model"`` (what ``hyte.sentence_transformer`` builds): the HyTE model pooled the text itself, with its
    own pooling and, for HyTE-H with a specificity head, the head that places the point at its radius; the
    Transformer module put that point in ``features["sentence_embedding"]`` (B, D) and this module checks and keeps
    it, so the vectors are exactly ``model.encode``'s.

    The other modes pool ``features["token_embeddings"]`` (B, T, D) here, masked by ``features["attention_mask"]``
    (B, T) (``lorentz.py``): ``"oem"`` Outward Einstein Midpoint with token weights x_0^p (p = 1 by default);
    ``"einstein"`` the Einstein midpoint (OEM with p = 0); ``"mean"`` expmap0 of the masked mean of the tokens'
    tangent vectors at the origin; ``"cls"`` the first token. They ignore a specificity head: use them only for
    pooling ablations on models without one.

    Args:
        embedding_dimension: D, the ambient size of a point (time coordinate included).
        curvature: c > 0 of the hyperboloid <x, x>_L = -c (sectional curvature -1/c).
        mode: one of ``POOLING_MODES``.
        p: the OEM exponent (used by ``"oem"`` only), >= 0.
    """

    config_keys = ["embedding_dimension", "curvature", "mode", "p"]

    def __init__(self, embedding_dimension: int, curvature: float = 1.0, mode: str = "oem", p: float = 1.0) -> None:
        super().__init__()
        if mode not in POOLING_MODES:
            raise ValueError(f"mode must be one of {POOLING_MODES}; got {mode!r}.")
        check_curvature(curvature)
        if p < 0:
            raise ValueError(f"p must be >= 0 (0 is the Einstein midpoint); got {p}.")
        if embedding_dimension < 2:
            raise ValueError(f"embedding_dimension counts the time coordinate and must be >= 2; got {embedding_dimension}.")
        self.embedding_dimension = int(embedding_dimension)
        self.curvature = float(curvature)
        self.mode = mode
        self.p = float(p)

    def forward(self, features: dict[str, Tensor], **kwargs) -> dict[str, Tensor]:
        if self.mode == "model" and "sentence_embedding" not in features:
            raise ValueError(
                "HyperbolicPooling(mode='model') keeps the HyTE model's own pooled point, but the Transformer "
                "module gave token embeddings only: build the model with hyte.sentence_transformer(path).")
        points = features["sentence_embedding" if self.mode == "model" else "token_embeddings"]
        if points.shape[-1] != self.embedding_dimension:
            raise ValueError(
                f"HyperbolicPooling expects points of size {self.embedding_dimension} (time included); got "
                f"{points.shape[-1]}. Is the Transformer module a HyTE model with this hidden_size?"
            )
        points = points.to(torch.promote_types(points.dtype, torch.float32))  # (B, D) pooled or (B, T, D) tokens
        mask = features["attention_mask"].to(points.dtype) if self.mode != "model" else None
        if self.mode == "model":
            pooled = points
        elif self.mode == "cls":
            pooled = points[:, 0]
        elif self.mode == "mean":
            pooled = tangent_mean(points, mask, self.curvature)
        else:
            p = 0.0 if self.mode == "einstein" else self.p
            pooled = outward_einstein_midpoint(points, mask, p=p, c=self.curvature)
        features["sentence_embedding"] = pooled
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension

    def on_model_ready(self, model) -> None:
        """Give ``model`` "dot" similarity and the card (written by ``model.save``) that says how to score; refuse a
        ``truncate_dim`` or another similarity given at load. The checks at call time are
        ``HyperbolicSentenceTransformer``'s."""
        # Read the raw attribute: the public getter turns an unset name into "cosine".
        similarity = getattr(model, "_similarity_fn_name", None)
        if similarity is None:
            model.similarity_fn_name = "dot"
        elif similarity != "dot":
            raise ValueError(
                f"similarity_fn_name={similarity!r} does not fit a HyTE model: its query vectors are time-flipped "
                "hyperboloid points, so only 'dot' gives the Lorentz inner product <q, d>_L. Load it without "
                "similarity_fn_name (or with 'dot')."
            )
        refuse_euclidean_options(False, getattr(model, "truncate_dim", None))
        # By name: a pipeline loaded with trust_remote_code holds this file's root copy, whose classes are not hyte's.
        if not any(cls.__name__ == "HyperbolicSentenceTransformer" for cls in type(model).__mro__):
            warnings.warn(
                "a HyTE pipeline loaded as a plain SentenceTransformer gives the right vectors, but its encode does "
                "not refuse Euclidean options (normalize_embeddings, truncate_dim) and its similarity does not "
                "refuse two documents; load it as HyperbolicSentenceTransformer (see its docstring, or the model "
                "card) for those checks",
                stacklevel=_caller_outside_sentence_transformers())
        _use_hyperbolic_card(model.model_card_data)


class TimeFlip(_RootFileModule):
    """Negate the time coordinate of ``features["sentence_embedding"]`` (B, D) when ``flip`` is true.

    The query route uses ``TimeFlip(True)`` and the document route ``TimeFlip(False)``, so that the dot product of a
    query vector with a document vector is their Lorentz inner product (``lorentz.flip_time``).
    """

    config_keys = ["flip"]

    def __init__(self, flip: bool = True) -> None:
        super().__init__()
        self.flip = bool(flip)

    def forward(self, features: dict[str, Tensor], **kwargs) -> dict[str, Tensor]:
        if self.flip:
            features["sentence_embedding"] = flip_time(features["sentence_embedding"])
        return features


class HyperbolicSentenceTransformer(SentenceTransformer):
    """The stock SentenceTransformer with the checks that hyperboloid points need; the vectors are the same.

    ``hyte.sentence_transformer(...)`` builds one, and ``HyperbolicSentenceTransformer(path_or_id,
    trust_remote_code=True)`` loads a saved HyTE pipeline as one. Where ``hyte`` is not installed, take the class from
    the model's own files (it ships at the root, as the modules do)::

        from transformers.dynamic_module_utils import get_class_from_dynamic_module
        cls = get_class_from_dynamic_module("sentence_transformers_hyte.HyperbolicSentenceTransformer", path_or_id)
        model = cls(path_or_id, trust_remote_code=True)

    What it adds to the stock model (a plain ``SentenceTransformer`` gives the same vectors without these):

    * ``encode`` (and so ``encode_query``, ``encode_document``, evaluators, mteb's wrapper) refuses the Euclidean
      post-processing options (``normalize_embeddings``, ``truncate_dim``, quantising ``precision``), token outputs,
      a prompt that does not choose the route, text pairs and a ``batch_size`` that is not a whole number; a blank
      text gets the origin (the most general point) and a warning instead of the point of an empty sequence.
    * ``similarity`` / ``similarity_pairwise`` refuse two sides of one route: "dot" is the Lorentz inner product only
      between a query vector (time coordinate < 0) and a document vector (> 0).
    * ``save`` / ``save_pretrained`` refuse a folder that holds an index, a training run or vector shards, the model
      folder the pipeline was built from, and (unless ``overwrite=True``) a folder holding another model's weights.
    """

    def encode(self, *args, **kwargs):
        arguments = inspect.signature(super().encode).bind_partial(*args, **kwargs).arguments
        task = arguments.get("task", arguments.get("kwargs", {}).get("task"))  # encode_query passes task="query"
        if arguments.get("prompt_name") is not None and task is None:
            raise ValueError(
                f"prompt_name={arguments['prompt_name']!r} adds a prompt but does not choose the route: a query must "
                "also be time-flipped. Use encode_query(...) / encode_document(...) (or task='query' / 'document').")
        if arguments.get("output_value", "sentence_embedding") not in ("sentence_embedding", None):
            raise ValueError(
                f"output_value={arguments['output_value']!r}: a HyTE model's modules emit one hyperboloid point per "
                "text ('sentence_embedding'); its token points come from the HyTE model itself: "
                "model[0].auto_model(**model.tokenizer(texts, return_tensors='pt')).last_hidden_state")
        batch_size = arguments.get("batch_size", 32)
        # sentence-transformers checks only batch_size <= 0: a float failed deep in range(), a str in a comparison.
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"batch_size must be a whole number > 0; got {batch_size!r}.")
        inputs = arguments.get("inputs")
        if isinstance(inputs, (list, tuple)):
            pairs = [i for i, item in enumerate(inputs) if isinstance(item, (list, tuple))]
            if pairs:  # sentence-transformers would encode it as a text pair: one vector for two texts
                raise TypeError(
                    f"inputs[{pairs[0]}] is a {type(inputs[pairs[0]]).__name__}: a HyTE model embeds single texts, "
                    "one point each; text pairs are cross-encoder input. Give a flat list of strings.")
        limit = getattr(getattr(getattr(self[0], "auto_model", None), "config", None), "max_position_embeddings", None)
        if limit is not None and self.max_seq_length is not None and self.max_seq_length > limit:
            raise ValueError(f"max_seq_length = {self.max_seq_length} is above the model's {limit} positions: "
                             f"a longer text could not be encoded; set model.max_seq_length to at most {limit}")
        truncate_dim = arguments.get("truncate_dim")
        refuse_euclidean_options(bool(arguments.get("normalize_embeddings", False)),
                                 truncate_dim if truncate_dim is not None else self.truncate_dim,
                                 arguments.get("precision", "float32"))
        texts = [inputs] if isinstance(inputs, str) else list(inputs) if isinstance(inputs, (list, tuple)) else []
        blank = [i for i, text in enumerate(texts) if isinstance(text, str) and not _has_visible_text(text)]
        if blank:  # hyte's own encode does the same: one blank passage must not abort a corpus (a BEIR or mteb run)
            warnings.warn(f"encode: {len(blank)} text(s) have nothing to embed (empty, whitespace or invisible "
                          f"characters; the first is text {blank[0]}, {texts[blank[0]][:20]!r}): each gets the origin, "
                          "the most general point", stacklevel=2)
        out = super().encode(*args, **kwargs)
        return _at_the_origin(out, blank, self._curvature()) if blank else out

    def encode_query(self, *args, **kwargs):
        self._refuse_task("encode_query", "query", kwargs)
        return super().encode_query(*args, **kwargs)

    def encode_document(self, *args, **kwargs):
        self._refuse_task("encode_document", "document", kwargs)
        return super().encode_document(*args, **kwargs)

    @staticmethod
    def _refuse_task(method: str, task: str, kwargs: dict) -> None:
        # The stock method passes task itself: Python's "got multiple values for keyword argument 'task'" named
        # encode, which the caller never called.
        if "task" in kwargs:
            raise TypeError(f"{method} chooses the route itself (task={task!r}); got task={kwargs['task']!r} as "
                            f"well: drop it, or call model.encode(..., task={kwargs['task']!r}).")

    def similarity(self, embeddings1, embeddings2) -> Tensor:
        self._check_sides("similarity", embeddings1, embeddings2)
        return super().similarity(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1, embeddings2) -> Tensor:
        self._check_sides("similarity_pairwise", embeddings1, embeddings2)
        return super().similarity_pairwise(embeddings1, embeddings2)

    def _check_sides(self, method: str, embeddings1, embeddings2) -> None:
        """A point's time coordinate is >= sqrt(c) > 0 and a flipped query's <= -sqrt(c), so the sign tells the
        routes apart exactly. Two documents (or two queries) would give -q_0 d_0 ... with the wrong sign on the time
        term: a plausible number, not an error, which is why this is checked."""
        if self.similarity_fn_name != "dot":
            raise ValueError(
                f"similarity_fn_name was set to {self.similarity_fn_name!r}; a HyTE model scores with 'dot' "
                "only (its query vectors are time-flipped hyperboloid points, so only the dot product gives "
                "<q, d>_L). Set model.similarity_fn_name = 'dot'.")
        routes = [_route_of(embeddings1, "first"), _route_of(embeddings2, "second")]
        if sorted(routes) != ["document", "query"]:
            raise ValueError(
                f"model.{method}(a, b) takes one side from encode_query and the other from encode_document: only then "
                f"is its dot product the Lorentz inner product <q, d>_L. Both sides here are {routes[0]} vectors. For "
                "document-document or query-query scores use hyte.integrations.sentence_transformers."
                "lorentz_similarity(a, b, c) (or geodesic_similarity), which take vectors of either route.")

    def save(self, path, *args, overwrite: bool = False, **kwargs) -> None:
        """The stock save (``save_pretrained`` and ``push_to_hub`` go through it), after the folder checks above.

        The model's own folder (``hyte.sentence_transformer(M).save(M)`` rewrote every file of M in place) is refused
        rather than given only the sentence-transformers files: every model folder hyte writes already is a
        sentence-transformers folder, and a rewrite in place can leave a half-written model or change files that
        the model's indexes were built with. Saving over an earlier save of the same weights is harmless."""
        held = [marker for marker in _NOT_A_MODEL_FOLDER if (Path(path) / marker).is_file()]
        if held:
            raise FileExistsError(
                f"{path} holds {held[0]}: it is an index, training-run, vector or PostgreSQL folder, not a model "
                "folder; saving the model there would mix its files with that folder's (and a push of it would "
                "upload them). Save it to a folder of its own.")
        model = getattr(self[0], "model", None)
        source = getattr(getattr(model, "config", None), "name_or_path", None)
        source = Path(source) if isinstance(source, str) and source and Path(source).is_dir() else None
        if source is not None and Path(path).is_dir() and os.path.samefile(path, source):
            raise ValueError(
                f"{path} is the model folder this sentence-transformers pipeline was built from ({source}): saving "
                "would rewrite its files in place (config.json, the weights, the tokenizer). "
                + ("It already is a sentence-transformers folder (SentenceTransformer(folder, trust_remote_code=True) "
                   "loads it). " if (source / "modules.json").is_file() else "")
                + "Save the pipeline to a new folder instead, e.g. model.save(\"hyte-st\")")
        weights = Path(path) / "model.safetensors"
        if not overwrite and model is not None and weights.is_file() and saved_weights_differ(path, model):
            raise FileExistsError(
                f"{path} holds another model (its model.safetensors differs from this pipeline's weights): saving "
                "would replace that model's weights and leave its other files (a model card, hyte_card.json) "
                "describing weights that are gone. Save to a new folder, or pass overwrite=True to replace it.")
        super().save(path, *args, **kwargs)

    def save_pretrained(self, path, *args, overwrite: bool = False, **kwargs) -> None:
        self.save(path, *args, overwrite=overwrite, **kwargs)

    def _curvature(self) -> float:
        # By name, as in on_model_ready: the pooling module may be the root copy of this file's class.
        return next(module.curvature for module in self.modules() if type(module).__name__ == "HyperbolicPooling")
