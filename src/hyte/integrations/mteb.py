"""mteb for HyTE: an encoder adapter that scores with the Lorentz inner product, and an in-memory retrieval task.

``mteb.evaluate(HyteMtebEncoder(st), retrieval_task(queries, corpus, qrels), cache=None)`` runs fully offline.
The adapter hands mteb hyperboloid points for both roles (queries are embedded with ``encode_query``, i.e. with the
query prompt, and flipped back) and scores every pair with <x, y>_L, so mteb's retrieval, reranking and pairwise
tasks all see hyperbolic similarities. Nothing is normalised. (Passing a HyTE SentenceTransformer to mteb directly
also ranks by <q, d>_L, through the flipped query route and "dot"; the adapter also gets non-retrieval pairs right.)
Requires ``pip install mteb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.models import ModelMeta
from mteb.types import PromptType
from sentence_transformers import SentenceTransformer
from torch import Tensor

from ..io import json_or_empty
from ..lorentz import flip_time, inner
from ..model_kinds import MODEL_KINDS
from .sentence_transformers import hyte_curvature, lorentz_similarity, sentence_transformer

__all__ = ["HyteMtebEncoder", "InMemoryRetrievalTask", "evaluate_mteb", "retrieval_task"]


class HyteMtebEncoder:
    """mteb ``EncoderProtocol`` adapter for a HyTE SentenceTransformer.

    ``encode`` returns (N, D) hyperboloid points (float32 numpy); ``similarity`` (N, D) x (M, D) -> (N, M) and
    ``similarity_pairwise`` (N, D) x (N, D) -> (N,) are Lorentz inner products, which rank exactly like the geodesic
    distance. ``name`` and ``revision`` identify the model in mteb's results.
    """

    def __init__(self, model: SentenceTransformer, name: str = "local/hyte", revision: str = "0") -> None:
        self.model = model
        self.curvature = hyte_curvature(model)
        # mteb replaces an encoder without this attribute by an empty meta of its own.
        self.mteb_model_meta = ModelMeta.create_empty(
            overwrites={"name": name, "revision": revision, "embed_dim": model.get_embedding_dimension()}
        )

    def encode(self, inputs, *, task_metadata: TaskMetadata, hf_split: str, hf_subset: str,
               prompt_type: PromptType | None = None, **kwargs: Any) -> np.ndarray:
        texts = [text for batch in inputs for text in batch["text"]]
        batch_size = kwargs.get("batch_size", 32)
        if prompt_type == PromptType.query:
            # The query route applies the query prompt and flips the time coordinate; flip it back to the point.
            vectors = flip_time(self.model.encode_query(texts, batch_size=batch_size, convert_to_tensor=True))
        else:
            vectors = self.model.encode_document(texts, batch_size=batch_size, convert_to_tensor=True)
        return vectors.float().cpu().numpy()

    def similarity(self, embeddings1: np.ndarray | Tensor, embeddings2: np.ndarray | Tensor) -> Tensor:
        return lorentz_similarity(embeddings1, embeddings2, self.curvature)

    def similarity_pairwise(self, embeddings1: np.ndarray | Tensor, embeddings2: np.ndarray | Tensor) -> Tensor:
        return inner(torch.as_tensor(embeddings1, dtype=torch.float64),
                     torch.as_tensor(embeddings2, dtype=torch.float64)).float()


class InMemoryRetrievalTask(AbsTaskRetrieval):
    """An mteb retrieval task over in-memory BEIR-shaped data; build one with ``retrieval_task``.

    mteb reads ``metadata`` from the class (it drops instance-level metadata when it unloads a task), so every task
    gets its own subclass carrying its name.
    """

    def __init__(self, queries: Mapping[str, str], corpus: Mapping[str, str],
                 qrels: Mapping[str, Mapping[str, int]], **kwargs: Any) -> None:
        self._split_data = (dict(queries), dict(corpus), {q: dict(docs) for q, docs in qrels.items()})
        super().__init__(**kwargs)

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        queries, corpus, qrels = self._split_data
        split = RetrievalSplitData(
            corpus=Dataset.from_list([{"id": doc_id, "text": text, "title": ""} for doc_id, text in corpus.items()]),
            queries=Dataset.from_list([{"id": query_id, "text": text} for query_id, text in queries.items()]),
            relevant_docs=qrels,
            top_ranked=None,
        )
        self.dataset = {"default": {self.metadata.eval_splits[0]: split}}
        self.data_loaded = True


def retrieval_task(queries: Mapping[str, str], corpus: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
                   name: str = "HyteRetrieval", description: str = "In-memory retrieval task built by hyte.",
                   split: str = "test") -> InMemoryRetrievalTask:
    """An mteb retrieval task (main score nDCG@10) over ``queries`` {id: text}, ``corpus`` {id: text} and ``qrels``
    {query_id: {doc_id: relevance}}, e.g. from ``hyte.data.hpo.retrieval_split``. Runs offline with
    ``mteb.evaluate(..., cache=None)``.
    """
    metadata = TaskMetadata(
        name=name, description=description, type="Retrieval", category="t2t", modalities=["text"],
        main_score="ndcg_at_10", reference=None, dataset={"path": f"local/{name}", "revision": "0"},
        eval_splits=[split], eval_langs=["eng-Latn"], date=None, domains=None, task_subtypes=None, license=None,
        annotations_creators=None, dialect=None, sample_creation=None, bibtex_citation="",
    )
    task_class = type(name, (InMemoryRetrievalTask,), {"metadata": metadata, "__module__": __name__})
    return task_class(queries, corpus, qrels)


def _euclidean_sentence_transformer(model_path: str) -> SentenceTransformer:
    """A Euclidean model as sentence-transformers loads it (mean pooling without a modules.json; cosine). A folder of
    hyperboloid points is refused: mean-pooled token points compared by cosine give a score that means nothing.
    EucBERT pools as its config says (mean or CLS)."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    config = json_or_empty(Path(model_path) / "config.json")  # a local folder's; a hub id loads as ST says
    kind = MODEL_KINDS.get(config.get("model_type"))
    if kind is not None and kind.is_hyperbolic(config):
        raise ValueError(f"{model_path} is a hyperbolic {kind.title} model: evaluate it as one (kind 'hyte'; on the "
                         "command line drop --kind euclidean)")
    model = SentenceTransformer(model_path)
    if config.get("model_type") == "hyte_euc" and config.get("pooling", "mean") != model[1].pooling_mode:
        model = SentenceTransformer(modules=[model[0], Pooling(model[0].get_embedding_dimension(),
                                                               pooling_mode=config["pooling"])])
    return model


def evaluate_mteb(model_path: str, kind: str, tasks: list, *, name: str, max_length: int | None = None,
                  batch_size: int = 32) -> dict[str, dict]:
    """mteb's scores of the model at ``model_path`` on ``tasks`` (mteb tasks: ``retrieval_task`` or
    ``mteb.get_task(name)``), ``{task name: {split: [subset scores]}}``. ``kind``: "hyte" (through
    ``HyteMtebEncoder``, named ``local/<name>`` in mteb's results) or "euclidean" (a plain SentenceTransformer)."""
    import mteb

    if kind == "hyte":
        model = HyteMtebEncoder(sentence_transformer(model_path, max_seq_length=max_length), name=f"local/{name}")
    else:
        model = _euclidean_sentence_transformer(model_path)
        if max_length:
            model.max_seq_length = max_length
    result = mteb.evaluate(model, tasks, cache=None, show_progress_bar=False, encode_kwargs={"batch_size": batch_size})
    return {task_result.task_name: task_result.scores for task_result in result.task_results}
