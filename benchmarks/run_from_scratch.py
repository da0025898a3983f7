"""Recorded comparison (issue 11): HyTE-FH vs its Euclidean twin EucBERT, trained from scratch through the paper's
three stages with everything but the geometry identical (recipe: hyte.training.recipes.from_scratch), scored on
HPO branches and ICD-10-CM chapters that no stage saw.

    python benchmarks/run_from_scratch.py                   # 3 seeds x 2 models, tiny shape (~70 min, one core)
    python benchmarks/run_from_scratch.py --mlm-steps 8000  # the same, MLM long enough for EucBERT to pass the gate
    python benchmarks/run_from_scratch.py --quick           # the same pipeline at a toy size (a few minutes)
    python benchmarks/run_from_scratch.py --size base --bf16 --seeds 0 1 2 3 4   # the paper-size study, one GPU
    python benchmarks/run_from_scratch.py --mlm-steps 8000 --temperatures 0.02 0.05 0.1   # equal care (issue 45)
    bash benchmarks/gpu_from_scratch.sh   # the equal-care study on a lent GPU (prepared, not yet run)

Equal care (``--temperatures``): both models get the same tuning, chosen on HPO validation branches on the first
seed: the initial temperature of the contrastive stages among the candidates, with one rule for both (HyTE-FH's
start from its mean document radius, a diagnosis only it got, is off). The residual rescale stays HyTE-FH's: it is
the reference code's Lorentz residual (averaging without it), and the same diagnosis applied to EucBERT (the
embeddings' share of the gradient at initialisation, benchmarks/probe_mlm_plateau.py) finds its additive residual
healthy (0.26 of the gradient norm), so there is nothing to rescale there.

The paper-size setting (``--size base``: hidden 768, 12 layers of 12 heads, batch 96, 20,000 MLM steps, then the
contrastive and fine-tuning stages on every training pair, a 30,522-entry trained vocabulary) trains on the GPU the
Trainer finds (with --bf16 in mixed precision; the Lorentz geometry stays float32) and scores on the CPU. How long
it should take, estimated and not measured (no GPU run is on record): ~6 x 110 M parameters x 123 M MLM tokens
~ 8e16 FLOPs per model, about 10-30 minutes of one H100/H200 at 5-15 % of its bf16 peak, x1.3 for HyTE-FH (its CPU
step-time ratio), plus the later stages and the held-out scoring (minutes each): about 1-2 hours per seed for both
models and, on the ablation seed, four more HyTE-FH contrastive + fine-tuning runs.

Both twins share one WordPiece vocabulary trained on the MLM corpus with the ``tokenizers`` library (4,096 entries
at the tiny size; ``--vocabulary bundled`` uses the MiniLM's 30,522, the recipe of the first recorded run), saved
with every model. After the MLM stage each model's held-out masked-LM loss is measured beside the unigram
cross-entropy of the same masked tokens (hyte.evaluation.language_model): a seed's comparison is reported only when
both models are at least 1.5 nats below it ("gated_seeds", "summary_gated"); the other seeds are kept and shown
with their gate, never as a verdict. On the gated seeds "comparison_gated" holds HyTE-FH − EucBERT per set (nDCG@10,
SpecHR): a paired t-test over seeds and a paired bootstrap interval (seeds, then queries within each); a win only where both
exclude zero.

Pilot probes at the tiny size (trained vocabulary, seed 0, MLM stage only, 2026-12-04; not recorded results): with
the recipe as it was, EucBERT's held-out MLM loss was 5.79 nats after 2,000 steps (unigram 6.62: not passed) and 4.61
after 8,000 (passed, 2.0 below), while HyTE-FH's training loss stayed at 6.85-6.88 from step 1,600 to 4,800. The
cause: HyTE-FH's Lorentz residual without the reference code's 4 sqrt(d) rescale averages each sublayer's output
with its input, so its embeddings got ~1 % of EucBERT's share of the gradient. The recipe now sets that rescale
(hyte.training.recipes.hyte_fh_residual_space_scale; a test checks the gradient share); in a 2,000-step probe
(benchmarks/probe_mlm_plateau.py) HyTE-FH then reaches 5.88 nats against EucBERT's 5.79 (unigram 7.00 on that
probe's held-out texts), and this benchmark's own MLM stage (seed 0, --mlm-steps 8000) ends at 4.71 nats against the
unigram 6.62: it passes the gate, 1.91 below (EucBERT's earlier pilot: 4.61). The gated 3-seed study with --mlm-steps
8000 is recorded in benchmarks/results/from_scratch_mlm8000.json (HyTE-FH's start from its radius on, no grid).

Per seed and model: stage 1 MLM -> stage 2 contrastive -> stage 3 fine-tuning with hard negatives, then the held-out
suite (retrieval nDCG@10 / R@10, the hierarchy benchmark, radius-depth Spearman with a bootstrap interval). For the
pooling ablation of the paper's Table 7 (OEM p = 0, 1, 2, tangent mean, CLS; the main runs use OEM p = 1), HyTE-FH
is retrained per pooling: the contrastive and fine-tuning stages again from the seed's MLM stage, which no pooling
touches; on the first seed unless --ablation-seeds says otherwise. Before the runs, the cost
of the geometry: MLM step time and peak memory of HyTE-FH as a ratio to EucBERT, each measured in fresh processes,
alternating, in the same run (kept in RUNS_DIR/cost.json like the scores).

Each finished stage and score is kept under RUNS_DIR, so an interrupted benchmark continues where it stopped
(training itself resumes from its last checkpoint). Output: benchmarks/results/from_scratch.json (quick:
from_scratch_quick.json) with every seed's scores, the mean and standard deviation over seeds, the non-finite
counts of every stage's training log, and the cost ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hyte.evaluation.heldout import aggregate_seeds
from hyte.results import portable_command, write_result
from hyte.training.recipes import SCRATCH_MODELS, SCRATCH_SIZES, from_scratch
from hyte.training.run_folder import remove_checkpoints

STAGES = ("mlm", "contrastive", "finetune")
# The paper's Table 7 poolings: (HyTEFHConfig.pooling, oem_p).
POOLINGS = {"oem-p1": ("oem", 1.0), "oem-p0": ("oem", 0.0), "oem-p2": ("oem", 2.0), "tangent-mean": ("mean", 1.0),
            "cls": ("cls", 1.0)}
EVALUATION = {"tiny": {"queries": 500, "documents": 2000, "hierarchy_queries": 500, "per_depth": 50},
              "base": {"queries": 500, "documents": 2000, "hierarchy_queries": 500, "per_depth": 50},
              "quick": {"queries": 40, "documents": 200, "hierarchy_queries": 40, "per_depth": 10}}


def _vocabulary(size: str, runs: Path) -> str:
    """The WordPiece vocabulary both twins share, trained once on the MLM corpus (training branches and chapters
    only; the held-out ones are never seen); kept under ``runs`` and reused by reruns."""
    from hyte.training.data import mlm_texts
    from hyte.training.vocabulary import train_wordpiece

    texts = mlm_texts(from_scratch("hyte-fh", "mlm", "unused", size=size).data, seed=0)
    return str(train_wordpiece(texts, runs / "vocabulary", SCRATCH_SIZES[size]["vocab_size"]))


def _mlm_gate(config, final: Path) -> dict:
    """The finished MLM stage's held-out masked-LM loss beside the unigram cross-entropy (the gate of issue 26)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hyte.evaluation.language_model import masked_lm_gate
    from hyte.training.data import heldout_mlm_texts, mlm_texts

    model = AutoModelForMaskedLM.from_pretrained(final, trust_remote_code=True)
    tokenizer = AutoTokenizer.from_pretrained(final)
    return masked_lm_gate(model, tokenizer, mlm_texts(config.data, seed=0), heldout_mlm_texts(config.data),
                          max_length=config.mlm.max_length)


def _train_stages(model: str, seed: int, size: str, run_dir: Path, mining_cache: str, tokenizer: str | None,
                  mlm_steps: int | None, bf16: bool, start: Path | None = None, temperature: float | None = None,
                  test_fraction: float = 0.2, names: tuple[str, ...] = STAGES) -> dict:
    """Run (or finish) the three stages of one model and seed; returns {stage: its card's training record}, the MLM
    stage's with its held-out gate. With ``start`` (a model folder), the MLM stage is not run: the later stages
    continue from it. ``temperature`` / ``test_fraction``: see ``hyte.training.recipes.from_scratch``; ``names``: the
    stages to run (("mlm",): the MLM stage alone)."""
    from hyte.runner import run

    records, init = {}, None if start is None else str(start)
    for stage in names if start is None else STAGES[1:]:
        config = from_scratch(model, stage, str(run_dir / stage), seed=seed, size=size, init=init,
                              mining_cache=mining_cache, tokenizer=tokenizer if stage == "mlm" else None,
                              steps=mlm_steps if stage == "mlm" else None, bf16=bf16, temperature=temperature,
                              test_fraction=test_fraction)
        final = run_dir / stage / "final"
        if not final.is_dir():
            started = time.perf_counter()
            run(config, resume=True)
            (run_dir / stage / "train_seconds.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
            remove_checkpoints(run_dir / stage)
        card = json.loads((final / "hyte_card.json").read_text())["training"]
        # final_logit_scale: 1 / the learned temperature at the end of a contrastive stage (None for MLM).
        records[stage] = {"final_loss": card["final_loss"], "final_logit_scale": card.get("final_logit_scale"),
                          "nonfinite_values": card["nonfinite_values"],
                          "nonfinite_logs": card.get("nonfinite_logs", 0),
                          "train_seconds": float((run_dir / stage / "train_seconds.txt").read_text())}
        if stage == "mlm":
            gate_path = run_dir / stage / "gate.json"
            if not gate_path.is_file():
                gate_path.write_text(json.dumps(_mlm_gate(config, final), indent=2))
            records[stage]["gate"] = json.loads(gate_path.read_text())
        init = str(final)
    return records


def _with_pooling(mlm_final: Path, pooling: tuple[str, float], destination: Path) -> Path:
    """A copy of an MLM stage's final model whose config names another pooling: the start of a HyTE-FH retrained
    with that pooling. The MLM stage itself does not depend on the pooling (its head reads token points, never the
    pooled one), so every pooling shares it and retrains the contrastive and fine-tuning stages (the seed's Table 7
    trains each pooling; swapping the pooler of a trained model at inference would measure something else)."""
    if destination.is_dir():
        return destination
    partial = destination.with_name(destination.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted copy
    shutil.copytree(mlm_final, partial)
    config = json.loads((partial / "config.json").read_text())
    config["pooling"], config["oem_p"] = pooling
    (partial / "config.json").write_text(json.dumps(config, indent=2))
    partial.rename(destination)
    return destination


def _scores(finals: dict[str, Path], seed: int, path: Path, evaluation: dict, **held_out) -> dict:
    """Held-out scores of finished models ({name: {ontology: scores}}, one name per final model folder in
    ``finals``), kept in ``path``. ``held_out``: which branches (``evaluate_heldout``'s split options; by default
    the test branches of HPO and ICD-10-CM)."""
    from hyte.encoders import load_encoder
    from hyte.evaluation.heldout import evaluate_heldout

    if path.is_file():
        return json.loads(path.read_text())
    encoders = {name: load_encoder(final, max_length=64) for name, final in finals.items()}
    scores = evaluate_heldout(encoders, seed=seed, **{"ontologies": ("hpo", "icd10"), **evaluation, **held_out})
    path.write_text(json.dumps(scores, indent=2))
    return scores


def _chosen_temperature(runs: Path, model: str, temperatures: list[float], seed: int, stages,
                        evaluation: dict) -> dict:
    """``model``'s initial temperature chosen on HPO validation branches, the same candidates and rule for both
    models (equal care, issue 45): from the seed's MLM stage, the contrastive and fine-tuning stages once per
    candidate with the validation branches held out of them too (test fraction 0.35), scored by nDCG@10 on the
    validation branches (within the 0.35 held out, outside the 0.2 test). The MLM stage read the validation
    branches' text, for both models alike."""
    scores = {}
    for temperature in temperatures:
        run_dir = runs / f"{model}-select-t{temperature:g}-s{seed}"
        stages(run_dir, start=runs / f"{model}-s{seed}" / "mlm" / "final", temperature=temperature,
               test_fraction=0.35)
        scored = _scores({"run": run_dir / "finetune" / "final"}, seed, run_dir / "validation.json", evaluation,
                         split="validation", ontologies=("hpo",), test_fraction=0.2, validation_fraction=0.35)
        scores[f"{temperature:g}"] = scored["run"]["hpo"]["ndcg@10"]
        print(f"{model:8} temperature {temperature:g}: validation nDCG@10 {scores[f'{temperature:g}']:.4f}",
              flush=True)
    chosen = max(temperatures, key=lambda t: (scores[f"{t:g}"], -temperatures.index(t)))
    return {"seed": seed, "validation_ndcg@10": scores, "chosen": chosen}


# ---- the cost of the geometry: one MLM step of each model, measured in fresh processes ---------------------------

def _cost_child(model: str, size: str, steps: int) -> None:
    """Print {"step_seconds": median, "step_mb": peak RSS above the loaded model and batches} of MLM steps."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    from hyte.training.data import mlm_texts
    from hyte.training.models import build_model

    torch.set_num_threads(1)
    config = from_scratch(model, "mlm", "unused", size=size)
    torch.manual_seed(0)
    built = build_model(config.model, for_mlm=True)
    texts = mlm_texts(config.data, seed=0)
    batch_size = config.training.per_device_train_batch_size
    collator = DataCollatorForLanguageModeling(built.tokenizer, mlm_probability=0.15, seed=0)
    batches = [collator([built.tokenizer(text, truncation=True, max_length=config.mlm.max_length)
                         for text in texts[i * batch_size:(i + 1) * batch_size]]) for i in range(steps)]
    optimizer = torch.optim.AdamW(built.model.parameters(), lr=config.training.learning_rate)
    loaded_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kilobytes
    seconds = []
    for batch in batches:
        started = time.perf_counter()
        built.model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seconds.append(time.perf_counter() - started)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"step_seconds": statistics.median(seconds[1:]), "step_mb": peak_mb - loaded_mb}))


def _measure_cost(size: str, steps: int, rounds: int) -> dict:
    """HyTE-FH / EucBERT ratios of MLM step time and peak step memory: ``rounds`` fresh processes per model,
    alternating (EucBERT, HyTE-FH, EucBERT, ...), one thread each; medians over rounds."""
    measured = {model: [] for model in SCRATCH_MODELS}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for _ in range(rounds):
        for model in ("eucbert", "hyte-fh"):
            out = subprocess.run([sys.executable, __file__, "--cost-child", model, "--size", size,
                                  "--cost-steps", str(steps)], capture_output=True, text=True, env=env, check=True)
            measured[model].append(json.loads(out.stdout.strip().splitlines()[-1]))
    median = {model: {key: statistics.median(r[key] for r in runs) for key in ("step_seconds", "step_mb")}
              for model, runs in measured.items()}
    return {"shape": SCRATCH_SIZES[size]["shape"], "batch": SCRATCH_SIZES[size]["batch"], "steps": steps,
            "rounds": rounds, "median": median, "runs": measured,
            "step_time_ratio": median["hyte-fh"]["step_seconds"] / median["eucbert"]["step_seconds"],
            "step_memory_ratio": median["hyte-fh"]["step_mb"] / max(median["eucbert"]["step_mb"], 1e-9)}


def _ablated_seeds(results: dict) -> list[str]:
    """The seed names ("s0", ...) whose HyTE-FH was scored with every pooling."""
    return [seed for seed, seed_run in results["hyte-fh"].items() if "cls" in seed_run["scores"]]


def _gated_seeds(results: dict) -> list[str]:
    """The seed names whose two models both passed the held-out MLM gate: the only seeds a comparison may use."""
    return [seed for seed in results["hyte-fh"]
            if all(results[model][seed]["training"]["mlm"]["gate"]["passed"] for model in SCRATCH_MODELS)]


def _mlm_start(results: dict, seeds: list[str]) -> dict:
    """Both models' MLM checkpoints on the held-out sets, before any contrastive step (issue 45): the mean over the
    named seeds per model, and HyTE-FH − EucBERT as ``_comparison`` computes it; {} without seeds."""
    from hyte.evaluation.heldout import compare_models

    if not seeds:
        return {}
    starts = {model: [results[model][seed]["mlm_scores"] for seed in seeds] for model in SCRATCH_MODELS}
    return {"summary": {model: aggregate_seeds(rows) for model, rows in starts.items()},
            "comparison": compare_models(starts["hyte-fh"], starts["eucbert"])}


def _vocabulary_record(tokenizer: str | None) -> dict:
    if tokenizer is None:
        return {"kind": "bundled MiniLM WordPiece", "size": 30522}
    record = json.loads((Path(tokenizer) / "vocabulary.json").read_text())
    return {"kind": "WordPiece trained on the MLM corpus (tokenizers)", "size": record["trained_size"],
            "corpus_sha256": record["corpus_sha256"]}


def _stages(results: dict) -> list[dict]:
    """Every trained stage's record, the pooling ablation's retrained stages included."""
    return [stage for model in results.values() for seed_run in model.values()
            for training in [seed_run["training"], *seed_run.get("pooling_training", {}).values()]
            for stage in training.values()]


def _summary(results: dict, seeds: list[str] | None = None) -> dict:
    """Mean and spread over seeds (all, or the named ``seeds``) per (model, pooling). The pooling ablation's rows
    are over the seeds that scored it, labelled with them, beside the trained pooling (OEM p = 1) on the same seeds."""
    if seeds is not None:
        results = {model: {seed: by_seed[seed] for seed in seeds} for model, by_seed in results.items()}
        if not seeds:
            return {}
    summary = {}
    for model, by_seed in results.items():
        names = dict.fromkeys(name for seed_run in by_seed.values() for name in seed_run["scores"])
        for name in names:
            rows = [seed_run["scores"][name] for seed_run in by_seed.values() if name in seed_run["scores"]]
            if len(rows) == len(by_seed):  # a pooling only some seeds scored gets its labelled row below
                summary[model if model == "eucbert" else f"{model} {name}"] = aggregate_seeds(rows)
    ablated = _ablated_seeds(results)
    if ablated and len(ablated) < len(results["hyte-fh"]):
        where = f" ({', '.join(ablated)})"
        for name in POOLINGS:
            summary[f"hyte-fh {name}{where}"] = aggregate_seeds([results["hyte-fh"][seed]["scores"][name]
                                                                 for seed in ablated])
    return summary


def _comparison(results: dict, seeds: list[str]) -> dict:
    """HyTE-FH (OEM p = 1) − EucBERT on the named seeds, per set: nDCG@10 and SpecHR with a paired t-test over seeds
    and a paired bootstrap interval over seeds, then queries (``compare_models``); {} without seeds."""
    from hyte.evaluation.heldout import compare_models

    if not seeds:
        return {}
    return compare_models([results["hyte-fh"][seed]["scores"]["oem-p1"] for seed in seeds],
                          [results["eucbert"][seed]["scores"]["mean"] for seed in seeds])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="toy size and step counts: checks the pipeline")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default: 0 1 2 (quick: 0)")
    parser.add_argument("--ablation-seeds", type=int, nargs="*", default=None,
                        help="seeds whose HyTE-FH is also scored with every pooling (default: the first seed)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/from-scratch"))
    parser.add_argument("--output", type=Path, help="default: benchmarks/results/from_scratch[_quick].json")
    parser.add_argument("--cost-steps", type=int, default=None, help="MLM steps timed per process (default 12)")
    parser.add_argument("--vocabulary", choices=("trained", "bundled"), default="trained",
                        help="trained: a WordPiece vocabulary learned on the MLM corpus (the size's vocab_size); "
                             "bundled: the MiniLM's 30,522 entries (the recipe of the first recorded run)")
    parser.add_argument("--mlm-steps", type=int, default=None, help="MLM steps (default: the size's)")
    parser.add_argument("--size", choices=sorted(SCRATCH_SIZES),
                        help="tiny (default; one CPU core), base (the paper's shape and batch; one GPU, with "
                             "--bf16) or quick (the same as --quick)")
    parser.add_argument("--bf16", action="store_true", help="mixed precision training (a GPU; the geometry "
                                                            "stays float32)")
    parser.add_argument("--temperatures", type=float, nargs="+", default=None,
                        help="equal care: each model's initial temperature chosen on HPO validation branches among "
                             "these (the first seed), the same rule for both (no start from HyTE-FH's radius)")
    parser.add_argument("--cost-child", choices=sorted(SCRATCH_MODELS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = args.size or ("quick" if args.quick else "tiny")
    if args.cost_child:
        _cost_child(args.cost_child, size, args.cost_steps)
        return
    seeds = args.seeds if args.seeds is not None else [0] if args.quick else [0, 1, 2]
    # Runs of another vocabulary or MLM length never mix with these (each keeps its finished stages for resuming).
    runs = args.runs_dir / "-".join([size, *(["trained-vocabulary"] if args.vocabulary == "trained" else []),
                                     *([f"mlm{args.mlm_steps}"] if args.mlm_steps else []),
                                     *(["bf16"] if args.bf16 else [])])
    runs.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    cost_steps = args.cost_steps or (4 if args.quick else 12)
    cost_path = runs / "cost.json"
    if not cost_path.is_file():
        cost_path.write_text(json.dumps(_measure_cost(size, cost_steps, rounds=1 if args.quick else 3), indent=2))
    cost = json.loads(cost_path.read_text())
    print(f"MLM step HyTE-FH / EucBERT: time x{cost['step_time_ratio']:.2f}, memory x{cost['step_memory_ratio']:.2f}",
          flush=True)
    tokenizer = _vocabulary(size, runs) if args.vocabulary == "trained" else None
    results = {model: {} for model in SCRATCH_MODELS}
    chosen, selection = {model: None for model in SCRATCH_MODELS}, None
    for seed in seeds:
        for model in SCRATCH_MODELS:
            run_dir = runs / f"{model}-s{seed}"
            stages = functools.partial(_train_stages, model, seed, size, mining_cache=str(runs / "mining-cache"),
                                       tokenizer=tokenizer, mlm_steps=args.mlm_steps, bf16=args.bf16)
            if args.temperatures:  # equal care: the MLM stage as always, the later ones at the chosen temperature
                training = stages(run_dir, names=("mlm",))
                if chosen[model] is None:
                    selection = selection or {}
                    selection[model] = _chosen_temperature(runs, model, args.temperatures, seed, stages,
                                                           EVALUATION[size])
                    chosen[model] = selection[model]["chosen"]
                tuned_dir = runs / f"{model}-t{chosen[model]:g}-s{seed}"
                training |= stages(tuned_dir, start=run_dir / "mlm" / "final", temperature=chosen[model])
            else:
                tuned_dir = run_dir
                training = stages(run_dir)
            gate = training["mlm"]["gate"]
            print(f"{model:8} seed {seed}: held-out MLM loss {gate['mlm_loss']:.3f} nats, unigram "
                  f"{gate['unigram_cross_entropy']:.3f}: gate (≥ {gate['margin']} below) "
                  f"{'passed' if gate['passed'] else 'NOT passed'}", flush=True)
            finals = {"oem-p1" if model == "hyte-fh" else "mean": tuned_dir / "finetune" / "final"}
            # The MLM checkpoint scored before any contrastive step, pooled as the final model: where each starts.
            seed_run = {"training": training, "mlm_scores": _scores(
                {"mlm": run_dir / "mlm" / "final"}, seed, run_dir / "mlm" / "scores.json", EVALUATION[size])["mlm"]}
            ablation = seeds[:1] if args.ablation_seeds is None else args.ablation_seeds
            if model == "hyte-fh" and seed in ablation and not args.temperatures:
                seed_run["pooling_training"] = {}
                for name, pooling in POOLINGS.items():
                    if name != "oem-p1":  # the main run's pooling
                        pooled = runs / f"{model}-{name}-s{seed}"
                        start = _with_pooling(run_dir / "mlm" / "final", pooling, pooled / "mlm-start")
                        seed_run["pooling_training"][name] = stages(pooled, start=start)
                        finals[name] = pooled / "finetune" / "final"
            seed_run["scores"] = scores = _scores(finals, seed, tuned_dir / "scores.json", EVALUATION[size])
            results[model][f"s{seed}"] = seed_run
            main_scores = scores["oem-p1" if model == "hyte-fh" else "mean"]
            print(f"{model:8} seed {seed}: " + " | ".join(
                f"{ontology} nDCG@10 {s['ndcg@10']:.4f} SpecHR {s['spechr']:.4f} "
                f"rho {s['radius_depth_spearman']['spearman']:.3f}" for ontology, s in main_scores.items()), flush=True)
    command = portable_command(shlex.join(["python", "benchmarks/run_from_scratch.py", *sys.argv[1:]]))
    payload = {"benchmark": "from_scratch", "command": command.strip(), "size": size, "recipe": {
                   **SCRATCH_SIZES[size], "learning_rates": "hyte.training.recipes.SCRATCH_LEARNING_RATES"},
               "seeds": seeds, "evaluation": EVALUATION[size], "cost": cost,
               "vocabulary": _vocabulary_record(tokenizer),
               "mlm_steps": args.mlm_steps or SCRATCH_SIZES[size]["steps"]["mlm"],
               "gated_seeds": _gated_seeds(results), "summary_gated": _summary(results, _gated_seeds(results)),
               "comparison_gated": _comparison(results, _gated_seeds(results)),
               "mlm_start": _mlm_start(results, _gated_seeds(results)),
               "pooling_ablation_seeds": [int(seed[1:]) for seed in _ablated_seeds(results)],
               "temperature_selection": selection,
               "pooling_ablation": "retrained",
               "nonfinite": sum(stage["nonfinite_values"] + stage["nonfinite_logs"] for stage in _stages(results)),
               "train_seconds": round(sum(stage["train_seconds"] for stage in _stages(results))),
               "wall_seconds": round(time.perf_counter() - started), "machine": platform.platform(),
               "date": time.strftime("%Y-%m-%d"), "runs": results, "summary": _summary(results)}
    output = args.output or Path("benchmarks/results") / ("from_scratch_quick.json" if args.quick
                                                          else "from_scratch.json")
    write_result(output, payload, keep=("reading",))  # the hand-written reading stays until it is edited


if __name__ == "__main__":
    main()
