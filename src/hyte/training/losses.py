"""Contrastive loss with in-batch and hard negatives, on Lorentz similarities (or cosine for Euclidean models)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import lorentz


def similarity_matrix(queries: Tensor, documents: Tensor, *, hyperbolic: bool, similarity: str = "geodesic",
                      curvature: float = 1.0) -> Tensor:
    """(B, D) x (M, D) -> (B, M) similarities, larger = nearer.

    Hyperbolic: -d(q, x) ("geodesic", the paper's best) or <q, x>_L ("lorentz_inner"). Euclidean: cosine (inputs are
    already L2-normalised by ``models.embed``).
    """
    if not hyperbolic:
        return queries @ documents.T
    if similarity == "geodesic":
        return -lorentz.pairwise_distance(queries, documents, curvature)
    return lorentz.pairwise_inner(queries, documents)


def contrastive_loss(queries: Tensor, documents: Tensor, *, temperature: float, hyperbolic: bool,
                     similarity: str = "geodesic", curvature: float = 1.0) -> Tensor:
    """InfoNCE: query i's positive is document i; every other document in the batch (the other positives and all
    hard negatives, stacked after the B positives) is a negative. Mean cross-entropy over queries.

    queries (B, D); documents (B * (1 + k), D) = [positives; negatives].
    """
    scores = similarity_matrix(queries, documents, hyperbolic=hyperbolic, similarity=similarity, curvature=curvature)
    labels = torch.arange(queries.shape[0], device=queries.device)
    return F.cross_entropy(scores / temperature, labels)
