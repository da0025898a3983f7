"""The Debian Administrator's Handbook retrieval set (``hyte.data.debian_handbook``): fast, and skipped without the
Debian package."""

from __future__ import annotations

import re
import shutil

import pytest

from hyte.data.debian_docs import unambiguous_pairs
from hyte.data.debian_handbook import (
    HandbookNotInstalledError,
    handbook_files,
    handbook_long_retrieval_set,
    handbook_pairs,
    handbook_retrieval_set,
    page_long_sections,
    page_sections,
)

# The shape DocBook gives the book's HTML: a section's own paragraphs are div.para children of its div.section;
# sidebars, figures and subsections hold paragraphs of their own that must not leak into it.
_PAGE = """<html><body><div class="chapter"><div class="titlepage"><div><div><h2 class="title">Chapter 8. Basic
Configuration</h2></div></div></div>
<div class="section"><div class="titlepage"><div><div><h3 class="title"><a xmlns="" id="sect.rotation-logs"></a>8.9.3.
Rotating   Log Files</h3></div></div></div><a id="id-1" class="indexterm"></a><div class="para">
  Log files can grow, <em class="replaceable">fast</em>, and the <code class="command">logrotate</code> program
  archives them (<span>see</span> below).<br/>
</div><div class="sidebar"><div class="titlepage"><div><div><p class="title"><strong>TIP</strong></p></div></div></div>
<div class="para">A sidebar paragraph, not kept.</div></div>
<div class="figure"><div class="para">A figure caption, not kept.</div></div>
<div class="para">It runs daily &amp; keeps four weeks.</div>
<div class="section"><div class="titlepage"><div><div><h4 class="title"><a id="sect.sub"></a>8.9.3.1. A Subsection
</h4></div></div></div><div class="para">The subsection's own text, long enough to be kept as a document.</div></div>
</div>
<div class="section"><div class="titlepage"><div><div><h3 class="title"><a id="sect.unnumbered"></a>Unnumbered
</h3></div></div></div><div class="para">Not a numbered section of the book, so not an item.</div></div>
</div></body></html>"""


_TAG = re.compile(r"</?[a-z][a-z0-9]*[\s>]")  # an HTML tag left in the text ("</dev/null" is not one)


@pytest.fixture(scope="module")
def files():
    try:
        return handbook_files()
    except HandbookNotInstalledError as error:
        pytest.skip(f"the Debian package debian-handbook is not installed ({error})")


def test_sections_of_a_synthetic_page():
    sections = page_sections(_PAGE)
    assert sections == [
        ("sect.rotation-logs", "Rotating Log Files",
         "Log files can grow, fast, and the logrotate program archives them (see below). It runs daily & keeps four "
         "weeks."),
        ("sect.sub", "A Subsection", "The subsection's own text, long enough to be kept as a document.")]


def test_long_sections_of_a_synthetic_page_hold_their_subsections_text_but_not_their_titles():
    long_sections = page_long_sections(_PAGE)
    assert long_sections == [
        ("sect.rotation-logs", "Rotating Log Files; A Subsection",
         "Log files can grow, fast, and the logrotate program archives them (see below). It runs daily & keeps four "
         "weeks. The subsection's own text, long enough to be kept as a document.", 1)]


def test_ambiguous_pairs_are_dropped_on_both_sides():
    pairs = {"a": ("Install", "one"), "b": ("install", "two"), "c": ("Backup", "three"), "d": ("Other", "three"),
             "e": ("Kept", "four")}
    assert unambiguous_pairs(pairs) == {"e": ("Kept", "four")}


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is not available (not a Debian-based system)")
def test_missing_package_names_the_install_command():
    with pytest.raises(HandbookNotInstalledError, match="apt-get install -y hyte-no-such-package"):
        handbook_files(packages=("hyte-no-such-package",))


def test_real_book(files):
    pairs = handbook_pairs()
    assert len(files) > 100 and len(pairs) > 400
    query, document = pairs["sect.rotation-logs"]
    assert query == "Rotating Log Files" and "logrotate" in document
    for section_id, (query, document) in pairs.items():
        assert 40 <= len(document) <= 600, section_id
        assert not _TAG.search(document) and "\n" not in document and not query[0].isdigit(), section_id
    assert len({query.casefold() for query, _ in pairs.values()}) == len(pairs)
    assert len({document for _, document in pairs.values()}) == len(pairs)


def test_set_is_seeded_and_consistent(files):
    queries, corpus, qrels = handbook_retrieval_set(max_queries=100, max_documents=200, seed=3)
    assert len(queries) == 100 and len(corpus) == 200
    assert all(relevant == {query_id: 1} and query_id in corpus for query_id, relevant in qrels.items())
    assert (queries, corpus, qrels) == handbook_retrieval_set(max_queries=100, max_documents=200, seed=3)
    assert set(handbook_retrieval_set(max_queries=100, max_documents=200, seed=4)[0]) != set(queries)


def test_long_document_set_has_several_phrase_queries_over_long_documents(files):
    queries, corpus, qrels = handbook_long_retrieval_set()
    assert len(queries) >= 60 and len(corpus) > len(queries)
    assert all(relevant == {query_id: 1} and query_id in corpus for query_id, relevant in qrels.items())
    assert all(query.count("; ") >= 2 for query in queries.values())  # the title and at least two subsections'
    assert sorted(len(document.split()) for document in corpus.values())[len(corpus) // 2] >= 250
    assert all(500 <= len(document) <= 2500 and not _TAG.search(document) for document in corpus.values())
    assert queries["sect.syslog"].startswith("syslog System Events; ") and "rsyslogd" in corpus["sect.syslog"]
    sampled, same_corpus, _ = handbook_long_retrieval_set(max_queries=20, seed=1)
    assert len(sampled) == 20 and set(sampled) <= set(queries) and same_corpus == corpus
