"""Splits of a taxonomy into training, validation and test subsumptions, seeded.

Three schemes (``split_taxonomy``):

* ``multi_hop`` (HiT's multi-hop inference): train on every direct is-a edge; validation / test are 5 % / 5 % of the
  transitive edges (ancestor pairs that are not direct edges);
* ``mixed_hop`` (HiT's mixed-hop prediction): train on 90 % of the direct edges; validation / test are the held-out
  5 % / 5 % of direct edges plus 5 % / 5 % of the transitive ones;
* ``branches`` (as the built-in ontologies): whole top-level branches go to test, then to validation; training sees
  no concept of theirs, nor a concept of the same name (no text of a held-out concept is trained on). Each side's
  questions are its direct edges and as many of its transitive edges, with negatives drawn from the same side.

A taxonomy read from HiT's own files keeps their splits (scheme ``given``). Every positive is paired, as in HiT, with
``num_negatives`` random negatives (concepts that are neither the child nor its ancestors) and as many hard ones
(the child's siblings first, random ones after).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from ..artifacts import CARD_FILE
from ..errors import HyteError
from ..results import same_path
from .obo import Ontology, ancestors_of
from .taxonomy import Subsumption, Taxonomy

__all__ = ["SCHEMES", "SplitMismatchError", "TaxonomySplit", "ancestors_of", "split_taxonomy", "training_split"]

SCHEMES = ("multi_hop", "mixed_hop", "branches", "given")


@dataclass(frozen=True)
class TaxonomySplit:
    """Subsumptions to train on and to judge, and the concepts training must not read (``held_out``: the held-out
    branches' concepts; empty for the edge splits, whose concepts are all seen, only some edges are not)."""

    scheme: str
    train: list[Subsumption]
    validation: list[Subsumption]
    test: list[Subsumption]
    held_out: frozenset[str] = frozenset()


def split_taxonomy(taxonomy: Taxonomy, scheme: str, seed: int = 0, num_negatives: int = 10,
                   eval_fraction: float = 0.1) -> TaxonomySplit:
    """The ``scheme`` split of ``taxonomy`` (see the module docstring); the same seed always gives the same split.

    ``eval_fraction``: the share held out for validation and test together (halved between them), of the direct
    edges (mixed_hop), the transitive ones (both edge splits) or the concepts (branches).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown split {scheme!r}; one of {', '.join(SCHEMES)}")
    if scheme == "given":
        if not taxonomy.given_splits:
            raise ValueError(f"{taxonomy.source} came with no splits of its own (only HiT's dataset files do): "
                             "choose multi_hop, mixed_hop or branches")
        given = taxonomy.given_splits
        return TaxonomySplit("given", given.get("train", []), given.get("validation", []), given.get("test", []))
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must lie strictly between 0 and 1; got {eval_fraction}")
    ontology = taxonomy.ontology
    ancestors = ancestors_of(ontology)
    negatives = _NegativeSampler(ontology, ancestors, num_negatives, random.Random(seed))
    if scheme == "branches":
        return _branches(ontology, ancestors, negatives, seed, eval_fraction)
    rng = random.Random(seed)
    base = ontology.edges()
    transitive = sorted({(c, a) for c, above in ancestors.items() for a in above} - set(base))
    rng.shuffle(transitive)
    half = int(len(transitive) * eval_fraction / 2)
    trans_validation, trans_test = transitive[:half], transitive[half:2 * half]
    if scheme == "multi_hop":
        train, validation, test = base, trans_validation, trans_test
    else:
        shuffled = list(base)
        rng.shuffle(shuffled)
        base_half = int(len(shuffled) * eval_fraction / 2)
        validation = shuffled[:base_half] + trans_validation
        test = shuffled[base_half:2 * base_half] + trans_test
        train = sorted(shuffled[2 * base_half:])
    if not validation or not test:
        raise ValueError(f"{taxonomy.source} is too small for a {scheme} split: {len(base)} direct and "
                         f"{len(transitive)} transitive edges leave no validation or test edge; give a larger "
                         "taxonomy or a larger eval_fraction")
    return TaxonomySplit(scheme, negatives.attach(train), negatives.attach(validation), negatives.attach(test))


class _NegativeSampler:
    """HiT's negatives for a positive (child, parent), drawn from ``pool`` (default: every concept)."""

    def __init__(self, ontology: Ontology, ancestors: dict[str, frozenset[str]], count: int, rng: random.Random):
        self.ontology, self.ancestors, self.count, self.rng = ontology, ancestors, count, rng
        self.everyone = sorted(ontology.terms)

    def attach(self, edges, pool: list[str] | None = None) -> list[Subsumption]:
        pool = pool or self.everyone
        inside = set(pool)
        examples = []
        for child, parent in edges:
            excluded = self.ancestors[child] | {child}
            randoms = self._random(pool, excluded)
            siblings = sorted(s for s in self.ontology.siblings(child) if s in inside and s not in excluded)
            self.rng.shuffle(siblings)
            hard = (siblings + [r for r in randoms if r not in siblings])[: self.count]
            examples.append(Subsumption(child, parent, tuple(randoms), tuple(hard)))
        return examples

    def _random(self, pool: list[str], excluded: frozenset[str]) -> list[str]:
        # Rejection sampling: the excluded set (a concept and its ancestors) is a small part of any useful pool.
        chosen: list[str] = []
        for _ in range(50 * self.count):
            if len(chosen) == self.count:
                break
            candidate = pool[self.rng.randrange(len(pool))]
            if candidate not in excluded and candidate not in chosen:
                chosen.append(candidate)
        return chosen


def _branches(ontology: Ontology, ancestors: dict[str, frozenset[str]], negatives: _NegativeSampler, seed: int,
              eval_fraction: float) -> TaxonomySplit:
    roots = ontology.roots
    branches = roots if len(roots) > 1 else tuple(ontology.children(roots[0]))
    if len(branches) < 3:
        raise ValueError(f"a branch split needs at least 3 top-level branches (train, validation, test); this "
                         f"taxonomy has {len(branches)}: use the multi_hop or mixed_hop split")
    owners: dict[str, set[str]] = {}
    for branch in branches:
        for concept in [branch, *(c for c, above in ancestors.items() if branch in above)]:
            owners.setdefault(concept, set()).add(branch)
    order = list(branches)
    random.Random(seed).shuffle(order)
    sides: dict[str, set[str]] = {"test": set(), "validation": set()}
    for side in ("test", "validation"):
        while order[:-1] and sum(1 for o in owners.values() if o <= sides[side]) < eval_fraction / 2 * len(owners):
            sides[side].add(order.pop(0))
    members = {side: {c for c, o in owners.items() if o <= branches_of} for side, branches_of in sides.items()}
    members["train"] = {c for c, o in owners.items() if not o & (sides["test"] | sides["validation"])}
    # A training concept named as a held-out one would train on its text ("Other" sits in every branch of a
    # customs code): it is left out of training too.
    held_names = {ontology.terms[c].name.casefold() for c in set(owners) - members["train"]}
    members["train"] = {c for c in members["train"] if ontology.terms[c].name.casefold() not in held_names}

    def questions(side: str, direct_only: bool) -> list[Subsumption]:
        inside = members[side]
        direct = [(c, p) for c, p in ontology.edges() if c in inside and p in inside]
        if direct_only:
            return negatives.attach(direct, sorted(inside))
        transitive = sorted({(c, a) for c in inside for a in ancestors[c] if a in inside} - set(direct))
        random.Random(seed).shuffle(transitive)
        return negatives.attach(direct + transitive[: len(direct)], sorted(inside))

    held_out = frozenset(set(owners) - members["train"])
    return TaxonomySplit("branches", questions("train", True), questions("validation", False),
                         questions("test", False), held_out)


# What fixes the questions a model is judged on: the name of each in a training config's data section, its default.
SPLIT_FIELDS = {"split": ("taxonomy_split", "mixed_hop"), "seed": ("taxonomy_seed", 0),
                "text": ("concept_text", "name")}


class SplitMismatchError(HyteError, ValueError):
    """A model is to be judged on another split of the taxonomy it trained on: its test edges may be training ones."""


def training_split(model: str | os.PathLike, data: str | os.PathLike, *, split: str | None = None,
                   seed: int | None = None, text: str | None = None) -> tuple[dict, list[str]]:
    """The split, seed and concept text to judge ``model`` on ``data`` with, and a note for each one taken from
    its training run.

    A model trained on this taxonomy (its ``hyte_card.json`` records the training config) is judged on its own
    split: a value left out (None) is its run's, and a value given otherwise raises ``SplitMismatchError``, since
    another split's test edges may be edges it trained on. A model trained elsewhere (another taxonomy, a Hub model)
    takes the values given, or their defaults.
    """
    try:
        recorded = json.loads((Path(model) / CARD_FILE).read_text(encoding="utf-8"))["training"]["config"]["data"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = {}
    trained_here = recorded.get("source") == "taxonomy" and isinstance(recorded.get("path"), str) and \
        same_path(recorded["path"], data)
    given, chosen, notes = {"split": split, "seed": seed, "text": text}, {}, []
    for option, (field, default) in SPLIT_FIELDS.items():
        value, own = given.get(option), recorded.get(field) if trained_here else None
        if value is not None and own is not None and value != own:
            raise SplitMismatchError(
                f"{model} was trained on {data} with {field} {own!r}; judged with {option} {value!r}, its test edges "
                f"may be edges it trained on: leave the {option} out to judge it on its own split")
        if value is None and own is not None and own != default:
            notes.append(f"{option} {own}, as {model} was trained ({field})")
        chosen[option] = value if value is not None else own if own is not None else default
    return chosen, notes
