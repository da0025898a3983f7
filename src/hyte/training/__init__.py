"""Training: the paper's three stages on transformers.Trainer, hard-negative mining, LoRA adaptation (peft)."""

from .config import ConfigError, RunConfig, load_config, parse_config
from .stages import run, train_contrastive, train_finetune, train_mlm

__all__ = ["ConfigError", "RunConfig", "load_config", "parse_config", "run", "train_contrastive", "train_finetune",
           "train_mlm"]
