"""HyTE: hyperbolic text encoders (HyTE-FH, HyTE-H) for hierarchy-aware dense retrieval, Hugging Face native.

Importing ``hyte`` registers the models with the transformers Auto classes, so ``AutoModel.from_pretrained`` on a
HyTE checkpoint uses the installed code; without the package the checkpoint's own copy of the code is used
(``trust_remote_code=True``).
"""

from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

from . import lorentz
from .configuration_hyte import EucBERTConfig, HyTEFHConfig, HyTEHConfig
from .modeling_hyte import (
    EucBERTForMaskedLM,
    EucBERTModel,
    HyTEFHForMaskedLM,
    HyTEFHModel,
    HyTEHModel,
    HyTEPreTrainedModel,
)

__version__ = "0.1.0"

for _config, _model, _masked_lm in (
    (HyTEFHConfig, HyTEFHModel, HyTEFHForMaskedLM),
    (EucBERTConfig, EucBERTModel, EucBERTForMaskedLM),
    (HyTEHConfig, HyTEHModel, None),
):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModel.register(_config, _model, exist_ok=True)
    if _masked_lm is not None:
        AutoModelForMaskedLM.register(_config, _masked_lm, exist_ok=True)

_LAZY = {
    # sentence-transformers costs ~12 s to import: load it only when these are used.
    "sentence_transformer": "hyte.integrations.sentence_transformers",
    "save_sentence_transformer": "hyte.integrations.sentence_transformers",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hyte' has no attribute {name!r}")


__all__ = [
    "EucBERTConfig",
    "EucBERTForMaskedLM",
    "EucBERTModel",
    "HyTEFHConfig",
    "HyTEFHForMaskedLM",
    "HyTEFHModel",
    "HyTEHConfig",
    "HyTEHModel",
    "HyTEPreTrainedModel",
    "lorentz",
    "save_sentence_transformer",
    "sentence_transformer",
]
