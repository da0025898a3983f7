"""Stage phrase: every loss part trains its heads, a run resumes from its checkpoint, LoRA runs merge into a
complete model, and the config checks the phrase section."""

from __future__ import annotations

import json

import pytest
import torch

from hyte.modeling_hyte_phrase import HyTEPhraseModel
from hyte.phrase.teacher import TermTrie
from hyte.phrase.training import PhraseCollator, PhraseTrainer
from hyte.runner import run
from hyte.training import ConfigError, parse_config
from hyte.training.config import PhraseSpec
from phrase_helpers import tiny_backbone, tiny_phrase_model

EXAMPLES = [{"query": "type 2 diabetes mellitus", "document": "Type 2 diabetes mellitus with diabetic nephropathy"},
            {"query": "hole in the heart", "document": "Atrial septal defect, an opening in the interatrial septum"},
            {"query": "HbA1c 7.5 %", "document": "Glycated haemoglobin HbA1c above 6.5 % on two occasions"}]


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_every_loss_part_reaches_its_head(geometry, bert_tokenizer, tmp_path):
    from transformers import TrainingArguments

    model = tiny_phrase_model(tiny_backbone(geometry, bert_tokenizer), bert_tokenizer).train()
    trie = TermTrie().update(["type 2 diabetes mellitus", "atrial septal defect"])
    batch = PhraseCollator(bert_tokenizer, trie, 24, 32)(EXAMPLES)
    assert batch["document_tags"][0].tolist()[1:7] == [1, 2, 2, 2, 2, 2]  # the term, B I I I I I
    spec = PhraseSpec(phrase_weight=1.0, query_budget=3, document_budget=4)
    trainer = PhraseTrainer(model=model, args=TrainingArguments(str(tmp_path), report_to="none", use_cpu=True),
                            phrase=spec)
    parts = {}
    for name in ("global", "token", "lexical", "segmentation", "phrase"):
        weights = {f"{other}_weight": float(other == name) for other in
                   ("global", "token", "lexical", "segmentation", "phrase")}
        trainer.phrase = PhraseSpec(**{**spec.__dict__, **weights})
        model.zero_grad()
        loss = trainer.compute_loss(model, batch)
        loss.backward()
        assert torch.isfinite(loss)
        parts[name] = {module: any(p.grad is not None and p.grad.abs().sum() > 0
                                   for p in getattr(model, module).parameters())
                       for module in ("crf", "boundary", "importance", "backbone", "token_projection")
                       if getattr(model, module) is not None}
    assert parts["segmentation"]["crf"] and parts["segmentation"]["boundary"]
    assert not parts["segmentation"]["importance"]
    assert parts["lexical"]["importance"] and parts["phrase"]["importance"]
    assert parts["global"]["backbone"] and parts["token"]["backbone"] and not parts["global"]["crf"]
    if geometry == "euclidean":  # L_T goes through the training-only projection z = norm(W_T h + b_T)
        assert parts["token"]["token_projection"] and not parts["global"]["token_projection"]


def _config(tmp_path, bert_tokenizer, build: str, **sections):
    from transformers import BertConfig, BertModel

    path = tmp_path / "tiny-bert"
    if not path.exists():
        torch.manual_seed(0)
        BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=128)).save_pretrained(path)
        bert_tokenizer.save_pretrained(path)
    values = {"stage": "phrase", "model": {"build": build, "path": str(path), "options": {}},
              "data": {"source": "icd10", "max_examples": 48},
              "training": {"output_dir": str(tmp_path / "run"), "max_steps": 4, "per_device_train_batch_size": 8,
                           "learning_rate": 1e-3, "warmup_steps": 0, "logging_steps": 1, "save_steps": 2, "seed": 0},
              "loss": {"max_query_length": 24, "max_document_length": 32},
              "phrase": {"vocabularies": ["icd10"], "query_budget": 4, "document_budget": 8, "phrase_weight": 0.5},
              "evaluation": {"enabled": False}}
    for name, fields in sections.items():
        values.setdefault(name, {}).update(fields)
    return parse_config(values)


def test_a_phrase_run_resumes_and_its_final_model_loads(tmp_path, bert_tokenizer):
    from transformers import AutoModel

    config = _config(tmp_path, bert_tokenizer, "hyte_h", training={"max_steps": 2})
    run(config)
    resumed = _config(tmp_path, bert_tokenizer, "hyte_h")
    final = run(resumed, resume=True)
    state = json.loads((tmp_path / "run" / "checkpoint-4" / "trainer_state.json").read_text())
    steps = [entry["step"] for entry in state["log_history"] if "loss" in entry]
    assert steps == [1, 2, 3, 4]  # steps 3-4 continued from checkpoint-2
    assert all(key in state["log_history"][-2] for key in ("global_loss", "segmentation_loss", "lexical_loss"))
    model = AutoModel.from_pretrained(final)
    assert isinstance(model, HyTEPhraseModel) and model.config.geometry == "lorentz"
    assert model.config.document_budget == 8
    card = json.loads((final / "hyte_card.json").read_text())
    assert card["training"]["stage"] == "phrase" and card["training"]["teacher"]["kl_teacher"] is None
    encoded = model.encode_phrases(["Type 2 diabetes mellitus with diabetic nephropathy"], bert_tokenizer)
    assert 1 <= len(encoded[0]["units"]) <= 8


def test_a_lora_phrase_run_merges_adapters_and_trained_heads(tmp_path, bert_tokenizer):
    from transformers import AutoModel

    config = _config(tmp_path, bert_tokenizer, "load", lora={"r": 4, "target_modules": ["query", "value"]},
                     training={"max_steps": 2})
    final = run(config)
    model = AutoModel.from_pretrained(final)
    assert isinstance(model, HyTEPhraseModel) and model.config.geometry == "euclidean"
    assert not any("lora" in name for name in model.state_dict())
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").is_file()
    # The heads were trained whole (modules_to_save) and merged back: not their initial values.
    assert model.crf.transitions.abs().sum() > 0


def test_phrase_config_errors():
    base = {"stage": "phrase", "model": {"build": "hyte_h"}, "evaluation": {"enabled": False}}
    with pytest.raises(ConfigError, match="query_budget"):
        parse_config({**base, "phrase": {"query_budget": 0}})
    with pytest.raises(ConfigError, match="vocabularies"):
        parse_config({**base, "phrase": {"vocabularies": ["snomed"]}})
    with pytest.raises(ConfigError, match="not all 0"):
        parse_config({**base, "phrase": {"global_weight": 0, "token_weight": 0, "lexical_weight": 0,
                                         "segmentation_weight": 0}})
    with pytest.raises(ConfigError, match="model.build"):
        parse_config({**base, "model": {"build": "hyte_fh", "options": {"hidden_size": 33}}})
