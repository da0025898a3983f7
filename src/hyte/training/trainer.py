"""``transformers.Trainer`` for contrastive training of HyTE (and Euclidean) encoders.

Trainer supplies what a serious run needs and this module does not re-implement: checkpointing and
``resume_from_checkpoint`` (RNG states, data order), mixed precision, gradient accumulation, torchrun/accelerate
multi-GPU, logging. Here: a collator that tokenizes (query, document, negatives) examples, the loss, and logging of
the geometry (curvature, mean document radius).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Trainer

from .losses import contrastive_loss
from .models import curvature_of, embed


@dataclass
class ContrastiveCollator:
    """List of examples -> tokenized queries (B, Tq) and documents (B + #negatives, Td): positives first."""

    tokenizer: object
    max_query_length: int = 64
    max_document_length: int = 256

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        documents = [e["document"] for e in examples] + [n for e in examples for n in e.get("negatives") or []]
        queries = self.tokenizer([e["query"] for e in examples], padding=True, truncation=True,
                                 max_length=self.max_query_length, return_tensors="pt")
        docs = self.tokenizer(documents, padding=True, truncation=True, max_length=self.max_document_length,
                              return_tensors="pt")
        return {"query_input_ids": queries["input_ids"], "query_attention_mask": queries["attention_mask"],
                "document_input_ids": docs["input_ids"], "document_attention_mask": docs["attention_mask"]}


class ContrastiveTrainer(Trainer):
    """Trainer whose loss is InfoNCE over Lorentz similarities (geodesic or inner product) or cosine."""

    def __init__(self, *args, hyperbolic: bool, similarity: str = "geodesic", temperature: float = 0.02, **kwargs):
        super().__init__(*args, **kwargs)
        self.hyperbolic = hyperbolic
        self.similarity = similarity
        self.temperature = temperature
        self._radius_sum, self._radius_count = 0.0, 0

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        queries = embed(model, inputs["query_input_ids"], inputs["query_attention_mask"], self.hyperbolic)
        documents = embed(model, inputs["document_input_ids"], inputs["document_attention_mask"], self.hyperbolic)
        curvature = curvature_of(model) if self.hyperbolic else 0.0
        loss = contrastive_loss(queries, documents, temperature=self.temperature, hyperbolic=self.hyperbolic,
                                similarity=self.similarity, curvature=curvature)
        if self.hyperbolic:
            self._radius_sum += float(documents[:, 0].detach().mean())
            self._radius_count += 1
        return (loss, {"documents": documents}) if return_outputs else loss

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        if self.hyperbolic and "loss" in logs and self._radius_count:
            logs["mean_radius"] = round(self._radius_sum / self._radius_count, 4)
            logs["curvature"] = round(curvature_of(self.model), 4)
            self._radius_sum, self._radius_count = 0.0, 0
        super().log(logs, *args, **kwargs)
