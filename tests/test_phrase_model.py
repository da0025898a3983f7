"""H+ phrase model parts: CRF against brute force, units partition the tokens, top-B budgets, -inf masking of
Lorentz MaxSim, OEM unit vectors, and a remote-code load without ``hyte`` in a fresh process."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch
from conftest import run_without_hyte
from phrase_helpers import TEXTS, tiny_backbone, tiny_phrase_model

from hyte import lorentz as L
from hyte.modeling_hyte_phrase import (
    SEGMENTERS,
    TAG_B,
    TAG_I,
    TAG_O,
    LinearChainCRF,
    Units,
    pool_units,
    segment,
    select_top,
    unit_counts,
    units_from_tags,
    weighted_maxsim,
)



def _random_crf(seed: int) -> LinearChainCRF:
    torch.manual_seed(seed)
    crf = LinearChainCRF()
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.normal_()
    return crf


def _brute_force_score(crf: LinearChainCRF, emissions: torch.Tensor, tags: tuple[int, ...]) -> float:
    """Path score written out with Python loops from the CRF's definition, BIO constraints included."""
    forbidden = -1e4
    crf = crf.requires_grad_(False)
    score = float(crf.start_transitions[tags[0]]) + (forbidden if tags[0] == TAG_I else 0.0)
    score += float(emissions[0, tags[0]])
    for t in range(1, len(tags)):
        score += float(crf.transitions[tags[t - 1], tags[t]]) + float(emissions[t, tags[t]])
        score += forbidden if (tags[t - 1], tags[t]) == (TAG_O, TAG_I) else 0.0
    return score + float(crf.end_transitions[tags[-1]])


@pytest.mark.parametrize("seed", range(4))
def test_crf_decode_and_partition_equal_brute_force_on_short_sequences(seed):
    crf = _random_crf(seed)
    lengths = [1, 2, 3, 4, 5]
    emissions = torch.randn(len(lengths), max(lengths), 3)
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    decoded = crf.decode(emissions, mask)
    log_z = crf.log_partition(emissions, mask).detach()
    for row, length in enumerate(lengths):
        paths = list(itertools.product(range(3), repeat=length))
        scores = [_brute_force_score(crf, emissions[row], path) for path in paths]
        best = paths[int(np.argmax(scores))]
        assert tuple(decoded[row, :length].tolist()) == best
        assert (decoded[row, length:] == TAG_O).all()
        assert math.isclose(float(log_z[row]), float(torch.logsumexp(torch.tensor(scores, dtype=torch.float64), 0)),
                            rel_tol=1e-5, abs_tol=1e-4)
        gold = torch.tensor(best + (0,) * (max(lengths) - length)).unsqueeze(0)
        assert math.isclose(float(crf.sequence_score(emissions[row:row + 1], gold, mask[row:row + 1]).detach()),
                            max(scores), rel_tol=1e-5, abs_tol=1e-4)


def test_crf_probabilities_sum_to_one_and_decode_obeys_bio():
    crf = _random_crf(7)
    emissions = torch.randn(1, 4, 3) * 3
    mask = torch.ones(1, 4, dtype=torch.bool)
    paths = torch.tensor(list(itertools.product(range(3), repeat=4)))
    likelihood = crf.log_likelihood(emissions.expand(len(paths), -1, -1), paths, mask.expand(len(paths), -1))
    assert math.isclose(float(likelihood.detach().exp().sum()), 1.0, rel_tol=1e-4)
    for seed in range(20):
        torch.manual_seed(seed)
        tags = crf.decode(torch.randn(3, 6, 3) * 4, torch.ones(3, 6, dtype=torch.bool))
        assert not (tags[:, 0] == TAG_I).any()
        assert not ((tags[:, :-1] == TAG_O) & (tags[:, 1:] == TAG_I)).any()


def test_crf_refuses_left_padding():
    with pytest.raises(ValueError, match="right padding"):
        LinearChainCRF().decode(torch.zeros(1, 3, 3), torch.tensor([[False, True, True]]))


@pytest.mark.parametrize("kind", SEGMENTERS)
def test_every_unit_token_belongs_to_exactly_one_unit(kind):
    torch.manual_seed(0)
    unit_mask = torch.ones(6, 12, dtype=torch.bool)
    unit_mask[:, 0] = False  # [CLS]
    for row, length in enumerate([12, 11, 8, 5, 3, 2]):
        unit_mask[row, length - 1:] = False  # [SEP] and padding
    tags = torch.randint(0, 3, (6, 12))  # any tag sequence, stray I's included
    ids = segment(kind, unit_mask, tags=tags, seed=3)
    assert ((ids >= 0) == unit_mask).all()
    for row in range(6):
        row_ids = ids[row][unit_mask[row]]
        assert row_ids.tolist() == sorted(row_ids.tolist())  # units are contiguous spans in text order
        assert set(row_ids.tolist()) == set(range(int(unit_counts(ids)[row])))  # numbered 0..m-1, none empty
    members = torch.stack([(ids == u) for u in range(int(ids.max()) + 1)], 0)
    assert (members.sum(0) == unit_mask.long()).all()  # one unit per unit token, none for the others


def test_bio_tags_make_the_expected_units():
    tags = torch.tensor([[TAG_O, TAG_B, TAG_I, TAG_I, TAG_O, TAG_I, TAG_I, TAG_B, TAG_B, TAG_O]])
    mask = torch.ones_like(tags, dtype=torch.bool)
    mask[0, 0] = mask[0, -1] = False
    # B I I -> one unit; O; stray I I after O -> one unit; B; B
    assert units_from_tags(tags, mask).tolist() == [[-1, 0, 0, 0, 1, 2, 2, 3, 4, -1]]


def test_top_b_never_exceeds_the_budget_and_keeps_the_most_important_in_text_order():
    torch.manual_seed(1)
    for budget in (1, 2, 3, 5, 9, torch.tensor([1, 4, 2, 7])):
        mask = torch.rand(4, 8) > 0.3
        mask[:, 0] = True
        weights = torch.rand(4, 8).masked_fill(~mask, 0.0)
        units = Units(vectors=torch.randn(4, 8, 5), weights=weights, mask=mask)
        kept = select_top(units, budget)
        budgets = torch.as_tensor(budget).expand(4)
        assert (kept.mask.sum(1) <= budgets).all()
        assert (kept.mask.sum(1) == torch.minimum(budgets, mask.sum(1))).all()
        for row in range(4):
            chosen = kept.weights[row][kept.mask[row]]
            expected = weights[row][mask[row]].sort(descending=True).values[: int(budgets[row])]
            torch.testing.assert_close(chosen.sort(descending=True).values, expected)
            positions = [int((units.vectors[row] == v).all(-1).nonzero()) for v in kept.vectors[row][kept.mask[row]]]
            assert positions == sorted(positions)
    with pytest.raises(ValueError, match=">= 1"):
        select_top(units, 0)


def test_padding_never_wins_a_max_when_every_lorentz_score_is_negative():
    c = 1.0
    torch.manual_seed(2)
    points = L.expmap0(torch.randn(5, 4), c)  # (5, 5) hyperboloid points: every <x, y>_L <= -1
    query = Units(vectors=points[:2].unsqueeze(0), weights=torch.tensor([[1.0, 2.0]]), mask=torch.ones(1, 2).bool())
    filler = torch.zeros(2, 5)  # what padding rows hold in a padded batch: inner product 0 with anything
    documents = Units(vectors=torch.cat([points[2:4], filler]).view(1, 4, 5), weights=torch.ones(1, 4),
                      mask=torch.tensor([[True, True, False, False]]))
    score = weighted_maxsim(query, documents, "lorentz", c)
    expected = sum(w * -L.pairwise_distance(points[i:i + 1], points[2:4], c).min()
                   for i, w in enumerate([1.0, 2.0]))
    torch.testing.assert_close(score, expected.view(1, 1))
    assert float(score) < 0
    # The multiply-by-mask scoring (PyLate's colbert_scores) lets the zero padding win: the score it gives is 0.
    raw = L.pairwise_inner(points[:2], documents.vectors[0])
    assert float((raw * documents.mask[0].float()).max(-1).values.sum()) == 0.0
    # A masked query unit adds exactly 0, and a document without units scores -inf.
    query.mask[0, 1] = False
    torch.testing.assert_close(weighted_maxsim(query, documents, "lorentz", c), (1.0 * -L.pairwise_distance(
        points[:1], points[2:4], c).min()).view(1, 1))
    documents.mask[:] = False
    assert weighted_maxsim(query, documents, "lorentz", c).item() == -math.inf


def test_lorentz_unit_vectors_are_oem_of_their_spans():
    torch.manual_seed(3)
    points = L.expmap0(torch.randn(2, 6, 7) * 2, 0.5)
    unit_ids = torch.tensor([[-1, 0, 0, 1, 1, 1], [0, 1, 1, 1, -1, -1]])
    importance = torch.rand(2, 6)
    units = pool_units(points, unit_ids, importance, "lorentz", 0.5, oem_p=1.0)
    for row in range(2):
        for unit in range(2):
            span = unit_ids[row] == unit
            expected = L.outward_einstein_midpoint(points[row][span], p=1.0, c=0.5)
            torch.testing.assert_close(units.vectors[row, unit], expected, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(units.weights[row, unit], importance[row][span].sum())
    torch.testing.assert_close(L.inner(units.vectors, units.vectors), torch.full((2, 2), -0.5), rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def tiny_backbones(bert_tokenizer):
    return {geometry: tiny_backbone(geometry, bert_tokenizer) for geometry in ("euclidean", "lorentz")}


@pytest.mark.parametrize("geometry", ["euclidean", "lorentz"])
def test_units_do_not_depend_on_batch_padding(geometry, tiny_backbones, bert_tokenizer):
    model = tiny_phrase_model(tiny_backbones[geometry], bert_tokenizer)
    together = model.encode_phrases(TEXTS, bert_tokenizer)
    for text, batched in zip(TEXTS, together):
        alone = model.encode_phrases([text], bert_tokenizer)[0]
        for key in ("global", "units", "weights", "lexical_weights"):
            np.testing.assert_allclose(alone[key], batched[key], rtol=1e-4, atol=1e-5)
        assert len(alone["units"]) <= 4


@pytest.mark.parametrize("options, error, message", [
    ({"max_length": 2.5}, ValueError, r"max_length must be a whole number > 0; got 2\.5"),  # was range()'s error
    ({"max_length": 0}, ValueError, "max_length must be a whole number > 0; got 0"),  # was accepted
    ({"max_length": 65}, ValueError, "between 1 and the model's 64 positions"),  # was accepted, failed on long texts
    ({"batch_size": 0}, ValueError, "batch_size must be a whole number > 0; got 0"),  # was "range() arg 3"
    ({"texts": None}, TypeError, "texts must be a string or a list of strings; got NoneType"),
    ({"texts": ["a heart", 3]}, TypeError, "item 1 is a int"),  # was the tokenizer's TextEncodeInput
    ({"texts": ["a heart", " "]}, ValueError, "text 1 is empty"),  # was encoded as [CLS] [SEP]
])
def test_encode_phrases_refuses_bad_arguments_as_encode_does(options, error, message, tiny_backbones, bert_tokenizer):
    model = tiny_phrase_model(tiny_backbones["lorentz"], bert_tokenizer)
    options = {"texts": ["a heart"], **options}
    with pytest.raises(error, match=message):
        model.encode_phrases(tokenizer=bert_tokenizer, **options)


def test_remote_code_load_in_a_fresh_process_gives_identical_unit_vectors(tmp_path, tiny_backbones, bert_tokenizer):
    expected = {}
    for geometry in ("euclidean", "lorentz"):
        model = tiny_phrase_model(tiny_backbones[geometry], bert_tokenizer)
        model.save_pretrained(tmp_path / geometry)
        bert_tokenizer.save_pretrained(tmp_path / geometry)
        encoded = model.encode_phrases(TEXTS, bert_tokenizer, role="query")
        expected[geometry] = [{k: np.asarray(v).tolist() for k, v in e.items()} for e in encoded]
    stdout = run_without_hyte(
        f"""
        import json, numpy as np, torch
        from transformers import AutoModel, AutoTokenizer
        out = {{}}
        for geometry in ("euclidean", "lorentz"):
            model = AutoModel.from_pretrained(geometry, trust_remote_code=True)
            tokenizer = AutoTokenizer.from_pretrained(geometry, trust_remote_code=True)
            encoded = model.encode_phrases({json.dumps(TEXTS)}, tokenizer, role="query")
            out[geometry] = [{{k: np.asarray(v).tolist() for k, v in e.items()}} for e in encoded]
        print("RESULT " + json.dumps(out))
        """,
        cwd=tmp_path,
    )
    loaded = json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[7:])
    for geometry in expected:
        for mine, theirs in zip(expected[geometry], loaded[geometry]):
            for key in mine:
                assert np.array_equal(np.asarray(mine[key], dtype=np.float32), np.asarray(theirs[key], np.float32)), key
