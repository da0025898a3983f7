"""``transformers.Trainer`` for contrastive training of HyTE (and Euclidean) encoders: a collator that tokenizes
(query, document, negatives) examples, the loss, and logging of the geometry (curvature, mean document radius).
Checkpoints, resumption, mixed precision, gradient accumulation and multi-GPU runs are the Trainer's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
from transformers import Trainer

from ..lorentz import distance_to_origin
from ..modeling_hyte import HyTEHModel
from .data import Hierarchy
from .losses import hierarchy_loss
from .models import (curvature_of, embed, embed_queries_and_documents, log_logit_scale_parameter, logit_scale,
                     unwrap)
from .scale_out import GradientCache, average_across_processes, contrastive_loss_across_processes, world_size


def head_parameters(model) -> list[torch.nn.Parameter]:
    """The parameters HyTE-H adds on top of its pretrained encoder (also under a peft wrapper); [] otherwise."""
    base = unwrap(model)
    if not isinstance(base, HyTEHModel):
        return []
    parts = [part for part in (base.projection, base.hyperbolic_layers, base.radius_head) if part is not None]
    return [base.scale, *(p for part in parts for p in part.parameters())]


@dataclass
class ContrastiveCollator:
    """List of examples -> tokenized queries (B, Tq) and documents (M, Td): the B positives first, then every
    example's negatives, then the parents of examples that have one ("parent": the general concept's text, used by
    the hierarchy term and, as a document, also a hard negative). ``parent_rows`` (B,) gives each example's parent
    row among the documents, -1 where it has none. ``exclude_mask`` (B, M) marks the documents the loss leaves out
    of query i's softmax: copies of its positive at another row (a shared parent, a mined negative that is another
    example's positive), which are the right answer, and, given a ``hierarchy``, its positive's ancestors and
    descendants (a parent among the documents reaches its own child only through the hierarchy term)."""

    tokenizer: object
    max_query_length: int = 64
    max_document_length: int = 256
    hierarchy: Hierarchy | None = None

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        documents = [e["document"] for e in examples] + [n for e in examples for n in e.get("negatives") or []]
        parent_rows = []
        for example in examples:
            parent_rows.append(len(documents) if example.get("parent") else -1)
            if example.get("parent"):
                documents.append(example["parent"])
        # Right padding, as encode pads: a HyTE-H on a non-BERT backbone numbers positions from column 0.
        tokenize = partial(self.tokenizer, padding=True, truncation=True, padding_side="right", return_tensors="pt")
        queries = tokenize([e["query"] for e in examples], max_length=self.max_query_length)
        docs = tokenize(documents, max_length=self.max_document_length)
        exclude_mask = torch.tensor([[row != index and self._not_a_negative(example, text)
                                      for row, text in enumerate(documents)]
                                     for index, example in enumerate(examples)], dtype=torch.bool)
        return {"query_input_ids": queries["input_ids"], "query_attention_mask": queries["attention_mask"],
                "document_input_ids": docs["input_ids"], "document_attention_mask": docs["attention_mask"],
                "parent_rows": torch.tensor(parent_rows, dtype=torch.long), "exclude_mask": exclude_mask,
                "query_is_child": torch.tensor([bool(e.get("subsumption")) for e in examples], dtype=torch.bool)}

    def _not_a_negative(self, example: dict, document: str) -> bool:
        return document == example["document"] or (self.hierarchy is not None
                                                   and self.hierarchy.not_a_negative(example, document))


class ContrastiveTrainer(Trainer):
    """Trainer whose loss is InfoNCE with a learnable logit scale over Lorentz similarities (geodesic or inner
    product) or cosine, plus ``hierarchy_weight`` x the hierarchy term (``hierarchy_term``: entailment cone or
    radius order) on (parent, child) document pairs.

    Scale-out (``scale_out.py``): under torch.distributed, ``gather_negatives`` (None = on when there are several
    processes) makes every process's documents negatives for every query; ``mini_batch_size`` embeds the batch in
    chunks of that many texts (GradCache), so memory follows the chunk while the loss sees the whole batch. The
    hierarchy term stays per process (a mean over each process's own pairs).
    """

    def __init__(self, *args, hyperbolic: bool, similarity: str = "geodesic", max_logit_scale: float = 100.0,
                 head_learning_rate: float | None = None, radius_head_learning_rate: float | None = None,
                 logit_scale_learning_rate: float = 1e-2,
                 hierarchy_weight: float = 0.0, hierarchy_term: str = "cone", cone_min_radius: float = 0.1,
                 radius_margin: float = 0.1, gather_negatives: bool | None = None,
                 mini_batch_size: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.hyperbolic = hyperbolic
        self.similarity = similarity
        self.max_logit_scale = max_logit_scale
        self.head_learning_rate = head_learning_rate
        self.radius_head_learning_rate = radius_head_learning_rate
        self.logit_scale_learning_rate = logit_scale_learning_rate
        self.hierarchy_weight = hierarchy_weight
        self.hierarchy_options = {"term": hierarchy_term, "cone_min_radius": cone_min_radius,
                                  "radius_margin": radius_margin}
        self.gather_negatives = gather_negatives
        self.mini_batch_size = mini_batch_size
        # No forward pass uses the logit scale, so DDP cannot synchronise it: it is left out of DDP and its
        # gradient averaged after each backward (training_step).
        scale = log_logit_scale_parameter(self.model)
        self.model._ddp_params_and_buffers_to_ignore = [n for n, p in self.model.named_parameters() if p is scale]
        self._sums: dict[str, float] = {}
        self._count = 0

    def create_optimizer(self, model=None):
        """Trainer's optimizer, with two kinds of parameters moved to groups of their own:

        * HyTE-H's new parts (projection, scale, hyperbolic layers) at ``head_learning_rate``: they start from
          scratch while the encoder is pretrained; its specificity head at ``radius_head_learning_rate`` if given;
        * the log logit scale at ``logit_scale_learning_rate``, without weight decay: one scalar that must be able
          to move by a useful factor within a short fine-tune (at an encoder's 5e-5 it would stay put).
        """
        optimizer = super().create_optimizer(model)
        special = {id(log_logit_scale_parameter(self.model)): {"lr": self.logit_scale_learning_rate,
                                                               "weight_decay": 0.0}}
        if self.head_learning_rate is not None:
            special.update({id(p): {"lr": self.head_learning_rate} for p in head_parameters(self.model)})
        radius_head = getattr(unwrap(self.model), "radius_head", None)
        if self.radius_head_learning_rate is not None and radius_head is not None:
            special.update({id(p): {"lr": self.radius_head_learning_rate} for p in radius_head.parameters()})
        groups = []
        for group in optimizer.param_groups:
            options = {key: value for key, value in group.items() if key != "params"}
            groups.append({**options, "params": [p for p in group["params"] if id(p) not in special]})
            # dict.fromkeys, not a set: the group order must not depend on string hashing, or a resumed run (a new
            # process) would load the saved optimizer state into differently ordered groups.
            for overrides in dict.fromkeys(tuple(sorted(o.items())) for o in special.values()):
                chosen = [p for p in group["params"] if tuple(sorted(special.get(id(p), {}).items())) == overrides]
                groups.append({**options, **dict(overrides), "params": chosen})
        optimizer.param_groups.clear()
        for group in groups:
            if group["params"]:
                optimizer.add_param_group(group)
        return optimizer

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        average_across_processes([log_logit_scale_parameter(self.model)])
        return loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        batch_loss = partial(self._loss, model, inputs=inputs)  # (queries, documents) -> loss
        if self.mini_batch_size:
            cache = GradientCache(lambda ids, mask: embed(model, ids, mask, self.hyperbolic), self.mini_batch_size,
                                  no_sync=getattr(model, "no_sync", None))
            loss = cache.loss((inputs["query_input_ids"], inputs["query_attention_mask"]),
                              (inputs["document_input_ids"], inputs["document_attention_mask"]), batch_loss,
                              [log_logit_scale_parameter(model)])
            return (loss, {}) if return_outputs else loss
        queries, documents = embed_queries_and_documents(model, inputs, self.hyperbolic, together=world_size() > 1)
        loss = batch_loss(queries, documents)
        return (loss, {"documents": documents}) if return_outputs else loss

    def _loss(self, model, queries, documents, inputs):
        """Contrastive loss (gathered across processes where enabled) plus the hierarchy term; logs the parts."""
        curvature = curvature_of(model) if self.hyperbolic else 0.0
        scale = logit_scale(model, self.max_logit_scale)
        loss, logged = contrastive_loss_across_processes(
            queries, documents, logit_scale=scale, exclude=inputs.get("exclude_mask"),
            gather=self.gather_negatives if self.gather_negatives is not None else world_size() > 1,
            hyperbolic=self.hyperbolic, similarity=self.similarity, curvature=curvature)
        parts = {"contrastive_loss": float(logged.detach()), "logit_scale": float(scale.detach())}
        parent_rows = inputs.get("parent_rows")
        if self.hierarchy_weight > 0 and parent_rows is not None:
            # (parent, child) pairs: an example's parent row and its document; a taxonomy example's document and its
            # own query, which is the document's child.
            positives, has_parent = documents[: len(parent_rows)], parent_rows >= 0
            general, specific = documents[parent_rows[has_parent]], positives[has_parent]
            query_is_child = inputs.get("query_is_child")
            if query_is_child is not None:
                general = torch.cat([general, positives[query_is_child]])
                specific = torch.cat([specific, queries[query_is_child]])
            term = hierarchy_loss(general, specific, hyperbolic=self.hyperbolic, curvature=curvature,
                                  **self.hierarchy_options)
            loss = loss + self.hierarchy_weight * term
            parts["hierarchy_loss"] = float(term.detach())
        parts["nonfinite_values"] = float((~torch.isfinite(queries)).sum() + (~torch.isfinite(documents)).sum())
        if self.hyperbolic:
            # The geodesic distance to the origin, not the time coordinate x_0, which reads sqrt(c) at the origin.
            parts["mean_radius"] = float(distance_to_origin(documents.detach(), curvature).mean())
        for key, value in parts.items():
            self._sums[key] = self._sums.get(key, 0.0) + value
        self._count += 1
        return loss

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        """Adds the means since the last log of the loss parts, the logit scale, the mean document radius and the
        count of non-finite embedding values (``nonfinite_values`` is a sum: any value above 0 is a NaN/Inf)."""
        if "loss" in logs and self._count:
            for key, total in self._sums.items():
                logs[key] = total if key == "nonfinite_values" else round(total / self._count, 4)
            if self.hyperbolic:
                logs["curvature"] = round(curvature_of(self.model), 4)
            self._sums, self._count = {}, 0
        super().log(logs, *args, **kwargs)
