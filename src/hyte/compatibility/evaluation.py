"""Compatibility of an upgraded model with an old one: ``hyte eval compatibility``.

M(phi_q, phi_g) is a retrieval metric with queries embedded by phi_q and documents (the index) by phi_g (Shen et al.
2020). The matrix: old->old (before the upgrade), new->old (cross-model search before re-encoding: the new model is
compatible when it beats old->old), new->new (after re-encoding: the upgrade is worth having when it beats old->old).
P_com = (M(new, old) - M(old, old)) / (M(ref, ref) - M(old, old)) and P_up = M(new, new) / M(ref, ref) - 1, with ref
the new model trained without the compatibility objective (default: new itself, so P_up = 0); docs/training.md
explains them. P_com depends on the old model through M(old, old) in both terms: compare methods only with the same
old model, beside the raw matrix. Metrics: held-out retrieval (nDCG@10, R@1) and the hierarchy benchmark (SpecHR,
R@1, MRR); encodings are memoised, so the old documents are embedded once for old->old and new->old.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import lorentz

PAIRS = ("old->old", "new->old", "new->new")
RETRIEVAL_METRICS = ("ndcg@10", "recall@1")
HIERARCHY_METRICS = ("spechr", "recall@1", "mrr")


class MemoEncoder:
    """An encoder whose ``encode`` results are remembered per (role, texts), so repeated scoring of the same texts
    (old documents for old->old and new->old) embeds them once; everything else is the wrapped encoder's."""

    def __init__(self, encoder):
        self.encoder = encoder
        self._memo: dict = {}

    def __getattr__(self, name: str):
        if name == "encoder":  # not set yet (the object is being copied or unpickled)
            raise AttributeError(name)
        return getattr(self.encoder, name)

    def encode(self, texts, role: str = "document", batch_size: int = 32, show_progress_bar=None) -> np.ndarray:
        key = (role, tuple(texts))
        if key not in self._memo:
            self._memo[key] = self.encoder.encode(list(texts), role=role, batch_size=batch_size,
                                                  show_progress_bar=show_progress_bar)
        return self._memo[key]


class CrossModelEncoder:
    """Queries embedded by ``query_encoder``, documents by ``document_encoder`` (the index's model), scored as the
    index's model scores (everything but ``encode`` is its): the Lorentz inner product of the flipped query and the
    document point (HyTE models), the cosine (a Euclidean pair, curvature 0); both must share dimension and
    curvature. Plugs into ``evaluate_retrieval`` and ``evaluate_hierarchy`` like a single encoder."""

    def __init__(self, query_encoder, document_encoder):
        if query_encoder.dim != document_encoder.dim or abs(query_encoder.curvature - document_encoder.curvature) > 1e-9:
            raise ValueError(f"the query model emits dimension {query_encoder.dim}, curvature "
                             f"{query_encoder.curvature}; the document model dimension {document_encoder.dim}, "
                             f"curvature {document_encoder.curvature}: no cross-model search is possible")
        self.query_encoder, self.document_encoder = query_encoder, document_encoder

    def __getattr__(self, name: str):
        if name == "document_encoder":  # not set yet (the object is being copied or unpickled)
            raise AttributeError(name)
        return getattr(self.document_encoder, name)

    def encode(self, texts, role: str = "document", batch_size: int = 32, show_progress_bar=None) -> np.ndarray:
        encoder = self.query_encoder if role == "query" else self.document_encoder
        return encoder.encode(texts, role=role, batch_size=batch_size, show_progress_bar=show_progress_bar)


def pair_encoders(old, new) -> dict[str, CrossModelEncoder]:
    """The three (query model, document model) pairs of the compatibility matrix, with memoised encoders."""
    old, new = (e if isinstance(e, MemoEncoder) else MemoEncoder(e) for e in (old, new))
    return {"old->old": CrossModelEncoder(old, old), "new->old": CrossModelEncoder(new, old),
            "new->new": CrossModelEncoder(new, new)}


def score_pair(encoder, sets: Mapping) -> dict[str, float]:
    """Retrieval (nDCG@10, R@1) and, where the set has one, hierarchy (SpecHR, R@1, MRR) metrics of one pair.
    ``sets``: {"retrieval": (queries, corpus, qrels), "hierarchy": records} as built by ``heldout``."""
    from ..evaluation.hierarchy import evaluate_hierarchy
    from ..evaluation.retrieval import evaluate_retrieval

    retrieval = evaluate_retrieval(encoder, *sets["retrieval"], k_values=(1, 10))
    scores = {key: retrieval[key] for key in RETRIEVAL_METRICS}
    if sets.get("hierarchy"):
        hierarchy = evaluate_hierarchy(encoder, sets["hierarchy"])
        scores.update({f"hierarchy_{key}": hierarchy[key] for key in HIERARCHY_METRICS})
    return scores


def compatibility_matrix(old, new, sets_by_ontology: Mapping[str, Mapping]) -> dict[str, dict[str, dict]]:
    """{ontology: {pair: metrics}} for the pairs old->old, new->old, new->new (module docstring)."""
    pairs = pair_encoders(old, new)
    return {ontology: {name: score_pair(encoder, sets) for name, encoder in pairs.items()}
            for ontology, sets in sets_by_ontology.items()}


def condition_intervals(old, new, sets_by_ontology: Mapping[str, Mapping], samples: int = 2000) -> dict:
    """The two conditions of one new model, checked with intervals: ``{ontology: {"new->old": ..., "new->new":
    ...}}``, each ``{"mean", "low", "high"}`` = that pair's nDCG@10 minus old->old on the same queries, with a 95 %
    paired bootstrap interval over queries. A condition holds for this model only where ``low > 0``."""
    from ..evaluation.metrics import paired_bootstrap
    from ..evaluation.retrieval import evaluate_retrieval

    pairs = pair_encoders(old, new)
    intervals = {}
    for ontology, sets in sets_by_ontology.items():
        per_query = {}
        for name, encoder in pairs.items():
            ndcg = evaluate_retrieval(encoder, *sets["retrieval"], k_values=(10,), per_query_ndcg=10)["ndcg_per_query"]
            per_query[name] = [ndcg[query] for query in sorted(ndcg)]
        intervals[ontology] = {pair: paired_bootstrap(per_query[pair], per_query["old->old"], samples)
                               for pair in ("new->old", "new->new")}
    return intervals


def compatibility_gains(matrix: Mapping[str, Mapping[str, float]], reference: float | None = None,
                        metric: str = "ndcg@10") -> dict[str, float | None]:
    """P_com and P_up of one metric from one ontology's matrix ({pair: metrics}); ``reference`` = M(ref, ref) of
    the model trained without compatibility (None: the new model's own new->new, module docstring). P_com is None
    when the reference is no better than the old model (the ratio has no meaning then)."""
    old_old, new_old, new_new = (matrix[pair][metric] for pair in PAIRS)
    ref = new_new if reference is None else reference
    gain = ref - old_old
    return {"p_com": (new_old - old_old) / gain if gain > 1e-12 else None,
            "p_up": new_new / ref - 1 if ref > 0 else None}


def evaluate_compatibility(old, new, sets_by_ontology: Mapping[str, Mapping], reference=None) -> tuple[dict, dict | None, dict]:
    """``(matrix, reference scores, gains)`` of ``hyte eval compatibility``: the compatibility matrix of ``old`` and
    ``new`` on each ontology's held-out sets, the reference model's own scores (None without one), and P_com / P_up
    per ontology and metric (against ``reference``, else against ``new`` itself)."""
    matrix = compatibility_matrix(old, new, sets_by_ontology)
    scores = ({ontology: score_pair(reference, data) for ontology, data in sets_by_ontology.items()}
              if reference is not None else None)
    gains = {ontology: {metric: compatibility_gains(matrix[ontology], scores and scores[ontology][metric], metric)
                        for metric in matrix[ontology]["old->old"]}
             for ontology in matrix}
    return matrix, scores, gains


def heldout_sets(ontologies=("hpo", "icd10"), *, queries: int = 300, documents: int = 2000,
                 hierarchy_queries: int = 300, test_fraction: float = 0.2, split_seed: int = 0,
                 seed: int = 0) -> dict[str, dict]:
    """The held-out retrieval and hierarchy sets (HPO test branches, ICD-10-CM test chapters), as the fine-tuning
    benchmark builds them (``heldout``)."""
    from ..evaluation.heldout import _hpo_sets, _icd10_sets

    sizes = {"queries": queries, "documents": documents, "hierarchy_queries": hierarchy_queries, "per_depth": 1}
    builders = {"hpo": lambda: _hpo_sets("test", sizes, test_fraction, test_fraction, split_seed, seed),
                "icd10": lambda: _icd10_sets(sizes, test_fraction, split_seed, seed)}
    unknown = sorted(set(ontologies) - set(builders))
    if unknown:
        raise ValueError(f"unknown data {unknown}; known: hpo, icd10")
    return {ontology: {key: value for key, value in builders[ontology]().items() if key in ("retrieval", "hierarchy")}
            for ontology in ontologies}


# ----------------------------------------------------------------------------------------------------------------
# The reviewers' calibration test: does the old embedding's uncertainty track the old model's errors?
# ----------------------------------------------------------------------------------------------------------------


def positive_ranks(query_points: np.ndarray, document_points: np.ndarray, positives: list[list[int]],
                   curvature: float) -> np.ndarray:
    """Rank (1 = first) of the best-ranked relevant document per query under exact geodesic search,
    (Q, D) points, (N, D) points, Q lists of relevant rows -> (Q,) int. Ties count against the query (the positive
    is placed after every document with the same score)."""
    scores = lorentz.flip_time(query_points) @ document_points.T  # <q, x>_L, (Q, N)
    ranks = []
    for row, relevant in enumerate(positives):
        best = scores[row, relevant].max()
        ranks.append(int((scores[row] >= best).sum() - (scores[row, relevant] == best).sum() + 1))
    return np.asarray(ranks)


def calibration(q: np.ndarray, errors: np.ndarray, permutations: int = 1000, bootstrap: int = 1000,
                seed: int = 0) -> dict[str, float]:
    """Spearman rho between per-query uncertainty q and error (rank of the positive), with a 95 % bootstrap
    interval, and the permuted-q control: rho of ``permutations`` random reassignments of q (mean, sd) and the
    two-sided permutation p-value (share of permuted |rho| >= the observed |rho|). (Q,), (Q,) -> dict."""
    from scipy.stats import spearmanr

    from ..evaluation.radius import rank_correlations

    rng = np.random.default_rng(seed)
    rho = float(spearmanr(q, errors).statistic)
    permuted = rank_correlations(np.stack([rng.permutation(q) for _ in range(permutations)]),
                                  np.broadcast_to(errors, (permutations, len(errors))))
    rows = rng.integers(0, len(q), size=(bootstrap, len(q)))
    boot = rank_correlations(q[rows], errors[rows])
    boot = boot[np.isfinite(boot)]
    return {"spearman": rho, "ci95": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))],
            "permuted_mean": float(permuted.mean()), "permuted_sd": float(permuted.std()),
            "permutation_p": float((np.abs(permuted) >= abs(rho)).mean()), "n": int(len(q))}


def uncertainty_distribution(distances: np.ndarray, c: float) -> dict:
    """How much the old model's uncertainty q = 1 - tanh(d / sqrt(c)) varies over points at distances ``distances``
    from the origin, (N,) -> dict: mean, sd and 5/25/50/75/95 % quantiles of d and of q, and the share of points
    whose q is at RINCE's floor ``MIN_Q`` (there RINCE is InfoNCE: the uncertainty weighting does nothing). A q
    that barely varies makes HBCT's calibration test and its permuted-q control vacuous (issue 26)."""
    from .objective import MIN_Q

    distances = np.asarray(distances, dtype=np.float64)
    if distances.ndim != 1 or not len(distances) or not np.isfinite(distances).all() or (distances < 0).any():
        raise ValueError("distances must be a non-empty 1-D array of finite distances >= 0")
    q = 1.0 - np.tanh(distances / np.sqrt(c))

    def summary(values: np.ndarray) -> dict:
        quantiles = np.percentile(values, [5, 25, 50, 75, 95])
        return {"mean": float(values.mean()), "sd": float(values.std()),
                **{f"p{p}": float(v) for p, v in zip((5, 25, 50, 75, 95), quantiles)}}

    return {"n": int(len(distances)), "distance": summary(distances), "q": summary(q),
            "share_at_floor": float((q <= MIN_Q).mean())}


def uncertainty_calibration(old_encoder, retrieval_set, permutations: int = 1000, seed: int = 0) -> dict:
    """The calibration test on one held-out retrieval set (queries, corpus, qrels) for the old model: Spearman of
    the old model's per-query error (rank of the positive) with q(h_old) of the query and of its positive
    document (the q training uses), each with the permuted-q control; plus the error rate at rank 1."""
    import torch

    from .objective import uncertainty

    queries, corpus, qrels = retrieval_set
    query_ids, doc_ids = list(queries), sorted(corpus)
    position = {d: i for i, d in enumerate(doc_ids)}
    documents = old_encoder.encode([corpus[d] for d in doc_ids], role="document")
    query_points = lorentz.flip_time(old_encoder.encode([queries[q] for q in query_ids], role="query"))
    relevant = [[position[d] for d, grade in qrels[q].items() if grade > 0 and d in position] for q in query_ids]
    keep = [i for i, rows in enumerate(relevant) if rows]
    query_points, relevant = query_points[keep], [relevant[i] for i in keep]
    c = float(old_encoder.curvature)
    ranks = positive_ranks(query_points, documents, relevant, c)
    q_query = uncertainty(torch.from_numpy(query_points).double(), c).numpy()
    q_positive = np.array([uncertainty(torch.from_numpy(documents[rows]).double(), c).mean().item()
                           for rows in relevant])
    return {"queries": len(ranks), "error_rate_at_1": float((ranks > 1).mean()),
            "median_rank": float(np.median(ranks)),
            "documents": uncertainty_distribution(lorentz.distance_to_origin(documents, c), c),
            "q_query": {"mean": float(q_query.mean()), "sd": float(q_query.std()),
                        **calibration(q_query, ranks, permutations, seed=seed)},
            "q_positive": {"mean": float(q_positive.mean()), "sd": float(q_positive.std()),
                           **calibration(q_positive, ranks, permutations, seed=seed + 1)}}


def calibration_verdict(by_seed: Mapping[str, dict], alpha: float = 0.05) -> dict:
    """Over old models of one recipe (``uncertainty_calibration`` results by seed): per q kind, the seeds where q
    predicts errors (rho > 0 with two-sided permutation p < ``alpha``), mean and sd of rho over seeds; and the mean
    sd of the documents' distance d(o, h_old) (how much the radius varies at all)."""
    if not by_seed:
        raise ValueError("no calibration results to judge")
    results = list(by_seed.values())
    verdict = {"seeds": len(results), "distance_sd": float(np.mean([r["documents"]["distance"]["sd"] for r in results]))}
    for which in ("q_query", "q_positive"):
        rhos = np.array([r[which]["spearman"] for r in results])
        verdict[which] = {"predicting_seeds": sum(r[which]["spearman"] > 0 and r[which]["permutation_p"] < alpha
                                                  for r in results),
                          "rho_mean": float(rhos.mean()), "rho_sd": float(rhos.std(ddof=1)) if len(rhos) > 1 else 0.0}
    return verdict
