"""Building the model a run trains, and embedding a tokenized batch with it (hyperbolic or Euclidean)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub.errors import StrictDataclassError
from torch import Tensor
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer, PreTrainedModel

from .. import auto_classes  # noqa: F401  (checkpoints load with the installed HyTE code)
from ..artifacts import holds
from ..bundled import BUNDLED_MINILM, BUNDLED_MINILM_HUB_ID, resolve_model
from ..configuration_hyte import EucBERTConfig, HyTEFHConfig
from ..modeling_hyte import (
    EucBERTForMaskedLM,
    EucBERTModel,
    HyTEFHForMaskedLM,
    HyTEFHModel,
    HyTEHModel,
    HyTEPreTrainedModel,
    masked_mean,
    not_a_model_folder,
)
from .config import ConfigError, ModelSpec


@dataclass
class BuiltModel:
    model: PreTrainedModel
    tokenizer: object
    hyperbolic: bool  # Lorentz similarities (HyTE-FH / HyTE-H) or cosine (EucBERT / plain encoders)
    base_model: str | None  # the Euclidean encoder HyTE-H was built on, for the model card


def _from_options(build, *args, **options):
    """``build(*args, **options)``; the model config's own checks of model.options (curvature > 0, ...) fail as
    a one-line ConfigError."""
    try:
        return build(*args, **options)
    except StrictDataclassError as error:
        raise ConfigError(f"model.options: {' '.join(str(error.__cause__ or error).split())}") from error


# The models a run builds new from model.options: config class, masked-LM class (stage mlm), embedding class.
_NEW_MODELS = {"hyte_fh": (HyTEFHConfig, HyTEFHForMaskedLM, HyTEFHModel),
               "eucbert": (EucBERTConfig, EucBERTForMaskedLM, EucBERTModel)}


def build_model(spec: ModelSpec, for_mlm: bool = False) -> BuiltModel:
    """The model named by a ModelSpec, with its tokenizer."""
    path = resolve_model(spec.path)
    tokenizer_folder = resolve_model(spec.tokenizer) if spec.tokenizer else None
    for role, folder in (("model.path", path), ("model.tokenizer", tokenizer_folder)):
        # A local folder without config.json (an index or run folder) would fail deep inside the tokenizer loader;
        # a tokenizer may also come from a tokenizer-only folder (hyte.training.vocabulary writes one).
        if folder is None or not Path(folder).is_dir():
            continue
        tokenizer_only = role == "model.tokenizer" and any(
            (Path(folder) / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json"))
        if not holds(Path(folder), "model") and not tokenizer_only:
            raise ConfigError(f"{role}: {not_a_model_folder(folder)}")
    tokenizer_path = tokenizer_folder or (resolve_model(BUNDLED_MINILM) if spec.build in _NEW_MODELS else path)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path, trust_remote_code=True)
    if spec.build in _NEW_MODELS:
        config_class, mlm_class, model_class = _NEW_MODELS[spec.build]
        config = _from_options(config_class, **{"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                                                **spec.options})
        return BuiltModel((mlm_class if for_mlm else model_class)(config), tokenizer, spec.build == "hyte_fh", None)
    if spec.build == "hyte_h":
        model = _from_options(HyTEHModel.from_base, path, **spec.options)
        # Record the base by its public name, not a local path (the bundled package holds all-MiniLM-L6-v2).
        base = BUNDLED_MINILM_HUB_ID if spec.path == BUNDLED_MINILM else spec.path
        model.config.encoder_config._name_or_path = base
        return BuiltModel(model, tokenizer, True, base)
    model = AutoModel.from_pretrained(path, trust_remote_code=True, dtype=torch.float32)
    if for_mlm and isinstance(model, (HyTEFHModel, EucBERTModel)):
        model = AutoModelForMaskedLM.from_pretrained(path, trust_remote_code=True, dtype=torch.float32)
    if not isinstance(model, HyTEPreTrainedModel) and getattr(model, "pooler", None) is not None:
        # The loss mean-pools the token states, so a plain encoder's pooler (BERT's dense + tanh) trains nothing;
        # distributed data parallel training cannot synchronise a layer no loss reaches. The saved model lacks it.
        model.pooler = None
    if getattr(model.config, "compatible_with", None):
        # A declaration that this model's queries search an older model's indexes holds for the weights it was made
        # for; training changes them. A compatible run declares anew (hyte.compatibility.training).
        model.config.compatible_with = []
    base = getattr(getattr(model.config, "encoder_config", None), "_name_or_path", None)
    return BuiltModel(model, tokenizer, bool(getattr(model, "is_hyperbolic", False)), base)


def embed(model: PreTrainedModel, input_ids: Tensor, attention_mask: Tensor, hyperbolic: bool) -> Tensor:
    """(B, T) tokens -> (B, D) embeddings: hyperboloid points, or raw (un-normalised) mean-pooled vectors; the
    contrastive loss normalises the Euclidean ones itself (cosine), the order-embedding term needs them raw."""
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    if hyperbolic or (isinstance(unwrap(model), EucBERTModel) and out.pooler_output is not None):
        return out.pooler_output.float()
    return masked_mean(out.last_hidden_state, attention_mask).float()


def embed_queries_and_documents(model: PreTrainedModel, inputs: dict[str, Tensor], hyperbolic: bool,
                                together: bool = False) -> tuple[Tensor, Tensor]:
    """The collator's queries (B, Tq) and documents (M, Td) -> (B, D), (M, D) embeddings.

    ``together``: one forward pass over both, padded to the longer length, for DistributedDataParallel, whose
    contract is one forward pass per backward pass. One process embeds them separately (short queries stay short).
    """
    query_ids, query_mask = inputs["query_input_ids"], inputs["query_attention_mask"]
    document_ids, document_mask = inputs["document_input_ids"], inputs["document_attention_mask"]
    if not together:
        return embed(model, query_ids, query_mask, hyperbolic), embed(model, document_ids, document_mask, hyperbolic)
    length = max(query_ids.shape[1], document_ids.shape[1])

    def padded(tensor: Tensor) -> Tensor:  # (n, T) -> (n, length), right-padded with 0 (masked out)
        return torch.nn.functional.pad(tensor, (0, length - tensor.shape[1]))

    embedded = embed(model, torch.cat([padded(query_ids), padded(document_ids)]),
                     torch.cat([padded(query_mask), padded(document_mask)]), hyperbolic)
    return embedded[: query_ids.shape[0]], embedded[query_ids.shape[0] :]


def unwrap(model: PreTrainedModel) -> PreTrainedModel:
    """The model itself, or the model inside a DistributedDataParallel and/or PEFT wrapper."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        model = model.module
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def encoder_for(built: BuiltModel, max_length: int | None):
    """The run's model as an encoder (``hyte.encoders``) that scores the vector the loss trains (``embed``): a HyTE
    model's own (a Lorentz point, or EucBERT's pooled vector by cosine, CLS or mean as it is configured), a plain
    encoder's masked mean. Puts the model in eval mode."""
    from ..encoders import EuclideanEncoder, HyteEncoder

    model = unwrap(built.model)
    own_pooling = isinstance(model, HyTEPreTrainedModel)
    return (HyteEncoder if own_pooling else EuclideanEncoder)(model, built.tokenizer, max_length=max_length)


# Name of the logit-scale parameter hyte attaches to models without one of their own: plain Hugging Face encoders and
# the masked-LM classes (HyTE's embedding models have theirs, ``log_logit_scale``); removed again before the final
# model is saved, so the checkpoint keeps its own layout.
PLAIN_LOGIT_SCALE = "hyte_log_logit_scale"


def log_logit_scale_parameter(model: PreTrainedModel) -> torch.nn.Parameter:
    """The log logit scale a contrastive run trains: the HyTE embedding model's own, or one attached to the model.

    Attaching it to the model (instead of keeping it in the trainer) puts it in Trainer checkpoints, so a resumed
    run continues from the learned temperature.
    """
    base = unwrap(model)
    if getattr(base, "log_logit_scale", None) is not None:
        return base.log_logit_scale
    if not hasattr(base, PLAIN_LOGIT_SCALE):
        base.register_parameter(PLAIN_LOGIT_SCALE, torch.nn.Parameter(torch.tensor(math.log(20.0))))
    return getattr(base, PLAIN_LOGIT_SCALE)


def logit_scale(model: PreTrainedModel, max_logit_scale: float) -> Tensor:
    """exp(log logit scale) clamped to [1, max_logit_scale] (the clamp also stops the gradient at the bounds)."""
    base = unwrap(model)
    if getattr(base, "log_logit_scale", None) is not None:
        return base.logit_scale
    return log_logit_scale_parameter(model).exp().clamp(1.0, max_logit_scale)


def detach_plain_logit_scale(model: PreTrainedModel) -> None:
    """Remove the logit scale attached by log_logit_scale_parameter before saving (HyTE embedding models keep
    theirs)."""
    base = unwrap(model)
    if hasattr(base, PLAIN_LOGIT_SCALE):
        delattr(base, PLAIN_LOGIT_SCALE)


def curvature_of(model: PreTrainedModel) -> float:
    """c of a HyTE model (also under a PEFT wrapper); 0 for Euclidean models."""
    log_curvature = getattr(unwrap(model), "log_curvature", None)
    return float(log_curvature.exp()) if log_curvature is not None else 0.0
