"""BENCHMARKS.md sections of the recorded comparisons: hierarchy fine-tuning (and its sweep), from scratch."""

from __future__ import annotations

from pathlib import Path

from ..evaluation.heldout import GENERAL_DOMAIN
from ..markdown import mean_sd, number, paired_difference_text, runs, table

FINETUNE_COLUMNS = (("ndcg@10", "nDCG@10"), ("recall@10", "R@10"), ("spechr", "SpecHR"), ("recall@1", "R@1 (hier.)"),
                    ("top1_by_type.sibling", "top-1 sibling"), ("top1_by_type.parent", "top-1 parent"),
                    ("top1_by_type.grandparent", "top-1 grandparent"), ("radius_depth_spearman.spearman", "radius~depth ρ"))


ONTOLOGY_TITLES = {"hpo": "HPO, held-out branches", "icd10": "ICD-10-CM, held-out chapters",
                   **{key: f"{title} (general domain, retrieval only; a fine-tune should not regress here)"
                      for key, title in GENERAL_DOMAIN.items()}}


def _seed_table(summary: dict, ontology: str) -> list[str]:
    """The ontology's title and a table of mean ± std over seeds, one row per model of ``summary``."""
    rows = [[name, *(mean_sd(by.get(ontology, {}).get(key)) for key, _ in FINETUNE_COLUMNS)]
            for name, by in summary.items()]
    return [f"{ONTOLOGY_TITLES[ontology]}:", "", *table(["model", *(h for _, h in FINETUNE_COLUMNS)], rows)]


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
    if ontology in GENERAL_DOMAIN:  # a general-domain control: no regression against the base encoder
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


def hierarchy_finetune_section(items: list[tuple[Path, dict]]) -> list[str]:
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
        lines += runs([(path, payload)])
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
    return (f"- {label}: {first} {mean_sd(a)} vs {second} {mean_sd(b)}, difference {a['mean'] - b['mean']:+.4f} "
            f"(per seed {', '.join(f'{d:+.4f}' for d in differences)}): {verdict}.")


def _gate_lines(payload: dict) -> list[str]:
    """The held-out MLM gate of every seed and model (runs recorded before the gate existed have none)."""
    rows = [[seed, model, number(run["training"]["mlm"]["gate"]["mlm_loss"], 3),
             number(run["training"]["mlm"]["gate"]["unigram_cross_entropy"], 3),
             "passed" if run["training"]["mlm"]["gate"]["passed"] else "NOT passed"]
            for model, by_seed in payload.get("runs", {}).items() for seed, run in by_seed.items()
            if "gate" in run["training"].get("mlm", {})]
    if not rows:
        return ["No held-out MLM gate was measured for this run (recorded before the gate existed): its comparison "
                "says nothing unless both models left the unigram plateau.", ""]
    margin = next(iter(payload["runs"]["hyte-fh"].values()))["training"]["mlm"]["gate"]["margin"]
    return [f"Held-out MLM gate: a seed's comparison is reported only when both models' held-out masked-LM loss is "
            f"at least {margin} nats below the unigram cross-entropy of the same masked tokens.", "",
            *table(["seed", "model", "held-out MLM loss (nats)", "unigram (nats)", "gate"], sorted(rows)), ""]


def _care_lines(payload: dict) -> list[str]:
    """Which tuning each model got (issue 45's equal care) and every contrastive stage's final logit scale."""
    selection = payload.get("temperature_selection")
    if not selection and "gated_seeds" not in payload:  # recorded before the residual rescale
        return []
    if not selection:
        return ["Not equal care: HyTE-FH got the 4√d residual rescale, found by a probe of HyTE-FH alone, and its "
                "starting logit scale from its mean document radius; EucBERT neither.", ""]
    first = next(iter(selection.values()))
    candidates = list(first["validation_ndcg@10"])
    rows = [[model, *(number(chosen["validation_ndcg@10"][t]) for t in candidates), f"{chosen['chosen']:g}"]
            for model, chosen in selection.items()]
    scales = [[seed, model, *(number(run["training"].get(stage, {}).get("final_logit_scale"), 1)
                              for stage in ("contrastive", "finetune"))]
              for model, by_seed in payload["runs"].items() for seed, run in by_seed.items()]
    return ["Equal care: each model's starting temperature chosen among the same candidates by HPO validation "
            f"nDCG@10 (seed {first['seed']}, validation branches held out of every "
            "stage after MLM), one rule for both (no start from HyTE-FH's radius). HyTE-FH keeps the reference "
            "code's 4√d residual rescale; the same probe applied to EucBERT finds its residual healthy (nothing "
            "to rescale).", "",
            *table(["model", *(f"τ {t}" for t in candidates), "chosen"], rows),
            *table(["seed", "model", "final logit scale, contrastive", "final logit scale, fine-tuning"],
                   sorted(scales))]


def _mlm_start_lines(payload: dict) -> list[str]:
    """Both models' MLM checkpoints scored before any contrastive step (runs recorded since issue 45)."""
    start = payload.get("mlm_start")
    if not start:
        return []
    lines = ["Before any contrastive step (each seed's MLM checkpoint, pooled as its final model; nDCG@10):"]
    for ontology, tested in start["comparison"].items():
        scores = {model: start["summary"][model][ontology]["ndcg@10"] for model in ("hyte-fh", "eucbert")}
        lines.append(f"- {ontology}: HyTE-FH {mean_sd(scores['hyte-fh'])}, EucBERT {mean_sd(scores['eucbert'])}; "
                     f"HyTE-FH − EucBERT {paired_difference_text(tested['ndcg@10'])}.")
    return [*lines, ""]


POOLING_ABLATIONS = {
    "retrained": "HyTE-FH retrained per pooling (contrastive and fine-tuning stages from the seed's MLM stage, which "
                 "reads no pooled point).",
    "swapped": "another pooling swapped in at inference on the OEM p = 1 model's weights (recorded before the "
               "ablation retrained per pooling; not Table 7's protocol).",
}


def from_scratch_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## From scratch: HyTE-FH vs its Euclidean twin EucBERT (held-out branches and chapters)", "",
             "`benchmarks/run_from_scratch.py` (recipe: `hyte.training.recipes.from_scratch`): both models built new "
             "at the same shape, with the same vocabulary, through the paper's three stages — "
             "MLM on HPO definitions/names/synonyms + ICD-10-CM titles/inclusion terms, contrastive pairs, "
             "fine-tuning with one hard negative per query from one fixed miner (the bundled MiniLM, so both see "
             "identical triples) — with the same data and order, steps, batch, learning rates and schedule. "
             "Scored only on HPO branches and ICD-10-CM chapters that no stage saw. HyTE-FH trains with OEM p = 1; "
             "the other HyTE-FH rows are Table 7's poolings. Mean ± standard deviation over seeds.",
             ""]
    for path, payload in items:
        recipe = payload.get("recipe", {})
        vocabulary = payload.get("vocabulary", {"kind": "bundled MiniLM WordPiece", "size": 30522})
        lines += [f"### `{path.name}`: size {payload.get('size')} (shape {recipe.get('shape')}, steps "
                  f"{recipe.get('steps')}, MLM steps {payload.get('mlm_steps', recipe.get('steps', {}).get('mlm'))}, "
                  f"batch {recipe.get('batch')}; vocabulary: {vocabulary['kind']}, {vocabulary['size']} entries), "
                  f"seeds {payload.get('seeds')}, {payload.get('evaluation', {}).get('queries')} queries per set", ""]
        lines += _care_lines(payload) + _gate_lines(payload) + _mlm_start_lines(payload)
        if payload.get("pooling_ablation_seeds"):
            lines += [f"Pooling rows: {POOLING_ABLATIONS[payload.get('pooling_ablation', 'swapped')]}", ""]
        summary = payload["summary_gated"] if "gated_seeds" in payload else payload.get("summary", {})
        if "gated_seeds" in payload and not payload["gated_seeds"]:
            lines += ["No seed passed the gate: no comparison is reported for this run.", ""]
        else:
            if "gated_seeds" in payload:
                lines += [f"Seeds that passed the gate (the tables and verdicts use these only): "
                          f"{', '.join(payload['gated_seeds'])}.", ""]
            tested = payload.get("comparison_gated", {})
            for ontology in ("hpo", "icd10"):
                lines += _seed_table(summary, ontology)
                # With per-query scores (runs since the comparison was recorded): the t-test and bootstrap verdict.
                verdicts = [f"- {label}: HyTE-FH − EucBERT {paired_difference_text(tested[ontology][key])}."
                            if key in tested.get(ontology, {}) else
                            _paired_verdict(summary, ontology, "hyte-fh oem-p1", "eucbert", key, label)
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
        lines += runs([(path, payload)])
    return lines


def hierarchy_sweep_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Tuning budget of the fine-tuning comparison (validation branches)", "",
             "Each side's one geometry-specific knob, three values each, one seed, scored on HPO branches that are "
             "held out of training but are not the test branches (`hyte.evaluation.heldout`, split "
             "\"validation\"). The recipe takes the best nDCG@10 per side.", ""]
    for path, payload in items:
        rows = []
        for variant, variant_runs in payload.get("runs", {}).items():
            for name, scores in variant_runs.items():
                hpo = scores.get("hpo", {})
                rows.append([name, number(hpo.get("ndcg@10")), number(hpo.get("recall@10")), number(hpo.get("spechr")),
                             number(hpo.get("recall@1")), number(scores.get("training", {}).get("final_logit_scale"), 1)])
        lines += table(["run", "nDCG@10", "R@10", "SpecHR", "R@1 (hier.)", "final logit scale"], rows)
        lines += runs([(path, payload)])
    return lines
