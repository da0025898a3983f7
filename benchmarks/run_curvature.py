"""Does the curvature do anything (issue 45)? The shipped fine-tuning recipe with only the curvature changed.

    python benchmarks/run_curvature.py --steps 60 300 --seeds 0 1 2 3 4 --clean

Arms, all from all-MiniLM-L6-v2 with the quickstart's recipe (``QUICKSTART_RECIPE``: the specificity head, the
entailment-cone term of weight 1, the same data, mined negatives and mining cache, temperature rule, learning rates
and steps); only the curvature c of H_c (<x, x>_L = -c) differs:

* ``c=100``: the flat twin. Distances and radii keep their scale (tokens clipped at radius 1, the head starting at
  radius 1), but at radius r the space is stretched by sqrt(c) sinh(r / sqrt(c)) / r <= 1.0017: Euclidean in all
  but name;
* ``c=1``: the shipped model;
* ``c=0.1``: curved where the documents lie (a stretch of about 2.6 at radius 1);
* ``euclidean``: the Euclidean control of the quickstart (``EUCLIDEAN_RECIPE``: cosine, the norm-order term).

The cone's constant K is scaled so that a cone means the same at the head's starting radius r0 = 1: the half-aperture
arcsin(2 K / sinh(r0 / sqrt(c))) is the shipped one (K = 0.5 at c = 1) for every c.

Primary metric, declared before any run: test nDCG@10 on held-out HPO branches, c = 1 against c = 100 at 60 steps
(the shipped budget). Everything else is secondary: SpecHR, the other contrasts (c = 0.1 against c = 100, each
hyperbolic arm against the Euclidean control) and 300 steps, 20 intervals in all with no correction for
multiplicity, so a single secondary interval that excludes zero is weak evidence. Intervals: the bootstrap that
resamples seeds, then queries within each seed (the query sample is drawn per seed); an interval that includes zero
is a tie. Per arm, where the geometry could act: the stretch at the documents' radii, the share of cones narrower
than a half-space, the radius spread, the share of is-a edges inside the parent's cone, the final logit scale.

A fresh test split (round 3): the first HPO branch split whose test branches (20 %) and validation branches
(25 %) share no term with any test or validation branches of the specificity study's rounds 1 and 2
(``fresh_split_seed``); no choice here is made on any split, so its validation branches stay unused.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

from hyte.evaluation.heldout import aggregate_seeds, compare_models
from hyte.quickstart import EUCLIDEAN_RECIPE, QUICKSTART_RECIPE
from hyte.results import machine_info, portable_command, write_result
from hyte.training.recipes import TOKEN_RADIUS, hierarchy_finetune
from hyte.training.run_folder import remove_checkpoints

# Every (split seed, held-out fraction) an earlier round tested or chose on: benchmarks/run_specificity.py's rounds
# 1 and 2 (split seeds 0 and 1, test 0.2, validation 0.35), which also cover the quickstart's and the first
# fine-tuning comparison's split (seed 0).
EARLIER_ROUNDS = ((0, 0.2), (0, 0.35), (1, 0.2), (1, 0.35))
TEST_FRACTION, VALIDATION_FRACTION = 0.2, 0.25
SHIPPED_CURVATURE = 1.0
SHIPPED_CONE = QUICKSTART_RECIPE[1]["cone_min_radius"]
CURVATURES = {"c=100": 100.0, "c=1": SHIPPED_CURVATURE, "c=0.1": 0.1}
ARMS = (*CURVATURES, "euclidean")
PRIMARY = ("c=1", "c=100")
CONTRASTS = (PRIMARY, ("c=0.1", "c=100"), ("c=1", "euclidean"), ("c=0.1", "euclidean"), ("c=100", "euclidean"))


def cone_constant(curvature: float) -> float:
    """K at curvature c giving the shipped half-aperture at radius r0: 2 K / sinh(r0 / sqrt(c)) is the same."""
    return SHIPPED_CONE * math.sinh(TOKEN_RADIUS / math.sqrt(curvature)) / math.sinh(TOKEN_RADIUS)


def arm_config(arm: str, output_dir: Path, seed: int, steps: int, split_seed: int, examples: int, cache: Path):
    if arm == "euclidean":
        variant, loss, model = EUCLIDEAN_RECIPE[0], dict(EUCLIDEAN_RECIPE[1]), None
    else:
        c = CURVATURES[arm]
        variant, loss = QUICKSTART_RECIPE[0], {**QUICKSTART_RECIPE[1], "cone_min_radius": cone_constant(c)}
        model = {"curvature": c}
    return hierarchy_finetune(variant, str(output_dir), seed=seed, steps=steps, examples=examples,
                              test_fraction=TEST_FRACTION, split_seed=split_seed, mining_cache=str(cache), loss=loss,
                              model=model)


def scored_run(config, evaluation: dict, clean: bool) -> dict:
    """Train (resuming) and score one run; the scores are kept beside it, so a rerun continues where it stopped."""
    from hyte.encoders import load_encoder
    from hyte.evaluation.heldout import evaluate_heldout
    from hyte.runner import run

    folder = Path(config.training.output_dir)
    path = folder / "scores.json"
    if path.is_file():
        return json.loads(path.read_text())
    started = time.perf_counter()
    final = run(config, resume=True)
    seconds = time.perf_counter() - started
    scores = evaluate_heldout({"run": load_encoder(final, max_length=64)}, **evaluation,
                              cone_min_radius=config.loss.cone_min_radius)["run"]
    card = json.loads((final / "hyte_card.json").read_text())["training"]
    scores["training"] = {"final_logit_scale": card["final_logit_scale"], "steps": card["steps"],
                          "seconds": seconds, "cone_min_radius": config.loss.cone_min_radius}
    path.write_text(json.dumps(scores))
    if clean:
        remove_checkpoints(folder)
    return scores


def diagnostics(runs: list[dict]) -> dict:
    """Per arm, means over seeds of where the geometry could act (``edge_diagnostics``) and the final logit scale."""
    def mean(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    edges = [r["hpo"]["edges"] for r in runs]
    return {key: mean([e.get(key) for e in edges])
            for key in ("stretch_median", "stretch_p95", "cones_open", "inside_cone", "radius_sd", "radius_p05",
                        "radius_p95", "child_farther")} | {
        "final_logit_scale": mean([r["training"]["final_logit_scale"] for r in runs])}


def main(argv: list[str] | None = None) -> int:
    from hyte.data.hpo import fresh_split_seed, load_hpo

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[60, 300])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--queries", type=int, default=300, help="retrieval, hierarchy queries and edges per seed")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/curvature"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/curvature.json"))
    parser.add_argument("--clean", action="store_true", help="delete each run's checkpoints once scored")
    args = parser.parse_args(argv)
    split_seed = fresh_split_seed(load_hpo(), EARLIER_ROUNDS, TEST_FRACTION, VALIDATION_FRACTION, start=2)
    print(f"round 3: HPO branch split seed {split_seed} (test {TEST_FRACTION}, validation {VALIDATION_FRACTION})",
          flush=True)
    report = {"benchmark": "curvature", "round": 3, "split_seed": split_seed, "earlier_rounds": EARLIER_ROUNDS,
              "test_fraction": TEST_FRACTION, "seeds": args.seeds, "examples": args.examples,
              "primary_metric": "HPO held-out nDCG@10, c=1 - c=100, at the first step budget",
              "recipe": {"hyperbolic": QUICKSTART_RECIPE[0], "euclidean": EUCLIDEAN_RECIPE[0],
                         "cone_min_radius": {arm: cone_constant(c) for arm, c in CURVATURES.items()}},
              "by_steps": {},
              "meta": {"command": portable_command(shlex.join(
                  ["python", "benchmarks/run_curvature.py", *(sys.argv[1:] if argv is None else argv)])),
                       **machine_info(), "date": time.strftime("%Y-%m-%d")}}
    for steps in args.steps:
        per_arm: dict[str, list[dict]] = {arm: [] for arm in args.arms}
        for seed in args.seeds:
            evaluation = {"ontologies": ("hpo",), "queries": args.queries, "hierarchy_queries": args.queries,
                          "edges": args.queries, "test_fraction": TEST_FRACTION, "split_seed": split_seed,
                          "seed": seed}
            for arm in args.arms:
                config = arm_config(arm, args.runs_dir / f"steps{steps}" / arm / f"s{seed}", seed, steps, split_seed,
                                    args.examples, args.runs_dir / "mining-cache")
                scores = scored_run(config, evaluation, args.clean)
                per_arm[arm].append(scores)
                hpo, edges = scores["hpo"], scores["hpo"]["edges"]
                print(f"{steps:4} steps seed {seed} {arm:9} nDCG@10 {hpo['ndcg@10']:.4f} SpecHR {hpo['spechr']:.4f} "
                      f"radius sd {edges['radius_sd']:.3f} stretch {edges['stretch_median']} cones open "
                      f"{edges['cones_open']} logit scale {scores['training']['final_logit_scale']:.1f}", flush=True)
        comparisons = {f"{a} - {b}": compare_models(per_arm[a], per_arm[b])["hpo"]
                       for a, b in CONTRASTS if a in per_arm and b in per_arm}
        for name, by_key in comparisons.items():
            for key, result in by_key.items():
                print(f"{steps:4} steps {name:18} {key:8} {result['mean_difference']:+.4f} "
                      f"[{result['bootstrap_low']:+.4f}, {result['bootstrap_high']:+.4f}] {result['verdict']}")
        report["by_steps"][str(steps)] = {
            "summary": {arm: aggregate_seeds(runs) for arm, runs in per_arm.items()},
            "diagnostics": {arm: diagnostics(runs) for arm, runs in per_arm.items()},
            "comparisons": comparisons, "runs": per_arm}
    print(f"wrote {write_result(args.output, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
