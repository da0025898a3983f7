"""Matched-budget reranking evaluation: exact counts are the same for every unit kind, budgets never exceed B,
every system reranks the same global candidates, scores agree with the serving path, and the CLI runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from phrase_helpers import tiny_backbone, tiny_phrase_model

from hyte.evaluation.metrics import paired_bootstrap
from hyte.phrase.evaluation import (
    UNIT_KINDS,
    encode_texts,
    evaluate_reranking,
    summarize,
    unit_scores,
)
from hyte.retrieval.phrase import segment_maxsim

CORPUS = {f"d{i}": text for i, text in enumerate([
    "Type 2 diabetes mellitus with diabetic nephropathy", "Atrial septal defect of the interatrial septum",
    "Chronic kidney disease, stage 3 (moderate)", "Ventricular septal defect", "Short stature",
    "Abnormality of the left ventricular outflow tract", "HbA1c 7.5 % at diagnosis", "Congenital heart defect",
    "Type 1 diabetes mellitus without complications", "Hypertensive heart disease with heart failure",
    "Iron deficiency anaemia secondary to chronic blood loss", "Acute appendicitis with generalized peritonitis"])}
QUERIES = {"q0": "diabetic kidney disease", "q1": "hole in the heart wall", "q2": "high blood pressure heart",
           "q3": "low iron anaemia"}
QRELS = {"q0": {"d0": 1}, "q1": {"d1": 1}, "q2": {"d9": 1}, "q3": {"d10": 1}}


@pytest.fixture(scope="module", params=["euclidean", "lorentz"])
def model(request, bert_tokenizer):
    return tiny_phrase_model(tiny_backbone(request.param, bert_tokenizer), bert_tokenizer)


def test_exact_counts_match_across_kinds_and_never_exceed_the_budget(model, bert_tokenizer):
    encoded = encode_texts(model, bert_tokenizer, list(CORPUS.values()))
    for budget in (1, 2, 4, 64):
        exact = [encoded.counts(budget, kind, "exact") for kind in UNIT_KINDS]
        assert all(np.array_equal(exact[0], other) for other in exact[1:])
        for kind in UNIT_KINDS:
            cap = encoded.counts(budget, kind, "cap")
            assert (cap <= budget).all() and (cap <= encoded.natural[kind]).all() and (exact[0] <= cap).all()
    # Units are stored by descending importance within each text: the top B are the first B.
    for kind in UNIT_KINDS:
        for row in range(len(CORPUS)):
            weights = encoded.weights[kind][encoded.offsets[kind][row]:encoded.offsets[kind][row + 1]]
            assert list(weights) == sorted(weights, reverse=True)
    assert (encoded.natural["token"] >= encoded.natural["bigram"]).all()


def test_unit_scores_with_every_unit_equal_the_serving_paths_segment_maxsim(model, bert_tokenizer):
    q = encode_texts(model, bert_tokenizer, list(QUERIES.values()))
    d = encode_texts(model, bert_tokenizer, list(CORPUS.values()))
    geometry, curvature = model.config.geometry, float(model.curvature)
    candidates = np.array([3, 0, 7, 5])
    for kind in UNIT_KINDS:
        got = unit_scores(q, d, 1, candidates, kind, [1000], "cap", geometry, curvature)[1000]
        rows = [np.arange(d.offsets[kind][c], d.offsets[kind][c + 1]) for c in candidates]
        flat = torch.as_tensor(d.units[kind][np.concatenate(rows)])
        segment = torch.as_tensor(np.repeat(np.arange(len(candidates)), [len(r) for r in rows]))
        start, end = q.offsets[kind][1], q.offsets[kind][2]
        expected = segment_maxsim(torch.as_tensor(q.units[kind][start:end]), torch.as_tensor(q.weights[kind][start:end]),
                                  flat, segment, len(candidates), geometry, curvature)
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-5)


def test_every_system_reranks_the_same_candidates(model, bert_tokenizer):
    result = evaluate_reranking(model, bert_tokenizer, QUERIES, CORPUS, QRELS, budgets=(2, 8), k_candidates=(3, 12))
    table = summarize(result)
    assert set(table[3]) == {"global", *UNIT_KINDS, "hybrid"}
    # Global top-10 does not depend on the pool; with 3 candidates no system can find more than global's top 3.
    assert table[3]["global"][0] == table[12]["global"][0]
    for system in UNIT_KINDS + ("hybrid",):
        for budget in (2, 8):
            assert table[3][system][budget]["recall@10"] <= result["candidate_recall"][3] + 1e-9
    assert result["vectors_per_document"]["crf"][2] <= 2
    interval = paired_bootstrap(result["per_query"][12]["crf"][8]["ndcg@10"],
                                result["per_query"][12]["global"][0]["ndcg@10"], samples=200)
    assert interval["low"] <= interval["mean"] <= interval["high"]


def test_eval_retrieval_cli_reranks_with_a_unit_kind_and_budget(model, bert_tokenizer, tmp_path):
    from hyte.cli import main

    model.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in CORPUS.items()))
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items()))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, rel in QRELS.items() for d in rel))
    output = tmp_path / "out.json"
    assert main(["eval", "retrieval", "--model", str(tmp_path / "model"), "--data", str(data), "--rerank", "bigram",
                 "--budget", "4", "--k-candidates", "10", "--output", str(output)]) == 0
    payload = json.loads(output.read_text())
    assert payload["rerank"] == "bigram" and payload["budget"] == 4 and payload["k_candidates"] == 10
    assert set(payload["results"]) == {"global", "bigram"}
    assert 0.0 <= payload["results"]["bigram"]["ndcg@10"] <= 1.0
    # A reranked result and a plain one are different kinds: neither replaces the other, refused before the work.
    assert main(["eval", "retrieval", "--model", str(tmp_path / "model"), "--data", str(data), "--output",
                 str(output)]) == 2
    assert json.loads(output.read_text()) == payload


def test_phrase_report_shows_over_seed_intervals_only_when_they_resample_seeds_then_queries():
    """A run recorded before the two-level bootstrap keeps an interval over (seed, query) pairs, too narrow: the
    report shows its means, per-seed ranges and t-tests without that interval or a verdict; a run that records the
    two-level method gets both."""
    from pathlib import Path

    from hyte.phrase.report import render_section

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "phrase_hyte_h_seeds.json"
    payload = json.loads(path.read_text())
    contrast = payload["over_seeds"]["hpo"]["hyte-h"]["100/4/crf-global"]
    interval = f"[{contrast['bootstrap_low']:+.3f}, {contrast['bootstrap_high']:+.3f}]"
    row = next(line for line in render_section([(path, payload)]) if line.startswith("| K=100 crf-global |")
               and f"{contrast['mean_difference']:+.3f} (" in line)
    assert interval not in row and contrast["verdict"] not in row
    assert f"({min(contrast['per_seed']):+.3f} to {max(contrast['per_seed']):+.3f})" in row
    two_level = {**payload, "over_seeds_interval": "seeds, then queries"}
    rows = [line for line in render_section([(path, two_level)]) if line.startswith("| K=100 crf-global |")]
    assert any(f"{interval} p {contrast['t_test_p']:.3f} {contrast['verdict']}" in line for line in rows)
