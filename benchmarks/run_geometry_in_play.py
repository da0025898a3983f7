"""Put the geometry in play (issue 45, item 2): a fine-tuning recipe whose documents sit where the curvature
matters, chosen on validation branches only.

    python benchmarks/run_geometry_in_play.py --seeds 0 1 --clean

The shipped recipe (``QUICKSTART_RECIPE``) clips token tangents at norm 1 and starts the specificity head at radius
1, where the space is nearly flat (the stretch ||x_s|| / r = sinh(r) / r is 1.11 at the documents' radii) and every
entailment cone is a half-space. The candidates move the documents out (token radius r0 = 2 or 3: ``norm_clip`` and
the head's starting radius), and let the head move them faster (its own learning rate 1e-2 instead of 1e-3), with
the cone's constant K kept at the shipped 0.5, so that cones narrow as points move out (half-aperture
arcsin(2 K / sinh r): 90 degrees at r = 1, 16 at r = 2, 6 at r = 3).

Declared before the runs: a candidate puts the geometry in play when the median stretch at its documents' radii is
at least 1.3 and some held-out is-a edges lie inside their parent's cone; among those, the best by validation
nDCG@10 (mean over seeds) is the recipe "in play"; it is kept only if its validation nDCG@10 is not below the
shipped recipe's (a mean difference of at least 0 over the same seeds; with two seeds this is a reading, not a
test). Everything is scored on the round-3 split's validation branches (``benchmarks/run_curvature.py``: split seed
293, the 25 % split's branches beyond the 20 % test branches, held out of these runs too); no test branch is
scored here.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from run_curvature import EARLIER_ROUNDS, TEST_FRACTION, VALIDATION_FRACTION, diagnostics, scored_run

from hyte.evaluation.heldout import aggregate_seeds
from hyte.quickstart import QUICKSTART_RECIPE
from hyte.results import machine_info, portable_command, write_result
from hyte.training.recipes import hierarchy_finetune

SHIPPED = "shipped (r0 1)"
# name -> (token radius r0, the specificity head's learning rate or None for the shipped one)
CANDIDATES = {SHIPPED: (1.0, None), "r0 2": (2.0, None), "r0 3": (3.0, None), "r0 2, head lr 1e-2": (2.0, 1e-2),
              "r0 3, head lr 1e-2": (3.0, 1e-2)}
MIN_STRETCH = 1.3


def candidate_config(name: str, output_dir: Path, seed: int, steps: int, split_seed: int, examples: int,
                     cache: Path):
    radius, head_rate = CANDIDATES[name]
    variant, loss = QUICKSTART_RECIPE
    return hierarchy_finetune(variant, str(output_dir), seed=seed, steps=steps, examples=examples,
                              test_fraction=VALIDATION_FRACTION, split_seed=split_seed, mining_cache=str(cache),
                              token_radius=radius, loss=dict(loss),
                              training={"radius_head_learning_rate": head_rate} if head_rate else None)


def main(argv: list[str] | None = None) -> int:
    from hyte.data.hpo import fresh_split_seed, load_hpo

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--queries", type=int, default=300, help="retrieval, hierarchy queries and edges per seed")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/geometry-in-play"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/geometry_in_play.json"))
    parser.add_argument("--clean", action="store_true", help="delete each run's checkpoints once scored")
    args = parser.parse_args(argv)
    split_seed = fresh_split_seed(load_hpo(), EARLIER_ROUNDS, TEST_FRACTION, VALIDATION_FRACTION, start=2)
    per_candidate: dict[str, list[dict]] = {name: [] for name in CANDIDATES}
    for seed in args.seeds:
        evaluation = {"split": "validation", "ontologies": ("hpo",), "queries": args.queries,
                      "hierarchy_queries": args.queries, "edges": args.queries, "test_fraction": TEST_FRACTION,
                      "validation_fraction": VALIDATION_FRACTION, "split_seed": split_seed, "seed": seed}
        for name in CANDIDATES:
            folder = args.runs_dir / name.replace(" ", "").replace(",", "_") / f"s{seed}"
            config = candidate_config(name, folder, seed, args.steps, split_seed, args.examples,
                                      args.runs_dir / "mining-cache")
            scores = scored_run(config, evaluation, args.clean)
            per_candidate[name].append(scores)
            hpo, edges = scores["hpo"], scores["hpo"]["edges"]
            print(f"seed {seed} {name:20} validation nDCG@10 {hpo['ndcg@10']:.4f} SpecHR {hpo['spechr']:.4f} stretch "
                  f"{edges['stretch_median']:.3f} cones open {edges['cones_open']:.3f} inside cone "
                  f"{edges['inside_cone']:.3f} radius sd {edges['radius_sd']:.3f}", flush=True)
    summary = {name: aggregate_seeds(runs) for name, runs in per_candidate.items()}
    found = {name: diagnostics(runs) for name, runs in per_candidate.items()}

    def ndcg(name: str) -> float:
        return summary[name]["hpo"]["ndcg@10"]["mean"]

    in_play = [name for name in CANDIDATES if name != SHIPPED and (found[name]["stretch_median"] or 0) >= MIN_STRETCH
               and (found[name]["inside_cone"] or 0) > 0]
    chosen = max(in_play, key=ndcg) if in_play else None
    kept = chosen is not None and ndcg(chosen) >= ndcg(SHIPPED)
    verdict = ("no candidate put the geometry in play" if chosen is None else
               f"{chosen}: validation nDCG@10 {ndcg(chosen):.4f} against the shipped {ndcg(SHIPPED):.4f}: "
               + ("kept (not below the shipped recipe)" if kept else "not kept (below the shipped recipe)"))
    print(verdict)
    report = {"benchmark": "geometry-in-play", "round": 3, "split_seed": split_seed, "split": "validation",
              "seeds": args.seeds, "steps": args.steps, "examples": args.examples,
              "criterion": f"stretch median >= {MIN_STRETCH} and inside_cone > 0; best validation nDCG@10; kept "
                           "when not below the shipped recipe",
              "candidates": {name: {"token_radius": r, "radius_head_learning_rate": lr}
                             for name, (r, lr) in CANDIDATES.items()},
              "summary": summary, "diagnostics": found, "in_play": in_play, "chosen": chosen, "kept": kept,
              "verdict": verdict, "runs": per_candidate,
              "meta": {"command": portable_command(shlex.join(
                  ["python", "benchmarks/run_geometry_in_play.py", *(sys.argv[1:] if argv is None else argv)])),
                  **machine_info(), "date": time.strftime("%Y-%m-%d")}}
    print(f"wrote {write_result(args.output, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
