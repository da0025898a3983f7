"""BENCHMARKS.md sections of ``benchmarks/bench_serving.py``: exactness by radius, and ANN at scale, for FAISS
(``LorentzIndex``) and PostgreSQL + pgvector (``PgVectorIndex``)."""

from __future__ import annotations

import os
from pathlib import Path

from ..markdown import number, runs, table
from .speed import plot_recall_curves

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
    rows = [[path.name, number(row.get("radius"), 1), number(row.get("x0_median"), 1),
             *(f"{number(row.get(key, {}).get('agreement'), 3)} ({number(row.get(key, {}).get('qps'), 1)})"
               for key, _ in _RADIUS_COLUMNS)] for path, payload in items for row in payload.get("rows", [])]
    lines += table(["file", "R", "median x₀", *(title for _, title in _RADIUS_COLUMNS)], rows)
    return lines + runs(items)


def serving_scale_section(items: list[tuple[Path, dict]], markdown_dir: Path) -> list[str]:
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
        lines += _sweep_lines(path, payload, markdown_dir)
    return lines + runs(items)


def _sweep_lines(path: Path, payload: dict, markdown_dir: Path) -> list[str]:
    """Each ANN engine's search settings: recall@10 against queries/s as a multiple of its exact search (table and
    PNG beside the result file), and the fastest setting that meets the engine's target."""
    swept = {name: engine for name, engine in payload.get("engines", {}).items() if engine.get("sweep")}
    if not swept:
        return []
    rows, series = [], {}
    for name, engine in swept.items():
        recall_target, ratio_target = _TARGETS[name.split("_")[0]]
        points = engine["sweep"]  # in the order swept: increasing search effort
        meeting = [point for point in points if point["recall_at_10"] >= recall_target]
        best = max(meeting, key=lambda point: point["qps_ratio_to_exact"]) if meeting else None
        for point in points:
            setting = ", ".join(f"{key} {value}" for key, value in point["setting"].items())
            rows.append([name, setting, number(point["recall_at_10"], 4), number(point["qps"], 1),
                         number(point["qps_ratio_to_exact"], 1),
                         ("fastest ≥ target recall" + (", ratio target met" if point["qps_ratio_to_exact"]
                                                       >= ratio_target else ", ratio target not met"))
                         if point is best else ""])
        series[name] = [(point["qps_ratio_to_exact"], point["recall_at_10"],
                         "/".join(str(value) for value in point["setting"].values())) for point in points]
    png = plot_recall_curves(series, path.with_suffix(".png"),
                             f"{number(payload.get('documents'))} documents: recall vs speed-up over exact",
                             xlabel="queries/s ÷ the same engine's exact search (log scale)", ymin=None)
    return [f"Search settings of `{path.name}` (recall@10 against each engine's exact search):", "",
            *table(["engine", "setting", "recall@10", "queries/s", "× exact", ""], rows),
            f"![recall vs speed-up]({Path(os.path.relpath(png, markdown_dir)).as_posix()})", ""]
