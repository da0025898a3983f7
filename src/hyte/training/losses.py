"""Training losses: InfoNCE with a learnable logit scale over Lorentz similarities (or cosine for Euclidean models),
and the hierarchy term (entailment cones on the Lorentz model, order embeddings for the Euclidean control)."""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import lorentz


def similarity_matrix(queries: Tensor, documents: Tensor, *, hyperbolic: bool, similarity: str = "geodesic",
                      curvature: float = 1.0) -> Tensor:
    """(B, D) x (M, D) -> (B, M) similarities, larger = nearer.

    Hyperbolic: -d(q, x) ("geodesic", the paper's best) or <q, x>_L ("lorentz_inner"). Euclidean: cosine of the raw
    pooled vectors (normalised here, so the raw ones stay available to the order-embedding term).
    """
    if not hyperbolic:
        return F.normalize(queries, dim=-1) @ F.normalize(documents, dim=-1).T
    if similarity == "geodesic":
        return -lorentz.pairwise_distance(queries, documents, curvature)
    return lorentz.pairwise_inner(queries, documents)


def contrastive_loss(queries: Tensor, documents: Tensor, *, logit_scale: Tensor | float, hyperbolic: bool,
                     similarity: str = "geodesic", curvature: float = 1.0, exclude: Tensor | None = None,
                     positive_rows: Tensor | None = None) -> Tensor:
    """InfoNCE: query i's positive is document i; every other document in the batch (the other positives and all
    hard negatives, stacked after the B positives) is a negative. Mean cross-entropy over queries.

    queries (B, D); documents (M, D) with M >= B, the first B the positives; logit_scale = 1 / temperature.
    ``exclude`` (B, M) bool: candidates left out of query i's softmax (copies of its positive); they get -inf, never
    a 0 score (0 is a real similarity; for the Lorentz inner product, a high one). ``positive_rows`` (B,): each
    query's positive row when it is not row i (documents gathered from several processes).
    """
    logits = logit_scale * similarity_matrix(queries, documents, hyperbolic=hyperbolic, similarity=similarity,
                                             curvature=curvature)
    if exclude is not None:
        # After scaling: -inf x scale would give the scale's gradient 0 x inf = NaN.
        logits = logits.masked_fill(exclude, float("-inf"))
    labels = torch.arange(queries.shape[0], device=queries.device) if positive_rows is None else positive_rows
    return F.cross_entropy(logits, labels)


def order_violation(general: Tensor, specific: Tensor) -> Tensor:
    """Order-embedding violation (Vendrov et al. 2016), (..., D), (..., D) -> (...,) >= 0.

    On the non-negative orthant (absolute values of the raw vectors), ``specific`` entails ``general`` when it is
    at least as large in every coordinate; the violation is ||max(0, |general| - |specific|)||^2. It is the Euclidean
    counterpart of ``lorentz.entailment_violation`` (both push the specific text "outward" from the general one).
    """
    return torch.relu(general.abs() - specific.abs()).pow(2).sum(-1)


def radius_order_violation(general: Tensor, specific: Tensor, *, hyperbolic: bool, curvature: float = 1.0,
                           margin: float = 0.1) -> Tensor:
    """max(0, margin - (r(specific) - r(general))), (..., D), (..., D) -> (...,) >= 0: the specific text must sit
    farther from the origin than the general one by ``margin``. r is the geodesic distance to the origin for
    hyperboloid points, the norm of the raw pooled vector for Euclidean ones (its counterpart)."""
    radius = (partial(lorentz.distance_to_origin, c=curvature) if hyperbolic
              else partial(torch.linalg.vector_norm, dim=-1))
    return torch.relu(margin - (radius(specific) - radius(general)))


def hierarchy_loss(general: Tensor, specific: Tensor, *, hyperbolic: bool, curvature: float = 1.0,
                   term: str = "cone", cone_min_radius: float = 0.1, radius_margin: float = 0.1) -> Tensor:
    """Mean violation over (parent, child) pairs (P, D), (P, D) -> scalar. ``term`` "cone": the child must lie in
    the parent's entailment cone (hyperbolic) or above it in the coordinate order (Euclidean); "radius": farther
    from the origin than the parent by ``radius_margin`` (``radius_order_violation``). 0 for P = 0."""
    if general.shape[0] == 0:
        return general.new_zeros(())
    if term == "radius":
        return radius_order_violation(general, specific, hyperbolic=hyperbolic, curvature=curvature,
                                      margin=radius_margin).mean()
    if hyperbolic:
        return lorentz.entailment_violation(general, specific, curvature, cone_min_radius).mean()
    return order_violation(general, specific).mean()
