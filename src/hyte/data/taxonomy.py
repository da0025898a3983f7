"""A user's own taxonomy: one reader per input format, all into one in-memory :class:`~hyte.data.obo.Ontology`.

Formats (``load_taxonomy`` picks by the path; ``format`` overrides):

* ``obo``: an OBO file, read by :func:`hyte.data.obo.load_obo`, the reader the built-in HPO already goes through
  (line-numbered errors, no dependency; ``pronto`` would add one and report errors without line numbers);
* ``table``: a concept table, JSONL (``{"id", "name", "description"?, "synonyms"?, "parents"?}`` per line) or CSV /
  TSV with a header holding ``id`` and ``name`` (``description``, ``synonyms`` and ``parents`` optional; several
  parents or synonyms separated by ``|``);
* ``edges``: an edge list, CSV / TSV with the header ``child,parent``, beside a names file (``names=``: a concept
  table without parents, the same formats as ``table``);
* ``hit``: HiT's dataset files as they are published (``hierarchy-transformers``): a Zenodo folder
  (``entity_lexicon.json`` and ``train.jsonl`` / ``val.jsonl`` / ``test.jsonl`` of ``{"child", "parent",
  "random_negatives", "hard_negatives"}`` ids), or a Hub export (JSONL or Parquet files with text columns ``child``,
  ``parent`` and ``negative`` (triplets) or ``label`` (pairs)). The taxonomy is the transitive reduction of every
  positive edge; the files' own splits and negatives are kept (:attr:`Taxonomy.given_splits`).

A taxonomy may have several roots. What is refused, naming the file and line: a cycle, a parent id that names no
concept, a duplicate id, an empty name, an unknown field or column.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..io import DataFormatError, iter_jsonl
from .obo import IsACycleError, Ontology, Term, ancestors_of, load_obo

__all__ = ["FORMATS", "Subsumption", "Taxonomy", "load_taxonomy"]

FORMATS = ("obo", "table", "edges", "hit")
# Several values in one CSV cell (parents, synonyms).
_SEPARATOR = "|"
_TABLE_FIELDS = ("id", "name", "description", "synonyms", "parents")


@dataclass(frozen=True)
class Subsumption:
    """One subsumption question: is ``child`` a kind of ``parent``? With the negatives HiT's protocol pairs it with:
    concepts that are not ``child``'s ancestors, drawn at random, and hard ones (``child``'s siblings first)."""

    child: str
    parent: str
    random_negatives: tuple[str, ...] = ()
    hard_negatives: tuple[str, ...] = ()


@dataclass
class Taxonomy:
    """A taxonomy read from a user's file: the is-a graph (``ontology``: names, descriptions, synonyms, parents) and,
    for HiT's dataset files, the splits they came with (``given_splits``: "train" / "validation" / "test" ->
    subsumptions; empty otherwise)."""

    ontology: Ontology
    source: str
    given_splits: dict[str, list[Subsumption]] = field(default_factory=dict)

    def text(self, concept: str, with_description: bool = False) -> str:
        """The text a model reads for a concept: its name, or "name: description" where it has a description."""
        term = self.ontology.terms[concept]
        return f"{term.name}: {term.definition}" if with_description and term.definition else term.name


def load_taxonomy(path: str | os.PathLike, *, names: str | os.PathLike | None = None,
                  format: str | None = None) -> Taxonomy:
    """Read a taxonomy file (or HiT folder) into a :class:`Taxonomy`; see the module docstring for the formats.

    Raises FileNotFoundError for a missing path and DataFormatError (a ValueError) naming the file and line for
    malformed content; nothing is returned for a broken graph.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"taxonomy not found: {path}")
    format = format or _guess_format(path)
    if format not in FORMATS:
        raise ValueError(f"unknown taxonomy format {format!r}; one of {', '.join(FORMATS)}")
    if format != "edges" and names is not None:
        raise ValueError(f"a names file goes with an edge list (format edges), not with format {format}: {path}")
    if format == "obo":
        return Taxonomy(load_obo(path, several_roots=True), str(path))
    if format == "table":
        return Taxonomy(_build(_read_table(path, parents_allowed=True), path), str(path))
    if format == "edges":
        if names is None:
            raise ValueError(f"{path} is an edge list (child, parent): give the names of its concepts too (a concept "
                             "table with id and name: names=..., on the command line --names, in a config "
                             "data.names)")
        return _edge_list(path, Path(names))
    return _hit(path)


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if path.is_dir() or suffix == ".parquet":
        return "hit"
    if suffix == ".obo":
        return "obo"
    if suffix in (".csv", ".tsv"):
        header = _csv_rows(path)[0][1]
        return "edges" if {"child", "parent"} <= set(header) and "id" not in header else "table"
    if suffix in (".jsonl", ".json"):
        for _, record in iter_jsonl(path, "taxonomy file"):
            return "hit" if "child" in record else "table"
        raise DataFormatError(path, None, "holds no record: give one concept per line")
    raise ValueError(f"cannot tell the format of {path} from its name: give format= (--format on the command line, "
                     f"data.taxonomy_format in a config), one of {', '.join(FORMATS)}")


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of a CSV (comma) or TSV (tab) file, header first, blank lines skipped."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        rows = [(reader.line_num, [cell.strip() for cell in row]) for row in reader if any(c.strip() for c in row)]
    if not rows:
        raise DataFormatError(path, None, "is empty: give a header line and one row per concept")
    return rows


def _read_table(path: Path, parents_allowed: bool) -> list[tuple[int, Term]]:
    """(line, Term) for every concept of a JSONL or CSV / TSV concept table; DataFormatError at a repeated id."""
    allowed = _TABLE_FIELDS if parents_allowed else _TABLE_FIELDS[:-1]
    records: list[tuple[int, dict]] = []
    if path.suffix.lower() in (".csv", ".tsv"):
        (header_line, header), *rows = _csv_rows(path)
        _refuse_unknown(path, header_line, header, allowed)
        for number, cells in rows:
            if len(cells) != len(header):
                raise DataFormatError(path, number, f"{len(cells)} cells for the {len(header)} columns of the header "
                                                    f"({', '.join(header)})")
            record: dict = dict(zip(header, cells))
            for name in ("parents", "synonyms"):
                record[name] = [v.strip() for v in record.get(name, "").split(_SEPARATOR) if v.strip()]
            records.append((number, record))
    else:
        for number, record in iter_jsonl(path, "taxonomy file"):
            _refuse_unknown(path, number, record, allowed)
            records.append((number, record))
    rows = [(number, _term(path, number, record)) for number, record in records]
    lines: dict[str, int] = {}
    for number, term in rows:
        if term.id in lines:
            raise DataFormatError(path, number, f"duplicate concept id {term.id!r} (first on line {lines[term.id]})")
        lines[term.id] = number
    return rows


def _refuse_unknown(path: Path, line: int, fields, allowed: tuple[str, ...]) -> None:
    unknown = [name for name in fields if name not in allowed]
    if unknown:
        raise DataFormatError(path, line, f"unknown field(s) {', '.join(map(repr, unknown))}: a concept has "
                                          f"{', '.join(allowed)} (rename or drop the others)")


def _term(path: Path, line: int, record: dict) -> Term:
    def text(name: str, required: bool) -> str | None:
        value = record.get(name)
        if value is None or value == "":
            if required:
                raise DataFormatError(path, line, f"the concept has no {name} (an empty {name} cannot be embedded "
                                                  "or looked up): give every concept one")
            return None
        if not isinstance(value, (str, int)) or not str(value).strip():
            raise DataFormatError(path, line, f"field '{name}' must be a non-empty string")
        return str(value).strip()

    def strings(name: str) -> list[str]:
        values = record.get(name) or []
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list) or not all(isinstance(v, (str, int)) and str(v).strip() for v in values):
            raise DataFormatError(path, line, f"field '{name}' must be a list of non-empty strings")
        return [str(v).strip() for v in values]

    return Term(id=text("id", True), name=text("name", True), definition=text("description", False),
                synonyms=[(s, "EXACT") for s in strings("synonyms")], parents=list(dict.fromkeys(strings("parents"))))


def _build(rows: list[tuple[int, Term]], path: Path) -> Ontology:
    """The ontology of (line, Term) rows of distinct ids, or DataFormatError naming the line of an unknown parent or
    a cycle."""
    terms, lines = {term.id: term for _, term in rows}, {term.id: number for number, term in rows}
    for term in terms.values():
        for parent in term.parents:
            if parent not in terms:
                raise DataFormatError(path, lines[term.id], f"concept {term.id!r} has parent {parent!r}, which is "
                                                            "no concept of the file: add it or fix the id")
            if parent == term.id:
                raise DataFormatError(path, lines[term.id], f"concept {term.id!r} is its own parent")
    if not terms:
        raise DataFormatError(path, None, "holds no concept")
    try:
        return Ontology(terms, several_roots=True)
    except IsACycleError as error:  # named at the row of the child of its first link
        raise DataFormatError(path, lines[error.cycle[1]], f"the is-a links form a cycle "
                                                           f"({' -> '.join(error.cycle)}); a taxonomy has none: fix "
                                                           "the parents of these concepts") from None


def _edge_list(path: Path, names_path: Path) -> Taxonomy:
    if not names_path.is_file():
        raise FileNotFoundError(f"names file not found: {names_path}")
    concepts = _read_table(names_path, parents_allowed=False)
    known = {term.id for _, term in concepts}
    parents: dict[str, list[str]] = {}
    parent_lines: dict[str, int] = {}
    (header_line, header), *rows = _csv_rows(path)
    if header[:2] != ["child", "parent"] or len(header) != 2:
        raise DataFormatError(path, header_line, f"an edge list's header is 'child,parent'; got {','.join(header)!r}")
    for number, cells in rows:
        if len(cells) != 2 or not all(cells):
            raise DataFormatError(path, number, "an edge is two non-empty ids: child, parent")
        child, parent = cells
        for role, concept in (("child", child), ("parent", parent)):
            if concept not in known:
                raise DataFormatError(path, number, f"{role} {concept!r} has no name in {names_path}: add it there")
        parents.setdefault(child, []).append(parent)
        parent_lines.setdefault(child, number)
    terms = [(number, Term(term.id, term.name, term.definition, term.synonyms,
                           list(dict.fromkeys(parents.get(term.id, [])))))
             for number, term in concepts]
    # Errors of the graph (a cycle) point at the edge list's line that gave the child's parents.
    return Taxonomy(_build([(parent_lines.get(term.id, number), term) for number, term in terms], path), str(path))


# ----------------------------------------------------------------------------------------------------------------
# HiT's dataset files
# ----------------------------------------------------------------------------------------------------------------

_HIT_SPLITS = {"train": "train", "val": "validation", "validation": "validation", "test": "test"}


def _hit(path: Path) -> Taxonomy:
    if path.is_dir() and (path / "entity_lexicon.json").is_file():
        return _hit_zenodo(path)
    files = sorted(f for f in path.iterdir() if f.suffix in (".jsonl", ".parquet")) if path.is_dir() else [path]
    split_files: dict[str, list[Path]] = {}
    for file in files:  # a Hub export may shard a split: train-00000-of-00002.parquet, train-00001-of-00002...
        if split := _split_of(file):
            split_files.setdefault(split, []).append(file)
    if not split_files:
        raise DataFormatError(path, None, "holds no HiT split file (train / val / test, .jsonl or .parquet)")
    splits: dict[str, list[Subsumption]] = {}
    edges: dict[tuple[str, str], tuple[Path, int]] = {}
    for split, shards in split_files.items():
        splits[split] = [row for file in shards for row in _hit_rows(file, edges)]
    names = sorted({concept for edge in edges for concept in edge} |
                   {n for rows in splits.values() for s in rows for n in (*s.random_negatives, *s.hard_negatives)})
    return _from_hit_edges(path, {name: Term(name, name) for name in names}, edges, splits)


def _split_of(file: Path) -> str | None:
    stem = file.stem.lower()
    return next((_HIT_SPLITS[key] for key in _HIT_SPLITS if stem == key or stem.startswith((f"{key}-", f"{key}_"))),
                None)


def _label(file: Path, number: int, value) -> int:
    """A HiT pair's label: 1 (a subsumption) or 0 (a negative)."""
    if isinstance(value, bool) or value not in (0, 1, "0", "1"):
        raise DataFormatError(file, number, f"label must be 1 (child is-a parent) or 0 (a negative); got {value!r}")
    return int(value)


def _hit_rows(file: Path, edges: dict[tuple[str, str], tuple[Path, int]]) -> list[Subsumption]:
    """Subsumptions of a Hub export: triplets (child, parent, negative) or pairs (child, parent, label); rows of
    one positive are gathered into one subsumption with its negatives (random ones: the export does not say
    which kind it is; :func:`hyte.evaluation.subsumption` treats them as given)."""
    if file.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(file).to_pylist()
        records = list(enumerate(table, start=1))
    else:
        records = list(iter_jsonl(file, "HiT dataset file"))
    gathered: dict[tuple[str, str], list[str]] = {}
    for number, record in records:
        columns = set(record)
        if not ({"child", "parent", "negative"} == columns or {"child", "parent", "label"} == columns):
            raise DataFormatError(file, number, f"a HiT row has child, parent and negative (triplets) or label (pairs); "
                                                f"got {', '.join(sorted(columns))}")
        child, parent = str(record["child"]).strip(), str(record["parent"]).strip()
        if not child or not parent:
            raise DataFormatError(file, number, "child and parent must be non-empty names")
        if "negative" in record:
            negative = str(record["negative"]).strip()
            if not negative:
                raise DataFormatError(file, number, "the negative must be a non-empty name")
            gathered.setdefault((child, parent), []).append(negative)
            edges.setdefault((child, parent), (file, number))
        elif _label(file, number, record["label"]) == 1:
            gathered.setdefault((child, parent), [])
            edges.setdefault((child, parent), (file, number))
        else:
            # A negative pair belongs to the positive of the same child read last (HiT writes them right after).
            positive = next((key for key in reversed(gathered) if key[0] == child), None)
            if positive is None:
                raise DataFormatError(file, number, f"a negative pair for {child!r} before any positive of it")
            gathered[positive].append(parent)
    return [Subsumption(c, p, tuple(negatives), ()) for (c, p), negatives in gathered.items()]


def _hit_zenodo(folder: Path) -> Taxonomy:
    lexicon_path = folder / "entity_lexicon.json"
    try:
        lexicon = json.loads(lexicon_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataFormatError(lexicon_path, error.lineno, f"not valid JSON ({error.msg})") from None
    terms = {}
    for concept, attributes in lexicon.items():
        name = (attributes or {}).get("name") if isinstance(attributes, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise DataFormatError(lexicon_path, None, f"entity {concept!r} has no name")
        terms[concept] = Term(concept, name.strip())
    splits: dict[str, list[Subsumption]] = {}
    edges: dict[tuple[str, str], tuple[Path, int]] = {}
    for stem, split in (("train", "train"), ("val", "validation"), ("test", "test")):
        file = folder / f"{stem}.jsonl"
        if not file.is_file():
            continue
        rows = []
        for number, record in iter_jsonl(file, "HiT dataset file"):
            unknown = set(record) - {"child", "parent", "random_negatives", "hard_negatives"}
            if unknown or not {"child", "parent"} <= set(record):
                raise DataFormatError(file, number, "a HiT example has child, parent, random_negatives and "
                                                    f"hard_negatives; got {', '.join(sorted(record))}")
            randoms, hards = (tuple(record.get(f"{kind}_negatives", [])) for kind in ("random", "hard"))
            missing = [i for i in (record["child"], record["parent"], *randoms, *hards) if i not in terms]
            if missing:
                raise DataFormatError(file, number, f"{missing[0]!r} is not in {lexicon_path.name}")
            edges.setdefault((record["child"], record["parent"]), (file, number))
            rows.append(Subsumption(record["child"], record["parent"], randoms, hards))
        splits[split] = rows
    if "train" not in splits:
        raise DataFormatError(folder, None, "a HiT folder needs train.jsonl (and val.jsonl, test.jsonl)")
    return _from_hit_edges(folder, terms, edges, splits)


def _from_hit_edges(path: Path, terms: dict[str, Term], edges: dict[tuple[str, str], tuple[Path, int]],
                    splits: dict[str, list[Subsumption]]) -> Taxonomy:
    """The taxonomy whose transitive closure holds every positive edge: its transitive reduction (HiT's files mix
    direct and transitive edges without saying which is which)."""
    parents: dict[str, set[str]] = {}
    for child, parent in edges:
        parents.setdefault(child, set()).add(parent)
    try:
        ancestors = ancestors_of(terms, edges)
    except IsACycleError as error:  # named at the row of its first link
        file, number = edges[(error.cycle[1], error.cycle[0])]
        raise DataFormatError(file, number, f"the positive edges form a cycle ({' -> '.join(error.cycle)}): a "
                                            "taxonomy has none; fix these rows") from None
    direct = {child: sorted(p for p in ps if not any(p in ancestors[q] for q in ps if q != p))
              for child, ps in parents.items()}
    built = {concept: Term(term.id, term.name, parents=direct.get(concept, [])) for concept, term in terms.items()}
    return Taxonomy(Ontology(built, several_roots=True), str(path), splits)
