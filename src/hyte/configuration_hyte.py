"""Configurations of the HyTE models (Hugging Face house layout; also shipped as remote code).

Three configs, one per model family:

* ``HyTEFHConfig`` (model_type ``hyte_fh``): the fully hyperbolic encoder HyTE-FH.
* ``HyTEHConfig`` (model_type ``hyte_h``): HyTE-H, a pretrained Euclidean encoder projected onto the hyperboloid.
  It holds the encoder's full config, so a saved HyTE-H never needs the base repository again.
* ``EucBERTConfig`` (model_type ``hyte_euc``): the Euclidean twin of HyTE-FH (same shape, same interface), the
  paper's controlled baseline.

Sizes follow Hugging Face names. For the hyperbolic models ``hidden_size`` and ``intermediate_size`` count the time
coordinate: hidden 768 means points in R^768 on a 767-dimensional hyperboloid, as in the paper. Curvature is stored
as c > 0 with <x, x>_L = -c (sectional curvature K = -1/c); see ``lorentz.py``.
"""

from __future__ import annotations

import math

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

POOLING_MODES = ("oem", "einstein", "mean", "cls")
EUCLIDEAN_POOLING_MODES = ("mean", "cls")


def _check_heads(hidden_size: int, num_attention_heads: int, *, hyperbolic: bool) -> None:
    if num_attention_heads <= 0 or hidden_size % num_attention_heads != 0:
        raise ValueError(
            f"hidden_size ({hidden_size}) must split evenly into num_attention_heads ({num_attention_heads}); "
            f"choose e.g. hidden_size={num_attention_heads * max(1, round(hidden_size / max(num_attention_heads, 1)))}."
        )
    head_dim = hidden_size // num_attention_heads
    if hyperbolic and head_dim < 2:
        raise ValueError(
            f"each attention head needs a time coordinate and at least one space coordinate, but "
            f"hidden_size / num_attention_heads = {head_dim}; use fewer heads or a larger hidden_size."
        )


def _check_shared(config, pooling_modes: tuple[str, ...], *, hyperbolic: bool) -> None:
    """What every HyTE encoder config checks: the curvature and OEM exponent (hyperbolic models; EucBERT has
    neither), the pooling mode and the logit scale."""
    curvature = getattr(config, "curvature", None)
    if hyperbolic and not (isinstance(curvature, (int, float)) and math.isfinite(curvature) and curvature > 0):
        raise ValueError(
            f"curvature must be a finite number > 0 (c in <x,x>_L = -c, sectional curvature K = -1/c); "
            f"got {curvature!r}. For K = -1 use curvature=1.0."
        )
    if config.pooling not in pooling_modes:
        raise ValueError(f"pooling must be one of {pooling_modes}; got {config.pooling!r}.")
    if hyperbolic and not (isinstance(config.oem_p, (int, float)) and config.oem_p >= 0):
        raise ValueError(f"oem_p must be a number >= 0 (0 is the Einstein midpoint); got {config.oem_p!r}.")
    if not 1.0 <= config.logit_scale_init <= config.max_logit_scale:
        raise ValueError(f"logit_scale_init must lie in [1, max_logit_scale = {config.max_logit_scale}]; got "
                         f"{config.logit_scale_init}.")


def _check_positive(**values) -> None:
    for name, value in values.items():
        if value is None or value <= 0:
            raise ValueError(f"{name} must be > 0; got {value!r}.")


def _check_encoder(config, pooling_modes: tuple[str, ...], *, hyperbolic: bool) -> None:
    """What HyTE-FH and EucBERT check alike."""
    _check_heads(config.hidden_size, config.num_attention_heads, hyperbolic=hyperbolic)
    _check_shared(config, pooling_modes, hyperbolic=hyperbolic)
    _check_positive(vocab_size=config.vocab_size, num_hidden_layers=config.num_hidden_layers,
                    max_position_embeddings=config.max_position_embeddings)


class _HyTEConfig(PreTrainedConfig):
    """The fields every HyTE model's config has (before its own)."""

    # Contrastive training's learnable logit scale (1 / temperature; CLIP/MERU style), stored with the model so a
    # resumed or continued run starts from the learned value. Not used at inference: rankings do not depend on it.
    logit_scale_init: float = 20.0  # 1 / 0.05; hyte's trainer can re-initialise it from the document radius
    max_logit_scale: float = 100.0  # upper clamp (CLIP's): keeps the softmax from collapsing onto one candidate
    initializer_range: float = 0.02


class _EncoderConfig(_HyTEConfig):
    """The fields HyTE-FH and its Euclidean twin EucBERT share (defaults: the paper's base shape)."""

    vocab_size: int = 30522  # BERT uncased WordPiece, the tokenizer the reference evaluations use
    hidden_size: int = 768  # HyTE-FH: ambient size of each point, time coordinate included (767 space coordinates)
    num_hidden_layers: int = 12
    num_attention_heads: int = 12  # HyTE-FH: each head works on hidden_size / heads coordinates, one of them time
    intermediate_size: int = 3072  # HyTE-FH: ambient size inside the hyperbolic feed-forward (time included)
    max_position_embeddings: int = 512  # longest input accepted (RoPE itself has no table)
    pad_token_id: int | None = 0
    rope_theta: float = 10000.0  # RoPE base, applied to the space coordinates (HyTE-FH) of queries and keys
    layer_norm_eps: float = 1e-5
    tie_word_embeddings: bool = False  # HyTE-FH's LorentzMLR head has its own parameters
    sparse_prediction: bool = False  # MLM: compute head logits only at labelled positions (returns (M, V) logits)


@strict
class HyTEFHConfig(_EncoderConfig):
    """Configuration of HyTE-FH, the fully hyperbolic encoder (defaults: the paper's base shape)."""

    model_type = "hyte_fh"

    curvature: float = 1.0  # c > 0, K = -1/c
    learnable_curvature: bool = False  # off by default: learned curvature is known to collapse
    pooling: str = "oem"  # "oem" | "einstein" (OEM p=0) | "mean" (tangent mean at the origin) | "cls"
    oem_p: float = 1.0  # OEM exponent: token weights x_0^p (the reference code's p)
    residual_space_scale: float | None = None  # reference code: 4*sqrt(hidden_size) rescale after each residual

    def validate_architecture(self):
        _check_encoder(self, POOLING_MODES, hyperbolic=True)
        if self.hidden_size < 2 or self.intermediate_size < 2:
            raise ValueError("hidden_size and intermediate_size count the time coordinate and must be >= 2.")


@strict
class EucBERTConfig(_EncoderConfig):
    """Configuration of EucBERT, the Euclidean twin of HyTE-FH: the same shape and fields, no curvature."""

    model_type = "hyte_euc"

    pooling: str = "mean"  # "mean" (masked) | "cls"

    def validate_architecture(self):
        _check_encoder(self, EUCLIDEAN_POOLING_MODES, hyperbolic=False)


@strict
class HyTEHConfig(_HyTEConfig):
    """Configuration of HyTE-H: a Euclidean encoder, a projection onto the hyperboloid, optional hyperbolic layers.

    ``num_hidden_layers`` (derived, read-only) counts the layers of the composite model: the encoder's layers plus
    the hyperbolic layers. Its outputs report them as any transformers encoder does: ``hidden_states`` has
    num_hidden_layers + 1 entries (the encoder's embeddings, then each layer's output, Euclidean then hyperbolic)
    and ``attentions`` num_hidden_layers. The projection onto the hyperboloid is not a layer.
    """

    model_type = "hyte_h"
    sub_configs_defaults = {"encoder_config": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder_config: PreTrainedConfig | dict | None = None  # the Euclidean encoder's full config (BERT by default)
    hidden_size: int = 385  # ambient size of the hyperbolic points, time included (384 space coordinates)
    curvature: float = 1.0
    learnable_curvature: bool = False
    norm_clip: float = 5.0  # the projected tangent vectors are clipped to this norm (= max distance to the origin)
    scale_init: float | None = None  # initial tangent scale alpha; None -> 1/sqrt(hidden_size - 1)
    num_hyperbolic_layers: int = 0  # HyTE-FH layers applied after the projection
    num_attention_heads: int = 5  # only used by the hyperbolic layers
    intermediate_size: int = 1537  # only used by the hyperbolic layers
    rope_theta: float = 10000.0
    layer_norm_eps: float = 1e-5
    residual_space_scale: float | None = None
    pooling: str = "oem"
    oem_p: float = 1.0
    # Specificity head: None = off (the pooled point is the OEM). A number r0 = on: the pooled point keeps the OEM's
    # direction and gets its distance to the origin from a learned head on the mean token state, initialised to r0
    # for every text, so an untrained model ranks by angle alone, like its cosine base, and training decides how far
    # out each text sits (radius = specificity).
    radius_head: float | None = None
    pad_token_id: int | None = 0

    def validate_architecture(self):
        _check_shared(self, POOLING_MODES, hyperbolic=True)
        optional = {"scale_init": self.scale_init, "radius_head": self.radius_head}
        _check_positive(norm_clip=self.norm_clip, **{name: value for name, value in optional.items()
                                                     if value is not None})  # None: the default / no head
        if self.num_hyperbolic_layers:
            _check_heads(self.hidden_size, self.num_attention_heads, hyperbolic=True)

    @property
    def vocab_size(self) -> int:
        """The backbone's vocabulary size; setting it (resize_token_embeddings does) sets the backbone's."""
        return self.encoder_config.vocab_size

    @vocab_size.setter
    def vocab_size(self, value: int) -> None:
        self.encoder_config.vocab_size = value

    @property
    def max_position_embeddings(self) -> int:
        return self.encoder_config.max_position_embeddings

    @property
    def num_hidden_layers(self) -> int:
        """The encoder's layers plus the hyperbolic layers (class docstring)."""
        return self.encoder_config.num_hidden_layers + self.num_hyperbolic_layers

    @num_hidden_layers.setter
    def num_hidden_layers(self, value: int) -> None:
        raise AttributeError(
            f"HyTE-H's num_hidden_layers is derived (encoder_config.num_hidden_layers + num_hyperbolic_layers = "
            f"{self.num_hidden_layers}); set num_hyperbolic_layers or the encoder's num_hidden_layers instead of {value}."
        )


__all__ = ["EucBERTConfig", "HyTEFHConfig", "HyTEHConfig"]
