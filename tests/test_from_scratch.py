"""The from-scratch comparison of HyTE-FH and EucBERT (issue 11): its data never shows a held-out branch or chapter,
its two sides differ only in the geometry, EucBERT is scored with the similarity it trains with, and the recorded
benchmark's --quick variant runs end to end (slow)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def test_mlm_text_of_both_ontologies_never_shows_held_out_text():
    pytest.importorskip("simple_icd_10_cm")
    from hyte.data import icd10
    from hyte.data.hpo import load_hpo, queries_for, split_by_branches
    from hyte.training.config import DataSpec
    from hyte.training.data import mlm_texts

    texts = set(mlm_texts(DataSpec(source="hpo+icd10", mlm_names=True)))
    hpo = load_hpo()
    train_ids, test_ids = split_by_branches(hpo, test_fraction=0.2, seed=0)

    def hpo_texts(ids):
        return {text for i in ids for text in [hpo.terms[i].definition, *queries_for(hpo, i, "all")] if text}

    train_chapters, _ = icd10.split_chapters(0.2, 0)
    icd_train = {icd10.title(c) for c in icd10.all_codes() if icd10.chapter_of(c) in train_chapters}
    icd_train |= {p["query"] for p in icd10.inclusion_pairs() if p["chapter"] in train_chapters}
    # Every text comes from a training branch or chapter; the same string may also occur on the held-out side
    # (a held-out HPO name such as "Hernia" is an ICD-10-CM training title), which is text, not a held-out term.
    assert texts <= hpo_texts(train_ids) | icd_train
    # Both sources and the names are in.
    assert hpo.terms[sorted(train_ids)[0]].name in texts
    assert len(texts & icd_train) > 0.9 * len(icd_train) and len(texts & hpo_texts(train_ids)) > 20_000


@pytest.mark.parametrize("stage", ["mlm", "contrastive", "finetune"])
def test_from_scratch_sides_differ_only_in_the_geometry(stage):
    from hyte.training.recipes import from_scratch

    init = None if stage == "mlm" else "runs/previous/final"
    hyperbolic = from_scratch("hyte-fh", stage, "out", seed=1, init=init).to_dict()
    euclidean = from_scratch("eucbert", stage, "out", seed=1, init=init).to_dict()
    assert hyperbolic["model"].pop("build") in ("hyte_fh", "load")
    assert euclidean["model"].pop("build") in ("eucbert", "load")
    if stage == "mlm":  # the Lorentz residual's rescale, HyTE-FH's only extra option (see the next test)
        scale = hyperbolic["model"]["options"].pop("residual_space_scale")
        assert scale == pytest.approx(4 * math.sqrt(hyperbolic["model"]["options"]["hidden_size"]))
    assert hyperbolic == euclidean
    if stage == "finetune":  # one fixed miner: identical hard negatives on both sides
        assert hyperbolic["mining"]["miner"] == "bundled:all-MiniLM-L6-v2"
    with pytest.raises(ValueError, match="init"):
        from_scratch("eucbert", stage, "out", init=None if init else "x")


def test_equal_care_gives_both_models_the_same_temperature_rule_and_holds_validation_out():
    """Issue 45: the start from the mean document radius was a diagnosis only HyTE-FH got; with a chosen
    temperature both models start from it alike. Choosing on validation holds those branches out of the later
    stages (test fraction 0.35), never out of the MLM stage both share."""
    from hyte.training.recipes import from_scratch

    for stage in ("contrastive", "finetune"):
        configs = [from_scratch(model, stage, "out", init="runs/mlm/final", temperature=0.1, test_fraction=0.35)
                   for model in ("hyte-fh", "eucbert")]
        for config in configs:
            assert config.loss.temperature == 0.1 and not config.loss.temperature_from_radius
            assert config.data.hpo_test_fraction == 0.35
        assert from_scratch("hyte-fh", stage, "out", init="runs/mlm/final").loss.temperature_from_radius
    assert from_scratch("eucbert", "mlm", "out", test_fraction=0.35).data.hpo_test_fraction == 0.2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_recipes_hyte_fh_passes_gradient_to_its_embeddings_as_eucbert_does(seed):
    """Issue 26: HyTE-FH stayed on the unigram plateau. Its Lorentz residual without the reference code's rescale
    averages each sublayer's output with its input, so the embeddings got ~1 % of EucBERT's share of the gradient
    norm (3e-3 against 0.26) and never learned. The recipe's HyTE-FH must give them at least a quarter of EucBERT's
    share (0.17 against 0.26 measured); without residual_space_scale this test fails."""
    from hyte.training.models import build_model
    from hyte.training.recipes import from_scratch

    shares = {}
    for name in ("hyte-fh", "eucbert"):
        spec = from_scratch(name, "mlm", "out", size="tiny").model
        torch.manual_seed(seed)
        model = build_model(spec, for_mlm=True).model
        ids = torch.randint(5, model.config.vocab_size, (8, 32), generator=torch.Generator().manual_seed(seed))
        labels = ids.masked_fill(torch.rand(8, 32, generator=torch.Generator().manual_seed(seed + 1)) > 0.15, -100)
        model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss.backward()
        total = torch.sqrt(sum(p.grad.norm() ** 2 for p in model.parameters() if p.grad is not None))
        shares[name] = (model.get_input_embeddings().weight.grad.norm() / total).item()
    assert shares["hyte-fh"] >= 0.25 * shares["eucbert"], shares


def test_the_paper_size_setting_has_the_papers_shape_and_trains_in_mixed_precision_when_asked():
    from hyte.training.recipes import from_scratch

    config = from_scratch("hyte-fh", "mlm", "out", size="base", bf16=True)
    assert (config.model.options["hidden_size"], config.model.options["num_hidden_layers"]) == (768, 12)
    assert config.training.bf16 and config.training.per_device_train_batch_size == 96
    later = from_scratch("eucbert", "finetune", "out", size="base", init="runs/previous/final")
    assert later.data.max_examples is None and not later.training.bf16  # every training pair; float32 by default


def test_eucbert_is_scored_with_cosine_and_keeps_its_norms():
    from transformers import AutoTokenizer

    from hyte.bundled import bundled_minilm_path
    from hyte.configuration_hyte import EucBERTConfig
    from hyte.encoders import HyteEncoder
    from hyte.modeling_hyte import EucBERTModel

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(bundled_minilm_path())
    model = EucBERTModel(EucBERTConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=64))
    encoder = HyteEncoder(model, tokenizer)
    texts = ["Abnormality of the kidney", "Short stature", "A much longer text about the heart and its valves"]
    queries, documents = encoder.encode(texts[:2], role="query"), encoder.encode(texts)
    unit = documents / np.linalg.norm(documents, axis=1, keepdims=True)
    expected = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T
    np.testing.assert_allclose(encoder.scores(queries, documents), expected, rtol=1e-5, atol=1e-6)
    radii = encoder.radii(texts)
    assert np.ptp(radii) > 1e-3  # the norms, which the radius-depth analysis reads, are not normalised away
    # The model's own radii agree (not the first coordinate, the hyperbolic models' x0), for arrays and tensors.
    np.testing.assert_allclose(radii, np.linalg.norm(documents, axis=1), rtol=1e-5)
    np.testing.assert_allclose(model.radii(torch.from_numpy(documents)).numpy(), radii, rtol=1e-5)
    with pytest.raises(TypeError, match="cosines"):
        model.distances_from_scores(encoder.scores(queries, documents))


@pytest.mark.slow
def test_quick_from_scratch_benchmark_runs_end_to_end_and_resumes(tmp_path):
    """The --quick variant of the recorded recipe: all three stages for both models, the held-out suite, the pooling
    ablation and the cost ratios; a second invocation reuses every finished stage and score."""
    command = [sys.executable, str(ROOT / "benchmarks" / "run_from_scratch.py"), "--quick",
               "--runs-dir", str(tmp_path / "runs"), "--output", str(tmp_path / "results" / "out.json")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    payload = json.loads((tmp_path / "results" / "out.json").read_text())
    assert payload["nonfinite"] == 0 and payload["seeds"] == [0]
    for model in ("hyte-fh", "eucbert"):
        training = payload["runs"][model]["s0"]["training"]
        assert list(training) == ["mlm", "contrastive", "finetune"]
        assert all(math.isfinite(stage["final_loss"]) and stage["train_seconds"] > 0 for stage in training.values())
        gate = training["mlm"]["gate"]  # measured on held-out text beside the unigram level of the same tokens
        assert math.isfinite(gate["mlm_loss"]) and gate["unigram_cross_entropy"] > 1 and gate["num_masked"] > 0
        start = payload["runs"][model]["s0"]["mlm_scores"]  # the MLM checkpoint, scored before any contrastive step
        assert set(start) == {"hpo", "icd10"} and all(0 <= s["ndcg@10"] <= 1 for s in start.values())
    # Both twins share the vocabulary trained on the MLM corpus, saved with each model.
    from transformers import AutoTokenizer

    assert 100 < payload["vocabulary"]["size"] <= 512
    for model in ("hyte-fh", "eucbert"):
        final = tmp_path / "runs" / "quick-trained-vocabulary" / f"{model}-s0" / "finetune" / "final"
        assert len(AutoTokenizer.from_pretrained(final)) == payload["vocabulary"]["size"]
    assert set(payload["summary"]) == {"eucbert", *(f"hyte-fh {p}" for p in
                                                    ("oem-p1", "oem-p0", "oem-p2", "tangent-mean", "cls"))}
    for label, by_ontology in payload["summary"].items():
        assert set(by_ontology) == {"hpo", "icd10"}
        for scores in by_ontology.values():
            assert 0 <= scores["ndcg@10"]["mean"] <= 1 and 0 <= scores["spechr"]["mean"] <= 1
            assert -1 <= scores["radius_depth_spearman.spearman"]["mean"] <= 1
    # The ablation retrains HyTE-FH per pooling from the seed's MLM stage (Table 7), it does not swap the pooler.
    assert payload["pooling_ablation"] == "retrained"
    retrained = payload["runs"]["hyte-fh"]["s0"]["pooling_training"]
    assert set(retrained) == {"oem-p0", "oem-p2", "tangent-mean", "cls"}
    assert all(list(stages) == ["contrastive", "finetune"] for stages in retrained.values())
    runs = tmp_path / "runs" / "quick-trained-vocabulary"
    cls_config = json.loads((runs / "hyte-fh-cls-s0" / "finetune" / "final" / "config.json").read_text())
    assert cls_config["pooling"] == "cls"
    # Trained with another pooling, the contrastive stage ends at another loss (the scores of these toy models can tie:
    # their token points collapse, so a rank metric is no evidence either way).
    main_loss = payload["runs"]["hyte-fh"]["s0"]["training"]["contrastive"]["final_loss"]
    assert retrained["cls"]["contrastive"]["final_loss"] != main_loss
    cost = payload["cost"]
    assert cost["step_time_ratio"] > 0 and cost["step_memory_ratio"] > 0
    second = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    again = json.loads((tmp_path / "results" / "out.json").read_text())
    assert again["summary"] == payload["summary"] and again["runs"] == payload["runs"]
    # The BENCHMARKS.md section reports it, without claiming a winner from one seed.
    from hyte.report import write_benchmarks_md

    markdown = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "## From scratch: HyTE-FH vs its Euclidean twin" in markdown and "Held-out MLM gate" in markdown
    assert "HyTE-FH retrained per pooling" in markdown
    # Six MLM steps cannot leave the unigram plateau: the gate withholds the comparison (one seed: never a verdict).
    assert payload["gated_seeds"] == [] and "No seed passed the gate" in markdown
    assert "ahead on every seed" not in markdown and payload["comparison_gated"] == {}
    # Had the seed passed, its verdict would come from the t-test and the bootstrap over its queries (one seed: no
    # t-test, so a tie whatever the interval says).
    from hyte.evaluation.heldout import aggregate_seeds, compare_models

    runs = payload["runs"]
    starts = [runs["hyte-fh"]["s0"]["mlm_scores"]], [runs["eucbert"]["s0"]["mlm_scores"]]
    passed = {**payload, "gated_seeds": ["s0"], "summary_gated": payload["summary"],
              "comparison_gated": compare_models([runs["hyte-fh"]["s0"]["scores"]["oem-p1"]],
                                                 [runs["eucbert"]["s0"]["scores"]["mean"]]),
              "mlm_start": {"summary": {"hyte-fh": aggregate_seeds(starts[0]), "eucbert": aggregate_seeds(starts[1])},
                            "comparison": compare_models(*starts)}}
    (tmp_path / "results" / "out.json").write_text(json.dumps(passed))
    markdown = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    verdicts = [line for line in markdown.splitlines() if line.startswith(("- nDCG@10: ", "- SpecHR: "))]
    assert len(verdicts) == 4 and all("HyTE-FH − EucBERT" in line and "paired t-test p = –" in line
                                      and line.endswith("**tie**.") for line in verdicts)
    assert "Before any contrastive step" in markdown
    assert [line.startswith(f"- {ontology}: HyTE-FH ") for ontology in ("hpo", "icd10")
            for line in markdown.splitlines() if line.startswith(f"- {ontology}: ")] == [True, True]


@pytest.mark.slow
def test_quick_from_scratch_with_equal_care_chooses_each_temperature_on_validation(tmp_path):
    """--temperatures (issue 45): both models pick their starting temperature among the same candidates on
    validation branches held out of the later stages, train at it with no start from HyTE-FH's radius, and the
    report shows the choice and every contrastive stage's final logit scale."""
    candidates = [0.05, 0.1]
    command = [sys.executable, str(ROOT / "benchmarks" / "run_from_scratch.py"), "--quick", "--temperatures",
               *map(str, candidates), "--runs-dir", str(tmp_path / "runs"),
               "--output", str(tmp_path / "results" / "out.json")]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads((tmp_path / "results" / "out.json").read_text())
    runs = tmp_path / "runs" / "quick-trained-vocabulary"
    for model in ("hyte-fh", "eucbert"):
        selection = payload["temperature_selection"][model]
        assert selection["chosen"] in candidates and set(selection["validation_ndcg@10"]) == {"0.05", "0.1"}
        scores = selection["validation_ndcg@10"]
        assert scores[f"{selection['chosen']:g}"] == max(scores.values())
        for stage in ("contrastive", "finetune"):
            loss = json.loads((runs / f"{model}-t{selection['chosen']:g}-s0" / stage / "run.json").read_text())["loss"]
            assert loss["temperature"] == selection["chosen"] and loss["temperature_from_radius"] is False
            assert payload["runs"][model]["s0"]["training"][stage]["final_logit_scale"] > 0
        selected = json.loads((runs / f"{model}-select-t0.05-s0" / "contrastive" / "run.json").read_text())
        assert selected["data"]["hpo_test_fraction"] == 0.35  # the validation branches stay out of the selection runs
    from hyte.report import write_benchmarks_md

    markdown = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "Equal care: each model's starting temperature chosen" in markdown
    assert "| model | τ 0.05 | τ 0.1 | chosen |" in markdown and "final logit scale, contrastive" in markdown
    assert "Not equal care" not in markdown


def test_indexing_eucbert_is_refused_before_encoding_with_what_to_do(tmp_path, capsys):
    """EucBERT's vectors are Euclidean (curvature 0): a Lorentz index of them would be meaningless, and the bare
    geometry check ("c must be > 0") did not say that the model was the problem."""
    from transformers import AutoTokenizer

    from hyte.bundled import bundled_minilm_path
    from hyte.cli import main
    from hyte.configuration_hyte import EucBERTConfig
    from hyte.modeling_hyte import EucBERTModel

    tokenizer = AutoTokenizer.from_pretrained(bundled_minilm_path())
    model_dir = tmp_path / "eucbert"
    EucBERTModel(EucBERTConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64)).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    (tmp_path / "docs.txt").write_text("renal cyst\nheart murmur\n")
    code = main(["index", "build", "--model", str(model_dir), "--input", str(tmp_path / "docs.txt"),
                 "--output", str(tmp_path / "index")])
    error = capsys.readouterr().err
    assert code == 2 and "is Euclidean (curvature 0" in error and "Index a HyTE-FH or HyTE-H model" in error
    assert not (tmp_path / "index").exists()


def test_eucbert_loaded_as_euclidean_keeps_its_cls_pooling(tmp_path):
    """``hyte eval rag --baseline`` and ``--kind euclidean`` load EucBERT as a Euclidean encoder: it must pool as the
    model does (here CLS), not by the Euclidean encoder's default mean."""
    from transformers import AutoTokenizer

    from hyte.bundled import bundled_minilm_path
    from hyte.configuration_hyte import EucBERTConfig
    from hyte.encoders import HyteEncoder, load_encoder
    from hyte.modeling_hyte import EucBERTModel

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(bundled_minilm_path())
    model = EucBERTModel(EucBERTConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=64, pooling="cls")).eval()
    model.save_pretrained(tmp_path / "eucbert-cls")
    tokenizer.save_pretrained(tmp_path / "eucbert-cls")
    texts = ["Abnormality of the kidney", "Short stature", "A much longer text about the heart and its valves"]
    own = HyteEncoder(model, tokenizer).encode(texts)
    loaded = load_encoder(tmp_path / "eucbert-cls", kind="euclidean")
    assert loaded.pooling == "cls"
    np.testing.assert_allclose(loaded.encode(texts), own / np.linalg.norm(own, axis=1, keepdims=True), atol=1e-5)
