"""Evaluation of HyTE models.

* :mod:`~hyte.evaluation.metrics`: nDCG / recall / MRR / MAP at k in pure Python, and hubness. Every evaluation
  path in HyTE (BEIR folders, the hierarchy benchmark, the ``evaluate`` metric module, the CLI) computes these
  numbers with it.
* :mod:`~hyte.evaluation.retrieval`: rank a corpus with any encoder; score a BEIR folder (read by
  :mod:`hyte.data.beir`).
* :mod:`~hyte.evaluation.hierarchy`: the hierarchy-sensitive benchmark's format and scoring (SpecHR, top-1 by
  distractor type); :mod:`~hyte.evaluation.hierarchy_build` builds it from an ontology.
* :mod:`~hyte.evaluation.radius`: radius by depth and its rank correlation with depth.
* :mod:`~hyte.evaluation.heldout`: the held-out sets (HPO branches, ICD-10-CM chapters, man pages) that training never
  sees, and the suite that scores encoders on them.
* :mod:`~hyte.evaluation.rag`: RAG on held-out HPO questions.
* :func:`load_retrieval_metric`: the same metrics as a local Hugging Face ``evaluate`` module.

Only the metrics are imported eagerly; everything else loads torch / transformers when first used.
"""

from __future__ import annotations

from pathlib import Path

from .metrics import map_at_k, mrr_at_k, ndcg_at_k, rank_by_score, recall_at_k, retrieval_metrics

METRIC_MODULE_PATH = Path(__file__).parent / "metric_module" / "hyte_retrieval"


def load_retrieval_metric(**kwargs):
    """The ``hyte_retrieval`` metric as an ``evaluate.Metric``: ``evaluate.load(<the packaged module folder>)``.

    Offline and fast (a local folder; nothing is downloaded). ``kwargs`` go to ``evaluate.load`` (e.g.
    ``experiment_id``). ``metric.compute(predictions=[[ranked ids], ...], references=[[relevant ids], ...],
    k_values=[1, 10])`` returns ``{"ndcg@10": ..., "recall@10": ..., "mrr@10": ..., "map@10": ..., ...}``, the
    numbers of :func:`~hyte.evaluation.metrics.retrieval_metrics`. Requires ``pip install evaluate``.
    """
    try:
        import evaluate
    except ImportError as error:
        raise ImportError("the retrieval metric module needs the evaluate package: pip install evaluate "
                          "(or pip install 'hyte-embeddings[eval]')") from error
    return evaluate.load(str(METRIC_MODULE_PATH), **kwargs)


__all__ = [
    "METRIC_MODULE_PATH",
    "load_retrieval_metric",
    "map_at_k",
    "mrr_at_k",
    "ndcg_at_k",
    "rank_by_score",
    "recall_at_k",
    "retrieval_metrics",
]
