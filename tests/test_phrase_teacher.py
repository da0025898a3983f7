"""The offline BIO teacher: terminology trie matching, tag alignment to WordPiece tokens, the inference-time
override, boundary F1, and coverage on real ICD-10-CM text."""

from __future__ import annotations

import numpy as np
import torch

from hyte.modeling_hyte_phrase import units_from_tags
from hyte.phrase.teacher import (
    TAG_B,
    TAG_I,
    TAG_O,
    TermTrie,
    boundary_f1,
    build_trie,
    coverage,
    icd10_terms,
    override_tags,
    teacher_tags,
    unit_boundaries,
)


def test_trie_matches_leftmost_longest_on_word_boundaries_ignoring_case():
    trie = TermTrie().update(["diabetes mellitus", "Type 2 diabetes mellitus", "atrial septal defect", "heart",
                              "septal defect of the heart wall muscle layer"])  # one word / six words: not added
    assert trie.size == 3
    text = "TYPE 2 Diabetes mellitus and an atrial septal defects; prediabetes mellitus"
    spans = trie.find(text)
    assert [text[s:e] for s, e in spans] == ["TYPE 2 Diabetes mellitus"]  # "defects" / "prediabetes" are no match


def test_teacher_tags_group_terms_numbers_and_split_words(bert_tokenizer):
    trie = TermTrie().update(["type 2 diabetes mellitus"])
    text = "Type 2 diabetes mellitus with nephropathy, stage 3, HbA1c 7.5 %"
    (tags,), (covered,) = teacher_tags([text], bert_tokenizer, trie)
    tokens = bert_tokenizer.convert_ids_to_tokens(bert_tokenizer(text)["input_ids"])
    labelled = list(zip(tokens, "".join("OBI"[t] for t in tags)))
    assert labelled[0] == ("[CLS]", "O") and labelled[-1] == ("[SEP]", "O")
    units = " | ".join(" ".join(t for t, _ in group) for group in _units(labelled))
    assert "type 2 diabetes mel ##lit ##us" in units  # the term
    assert "7 . 5 %" in units  # the number
    assert "h ##ba ##1 ##c" in units and "ne ##ph ##rop ##athy" in units  # words split into sub-words
    assert "3" in units.split(" | ") and "with" in units.split(" | ")  # singletons
    assert sum(covered) == 6  # type 2 diabetes mel ##lit ##us


def _units(labelled):
    groups = []
    for token, tag in labelled[1:-1]:
        if tag == "I" and groups:
            groups[-1].append((token, tag))
        else:
            groups.append([(token, tag)])
    return groups


def test_unit_boundaries_agree_with_the_models_units():
    torch.manual_seed(0)
    tags = torch.randint(0, 3, (20, 9))
    usable = torch.rand(20, 9) > 0.2
    ids = units_from_tags(tags, usable)
    for row in range(20):
        starts = {i for i in range(9) if usable[row, i] and (i == 0 or ids[row, i] != ids[row, i - 1]
                                                              or not usable[row, i - 1])}
        assert unit_boundaries(tags[row].tolist(), usable[row].tolist()) == starts


def test_override_keeps_trie_units_and_cuts_a_model_unit_running_into_them():
    model = [TAG_O, TAG_B, TAG_I, TAG_I, TAG_I, TAG_O]
    trie = [TAG_O, TAG_B, TAG_I, TAG_O, TAG_O, TAG_O]
    covered = [False, True, True, False, False, False]
    assert override_tags(model, trie, covered) == [TAG_O, TAG_B, TAG_I, TAG_B, TAG_I, TAG_O]


def test_boundary_f1():
    usable = [[False, True, True, True, True, False]]
    gold = [[TAG_O, TAG_B, TAG_I, TAG_O, TAG_O, TAG_O]]  # units {1,2} {3} {4}: boundaries 3, 4
    assert boundary_f1(gold, gold, usable)["f1"] == 1.0
    tokens = [[TAG_O] * 6]  # units {1} {2} {3} {4}: boundaries 2, 3, 4
    scores = boundary_f1(tokens, gold, usable)
    assert (scores["precision"], scores["recall"]) == (2 / 3, 1.0) and scores["span_f1"] == 0.0


def test_icd10_trie_covers_real_icd10_text(bert_tokenizer):
    from hyte.data.icd10 import inclusion_pairs

    trie = build_trie(("icd10",))
    assert trie.size > 10000  # 19,884 terms of 2-5 words in the 2026 tabular list
    texts = [pair["query"] for pair in inclusion_pairs()[:300]]
    stats = coverage(texts, bert_tokenizer, trie)
    assert stats["texts_with_term_match"] > 0.3
    assert 0.0 < stats["token_share_in_terms"] < 1.0
    assert stats["mean_multi_token_unit_length"] >= 2.0


def test_the_trie_override_reaches_encode_phrases(bert_tokenizer):
    from phrase_helpers import tiny_backbone, tiny_phrase_model

    from hyte.modeling_hyte_phrase import apply_override

    model = tiny_phrase_model(tiny_backbone("euclidean", bert_tokenizer), bert_tokenizer)
    trie = TermTrie().update(["type 2 diabetes mellitus", "diabetic nephropathy"])
    texts = ["Type 2 diabetes mellitus with diabetic nephropathy", "HbA1c 7.5 %"]
    tags, covered = teacher_tags(texts, bert_tokenizer, trie)
    batch = bert_tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch)
        crf = model.decode_tags(out, batch["attention_mask"])
    width = crf.shape[1]
    pad = [row + [0] * (width - len(row)) for row in tags]
    merged = apply_override(crf, torch.tensor(pad), torch.tensor([c + [False] * (width - len(c)) for c in covered]))
    expected = model.encode_phrases(texts, bert_tokenizer, tags=merged.tolist(), budget=100)
    got = model.encode_phrases(texts, bert_tokenizer, override=list(zip(tags, covered)), budget=100)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e["units"], g["units"])
    # "type 2 diabetes mel ##lit ##us" and "diabetic ne ##ph ##rop ##athy" are one unit each after the override.
    units = units_from_tags(merged, out.unit_mask)[0]
    assert len(set(units[1:7].tolist())) == 1 and len(set(units[8:13].tolist())) == 1


def test_the_training_teacher_never_labels_a_held_out_term():
    """Built for training (``training_split``), the trie holds no held-out chapter's term: a training text that
    contains one is not given that term's span as a unit (the full trie does hold them)."""
    from hyte.data.icd10 import split_chapters

    _, test_chapters = split_chapters(0.2, 0)
    training = build_trie(("icd10",), 5, training_split=(0.2, 0))
    everything = build_trie(("icd10",))
    known_in_training = {t.lower() for t in icd10_terms(split_chapters(0.2, 0)[0])}
    # Held-out terms the full trie holds as one unit (2-5 words) and no training chapter names.
    only_held_out = [t for t in icd10_terms(test_chapters)
                     if t.lower() not in known_in_training and everything.find(t) == [(0, len(t))]][:500]
    assert len(only_held_out) == 500 and 0 < training.size < everything.size
    for term in only_held_out:
        text = f"The patient has {term} since childhood."
        span = (len("The patient has "), len("The patient has ") + len(term))
        assert span in everything.find(text)  # the full trie labels the held-out term
        assert span not in training.find(text), term  # the training teacher does not
