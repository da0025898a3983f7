"""A second general-domain retrieval set: section titles of The Debian Administrator's Handbook to their text.

Explanatory prose about running a system, from an independent source (beside the man pages of
:mod:`hyte.data.manpages`), read from the English HTML the Debian package ``debian-handbook`` installs (``apt-get
install -y debian-handbook``; found with ``dpkg -L``). One item per numbered section (``8.9.3. Rotating Log Files``):
query: its title without the number; document: its own paragraphs (not those of subsections, sidebars, figures,
examples or tables) on one line, cut to about 600 characters at a word boundary; id: its anchor
(``sect.rotation-logs``), the query's only relevant document being its own section's. Sections with a document under
40 characters are dropped, and so are all sections sharing their title (case-folded) or text with another.

The long-document set of the phrase (H+) comparison (:func:`handbook_long_retrieval_set`): one document per outermost
section (``8.9. Logging``) with its subsections' paragraphs, cut to 2,500 characters; a section with two or more
subsections also gives a query of several phrases, its title and its subsections' titles.

Licence: GPL-2.0-or-later or CC-BY-SA-3.0 (Raphaël Hertzog and Roland Mas; Debian main). HyTE ships none of its
text: it reads the installed files and keeps the set in memory; the result depends only on ``seed`` and the
installed package version.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

from .debian_docs import (
    DebianPackageMissingError,
    installed_files,
    sampled_retrieval_set,
    truncate,
    unambiguous_pairs,
)

DEFAULT_PACKAGES = ("debian-handbook",)
MAX_DOCUMENT_CHARS = 600
MIN_DOCUMENT_CHARS = 40
# The long-document set (H+): about 400-600 WordPiece tokens at most, the length the phrase comparison reads.
MAX_LONG_DOCUMENT_CHARS = 2500
MIN_LONG_DOCUMENT_CHARS = 500

_HTML_PATH = re.compile(r"^/usr/share/doc/debian-handbook/html/en-US/[^/]+\.html$")
# "8.9.3. Rotating Log Files", "A.4. Knoppix", "B.3.3. The Kernel": the number goes, the title stays.
_SECTION_NUMBER = re.compile(r"^(?:[0-9]+|[A-Z])(?:\.[0-9]+)*\.\s+")
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class HandbookNotInstalledError(DebianPackageMissingError):
    """The Debian package debian-handbook (or its HTML files) is not on this machine."""


class _SectionParser(html.parser.HTMLParser):
    """Collects ``(anchor id, numbered title, own paragraph texts)`` of every ``div.section`` of one page.

    DocBook's HTML nests a section as ``div.section > div.titlepage > ... > hN.title`` followed by its paragraphs as
    ``div.para`` children of the section itself; paragraphs inside a sidebar, figure or subsection have another
    parent, which is how they are left out.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[dict] = []
        self._stack: list[tuple[str, str, dict | None]] = []  # (tag, class, the section a div.section opened)
        self._title: dict | None = None  # the section whose title is being read
        self._para: list[str] | None = None  # the text of the section paragraph being read
        self._para_depth = 0

    def _innermost_section(self) -> dict | None:
        return next((section for _, _, section in reversed(self._stack) if section is not None), None)

    def handle_starttag(self, tag, attrs):
        if tag in _VOID_TAGS:
            return
        attributes = dict(attrs)
        css = attributes.get("class") or ""
        section = None
        if tag == "div" and css == "section":
            section = {"id": None, "title": [], "paragraphs": [], "parent": self._innermost_section()}
            self.sections.append(section)
        elif re.fullmatch(r"h[1-6]", tag) and css == "title" and self._title is None:
            owner = self._innermost_section()
            # The title of a section is inside its titlepage; a sidebar's or figure's title is not an h-element.
            if owner is not None and not owner["title"] and any(c == "titlepage" for _, c, _ in self._stack):
                self._title = owner
        elif tag == "a" and self._title is not None and attributes.get("id") and self._title["id"] is None:
            self._title["id"] = attributes["id"]
        elif tag == "div" and css == "para" and self._para is None and self._stack:
            parent_tag, parent_class, _ = self._stack[-1]
            if parent_tag == "div" and parent_class == "section":
                self._para, self._para_depth = [], len(self._stack)
        self._stack.append((tag, css, section))

    def handle_endtag(self, tag):
        if tag in _VOID_TAGS or not self._stack:
            return
        while self._stack:  # tolerate an unclosed inner element: close up to the matching tag
            open_tag, _, _ = self._stack.pop()
            if open_tag == tag:
                break
        if self._title is not None and re.fullmatch(r"h[1-6]", tag):
            self._title = None
        if self._para is not None and len(self._stack) == self._para_depth:
            self._innermost_section()["paragraphs"].append("".join(self._para))
            self._para = None

    def handle_data(self, data):
        if self._title is not None:
            self._title["title"].append(data)
        if self._para is not None:
            self._para.append(data)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _page_sections(page_html: str) -> list[dict]:
    """The sections of one page (``_SectionParser``) in page order, each with its ``query`` (the title on one line
    without its number) and whether it is ``numbered`` (an anchor and a numbered title)."""
    parser = _SectionParser()
    parser.feed(page_html)
    parser.close()
    for section in parser.sections:
        title = _one_line("".join(section["title"]))
        section.update(query=_SECTION_NUMBER.sub("", title),
                       numbered=section["id"] is not None and bool(_SECTION_NUMBER.match(title)))
    return parser.sections


def page_sections(page_html: str) -> list[tuple[str, str, str]]:
    """``(anchor id, query, document)`` of every numbered section of one handbook HTML page, in page order."""
    return [(section["id"], section["query"], truncate(_one_line(" ".join(section["paragraphs"])), MAX_DOCUMENT_CHARS))
            for section in _page_sections(page_html) if section["numbered"]]


def page_long_sections(page_html: str) -> list[tuple[str, str, str, int]]:
    """``(anchor id, query, document, subsections)`` of every outermost numbered section of one page (the book's
    "8.9." level), for the long-document set: the document is the section's own paragraphs followed by those of all
    its subsections in reading order (their titles left out, so that the query's words are not copied into it);
    the query is the section's title and its direct subsections' titles joined by "; "."""
    sections = _page_sections(page_html)
    children: dict[int, list[dict]] = {}
    for section in sections:
        if section["parent"] is not None:
            children.setdefault(id(section["parent"]), []).append(section)

    def paragraphs(section: dict) -> list[str]:
        return section["paragraphs"] + [text for child in children.get(id(section), []) for text in paragraphs(child)]

    out = []
    for section in sections:
        if section["parent"] is not None or not section["numbered"]:
            continue
        direct = [child["query"] for child in children.get(id(section), [])]
        query = "; ".join([section["query"], *filter(None, direct)])
        document = truncate(_one_line(" ".join(paragraphs(section))), MAX_LONG_DOCUMENT_CHARS)
        out.append((section["id"], query, document, len(direct)))
    return out


def handbook_files(packages=DEFAULT_PACKAGES) -> list[Path]:
    """The handbook's English HTML pages, sorted; :class:`HandbookNotInstalledError` names the install command."""
    return installed_files(packages, _HTML_PATH, HandbookNotInstalledError, "the handbook's English HTML pages",
                           "/usr/share/doc")


def handbook_pairs(packages=DEFAULT_PACKAGES) -> dict[str, tuple[str, str]]:
    """Section id -> ``(query, document)`` for every usable section, after the length and duplicate filters."""
    pairs = {}
    for path in handbook_files(packages):
        for section_id, query, document in page_sections(path.read_text(encoding="utf-8")):
            if query and len(document) >= MIN_DOCUMENT_CHARS:
                pairs.setdefault(section_id, (query, document))  # a section shown on two pages counts once
    return unambiguous_pairs(pairs)


def handbook_retrieval_set(max_queries: int | None = 300, max_documents: int | None = 2000, seed: int = 0,
                           packages=DEFAULT_PACKAGES):
    """(queries, corpus, qrels) in BEIR's in-memory shape from the installed handbook (see the module doc).

    ``queries`` and ``corpus`` map section anchors (``"sect.rotation-logs"``) to text; ``qrels`` maps each query id
    to ``{same id: 1}``; sampling as :func:`hyte.data.debian_docs.sampled_retrieval_set`.
    """
    return sampled_retrieval_set(handbook_pairs(packages), max_queries, max_documents, seed)


def handbook_long_retrieval_set(max_queries: int | None = None, seed: int = 0, min_subsections: int = 2,
                                packages=DEFAULT_PACKAGES):
    """(queries, corpus, qrels): several-phrase queries over long documents (the H+ comparison's long-document set).

    One document per outermost section of the book (:func:`page_long_sections`: hundreds of tokens, cut to
    ``MAX_LONG_DOCUMENT_CHARS``); a section with at least ``min_subsections`` subsections also gives a query, its
    title and its subsections' titles ("Logging; Rotating Log Files; Sharing Administrator Rights; ..."), relevant
    to its own document only. Every section's document is in the corpus (the others are distractors); ambiguous
    pairs are dropped as in the short set. ``max_queries`` samples queries with ``random.Random(seed)``.
    """
    pairs, subsections = {}, {}
    for path in handbook_files(packages):
        for section_id, query, document, count in page_long_sections(path.read_text(encoding="utf-8")):
            if len(document) >= MIN_LONG_DOCUMENT_CHARS and section_id not in pairs:
                pairs[section_id], subsections[section_id] = (query, document), count
    pairs = unambiguous_pairs(pairs)
    with_queries = {key: pair for key, pair in pairs.items() if subsections[key] >= min_subsections}
    queries, _, qrels = sampled_retrieval_set(with_queries, max_queries, None, seed)
    return queries, {key: document for key, (_, document) in pairs.items()}, qrels
