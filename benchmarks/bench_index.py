"""Benchmark LorentzIndex kinds on clustered hyperboloid points: build time, queries/s, recall@10 vs exact.

    python benchmarks/bench_index.py --num-docs 100000 --dim 385 --threads 2 --output results.json

Documents and queries are drawn from the same clusters: Gaussian clusters in the tangent space at the origin
(centres at geodesic radius 0.5..5, the range HyTE-H's norm clip allows) mapped with expmap0. Queries are searched as
one batch with the given thread count; recall@10 is against the exact (flat) index. The target for an approximate
index is recall@10 >= 0.95 at >= 5x the exact queries/s.
"""

from __future__ import annotations

import argparse
import json
import time

import faiss
import numpy as np
import torch

from hyte import lorentz
from hyte.retrieval import LorentzIndex


def clustered_hyperboloid_points(n: int, dim: int, clusters: int, seed: int, centers_seed: int = 0) -> np.ndarray:
    """(n, dim) float32 points of H^{dim-1}_1 in tangent-space Gaussian clusters (centres from ``centers_seed``)."""
    centers_rng, rng = np.random.default_rng(centers_seed), np.random.default_rng(seed)
    directions = centers_rng.standard_normal((clusters, dim - 1))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    centers = directions * centers_rng.uniform(0.5, 5.0, (clusters, 1))
    tangent = centers[rng.integers(clusters, size=n)] + rng.standard_normal((n, dim - 1)) * 0.5 / np.sqrt(dim - 1)
    return lorentz.expmap0(torch.from_numpy(tangent)).numpy().astype(np.float32)


def queries_per_second(index: LorentzIndex, queries: np.ndarray, repeats: int) -> tuple[float, np.ndarray]:
    """Best of ``repeats`` timings of one batched search (k = 10); also returns the ids found, (Q, 10)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        _, ids = index.search(queries, 10)
        best = min(best, time.perf_counter() - start)
    return len(queries) / best, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=385, help="ambient dimension d + 1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=None, help="default: num_docs / 100")
    parser.add_argument("--repeats", type=int, default=3, help="search timings per index; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None, help="write the results as JSON to this path")
    args = parser.parse_args()

    faiss.omp_set_num_threads(args.threads)
    clusters = args.clusters or max(1, args.num_docs // 100)
    documents = clustered_hyperboloid_points(args.num_docs, args.dim, clusters, seed=args.seed + 1)
    query_points = clustered_hyperboloid_points(args.queries, args.dim, clusters, seed=args.seed + 2)
    queries = lorentz.flip_time(torch.from_numpy(query_points)).numpy()
    print(f"{args.num_docs} documents x {args.dim}, {clusters} clusters, {args.queries} queries, "
          f"{args.threads} threads, faiss {faiss.__version__}")

    results = {"num_docs": args.num_docs, "dim": args.dim, "clusters": clusters, "queries": args.queries,
               "threads": args.threads, "faiss_version": faiss.__version__, "indexes": {}}
    exact_ids = exact_qps = None
    for kind in ("flat", "ivf", "hnsw"):
        index = LorentzIndex(args.dim, kind=kind)
        start = time.perf_counter()
        index.add(documents)
        build_s = time.perf_counter() - start
        qps, ids = queries_per_second(index, queries, args.repeats)
        if kind == "flat":
            exact_ids, exact_qps = ids, qps
        recall = float(np.mean([len(np.intersect1d(a, b)) / 10 for a, b in zip(ids, exact_ids)]))
        self_recall = index.measure_recall(k=10, sample=min(1000, args.num_docs), seed=args.seed)
        entry = {"build_s": build_s, "qps": qps, "speedup_vs_exact": qps / exact_qps, "recall_at_10": recall,
                 "measure_recall_at_10": self_recall, "options": index.options}
        results["indexes"][kind] = entry
        print(f"{kind:5s} build {build_s:7.1f} s   {qps:9.0f} q/s   {qps / exact_qps:5.1f}x exact   "
              f"recall@10 {recall:.4f}   measure_recall {self_recall:.4f}   {index.options}", flush=True)

    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
