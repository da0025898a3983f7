"""Recorded benchmark of issue 14: backward-compatible upgrades of a HyTE model (HBCT) against the Euclidean BCT
baseline, with ablations and the reviewers' calibration test, on HPO branches and ICD-10-CM chapters never seen in
training.

    python benchmarks/run_compatibility.py --seeds 1 2 3 --ablation-seeds 1    # the recorded run
    python benchmarks/run_compatibility.py --seeds 1 --variants hbct independent   # a subset
    python benchmarks/run_compatibility.py --recipe hierarchy --seeds 1 2 3 --variants independent hbct l2-bct

``--recipe`` (RECIPES) names the old/new config pair: ``brief`` (the default, below), ``hierarchy`` (the
hierarchy-aware recipe ``hyte quickstart`` trains as the old model, whose radius varies, and its upgrade with twice
the data and steps, configs/compat_new_hbct_hierarchy.yaml; output compatibility_upgrade_hierarchy.json) or
``euclidean`` (the quickstart's Euclidean control and the same upgrade, Euclidean models throughout: the L2-BCT
baseline in its own geometry, variants independent and l2-bct; no calibration, q is hyperbolic; output
compatibility_upgrade_euclidean.json).

1. The OLD model (brief: configs/compat_old_hyte_h.yaml, seed 0) is trained once and held fixed for every method. New
   models use other seeds, so their HyTE-H projection starts from another random rotation than the old one's.
2. For each seed and variant, a NEW model is trained from configs/compat_new_hbct.yaml (brief; more data, more steps, a
   fresh projection) with the variant's ``compatible`` section (VARIANTS). "independent" (weight 0) is the new model
   trained without compatibility: the reference of P_com / P_up, and the check that compatibility needs training.
3. Every new model is scored on the compatibility matrix (old->old, new->old, new->new; retrieval nDCG@10, R@1 and
   the hierarchy benchmark); the old model's documents are embedded once for all of them. The two conditions
   (new->old > old->old, new->new > old->old) get, per seed, the nDCG@10 difference with a paired bootstrap interval
   over queries (RUNS_DIR/<name>/conditions.json).
4. Calibration: Spearman of q(h_old) with the old model's per-query error (rank of the positive), permuted-q control.

Each run keeps its scores in RUNS_DIR/<name>/scores.json, so an interrupted benchmark continues where it stopped.
Runs of one RUNS_DIR may be trained by parallel processes (other --seeds / --variants, other --output) and
collected into one file afterwards with --no-train.
Output: benchmarks/results/compatibility_upgrade.json (per seed, mean and sd), rendered by ``hyte eval report``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hyte.results import portable_command, write_result
from hyte.training.config_files import parse_override

# recipe: (the OLD model's config, the NEW models' config). "brief": the recorded run's pair (an old model whose radius
# barely varies); "hierarchy": the hierarchy-aware recipe as the old model, its upgrade (twice the data and steps) as
# the new one (issue 26, part 3; benchmarks/run_uncertainty_gate.py first tests whether its q predicts errors).
# "euclidean": the Euclidean control of "hierarchy" and its upgrade, for the L2-BCT baseline in its own geometry.
RECIPES = {
    "brief": (Path("configs/compat_old_hyte_h.yaml"), Path("configs/compat_new_hbct.yaml")),
    "hierarchy": (Path("configs/finetune_hyte_h_hierarchy.yaml"), Path("configs/compat_new_hbct_hierarchy.yaml")),
    "euclidean": (Path("configs/finetune_euclidean_hierarchy.yaml"), Path("configs/compat_new_euclidean.yaml")),
}
# The variants a Euclidean pair can train: cones and q are hyperbolic (hyte.compatibility.training).
EUCLIDEAN_VARIANTS = ("independent", "l2-bct")

# name: overrides of the `compatible` section (the rest comes from the new models' config: rince, cone, q).
VARIANTS = {
    "independent": {"weight": 0.0},  # no compatibility objective: the reference new model
    "hbct": {},  # cone + RINCE with q = q(h_old)
    "l2-bct": {"alignment": "l2", "cone": False},  # Euclidean BCT baseline: L2 in the tangent space / of unit vectors
    # Ablations, the reviewers' controls of the uncertainty mechanism first.
    "hbct-task-scale": {"temperature": None},  # alignment at the task's learned logit scale (~20) instead of 1/0.5
    "hbct-permuted-q": {"q": "permuted"},
    "hbct-fixed-q": {"q": "fixed", "q_fixed": 0.5},
    "hbct-no-cone": {"cone": False},
    "hbct-infonce": {"alignment": "infonce"},  # plain InfoNCE alignment (cones still widened by q(h_old))
}


def _load(path: Path, overrides: dict):
    from hyte.training import load_config

    return load_config(path, overrides)


def train_once(config, resume: bool = True) -> Path:
    """Train (or finish) one run of ``config``; returns its final folder (kept with its train_seconds.txt)."""
    from hyte.runner import run
    from hyte.training.run_folder import remove_checkpoints

    final = Path(config.training.output_dir) / "final"
    if not final.is_dir():
        started = time.perf_counter()
        run(config, resume=resume)
        (Path(config.training.output_dir) / "train_seconds.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
        remove_checkpoints(config.training.output_dir)
    return final


def _share_cache(runs: Path, target: Path, seed: int) -> None:
    """Copy the old-embedding cache of an earlier run with the same seed (the same training texts): the stage
    checks the old model's fingerprint and the texts before using it, and recomputes it otherwise."""
    from hyte.compatibility.training import CACHE_FILE

    if (target / CACHE_FILE).is_file():
        return
    for source in sorted(runs.glob(f"*-seed{seed}")):
        if (source / CACHE_FILE).is_file() and (source / "mined_negatives.jsonl").is_file():
            target.mkdir(parents=True, exist_ok=True)
            for name in (CACHE_FILE, CACHE_FILE.replace(".safetensors", ".texts.jsonl")):
                shutil.copy2(source / name, target / name)
            return


def _scores(path: Path, compute) -> dict:
    if path.is_file():
        return json.loads(path.read_text())
    scores = compute()
    path.write_text(json.dumps(scores, indent=2))
    return scores


def _mean_sd(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"mean": None, "sd": None, "n": 0}
    return {"mean": float(np.mean(values)), "sd": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
            "n": len(values)}


def summarise(per_seed: dict[str, dict[int, dict]]) -> dict:
    """Mean and sd over seeds of every matrix entry, P_com and P_up (against the same seed's independent run), and
    how many seeds satisfy new->old > old->old and new->new > old->old."""
    from hyte.compatibility.evaluation import PAIRS, compatibility_gains

    summary = {}
    for variant, seeds in per_seed.items():
        entry = {}
        ontologies = next(iter(seeds.values()))["matrix"].keys()
        for ontology in ontologies:
            metrics = list(next(iter(seeds.values()))["matrix"][ontology]["old->old"])
            block = {}
            for metric in metrics:
                values = {pair: [s["matrix"][ontology][pair][metric] for s in seeds.values()] for pair in PAIRS}
                gains = []
                for seed, scores in seeds.items():
                    reference = per_seed.get("independent", {}).get(seed)
                    if reference is None:  # no independent run of this seed: no reference, no P_com / P_up
                        gains.append({"p_com": None, "p_up": None})
                        continue
                    ref_value = reference["matrix"][ontology]["new->new"][metric]
                    gains.append(compatibility_gains(scores["matrix"][ontology], ref_value, metric))
                old_old = values["old->old"]
                block[metric] = {
                    **{pair: _mean_sd(values[pair]) for pair in PAIRS},
                    "p_com": _mean_sd([g["p_com"] for g in gains]), "p_up": _mean_sd([g["p_up"] for g in gains]),
                    "compatible_seeds": sum(n > o for n, o in zip(values["new->old"], old_old)),
                    "upgrade_seeds": sum(n > o for n, o in zip(values["new->new"], old_old)),
                    "seeds": len(old_old)}
            entry[ontology] = block
        summary[variant] = entry
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help="new-model seeds; not the old model's seed (0): the same seed gives the new HyTE-H the "
                             "old one's initial projection, and same-init models start out compatible")
    parser.add_argument("--variants", nargs="+", default=None, choices=VARIANTS,
                        help="default: all (recipe euclidean: independent and l2-bct, the only ones it can train)")
    parser.add_argument("--ablation-seeds", type=int, nargs="+", default=None,
                        help="seeds for the hbct-* ablations (default: --seeds)")
    parser.add_argument("--queries", type=int, default=200, help="retrieval and hierarchy queries per ontology")
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="brief",
                        help="brief: the recorded old/new pair; hierarchy: the hierarchy-aware recipe as the old "
                             "model (its radius varies) and its upgrade as the new ones; euclidean: its Euclidean "
                             "control and the same upgrade (RECIPES)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="default runs/compat (other recipes: "
                                                                     "runs/compat-RECIPE)")
    parser.add_argument("--old-dir", type=Path, default=None,
                        help="the old model's run folder (default RUNS_DIR/old; trained there if it has no final)")
    parser.add_argument("--start", choices=["fresh", "old"], default="fresh",
                        help="fresh: every new model is a new HyTE-H on the base encoder (a new random projection); "
                             "old: every new model starts from the old model's weights (continued training)")
    parser.add_argument("--set", dest="overrides", metavar="SECTION.FIELD=VALUE", nargs="+", default=[],
                        help="overrides of the new models' config, e.g. training.head_learning_rate=1e-2 (as `hyte "
                             "train --set`; recorded in the output)")
    parser.add_argument("--no-train", dest="train", action="store_false",
                        help="train nothing: collect the runs of the plan that already finished (e.g. seeds trained "
                             "by parallel processes) and skip the others")
    parser.add_argument("--output", type=Path, default=None,
                        help="default benchmarks/results/compatibility_upgrade.json (other recipes: "
                             "compatibility_upgrade_RECIPE.json)")
    args = parser.parse_args()
    possible = list(EUCLIDEAN_VARIANTS if args.recipe == "euclidean" else VARIANTS)
    if args.variants is None:
        args.variants = possible
    elif set(args.variants) - set(possible):
        parser.error(f"--recipe {args.recipe} trains only the variants {', '.join(possible)}")
    try:
        args.overrides = dict(parse_override(item) for item in args.overrides)
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(1)  # a shared machine; also what the recorded timings mean

    from hyte.compatibility.evaluation import (
        MemoEncoder,
        compatibility_matrix,
        condition_intervals,
        heldout_sets,
        uncertainty_calibration,
    )
    from hyte.encoders import load_encoder

    old_path, new_path = RECIPES[args.recipe]
    if args.output is None:  # one file per recipe: a hierarchy run must not replace the brief record (and its notes)
        suffix = "" if args.recipe == "brief" else f"_{args.recipe}"
        args.output = Path(f"benchmarks/results/compatibility_upgrade{suffix}.json")
    runs = args.runs_dir or Path("runs/compat" if args.recipe == "brief" else f"runs/compat-{args.recipe}")
    old_config = _load(old_path, {"training.output_dir": str(args.old_dir or runs / "old")})
    if (Path(old_config.training.output_dir) / "final").is_dir():  # reused as it is: it must be the recipe's old model
        from hyte.training.run_folder import finished_run_differences

        differences = finished_run_differences(old_config)
        if differences:
            raise SystemExit(f"{old_config.training.output_dir} holds another old model than --recipe {args.recipe}'s "
                             f"({old_path}): {'; '.join(differences[:3])}")
    if old_config.training.seed in set(args.seeds) | set(args.ablation_seeds or []):
        raise SystemExit(f"seed {old_config.training.seed} is the old model's: its new model would start from the "
                         f"old model's initial weights (see --seeds)")
    old_dir = train_once(old_config)
    old = MemoEncoder(load_encoder(old_dir, max_length=64))
    sets = heldout_sets(("hpo", "icd10"), queries=args.queries, documents=args.documents,
                        hierarchy_queries=args.queries)

    per_seed: dict[str, dict[int, dict]] = {}
    train_seconds = {}
    ablation_seeds = args.seeds if args.ablation_seeds is None else args.ablation_seeds
    # The main comparison (independent, hbct, l2-bct) for every seed first, seeds outer; then the ablations.
    main_variants = [v for v in args.variants if not v.startswith("hbct-")]
    ablations = [v for v in args.variants if v.startswith("hbct-")]
    plan = [(seed, v) for seed in args.seeds for v in main_variants] + [(seed, v) for seed in ablation_seeds
                                                                         for v in ablations]
    calibration = None if old.curvature == 0 else _scores(  # q is hyperbolic: none for a Euclidean old model
        Path(old_config.training.output_dir) / "calibration.json", lambda: {
            ontology: uncertainty_calibration(old, data["retrieval"], permutations=args.permutations)
            for ontology, data in sets.items()})
    for seed, variant in plan:
        name = f"{variant}-seed{seed}"
        output_dir = runs / name
        overrides = {**args.overrides, "training.output_dir": str(output_dir), "training.seed": seed,
                     "compatible.old_model": str(old_dir),
                     **{f"compatible.{key}": value for key, value in VARIANTS[variant].items()}}
        if args.start == "old":  # the old weights as the starting point; negatives mined by the base encoder
            overrides.update({"model.build": "load", "model.path": str(old_dir),
                              "mining.miner": "bundled:all-MiniLM-L6-v2"})
        if not args.train and not (output_dir / "final").is_dir():
            print(f"{name}: not trained, skipped (--no-train)", flush=True)
            continue
        config = _load(new_path, overrides)
        _share_cache(runs, output_dir, seed)
        new_dir = train_once(config)
        new = MemoEncoder(load_encoder(new_dir, max_length=64))
        scores = _scores(output_dir / "scores.json", lambda new=new: {"matrix": compatibility_matrix(old, new, sets)})
        scores["conditions"] = _scores(output_dir / "conditions.json",
                                       lambda new=new: condition_intervals(old, new, sets))
        per_seed.setdefault(variant, {})[seed] = scores
        seconds = output_dir / "train_seconds.txt"
        train_seconds[name] = float(seconds.read_text()) if seconds.is_file() else None
        hpo = scores["matrix"]["hpo"]
        print(f"{name}: HPO nDCG@10 old->old {hpo['old->old']['ndcg@10']:.4f}  new->old "
              f"{hpo['new->old']['ndcg@10']:.4f}  new->new {hpo['new->new']['ndcg@10']:.4f}", flush=True)
        _write(args, old_config, new_path, per_seed, calibration, train_seconds)  # after every run: partial results count


def _write(args, old_config, new_path, per_seed, calibration, train_seconds) -> None:
    payload = {
        "benchmark": "compatibility_upgrade",
        "recipe": args.recipe,
        "old_model": {"config": str(RECIPES[args.recipe][0]), "seed": old_config.training.seed,
                      "steps": old_config.training.max_steps, "data": old_config.data.source},
        "new_model": {"config": str(new_path), "data": "hpo+icd10", "start": args.start,
                      "overrides": args.overrides},
        "variants": {name: VARIANTS[name] for name in args.variants},
        "data": {"queries": args.queries, "documents": args.documents, "hierarchy_queries": args.queries,
                 "test_fraction": 0.2, "split_seed": 0, "sample_seed": 0},
        "per_seed": {variant: {str(seed): s for seed, s in seeds.items()} for variant, seeds in per_seed.items()},
        "summary": summarise(per_seed),
        "calibration": calibration,
        "train_seconds": train_seconds,
        "meta": {"command": portable_command(shlex.join(["python", *sys.argv])), "date": time.strftime("%Y-%m-%d %H:%M"),
                 "machine": platform.platform(), "torch_threads": torch.get_num_threads()},
    }
    write_result(args.output, payload, keep=("notes",))  # the hand-written reading stays until it is edited


if __name__ == "__main__":
    main()
