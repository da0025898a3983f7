"""Corpus encoding into resumable vector shards (``hyte.corpus``), in one process and on a local Ray cluster (a head
and one worker node on 127.0.0.1), and indexes built from the shards without encoding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyte.cli import main
from hyte.corpus import encode_corpus, read_vector_shards
from hyte.encoders import load_encoder

TEXTS = [f"document {i} describes finding number {i % 7} of organ {i % 5}" for i in range(45)]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"D{i}", "text": text}) + "\n" for i, text in enumerate(TEXTS)))
    return path


def test_shards_hold_the_encoders_vectors_and_a_rerun_encodes_only_what_is_missing(tmp_path, corpus, tiny_hyte_h_dir):
    output = tmp_path / "vectors"
    done = encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=16)
    assert (done.shards, done.encoded, done.documents) == (3, 3, 45)
    manifest, index_ids, documents, vectors = read_vector_shards(output)
    expected = load_encoder(tiny_hyte_h_dir).encode(TEXTS, role="document")
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    assert index_ids.tolist() == list(range(45)) and documents[17] == {"id": "D17", "text": TEXTS[17]}
    assert manifest["count"] == 45 and manifest["dim"] == vectors.shape[1]

    assert encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=16).encoded == 0  # all complete: kept
    (output / "shard-00001.parquet").unlink()  # as a job killed while writing shard 1 leaves it:
    (output / ".shard-00001.parquet.tmp").write_bytes(b"half a file")
    with pytest.raises(FileNotFoundError, match="1 of 3 shards are missing .*shard-00001.*rerun"):
        read_vector_shards(output)
    assert encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=16).encoded == 1
    np.testing.assert_array_equal(read_vector_shards(output)[3], vectors)
    whole = (output / "shard-00002.parquet").read_bytes()  # a shard cut short (an interrupted copy) is encoded again
    (output / "shard-00002.parquet").write_bytes(whole[: len(whole) // 2])
    assert encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=16).encoded == 1
    np.testing.assert_array_equal(read_vector_shards(output)[3], vectors)
    with pytest.raises(ValueError, match="give ray_address too"):
        encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=16, workers=4)
    copy = tmp_path / "elsewhere" / "corpus.jsonl"  # the same bytes at another path: the same corpus
    copy.parent.mkdir()
    copy.write_bytes(corpus.read_bytes())
    assert encode_corpus(tiny_hyte_h_dir, copy, output, shard_size=16).encoded == 0
    copy.write_text(corpus.read_text().replace("organ", "tissue"))
    with pytest.raises(FileExistsError, match="another encoding \\(corpus\\.bytes: "):
        encode_corpus(tiny_hyte_h_dir, copy, output, shard_size=16)

    changed = "another encoding \\(shard_size: 16 -> 10; shards: 3 -> 5\\).*--overwrite"
    with pytest.raises(FileExistsError, match=changed):
        encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=10)
    assert encode_corpus(tiny_hyte_h_dir, corpus, output, shard_size=10, overwrite=True).encoded == 5
    assert len(list(output.glob("shard-*.parquet"))) == 5
    with pytest.raises(FileExistsError, match="not a vector-shard folder"):
        encode_corpus(tiny_hyte_h_dir, corpus, tiny_hyte_h_dir)  # a model folder is never written into


def test_ray_on_a_head_and_a_worker_node_writes_what_one_process_writes(tmp_path, corpus, tiny_hyte_h_dir,
                                                                      monkeypatch):
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    # Loopback only, no usage statistics, no token files (../shared/notes/ecosystem-serving.md).
    for name, value in {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}.items():
        monkeypatch.setenv(name, value)
    local = encode_corpus(tiny_hyte_h_dir, corpus, tmp_path / "local", shard_size=8)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                            "object_store_memory": 100_000_000})
    try:
        cluster.add_node(num_cpus=1, object_store_memory=100_000_000)
        distributed = encode_corpus(tiny_hyte_h_dir, corpus, tmp_path / "ray", shard_size=8,
                                    ray_address=cluster.address, workers=2)
    finally:
        cluster.shutdown()
    assert (distributed.shards, distributed.encoded) == (local.shards, local.encoded) == (6, 6)
    ours, theirs = read_vector_shards(tmp_path / "ray"), read_vector_shards(tmp_path / "local")
    assert ours[2] == theirs[2]
    # Equal up to float32 rounding, not bit for bit: a Ray worker runs torch with its own thread count, which
    # changes the summation order inside the matrix products (observed: 1 ulp, 1.2e-7 at radius ~1).
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-6, atol=1e-6)


def test_an_index_built_from_vectors_is_the_index_built_from_texts(tmp_path, corpus, tiny_hyte_h_dir, capsys):
    assert main(["encode", "--model", str(tiny_hyte_h_dir), "--corpus", str(corpus), "--output",
                 str(tmp_path / "vectors"), "--shard-size", "20"]) == 0
    printed = capsys.readouterr()
    assert "45 documents in 3 shards" in printed.out and "note:" not in printed.err
    # Documents past the model's token limit are counted, as every other encoding command counts them.
    assert main(["encode", "--model", str(tiny_hyte_h_dir), "--corpus", str(corpus), "--output",
                 str(tmp_path / "cut"), "--shard-size", "20", "--max-length", "3"]) == 0
    assert "note: 45 of 45 texts are longer than the model's 3 tokens" in capsys.readouterr().err
    assert main(["index", "build", "--from-vectors", str(tmp_path / "vectors"), "--output", str(tmp_path / "a")]) == 0
    assert main(["index", "build", "--model", str(tiny_hyte_h_dir), "--input", str(corpus), "--output",
                 str(tmp_path / "b")]) == 0
    capsys.readouterr()
    query = ["--query", "finding number 3 of organ 2", "--k", "5"]
    assert main(["index", "search", "--index", str(tmp_path / "a"), *query]) == 0
    from_vectors = capsys.readouterr().out
    assert main(["index", "search", "--index", str(tmp_path / "b"), *query]) == 0
    assert from_vectors == capsys.readouterr().out and "[D" in from_vectors
    assert main(["index", "build", "--from-vectors", str(tmp_path / "vectors"), "--model", str(tiny_hyte_h_dir),
                 "--output", str(tmp_path / "c")]) == 2
    assert "leave out --model" in capsys.readouterr().err
    assert main(["encode", "--model", str(tiny_hyte_h_dir), "--input", str(corpus), "--corpus", str(corpus),
                 "--output", str(tmp_path / "x")]) == 2
    assert "--input and --corpus both name the texts: give --input FILE" in capsys.readouterr().err
    assert main(["index", "build", "--from-vectors", str(tmp_path / "vectors"), "--input", str(corpus),
                 "--output", str(tmp_path / "d")]) == 2  # Said "give ..." as if neither was given
    assert "--input and --from-vectors both name the documents" in capsys.readouterr().err
    assert main(["index", "search", "--index", "", "--query", "x"]) == 2  # "no index at ."
    assert "the index folder is an empty path" in capsys.readouterr().err


def test_the_command_line_states_encode_corpus_defaults():
    import inspect

    from hyte.cli.app import build_parser

    encode = inspect.signature(encode_corpus).parameters
    help_text = build_parser()._subparsers._group_actions[0].choices["encode"].format_help()
    assert f"(default {encode['shard_size'].default})" in help_text.replace("\n", " ").replace("  ", " ")
    assert f"(default {encode['workers'].default})" in help_text

