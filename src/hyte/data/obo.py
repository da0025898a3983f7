"""A small, dependency-free reader for OBO 1.2/1.4 ontology files (``is_a`` hierarchy, names, definitions, synonyms).

Only what hierarchy-aware retrieval needs is kept: ``[Term]`` stanzas with their ``id``, ``name``, ``def``,
``synonym`` and ``is_a`` tags. Obsolete terms are dropped, other stanza types (``[Typedef]``, ``[Instance]``) and
other tags are read (so syntax errors in them are still reported) but ignored.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from ..errors import HyteError
from ..io import DataFormatError

__all__ = ["IsACycleError", "OBOFormatError", "Ontology", "Term", "ancestors_of", "load_obo", "parents_first"]

# The four synonym scopes of the OBO format; anything else in that position means the line is malformed.
_SYNONYM_SCOPES = frozenset({"EXACT", "BROAD", "NARROW", "RELATED"})

# OBO escapes whose meaning is not simply "the next character, literally".
_SPECIAL_ESCAPES = {"n": "\n", "t": "\t", "W": " "}
# A quoted string (a backslash escapes the next character, a quote among them) and the rest of the line; an escape.
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"(.*)', re.DOTALL)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


class IsACycleError(HyteError, ValueError):
    """is-a links that form a cycle: ``cycle`` is (a, b, ..., a), each the parent of the next. An is-a hierarchy has
    none; each reader catches it to name where the first link (child ``cycle[1]``, parent ``cycle[0]``) was
    written."""

    def __init__(self, cycle: Sequence[str]):
        self.cycle = tuple(cycle)
        super().__init__(f"the is_a links form a cycle ({' -> '.join(self.cycle)}); an is_a hierarchy has none: fix "
                         "the is_a lines of these terms")


def parents_first(parents: dict[str, Sequence[str]]) -> tuple[str, ...]:
    """The concepts of ``parents`` (concept -> its parents), every parent before its children; IsACycleError when
    there is no such order."""
    try:
        return tuple(TopologicalSorter(parents).static_order())
    except CycleError as error:
        raise IsACycleError(error.args[1]) from None


def ancestors_of(ontology: Ontology | Iterable[str], edges=None) -> dict[str, frozenset[str]]:
    """Concept id -> all its ancestors, through ``edges`` ((child, parent) pairs; default: every is-a link of the
    ontology); with ``edges``, the concept ids alone do instead of an Ontology."""
    parents: dict[str, set[str]] = {c: set() for c in (ontology.terms if isinstance(ontology, Ontology) else ontology)}
    for child, parent in ontology.edges() if edges is None else edges:
        parents[child].add(parent)
    ancestors: dict[str, frozenset[str]] = {}
    for concept in parents_first(parents):
        ancestors[concept] = frozenset().union(*({p} | ancestors[p] for p in parents[concept]))
    return ancestors


class OBOFormatError(DataFormatError):
    """An OBO file could not be parsed: a ``DataFormatError`` (the file, the 1-based line or None for the file as a
    whole, the problem) of the OBO reader."""


@dataclass
class Term:
    """One live ontology term.

    ``definition`` is the unescaped quoted text of ``def:`` (its trailing xref list dropped), or None.
    ``synonyms`` holds ``(text, scope)`` pairs where scope keeps the synonym type when one is given,
    e.g. ``("Short stature", "EXACT")`` or ``("Small for age", "EXACT layperson")``.
    ``parents`` are the ``is_a`` parent ids in file order.
    """

    id: str
    name: str
    definition: str | None = None
    synonyms: list[tuple[str, str]] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)


class Ontology:
    """An ``is_a`` hierarchy of :class:`Term` objects with a single root, or a forest of several.

    ``terms`` maps term ids to terms (obsolete terms are not included). ``root`` is the unique term without
    parents; when there are several, pass the one to use as ``root`` (depths are then counted from it and terms
    it does not reach have no depth), or ``several_roots=True`` for a forest (a product catalogue's top-level
    categories, say): then ``root`` is None unless there is only one, ``roots`` lists them all and depths count from
    the nearest. Objects are meant to be read, not modified: indexes are built once.
    """

    def __init__(self, terms: dict[str, Term], root: str | None = None, *, several_roots: bool = False):
        for term in terms.values():
            for parent in term.parents:
                if parent not in terms:
                    raise ValueError(f"term {term.id} has unknown or obsolete parent {parent}")
        # A cycle leaves no root and no depths; say so instead of "found 0 terms without parents".
        parents_first({term.id: term.parents for term in terms.values()})
        self.terms = terms
        parentless = tuple(sorted(term_id for term_id, term in terms.items() if not term.parents))
        if several_roots and root is None:
            self.roots = parentless
            self.root = parentless[0] if len(parentless) == 1 else None
        else:
            if root is None and len(parentless) != 1:
                shown = ", ".join(parentless[:5]) + (", ..." if len(parentless) > 5 else "")
                raise ValueError(f"expected exactly one term without parents, found {len(parentless)} ({shown}); "
                                 "pass the root term's id to choose one (root=..., on the command line --root ID)")
            self.root = parentless[0] if root is None else root
            if self.root not in terms:
                raise ValueError(f"root {self.root!r} is not a term of this ontology")
            self.roots = (self.root,)
        children: dict[str, list[str]] = {term_id: [] for term_id in terms}
        for term in terms.values():
            for parent in dict.fromkeys(term.parents):  # a duplicated is_a line must not duplicate the child
                children[parent].append(term.id)
        # Sorted so that every traversal, and everything built on one, is deterministic.
        self._children = {term_id: sorted(kids) for term_id, kids in children.items()}

    def __len__(self) -> int:
        return len(self.terms)

    def __contains__(self, term_id: object) -> bool:
        return term_id in self.terms

    def __repr__(self) -> str:
        return f"Ontology({len(self)} terms, roots={', '.join(self.roots[:3])}{', ...' if len(self.roots) > 3 else ''})"

    def _term(self, term_id: str) -> Term:
        try:
            return self.terms[term_id]
        except KeyError:
            raise KeyError(f"unknown term id {term_id!r}") from None

    def parents(self, term_id: str) -> list[str]:
        """The ``is_a`` parents of a term, in file order."""
        return list(self._term(term_id).parents)

    def children(self, term_id: str) -> list[str]:
        """The terms that list ``term_id`` as an ``is_a`` parent, sorted by id."""
        self._term(term_id)
        return list(self._children[term_id])

    def grandparents(self, term_id: str) -> list[str]:
        """The parents of the parents of a term, without repeats, sorted by id."""
        return sorted({grandparent for parent in self.parents(term_id) for grandparent in self.terms[parent].parents})

    def siblings(self, term_id: str) -> list[str]:
        """The other children of any parent of a term, without repeats, sorted by id."""
        return sorted({child for parent in self.parents(term_id) for child in self._children[parent]} - {term_id})

    def ancestors(self, term_id: str) -> set[str]:
        """Every term reachable upwards through ``is_a`` links, the term itself excluded."""
        return _reachable(self.parents(term_id), lambda current: self.terms[current].parents)

    def descendants(self, term_id: str) -> set[str]:
        """Every term reachable downwards through ``is_a`` links, the term itself excluded."""
        return _reachable(self.children(term_id), self._children.__getitem__)

    @cached_property
    def _depths(self) -> dict[str, int]:
        # One breadth-first search from the roots gives every shortest depth; computed on first use only.
        depths = dict.fromkeys(self.roots, 0)
        queue = deque(self.roots)
        while queue:
            current = queue.popleft()
            for child in self._children[current]:
                if child not in depths:
                    depths[child] = depths[current] + 1
                    queue.append(child)
        return depths

    def depth(self, term_id: str) -> int:
        """Length of the shortest ``is_a`` path from a root down to the term (a root has depth 0)."""
        self._term(term_id)
        try:
            return self._depths[term_id]
        except KeyError:
            raise ValueError(f"term {term_id} is not below the root {self.root}") from None

    def edges(self) -> list[tuple[str, str]]:
        """Every direct ``(child, parent)`` is-a link, sorted."""
        return sorted((term.id, parent) for term in self.terms.values() for parent in dict.fromkeys(term.parents))


def _reachable(start: Iterable[str], step) -> set[str]:
    """The terms of ``start`` and every term reached from them by repeated ``step(term)`` (the next terms)."""
    seen: set[str] = set()
    stack = list(start)
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(step(current))
    return seen


def load_obo(path: str | os.PathLike, root: str | None = None, *, several_roots: bool = False) -> Ontology:
    """Read an OBO file into an :class:`Ontology` (see the module docstring for what is kept); ``several_roots``
    accepts a forest (see :class:`Ontology`).

    Raises FileNotFoundError naming the path when it does not exist, and :class:`OBOFormatError` (a ValueError)
    naming the file and line for malformed content: a line without ``tag: value``, an unclosed quote or stanza
    header, a bad synonym scope, a term without id or name, a duplicated id, or an ``is_a`` to an unknown term.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"OBO file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise OBOFormatError(path, None, f"is not UTF-8 text ({error.reason} at byte {error.start}), so not an OBO "
                                         "file: give the ontology's .obo file") from None

    terms: dict[str, Term] = {}
    parent_lines: dict[tuple[str, str], int] = {}  # (child, parent) -> line of the is_a, for error messages

    def finish_stanza(stanza: str | None, start_line: int, tags: list[tuple[int, str, str]]) -> None:
        if stanza != "Term":
            return
        term = _build_term(path, start_line, tags, parent_lines)
        if term is None:  # obsolete
            return
        if term.id in terms:
            raise OBOFormatError(path, start_line, f"duplicate term id {term.id}")
        terms[term.id] = term

    stanza: str | None = None  # None while reading the header, whose tags are not needed here
    stanza_line = 0
    tags: list[tuple[int, str, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("!"):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise OBOFormatError(path, number, f"malformed stanza header {line!r}")
            finish_stanza(stanza, stanza_line, tags)
            stanza, stanza_line, tags = line[1:-1].strip(), number, []
            continue
        tag, separator, value = line.partition(":")
        if not separator or not tag or " " in tag:
            raise OBOFormatError(path, number, f"expected 'tag: value', got {line!r}")
        if stanza is not None:
            tags.append((number, tag, value.strip()))
    finish_stanza(stanza, stanza_line, tags)

    for (child, parent), number in parent_lines.items():
        if child in terms and parent not in terms:
            raise OBOFormatError(path, number, f"term {child} has unknown or obsolete parent {parent}")
    if not terms:  # the "several roots, pass root=" message below read as if terms had been found
        raise OBOFormatError(path, None, "holds no [Term] stanza (an empty file, or not an OBO ontology): give an OBO "
                                         "file with terms (id, name, is_a lines)")
    try:
        return Ontology(terms, root=root, several_roots=several_roots)
    except IsACycleError as error:  # named at the is_a line of its first link
        raise OBOFormatError(path, parent_lines.get((error.cycle[1], error.cycle[0])), str(error)) from None
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def _build_term(path: Path, start_line: int, tags: list[tuple[int, str, str]],
                parent_lines: dict[tuple[str, str], int]) -> Term | None:
    """Turn the tags of one ``[Term]`` stanza into a Term, or None when the term is obsolete."""
    values: dict[str, str] = {}
    definition: str | None = None
    synonyms: list[tuple[str, str]] = []
    parents: list[tuple[str, int]] = []
    obsolete = False
    for number, tag, value in tags:
        if tag in ("id", "name"):
            values[tag] = value
        elif tag == "def":
            definition, _ = _quoted(path, number, value)
        elif tag == "synonym":
            synonyms.append(_synonym(path, number, value))
        elif tag == "is_a":
            parent = _strip_comment(value)
            if not parent:
                raise OBOFormatError(path, number, "is_a without a term id")
            parents.append((parent, number))
        elif tag == "is_obsolete":
            obsolete = value.lower() == "true"
    for required in ("id", "name"):
        if not values.get(required):
            raise OBOFormatError(path, start_line, f"[Term] stanza without {required!r}")
    if obsolete:
        return None
    term_id = _strip_comment(values["id"])
    for parent, number in parents:
        parent_lines.setdefault((term_id, parent), number)
    return Term(id=term_id, name=values["name"], definition=definition, synonyms=synonyms,
                parents=[parent for parent, _ in parents])


def _strip_comment(value: str) -> str:
    """The identifier in an id-valued tag: trailing ``! comment`` and ``{modifiers}`` removed."""
    return value.split("!", 1)[0].split("{", 1)[0].strip()


def _quoted(path: Path, number: int, value: str) -> tuple[str, str]:
    """Split ``"quoted text" rest`` into the unescaped text and the rest of the line."""
    if not value.startswith('"'):
        raise OBOFormatError(path, number, f"expected a quoted string, got {value!r}")
    quoted = _QUOTED.match(value)
    if quoted is None:
        raise OBOFormatError(path, number, "unclosed quoted string")
    return _ESCAPE.sub(lambda escape: _SPECIAL_ESCAPES.get(escape[1], escape[1]), quoted[1]), quoted[2].strip()


def _synonym(path: Path, number: int, value: str) -> tuple[str, str]:
    """Parse ``"text" SCOPE [TYPE] [xrefs]`` into ``(text, "SCOPE" or "SCOPE TYPE")``."""
    text, rest = _quoted(path, number, value)
    qualifiers = rest.split("[", 1)[0].split()
    if not qualifiers or qualifiers[0] not in _SYNONYM_SCOPES:
        raise OBOFormatError(path, number, f"synonym scope must be one of {sorted(_SYNONYM_SCOPES)}, got {rest!r}")
    return text, " ".join(qualifiers)
