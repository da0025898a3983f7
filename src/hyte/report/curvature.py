"""BENCHMARKS.md section of the curvature ablation (issue 45, ``benchmarks/run_curvature.py``): the shipped recipe at
c = 100 (a flat twin), 1 and 0.1 beside the Euclidean control, with where the geometry could act."""

from __future__ import annotations

from pathlib import Path

from ..markdown import mean_sd, number, percent, runs, table

ARM_TITLES = {"c=100": "HyTE-H c = 100 (flat twin)", "c=1": "HyTE-H c = 1 (shipped)", "c=0.1": "HyTE-H c = 0.1",
              "euclidean": "Euclidean control"}


def _steps_lines(steps: str, block: dict, payload: dict) -> list[str]:
    seeds = len(next(iter(block["runs"].values())))
    rows = []
    for arm, summary in block["summary"].items():
        hpo, where = summary["hpo"], block["diagnostics"][arm]
        rows.append([ARM_TITLES.get(arm, arm), mean_sd(hpo.get("ndcg@10")), mean_sd(hpo.get("spechr")),
                     number(where["stretch_median"], 3), percent(where["cones_open"]), number(where["radius_sd"], 3),
                     f"{number(where['radius_p05'], 2)}–{number(where['radius_p95'], 2)}",
                     percent(where["inside_cone"]), percent(where["child_farther"]),
                     number(where["final_logit_scale"], 1)])
    contrasts = [[name.replace("c=", "c = ").replace(" - ", " − "), key, f"{c['mean_difference']:+.4f}",
                  number(c["t_test_p"], 3), f"[{c['bootstrap_low']:+.4f}, {c['bootstrap_high']:+.4f}]",
                  f"**{c['verdict']}**"]
                 for name, by_key in block["comparisons"].items() for key, c in by_key.items()]
    return [f"**{steps} steps**, {seeds} seeds (HPO held-out branches, split seed {payload['split_seed']}):", "",
            *table(["arm", "nDCG@10", "SpecHR", "stretch ‖x_s‖/r", "cones open", "radius sd", "radius 5–95 %",
                    "edges inside cone", "child farther", "final logit scale"], rows),
            *table(["contrast", "metric", "mean difference", "t-test p", "95 % interval (seeds, then queries)",
                    "verdict"], contrasts)]


def _in_play_lines(payload: dict) -> list[str]:
    """``benchmarks/run_geometry_in_play.py``: candidate recipes on validation branches, and what was kept."""
    rows = []
    for name, summary in payload["summary"].items():
        hpo, where = summary["hpo"], payload["diagnostics"][name]
        rows.append([name, mean_sd(hpo.get("ndcg@10")), mean_sd(hpo.get("spechr")), number(where["stretch_median"], 3),
                     percent(where["cones_open"]), percent(where["inside_cone"]), number(where["radius_sd"], 3),
                     f"{number(where['radius_p05'], 2)}–{number(where['radius_p95'], 2)}",
                     number(where["final_logit_scale"], 1)])
    return [(f"**Putting the geometry in play** (validation branches of round {payload['round']} only, "
             f"{len(payload['seeds'])} seeds, {payload['steps']} steps; criterion declared before the runs: "
             f"{payload['criterion']}): **{payload['verdict']}**."), "",
            *table(["recipe", "validation nDCG@10", "SpecHR", "stretch ‖x_s‖/r", "cones open", "edges inside cone",
                    "radius sd", "radius 5–95 %", "final logit scale"], rows)]


def curvature_section(items: list[tuple[Path, dict]]) -> list[str]:
    lines = ["## Does the curvature do anything? The shipped recipe at c = 100, 1 and 0.1", "",
             ("Only the curvature differs between the HyTE-H arms (data, negatives, head, pooling, cone term with K "
              "scaled to the same aperture at radius 1, temperature rule, steps); the Euclidean control is the "
              "quickstart's. Stretch: ‖x_s‖ / r = √c sinh(r/√c) / r at the documents' radii (1 = flat); cones open: "
              "the share of texts whose cone is narrower than a half-space. A win or loss needs both the t-test "
              "over seeds and the interval to exclude zero."), ""]
    for _, payload in items:
        if payload["benchmark"] == "geometry-in-play":
            lines += _in_play_lines(payload)
            continue
        intervals = sum(len(by_key) for block in payload["by_steps"].values() for by_key in block["comparisons"].values())
        lines += [(f"Primary metric, declared before the runs: {payload['primary_metric']}. Round {payload['round']}: "
                   "a branch split sharing no term with earlier rounds' test or validation branches. "
                   f"{intervals} intervals in all, no correction for multiplicity: beyond the primary contrast, read "
                   "one interval that excludes zero as weak evidence."), ""]
        for steps, block in payload["by_steps"].items():
            lines += _steps_lines(steps, block, payload)
    return lines + runs(items)
