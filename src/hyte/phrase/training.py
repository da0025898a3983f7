"""Stage ``phrase``: H+ phrase heads trained with the seed's stage-2 joint loss on ``transformers.Trainer``
(docs/training.md, "Phrase-level multi-vector retrieval"):

    L = lambda_G L_G + lambda_T L_T + lambda_L L_L + lambda_seg L_seg (+ lambda_P L_P)

InfoNCE on the global vectors (G), on mean-over-query-tokens MaxSim (T; euclidean through the training-only
projection of seed section 3.5), on the lexical score with summed importances (L, which trains the importance head)
and, an extension off by default, on importance-weighted MaxSim over the teacher's top-B units (P); L_seg is the CRF
negative log-likelihood of the trie teacher's BIO labels. Weighted MaxSim is divided by the query's total importance,
a per-query constant: the paper's rankings, with logits in the global view's range. No KL term: no teacher scorer
exists offline.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import Trainer

from .. import lorentz
from ..artifacts import CARD_FILE, KINDS
from ..modeling_hyte_phrase import HyTEPhraseModel, Units, lexical_vectors, units_from_tags, weighted_maxsim
from ..results import portable_path, portable_paths
from ..training.config import RunConfig
from ..training.data import contrastive_examples
from ..training.loop import ONTOLOGY_DATASETS, check_lora_targets, refuse_diverged, training_arguments
from ..training.models import build_model, unwrap
from ..training.run_folder import resume_checkpoint
from .teacher import TermTrie, build_trie, tags_for_offsets, teacher_spans

logger = logging.getLogger(__name__)

# Parameters the phrase stage adds (trained at phrase.head_learning_rate, and kept whole under LoRA).
HEAD_MODULES = ["boundary", "importance", "crf", "token_projection"]


@dataclass
class PhraseCollator:
    """Examples -> tokenized queries (B, Tq) and documents (M, Td: the B positives, then the negatives) with the
    trie teacher's BIO tags aligned to the same tokens (specials and padding O)."""

    tokenizer: object
    trie: TermTrie | None
    max_query_length: int = 64
    max_document_length: int = 256

    def _encode(self, texts: list[str], max_length: int, prefix: str) -> dict[str, torch.Tensor]:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                               return_offsets_mapping=True, return_special_tokens_mask=True)
        tags = [tags_for_offsets(offsets.tolist(), teacher_spans(text, self.trie), special.bool().tolist())[0]
                for text, offsets, special in zip(texts, batch["offset_mapping"], batch["special_tokens_mask"])]
        return {f"{prefix}_input_ids": batch["input_ids"], f"{prefix}_attention_mask": batch["attention_mask"],
                f"{prefix}_tags": torch.tensor(tags, dtype=torch.long)}

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        documents = [e["document"] for e in examples] + [n for e in examples for n in e.get("negatives") or []]
        return {**self._encode([e["query"] for e in examples], self.max_query_length, "query"),
                **self._encode(documents, self.max_document_length, "document")}


def global_logits(queries: torch.Tensor, documents: torch.Tensor, geometry: str, curvature) -> torch.Tensor:
    """(B, D), (M, D) global vectors -> (B, M) similarities: cosine, or minus the geodesic distance."""
    if geometry == "lorentz":
        return -lorentz.distance_from_inner(lorentz.pairwise_inner(queries, documents), curvature)
    return F.normalize(queries, dim=-1) @ F.normalize(documents, dim=-1).T


class PhraseTrainer(Trainer):
    """Trainer whose loss is the joint H+ loss (module docstring); logs each part's mean."""

    def __init__(self, *args, phrase, head_learning_rate: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.phrase = phrase
        self.head_learning_rate = head_learning_rate
        self._sums: dict[str, float] = {}
        self._count = 0

    def create_optimizer(self, model=None):
        """Trainer's optimizer class and settings, with the new heads in groups of their own at
        ``head_learning_rate`` (they start from scratch while the encoder is pretrained)."""
        if self.optimizer is not None:
            return self.optimizer
        model = self.model
        decay = set(self.get_decay_parameter_names(model))
        heads = {id(p) for name, p in model.named_parameters()
                 if any(part in name.split(".") for part in HEAD_MODULES)}
        groups: dict[tuple[bool, bool], list] = {}
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                groups.setdefault((id(parameter) in heads, name in decay), []).append(parameter)
        optimizer_class, options = Trainer.get_optimizer_cls_and_kwargs(self.args, model)
        self.optimizer = optimizer_class(
            [{"params": params, "weight_decay": self.args.weight_decay if decayed else 0.0,
              **({"lr": self.head_learning_rate} if head and self.head_learning_rate else {})}
             for (head, decayed), params in sorted(groups.items())], **options)
        return self.optimizer

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        core: HyTEPhraseModel = unwrap(model)
        spec, geometry, curvature = self.phrase, core.config.geometry, core.curvature
        q = model(input_ids=inputs["query_input_ids"], attention_mask=inputs["query_attention_mask"])
        d = model(input_ids=inputs["document_input_ids"], attention_mask=inputs["document_attention_mask"])
        batch = q.global_vector.shape[0]
        labels = torch.arange(batch, device=q.global_vector.device)
        parts: dict[str, torch.Tensor] = {}
        if spec.global_weight:
            logits = global_logits(q.global_vector.float(), d.global_vector.float(), geometry, curvature)
            parts["global"] = F.cross_entropy(logits / spec.temperature, labels)
        if spec.token_weight:
            parts["token"] = F.cross_entropy(self._token_scores(core, q, d) / spec.temperature, labels)
        if spec.lexical_weight:
            vocab = core.get_input_embeddings().num_embeddings
            lexical_q = lexical_vectors(inputs["query_input_ids"], q.importance, q.unit_mask, vocab, reduce="sum")
            lexical_d = lexical_vectors(inputs["document_input_ids"], d.importance, d.unit_mask, vocab, reduce="sum")
            parts["lexical"] = F.cross_entropy(lexical_q @ lexical_d.T / spec.lexical_temperature, labels)
        if spec.segmentation_weight:
            query_ll = core.crf(q.emissions, inputs["query_attention_mask"].bool(), inputs["query_tags"])
            document_ll = core.crf(d.emissions[:batch], inputs["document_attention_mask"][:batch].bool(),
                                   inputs["document_tags"][:batch])
            parts["segmentation"] = -(query_ll.mean() + document_ll.mean())
        if spec.phrase_weight:
            queries = core.units(q, units_from_tags(inputs["query_tags"], q.unit_mask), spec.query_budget)
            documents = core.units(d, units_from_tags(inputs["document_tags"], d.unit_mask), spec.document_budget)
            scores = weighted_maxsim(queries, documents, geometry, curvature, normalize_weights=True)
            parts["phrase"] = F.cross_entropy(scores / spec.temperature, labels)
        loss = sum(getattr(spec, f"{name}_weight") * value for name, value in parts.items())
        for name, value in parts.items():
            self._sums[f"{name}_loss"] = self._sums.get(f"{name}_loss", 0.0) + float(value.detach())
        self._count += 1
        return (loss, {}) if return_outputs else loss

    @staticmethod
    def _token_scores(core: HyTEPhraseModel, q, d) -> torch.Tensor:
        """(B, M) mean-over-query-tokens MaxSim of every unit token (no budget)."""
        def units(out):
            vectors = out.token_states
            if core.token_projection is not None:
                vectors = F.normalize(core.token_projection(out.features), dim=-1)
            elif core.config.geometry == "euclidean":
                vectors = F.normalize(vectors, dim=-1)
            return Units(vectors=vectors, weights=out.unit_mask.float(), mask=out.unit_mask)

        return weighted_maxsim(units(q), units(d), core.config.geometry, core.curvature, normalize_weights=True)

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        """Adds the mean of each loss part since the last log."""
        if "loss" in logs and self._count:
            logs.update({key: round(total / self._count, 4) for key, total in self._sums.items()})
            self._sums, self._count = {}, 0
        super().log(logs, *args, **kwargs)


def build_phrase_model(config: RunConfig):
    """(HyTEPhraseModel, tokenizer): a saved phrase model continues; otherwise heads go on the built backbone."""
    built = build_model(config.model)
    spec = config.phrase
    if isinstance(built.model, HyTEPhraseModel):
        model = built.model
        model.config.query_budget, model.config.document_budget = spec.query_budget, spec.document_budget
    else:
        model = HyTEPhraseModel.from_backbone(
            built.model, special_token_ids=built.tokenizer.all_special_ids, query_budget=spec.query_budget,
            document_budget=spec.document_budget, token_projection_size=spec.token_projection_size,
            fusion_global=spec.fusion_global, fusion_phrase=spec.fusion_phrase, fusion_lexical=spec.fusion_lexical)
    return model, built.tokenizer, built.base_model


def apply_lora(model, config: RunConfig):
    """LoRA adapters on the backbone (peft), the heads trained whole (modules_to_save); the model otherwise."""
    if config.lora.r <= 0:
        return model
    from peft import LoraConfig, get_peft_model

    heads = [name for name in HEAD_MODULES if getattr(model, name, None) is not None]
    lora = LoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                      target_modules=list(config.lora.target_modules),
                      modules_to_save=[*heads, *config.lora.modules_to_save])
    return get_peft_model(model, lora)


def _write_final(model, tokenizer, config: RunConfig, trainer: Trainer, base_model: str | None) -> Path:
    """output_dir/final, written in a staging folder and swapped in (an interrupted save leaves the previous)."""
    from ..io import atomic_directory

    output_dir = Path(config.training.output_dir)
    refuse_diverged(model, config, trainer.state.global_step)
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output_dir / "adapter")
        model = model.merge_and_unload()

    def write(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        card = {"base_model": base_model and portable_path(base_model),
                "datasets": ONTOLOGY_DATASETS.get(config.data.source, []), "language": ["en"],
                "training": {"stage": "phrase", "steps": trainer.state.global_step,
                             "config": portable_paths(config.to_dict()),
                             "final_loss": next((e["loss"] for e in reversed(trainer.state.log_history)
                                                 if "loss" in e), None),
                             "teacher": {"bio_labels": f"terminology trie ({', '.join(config.phrase.vocabularies)}; "
                                                       "training branches and chapters only) + numbers + sub-word "
                                                       "words", "kl_teacher": None}}}
        (staging / CARD_FILE).write_text(json.dumps(card, indent=2, default=str))

    final = output_dir / "final"
    if final.exists() and not (final / CARD_FILE).is_file():
        shutil.rmtree(final)  # an incomplete folder left by older code; nothing of value
    atomic_directory(final, write, KINDS["model"].markers, "model folder")
    return final


def train_phrase(config: RunConfig, resume: bool = False, callbacks: list | None = None) -> Path:
    """Stage phrase: train the H+ heads (and the backbone, or LoRA adapters on it); returns output_dir/final."""
    model, tokenizer, base_model = build_phrase_model(config)
    check_lora_targets(model, config)
    examples = contrastive_examples(config.data, seed=config.training.seed,
                                    batch_size=config.training.per_device_train_batch_size)
    # The teacher knows training terms only: a held-out term's span is never labelled as a unit in training texts.
    trie = build_trie(tuple(config.phrase.vocabularies), config.phrase.max_term_words,
                      training_split=(config.data.hpo_test_fraction, config.data.hpo_seed))
    collator = PhraseCollator(tokenizer, trie, config.loss.max_query_length, config.loss.max_document_length)
    model = apply_lora(model, config)
    trainer = PhraseTrainer(model=model, args=training_arguments(config), train_dataset=examples,
                            data_collator=collator, phrase=config.phrase,
                            head_learning_rate=config.phrase.head_learning_rate, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume_checkpoint(config, resume))
    final = Path(config.training.output_dir) / "final"
    if trainer.is_world_process_zero():
        final = _write_final(trainer.model, tokenizer, config, trainer, base_model)
    trainer.accelerator.wait_for_everyone()
    return final


__all__ = ["PhraseCollator", "PhraseTrainer", "build_phrase_model", "global_logits", "train_phrase"]
