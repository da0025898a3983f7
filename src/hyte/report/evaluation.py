"""BENCHMARKS.md sections of ``hyte eval``: hierarchy benchmark, BEIR retrieval, radius by depth, mteb, RAG."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from ..markdown import label, number, percent, runs, table

CANDIDATE_TYPES = ("target", "sibling", "parent", "grandparent", "random")


def hierarchy_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Hierarchy-sensitive retrieval", "",
             "Each query is matched to its own term's text among distractors from the same hierarchy (parent, "
             "grandparent, siblings, optionally unrelated branches); the paper's Section 5.2 / Appendix E. "
             "SpecHR = fraction of queries whose target is ranked above every parent and grandparent candidate. "
             "Top-1 columns: which candidate type the model ranks first (the paper's Table 6).", ""]
    groups: dict[tuple, list[tuple[Path, dict]]] = defaultdict(list)
    for path, payload in items:
        groups[(payload.get("data_sha256"), payload.get("data"))].append((path, payload))
    for (digest, data), members in groups.items():
        count = members[0][1].get("num_queries")
        lines += [f"### `{Path(str(data)).name}` ({count} queries{', sha256 ' + digest if digest else ''})", ""]
        build = next((p["data_build"] for _, p in members if p.get("data_build")), None)
        if build:
            lines += [f"Built from {build.get('source')} with `{build.get('command')}`.", ""]
        rows = [[label(p, path), *(number(p.get(key)) for key in ("kind", "spechr", "recall@1", "recall@5", "mrr")),
                 *(percent(p.get("top1_by_type", {}).get(t)) for t in CANDIDATE_TYPES)] for path, p in members]
        lines += table(["model", "kind", "SpecHR", "R@1", "R@5", "MRR",
                         *(f"top-1 {t}" for t in CANDIDATE_TYPES)], rows)
        by_depth = [{int(d): row for d, row in p.get("by_depth", {}).items()} for _, p in members]
        depths = sorted({d for found in by_depth for d in found})
        if depths:
            counts = {d: next(found[d].get("num_queries") for found in by_depth if d in found) for d in depths}
            lines += ["R@1 by target depth (queries per depth in the header):", ""]
            rows = [[label(p, path), *(number(found[d]["recall@1"], 3) if d in found else "–" for d in depths)]
                    for (path, p), found in zip(members, by_depth)]
            lines += table(["model", *(f"d{d} ({counts.get(d)})" for d in depths)], rows)
        lines += runs(members)
    return lines


def retrieval_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Retrieval (BEIR folders)", "", "Exact search with each model's own similarity (Lorentz inner "
             "product for HyTE, cosine for Euclidean encoders); metrics from `hyte.evaluation.metrics`. Hubness: "
             "skewness of how often each document appears in the top 10 (lower is better).", ""]
    groups: dict[tuple, list[tuple[Path, dict]]] = defaultdict(list)
    for path, payload in items:
        groups[(payload.get("data"), payload.get("split"))].append((path, payload))
    for (data, split), members in groups.items():
        first = members[0][1]
        lines += [f"### `{Path(str(data)).name}` ({split}: {first.get('num_queries')} queries, "
                  f"{first.get('num_documents')} documents)", ""]
        columns = [key for key in ("ndcg@10", "recall@10", "mrr@10", "recall@100", "map@100")
                   if any(key in p for _, p in members)]
        rows = []
        for path, p in members:
            hub = p.get("hubness") or {}
            rows.append([label(p, path), number(p.get("kind")), *(number(p.get(key)) for key in columns),
                         number(hub.get("skewness"), 2), percent(hub.get("never_retrieved_fraction"))])
        lines += table(["model", "kind", *(c.replace("recall", "R").replace("ndcg", "nDCG").replace("mrr", "MRR")
                                             .replace("map", "MAP") for c in columns),
                         "hubness skew@10", "never retrieved"], rows)
        lines += runs(members)
    return lines


def radius_section(items: list[tuple[Path, dict]], markdown_dir: Path) -> list[str]:
    lines = ["## Radius by hierarchy depth", "", "Mean ± std of each model's radius over definitions grouped by "
             "depth (HyTE: the time coordinate x0, and the geodesic distance to the origin "
             "sqrt(c) arccosh(x0/sqrt(c)); Euclidean: the norm of the un-normalised mean-pooled vector). "
             "The summary is Spearman's ρ between radius and depth over all texts with a 95 % bootstrap interval "
             "(1000 resamples of the texts). A hyperbolic model that encodes specificity has radii growing with "
             "depth, ρ > 0 (the paper's Figure 4).", ""]
    for path, payload in items:
        models = payload.get("models", {})
        texts = payload.get("texts", {})
        lines += [f"### `{path.name}`: {texts.get('source', '')} ({texts.get('split', '')})", ""]
        lines += _radius_table(models, {int(d): n for d, n in texts.get("counts", {}).items()})
        plot = payload.get("plot")
        if plot and (path.parent / plot).is_file():
            relative = os.path.relpath(path.parent / plot, markdown_dir)
            lines += [f"![radius by depth]({Path(relative).as_posix()})", ""]
        lines += runs([(path, payload)])
    return lines


def mteb_section(items: list[tuple[Path, dict]]) -> list[str]:
    rows = [[label(payload, path), task, split, subset.get("hf_subset", "default"), number(subset.get("main_score")),
             number(subset.get("ndcg_at_10")), number(subset.get("recall_at_10"))]
            for path, payload in items for task, splits in payload.get("tasks", {}).items()
            for split, subsets in splits.items() for subset in subsets]
    return ["## mteb", "", *table(["model", "task", "split", "subset", "main score", "nDCG@10", "R@10"], rows),
            *runs(items)]


def rag_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Retrieval-augmented generation", "",
             "Questions \"What is TERM?\" about held-out HPO terms; the gold passage is the term's definition. Each "
             "retriever's top k passages go into the generator's prompt (`hyte.rag`), answers are greedy, citations "
             "are attached by `hyte.rag.cite`. Context recall@k: gold passage in the prompt. Support: mean share of "
             "the answer's content words (those not in the question) found in the prompt's passages, a lexical "
             "faithfulness proxy without an LLM judge: it cannot tell a false recombination of passage words from a "
             "faithful answer, and counts a correct paraphrase as unsupported. Supported answers: support >= 0.5. "
             "Cites gold: the answer cites the gold passage.", ""]
    for path, payload in items:
        data = payload.get("data", {})
        k = payload.get("k")
        lines += [f"### `{path.name}`: {data.get('source')} ({data.get('questions')} questions, "
                  f"{data.get('documents')} passages, top {k}, generator `{Path(str(payload.get('generator'))).name}`,"
                  f" {payload.get('max_new_tokens')} new tokens at most)", ""]
        rows = []
        # Files measured since sentence marks exist also have both modes' supported sentences (hyte.rag).
        by_mode = any("supported_sentences" in r.get("metrics", {}) for r in payload.get("retrievers", {}).values())
        for name, result in payload.get("retrievers", {}).items():
            metrics = result.get("metrics", {})
            rows.append([name, number(result.get("kind")), f"`{result.get('model')}`",
                         number(metrics.get(f"context_recall@{k}"), 3), number(metrics.get("support"), 3),
                         percent(metrics.get("supported_answers")), percent(metrics.get("cites_gold"))]
                        + ([percent(metrics.get("supported_sentences")),
                            percent(metrics.get("extractive_supported_sentences")),
                            percent(metrics.get("extractive_cites_gold"))] if by_mode else []))
        lines += table(["retriever", "kind", "model", f"context recall@{k}", "support", "supported answers",
                         "cites gold"] + (["supported sentences (generated)", "supported sentences (extractive)",
                                           "cites gold (extractive)"] if by_mode else []), rows)
        lines += runs([(path, payload)])
    return lines


def _radius_table(models: dict, counts: dict[int, int]) -> list[str]:
    # One column per model for its radius (x0 or the Euclidean norm), and one more per hyperbolic model for the
    # geodesic distance to the origin; the Spearman row is the model's (ranks are the same on both).
    from ..evaluation.radius import format_depth_correlation

    columns = []
    for name, result in models.items():
        spearman = format_depth_correlation(result["spearman"]) if "spearman" in result else "not in this file"
        columns.append((f"{name} ({result.get('kind', '')}{', x0' if result.get('distance_by_depth') else ''})",
                        result.get("by_depth", {}), spearman, result.get("monotonic")))
        if result.get("distance_by_depth"):
            columns.append((f"{name} (distance to origin)", result["distance_by_depth"], spearman,
                            result.get("distance_monotonic")))
    depths = sorted({int(d) for _, by_depth, _, _ in columns for d in by_depth})
    rows = [["Spearman ρ [95 % CI]", "", *(spearman for _, _, spearman, _ in columns)]]
    for depth in depths:
        row = [str(depth), number(counts.get(depth))]
        for _, by_depth, _, _ in columns:
            entry = {int(d): v for d, v in by_depth.items()}.get(depth)
            row.append(f"{entry['mean']:.5g} ± {entry['std']:.3g}" if entry else "–")
        rows.append(row)
    rows.append(["monotonic", "", *(number(monotonic) for _, _, _, monotonic in columns)])
    lines = table(["depth", "texts", *(title for title, _, _, _ in columns)], rows)
    if any("spearman" not in result for result in models.values()):
        lines += ["This file predates the Spearman statistic: it recorded only the change from the shallowest to the "
                  "deepest level, which hangs on the few texts at the two ends and is not shown. Rerun its command "
                  "for ρ.", ""]
    return lines
