"""Retrieval metrics in pure Python: nDCG, recall, MRR and MAP at k, from ranked document ids and qrels.

Inputs: ``rankings`` maps a query id to its ranked document ids (best first); ``qrels`` maps a query id to
``{doc_id: relevance}``. The conventions follow sentence-transformers' ``InformationRetrievalEvaluator`` so that the
numbers compare with it (the tests check that they are equal):

* A document is relevant when its relevance is > 0. nDCG uses the relevance as the gain (linear gain, as trec_eval's
  ``ndcg_cut``), so binary qrels give the evaluator's binary nDCG and graded qrels are supported; recall, MRR and MAP
  are binary.
* Queries without a relevant document are skipped (they are neither counted nor scored 0). A query that has relevant
  documents but no ranking scores 0.
* A ranking shorter than k is scored as it is: missing ranks contribute nothing, while the ideal DCG still uses up to
  k relevant documents.
* MAP@k divides the summed precisions by min(k, number of relevant documents), as the evaluator does.
* A document id repeated in a ranking counts once, at its first rank; the repeat still takes up its rank.
* ``rank_by_score`` breaks score ties by ascending document id, the evaluator's rule, so results are deterministic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["map_at_k", "mrr_at_k", "ndcg_at_k", "ndcg_per_query", "paired_bootstrap", "rank_by_score", "recall_at_k",
           "retrieval_metrics"]

Rankings = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, float]]


def rank_by_score(scores: Mapping[str, Mapping[str, float]], k: int | None = None) -> dict[str, list[str]]:
    """``{query_id: {doc_id: score}}`` -> ``{query_id: doc ids by descending score}``, ties by ascending doc id.

    With ``k``, only the first k ids of each ranking are kept.
    """
    return {
        query_id: sorted(doc_scores, key=lambda doc_id: (-doc_scores[doc_id], doc_id))[:k]
        for query_id, doc_scores in scores.items()
    }


def _first_occurrences(ranking: Sequence[str], k: int) -> list[str | None]:
    """The top k of a ranking with repeated ids replaced by None: a repeat keeps its rank but earns nothing."""
    seen: set[str] = set()
    top = []
    for doc_id in ranking[:k]:
        top.append(None if doc_id in seen else doc_id)
        seen.add(doc_id)
    return top


def _dcg(gains: Iterable[float]) -> float:
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))


def _ndcg(ranking: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    ideal = _dcg(sorted(relevant.values(), reverse=True)[:k])
    return _dcg(relevant.get(doc_id, 0.0) for doc_id in _first_occurrences(ranking, k)) / ideal


def _recall(ranking: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    return sum(doc_id in relevant for doc_id in _first_occurrences(ranking, k)) / len(relevant)


def _reciprocal_rank(ranking: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    for rank, doc_id in enumerate(_first_occurrences(ranking, k)):
        if doc_id in relevant:
            return 1.0 / (rank + 1)
    return 0.0


def _average_precision(ranking: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    hits, precision_sum = 0, 0.0
    for rank, doc_id in enumerate(_first_occurrences(ranking, k)):
        if doc_id in relevant:
            hits += 1
            precision_sum += hits / (rank + 1)
    return precision_sum / min(k, len(relevant))


def _per_query(metric: Callable[[Sequence[str], Mapping[str, float], int], float], rankings: Rankings,
               qrels: Qrels, k: int) -> dict[str, float]:
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}.")
    values = {}
    for query_id, judged in qrels.items():
        relevant = {doc_id: float(grade) for doc_id, grade in judged.items() if grade > 0}
        if relevant:
            values[query_id] = metric(rankings.get(query_id, ()), relevant, k)
    if not values:
        raise ValueError("no query in qrels has a relevant document (relevance > 0); nothing to evaluate.")
    return values


def _mean_over_queries(metric: Callable[[Sequence[str], Mapping[str, float], int], float], rankings: Rankings,
                       qrels: Qrels, k: int) -> float:
    values = _per_query(metric, rankings, qrels, k)
    return sum(values.values()) / len(values)


def ndcg_per_query(rankings: Rankings, qrels: Qrels, k: int) -> dict[str, float]:
    """{query id: nDCG@k} over the queries with a relevant document (what ``ndcg_at_k`` averages), for paired
    comparisons between models on the same queries."""
    return _per_query(_ndcg, rankings, qrels, k)


def ndcg_at_k(rankings: Rankings, qrels: Qrels, k: int) -> float:
    """Mean nDCG@k (gain = relevance, discount log2(rank + 1))."""
    return _mean_over_queries(_ndcg, rankings, qrels, k)


def recall_at_k(rankings: Rankings, qrels: Qrels, k: int) -> float:
    """Mean fraction of a query's relevant documents found in its top k."""
    return _mean_over_queries(_recall, rankings, qrels, k)


def mrr_at_k(rankings: Rankings, qrels: Qrels, k: int) -> float:
    """Mean reciprocal rank of the first relevant document in the top k (0 when there is none)."""
    return _mean_over_queries(_reciprocal_rank, rankings, qrels, k)


def map_at_k(rankings: Rankings, qrels: Qrels, k: int) -> float:
    """Mean average precision in the top k, normalised by min(k, number of relevant documents)."""
    return _mean_over_queries(_average_precision, rankings, qrels, k)


def retrieval_metrics(rankings: Rankings, qrels: Qrels, k_values: Iterable[int] = (1, 3, 5, 10, 100)) -> dict[str, float]:
    """All four metrics at every k: ``{"ndcg@10": ..., "recall@10": ..., "mrr@10": ..., "map@10": ..., ...}``."""
    metrics = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k, "map": map_at_k}
    return {f"{name}@{k}": metric(rankings, qrels, k) for k in k_values for name, metric in metrics.items()}


def hubness(rankings: Mapping[str, Sequence[str]] | Sequence[Sequence[str]], k: int = 10,
            corpus_ids: Iterable[str] | None = None) -> dict:
    """Hubness of retrieved lists: statistics of the k-occurrence N_k(d), the number of top-k lists holding d.

    ``rankings``: ranked document ids per query (a mapping or a list of lists); the first k distinct ids of each
    count. With ``corpus_ids``, every corpus document counts (those never retrieved with N_k = 0) and
    ``never_retrieved_fraction`` is given; without, only retrieved documents count and it is None. Returns
    ``{"k", "skewness", "max_occurrence", "mean_occurrence", "never_retrieved_fraction", "num_documents",
    "num_queries"}``. The skewness is the population skewness E[(N - mean)^3] / std^3 (0 when all N_k are equal);
    large positive values mean a few "hub" documents appear in many result lists.
    """
    import numpy as np  # here: the ranking metrics above stay pure Python

    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    lists = list(rankings.values()) if isinstance(rankings, Mapping) else list(rankings)
    counts: Counter = Counter()
    for ranking in lists:
        counts.update(list(dict.fromkeys(ranking))[:k])
    if corpus_ids is not None:
        corpus = list(dict.fromkeys(corpus_ids))
        outside = set(counts) - set(corpus)
        if outside:
            raise ValueError(f"{len(outside)} retrieved id(s) are not in corpus_ids, e.g. {sorted(outside)[0]!r}")
        occurrences = np.array([counts.get(doc_id, 0) for doc_id in corpus], dtype=np.float64)
    else:
        occurrences = np.array(list(counts.values()), dtype=np.float64)
    if occurrences.size == 0:
        raise ValueError("no documents: nothing was retrieved and no corpus_ids were given")
    mean, std = occurrences.mean(), occurrences.std()
    skewness = float(((occurrences - mean) ** 3).mean() / std**3) if std > 0 else 0.0
    return {
        "k": k,
        "skewness": skewness if math.isfinite(skewness) else None,
        "max_occurrence": int(occurrences.max()),
        "mean_occurrence": float(mean),
        "never_retrieved_fraction": float((occurrences == 0).mean()) if corpus_ids is not None else None,
        "num_documents": int(occurrences.size),
        "num_queries": len(lists),
    }


def paired_bootstrap(a: Sequence[float], b: Sequence[float], samples: int = 2000, seed: int = 0) -> dict:
    """Mean of a - b over paired values (queries, say) with a 95 % percentile bootstrap interval (pairs resampled
    with replacement): ``{"mean", "low", "high"}``."""
    import numpy as np  # here: the ranking metrics above stay pure Python

    diff = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    if not len(diff):
        raise ValueError("no paired values to compare")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(samples, len(diff)))].mean(1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(diff.mean()), "low": float(low), "high": float(high)}


def seed_then_query_bootstrap(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], samples: int = 2000,
                              seed: int = 0) -> dict:
    """Mean of a - b over paired per-query values grouped by training seed (``a[s][q]``, ``b[s][q]``), with a 95 %
    percentile interval from a two-level bootstrap: seeds resampled with replacement, then queries within each drawn
    seed. Seeds are the runs that vary; queries within one run are not independent of its other queries' model, so
    resampling (seed, query) pairs as if independent gives intervals too narrow. ``{"mean", "low", "high"}``."""
    import numpy as np

    groups = [np.asarray(x, np.float64) - np.asarray(y, np.float64) for x, y in zip(a, b, strict=True)]
    if not groups or any(not len(g) for g in groups):
        raise ValueError("every seed needs at least one paired value")
    rng = np.random.default_rng(seed)
    means = np.empty(samples)
    for sample in range(samples):
        drawn = [groups[i] for i in rng.integers(0, len(groups), len(groups))]
        means[sample] = np.concatenate([g[rng.integers(0, len(g), len(g))] for g in drawn]).mean()
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(np.concatenate(groups).mean()), "low": float(low), "high": float(high)}
