"""Training data for the three stages: readers for JSONL, BEIR folders and `datasets` folders, and the HPO builder.

Contrastive examples are dicts ``{"query": str, "document": str, "negatives": [str, ...]}`` (negatives optional);
MLM examples are plain texts. Every reader names the file and line of a malformed record (``DataFormatError``), and
an empty result is a ``ConfigError``; both are raised before training starts.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..io import DataFormatError, iter_jsonl, string_field
from .config import ONTOLOGY_SOURCES, ConfigError, DataSpec, RunConfig


def _unknown_fields(names, known: tuple[str, ...]) -> str | None:
    """Why a pair's fields (or a dataset's columns) ``names`` cannot be trained on as they are, or None: a field
    nobody reads would train as if it had been used ("parent", say)."""
    unknown = [name for name in names if name not in known]
    if not unknown:
        return None
    hint = (" (a hierarchy trains from the taxonomy itself: data.source taxonomy, README 'Your own hierarchy')"
            if {"parent", "parents", "child"} & set(unknown) else "")
    return (f"unknown field(s) {', '.join(map(repr, unknown))}: a pair has {', '.join(map(repr, known))}{hint}; drop "
            "or rename the others")


def read_jsonl_pairs(path: str | Path, query_field: str = "query", document_field: str = "document") -> list[dict]:
    """(query, document[, negatives]) examples from a JSONL file."""
    examples = []
    known = (query_field, document_field, "negatives")
    for number, record in iter_jsonl(path):
        problem = _unknown_fields(record, known)
        if problem:
            raise DataFormatError(path, number, problem)
        negatives = record.get("negatives", [])
        if not isinstance(negatives, list) or not all(isinstance(n, str) for n in negatives):
            raise DataFormatError(path, number, "'negatives' must be a list of strings")
        examples.append({"query": string_field(path, number, record, query_field),
                         "document": string_field(path, number, record, document_field), "negatives": negatives})
    return examples


def read_beir_pairs(folder: str | Path, split: str = "train") -> list[dict]:
    """(query, relevant document) examples from a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv,
    read by ``hyte.data.beir.load_beir`` (the evaluation's reader: a folder that trains is one that evaluates)."""
    from ..data.beir import load_beir

    queries, corpus, qrels = load_beir(folder, split)
    return [{"query": queries[query_id], "document": corpus[doc_id], "negatives": []}
            for query_id, judged in qrels.items() for doc_id, score in judged.items() if score > 0]


def _example(pair: dict, hierarchy: bool) -> dict:
    """A training example from an ontology pair; with ``hierarchy``, the parent's text rides along (for the
    hierarchy term, and as a hard negative) and a sibling's text is a hard negative."""
    example = {"query": pair["query"], "document": pair["document"], "negatives": []}
    if hierarchy:
        example["parent"] = pair.get("parent")
        example["negatives"] = [pair["sibling"]] if pair.get("sibling") else []
    return example


def hpo_pairs(spec: DataSpec) -> list[dict]:
    """HPO (query -> definition) examples from the training branches only (see hyte.data.hpo)."""
    from ..data.hpo import hierarchy_pairs, load_hpo, split_by_branches

    ontology = load_hpo()
    train_ids, _ = split_by_branches(ontology, test_fraction=spec.hpo_test_fraction, seed=spec.hpo_seed)
    pairs = hierarchy_pairs(ontology, train_ids, query=spec.hpo_query, min_depth=spec.min_depth, seed=spec.hpo_seed)
    return [_example(pair, spec.hierarchy) for pair in pairs]


def icd10_pairs(spec: DataSpec) -> list[dict]:
    """ICD-10-CM (inclusion term -> code title) examples from the training chapters only; with ``spec.hierarchy``
    the parent code's title and a seeded random sibling's title (both in training chapters by construction)."""
    from ..data import icd10

    train, _ = icd10.split_by_chapters(icd10.inclusion_pairs(), test_fraction=spec.hpo_test_fraction,
                                       seed=spec.hpo_seed)
    rng = random.Random(spec.hpo_seed)
    examples = []
    for pair in train:
        above = icd10.parent(pair["code"])
        # A parent or sibling whose title is the document's own text is no distinct concept (345 ICD-10-CM pairs
        # have a parent titled like the code): as a "parent" it would give the cone term two identical points.
        parent_title = icd10.title(above) if above else None
        siblings = [] if above is None else [c for c in icd10.children(above)
                                             if c != pair["code"] and icd10.title(c) != pair["document"]]
        examples.append(_example({**pair, "parent": parent_title if parent_title != pair["document"] else None,
                                  "sibling": icd10.title(rng.choice(siblings)) if siblings else None},
                                 spec.hierarchy))
    return examples


@functools.lru_cache(maxsize=4)
def _taxonomy_and_split(path: str, names: str | None, format: str | None, scheme: str, seed: int):
    """A user's taxonomy and its split, read once per process (examples and the hierarchy both need them)."""
    from ..data.taxonomy import load_taxonomy
    from ..data.taxonomy_splits import split_taxonomy

    try:
        taxonomy = load_taxonomy(path, names=names, format=format)
        return taxonomy, split_taxonomy(taxonomy, scheme, seed=seed)
    except DataFormatError:
        raise
    except ValueError as error:
        raise ConfigError(f"data.path {path}: {error}") from None


def taxonomy_split_for(spec: DataSpec):
    """(taxonomy, split) of a ``data.source: taxonomy`` spec."""
    return _taxonomy_and_split(str(spec.path), spec.names, spec.taxonomy_format, spec.taxonomy_split,
                               spec.taxonomy_seed)


def taxonomy_pairs(spec: DataSpec) -> list[dict]:
    """(child text -> parent text) examples from the split's training subsumptions, each with up to
    ``taxonomy_negatives`` hard negatives (siblings first). ``"subsumption": True`` tells the collator and the miner
    that the query is its document's child: the query's ancestors are no negatives, the hierarchy term reads the
    (document, query) pair."""
    taxonomy, split = taxonomy_split_for(spec)
    described = spec.concept_text == "name_description"
    return [{"query": taxonomy.text(s.child, described), "document": taxonomy.text(s.parent, described),
             "negatives": [taxonomy.text(n, described) for n in s.hard_negatives[: spec.taxonomy_negatives]],
             "subsumption": True}
            for s in split.train]


def _subsample(examples: list, limit: int | None, seed: int) -> list:
    """At most ``limit`` of ``examples``, a seeded choice (None: all)."""
    return random.Random(seed).sample(examples, limit) if limit is not None and len(examples) > limit else examples


def _from_ontologies(spec: DataSpec, seed: int, read) -> list:
    """``read(name)`` of each ontology of ``spec.source`` (hpo, icd10): one subsampled, or for both equal shares
    (each capped at max_examples / 2), shuffled together."""
    parts = [read(name) for name in spec.source.split("+")]
    if len(parts) == 1:
        return _subsample(parts[0], spec.max_examples, seed)
    share = None if spec.max_examples is None else max(1, spec.max_examples // len(parts))
    examples = [example for part in parts for example in _subsample(part, share, seed)]
    random.Random(seed).shuffle(examples)
    return examples


@dataclass(frozen=True)
class Hierarchy:
    """Is-a relations between training documents, looked up by their text.

    ``concepts``: document text -> ids of the concepts it is the text of (ids carry their source: "hpo:HP:...",
    "icd10:A01.1"); ``parents``: concept id -> its direct parents; ``ancestors``: concept id -> all its ancestors.

    Why it exists: a query's own target's ancestors and descendants are the same concept at another level of
    generality, not negatives. As InfoNCE negatives they were pushed away from the child's query, which (geodesic
    InfoNCE pulls positives inward and pushes negatives outward) moved parents outward and children inward: the
    radius ran against depth (issue 24). The collator masks them out of each query's softmax, the miner skips them,
    and a parent reaches its child only through the hierarchy term; siblings and unrelated concepts stay negatives.
    """

    concepts: Mapping[str, frozenset[str]]
    parents: Mapping[str, frozenset[str]]
    ancestors: Mapping[str, frozenset[str]]

    def relation(self, anchor: str, other: str) -> str:
        """What document ``other`` is to document ``anchor``: "same", "ancestor" (more general), "descendant",
        "sibling" (a shared direct parent), "other", or "unknown" (a text outside the hierarchy)."""
        mine, theirs = self.concepts.get(anchor), self.concepts.get(other)
        if not mine or not theirs:
            return "unknown"
        if mine & theirs:
            return "same"
        if any(self.ancestors.get(a, frozenset()) & theirs for a in mine):
            return "ancestor"
        if any(self.ancestors.get(b, frozenset()) & mine for b in theirs):
            return "descendant"
        if any(self.parents.get(a, frozenset()) & self.parents.get(b, frozenset()) for a in mine for b in theirs):
            return "sibling"
        return "other"

    def not_a_negative(self, example: dict, other: str) -> bool:
        """Whether document ``other`` must stay out of ``example``'s negatives (InfoNCE mask, miner): its document's
        concept, an ancestor or a descendant of it; for a taxonomy's (child -> parent) example, the query's own
        concept or one of its ancestors (a grandparent is a right answer too; the parent's other descendants,
        siblings of the child among them, are the hard negatives)."""
        if example.get("subsumption"):
            return self.relation(example["query"], other) in ("same", "ancestor")
        return self.relation(example["document"], other) in ("same", "ancestor", "descendant")


def hierarchy_of(spec: DataSpec) -> Hierarchy | None:
    """The is-a relations of an ontology source (hpo, icd10, hpo+icd10) over every document text it can give; None
    for other sources (no relations known: nothing is masked)."""
    if spec.source == "taxonomy":
        return _taxonomy_hierarchy(spec)
    if spec.source not in ONTOLOGY_SOURCES:
        return None
    concepts: dict[str, set[str]] = {}
    parents: dict[str, frozenset[str]] = {}
    ancestors: dict[str, frozenset[str]] = {}
    if "hpo" in spec.source.split("+"):
        from ..data.hpo import load_hpo

        ontology = load_hpo()
        for term_id, term in ontology.terms.items():
            key = f"hpo:{term_id}"
            parents[key] = frozenset(f"hpo:{p}" for p in ontology.parents(term_id))
            ancestors[key] = frozenset(f"hpo:{a}" for a in ontology.ancestors(term_id))
            if term.definition:
                concepts.setdefault(term.definition, set()).add(key)
    if "icd10" in spec.source.split("+"):
        from ..data import icd10

        for code in icd10.all_codes():
            key = f"icd10:{code}"
            chain = icd10.ancestors(code)
            parents[key] = frozenset(f"icd10:{a}" for a in chain[:1])
            ancestors[key] = frozenset(f"icd10:{a}" for a in chain)
            concepts.setdefault(icd10.title(code), set()).add(key)
    return Hierarchy({text: frozenset(ids) for text, ids in concepts.items()}, parents, ancestors)


def _taxonomy_hierarchy(spec: DataSpec) -> Hierarchy:
    """The relations among a taxonomy's training concepts, through its training edges only: a held-out edge must not
    reach training, not even as a pair left out of the softmax."""
    from ..data.taxonomy_splits import ancestors_of

    taxonomy, split = taxonomy_split_for(spec)
    edges = {(s.child, s.parent) for s in split.train}
    ancestors = ancestors_of(taxonomy.ontology, edges)
    parents: dict[str, set[str]] = {}
    for child, parent in edges:
        parents.setdefault(child, set()).add(parent)
    described = spec.concept_text == "name_description"
    concepts: dict[str, set[str]] = {}
    for concept in taxonomy.ontology.terms:
        if concept not in split.held_out:
            concepts.setdefault(taxonomy.text(concept, described), set()).add(concept)
    return Hierarchy({text: frozenset(ids) for text, ids in concepts.items()},
                     {c: frozenset(p) for c, p in parents.items()}, ancestors)


def hierarchy_for(config: RunConfig) -> Hierarchy | None:
    """The is-a relations that keep a query's ancestors and descendants out of its negatives (None: nothing
    masked: ``loss.mask_hierarchy`` off, or data without an ontology)."""
    return hierarchy_of(config.data) if config.loss.mask_hierarchy else None


def contrastive_examples(spec: DataSpec, seed: int = 0, batch_size: int | None = None) -> list[dict]:
    """The examples a contrastive stage trains on; raises ConfigError when there are none, or fewer than one
    ``batch_size`` (a batch's other examples are each query's negatives: a smaller set trains on almost none)."""
    if spec.source in ONTOLOGY_SOURCES:
        examples = _from_ontologies(spec, seed, lambda name: {"hpo": hpo_pairs, "icd10": icd10_pairs}[name](spec))
    elif spec.source == "taxonomy":
        examples = taxonomy_pairs(spec)
    elif spec.source == "jsonl":
        examples = read_jsonl_pairs(spec.path, spec.query_field, spec.document_field)
    elif spec.source == "beir":
        examples = read_beir_pairs(spec.path, spec.split)
    else:
        from datasets import load_from_disk

        rows = load_from_disk(spec.path)
        known = (spec.query_field, spec.document_field, "negatives")
        problem = _unknown_fields(rows.column_names, known)
        missing = [name for name in known[:2] if name not in rows.column_names]
        if problem or missing:
            raise DataFormatError(spec.path, None, f"no column {missing[0]!r} (data.query_field / data.document_field "
                                                   "name the columns to read)" if missing else problem)
        examples = [{"query": r[spec.query_field], "document": r[spec.document_field],
                     "negatives": list(r.get("negatives") or [])} for r in rows]
    examples = _nonempty(_subsample(examples, spec.max_examples, seed), spec, "examples")
    if batch_size is not None and len(examples) < batch_size:
        raise ConfigError(f"the training data ({spec.source} {spec.path or ''}) holds {len(examples)} examples, fewer "
                          f"than one batch of {batch_size}: give more examples or a smaller "
                          "training.per_device_train_batch_size")
    _refuse_no_negatives(examples, spec)
    return examples


def refuse_lone_batches(examples: list[dict], batch_size: int, gather_negatives: bool) -> None:
    """ConfigError when a batch of one example would be all a query sees: its only negatives are the batch's other
    documents, so with ``per_device_train_batch_size`` 1, no example's own ``negatives`` or ``parent`` and nothing
    gathered from other processes, every loss is 0 and the run writes an untrained model as if trained."""
    if batch_size > 1 or gather_negatives or any(e.get("negatives") or e.get("parent") for e in examples):
        return
    raise ConfigError("training.per_device_train_batch_size is 1 and no example has 'negatives' of its own: a query's "
                      "negatives are the other documents of its batch, so every loss would be 0 and nothing would "
                      "be learned. Use a batch size of at least 2 (32 is the default), give the examples "
                      "'negatives', or mine them (stage finetune, mining.num_negatives)")


def _refuse_no_negatives(examples: list[dict], spec: DataSpec) -> None:
    """ConfigError when every document text (positives, negatives, parents) is one and the same: a query's negatives
    are the batch's other documents, and a copy of its own positive is left out of its softmax as the right answer,
    so no query would ever have a negative: loss 0, gradient 0, and a final model written as if trained."""
    texts = {text for e in examples for text in (e["document"], *(e.get("negatives") or []), e.get("parent")) if text}
    if len(texts) < 2:
        raise ConfigError(f"the training data ({spec.source} {spec.path or ''}) gives no query a negative: all "
                          f"{len(examples)} examples have the same document {next(iter(texts), '')[:60]!r} and no "
                          "other 'negatives', and a copy of a query's own document is its right answer, not a "
                          "negative, so contrastive training would learn nothing (loss 0). Give pairs with different "
                          "documents: each query's negatives are the other documents of its batch")


def mlm_texts(spec: DataSpec, seed: int = 0) -> list[str]:
    """Texts for masked-language modelling; raises ConfigError when there are none."""
    if spec.source in ONTOLOGY_SOURCES:
        return _nonempty(_from_ontologies(spec, seed, lambda name: _ontology_mlm_texts(spec, name)), spec)
    if spec.source == "jsonl":
        texts = [string_field(spec.path, number, record, spec.text_field) for number, record in iter_jsonl(spec.path)]
    elif spec.source == "hf_dataset":
        from datasets import load_from_disk

        texts = [r[spec.text_field] for r in load_from_disk(spec.path)]
    else:
        raise ConfigError("stage mlm reads data.source hpo, icd10, hpo+icd10, jsonl or hf_dataset")
    return _nonempty(_subsample(texts, spec.max_examples, seed), spec)


def heldout_mlm_texts(spec: DataSpec) -> list[str]:
    """The MLM text of the held-out side of the split (HPO branches, ICD-10-CM chapters) of an ontology ``source``:
    what a from-scratch model's held-out masked-LM loss is measured on (:mod:`hyte.evaluation.language_model`)."""
    if spec.source not in ONTOLOGY_SOURCES:
        raise ConfigError("held-out MLM text exists for data.source hpo, icd10 or hpo+icd10 only")
    return [text for name in spec.source.split("+") for text in _ontology_mlm_texts(spec, name, split="test")]


def _ontology_mlm_texts(spec: DataSpec, ontology: str, split: str = "train") -> list[str]:
    """MLM text of one side of the branch / chapter split (the training side unless ``split="test"``): HPO
    definitions (with ``spec.mlm_names`` also names and exact synonyms), ICD-10-CM titles and inclusion terms."""
    if ontology == "icd10":
        from ..data import icd10

        return icd10.mlm_corpus(spec.hpo_test_fraction, spec.hpo_seed, split=split)
    from ..data.hpo import load_hpo, mlm_corpus, split_by_branches

    hpo = load_hpo()
    train_ids, test_ids = split_by_branches(hpo, test_fraction=spec.hpo_test_fraction, seed=spec.hpo_seed)
    return mlm_corpus(hpo, train_ids if split == "train" else test_ids, names=spec.mlm_names)


def _nonempty(items: list, spec: DataSpec, what: str = "texts") -> list:
    if not items:
        raise ConfigError(f"the training data ({spec.source} {spec.path or ''}) holds no {what}")
    return items
