"""The ``hyte`` command line: encode, index build/search, and errors a user can fix."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
import torch

from hyte import lorentz as L
from hyte.cli import main

DOCUMENTS = [
    "Abnormally long and slender fingers.",
    "A short stature for age.",
    "An abnormal rhythm of the heart.",
    "Increased size of the liver.",
]


@pytest.fixture(scope="module")
def model_dir(tiny_hyte_h_dir):
    return tiny_hyte_h_dir


def test_encode_writes_npy_and_safetensors(tmp_path, model_dir):
    texts = tmp_path / "docs.jsonl"
    texts.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(DOCUMENTS)))
    assert main(["encode", "--model", str(model_dir), "--input", str(texts), "--output", str(tmp_path / "d.npy")]) == 0
    documents = np.load(tmp_path / "d.npy")
    assert documents.shape == (4, 65) and (documents[:, 0] > 0).all()
    (tmp_path / "q.txt").write_text("long fingers\n")
    assert main(["encode", "--model", str(model_dir), "--input", str(tmp_path / "q.txt"), "--role", "query",
                 "--output", str(tmp_path / "q.safetensors")]) == 0
    from safetensors import safe_open

    with safe_open(str(tmp_path / "q.safetensors"), "np") as handle:
        query = handle.get_tensor("embeddings")
        assert handle.metadata()["role"] == "query" and handle.metadata()["similarity"] == "lorentz"
    assert query[0, 0] < 0  # sign-flipped
    expected = L.pairwise_inner(L.flip_time(torch.from_numpy(query)), torch.from_numpy(documents))
    np.testing.assert_allclose(query @ documents.T, expected.numpy(), rtol=1e-5)


def test_encode_says_how_euclidean_vectors_compare(tmp_path, capsys, bert_tokenizer, minilm_path):
    """EucBERT's vectors keep their norms, a plain encoder's are unit length: both are compared by cosine, and the
    file says so; only the first needs scaling before an inner-product search, and only it gets the note."""
    from safetensors import safe_open

    from hyte import EucBERTConfig, EucBERTModel

    EucBERTModel(EucBERTConfig(vocab_size=len(bert_tokenizer), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64)).save_pretrained(tmp_path / "eucbert")
    bert_tokenizer.save_pretrained(tmp_path / "eucbert")
    (tmp_path / "docs.txt").write_text("\n".join(DOCUMENTS) + "\n")
    notes = {}
    for name, model in (("eucbert", str(tmp_path / "eucbert")), ("minilm", minilm_path)):
        output = tmp_path / f"{name}.safetensors"
        capsys.readouterr()
        assert main(["encode", "--model", model, "--input", str(tmp_path / "docs.txt"), "--output", str(output)]) == 0
        notes[name] = "scale them to unit length" in capsys.readouterr().out
        with safe_open(str(output), "np") as handle:
            assert handle.metadata()["similarity"] == "cosine" and handle.metadata()["kind"] == "euclidean"
            norms = np.linalg.norm(handle.get_tensor("embeddings"), axis=1)
        assert np.allclose(norms, 1.0, atol=1e-4) == (name == "minilm")
    assert notes == {"eucbert": True, "minilm": False}


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_index_build_and_search(tmp_path, model_dir, capsys, kind):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    index_dir = tmp_path / "index"
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output", str(index_dir),
                 "--kind", kind]) == 0
    assert {"index.faiss", "metadata.json", "documents.jsonl"} <= {p.name for p in index_dir.iterdir()}
    assert main(["index", "search", "--index", str(index_dir), "--model", str(model_dir),
                 "--query", "abnormal heart rhythm", "--k", "2"]) == 0
    output = capsys.readouterr().out
    assert "1. d=" in output and "rhythm of the heart" in output.split("1. d=")[1].splitlines()[0]
    # --k 1000000000 allocated a padded result and was killed; it shows every document instead.
    assert main(["index", "search", "--index", str(index_dir), "--query", "abnormal heart rhythm",
                 "--k", "1000000000"]) == 0
    captured = capsys.readouterr()
    assert f"the index holds {len(DOCUMENTS)} documents; showing all of them" in captured.err
    assert f"{len(DOCUMENTS):2d}. d=" in captured.out and f"{len(DOCUMENTS) + 1:2d}. d=" not in captured.out


def test_a_sentence_transformers_module_folder_names_its_model(tmp_path, model_dir):
    """Module folders that hold a config.json of their own (1_HyperbolicPooling, the router's
    query_0_TimeFlip) were refused with "has no tokenizer ... save the tokenizer into the model folder"."""
    from hyte.encoders import load_encoder

    exported = tmp_path / "hyte-st"
    shutil.copytree(model_dir, exported)
    (exported / "modules.json").write_text("[]")
    for module in (exported / "1_HyperbolicPooling", exported / "2_Router" / "query_0_TimeFlip"):
        module.mkdir(parents=True)
        (module / "config.json").write_text('{"curvature": 1.0}')
        with pytest.raises(FileNotFoundError, match=re.escape(f"{module} is one module of the sentence-transformers "
                                                              f"model {exported}, not a model: give {exported}")):
            load_encoder(module)


def test_hyte_load_which_does_not_exist_names_the_calls_that_do():
    """`hyte.load(path)`, a new user's first guess, gave a bare AttributeError."""
    import hyte

    with pytest.raises(AttributeError, match=r"load a model with AutoModel.from_pretrained"):
        hyte.load("model")
    with pytest.raises(AttributeError, match=r"^module 'hyte' has no attribute 'nothing'$"):
        hyte.nothing


def test_user_errors_are_one_line_messages(tmp_path, model_dir, capsys):
    assert main(["encode", "--model", str(model_dir), "--input", str(tmp_path / "missing.txt"),
                 "--output", str(tmp_path / "x.npy")]) == 2
    assert "missing.txt" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"txt": "no text field"}\n')
    assert main(["encode", "--model", str(model_dir), "--input", str(bad), "--output", str(tmp_path / "x.npy")]) == 2
    assert "bad.jsonl, line 2" in capsys.readouterr().err
    good = tmp_path / "good.txt"
    good.write_text("a text\n")
    assert main(["encode", "--model", str(model_dir), "--input", str(good), "--output", str(tmp_path / "x.csv")]) == 2
    assert ".npy or .safetensors" in capsys.readouterr().err
    # An output named only by its suffix and an empty --input (read as the current folder).
    assert main(["encode", "--model", str(model_dir), "--input", str(good), "--output", str(tmp_path / ".npy")]) == 2
    assert "has no name before its suffix: give e.g. vectors.npy" in capsys.readouterr().err
    assert main(["encode", "--model", str(model_dir), "--input", "", "--output", str(tmp_path / "x.npy")]) == 2
    assert "--input is empty" in capsys.readouterr().err
    assert main(["encode", "--model", str(tmp_path), "--input", str(good), "--output", str(tmp_path / "x.npy")]) == 2
    assert "no config.json" in capsys.readouterr().err

    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(model_dir, no_tokenizer)
    for name in ("tokenizer.json", "vocab.txt"):
        (no_tokenizer / name).unlink(missing_ok=True)
    assert main(["encode", "--model", str(no_tokenizer), "--input", str(good), "--output", str(tmp_path / "x.npy")]) == 2
    assert "has no tokenizer" in capsys.readouterr().err and not (tmp_path / "x.npy").exists()
    for length in ("1", "2"):  # [CLS] and [SEP] alone: every text would get the same vector
        assert main(["encode", "--model", str(model_dir), "--input", str(good), "--output", str(tmp_path / "x.npy"),
                     "--max-length", length]) == 2
        assert f"max_length {length} leaves no token of the text" in capsys.readouterr().err
    for option in (["--shard-size", "2"], ["--ray-workers", "3"]):  # corpus-only options are not ignored
        assert main(["encode", "--model", str(model_dir), "--input", str(good), "--output", str(tmp_path / "x.npy"),
                     *option]) == 2
        assert f"{option[0]}: for a --corpus" in capsys.readouterr().err and not (tmp_path / "x.npy").exists()


def test_outputs_are_checked_before_anything_is_encoded_and_never_replaced_silently(tmp_path, model_dir, capsys):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    build = ["index", "build", "--model", str(model_dir), "--input", str(docs), "--output"]
    assert main(build + [str(tmp_path / "notes")]) == 2
    assert "is not an index folder" in capsys.readouterr().err and (tmp_path / "notes" / "mine.txt").is_file()
    assert main(build + [""]) == 2
    assert "--output is empty" in capsys.readouterr().err
    assert main(build + [str(tmp_path / "index")]) == 0
    saved = (tmp_path / "index" / "index.faiss").read_bytes()
    assert main(build + [str(tmp_path / "index")]) == 2
    assert "--overwrite" in capsys.readouterr().err and (tmp_path / "index" / "index.faiss").read_bytes() == saved
    assert main(build + [str(tmp_path / "index"), "--overwrite"]) == 0
    # A user's own file inside an index folder would go with the folder: --overwrite is refused before encoding,
    # and so is saving over it from Python.
    (tmp_path / "index" / "NOTES.md").write_text("keep me")
    assert main(build + [str(tmp_path / "index"), "--overwrite"]) == 2
    assert "holds NOTES.md, which a saved index folder does not hold" in capsys.readouterr().err
    from hyte.retrieval.folder import open_index_folder, write_index_folder
    opened = open_index_folder(tmp_path / "index")
    with pytest.raises(FileExistsError, match="already holds an index: pass overwrite=True"):
        write_index_folder(tmp_path / "index", opened.index, opened.documents)
    with pytest.raises(FileExistsError, match="NOTES.md"):
        write_index_folder(tmp_path / "index", opened.index, opened.documents, overwrite=True)
    assert (tmp_path / "index" / "NOTES.md").read_text() == "keep me"
    assert main(["export", "onnx", str(model_dir), "--output", str(tmp_path / "notes")]) == 2
    assert "is a folder" in capsys.readouterr().err
    # --help offered the bundled MiniLM, which was then refused saying only "not a HyTE model".
    assert main(["export", "onnx", "bundled:all-MiniLM-L6-v2", "--output", str(tmp_path / "b.onnx")]) == 2
    assert "is a 'bert' model, not a HyTE model: this takes a model hyte trained" in capsys.readouterr().err
    assert not (tmp_path / "b.onnx").exists()
    assert main(["export", "onnx", "nope_model", "--output", str(tmp_path / "b.onnx")]) == 2  # nor offered
    error = capsys.readouterr().err
    assert "is not a local folder or a cached Hub model" in error and "bundled" not in error
    # A model's own files are never the target of vectors or an ONNX graph, not even with --overwrite.
    weights = (model_dir / "model.safetensors").read_bytes()
    encode = ["encode", "--model", str(model_dir), "--input", str(docs), "--output"]
    assert main(encode + [str(model_dir / "model.safetensors"), "--overwrite"]) == 2
    assert "inside a model folder" in capsys.readouterr().err
    assert main(encode + [str(tmp_path / "index" / "vectors.npy")]) == 2  # Its rebuild would then be refused
    assert "lies inside an index folder" in capsys.readouterr().err
    assert main(["export", "onnx", str(model_dir), "--output", str(model_dir / "model.safetensors"),
                 "--overwrite"]) == 2
    assert "give a .onnx file" in capsys.readouterr().err and (model_dir / "model.safetensors").read_bytes() == weights
    # Nor through a symbolic link named like an output file.
    for link, command in (("link.safetensors", encode), ("link.onnx", ["export", "onnx", str(model_dir), "--output"])):
        (tmp_path / link).symlink_to(model_dir / "model.safetensors")
        assert main(command + [str(tmp_path / link), "--overwrite"]) == 2
        assert "(a link to " in capsys.readouterr().err
    assert (model_dir / "model.safetensors").read_bytes() == weights
    # Vectors are not replaced without --overwrite.
    assert main(encode + [str(tmp_path / "d.npy")]) == 0
    vectors = (tmp_path / "d.npy").read_bytes()
    assert main(encode + [str(tmp_path / "d.npy")]) == 2
    assert "--overwrite" in capsys.readouterr().err and (tmp_path / "d.npy").read_bytes() == vectors
    assert main(encode + [str(tmp_path / "d.npy"), "--overwrite"]) == 0


def test_a_negative_learning_rate_is_refused_with_the_config(tmp_path):
    from hyte.training import ConfigError, parse_config

    with pytest.raises(ConfigError, match="training.learning_rate must be > 0; got -0.001"):
        parse_config({"stage": "contrastive", "model": {"build": "hyte_fh", "options": {"hidden_size": 33}},
                      "training": {"learning_rate": -1e-3}})


def test_a_model_folder_without_its_weights_or_loaded_as_euclidean_is_refused(tmp_path, model_dir):

    from safetensors.torch import save_file

    from hyte.encoders import load_encoder

    broken = tmp_path / "broken"
    shutil.copytree(model_dir, broken)
    save_file({"vectors": torch.zeros(2, 3)}, broken / "model.safetensors")  # e.g. vectors written over the weights
    with pytest.raises(ValueError, match="lacks .* of the model's parameters"):
        load_encoder(broken)
    with pytest.raises(ValueError, match="is a hyperbolic HyTE model"):
        load_encoder(model_dir, kind="euclidean")


def test_outputs_never_replace_the_files_that_make_a_model_run_or_index_work(tmp_path, model_dir, capsys):
    """Found by the third new-user trial: each of these used to delete or overwrite a working file."""

    from hyte.results import write_result
    from hyte.retrieval.index import LorentzIndex

    model = tmp_path / "model"
    shutil.copytree(model_dir, model)
    config = (model / "config.json").read_text()
    data = tmp_path / "beir"
    data.mkdir()
    for name in ("config.json", "run.json"):  # a model's config, a run's record: refused before evaluating
        target = model / name if name == "config.json" else tmp_path / "run" / name
        target.parent.mkdir(exist_ok=True)
        if name == "run.json":
            target.write_text('{"config": {}}')
        before = target.read_text()
        assert main(["eval", "retrieval", "--model", str(model), "--data", str(data), "--output", str(target)]) == 2
        assert f"lies inside a {'model' if name == 'config.json' else 'training run'} folder" in capsys.readouterr().err
        assert target.read_text() == before
    assert (model / "config.json").read_text() == config
    with pytest.raises(ValueError, match=r"lies inside a model folder \(.* holds config.json\)"):
        write_result(model / "results.json", {"benchmark": "retrieval"})

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    assert main(["index", "build", "--model", str(model), "--input", str(docs), "--output", str(tmp_path / "idx")]) == 0
    index = LorentzIndex.load(tmp_path / "idx")
    with pytest.raises(ValueError, match="index folder with texts .*HyteSearcher"):
        index.save(tmp_path / "idx")
    assert (tmp_path / "idx" / "documents.jsonl").is_file() and (tmp_path / "idx" / "index.json").is_file()

    other = tmp_path / "other-model"
    shutil.copytree(model_dir, other)
    assert main(["export", "onnx", str(model), "--output", str(other / "model.onnx")]) == 2
    assert "inside another model's folder" in capsys.readouterr().err and not (other / "model.onnx").exists()
    (tmp_path / "graph.onnx").symlink_to(other / "graph.onnx")  # a link into that folder: judged by where it points
    assert main(["export", "onnx", str(model), "--output", str(tmp_path / "graph.onnx")]) == 2
    assert "inside another model's folder" in capsys.readouterr().err and not (other / "graph.onnx").exists()

    weights = (model / "model.safetensors").read_bytes()
    assert main(["demo", "--output-dir", str(tmp_path), "--num-documents", "2"]) == 2
    assert "holds another model than the demo's" in capsys.readouterr().err
    assert (model / "model.safetensors").read_bytes() == weights
    # --overwrite replaces it (the sentence-transformers save under it refuses other weights unless told so).
    assert main(["demo", "--output-dir", str(tmp_path), "--num-documents", "2", "--overwrite"]) == 0
    assert (model / "model.safetensors").read_bytes() != weights


def test_resume_into_a_runs_final_model_names_the_run_folder(tmp_path, capsys):
    from pathlib import Path

    final = tmp_path / "run" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    config = Path(__file__).resolve().parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml"
    assert main(["train", "finetune", "--config", str(config), "--set", f"training.output_dir={final}",
                 "--resume"]) == 2
    assert f"set training.output_dir to the run's folder {tmp_path / 'run'}" in capsys.readouterr().err


def test_a_model_path_that_is_no_model_folder_is_named_before_loading(tmp_path, capsys):
    from pathlib import Path

    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "index.json").write_text("{}")
    config = Path(__file__).resolve().parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml"
    assert main(["train", "finetune", "--config", str(config), "--set", f"model.path={tmp_path / 'idx'}",
                 "--set", f"training.output_dir={tmp_path / 'out'}"]) == 2
    assert f"model.path: {tmp_path / 'idx'} is an index folder, not a model" in capsys.readouterr().err


def test_seventh_trial_mistakes_are_refused_before_any_work(tmp_path, model_dir, capsys):
    """Found by the seventh new-user trial: each of these was accepted without a word."""
    import hyte
    from hyte.encoders import load_encoder
    from hyte.retrieval.searcher import HyteSearcher

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    index = tmp_path / "index"
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output", str(index)]) == 0
    capsys.readouterr()
    # A single-valued option given twice kept the last value only.
    with pytest.raises(SystemExit):
        main(["index", "search", "--index", str(index), "--query", "short fingers", "--query", "small head"])
    assert "--query was given twice" in capsys.readouterr().err
    # Two ways of naming the index at once.
    assert main(["index", "search", "--index", str(index), "--dsn", "postgresql://x@127.0.0.1:5999/db",
                 "--query", "x"]) == 2
    assert "both name an index" in capsys.readouterr().err
    # An empty id would show hits without an id.
    empty_id = tmp_path / "e.jsonl"
    empty_id.write_text('{"id": "", "text": "Short fingers."}\n{"id": "b", "text": "Small head."}\n')
    assert main(["index", "build", "--model", str(model_dir), "--input", str(empty_id), "--output",
                 str(tmp_path / "ie")]) == 2
    assert "line 1: the id '' is empty" in capsys.readouterr().err and not (tmp_path / "ie").exists()
    # An index inside a model folder would be pushed with the model (documents and all).
    inside = tmp_path / "model-copy"

    shutil.copytree(model_dir, inside)
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output",
                 str(inside / "index")]) == 2
    assert "lies inside a model folder" in capsys.readouterr().err and not (inside / "index").exists()
    # An --output under a file, or a file itself, was refused only once the model had been loaded.
    for output in (docs, docs / "index"):
        assert main(["index", "build", "--model", str(tmp_path / "no-model"), "--input", str(docs), "--output",
                     str(output)]) == 2
        assert f"{docs} is a file" in capsys.readouterr().err  # not the missing model: checked before it is loaded
    shutil.copytree(index, inside / "index")  # put there by hand: push names it
    from hyte.hub.push import check_model_dir

    with pytest.raises(ValueError, match=r"index/documents\.jsonl belongs to an index"):
        check_model_dir(inside)
    # A result is JSON: another suffix is refused before evaluating.
    from hyte.results import check_result_output

    with pytest.raises(ValueError, match=r"give a \.json file"):
        check_result_output(tmp_path / "results.csv")
    # An ONNX graph written into an index folder.
    assert main(["export", "onnx", str(model_dir), "--output", str(index / "model.onnx")]) == 2
    assert "lies inside an index folder" in capsys.readouterr().err and not (index / "model.onnx").exists()
    # model.encode of empty text (a warning and the origin: one blank passage must not abort a corpus) and of a
    # max_length beyond the model's positions.
    encoder = load_encoder(model_dir)
    with pytest.warns(UserWarning, match=r"1 text\(s\) have nothing to embed .*the first is text 1.*the origin"):
        blank = encoder.model.encode(["a heart", "  "], encoder.tokenizer, role="query")
    c = float(encoder.model.curvature)
    assert blank[1, 0] == pytest.approx(-np.sqrt(c)) and not blank[1, 1:].any()  # the origin, flipped as a query
    assert np.abs(blank[0, 1:]).sum() > 0
    limit = encoder.model.config.max_position_embeddings
    with pytest.raises(ValueError, match=f"between 1 and the model's {limit} positions"):
        encoder.model.encode(["a heart"], encoder.tokenizer, max_length=limit + 1)
    # The candidate pool of a broader/narrower search: refused when meaningless.
    searcher = HyteSearcher.from_folder(index)
    with pytest.raises(ValueError, match="without a relation it changes nothing"):
        searcher.search("short fingers", k=2, candidates=0)
    for bad in (-5, 0, 2.5):
        with pytest.raises(ValueError, match="candidates must be a whole number >= 1"):
            searcher.search("short fingers", k=2, relation="broader", candidates=bad)
    assert len(searcher.search("short fingers", k=2, relation="broader", candidates=3)) <= 2
    # sentence-transformers: a text pair is not a text, and an index folder is not a model folder.
    st = hyte.sentence_transformer(model_dir)
    with pytest.raises(TypeError, match=r"inputs\[0\] is a list"):
        st.encode_document([["a", "b"]])
    with pytest.raises(FileExistsError, match="holds index.json"):
        st.save(str(index))
    assert not (index / "modules.json").exists()
    # A generator that is an index folder or an embedding model, named before transformers fails on it.
    from hyte.generation import load_generator

    with pytest.raises(ValueError, match="not a generator"):
        load_generator(index)
    with pytest.raises(ValueError, match="not a causal language model"):
        load_generator(model_dir)
    # The same --set field twice: refused, not "the last one wins".
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml"
    assert main(["train", "finetune", "--config", str(config), "--set", "training.max_steps=1",
                 "--set", "training.max_steps=2"]) == 2
    assert "--set training.max_steps given more than once" in capsys.readouterr().err


def test_eighth_trial_mistakes_are_refused_and_nothing_is_written_over(tmp_path, model_dir, capsys):
    """Found by the eighth new-user trial: outputs that replaced other files, and inputs accepted silently."""
    from pathlib import Path

    import hyte
    from hyte.data import write_beir_folder
    from hyte.demo import _index_in_the_way, run_demo
    from hyte.encoders import load_encoder
    from hyte.evaluation.heldout import heldout_retrieval_set
    from hyte.rag import Passage, extract
    from hyte.retrieval.index import LorentzIndex

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    index = tmp_path / "index"
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output", str(index)]) == 0
    kept = (index / "documents.jsonl").read_bytes()
    capsys.readouterr()
    # build-hierarchy wrote its benchmark over the index's documents, then refused its provenance file.
    assert main(["eval", "build-hierarchy", "--hpo", "--max-queries", "5", "--output",
                 str(index / "documents.jsonl")]) == 2
    assert "index folder" in capsys.readouterr().err and (index / "documents.jsonl").read_bytes() == kept
    # ... and replaced any other file; its own earlier output (unchanged) it may replace.
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"mine": 1}\n')
    assert main(["eval", "build-hierarchy", "--hpo", "--max-queries", "5", "--output", str(mine)]) == 2
    assert "is not an unchanged earlier" in capsys.readouterr().err and mine.read_text() == '{"mine": 1}\n'
    built = tmp_path / "hierarchy.jsonl"
    for _ in range(2):
        assert main(["eval", "build-hierarchy", "--hpo", "--max-queries", "5", "--output", str(built)]) == 0
    # --root with --hpo was ignored (the whole split written); refused, the earlier output kept.
    kept_built = built.read_bytes()
    capsys.readouterr()
    assert main(["eval", "build-hierarchy", "--hpo", "--root", "HP:0000707", "--output", str(built)]) == 2
    assert "--root applies to --obo only" in capsys.readouterr().err and built.read_bytes() == kept_built
    # The demo replaced an index a user had built in its folder, and wrote into an index folder.
    assert "another index than this demo's" in _index_in_the_way(index, ["HP:0000002"], ["HP:0000002"])
    assert _index_in_the_way(index, list(range(len(DOCUMENTS))), []) is None
    assert _index_in_the_way(tmp_path / "no-index-here", ["HP:0000002"], ["HP:0000002"]) is None
    with pytest.raises(FileExistsError, match="is or lies inside an index folder"):
        run_demo(index)
    # write_beir_folder replaced an existing set, and wrote qrels naming documents the corpus lacks.
    beir = write_beir_folder(tmp_path / "beir", {"q0": "short fingers"}, {"d0": "Short fingers."}, {"q0": {"d0": 1}})
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        write_beir_folder(beir, {"q0": "x"}, {"d0": "y"}, {"q0": {"d0": 1}})
    assert "Short fingers." in (beir / "corpus.jsonl").read_text()
    write_beir_folder(beir, {"q0": "x"}, {"d0": "y"}, {"q0": {"d0": 1}}, overwrite=True)
    with pytest.raises(ValueError, match="documents d9 that the set lacks"):
        write_beir_folder(tmp_path / "beir2", {"q0": "x"}, {"d0": "y"}, {"q0": {"d9": 1}})
    # Paths under a file: the OS's "[Errno 17] File exists" became a sentence.
    assert main(["encode", "--model", str(model_dir), "--input", str(docs), "--output", str(docs / "out.npy")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        LorentzIndex(3).save(docs / "ix")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        write_beir_folder(docs, {"q0": "x"}, {"d0": "y"}, {"q0": {"d0": 1}})
    assert docs.read_text() == "\n".join(DOCUMENTS) + "\n"
    # A repeated JSON key: the last value won.
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text('{"id": "a", "text": "Short fingers.", "text": "Small head."}\n')
    assert main(["index", "build", "--model", str(model_dir), "--input", str(repeated), "--output",
                 str(tmp_path / "ir")]) == 2
    assert 'the key "text" is given twice' in capsys.readouterr().err and not (tmp_path / "ir").exists()
    # Texts of invisible characters only, empty texts through sentence-transformers, a float batch size, and a
    # max_seq_length beyond the model's positions.
    encoder = load_encoder(model_dir)
    for invisible in ("\u200b", "\x00", "\u0301"):
        with pytest.warns(UserWarning, match="nothing to embed"):
            points = encoder.model.encode(["a heart", invisible], encoder.tokenizer)
        assert not points[1, 1:].any() and points[1, 0] > 0  # the origin
    with pytest.raises(ValueError, match="batch_size must be a whole number"):
        encoder.model.encode(["a heart"], encoder.tokenizer, batch_size=1.5)
    st = hyte.sentence_transformer(model_dir)
    for blank in ("", "\u200b \u200b"):  # as model.encode: a warning and the origin, the batch goes on
        for route, sign in ((st.encode_document, 1), (st.encode_query, -1)):
            for options in ({}, {"convert_to_tensor": True}, {"convert_to_numpy": False}):
                with pytest.warns(UserWarning, match="nothing to embed"):
                    points = route(["a heart", blank], **options)
                assert not any(points[1][1:]) and float(points[1][0]) == pytest.approx(sign * float(encoder.model.curvature) ** 0.5)
                assert float(points[0][0]) * sign > 1.0  # the other text keeps its point
        with pytest.warns(UserWarning, match="nothing to embed"):
            assert float(st.encode_document(blank)[0]) == pytest.approx(1.0)
    st.max_seq_length = 100000
    with pytest.raises(ValueError, match="set model.max_seq_length to at most"):
        st.encode_query(["a heart"])
    # Sample sizes below 1 gave a set that cannot fail (only the gold documents) or random's own error.
    for sizes in ({"max_documents": -1}, {"max_queries": -2}, {"max_queries": 0}):
        with pytest.raises(ValueError, match="must be a whole number >= 1"):
            heldout_retrieval_set(**sizes)
    # Ninth trial: a corpus asked smaller than the queries' relevant documents came back larger, without a word.
    with pytest.raises(ValueError, match="max_documents=3 is below the 20 documents"):
        heldout_retrieval_set(max_queries=20, max_documents=3)
    queries, corpus, _ = heldout_retrieval_set(max_queries=20, max_documents=25)
    assert len(queries) == 20 and len(corpus) == 25
    # A push to a branch name the Hub would refuse; mteb with both a public task and a local folder.
    assert main(["push", str(model_dir), "--repo-id", "a/b", "--revision", "bad name", "--dry-run",
                 str(tmp_path / "p")]) == 2
    assert "not a valid branch name" in capsys.readouterr().err and not (tmp_path / "p").exists()
    assert main(["eval", "mteb", "--model", str(model_dir), "--task", "NFCorpus", "--data", str(beir)]) == 2
    assert "not both" in capsys.readouterr().err
    # RAG's extract with no question; a config folder given as the config file.
    with pytest.raises(TypeError, match="question must be a string"):
        extract(None, [Passage(index_id=0, id="1", text="Small head.", score=-1.0, distance=0.0, radius=1.0)])
    configs = Path(__file__).resolve().parents[1] / "configs"
    assert main(["train", "finetune", "--config", str(configs)]) == 2
    assert "is a folder: give one config file in it" in capsys.readouterr().err
    # Ninth trial: `hyte eval radius --output-dir <index folder>` wrote its PNG there before refusing the JSON.
    assert main(["eval", "radius", "--model", str(model_dir), "--output-dir", str(index), "--per-depth", "2"]) == 2
    assert "index folder" in capsys.readouterr().err and not list(index.glob("radius_*"))
    # A new folder inside a model folder was created and written.
    assert main(["eval", "radius", "--model", str(model_dir), "--output-dir", str(model_dir / "radius"),
                 "--per-depth", "2"]) == 2
    assert "lies inside a model folder" in capsys.readouterr().err
    assert not (model_dir / "radius").exists()
    # A radius result of another model was replaced, with its plot, without a word.
    radius = tmp_path / "radius"
    radius.mkdir()
    (radius / "radius_y.json").write_text(json.dumps({"benchmark": "radius", "models": {"a": {"model": "other/m"}}}))
    (radius / "radius_y.png").write_bytes(b"png")
    assert main(["eval", "radius", "--model", str(model_dir), "--output-dir", str(radius), "--name", "y",
                 "--per-depth", "2"]) == 2
    assert "radius_y.json holds the radius result of another run (models: ['other/m'] -> [" in capsys.readouterr().err
    assert (radius / "radius_y.png").read_bytes() == b"png" and "other/m" in (radius / "radius_y.json").read_text()
    # Trial 20 (D1): nor one of the same model on another sample of texts (another --seed).
    sample = {"split": "all", "per_depth": 2, "min_depth": 2, "max_depth": 12, "seed": 0}
    (radius / "radius_z.json").write_text(json.dumps({"benchmark": "radius", "texts": {"sample": sample},
                                                      "models": {"m": {"model": str(model_dir)}}}))
    assert main(["eval", "radius", "--model", str(model_dir), "--output-dir", str(radius), "--name", "z",
                 "--per-depth", "2", "--seed", "1"]) == 2
    assert "holds the radius result of another run (sample.seed: 0 -> 1)" in capsys.readouterr().err
    # A folder given through a symbolic link into a model folder is refused as the folder itself is.
    (model_dir / "empty").mkdir(exist_ok=True)
    (tmp_path / "linkin").symlink_to(model_dir / "empty")
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output",
                 str(tmp_path / "linkin")]) == 2
    assert "lies inside a model folder" in capsys.readouterr().err
    assert main(["eval", "radius", "--model", str(model_dir), "--output-dir", str(tmp_path / "linkin"),
                 "--per-depth", "2"]) == 2
    assert "lies inside a model folder" in capsys.readouterr().err
    assert not any((model_dir / "empty").iterdir())
    (model_dir / "empty").rmdir()
    shutil.rmtree(tmp_path / "beir2", ignore_errors=True)


def test_train_set_lists_lora_targets_and_push_of_a_checkpoint_get_a_clear_error(tmp_path, model_dir, capsys):
    """New-user trial: a --set list that is not JSON, LoRA targets the model lacks (refused by peft only after
    mining), and `hyte push <run>/checkpoint-N` (told to delete the optimizer files that resuming needs)."""
    from pathlib import Path

    from hyte.training.config_files import parse_override

    config = Path(__file__).resolve().parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml"
    train = ["train", "finetune", "--config", str(config), "--set", f"training.output_dir={tmp_path / 'run'}"]
    for written in ("[query,value]", "query,value"):
        assert main([*train, "--set", f"lora.target_modules={written}"]) == 2
        assert ("lora.target_modules must be a list; got '" + written + "' (--set values are read as JSON, and kept "
                """as a string when they are not JSON: write a list as '["query","value"]'""") in capsys.readouterr().err
    assert parse_override('lora.target_modules=["query","value"]') == ("lora.target_modules", ["query", "value"])
    assert main([*train, "--set", "lora.r=4", "--set", 'lora.target_modules=["query","value"]']) == 2
    assert "model.options.radius_head builds a new specificity head" in capsys.readouterr().err  # frozen under LoRA
    train += ["--set", 'lora.modules_to_save=["radius_head"]']
    assert main([*train, "--set", "lora.r=4", "--set", 'lora.target_modules=["query","valeu"]']) == 2
    error = capsys.readouterr().err
    assert (f"{config}: lora.target_modules names 'valeu', which HyTEHModel has no module of: give the names of its "
            "linear layers (" in error and " query, " in error)
    assert not (tmp_path / "run").exists()  # refused before mining (and before LoRA saves its base there)

    run = tmp_path / "pushed-run"
    checkpoint = run / "checkpoint-2"
    shutil.copytree(model_dir, checkpoint)
    for name in ("optimizer.pt", "trainer_state.json"):
        (checkpoint / name).write_text("{}")
    push = ["push", str(checkpoint), "--repo-id", "a/b", "--dry-run", str(tmp_path / "p")]
    assert main(push) == 2
    assert (f"{checkpoint} is a training checkpoint, the point the run in {run} resumes from (with its optimizer "
            f"state), not a model to publish: finish the run (hyte train ... --resume), then push {run / 'final'}"
            in capsys.readouterr().err)
    shutil.copytree(model_dir, run / "final")
    assert main(push) == 2
    assert f"not a model to publish: push {run / 'final'}" in capsys.readouterr().err
    assert main([*push, "--adapter"]) == 2
    assert f"then push {run / 'adapter'}" in capsys.readouterr().err and not (tmp_path / "p").exists()
    assert main(["push", str(run / "final"), "--repo-id", "a/b", "--dry-run", str(tmp_path / "p")]) == 0


def test_training_refuses_rates_and_data_that_cannot_train_and_never_saves_a_diverged_model(tmp_path):
    """Eighth trial: a learning rate of 1e10 saved a model of NaN as final/, and one example trained 60 steps."""
    from pathlib import Path

    from hyte.training import load_config
    from hyte.training.config import ConfigError
    from hyte.training.loop import TrainingDivergedError, refuse_diverged

    config_path = Path(__file__).resolve().parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml"
    with pytest.raises(ConfigError, match="training.learning_rate = 10000000000.0 is above 1.0"):
        load_config(config_path, {"training.learning_rate": 1e10, "training.output_dir": str(tmp_path / "r")})
    with pytest.raises(ConfigError, match="data.path docs.txt is for data.source jsonl"):
        load_config(config_path, {"data.path": "docs.txt", "training.output_dir": str(tmp_path / "r")})
    with pytest.raises(ConfigError, match="cannot fill one batch"):
        load_config(config_path, {"data.max_examples": 1, "training.output_dir": str(tmp_path / "r")})
    config = load_config(config_path, {"training.output_dir": str(tmp_path / "r")})
    model = torch.nn.Linear(2, 2)
    refuse_diverged(model, config, step=3)  # finite weights: nothing to say
    with torch.no_grad():
        model.weight[0, 0] = float("nan")
    with pytest.raises(TrainingDivergedError, match="hold NaN/Inf after step 3 .first: weight."):
        refuse_diverged(model, config, step=3)


def test_tenth_trial_mistakes_are_refused(tmp_path, model_dir, capsys):
    """Found by the tenth new-user trial: an index folder whose documents.jsonl was deleted searched with row numbers
    for ids, --k-candidates below --k, a qrels split naming a path, a negative seed, integer points, a run folder
    given as a model."""
    from pathlib import Path

    from hyte import lorentz
    from hyte.data import write_beir_folder
    from hyte.encoders import load_encoder
    from hyte.training.config import ConfigError
    from hyte.training.config_files import load_config

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    index = tmp_path / "index"
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output", str(index)]) == 0
    capsys.readouterr()
    assert main(["index", "search", "--index", str(index), "--query", "short fingers", "--k", "2",
                 "--k-candidates", "1", "--broader"]) == 2
    assert "--k-candidates 1 is below --k 2" in capsys.readouterr().err
    (index / "documents.jsonl").unlink()
    assert main(["index", "search", "--index", str(index), "--query", "short fingers", "--k", "2"]) == 2
    assert "documents.jsonl is missing" in capsys.readouterr().err

    with pytest.raises(ValueError, match="split must be a plain name"):
        write_beir_folder(tmp_path / "beir", {"q1": "a"}, {"d1": "b"}, {"q1": {"d1": 1}}, split="../x")
    assert not (tmp_path / "beir").exists() and not (tmp_path / "x.tsv").exists()
    with pytest.raises(ConfigError, match=r"training.seed must be an integer"):
        load_config(Path(__file__).parents[1] / "configs" / "finetune_hyte_h_hierarchy.yaml", {"training.seed": -1})
    with pytest.raises(TypeError, match="expmap0 takes floating-point .* got torch.int64"):
        lorentz.expmap0(np.array([[1, 2, 3]]))
    (tmp_path / "run" / "final").mkdir(parents=True)
    (tmp_path / "run" / "final" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="is a training run's folder, not a model"):
        load_encoder(tmp_path / "run")


def test_eleventh_trial_input_mistakes_are_named(tmp_path, model_dir, capsys):
    """Found by the eleventh new-user trial: a blank line of a .jsonl shifted the position ids; an empty BEIR
    document failed after the model loaded, naming no file or id; /dev/null, a file as --results-dir were "not
    found"; a damaged config.json was json's bare message; --corpus --output v.npy made a folder named
    like a file."""
    from pathlib import Path

    missing_model = str(tmp_path / "no-model")  # the mistakes are named before any model is looked for
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "one"}\n\n{"text": "two"}\n')
    assert main(["index", "build", "--model", missing_model, "--input", str(docs), "--output", str(tmp_path / "i")]) == 2
    assert "docs.jsonl, line 2: blank line" in capsys.readouterr().err
    docs.write_text('{"id": "a", "text": "one"}\n{"id": "b", "text": " "}\n')
    assert main(["index", "build", "--model", missing_model, "--input", str(docs), "--output", str(tmp_path / "i")]) == 2
    assert "docs.jsonl, line 2: field 'text' must be a non-empty string (id 'b')" in capsys.readouterr().err

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "title": "", "text": ""}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "y"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert main(["eval", "retrieval", "--model", missing_model, "--data", str(beir)]) == 2
    assert 'corpus.jsonl, line 2: "title" and "text" are empty (id d2)' in capsys.readouterr().err

    if Path("/dev/null").exists():
        assert main(["encode", "--model", missing_model, "--input", "/dev/null", "--output", str(tmp_path / "v.npy")]) == 2
        assert ("input file /dev/null is a device or other special file (a pipe, a socket), not a file with data: give "
                "a .txt or .jsonl file") in capsys.readouterr().err
    (tmp_path / "results.json").write_text("{}")
    assert main(["eval", "report", "--results-dir", str(tmp_path / "results.json"),
                 "--output", str(tmp_path / "B.md")]) == 2
    assert "results.json is a file where a folder is needed: give the folder that holds the result JSON files" in \
        capsys.readouterr().err and not (tmp_path / "B.md").exists()

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "config.json").write_text('{"model_type": "hyte_h", ')
    docs.write_text('{"id": "a", "text": "one"}\n')
    assert main(["index", "build", "--model", str(damaged), "--input", str(docs), "--output", str(tmp_path / "i")]) == 2
    assert "config.json is not valid JSON (line 1" in (error := capsys.readouterr().err) and "download it again" in error

    assert main(["encode", "--model", str(model_dir), "--corpus", str(docs), "--output", str(tmp_path / "v.npy")]) == 2
    assert "v.npy is named like a .npy file, but it must be a folder" in capsys.readouterr().err
    assert not (tmp_path / "v.npy").exists()


def test_twelfth_trial_ids_links_and_unchecked_index_folders_are_named(tmp_path, model_dir, capsys):
    """Found by the twelfth new-user trial: ids "x" and " x" were indexed as two documents; a symbolic link loop
    given as --input was "not found" although `ls` lists it; an index folder whose index.json was deleted was
    searched without any check, so a reordered documents.jsonl gave hits the wrong texts."""
    import os

    from hyte.retrieval.folder import documents_for

    missing_model = str(tmp_path / "no-model")  # named before any model is looked for
    docs = tmp_path / "wsid.jsonl"
    docs.write_text('{"text": "a", "id": "x"}\n{"text": "b", "id": " x"}\n')
    assert main(["index", "build", "--model", missing_model, "--input", str(docs), "--output", str(tmp_path / "i")]) == 2
    assert ("wsid.jsonl, line 2: the id ' x' has leading white space: ids are compared exactly, so it differs from "
            "'x'") in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"ids\[1\]: the id 'y\\t' has trailing white space"):
        documents_for(["a", "b"], ["x", "y\t"])

    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    os.symlink("gone.txt", tmp_path / "dangling")
    for link, target in (("loop1", "loop2"), ("dangling", "gone.txt")):
        assert main(["index", "build", "--model", missing_model, "--input", str(tmp_path / link), "--output",
                     str(tmp_path / "i")]) == 2
        assert (f"input file {tmp_path / link} is a symbolic link that leads nowhere (a loop or a missing target; it "
                f"points to {target})") in capsys.readouterr().err

    texts = tmp_path / "docs.txt"
    texts.write_text("\n".join(DOCUMENTS) + "\n")
    index = tmp_path / "index"
    assert main(["index", "build", "--model", str(model_dir), "--input", str(texts), "--output", str(index)]) == 0
    capsys.readouterr()
    (index / "index.json").unlink()
    rows = (index / "documents.jsonl").read_text().splitlines(keepends=True)
    (index / "documents.jsonl").write_text("".join(reversed(rows)))
    assert main(["index", "search", "--index", str(index), "--query", "short fingers", "--k", "2"]) == 2
    error = capsys.readouterr().err
    assert "index.json is missing, though documents.jsonl is there" in error and "hyte index build" in error
    # A bare LorentzIndex.save (vectors without texts, no index.json) still opens.
    (index / "documents.jsonl").unlink()
    assert main(["index", "search", "--index", str(index), "--query", "short fingers", "--k", "2"]) == 0


def test_texts_longer_than_the_model_reads_are_counted_not_cut_silently(tmp_path, model_dir, capsys):
    """A document past the model's token limit was encoded from its start without a word."""
    docs = tmp_path / "docs.txt"
    from hyte.encoders import load_encoder

    limit = load_encoder(model_dir).token_limit
    docs.write_text("\n".join([*DOCUMENTS, " ".join(["heart"] * limit)]) + "\n")  # limit + 2 tokens
    assert main(["index", "build", "--model", str(model_dir), "--input", str(docs), "--output",
                 str(tmp_path / "index")]) == 0
    err = capsys.readouterr().err
    assert f"note: 1 of {len(DOCUMENTS) + 1} texts is longer than the model's {limit} tokens" in err
    assert "documents.jsonl keeps the full text" in err
    assert main(["encode", "--model", str(model_dir), "--input", str(docs), "--max-length", "3", "--output",
                 str(tmp_path / "d.npy")]) == 0
    err = capsys.readouterr().err  # at 3 tokens ([CLS] word [SEP]) every one of these texts is cut
    assert f"note: {len(DOCUMENTS) + 1} of {len(DOCUMENTS) + 1} texts are longer than the model's 3 tokens" in err
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    assert main(["encode", "--model", str(model_dir), "--input", str(docs), "--output", str(tmp_path / "f.npy")]) == 0
    assert "note:" not in capsys.readouterr().err


def test_an_internal_error_is_named_a_bug_and_debug_shows_its_traceback(monkeypatch, capsys):
    """New-user trial: an interpreter's TypeError deep in a command ('NoneType' object is not callable) was printed as
    if the user had given something wrong. A TypeError raised on purpose stays a one-line user error."""
    import hyte.report

    def broken(results_dir, output):
        return None(results_dir)  # the interpreter raises: a bug

    def refusing(results_dir, output):
        raise TypeError("results_dir must be a folder")  # a message for the user

    monkeypatch.setattr(hyte.report, "write_benchmarks_md", broken)
    assert main(["eval", "report"]) == 1
    printed = capsys.readouterr().err
    assert "hyte eval: internal error: TypeError" in printed and "bug in hyte" in printed and "--debug" in printed
    with pytest.raises(TypeError, match="not callable"):
        main(["--debug", "eval", "report"])
    monkeypatch.setattr(hyte.report, "write_benchmarks_md", refusing)
    assert main(["eval", "report"]) == 2
    assert capsys.readouterr().err.strip() == "hyte eval: error: results_dir must be a folder"

    def unavailable(results_dir, output):  # a HyteError that is no ValueError: still the user's to act on
        from hyte.retrieval.sharded import ShardUnavailableError

        raise ShardUnavailableError("shard 1 did not answer: start it, or pass allow_partial")

    monkeypatch.setattr(hyte.report, "write_benchmarks_md", unavailable)
    assert main(["eval", "report"]) == 2 and "error: shard 1 did not answer" in capsys.readouterr().err
