"""BENCHMARKS.md sections of ``hyte bench``: forward pass, encoding, ANN indexes (with the recall-vs-speed PNG)."""

from __future__ import annotations

import os
from pathlib import Path

from ..markdown import number, runs, table


def forward_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-FH forward vs its Euclidean twin (EucBERT)", "",
             ("Sequences/s of one forward pass, same shape, tokens, threads and precision; target ratio ≥ 0.8 (issue "
              "46; a file that records no target was measured against issue 2's 0.6). A command that starts with "
              "MALLOC_ settings ran with glibc keeping freed memory (see benchmarks/bench_forward.py)."), ""]
    rows = []
    for path, payload in items:
        for r in payload.get("results", []):
            ratio = r.get("ratio_fh_to_euclidean")
            met = "–" if ratio is None else "met" if ratio >= payload.get("target", 0.6) else "NOT met"
            rows.append([path.name, r.get("shape"), r.get("dtype", "float32"), f"{r.get('batch')} × {r.get('tokens')}",
                         payload.get("threads"), number(r.get("hyte_fh_sequences_per_s"), 1),
                         number(r.get("eucbert_sequences_per_s"), 1), number(ratio, 2),
                         f"{met} (≥ {payload.get('target', 0.6)})"])
    lines += table(["file", "shape", "dtype", "batch × tokens", "threads", "HyTE-FH seq/s", "EucBERT seq/s", "ratio",
                    "target"], rows)
    return lines + runs(items)


def encode_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-H (MiniLM) encoding vs plain MiniLM", "",
             ("Texts/s on real HPO definitions and peak memory; target throughput ratio ≥ 0.95 (issue 46; a file "
              "that records no target was measured against issue 3's 0.9)."), ""]
    rows = []
    for path, payload in items:
        throughput = payload.get("texts_per_s", {})
        peak = payload.get("peak_rss_mib", {})
        added = payload.get("encode_added_mib", {})
        ratio = payload.get("ratio_hyte_h_to_minilm")
        met = "–" if ratio is None else "met" if ratio >= payload.get("target", 0.9) else "NOT met"
        for key in throughput:
            rows.append([path.name, key, number(payload.get("texts")), payload.get("threads"),
                         number(throughput.get(key), 1), number(peak.get(key), 0), number(added.get(key), 0),
                         number(ratio, 3), f"{met} (≥ {payload.get('target', 0.9)})"])
    lines += table(["file", "encoder", "texts", "threads", "texts/s", "peak RSS MiB", "added by encoding MiB",
                    "ratio HyTE-H / MiniLM", "target"], rows)
    return lines + runs(items)


def plot_recall_curves(series: dict[str, list[tuple[float, float, str]]], path_png: str | os.PathLike, title: str,
                       xlabel: str = "queries / s (log scale)", target: float = 0.95,
                       ymin: float | None = 0.0) -> Path:
    """Recall@10 (y) against a speed (x, log scale): per series its points (x, recall, label), joined by a line in
    the given order, each point annotated with its label; a dotted line at the ``target`` recall. ``ymin`` None:
    the y axis starts just below the lowest recall (or the target)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path_png = Path(path_png)
    figure, axes = plt.subplots(figsize=(6.5, 4.2))
    for name, points in series.items():
        xs, ys = [x for x, _, _ in points], [y for _, y, _ in points]
        axes.plot(xs, ys, marker="o", markersize=5, label=name if len(series) > 1 and len(points) > 1 else None)
        for x, y, label in points:
            axes.annotate(label, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=8)
    axes.set_xscale("log")
    axes.margins(x=0.25)  # room for the labels right of the rightmost point
    axes.set_xlabel(xlabel)
    axes.set_ylabel("recall@10 vs exact search")
    axes.axhline(target, color="grey", linestyle=":", linewidth=0.8)
    if ymin is None:
        ymin = max(0.0, min([target] + [y for points in series.values() for _, y, _ in points]) - 0.03)
    axes.set_ylim(ymin, 1.01 if ymin > 0 else 1.05)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=8, loc="lower left")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path_png, dpi=110)
    plt.close(figure)
    return path_png


def index_section(items: list[tuple[Path, dict]], markdown_dir: Path) -> list[str]:
    lines = ["## Speed: approximate Lorentz indexes vs exact search", "",
             "Clustered hyperboloid points; recall@10 against the exact (flat) index; target: recall@10 ≥ 0.95 at "
             "≥ 5x the exact queries/s.", ""]
    for path, payload in items:
        lines += [f"### `{path.name}`: {payload.get('num_docs')} documents × {payload.get('dim')}, "
                  f"{payload.get('queries')} queries, {payload.get('threads')} threads, "
                  f"faiss {payload.get('faiss_version')}", ""]
        rows = []
        for kind, entry in payload.get("indexes", {}).items():
            options = ", ".join(f"{k}={v}" for k, v in (entry.get("options") or {}).items())
            rows.append([kind, number(entry.get("build_s"), 2), number(entry.get("qps"), 0),
                         number(entry.get("speedup_vs_exact"), 1), number(entry.get("recall_at_10")),
                         number(entry.get("measure_recall_at_10")), options])
        lines += table(["index", "build s", "queries/s", "× exact", "recall@10", "measure_recall@10", "options"],
                        rows)
        if payload.get("indexes"):  # recall@10 against queries/s, one point per index kind
            series = {kind: [(entry["qps"], entry["recall_at_10"], f"{kind} ({entry['speedup_vs_exact']:.1f}x)")]
                      for kind, entry in payload["indexes"].items()}
            png = plot_recall_curves(series, path.with_suffix(".png"), f"{payload.get('num_docs')} docs × "
                                     f"{payload.get('dim')}, {payload.get('threads')} threads")
            lines += [f"![recall vs queries/s]({Path(os.path.relpath(png, markdown_dir)).as_posix()})", ""]
        lines += runs([(path, payload)])
    return lines
