"""Training: the paper's three stages on transformers.Trainer, hard-negative mining, LoRA adaptation (peft).

``hyte.runner.run(config)`` runs any stage, core or feature, by its config's ``stage``.
"""

from .config import ConfigError, RunConfig
from .config_files import load_config, parse_config

_STAGES = ("train_contrastive", "train_finetune", "train_mlm")


def __getattr__(name: str):
    # The stages need torch and transformers; importing them on first use keeps `hyte train --help` quick.
    if name in _STAGES:
        from . import stages

        return getattr(stages, name)
    raise AttributeError(f"module 'hyte.training' has no attribute {name!r}")


__all__ = ["ConfigError", "RunConfig", "load_config", "parse_config", *_STAGES]
