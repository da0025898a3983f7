"""``hyte.io``: the one atomic writer (file, folder) and the one JSONL reader of the package."""

from __future__ import annotations

import pytest

from hyte.io import (
    DataFormatError,
    atomic_directory,
    atomic_file,
    read_jsonl,
    read_texts,
    saved_directory,
    write_jsonl,
    write_text_atomically,
)


def test_a_failing_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = write_text_atomically(tmp_path / "result.json", "first\n")

    def fail(temporary):
        temporary.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_file(path, fail)
    assert path.read_text() == "first\n" and sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_a_failing_folder_write_leaves_the_previous_folder(tmp_path):
    atomic_directory(tmp_path / "index", lambda staging: (staging / "marker.json").write_text("1"), "marker.json",
                     "test folder")

    def fail(staging):
        (staging / "marker.json").write_text("2")
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        atomic_directory(tmp_path / "index", fail, "marker.json", "test folder")
    assert (saved_directory(tmp_path / "index", "marker.json", "test folder") / "marker.json").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a saved test folder"):
        atomic_directory(tmp_path / "other", lambda staging: None, ("marker.json", "index.json"), "test folder")


def test_an_unwritable_place_is_named_as_the_user_gave_it_not_by_its_temporary_name(tmp_path, monkeypatch):
    """New-user trial: --output under a read-only folder named the writer's temporary file or staging folder. (As
    the OS refuses it: these tests may run as root, who may write anywhere.)"""
    import os
    from pathlib import Path

    def refused(temporary):
        raise PermissionError(13, "Permission denied", str(temporary))

    with pytest.raises(PermissionError) as error:
        atomic_file(tmp_path / "out.npy", refused)
    assert f"cannot write {tmp_path / 'out.npy'}: its folder {tmp_path} is not writable" in str(error.value)
    assert ".tmp-" not in str(error.value)
    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if ".tmp-" in self.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(PermissionError, match=f"cannot write {tmp_path / 'index'}: its folder") as error:
        atomic_directory(tmp_path / "index", lambda staging: None, "marker.json", "test folder")
    assert ".tmp-" not in str(error.value) and not os.listdir(tmp_path)


def test_jsonl_errors_name_the_file_and_line_and_caches_may_hold_any_value(tmp_path):
    write_jsonl(tmp_path / "cache.jsonl", [["a", "b"], []])
    assert read_jsonl(tmp_path / "cache.jsonl", objects=False) == [["a", "b"], []]
    with pytest.raises(DataFormatError, match=r"cache\.jsonl, line 1: expected a JSON object, got list"):
        read_jsonl(tmp_path / "cache.jsonl")
    (tmp_path / "docs.jsonl").write_text('{"text": "a"}\n\n{"text": \n')
    with pytest.raises(DataFormatError, match=r"docs\.jsonl, line 3: not valid JSON"):
        read_texts(tmp_path / "docs.jsonl")
    with pytest.raises(FileNotFoundError, match="documents file not found"):
        read_jsonl(tmp_path / "missing.jsonl", "documents file")


@pytest.mark.parametrize("name, content, problem", [
    ("docs.csv", "id,text\n1,a\n", "unsupported file type '.csv'"),
    ("docs.txt", "first\n\nthird\n", r"docs\.txt, line 2: blank line"),
    ("docs.txt", "", "holds no texts"),
    ("docs.jsonl", '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', r"line 2: id 'a' repeats the one of line 1"),
    ("docs.jsonl", '{"id": [1], "text": "x"}\n', "the id must be a string or an integer"),
    ("docs.jsonl", '{"id": 1, "text": "  "}\n', "field 'text' must be a non-empty string"),
    ("docs.jsonl", '{"id": 1, "text": "x"}\n{"id": "1", "text": "y"}\n', r"line 2: id '1' repeats the one of line 1"),
    ("docs.jsonl", '{"id": 1, "text": "x"}\n{"text": "y"}\n', r"line 2: some lines have an id and others not"),
    ("docs.jsonl", '{"id": "a", "_id": "z", "text": "x"}\n', r"line 1: two ids, \"id\" 'a' and \"_id\" 'z'"),
    ("docs.txt", "HP:1\tSmall head.\nHP:2\tShort fingers.\n", "every line is ID<TAB>TEXT.*jsonl"),
    # A CSV file renamed .txt had its header indexed as document 0.
    ("docs.txt", "id,text\n1,Small head.\n2,Short fingers\n", r"line 1: 'id,text' is a CSV header.*jsonl"),
    ("docs.txt", '"_id";"title";"text"\n', "is a CSV header"),
])
def test_input_texts_that_would_be_accepted_silently_are_refused(tmp_path, name, content, problem):
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=problem):
        read_texts(tmp_path / name)


def test_input_texts_keep_their_ids_and_order(tmp_path):
    (tmp_path / "docs.jsonl").write_text('{"id": "b", "text": "x"}\n\n{"_id": 7, "text": "y"}\n')
    assert read_texts(tmp_path / "docs.jsonl") == (["x", "y"], ["b", 7])
    (tmp_path / "docs.txt").write_text("x\ny\n")
    assert read_texts(tmp_path / "docs.txt") == (["x", "y"], None)
    (tmp_path / "commas.txt").write_text("Text, heart and lung\nsmall,head\n")  # commas in texts are texts
    assert read_texts(tmp_path / "commas.txt") == (["Text, heart and lung", "small,head"], None)
    # A byte-order mark and Windows line ends are not part of the texts; a BEIR title goes before its text.
    (tmp_path / "bom.txt").write_bytes("\ufeffx\r\ny\r\n".encode())
    assert read_texts(tmp_path / "bom.txt") == (["x", "y"], None)
    (tmp_path / "corpus.jsonl").write_bytes('\ufeff{"_id": "d", "title": "Title", "text": "body"}\n'.encode())
    assert read_texts(tmp_path / "corpus.jsonl") == (["Title body"], ["d"])


def test_input_files_that_are_folders_or_not_utf8_are_named(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a folder"):
        read_texts(tmp_path)
    (tmp_path / "utf16.txt").write_text("short fingers\n", encoding="utf-16")
    with pytest.raises(ValueError, match=r"utf16\.txt: is not UTF-8 text .*save it as UTF-8"):
        read_texts(tmp_path / "utf16.txt")


def test_enclosing_artifact_judges_the_given_path_and_the_real_one(tmp_path):
    """The one check every output place makes: inside a model, run or index folder, directly or through a link."""
    from hyte.artifacts import enclosing_artifact

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (tmp_path / "free").mkdir()
    (model / "sub").mkdir()
    (tmp_path / "link").symlink_to(model / "sub", target_is_directory=True)  # a free place as given, not as real
    assert enclosing_artifact(tmp_path / "free" / "out.json") is None
    assert enclosing_artifact(model / "out.json") == (model, "config.json")
    assert enclosing_artifact(tmp_path / "link") == (model.resolve(), "config.json")
    assert enclosing_artifact(model) is None  # the folder itself only when itself names its kind
    assert enclosing_artifact(model, itself=("model",)) == (model, "config.json")
    assert enclosing_artifact(model / "out.json", ("run",)) is None  # only the kinds asked for


def test_the_marker_files_are_listed_once():
    """hyte.artifacts names the files hyte writes and lists each kind's markers; the package writes those names
    nowhere else, except the remote-code files (they travel without hyte), whose copy must match."""
    import ast
    from pathlib import Path

    from hyte import artifacts, sentence_transformers_hyte

    assert sentence_transformers_hyte._NOT_A_MODEL_FOLDER == artifacts.markers(*artifacts.NOT_MODELS)
    assert len(set(artifacts.markers())) == len(artifacts.markers())  # no file marks two kinds
    assert all(set(kind.markers) <= set(kind.entries) for kind in artifacts.KINDS.values() if kind.entries)
    names = {getattr(artifacts, constant) for constant in artifacts.__all__ if constant.endswith(("_FILE", "MANIFEST"))}
    assert {"run.json", "index.json", "manifest.json", "documents.jsonl"} <= names
    source = Path(artifacts.__file__).parent
    remote_code = {"modeling_hyte.py", "sentence_transformers_hyte.py", "modeling_hyte_phrase.py"}
    written_out = [f"{path.relative_to(source)}:{node.lineno} {node.value!r}"
                   for path in sorted(source.rglob("*.py")) if path.name not in remote_code | {"artifacts.py"}
                   for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.Constant) and node.value in names]
    assert not written_out, f"import these names from hyte.artifacts instead: {written_out}"


@pytest.mark.parametrize("kind", ["model", "adapter", "checkpoint", "run", "index", "vectors", "postgres"])
def test_each_marker_marks_its_kind_only(tmp_path, kind):
    from hyte.artifacts import ALL_KINDS, KINDS, artifact_marker, holds

    for marker in KINDS[kind].markers:
        folder = tmp_path / marker
        folder.mkdir()
        (folder / marker).write_text("{}")
        assert artifact_marker(folder) == marker
        assert [other for other in ALL_KINDS if holds(folder, other)] == [kind]


def test_library_writers_claim_their_output_through_hyte_artifacts(tmp_path):
    """A report, a BEIR folder, a vocabulary and corpus vectors written inside a model folder would be shipped with
    it by hyte push: each writer refuses the place before any work, and writes nothing."""
    from hyte.artifacts import OutputRefused
    from hyte.corpus import encode_corpus
    from hyte.data.hpo import write_beir_folder
    from hyte.report.build import check_report_output
    from hyte.training.vocabulary import train_wordpiece

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    writers = {"report": lambda: check_report_output(model / "B.md"),
               "beir": lambda: write_beir_folder(model / "beir", {"q": "x"}, {"d": "y"}, {"q": {"d": 1}}),
               "vocabulary": lambda: train_wordpiece(["a b c"], model / "vocabulary", vocab_size=120),
               "vectors": lambda: encode_corpus(tmp_path / "no-model", tmp_path / "no-corpus.txt", model / "vectors")}
    for name, write in writers.items():
        with pytest.raises(OutputRefused, match="lies inside a model folder"):
            write()
    assert sorted(path.name for path in model.iterdir()) == ["config.json"]
