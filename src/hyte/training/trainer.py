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
from ..modeling_hyte import HyTEHModel
from .models import curvature_of, embed


def head_parameters(model) -> list[torch.nn.Parameter]:
    """The parameters HyTE-H adds on top of its pretrained encoder (also under a peft wrapper); [] otherwise."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not isinstance(base, HyTEHModel):
        return []
    parts = [base.projection, base.hyperbolic_layers] if base.hyperbolic_layers is not None else [base.projection]
    return [base.scale, *(p for part in parts for p in part.parameters())]


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

    def __init__(self, *args, hyperbolic: bool, similarity: str = "geodesic", temperature: float = 0.02,
                 head_learning_rate: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.hyperbolic = hyperbolic
        self.similarity = similarity
        self.temperature = temperature
        self.head_learning_rate = head_learning_rate
        self._radius_sum, self._radius_count = 0.0, 0

    def create_optimizer(self, model=None):
        """Trainer's optimizer, with HyTE-H's new parts (projection, scale, hyperbolic layers) moved to their own
        parameter groups at ``head_learning_rate``: they start from scratch while the encoder is pretrained."""
        optimizer = super().create_optimizer(model)
        head = {id(p) for p in head_parameters(self.model)}
        if self.head_learning_rate is None or not head:
            return optimizer
        groups = []
        for group in optimizer.param_groups:
            options = {key: value for key, value in group.items() if key != "params"}
            for params, lr in (([p for p in group["params"] if id(p) not in head], group["lr"]),
                               ([p for p in group["params"] if id(p) in head], self.head_learning_rate)):
                if params:
                    groups.append({**options, "params": params, "lr": lr})
        optimizer.param_groups.clear()
        for group in groups:
            optimizer.add_param_group(group)
        return optimizer

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
