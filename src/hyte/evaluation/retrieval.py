"""Retrieval evaluation of any encoder (HyTE or Euclidean) on queries / corpus / qrels dictionaries or a BEIR folder."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import numpy as np

from ..data.beir import load_beir
from .metrics import hubness, ndcg_per_query, retrieval_metrics


def rank_documents(encoder, queries: Mapping[str, str], corpus: Mapping[str, str], top_k: int = 100,
                   batch_size: int = 32, show_progress_bar: bool | None = None) -> dict[str, list[str]]:
    """Top-k document ids per query by the encoder's own similarity (Lorentz inner product or cosine).

    Ties are broken by ascending document id, as in ``metrics.rank_by_score``.
    """
    query_ids, doc_ids = list(queries), sorted(corpus)
    if not doc_ids:
        raise ValueError("the corpus is empty: nothing to retrieve")
    documents = encoder.encode([corpus[d] for d in doc_ids], role="document", batch_size=batch_size,
                               show_progress_bar=show_progress_bar)
    encoded_queries = encoder.encode([queries[q] for q in query_ids], role="query", batch_size=batch_size)
    scores = encoder.scores(encoded_queries, documents)  # (Q, N), larger = nearer
    k = min(top_k, len(doc_ids))
    # Stable sort on -score over id-sorted columns: equal scores keep ascending id order.
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return {qid: [doc_ids[j] for j in row] for qid, row in zip(query_ids, order)}


def evaluate_retrieval(encoder, queries: Mapping[str, str], corpus: Mapping[str, str],
                       qrels: Mapping[str, Mapping[str, float]], k_values: Iterable[int] = (1, 3, 5, 10, 100),
                       batch_size: int = 32, per_query_ndcg: int | None = None) -> dict:
    """nDCG / recall / MRR / MAP at each k (keys like "ndcg@10") for an encoder on an in-memory retrieval set; with
    ``per_query_ndcg`` = k also ``"ndcg_per_query"``: {query id: nDCG@k} (for paired tests between models)."""
    k_values = list(k_values)
    rankings = rank_documents(encoder, queries, corpus, top_k=max([*k_values, per_query_ndcg or 1]),
                              batch_size=batch_size)
    results: dict = dict(retrieval_metrics(rankings, qrels, k_values))
    if per_query_ndcg is not None:
        results["ndcg_per_query"] = ndcg_per_query(rankings, qrels, per_query_ndcg)
    return results


def evaluate_beir(encoder, folder: str | os.PathLike, split: str = "test",
                  k_values: Iterable[int] = (1, 3, 5, 10, 100), batch_size: int = 32,
                  hubness_k: int | None = 10, show_progress_bar: bool | None = None) -> dict:
    """Exact retrieval over a BEIR folder with any encoder (``hyte.encoders``), scored by ``hyte.evaluation.metrics``.

    Returns ``{"ndcg@k", "recall@k", "mrr@k", "map@k" (floats, for every k), "num_queries" (those scored: with a
    relevant document), "unscored_queries" (ids of those judged only 0, left out of every average), "num_documents"}``
    and, with ``hubness_k``, ``"hubness"`` (:func:`hyte.evaluation.metrics.hubness` of the top-``hubness_k`` lists over
    the whole corpus).
    """
    k_values = sorted({int(k) for k in k_values})
    if not k_values or k_values[0] < 1:
        raise ValueError(f"k values must be >= 1; got {k_values}")
    queries, corpus, qrels = load_beir(folder, split)
    depth = max(k_values + ([hubness_k] if hubness_k else []))
    rankings = rank_documents(encoder, queries, corpus, top_k=depth, batch_size=batch_size,
                              show_progress_bar=show_progress_bar)
    results: dict = dict(retrieval_metrics(rankings, qrels, k_values))
    # The metrics average over queries with a relevant document (BEIR's convention); one judged only 0 is left out
    # of every average, so it must not be counted as scored.
    unscored = sorted(q for q in queries if not any(grade > 0 for grade in qrels.get(q, {}).values()))
    results["num_queries"] = len(queries) - len(unscored)
    results["unscored_queries"] = unscored
    results["num_documents"] = len(corpus)
    if hubness_k:
        results["hubness"] = hubness(rankings, k=hubness_k, corpus_ids=corpus)
    return results
