"""BENCHMARKS.md section of issue 24's protocol (``benchmarks/run_specificity.py``): does the radius mean
specificity? The validation grid and its frozen choices, then the held-out test with paired verdicts and the
radius diagnostics, and the issue's targets checked from the numbers."""

from __future__ import annotations

from pathlib import Path

from ..evaluation.heldout import GENERAL_DOMAIN
from ..markdown import mean_sd, number, paired_difference_text, percent, runs, table
from .finetune import ONTOLOGY_TITLES

DIAGNOSTICS = (("radius_depth_spearman.spearman", "radius~depth ρ"), ("edges.child_farther", "child farther"),
               ("edges.inside_cone", "inside cone"), ("edges.broader_top1", "broader → parent"),
               ("edges.narrower_top1", "narrower → child"), ("edges.radius_sd", "radius sd"))


def _round(payload: dict) -> str:
    """A heading for rounds after the first (older files have no round: the first)."""
    number_ = payload.get("round", 1)
    return "" if number_ == 1 else f"Round {number_} (branch split seed {payload.get('split_seed')}). "


def _selection_lines(payload: dict) -> list[str]:
    rows = []
    for arm, candidates in payload["grid"].items():
        for candidate in candidates:
            hpo = payload["runs"][arm][candidate["name"]]["hpo"]
            edges = hpo["edges"]
            chosen = payload["chosen"][arm]["name"] == candidate["name"]
            settings = {**candidate["loss"], **candidate.get("training", {})}
            rows.append([arm, candidate["name"] + (" **(chosen)**" if chosen else ""), candidate["variant"],
                         ", ".join(f"{k} {v}" for k, v in settings.items()), number(hpo["ndcg@10"]),
                         number(hpo["spechr"]), percent(edges["child_farther"]), percent(edges["inside_cone"]),
                         number(edges["radius_sd"], 3), number(hpo["ndcg@10"] + hpo["spechr"] + edges["child_farther"])])
    base = payload["runs"]["base"]["hpo"]
    rows.append(["base", "all-MiniLM-L6-v2 (untrained)", "–", "–", number(base["ndcg@10"]), number(base["spechr"]),
                 percent(base["edges"]["child_farther"]), "–", number(base["edges"]["radius_sd"], 3), "–"])
    return [(f"{_round(payload)}Selection on HPO validation branches (trained with {payload['validation_fraction']:.0%} of branches "
             f"held out, seed {payload['seed']}, {payload['steps']} steps); score = {payload['score']}, fixed "
             "before any run:"), "",
            *table(["arm", "candidate", "variant", "loss and training", "nDCG@10", "SpecHR", "child farther", "inside cone",
                    "radius sd", "score"], rows),
            ("Radius: geodesic distance to the origin (HyTE-H), vector norm (Euclidean); its standard deviation over "
             "the edges' texts says how much room the shares above are measured in."), ""]


def _targets(payload: dict) -> list[str]:
    """Issue 24's targets, each checked from the recorded numbers."""
    summary, comparison = payload["summary"], payload["comparison"]
    lines = []
    for ontology in ("hpo", "icd10"):
        hyte = summary["hyte-h"].get(ontology, {})
        rho, farther = hyte.get("radius_depth_spearman.spearman"), hyte.get("edges.child_farther")
        low = hyte.get("radius_depth_spearman.ci_low")
        if rho:
            met = rho["mean"] >= 0.3 and low is not None and min(low["values"]) > 0
            lines.append(f"- {ontology}: radius–depth ρ {rho['mean']:+.3f} (lowest per-seed interval bound "
                         f"{min(low['values']) if low else float('nan'):+.3f}); target ≥ +0.3 with the bound above 0: "
                         f"{'met' if met else 'NOT met'}.")
        if farther:
            lines.append(f"- {ontology}: child farther out than its parent on {percent(farther['mean'])} of held-out "
                         f"edges; target ≥ 80 %: {'met' if farther['mean'] >= 0.8 else 'NOT met'}.")
        spechr = comparison.get(ontology, {}).get("spechr")
        if spechr:
            met = spechr["verdict"] == "win" and spechr["mean_difference"] >= 0.05
            lines.append(f"- {ontology}: SpecHR HyTE-H − Euclidean {spechr['mean_difference']:+.4f} ({spechr['verdict']})"
                         f"; target ≥ +0.05 and significant: {'met' if met else 'NOT met'}.")
        ndcg = comparison.get(ontology, {}).get("ndcg@10")
        if ndcg:
            lines.append(f"- {ontology}: nDCG@10 HyTE-H − Euclidean {ndcg['mean_difference']:+.4f} "
                         f"({ndcg['verdict']}); target: not below: {'NOT met' if ndcg['verdict'] == 'loss' else 'met'}.")
    for ontology, title in GENERAL_DOMAIN.items():
        base = summary.get("base", {}).get(ontology, {}).get("ndcg@10")
        for arm in ("hyte-h", "euclidean"):
            entry = summary[arm].get(ontology, {}).get("ndcg@10")
            if base and entry:
                gap = entry["mean"] - base["mean"]
                lines.append(f"- {title}: {arm} nDCG@10 {entry['mean']:.4f} vs base {base['mean']:.4f} "
                             f"({gap:+.4f}); target: no regression beyond 0.005: {'met' if gap >= -0.005 else 'NOT met'}.")
    return ["Targets of issue 24, checked from the numbers above:", "", *lines, ""]


def _test_lines(payload: dict) -> list[str]:
    summary, comparison = payload["summary"], payload["comparison"]
    names = {"base": "all-MiniLM-L6-v2 (untrained)",
             **{arm: f"{arm}: {choice['name']} ({choice['variant']})" for arm, choice in payload["chosen"].items()}}
    lines = [(f"{_round(payload)}Held-out test, seeds {', '.join(map(str, payload['seeds']))}, {payload['steps']} steps, the choices "
              "frozen above. Mean ± sd over seeds. Diagnostics on held-out is-a edges (hyperbolic: geodesic "
              "distance to the origin and entailment cones; Euclidean: the vector norm, no cone)."), ""]
    for ontology in comparison:
        keys = [("ndcg@10", "nDCG@10"), ("spechr", "SpecHR"), *DIAGNOSTICS]
        rows = [[names[arm], *(mean_sd(summary[arm].get(ontology, {}).get(key), 3 if "." in key else 4)
                               for key, _ in keys)] for arm in ("hyte-h", "euclidean", "base")]
        lines += [f"{ONTOLOGY_TITLES[ontology]}:", "", *table(["model", *(h for _, h in keys)], rows)]
        for key, result in comparison[ontology].items():
            lines.append(f"- {key}: HyTE-H − Euclidean {paired_difference_text(result)}.")
        lines.append("")
    return lines + _targets(payload)


def specificity_section(items: list[tuple[Path, dict]]) -> list[str]:
    """Both files of ``benchmarks/run_specificity.py`` (benchmark ``specificity_selection`` and ``specificity``)."""
    lines = ["## Radius as specificity: hierarchy-respecting negatives, validation-only choices (issue 24)", "",
             ("A query's own ancestors and descendants are masked out of its InfoNCE negatives and skipped by the "
              "miner, for both arms; each arm then picks its hierarchy term (HyTE-H: entailment cone or radius "
              "order; Euclidean: order embeddings or norm order) and weight from a grid of the same size on "
              "validation branches, and only the frozen choices are scored on the held-out branches and chapters. "
              "A difference is a win only where the t-test over seeds and the bootstrap interval over queries both "
              "exclude zero."), ""]
    # Per round, its selection before its test.
    for _, payload in sorted(items, key=lambda item: (item[1].get("round", 1),
                                                      item[1]["benchmark"] != "specificity_selection")):
        lines += _selection_lines(payload) if payload["benchmark"] == "specificity_selection" else _test_lines(payload)
    return lines + runs(items)
