"""write_beir_folder refuses exactly the sets load_beir refuses, in the reader's words (both check through
hyte.data.beir's check_records / add_judgement / check_judged)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hyte.data.beir import BEIRFormatError, load_beir
from hyte.data.hpo import write_beir_folder

QUERIES = {"q0": "short fingers", "q1": "a small head"}
CORPUS = {"d0": "Short fingers.", "d1": "A small head."}
QRELS = {"q0": {"d0": 1}, "q1": {"d1": 1}}


def write_unchecked(folder: Path, queries: dict, corpus: dict, qrels: dict) -> Path:
    """The files write_beir_folder wrote before it checked anything."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                                 for k, v in corpus.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{score}\n" for q, judged in qrels.items() for d, score in judged.items()))
    return folder


@pytest.mark.parametrize("change, problem", [
    # Ids the qrels file cannot name: the tab split the line into 4 columns, the line break into two lines, and the
    # reader strips white space from a qrels column.
    ({"queries": {"q\t0": "short fingers", "q1": "a small head"}, "qrels": {"q\t0": {"d0": 1}, "q1": {"d1": 1}}},
     "id 'q\\t0' holds a tab or a line break"),
    ({"corpus": {"d\n0": "Short fingers.", "d1": "A small head."}, "qrels": {"q0": {"d\n0": 1}, "q1": {"d1": 1}}},
     "id 'd\\n0' holds a tab or a line break"),
    ({"corpus": {"d0 ": "Short fingers.", "d1": "A small head."}, "qrels": {"q0": {"d0 ": 1}, "q1": {"d1": 1}}},
     "id 'd0 ' holds a tab or a line break, or white space around it"),
    ({"corpus": {"": "Short fingers.", "d1": "A small head."}}, 'missing or empty "_id" field'),
    ({"corpus": {1: "Short fingers.", "1": "A small head."}}, "duplicate id '1'"),  # both "1" on reading
    # Values of the wrong kind.
    ({"corpus": {"d0": {"title": "Fingers", "text": "Short fingers."}, "d1": "A small head."}},
     '"text" must be a string (id d0); got dict'),
    ({"queries": {"q0": "  ", "q1": "a small head"}}, '"text" is empty (id q0)'),
    ({"corpus": {"d0": " ", "d1": "A small head."}}, '"title" and "text" are empty (id d0)'),
    ({"queries": {"q0": None, "q1": "a small head"}}, '"text" must be a string (id q0); got NoneType'),
    ({"corpus": {}}, "the corpus is empty"),
    # Scores: the file holds integers >= 0, and at least one > 0.
    ({"qrels": {"q0": {"d0": 0.5}, "q1": {"d1": 1}}}, "score must be an integer, got '0.5'"),
    ({"qrels": {"q0": {"d0": 1.0}, "q1": {"d1": 1}}}, "score must be an integer, got '1.0'"),
    ({"qrels": {"q0": {"d0": True}, "q1": {"d1": 1}}}, "score must be an integer, got 'True'"),
    ({"qrels": {"q0": {"d0": -1}, "q1": {"d1": 1}}}, "score -1 is negative"),
    ({"qrels": {"q0": {"d0": 0}, "q1": {"d1": 0}}}, "nothing is relevant"),
    ({"qrels": {}}, "no relevance judgements"),
])
def test_the_writer_refuses_what_the_reader_refuses_in_its_words(tmp_path, change, problem):
    data = {"queries": QUERIES, "corpus": CORPUS, "qrels": QRELS, **change}
    with pytest.raises(BEIRFormatError) as refused:
        load_beir(write_unchecked(tmp_path / "unchecked", **data))
    assert problem in refused.value.problem
    with pytest.raises(ValueError, match=f"^write_beir_folder: .*: {re.escape(refused.value.problem)}$"):
        write_beir_folder(tmp_path / "checked", **data)
    assert not (tmp_path / "checked").exists()  # refused before anything is written


def test_what_the_writer_accepts_reads_back(tmp_path):
    queries, corpus, qrels = load_beir(write_beir_folder(tmp_path / "ok", {1: "short fingers"}, {2: "Short fingers.",
                                                                                                "d 3": "Other."},
                                                         {1: {2: 1, "d 3": 0}}))
    assert queries == {"1": "short fingers"} and corpus == {"2": "Short fingers.", "d 3": "Other."}
    assert qrels == {"1": {"2": 1, "d 3": 0}}  # number ids come back as the reader keys them, as text


def test_a_query_without_judgements_and_containers_of_the_wrong_kind_are_refused(tmp_path):
    # The file cannot hold an empty judgement dict: the query was written, then dropped on reading without a word.
    unchecked = write_unchecked(tmp_path / "unchecked", QUERIES, CORPUS, {"q0": {}, "q1": {"d1": 1}})
    assert set(load_beir(unchecked)[0]) == {"q1"}
    with pytest.raises(ValueError, match=r"qrels\['q0'\] must be a non-empty dict .*got \{\}"):
        write_beir_folder(tmp_path / "empty", QUERIES, CORPUS, {"q0": {}, "q1": {"d1": 1}})
    with pytest.raises(ValueError, match=r"qrels\['q0'\] must be a non-empty dict .*got \['d0'\]"):
        write_beir_folder(tmp_path / "list", QUERIES, CORPUS, {"q0": ["d0"]})  # was "'list' has no attribute 'items'"
    with pytest.raises(TypeError, match="corpus must be a dict {id: ...}; got list$"):
        write_beir_folder(tmp_path / "texts", QUERIES, list(CORPUS.values()), QRELS)


def test_eleventh_trial_beir_mistakes_are_named(tmp_path):
    """Found by the eleventh new-user trial: a document without title and text failed in the encoder, after the model
    loaded, naming neither file nor id; a split given as its file name read qrels/test.tsv.tsv; paths of
    the wrong kind were "not found"."""
    from hyte.data.beir import check_split

    folder = write_unchecked(tmp_path / "beir", QUERIES, {"d0": "Short fingers.", "d1": " "}, QRELS)
    with pytest.raises(BEIRFormatError, match=r'corpus.jsonl, line 2: "title" and "text" are empty \(id d1\)'):
        load_beir(folder)
    with pytest.raises(ValueError, match=r"split 'test.tsv' is the file's name.* pass 'test'$"):
        check_split("test.tsv")
    with pytest.raises(ValueError, match="pass 'test'"):
        write_beir_folder(tmp_path / "out", QUERIES, CORPUS, QRELS, split="test.tsv")

    folder = write_unchecked(tmp_path / "ok", QUERIES, CORPUS, QRELS)
    (folder / "qrels" / "test.tsv").unlink()
    (folder / "qrels" / "test.tsv").mkdir()
    with pytest.raises(IsADirectoryError, match=r"test.tsv is a folder, not a file"):
        load_beir(folder)
    with pytest.raises(NotADirectoryError, match=rf"BEIR folder .*corpus.jsonl is a file where a folder is needed: "
                                                 rf".*\(if this is one of its files: {re.escape(str(folder))}\)"):
        load_beir(folder / "corpus.jsonl")
