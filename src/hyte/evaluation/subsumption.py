"""HiT's protocol for judging a model on a taxonomy (He et al., NeurIPS 2024), and parent ranking.

Subsumption prediction: each question (child, parent) with its negatives becomes labelled pairs, (child, parent, 1)
and (child, negative, 0) for its random or its hard negatives. A pair is scored
``-(d(child, parent) + weight * (norm(parent) - norm(child)))``: near, and the parent nearer the origin. The weight
(0.0, 0.1, ..., 4.9) and the threshold (steps of 0.01 between the lowest and highest score) are chosen by F1 on the
validation pairs and then applied to the test pairs. HiT stops its weight search at the first weight that does not
improve F1; here every weight is tried, for every model alike (a validation F1 at least as high).

Geometries (``geometry``), each with its own distance d and norm:

* ``lorentz``: HyTE's points, geodesic distance and distance to the origin;
* ``cosine``: a Euclidean model (HyTE's Euclidean control, plain sentence encoders): 1 - cosine, and the norm of
  the pooled vector;
* ``poincare``: HiT's reading of a sentence encoder's mean-pooled vectors as points of a Poincaré ball of curvature
  1 / dim: its geodesic distance and distance to the origin.

Parent ranking: for each held-out positive, every concept of the taxonomy is ranked by the same score (the chosen
weight) and the rank of the parent read, the child's other ancestors left out ("filtered", as ontology-subsumption
benchmarks rank): MRR, Hits@1, Hits@10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import lorentz
from ..data.taxonomy import Subsumption

__all__ = ["GEOMETRIES", "Embedded", "broader_narrower", "choose_and_test", "embed_concepts", "evaluate_taxonomy", "pair_scores",
           "parent_nearer_origin", "parent_ranking", "search_threshold", "subsumption_pairs", "threshold_metrics"]

GEOMETRIES = ("lorentz", "cosine", "poincare")
# HiT's grid of centripetal weights.
WEIGHTS = tuple(round(0.1 * step, 1) for step in range(50))


@dataclass(frozen=True)
class Embedded:
    """Concepts embedded for scoring: ``index`` concept id -> row; ``vectors`` (N, D) as the geometry reads them
    (hyperboloid points, unit vectors or Poincaré-ball points); ``norms`` (N,) each concept's distance to the origin
    (the vector norm for cosine). ``curvature``: HyTE's c for lorentz (<x, x>_L = -c); HiT's c for poincare (a
    ball of curvature -c, radius 1 / sqrt(c)), which is HyTE's 1 / c."""

    geometry: str
    index: dict[str, int]
    vectors: np.ndarray
    norms: np.ndarray
    curvature: float = 1.0

    def distances(self, children: np.ndarray, parents: np.ndarray) -> np.ndarray:
        """Row-wise distances between rows ``children`` and ``parents`` (same length), float64."""
        return _distance(self, self.vectors[children], self.vectors[parents])

    def distances_to_all(self, child: int) -> np.ndarray:
        """Distance from one concept to every concept, (N,)."""
        return _distance(self, self.vectors[child][None, :], self.vectors)


def _distance(embedded: Embedded, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y, c = x.astype(np.float64), y.astype(np.float64), embedded.curvature
    if embedded.geometry == "cosine":
        return 1.0 - np.sum(x * y, axis=-1)
    if embedded.geometry == "lorentz":
        inner = -x[..., 0] * y[..., 0] + np.sum(x[..., 1:] * y[..., 1:], axis=-1)
        # -<x, y>_L / c >= 1 for points of one hyperboloid; float rounding can dip below it for near-equal points.
        return np.sqrt(c) * np.arccosh(np.maximum(-inner / c, 1.0))
    # Poincaré ball of curvature -c: d = arccosh(1 + 2 c |x - y|^2 / ((1 - c|x|^2)(1 - c|y|^2))) / sqrt(c).
    gap = np.sum((x - y) ** 2, axis=-1)
    # A point at or beyond the ball's edge (HiT's encoders are not kept inside it) would divide by <= 0: clamp the
    # conformal factors at a small positive value, as geoopt projects such points just inside the ball.
    shrink = np.maximum(1 - c * np.sum(x * x, axis=-1), 1e-15) * np.maximum(1 - c * np.sum(y * y, axis=-1), 1e-15)
    return np.arccosh(1 + 2 * c * gap / shrink) / np.sqrt(c)


def embed_concepts(encoder, texts: dict[str, str], geometry: str, batch_size: int = 64) -> Embedded:
    """Encode concept texts (id -> text) as documents for ``geometry``.

    ``encoder``: a :class:`hyte.encoders.HyteEncoder` (lorentz; its Euclidean twin: cosine) or a
    :class:`hyte.encoders.EuclideanEncoder` (cosine, poincare), as :func:`hyte.encoders.load_encoder` gives them.
    """
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {', '.join(GEOMETRIES)}; got {geometry!r}")
    ids = list(texts)
    strings = [texts[i] for i in ids]
    index = {concept: row for row, concept in enumerate(ids)}
    if geometry == "lorentz":
        if getattr(encoder, "kind", None) != "hyperbolic":
            raise ValueError(f"{encoder.name} is not a hyperbolic model: score it with geometry cosine")
        points = encoder.encode(strings, role="document", batch_size=batch_size).astype(np.float64)
        c = encoder.curvature
        # lorentz's asinh form: arccosh(x_0 / sqrt(c)) loses its digits near the origin, where HyTE-H's points sit.
        return Embedded("lorentz", index, points, np.asarray(lorentz.distance_to_origin(points, c)), c)
    raw = np.asarray(encoder.pooled(strings, batch_size=batch_size), dtype=np.float64)
    norms = np.linalg.norm(raw, axis=1)
    if geometry == "cosine":
        return Embedded("cosine", index, raw / np.maximum(norms, 1e-12)[:, None], norms, 0.0)
    c = 1.0 / raw.shape[1]  # HiT's ball circumscribes the encoder's output space
    return Embedded("poincare", index, raw, 2 / np.sqrt(c) * np.arctanh(np.minimum(np.sqrt(c) * norms, 1 - 1e-15)),
                    c)


def subsumption_pairs(questions: Sequence[Subsumption], negatives: str) -> tuple[list[str], list[str], np.ndarray]:
    """(children, candidates, labels): each question's positive (label 1), then its ``negatives`` ("random" or
    "hard") labelled 0."""
    if negatives not in ("random", "hard"):
        raise ValueError(f"negatives must be random or hard; got {negatives!r}")
    children, candidates, labels = [], [], []
    for question in questions:
        chosen = question.random_negatives if negatives == "random" else question.hard_negatives
        for candidate, label in ((question.parent, 1), *((n, 0) for n in chosen)):
            children.append(question.child)
            candidates.append(candidate)
            labels.append(label)
    return children, candidates, np.asarray(labels, dtype=np.int64)


def pair_scores(embedded: Embedded, children: Sequence[str], candidates: Sequence[str], weight: float) -> np.ndarray:
    """HiT's score of each (child, candidate parent) pair: -(d + weight (norm(parent) - norm(child)))."""
    rows_c = np.asarray([embedded.index[c] for c in children])
    rows_p = np.asarray([embedded.index[p] for p in candidates])
    centripetal = embedded.norms[rows_p] - embedded.norms[rows_c]
    return -(embedded.distances(rows_c, rows_p) + weight * centripetal)


def threshold_metrics(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """Precision, recall, F1, accuracy and accuracy on negatives of "positive when score > threshold" (HiT's
    rule); NaN where a ratio has nothing to divide by (no predicted positive, say)."""
    predicted = scores > threshold
    positive = labels == 1
    tp, fp = int(np.sum(predicted & positive)), int(np.sum(predicted & ~positive))
    fn = int(np.sum(~predicted & positive))
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.float64(tp) / (tp + fp)
        recall = np.float64(tp) / (tp + fn)
        f1 = 2 * precision * recall / (precision + recall)
        negatives_right = np.float64(np.sum(~predicted & ~positive)) / np.sum(~positive)
    return {"threshold": float(threshold), "precision": float(precision), "recall": float(recall), "f1": float(f1),
            "accuracy": float(np.mean(predicted == positive)), "accuracy_on_negatives": float(negatives_right)}


def search_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(threshold, F1): HiT's grid (hundredths from int(100 min) to int(100 max), exclusive), the last threshold
    of the best F1 kept, as HiT's ``>=`` keeps it. Vectorised: counts of scores above each threshold by a sorted
    search instead of one pass per threshold."""
    grid = np.arange(int(scores.min() * 100), int(scores.max() * 100)) / 100
    if grid.size == 0:
        return float(scores.min()), float("nan")
    positive = np.sort(scores[labels == 1])
    negative = np.sort(scores[labels != 1])
    tp = positive.size - np.searchsorted(positive, grid, side="right")
    fp = negative.size - np.searchsorted(negative, grid, side="right")
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp / (tp + fp)
        recall = tp / positive.size
        f1 = 2 * precision * recall / (precision + recall)
    if np.all(np.isnan(f1)):
        return float(grid[0]), float("nan")
    best = np.nanmax(f1)
    chosen = np.flatnonzero(f1 == best)[-1]
    return float(grid[chosen]), float(best)


def choose_and_test(embedded: Embedded, validation: Sequence[Subsumption], test: Sequence[Subsumption],
                    negatives: str) -> dict:
    """The weight and threshold chosen by F1 on ``validation``, and the test metrics they give."""
    val_children, val_candidates, val_labels = subsumption_pairs(validation, negatives)
    best_weight, best_threshold, best_f1 = 0.0, 0.0, -1.0
    for weight in WEIGHTS:
        threshold, f1 = search_threshold(pair_scores(embedded, val_children, val_candidates, weight), val_labels)
        if f1 > best_f1:  # strictly: among equal F1s the smallest weight, the plainest score
            best_weight, best_threshold, best_f1 = weight, threshold, f1
    children, candidates, labels = subsumption_pairs(test, negatives)
    tested = threshold_metrics(pair_scores(embedded, children, candidates, best_weight), labels, best_threshold)
    return {"weight": best_weight, "validation_f1": best_f1, **tested, "pairs": int(labels.size),
            "positives": int(labels.sum())}


def parent_ranking(embedded: Embedded, questions: Sequence[Subsumption], ancestors: dict[str, frozenset[str]],
                   weight: float, limit: int | None = None) -> dict[str, float]:
    """MRR, Hits@1 and Hits@10 of each question's parent among all concepts (the child itself and its other
    ancestors left out), scored as ``pair_scores`` with ``weight``. ``limit``: the first this many questions."""
    ranks = []
    for question in list(questions)[:limit]:
        child = embedded.index[question.child]
        scores = -(embedded.distances_to_all(child) + weight * (embedded.norms - embedded.norms[child]))
        skip = [embedded.index[a] for a in ancestors[question.child] if a != question.parent and a in embedded.index]
        scores[[child, *skip]] = -np.inf
        ranks.append(1 + int(np.sum(scores > scores[embedded.index[question.parent]])))
    ranks_array = np.asarray(ranks, dtype=np.float64)
    return {"mrr": float(np.mean(1 / ranks_array)), "hits@1": float(np.mean(ranks_array <= 1)),
            "hits@10": float(np.mean(ranks_array <= 10)), "questions": len(ranks)}


def evaluate_taxonomy(encoder, taxonomy, split, geometry: str, *, described: bool = False, batch_size: int = 64,
                      ranking_questions: int | None = 1000) -> dict:
    """HiT's subsumption prediction on ``split`` (a :class:`hyte.data.taxonomy_splits.TaxonomySplit` of
    ``taxonomy``) with random and with hard negatives, and parent ranking of the test positives (the first
    ``ranking_questions``) by distance alone and at the weight chosen with hard negatives. ``described``: concepts read as
    "name: description"."""
    from ..data.taxonomy_splits import ancestors_of

    texts = {concept: taxonomy.text(concept, described) for concept in taxonomy.ontology.terms}
    embedded = embed_concepts(encoder, texts, geometry, batch_size=batch_size)
    # A HiT Hub export carries one kind of negatives, read as given (random_negatives): judge what the split has.
    kinds = [kind for kind in ("random", "hard") if any(getattr(q, f"{kind}_negatives") for q in split.test)]
    if not kinds:
        raise ValueError(f"the {split.scheme} split's test questions carry no negatives: nothing to tell apart")
    prediction = {negatives: choose_and_test(embedded, split.validation, split.test, negatives) for negatives in kinds}
    ancestors = ancestors_of(taxonomy.ontology)
    # Ranked by distance alone and with the weight chosen on the hardest negatives judged: a large weight sorts
    # every concept by its radius, which may separate a pair well and still rank a parent behind shallow concepts.
    ranking = {f"weight {weight:g}": parent_ranking(embedded, split.test, ancestors, weight, limit=ranking_questions)
               for weight in dict.fromkeys((0.0, prediction[kinds[-1]]["weight"]))}
    return {"geometry": geometry, "split": split.scheme, "concepts": len(texts), "train_edges": len(split.train),
            "prediction": prediction, "parent_ranking": ranking, "parent_nearer_origin": parent_nearer_origin(
                embedded, split.test), "broader_narrower": broader_narrower(embedded, split.test, ancestors,
                                                                            limit=ranking_questions)}


def parent_nearer_origin(embedded: Embedded, questions: Sequence[Subsumption]) -> float:
    """The share of held-out positives whose parent sits nearer the origin than its child (a smaller norm): where
    it is high, a --broader search from the child finds the parent's side, --narrower the child's."""
    children = np.asarray([embedded.index[q.child] for q in questions])
    parents = np.asarray([embedded.index[q.parent] for q in questions])
    return float(np.mean(embedded.norms[parents] < embedded.norms[children]))


def broader_narrower(embedded: Embedded, questions: Sequence[Subsumption], ancestors: dict[str, frozenset[str]],
                     limit: int | None = None, k: int = 10) -> dict[str, float]:
    """Broader / narrower search on held-out edges, as ``hyte index search --broader / --narrower`` runs it among
    all concepts: from each held-out child, the concepts nearer the origin than it, nearest first: is its parent
    the first (``broader@1``), among the first ``k``? From each held-out parent, the concepts farther out: is the
    child among the first ``k`` (``narrower@k``)? The child's other ancestors are left out of the broader hits, as
    in ``parent_ranking``; ``unfiltered@1``: the parent first without the radius filter, for reference. The first
    ``limit`` questions (the direct and transitive edges of the split's test side)."""
    broader_first, broader_top, narrower_top, unfiltered_first = [], [], [], []
    for question in list(questions)[:limit]:
        child, parent = embedded.index[question.child], embedded.index[question.parent]
        others = [embedded.index[a] for a in ancestors[question.child] if a != question.parent and a in embedded.index]
        from_child = embedded.distances_to_all(child)
        from_child[[child, *others]] = np.inf
        unfiltered_first.append(int(np.argmin(from_child)) == parent)
        broader = np.where(embedded.norms < embedded.norms[child], from_child, np.inf)
        # Not a broader hit at all (the parent sits farther out): found at no rank.
        rank = int(np.sum(broader < broader[parent])) if np.isfinite(broader[parent]) else np.inf
        broader_first.append(rank == 0)
        broader_top.append(rank < k)
        from_parent = embedded.distances_to_all(parent)
        from_parent[parent] = np.inf
        narrower = np.where(embedded.norms > embedded.norms[parent], from_parent, np.inf)
        narrower_top.append(bool(np.isfinite(narrower[child])) and int(np.sum(narrower < narrower[child])) < k)
    return {"broader@1": float(np.mean(broader_first)), f"broader@{k}": float(np.mean(broader_top)),
            f"narrower@{k}": float(np.mean(narrower_top)), "unfiltered@1": float(np.mean(unfiltered_first)),
            "questions": len(broader_first)}
