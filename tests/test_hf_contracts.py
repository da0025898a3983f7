"""The Hugging Face model contracts, checked by transformers' own common test-suite and by the export tests.

``ModelTesterMixin`` (from the installed transformers' sdist, see ``transformers_suite.py``) runs on HyTE-FH,
EucBERT and HyTE-H (on a tiny BERT), as it runs on every in-tree model. Each test switched off below says why.
"""

from __future__ import annotations

import unittest

import torch
from transformers import BertConfig
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
    """HyTE-H on a 1-layer BERT with one hyperbolic layer: hidden states are the backbone's 2, then 2 hyperbolic."""

    hidden_size = 16  # the backbone's: the first hidden state is the backbone's embedding output
    hyperbolic_size = 18  # 2 hyperbolic heads of 9 coordinates (time included)
    num_attention_heads = 2
    num_hidden_layers = 2  # attention weights: the backbone's layer, then the hyperbolic layer
    expected_num_hidden_layers = 4  # backbone: embeddings + 1 layer; hyperbolic: projected points + 1 layer

    def get_config(self):
        encoder = BertConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
        return hyte.HyTEHConfig(encoder_config=encoder.to_dict(), hidden_size=self.hyperbolic_size,
                                num_hyperbolic_layers=1, num_attention_heads=self.num_attention_heads,
                                intermediate_size=33, pad_token_id=0)


class _CommonTests(ModelTesterMixin):
    model_tester_class = None
    # Every model stores the contrastive loss's logit scale (log_logit_scale), which no forward pass uses, so the
    # MLM loss gives it no gradient. test_models.py checks that every other parameter gets one.
    test_all_params_have_gradient = False

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
