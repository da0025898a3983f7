"""Recorded comparison (issue 5): HyTE-H vs the matched Euclidean fine-tune vs the untrained base, on HPO.

    python benchmarks/run_hpo_finetune.py [--steps 150] [--output benchmarks/results/hpo_finetune.json]

Both fine-tunes use the same recipe (configs/finetune_hyte_h_hpo.yaml: HPO training branches, one mined hard
negative, InfoNCE at the same temperature, same steps/batch/lr); only the geometry differs: HyTE-H (Lorentz,
geodesic similarity, OEM pooling) vs MiniLM with mean pooling and cosine. Evaluation is on the held-out branches:
retrieval (nDCG@10, recall@10, MRR@10) and, when hyte.evaluation.hierarchy is present, the hierarchy benchmark
(SpecHR, R@1, MRR) and radius by depth.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from hyte.training import load_config, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/finetune_hyte_h_hpo.yaml")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--runs-dir", default="runs/hpo-comparison")
    parser.add_argument("--eval-queries", type=int, default=500)
    parser.add_argument("--hierarchy-queries", type=int, default=1000)
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/hpo_finetune.json"))
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    runs = Path(args.runs_dir)
    timings = {}
    models = {}
    for name, model in (("hyte-h", {"build": "hyte_h"}), ("euclidean", {"build": "load"})):
        overrides = {"training.max_steps": args.steps, "training.output_dir": str(runs / name),
                     "model.build": model["build"], "evaluation.enabled": False}
        config = load_config(args.config, overrides)
        started = time.perf_counter()
        final = runs / name / "final"
        if not final.is_dir():
            final = run(config, resume=args.resume)
        timings[name] = time.perf_counter() - started
        models[name] = final

    from hyte.demo import bundled_minilm_path
    from hyte.encoders import load_encoder
    from hyte.evaluation.hpo import heldout_retrieval_set
    from hyte.evaluation.retrieval import evaluate_retrieval

    encoders = {
        "all-MiniLM-L6-v2 (untrained base, cosine)": load_encoder(bundled_minilm_path(), kind="euclidean"),
        "MiniLM fine-tuned (mean pooling, cosine)": load_encoder(models["euclidean"], kind="euclidean"),
        "HyTE-H fine-tuned (OEM, geodesic)": load_encoder(models["hyte-h"], kind="hyte"),
    }
    queries, corpus, qrels = heldout_retrieval_set(args.eval_queries, None)
    results = {"retrieval": {name: evaluate_retrieval(e, queries, corpus, qrels, k_values=(1, 10, 100))
                             for name, e in encoders.items()}}
    try:
        from hyte.evaluation.hierarchy import (evaluate_hierarchy, hpo_hierarchy_benchmark, hpo_texts_by_depth,
                                               radius_by_depth)
    except ImportError:
        pass
    else:
        records = hpo_hierarchy_benchmark(split="test", max_queries=args.hierarchy_queries, seed=0)
        results["hierarchy"] = {name: evaluate_hierarchy(e, records) for name, e in encoders.items()}
        texts = hpo_texts_by_depth(split="test", per_depth=50, seed=0)
        results["radius_by_depth"] = {name: radius_by_depth(e, texts) for name, e in encoders.items()}
    payload = {"benchmark": "hpo_finetune", "command": "python benchmarks/run_hpo_finetune.py "
               f"--steps {args.steps}", "steps": args.steps, "train_seconds": timings,
               "eval": {"queries": len(queries), "documents": len(corpus)},
               "machine": platform.platform(), "date": time.strftime("%Y-%m-%d"), "results": results}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2))
    for name, metrics in results["retrieval"].items():
        print(f"{name:45} nDCG@10 {metrics['ndcg@10']:.4f}  R@10 {metrics['recall@10']:.4f}  MRR@10 {metrics['mrr@10']:.4f}")
    for name, metrics in results.get("hierarchy", {}).items():
        print(f"{name:45} SpecHR {metrics['spechr']:.4f}  R@1 {metrics['recall@1']:.4f}  MRR {metrics['mrr']:.4f}")


if __name__ == "__main__":
    main()
