"""HyTE models: HyTE-FH (fully hyperbolic), HyTE-H (Euclidean encoder -> hyperboloid) and EucBERT (Euclidean twin).

Read top to bottom: shared helpers, the hyperbolic layers, HyTE-FH, the Euclidean twin, HyTE-H, the encode API.
Every hyperbolic tensor lives on the hyperboloid <x, x>_L = -c, time coordinate first (``lorentz.py``).
Shapes: B batch, T tokens, D = hidden_size (time included), H heads, Dh = D / H (time included).

This file is remote code: it imports only torch, transformers and its siblings ``configuration_hyte`` and
``lorentz``, so a checkpoint loads with ``trust_remote_code=True`` where the ``hyte`` package is not installed.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutputWithPooling, MaskedLMOutput
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from .configuration_hyte import EucBERTConfig, HyTEFHConfig, HyTEHConfig
from .lorentz import (
    add_time,
    check_curvature,
    distance_from_inner,
    expmap0,
    flip_time,
    logmap0,
    outward_einstein_midpoint,
    project,
    projection_factor,
    tangent_mean,
    time_coordinate,
)

# ----------------------------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------------------------


def not_a_model_folder(folder: str | os.PathLike) -> str:
    """What to say of a local folder without config.json: where its model is, for a training run's folder (its
    ``final/``), an index folder (the model its ``index.json`` records) or a sentence-transformers module folder
    (``1_HyperbolicPooling``: the model folder above it). Here, not in the package's foundation,
    because remote code must stand alone (the model classes' ``from_pretrained`` say it too)."""
    folder = Path(folder)
    if (folder / "final" / "config.json").is_file():
        return f"{folder} is a training run's folder, not a model: its model is {folder / 'final'}"
    run = folder.absolute().parent
    finished = f"its finished model is {run / 'final'}" if (run / "final" / "config.json").is_file() else \
        f"its model will be {run / 'final'} once the run finishes"
    if (folder / "adapter_config.json").is_file():
        return (f"{folder} is a LoRA adapter (adapter_config.json), not a model: {finished} (the adapter merged into "
                "its base), or load the adapter onto its base with peft")
    if (folder / "trainer_state.json").is_file():
        return (f"{folder} is a checkpoint of the training run {run}, not a model: {finished}; "
                "`hyte train --resume` continues the run from its checkpoints")
    if (folder / "index.json").is_file():
        try:
            model = json.loads((folder / "index.json").read_text(encoding="utf-8")).get("model")
        except (OSError, ValueError, AttributeError):  # a damaged index.json: the hint below still holds
            model = None
        built_with = f": {model}" if isinstance(model, str) and model else " (its index.json names it)"
        return f"{folder} is an index folder, not a model: give the model it was built with{built_with}"
    model = sentence_transformers_model_above(folder)
    if model is not None:
        return module_folder_message(folder, model)
    return f"{folder} is not a model folder (it has no config.json)"


def sentence_transformers_model_above(folder: str | os.PathLike) -> Path | None:
    """The sentence-transformers model folder (modules.json beside config.json) one or two levels above ``folder``
    (``1_HyperbolicPooling``, ``2_Router/query_0_TimeFlip``), or None."""
    for parent in Path(folder).absolute().parents[:2]:
        if (parent / "modules.json").is_file() and (parent / "config.json").is_file():
            return parent
    return None


def module_folder_message(folder: str | os.PathLike, model: Path) -> str:
    return f"{folder} is one module of the sentence-transformers model {model}, not a model: give {model}"


class RefusesFolderWithoutConfig:
    """``from_pretrained`` refusing an existing local folder without config.json (a training run's or an index
    folder) with :func:`not_a_model_folder`'s words; transformers' own message named a missing weights file. Hub ids,
    model folders and a folder given with ``config=`` (weights only) pass unchanged."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        if isinstance(pretrained_model_name_or_path, (str, os.PathLike)) and kwargs.get("config") is None:
            folder = Path(pretrained_model_name_or_path) / (kwargs.get("subfolder") or "")
            if folder.is_dir() and not (folder / "config.json").is_file():
                raise FileNotFoundError(not_a_model_folder(folder))
        return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)


def check_token_ids(input_ids: Tensor, vocab_size: int) -> None:
    """ValueError for token ids outside [0, vocab_size), which would fail deep inside the embedding lookup: checked
    where texts come in (``encode``, on the tokenizer's CPU tensors), not in forward (a host sync per call)."""
    if input_ids.numel():
        low, high = (int(value) for value in torch.aminmax(input_ids))
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"input_ids must lie in [0, {vocab_size}) (the model's vocab_size); got values in [{low}, {high}]. "
                f"Is the tokenizer the one this model was built for?"
            )


def validate_inputs(input_ids: Tensor, attention_mask: Tensor | None, max_length: int) -> Tensor:
    """Check the shapes of ids and mask (no values: ``check_token_ids`` does that where texts come in); return the
    mask as a (B, T) float tensor (1 = token, 0 = padding)."""
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch, tokens); got {tuple(input_ids.shape)}.")
    if input_ids.shape[1] > max_length:
        raise ValueError(
            f"sequence of {input_ids.shape[1]} tokens exceeds max_position_embeddings={max_length}; "
            f"truncate the input (tokenizer(..., truncation=True, max_length={max_length}))."
        )
    if attention_mask is None:
        return torch.ones(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    if attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}; "
            f"got {tuple(attention_mask.shape)}."
        )
    return attention_mask.to(torch.float32)


def first_token(x: Tensor, mask: Tensor) -> Tensor:
    """(B, T, D) -> (B, D): each row's first token that is not padding (column 0 unless the batch is left-padded)."""
    return x[torch.arange(x.shape[0], device=x.device), mask.argmax(dim=1)]  # argmax: the first 1 of the row


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """(B, T, D) -> (B, D): the mean over each row's tokens (mask (B, T): 1 = token); 0 for a row of only padding."""
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (weights * x).sum(1) / weights.sum(1).clamp_min(1.0)


def batches_by_length(texts: Sequence[str], batch_size: int, show_progress_bar: bool | None, description: str):
    """Yield lists of indices into ``texts``, ``batch_size`` at a time, longest texts first: similar lengths share a
    batch (little padding), and a memory problem shows at once. A progress bar with ``show_progress_bar``, or by
    default from 20 batches on."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    starts = range(0, len(texts), batch_size)
    if show_progress_bar or (show_progress_bar is None and len(texts) >= 20 * batch_size):
        from tqdm.auto import tqdm

        # disable=None: no bar when the output is not a terminal (a log file would get one line per update).
        starts = tqdm(starts, desc=description, unit="batch", disable=None)
    for start in starts:
        yield order[start : start + batch_size]


def check_encode_arguments(texts, tokenizer, role: str, batch_size, max_length, limit: int) -> tuple[list[str], int]:
    """The texts of an encode call as a list, and its max_length (None: ``limit``, the model's positions); a clear
    one-line error for anything else, before any work. Shared by ``encode`` and ``encode_phrases``."""
    if role not in ("document", "query"):
        raise ValueError(f"role must be 'document' or 'query'; got {role!r}.")
    if isinstance(texts, str):
        texts = [texts]
    # A dict or set would give its keys in some order: texts and vectors could no longer be matched up.
    if texts is None or isinstance(texts, (bytes, int, float, dict, set, frozenset)):
        raise TypeError(f"texts must be a string or a list of strings; got {type(texts).__name__}")
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be a tokenizer object (AutoTokenizer.from_pretrained(path)); got "
                        f"{type(tokenizer).__name__} {tokenizer!r}")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(
            f"encode expects strings; item {bad[0]} is a {type(texts[bad[0]]).__name__}. Convert it with str() "
            f"or drop it."
        )
    # Checked here rather than with hyte's check_positive_int: this file is remote code and imports no hyte module.
    max_length = limit if max_length is None else max_length
    for name, value in (("batch_size", batch_size), ("max_length", max_length)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
            raise ValueError(f"{name} must be a whole number > 0; got {value!r}.")
    if max_length > limit:
        raise ValueError(f"max_length must be between 1 and the model's {limit} positions "
                         f"(max_position_embeddings), or None for {limit}; got {max_length}.")
    return texts, int(max_length)


def rotary_cos_sin(positions: Tensor, rotary_dim: int, theta: float, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """cos/sin tables for RoPE, (T,) -> 2 x (T, rotary_dim / 2). Computed per call: no buffer to re-initialise."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, device=positions.device, dtype=torch.float32) / rotary_dim))
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor, prefix: Tensor | None = None) -> Tensor:
    """Rotate the first 2 * cos.shape[-1] features of x (B, H, T, F) in (first half, second half) pairs.

    Odd leftover features pass through. A rotation keeps ||x||, so for hyperbolic heads the time coordinate
    (recomputed from the space part) is unaffected. ``prefix`` (B, H, T, 1), e.g. that time coordinate, is put in
    front in the same concatenation.
    """
    half = cos.shape[-1]
    x1, x2, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
    parts = [x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest]
    return torch.cat(parts if prefix is None else [prefix, *parts], dim=-1)


def eager_attention_forward(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor,
                            scaling: float, dropout: float = 0.0, **kwargs) -> tuple[Tensor, Tensor]:
    """softmax(scaling * q k^T, masked) v for (B, H, T, F) tensors -> output (B, T, H, F), weights (B, H, T, T).

    The plain reference path, with the signature of transformers' attention interface (whose "sdpa" entry is the
    fused kernel). ``attention_mask`` (B, 1, 1, T) is boolean, True = attend.
    """
    scores = scaling * (query @ key.transpose(-1, -2))  # (B, H, T, T)
    # The dtype's lowest finite value, not -inf: a row of only padding gets uniform weights instead of 0/0 = NaN.
    weights = torch.softmax(scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min), dim=-1)
    return (weights @ value).transpose(1, 2), weights


def attention(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attend: Tensor, scale: float,
              output_attentions: bool) -> tuple[Tensor, Tensor | None]:
    """Dispatch on ``module.config._attn_implementation`` (set by ``attn_implementation=`` at loading or by
    ``set_attn_implementation``): (B, H, T, F) tensors -> output (B, T, H, F), weights or None.

    Fused kernels do not return their weights, so ``output_attentions`` runs the eager path.
    """
    implementation = "eager" if output_attentions else module.config._attn_implementation
    attention_forward = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
    output, weights = attention_forward(module, query, key, value, attend, scaling=scale, dropout=0.0)
    return output, weights if output_attentions else None


class LayerStack(nn.Module):
    """Layers applied in order, with RoPE tables and masking: (B, T, D) + mask (B, T) -> (output (B, T, D), hidden
    states, attention weights). RoPE rotates the first 2 * (rotated // 2) features of each head, in pairs.

    A layer takes ``parts(x)`` (EucBERT: (x,); HyTE-FH: the points' (time, space) parts), the key padding mask, the
    RoPE tables and ``layer_args`` (HyTE-FH: c), and returns new parts ahead of its attention weights; ``join``
    makes one (B, T, D) tensor of them. Hidden states (on request) are the input followed by every layer's output
    (L + 1 tensors), each one the next layer computes from (so gradients reach it); attention weights one
    (B, H, T, T) tensor per layer. Layers are GradientCheckpointingLayers: checkpointing is switched by
    ``gradient_checkpointing_enable()`` on the model.
    """

    def __init__(self, layers, rotated: int, rope_theta: float):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.rotary_dim = 2 * (rotated // 2)
        self.rope_theta = rope_theta

    @staticmethod
    def parts(x: Tensor) -> tuple:
        return (x,)

    @staticmethod
    def join(state: tuple) -> Tensor:
        return state[0]

    def forward(self, x: Tensor, mask: Tensor, layer_args: tuple = (), output_hidden_states: bool = False,
                output_attentions: bool = False) -> tuple[Tensor, tuple | None, tuple | None]:
        cos, sin = rotary_cos_sin(torch.arange(x.shape[1], device=x.device), self.rotary_dim, self.rope_theta, x.dtype)
        # Key padding mask (B, 1, 1, T), True = attend: padding keys get no weight in the softmax (unless a row is
        # only padding: its output is finite and meaningless, and differs between the eager and SDPA paths).
        layer_args = ((mask > 0)[:, None, None, :], cos, sin, *layer_args)
        state = self.parts(x)
        hidden_states = (x,) if output_hidden_states else None
        attentions = () if output_attentions else None
        for layer in self.layers:
            *state, weights = layer(*state, *layer_args, output_attentions=output_attentions)
            if output_hidden_states:
                x = self.join(state)
                hidden_states += (x,)
                state = self.parts(x)
            if output_attentions:
                attentions += (weights,)
        return (x if output_hidden_states else self.join(state)), hidden_states, attentions


def select_hidden_states(hidden_states: tuple | None, selection: bool | int | list[int]) -> tuple | None:
    """``output_hidden_states`` is a flag or (transformers 5) indices into the full tuple, negative ones from the end:
    selected entries are kept, the others become None, so positions keep their meaning."""
    if hidden_states is None or isinstance(selection, bool):
        return hidden_states
    n = len(hidden_states)
    kept = {i % n for i in ([selection] if isinstance(selection, int) else selection) if -n <= i < n}
    return tuple(h if i in kept else None for i, h in enumerate(hidden_states))


# ----------------------------------------------------------------------------------------------------------------
# Hyperbolic layers
# ----------------------------------------------------------------------------------------------------------------


def linear_padded(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear(x, weight, bias)``, (..., in) -> (..., out); on CPU with the weight's out rows rounded up to a
    multiple of 8 by trailing zero rows, whose outputs are dropped (the result is a view). Space parts have odd widths
    (D - 1): CPU GEMM kernels took ~1.5x as long for 63 output columns as for 64 (measured here, identical results).
    Elsewhere the plain call: a padded weight would defeat CUDA autocast's cache of cast weights."""
    pad = -weight.shape[0] % 8
    if pad == 0 or x.device.type != "cpu":
        return F.linear(x, weight, bias)
    bias = None if bias is None else F.pad(bias, (0, pad))
    return F.linear(x, F.pad(weight, (0, 0, 0, pad)), bias)[..., : weight.shape[0]]


class LorentzLinear(nn.Module):
    """Hyperbolic linear transformation (HLT): (..., in_features) points -> (..., out_features) points.

    A Euclidean linear map of the whole point (time included) gives the new space coordinates; the time is then
    recomputed (``time_coordinate``, or ``add_time`` for a whole point).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features - 1, bias=bias)

    def space(self, x: Tensor) -> Tensor:
        """The new space coordinates only, (..., in_features) -> (..., out_features - 1)."""
        if type(self.linear) is not nn.Linear:  # wrapped (a peft LoRA layer): its own forward adds the adapter
            return self.linear(x)
        return linear_padded(x, self.linear.weight, self.linear.bias)

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        return add_time(self.space(x), c)

    def space_of_parts(self, time: Tensor, space: Tensor) -> Tensor:
        """``space`` of the point [time, space], (..., 1) and (..., in_features - 1) -> (..., out_features - 1),
        without concatenating it first (saves a copy of a wide input)."""
        if type(self.linear) is not nn.Linear:
            return self.space(torch.cat([time, space], dim=-1))
        weight = self.linear.weight
        return torch.addcmul(linear_padded(space, weight[:, 1:], self.linear.bias), time, weight[:, 0])


class LorentzLayerNorm(nn.Module):
    """HypLayerNorm: LayerNorm of the space coordinates, time recomputed. (..., D) -> (..., D)."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size - 1, eps=eps)

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        return self.of_space(x[..., 1:], c)

    def of_space(self, space: Tensor, c: Tensor) -> Tensor:
        """The normalised point of a space part: (..., D - 1) -> (..., D)."""
        return add_time(self.norm(space), c)


class LorentzResidual(nn.Module):
    """Hyperbolic residual Pi_c(x + w f(x)) with a learnable w (init 1), on points given as (time (..., 1),
    space (..., D - 1)) parts: the stack keeps them apart between layers, which saves a concatenation per sublayer.

    ``space_scale`` (off by default) multiplies the space part afterwards, as the reference code does with
    4 sqrt(hidden_size), then recomputes time.
    """

    def __init__(self, space_scale: float | None = None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(()))
        self.space_scale = space_scale

    def forward(self, x: tuple[Tensor, Tensor], fx: tuple[Tensor, Tensor], c: Tensor) -> tuple[Tensor, Tensor]:
        # A negative weight could make x + w f(x) space-like (no projection exists); keep it positive.
        weight = self.weight.clamp_min(1e-4)
        time, space = x[0] + weight * fx[0], torch.addcmul(x[1], weight, fx[1])
        space_norm = torch.linalg.vector_norm(space, dim=-1, keepdim=True)
        factor = projection_factor(time, space_norm, c)  # Pi_c
        if self.space_scale is None:
            return time * factor, space * factor
        factor = factor * self.space_scale
        return torch.hypot(space_norm * factor, c.sqrt()), space * factor


class LorentzSelfAttention(nn.Module):
    """Hyperbolic multi-head self-attention: (B, T, D) points -> the (time, space) parts of (B, T, D) points.

    Per head, queries/keys/values are points of Dh coordinates (RoPE rotates the space part of q and k). The score
    -d_L^2(q, k) / sqrt(Dh) with d_L^2 = -2c - 2<q, k>_L is softmax-equivalent to 2 <q, k>_L / sqrt(Dh), which is an
    ordinary scaled dot product once the query's time coordinate is negated: the SDPA kernel does the work. The
    weighted sum of value points is re-projected (Lorentzian centroid); heads are concatenated and mixed by an HLT.
    """

    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        space_per_head = self.head_dim - 1
        self.qkv = nn.Linear(config.hidden_size, 3 * self.num_heads * space_per_head)
        self.out = LorentzLinear(self.num_heads * self.head_dim, config.hidden_size)
        self.scale = 2.0 / math.sqrt(self.head_dim)
        self.config = config  # read at each call: set_attn_implementation() switches eager/SDPA on the config
        self.is_causal = False  # bidirectional encoder (read by transformers' SDPA interface)

    def forward(self, x: Tensor, attend: Tensor, cos: Tensor, sin: Tensor, c: Tensor,
                output_attentions: bool = False) -> tuple[tuple[Tensor, Tensor], Tensor | None]:
        """Points x (B, T, D) -> the mixed points' (time, space) parts, attention weights."""
        B, T, _ = x.shape
        space = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim - 1).permute(2, 0, 3, 1, 4)
        # Time from the unrotated space part: RoPE is a rotation and keeps ||x_s||, hence x_0.
        time = time_coordinate(space, c)  # (3, B, H, T, 1)
        q_space, k_space, v_space = space.unbind(0)  # each (B, H, T, Dh - 1)
        q_time, k_time, v_time = time.unbind(0)
        q = apply_rotary(q_space, cos, sin, prefix=-q_time)  # (B, H, T, Dh), time negated
        k = apply_rotary(k_space, cos, sin, prefix=k_time)
        v = torch.cat([v_time, v_space], dim=-1)
        mixed, weights = attention(self, q, k, v, attend, self.scale, output_attentions)  # (B, T, H, Dh), off the manifold
        # Lorentzian centroid of the values, per head, in the points' dtype: autocast's bfloat16 attention output
        # would otherwise be rescaled in bfloat16 (less accurate, and a slow broadcast on CPU).
        heads = project(mixed.to(x.dtype), c)
        space = self.out.space(heads.reshape(B, T, self.num_heads * self.head_dim))  # (B, T, D - 1)
        return (time_coordinate(space, c), space), weights


class LorentzFeedForward(nn.Module):
    """Hyperbolic SwiGLU feed-forward: points (..., D) -> (time, space) parts of points (..., D), through an
    (..., intermediate_size) point."""

    def __init__(self, config):
        super().__init__()
        inner = config.intermediate_size - 1
        self.gate_up = LorentzLinear(config.hidden_size, 2 * inner + 1)  # space: [gate | up]
        self.down = LorentzLinear(config.intermediate_size, config.hidden_size)

    def forward(self, x: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        gate, up = self.gate_up.space(x).chunk(2, dim=-1)
        # SiLU of a contiguous gate: of the strided, odd-width chunk it took ~2x as long in bfloat16 (CPU, measured).
        hidden = F.silu(gate.contiguous()) * up  # space part of the intermediate point
        space = self.down.space_of_parts(time_coordinate(hidden, c), hidden)
        return time_coordinate(space, c), space


class HyTEFHLayer(GradientCheckpointingLayer):
    """Pre-norm block: x <- res(x, attn(norm(x))); x <- res(x, ffn(norm(x))), on the points' (time, space) parts.
    Returns (time, space, attention weights)."""

    def __init__(self, config):
        super().__init__()
        self.attention_norm = LorentzLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.attention = LorentzSelfAttention(config)
        self.attention_residual = LorentzResidual(config.residual_space_scale)
        self.ffn_norm = LorentzLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.ffn = LorentzFeedForward(config)
        self.ffn_residual = LorentzResidual(config.residual_space_scale)

    def forward(self, time: Tensor, space: Tensor, attend: Tensor, cos: Tensor, sin: Tensor, c: Tensor,
                output_attentions: bool = False) -> tuple[Tensor, Tensor, Tensor | None]:
        mixed, weights = self.attention(self.attention_norm.of_space(space, c), attend, cos, sin, c, output_attentions)
        time, space = self.attention_residual((time, space), mixed, c)
        time, space = self.ffn_residual((time, space), self.ffn(self.ffn_norm.of_space(space, c), c), c)
        return time, space, weights


class HyperbolicStack(LayerStack):
    """N HyTE-FH layers on the points' (time (..., 1), space (..., D - 1)) parts; ``layer_args``: (c,). RoPE
    rotates each head's space coordinates."""

    def __init__(self, config, num_layers: int):
        super().__init__((HyTEFHLayer(config) for _ in range(num_layers)),
                         config.hidden_size // config.num_attention_heads - 1, config.rope_theta)

    @staticmethod
    def parts(x: Tensor) -> tuple[Tensor, Tensor]:
        return x[..., :1], x[..., 1:]

    @staticmethod
    def join(state: tuple[Tensor, Tensor]) -> Tensor:
        return torch.cat(state, dim=-1)


class HyperbolicPooler(nn.Module):
    """Token points (B, T, D) + mask (B, T) -> one point per sequence (B, D).

    oem: Outward Einstein Midpoint with exponent p; einstein: p = 0; mean: expmap0 of the masked tangent mean;
    cls: the first token.
    """

    def __init__(self, mode: str, p: float):
        super().__init__()
        self.mode = mode
        self.p = p

    def forward(self, x: Tensor, mask: Tensor, c: Tensor) -> Tensor:
        if self.mode == "cls":
            return first_token(x, mask)
        if self.mode == "mean":
            return tangent_mean(x, mask, c)
        p = 0.0 if self.mode == "einstein" else self.p
        return outward_einstein_midpoint(x, mask, p=p, c=c)


class LorentzMLR(nn.Module):
    """Lorentz multinomial logistic regression (Bdeir et al.): points (..., D) -> logits (..., num_classes).

    Class k is a hyperplane with offset a_k and normal z_k (space part). With s = sqrt(c):
    alpha = cosh(a/s) <x_s, z> - sinh(a/s) ||z|| x_0, logit = s ||z|| asinh(alpha / (s ||z||)),
    i.e. ||z|| times the signed geodesic distance of x to the hyperplane, plus a per-class bias b_k.

    The bias is a class's prior (a token's frequency, for a masked-LM head), as the Euclidean twin's nn.Linear has
    one: without it a frequent token can only be favoured everywhere by moving its hyperplane, which the geometry
    ties to the distances of all points. It starts at 0 (checkpoints saved before it existed load unchanged).
    """

    def __init__(self, hidden_size: int, num_classes: int):
        super().__init__()
        self.offset = nn.Parameter(torch.zeros(num_classes))
        self.normal = nn.Parameter(torch.zeros(num_classes, hidden_size - 1))
        self.bias = nn.Parameter(torch.zeros(num_classes))

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        s = c.sqrt()
        # ||z|| is clamped so that a class whose normal collapsed to 0 gives logit 0 instead of 0/0.
        z_norm = self.normal.norm(dim=-1).clamp_min(1e-6)  # (V,)
        scaled_normal = torch.cosh(self.offset / s)[:, None] * self.normal  # (V, D - 1)
        time_weight = torch.sinh(self.offset / s) * z_norm  # (V,)
        # alpha = x_s . (cosh z) - x_0 sinh ||z||, as one matmul on [x_0, x_s] with the stacked weights.
        alpha = x @ torch.cat([-time_weight[:, None], scaled_normal], dim=-1).T  # (..., V)
        scale = s * z_norm
        return scale * torch.asinh(alpha / scale) + self.bias

    def resize_(self, num_classes: int) -> None:
        """Keep the first classes, add new ones (initialised like fresh classes by the model's _init_weights)."""
        keep = min(num_classes, self.offset.shape[0])
        bound = 1.0 / math.sqrt(self.normal.shape[-1])
        offset = self.offset.new_empty(num_classes).uniform_(-bound, bound)
        normal = self.normal.new_empty(num_classes, self.normal.shape[-1]).uniform_(-bound, bound)
        bias = self.bias.new_zeros(num_classes)
        with torch.no_grad():
            offset[:keep], normal[:keep], bias[:keep] = self.offset[:keep], self.normal[:keep], self.bias[:keep]
        self.offset = nn.Parameter(offset, requires_grad=self.offset.requires_grad)
        self.normal = nn.Parameter(normal, requires_grad=self.normal.requires_grad)
        self.bias = nn.Parameter(bias, requires_grad=self.bias.requires_grad)


# ----------------------------------------------------------------------------------------------------------------
# HyTE-FH
# ----------------------------------------------------------------------------------------------------------------


class HyTEPreTrainedModel(RefusesFolderWithoutConfig, PreTrainedModel):
    """Weight initialisation and the encode API shared by the HyTE models."""

    base_model_prefix = "hyte"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _input_embed_layer = "embeddings"  # transformers' get/set_input_embeddings find HyTE-FH's and EucBERT's table
    is_hyperbolic = True

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, LorentzResidual):
            init.ones_(module.weight)
        elif isinstance(module, LorentzMLR):
            bound = 1.0 / math.sqrt(module.normal.shape[-1])
            init.uniform_(module.offset, -bound, bound)
            init.uniform_(module.normal, -bound, bound)
            init.zeros_(module.bias)
        if hasattr(module, "log_curvature"):
            init.constant_(module.log_curvature, math.log(self.config.curvature))
        if getattr(module, "log_logit_scale", None) is not None:
            init.constant_(module.log_logit_scale, math.log(self.config.logit_scale_init))

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, output_attentions: bool | None = None,
                output_hidden_states: bool | None = None, return_dict: bool | None = None,
                **kwargs) -> BaseModelOutputWithPooling | tuple:
        """Token ids (B, T) -> token outputs (B, T, D) and pooled outputs (B, D); the model's ``_encode`` says what
        its hidden states and attention weights hold."""
        output_attentions, output_hidden_states, return_dict = self._output_options(
            output_attentions, output_hidden_states, return_dict)
        mask = validate_inputs(input_ids, attention_mask, self.config.max_position_embeddings)
        x, pooled, hidden_states, attentions = self._encode(input_ids, mask, output_hidden_states is not False,
                                                            output_attentions, kwargs)
        output = BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=pooled,
                                            hidden_states=select_hidden_states(hidden_states, output_hidden_states),
                                            attentions=attentions)
        return output if return_dict else output.to_tuple()

    def _output_options(self, output_attentions: bool | None, output_hidden_states: bool | int | list[int] | None,
                        return_dict: bool | None) -> tuple[bool, bool | int | list[int], bool]:
        """Arguments left at None take the config's value, as in every transformers model. ``output_hidden_states``
        may be indices (see select_hidden_states): the layers then collect every state, the model keeps those."""
        config = self.config
        return (config.output_attentions if output_attentions is None else output_attentions,
                config.output_hidden_states if output_hidden_states is None else output_hidden_states,
                config.return_dict if return_dict is None else return_dict)

    @property
    def curvature(self) -> Tensor:
        """The curvature c (> 0, K = -1/c) as a tensor."""
        return self.log_curvature.exp()

    @property
    def logit_scale(self) -> Tensor:
        """Contrastive training's logit scale (1 / temperature), clamped to [1, config.max_logit_scale]; the clamp
        also stops its gradient at the bounds, so a bound is never overshot by later steps."""
        return self.log_logit_scale.exp().clamp(1.0, self.config.max_logit_scale)

    def _register_log_logit_scale(self, config, add: bool = True) -> None:
        """log of contrastive training's logit scale: a parameter of the embedding models, which contrastive
        training trains; None (``add=False``) inside the masked-LM classes, whose loss never uses it."""
        value = torch.tensor(math.log(config.logit_scale_init), dtype=torch.float32)
        self.register_parameter("log_logit_scale", nn.Parameter(value) if add else None)

    def _register_log_curvature(self, config) -> None:
        """log c: a parameter when the curvature is learned, else a (saved) buffer. A frozen parameter would not
        do: from_pretrained re-creates parameters with requires_grad=True, which made loaded models learn c."""
        check_curvature(config.curvature)
        value = torch.tensor(math.log(config.curvature), dtype=torch.float32)
        if config.learnable_curvature:
            self.log_curvature = nn.Parameter(value)
        else:
            self.register_buffer("log_curvature", value)

    def distances_from_scores(self, scores):
        """Geodesic distances from ``query_vectors @ document_vectors.T`` scores (Lorentz inner products): of numpy
        arrays as float64 arrays, of tensors as tensors of their dtype."""
        if torch.is_tensor(scores):
            return distance_from_inner(scores, float(self.config.curvature))
        return distance_from_inner(torch.as_tensor(scores, dtype=torch.float64), float(self.config.curvature)).numpy()

    @staticmethod
    def radii(document_vectors):
        """Specificity of encoded documents: the time coordinate x0 (grows with the distance to the origin)."""
        return document_vectors[:, 0]

    @torch.no_grad()
    def encode(
        self,
        texts: Sequence[str] | str,
        tokenizer,
        role: str = "document",
        batch_size: int = 32,
        max_length: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
    ):
        """Embed texts: documents as hyperboloid points (N, D); queries sign-flipped (-q_0, q_s).

        ``query_vectors @ document_vectors.T`` is then the matrix of Lorentz inner products <q, d>_L, so a plain
        inner-product index (FAISS ``IndexFlatIP``) returns exact geodesic nearest neighbours (the distance
        sqrt(c) arccosh(-<q, d>_L / c) decreases in <q, d>_L). Texts longer than ``max_length`` tokens (default: the
        model's limit) are truncated. Batches are formed from texts of similar length; order is preserved.
        Euclidean models (EucBERT) return their pooled vectors for both roles.
        """
        texts, max_length = check_encode_arguments(texts, tokenizer, role, batch_size, max_length,
                                                   self.config.max_position_embeddings)
        was_training = self.training
        self.eval()
        device = next(self.parameters()).device
        out = torch.empty(len(texts), self.config.hidden_size, dtype=torch.float32)
        # What the tokenizer adds to every text ([CLS] [SEP]): a text with no token beyond them (empty, whitespace,
        # zero-width or control characters) has nothing to embed. A hyperbolic model gives it the origin, the most
        # general point (a query of it ranks documents from the most general out), so that one blank passage
        # neither aborts a corpus nor gets an arbitrary point; a Euclidean one its pooled [CLS] [SEP].
        specials = len(tokenizer("")["input_ids"])
        blank: list[int] = []
        try:
            for index in batches_by_length(texts, batch_size, show_progress_bar, f"encode {role} texts"):
                # Right padding whatever the tokenizer's default: a HyTE-H on a non-BERT backbone needs it.
                batch = tokenizer([texts[i] for i in index], padding=True, truncation=True, max_length=max_length,
                                  padding_side="right", return_tensors="pt")
                check_token_ids(batch["input_ids"], self.config.vocab_size)
                pooled = self(input_ids=batch["input_ids"].to(device),
                              attention_mask=batch["attention_mask"].to(device)).pooler_output.float().cpu()
                out[index] = pooled
                blank += [index[int(row)] for row in (batch["attention_mask"].sum(1) <= specials).nonzero()]
        finally:
            self.train(was_training)
        if blank:
            blank.sort()
            warnings.warn(f"encode: {len(blank)} text(s) have nothing to embed (empty, whitespace or invisible "
                          f"characters; the first is text {blank[0]}, {texts[blank[0]][:20]!r}): "
                          + ("each gets the origin, the most general point" if self.is_hyperbolic else
                             "each gets the pooled vector of the special tokens alone"), stacklevel=2)
            if self.is_hyperbolic:
                out[blank] = 0.0
                out[blank, 0] = math.sqrt(float(self.curvature))  # (sqrt(c), 0, ..., 0): the origin of H_c
        if role == "query" and self.is_hyperbolic:
            out = flip_time(out)
        return out.numpy() if convert_to_numpy else out


class HyTEFHModel(HyTEPreTrainedModel):
    """HyTE-FH encoder: token ids (B, T) -> token points (B, T, D) and pooled points (B, D) on the hyperboloid.

    ``add_logit_scale=False`` leaves out contrastive training's logit scale (the masked-LM class does).
    """

    config_class = HyTEFHConfig
    # A masked-LM checkpoint has no logit scale: loaded as an embedding model, it starts at config.logit_scale_init.
    _keys_to_ignore_on_load_missing = [r"^log_logit_scale$"]

    def __init__(self, config: HyTEFHConfig, add_logit_scale: bool = True):
        super().__init__(config)
        self._register_log_curvature(config)
        self._register_log_logit_scale(config, add_logit_scale)
        # Euclidean table used as space coordinates (time added), as in the reference; not expmap0.
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size - 1, padding_idx=config.pad_token_id)
        self.encoder = HyperbolicStack(config, config.num_hidden_layers)
        self.final_norm = LorentzLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.pooler = HyperbolicPooler(config.pooling, config.oem_p)
        self.post_init()

    def _encode(self, input_ids: Tensor, mask: Tensor, collect_hidden_states: bool, output_attentions: bool,
                kwargs: dict) -> tuple[Tensor, Tensor, tuple | None, tuple | None]:
        """Hidden states: the embedded points, then each layer's output (before the final norm)."""
        c = self.curvature
        x = add_time(self.embeddings(input_ids), c)  # (B, T, D)
        x, hidden_states, attentions = self.encoder(x, mask, (c,), collect_hidden_states, output_attentions)
        x = self.final_norm(x, c)
        return x, self.pooler(x, mask, c), hidden_states, attentions


class MaskedLMMixin:
    """The forward pass shared by the masked-LM classes (HyTE-FH's and EucBERT's); each defines prediction_logits."""

    # The embedding model's checkpoints, and masked-LM checkpoints saved before the logit scale moved out of the
    # masked-LM classes, hold a logit scale that these classes do not have.
    _keys_to_ignore_on_load_unexpected = [r"^hyte\.log_logit_scale$"]

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                output_attentions: bool | None = None, output_hidden_states: bool | int | list[int] | None = None,
                return_dict: bool | None = None, **kwargs) -> MaskedLMOutput | tuple:
        """Encoder (``self.hyte``), then ``self.prediction_logits`` at the predicted positions; cross-entropy over
        labels != -100. Hidden states and attention weights are the encoder's."""
        output_attentions, output_hidden_states, return_dict = self._output_options(
            output_attentions, output_hidden_states, return_dict)
        encoded = self.hyte(input_ids, attention_mask, output_attentions=output_attentions,
                            output_hidden_states=output_hidden_states, return_dict=True)
        hidden = encoded.last_hidden_state
        if self.config.sparse_prediction and labels is not None:
            # The vocabulary head dominates the cost of masked-LM; ~85% of positions carry no label (-100).
            keep = labels != -100
            hidden, labels = hidden[keep], labels[keep]  # (B, T, D) -> (M, D)
        logits = self.prediction_logits(hidden)  # (B, T, V), or (M, V) with sparse_prediction
        loss = None if labels is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                                           ignore_index=-100)
        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=encoded.hidden_states,
                                attentions=encoded.attentions)
        return output if return_dict else output.to_tuple()


class HyTEFHForMaskedLM(MaskedLMMixin, HyTEPreTrainedModel):
    """HyTE-FH with a LorentzMLR masked-language-model head; loss over labels != -100."""

    config_class = HyTEFHConfig

    def __init__(self, config: HyTEFHConfig):
        super().__init__(config)
        self.hyte = HyTEFHModel(config, add_logit_scale=False)
        self.head_transform = LorentzLinear(config.hidden_size, config.hidden_size)
        self.head_norm = LorentzLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.classifier = LorentzMLR(config.hidden_size, config.vocab_size)
        self.post_init()

    def resize_token_embeddings(self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None,
                                mean_resizing: bool = True) -> nn.Embedding:
        """Resize the input embeddings (transformers' method) and the LorentzMLR head with them.

        The head is not an nn.Linear, so it is not exposed as output embeddings (transformers' resizing and weight
        tying would treat it as one); it is resized here instead.
        """
        embeddings = super().resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        self.classifier.resize_(self.config.vocab_size)
        return embeddings

    def prediction_logits(self, hidden: Tensor) -> Tensor:
        """Token points (..., D) -> vocabulary logits (..., V)."""
        c = self.hyte.curvature
        return self.classifier(self.head_norm.of_space(F.gelu(self.head_transform.space(hidden)), c), c)


# ----------------------------------------------------------------------------------------------------------------
# EucBERT: the Euclidean twin (same shape, SwiGLU, RoPE, pre-norm), the paper's controlled baseline
# ----------------------------------------------------------------------------------------------------------------


class EuclideanSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.config = config  # read at each call: set_attn_implementation() switches eager/SDPA on the config
        self.is_causal = False  # bidirectional encoder (read by transformers' SDPA interface)

    def forward(self, x: Tensor, attend: Tensor, cos: Tensor, sin: Tensor,
                output_attentions: bool = False) -> tuple[Tensor, Tensor | None]:
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # (B, H, T, Dh)
        mixed, weights = attention(self, q, k, v, attend, 1.0 / math.sqrt(self.head_dim), output_attentions)
        return self.out(mixed.reshape(B, T, D)), weights  # (B, T, H, Dh) -> (B, T, D)


class EuclideanLayer(GradientCheckpointingLayer):
    def __init__(self, config):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = EuclideanSelfAttention(config)
        self.ffn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.gate_up = nn.Linear(config.hidden_size, 2 * config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x: Tensor, attend: Tensor, cos: Tensor, sin: Tensor,
                output_attentions: bool = False) -> tuple[Tensor, Tensor | None]:
        mixed, weights = self.attention(self.attention_norm(x), attend, cos, sin, output_attentions)
        x = x + mixed
        gate, up = self.gate_up(self.ffn_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up), weights


class EuclideanStack(LayerStack):
    def __init__(self, config):
        super().__init__((EuclideanLayer(config) for _ in range(config.num_hidden_layers)),
                         config.hidden_size // config.num_attention_heads, config.rope_theta)


class EucBERTModel(HyTEPreTrainedModel):
    """EucBERT encoder: token ids (B, T) -> token vectors (B, T, D) and pooled vectors (B, D).

    ``add_logit_scale=False`` leaves out contrastive training's logit scale (the masked-LM class does).
    """

    config_class = EucBERTConfig
    is_hyperbolic = False
    # A masked-LM checkpoint has no logit scale: loaded as an embedding model, it starts at config.logit_scale_init.
    _keys_to_ignore_on_load_missing = [r"^log_logit_scale$"]

    def __init__(self, config: EucBERTConfig, add_logit_scale: bool = True):
        super().__init__(config)
        self._register_log_logit_scale(config, add_logit_scale)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.encoder = EuclideanStack(config)
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.post_init()

    @staticmethod
    def radii(document_vectors):
        """Specificity of encoded documents: the vector norm (EucBERT's vectors are not normalised, and its first
        coordinate is no time coordinate). Accepts and returns numpy arrays or tensors."""
        norms = torch.linalg.vector_norm(torch.as_tensor(document_vectors), dim=1)
        return norms if torch.is_tensor(document_vectors) else norms.numpy()

    def distances_from_scores(self, scores):
        raise TypeError("EucBERT's scores are cosines of its vectors (after scaling them to unit length), not Lorentz "
                        "inner products: there is no geodesic distance to recover. Rank by the cosine itself.")

    def _encode(self, input_ids: Tensor, mask: Tensor, collect_hidden_states: bool, output_attentions: bool,
                kwargs: dict) -> tuple[Tensor, Tensor, tuple | None, tuple | None]:
        """Hidden states: the embeddings, then each layer's output (before the final norm)."""
        x, hidden_states, attentions = self.encoder(self.embeddings(input_ids), mask, (), collect_hidden_states,
                                                    output_attentions)
        x = self.final_norm(x)
        pooled = first_token(x, mask) if self.config.pooling == "cls" else masked_mean(x, mask)
        return x, pooled, hidden_states, attentions


class EucBERTForMaskedLM(MaskedLMMixin, HyTEPreTrainedModel):
    """EucBERT with a linear masked-language-model head (GELU transform, LayerNorm, decoder)."""

    config_class = EucBERTConfig
    is_hyperbolic = False

    def __init__(self, config: EucBERTConfig):
        super().__init__(config)
        self.hyte = EucBERTModel(config, add_logit_scale=False)
        self.head_transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.head_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.classifier = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.classifier

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.classifier = value

    def prediction_logits(self, hidden: Tensor) -> Tensor:
        """Token vectors (..., D) -> vocabulary logits (..., V)."""
        return self.classifier(self.head_norm(F.gelu(self.head_transform(hidden))))


# ----------------------------------------------------------------------------------------------------------------
# HyTE-H: a pretrained Euclidean encoder projected onto the hyperboloid
# ----------------------------------------------------------------------------------------------------------------


class HyTEHModel(HyTEPreTrainedModel):
    """HyTE-H: encoder tokens (B, T, d_base) -> Linear -> scale alpha -> norm clip -> expmap0 (float32)
    -> optional hyperbolic layers (masked) -> pooling. Outputs token points (B, T, D) and pooled points (B, D).
    """

    config_class = HyTEHConfig
    _keys_to_ignore_on_load_unexpected = [r"^encoder\.pooler\."]  # checkpoints saved before the pooler was dropped

    def __init__(self, config: HyTEHConfig):
        super().__init__(config)
        self._register_log_curvature(config)
        self._register_log_logit_scale(config)
        self.encoder = AutoModel.from_config(config.encoder_config)
        if getattr(self.encoder, "pooler", None) is not None:
            # HyTE-H pools the token states itself. The backbone's own pooler (BERT's dense + tanh) would be a layer
            # that no loss reaches, which distributed data parallel training cannot synchronise.
            self.encoder.pooler = None
        self.projection = nn.Linear(config.encoder_config.hidden_size, config.hidden_size - 1)
        self.scale = nn.Parameter(torch.tensor(self._scale_init(), dtype=torch.float32))
        self.hyperbolic_layers = (HyperbolicStack(config, config.num_hyperbolic_layers)
                                  if config.num_hyperbolic_layers else None)
        self.pooler = HyperbolicPooler(config.pooling, config.oem_p)
        self.radius_head = (nn.Linear(config.encoder_config.hidden_size, 1) if config.radius_head is not None
                            else None)
        # The float32 island is built in float32 whatever the default dtype, and stays float32 when the model is
        # loaded with dtype=torch.bfloat16 / float16: only the backbone changes dtype. Names are anchored so that
        # no backbone module of the same name matches.
        island = [name for name in ("projection", "scale", "hyperbolic_layers", "radius_head", "log_curvature",
                                    "log_logit_scale") if getattr(self, name) is not None]
        self._float32_island = tuple(island)
        self._keep_island_float32()
        self._keep_in_fp32_modules_strict = {f"^{name}" for name in island}
        self.post_init()

    def _keep_island_float32(self) -> None:
        for name in getattr(self, "_float32_island", ()):
            value = getattr(self, name)
            if isinstance(value, nn.Module):
                value.float()
            elif value.dtype != torch.float32:  # a bare parameter (scale, log_curvature)
                value.data = value.data.float()

    def _apply(self, fn, recurse: bool = True):
        """``model.half()``, ``model.to(torch.bfloat16)`` (and sentence-transformers' ``.half()``) convert the
        backbone only: the float32 island goes back to float32, as when loading with ``dtype=``."""
        super()._apply(fn, recurse)
        self._keep_island_float32()
        return self

    def _scale_init(self) -> float:
        return self.config.scale_init or 1.0 / math.sqrt(self.config.hidden_size - 1)

    def _init_weights(self, module: nn.Module) -> None:
        if module is self.radius_head:
            # Every text starts at radius r0 = softplus(bias): rankings start as angle-only (the base's cosine).
            init.zeros_(module.weight)
            init.constant_(module.bias, math.log(math.expm1(self.config.radius_head)))
        elif module is self.projection:
            # Orthogonal: the projected tangent vectors keep the encoder's angles and (scaled) lengths, so an
            # untrained HyTE-H ranks like its base encoder instead of like a random projection.
            init.orthogonal_(module.weight)
            init.zeros_(module.bias)
        elif module is self:
            init.constant_(module.scale, self._scale_init())
            super()._init_weights(module)  # log curvature and log logit scale
        elif module is self.encoder or any(module is m for m in self.encoder.modules()):
            return  # the encoder initialises itself (and from_base overwrites it with pretrained weights)
        else:
            super()._init_weights(module)

    @classmethod
    def from_base(cls, base: str, **options) -> HyTEHModel:
        """Build a HyTE-H on a pretrained Hugging Face encoder (a local path or hub id; its weights are loaded).

        ``options`` are HyTEHConfig fields, e.g. ``hidden_size=129``, ``num_hyperbolic_layers=1``, ``norm_clip=3``.
        Without ``hidden_size`` the hyperbolic space has as many space coordinates as the encoder has features.
        """
        base_config = AutoConfig.from_pretrained(base)
        if base_config.model_type.startswith("hyte"):  # else a HyTE-H nested in another, failing only in forward
            raise ValueError(f"{base} is already a HyTE model ({base_config.model_type}): HyTE-H is built on a "
                             "Euclidean encoder (BERT, MPNet, ...); to train this model further, load it as it is "
                             "(from_pretrained; in a training config, model.build: load)")
        encoder = AutoModel.from_pretrained(base, config=base_config, dtype=torch.float32)
        options.setdefault("hidden_size", encoder.config.hidden_size + 1)
        options.setdefault("pad_token_id", encoder.config.pad_token_id)
        config = HyTEHConfig(encoder_config=encoder.config.to_dict(), **options)
        model = cls(config)
        model.encoder.load_state_dict({k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")})
        model.config.name_or_path = base
        return model

    def _place_by_specificity(self, pooled: Tensor, tokens: Tensor, mask: Tensor, c: Tensor) -> Tensor:
        """(B, D) pooled points -> the same directions at the radius predicted from the mean token state (B, T, d)."""
        tangent = logmap0(pooled, c)  # (B, D - 1)
        direction = tangent / tangent.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # a zero tangent has no direction
        mean_tokens = masked_mean(tokens, mask)  # (B, d)
        # Capped at 12 sqrt(c): beyond it float32 points lose their Lorentz norm (lorentz module docstring).
        # A tensor bound, not a Python float: reading c's value would be a data-dependent guard for torch.export.
        # Detached, as the float was: the cap passes no gradient to a learned curvature.
        radius = F.softplus(self.radius_head(mean_tokens)).clamp(max=12.0 * c.detach().sqrt())  # (B, 1)
        return expmap0(radius * direction, c)

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.encoder.set_input_embeddings(value)

    def _encode(self, input_ids: Tensor, mask: Tensor, collect_hidden_states: bool, output_attentions: bool,
                kwargs: dict) -> tuple[Tensor, Tensor, tuple | None, tuple | None]:
        """Hidden states (config.num_hidden_layers + 1): the backbone's (its embeddings, then each of its layers:
        Euclidean, (B, T, d_base)), followed by each hyperbolic layer's output ((B, T, D) on the hyperboloid); the
        projected points, which are no layer's output, are not among them. Attention weights
        (config.num_hidden_layers): the backbone's layers, then the hyperbolic layers; under SDPA a transformers
        backbone returns none of its own (load with attn_implementation="eager" for all of them). Padding: any side
        on a BERT backbone (positions are counted from each row's first token); on others, right padding, as the
        backbone itself expects (``encode`` pads right)."""
        extra = {k: v for k, v in kwargs.items() if k == "token_type_ids"}
        if self.encoder.config.model_type == "bert":
            # BERT numbers positions from column 0; numbering from each row's first real token instead gives every
            # token of a left-padded text the position it has right-padded (so its vector does not depend on its
            # batch), and a right-padded batch exactly BERT's own positions.
            leading_padding = mask.argmax(dim=1, keepdim=True)  # (B, 1): the first 1 of each row
            extra["position_ids"] = (torch.arange(mask.shape[1], device=mask.device) - leading_padding).clamp(min=0)
        encoded = self.encoder(input_ids=input_ids, attention_mask=mask.to(torch.long),
                               output_attentions=output_attentions, output_hidden_states=collect_hidden_states,
                               return_dict=True, **extra)
        tokens = encoded.last_hidden_state.float()  # (B, T, d_base)
        # Geometry runs in float32 even when the backbone runs in bf16/fp16 (an fp32 island: the island's modules
        # are kept in float32 by _keep_in_fp32_modules, and the backbone's output is cast here).
        with torch.autocast(device_type=tokens.device.type, enabled=False):
            tangent = self.projection(tokens) * self.scale.clamp(max=1.0)  # (B, T, D - 1)
            norm = tangent.norm(dim=-1, keepdim=True)
            # Norm clip: bounds every token's distance to the origin (the "clipped" hyperbolic network trick).
            tangent = tangent * (self.config.norm_clip / norm.clamp_min(self.config.norm_clip))
            c = self.curvature
            x = expmap0(tangent, c)  # (B, T, D)
            hidden_states, attentions = (x,) if collect_hidden_states else None, None
            if self.hyperbolic_layers is not None:
                x, hidden_states, attentions = self.hyperbolic_layers(x, mask, (c,), collect_hidden_states,
                                                                      output_attentions)
            pooled = self.pooler(x, mask, c)
            if self.radius_head is not None:
                pooled = self._place_by_specificity(pooled, tokens, mask, c)
        if collect_hidden_states:
            hidden_states = encoded.hidden_states + hidden_states[1:]  # [0]: the projected points
        if output_attentions:
            attentions = encoded.attentions + (attentions or ())
        return x, pooled, hidden_states, attentions


# Registration for remote code: save_pretrained writes auto_map and copies this file and its siblings.
for _config_class in (HyTEFHConfig, HyTEHConfig, EucBERTConfig):
    _config_class.register_for_auto_class()
for _model_class in (HyTEFHModel, HyTEHModel, EucBERTModel):
    _model_class.register_for_auto_class("AutoModel")
for _model_class in (HyTEFHForMaskedLM, EucBERTForMaskedLM):
    _model_class.register_for_auto_class("AutoModelForMaskedLM")

__all__ = [
    "EucBERTForMaskedLM",
    "EucBERTModel",
    "HyTEFHForMaskedLM",
    "HyTEFHModel",
    "HyTEHModel",
    "HyTEPreTrainedModel",
    "LorentzLayerNorm",
    "LorentzLinear",
    "LorentzMLR",
    "LorentzResidual",
    "LorentzSelfAttention",
    "HyperbolicPooler",
]
