"""Recorded comparison (issue 10): HyTE-H vs its Euclidean control, each with and without the hierarchy term, over
seeds, on HPO branches and ICD-10-CM chapters never seen in training (recipe: hyte.training.recipes).

    python benchmarks/run_hierarchy_finetune.py --sweep             # selection: 3 values per side, validation branches
    python benchmarks/run_hierarchy_finetune.py --seeds 0 1 2       # the 2 x 2 (+ base) on held-out branches/chapters
    python benchmarks/run_hierarchy_finetune.py --validation --seeds 0 --variants ...   # a check on validation branches

Each run's scores are kept in RUNS_DIR/<name>/scores.json, so an interrupted benchmark continues where it stopped
(training itself resumes from its last checkpoint). Output: benchmarks/results/hierarchy_finetune.json (or
hierarchy_sweep.json) with every seed's scores and the mean and standard deviation over seeds.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path

from hyte.evaluation.heldout import aggregate_seeds
from hyte.results import portable_command, write_result
from hyte.training.recipes import VARIANTS, hierarchy_finetune
from hyte.training.run_folder import remove_checkpoints

SWEEP = {"hyte-h": ("token_radius", (1.0, 2.0, 3.0)), "euclidean": ("temperature", (0.02, 0.05, 0.1))}
VALIDATION_FRACTION = 0.35


def _train(name: str, config, runs: Path) -> Path:
    from hyte.runner import run

    final = Path(config.training.output_dir) / "final"
    if not final.is_dir():
        started = time.perf_counter()
        run(config, resume=True)
        (runs / name / "train_seconds.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
    return final


def _scores(name: str, model_dir: Path | None, runs: Path, evaluation: dict) -> dict:
    """The run's held-out scores, kept beside it; sets added to the suite later are scored and merged in."""
    from hyte.bundled import bundled_minilm_path
    from hyte.encoders import load_encoder
    from hyte.evaluation.heldout import evaluate_heldout

    path = runs / name / "scores.json"
    scores = json.loads(path.read_text()) if path.is_file() else {}
    wanted = evaluation.get("ontologies", ("hpo", "icd10", "manpages", "handbook"))
    missing = [ontology for ontology in wanted if ontology not in scores]
    if not missing:
        return scores
    encoder = (load_encoder(bundled_minilm_path(), kind="euclidean", max_length=64) if model_dir is None
               else load_encoder(model_dir, max_length=64))
    scores.update(evaluate_heldout({name: encoder}, **{**evaluation, "ontologies": missing})[name])
    if model_dir is not None:
        card = json.loads((model_dir / "hyte_card.json").read_text())["training"]
        scores["training"] = {"final_loss": card["final_loss"], "final_logit_scale": card["final_logit_scale"],
                              "nonfinite_values": card["nonfinite_values"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, indent=2))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="tune each side's knob on validation branches")
    parser.add_argument("--validation", action="store_true",
                        help="score --variants on the validation branches (HPO) instead of the test branches")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--queries", type=int, default=500, help="retrieval and hierarchy queries per ontology")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/hierarchy-finetune"))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--clean", action="store_true", help="delete the runs' checkpoints once scored")
    args = parser.parse_args()

    on_validation = args.sweep or args.validation
    runs = args.runs_dir / ("sweep" if args.sweep else "validation" if args.validation else "heldout")
    cache = str(args.runs_dir / "mining-cache")
    evaluation = {"queries": args.queries, "hierarchy_queries": args.queries}
    plan: list[tuple[str, str, int, dict]] = []  # (run name, variant, seed, recipe overrides)
    if on_validation:
        evaluation.update(split="validation", ontologies=("hpo",), validation_fraction=VALIDATION_FRACTION)
    if args.sweep:
        for variant, (knob, values) in SWEEP.items():
            plan += [(f"{variant}-{knob}{value:g}", variant, args.seeds[0], {knob: value}) for value in values]
    else:
        plan += [(f"{variant}-s{seed}", variant, seed, {}) for variant in args.variants for seed in args.seeds]

    results = {"base": {"all-MiniLM-L6-v2 (untrained)": _scores("base", None, runs, evaluation)}}
    started = time.perf_counter()
    for name, variant, seed, overrides in plan:
        fraction = VALIDATION_FRACTION if on_validation else 0.2
        config = hierarchy_finetune(variant, str(runs / name), seed=seed, steps=args.steps, examples=args.examples,
                                    test_fraction=fraction, mining_cache=cache, **overrides)
        scores = _scores(name, _train(name, config, runs), runs, evaluation)
        results.setdefault(variant, {})[name] = scores
        hpo = scores["hpo"]
        print(f"{name:28} HPO nDCG@10 {hpo['ndcg@10']:.4f} SpecHR {hpo['spechr']:.4f}"
              + (f" | ICD nDCG@10 {scores['icd10']['ndcg@10']:.4f} SpecHR {scores['icd10']['spechr']:.4f}"
                 if "icd10" in scores else ""), flush=True)
        if args.clean:
            remove_checkpoints(runs / name)
    summary = {variant: aggregate_seeds(list(by_run.values())) for variant, by_run in results.items()
               if not args.sweep or variant == "base"}
    command = portable_command(shlex.join(["python", "benchmarks/run_hierarchy_finetune.py", *sys.argv[1:]]))
    payload = {"benchmark": "hierarchy_sweep" if args.sweep else "hierarchy_finetune", "command": command.strip(),
               "split": "validation" if on_validation else "test",
               "steps": args.steps, "examples": args.examples, "seeds": args.seeds, "evaluation": evaluation,
               "wall_seconds": round(time.perf_counter() - started), "machine": platform.platform(),
               "date": time.strftime("%Y-%m-%d"), "runs": results, "summary": summary}
    name = payload["benchmark"] + ("_validation" if args.validation else "")
    output = args.output or Path("benchmarks/results") / f"{name}.json"
    write_result(output, payload)


if __name__ == "__main__":
    main()
