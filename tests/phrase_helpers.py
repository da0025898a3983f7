"""Tiny phrase models for the phrase tests: a 2-layer BERT (real WordPiece vocabulary), as is or under HyTE-H,
with random boundary / importance heads so that units and importances are not all alike."""

from __future__ import annotations

import torch

import hyte
from hyte.modeling_hyte_phrase import HyTEPhraseModel

TEXTS = ["Abnormality of the left ventricular outflow tract",
         "Type 2 diabetes mellitus with diabetic nephropathy, stage 3",
         "HbA1c 7.5 %"]


def tiny_backbone(geometry: str, tokenizer, seed: int = 0):
    """A random 2-layer BERT (hidden 32) for "euclidean", or HyTE-H (17 ambient dimensions) on it for "lorentz"."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    bert = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64))
    if geometry == "euclidean":
        return bert
    hybrid = hyte.HyTEHModel(hyte.HyTEHConfig(encoder_config=bert.config.to_dict(), hidden_size=17))
    hybrid.encoder.load_state_dict({k: v for k, v in bert.state_dict().items() if not k.startswith("pooler.")})
    return hybrid


def tiny_phrase_model(backbone, tokenizer, seed: int = 0, **options) -> HyTEPhraseModel:
    """Phrase heads on ``backbone`` with random weights (budgets 3 / 4 unless ``options`` say otherwise)."""
    options = {"query_budget": 3, "document_budget": 4, **options}
    model = HyTEPhraseModel.from_backbone(backbone, special_token_ids=tokenizer.all_special_ids, **options).eval()
    torch.manual_seed(seed)
    with torch.no_grad():
        for module in (model.boundary, model.importance):
            module.weight.normal_(std=0.5)
        for parameter in model.crf.parameters():
            parameter.normal_()
    return model
