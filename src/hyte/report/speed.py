"""BENCHMARKS.md sections of ``hyte bench``: forward pass, encoding, ANN indexes (with the recall-vs-speed PNG)."""

from __future__ import annotations

import os
from pathlib import Path

from ..markdown import number, runs, table


def forward_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-FH forward vs its Euclidean twin (EucBERT)", "",
             "Sequences/s of one forward pass, same shape, tokens and threads; target ratio ≥ 0.6.", ""]
    rows = []
    for path, payload in items:
        for r in payload.get("results", []):
            rows.append([path.name, r.get("shape"), f"{r.get('batch')} × {r.get('tokens')}",
                         number(r.get("hyte_fh_sequences_per_s"), 1), number(r.get("eucbert_sequences_per_s"), 1),
                         number(r.get("ratio_fh_to_euclidean"), 2)])
    lines += table(["file", "shape", "batch × tokens", "HyTE-FH seq/s", "EucBERT seq/s", "ratio"], rows)
    return lines + runs(items)


def encode_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-H (MiniLM) encoding vs plain MiniLM", "",
             "Texts/s on real HPO definitions and peak memory; target throughput ratio ≥ 0.9.", ""]
    rows = []
    for path, payload in items:
        throughput = payload.get("texts_per_s", {})
        peak = payload.get("peak_rss_mib", {})
        added = payload.get("encode_added_mib", {})
        for key in throughput:
            rows.append([path.name, key, number(payload.get("texts")), number(throughput.get(key), 1), number(peak.get(key), 0),
                         number(added.get(key), 0), number(payload.get("ratio_hyte_h_to_minilm"), 3)])
    lines += table(["file", "encoder", "texts", "texts/s", "peak RSS MiB", "added by encoding MiB",
                     "ratio HyTE-H / MiniLM"], rows)
    return lines + runs(items)


def plot_index_tradeoff(payload: dict, path_png: str | os.PathLike, title: str | None = None) -> Path:
    """Recall@10 against queries/s (log scale) for each index kind of one ``bench_index.py`` result."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path_png = Path(path_png)
    figure, axes = plt.subplots(figsize=(6, 4))
    for kind, entry in payload.get("indexes", {}).items():
        axes.scatter(entry["qps"], entry["recall_at_10"], s=60)
        axes.annotate(f"{kind} ({entry['speedup_vs_exact']:.1f}x)", (entry["qps"], entry["recall_at_10"]),
                      textcoords="offset points", xytext=(6, -12), fontsize=9)
    axes.set_xscale("log")
    axes.margins(x=0.25)  # room for the labels right of the rightmost point
    axes.set_xlabel("queries / s (log scale)")
    axes.set_ylabel("recall@10 vs exact search")
    axes.axhline(0.95, color="grey", linestyle=":", linewidth=0.8)
    axes.set_ylim(min(0.0, axes.get_ylim()[0]), 1.05)
    axes.set_title(title or f"{payload.get('num_docs')} docs × {payload.get('dim')}, "
                            f"{payload.get('threads')} threads")
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
        if payload.get("indexes"):
            png = plot_index_tradeoff(payload, path.with_suffix(".png"))
            lines += [f"![recall vs queries/s]({Path(os.path.relpath(png, markdown_dir)).as_posix()})", ""]
        lines += runs([(path, payload)])
    return lines
