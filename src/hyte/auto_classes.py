"""Registers the HyTE configs and models with the transformers Auto classes when imported (once per process).

Then ``AutoModel.from_pretrained`` and ``AutoConfig.for_model`` resolve the HyTE model types to the installed code.
``hyte`` imports this on first use of a model or config class; the modules that load checkpoints import it too.
"""

from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

from .configuration_hyte import EucBERTConfig, HyTEFHConfig, HyTEHConfig
from .configuration_hyte_phrase import HyTEPhraseConfig
from .modeling_hyte import EucBERTForMaskedLM, EucBERTModel, HyTEFHForMaskedLM, HyTEFHModel, HyTEHModel
from .modeling_hyte_phrase import HyTEPhraseModel

for _config, _model, _masked_lm in (
    (HyTEFHConfig, HyTEFHModel, HyTEFHForMaskedLM),
    (EucBERTConfig, EucBERTModel, EucBERTForMaskedLM),
    (HyTEHConfig, HyTEHModel, None),
    (HyTEPhraseConfig, HyTEPhraseModel, None),
):
    AutoConfig.register(_config.model_type, _config, exist_ok=True)
    AutoModel.register(_config, _model, exist_ok=True)
    if _masked_lm is not None:
        AutoModelForMaskedLM.register(_config, _masked_lm, exist_ok=True)
