"""Configuration of the H+ phrase model (phrase-level multi-vector retrieval), shipped as remote code.

``HyTEPhraseConfig`` (model_type ``hyte_phrase``) wraps a backbone and adds the H+ heads (seed 001, section 3):
a BIO boundary predictor with a linear-chain CRF, a softplus importance head, and per-text unit budgets.

Two geometries share one code path:

* ``geometry="euclidean"``: the paper's form. The backbone is any Hugging Face encoder (``backbone_config`` is its
  config dict, e.g. BERT); phrase vectors are normalised means of a span's token states, scored by cosine.
* ``geometry="lorentz"``: the backbone is a HyTE-H model (``backbone_config`` is a ``HyTEHConfig`` dict); phrase
  vectors are the Outward Einstein Midpoint of the span's token points, scored by minus the geodesic distance.

This file imports only transformers and its sibling ``configuration_hyte`` (remote-code rule, see DESIGN.md).
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

GEOMETRIES = ("euclidean", "lorentz")
NUM_BIO_TAGS = 3  # O = 0, B = 1, I = 2 (``modeling_hyte_phrase.TAG_O`` ...)


@strict
class HyTEPhraseConfig(PreTrainedConfig):
    """Configuration of ``HyTEPhraseModel``: a backbone plus the H+ phrase heads."""

    model_type = "hyte_phrase"

    # The backbone's full config as a dict (so a checkpoint never needs the base repository): a HyTEHConfig dict for
    # geometry "lorentz", any transformers encoder config dict (with its "model_type") for "euclidean".
    backbone_config: dict | None = None
    geometry: str = "lorentz"
    # Top-B budgets (seed section 3.3): at most this many units are kept per query / per document.
    query_budget: int = 32
    document_budget: int = 32
    # OEM exponent for phrase vectors on the hyperboloid (lorentz only; HyTE's pooling default p = 1).
    oem_p: float = 1.0
    # Token ids that never belong to a unit (e.g. [CLS], [SEP]); padding is excluded through the attention mask.
    special_token_ids: list[int] | None = None
    # Width of the training-only token projection z_i = norm(W_T h_i + b_T) used by the token loss L_T
    # (euclidean only; the lorentz token loss scores the token points themselves). None: no projection head.
    token_projection_size: int | None = 128
    # Initial bias b of u_i = softplus(w . h_i + b); softplus(0) = 0.69 gives every token the same start weight.
    importance_bias_init: float = 0.0
    # Fusion of the three views' scores (after per-query z-normalisation over the candidates; see
    # ``hyte.retrieval.phrase``): weights of global, phrase and lexical.
    fusion_global: float = 1.0
    fusion_phrase: float = 1.0
    fusion_lexical: float = 0.2
    initializer_range: float = 0.02

    def validate_architecture(self):
        if self.geometry not in GEOMETRIES:
            raise ValueError(f"geometry must be one of {GEOMETRIES}; got {self.geometry!r}.")
        for name in ("query_budget", "document_budget"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}.")
        if self.oem_p < 0:
            raise ValueError(f"oem_p must be >= 0 (0 is the Einstein midpoint); got {self.oem_p}.")
        if self.token_projection_size is not None and self.token_projection_size < 1:
            raise ValueError(f"token_projection_size must be >= 1 or None; got {self.token_projection_size}.")
        if self.backbone_config is not None and self.geometry == "lorentz" \
                and self.backbone_config.get("model_type") != "hyte_h":
            raise ValueError("geometry 'lorentz' needs a HyTE-H backbone (backbone_config model_type 'hyte_h'); got "
                             f"{self.backbone_config.get('model_type')!r}. Use geometry 'euclidean' for a plain "
                             "encoder.")


__all__ = ["GEOMETRIES", "NUM_BIO_TAGS", "HyTEPhraseConfig"]
