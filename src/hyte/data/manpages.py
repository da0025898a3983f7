"""A general-domain retrieval set from the Linux man pages: does a model tuned on medical ontologies still work here?

Built from the pages of the Debian packages ``manpages`` and ``manpages-dev`` (``apt-get install -y manpages
manpages-dev``), read from the installed files (``dpkg -L``). One item per page:

* query: the one-line description of the NAME section, the text after ``\\-`` (``pipe(2)``: "create pipe");
* document: the first paragraph of the DESCRIPTION section as plain text (roff stripped by a small pure-Python
  converter, joined into one line, cut to about 600 characters at a word boundary);
* id: ``name(section)`` from the file name (``pipe(2)``); the query's only relevant document is its own page's.

Alias pages (symbolic links, ``.so`` redirects) are left out; so are pages with an empty query or a document under
40 characters, and all pages sharing their query or document text with another (ambiguous qrels). The result
depends only on ``seed`` and the installed package versions.

Licence: a mix of mostly free licences, named by each page's SPDX line (Debian ships both packages in main). HyTE
ships none of their text: it reads the installed files at run time and keeps the set in memory.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from .debian_docs import (
    DebianPackageMissingError,
    installed_files,
    sampled_retrieval_set,
    truncate,
    unambiguous_pairs,
)

DEFAULT_PACKAGES = ("manpages", "manpages-dev")
MAX_DOCUMENT_CHARS = 600
MIN_DOCUMENT_CHARS = 40

# /usr/share/man/man2/fork.2.gz, /usr/share/man/man3/size_t.3type.gz; not translations (/usr/share/man/de/...).
_PAGE_PATH = re.compile(r"^/usr/share/man/man[0-9][^/]*/(?P<name>[^/]+)\.(?P<section>[0-9][a-z]*)\.gz$")


class ManpagesNotInstalledError(DebianPackageMissingError):
    """The Debian man-pages packages (or their files) are not on this machine."""


def _is_redirect(text: str) -> bool:
    lines = [line for line in text.splitlines()
             if line.strip() and not line.startswith(('.\\"', "'\\\"")) and line.strip() != "."]
    return bool(lines) and all(line.startswith(".so ") for line in lines)


def _read_page(path: Path) -> tuple[Path, str] | None:
    if path.is_symlink() or not path.is_file():  # Debian's form of an alias (.so) page, or a filtered-out file
        return None
    text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    return None if _is_redirect(text) else (path, text)


def _read_pages(packages) -> list[tuple[Path, str]]:
    return installed_files(packages, _PAGE_PATH, ManpagesNotInstalledError, "their man page files", "/usr/share/man",
                           _read_page)


def manpage_files(packages=DEFAULT_PACKAGES) -> list[Path]:
    """The man page files (gz-compressed roff) of the Debian ``packages``, sorted; alias and ``.so`` pages skipped.

    Raises :class:`ManpagesNotInstalledError` (naming the ``apt-get install`` command) when they are missing.
    """
    return [path for path, _ in _read_pages(tuple(packages))]


# --- roff to plain text -------------------------------------------------------------------------------------------

_SPECIAL_CHARACTERS = {
    "em": "\u2014", "en": "\u2013", "hy": "-", "mi": "-", "bu": "\u2022", "aq": "'", "dq": '"', "lq": "\u201c",
    "rq": "\u201d", "oq": "\u2018", "cq": "\u2019", "ga": "`", "aa": "\u00b4", "ha": "^", "ti": "~", "rs": "\\",
    "sl": "/", "ba": "|", "br": "|", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "mu": "\u00d7",
    "di": "\u00f7", "+-": "\u00b1", "<=": "\u2264", ">=": "\u2265", "!=": "\u2260", "==": "\u2261",
    "->": "\u2192", "<-": "\u2190", "ua": "\u2191", "da": "\u2193", "de": "\u00b0", "dg": "\u2020",
    "lh": "\u261c", "rh": "\u261e", "Tm": "\u2122", "R": "\u00ae", "ss": "\u00df", "ul": "_", "ru": "_",
    "em-dash": "\u2014", "pc": "\u00b7", "at": "@", "sh": "#", "Do": "$", "eu": "\u20ac", "Eu": "\u20ac",
    "fm": "\u2032", "sd": "\u2033", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "\u27e8", "ra": "\u27e9",
    "tno": "\u00ac", "no": "\u00ac", "if": "\u221e", "*a": "\u03b1", "*b": "\u03b2", "*m": "\u03bc",
    "*p": "\u03c0", "12": "\u00bd", "14": "\u00bc", "34": "\u00be", "S2": "\u00b2", "S3": "\u00b3",
    ":a": "\u00e4", ":o": "\u00f6", ":u": "\u00fc", ":A": "\u00c4", ":O": "\u00d6", ":U": "\u00dc",
    "'e": "\u00e9", "`e": "\u00e8", "'a": "\u00e1", "`a": "\u00e0", "'o": "\u00f3", "'i": "\u00ed",
    "'E": "\u00c9", ",c": "\u00e7", "~n": "\u00f1", "oa": "\u00e5", "/o": "\u00f8",
}
_STRINGS = {"lq": "\u201c", "rq": "\u201d", "R": "\u00ae", "Tm": "\u2122", "(Tm": "\u2122"}

# One roff escape per match, tried left to right.
_ESCAPE = re.compile(
    r"""\\(?:
        (?P<font>f(?:\[[^\]]*\]|\([A-Za-z0-9]{2}|.))             # \fB \f(CW \f[B]
      | (?P<size>s(?:\[[^\]]*\]|\([+-]?[0-9]{2}|[+-]?[0-9]))     # \s-1 \s0 \s(12 \s[+2]
      | (?P<special>\((?P<two>..)|\[(?P<bracket>[^\]]*)\])      # \(em \[em] \[u00E9]
      | (?P<string>\*(?:\[(?P<sb>[^\]]*)\]|\((?P<s2>..)|(?P<s1>.)))  # \*(lq \*R \*[name]
      | (?P<quoted>[hvwoXlLbDNRxZSBAY]'[^']*')                  # \h'...' \w'...' \X'...' etc.
      | (?P<register>[nmgkVM$](?:\[[^\]]*\]|\(..|.))            # \n(xx \m[red] \$1
      | (?P<other>.)                                            # one-character escapes
    )""",
    re.VERBOSE | re.DOTALL,
)
_ONE_CHARACTER = {"e": "\\", "\\": "\\", "-": "-", " ": " ", "~": " ", "0": " ", "t": " ", "'": "\u00b4",
                  "`": "`", ".": ".", "_": "_", "%": "", "&": "", "|": "", "^": "", ":": "", ")": "", "/": "",
                  ",": "", "c": "", "z": "", "{": "", "}": "", "d": "", "u": "", "r": "", "p": "", "a": "",
                  "E": "\\", "!": ""}


def _replace_escape(match: re.Match) -> str:
    if match.group("font") or match.group("size") or match.group("quoted") or match.group("register"):
        return ""
    if match.group("special"):
        name = match.group("two") if match.group("two") is not None else match.group("bracket")
        if name.startswith("u") and len(name) >= 5 and all(c in "0123456789ABCDEFabcdef" for c in name[1:]):
            return chr(int(name[1:], 16))
        if name.startswith("char") and name[4:].isdigit():
            return chr(int(name[4:]))
        return _SPECIAL_CHARACTERS.get(name, "")
    if match.group("string"):
        name = match.group("sb") or match.group("s2") or match.group("s1")
        return _STRINGS.get(name, "")
    return _ONE_CHARACTER.get(match.group("other"), "")


def _plain(text: str) -> str:
    """roff escapes in one line of text replaced by their characters (fonts, sizes, motions dropped)."""
    return _ESCAPE.sub(_replace_escape, text)


# The text before a comment, read escape by escape (so that in ``\\"`` the quote starts none), and the comment's kind.
_COMMENT = re.compile(r'((?:[^\\]|\\[^"#])*)\\(["#])', re.DOTALL)


def _strip_comment(line: str) -> str:
    """``line`` without a ``\\"`` or ``\\#`` comment (an escaped backslash ``\\\\`` does not start one)."""
    comment = _COMMENT.match(line)
    if comment is None:
        return line
    return comment[1].rstrip() if comment[2] == '"' else comment[1]


# A request's argument: a ``"..."`` group (``""`` inside is a quote; an unclosed one runs to the end) and what
# follows it up to a blank, or a run of non-blanks; an escape (backslash and the next character) is never split.
_ARGUMENT = re.compile(r'"((?:\\.|""|[^"\\]|\\$)*)"?((?:\\.|[^ \t\\]|\\$)*)|(?:\\.|[^ \t\\]|\\$)+', re.DOTALL)
_QUOTED_CHARACTER = re.compile(r'\\.|""', re.DOTALL)


def _arguments(text: str) -> list[str]:
    """A request's arguments, split at unescaped blanks (``_ARGUMENT``)."""
    return [_QUOTED_CHARACTER.sub(lambda m: '"' if m[0] == '""' else m[0], found[1]) + found[2]
            if found[1] is not None else found[0] for found in _ARGUMENT.finditer(text)]


_FONT_JOINED = {"BR", "RB", "IR", "RI", "BI", "IB"}  # alternating fonts: the arguments run together
_FONT_SPACED = {"B", "I", "SM", "SB", "R"}
_PARAGRAPH = {"PP", "LP", "P", "IP", "TP", "TQ", "HP", "SS", "SH", "sp", "ns"}
_BLOCK_END = {"nf": {"fi"}, "EX": {"EE"}, "TS": {"TE"}, "EQ": {"EN"}, "de": {".."}, "ig": {".."}}


# A control line: its control character, blanks, the request's name, then its arguments after a blank.
_REQUEST = re.compile(r"[.'][ \t]*([^ \t]*)[ \t]?(.*)", re.DOTALL)


def _request(line: str) -> tuple[str, str] | None:
    """``(name, rest)`` for a control line (``.B text``, ``'br``), else None."""
    request = _REQUEST.match(line)
    return None if request is None else (request[1], request[2].strip())


def _sections(text: str) -> dict[str, list[str]]:
    """Section name (upper case) -> its logical lines (comments removed), first occurrence of each name."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    # A line ending in an unescaped backslash continues on the next (an escaped newline).
    for line in re.sub(r"(?<!\\)\\(?:\n|\Z)", "", "\n".join(text.splitlines())).split("\n"):
        if line.startswith(('.\\"', "'\\\"", ".\\#")):
            continue
        line = _strip_comment(line)
        request = _request(line)
        if request is not None and request[0] == "SH":
            name = " ".join(_plain(arg) for arg in _arguments(request[1])).strip().upper()
            current = None if name in sections else sections.setdefault(name, [])
            continue
        if current is not None:
            current.append(line)
    return sections


def _text_of(request: tuple[str, str] | None, line: str) -> str | None:
    """The plain text a line contributes, or None for a request that contributes none."""
    if request is None:
        return _plain(line)
    name, rest = request
    if name in _FONT_JOINED:
        return _plain("".join(_arguments(rest)))
    if name in _FONT_SPACED:
        return _plain(" ".join(_arguments(rest)))
    if name in {"UE", "ME"}:  # trailing punctuation after a hyperlink, attached without a space
        return "\0" + _plain("".join(_arguments(rest)))
    return None


def _join(pieces: list[str]) -> str:
    text = " ".join(piece for piece in pieces if piece)
    text = text.replace(" \0", "").replace("\0", "")
    return re.sub(r"\s+", " ", text).strip()


def _query(name_lines: list[str]) -> str:
    """The text after the first ``\\-`` of the NAME section ("fork \\- create a child process"), else after " - "."""
    start = next((i for i, line in enumerate(name_lines) if "\\-" in line), None)
    if start is not None:
        return _join([_plain(name_lines[start].split("\\-", 1)[1]),
                      *(_text_of(_request(line), line) or "" for line in name_lines[start + 1:])])
    whole = _join([_text_of(_request(line), line) or "" for line in name_lines])
    _, dash, description = whole.partition(" - ")
    return description.strip() if dash else ""


def _first_paragraph(lines: list[str]) -> str:
    pieces: list[str] = []
    body = False  # text beyond the tags of leading .TP / .TQ items
    expect_tag = False
    skip_until: set[str] | None = None
    conditional_depth = 0
    for line in lines:
        request = _request(line)
        if skip_until is not None:
            if request is not None and (request[0] in skip_until or (".." in skip_until and line.strip() == "..")):
                skip_until = None
            continue
        if conditional_depth:
            conditional_depth += line.count("\\{") - line.count("\\}")
            continue
        if request is None:
            if line.strip():
                pieces.append(_plain(line))
                body, expect_tag = body or not expect_tag, False
            elif pieces:  # a blank line is a paragraph break
                break
            continue
        name = request[0]
        if name in {"if", "ie", "el"}:  # conditionals: rare in man pages, left out (with their \{ ... \} block)
            conditional_depth = max(0, line.count("\\{") - line.count("\\}"))
            continue
        if name in _PARAGRAPH or name in _BLOCK_END:
            if any(pieces) and (body or name not in {"TP", "TQ"}):
                break
            if name in {"TP", "TQ"}:  # a leading tagged item ("stpcpy() strcpy() These functions copy ..."): kept
                expect_tag = True
            if name in _BLOCK_END:  # a display before any text (a code example, a table): skipped
                skip_until = _BLOCK_END[name]
            continue
        text = _text_of(request, line)
        if text is not None:
            pieces.append(text)
            body, expect_tag = body or not expect_tag, False
    return _join(pieces)


def page_pair(text: str) -> tuple[str, str]:
    """``(query, document)`` of one page's roff source: NAME description and first DESCRIPTION paragraph."""
    sections = _sections(text)
    document = truncate(_first_paragraph(sections.get("DESCRIPTION", [])), MAX_DOCUMENT_CHARS)
    return _query(sections.get("NAME", [])), document


def manpage_pairs(packages=DEFAULT_PACKAGES) -> dict[str, tuple[str, str]]:
    """Page id -> ``(query, document)`` for every usable page, after the emptiness, length and duplicate filters."""
    pairs = {}
    for path, text in _read_pages(tuple(packages)):
        query, document = page_pair(text)
        if query and len(document) >= MIN_DOCUMENT_CHARS:
            page = _PAGE_PATH.match(path.as_posix())  # the page id: "fork(2)"
            pairs[f"{page['name']}({page['section']})"] = (query, document)
    return unambiguous_pairs(pairs)


def manpages_retrieval_set(max_queries: int | None = 500, max_documents: int | None = 2000, seed: int = 0,
                           packages=DEFAULT_PACKAGES):
    """(queries, corpus, qrels) in BEIR's in-memory shape from the installed Linux man pages (see the module doc).

    ``queries`` and ``corpus`` map page ids (``"fork(2)"``) to text; ``qrels`` maps each query id to
    ``{same id: 1}``; sampling as :func:`hyte.data.debian_docs.sampled_retrieval_set`.
    """
    return sampled_retrieval_set(manpage_pairs(packages), max_queries, max_documents, seed)
