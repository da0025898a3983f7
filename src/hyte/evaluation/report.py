"""``BENCHMARKS.md`` from every JSON in a results folder: evaluation results and speed benchmarks, one generator.

Each JSON is recognised by its ``"benchmark"`` key (``hierarchy``, ``retrieval``, ``radius``, ``mteb`` from
``hyte eval ...``; ``rag`` from ``hyte eval rag``; ``hierarchy_finetune`` / ``hierarchy_sweep`` from ``benchmarks/run_hierarchy_finetune.py``; ``forward``, ``encode``, ``index`` from
``hyte bench`` / the ``benchmarks/bench_*.py`` scripts; an index JSON without the key is recognised by its
``"indexes"``). Sections come in that order; inside a section
results measured on the same data share a table, one row per file, and a "Runs" list gives each file's command,
date and machine (from its ``"meta"``). Adding a model is adding a JSON (``hyte eval hierarchy ... --output
benchmarks/results/hierarchy_NAME.json``) and regenerating (``hyte eval report``). For index results a
recall-vs-queries/s PNG is (re)drawn next to the JSON.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

__all__ = ["load_results", "plot_index_tradeoff", "write_benchmarks_md"]

SECTION_ORDER = ("from_scratch", "hierarchy_finetune", "hierarchy_sweep", "compatibility_upgrade", "compatibility", "hierarchy",
                 "phrase", "retrieval", "radius", "mteb", "rag", "forward", "encode", "index")
CANDIDATE_TYPES = ("target", "sibling", "parent", "grandparent", "random")


def load_results(results_dir: str | os.PathLike) -> tuple[dict[str, list[tuple[Path, dict]]], list[tuple[Path, str]]]:
    """``({kind: [(path, payload), ...]}, [(path, problem), ...])`` for the ``*.json`` files of ``results_dir``."""
    results: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    problems = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            problems.append((path, f"unreadable ({error})"))
            continue
        if not isinstance(payload, dict):
            problems.append((path, "not a JSON object"))
            continue
        kind = payload.get("benchmark") or ("index" if "indexes" in payload else None)
        results[kind or "other"].append((path, payload))
    return results, problems


def _f(value, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines + [""]


def _run_line(path: Path, payload: dict) -> str:
    meta = payload.get("meta", {})
    command = meta.get("command") or payload.get("command")
    date = meta.get("date") or payload.get("date")
    machine = meta.get("machine") or payload.get("machine")
    processor = meta.get("processor") or payload.get("processor")
    cpus = meta.get("cpus")
    threads = payload.get("threads") or meta.get("torch_threads")
    where = ", ".join(str(part) for part in (machine, processor, f"{cpus} CPUs" if cpus else None,
                                             f"{threads} threads" if threads else None) if part)
    text = f"- `{path.name}`"
    if command:
        text += f": `{command}`"
    details = ", ".join(part for part in (date, where) if part)
    return text + (f" ({details})" if details else "")


def _runs(items: list[tuple[Path, dict]]) -> list[str]:
    return ["Runs:", "", *(_run_line(path, payload) for path, payload in items), ""]


def _label(payload: dict, path: Path) -> str:
    return payload.get("label") or Path(str(payload.get("model", path.stem))).name


# ----------------------------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------------------------


def _hierarchy(items: list[tuple[Path, dict]]) -> list[str]:
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
        rows = []
        for path, p in members:
            top1 = p.get("top1_by_type", {})
            rows.append([_label(p, path), _f(p.get("kind")), _f(p.get("spechr")), _f(p.get("recall@1")),
                         _f(p.get("recall@5")), _f(p.get("mrr")), *(_pct(top1.get(t)) for t in CANDIDATE_TYPES)])
        lines += _table(["model", "kind", "SpecHR", "R@1", "R@5", "MRR",
                         *(f"top-1 {t}" for t in CANDIDATE_TYPES)], rows)
        depths = sorted({int(d) for _, p in members for d in p.get("by_depth", {})})
        if depths:
            counts = {}
            for _, p in members:
                for d, row in p.get("by_depth", {}).items():
                    counts.setdefault(int(d), row.get("num_queries"))
            lines += ["R@1 by target depth (queries per depth in the header):", ""]
            rows = []
            for path, p in members:
                by_depth = {int(d): row for d, row in p.get("by_depth", {}).items()}
                rows.append([_label(p, path), *(_f(by_depth[d]["recall@1"], 3) if d in by_depth else "–"
                                                 for d in depths)])
            lines += _table(["model", *(f"d{d} ({counts.get(d)})" for d in depths)], rows)
        lines += _runs(members)
    return lines


def _retrieval(items: list[tuple[Path, dict]]) -> list[str]:
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
            rows.append([_label(p, path), _f(p.get("kind")), *(_f(p.get(key)) for key in columns),
                         _f(hub.get("skewness"), 2), _pct(hub.get("never_retrieved_fraction"))])
        lines += _table(["model", "kind", *(c.replace("recall", "R").replace("ndcg", "nDCG").replace("mrr", "MRR")
                                             .replace("map", "MAP") for c in columns),
                         "hubness skew@10", "never retrieved"], rows)
        lines += _runs(members)
    return lines


def _radius(items: list[tuple[Path, dict]], markdown_dir: Path) -> list[str]:
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
        lines += _runs([(path, payload)])
    return lines


def _mteb(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## mteb", ""]
    rows = []
    for path, payload in items:
        for task, splits in payload.get("tasks", {}).items():
            for split, subsets in splits.items():
                for subset in subsets:
                    rows.append([_label(payload, path), task, split, subset.get("hf_subset", "default"),
                                 _f(subset.get("main_score")), _f(subset.get("ndcg_at_10")),
                                 _f(subset.get("recall_at_10"))])
    lines += _table(["model", "task", "split", "subset", "main score", "nDCG@10", "R@10"], rows)
    return lines + _runs(items)


def _rag(items: list[tuple[Path, dict]]) -> list[str]:
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
        for name, result in payload.get("retrievers", {}).items():
            metrics = result.get("metrics", {})
            rows.append([name, _f(result.get("kind")), f"`{result.get('model')}`",
                         _f(metrics.get(f"context_recall@{k}"), 3), _f(metrics.get("support"), 3),
                         _pct(metrics.get("supported_answers")), _pct(metrics.get("cites_gold"))])
        lines += _table(["retriever", "kind", "model", f"context recall@{k}", "support", "supported answers",
                         "cites gold"], rows)
        lines += _runs([(path, payload)])
    return lines


def _radius_table(models: dict, counts: dict[int, int] | None = None) -> list[str]:
    # One column per model for its radius (x0 or the Euclidean norm), and one more per hyperbolic model for the
    # geodesic distance to the origin; the Spearman row is the model's (ranks are the same on both).
    from .hierarchy import format_depth_correlation

    columns = []
    for name, result in models.items():
        spearman = format_depth_correlation(result["spearman"]) if "spearman" in result else "not in this file"
        columns.append((f"{name} ({result.get('kind', '')}{', x0' if result.get('distance_by_depth') else ''})",
                        result.get("by_depth", {}), spearman, result.get("monotonic")))
        if result.get("distance_by_depth"):
            columns.append((f"{name} (distance to origin)", result["distance_by_depth"], spearman,
                            result.get("distance_monotonic")))
    depths = sorted({int(d) for _, by_depth, _, _ in columns for d in by_depth})
    counts = counts or {}
    rows = [["Spearman ρ [95 % CI]", "", *(spearman for _, _, spearman, _ in columns)]]
    for depth in depths:
        row = [str(depth), _f(counts.get(depth))]
        for _, by_depth, _, _ in columns:
            entry = {int(d): v for d, v in by_depth.items()}.get(depth)
            row.append(f"{entry['mean']:.5g} ± {entry['std']:.3g}" if entry else "–")
        rows.append(row)
    rows.append(["monotonic", "", *(_f(monotonic) for _, _, _, monotonic in columns)])
    lines = _table(["depth", "texts", *(title for title, _, _, _ in columns)], rows)
    if any("spearman" not in result for result in models.values()):
        lines += ["This file predates the Spearman statistic: it recorded only the change from the shallowest to the "
                  "deepest level, which hangs on the few texts at the two ends and is not shown. Rerun its command "
                  "for ρ.", ""]
    return lines


FINETUNE_COLUMNS = (("ndcg@10", "nDCG@10"), ("recall@10", "R@10"), ("spechr", "SpecHR"), ("recall@1", "R@1 (hier.)"),
                    ("top1_by_type.sibling", "top-1 sibling"), ("top1_by_type.parent", "top-1 parent"),
                    ("top1_by_type.grandparent", "top-1 grandparent"), ("radius_depth_spearman.spearman", "radius~depth ρ"))
ONTOLOGY_TITLES = {"hpo": "HPO, held-out branches", "icd10": "ICD-10-CM, held-out chapters",
                   "manpages": "Linux man pages (general domain, retrieval only; a fine-tune should not regress here)"}


def _mean_std(entry: dict | None) -> str:
    if not entry:
        return "–"
    return f"{entry['mean']:.4f} ± {entry['std']:.4f}" if len(entry["values"]) > 1 else f"{entry['mean']:.4f}"


def _seed_table(summary: dict, ontology: str) -> list[str]:
    """The ontology's title and a table of mean ± std over seeds, one row per model of ``summary``."""
    rows = [[name, *(_mean_std(by.get(ontology, {}).get(key)) for key, _ in FINETUNE_COLUMNS)]
            for name, by in summary.items()]
    return [f"{ONTOLOGY_TITLES[ontology]}:", "", *_table(["model", *(h for _, h in FINETUNE_COLUMNS)], rows)]


def _finetune_verdict(summary: dict, ontology: str) -> list[str]:
    """The issue-10 targets, checked from the numbers: best HyTE-H vs best Euclidean fine-tune (by mean)."""
    def best(prefix: str, key: str) -> tuple[str, float] | None:
        found = [(name, by[ontology][key]["mean"]) for name, by in summary.items()
                 if name.startswith(prefix) and key in by.get(ontology, {})]
        return max(found, key=lambda item: item[1]) if found else None

    def paired(first: str, second: str, key: str) -> str:
        differences = _seed_differences(summary, ontology, first, second, key)
        return "; per seed " + ", ".join(f"{d:+.4f}" for d in differences) if len(differences or []) > 1 else ""

    lines = []
    if ontology == "manpages":  # the general-domain control: no regression against the base encoder
        base = summary.get("base", {}).get(ontology, {}).get("ndcg@10")
        for name, by in summary.items():
            entry = by.get(ontology, {}).get("ndcg@10")
            if name != "base" and base and entry:
                gap = entry["mean"] - base["mean"]
                lines.append(f"- {name}: nDCG@10 {entry['mean']:.4f} vs base {base['mean']:.4f} ({gap:+.4f}): "
                             f"{'no regression' if gap >= 0 else 'REGRESSION'}.")
        return lines + [""] if lines else []
    for key, label, margin in (("ndcg@10", "nDCG@10", 0.0), ("spechr", "SpecHR", 0.05)):
        hyperbolic, euclidean = best("hyte-h", key), best("euclidean", key)
        if hyperbolic and euclidean:
            gap = hyperbolic[1] - euclidean[1]
            verdict = "met" if gap >= margin else "NOT met"
            lines.append(f"- {label}: best HyTE-H ({hyperbolic[0]}) {hyperbolic[1]:.4f} vs best Euclidean "
                         f"({euclidean[0]}) {euclidean[1]:.4f}, difference {gap:+.4f}"
                         f"{paired(hyperbolic[0], euclidean[0], key)}; target ≥ {margin:+.2f}: {verdict}.")
    spearman = best("hyte-h", "radius_depth_spearman.spearman")
    if spearman:
        lines.append(f"- radius–depth Spearman of the best HyTE-H ({spearman[0]}) {spearman[1]:.3f}; target ≥ 0.3: "
                     f"{'met' if spearman[1] >= 0.3 else 'NOT met'}.")
    return lines + [""] if lines else []


def _hierarchy_finetune(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Hierarchy-aware fine-tuning: HyTE-H vs its Euclidean control (held-out branches and chapters)", "",
             "`benchmarks/run_hierarchy_finetune.py` (recipe: `hyte.training.recipes`): the bundled all-MiniLM-L6-v2 "
             "fine-tuned on HPO training branches + ICD-10-CM training chapters, as a Euclidean encoder (mean "
             "pooling, cosine) or as HyTE-H (Lorentz, OEM, geodesic), each without and with the hierarchy "
             "supervision (parents and siblings as hard negatives + the order-embedding / entailment-cone term). "
             "Everything else is identical: examples, base-mined negatives, steps, batch, learning rates, learnable "
             "temperature. Mean ± standard deviation over seeds; evaluated only on branches/chapters that no stage "
             "saw. Targets below are issue 10's, checked from these numbers.", ""]
    for path, payload in items:
        summary = payload.get("summary", {})
        evaluation = payload.get("evaluation", {})
        where = ("validation branches (HPO branches held out of this run's training, not the test branches)"
                 if payload.get("split") == "validation" else "held-out test branches/chapters")
        lines += [f"### `{path.name}`: {payload.get('steps')} steps, seeds {payload.get('seeds')}, "
                  f"{evaluation.get('queries')} queries per set, {where}", ""]
        ontologies = [o for o in ONTOLOGY_TITLES if any(o in by for by in summary.values())]
        for ontology in ontologies:
            lines += _seed_table(summary, ontology)
            lines += _finetune_verdict(summary, ontology)
        lines += _runs([(path, payload)])
    return lines


def _seed_differences(summary: dict, ontology: str, first: str, second: str, key: str) -> list[float] | None:
    """``first`` minus ``second`` seed by seed (the runs share seeds: same data order, same negatives); None unless
    both have the entry for the same number of seeds."""
    a, b = (summary.get(name, {}).get(ontology, {}).get(key) for name in (first, second))
    if not a or not b or len(a["values"]) != len(b["values"]):
        return None
    return [x - y for x, y in zip(a["values"], b["values"])]


def _paired_verdict(summary: dict, ontology: str, first: str, second: str, key: str, label: str) -> str | None:
    """"label: first m ± s vs second m ± s, difference d (per seed ...): who is ahead" — "ahead" only when every
    seed agrees on the sign."""
    differences = _seed_differences(summary, ontology, first, second, key)
    if differences is None:
        return None
    a, b = summary[first][ontology][key], summary[second][ontology][key]
    if len(differences) < 2:
        verdict = "one seed, no verdict"
    elif all(d > 0 for d in differences):
        verdict = f"{first} ahead on every seed"
    elif all(d < 0 for d in differences):
        verdict = f"{second} ahead on every seed"
    else:
        verdict = "no consistent difference"
    return (f"- {label}: {first} {_mean_std(a)} vs {second} {_mean_std(b)}, difference {a['mean'] - b['mean']:+.4f} "
            f"(per seed {', '.join(f'{d:+.4f}' for d in differences)}): {verdict}.")


def _from_scratch(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## From scratch: HyTE-FH vs its Euclidean twin EucBERT (held-out branches and chapters)", "",
             "`benchmarks/run_from_scratch.py` (recipe: `hyte.training.recipes.from_scratch`): both models built new "
             "at the same shape, with the bundled MiniLM's WordPiece vocabulary, through the paper's three stages — "
             "MLM on HPO definitions/names/synonyms + ICD-10-CM titles/inclusion terms, contrastive pairs, "
             "fine-tuning with one hard negative per query from one fixed miner (the bundled MiniLM, so both see "
             "identical triples) — with the same data and order, steps, batch, learning rates and schedule; neither "
             "side was tuned. Scored only on HPO branches and ICD-10-CM chapters that no stage saw. HyTE-FH trains "
             "with OEM p = 1; the other HyTE-FH rows swap another pooling in at inference on the same weights "
             "(Table 7's poolings, not retrained). Mean ± standard deviation over seeds.", ""]
    for path, payload in items:
        summary, recipe = payload.get("summary", {}), payload.get("recipe", {})
        lines += [f"### `{path.name}`: size {payload.get('size')} (shape {recipe.get('shape')}, steps "
                  f"{recipe.get('steps')}, batch {recipe.get('batch')}), seeds {payload.get('seeds')}, "
                  f"{payload.get('evaluation', {}).get('queries')} queries per set", ""]
        for ontology in ("hpo", "icd10"):
            lines += _seed_table(summary, ontology)
            verdicts = [_paired_verdict(summary, ontology, "hyte-fh oem-p1", "eucbert", key, label)
                        for key, label in (("spechr", "SpecHR"), ("ndcg@10", "nDCG@10"),
                                           ("radius_depth_spearman.spearman", "radius~depth ρ"))]
            lines += [v for v in verdicts if v] + [""]
        cost = payload.get("cost")
        if cost:
            median = cost["median"]
            lines += [f"Cost of the geometry (MLM step at this shape, batch {cost['batch']}, one thread, medians of "
                      f"{cost['rounds']} fresh processes per model, alternating): HyTE-FH "
                      f"{median['hyte-fh']['step_seconds']:.3f} s vs EucBERT {median['eucbert']['step_seconds']:.3f} s "
                      f"per step (×{cost['step_time_ratio']:.2f}); peak step memory {median['hyte-fh']['step_mb']:.0f} "
                      f"vs {median['eucbert']['step_mb']:.0f} MB (×{cost['step_memory_ratio']:.2f}).", ""]
        lines += [f"Non-finite values or logged losses / gradient norms in any stage of any run: "
                  f"{payload.get('nonfinite')}.", ""]
        if payload.get("reading"):
            lines += [f"Reading (written by hand after seeing these numbers): {payload['reading']}", ""]
        lines += _runs([(path, payload)])
    return lines


def _hierarchy_sweep(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Tuning budget of the fine-tuning comparison (validation branches)", "",
             "Each side's one geometry-specific knob, three values each, one seed, scored on HPO branches that are "
             "held out of training but are not the test branches (`hyte.evaluation.heldout`, split "
             "\"validation\"). The recipe takes the best nDCG@10 per side.", ""]
    for path, payload in items:
        rows = []
        for variant, runs in payload.get("runs", {}).items():
            for name, scores in runs.items():
                hpo = scores.get("hpo", {})
                rows.append([name, _f(hpo.get("ndcg@10")), _f(hpo.get("recall@10")), _f(hpo.get("spechr")),
                             _f(hpo.get("recall@1")), _f(scores.get("training", {}).get("final_logit_scale"), 1)])
        lines += _table(["run", "nDCG@10", "R@10", "SpecHR", "R@1 (hier.)", "final logit scale"], rows)
        lines += _runs([(path, payload)])
    return lines


def _forward(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-FH forward vs its Euclidean twin (EucBERT)", "",
             "Sequences/s of one forward pass, same shape, tokens and threads; target ratio ≥ 0.6.", ""]
    rows = []
    for path, payload in items:
        for r in payload.get("results", []):
            rows.append([path.name, r.get("shape"), f"{r.get('batch')} × {r.get('tokens')}",
                         _f(r.get("hyte_fh_sequences_per_s"), 1), _f(r.get("eucbert_sequences_per_s"), 1),
                         _f(r.get("ratio_fh_to_euclidean"), 2)])
    lines += _table(["file", "shape", "batch × tokens", "HyTE-FH seq/s", "EucBERT seq/s", "ratio"], rows)
    return lines + _runs(items)


def _encode(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Speed: HyTE-H (MiniLM) encoding vs plain MiniLM", "",
             "Texts/s on real HPO definitions and peak memory; target throughput ratio ≥ 0.9.", ""]
    rows = []
    for path, payload in items:
        throughput = payload.get("texts_per_s", {})
        peak = payload.get("peak_rss_mib", {})
        added = payload.get("encode_added_mib", {})
        for key in throughput:
            rows.append([path.name, key, _f(payload.get("texts")), _f(throughput.get(key), 1), _f(peak.get(key), 0),
                         _f(added.get(key), 0), _f(payload.get("ratio_hyte_h_to_minilm"), 3)])
    lines += _table(["file", "encoder", "texts", "texts/s", "peak RSS MiB", "added by encoding MiB",
                     "ratio HyTE-H / MiniLM"], rows)
    return lines + _runs(items)


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


def _index(items: list[tuple[Path, dict]], markdown_dir: Path) -> list[str]:
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
            rows.append([kind, _f(entry.get("build_s"), 2), _f(entry.get("qps"), 0),
                         _f(entry.get("speedup_vs_exact"), 1), _f(entry.get("recall_at_10")),
                         _f(entry.get("measure_recall_at_10")), options])
        lines += _table(["index", "build s", "queries/s", "× exact", "recall@10", "measure_recall@10", "options"],
                        rows)
        if payload.get("indexes"):
            png = plot_index_tradeoff(payload, path.with_suffix(".png"))
            lines += [f"![recall vs queries/s]({Path(os.path.relpath(png, markdown_dir)).as_posix()})", ""]
        lines += _runs([(path, payload)])
    return lines


def _compatibility_upgrade(items: list[tuple[Path, dict]]) -> list[str]:
    from .compatibility import render_upgrade_section

    return render_upgrade_section(items)


def _compatibility(items: list[tuple[Path, dict]]) -> list[str]:
    from .compatibility import render_matrix_section

    return render_matrix_section(items)


def _phrase(items: list[tuple[Path, dict]]) -> list[str]:
    from ..phrase.report import render_section

    return render_section(items)


def write_benchmarks_md(results_dir: str | os.PathLike, path: str | os.PathLike = "BENCHMARKS.md") -> Path:
    """(Re)write ``path`` from every ``*.json`` in ``results_dir`` (see the module docstring); returns ``path``."""
    results_dir, path = Path(results_dir), Path(path)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"results folder not found: {results_dir}")
    results, problems = load_results(results_dir)
    markdown_dir = path.parent.resolve()
    shown_dir = os.path.relpath(results_dir.resolve(), markdown_dir)
    lines = ["# HyTE benchmarks", "",
             f"Generated from `{Path(shown_dir).as_posix()}/*.json` by `hyte eval report` (also run by `hyte bench`)."
             " Do not edit by hand: add or replace a JSON there and regenerate. Evaluation results come from "
             "`hyte eval hierarchy|retrieval|radius|mteb|rag --output ...`, speed results from `hyte bench`.", ""]
    if not results:
        lines += ["No results yet.", ""]
    builders = {"from_scratch": _from_scratch, "hierarchy_finetune": _hierarchy_finetune, "hierarchy_sweep": _hierarchy_sweep,
                "hierarchy": _hierarchy, "retrieval": _retrieval, "mteb": _mteb, "rag": _rag,
                "forward": _forward, "encode": _encode,
                "compatibility_upgrade": _compatibility_upgrade, "compatibility": _compatibility,
                "phrase": _phrase}
    for kind in SECTION_ORDER:
        if kind not in results:
            continue
        items = results[kind]
        if kind == "radius":
            lines += _radius(items, markdown_dir)
        elif kind == "index":
            lines += _index(items, markdown_dir)
        else:
            lines += builders[kind](items)
    others = [(p, payload) for kind, items in results.items() if kind not in SECTION_ORDER for p, payload in items]
    if others or problems:
        lines += ["## Other files", ""]
        lines += [f"- `{p.name}`: benchmark {payload.get('benchmark', 'unknown')!r} (no section for it)"
                  for p, payload in others]
        lines += [f"- `{p.name}`: {problem}" for p, problem in problems]
        lines += [""]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path
