"""Serving HyTE vectors: float32 exactness by radius, and ANN at scale, for LorentzIndex (FAISS) and pgvector.

    python benchmarks/bench_serving.py radius --output benchmarks/results/serving_radius.json
    python benchmarks/bench_serving.py scale --model MODEL_DIR --documents 100000 --output results.json

``radius``: documents packed in one geodesic ball of radius 0.5 whose centre lies at geodesic distance R from the
origin (where float32 inner products of near neighbours cancel: x_0 ~ cosh R), queries from the same ball; the
share of each search's top 10 that is the float64 geodesic top 10 (time coordinates recomputed from the stored
float32 space parts, as ``hyte.lorentz`` does), for: a plain float32 inner-product scan (FAISS ``IndexFlatIP``, and
pgvector's ``ORDER BY <#>``, as any engine without HyTE's re-scoring returns them), the certified exact searches
(``LorentzIndex`` flat, ``PgVectorIndex`` exact) and the graph indexes (``LorentzIndex`` hnsw, ``PgVectorIndex``
hnsw). Queries/s of each beside it (the certificate widens the shortlist far out).

``scale``: documents whose radius and direction distribution is a trained HyTE-H's: every real text available
offline (HPO definitions and names, ICD-10-CM titles) encoded with ``--model``, then filled up to ``--documents`` by
sampling around them (a real point's tangent vector at the origin plus Gaussian noise of a tenth of the median
tangent-space distance between real neighbours, mapped back with expmap0). Exact ``LorentzIndex`` vs ivf / hnsw,
pgvector exact vs hnsw: recall@10 against exact search, queries/s and its ratio to the exact search of the same
engine, build time, memory (FAISS: the index's bytes; PostgreSQL: the table and index size). The issue's targets:
LorentzIndex recall@10 >= 0.99 at >= 20x the exact index's queries/s, pgvector ANN recall@10 >= 0.95 at >= 10x its
exact scan. A local throwaway PostgreSQL is started for the run (``hyte.retrieval.postgres_server``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np
import torch

from hyte import lorentz
from hyte.results import machine_info, portable_command, write_result
from hyte.retrieval.index import LorentzIndex
from hyte.retrieval.postgres import PgVectorIndex
from hyte.retrieval.postgres_server import start_local_postgres, stop_local_postgres

K = 10
# Search settings swept for the recall-vs-queries/s curves (each engine's default is timed too).
SWEEPS = {
    "lorentz_ivf": [{"nprobe": n} for n in (1, 2, 4, 8, 16, 32, 64)],
    "lorentz_hnsw": [{"ef_search": e} for e in (16, 32, 64, 128, 256)],
    "pgvector_hnsw": [{"ef_search": e, "candidates": c} for e, c in ((40, 10), (40, 20), (80, 40), (200, 100),
                                                                      (400, 200))],
}
# Server settings for the scale part: the HNSW graph of 1M documents is built in memory (pgvector's build slows down
# many times once the graph outgrows maintenance_work_mem), and the exact scans read the table from shared buffers.
SCALE_SERVER = {"maintenance_work_mem": "4GB", "shared_buffers": "2GB", "max_parallel_maintenance_workers": "1"}


def cluster_at_radius(n: int, dim: int, radius: float, seed: int, spread: float = 0.5) -> np.ndarray:
    """(n, dim) float32 points of H^{dim-1}_1 in a geodesic ball of radius ``spread`` whose centre lies at geodesic
    distance ``radius`` from the origin: a ball around the origin moved out by a Lorentz boost along the first space
    axis (computed in float64). Distances inside stay below 2 * spread while x_0 ~ cosh(radius): the case where
    float32 inner products cancel."""
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((n, dim - 1))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    tangent = directions * spread * rng.uniform(0, 1, (n, 1)) ** (1 / (dim - 1))
    ball = lorentz.expmap0(torch.from_numpy(tangent)).numpy()  # float64, around the origin
    moved = ball.copy()
    moved[:, 0] = np.cosh(radius) * ball[:, 0] + np.sinh(radius) * ball[:, 1]
    moved[:, 1] = np.sinh(radius) * ball[:, 0] + np.cosh(radius) * ball[:, 1]
    return moved.astype(np.float32)


def float64_top_k(documents: np.ndarray, query_points: np.ndarray, k: int) -> np.ndarray:
    """The reference: float64 geodesic top k over the stored float32 space parts (time recomputed)."""
    d64 = lorentz.add_time(torch.from_numpy(documents[:, 1:]).double())
    q64 = lorentz.add_time(torch.from_numpy(query_points[:, 1:]).double())
    result = []
    for block in range(0, len(q64), 256):
        inner = lorentz.pairwise_inner(q64[block:block + 256], d64)  # larger = nearer
        result.append(torch.topk(inner, k, dim=1).indices.numpy())
    return np.vstack(result)


def agreement(found: np.ndarray, reference: np.ndarray) -> float:
    return float(np.mean([len(np.intersect1d(f, r)) / len(r) for f, r in zip(found, reference)]))


def timed(search, queries: np.ndarray, repeats: int = 3) -> tuple[np.ndarray, float]:
    """The ids of one search of ``queries`` and the queries/s of the fastest of ``repeats`` runs (the machine is
    shared: the fastest run is the one least disturbed)."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        ids = search(queries)
        seconds.append(time.perf_counter() - start)
    return ids, len(queries) / min(seconds)


def pg_raw_scan(index: PgVectorIndex, queries: np.ndarray) -> np.ndarray:
    """pgvector's float32 ``ORDER BY embedding <#> q`` top k, taken as it comes (no re-scoring)."""
    rows = []
    for query in queries:
        found = index._connection.execute(f"SELECT id FROM {index.table} ORDER BY embedding <#> %s LIMIT {K}",
                                          (query,)).fetchall()
        rows.append([row[0] for row in found])
    return np.array(rows)


def radius_part(args, dsn: str) -> dict:
    rows = []
    for radius in args.radii:
        documents = cluster_at_radius(args.documents, args.dim, radius, seed=1)
        query_points = cluster_at_radius(args.queries, args.dim, radius, seed=2)
        queries = lorentz.flip_time(torch.from_numpy(query_points)).numpy()
        reference = float64_top_k(documents, query_points, K)
        raw = faiss.IndexFlatIP(args.dim)
        raw.add(documents)
        flat, hnsw = LorentzIndex(args.dim), LorentzIndex(args.dim, kind="hnsw")
        flat.add(documents)
        hnsw.add(documents)
        row = {"radius": radius, "x0_median": float(np.median(documents[:, 0]))}
        with PgVectorIndex.create(dsn, "radius_exact", args.dim, overwrite=True, points=documents) as pg_exact, \
                PgVectorIndex.create(dsn, "radius_hnsw", args.dim, kind="hnsw", overwrite=True,
                                     points=documents) as pg_hnsw:
            stores = {"faiss_float32_scan": raw, "lorentz_flat": flat, "lorentz_hnsw": hnsw,
                      "pgvector_exact": pg_exact, "pgvector_hnsw": pg_hnsw}
            searches = {name: (lambda q, store=store: store.search(q, K)[1]) for name, store in stores.items()}
            searches["pgvector_float32_scan"] = lambda q, store=pg_exact: pg_raw_scan(store, q)
            for name, search in searches.items():
                ids, qps = timed(search, queries, repeats=1)
                row[name] = {"agreement": agreement(ids, reference), "qps": qps}
        rows.append(row)
        print(f"R = {radius:4.1f} (x0 ~ {row['x0_median']:9.1f}): " + "  ".join(
            f"{name} {row[name]['agreement']:.3f}" for name in searches), flush=True)
    return {"documents": args.documents, "queries": args.queries, "dim": args.dim, "k": K, "rows": rows}


def real_points(model: str, limit: int | None) -> tuple[np.ndarray, list[str]]:
    """Every real text available offline, encoded as documents with ``model``."""
    from hyte.data import icd10
    from hyte.data.hpo import load_hpo
    from hyte.encoders import load_encoder

    hpo = load_hpo()
    texts = [t.definition for t in hpo.terms.values() if t.definition] + [t.name for t in hpo.terms.values()]
    texts += [icd10.title(code) for code in icd10.all_codes()]
    texts = list(dict.fromkeys(texts))
    texts = [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:limit]]  # a mix of both sources
    encoder = load_encoder(model, kind="hyte")
    return encoder.encode(texts, role="document", batch_size=128, show_progress_bar=True), texts


def fill_around(points: np.ndarray, total: int, seed: int) -> np.ndarray:
    """``points`` plus samples around them up to ``total`` rows (module docstring)."""
    rng = np.random.default_rng(seed)
    tangent = lorentz.logmap0(torch.from_numpy(points).double()).numpy()  # (N, d)
    sample = tangent[rng.choice(len(tangent), size=min(2000, len(tangent)), replace=False)]
    nearest = faiss.knn(sample.astype(np.float32), tangent.astype(np.float32), 2)[0][:, 1]
    noise = 0.1 * float(np.median(np.sqrt(np.maximum(nearest, 0))))
    extra = total - len(points)
    if extra <= 0:
        return points[:total]
    chunks = [points]
    for start in range(0, extra, 100_000):  # in chunks: 1M float64 tangent vectors alone would take 3 GB
        base = tangent[rng.integers(len(tangent), size=min(100_000, extra - start))]
        filled = base + noise * rng.standard_normal(base.shape) / np.sqrt(base.shape[1])
        chunks.append(lorentz.expmap0(torch.from_numpy(filled)).numpy().astype(np.float32))
    return np.vstack(chunks)


def scale_part(args, dsn: str) -> dict:
    points, _ = real_points(args.model, args.real_limit)
    real = len(points)
    documents = fill_around(points, args.documents, seed=1)
    query_points = fill_around(points, real + args.queries, seed=2)[real:]  # new samples around real texts
    queries = lorentz.flip_time(torch.from_numpy(query_points)).numpy()
    dim = documents.shape[1]
    radii = lorentz.distance_to_origin(torch.from_numpy(documents).double()).numpy()
    result = {"documents": len(documents), "real_documents": real, "queries": len(queries), "dim": dim,
              "radius_p05_p50_p95": [float(v) for v in np.percentile(radii, [5, 50, 95])], "engines": {}}
    print(f"{len(documents)} documents ({real} real), radius p05/p50/p95 {result['radius_p05_p50_p95']}", flush=True)

    def record(name: str, build, search, memory, engine_queries: np.ndarray = queries) -> None:
        """Build, then time the default search and each setting of the engine's sweep (recall computed below)."""
        start = time.perf_counter()
        index = build()
        build_seconds = time.perf_counter() - start
        ids, qps = timed(lambda q: search(index, q), engine_queries)
        entry = {"build_seconds": build_seconds, "qps": qps, "memory_bytes": memory(index), "ids": ids,
                 "queries": len(engine_queries), "sweep": []}
        for setting in SWEEPS.get(name, []):
            swept_ids, swept_qps = timed(lambda q: search(index, q, **setting), engine_queries)
            entry["sweep"].append({"setting": setting, "qps": swept_qps, "ids": swept_ids})
        result["engines"][name] = entry
        print(f"{name}: build {build_seconds:.1f} s, {qps:.1f} queries/s", flush=True)
        return index

    def lorentz_index(kind: str):
        def build():
            index = LorentzIndex(dim, kind=kind, threads=args.threads)
            index.add(documents)
            return index
        return build

    def faiss_bytes(index: LorentzIndex) -> int:
        return len(faiss.serialize_index(index._index))

    def pg_bytes(index: PgVectorIndex) -> int:
        return int(index._connection.execute("SELECT pg_total_relation_size(%s)", (index.table,)).fetchone()[0])

    def search(index, q, **setting):
        return index.search(q, K, **setting)[1]

    for kind in ("flat", "ivf", "hnsw"):
        record(f"lorentz_{kind}", lorentz_index(kind), search, faiss_bytes)
    pg_queries = queries[: args.pg_queries]
    for kind in ("exact", "hnsw"):
        index = record(f"pgvector_{kind}", lambda kind=kind: PgVectorIndex.create(
            dsn, f"scale_{kind}", dim, kind=kind, overwrite=True, points=documents), search, pg_bytes, pg_queries)
        index.close()
    exact = result["engines"]["lorentz_flat"]["ids"]
    # The model's own documents: do the exact searches (and a plain float32 scan) return the float64 top 10?
    reference = float64_top_k(documents, query_points[: args.pg_queries], K)
    plain = faiss.IndexFlatIP(dim)
    plain.add(documents)
    result["float64_agreement"] = {
        "faiss_float32_scan": agreement(plain.search(pg_queries, K)[1], reference),
        "lorentz_flat": agreement(exact[: len(reference)], reference),
        "pgvector_exact": agreement(result["engines"]["pgvector_exact"]["ids"], reference)}
    print(f"agreement with float64 geodesic search: {result['float64_agreement']}", flush=True)
    for name, engine in result["engines"].items():
        same_engine_exact = "lorentz_flat" if name.startswith("lorentz") else "pgvector_exact"
        for point in [engine, *engine["sweep"]]:
            point["recall_at_10"] = agreement(point.pop("ids"), exact[: engine["queries"]])
            point["qps_ratio_to_exact"] = point["qps"] / result["engines"][same_engine_exact]["qps"]
        print(f"{name}: recall@10 {engine['recall_at_10']:.4f}, {engine['qps_ratio_to_exact']:.1f}x its exact "
              f"search's queries/s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["radius", "scale"])
    parser.add_argument("--documents", type=int, default=None, help="radius: 20000 per radius; scale: 100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dim", type=int, default=65, help="radius part: ambient dimension")
    parser.add_argument("--radii", type=float, nargs="+", default=[0, 2, 4, 6, 8, 10, 12])
    parser.add_argument("--model", default=None, help="scale part: the HyTE-H model folder whose vectors to copy")
    parser.add_argument("--real-limit", type=int, default=None,
                        help="scale part: at most this many real texts (drawn at random, seed 0)")
    parser.add_argument("--pg-queries", type=int, default=100, help="scale part: queries sent to PostgreSQL")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", required=True, help="result JSON to write")
    args = parser.parse_args()
    if args.part == "scale" and args.model is None:
        parser.error("the scale part needs --model (e.g. hyte-output/quickstart/model)")
    args.documents = args.documents or (20_000 if args.part == "radius" else 100_000)
    faiss.omp_set_num_threads(args.threads)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still stops its PostgreSQL (finally)
    server_dir = tempfile.mkdtemp(prefix="hyte-pg-bench-")
    os.chmod(server_dir, 0o755)
    try:
        server = start_local_postgres(server_dir, settings=SCALE_SERVER if args.part == "scale" else None)
        result = radius_part(args, server.dsn) if args.part == "radius" else scale_part(args, server.dsn)
    finally:
        try:
            stop_local_postgres(server_dir)
        finally:
            shutil.rmtree(server_dir, ignore_errors=True)
    command = portable_command(shlex.join(["python", Path(sys.argv[0]).as_posix(), *sys.argv[1:]]))
    write_result(Path(args.output), {"benchmark": f"serving_{args.part}", **result, "threads": args.threads,
                                     "meta": {"command": command, "date": time.strftime("%Y-%m-%d %H:%M"),
                                              **machine_info()}})


if __name__ == "__main__":
    main()
