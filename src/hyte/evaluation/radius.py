"""Radius by depth (the paper's Figure 4): mean and spread of ``encoder.radii`` (the time coordinate x0 for HyTE
models, the norm of the un-normalised mean-pooled vector for Euclidean ones) over texts grouped by hierarchy depth,
their Spearman rank correlation with depth (``depth_correlation``, with a bootstrap interval), and the plot."""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..data.hpo import hpo_terms
from ..identity import differences
from ..results import check_result_output, portable_path, same_path

__all__ = ["claim_radius_result", "depth_correlation", "edge_diagnostics", "format_depth_correlation",
           "hpo_texts_by_depth", "plot_radius_by_depth", "radius_by_depth", "rank_correlations", "sample_by_depth",
           "texts_by_depth"]


def _per_depth(values: np.ndarray, depths: list[int], sizes: list[int]) -> tuple[dict, bool]:
    """({depth: {"mean", "std", "count"}}, whether the means never decrease with depth)."""
    chunks = np.split(values, np.cumsum(sizes)[:-1])  # the values of each depth, in order
    by_depth = {depth: {"mean": float(chunk.mean()), "std": float(chunk.std()), "count": int(size)}
                for depth, size, chunk in zip(depths, sizes, chunks)}
    means = [by_depth[d]["mean"] for d in depths]
    return by_depth, all(b >= a for a, b in zip(means, means[1:]))


def rank_correlations(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``x`` and ``y`` (shape (resamples, n)); NaN where a row is constant."""
    from scipy.stats import rankdata

    x = rankdata(x, axis=1)  # average ranks for ties, as scipy.stats.spearmanr
    y = rankdata(y, axis=1)
    x -= x.mean(axis=1, keepdims=True)
    y -= y.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))


def depth_correlation(radii: np.ndarray, depths: np.ndarray, num_bootstrap: int = 1000, seed: int = 0) -> dict:
    """Spearman's rank correlation between radius and depth, with a 95 % percentile bootstrap interval.

    ``radii`` and ``depths``: shape (num_texts,), one entry per text. The estimate is ``scipy.stats.spearmanr``;
    the interval resamples the texts with replacement ``num_bootstrap`` times (a generator seeded by ``seed``, so
    the same inputs always give the same interval) and takes the 2.5th and 97.5th percentiles of rho (resamples
    where radius or depth is constant have no rho and are left out). Returns ``{"spearman", "ci_low", "ci_high",
    "num_texts"}``; the three numbers are None when undefined (fewer than two texts, a constant input, or
    ``num_bootstrap=0`` for the interval). +1: the radius grows with depth for every pair of texts; -1: it shrinks.
    """
    from scipy.stats import spearmanr

    radii = np.asarray(radii, dtype=np.float64)
    depths = np.asarray(depths, dtype=np.float64)
    if radii.ndim != 1 or radii.shape != depths.shape:
        raise ValueError(f"radii and depths must be 1-D of the same length; got {radii.shape} and {depths.shape}")
    if num_bootstrap < 0:
        raise ValueError(f"num_bootstrap must be >= 0; got {num_bootstrap}")
    n = radii.size
    result = {"spearman": None, "ci_low": None, "ci_high": None, "num_texts": int(n)}
    if n < 2 or np.ptp(radii) == 0 or np.ptp(depths) == 0:
        return result  # rho is undefined (spearmanr would warn and return NaN)
    # Rounded to 12 places, as the interval: spearmanr and the vectorised resamples differ in the last bits, and a
    # perfect correlation should read 1.0 in both, not 0.9999999999999999 against an interval [1.0, 1.0].
    result["spearman"] = round(float(spearmanr(radii, depths).statistic), 12)
    rng = np.random.default_rng(seed)
    rhos = []
    for start in range(0, num_bootstrap, 256):  # in chunks: (resamples, n) index arrays stay small
        rows = rng.integers(0, n, size=(min(256, num_bootstrap - start), n))
        rhos.append(rank_correlations(radii[rows], depths[rows]))
    rhos = np.concatenate(rhos) if rhos else np.empty(0)
    rhos = rhos[np.isfinite(rhos)]
    if rhos.size:
        low, high = np.percentile(rhos, [2.5, 97.5])
        result.update(ci_low=round(float(low), 12), ci_high=round(float(high), 12))
    return result


def format_depth_correlation(entry: Mapping | None, digits: int = 3) -> str:
    """A :func:`depth_correlation` result as "rho [low, high]" ("n/a" where rho is undefined or not recorded)."""
    if not entry or entry.get("spearman") is None:
        return "n/a"
    text = f"{entry['spearman']:+.{digits}f}"
    if entry.get("ci_low") is not None and entry.get("ci_high") is not None:
        text += f" [{entry['ci_low']:+.{digits}f}, {entry['ci_high']:+.{digits}f}]"
    return text


def radius_by_depth(encoder, texts_by_depth: Mapping[int, Sequence[str]], batch_size: int = 32,
                    num_bootstrap: int = 1000, seed: int = 0) -> dict:
    """Spearman correlation of ``encoder.radii`` with depth over all texts, and the mean radius per depth.

    The radius is the encoder's own: the time coordinate x0 of the document point for HyTE models, the norm of the
    un-normalised mean-pooled vector for Euclidean ones. Returns ``{"spearman": {"spearman", "ci_low", "ci_high",
    "num_texts"}, "by_depth": {depth: {"mean", "std", "count"}}, "shallowest", "deepest", "monotonic", "kind"}``.

    ``spearman`` is :func:`depth_correlation` over every text (``num_bootstrap`` resamples, ``seed``), the summary
    to quote: unlike a change between the shallowest and the deepest level, it does not hang on the few texts at
    the two ends. ``monotonic`` = the per-depth means never decrease with depth.

    For hyperbolic encoders (``kind == "hyperbolic"``, curvature c > 0) the per-depth table is also given for the
    geodesic distance to the origin, sqrt(c) arccosh(x0 / sqrt(c)), as ``distance_by_depth`` and
    ``distance_monotonic``: near the origin x0 = cosh(d) ~ 1 + d^2 / 2 hides relative changes that the distance
    shows. Spearman's rho is computed on that distance; it only sees ranks and the distance is an increasing
    function of x0, so it is the same on x0 (up to x0 values within rounding of the origin, which the distance ties
    at 0). All texts are encoded in one batched pass.
    """
    depths = sorted(depth for depth, texts in texts_by_depth.items() if len(texts))
    if not depths:
        raise ValueError("no texts to measure")
    sizes = [len(texts_by_depth[depth]) for depth in depths]
    texts = [text for depth in depths for text in texts_by_depth[depth]]
    radii = np.asarray(encoder.radii(texts, batch_size=batch_size), dtype=np.float64)
    by_depth, monotonic = _per_depth(radii, depths, sizes)
    result = {"by_depth": by_depth, "shallowest": depths[0], "deepest": depths[-1], "monotonic": monotonic,
              "kind": getattr(encoder, "kind", None)}
    curvature = float(getattr(encoder, "curvature", 0.0) or 0.0)
    ranked = radii
    if result["kind"] == "hyperbolic" and curvature > 0:
        root = math.sqrt(curvature)
        # x0 >= sqrt(c) on the hyperboloid; float rounding can land just below, where arccosh is undefined.
        distances = root * np.arccosh(np.maximum(radii / root, 1.0))
        by_depth, monotonic = _per_depth(distances, depths, sizes)
        result.update(curvature=curvature, distance_by_depth=by_depth, distance_monotonic=monotonic)
        ranked = distances
    result["spearman"] = depth_correlation(ranked, np.repeat(depths, sizes), num_bootstrap=num_bootstrap, seed=seed)
    return result


def edge_diagnostics(encoder, edges: Sequence[tuple[str, str]], cone_min_radius: float = 0.1,
                     batch_size: int = 32) -> dict:
    """Does the radius order each (parent text, child text) is-a edge the way specificity should?

    Returns, over the edges (and their distinct texts):

    * ``child_farther``: the share of edges whose child sits farther from the origin than its parent;
    * ``inside_cone``: hyperbolic encoders, the share whose child lies inside the parent's entailment cone
      (``lorentz.entailment_violation`` = 0, half-aperture constant ``cone_min_radius``); None for Euclidean ones;
    * ``radius_sd``, ``radius_p05``, ``radius_p95``: the radius's spread (sample sd, 5th and 95th percentiles),
      without which a share or a correlation may be read off a radius that hardly varies;
    * hyperbolic encoders (None for Euclidean ones), whether the curvature can matter where the texts lie:
      ``stretch_median`` / ``stretch_p95``, ||x_s|| / r = sqrt(c) sinh(r / sqrt(c)) / r over the texts (1 in a flat
      space; below about 1.1 geodesic ranking is nearly angle ranking), and ``cones_open``, the share of texts whose
      cone is narrower than a half-space (||x_s|| > 2 K sqrt(c); at or below it the aperture is clamped at pi/2);
    * searching among the edges' texts with a text's own query vector (the text itself left out):
      ``broader_top1``, how often a child's nearest *broader* hit (nearer the origin than the child) is its parent;
      ``narrower_top1``, how often a parent's nearest *narrower* hit (farther out) is one of its children here;
      ``parent_top1``, how often a child's nearest hit without the filter is its parent (for reference).

    The radius is the geodesic distance to the origin for hyperbolic encoders (from the space part, accurate near
    the origin), the raw pooled vector's norm otherwise (``encoder.radii``), so the Euclidean control is measured
    with its own counterpart.
    """
    import torch

    from .. import lorentz

    if not edges:
        raise ValueError("no edges to measure")
    texts = sorted({text for edge in edges for text in edge})
    row = {text: i for i, text in enumerate(texts)}
    parents = np.array([row[parent] for parent, _ in edges])
    children = np.array([row[child] for _, child in edges])
    documents = np.asarray(encoder.encode(texts, role="document", batch_size=batch_size))
    inside = stretch = cones_open = None
    c = float(getattr(encoder, "curvature", 0.0) or 0.0)  # 0 for Euclidean encoders (EucBERT's HyteEncoder too)
    if getattr(encoder, "kind", None) == "hyperbolic" and c > 0:
        points = torch.from_numpy(documents.astype(np.float64))
        radii = lorentz.distance_to_origin(points, c).numpy()
        violation = lorentz.entailment_violation(points[parents], points[children], c, cone_min_radius)
        inside = float((violation == 0).double().mean())
        space_norms = points[:, 1:].norm(dim=-1).numpy()
        # The origin has no stretch to speak of (0 / 0); it counts as flat.
        stretch = np.where(radii > 0, space_norms / np.maximum(radii, np.finfo(np.float64).tiny), 1.0)
        cones_open = float((space_norms > 2 * cone_min_radius * np.sqrt(c)).mean())
    else:
        radii = np.asarray(encoder.radii(texts, batch_size=batch_size), dtype=np.float64)
    scores = np.asarray(encoder.scores(np.asarray(encoder.encode(texts, role="query", batch_size=batch_size)),
                                       documents), dtype=np.float64)
    np.fill_diagonal(scores, -np.inf)  # a text is not its own hit

    def nearest(rows: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Each row's best hit among the allowed columns (-1 where none is allowed)."""
        masked = np.where(allowed, scores[rows], -np.inf)
        return np.where(np.isfinite(masked.max(axis=1)), masked.argmax(axis=1), -1)

    broader = nearest(children, radii[None, :] < radii[children][:, None])
    unique_parents = np.unique(parents)
    narrower = nearest(unique_parents, radii[None, :] > radii[unique_parents][:, None])
    child_sets = {p: set(children[parents == p]) for p in unique_parents}
    low, high = np.percentile(radii, [5, 95])
    return {"child_farther": float((radii[children] > radii[parents]).mean()), "inside_cone": inside,
            "radius_sd": float(radii.std(ddof=1)) if len(radii) > 1 else 0.0, "radius_p05": float(low),
            "radius_p95": float(high),
            "stretch_median": None if stretch is None else float(np.median(stretch)),
            "stretch_p95": None if stretch is None else float(np.percentile(stretch, 95)),
            "cones_open": cones_open, "broader_top1": float((broader == parents).mean()),
            "narrower_top1": float(np.mean([hit in child_sets[p] for p, hit in zip(unique_parents, narrower)])),
            "parent_top1": float((scores[children].argmax(axis=1) == parents).mean()), "num_edges": len(edges)}


def sample_by_depth(by_depth: Mapping[int, list[tuple[str, str]]], per_depth: int, seed: int) -> dict[int, list[str]]:
    """``{depth: [(id, text), ...]}`` -> ``{depth: texts}``, at most ``per_depth`` per depth: a ``seed``-ed sample
    kept in id order, so the texts do not depend on the order they were collected in."""
    rng = random.Random(seed)
    sampled = {}
    for depth in sorted(by_depth):
        items = by_depth[depth]
        if len(items) > per_depth:
            items = sorted(rng.sample(items, per_depth))
        sampled[depth] = [text for _, text in items]
    return sampled


def texts_by_depth(ids, depth_of, text_of, per_depth: int, seed: int, min_depth: int,
                    max_depth: int | None) -> dict[int, list[str]]:
    """:func:`sample_by_depth` of ``text_of(id)`` over the ``ids`` whose ``depth_of(id)`` lies in ``min_depth`` to
    ``max_depth`` (None: the deepest); an id ``depth_of`` refuses (ValueError: not below the root) is left out."""
    by_depth: dict[int, list[tuple[str, str]]] = {}
    for key in ids:
        try:
            depth = depth_of(key)
        except ValueError:
            continue
        if depth >= min_depth and (max_depth is None or depth <= max_depth):
            by_depth.setdefault(depth, []).append((key, text_of(key)))
    return sample_by_depth(by_depth, per_depth, seed)


def hpo_texts_by_depth(per_depth: int = 200, min_depth: int = 2, max_depth: int | None = 12, split: str = "all",
                       seed: int = 0, test_fraction: float = 0.2, split_seed: int = 0) -> dict[int, list[str]]:
    """Up to ``per_depth`` HPO definitions per depth (a ``seed``-ed sample, in term-id order), depths ``min_depth`` to
    ``max_depth`` (None: the deepest). ``split="test"`` samples only the held-out branches."""
    ontology, term_ids = hpo_terms(split, test_fraction, split_seed)
    defined = [t for t in sorted(ontology.terms if term_ids is None else term_ids)
               if ontology.terms[t].definition is not None]
    return texts_by_depth(defined, ontology.depth, lambda t: ontology.terms[t].definition, per_depth, seed,
                           min_depth, max_depth)


def taxonomy_texts_by_depth(taxonomy, per_depth: int = 200, min_depth: int = 2, max_depth: int | None = 12,
                            seed: int = 0, described: bool = False) -> dict[int, list[str]]:
    """As :func:`hpo_texts_by_depth` for a user's taxonomy (:mod:`hyte.data.taxonomy`): up to ``per_depth`` concept
    texts (names, or "name: description" with ``described``) per depth, counted from the nearest root."""
    return texts_by_depth(sorted(taxonomy.ontology.terms), taxonomy.ontology.depth,
                           lambda concept: taxonomy.text(concept, described), per_depth, seed, min_depth, max_depth)


def plot_radius_by_depth(results_by_model: Mapping[str, dict], path_png: str | os.PathLike,
                         title: str = "Radius by hierarchy depth") -> Path:
    """A PNG of :func:`radius_by_depth` results for several models (matplotlib, Agg backend).

    Left: each model's mean radius relative to its value at the shallowest depth (models of different scale share
    one axis), with the standard deviation as a band; for hyperbolic models the geodesic distance to the origin is
    drawn (``distance_by_depth``), x0 being nearly flat close to the origin. Right: Spearman's rho between radius
    and depth over all texts (``spearman``) with its 95 % bootstrap interval.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not results_by_model:
        raise ValueError("no results to plot")
    path_png = Path(path_png)
    path_png.parent.mkdir(parents=True, exist_ok=True)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    names, rhos, errors = [], [], []
    for name, result in results_by_model.items():
        distance = bool(result.get("distance_by_depth"))
        by_depth = {int(depth): values
                    for depth, values in result["distance_by_depth" if distance else "by_depth"].items()}
        name = f"{name} (distance to origin)" if distance else name
        depths = sorted(by_depth)
        base = by_depth[depths[0]]["mean"] or 1.0
        means = np.array([by_depth[d]["mean"] for d in depths]) / base
        stds = np.array([by_depth[d]["std"] for d in depths]) / abs(base)
        left.plot(depths, means, marker="o", label=name)
        left.fill_between(depths, means - stds, means + stds, alpha=0.15)
        names.append(name)
        spearman = result.get("spearman") or {}
        rho = spearman.get("spearman")
        rhos.append(rho or 0.0)
        low, high = spearman.get("ci_low"), spearman.get("ci_high")
        errors.append((rho - low, high - rho) if None not in (rho, low, high) else (0.0, 0.0))
    left.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    left.set_xlabel("depth in the hierarchy (general → specific)")
    left.set_ylabel("mean radius / its value at the shallowest depth")
    left.set_title(title)
    left.legend(fontsize=8)
    colors = ["tab:green" if rho > 0 else "tab:red" for rho in rhos]
    right.barh(range(len(names)), rhos, xerr=np.array(errors).T, color=colors, capsize=3)
    right.set_yticks(range(len(names)), names, fontsize=8)
    right.axvline(0.0, color="black", linewidth=0.8)
    right.set_xlim(-1.0, 1.0)
    right.set_xlabel("Spearman ρ(depth, radius), 95 % interval")
    right.invert_yaxis()
    figure.tight_layout()
    figure.savefig(path_png, dpi=120)
    plt.close(figure)
    return path_png


def claim_radius_result(path: str | os.PathLike, models: Sequence[str], sample: dict) -> Path:
    """``path`` as the place of a radius result (``check_result_output``), checked before any encoding: an earlier
    one is replaced only by a rerun on the same ``models`` and the same ``sample`` of texts (its "models" and
    "texts"."sample"; a recorded path that names a given model counts as the same). ValueError otherwise."""
    path = check_result_output(path, "radius")
    if not path.is_file():
        return path
    earlier = json.loads(path.read_text(encoding="utf-8"))
    recorded, wanted = {}, {}
    if (earlier.get("texts") or {}).get("sample") is not None:
        recorded["sample"], wanted["sample"] = earlier["texts"]["sample"], sample
    if isinstance(earlier.get("models"), dict):
        before = [str(entry.get("model")) for entry in earlier["models"].values() if isinstance(entry, dict)]
        recorded["models"] = sorted(before)
        wanted["models"] = sorted(next((r for r in before if same_path(r, m)), portable_path(m)) for m in models)
    changed = differences(recorded, wanted)
    if changed:
        raise ValueError(f"{path} holds the radius result of another run ({'; '.join(changed)}): give another "
                         "--name (or --output-dir), or delete that one first")
    return path
