"""The paper's three training stages as resumable ``transformers.Trainer`` runs, driven by a RunConfig.

* ``train_mlm``: stage 1, masked-language modelling of HyTE-FH (LorentzMLR head) or its Euclidean twin.
* ``train_contrastive``: stage 2, (query, document) pairs with in-batch negatives.
* ``train_finetune``: stage 3, the same with hard negatives mined by the current model (``mining.py``).

Each writes checkpoints to ``training.output_dir`` (``resume=True`` continues from the last one) and, at the end,
a complete model folder ``output_dir/final`` (weights, config, code files, tokenizer, ``hyte_card.json`` with the
recipe, ``eval_results.json`` when evaluated), swapped in atomically. With ``lora.r > 0`` only LoRA adapters train
(peft); the adapter is saved on its own in ``output_dir/adapter`` and merged into ``final``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments, set_seed
from transformers.trainer_utils import get_last_checkpoint

from .config import RunConfig
from .data import contrastive_examples, mlm_texts
from .models import BuiltModel, build_model
from .trainer import ContrastiveCollator, ContrastiveTrainer

logger = logging.getLogger(__name__)


def _training_arguments(config: RunConfig, **extra: Any) -> TrainingArguments:
    spec = config.training
    return TrainingArguments(
        output_dir=spec.output_dir, max_steps=spec.max_steps, per_device_train_batch_size=spec.per_device_train_batch_size,
        gradient_accumulation_steps=spec.gradient_accumulation_steps, learning_rate=spec.learning_rate,
        weight_decay=spec.weight_decay, warmup_steps=spec.warmup_steps, lr_scheduler_type=spec.lr_scheduler_type,
        max_grad_norm=spec.max_grad_norm, logging_steps=spec.logging_steps, save_strategy="steps",
        save_steps=spec.save_steps, save_total_limit=spec.save_total_limit, seed=spec.seed, data_seed=spec.seed,
        bf16=spec.bf16, activation_checkpointing=spec.gradient_checkpointing,
        dataloader_num_workers=spec.dataloader_num_workers, dataloader_pin_memory=False, report_to="none",
        remove_unused_columns=False, **extra,
    )


def _resume_checkpoint(config: RunConfig, resume: bool) -> str | None:
    output_dir = Path(config.training.output_dir)
    if not resume or not output_dir.is_dir():
        return None
    checkpoint = get_last_checkpoint(str(output_dir))
    if checkpoint:
        logger.info("resuming from %s", checkpoint)
    return checkpoint


def _apply_lora(built: BuiltModel, config: RunConfig) -> None:
    """Wrap the model with LoRA adapters (peft). A base that exists only in memory (e.g. a HyTE-H just built on an
    encoder, whose projection is freshly initialised) is saved to output_dir/base first, so that the adapter can be
    loaded onto exactly the model it was trained on."""
    if config.lora.r <= 0:
        return
    from peft import LoraConfig, get_peft_model

    if config.model.build != "load":
        base_dir = Path(config.training.output_dir) / "base"
        built.model.save_pretrained(base_dir)
        built.tokenizer.save_pretrained(base_dir)
        built.model.config.name_or_path = str(base_dir)
    lora = LoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                      target_modules=list(config.lora.target_modules),
                      modules_to_save=list(config.lora.modules_to_save) or None)
    built.model = get_peft_model(built.model, lora)


def _evaluate(built: BuiltModel, config: RunConfig) -> dict[str, float] | None:
    """nDCG@10 etc. on the held-out HPO branches (only meaningful for HPO-style training)."""
    if not config.evaluation.enabled or config.stage == "mlm":
        return None
    from ..encoders import EuclideanEncoder, HyteEncoder
    from ..evaluation.hpo import heldout_retrieval_set
    from ..evaluation.retrieval import evaluate_retrieval

    model = built.model.get_base_model() if hasattr(built.model, "get_base_model") else built.model
    was_training = model.training
    encoder = (HyteEncoder if built.hyperbolic else EuclideanEncoder)(model, built.tokenizer,
                                                                      max_length=config.loss.max_document_length)
    queries, corpus, qrels = heldout_retrieval_set(
        config.evaluation.max_queries, config.evaluation.max_documents, seed=config.training.seed,
        test_fraction=config.data.hpo_test_fraction, split_seed=config.data.hpo_seed)
    metrics = evaluate_retrieval(encoder, queries, corpus, qrels, k_values=(1, 10, 100))
    model.train(was_training)
    return metrics


def _save_final(built: BuiltModel, config: RunConfig, trainer: Trainer, evaluation: dict | None) -> Path:
    """Write output_dir/final completely, then swap it in (an interrupted save leaves the previous one)."""
    output_dir = Path(config.training.output_dir)
    final, staging = output_dir / "final", output_dir / ".final.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    model = built.model
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output_dir / "adapter")  # the adapter alone (a few MB)
        model = model.merge_and_unload()
    model.save_pretrained(staging)
    built.tokenizer.save_pretrained(staging)
    card = {
        "base_model": built.base_model, "datasets": ["HPO (Human Phenotype Ontology)"] if config.data.source == "hpo" else [],
        "license": "apache-2.0", "language": ["en"],
        "training": {"stage": config.stage, "steps": trainer.state.global_step, "config": config.to_dict(),
                     "final_loss": next((e["loss"] for e in reversed(trainer.state.log_history) if "loss" in e), None)},
    }
    (staging / "hyte_card.json").write_text(json.dumps(card, indent=2, default=str))
    if evaluation is not None:
        results = {"retrieval": [{"dataset_name": "HPO held-out branches", "dataset_type": "hpo-heldout",
                                  "split": "test", "metrics": evaluation["after"]}],
                   "before_training": evaluation["before"]}
        (staging / "eval_results.json").write_text(json.dumps(results, indent=2))
    backup = output_dir / ".final.previous"
    shutil.rmtree(backup, ignore_errors=True)
    if final.exists():
        os.replace(final, backup)
    os.replace(staging, final)
    shutil.rmtree(backup, ignore_errors=True)
    return final


def train_mlm(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 1: masked-language modelling with DataCollatorForLanguageModeling."""
    from datasets import Dataset

    built = build_model(config.model, for_mlm=True)
    texts = mlm_texts(config.data, seed=config.training.seed)
    tokenizer = built.tokenizer
    dataset = Dataset.from_dict({"text": texts}).map(
        lambda rows: tokenizer(rows["text"], truncation=True, max_length=config.mlm.max_length),
        batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm.mlm_probability,
                                               seed=config.training.seed)
    _apply_lora(built, config)
    trainer = Trainer(model=built.model, args=_training_arguments(config), train_dataset=dataset,
                      data_collator=collator, processing_class=tokenizer, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=_resume_checkpoint(config, resume))
    built.model = trainer.model
    return _save_final(built, config, trainer, None)


def _train_pairs(config: RunConfig, examples: list[dict], built: BuiltModel, resume: bool,
                 callbacks: list | None) -> Path:
    before = _evaluate(built, config)
    _apply_lora(built, config)
    collator = ContrastiveCollator(built.tokenizer, config.loss.max_query_length, config.loss.max_document_length)
    trainer = ContrastiveTrainer(model=built.model, args=_training_arguments(config), train_dataset=examples,
                                 data_collator=collator, hyperbolic=built.hyperbolic,
                                 similarity=config.loss.similarity, temperature=config.loss.temperature,
                                 head_learning_rate=config.training.head_learning_rate, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=_resume_checkpoint(config, resume))
    after = _evaluate(built, config)
    evaluation = {"before": before, "after": after} if after is not None else None
    if evaluation:
        logger.info("held-out nDCG@10: %.4f -> %.4f", before["ndcg@10"], after["ndcg@10"])
    return _save_final(built, config, trainer, evaluation)


def train_contrastive(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 2: contrastive training on (query, document) pairs with in-batch negatives."""
    built = build_model(config.model)
    examples = contrastive_examples(config.data, seed=config.training.seed)
    return _train_pairs(config, examples, built, resume, callbacks)


def train_finetune(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 3: contrastive fine-tuning with hard negatives mined by the model before training starts.

    The mined examples are cached in output_dir/mined_negatives.jsonl, so a resumed run trains on exactly the same
    data as the interrupted one.
    """
    from ..encoders import EuclideanEncoder, HyteEncoder
    from .mining import mine_hard_negatives

    built = build_model(config.model)
    examples = contrastive_examples(config.data, seed=config.training.seed)
    cache = Path(config.training.output_dir) / "mined_negatives.jsonl"
    if resume and cache.is_file():
        examples = [json.loads(line) for line in cache.open(encoding="utf-8")]
    else:
        encoder = (HyteEncoder if built.hyperbolic else EuclideanEncoder)(built.model, built.tokenizer,
                                                                          max_length=config.loss.max_document_length)
        examples = mine_hard_negatives(encoder, examples, num_negatives=config.mining.num_negatives,
                                       candidates=config.mining.candidates, margin=config.mining.margin,
                                       skip_top=config.mining.skip_top)
        built.model.train()
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_suffix(".tmp")
        temporary.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
        os.replace(temporary, cache)
    return _train_pairs(config, examples, built, resume, callbacks)


STAGE_FUNCTIONS = {"mlm": train_mlm, "contrastive": train_contrastive, "finetune": train_finetune}


def run(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Run the stage named by the config; returns the final model folder. ``callbacks``: Trainer callbacks.

    The seed is set before the model is built, so new weights (HyTE-FH, the HyTE-H projection) are reproducible too.
    """
    set_seed(config.training.seed)
    return STAGE_FUNCTIONS[config.stage](config, resume=resume, callbacks=callbacks)
