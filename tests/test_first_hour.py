"""What a new user meets in the first hour (issue 12): FAISS results in the geometry helpers, model names on the
command line, config errors, and a ``hyte --help`` that answers at once."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest
import torch

from hyte import lorentz as L
from hyte.cli import build_parser, main

# ----------------------------------------------------------------------------------------------------------------
# The lorentz helpers take what FAISS returns (NumPy) and give NumPy back
# ----------------------------------------------------------------------------------------------------------------


def test_lorentz_helpers_take_faiss_results_and_return_numpy():
    torch.manual_seed(0)
    documents = L.expmap0(torch.randn(20, 8)).numpy()
    queries = L.expmap0(torch.randn(3, 8)).numpy()
    index = faiss.IndexFlatIP(documents.shape[1])
    index.add(documents)
    scores, ids = index.search(L.flip_time(queries), 5)

    distances = L.distance_from_inner(scores)
    assert isinstance(distances, np.ndarray) and distances.dtype == np.float32
    expected = L.pairwise_distance(torch.from_numpy(queries), torch.from_numpy(documents)).numpy()
    np.testing.assert_allclose(distances, np.take_along_axis(expected, ids, axis=1), rtol=1e-4, atol=1e-4)
    assert (np.diff(distances, axis=1) >= 0).all()  # FAISS's order is the geodesic order

    read_only = documents.copy()
    read_only.setflags(write=False)  # as np.load(..., mmap_mode="r") gives them
    for result in (L.radius(read_only), L.distance_to_origin(read_only), L.pairwise_distance(queries, read_only)):
        assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(L.distance_to_origin(documents), L.distance_to_origin(torch.from_numpy(documents)))
    assert isinstance(L.distance_from_inner(torch.from_numpy(scores)), torch.Tensor)  # tensors stay tensors


# ----------------------------------------------------------------------------------------------------------------
# Model names: the aliases of the YAML configs, and unknown names that fail at once
# ----------------------------------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_cli_takes_the_bundled_alias_of_the_configs(tmp_path, minilm_path, capsys):
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    documents = {"d1": "Abnormally long and slender fingers.", "d2": "An abnormal rhythm of the heart beat."}
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in documents.items()))
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "irregular heartbeat"}) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    assert main(["eval", "retrieval", "--model", "bundled:all-MiniLM-L6-v2", "--data", str(data), "--k", "1"]) == 0
    assert "ndcg" in capsys.readouterr().out

    (tmp_path / "texts.txt").write_text("short fingers\n")
    assert main(["encode", "--model", "bundled:all-MiniLM-L6-v2", "--input", str(tmp_path / "texts.txt"),
                 "--output", str(tmp_path / "v.npy")]) == 0
    assert np.load(tmp_path / "v.npy").shape == (1, 384)


def test_unknown_model_name_is_one_line_error(tmp_path, capsys):
    (tmp_path / "texts.txt").write_text("short fingers\n")
    command = ["encode", "--input", str(tmp_path / "texts.txt"), "--output", str(tmp_path / "v.npy"), "--model"]
    assert main([*command, "no-such-model"]) == 2  # the tests run with HF_HUB_OFFLINE=1
    assert "'no-such-model'" in _one_line(capsys.readouterr().err)
    assert main([*command, "bundled:no-such-model"]) == 2
    assert "bundled:all-MiniLM-L6-v2" in _one_line(capsys.readouterr().err)
    assert main([*command, str(tmp_path / "missing")]) == 2
    assert "missing does not exist" in _one_line(capsys.readouterr().err)


def test_unknown_model_name_with_the_hub_unreachable_fails_without_retries(tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as free:  # a port nothing listens on: connections are refused at once
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    (tmp_path / "texts.txt").write_text("short fingers\n")
    assert main(["encode", "--model", "no-such-model", "--input", str(tmp_path / "texts.txt"),
                 "--output", str(tmp_path / "v.npy")]) == 2
    assert "the Hub cannot be reached" in _one_line(capsys.readouterr().err)


# ----------------------------------------------------------------------------------------------------------------
# Config errors: one line that names the file (or --set) and the field, exit status 2
# ----------------------------------------------------------------------------------------------------------------

def _train_error(tmp_path, capsys, text: str, *options: str) -> str:
    config = tmp_path / "run.yaml"
    config.write_text(text)
    assert main(["train", "contrastive", "--config", str(config), *options]) == 2
    return _one_line(capsys.readouterr().err)


def test_yaml_syntax_error_names_file_and_line(tmp_path, capsys):
    error = _train_error(tmp_path, capsys, "stage: contrastive\nmodel: {build: hyte_fh\ntraining: {max_steps: 3}\n")
    assert "run.yaml, line 3, column 9: invalid YAML" in error


def test_wrongly_typed_value_names_file_and_field(tmp_path, capsys):
    error = _train_error(tmp_path, capsys, 'stage: contrastive\ntraining:\n  max_steps: "a lot"\n')
    assert "run.yaml: training.max_steps must be an integer; got 'a lot'" in error


def test_invalid_curvature_is_one_line_naming_file_and_field(tmp_path, capsys, minilm_path):
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"query": "q", "document": "d"}) + "\n")
    text = ("stage: contrastive\nmodel:\n  build: hyte_fh\n"
            "  options: {hidden_size: 33, num_hidden_layers: 1, num_attention_heads: 3, curvature: -1}\n"
            f"data: {{source: jsonl, path: {tmp_path / 'pairs.jsonl'}}}\n"
            f"training: {{output_dir: {tmp_path / 'out'}}}\nevaluation: {{enabled: false}}\n")
    error = _train_error(tmp_path, capsys, text)
    assert "run.yaml: model.options: curvature must be a finite number > 0" in error
    assert not (tmp_path / "out").exists()


def test_bad_set_key_blames_set_not_the_file(tmp_path, capsys):
    text = "stage: contrastive\ntraining: {max_steps: 3}\n"
    error = _train_error(tmp_path, capsys, text, "--set", "traning.max_steps=5")
    assert error.startswith("hyte train: error: --set traning.max_steps: unknown section 'traning'")
    error = _train_error(tmp_path, capsys, text, "--set", "training.max_step=5")
    assert error.startswith("hyte train: error: --set: unknown field training.max_step;")
    error = _train_error(tmp_path, capsys, text, "--set", "training.max_steps=many")
    assert error.startswith("hyte train: error: --set: training.max_steps must be an integer")


# ----------------------------------------------------------------------------------------------------------------
# hyte --help: no heavy imports, every default shown
# ----------------------------------------------------------------------------------------------------------------


def test_help_and_option_errors_import_no_heavy_library():
    code = (
        "import sys\n"
        "from hyte.cli import main\n"
        "for argv in (['--help'], ['train', 'finetune', '--help'], ['eval', 'retrieval', '--help'], ['push', '-h'],\n"
        "             ['encode'], ['index', 'build', '--kind', 'hnsw-ip']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ('torch', 'transformers', 'faiss', 'sentence_transformers', 'datasets', 'huggingface_hub', 'numpy')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_help_shows_its_default():
    checked = 0
    for parser in _parsers(build_parser()):
        for action in parser._actions:
            if (not action.option_strings or isinstance(action.default, bool)
                    or action.default in (None, argparse.SUPPRESS, [])):
                continue
            shown = "".join(parser._get_formatter()._format_action(action).split())
            assert f"(default:{action.default})".replace(" ", "") in shown, (parser.prog, action.option_strings)
            checked += 1
    assert checked > 20  # the walk reached the sub-commands


# ----------------------------------------------------------------------------------------------------------------
# The README's next steps after `hyte demo` / `hyte quickstart`: the index they write is an index folder like any
# other (texts, the model's fingerprint), so search, the retrievers and `hyte rag` take it as it is
# ----------------------------------------------------------------------------------------------------------------


def _hits(out: str) -> list[str]:
    import re

    return re.findall(r"^\s+\d+\. d=\S+\s+spec=\S+\s+\[([^\]]+)\] (\S.*)$", out, re.MULTILINE)


@pytest.mark.slow
def test_the_demo_index_is_searched_from_anywhere_with_texts_and_lineage(tmp_path, monkeypatch, capsys):
    demo = tmp_path / "demo"
    assert main(["demo", "--output-dir", str(demo), "--num-documents", "40"]) == 0
    capsys.readouterr()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the index names its model by an absolute path
    assert main(["index", "search", "--index", str(demo / "index"), "--model", str(demo / "model"),
                 "--query", "small head", "--k", "3"]) == 0
    hits = _hits(capsys.readouterr().out)
    assert len(hits) == 3 and all(doc_id.startswith("HP:") and text for doc_id, text in hits)

    from hyte.integrations.langchain import HyTERetriever

    documents = HyTERetriever.from_folder(demo / "index", k=3).invoke("small head")  # the model the index names
    assert [d.id for d in documents] == [doc_id for doc_id, _ in hits]
    assert all(d.page_content for d in documents)

    # Another model (same shape, other weights) is refused by its fingerprint, in one line.
    from hyte import HyTEHModel

    other = HyTEHModel.from_pretrained(demo / "model")
    with torch.no_grad():
        other.projection.weight.mul_(1.5)
    other.save_pretrained(tmp_path / "other")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (demo / "model" / name).is_file():
            (tmp_path / "other" / name).write_bytes((demo / "model" / name).read_bytes())
    assert main(["index", "search", "--index", str(demo / "index"), "--model", str(tmp_path / "other"),
                 "--query", "small head"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hyte ")]
    assert len(errors) == 1 and "fingerprint" in errors[0]  # one message (the rest are loading progress bars)


def _readme_section(title: str) -> tuple[str, list[str]]:
    """A README section's Python snippet and shell commands, as written."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "docs" / "serving.md").read_text(encoding="utf-8")
    section = readme[readme.index(title):]
    section = section[:section.index("\n#", 1)]
    python = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    shell = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).strip().splitlines()
    return python, shell


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`hyte demo`'s output folder (an untrained HyTE-H model and its index), made once for the README's steps."""
    folder = tmp_path_factory.mktemp("first-hour") / "demo"
    assert main(["demo", "--output-dir", str(folder), "--num-documents", "20"]) == 0
    return folder


@pytest.mark.slow
def test_the_readme_own_documents_steps_run_as_written(tmp_path, monkeypatch, capsys, demo):
    import shlex

    # The demo's model folder is a sentence-transformers folder too (never mean-pooled by SentenceTransformer).
    assert (demo / "model" / "modules.json").is_file()
    monkeypatch.chdir(tmp_path)
    python, shell = _readme_section("### Your own documents")
    exec(python, {})
    corpus = [json.loads(line) for line in (tmp_path / "hpo-heldout" / "corpus.jsonl").read_text().splitlines()]
    assert len(corpus) == 500 and (tmp_path / "hpo-heldout" / "qrels" / "test.tsv").is_file()
    capsys.readouterr()
    for line in shell:
        assert main(shlex.split(line.replace("hyte-output/quickstart/model", str(demo / "model")))[1:]) == 0, line
    hits = _hits(capsys.readouterr().out)
    assert len(hits) == 3 and {doc_id for doc_id, _ in hits} <= {record["_id"] for record in corpus}
    metrics = json.loads((tmp_path / "hpo-heldout.json").read_text())
    assert (metrics["num_queries"], metrics["num_documents"]) == (100, 500) and 0.0 < metrics["ndcg@10"] <= 1.0
    # Specificity: every hit shows it; --broader / --narrower keep the hits on one side of the query.
    import re

    sides = {}
    for flag in ("--broader", "--narrower"):
        assert main(["index", "search", "--index", "hpo-index", "--query", "An abnormality of the fingers, which are "
                     "shorter than usual", "--k", "5", "--k-candidates", "500", flag]) == 0
        out = capsys.readouterr().out
        assert f"({flag[2:]} hits only)" in out
        sides[flag] = [float(v) for v in re.findall(r"d=\S+\s+spec=(\S+)", out)]
        own = float(re.search(r"^query: .*  spec=(\S+)", out, re.MULTILINE).group(1))  # the query's own
    assert sides["--broader"] and sides["--narrower"]
    assert max(sides["--broader"]) < own < min(sides["--narrower"])
    # Among one candidate, one side is empty, and says so (only the query line was printed).
    empty = []
    for flag in ("--broader", "--narrower"):
        assert main(["index", "search", "--index", "hpo-index", "--query", "Short fingers", "--k", "1",
                     "--k-candidates", "1", flag]) == 0
        empty.append(f"no hit among the 1 nearest is {flag[2:]} than the query" in capsys.readouterr().out)
    assert sorted(empty) == [False, True]
    # A rerun of the demo rewrites the same model: the index built with it above still matches.
    weights = (demo / "model" / "model.safetensors").read_bytes()
    assert main(["demo", "--output-dir", str(demo), "--num-documents", "20"]) == 0
    assert (demo / "model" / "model.safetensors").read_bytes() == weights


def test_an_index_folder_holds_vectors_texts_and_its_model(tmp_path, minilm_path):
    """One format: vectors, texts, the model's name and fingerprint, written together; a folder written before the
    format (a bare LorentzIndex.save) still opens, without texts."""
    from transformers import AutoTokenizer

    from hyte import HyTEHModel
    from hyte.encoders import HyteEncoder
    from hyte.lineage import model_fingerprint
    from hyte.retrieval.folder import build_index_folder, open_index_folder
    from hyte.retrieval.searcher import HyteSearcher

    encoder = HyteEncoder(HyTEHModel.from_base(minilm_path, hidden_size=33), AutoTokenizer.from_pretrained(minilm_path),
                          name="tiny")
    texts = ["Abnormally short fingers.", "Lateral curvature of the spine.", "Small head circumference."]
    build_index_folder(encoder, texts, tmp_path / "idx", ids=["a", "b", "c"])
    folder = open_index_folder(tmp_path / "idx")
    assert folder.kind == "plain" and folder.documents == [{"id": i, "text": t} for i, t in zip("abc", texts)]
    assert folder.index.model_fingerprint == model_fingerprint(encoder.model) and folder.model_name == "tiny"
    manifest = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert manifest["kind"] == "plain" and manifest["count"] == 3
    # An existing index is replaced only when asked, from Python as from the command line.
    searcher = HyteSearcher(encoder, folder.index, folder.documents)
    for save in (lambda: searcher.save(tmp_path / "idx"),
                 lambda: build_index_folder(encoder, texts[:1], tmp_path / "idx")):
        with pytest.raises(FileExistsError, match="already holds an index: pass overwrite=True"):
            save()
    assert len(open_index_folder(tmp_path / "idx").documents) == 3
    build_index_folder(encoder, texts[:2], tmp_path / "idx", overwrite=True)
    assert len(open_index_folder(tmp_path / "idx").documents) == 2

    # A damaged folder is named in one line: documents.jsonl edited after the build, index.faiss cut short or gone,
    # index.json broken.
    import shutil

    def damaged(name, damage):
        shutil.copytree(tmp_path / "idx", tmp_path / name)
        damage(tmp_path / name)
        return tmp_path / name

    swapped = damaged("swapped", lambda d: (d / "documents.jsonl").write_text(
        "".join(reversed((d / "documents.jsonl").read_text().splitlines(keepends=True)))))
    with pytest.raises(ValueError, match="documents.jsonl was changed after the index was built"):
        open_index_folder(swapped)
    cut = damaged("cut", lambda d: (d / "index.faiss").write_bytes((d / "index.faiss").read_bytes()[:200]))
    with pytest.raises(ValueError, match="index.faiss is damaged .*rebuild the index"):
        open_index_folder(cut)
    # It gave the API's words and no remedy.
    no_metadata = damaged("no-metadata", lambda d: (d / "metadata.json").unlink())
    with pytest.raises(FileNotFoundError, match=r"has no metadata.json, so it holds no complete"):
        open_index_folder(no_metadata)
    gone = damaged("gone", lambda d: (d / "index.faiss").unlink())
    with pytest.raises(FileNotFoundError, match="index.faiss is missing"):
        open_index_folder(gone)
    with pytest.raises(NotADirectoryError, match="index.json is a file: give the index folder that holds it"):
        open_index_folder(tmp_path / "idx" / "index.json")
    (tmp_path / "docs.txt").write_text("Short fingers.\n")  # its folder was offered as an index, which it is not
    with pytest.raises(NotADirectoryError, match=r"docs.txt is a file, not an index folder"):
        open_index_folder(tmp_path / "docs.txt")
    broken = damaged("broken", lambda d: (d / "index.json").write_text('{"format_version": 1, "ki'))
    with pytest.raises(ValueError, match="index.json is not valid JSON \\(line 1, column"):
        open_index_folder(broken)

    folder.index.save(tmp_path / "old")  # the layout before index folders: no texts, no index.json
    old = open_index_folder(tmp_path / "old")
    assert old.kind == "plain" and old.documents is None and len(old.index) == 3
    try:
        open_index_folder(tmp_path / "missing")
    except FileNotFoundError as error:
        assert "hyte index build" in str(error)
    else:
        raise AssertionError("a missing folder was opened")


def test_what_no_longer_matches_an_index_is_refused_and_saves_follow_links(tmp_path, minilm_path):
    """Ninth new-user trial, silent mistakes: an index.faiss copied in from another index of the same size, a model
    whose config.json was edited after indexing (another pooling), a left-padding tokenizer (vectors that depend on
    the batch), and an --overwrite through a symbolic link (the link was swapped for a copy, the linked index kept
    its stale vectors). An index saved before the settings were fingerprinted still admits its model."""
    import shutil

    from transformers import AutoTokenizer

    from hyte import HyTEHModel
    from hyte.encoders import HyteEncoder
    from hyte.lineage import _weights_only_fingerprint, check_query_encoder
    from hyte.retrieval import IncompatibleIndexError
    from hyte.retrieval.folder import build_index_folder, open_index_folder

    model = HyTEHModel.from_base(minilm_path, hidden_size=33)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    encoder = HyteEncoder(model, tokenizer, name="tiny")
    texts = ["Abnormally short fingers.", "Lateral curvature of the spine.", "Small head circumference."]
    build_index_folder(encoder, texts, tmp_path / "a")
    build_index_folder(encoder, list(reversed(texts)), tmp_path / "b")
    shutil.copy(tmp_path / "b" / "index.faiss", tmp_path / "a" / "index.faiss")
    with pytest.raises(ValueError, match="not the file the index was built with"):
        open_index_folder(tmp_path / "a")

    folder = open_index_folder(tmp_path / "b")
    assert check_query_encoder(folder.index, encoder) == "same model"
    model.save_pretrained(tmp_path / "model")
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    for field, value in (("pooling", "mean"), ("oem_p", 3.0), ("norm_clip", 2.0)):
        (tmp_path / "model" / "config.json").write_text(json.dumps({**config, field: value}))
        edited = HyteEncoder(HyTEHModel.from_pretrained(tmp_path / "model"), tokenizer, name="tiny")
        with pytest.raises(IncompatibleIndexError, match="neither that model nor declared compatible"):
            check_query_encoder(folder.index, edited)
    (tmp_path / "model" / "config.json").write_text(json.dumps(config))
    reloaded = HyteEncoder(HyTEHModel.from_pretrained(tmp_path / "model"), tokenizer, name="tiny")
    assert check_query_encoder(folder.index, reloaded) == "same model"
    folder.index.model_fingerprint = _weights_only_fingerprint(model)  # as saved before settings were hashed
    assert check_query_encoder(folder.index, reloaded) == "same model"

    # Left padding: encode's vectors do not depend on the batch, nor a forward pass's on the padding side.
    left = AutoTokenizer.from_pretrained(minilm_path, padding_side="left")
    alone = model.encode(texts[:1], tokenizer=left)
    together = model.encode(texts[:1] + ["a much longer text that forces padding onto the short one " * 3],
                            tokenizer=left)[:1]
    np.testing.assert_allclose(alone, together, atol=1e-5)
    batch = left(texts, padding=True, return_tensors="pt")
    right = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():  # BERT gets positions counted over real tokens: left padding changes nothing
        torch.testing.assert_close(model(**batch).pooler_output, model(**right).pooler_output, atol=1e-5, rtol=1e-5)
    # HyTE-FH's rotary positions see only distances; its CLS pooling takes the first real token on either side.
    from hyte import HyTEFHConfig, HyTEFHModel

    torch.manual_seed(0)
    fh = HyTEFHModel(HyTEFHConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32, pooling="cls")).eval()
    with torch.no_grad():
        torch.testing.assert_close(fh(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).pooler_output,
                                   fh(input_ids=right["input_ids"], attention_mask=right["attention_mask"]).pooler_output,
                                   atol=1e-5, rtol=1e-5)

    # A save through a symbolic link replaces what the link points to and keeps the link.
    (tmp_path / "link").symlink_to(tmp_path / "b")
    build_index_folder(encoder, texts[:2], tmp_path / "link", overwrite=True)
    assert (tmp_path / "link").is_symlink() and len(open_index_folder(tmp_path / "b").documents) == 2


def test_an_index_names_its_model_so_it_loads_from_anywhere(tmp_path, minilm_path, monkeypatch):
    """`hyte index build --model <relative folder>` records the folder absolutely; an index recording a relative
    folder (older hyte) resolves it beside the index folder; a model found nowhere is a one-line error naming
    --model."""
    from transformers import AutoTokenizer

    from hyte import HyTEHModel
    from hyte.retrieval.folder import open_index_folder, resolve_index_model
    from hyte.retrieval.searcher import HyteSearcher

    HyTEHModel.from_base(minilm_path, hidden_size=33).save_pretrained(tmp_path / "model")
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(tmp_path / "model")
    (tmp_path / "docs.txt").write_text("Abnormally short fingers.\nLateral curvature of the spine.\n")
    monkeypatch.chdir(tmp_path)
    assert main(["index", "build", "--model", "model", "--input", "docs.txt", "--output", "idx"]) == 0
    folder = open_index_folder(tmp_path / "idx")
    assert folder.model_name == str(tmp_path / "model")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert len(HyteSearcher.from_folder(tmp_path / "idx").search("short fingers", k=1)) == 1

    folder.index.model_name = "model"  # as an older hyte recorded it: relative to where it was built
    assert resolve_index_model(folder) == str(tmp_path / "model")
    folder.index.model_name = "./gone/model"
    with pytest.raises(FileNotFoundError, match="--model"):
        resolve_index_model(folder)
    # Model and index moved together: the absolute path is gone, the model of that name beside the index is used,
    # and loading it checks its weights against the fingerprint the index records.
    folder.index.model_name = str(tmp_path / "moved-away" / "model")
    assert resolve_index_model(folder) == str(tmp_path / "model")
    folder.index.model_name = str(tmp_path / "moved-away" / "other")
    with pytest.raises(FileNotFoundError, match="which is not found from here: pass the model with --model"):
        resolve_index_model(folder)


@pytest.mark.slow
def test_the_readme_pgvector_steps_run_as_written(tmp_path, monkeypatch, capsys, demo):
    """From a model and the held-out HPO folder to PostgreSQL: a local server, a table built by encoding and one
    from vector shards, search, an answer, the retriever; model, port and server folder swapped for the test's."""
    import os
    import shlex
    import shutil
    import socket
    import tempfile

    monkeypatch.chdir(tmp_path)
    exec(_readme_section("### Your own documents")[0], {})  # writes hpo-heldout/
    python, shell = _readme_section("### Beyond one machine")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    server = tempfile.mkdtemp(prefix="hyte-pg-")  # run as root, PostgreSQL runs as nobody, who must reach it
    os.chmod(server, 0o755)

    def as_tested(text: str) -> str:
        return (text.replace("hyte-output/quickstart/model", str(demo / "model")).replace("5433", port)
                .replace("/tmp/hyte-pg", server))

    try:
        outputs = []
        for line in shell:
            assert main(shlex.split(as_tested(line))[1:]) == 0, line
            outputs.append(capsys.readouterr().out)
        searched = _hits(outputs[2])
        corpus = {json.loads(line)["_id"] for line in (tmp_path / "hpo-heldout" / "corpus.jsonl").read_text().splitlines()}
        assert len(searched) == 3 and {doc_id for doc_id, _ in searched} <= corpus
        assert "answer (" in outputs[3] and "500 documents in 3 shards" in outputs[4]
        assert "recall@10 against exact search" in outputs[5]
        main(["postgres", "start", "--dir", server, "--port", port])
        namespace = {}
        exec(as_tested(python), namespace)
        assert [d.metadata["id"] for d in namespace["documents"]] == [doc_id for doc_id, _ in searched]
    finally:
        main(["postgres", "stop", "--dir", server])
        shutil.rmtree(server, ignore_errors=True)


def test_input_files_that_would_be_read_as_something_else_are_refused(tmp_path, capsys):
    """Third new-user trial: a .jsonl saved as .txt (its raw JSON indexed), an empty BEIR query (scored as a query)."""
    from hyte.data.beir import BEIRFormatError, load_beir
    from hyte.io import DataFormatError, read_texts

    lines = tmp_path / "corpus.txt"
    lines.write_text('{"_id": "a", "text": "one"}\n{"_id": "b", "text": "two"}\n')
    with pytest.raises(DataFormatError, match="rename it to .jsonl"):
        read_texts(lines)
    lines.write_text('{"_id": "a", "text": "one"}\na plain line\n')  # texts that merely start with a brace: kept
    assert read_texts(lines)[0][1] == "a plain line"
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "a heart"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "  "}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    with pytest.raises(BEIRFormatError, match=r'line 1: "text" is empty \(id q1\)'):
        load_beir(beir)


def test_twelfth_trial_a_demo_rerun_with_other_settings_names_its_own_index(tmp_path, capsys):
    """`hyte demo --num-documents 50` over the folder the demo made with 200 was refused after 9.8 s and
    "[1/4] building HyTE-H" as holding "another index than this demo's (one you built there?)". The demo's own
    index (its documents are the first N HPO definitions) is recognised, with the --num-documents it was made with,
    before step [1/4]; an index of other documents is still another index."""
    from hyte.data.hpo import load_hpo
    from hyte.demo import run_demo
    from hyte.retrieval.folder import write_index_folder
    from hyte.retrieval.index import LorentzIndex

    first = sorted(t.id for t in load_hpo().terms.values() if t.definition)[:3]
    index = LorentzIndex(5)
    index.add(L.expmap0(torch.full((3, 4), 0.1, dtype=torch.float64)).numpy().astype(np.float32))
    write_index_folder(tmp_path / "demo" / "index", index, [{"id": i, "text": "t"} for i in first])
    with pytest.raises(FileExistsError, match=r"demo/index holds this demo's index of 3 documents"):
        run_demo(tmp_path / "demo", num_documents=2)
    assert "[1/4]" not in capsys.readouterr().out
    write_index_folder(tmp_path / "mine" / "index", index, [{"id": i, "text": "t"} for i in first[::-1]])
    with pytest.raises(FileExistsError, match=r"holds another index than this demo's"):
        run_demo(tmp_path / "mine", num_documents=3)
    assert "[1/4]" not in capsys.readouterr().out
