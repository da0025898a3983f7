"""``hyte_retrieval``: nDCG, recall, MRR and MAP at k as a local Hugging Face ``evaluate`` metric module.

No retrieval metric ships with ``evaluate`` (they live on the Hub), so HyTE carries its own. The numbers come from
:func:`hyte.evaluation.metrics.retrieval_metrics` (this file only adapts the input format), so they are the same as
everywhere else in HyTE. Load it with ``hyte.evaluation.load_retrieval_metric()`` or
``evaluate.load("<path of this folder>")``.
"""

from __future__ import annotations

import datasets
import evaluate

from hyte.evaluation.metrics import retrieval_metrics

_DESCRIPTION = """
Ranking metrics for retrieval: nDCG@k, recall@k, MRR@k and MAP@k for every k in ``k_values``, averaged over queries,
computed by ``hyte.evaluation.metrics`` (sentence-transformers' InformationRetrievalEvaluator conventions).
A query without any relevant document is skipped (neither counted nor scored); a ranking shorter than k is scored as
it is; a document id repeated in a ranking counts once, at its first rank.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one ranked list of document ids per query, best first.
    references: the relevant document ids of each query, either
        - binary: a list of ids, e.g. ``["d2", "d7"]`` (relevance 1 each), or
        - graded: a list of ``{"id": str, "relevance": float}``; nDCG uses the relevance as its gain, the other
          metrics count ids with relevance > 0 as relevant.
        All queries of one computation use the same form.
    k_values: cut-offs (default ``(1, 3, 5, 10, 100)``).
Returns:
    ``{"ndcg@k": float, "recall@k": float, "mrr@k": float, "map@k": float}`` for every k.
Examples:
    >>> metric = hyte.evaluation.load_retrieval_metric()
    >>> metric.compute(predictions=[["d1", "d2", "d3"], ["d9", "d4"]], references=[["d2"], ["d4", "d5"]],
    ...                k_values=[3])
    {'ndcg@3': 0.5090..., 'recall@3': 0.75, 'mrr@3': 0.5, 'map@3': 0.5}
"""

_BINARY = datasets.Features({
    "predictions": datasets.Sequence(datasets.Value("string")),
    "references": datasets.Sequence(datasets.Value("string")),
})
_GRADED = datasets.Features({
    "predictions": datasets.Sequence(datasets.Value("string")),
    # A plain list of a dict (not Sequence, which datasets turns into a dict of lists) keeps one dict per document.
    "references": [{"id": datasets.Value("string"), "relevance": datasets.Value("float64")}],
})


def _judgements(reference) -> dict[str, float]:
    """One query's references -> {doc_id: relevance}, from either input form."""
    if isinstance(reference, dict):  # graded: datasets hands a Sequence of dicts back as a dict of lists
        return {doc_id: float(grade) for doc_id, grade in zip(reference["id"], reference["relevance"])}
    if reference and isinstance(reference[0], dict):
        return {item["id"]: float(item["relevance"]) for item in reference}
    return {doc_id: 1.0 for doc_id in reference}


class HyteRetrieval(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=[_BINARY, _GRADED],
            codebase_urls=[],
            reference_urls=[],
        )

    def _compute(self, predictions, references, k_values=(1, 3, 5, 10, 100)):
        if len(predictions) != len(references):
            raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
        rankings = {str(i): list(ranking) for i, ranking in enumerate(predictions)}
        qrels = {str(i): _judgements(reference) for i, reference in enumerate(references)}
        return retrieval_metrics(rankings, qrels, [int(k) for k in k_values])
