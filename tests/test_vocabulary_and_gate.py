"""The from-scratch recipe's trained WordPiece vocabulary and its held-out masked-LM gate (issue 26)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoTokenizer

from hyte.evaluation.language_model import masked_lm_gate
from hyte.training.vocabulary import SPECIAL_TOKENS, train_wordpiece

CORPUS = [f"Abnormality of the {part} {kind}." for part in ("left", "right", "upper", "lower", "distal", "proximal")
          for kind in ("heart", "kidney", "liver", "lung", "femur", "tibia", "radius", "ulna")] * 3


def test_vocabulary_is_trained_saved_reused_and_never_replaced(tmp_path):
    folder = train_wordpiece(CORPUS, tmp_path / "vocabulary", vocab_size=120, min_frequency=1)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert 40 < len(tokenizer) <= 120
    assert [tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    encoded = tokenizer("Abnormality of the left heart.")
    assert encoded["input_ids"][0] == tokenizer.cls_token_id and encoded["input_ids"][-1] == tokenizer.sep_token_id
    # Words of the corpus are whole pieces (a vocabulary learned there), unlike an unseen word.
    assert tokenizer.tokenize("abnormality of the left heart") == ["abnormality", "of", "the", "left", "heart"]
    assert len(tokenizer.tokenize("xylophone")) > 1
    record = json.loads((folder / "vocabulary.json").read_text())
    assert record["vocab_size"] == 120 and record["trained_size"] == len(tokenizer)
    stamp = (folder / "tokenizer.json").stat().st_mtime_ns
    assert train_wordpiece(CORPUS, folder, vocab_size=120, min_frequency=1) == folder  # the same texts: reused
    assert (folder / "tokenizer.json").stat().st_mtime_ns == stamp
    with pytest.raises(FileExistsError, match=r"other texts or settings .*corpus_sha256: .*num_texts: 144 -> 143"):
        train_wordpiece(CORPUS[:-1], folder, vocab_size=120, min_frequency=1)
    with pytest.raises(FileExistsError, match="not a saved vocabulary folder"):
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "mine.txt").write_text("keep")
        train_wordpiece(CORPUS, tmp_path / "notes", vocab_size=120)
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep"
    with pytest.raises(ValueError, match="non-empty text"):
        train_wordpiece(["", " "], tmp_path / "empty")


def test_piece_ids_follow_the_pieces_not_the_trainers_hash_order(tmp_path):
    """The trainer numbers "##" pieces in hash-map order (different in every call); the saved ids are the special
    tokens, then every other piece in sorted order, so one set of pieces always gets one numbering."""
    folder = train_wordpiece(CORPUS, tmp_path / "vocabulary", vocab_size=120, min_frequency=1)
    vocabulary = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
    pieces = sorted(vocabulary, key=vocabulary.get)
    assert pieces == [*SPECIAL_TOKENS, *sorted(set(vocabulary) - set(SPECIAL_TOKENS))]
    assert sum(piece.startswith("##") for piece in pieces) > 10  # the pieces the trainer numbers by hash order
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.convert_ids_to_tokens(tokenizer("the femur")["input_ids"]) == ["[CLS]", "the", "femur", "[SEP]"]


class _Predictor(torch.nn.Module):
    """A masked-LM stand-in: logits from a fixed log-distribution, or (oracle) peaked on the true token."""

    def __init__(self, log_prior: torch.Tensor | None):
        super().__init__()
        self.log_prior = log_prior

    def forward(self, input_ids, attention_mask, labels):
        vocab = 120 if self.log_prior is None else self.log_prior.numel()
        if self.log_prior is None:
            logits = torch.nn.functional.one_hot(labels.clamp_min(0), vocab).float() * 30.0
        else:
            logits = self.log_prior.float().expand(*labels.shape, vocab)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100)
        return type("Output", (), {"loss": loss})()


def test_gate_compares_with_the_unigram_level_on_the_same_masked_tokens(tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(train_wordpiece(CORPUS, tmp_path / "v", vocab_size=120,
                                                              min_frequency=1))
    heldout = [f"The {kind} of the {part} side." for part in ("left", "right") for kind in ("heart", "lung", "femur")]
    oracle = masked_lm_gate(_Predictor(None), tokenizer, CORPUS, heldout * 20, seed=3)
    assert oracle["passed"] and oracle["mlm_loss"] < 0.01 and oracle["num_masked"] > 20
    # A model predicting the unigram prior itself sits at the unigram level: far from passing.
    counts = torch.ones(len(tokenizer), dtype=torch.float64)
    for ids in tokenizer(CORPUS, add_special_tokens=False)["input_ids"]:
        counts += torch.bincount(torch.tensor(ids), minlength=len(tokenizer)).double()
    unigram_model = masked_lm_gate(_Predictor((counts / counts.sum()).log()), tokenizer, CORPUS, heldout * 20, seed=3)
    assert not unigram_model["passed"]
    assert unigram_model["mlm_loss"] == pytest.approx(unigram_model["unigram_cross_entropy"], rel=1e-4)
    assert unigram_model["num_masked"] == oracle["num_masked"]  # the same seed masks the same positions
    with pytest.raises(ValueError, match="held-out texts"):
        masked_lm_gate(_Predictor(None), tokenizer, CORPUS, ["  "])
