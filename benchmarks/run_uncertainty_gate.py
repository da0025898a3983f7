"""Issue 26, part 3, the gate before any HBCT comparison: does the old model's uncertainty q(h_old) = 1 - tanh(d(o,
h_old) / sqrt(c)) predict the old model's own errors, on validation branches that no old model saw?

    python benchmarks/run_uncertainty_gate.py                       # 2 old recipes x seeds 0 1 2 (~30 min, one core)
    python benchmarks/run_uncertainty_gate.py --recipes hierarchy --seeds 0

HBCT weights its alignment term by q (RINCE) and widens the old embedding's cone by it; both only mean something if
q varies and tracks where the old model is wrong. Two old recipes, each trained with data.hpo_test_fraction = 0.35
(the test branches at 0.2 and the validation branches beyond them held out) for every seed:

- ``brief``: configs/compat_old_hyte_h.yaml, the old model of the recorded upgrade benchmark (12 steps, HPO only,
  no hierarchy term; its radius head barely moves from zero, so its radius hardly varies);
- ``hierarchy``: configs/finetune_hyte_h_hierarchy.yaml, the hierarchy-aware recipe ``hyte quickstart`` trains
  (60 steps, HPO + ICD-10-CM, cone term, radius head).

On the HPO validation branches (held out at 0.35, not among the test branches at 0.2; hyte.evaluation.heldout): the
distribution of d(o, h_old) and of q over the validation documents, and Spearman(q, rank of the positive) for q of
the query and of its positive document (the q training uses), with a bootstrap interval and the permuted-q control
(hyte.compatibility.evaluation.uncertainty_calibration). q predicts errors in a seed when rho > 0 with a two-sided
permutation p < 0.05; the verdict counts seeds (every seed is scored on the same validation queries: the seeds
replicate training, not the sample). Nothing here looks at the test branches.

Each trained model and its calibration are kept under RUNS_DIR, so an interrupted run continues where it stopped.
Output: benchmarks/results/compatibility_uncertainty.json, rendered by ``hyte eval report``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

from hyte.results import portable_command, write_result
from run_compatibility import RECIPES, train_once  # benchmarks/ is the script's folder, so on sys.path

OLD_RECIPES = {name: old for name, (old, _) in RECIPES.items()}  # the old model of each upgrade recipe
VALIDATION_FRACTION = 0.35  # held out by every old model here; validation = these branches minus the test ones
TEST_FRACTION = 0.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+", choices=sorted(OLD_RECIPES), default=sorted(OLD_RECIPES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--queries", type=int, default=300, help="validation queries")
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/uncertainty-gate"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/compatibility_uncertainty.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)  # a shared machine

    from hyte.compatibility.evaluation import calibration_verdict, uncertainty_calibration
    from hyte.encoders import load_encoder
    from hyte.evaluation.heldout import _hpo_sets
    from hyte.training import load_config

    # The validation corpus is every defined term of the validation branches (hyte.data.hpo.retrieval_split).
    sizes = {"queries": args.queries, "documents": 0, "hierarchy_queries": 1, "per_depth": 1}
    validation = _hpo_sets("validation", sizes, TEST_FRACTION, VALIDATION_FRACTION, split_seed=0, seed=0)["retrieval"]
    results: dict[str, dict[str, dict]] = {}
    train_seconds = {}
    for recipe in args.recipes:
        for seed in args.seeds:
            output_dir = args.runs_dir / f"{recipe}-s{seed}"
            config = load_config(OLD_RECIPES[recipe], {
                "training.output_dir": str(output_dir), "training.seed": seed,
                "data.hpo_test_fraction": VALIDATION_FRACTION, "mining.cache_dir": str(args.runs_dir / "mined")})
            final = train_once(config)
            path = output_dir / f"calibration-q{args.queries}-p{args.permutations}.json"  # one per setting
            if not path.is_file():
                calibration = uncertainty_calibration(load_encoder(final, max_length=64), validation,
                                                      permutations=args.permutations, seed=seed)
                path.write_text(json.dumps(calibration, indent=2))
            result = results.setdefault(recipe, {})[f"s{seed}"] = json.loads(path.read_text())
            train_seconds[f"{recipe}-s{seed}"] = float((output_dir / "train_seconds.txt").read_text())
            print(f"{recipe:9} seed {seed}: sd d(o, h_old) {result['documents']['distance']['sd']:.4f}, sd q "
                  f"{result['documents']['q']['sd']:.4f}; Spearman(q, rank): query {result['q_query']['spearman']:+.3f}"
                  f" (p {result['q_query']['permutation_p']:.3f}), positive {result['q_positive']['spearman']:+.3f} "
                  f"(p {result['q_positive']['permutation_p']:.3f})", flush=True)
    payload = {"benchmark": "compatibility_uncertainty",
               "recipes": {name: str(OLD_RECIPES[name]) for name in args.recipes},
               "data": {"split": "validation", "ontology": "hpo", "validation_fraction": VALIDATION_FRACTION,
                        "test_fraction": TEST_FRACTION, "split_seed": 0, "sample_seed": 0,
                        "queries": args.queries, "documents": len(validation[1])},
               "seeds": args.seeds, "permutations": args.permutations, "runs": results,
               "verdict": {recipe: calibration_verdict(by_seed) for recipe, by_seed in results.items()},
               "train_seconds": train_seconds,
               "meta": {"command": portable_command(shlex.join(["python", "benchmarks/run_uncertainty_gate.py",
                                                                *sys.argv[1:]])),
                        "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.platform(),
                        "torch_threads": torch.get_num_threads()}}
    write_result(args.output, payload, keep=("notes",))  # the hand-written reading stays until it is edited


if __name__ == "__main__":
    main()
