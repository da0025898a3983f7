"""HyTE models as sentence-transformers models: build, save self-contained, score, train and evaluate.

``sentence_transformer(...)`` builds ``[Transformer (HyTE-FH or HyTE-H) -> HyperbolicPooling ->
Router(query: TimeFlip(True), document: TimeFlip(False))]`` with ``similarity_fn_name="dot"`` (the modules are the
remote code ``hyte/sentence_transformers_hyte.py``). Query vectors come out sign-flipped, so the stock dot product of
a query and a document is their Lorentz inner product: everything that scores with ``model.similarity`` (the stock
``InformationRetrievalEvaluator``, mteb, FAISS ``IndexFlatIP``) ranks by geodesic distance. Document-document and
query-query scores need ``lorentz_similarity`` or ``geodesic_similarity``. docs/hf-and-export.md has the rest.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module, Router, Transformer
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.util import dot_score
from torch import Tensor
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.dynamic_module_utils import get_relative_import_files

from .. import auto_classes  # noqa: F401  (checkpoints load with the installed HyTE code)
from ..artifacts import holds
from ..lorentz import add_time, pairwise_distance, pairwise_inner
from ..model_kinds import MODEL_KINDS
from ..retrieval.store import check_positive_int
from ..sentence_transformers_hyte import HyperbolicPooling, HyperbolicSentenceTransformer, TimeFlip

__all__ = [
    "HYPERBOLIC_MODEL_TYPES",
    "LorentzContrastiveLoss",
    "geodesic_similarity",
    "hyte_curvature",
    "hyte_information_retrieval_evaluator",
    "lorentz_similarity",
    "save_model_folder",
    "save_sentence_transformer",
    "sentence_transformer",
]

# The encoder kinds whose vectors are hyperboloid points (hyte.model_kinds); phrase models have their own module.
HYPERBOLIC_MODEL_TYPES = tuple(t for t, kind in MODEL_KINDS.items() if kind.hyperbolic)

HYPRAG_CITATION = """
@misc{madhu2026hyprag,
    title={HypRAG: Hyperbolic Dense Retrieval for Retrieval Augmented Generation},
    author={Hiren Madhu and Ngoc Bui and Ali Maatouk and Leandros Tassiulas and Smita Krishnaswamy and Menglin Yang
            and Sukanta Ganguly and Kiran Srinivasan and Rex Ying},
    year={2026},
    eprint={2602.07739},
    archivePrefix={arXiv},
}
"""


def sentence_transformer(
    model: str | os.PathLike | PreTrainedModel,
    tokenizer: str | os.PathLike | PreTrainedTokenizerBase | None = None,
    *,
    prompts: dict[str, str] | None = None,
    max_seq_length: int | None = None,
    device: str | None = None,
) -> HyperbolicSentenceTransformer:
    """A ``HyperbolicSentenceTransformer`` (the stock model with the checks hyperboloid points need) around a HyTE-FH
    or HyTE-H model.

    Args:
        model: a saved HyTE checkpoint (local directory or hub id), or a HyTE model object. A model object is saved
            to a temporary directory to build the Transformer module the way loading does, and then the module is
            pointed at the object itself: the SentenceTransformer shares its parameters (training one trains both).
        tokenizer: a tokenizer or its path. Default: the checkpoint's own; for a model object, the tokenizer at
            ``model.config.name_or_path`` (for ``HyTEHModel.from_base(base)``, the base encoder's).
        prompts: ``{"query": ..., "document": ...}`` prepended by ``encode_query`` / ``encode_document``; saved in
            ``config_sentence_transformers.json``.
        max_seq_length: token limit (default: the tokenizer's, capped at the model's max_position_embeddings).
        device: where to put the model (default: sentence-transformers' choice).

    The sentence points are the model's own pooled output (its pooling, OEM exponent and, for HyTE-H, its
    specificity head): ``encode_document`` returns exactly ``model.encode(role="document")``'s points and
    ``encode_query`` the flipped ones (``HyperbolicPooling`` mode "model").
    """
    if max_seq_length is not None:
        check_positive_int("max_seq_length", max_seq_length)
    if isinstance(model, (str, os.PathLike)):
        model = _model_path(model)
    if isinstance(model, str) and tokenizer is None:
        transformer = _hyte_transformer(model, max_seq_length)
        _check_hyperbolic(transformer.model.config)
    else:
        if isinstance(model, (str, os.PathLike)):
            model = AutoModel.from_pretrained(str(model), trust_remote_code=True)
        _check_hyperbolic(model.config)
        tokenizer = _resolve_tokenizer(model, tokenizer)
        with tempfile.TemporaryDirectory(prefix="hyte-st-") as directory:
            model.save_pretrained(directory)
            tokenizer.save_pretrained(directory)
            transformer = _hyte_transformer(directory, max_seq_length)
        transformer.model = model
    hyte_model = transformer.model
    curvature = float(hyte_model.curvature.detach()) if hasattr(hyte_model, "curvature") else hyte_model.config.curvature
    pooling = HyperbolicPooling(embedding_dimension=hyte_model.config.hidden_size, curvature=curvature, mode="model",
                                p=hyte_model.config.oem_p)
    router = Router.for_query_document(query_modules=[TimeFlip(True)], document_modules=[TimeFlip(False)])
    return HyperbolicSentenceTransformer(
        modules=[transformer, pooling, router], similarity_fn_name="dot", prompts=prompts, device=device
    )


def _model_path(model: str | os.PathLike) -> str:
    """A model folder or Hub id that loads: bundled aliases resolved; an index folder, or a missing folder, named
    as what it is (not as a malformed Hub id)."""
    from ..bundled import resolve_model

    path = Path(model)
    if path.is_dir() and not holds(path, "model"):
        if holds(path, "index"):
            raise ValueError(f"{path} is an index folder, not a model folder: give the model it was built with "
                             "(its index.json names it)")
        if holds(path / "final", "model"):
            raise ValueError(f"{path} is a training run folder, not a model folder: its model is {path / 'final'}")
        raise FileNotFoundError(f"{path} holds no config.json: not a model folder")
    return resolve_model(model)


def _check_hyperbolic(config) -> None:
    if config.model_type not in HYPERBOLIC_MODEL_TYPES:
        raise ValueError(
            f"sentence_transformer() builds hyperbolic pipelines for HyTE-FH and HyTE-H (model_type in "
            f"{HYPERBOLIC_MODEL_TYPES}); got model_type {config.model_type!r}. A Euclidean model (e.g. EucBERT) "
            f"belongs in an ordinary SentenceTransformer with a Pooling module."
        )


def _resolve_tokenizer(model: PreTrainedModel, tokenizer) -> PreTrainedTokenizerBase:
    if isinstance(tokenizer, PreTrainedTokenizerBase):
        return tokenizer
    source = tokenizer if tokenizer is not None else model.config.name_or_path
    if not source:
        raise ValueError(
            "this model object does not say where its tokenizer is (config.name_or_path is empty); pass "
            "tokenizer=... (a tokenizer or its path)."
        )
    try:
        return AutoTokenizer.from_pretrained(str(source), trust_remote_code=True)
    except OSError as error:
        raise ValueError(f"no tokenizer found at {str(source)!r}; pass tokenizer=... explicitly.") from error


def _hyte_transformer(path: str, max_seq_length: int | None) -> Transformer:
    # trust_remote_code for all three: the config's auto_map points at the checkpoint's code, and AutoTokenizer /
    # AutoConfig read it too. hyte.auto_classes (imported above) makes them use the installed classes instead.
    # The model's pooled output (pooler_output: pooled points, after HyTE-H's specificity head) is the sentence
    # embedding, so sentence-transformers gets the vectors model.encode gives, not a re-pooling of token points.
    return Transformer(path, model_kwargs={"trust_remote_code": True}, config_kwargs={"trust_remote_code": True},
                       processor_kwargs={"trust_remote_code": True}, max_seq_length=max_seq_length,
                       modality_config={"text": {"method": "forward", "method_output_name": "pooler_output"}},
                       module_output_name="sentence_embedding")


def save_sentence_transformer(model: SentenceTransformer, path: str | os.PathLike, **save_kwargs) -> Path:
    """Save ``model`` so that ``SentenceTransformer(path, trust_remote_code=True)`` loads it without ``hyte``.

    Runs ``model.save`` (HyTE's own modules already make that self-contained), then repairs any other custom module
    whose code sentence-transformers would not find (upstream: a class from an installed package is written as
    ``package.module.Class``, and a class loaded as remote code has its file put in the module's subfolder instead of
    the root): its source file and the siblings it imports go to the root, and its type in ``modules.json`` /
    ``router_config.json`` becomes ``file.Class``. Returns the directory. ``save_kwargs`` go to ``model.save``
    (``overwrite=True`` is ``HyperbolicSentenceTransformer``'s, not the stock class's).
    """
    path = Path(path)
    model.save(str(path), **save_kwargs)
    classes = {type(module) for module in model.modules() if isinstance(module, Module)}

    def repair(class_ref: str) -> str:
        if class_ref.startswith("sentence_transformers."):
            return class_ref
        module_name, _, class_name = class_ref.rpartition(".")
        if "." not in module_name and (path / f"{module_name}.py").is_file():
            return class_ref  # already a file at the root
        # Either "package.module.Class" (installed package) or "file.Class" of a remote-code class whose module is
        # "transformers_modules.<repo>.file".
        owner = next((cls for cls in classes if cls.__name__ == class_name and cls.__module__ in sys.modules
                      and (cls.__module__ == module_name or cls.__module__.rpartition(".")[2] == module_name)), None)
        if owner is None:
            raise ValueError(f"cannot find the source of module type {class_ref!r} to make {path} self-contained.")
        source = Path(sys.modules[owner.__module__].__file__)
        for file in (source, *map(Path, get_relative_import_files(str(source)))):
            shutil.copyfile(file, path / file.name)
        return f"{source.stem}.{class_name}"

    modules_json = path / "modules.json"
    entries = json.loads(modules_json.read_text(encoding="utf-8"))
    for entry in entries:
        entry["type"] = repair(entry["type"])
        router_json = path / entry["path"] / Router.config_file_name
        if router_json.is_file():
            router_config = json.loads(router_json.read_text(encoding="utf-8"))
            router_config["types"] = {key: repair(value) for key, value in router_config["types"].items()}
            router_json.write_text(json.dumps(router_config, indent=4), encoding="utf-8")
    modules_json.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    return path


def save_model_folder(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: str | os.PathLike,
                      overwrite: bool = False) -> Path:
    """Save a model and its tokenizer; a HyTE-FH / HyTE-H embedding model also as a sentence-transformers folder,
    which refuses to replace another model's weights in ``path`` unless ``overwrite``.

    Without ``modules.json``, ``SentenceTransformer(path)`` would wrap the model in a mean Pooling module that
    averages token points and drops the model's own pooling and specificity head, silently. With it, the folder loads
    in sentence-transformers as the pipeline ``sentence_transformer`` builds, giving ``model.encode``'s vectors.
    Other models (masked-LM heads, Euclidean and phrase models) are saved as they are. Returns the directory.
    """
    path = Path(path)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # Encoding with padding / truncation leaves them switched on in the fast tokenizer, and tokenizer.json would
        # keep them: a user of the raw tokenizers library (ONNX serving) would get every text cut and padded.
        backend.no_truncation()
        backend.no_padding()
    # Embedding models only: a masked-LM model (prediction_logits) predicts tokens, not sentences.
    if model.config.model_type in HYPERBOLIC_MODEL_TYPES and not hasattr(model, "prediction_logits"):
        return save_sentence_transformer(sentence_transformer(model, tokenizer), path, overwrite=overwrite)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def add_sentence_transformer_files(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                                   path: str | os.PathLike) -> bool:
    """Make a folder that already holds ``model``'s weights (a training checkpoint) a sentence-transformers folder
    too: the files ``save_model_folder`` adds, without touching its weights or anything else it holds (optimizer
    state). Returns whether the model is one that gets them (a HyTE-FH / HyTE-H embedding model)."""
    if model.config.model_type not in HYPERBOLIC_MODEL_TYPES or hasattr(model, "prediction_logits"):
        return False
    with tempfile.TemporaryDirectory() as staging:
        # A copy: the training tokenizer keeps the padding / truncation state save_model_folder resets.
        save_model_folder(model, copy.deepcopy(tokenizer), staging)
        # File by file with copyfile: copytree would also give the checkpoint folder the staging folder's 0700 mode.
        for source in Path(staging).rglob("*"):
            target = Path(path) / source.relative_to(staging)
            if source.is_dir():
                target.mkdir(exist_ok=True)
            elif not source.name.endswith((".safetensors", ".safetensors.index.json")):
                shutil.copyfile(source, target)
    return True


def hyte_curvature(model: SentenceTransformer) -> float:
    """The curvature c of a HyTE SentenceTransformer (from its HyperbolicPooling module)."""
    for module in model.modules():
        # By name: a model loaded as remote code has its own copy of the class.
        if type(module).__name__ == "HyperbolicPooling":
            return float(module.curvature)
    raise ValueError("this SentenceTransformer has no HyperbolicPooling module; is it a HyTE model?")


def _as_points(x: Tensor | np.ndarray, c: float) -> Tensor:
    """(N, D) or (D,) vectors from either route -> (N, D) hyperboloid points in float64.

    The time coordinate is recomputed from the space part, which undoes the query route's sign flip (and is exact
    for points of this hyperboloid), so query and document vectors can be mixed freely.
    """
    return add_time(torch.atleast_2d(torch.as_tensor(x))[..., 1:].to(torch.float64), c)


def lorentz_similarity(a: Tensor | np.ndarray, b: Tensor | np.ndarray, c: float = 1.0) -> Tensor:
    """All Lorentz inner products <a_i, b_j>_L: (N, D), (M, D) -> (N, M), in a's floating dtype.

    For any pair of HyTE vectors (document-document, query-query, mixed); ``model.similarity`` is only right for
    encode_query x encode_document. <x, y>_L = -c exactly when x = y and decreases with the geodesic distance.
    """
    return pairwise_inner(_as_points(a, c), _as_points(b, c)).to(_result_dtype(a))


def geodesic_similarity(a: Tensor | np.ndarray, b: Tensor | np.ndarray, c: float = 1.0) -> Tensor:
    """Negative geodesic distances -d(a_i, b_j): (N, D), (M, D) -> (N, M). Same ranking as ``lorentz_similarity``."""
    return -pairwise_distance(_as_points(a, c), _as_points(b, c), c).to(_result_dtype(a))


def _result_dtype(x: Tensor | np.ndarray) -> torch.dtype:
    dtype = torch.as_tensor(x).dtype
    return dtype if dtype.is_floating_point else torch.float32


class LorentzContrastiveLoss(MultipleNegativesRankingLoss):
    """In-batch-negatives InfoNCE on Lorentz similarities, for ``SentenceTransformerTrainer``: sentence-transformers'
    ``MultipleNegativesRankingLoss`` with ``scale = 1 / temperature`` (the HyTE paper's 0.02) and the similarity

    * ``"geodesic"``: -d(a, x), the negative geodesic distance (the paper's choice, fine-tuning); or
    * ``"lorentz_inner"``: <a, x>_L (the reference code's contrastive pre-training).

    Columns: (anchor, positive, negative_1, ..., negative_k), the negatives optional. The similarities recompute the
    time coordinates from the space parts (``lorentz_similarity``), so they are true Lorentz quantities whichever
    route a column took: the trainer requires a ``router_mapping``, and the natural one,
    ``{"anchor": "query", "positive": "document", "negative": "document"}``, flips the anchors. The other MNRL options
    (``directions``, ``partition_mode``, ``gather_across_devices``, ...) pass through ``mnrl_kwargs``. No GradCache:
    large effective batches need ``gather_across_devices`` or more memory.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        similarity: Literal["geodesic", "lorentz_inner"] = "geodesic",
        temperature: float = 0.02,
        curvature: float | None = None,
        **mnrl_kwargs: Any,
    ) -> None:
        if similarity not in ("geodesic", "lorentz_inner"):
            raise ValueError(f"similarity must be 'geodesic' or 'lorentz_inner'; got {similarity!r}.")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0; got {temperature}.")
        curvature = hyte_curvature(model) if curvature is None else float(curvature)
        function = geodesic_similarity if similarity == "geodesic" else lorentz_similarity
        super().__init__(model, scale=1.0 / temperature, similarity_fct=partial(function, c=curvature), **mnrl_kwargs)
        self.similarity = similarity
        self.curvature = curvature

    def get_config_dict(self) -> dict[str, Any]:
        config = super().get_config_dict()
        del config["scale"], config["similarity_fct"]
        return {"similarity": self.similarity, "temperature": self.temperature, "curvature": self.curvature, **config}

    @property
    def citation(self) -> str:
        return HYPRAG_CITATION


def hyte_information_retrieval_evaluator(
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    relevant_docs: Mapping[str, Mapping[str, int] | set[str]],
    name: str = "",
    **kwargs: Any,
) -> InformationRetrievalEvaluator:
    """sentence-transformers' ``InformationRetrievalEvaluator``, scoring HyTE models by the Lorentz inner product.

    The evaluator embeds queries with ``encode_query`` (sign-flipped) and documents with ``encode_document``, so the
    plain dot product is <q, d>_L; this only names it: result keys read ``f"{name}_lorentz_ndcg@10"`` etc. (the
    stock evaluator reports the same values as ``..._dot_...``). ``relevant_docs`` may be graded qrels
    ``{qid: {doc_id: relevance}}``: documents with relevance > 0 count as relevant (the evaluator is binary).
    Queries without a relevant document are skipped, as the evaluator does. ``kwargs`` go to the evaluator
    (``ndcg_at_k``, ``mrr_at_k``, ``batch_size``, ``write_csv``, ...).
    """
    relevant = {
        query_id: {doc_id for doc_id, grade in docs.items() if grade > 0} if isinstance(docs, Mapping) else set(docs)
        for query_id, docs in relevant_docs.items()
    }
    return InformationRetrievalEvaluator(
        dict(queries), dict(corpus), relevant, name=name, score_functions={"lorentz": dot_score}, **kwargs
    )
