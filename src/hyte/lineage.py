"""Model lineage: which model built an index, and which models may search it.

A model is identified by a **fingerprint** (``model_fingerprint``): a hash of every tensor of its ``state_dict``
(names, dtypes, shapes and bytes) and of the config settings that shape its vectors without being weights
(``VECTOR_SETTINGS``: pooling, OEM exponent, norm clip, curvature, ...). A model renamed, copied or pushed to the
Hub keeps its fingerprint; a model fine-tuned by one step, or whose ``config.json`` was edited to pool another way,
gets a new one. Indexes saved before the settings were hashed hold the weights-only fingerprint; they are still
admitted for a model with those weights (``check_query_model``).

A model trained for backward compatibility (``hyte train compatible --old OLD``) declares it in its config, as the
extra config attribute ``compatible_with`` (saved in ``config.json``, read back by ``from_pretrained``)::

    "compatible_with": [{"model": "runs/old/final", "fingerprint": "3f9c...", "relation": "queries->documents"}]

meaning: *this model's query vectors may search an index of documents embedded by the model with that fingerprint*.
The relation is not transitive and not symmetric: an old model's queries do not search a new model's index.

Every index (``LorentzIndex``, ``PhraseIndex``) stores the fingerprint of the model that built it and refuses queries
from a model that is neither that model nor declared compatible with it (``check_lineage``, one rule for both).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import torch

from .errors import HyteError


class IncompatibleIndexError(HyteError, ValueError):
    """An index was used with another model, dimension or curvature than it was built for."""


# Relation recorded in a compatible_with entry: this model's queries search the named model's document index.
QUERIES_SEARCH_DOCUMENTS = "queries->documents"


# Config fields that shape a model's vectors without being weights: editing one in config.json changes every vector
# while the weights stay the same. Looked up at any depth of config.to_dict() (a HyTE-H's encoder_config, a phrase
# model's backbone_config). Training-only fields (logit scale, initialiser range) are left out on purpose.
VECTOR_SETTINGS = frozenset({
    "curvature", "pooling", "oem_p", "norm_clip", "radius_head", "rope_theta", "layer_norm_eps",
    "residual_space_scale", "hidden_act", "position_embedding_type", "geometry", "query_budget", "document_budget",
    "special_token_ids", "fusion_global", "fusion_phrase", "fusion_lexical",
})


def vector_settings(model: torch.nn.Module) -> dict[str, Any]:
    """The ``VECTOR_SETTINGS`` found in ``model.config`` (dotted paths for nested configs -> values; numbers as
    floats, so a curvature written 1 or 1.0 is the same setting)."""
    config = getattr(model, "config", None)
    found: dict[str, Any] = {}

    def walk(prefix: str, mapping: dict) -> None:
        for key, value in mapping.items():
            if isinstance(value, dict):
                walk(f"{prefix}{key}.", value)
            elif key in VECTOR_SETTINGS:
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                found[prefix + key] = float(value) if number else value

    walk("", config.to_dict() if config is not None else {})
    return found


def _weights_digest(model: torch.nn.Module) -> "hashlib._Hash":
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        # A byte view works for every dtype (numpy has no bfloat16).
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest


def model_fingerprint(model: torch.nn.Module) -> str:
    """First 16 hex digits of a SHA-256 over the model's state_dict, in name order (names, dtypes, shapes, bytes),
    then its ``vector_settings``.

    Deterministic across processes and save/load round trips (safetensors stores the same bytes); independent of
    the device. A DDP or PEFT wrapper must be unwrapped first (its state_dict names differ).

    Computed once per state of the model: hashing every weight takes a while, and a searcher checks its model on
    every search. The state is each tensor's identity and version counter (torch bumps it at every in-place change:
    an optimizer step, ``load_state_dict``) with the settings; a change through ``.data``, which bypasses the
    counter, is not seen.
    """
    settings = json.dumps(vector_settings(model), sort_keys=True, default=str)
    state = (settings, tuple((name, id(tensor), tensor._version)
                             for name, tensor in model.state_dict(keep_vars=True).items()))
    cached = model.__dict__.get("_hyte_fingerprint")
    if cached is not None and cached[0] == state:
        return cached[1]
    digest = _weights_digest(model)
    digest.update(settings.encode())
    fingerprint = digest.hexdigest()[:16]
    model.__dict__["_hyte_fingerprint"] = (state, fingerprint)
    return fingerprint


def _weights_only_fingerprint(model: torch.nn.Module) -> str:
    """The fingerprint indexes recorded before the settings were hashed (weights alone)."""
    return _weights_digest(model).hexdigest()[:16]


def compatible_with(model: torch.nn.Module) -> list[dict[str, Any]]:
    """The lineage entries a model's config declares (``[]`` for a model trained without an old model)."""
    entries = getattr(getattr(model, "config", None), "compatible_with", None) or []
    return [dict(entry) for entry in entries]


def declare_compatible(model: torch.nn.Module, old_name: str, old_fingerprint: str) -> None:
    """Record in ``model.config`` that its queries search indexes built by the old model (replaces an entry with
    the same fingerprint)."""
    entries = [e for e in compatible_with(model) if e.get("fingerprint") != old_fingerprint]
    entries.append({"model": old_name, "fingerprint": old_fingerprint, "relation": QUERIES_SEARCH_DOCUMENTS})
    model.config.compatible_with = entries


def check_lineage(index_model: str | None, index_fingerprint: str | None, model_name: str | None,
                  fingerprint: str | None, compatible_with: list[dict] | None = None, *,
                  allow_incompatible: bool = False) -> str:
    """Refuse (``IncompatibleIndexError``) queries from a model that may not search an index built by the model
    named ``index_model`` with fingerprint ``index_fingerprint``.

    Admitted: the model that built the index (same fingerprint), or a model whose config declares
    compatibility with it (``compatible_with`` holds an entry with the index's fingerprint). An index saved without
    a fingerprint falls back to comparing model names. ``allow_incompatible=True`` (experts: you know the two
    spaces agree) skips the check. Returns how the query model was admitted: "same model", "declared compatible",
    "same name" or "not checked".
    """
    if allow_incompatible:
        return "not checked"
    if index_fingerprint is None:
        if model_name is None or index_model is None or model_name == index_model:
            return "same name"
        raise IncompatibleIndexError(
            f"this index was built by model {index_model!r}, not by the query model {model_name!r} (the "
            f"index records no fingerprint, so only the name can be compared). Rebuild the index with "
            f"the query model, or pass allow_incompatible=True (hyte index search --no-check-model) if you "
            f"know the two models share one embedding space.")
    if fingerprint == index_fingerprint:
        return "same model"
    if any(e.get("fingerprint") == index_fingerprint for e in compatible_with or []):
        return "declared compatible"
    listed = ", ".join(f"{e.get('model')!r} ({e.get('fingerprint')})" for e in compatible_with or []) or "none"
    raise IncompatibleIndexError(
        f"this index was built by model {index_model!r} (fingerprint {index_fingerprint}); the query model "
        f"{model_name!r} (fingerprint {fingerprint}) is neither that model nor declared compatible with it (its "
        f"config's compatible_with lists: {listed}). Its query vectors would be compared with documents of another "
        "embedding space (the fingerprint covers the weights and the config's vector settings: a config.json edited "
        "to pool another way makes another model). Re-encode the corpus with the query model, or train the query "
        "model with `hyte train compatible --old <the index's model>`; experts who know the spaces agree can pass "
        "allow_incompatible=True (hyte index search --no-check-model).")


def check_query_model(index, model: torch.nn.Module, model_name: str | None, *,
                      allow_incompatible: bool = False) -> str:
    """The lineage half of ``check_query_encoder`` for a bare model (e.g. a phrase model): ``index`` (a
    ``LorentzIndex`` or ``PhraseIndex``) admits it, by fingerprint or declared compatibility, or raises."""
    fingerprint = model_fingerprint(model)
    if (index.model_fingerprint not in (None, fingerprint)
            and index.model_fingerprint == _weights_only_fingerprint(model)):
        # An index saved before the settings were hashed: its fingerprint covers the weights alone.
        fingerprint = index.model_fingerprint
    return index.check_query_model(model_name, fingerprint, compatible_with(model),
                                   allow_incompatible=allow_incompatible)


def check_query_encoder(index, encoder, model_name: str | None = None, *, allow_incompatible: bool = False) -> str:
    """Refuse an encoder (``hyte.encoders``) whose queries may not search ``index`` (a ``LorentzIndex``, or a
    ``PhraseIndex``'s global index): first its lineage
    (``check_query_model``: the index's model or one declared compatible with it, unless ``allow_incompatible``),
    then the shape of its points (dimension and curvature, always). ``model_name`` (default ``encoder.name``) is
    how the error names the query model. Returns how the model was admitted."""
    admitted = check_query_model(index, encoder.model, model_name or encoder.name,
                                 allow_incompatible=allow_incompatible)
    index.check_compatible(dim=encoder.dim, curvature=encoder.curvature)
    return admitted
