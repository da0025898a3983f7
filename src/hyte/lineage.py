"""Model lineage: which model built an index, and which models may search it.

A model is identified by a **fingerprint of its weights** (``weights_fingerprint``): a hash of every tensor of its
``state_dict`` (names, dtypes, shapes and bytes), so a model renamed, copied or pushed to the Hub keeps its
fingerprint, and a model fine-tuned by one step gets a new one.

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
from typing import Any

import torch


class IncompatibleIndexError(ValueError):
    """An index was used with another model, dimension or curvature than it was built for."""


# Relation recorded in a compatible_with entry: this model's queries search the named model's document index.
QUERIES_SEARCH_DOCUMENTS = "queries->documents"


def weights_fingerprint(model: torch.nn.Module) -> str:
    """First 16 hex digits of a SHA-256 over the model's state_dict, in name order (names, dtypes, shapes, bytes).

    Deterministic across processes and save/load round trips (safetensors stores the same bytes); independent of
    the device. A DDP or PEFT wrapper must be unwrapped first (its state_dict names differ).
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        # A byte view works for every dtype (numpy has no bfloat16).
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()[:16]


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
    named ``index_model`` with weights fingerprint ``index_fingerprint``.

    Admitted: the model that built the index (same weights fingerprint), or a model whose config declares
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
            f"index records no weights fingerprint, so only the name can be compared). Rebuild the index with "
            f"the query model, or pass allow_incompatible=True (hyte index search --no-check-model) if you "
            f"know the two models share one embedding space.")
    if fingerprint == index_fingerprint:
        return "same model"
    if any(e.get("fingerprint") == index_fingerprint for e in compatible_with or []):
        return "declared compatible"
    listed = ", ".join(f"{e.get('model')!r} ({e.get('fingerprint')})" for e in compatible_with or []) or "none"
    raise IncompatibleIndexError(
        f"this index was built by model {index_model!r} (weights fingerprint {index_fingerprint}); "
        f"the query model {model_name!r} (fingerprint {fingerprint}) is neither that model nor declared "
        f"compatible with it (its config's compatible_with lists: {listed}). Its query vectors would be "
        f"compared with documents of another embedding space. Re-encode the corpus with the query model, or "
        f"train the query model with `hyte train compatible --old <the index's model>`; experts who know the "
        f"spaces agree can pass allow_incompatible=True (hyte index search --no-check-model).")


def check_query_model(index, model: torch.nn.Module, model_name: str | None, *,
                      allow_incompatible: bool = False) -> str:
    """The lineage half of ``check_query_encoder`` for a bare model (e.g. a phrase model): ``index`` (a
    ``LorentzIndex`` or ``PhraseIndex``) admits it, by weights fingerprint or declared compatibility, or raises."""
    return index.check_query_model(model_name, weights_fingerprint(model), compatible_with(model),
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
