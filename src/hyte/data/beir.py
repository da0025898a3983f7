"""BEIR folders: read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (scored by
``hyte.evaluation.retrieval.evaluate_beir``).

The format (https://github.com/beir-cellar/beir): ``corpus.jsonl`` lines ``{"_id", "title" (optional), "text"}``,
``queries.jsonl`` lines ``{"_id", "text"}``, ``qrels/<split>.tsv`` a header line then ``query-id  corpus-id  score``
(tab-separated, integer score). As in BEIR, a document's text is ``title + " " + text`` when it has a title, only the
queries that appear in the qrels are evaluated, and a score of 0 means "judged, not relevant".

Every problem is reported as a :class:`BEIRFormatError` (a ValueError) naming the file and the line: invalid JSON,
a missing or non-string field, a repeated id, an empty corpus, a qrels line without three columns or with a
non-integer score, a qrels id that is not in the corpus or the queries.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..io import DataFormatError, iter_jsonl

__all__ = ["BEIRFormatError", "check_sample_sizes", "distractor_count", "load_beir"]


# Malformed BEIR files raise the one data-file error of hyte.io (a ValueError naming the file and line).
BEIRFormatError = DataFormatError


def check_sample_sizes(**sizes: int | None) -> None:
    """ValueError naming the first of ``sizes`` (``max_queries=...``, ``max_documents=...``) that is not None or a
    whole number >= 1: the samplers of the in-memory BEIR-shaped sets would otherwise fail in ``random`` or, for a
    negative corpus size, quietly keep only the relevant documents (an evaluation that cannot fail)."""
    for name, value in sizes.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a whole number >= 1, or None for all; got {value!r}")


def distractor_count(max_documents: int, relevant: int) -> int:
    """How many other documents fill a sampled corpus of ``max_documents`` around its ``relevant`` ones; ValueError
    when ``max_documents`` is below ``relevant`` (the corpus would silently be larger than asked for)."""
    if max_documents < relevant:
        raise ValueError(f"max_documents={max_documents} is below the {relevant} documents the sampled queries need "
                         "(each query's relevant ones stay in the corpus): give at least that many, or fewer queries")
    return max_documents - relevant


def _require(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"BEIR file not found: {path}")
    return path


def _read_jsonl(path: Path, fields: tuple[str, ...], optional: tuple[str, ...] = (),
                non_empty: tuple[str, ...] = ()) -> dict[str, dict]:
    """``{_id: record}`` from a JSONL file; each record must have string ``fields`` (ids may be JSON numbers), and
    the ``non_empty`` ones must hold more than white space."""
    records: dict[str, dict] = {}
    for number, record in iter_jsonl(_require(path), "BEIR file"):
        record_id = record.get("_id")
        if isinstance(record_id, (int, float)) and not isinstance(record_id, bool):
            record_id = str(record_id)
        if not isinstance(record_id, str) or not record_id:
            raise BEIRFormatError(path, number, 'missing or empty "_id" field')
        for field in fields:
            if field not in record:
                raise BEIRFormatError(path, number, f'missing "{field}" field (id {record_id})')
            if not isinstance(record[field], str):
                raise BEIRFormatError(path, number, f'"{field}" must be a string (id {record_id})')
            if field in non_empty and not record[field].strip():
                raise BEIRFormatError(path, number, f'"{field}" is empty (id {record_id}): give the text, or remove '
                                                    f"the line and its qrels")
        for field in optional:
            if record.get(field) is not None and not isinstance(record[field], str):
                raise BEIRFormatError(path, number, f'"{field}" must be a string (id {record_id})')
        if record_id in records:
            raise BEIRFormatError(path, number, f"duplicate id {record_id!r}")
        records[record_id] = record
    return records


def load_beir(folder: str | os.PathLike, split: str = "test") -> tuple[dict[str, str], dict[str, str],
                                                                          dict[str, dict[str, int]]]:
    """``(queries, corpus, qrels)`` from a BEIR folder: ``{qid: text}``, ``{doc_id: text}``, ``{qid: {doc_id: score}}``.

    Queries are limited to those with qrels. Raises FileNotFoundError for a missing folder or file and
    :class:`BEIRFormatError` for malformed content (see the module docstring).
    """
    folder = Path(folder)
    if folder.is_file():
        raise FileNotFoundError(f"{folder} is a file: give the BEIR folder that holds it ({folder.parent}, with "
                                "corpus.jsonl, queries.jsonl and qrels/)")
    if not folder.is_dir():
        raise FileNotFoundError(f"BEIR folder not found: {folder}")
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    documents = _read_jsonl(corpus_path, ("text",), optional=("title",))
    if not documents:
        raise BEIRFormatError(corpus_path, None, "the corpus is empty (no document lines)")
    corpus = {doc_id: f"{record['title']} {record['text']}" if record.get("title") else record["text"]
              for doc_id, record in documents.items()}
    all_queries = {query_id: record["text"] for query_id, record in _read_jsonl(queries_path, ("text",), non_empty=("text",)).items()}

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
            query_id, doc_id, score = (column.strip() for column in columns)
            try:
                relevance = int(score)
            except ValueError:
                raise BEIRFormatError(qrels_path, number, f"score must be an integer, got {score!r}") from None
            if query_id not in all_queries:
                raise BEIRFormatError(qrels_path, number, f"query id {query_id!r} is not in {queries_path.name}")
            if doc_id not in corpus:
                raise BEIRFormatError(qrels_path, number, f"corpus id {doc_id!r} is not in {corpus_path.name}")
            if relevance < 0:
                raise BEIRFormatError(qrels_path, number, f"score {relevance} is negative: scores are 0 (judged, not "
                                                          "relevant) or more (graded relevance)")
            if doc_id in qrels.get(query_id, {}):
                raise BEIRFormatError(qrels_path, number, f"the pair ({query_id!r}, {doc_id!r}) is judged twice: keep "
                                                          "one line per query and document")
            qrels.setdefault(query_id, {})[doc_id] = relevance
    if not qrels:
        raise BEIRFormatError(qrels_path, None, "no relevance judgements")
    if not any(score > 0 for judged in qrels.values() for score in judged.values()):
        raise BEIRFormatError(qrels_path, None, "no judgement has a score > 0: nothing is relevant")
    queries = {query_id: all_queries[query_id] for query_id in qrels}
    return queries, corpus, qrels


