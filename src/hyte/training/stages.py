"""The paper's three training stages as resumable ``transformers.Trainer`` runs, driven by a RunConfig:
``train_mlm`` (stage 1, masked-language modelling of HyTE-FH or its Euclidean twin), ``train_contrastive`` (stage 2,
in-batch negatives) and ``train_finetune`` (stage 3, with hard negatives mined first, ``mining.py``).

Each checkpoints to ``training.output_dir`` (``resume=True`` continues from the last one) and writes the complete
model folder ``output_dir/final`` atomically at the end (``loop.py``). With ``lora.r > 0`` only LoRA adapters train
(peft); the adapter is saved on its own in ``output_dir/adapter`` and merged into ``final``.
"""

from __future__ import annotations

from pathlib import Path

from transformers import DataCollatorForLanguageModeling, Trainer

from .config import RunConfig
from .data import contrastive_examples, mlm_texts
from .loop import apply_lora, check_lora_targets, save_final, train_pairs, training_arguments
from .mining import examples_with_mined_negatives
from .models import build_model
from .run_folder import resume_checkpoint

__all__ = ["train_contrastive", "train_finetune", "train_mlm"]


def train_mlm(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 1: masked-language modelling with DataCollatorForLanguageModeling."""
    from datasets import Dataset

    built = build_model(config.model, for_mlm=True)
    check_lora_targets(built.model, config)
    texts = mlm_texts(config.data, seed=config.training.seed)
    tokenizer = built.tokenizer
    dataset = Dataset.from_dict({"text": texts}).map(
        lambda rows: tokenizer(rows["text"], truncation=True, max_length=config.mlm.max_length),
        batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm.mlm_probability,
                                               seed=config.training.seed)
    apply_lora(built, config)
    trainer = Trainer(model=built.model, args=training_arguments(config), train_dataset=dataset,
                      data_collator=collator, processing_class=tokenizer, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume_checkpoint(config, resume))
    built.model = trainer.model
    return save_final(built, config, trainer, None)


def train_contrastive(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 2: contrastive training on (query, document) pairs with in-batch negatives."""
    built = build_model(config.model)
    check_lora_targets(built.model, config)
    examples = contrastive_examples(config.data, seed=config.training.seed,
                                    batch_size=config.training.per_device_train_batch_size)
    return train_pairs(config, examples, built, resume, callbacks)


def train_finetune(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage 3: contrastive fine-tuning with hard negatives mined before training starts (``mining.miner``), added
    to the examples' own and cached in output_dir/mined_negatives.jsonl: a resumed run trains on the same data."""
    built = build_model(config.model)
    check_lora_targets(built.model, config)  # before mining, which takes minutes
    return train_pairs(config, examples_with_mined_negatives(built, config, resume), built, resume, callbacks)
