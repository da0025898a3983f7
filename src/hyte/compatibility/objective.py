"""The HBCT objective (arXiv 2506.05826, adapted to text retrieval; see ``hyte.compatibility.training``): the old
model's uncertainty q, RINCE, the entailment-cone term, and the Euclidean BCT baseline. Pure tensor functions."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import lorentz

__all__ = ["MIN_Q", "alignment_q", "cone_loss", "l2_influence_loss", "rince_loss", "uncertainty"]

# Smallest RINCE exponent used: the loss divides by q, and q -> 0 is InfoNCE anyway (rince_loss docstring); an old
# point at distance 2.6 sqrt(c) from the origin already has q = 0.011.
MIN_Q = 0.01


def uncertainty(points: Tensor, c: float = 1.0) -> Tensor:
    """HBCT's uncertainty of hyperboloid points, (..., D) -> (...,) in (0, 1]: 1 - tanh(d(o, x) / sqrt(c)).

    HBCT's Eq. (10) in the reviewers' corrected form (no extra 1/sqrt(K) factor). Decreasing in the distance to the
    origin; depends only on d(o, x) / sqrt(c), so a point and its rescaling to another curvature (x sqrt(c'/c)) have
    the same uncertainty."""
    return 1.0 - torch.tanh(lorentz.distance_to_origin(points, c) / c ** 0.5)


def rince_loss(logits: Tensor, positives: Tensor, q: Tensor, lam: float = 0.01,
               exclude: Tensor | None = None) -> Tensor:
    """Robust InfoNCE (RINCE, Chuang et al. 2022), mean over anchors; logits (A, M), positives (A,), q (A,) -> ().

    With s+ the positive's logit and S = sum over all candidates (positive included) of exp(s):

        L_i = -exp(q_i s+) / q_i + (lam S)^{q_i} / q_i

    q -> 0 gives InfoNCE + log(lam) (the same gradients); at q = 1 the gradient on s+ is scaled by exp(s+), so a
    positive the anchor is far from (a hard, possibly wrong pair) pulls less: uncertain old embeddings get a large q.
    Computed in float64 from log S (logsumexp), so neither exp(s) nor the 1/q terms overflow or cancel.
    ``exclude`` (A, M) bool: candidates left out (copies of the positive), as in ``contrastive_loss``.
    """
    logits = logits.double()
    if exclude is not None:
        logits = logits.masked_fill(exclude, float("-inf"))
    q = q.double().clamp_min(MIN_Q)
    positive = logits.gather(1, positives[:, None])[:, 0]
    log_total = torch.logsumexp(logits, dim=1)
    # exp(q x) - 1 written as expm1 keeps the q -> 0 limit exact: (-expm1(q s+) + expm1(q (log lam + log S))) / q.
    loss = (-torch.expm1(q * positive) + torch.expm1(q * (log_total + torch.log(torch.tensor(lam, dtype=q.dtype))))) / q
    return loss.mean().float()


def l2_influence_loss(anchors: Tensor, old_positives: Tensor, c: float = 1.0) -> Tensor:
    """Euclidean BCT baseline: mean squared L2 distance between each anchor and its old positive, (A, D), (A, D) ->
    (). No cone, no robust weighting, no hyperbolic distance.

    Hyperboloid points (c > 0) are compared as tangent vectors at the origin (logmap0, the Euclidean coordinates
    HyTE-H's projection produces before expmap0); Euclidean vectors (c = 0, the encoders' convention for a
    Euclidean model) as unit vectors, since a cosine model's index holds only their directions."""
    if c == 0:
        return (F.normalize(anchors, dim=-1) - F.normalize(old_positives, dim=-1)).pow(2).sum(-1).mean()
    return (lorentz.logmap0(anchors, c) - lorentz.logmap0(old_positives, c)).pow(2).sum(-1).mean()


def cone_loss(old: Tensor, new: Tensor, c: float, min_radius: float | Tensor) -> Tensor:
    """Mean entailment-cone violation of new points in the cones of their old counterparts, (P, D), (P, D) -> ().
    ``min_radius``: K of the half-aperture, a number or one per pair (P,) (the q-widened cones)."""
    return lorentz.entailment_violation(old, new, c, min_radius).mean()


def alignment_q(mode: str, uncertainties: Tensor, q_fixed: float = 0.5, seed: int = 0) -> Tensor:
    """Per cached document, the RINCE exponent, (N,) -> (N,): the uncertainty itself ("uncertainty"), a constant
    ("fixed"), or the uncertainties permuted across documents with ``seed`` ("permuted", the causal control)."""
    if mode == "uncertainty":
        return uncertainties.clone()
    if mode == "fixed":
        return torch.full_like(uncertainties, q_fixed)
    if mode == "permuted":
        generator = torch.Generator().manual_seed(seed)
        return uncertainties[torch.randperm(len(uncertainties), generator=generator)]
    raise ValueError(f"q mode must be uncertainty, fixed or permuted; got {mode!r}")
