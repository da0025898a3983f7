"""What every training stage shares: TrainingArguments from a RunConfig, LoRA (peft), the learned
temperature, held-out evaluation, the final model folder (written atomically), and ``train_pairs``, the
contrastive loop of stages 2 and 3 that the feature stages (``hyte.compatibility``, ``hyte.phrase``) build on."""

from __future__ import annotations

import json
import logging
import math
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..artifacts import CARD_FILE, EVAL_RESULTS_FILE, KINDS
from ..bundled import resolve_model
from ..errors import HyteError
from ..io import atomic_directory, read_json_file
from ..results import portable_path, portable_paths, public_model_name
from .config import ConfigError, LoraSpec, RunConfig
from .data import hierarchy_for, refuse_lone_batches
from .models import (
    BuiltModel,
    detach_plain_logit_scale,
    embed,
    encoder_for,
    log_logit_scale_parameter,
    logit_scale,
    unwrap,
)
from .run_folder import identity_digest, resume_checkpoint
from .scale_out import world_size
from .trainer import ContrastiveCollator, ContrastiveTrainer

__all__ = [
    "ONTOLOGY_DATASETS",
    "SentenceTransformerCheckpoints",
    "TrainingDivergedError",
    "apply_lora",
    "card_lineage",
    "check_lora_targets",
    "heldout_metrics",
    "refuse_diverged",
    "save_final",
    "train_pairs",
    "training_arguments",
]

logger = logging.getLogger(__name__)


# Card names of the built-in training sources.
ONTOLOGY_DATASETS = {"hpo": ["HPO (Human Phenotype Ontology)"], "icd10": ["ICD-10-CM"],
                     "hpo+icd10": ["HPO (Human Phenotype Ontology)", "ICD-10-CM"]}


# The TrainingSpec fields that are TrainingArguments of the same name.
_TRAINING_ARGUMENTS = ("output_dir", "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
                       "learning_rate", "weight_decay", "warmup_steps", "lr_scheduler_type", "max_grad_norm",
                       "logging_steps", "save_steps", "save_total_limit", "seed", "bf16", "dataloader_num_workers")


def training_arguments(config: RunConfig, **extra: Any) -> TrainingArguments:
    spec = config.training
    if spec.warmup_steps >= spec.max_steps > 0:  # larger explicit values are refused by the config's validation
        logger.warning("training.warmup_steps = %d is not below training.max_steps = %d: the whole run is warm-up and "
                       "the learning rate never reaches %g; lower warmup_steps for a run this short",
                       spec.warmup_steps, spec.max_steps, spec.learning_rate)
    return TrainingArguments(
        **{name: getattr(spec, name) for name in _TRAINING_ARGUMENTS}, save_strategy="steps", data_seed=spec.seed,
        activation_checkpointing=spec.gradient_checkpointing, dataloader_pin_memory=False, report_to="none",
        remove_unused_columns=False, disable_tqdm=not sys.stderr.isatty(),  # no progress bars in a log file
        # Several processes: every parameter takes part in each step (HyTE-H drops its backbone's unused pooler; the
        # logit scale is averaged by ContrastiveTrainer), so DDP need not search the graph for unused ones.
        ddp_find_unused_parameters=False,
        # Without an accelerator, say so: accelerate then runs torchrun's processes as multi-CPU data parallel (gloo);
        # left to detect it, it treats each process as a lone one and they would all write the same files.
        use_cpu=not (torch.cuda.is_available() or torch.backends.mps.is_available()),
        **extra,
    )


class SentenceTransformerCheckpoints(TrainerCallback):
    """Makes every checkpoint of a HyTE embedding model a sentence-transformers folder too: without its
    ``modules.json``, ``SentenceTransformer(checkpoint)`` would mean-pool the token points and drop the model's own
    pooling and specificity head, silently (the final model gets the same files from ``save_final``)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def on_save(self, args, state, control, model=None, **kwargs):
        from ..integrations.sentence_transformers import add_sentence_transformer_files

        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if model is not None and state.is_world_process_zero and not hasattr(model, "peft_config") and folder.is_dir():
            add_sentence_transformer_files(model, self.tokenizer, folder)


def check_lora_targets(model, config: RunConfig) -> None:
    """ConfigError naming the ``lora.target_modules`` that match no module of ``model``, to be called as soon as the
    model is built: peft refuses them only once the data is read and negatives are mined, and only when none
    matches (a misspelt name beside a right one was dropped without a word). Names match as in peft: a module's
    full name or its last parts. The default list also names HyTE-H's projection: a model without one adapts the
    others."""
    if config.lora.r == 0:
        return
    names = [name for name, _ in model.named_modules()]

    def unmatched(wanted: list[str]) -> list[str]:
        return [target for target in wanted if not any(name == target or name.endswith(f".{target}") for name in names)]

    targets = config.lora.target_modules
    missing = unmatched(targets)
    if missing and not (targets == LoraSpec().target_modules and len(missing) < len(targets)):
        linear = sorted({name.rpartition(".")[2] for name, module in model.named_modules()
                         if isinstance(module, torch.nn.Linear)})
        raise ConfigError(f"lora.target_modules names {', '.join(map(repr, missing))}, which {type(model).__name__} "
                          f"has no module of: give the names of its linear layers ({', '.join(linear)})")
    # peft trains and saves whole modules beside the adapters; a name that matches no module (a bare parameter such
    # as HyTE-H's scale, or a misspelling) was accepted and left frozen.
    not_modules = unmatched(config.lora.modules_to_save)
    if not_modules:
        parameters = {name.rpartition(".")[2] for name, _ in model.named_parameters()}
        bare = [name for name in not_modules if name in parameters]
        kind = (f"{', '.join(map(repr, bare))} {'is a parameter' if len(bare) == 1 else 'are parameters'}, not "
                "a module" if bare else "no module of the model has that name")
        raise ConfigError(f"lora.modules_to_save names {', '.join(map(repr, not_modules))}, which "
                          f"{type(model).__name__} has no module of ({kind}): peft saves whole modules only; name "
                          "modules (e.g. projection), or train every weight with lora.r: 0")


def apply_lora(built: BuiltModel, config: RunConfig) -> None:
    """Wrap the model with LoRA adapters (peft). A base that exists only in memory (e.g. a HyTE-H just built on an
    encoder, whose projection is freshly initialised) is saved to output_dir/base first, so that the adapter can be
    loaded onto exactly the model it was trained on."""
    if config.lora.r == 0:  # 0 = full fine-tuning; a negative rank is refused by the config's validation
        return
    from peft import LoraConfig, get_peft_model

    if config.model.build in ("hyte_fh", "eucbert"):
        logger.warning("LoRA on a new %s: its frozen weights are a random initialisation, so the adapters learn on "
                       "noise. Train it fully first (lora.r: 0), then adapt the trained model (model.build: load).",
                       config.model.build)
    if config.model.build != "load":
        base_dir = Path(config.training.output_dir) / "base"
        built.model.save_pretrained(base_dir)
        built.tokenizer.save_pretrained(base_dir)
        built.model.config.name_or_path = str(base_dir)
    lora = LoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                      target_modules=list(config.lora.target_modules),
                      modules_to_save=list(config.lora.modules_to_save) or None)
    built.model = get_peft_model(built.model, lora)


def heldout_metrics(built: BuiltModel, config: RunConfig) -> dict[str, float] | None:
    """nDCG@10 etc. on the held-out HPO branches (only meaningful for HPO-style training)."""
    if not config.evaluation.enabled or config.stage == "mlm":
        return None
    from ..evaluation.heldout import heldout_retrieval_set
    from ..evaluation.retrieval import evaluate_retrieval

    model = unwrap(built.model)
    was_training = model.training
    encoder = encoder_for(built, config.loss.max_document_length)
    queries, corpus, qrels = heldout_retrieval_set(
        config.evaluation.max_queries, config.evaluation.max_documents, seed=config.training.seed,
        test_fraction=config.data.hpo_test_fraction, split_seed=config.data.hpo_seed)
    metrics = evaluate_retrieval(encoder, queries, corpus, qrels, k_values=(1, 10, 100))
    model.train(was_training)
    return metrics


def save_final(built: BuiltModel, config: RunConfig, trainer: Trainer, evaluation: dict | None) -> Path:
    """Write output_dir/final completely, then swap it in (an interrupted save leaves the previous one). With
    several processes the first writes it and the others wait for it."""
    if trainer.is_world_process_zero():
        _write_final(built, config, trainer, evaluation)
    trainer.accelerator.wait_for_everyone()
    return Path(config.training.output_dir) / "final"


class TrainingDivergedError(HyteError, ValueError):
    """Training left NaN or Inf in the weights: the final model is not written (its vectors would all be NaN)."""


def refuse_diverged(model, config: RunConfig, step: int) -> None:
    """TrainingDivergedError naming the first non-finite weights, before ``final`` is written."""
    bad = [name for name, parameter in model.named_parameters() if not torch.isfinite(parameter).all()]
    if bad:
        raise TrainingDivergedError(
            f"training diverged: {len(bad)} weight tensor(s) hold NaN/Inf after step {step} (first: {bad[0]}), so "
            f"no final model was written to {Path(config.training.output_dir) / 'final'}. Lower "
            f"training.learning_rate (now {config.training.learning_rate}) or training.head_learning_rate (now "
            f"{config.training.head_learning_rate}) and rerun with --overwrite")


def card_lineage(config: RunConfig, base_model: str | None = None) -> dict[str, Any]:
    """The card's base model and data. A run that starts from a trained HyTE folder names that folder as its parent,
    with the data it was trained on before (a fine-tune of the quickstart's model carries its HPO / ICD-10-CM
    training). No licence is asserted: the data's terms are the user's to state (hyte_card.json "license")."""
    data = ONTOLOGY_DATASETS.get(config.data.source, [])
    if config.data.source == "taxonomy":
        data = [f"taxonomy {Path(config.data.path).name} ({config.data.taxonomy_split} split)"]
    earlier = _parent_card(config.model.path) if config.model.build == "load" else None
    if earlier is None:
        return {"base_model": base_model and public_model_name(base_model), "datasets": data}
    parent_name = public_model_name(config.model.path)
    return {"base_model": parent_name, "datasets": list(dict.fromkeys([*earlier.get("datasets", []), *data])),
            "fine_tuned_from": {"model": portable_path(parent_name), "base_model": earlier.get("base_model"),
                                "datasets": earlier.get("datasets", [])}}


def _parent_card(model_path: str) -> dict | None:
    """The starting model's hyte_card.json (what it was trained from and on): from its folder, or from its Hub
    repository, where ``hyte push`` uploads it (fetched as from_pretrained fetches the weights, cached); None for a
    model that has none (a plain encoder, a model saved without training)."""
    remedy = "it records what the starting model was trained on"
    folder = Path(resolve_model(model_path))
    if folder.is_dir():
        card = folder / CARD_FILE
        return read_json_file(card, remedy) if card.is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    try:
        card = hf_hub_download(model_path, CARD_FILE)
    except LocalEntryNotFoundError:  # offline, and only the files from_pretrained read are cached
        logger.warning("%s's %s is not in the local Hub cache (offline): the card cannot name what it was trained "
                       "on, and names its base model only", model_path, CARD_FILE)
        return None
    except EntryNotFoundError:  # the repository holds none (LocalEntryNotFoundError is one too: caught first)
        return None
    return read_json_file(card, remedy)


def _write_final(built: BuiltModel, config: RunConfig, trainer: Trainer, evaluation: dict | None) -> None:
    from ..integrations.sentence_transformers import save_model_folder  # here: importing it takes seconds

    output_dir = Path(config.training.output_dir)
    model = built.model
    refuse_diverged(model, config, trainer.state.global_step)
    # The learned temperature: a HyTE model keeps its own parameter; a plain encoder's attached one is taken off
    # (the checkpoint stays a plain encoder) and only recorded in the card.
    final_logit_scale = (float(logit_scale(model, config.loss.max_logit_scale).detach()) if config.stage != "mlm"
                         else None)
    detach_plain_logit_scale(model)
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output_dir / "adapter")  # the adapter alone (a few MB)
        model = model.merge_and_unload()
    card = {
        **card_lineage(config, built.base_model),
        "language": ["en"],
        "training": {"stage": config.stage, "steps": trainer.state.global_step,
                     "config": portable_paths(config.to_dict()), "run_identity": identity_digest(config),
                     "final_loss": next((e["loss"] for e in reversed(trainer.state.log_history) if "loss" in e), None),
                     "final_logit_scale": final_logit_scale,
                     "nonfinite_values": sum(e.get("nonfinite_values", 0) for e in trainer.state.log_history),
                     # Logged losses / gradient norms that were NaN or Inf (any stage; MLM logs no embeddings).
                     "nonfinite_logs": sum(not math.isfinite(value) for e in trainer.state.log_history
                                           for key, value in e.items() if key in ("loss", "grad_norm"))},
    }

    def write(staging: Path) -> None:
        save_model_folder(model, built.tokenizer, staging)  # a sentence-transformers folder too (HyTE embeddings)
        (staging / CARD_FILE).write_text(json.dumps(card, indent=2, default=str))
        if evaluation is not None:
            results = {"retrieval": [{"dataset_name": "HPO held-out branches", "dataset_type": "hpo-heldout",
                                      "split": "test", "metrics": evaluation["after"]}],
                       "before_training": evaluation["before"]}
            (staging / EVAL_RESULTS_FILE).write_text(json.dumps(results, indent=2))

    atomic_directory(output_dir / "final", write, KINDS["model"].markers, "model folder")


def _initial_logit_scale(built: BuiltModel, config: RunConfig, examples: list[dict]) -> float:
    """1 / temperature, divided for hyperbolic models by the mean distance to the origin of (up to 256) training
    documents under the initial model when ``loss.temperature_from_radius`` (see LossSpec); clamped to the bounds."""
    from .. import lorentz

    loss = config.loss
    scale = 1.0 / loss.temperature
    if built.hyperbolic and loss.temperature_from_radius:
        texts = sorted({e["document"] for e in examples})[:256]
        model = unwrap(built.model)
        was_training = model.training
        model.eval()
        with torch.no_grad():
            tokens = built.tokenizer(texts, padding=True, truncation=True, max_length=loss.max_document_length,
                                     padding_side="right", return_tensors="pt")
            points = embed(model, tokens["input_ids"], tokens["attention_mask"], True)
            radius = float(lorentz.distance_to_origin(points, float(model.curvature)).mean())
        model.train(was_training)
        scale /= max(radius, 1e-6)  # a model whose documents all sit at the origin gets the upper clamp
    return min(max(scale, 1.0), loss.max_logit_scale)


def _set_logit_scale(built: BuiltModel, config: RunConfig, examples: list[dict], resuming: bool) -> None:
    """Initialise the logit scale (fresh runs; resumed runs get theirs from the checkpoint) and its upper bound."""
    if not resuming:
        initial = _initial_logit_scale(built, config, examples)
        with torch.no_grad():
            log_logit_scale_parameter(built.model).fill_(math.log(initial))
    model_config = getattr(unwrap(built.model), "config", None)
    if hasattr(model_config, "max_logit_scale"):  # HyTE models record both
        # The starting value first, under the old bound and the new: the config checks init <= max at every assignment.
        start = model_config.logit_scale_init if resuming else initial
        model_config.logit_scale_init = min(start, model_config.max_logit_scale, config.loss.max_logit_scale)
        model_config.max_logit_scale = config.loss.max_logit_scale


# ContrastiveTrainer's options, read from the config section that has a field of the same name.
_LOSS_OPTIONS = ("similarity", "max_logit_scale", "logit_scale_learning_rate", "hierarchy_weight", "hierarchy_term",
                 "cone_min_radius", "radius_margin")
_TRAINING_OPTIONS = ("head_learning_rate", "radius_head_learning_rate", "gather_negatives", "mini_batch_size")


def train_pairs(config: RunConfig, examples: list[dict], built: BuiltModel, resume: bool,
                 callbacks: list | None, trainer_class: type = ContrastiveTrainer,
                 collator: ContrastiveCollator | None = None, trainer_options: dict | None = None) -> Path:
    """Train on (query, document[, negatives, parent]) examples; ``trainer_class`` / ``collator`` /
    ``trainer_options``: a ContrastiveTrainer subclass, its collator and its own arguments (stage compatible)."""
    gather = config.training.gather_negatives
    refuse_lone_batches(examples, config.training.per_device_train_batch_size,
                        gather if gather is not None else world_size() > 1)
    before = heldout_metrics(built, config)
    checkpoint = resume_checkpoint(config, resume)
    _set_logit_scale(built, config, examples, resuming=checkpoint is not None)
    apply_lora(built, config)
    # After LoRA, which freezes everything but the adapters: the logit scale trains in either case.
    log_logit_scale_parameter(built.model).requires_grad_(config.loss.learn_temperature)
    collator = collator or ContrastiveCollator(built.tokenizer, config.loss.max_query_length,
                                               config.loss.max_document_length, hierarchy_for(config))
    options = {**{name: getattr(config.loss, name) for name in _LOSS_OPTIONS},
               **{name: getattr(config.training, name) for name in _TRAINING_OPTIONS}, **(trainer_options or {})}
    trainer = trainer_class(model=built.model, args=training_arguments(config), train_dataset=examples,
                            data_collator=collator, hyperbolic=built.hyperbolic,
                            callbacks=[*(callbacks or []), SentenceTransformerCheckpoints(built.tokenizer)], **options)
    trainer.train(resume_from_checkpoint=checkpoint)
    after = heldout_metrics(built, config)
    evaluation = {"before": before, "after": after} if after is not None else None
    if evaluation:
        logger.info("held-out nDCG@10: %.4f -> %.4f", before["ndcg@10"], after["ndcg@10"])
    return save_final(built, config, trainer, evaluation)
