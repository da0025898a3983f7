"""The BENCHMARKS.md section of the phrase benchmark (``benchmarks/run_phrase.py``, payload ``"benchmark": "phrase"``).

Called by ``hyte.report`` (``hyte eval report``). Tables: nDCG@10 / R@10 per unit kind and budget for
each held-out set, geometry and candidate pool; paired-bootstrap contrasts; a verdict computed from the intervals
(a difference counts only when its 95 % interval excludes 0); boundary F1; teacher coverage; storage; latency.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..markdown import table

SET_NAMES = {"hpo": "HPO held-out branches", "icd10": "ICD-10-CM held-out chapters",
             "handbook-long": "Debian handbook sections (long documents, several-phrase queries)"}
COUNTS = {"exact": "exact unit counts (the seed's control: every kind keeps min(B, the smallest natural count of the "
                   "four kinds) units per text, queries and documents alike)",
          "cap": "natural unit counts under the budget (the seed's main protocol: every kind keeps min(B, its own "
                 "natural count) units per text, queries and documents alike)"}
ROWS = (("global", "global (no rerank)"), ("token", "token (every sub-word)"), ("bigram", "fixed bigram"),
        ("random", "random spans"), ("crf", "CRF phrase"), ("hybrid", "hybrid (global + phrase + lexical)"))


def _significant(interval: dict) -> int:
    """+1 / -1 when the 95 % interval lies above / below 0, else 0."""
    return 1 if interval["low"] > 0 else -1 if interval["high"] < 0 else 0


def _from(chosen: list, budgets: list) -> int | None:
    """The smallest B from which every larger budget is in ``chosen`` (None if the largest is not)."""
    return next((b for i, b in enumerate(budgets) if set(budgets[i:]) <= set(chosen)), None)


def _seeds(payload: dict) -> str:
    """"one training seed", or the seeds of each GROUP@SEED group of models."""
    groups = Counter(name.partition("@")[0] for name in payload["models"])
    if all(count == 1 for count in groups.values()):
        return "one training seed"
    return ", ".join(f"{group}: {count} training seed{'s' if count > 1 else ''}" for group, count in groups.items())


def _over_seeds_cell(result: dict, interval: bool = True) -> str:
    """"mean [interval] p verdict"; without ``interval`` (a run whose interval was too narrow), "mean (per-seed
    range) p" and no verdict."""
    p = "n/a" if result["t_test_p"] is None else f"{result['t_test_p']:.3f}"
    if not interval:
        return (f"{result['mean_difference']:+.3f} ({min(result['per_seed']):+.3f} to {max(result['per_seed']):+.3f}) "
                f"p {p}")
    return (f"{result['mean_difference']:+.3f} [{result['bootstrap_low']:+.3f}, {result['bootstrap_high']:+.3f}] "
            f"p {p} {result['verdict']}")


def _verdict(run: dict, budgets: list, ks: list) -> list[str]:
    """One line per K; a comparison is named only where its interval excludes 0 ("level" everywhere else)."""
    lines = []
    for k in ks:
        intervals = run["intervals"]

        def where(other: str, sign: int) -> list:
            return [b for b in budgets if _significant(intervals[f"{k}/{b}/crf-{other}"]) == sign]

        parts = []
        for other in ("global", "bigram", "random", "token"):
            above, below = where(other, 1), where(other, -1)
            said = ([f"above at B = {', '.join(above)}"] * bool(above)
                    + [f"below at B = {', '.join(below)}"] * bool(below))
            parts.append(f"vs {other}: " + (" and ".join(said) if said else "level at every B"))
        both = _from([b for b in where("bigram", 1) if b in where("random", 1)], budgets)
        if both is not None:
            parts.append(f"above both bigram and random at every B from {both}")
        lines.append(f"- K = {k}, CRF phrase " + "; ".join(parts) + ".")
    return lines


def multiplicity_note(contrasts: int) -> str:
    """What a table of many intervals allows one to conclude: none is corrected for the others."""
    return (f"{contrasts} intervals above, none corrected for multiplicity: at 95 % each, about "
            f"{contrasts / 20:.1f} would exclude 0 by chance alone, so a lone interval that excludes 0 is a lead for "
            "a fresh test, not a finding.")


def render_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Phrase-level reranking (H+ on HyTE): unit kinds at matched budgets", ""]
    for path, payload in items:
        setup = payload["setup"]
        ks, budgets = [str(k) for k in setup["k_candidates"]], [str(b) for b in setup["budgets"]]
        models = ", ".join(f"{name} ({m['geometry']}, {m.get('training_steps')} steps, `{m['path']}`)"
                           for name, m in payload["models"].items())
        lines += [f"### `{path.name}`: {models}", "",
                  "Held-out sets: " + "; ".join(f"{SET_NAMES.get(n, n)} {s['queries']} queries / {s['documents']} "
                                                 f"documents" for n, s in setup["sets"].items())
                  + f". Every system reranks the same global top K (K = {', '.join(ks)}), {COUNTS[setup['count']]}"
                  f", {_seeds(payload)}; intervals: paired bootstrap over queries "
                  f"({setup['bootstrap_samples']} samples), 95 %. Command: `{payload['meta']['command']}`.", ""]
        # Reading notes added to the JSON by hand after the run (what the tables mean, caveats), kept on regeneration.
        for note in payload.get("notes", []):
            lines += [note, ""]
        for set_name, runs in payload["runs"].items():
            for model_name, run in runs.items():
                lines += [f"**{SET_NAMES.get(set_name, set_name)}, {model_name}** (natural units per document: "
                          + ", ".join(f"{kind} {n:.1f}" for kind, n in run["natural_units_per_document"].items())
                          + "; per query: " + ", ".join(f"{kind} {n:.1f}" for kind, n in
                                                        run["natural_units_per_query"].items()) + ")", ""]
                for k in ks:
                    summary = run["summary"][k]
                    # global has one cell (B = 0), repeated under every budget
                    cells = {key: [summary[key]["0"]] * len(budgets) if key == "global"
                             else [summary[key][b] for b in budgets] for key, _ in ROWS}
                    rows = [[label, *(f"{c['ndcg@10']:.4f} / {c['recall@10']:.3f}" for c in cells[key])]
                            for key, label in ROWS]
                    vectors = run["vectors_per_document"]["crf"]
                    rows.append(["vectors per document (every kind)", *(f"{vectors[b]:.1f}" for b in budgets)])
                    lines += [f"K = {k} (global recall@{k}: {run['candidate_recall'][k]:.3f}); cells nDCG@10 / R@10:",
                              ""]
                    lines += table(["system", *(f"B = {b}" for b in budgets)], rows, rule="---")
                contrast_rows = [[f"K={k} {pair}", *(f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
                                                     for c in (run["intervals"][f"{k}/{b}/{pair}"] for b in budgets))]
                                 for k in ks for pair in ("crf-global", "crf-token", "crf-bigram", "crf-random",
                                                          "hybrid-global", "hybrid-crf")]
                lines += ["nDCG@10 differences, mean [95 % interval]:", ""]
                lines += table(["contrast", *(f"B = {b}" for b in budgets)], contrast_rows, rule="---")
                lines += [multiplicity_note(len(contrast_rows) * len(budgets)), ""]
                lines += ["Verdict (from the intervals):", ""] + _verdict(run, budgets, ks) + [""]
        # Runs recorded before run_phrase.py's intervals resampled seeds, then queries hold an interval over (seed,
        # query) pairs, too narrow (every seed scored the same queries); their per-query values were not kept.
        two_level = "over_seeds_interval" in payload
        for set_name, groups in payload.get("over_seeds", {}).items():
            for group, contrasts in groups.items():
                heading = f"**{SET_NAMES.get(set_name, set_name)}, {group} over {contrasts['seeds']} training seeds**: "
                lines += [heading + ("nDCG@10 difference, mean over seeds [95 % bootstrap interval over seeds, then "
                                     "queries], paired t-test p over seeds; win / loss only where both exclude 0, else "
                                     "tie:" if two_level else
                                     "nDCG@10 difference, mean over seeds (per-seed range), paired t-test p over "
                                     "seeds. No interval and no verdict: this run's interval resampled (seed, query) "
                                     "pairs as if independent (every seed scored the same queries), too narrow, and "
                                     "its per-query values were not kept, so it cannot be recomputed without "
                                     "rescoring the models:"), ""]
                rows = [[f"K={k} {pair}", *(_over_seeds_cell(contrasts[f"{k}/{b}/{pair}"], two_level)
                                            for b in budgets)]
                        for k in ks for pair in ("crf-global", "hybrid-global", "hybrid-crf", "crf-token")]
                lines += table(["contrast", *(f"B = {b}" for b in budgets)], rows, rule="---")
                lines += [multiplicity_note(len(rows) * len(budgets)) if two_level else
                          f"{len(rows) * len(budgets)} t-tests above over {contrasts['seeds']} seeds, none corrected "
                          "for multiplicity: read them as leads for a fresh test, not findings.", ""]
        first_set = SET_NAMES.get(next(iter(setup["sets"])), next(iter(setup["sets"])))
        lines += [f"**CRF boundary F1 against the trie teacher** (held-out texts: the first "
                  f"{setup.get('boundary_documents', 500)} documents of each set + its queries, cut at "
                  f"{setup.get('max_length', 128)} tokens; a boundary = a unit start other than the text's first "
                  "token; span F1 = exact multi-token units):", ""]
        rows = [[SET_NAMES.get(s, s), name, f"{f['f1']:.3f}", f"{f['precision']:.3f}", f"{f['recall']:.3f}",
                 f"{f['span_f1']:.3f}"] for s, by_model in payload["boundary_f1"].items()
                for name, f in by_model.items()]
        lines += table(["set", "model", "boundary F1", "precision", "recall", "span F1"], rows, rule="---")
        lines += ["**Teacher coverage** (terminology trie HPO + ICD-10-CM, 2-5 word terms; plus numbers and words "
                  "split into sub-words):", ""]
        rows = [[SET_NAMES.get(s, s), side, f"{c['texts_with_term_match']:.3f}", f"{c['token_share_in_terms']:.3f}",
                 f"{c['token_share_in_multi_token_units']:.3f}", f"{c['mean_multi_token_unit_length']:.2f}"]
                for s, sides in payload["coverage"].items() for side, c in sides.items()]
        lines += table(["set", "texts", "with a term match", "tokens in terms", "tokens in multi-token units",
                         "multi-token unit length"], rows, rule="---")
        lines += [f"**Storage per document** ({first_set} corpus; phrase store arrays: unit vectors, lexical ids and "
                  "weights, offsets; lorentz stores space coordinates only):", ""]
        rows = []
        for name, kinds in payload["storage"].items():
            for kind, by_budget in kinds.items():
                for budget, stats in by_budget.items():
                    half = stats.get("float16", {}).get("bytes_per_document")
                    rows.append([name, kind, budget, f"{stats['vectors_per_document']:.1f}",
                                 f"{stats['float32']['bytes_per_document']:.0f}",
                                 "-" if half is None else f"{half:.0f}"])
        lines += table(["model", "unit", "B", "vectors", "bytes float32", "bytes float16"], rows, rule="---")
        lines += ["**Latency per query** (`PhraseIndex.search`, one query at a time, exact global index over the "
                  f"{first_set} corpus, query encoding excluded and shown apart; ratio = median / global-only median):", ""]
        rows = []
        for name, lat in payload["latency"].items():
            for key, value in lat.items():
                if isinstance(value, dict):
                    rows.append([name, key, f"{value['median_ms']:.2f}", f"{value['p95_ms']:.2f}",
                                 f"{value.get('median_ratio_to_global', 1.0):.1f}"])
            rows.append([name, "query encoding (mean)", f"{lat['query_encoding_ms_mean']:.2f}", "-", "-"])
        lines += table(["model", "search", "median ms", "p95 ms", "ratio"], rows, rule="---")
    return lines


__all__ = ["render_section"]
