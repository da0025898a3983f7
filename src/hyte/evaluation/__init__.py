"""Evaluation of HyTE models: retrieval metrics in pure Python (no heavy imports)."""

from .metrics import map_at_k, mrr_at_k, ndcg_at_k, rank_by_score, recall_at_k, retrieval_metrics

__all__ = ["map_at_k", "mrr_at_k", "ndcg_at_k", "rank_by_score", "recall_at_k", "retrieval_metrics"]
