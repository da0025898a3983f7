"""The kinds of model HyTE saves, one list from which the loaders (``hyte.encoders``), the Hub (``hyte.hub``) and
the command line derive theirs. Keyed by ``config.json``'s ``model_type``; no torch needed to read it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .io import json_or_empty

__all__ = ["BASE_CODE_FILES", "MODEL_KINDS", "ModelKind", "model_type_of"]


@dataclass(frozen=True)
class ModelKind:
    model_type: str  # config.json's model_type
    title: str  # how cards and messages name it
    # Whether its vectors are hyperboloid points; None: its config decides (a phrase model's "geometry").
    hyperbolic: bool | None
    code_files: tuple[str, ...]  # the remote-code files a checkpoint of this kind carries

    def is_hyperbolic(self, config: dict) -> bool:
        return self.hyperbolic if self.hyperbolic is not None else config.get("geometry") == "lorentz"


# What every HyTE checkpoint carries; a phrase model adds its own files.
BASE_CODE_FILES = ("configuration_hyte.py", "modeling_hyte.py", "lorentz.py")

MODEL_KINDS: dict[str, ModelKind] = {kind.model_type: kind for kind in (
    ModelKind("hyte_fh", "HyTE-FH", True, BASE_CODE_FILES),
    ModelKind("hyte_h", "HyTE-H", True, BASE_CODE_FILES),
    ModelKind("hyte_euc", "EucBERT", False, BASE_CODE_FILES),
    ModelKind("hyte_phrase", "HyTE-Phrase", None,
              (*BASE_CODE_FILES, "configuration_hyte_phrase.py", "modeling_hyte_phrase.py")),
)}


def model_type_of(path: str | os.PathLike) -> str | None:
    """The ``model_type`` in a local model folder's config.json (None if absent)."""
    return json_or_empty(Path(path) / "config.json").get("model_type")
