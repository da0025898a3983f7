"""BEIR folders: read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (scored by
``hyte.evaluation.retrieval.evaluate_beir``).

The format (https://github.com/beir-cellar/beir): ``corpus.jsonl`` lines ``{"_id", "title" (optional), "text"}``,
``queries.jsonl`` lines ``{"_id", "text"}``, ``qrels/<split>.tsv`` a header line then ``query-id  corpus-id  score``
(tab-separated, integer score). As in BEIR, a document's text is ``title + " " + text`` when it has a title, only the
queries that appear in the qrels are evaluated, and a score of 0 means "judged, not relevant".

Every problem (invalid JSON, a missing, non-string or empty field, a repeated id or one qrels could not name, an
empty corpus, a malformed qrels line or score, a qrels id not in the files, a pair judged twice, nothing relevant) is
a :class:`BEIRFormatError` (a ValueError) naming the file and the line. ``hyte.data.write_beir_folder`` checks
through the same ``check_records``, ``add_judgement`` and ``check_judged``, so what hyte writes, hyte reads.
"""

from __future__ import annotations

import numbers
import os
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..io import DataFormatError, check_path_kind, iter_jsonl

__all__ = ["BEIRFormatError", "check_sample_sizes", "corpus_with_distractors", "load_beir", "seeded_subset"]


# Malformed BEIR files raise the one data-file error of hyte.io (a ValueError naming the file and line).
BEIRFormatError = DataFormatError


def check_sample_sizes(**sizes: int | None) -> None:
    """ValueError naming the first of ``sizes`` (``max_queries=...``, ``max_documents=...``) that is not None or a
    whole number >= 1: the samplers of the in-memory BEIR-shaped sets would otherwise fail in ``random`` or, for a
    negative corpus size, quietly keep only the relevant documents (an evaluation that cannot fail)."""
    for name, value in sizes.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a whole number >= 1, or None for all; got {value!r}")


def seeded_subset(items: Sequence, size: int | None, seed) -> list:
    """At most ``size`` of ``items``: all of them (no ``size``, or not more), else a ``seed``-ed choice, sorted."""
    if size is None or len(items) <= size:
        return list(items)
    return sorted(random.Random(seed).sample(items, size))


def corpus_with_distractors(corpus: dict[str, str], qrels: dict[str, dict[str, int]], max_documents: int | None,
                            seed) -> dict[str, str]:
    """``corpus`` ({id: text}, its order kept) cut to at most ``max_documents``: every document ``qrels`` judges (the
    sampled queries' relevant ones), filled up with a ``seed``-ed choice of the others, so smaller sets stay
    comparable in difficulty. ValueError when ``max_documents`` is below the judged documents (the corpus would
    silently be larger than asked for)."""
    if max_documents is None or len(corpus) <= max_documents:
        return dict(corpus)
    needed = {doc_id for judged in qrels.values() for doc_id in judged}
    if max_documents < len(needed):
        raise ValueError(f"max_documents={max_documents} is below the {len(needed)} documents the sampled queries "
                         "need (each query's relevant ones stay in the corpus): give at least that many, or fewer "
                         "queries")
    fill = random.Random(seed).sample(sorted(set(corpus) - needed), max_documents - len(needed))
    kept = needed | set(fill)
    return {doc_id: text for doc_id, text in corpus.items() if doc_id in kept}


def _require(path: Path) -> Path:
    return check_path_kind(path, "file", "BEIR file", "a BEIR folder holds corpus.jsonl, queries.jsonl and "
                                                      "qrels/<split>.tsv as files: put that file in its place")


# What a record of corpus.jsonl / queries.jsonl must hold: string ``fields``, ``optional`` string ones, and
# ``non_empty`` ones with more than white space (an empty query matches nothing). A document may have an empty text
# when its title is not (BEIR joins them), but not both: the encoder refuses an empty text, after the model loaded.
CORPUS_FIELDS = {"fields": ("text",), "optional": ("title",), "non_empty": (("title", "text"),)}
QUERY_FIELDS = {"fields": ("text",), "optional": (), "non_empty": ("text",)}
EMPTY_CORPUS = "the corpus is empty (no document lines)"


def record_id(value: object) -> str | None:
    """A record's "_id" as the reader keys it: a string as it is, a number as its text (ids may be JSON numbers)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else None


def check_record(record: dict, fields: tuple[str, ...], optional: tuple[str, ...],
                 non_empty: tuple[str | tuple[str, ...], ...]) -> tuple[str | None, str | None]:
    """(the record's id, what is wrong with the record or None); see ``CORPUS_FIELDS``. An entry of ``non_empty``
    that is a tuple of fields needs one of them with more than white space."""
    key = record_id(record.get("_id"))
    if not key:
        return None, 'missing or empty "_id" field'
    # qrels/<split>.tsv names records by id, tab-separated, one per line, white space stripped.
    if key != key.strip() or any(character in key for character in "\t\n\r"):
        return key, (f"id {key!r} holds a tab or a line break, or white space around it: qrels/<split>.tsv could "
                     "not name it")
    for field in fields:
        if field not in record:
            return key, f'missing "{field}" field (id {key})'
    for field in (*fields, *optional):
        value = record.get(field)
        if (field in fields or value is not None) and not isinstance(value, str):
            hint = " (a BEIR loader's {\"title\", \"text\"} record? give the text)" if isinstance(value, dict) else ""
            return key, f'"{field}" must be a string (id {key}); got {type(value).__name__}{hint}'
        if field in non_empty and not value.strip():
            return key, f'"{field}" is empty (id {key}): give the text, or drop the record and its qrels'
    for together in (group for group in non_empty if isinstance(group, tuple)):
        if not any((record.get(field) or "").strip() for field in together):
            fields_named = " and ".join(f'"{field}"' for field in together)
            return key, (f"{fields_named} are empty (id {key}): the document has no text to encode; give it a text, "
                         "or drop it and its qrels")
    return key, None


def check_records(records: Iterable[tuple[object, dict]], kind: dict, error: Callable[[object, str], Exception]
                  ) -> dict[str, dict]:
    """``{id: record}`` of ``(where, record)`` pairs, each checked against ``kind`` (``CORPUS_FIELDS`` or
    ``QUERY_FIELDS``) and for a repeated id; ``error(where, problem)`` is the exception raised for the first problem
    (the reader's names the file and line, the writer's the argument)."""
    checked: dict[str, dict] = {}
    for where, record in records:
        key, problem = check_record(record, **kind)
        if problem is None and key in checked:
            problem = f"duplicate id {key!r}"
        if problem is not None:
            raise error(where, problem)
        checked[key] = record
    return checked


def add_judgement(qrels: dict[str, dict[str, int]], query_id: str, doc_id: str, score: str, queries, corpus
                  ) -> str | None:
    """Add one qrels line's judgement (its three columns as text) to ``qrels``; what is wrong with it, or None."""
    try:
        relevance = int(score)
    except ValueError:
        return f"score must be an integer, got {score!r}"
    if query_id not in queries:
        return f"query id {query_id!r} is not in queries.jsonl"
    if doc_id not in corpus:
        return f"corpus id {doc_id!r} is not in corpus.jsonl"
    if relevance < 0:
        return f"score {relevance} is negative: scores are 0 (judged, not relevant) or more (graded relevance)"
    if doc_id in qrels.get(query_id, {}):
        return f"the pair ({query_id!r}, {doc_id!r}) is judged twice: keep one line per query and document"
    qrels.setdefault(query_id, {})[doc_id] = relevance
    return None


def check_judged(qrels: dict[str, dict[str, int]]) -> str | None:
    """What is wrong with a whole set of judgements (none, or none relevant), or None."""
    if not qrels:
        return "no relevance judgements"
    if not any(score > 0 for judged in qrels.values() for score in judged.values()):
        return "no judgement has a score > 0: nothing is relevant"
    return None


def _read_jsonl(path: Path, kind: dict) -> dict[str, dict]:
    """``{_id: record}`` from a JSONL file of ``kind`` records (see ``check_records``)."""
    return check_records(iter_jsonl(_require(path), "BEIR file"), kind,
                         lambda number, problem: BEIRFormatError(path, number, problem))


def check_split(split: object) -> str:
    """A qrels split name (``qrels/<split>.tsv``): a plain file name, so it cannot point outside ``qrels/``."""
    if not isinstance(split, str) or not split or split in (".", "..") or any(c in split for c in "/\\\0"):
        raise ValueError(f"split must be a plain name such as 'test' or 'train' (the file qrels/<split>.tsv); got "
                         f"{split!r}")
    if split.lower().endswith(".tsv"):  # "test.tsv" would read qrels/test.tsv.tsv
        raise ValueError(f"split {split!r} is the file's name: the split is the name without .tsv (the file "
                         f"qrels/<split>.tsv); pass {split[:-4]!r}")
    return split


def load_beir(folder: str | os.PathLike, split: str = "test") -> tuple[dict[str, str], dict[str, str],
                                                                          dict[str, dict[str, int]]]:
    """``(queries, corpus, qrels)`` from a BEIR folder: ``{qid: text}``, ``{doc_id: text}``, ``{qid: {doc_id: score}}``.

    Queries are limited to those with qrels. Raises FileNotFoundError for a missing folder or file and
    :class:`BEIRFormatError` for malformed content (see the module docstring).
    """
    check_split(split)
    folder = check_path_kind(folder, "folder", "BEIR folder", "give the BEIR folder, with corpus.jsonl, "
                                                                f"queries.jsonl and qrels/ (if this is one of its "
                                                                f"files: {Path(folder).absolute().parent})")
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    documents = _read_jsonl(corpus_path, CORPUS_FIELDS)
    if not documents:
        raise BEIRFormatError(corpus_path, None, EMPTY_CORPUS)
    corpus = {doc_id: f"{record['title']} {record['text']}" if record.get("title") else record["text"]
              for doc_id, record in documents.items()}
    all_queries = {query_id: record["text"] for query_id, record in _read_jsonl(queries_path, QUERY_FIELDS).items()}

    qrels: dict[str, dict[str, int]] = {}
    with _require(qrels_path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            columns = line.rstrip("\n\r").split("\t")
            if number == 1 and columns[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue  # the header
            if len(columns) != 3:
                raise BEIRFormatError(qrels_path, number, f"expected 3 tab-separated columns "
                                                          f"(query-id, corpus-id, score), got {len(columns)}")
            problem = add_judgement(qrels, *(column.strip() for column in columns), all_queries, corpus)
            if problem is not None:
                raise BEIRFormatError(qrels_path, number, problem)
    problem = check_judged(qrels)
    if problem is not None:
        raise BEIRFormatError(qrels_path, None, problem)
    queries = {query_id: all_queries[query_id] for query_id in qrels}
    return queries, corpus, qrels


