"""Phrase store and PhraseIndex: reranking equals the model's weighted MaxSim, add/remove keep the global index and
the store in step, float16 storage, save/load, and saves that are interrupted (an exception, or a killed process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from hyte import lorentz as L
from hyte.modeling_hyte_phrase import Units, weighted_maxsim
from hyte.retrieval.phrase import PhraseIndex, fuse, segment_maxsim
from phrase_helpers import TEXTS, tiny_backbone, tiny_phrase_model

DOCUMENTS = TEXTS + ["Short stature", "Congenital heart defect with atrial septal defect", "Ventricular septal defect",
                     "Chronic kidney disease, stage 3 (moderate)", "Type 1 diabetes mellitus without complications"]
QUERIES = ["diabetic kidney disease", "hole in the heart wall", "left ventricle outflow"]


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_segment_maxsim_equals_padded_weighted_maxsim(geometry):
    torch.manual_seed(0)
    make = (lambda *shape: L.expmap0(torch.randn(*shape, 6), 1.0)) if geometry == "lorentz" else \
        (lambda *shape: torch.nn.functional.normalize(torch.randn(*shape, 7), dim=-1))
    query = Units(make(1, 3), torch.rand(1, 3), torch.ones(1, 3, dtype=torch.bool))
    counts = [2, 5, 1, 3]
    documents = Units(make(4, 5), torch.ones(4, 5), torch.arange(5).unsqueeze(0) < torch.tensor(counts).view(4, 1))
    flat = torch.cat([documents.vectors[i, :c] for i, c in enumerate(counts)])
    segment = torch.cat([torch.full((c,), i) for i, c in enumerate(counts)])
    expected = weighted_maxsim(query, documents, geometry, 1.0)[0]
    torch.testing.assert_close(segment_maxsim(query.vectors[0], query.weights[0], flat, segment, 4, geometry, 1.0),
                               expected)


def test_fusion_z_normalises_each_view_and_keeps_documents_without_units_last():
    views = {"global": np.array([1.0, 2.0, 3.0]), "phrase": np.array([30.0, 10.0, -np.inf])}
    fused = fuse(views, {"global": 1.0, "phrase": 1.0})
    assert fused[2] == -np.inf and fused[0] > fused[1]
    np.testing.assert_allclose(fuse({"global": np.array([5.0, 5.0])}, {"global": 1.0}), [0.0, 0.0])


@pytest.fixture(scope="module", params=["euclidean", "lorentz"])
def model(request, bert_tokenizer):
    return tiny_phrase_model(tiny_backbone(request.param, bert_tokenizer), bert_tokenizer)


def _index(model, tokenizer, dtype="float32"):
    index = PhraseIndex.create(model, dtype=dtype, model_name="tiny")
    index.add_texts(model, tokenizer, DOCUMENTS, ids=np.arange(100, 100 + len(DOCUMENTS)))
    return index


def test_rerank_scores_are_the_models_weighted_maxsim_and_lexical_scores(model, bert_tokenizer):
    index = _index(model, bert_tokenizer)
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    documents = model.encode_phrases(DOCUMENTS, bert_tokenizer, role="document")
    scores, ids = index.search(queries, k=len(DOCUMENTS), rerank="phrase", k_candidates=len(DOCUMENTS))
    geometry = model.config.geometry
    for row, query in enumerate(queries):
        q = Units(torch.as_tensor(query["units"]).unsqueeze(0), torch.as_tensor(query["weights"]).unsqueeze(0),
                  torch.ones(1, len(query["units"]), dtype=torch.bool))
        for score, doc_id in zip(scores[row], ids[row]):
            d = documents[doc_id - 100]
            units = Units(torch.as_tensor(d["units"]).unsqueeze(0), torch.ones(1, len(d["units"])),
                          torch.ones(1, len(d["units"]), dtype=torch.bool))
            assert score == pytest.approx(float(weighted_maxsim(q, units, geometry, model.curvature)), rel=1e-4,
                                          abs=1e-5)
        assert list(scores[row]) == sorted(scores[row], reverse=True)
    lexical, lexical_ids = index.search(queries, k=3, rerank="lexical", k_candidates=len(DOCUMENTS))
    first = documents[lexical_ids[0, 0] - 100]
    q_weights = dict(zip(queries[0]["lexical_ids"].tolist(), queries[0]["lexical_weights"].tolist()))
    expected = sum(q_weights.get(t, 0.0) * w for t, w in zip(first["lexical_ids"].tolist(),
                                                             first["lexical_weights"].tolist()))
    assert lexical[0, 0] == pytest.approx(expected, rel=1e-5)


def test_global_search_is_the_plain_global_ranking_and_hybrid_reranks_the_same_candidates(model, bert_tokenizer):
    index = _index(model, bert_tokenizer)
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    documents = model.encode_phrases(DOCUMENTS, bert_tokenizer, role="document")
    scores, ids = index.search(queries, k=4)
    global_q = np.stack([q["global"] for q in queries])
    global_d = np.stack([d["global"] for d in documents])
    expected = np.argsort(-(global_q @ global_d.T), axis=1, kind="stable")[:, :4] + 100
    np.testing.assert_array_equal(ids, expected)
    _, candidates = index.search(queries, k=4)
    _, hybrid = index.search(queries, k=4, rerank="hybrid", k_candidates=4)
    assert all(set(h) == set(c) for h, c in zip(hybrid, candidates))  # reranking never leaves the pool


def test_add_remove_keep_both_parts_in_step_and_float16_stays_close(model, bert_tokenizer):
    index = _index(model, bert_tokenizer)
    stats32 = index.store.stats()
    assert index.remove([101, 104, 999]) == 2
    assert len(index) == len(index.global_index) == len(DOCUMENTS) - 2
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    _, ids = index.search(queries, k=len(DOCUMENTS), rerank="hybrid", k_candidates=20)
    assert not ({101, 104} & set(ids.ravel().tolist()))
    with pytest.raises(ValueError, match="already stored"):
        index.add([100], model.encode_phrases(DOCUMENTS[:1], bert_tokenizer))
    half = _index(model, bert_tokenizer, dtype="float16")
    assert half.store.stats()["unit_bytes_per_document"] == pytest.approx(stats32["unit_bytes_per_document"] / 2)
    full_scores, full_ids = _index(model, bert_tokenizer).search(queries, k=5, rerank="phrase", k_candidates=8)
    half_scores, _ = half.search(queries, k=5, rerank="phrase", k_candidates=8)
    np.testing.assert_allclose(half_scores, full_scores, rtol=2e-2, atol=2e-2)


def test_save_load_round_trip_gives_identical_results(model, bert_tokenizer, tmp_path):
    index = _index(model, bert_tokenizer)
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    expected = index.search(queries, k=5, rerank="hybrid", k_candidates=8)
    index.save(tmp_path / "idx")
    loaded = PhraseIndex.load(tmp_path / "idx")
    for got, want in zip(loaded.search(queries, k=5, rerank="hybrid", k_candidates=8), expected):
        np.testing.assert_array_equal(got, want)
    assert loaded.fusion == index.fusion and loaded.model_name == "tiny"


def test_a_phrase_index_is_not_saved_inside_a_model_folder(model, bert_tokenizer, tmp_path):
    """As LorentzIndex.save: hyte push would upload an index saved inside a model's folder with the model."""
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    with pytest.raises(ValueError, match=r"model/idx is or lies inside a model folder"):
        _index(model, bert_tokenizer).save(folder / "idx")
    assert not (folder / "idx").exists()


def test_an_interrupted_save_leaves_the_previous_index_loadable(model, bert_tokenizer, tmp_path, monkeypatch):
    import os

    index = _index(model, bert_tokenizer)
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    index.save(tmp_path / "idx")
    before = index.search(queries, k=5, rerank="phrase", k_candidates=8)
    index.remove([100, 102])

    # 1. An exception while the new copy is moved into place: the old one is put back.
    real_replace = os.replace

    def failing_replace(source, destination):
        if os.path.basename(source).startswith(".idx.tmp-"):  # the new copy -> idx (idx is already the backup)
            raise OSError("disk full (simulated)")
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="simulated"):
        index.save(tmp_path / "idx", overwrite=True)
    monkeypatch.setattr(os, "replace", real_replace)
    for got, want in zip(PhraseIndex.load(tmp_path / "idx").search(queries, k=5, rerank="phrase", k_candidates=8),
                         before):
        np.testing.assert_array_equal(got, want)
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no staging or backup left behind

    # 2. The process is killed between the two renames: the backup is what load finds.
    script = tmp_path / "killed_save.py"
    script.write_text(textwrap.dedent(f"""
        import os, torch
        from hyte.retrieval.phrase import PhraseIndex
        index = PhraseIndex.load({str(tmp_path / 'idx')!r})
        index.remove([100, 102])
        real_replace = os.replace
        def replace(source, destination):
            if os.path.basename(source).startswith(".idx.tmp-"):  # idx is already the backup; the new copy waits
                os._exit(9)
            real_replace(source, destination)
        os.replace = replace
        index.save({str(tmp_path / 'idx')!r}, overwrite=True)
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 9, result.stderr
    assert not (tmp_path / "idx").exists() and (tmp_path / ".idx.previous").is_dir()
    with pytest.warns(UserWarning, match="interrupted"):
        recovered = PhraseIndex.load(tmp_path / "idx")
    for got, want in zip(recovered.search(queries, k=5, rerank="phrase", k_candidates=8), before):
        np.testing.assert_array_equal(got, want)
    recovered.save(tmp_path / "idx", overwrite=True)  # the next save completes and cleans up
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["idx"]


def test_index_build_phrase_and_search_rerank_from_the_command_line(model, bert_tokenizer, tmp_path, capsys):
    from hyte.cli import main

    model.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "docs.txt").write_text("\n".join(DOCUMENTS) + "\n")
    assert main(["index", "build", "--phrase", "--model", str(tmp_path / "model"), "--input",
                 str(tmp_path / "docs.txt"), "--output", str(tmp_path / "idx"), "--phrase-dtype", "float16",
                 "--trie"]) == 0
    assert "phrase store" in capsys.readouterr().out
    assert PhraseIndex.load(tmp_path / "idx").store.dtype == "float16"
    for rerank in (None, "phrase", "hybrid"):
        argv = ["index", "search", "--index", str(tmp_path / "idx"), "--model", str(tmp_path / "model"),
                "--query", QUERIES[0], "--k", "3", "--trie"] + (["--rerank", rerank, "--k-candidates", "6"]
                                                                 if rerank else [])
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 4 and f"{rerank or 'global'}=" in out
    # --broader / --narrower pick by radius in a plain index; here they were ignored, the same hits shown.
    assert main(["index", "search", "--index", str(tmp_path / "idx"), "--query", QUERIES[0], "--broader"]) == 2
    assert "is a phrase index" in capsys.readouterr().err
    # A phrase model through the single-vector paths too: its token limit is its backbone's (the phrase config has
    # no max_position_embeddings), and texts past it are counted.
    limit = model.backbone.config.max_position_embeddings
    (tmp_path / "long.txt").write_text(" ".join(["heart"] * limit) + "\n" + DOCUMENTS[0] + "\n")
    assert main(["encode", "--model", str(tmp_path / "model"), "--input", str(tmp_path / "long.txt"), "--output",
                 str(tmp_path / "v.npy")]) == 0
    assert f"note: 1 of 2 texts is longer than the model's {limit} tokens" in capsys.readouterr().err
    assert main(["index", "build", "--phrase", "--model", str(tmp_path / "model"), "--input",
                 str(tmp_path / "long.txt"), "--output", str(tmp_path / "idx2")]) == 0
    assert f"note: 1 of 2 texts is longer than the model's {limit} tokens" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_global_indexes_serve_candidates_too(kind, bert_tokenizer, tmp_path):
    model = tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer), bert_tokenizer)
    index = PhraseIndex.create(model, kind=kind, model_name="tiny")
    index.add_texts(model, bert_tokenizer, DOCUMENTS)
    exact = _index(model, bert_tokenizer)
    queries = model.encode_phrases(QUERIES, bert_tokenizer, role="query")
    # On 8 documents the approximate index finds them all: the reranked lists equal the exact index's.
    for rerank in ("phrase", "hybrid"):
        got = index.search(queries, k=5, rerank=rerank, k_candidates=len(DOCUMENTS))
        want = exact.search(queries, k=5, rerank=rerank, k_candidates=len(DOCUMENTS))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)  # hnsw recomputes global in float64
        np.testing.assert_array_equal(got[1], want[1] - 100)
    index.remove([0, 3])
    index.save(tmp_path / "idx")
    loaded = PhraseIndex.load(tmp_path / "idx")
    assert len(loaded) == len(DOCUMENTS) - 2 and loaded.global_index.kind == kind
    _, ids = loaded.search(queries, k=len(DOCUMENTS), rerank="phrase", k_candidates=len(DOCUMENTS))
    assert not ({0, 3} & set(ids.ravel().tolist()))


def test_phrase_index_folders_go_through_lineage_search_and_rag_like_plain_ones(bert_tokenizer, tmp_path, capsys):
    """One index folder format: a phrase index folder holds its texts and its model's fingerprint; another
    phrase model is refused by lineage (not by name); HyteSearcher (what `hyte rag` and the framework retrievers
    use) searches it through the global vectors, with the same top k as the phrase index's own global search."""
    from hyte.cli import main
    from hyte.lineage import model_fingerprint
    from hyte.retrieval.folder import open_index_folder
    from hyte.retrieval.searcher import HyteSearcher

    model = tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer), bert_tokenizer)
    model.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "docs.txt").write_text("\n".join(DOCUMENTS) + "\n")
    assert main(["index", "build", "--phrase", "--model", str(tmp_path / "model"), "--input",
                 str(tmp_path / "docs.txt"), "--output", str(tmp_path / "idx")]) == 0
    folder = open_index_folder(tmp_path / "idx")
    assert folder.kind == "phrase" and [d["text"] for d in folder.documents] == DOCUMENTS
    assert folder.index.model_fingerprint == model_fingerprint(model)

    # Same name, other weights: refused by the fingerprint; admitted with --no-check-model.
    other = tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer, seed=1), bert_tokenizer, seed=1)
    other.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    capsys.readouterr()
    argv = ["index", "search", "--index", str(tmp_path / "idx"), "--model", str(tmp_path / "model"), "--query",
            QUERIES[0]]
    assert main(argv) == 2
    assert "fingerprint" in capsys.readouterr().err
    assert main(argv + ["--no-check-model"]) == 0
    model.save_pretrained(tmp_path / "model")

    searcher = HyteSearcher.from_folder(tmp_path / "idx")  # the model the folder names
    passages = searcher.search(QUERIES[1], k=3)
    _, want = folder.index.search_texts(model, bert_tokenizer, [QUERIES[1]], k=3)
    assert [p.index_id for p in passages] == want[0].tolist()
    assert [p.text for p in passages] == [DOCUMENTS[i] for i in want[0]]
    with pytest.raises(ValueError, match="fingerprint"):
        HyteSearcher.from_folder(tmp_path / "idx", model=_saved(other, bert_tokenizer, tmp_path / "other"))


def _saved(model, tokenizer, folder):
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_folder_is_refused_when_ids_are_not_its_rows(model, bert_tokenizer, tmp_path):
    """A folder pairs row i of documents.jsonl with id i: ids 100.. (or ids left by remove + add) would show other
    documents' texts beside the hits, so the folder is refused, not written."""
    from hyte.retrieval.folder import documents_for, write_index_folder

    index = _index(model, bert_tokenizer)
    with pytest.raises(ValueError, match=rf"ids are not 0\.\.{len(DOCUMENTS) - 1} \(it holds id 100\)"):
        write_index_folder(tmp_path / "folder", index, documents_for(DOCUMENTS))
    assert not (tmp_path / "folder").exists()
    # Updated in place (id 0 removed and added again): the store lists ids 1, 2, ..., 0, and every row still has its
    # id, so the folder is written.
    updated = PhraseIndex.create(model, model_name="tiny")
    updated.add_texts(model, bert_tokenizer, DOCUMENTS[:3])
    updated.remove([0])
    updated.add_texts(model, bert_tokenizer, ["Short stature"], ids=[0])
    write_index_folder(tmp_path / "updated", updated, documents_for(["Short stature", *DOCUMENTS[1:3]]))


def test_search_texts_refuses_queries_of_another_model(model, bert_tokenizer):
    """The lineage check ran only on the command line: PhraseIndex.search_texts ranked another model's queries."""
    from hyte.retrieval import IncompatibleIndexError

    index = _index(model, bert_tokenizer)
    index.search_texts(model, bert_tokenizer, QUERIES[:1], k=3)  # the index's own model
    geometry = "lorentz" if model.config.geometry == "lorentz" else "euclidean"
    other = tiny_phrase_model(tiny_backbone(geometry, bert_tokenizer, seed=1), bert_tokenizer, seed=1)
    with pytest.raises(IncompatibleIndexError):
        index.search_texts(other, bert_tokenizer, QUERIES[:1], k=3)
    scores, _ = index.search_texts(other, bert_tokenizer, QUERIES[:1], k=3, check_model=False)  # experts only
    assert scores.shape == (1, 3)
    # A model admitted once and then changed in place (trained, reloaded) is checked again, and refused.
    changed = tiny_phrase_model(tiny_backbone(geometry, bert_tokenizer), bert_tokenizer)
    index.search_texts(changed, bert_tokenizer, QUERIES[:1], k=3)
    with torch.no_grad():
        next(changed.parameters()).add_(0.5)
    with pytest.raises(IncompatibleIndexError):
        index.search_texts(changed, bert_tokenizer, QUERIES[:1], k=3)
