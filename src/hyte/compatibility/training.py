"""Backward-compatible training (HBCT, arXiv 2506.05826, adapted to text retrieval): ``hyte train compatible``.

A new model learns query vectors that search an index embedded by a frozen old model, until the corpus is
re-encoded: L = L_task + weight * (L_cone + L_align), as docs/training.md ("Backward-compatible upgrades") describes
(the terms are in ``objective``). The cone lets the new model move a text further out along its old direction
(refine) but not sideways (contradict); widening it by the old point's uncertainty is this package's addition, not
HBCT's. The old model runs once, before training (``OldEmbeddingCache``), so steps only index into it; a new HyTE-H
takes the old hidden size and curvature, so its projection maps into the old space. The lineage recorded
(``hyte.lineage``) is what ``LorentzIndex.check_query_model`` checks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from ..identity import texts_digest
from ..io import atomic_file, write_jsonl
from ..training.config import ConfigError, RunConfig
from ..training.data import hierarchy_for
from ..training.losses import similarity_matrix
from ..training.models import build_model, curvature_of, logit_scale, unwrap
from ..training.trainer import ContrastiveCollator, ContrastiveTrainer
from .objective import alignment_q, cone_loss, l2_influence_loss, rince_loss, uncertainty

logger = logging.getLogger(__name__)


CACHE_FILE = "old_embeddings.safetensors"


# ----------------------------------------------------------------------------------------------------------------
# The old model's embeddings, computed once
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class OldEmbeddingCache:
    """The frozen old model's document embeddings of every training text: (N, D) float32, points on the old
    hyperboloid (or vectors of a Euclidean old model, ``curvature`` 0), row ``rows[text]``; ``fingerprint`` of the old
    model's weights."""

    texts: list[str]
    points: Tensor
    curvature: float
    fingerprint: str

    def __post_init__(self) -> None:
        self.rows = {text: i for i, text in enumerate(self.texts)}

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        metadata = {"fingerprint": self.fingerprint, "curvature": repr(self.curvature),
                    "texts_digest": texts_digest(self.texts)}
        write_jsonl(path.with_suffix(".texts.jsonl"), [{"text": t} for t in self.texts])
        # Last: a cache file exists only with its texts beside it.
        atomic_file(path, lambda temporary: save_file({"points": self.points.contiguous()}, str(temporary),
                                                      metadata=metadata))

    @classmethod
    def load(cls, path: str | Path, expected_fingerprint: str, expected_texts: list[str]) -> OldEmbeddingCache | None:
        """The saved cache if it was computed by the same old model over the same texts, else None."""
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            return None
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata()
            points = handle.get_tensor("points")
        if (metadata.get("fingerprint") != expected_fingerprint
                or metadata.get("texts_digest") != texts_digest(expected_texts)):
            return None
        return cls(list(expected_texts), points, float(metadata["curvature"]), expected_fingerprint)


def build_old_cache(encoder, texts: list[str], fingerprint: str, batch_size: int = 64) -> OldEmbeddingCache:
    """Embed ``texts`` as documents with the old encoder (``hyte.encoders``), once: (N, D) points or vectors."""
    points = torch.from_numpy(encoder.encode(texts, role="document", batch_size=batch_size)).float()
    return OldEmbeddingCache(list(texts), points, float(encoder.curvature), fingerprint)


def batch_documents(examples: list[dict]) -> list[str]:
    """``ContrastiveCollator``'s documents of a batch, in its order: the positives, every example's negatives, then
    the parents."""
    return ([e["document"] for e in examples] + [n for e in examples for n in e.get("negatives") or []]
            + [e["parent"] for e in examples if e.get("parent")])


def document_texts(examples: list[dict]) -> list[str]:
    """Every text ``ContrastiveCollator`` can put among a batch's documents, distinct, in first-seen order."""
    return list(dict.fromkeys(text for example in examples for text in batch_documents([example])))


@dataclass
class CompatibleCollator(ContrastiveCollator):
    """``ContrastiveCollator`` plus ``old_rows`` (M,): each batch document's row in the old-embedding cache."""

    cache_rows: dict | None = None

    def __call__(self, examples: list[dict]) -> dict[str, Tensor]:
        batch = super().__call__(examples)
        documents = batch_documents(examples)
        if len(documents) != batch["document_input_ids"].shape[0]:
            raise RuntimeError("CompatibleCollator's document order no longer matches ContrastiveCollator's")
        batch["old_rows"] = torch.tensor([self.cache_rows[text] for text in documents], dtype=torch.long)
        return batch


# ----------------------------------------------------------------------------------------------------------------
# Trainer
# ----------------------------------------------------------------------------------------------------------------


class CompatibleTrainer(ContrastiveTrainer):
    """``ContrastiveTrainer`` whose loss adds weight x (cone + alignment) against cached old embeddings.

    ``old_points`` (N, D) and ``q_values`` (N,) are tensors indexed by the collator's ``old_rows``; no old model is
    held or run here."""

    def __init__(self, *args, old_points: Tensor, q_values: Tensor, spec, **kwargs):
        super().__init__(*args, **kwargs)
        self.old_points = old_points
        self.q_values = q_values
        self.spec = spec

    def _loss(self, model, queries, documents, inputs):
        loss = super()._loss(model, queries, documents, inputs)
        spec = self.spec
        if spec.weight == 0 or (spec.alignment == "none" and not spec.cone):
            return loss
        curvature = curvature_of(model) if self.hyperbolic else 0.0  # 0: the Euclidean pair (unit vectors)
        batch = queries.shape[0]
        rows = inputs["old_rows"].to("cpu")
        old = self.old_points[rows].to(documents.device)  # (M, D)
        q = self.q_values[rows[:batch]].to(documents.device)  # (B,) of each query's positive document
        parts, total = {}, documents.new_zeros(())
        if spec.cone:
            radius = spec.cone_min_radius * (1 + q) if spec.cone_widening else spec.cone_min_radius
            term = cone_loss(old[:batch], documents[:batch], curvature, radius)
            parts["cone_loss"], total = float(term.detach()), total + term
        if spec.alignment != "none":
            anchors = torch.cat([queries, documents[:batch]])  # (2B, D): new queries and new positive documents
            positives = torch.arange(batch, device=anchors.device).repeat(2)
            if spec.alignment == "l2":
                term = l2_influence_loss(anchors, old[positives], curvature)
            else:
                scale = (1.0 / spec.temperature if spec.temperature is not None
                         else logit_scale(model, self.max_logit_scale).detach())  # the alignment does not move it
                logits = scale * similarity_matrix(anchors, old, hyperbolic=True, similarity=self.similarity,
                                                   curvature=curvature)  # (2B, M)
                exclude = inputs.get("exclude_mask")  # copies of a positive, left out of the candidates
                if exclude is not None:
                    logits = logits.masked_fill(exclude.repeat(2, 1), float("-inf"))
                term = (rince_loss(logits, positives, q.repeat(2), spec.rince_lambda) if spec.alignment == "rince"
                        else F.cross_entropy(logits, positives))
            parts["align_loss"], total = float(term.detach()), total + term
        if self.hyperbolic:
            parts["mean_q"] = float(q.mean())
        for key, value in parts.items():
            self._sums[key] = self._sums.get(key, 0.0) + value
        return loss + spec.weight * total


# ----------------------------------------------------------------------------------------------------------------
# The stage
# ----------------------------------------------------------------------------------------------------------------


def _new_model_spec(config: RunConfig, old_dim: int, old_curvature: float):
    """The new model's ModelSpec; a new HyTE-H gets the old hidden size and curvature unless its options set them."""
    import dataclasses

    spec = config.model
    if spec.build == "hyte_h" and old_curvature > 0:  # 0: a Euclidean old model, which no HyTE-H can match
        options = {"hidden_size": old_dim, "curvature": old_curvature, **spec.options}
        spec = dataclasses.replace(spec, options=options)
    return spec


def _check_euclidean_pair(spec, built, old) -> None:
    """A Euclidean old model (a cosine index) takes a Euclidean new model of its dimension trained with the L2
    baseline alone: cones and RINCE's q are hyperbolic notions (``ConfigError`` otherwise)."""
    if built.hyperbolic:
        raise ConfigError(f"compatible.old_model {spec.old_model} is a Euclidean model, so its index holds cosine "
                          f"vectors a hyperbolic model cannot search: train a Euclidean new model (model.build: load "
                          f"on a plain encoder, or eucbert) or take a HyTE old model")
    if spec.weight and (spec.cone or spec.alignment not in ("l2", "none")):
        raise ConfigError("a Euclidean old/new pair supports only the Euclidean BCT baseline: set compatible."
                          "alignment: l2 and compatible.cone: false (or weight: 0 for the independent reference)")
    if built.model.config.hidden_size != old.dim:
        raise ConfigError(f"the new model emits {built.model.config.hidden_size}-dimensional vectors, the old index "
                          f"holds {old.dim}: a Euclidean pair must share the dimension")


def train_compatible(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Train a new model compatible with ``config.compatible.old_model`` (module docstring); returns output_dir/final.

    Hard negatives are mined as in stage 3 (``mining``, cached under ``mining.cache_dir``) and kept in
    output_dir/mined_negatives.jsonl, so a resumed run trains on the same examples and the same cached old
    embeddings."""
    from ..encoders import load_encoder
    from ..lineage import declare_compatible, model_fingerprint
    from ..training.loop import train_pairs
    from ..training.mining import examples_with_mined_negatives

    spec = config.compatible
    old = load_encoder(spec.old_model, max_length=config.loss.max_document_length)
    hyperbolic = old.curvature > 0  # the encoders' convention: curvature 0 is a Euclidean (cosine) model
    old_fingerprint = model_fingerprint(old.model)
    built = build_model(_new_model_spec(config, old.dim, old.curvature))
    new = unwrap(built.model)
    if not hyperbolic:
        _check_euclidean_pair(spec, built, old)
    elif not built.hyperbolic:
        raise ConfigError("the old model is a hyperbolic HyTE model, so the new one must be too (its queries search "
                          "the old Lorentz index): model.build must be hyte_h / hyte_fh or load a HyTE model")
    elif new.config.hidden_size != old.dim or abs(float(new.config.curvature) - old.curvature) > 1e-9:
        raise ConfigError(f"the new model emits points of dimension {new.config.hidden_size} and curvature "
                          f"{float(new.config.curvature)}, the old index holds dimension {old.dim} and curvature "
                          f"{old.curvature}: build the new model with model.build: hyte_h (its projection then maps "
                          f"into the old space) or set model.options hidden_size / curvature to the old values")

    output_dir = Path(config.training.output_dir)
    examples = examples_with_mined_negatives(built, config, resume)
    texts = document_texts(examples)
    cache = OldEmbeddingCache.load(output_dir / CACHE_FILE, old_fingerprint, texts)
    if cache is None:
        cache = build_old_cache(old, texts, old_fingerprint)
        cache.save(output_dir / CACHE_FILE)
        logger.info("cached the old model's embeddings of %d documents", len(texts))
    del old  # the old model is not needed again: training reads the cache
    # q is the old point's hyperbolic uncertainty; the Euclidean pair's L2 alignment has no use for it.
    q_values = (alignment_q(spec.q, uncertainty(cache.points, cache.curvature), spec.q_fixed, spec.permutation_seed)
                if hyperbolic else torch.ones(len(cache.texts)))
    if spec.weight > 0 and (spec.alignment != "none" or spec.cone):
        declare_compatible(new, spec.old_model, old_fingerprint)
    else:  # e.g. the "independent" reference of benchmarks/run_compatibility.py: nothing ties the two spaces
        logger.warning("compatible.weight is 0 or neither an alignment nor the cone term is on: the new model is "
                       "trained without the compatibility objective and is not declared compatible with %s",
                       spec.old_model)

    collator = CompatibleCollator(built.tokenizer, config.loss.max_query_length, config.loss.max_document_length,
                                  hierarchy_for(config), cache_rows=cache.rows)
    return train_pairs(config, examples, built, resume, callbacks, trainer_class=CompatibleTrainer,
                        collator=collator, trainer_options={"old_points": cache.points, "q_values": q_values,
                                                            "spec": spec})
