"""H+ phrase pooling as a sentence-transformers 6 multi-vector module: ST's MaxSim over its output equals HyTE's
weighted MaxSim, and a saved encoder reloads (trust_remote_code) with identical scores."""

from __future__ import annotations

import pytest
import torch
from phrase_helpers import TEXTS, tiny_backbone, tiny_phrase_model

from hyte.modeling_hyte_phrase import Units, weighted_maxsim

pytest.importorskip("sentence_transformers.multi_vector_encoder")

QUERIES = ["diabetic kidney disease", "left ventricle outflow"]


def _units(encoded):
    return Units(torch.nn.utils.rnn.pad_sequence([torch.as_tensor(e["units"]) for e in encoded], batch_first=True),
                 torch.nn.utils.rnn.pad_sequence([torch.as_tensor(e["weights"]) for e in encoded], batch_first=True),
                 torch.nn.utils.rnn.pad_sequence([torch.ones(len(e["units"]), dtype=torch.bool) for e in encoded],
                                                 batch_first=True))


def test_st_maxsim_over_phrase_pooling_equals_weighted_maxsim(bert_tokenizer, tmp_path):
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Transformer

    from hyte.integrations.phrase_pooling import PhraseTokenPooling

    bert = tiny_backbone("euclidean", bert_tokenizer)
    bert.save_pretrained(tmp_path / "bert")
    bert_tokenizer.save_pretrained(tmp_path / "bert")
    model = tiny_phrase_model(bert, bert_tokenizer)
    encoder = MultiVectorEncoder(modules=[Transformer(str(tmp_path / "bert")), PhraseTokenPooling.from_phrase_model(model)])
    scores = encoder.similarity(encoder.encode_query(QUERIES), encoder.encode_document(TEXTS))
    expected = weighted_maxsim(_units(model.encode_phrases(QUERIES, bert_tokenizer, role="query")),
                               _units(model.encode_phrases(TEXTS, bert_tokenizer)), "euclidean")
    torch.testing.assert_close(torch.as_tensor(scores).float(), expected, rtol=1e-4, atol=1e-4)

    encoder.save(str(tmp_path / "st"))
    reloaded = MultiVectorEncoder(str(tmp_path / "st"), trust_remote_code=True)
    again = reloaded.similarity(reloaded.encode_query(QUERIES), reloaded.encode_document(TEXTS))
    torch.testing.assert_close(torch.as_tensor(again), torch.as_tensor(scores))


def test_lorentz_models_are_refused(bert_tokenizer):
    from hyte.integrations.phrase_pooling import PhraseTokenPooling

    with pytest.raises(ValueError, match="PhraseIndex"):
        PhraseTokenPooling.from_phrase_model(tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer),
                                                               bert_tokenizer))
