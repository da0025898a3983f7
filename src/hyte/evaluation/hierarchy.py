"""The hierarchy-sensitive benchmark (SpecHR): its file format and its scoring. Building it from an ontology:
``hyte.evaluation.hierarchy_build``; radius by depth: ``hyte.evaluation.radius``; hubness: ``hyte.evaluation.metrics``.

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
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..io import DataFormatError, iter_jsonl, write_jsonl
from .metrics import mrr_at_k, recall_at_k

__all__ = ["ANCESTOR_TYPES", "CANDIDATE_TYPES", "HierarchyFormatError", "evaluate_hierarchy", "read_hierarchy_jsonl",
           "validate_hierarchy_record", "write_hierarchy_jsonl"]

CANDIDATE_TYPES = ("target", "parent", "grandparent", "sibling", "random")
ANCESTOR_TYPES = frozenset({"parent", "grandparent"})


# ----------------------------------------------------------------------------------------------------------------
# The file format
# ----------------------------------------------------------------------------------------------------------------


# Malformed benchmark files raise the one data-file error of hyte.io (a ValueError naming the file and line).
HierarchyFormatError = DataFormatError


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
    records = _checked(iter_jsonl(path, "hierarchy benchmark file"), path)
    if not records:
        raise HierarchyFormatError(path, None, "no records (the file is empty)")
    return records


def write_hierarchy_jsonl(path: str | os.PathLike, records: Iterable[dict]) -> Path:
    """Write records as JSON Lines (checked first), atomically."""
    return write_jsonl(path, _checked(records))


def _checked(records: Iterable, path: str | os.PathLike | None = None) -> list[dict]:
    """The records as a list, or HierarchyFormatError naming the first malformed one: by its line for the (line,
    record) pairs of file ``path``, by its index for records handed in as Python objects (the same check)."""
    checked = []
    for index, record in records if path is not None else enumerate(records):
        problem = validate_hierarchy_record(record)
        if problem is not None:
            raise HierarchyFormatError(f"record {index}" if path is None else path, None if path is None else index,
                                       problem)
        checked.append(record)
    return checked


# ----------------------------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------------------------


def _specificity_hit(types: list[str]) -> bool | None:
    """Whether the target ranks above every parent and grandparent (None: the query has none of them)."""
    ranks = [i for i, t in enumerate(types) if t in ANCESTOR_TYPES]
    return types.index("target") < min(ranks) if ranks else None


def _summarise(ranked_types: list[list[str]], rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict:
    """The metrics of a group of queries, from each query's candidate types in ranked order."""
    hits = [hit for hit in map(_specificity_hit, ranked_types) if hit is not None]
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
    "num_spechr_queries", "by_depth": {depth: {the same keys}}, "spechr_per_query"}`` (``by_depth`` sorted by
    depth; ``spechr_per_query``: 1 / 0 per record, None where it has no parent or grandparent candidate).
    """
    records = _checked(records)
    if not records:
        raise ValueError("no records to evaluate")

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
    # Per query (record order; None where it has no ancestor candidate), for paired tests between models.
    results["spechr_per_query"] = [None if (hit := _specificity_hit(types)) is None else int(hit)
                                   for types in ranked_types]
    return results
