"""The man-pages retrieval set (``hyte.data.manpages``): fast, and skipped without the Debian packages."""

from __future__ import annotations

import gzip
import re
import shutil

import pytest

from hyte.data.manpages import (
    ManpagesNotInstalledError,
    manpage_files,
    manpage_pairs,
    manpages_retrieval_set,
    page_pair,
)

# A roff escape or request left in the plain text would show as one of these.
_ROFF_LEFTOVER = re.compile(r"\\[fs*(\[&\-e\"|^~:%]|\\$|\x00")


@pytest.fixture(scope="module")
def files():
    try:
        return manpage_files()
    except ManpagesNotInstalledError as error:
        pytest.skip(f"the Debian packages manpages / manpages-dev are not installed ({error})")


@pytest.fixture(scope="module")
def full_set(files):
    return manpages_retrieval_set(max_queries=None, max_documents=None)


def test_roff_conversion_of_a_synthetic_page():
    source = "\n".join([
        '.\\" SPDX-License-Identifier: Linux-man-pages-copyleft',
        '.TH demo 2 2023-01-01 "Linux man-pages 6.03"',
        ".SH NAME",
        "demo, demo2 \\- make a \\fBdemo\\fP \\(em quickly",
        ".SH SYNOPSIS",
        ".B int demo(void);",
        ".SH DESCRIPTION",
        ".BR demo ()",
        "creates a",
        '.I "new demo"',
        "for the calling process \\e0 (see",
        ".BR fork (2)).  \\\" a trailing comment",
        "It uses \\f[B]bold\\f[] text\\-only, \\[lq]quotes\\[rq] and \\*(lqmore\\*(rq.",
        ".PP",
        "Second paragraph, not kept.",
    ])
    query, document = page_pair(source)
    assert query == "make a demo \u2014 quickly"
    assert document == ("demo() creates a new demo for the calling process \\0 (see fork(2)). It uses bold text-only, "
                        "\u201cquotes\u201d and \u201cmore\u201d.")


def test_leading_tagged_items_are_kept_with_their_body():
    source = "\n".join([".SH NAME", "x \\- copy a string", ".SH DESCRIPTION", ".TP", ".BR stpcpy ()", ".TQ",
                        ".BR strcpy ()", "These functions copy the string.", ".TP", ".BR strcat ()", "Not kept."])
    assert page_pair(source) == ("copy a string", "stpcpy() strcpy() These functions copy the string.")


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is not available (not a Debian-based system)")
def test_missing_packages_name_the_install_command():
    with pytest.raises(ManpagesNotInstalledError, match="apt-get install -y"):
        manpage_files(packages=("hyte-no-such-package",))


def test_files_are_real_pages(files):
    assert len(files) > 500
    assert all(path.name.endswith(".gz") and not path.is_symlink() for path in files)
    assert files == sorted(files)
    for path in files[:50]:
        text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        assert not text.lstrip().startswith(".so ")


def test_set_builds_with_consistent_ids(files):
    queries, corpus, qrels = manpages_retrieval_set(max_queries=200, max_documents=400, seed=3)
    assert len(queries) == 200 and len(corpus) == 400
    assert set(qrels) == set(queries)
    for query_id, relevant in qrels.items():
        assert relevant == {query_id: 1}
        assert query_id in corpus
    assert all(re.fullmatch(r"[^()\s]+\([0-9][a-z]*\)", page_id) for page_id in corpus)
    assert all(text.strip() for text in queries.values())


def test_default_set(files):
    queries, corpus, qrels = manpages_retrieval_set()
    assert len(queries) == min(500, len(manpage_pairs()))
    assert all(doc in corpus for relevant in qrels.values() for doc in relevant)


def test_known_pages(full_set):
    queries, corpus, qrels = full_set
    assert queries["pipe(2)"] == "create pipe"
    assert "unidirectional data channel" in corpus["pipe(2)"]
    assert queries["socket(2)"] == "create an endpoint for communication"
    # fork(2) parses fine, but clone(2) has the same query ("create a child process"): both are dropped.
    fork = next(path for path in manpage_files() if path.name == "fork.2.gz")
    query, document = page_pair(gzip.decompress(fork.read_bytes()).decode())
    assert "create a child process" in query and "process" in document
    assert "fork(2)" not in queries and "clone(2)" not in queries


def test_documents_are_plain_one_line_text(full_set):
    queries, corpus, qrels = full_set
    assert len(queries) == len(corpus) == len(qrels) > 500
    for page_id, document in corpus.items():
        assert 40 <= len(document) <= 600, page_id
        assert "\n" not in document and not document.startswith((".", "'")), page_id
        assert not _ROFF_LEFTOVER.search(document), (page_id, document)
        assert not _ROFF_LEFTOVER.search(queries[page_id]), (page_id, queries[page_id])
    assert len(set(corpus.values())) == len(corpus)
    assert len({query.casefold() for query in queries.values()}) == len(queries)


def test_same_seed_same_set(files):
    first = manpages_retrieval_set(max_queries=100, max_documents=300, seed=7)
    assert first == manpages_retrieval_set(max_queries=100, max_documents=300, seed=7)
    other = manpages_retrieval_set(max_queries=100, max_documents=300, seed=8)
    assert set(other[0]) != set(first[0])
