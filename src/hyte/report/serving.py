"""BENCHMARKS.md sections of ``benchmarks/bench_serving.py``: exactness by radius, and ANN at scale, for FAISS
(``LorentzIndex``) and PostgreSQL + pgvector (``PgVectorIndex``)."""

from __future__ import annotations

from pathlib import Path

from ..markdown import number, runs, table

_RADIUS_COLUMNS = (("faiss_float32_scan", "FAISS float32 scan"), ("lorentz_flat", "LorentzIndex flat"),
                   ("pgvector_float32_scan", "pgvector `<#>` scan"), ("pgvector_exact", "PgVectorIndex exact"),
                   ("lorentz_hnsw", "LorentzIndex hnsw"), ("pgvector_hnsw", "PgVectorIndex hnsw"))
# The targets: (recall@10, queries/s ratio to the same engine's exact search).
_TARGETS = {"lorentz": (0.99, 20.0), "pgvector": (0.95, 10.0)}


def serving_radius_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Serving: exact search far from the origin (float32 storage)", "",
             "Share of each search's top 10 that is the float64 geodesic top 10, documents and queries in one "
             "geodesic ball of radius 0.5 whose centre is at geodesic distance R from the origin (where float32 inner "
             "products of near neighbours cancel; x₀ ≈ cosh R). The plain float32 scans are what an engine returns without HyTE's re-scoring; the exact "
             "searches re-score a shortlist in float64 and widen it until certified. Queries/s in brackets.", ""]
    rows = []
    for path, payload in items:
        for row in payload.get("rows", []):
            rows.append([path.name, number(row.get("radius"), 1), number(row.get("x0_median"), 1)]
                        + [f"{number(row.get(key, {}).get('agreement'), 3)} ({number(row.get(key, {}).get('qps'), 1)})"
                           for key, _ in _RADIUS_COLUMNS])
    lines += table(["file", "R", "median x₀", *(title for _, title in _RADIUS_COLUMNS)], rows)
    return lines + runs(items)


def serving_scale_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Serving: approximate search at scale, FAISS and pgvector", "",
             "Documents with a trained HyTE-H's radius and direction distribution (real texts encoded, then filled "
             "by sampling around them); recall@10 against the exact search, queries/s and its ratio to the same "
             "engine's exact search, build time, size. Targets: LorentzIndex recall@10 ≥ 0.99 at ≥ 20× the exact "
             "index's queries/s; pgvector ANN ≥ 0.95 at ≥ 10× its exact scan.", ""]
    rows = []
    for path, payload in items:
        for name, engine in payload.get("engines", {}).items():
            family = name.split("_")[0]
            exact = name in ("lorentz_flat", "pgvector_exact")
            target = _TARGETS.get(family)
            met = ("exact" if exact else "—" if target is None else
                   "yes" if engine.get("recall_at_10", 0) >= target[0] and engine.get("qps_ratio_to_exact", 0)
                   >= target[1] else "no")
            rows.append([path.name, number(payload.get("documents")), name, number(engine.get("recall_at_10"), 4),
                         number(engine.get("qps"), 1), number(engine.get("qps_ratio_to_exact"), 1),
                         number(engine.get("build_seconds"), 1), number(engine.get("memory_bytes", 0) / 2**20, 0),
                         met])
    lines += table(["file", "documents", "engine", "recall@10", "queries/s", "× exact", "build s", "MiB",
                    "target met"], rows)
    for path, payload in items:
        radius = payload.get("radius_p05_p50_p95") or []
        agreement = payload.get("float64_agreement", {})
        lines += [f"`{path.name}`: {number(payload.get('real_documents'))} real texts; geodesic radius 5 / 50 / 95 % "
                  f"{' / '.join(number(value, 2) for value in radius)}; top 10 equal to float64 geodesic search: "
                  + ", ".join(f"{name} {number(value, 3)}" for name, value in agreement.items()), ""]
    return lines + runs(items)
