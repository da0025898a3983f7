"""The Hugging Face model contracts, checked by transformers' own common test-suite and by the export tests.

``ModelTesterMixin`` (from the installed transformers' sdist, see ``transformers_suite.py``) runs on HyTE-FH,
EucBERT and HyTE-H (on a tiny BERT, with and without its specificity head), as it runs on every in-tree model, with
none of its tests switched off.
"""

from __future__ import annotations

import unittest

import pytest
import torch
from transformers import AutoTokenizer, BertConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES, MODEL_MAPPING_NAMES
from transformers_suite import model_tester_mixin

import hyte

ModelTesterMixin, ids_tensor = model_tester_mixin()

# What an in-tree model gets from its entries in transformers' auto mappings: the suite skips the loss tests for base
# models and gives the masked-LM classes labels.
MODEL_MAPPING_NAMES.update(hyte_fh="HyTEFHModel", hyte_euc="EucBERTModel", hyte_h="HyTEHModel")
MODEL_FOR_MASKED_LM_MAPPING_NAMES.update(hyte_fh="HyTEFHForMaskedLM", hyte_euc="EucBERTForMaskedLM")


class _Tester:
    """Builds a tiny config and inputs for one model family (the shape of transformers' ``*ModelTester``)."""

    batch_size = 3
    seq_length = 7
    vocab_size = 99
    hidden_size = 33  # hyperbolic: time coordinate included
    num_hidden_layers = 2
    num_attention_heads = 3
    is_training = True

    def __init__(self, parent):
        self.parent = parent

    def get_config(self):
        raise NotImplementedError

    def prepare_config_and_inputs_for_common(self):
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        attention_mask = torch.ones(self.batch_size, self.seq_length, dtype=torch.long)
        attention_mask[0, -2:] = 0  # one padded row: masking is part of every test
        return self.get_config(), {"input_ids": input_ids, "attention_mask": attention_mask}


class HyTEFHModelTester(_Tester):
    def get_config(self):
        return hyte.HyTEFHConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                                 num_hidden_layers=self.num_hidden_layers, num_attention_heads=self.num_attention_heads,
                                 intermediate_size=65, max_position_embeddings=64)


class EucBERTModelTester(_Tester):
    hidden_size = 32
    num_attention_heads = 2

    def get_config(self):
        return hyte.EucBERTConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                                  num_hidden_layers=self.num_hidden_layers, num_attention_heads=self.num_attention_heads,
                                  intermediate_size=64, max_position_embeddings=64)


class HyTEHModelTester(_Tester):
    """HyTE-H on a 1-layer BERT with one hyperbolic layer: config.num_hidden_layers = 1 + 1 = 2 layers, hidden states
    the backbone's embeddings, its layer's output, the hyperbolic layer's output."""

    hidden_size = 16  # the backbone's: the first hidden state is the backbone's embedding output
    hyperbolic_size = 18  # 2 hyperbolic heads of 9 coordinates (time included)
    num_attention_heads = 2  # the backbone's heads and the hyperbolic layers' heads
    num_hyperbolic_layers = 1
    radius_head = None

    def get_config(self):
        encoder = BertConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                             num_hidden_layers=self.num_hidden_layers - self.num_hyperbolic_layers,
                             num_attention_heads=self.num_attention_heads, intermediate_size=32,
                             max_position_embeddings=64)
        config = hyte.HyTEHConfig(encoder_config=encoder.to_dict(), hidden_size=self.hyperbolic_size,
                                  num_hyperbolic_layers=self.num_hyperbolic_layers,
                                  num_attention_heads=self.num_attention_heads, intermediate_size=33,
                                  radius_head=self.radius_head, pad_token_id=0)
        assert config.num_hidden_layers == self.num_hidden_layers
        return config


class HyTEHSpecificityModelTester(HyTEHModelTester):
    """The quickstart's shape of HyTE-H: no hyperbolic layers, the specificity head (radius_head) on."""

    num_hyperbolic_layers = 0
    radius_head = 1.0


class _CommonTests(ModelTesterMixin):
    model_tester_class = None

    def setUp(self):
        self.model_tester = self.model_tester_class(self)


class HyTEFHModelTest(_CommonTests, unittest.TestCase):
    all_model_classes = (hyte.HyTEFHModel, hyte.HyTEFHForMaskedLM)
    model_tester_class = HyTEFHModelTester


class EucBERTModelTest(_CommonTests, unittest.TestCase):
    all_model_classes = (hyte.EucBERTModel, hyte.EucBERTForMaskedLM)
    model_tester_class = EucBERTModelTester


class HyTEHModelTest(_CommonTests, unittest.TestCase):
    all_model_classes = (hyte.HyTEHModel,)
    model_tester_class = HyTEHModelTester
    # The backbone's config is a sub-config: the suite's tests of composite models apply (attention implementation
    # set per sub-config). Its test of eager dispatch for non-composite models is then skipped ("does not support
    # SDPA"); test_attn_implementation_eager_really_runs_the_eager_path below covers HyTE-H's.
    _is_composite = True


class HyTEHSpecificityModelTest(HyTEHModelTest):
    model_tester_class = HyTEHSpecificityModelTester


# ----------------------------------------------------------------------------------------------------------------
# The contracts the common suite does not pin down: eager really runs, bf16 backbones, head resizing, export.
# ----------------------------------------------------------------------------------------------------------------

# Every model configuration the package builds: both classes of HyTE-FH and of EucBERT, HyTE-H with hyperbolic layers,
# and HyTE-H with the specificity head (the quickstart's and the hyte-h-radius recipes' model).
CONFIGURATIONS = {
    "hyte_fh": (hyte.HyTEFHModel, HyTEFHModelTester),
    "hyte_fh_mlm": (hyte.HyTEFHForMaskedLM, HyTEFHModelTester),
    "eucbert": (hyte.EucBERTModel, EucBERTModelTester),
    "eucbert_mlm": (hyte.EucBERTForMaskedLM, EucBERTModelTester),
    "hyte_h": (hyte.HyTEHModel, HyTEHModelTester),
    "hyte_h_specificity": (hyte.HyTEHModel, HyTEHSpecificityModelTester),
}
ENCODERS = ["hyte_fh", "eucbert", "hyte_h", "hyte_h_specificity"]


def _model_and_inputs(configuration):
    model_class, tester = CONFIGURATIONS[configuration]
    torch.manual_seed(0)
    config, inputs = tester(None).prepare_config_and_inputs_for_common()
    return model_class(config).eval(), inputs


@pytest.mark.parametrize("configuration", ENCODERS)
def test_attn_implementation_eager_really_runs_the_eager_path(configuration, tmp_path, monkeypatch):
    model, inputs = _model_and_inputs(configuration)
    model_class = type(model)
    model.save_pretrained(tmp_path)
    sdpa_calls = []
    fused = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *args, **kwargs: sdpa_calls.append(1) or fused(*args, **kwargs))
    reference = model_class.from_pretrained(tmp_path).eval()(**inputs).pooler_output
    assert sdpa_calls, "the default (sdpa) model never called the fused kernel"
    sdpa_calls.clear()
    eager = model_class.from_pretrained(tmp_path, attn_implementation="eager").eval()
    out = eager(**inputs, output_attentions=True)
    assert not sdpa_calls, "attn_implementation='eager' still ran SDPA"
    torch.testing.assert_close(out.pooler_output, reference, rtol=1e-5, atol=1e-5)
    assert len(out.attentions) == model.config.num_hidden_layers and all(a is not None for a in out.attentions)


def test_output_attentions_on_an_sdpa_model_returns_the_weights():
    model, inputs = _model_and_inputs("hyte_fh")
    assert model.config._attn_implementation == "sdpa"
    attentions = model(**inputs, output_attentions=True).attentions
    assert len(attentions) == 2 and attentions[0].shape == (3, 3, 7, 7)
    torch.testing.assert_close(attentions[0].sum(-1), torch.ones(3, 3, 7))
    assert float(attentions[0][0, :, :, -2:].abs().max()) == 0.0  # padded keys get no weight


def test_hyte_h_runs_a_bf16_backbone_with_a_float32_island(minilm_path, tmp_path, bert_tokenizer):
    hyte.HyTEHModel.from_base(minilm_path, radius_head=1.0).save_pretrained(tmp_path)
    full = hyte.HyTEHModel.from_pretrained(tmp_path).eval()
    half = hyte.HyTEHModel.from_pretrained(tmp_path, dtype=torch.bfloat16).eval()
    assert half.encoder.embeddings.word_embeddings.weight.dtype == torch.bfloat16
    assert half.projection.weight.dtype == half.scale.dtype == half.radius_head.weight.dtype == torch.float32
    batch = bert_tokenizer(["Abnormality of the cardiovascular system.", "A short stature."], padding=True,
                           return_tensors="pt")
    points = half(**batch).pooler_output
    assert points.dtype == torch.float32 and torch.isfinite(points).all()
    torch.testing.assert_close(points, full(**batch).pooler_output, rtol=0.05, atol=0.05)
    # Converted after loading (model.half(), as sentence-transformers' .half() does): the island stays float32.
    converted = hyte.HyTEHModel.from_pretrained(tmp_path).eval().to(torch.bfloat16)
    assert converted.encoder.embeddings.word_embeddings.weight.dtype == torch.bfloat16
    assert converted.projection.weight.dtype == converted.scale.dtype == torch.float32
    converted_points = converted(**batch).pooler_output
    assert converted_points.dtype == torch.float32
    torch.testing.assert_close(converted_points, full(**batch).pooler_output, rtol=0.05, atol=0.05)
    assert converted.float().encoder.embeddings.word_embeddings.weight.dtype == torch.float32


@pytest.mark.parametrize("configuration", ["hyte_fh_mlm", "eucbert_mlm"])
def test_resize_token_embeddings_grows_the_mlm_head(configuration):
    model, inputs = _model_and_inputs(configuration)
    before = model(**inputs).logits
    model.resize_token_embeddings(109)
    assert model.config.vocab_size == 109
    ids = inputs["input_ids"].clone()
    ids[0, 0] = 108  # a new token, as input and as label
    out = model(input_ids=ids, attention_mask=inputs["attention_mask"], labels=ids)
    assert out.logits.shape[-1] == 109 and torch.isfinite(out.loss)
    # The old classes score the old inputs as before.
    torch.testing.assert_close(model(**inputs).logits[..., :99], before, rtol=1e-5, atol=1e-5)


def test_resize_token_embeddings_of_hyte_h_resizes_the_backbone():
    model, inputs = _model_and_inputs("hyte_h")
    model.resize_token_embeddings(109)
    assert model.config.vocab_size == model.config.encoder_config.vocab_size == 109
    assert model.get_input_embeddings().weight.shape[0] == 109
    assert model(input_ids=torch.tensor([[101, 108, 102]])).pooler_output.shape == (1, 18)


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_forward_is_exportable_with_torch_export(configuration):
    model, inputs = _model_and_inputs(configuration)
    program = torch.export.export(model, args=(), kwargs=inputs, strict=False)
    exported, eager = program.module()(**inputs), model(**inputs)
    for name in ("pooler_output", "logits"):
        if name in eager:
            torch.testing.assert_close(exported[name], eager[name])
    # Out-of-vocabulary ids get their clear error where texts come in (encode), not from a host sync in forward.
    from hyte.modeling_hyte import check_token_ids

    with pytest.raises(ValueError, match="vocab_size"):
        check_token_ids(torch.tensor([[1, 500]]), model.config.vocab_size)


@pytest.mark.parametrize("curvature", [1.0, 2.0])
def test_exported_specificity_head_caps_the_radius_like_eager_mode(curvature):
    """The cap of the specificity head's radius, 12 sqrt(c), is traced as a tensor operation on the curvature: the
    exported program places the texts at the radii of eager mode, capped ones included."""
    config, inputs = HyTEHSpecificityModelTester(None).prepare_config_and_inputs_for_common()
    config.curvature = curvature
    torch.manual_seed(0)
    model = hyte.HyTEHModel(config).eval()
    cap = 12.0 * curvature**0.5
    with torch.no_grad():  # scores spread over 4 units centred on the cap: the top text 2 above it, the lowest 2 below
        model.radius_head.weight.normal_(std=2.0)
        model.radius_head.bias.zero_()
        tokens, mask = model.encoder(**inputs).last_hidden_state, inputs["attention_mask"].unsqueeze(-1)
        scores = model.radius_head((tokens * mask).sum(1) / mask.sum(1)).squeeze(-1)
        scale = 4.0 / (scores.max() - scores.min())  # the tester's inputs are random: fix the spread, not the draw
        model.radius_head.weight.mul_(scale)
        model.radius_head.bias.fill_(cap - float(scale * (scores.max() + scores.min()) / 2))
    program = torch.export.export(model, args=(), kwargs=inputs, strict=False)
    exported, eager = program.module()(**inputs).pooler_output, model(**inputs).pooler_output
    torch.testing.assert_close(exported, eager)
    radii = hyte.lorentz.logmap0(eager, curvature).norm(dim=-1)
    assert (radii > 0.999 * cap).any() and (radii < 0.99 * cap).any() and (radii < 1.001 * cap).all()


@pytest.mark.parametrize("encoder_layers,hyperbolic_layers", [(2, 0), (1, 2)])
def test_hyte_h_outputs_have_one_entry_per_layer_of_the_config(encoder_layers, hyperbolic_layers):
    """config.num_hidden_layers counts the backbone's and the hyperbolic layers; hidden states are the embeddings and
    every layer's output (Euclidean, then on the hyperboloid), attention weights one per layer."""
    tester = HyTEHModelTester(None)
    tester.num_hidden_layers, tester.num_hyperbolic_layers = encoder_layers + hyperbolic_layers, hyperbolic_layers
    config, inputs = tester.prepare_config_and_inputs_for_common()
    assert config.num_hidden_layers == encoder_layers + hyperbolic_layers
    with pytest.raises(AttributeError, match="num_hyperbolic_layers"):  # derived: set its two parts instead
        config.num_hidden_layers = 3
    model = hyte.HyTEHModel._from_config(config, attn_implementation="eager").eval()
    out = model(**inputs, output_hidden_states=True, output_attentions=True)
    assert len(out.hidden_states) == config.num_hidden_layers + 1 and len(out.attentions) == config.num_hidden_layers
    widths = [state.shape[-1] for state in out.hidden_states]
    assert widths == [tester.hidden_size] * (encoder_layers + 1) + [tester.hyperbolic_size] * hyperbolic_layers
    backbone = model.encoder(**inputs, output_hidden_states=True).hidden_states
    torch.testing.assert_close(out.hidden_states[: encoder_layers + 1], backbone)
    if hyperbolic_layers:  # the last hyperbolic layer's output is the model's output (HyTE-H has no final norm)
        torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)


def test_hyte_export_onnx_matches_pytorch_on_real_text(minilm_path, tmp_path, capsys):
    from hyte.cli import main
    from hyte.data.hpo import load_hpo
    from hyte.export import onnx_matches_pytorch

    model_dir = tmp_path / "hyte-h"
    hyte.HyTEHModel.from_base(minilm_path, num_hyperbolic_layers=1, num_attention_heads=5).save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(model_dir)
    capsys.readouterr()
    assert main(["export", "onnx", str(model_dir)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1  # what was written, not the exporter's progress
    onnx_file = model_dir / "onnx" / "model.onnx"
    texts = [term.definition for term in list(load_hpo().terms.values())[:200] if term.definition][:12]
    assert len(texts) == 12
    assert onnx_matches_pytorch(model_dir, onnx_file, texts) < 1e-4
