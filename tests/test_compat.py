"""Backward-compatible training (HBCT): uncertainty, RINCE, the cone term with widened apertures, the cached old
embeddings, resume, lineage recorded in the model and enforced by the index, and the compatibility metrics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import TrainerCallback

from hyte import lorentz as L
from hyte.compatibility.objective import MIN_Q, alignment_q, cone_loss, l2_influence_loss, rince_loss, uncertainty
from hyte.compatibility.training import document_texts
from hyte.runner import run
from hyte.training import parse_config

TINY_FH = {"hidden_size": 33, "num_hidden_layers": 1, "num_attention_heads": 3, "intermediate_size": 65,
           "max_position_embeddings": 128}


def random_points(seed: int, n: int, dim: int, c: float, max_radius: float, dtype=torch.float64) -> torch.Tensor:
    """n points of H^dim_c at geodesic radii in (0, max_radius) sqrt(c), random directions, (n, dim + 1)."""
    generator = torch.Generator().manual_seed(seed)
    direction = torch.nn.functional.normalize(torch.randn(n, dim, generator=generator, dtype=torch.float64), dim=-1)
    radius = torch.rand(n, 1, generator=generator, dtype=torch.float64) * max_radius * math.sqrt(c)
    return L.expmap0(direction * radius, c).to(dtype)


# ------------------------------------------------------------------ uncertainty, RINCE, cones


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.sampled_from([0.5, 1.0, 2.0]))
def test_uncertainty_is_in_unit_interval_decreasing_in_radius_and_scale_invariant(seed, c):
    points = random_points(seed, 64, 8, c, max_radius=12.0)
    q = uncertainty(points, c)
    assert ((q > 0) | (q == 0)).all() and (q <= 1).all() and torch.isfinite(q).all()
    order = torch.argsort(L.distance_to_origin(points, c))
    assert (q[order].diff() <= 1e-12).all()  # further out = more certain
    torch.testing.assert_close(q, uncertainty(points / math.sqrt(c), 1.0))
    assert float(uncertainty(L.origin(8, c, dtype=torch.float64), c)) == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_rince_tends_to_infonce_plus_log_lambda_and_down_weights_hard_positives_at_q_one(seed):
    generator = torch.Generator().manual_seed(seed)
    logits = -5 * torch.rand(6, 9, generator=generator, dtype=torch.float64)  # -scale x distance <= 0
    positives = torch.arange(6)
    lam = 0.01
    infonce = torch.nn.functional.cross_entropy(logits, positives)
    small_q = rince_loss(logits, positives, torch.full((6,), MIN_Q), lam).double()
    # At q = MIN_Q the loss is within O(q) of its q -> 0 limit.
    assert float(small_q) == pytest.approx(float(infonce) + math.log(lam), abs=0.1)
    # q = 1: the pull on the positive logit is (1 - lam) exp(s+): the farther the positive (a hard, possibly wrong
    # pair), the weaker the pull. InfoNCE's pull, 1 - softmax share, is strongest for the hardest pairs.
    pulled = logits.clone().requires_grad_(True)
    rince_loss(pulled, positives, torch.ones(6), lam).backward()
    pull = -pulled.grad[positives, positives] * 6
    torch.testing.assert_close(pull, (1 - lam) * logits[positives, positives].exp(), rtol=1e-5, atol=1e-7)


def test_rince_pull_on_the_positive_is_exp_q_s_minus_the_softmax_share():
    logits = torch.tensor([[-0.2, -1.0, -3.0], [-2.5, -0.1, -0.4]], dtype=torch.float64, requires_grad=True)
    positives, q, lam = torch.tensor([0, 0]), torch.tensor([0.3, 0.9]), 0.05
    rince_loss(logits, positives, q, lam).backward()
    s = logits.detach()
    total = s.exp().sum(1)
    # dL_i/ds+ = -exp(q s+) + (lam S)^q exp(s+) / S  (mean over 2 anchors)
    expected = (-(q * s[:, 0]).exp() + (lam * total) ** q * s[:, 0].exp() / total) / 2
    torch.testing.assert_close(logits.grad[:, 0], expected.to(logits.grad.dtype))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.sampled_from([0.5, 1.0, 2.0]))
def test_widened_cones_contain_the_narrow_ones_and_a_point_further_out_on_the_axis_is_inside(seed, c):
    old = random_points(seed, 32, 8, c, max_radius=8.0)
    q = uncertainty(old, c)
    narrow, wide = L.half_aperture(old, c, 0.1), L.half_aperture(old, c, 0.1 * (1 + q))
    assert (wide >= narrow - 1e-12).all() and (wide <= math.pi / 2).all()
    further = L.expmap0(L.logmap0(old, c) * 1.5, c)  # same direction, 1.5 x the distance to the origin
    assert float(cone_loss(old, further, c, 0.1 * (1 + q))) < 1e-3
    # Pulled back towards the origin: outside every cone (exterior angle pi).
    closer = L.expmap0(L.logmap0(old, c) * 0.5, c)
    assert float(cone_loss(old, closer, c, 0.1 * (1 + q))) > 1.0


def test_l2_influence_loss_is_zero_for_the_same_points_and_grows_with_the_tangent_gap():
    old = random_points(3, 16, 8, 1.0, max_radius=3.0)
    assert float(l2_influence_loss(old, old)) == pytest.approx(0.0, abs=1e-12)
    moved = L.expmap0(L.logmap0(old) + 0.1, 1.0)
    assert float(l2_influence_loss(moved, old)) == pytest.approx(8 * 0.01, rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_l2_influence_loss_of_a_euclidean_pair_compares_directions_only(seed):
    generator = torch.Generator().manual_seed(seed)
    old = torch.randn(8, 16, generator=generator, dtype=torch.float64)
    # A cosine index holds directions: a rescaled copy is the same vector, a rotated one is not.
    assert float(l2_influence_loss(old * 3.7, old, c=0)) == pytest.approx(0.0, abs=1e-12)
    other = torch.randn(8, 16, generator=generator, dtype=torch.float64)
    unit = torch.nn.functional.normalize
    expected = (2 - 2 * (unit(other, dim=-1) * unit(old, dim=-1)).sum(-1)).mean()  # |a - b|^2 of unit vectors
    assert float(l2_influence_loss(other, old, c=0)) == pytest.approx(float(expected), rel=1e-9)


def test_permuted_q_keeps_the_distribution_and_fixed_q_is_constant():
    values = torch.linspace(0.05, 0.95, 50)
    permuted = alignment_q("permuted", values, seed=1)
    assert torch.equal(permuted.sort().values, values.sort().values) and not torch.equal(permuted, values)
    assert torch.equal(alignment_q("permuted", values, seed=1), permuted)  # seeded
    assert (alignment_q("fixed", values, q_fixed=0.3) == 0.3).all()
    with pytest.raises(ValueError, match="uncertainty, fixed or permuted"):
        alignment_q("random", values)


def test_document_texts_cover_positives_negatives_and_parents_once():
    examples = [{"query": "a", "document": "A", "negatives": ["B"], "parent": "P"},
                {"query": "b", "document": "B", "negatives": ["A", "C"], "parent": None}]
    assert document_texts(examples) == ["A", "B", "P", "C"]


# ------------------------------------------------------------------ the stage: cache, resume, lineage


@pytest.fixture(scope="module")
def old_model(tmp_path_factory, bert_tokenizer):
    """A tiny HyTE-FH (random weights) saved with the real MiniLM tokenizer: the frozen old model."""
    from hyte.training.config import ModelSpec
    from hyte.training.models import build_model

    path = tmp_path_factory.mktemp("old-model")
    torch.manual_seed(1)
    built = build_model(ModelSpec(build="hyte_fh", options=TINY_FH, tokenizer="bundled:all-MiniLM-L6-v2"))
    built.model.save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return str(path)


def compatible_config(output_dir, old_model, max_steps=8, **compatible):
    return parse_config({
        "stage": "compatible",
        "model": {"build": "hyte_fh", "options": TINY_FH},
        "data": {"source": "hpo", "max_examples": 48, "min_depth": 3},
        "training": {"output_dir": str(output_dir), "max_steps": max_steps, "per_device_train_batch_size": 8,
                     "learning_rate": 3e-3, "warmup_steps": 1, "logging_steps": 1, "save_steps": 4, "seed": 0},
        "loss": {"temperature": 0.1, "max_query_length": 16, "max_document_length": 32},
        "mining": {"num_negatives": 1, "candidates": 8},
        "evaluation": {"enabled": False},
        "compatible": {"old_model": old_model, **compatible},
    })


class CountOldForwards:
    """Counts forward passes of every HyTE-FH model whose fingerprint is ``fingerprint`` (the old one)."""

    def __init__(self, monkeypatch, fingerprint):
        from hyte.lineage import model_fingerprint
        from hyte.modeling_hyte import HyTEFHModel

        self.calls = 0
        original = HyTEFHModel.forward
        known = {}

        def forward(model, *args, **kwargs):
            if id(model) not in known:
                known[id(model)] = model_fingerprint(model) == fingerprint
            self.calls += known[id(model)]
            return original(model, *args, **kwargs)

        monkeypatch.setattr(HyTEFHModel, "forward", forward)


def logged(output_dir, key="loss"):
    state = json.loads(sorted(output_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))[-1]
                       .joinpath("trainer_state.json").read_text())
    return {e["step"]: e[key] for e in state["log_history"] if key in e}


def test_old_embeddings_are_computed_once_not_per_step_and_lineage_is_recorded(tmp_path, old_model, monkeypatch):
    from transformers import AutoModel

    from hyte.lineage import compatible_with, model_fingerprint

    fingerprint = model_fingerprint(AutoModel.from_pretrained(old_model))
    counter = CountOldForwards(monkeypatch, fingerprint)
    final = run(compatible_config(tmp_path / "short", old_model, max_steps=4))
    short_calls = counter.calls
    assert short_calls > 0  # the cache was built with the old model
    counter.calls = 0
    run(compatible_config(tmp_path / "long", old_model, max_steps=8))
    assert counter.calls == short_calls  # twice the steps, the same old forward passes: only the caching ones
    assert (tmp_path / "long" / "old_embeddings.safetensors").is_file()
    # Every logged step has both compatibility terms.
    assert set(logged(tmp_path / "long", "align_loss")) == set(range(1, 9))
    assert all(math.isfinite(v) for v in logged(tmp_path / "long", "cone_loss").values())
    new = AutoModel.from_pretrained(final)
    assert compatible_with(new) == [{"model": old_model, "fingerprint": fingerprint,
                                     "relation": "queries->documents"}]


def test_only_weights_trained_for_compatibility_are_declared_compatible(tmp_path, old_model):
    """A run without the objective (weight 0: the benchmark's independent reference) declares nothing, and a declared
    model trained further loses the declaration its config carried: its new weights were never tied to the old."""
    from transformers import AutoModel

    from hyte.lineage import compatible_with

    independent = run(compatible_config(tmp_path / "independent", old_model, max_steps=2, weight=0.0))
    assert compatible_with(AutoModel.from_pretrained(independent)) == []
    declared = run(compatible_config(tmp_path / "declared", old_model, max_steps=2))
    assert len(compatible_with(AutoModel.from_pretrained(declared))) == 1
    further = run(parse_config({
        "stage": "contrastive", "model": {"build": "load", "path": str(declared)},
        "data": {"source": "hpo", "max_examples": 16, "min_depth": 3},
        "training": {"output_dir": str(tmp_path / "further"), "max_steps": 2, "per_device_train_batch_size": 8,
                     "learning_rate": 3e-3, "save_steps": 2, "seed": 0},
        "loss": {"max_query_length": 16, "max_document_length": 32}, "evaluation": {"enabled": False}}))
    assert compatible_with(AutoModel.from_pretrained(further)) == []


class StopAfter(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt("simulated kill")


def test_resumed_run_reuses_the_cache_and_repeats_the_losses(tmp_path, old_model, monkeypatch):
    from transformers import AutoModel

    from hyte.lineage import model_fingerprint

    run(compatible_config(tmp_path / "straight", old_model))
    with pytest.raises(KeyboardInterrupt):
        run(compatible_config(tmp_path / "killed", old_model), callbacks=[StopAfter(6)])
    assert (tmp_path / "killed" / "checkpoint-4").is_dir() and not (tmp_path / "killed" / "final").exists()
    counter = CountOldForwards(monkeypatch, model_fingerprint(AutoModel.from_pretrained(old_model)))
    run(compatible_config(tmp_path / "killed", old_model), resume=True)
    assert counter.calls == 0  # the resumed run read the cached old embeddings
    straight, resumed = logged(tmp_path / "straight"), logged(tmp_path / "killed")
    for step in range(5, 9):
        assert resumed[step] == pytest.approx(straight[step], rel=1e-4, abs=1e-5), step


@pytest.mark.slow  # three short runs, ~10 s
@pytest.mark.parametrize("alignment, q", [("l2", "uncertainty"), ("infonce", "fixed"), ("rince", "permuted")])
def test_variants_train_with_finite_terms(tmp_path, old_model, alignment, q):
    final = run(compatible_config(tmp_path, old_model, max_steps=2, alignment=alignment, q=q,
                                  cone=alignment != "l2", temperature=0.5 if alignment == "infonce" else None))
    card = json.loads((final / "hyte_card.json").read_text())
    assert math.isfinite(card["training"]["final_loss"]) and card["training"]["nonfinite_values"] == 0
    assert card["training"]["config"]["compatible"]["alignment"] == alignment


def test_config_errors_name_the_problem(tmp_path, old_model):
    from hyte.training import ConfigError

    with pytest.raises(ConfigError, match="needs the old model"):
        compatible_config(tmp_path, None)
    with pytest.raises(ConfigError, match="alignment must be"):
        compatible_config(tmp_path, old_model, alignment="cosine")
    with pytest.raises(ConfigError, match="dimension 17"):
        run(parse_config({**json.loads(json.dumps(compatible_config(tmp_path, old_model).to_dict())),
                          "model": {"build": "hyte_fh", "options": {**TINY_FH, "hidden_size": 17,
                                                                    "num_attention_heads": 1,
                                                                    "intermediate_size": 33}}}))


def test_a_euclidean_pair_trains_with_the_l2_baseline_and_is_scored_by_cosine(tmp_path, old_model, bert_tokenizer):
    """The L2-BCT baseline in its own geometry: a Euclidean old model (a cosine index) and a Euclidean new one."""
    from transformers import AutoModel, BertConfig, BertModel

    from hyte.compatibility.evaluation import pair_encoders
    from hyte.encoders import load_encoder
    from hyte.lineage import compatible_with, model_fingerprint
    from hyte.training import ConfigError

    paths = {}
    for name, seed in (("old-euclidean", 2), ("new-base", 3)):  # two tiny plain encoders, other random weights
        torch.manual_seed(seed)
        paths[name] = tmp_path / name
        BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=128)).save_pretrained(paths[name])
        bert_tokenizer.save_pretrained(paths[name])
    old_path = paths["old-euclidean"]

    def config(output, **compatible):
        values = compatible_config(tmp_path / output, str(old_path), max_steps=3,
                                   **{"alignment": "l2", "cone": False, **compatible}).to_dict()
        return parse_config({**values, "model": {"build": "load", "path": str(paths["new-base"])}})

    final = run(config("new"))
    aligned = logged(tmp_path / "new", "align_loss")
    assert aligned and all(math.isfinite(v) and v > 0 for v in aligned.values())
    assert not logged(tmp_path / "new", "mean_q")  # q is hyperbolic: nothing to log
    fingerprint = model_fingerprint(AutoModel.from_pretrained(old_path))
    assert compatible_with(AutoModel.from_pretrained(final))[0]["fingerprint"] == fingerprint
    old, new = load_encoder(old_path), load_encoder(final)
    assert old.kind == new.kind == "euclidean"
    cross = pair_encoders(old, new)["new->old"]
    queries, documents = cross.encode(DOCUMENTS[:2], role="query"), cross.encode(DOCUMENTS)
    cosine = new.encode(DOCUMENTS[:2], role="query") @ old.encode(DOCUMENTS).T
    np.testing.assert_allclose(cross.scores(queries, documents), cosine, rtol=1e-5)
    # The new model was saved without BERT's pooler (mean pooling never reads it); loading must not re-create it at
    # random, or its fingerprint (its index lineage) would change with every load.
    fingerprints = set()
    for seed in (0, 1):
        torch.manual_seed(seed)
        fingerprints.add(model_fingerprint(load_encoder(final).model))
    assert len(fingerprints) == 1
    # Scored as the index's model scores: EucBERT keeps its vectors' norms, and its index compares cosines.
    from hyte.training.config import ModelSpec
    from hyte.training.models import build_model

    eucbert = build_model(ModelSpec(build="eucbert", options={**TINY_FH, "hidden_size": 32, "num_attention_heads": 2},
                                    tokenizer="bundled:all-MiniLM-L6-v2"))
    eucbert.model.save_pretrained(tmp_path / "eucbert")
    eucbert.tokenizer.save_pretrained(tmp_path / "eucbert")
    index_model = load_encoder(tmp_path / "eucbert")
    stored = index_model.encode(DOCUMENTS)
    assert not np.allclose(np.linalg.norm(stored, axis=1), 1.0)  # raw EucBERT vectors: a plain dot product would differ
    by_cosine = pair_encoders(index_model, new)["new->old"]
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    expected = unit @ (stored / np.linalg.norm(stored, axis=1, keepdims=True)).T
    np.testing.assert_allclose(by_cosine.scores(queries, by_cosine.encode(DOCUMENTS)), expected, rtol=1e-5)
    # Cones and q are hyperbolic; a hyperbolic model cannot search a cosine index, nor one geometry the other's.
    with pytest.raises(ConfigError, match="only the Euclidean BCT baseline"):
        run(config("cone", cone=True))
    with pytest.raises(ConfigError, match="is a Euclidean model"):
        run(parse_config({**config("hyperbolic").to_dict(), "model": {"build": "hyte_fh", "options": TINY_FH}}))
    with pytest.raises(ConfigError, match="must share the dimension"):
        run(parse_config({**config("wider").to_dict(), "model": {"build": "load", "path": "bundled:all-MiniLM-L6-v2"}}))
    with pytest.raises(ConfigError, match="so the new one must be too"):
        run(parse_config({**config("to-lorentz").to_dict(), "compatible": {"old_model": old_model, "alignment": "l2",
                                                                           "cone": False}}))
    with pytest.raises(ValueError, match="no cross-model search"):
        pair_encoders(old, load_encoder(old_model))


# ------------------------------------------------------------------ lineage: the index refuses undeclared models


@pytest.fixture(scope="module")
def compatible_model(tmp_path_factory, old_model):
    """A new model trained (2 steps) with `hyte train compatible --old old_model`."""
    return str(run(compatible_config(tmp_path_factory.mktemp("compatible"), old_model, max_steps=2)))


@pytest.fixture(scope="module")
def unrelated_model(tmp_path_factory, bert_tokenizer):
    """Another tiny HyTE-FH of the same shape (different weights), declaring nothing."""
    from hyte.training.config import ModelSpec
    from hyte.training.models import build_model

    path = tmp_path_factory.mktemp("unrelated")
    torch.manual_seed(2)
    build_model(ModelSpec(build="hyte_fh", options=TINY_FH, tokenizer="bundled:all-MiniLM-L6-v2")
                ).model.save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return str(path)


DOCUMENTS = ["Abnormally long and slender fingers.", "A short stature for age.",
             "An abnormal rhythm of the heart.", "Increased size of the liver."]


def test_index_admits_its_model_and_declared_compatible_ones_and_refuses_others(
        tmp_path, old_model, compatible_model, unrelated_model):
    from transformers import AutoModel

    from hyte.lineage import compatible_with, model_fingerprint
    from hyte.retrieval import IncompatibleIndexError, LorentzIndex

    old, new, other = (AutoModel.from_pretrained(p) for p in (old_model, compatible_model, unrelated_model))
    index = LorentzIndex(33, 1.0, model_name=old_model, model_fingerprint=model_fingerprint(old))
    index.save(tmp_path / "index")
    index = LorentzIndex.load(tmp_path / "index")  # the fingerprint survives saving
    assert index.model_fingerprint == model_fingerprint(old)
    assert index.check_query_model("renamed copy", model_fingerprint(old), []) == "same model"
    assert index.check_query_model(compatible_model, model_fingerprint(new), compatible_with(new)) \
        == "declared compatible"
    with pytest.raises(IncompatibleIndexError, match="neither that model nor declared compatible"):
        index.check_query_model(unrelated_model, model_fingerprint(other), compatible_with(other))
    assert index.check_query_model(unrelated_model, model_fingerprint(other), [], allow_incompatible=True) \
        == "not checked"
    # Declarations are one-way: the old model's queries may not search an index built by the new model.
    new_index = LorentzIndex(33, 1.0, model_name="new", model_fingerprint=model_fingerprint(new))
    with pytest.raises(IncompatibleIndexError):
        new_index.check_query_model(old_model, model_fingerprint(old), compatible_with(old))
    # An index saved before fingerprints were recorded compares names only.
    legacy = LorentzIndex(33, 1.0, model_name="a")
    assert legacy.check_query_model("a", "anything", []) == "same name"
    with pytest.raises(IncompatibleIndexError, match="records no fingerprint"):
        legacy.check_query_model("b", "anything", [])


def test_cli_search_of_an_old_index_refuses_an_undeclared_model(tmp_path, old_model, compatible_model,
                                                                unrelated_model, capsys):
    from hyte.cli import main

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCUMENTS) + "\n")
    index_dir = tmp_path / "index"
    assert main(["index", "build", "--model", old_model, "--input", str(docs), "--output", str(index_dir)]) == 0
    search = ["index", "search", "--index", str(index_dir), "--query", "heart rhythm", "--k", "2"]
    assert main([*search, "--model", compatible_model]) == 0
    assert "1. d=" in capsys.readouterr().out
    assert main([*search, "--model", unrelated_model]) == 2
    error = capsys.readouterr().err
    assert "neither that model nor declared compatible" in error and "hyte train compatible" in error
    assert main([*search, "--model", unrelated_model, "--no-check-model"]) == 0


def test_rag_searcher_over_an_old_index_admits_declared_models_only(tmp_path, old_model, compatible_model,
                                                                    unrelated_model):
    from hyte.rag import HyteSearcher
    from hyte.retrieval import IncompatibleIndexError

    HyteSearcher.from_texts(DOCUMENTS, old_model).save(tmp_path / "index")  # records the old model's fingerprint
    assert len(HyteSearcher.from_folder(tmp_path / "index")) == len(DOCUMENTS)
    upgraded = HyteSearcher.from_folder(tmp_path / "index", compatible_model)
    assert upgraded.search("heart rhythm", k=1)[0].text in DOCUMENTS
    with pytest.raises(IncompatibleIndexError, match="neither that model nor declared compatible"):
        HyteSearcher.from_folder(tmp_path / "index", unrelated_model)
    assert len(HyteSearcher.from_folder(tmp_path / "index", unrelated_model, check_model=False)) == len(DOCUMENTS)


# ------------------------------------------------------------------ evaluation: the matrix, P_com, P_up, calibration


def test_compatibility_gains_follow_their_definitions():
    from hyte.compatibility.evaluation import compatibility_gains

    matrix = {"old->old": {"ndcg@10": 0.40}, "new->old": {"ndcg@10": 0.45}, "new->new": {"ndcg@10": 0.54}}
    gains = compatibility_gains(matrix, reference=0.60)
    assert gains["p_com"] == pytest.approx(0.05 / 0.20) and gains["p_up"] == pytest.approx(0.54 / 0.60 - 1)
    assert compatibility_gains(matrix)["p_up"] == 0.0  # reference = the new model itself
    assert compatibility_gains(matrix, reference=0.40)["p_com"] is None  # no gain to share


def test_benchmark_summary_counts_seeds_and_the_report_states_the_differences_and_the_changed_config():
    import importlib.util
    from pathlib import Path

    from hyte.compatibility.report import render_upgrade_section

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "run_compatibility.py"
    spec = importlib.util.spec_from_file_location("run_compatibility", path)
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)

    def seed(new_old, new_new):
        pairs = {"old->old": 0.50, "new->old": new_old, "new->new": new_new}
        return {"matrix": {"hpo": {pair: {"ndcg@10": value} for pair, value in pairs.items()}}}

    per_seed = {"independent": {1: seed(0.49, 0.60), 2: seed(0.51, 0.62), 3: seed(0.52, 0.58)},
                "hbct": {1: seed(0.55, 0.57), 2: seed(0.53, 0.49), 3: seed(0.54, 0.56)}}
    summary = driver.summarise(per_seed)
    hbct = summary["hbct"]["hpo"]["ndcg@10"]
    assert (hbct["compatible_seeds"], hbct["upgrade_seeds"], hbct["seeds"]) == (3, 2, 3)
    assert hbct["new->old"]["mean"] == pytest.approx(0.54) and hbct["new->old"]["sd"] == pytest.approx(0.01)
    assert summary["independent"]["hpo"]["ndcg@10"]["compatible_seeds"] == 2
    assert hbct["p_up"]["mean"] == pytest.approx(np.mean([0.57 / 0.60, 0.49 / 0.62, 0.56 / 0.58]) - 1)
    del per_seed["independent"][3]  # a seed without its reference run has no P_com / P_up, not P_up = 0
    p_up = driver.summarise(per_seed)["hbct"]["hpo"]["ndcg@10"]["p_up"]
    assert p_up["n"] == 2 and p_up["mean"] == pytest.approx(np.mean([0.57 / 0.60, 0.49 / 0.62]) - 1)
    per_seed["independent"][3] = seed(0.52, 0.58)

    payload = {"summary": summary, "per_seed": per_seed,
               "new_model": {"start": "fresh", "overrides": {"training.head_learning_rate": 0.01}}}
    text = "\n".join(render_upgrade_section([(Path("x.json"), payload)]))
    assert "seeds [1, 2, 3]; new-model config changed: `training.head_learning_rate=0.01`" in text
    assert "hbct: new->old > old->old (compatible) in 3/3 seeds (+0.0400 ± 0.0100)" in text
    assert "upgrade worth having) in 2/3 seeds (+0.0400 ± 0.0436)" in text
    assert "new->old nDCG@10, HBCT minus Euclidean BCT" not in text  # no baseline in this payload

    per_seed["l2-bct"] = {1: seed(0.50, 0.57), 2: seed(0.54, 0.50), 3: seed(0.52, 0.56)}
    payload = {"summary": driver.summarise(per_seed), "per_seed": {v: {str(k): s for k, s in by.items()}
                                                                  for v, by in per_seed.items()}}
    text = "\n".join(render_upgrade_section([(Path("x.json"), payload)]))
    assert "new->old nDCG@10, HBCT minus Euclidean BCT: +0.0200 (sd over seeds 0.0100 / 0.0200; seed by seed " \
           "+0.0500, -0.0100, +0.0200)" in text


def test_cross_model_pairs_use_the_query_model_for_queries_only(old_model, compatible_model):
    from hyte.compatibility.evaluation import pair_encoders
    from hyte.encoders import load_encoder

    old, new = load_encoder(old_model), load_encoder(compatible_model)
    pairs = pair_encoders(old, new)
    cross = pairs["new->old"]
    np.testing.assert_array_equal(cross.encode(DOCUMENTS, role="document"), old.encode(DOCUMENTS))
    np.testing.assert_array_equal(cross.encode(DOCUMENTS, role="query"), new.encode(DOCUMENTS, role="query"))
    assert cross.encode(DOCUMENTS) is pairs["old->old"].encode(DOCUMENTS)  # the old documents are embedded once


def test_calibration_reports_rho_and_a_permutation_control():
    from hyte.compatibility.evaluation import calibration, positive_ranks

    rng = np.random.default_rng(0)
    errors = rng.integers(1, 50, size=200).astype(float)
    aligned = calibration(errors + rng.normal(0, 1, 200), errors, permutations=200, bootstrap=100)
    assert aligned["spearman"] > 0.9 and aligned["permutation_p"] == 0.0 and abs(aligned["permuted_mean"]) < 0.05
    unrelated = calibration(rng.normal(size=200), errors, permutations=200, bootstrap=100)
    assert unrelated["ci95"][0] < unrelated["spearman"] < unrelated["ci95"][1]
    points = random_points(0, 5, 4, 1.0, 2.0).numpy()
    assert positive_ranks(points, points, [[i] for i in range(5)], 1.0).tolist() == [1] * 5


def test_uncertainty_distribution_reports_spread_and_saturation():
    from hyte.compatibility.evaluation import uncertainty_distribution
    from hyte.compatibility.objective import MIN_Q, uncertainty

    for c in (0.5, 1.0, 2.0):
        constant = uncertainty_distribution(np.full(100, 1.0), c)  # a radius head that never moved: q cannot vary
        assert constant["distance"]["sd"] < 1e-12 and constant["q"]["sd"] < 1e-12 and constant["share_at_floor"] == 0.0
        spread = np.linspace(0.1, 6.0, 200) * np.sqrt(c)
        varied = uncertainty_distribution(spread, c)
        expected_q = uncertainty(L.expmap0(torch.tensor(np.stack([spread, np.zeros_like(spread)], -1)),
                                           torch.tensor(c, dtype=torch.float64)), c).numpy()
        assert varied["q"]["mean"] == pytest.approx(expected_q.mean()) and varied["q"]["sd"] > 0.2
        assert varied["q"]["p5"] < varied["q"]["p50"] < varied["q"]["p95"]
        assert varied["share_at_floor"] == pytest.approx((expected_q <= MIN_Q).mean()) and varied["share_at_floor"] > 0
    with pytest.raises(ValueError, match="finite distances"):
        uncertainty_distribution(np.array([1.0, np.nan]), 1.0)
    # BENCHMARKS.md shows it beside the calibration test (older results without it show no such table).
    from hyte.compatibility.report import _uncertainty_distribution_lines

    lines = "\n".join(_uncertainty_distribution_lines({"hpo": {"documents": varied}}))
    assert "q at RINCE's floor" in lines and f"{varied['share_at_floor']:.1%}" in lines
    assert _uncertainty_distribution_lines({"hpo": {"queries": 3}}) == []


def test_the_uncertainty_gate_counts_the_seeds_where_q_predicts_errors(tmp_path):
    """Issue 26, part 3: q must be shown to predict the old model's errors (rho > 0, permutation p < 0.05) seed by
    seed before a comparison relies on it; a q unrelated to the errors, or running against them, does not count."""
    from hyte.compatibility.evaluation import calibration, calibration_verdict, uncertainty_distribution
    from hyte.compatibility.report import render_uncertainty_section

    rng = np.random.default_rng(0)

    def result(q, errors):
        entry = {"mean": float(q.mean()), "sd": float(q.std()), **calibration(q, errors, permutations=200,
                                                                                bootstrap=50)}
        return {"queries": len(q), "error_rate_at_1": float((errors > 1).mean()), "q_query": entry,
                "q_positive": entry, "documents": uncertainty_distribution(rng.uniform(0.5, 2.0, 50), 1.0)}

    errors = [rng.integers(1, 40, size=150).astype(float) for _ in range(3)]
    tracking = {f"s{i}": result(e + rng.normal(0, 2, 150), e) for i, e in enumerate(errors)}
    against = {f"s{i}": result(-e, e) for i, e in enumerate(errors)}  # strongly correlated, the wrong way round
    unrelated = {f"s{i}": result(rng.normal(size=150), e) for i, e in enumerate(errors)}
    assert calibration_verdict(tracking)["q_query"]["predicting_seeds"] == 3
    assert calibration_verdict(against)["q_positive"]["predicting_seeds"] == 0
    assert calibration_verdict(against)["q_positive"]["rho_mean"] < -0.9
    assert calibration_verdict(unrelated)["q_query"]["predicting_seeds"] <= 1  # p < 0.05 by chance at most once
    with pytest.raises(ValueError, match="no calibration results"):
        calibration_verdict({})
    payload = {"benchmark": "compatibility_uncertainty", "recipes": {"tracking": "a.yaml", "against": "b.yaml"},
               "runs": {"tracking": tracking, "against": against},
               "verdict": {"tracking": calibration_verdict(tracking), "against": calibration_verdict(against)}}
    text = "\n".join(render_uncertainty_section([(tmp_path / "gate.json", payload)]))
    assert "| tracking | `a.yaml` | 3 |" in text and "| 3/3 |" in text and "| 0/3 |" in text
    assert "| against s2 |" in text and "q at RINCE's floor" in text


@pytest.mark.slow  # a second base encoder, ~10 s
def test_new_hyte_h_on_another_base_and_hidden_size_is_projected_into_the_old_space(tmp_path, old_model,
                                                                                  bert_tokenizer):
    """Old: HyTE-FH with 33 ambient coordinates. New: HyTE-H on a 32-wide BERT; its projection maps into R^33."""
    from transformers import AutoModel, BertConfig, BertModel

    base = tmp_path / "tiny-bert"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(base)
    bert_tokenizer.save_pretrained(base)
    config = compatible_config(tmp_path / "run", old_model, max_steps=2)
    config.model.build, config.model.path, config.model.options = "hyte_h", str(base), {}
    new = AutoModel.from_pretrained(run(config))
    assert new.config.hidden_size == 33 and new.projection.in_features == 32


def test_eval_compatibility_command_writes_the_matrix(tmp_path, old_model, compatible_model, capsys):
    from hyte.cli import main

    output = tmp_path / "compat.json"
    assert main(["eval", "compatibility", "--old", old_model, "--new", compatible_model, "--data", "hpo",
                 "--queries", "8", "--documents", "40", "--hierarchy-queries", "8", "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    assert "new->old" in printed and "p_com" in printed
    payload = json.loads(output.read_text())
    assert payload["benchmark"] == "compatibility"
    assert set(payload["matrix"]["hpo"]) == {"old->old", "new->old", "new->new"}
    assert {"ndcg@10", "recall@1", "hierarchy_spechr"} <= set(payload["matrix"]["hpo"]["new->old"])
    assert payload["gains"]["hpo"]["ndcg@10"]["p_up"] == 0.0  # no reference: the new model's own new->new


def test_eval_compatibility_refuses_one_model_as_old_and_new_before_encoding(tmp_path, old_model, compatible_model,
                                                                            capsys, monkeypatch):
    """--old M --new M encoded for 167 s and printed a matrix whose rows were one model. Refused by path before
    any model loads, and by fingerprint (a copied folder) before anything is encoded."""
    import re
    import shutil

    from hyte import encoders
    from hyte.cli import main
    from hyte.compatibility import evaluation
    from hyte.lineage import model_fingerprint

    def never(*args, **kwargs):
        raise AssertionError("called although the models are one")

    fingerprint = model_fingerprint(encoders.load_encoder(old_model, kind="hyte").model)
    monkeypatch.setattr(evaluation, "heldout_sets", never)
    monkeypatch.setattr(evaluation, "evaluate_compatibility", never)
    base = ["eval", "compatibility", "--data", "hpo", "--queries", "8", "--documents", "40", "--hierarchy-queries", "8"]
    with monkeypatch.context() as nothing_loads:
        nothing_loads.setattr(encoders, "load_encoder", never)
        for arguments, problem in [
            (["--old", old_model, "--new", old_model + "/"], "--old and --new are the same model .* are one folder"),
            (["--old", old_model, "--new", compatible_model, "--reference", compatible_model],
             "--new and --reference are the same model .* are one folder.*leave out --reference"),
        ]:
            assert main(base + arguments) == 2
            assert re.search(problem, capsys.readouterr().err), arguments
    copy = shutil.copytree(old_model, tmp_path / "copy")
    assert main(base + ["--old", old_model, "--new", str(copy)]) == 2
    assert re.search(rf"--old and --new are the same model .* hold the same weights, fingerprint {fingerprint}\): a "
                     r"compatibility matrix compares two models \(old->old, new->old, new->new would score one model "
                     r"three times\)", capsys.readouterr().err)


def test_condition_intervals_are_the_matrix_differences_with_a_bootstrap_interval_and_the_report_shows_them(
        old_model, compatible_model):
    from hyte.compatibility.evaluation import MemoEncoder, compatibility_matrix, condition_intervals, heldout_sets
    from hyte.compatibility.report import _condition_lines
    from hyte.encoders import load_encoder

    sets = heldout_sets(("hpo",), queries=12, documents=40, hierarchy_queries=4)
    old, new = MemoEncoder(load_encoder(old_model)), MemoEncoder(load_encoder(compatible_model))
    matrix = compatibility_matrix(old, new, sets)["hpo"]
    intervals = condition_intervals(old, new, sets)["hpo"]
    for pair in ("new->old", "new->new"):
        entry = intervals[pair]
        assert entry["mean"] == pytest.approx(matrix[pair]["ndcg@10"] - matrix["old->old"]["ndcg@10"])
        assert entry["low"] <= entry["mean"] <= entry["high"]
    same = condition_intervals(old, old, sets)["hpo"]["new->old"]  # the old model against itself: exactly level
    assert same == {"mean": 0.0, "low": 0.0, "high": 0.0}

    seeds = {"2": {"conditions": {"hpo": {"new->old": {"mean": -0.5, "low": -0.6, "high": -0.4},
                                          "new->new": {"mean": 0.01, "low": -0.02, "high": 0.04}}}},
             "1": {"conditions": {"hpo": {"new->old": {"mean": 0.1, "low": 0.05, "high": 0.15},
                                          "new->new": same}}}}
    lines = _condition_lines("hbct", seeds, "hpo")
    assert lines[0].startswith("  - hbct, seed 1: new->old - old->old +0.1000 [+0.0500, +0.1500] holds")
    assert "seed 2: new->old - old->old -0.5000 [-0.6000, -0.4000] fails; new->new - old->old +0.0100 " \
           "[-0.0200, +0.0400] tie" in lines[1]
    assert _condition_lines("hbct", {"1": {"matrix": {}}}, "hpo") == []  # scored before the intervals existed


def test_a_model_fingerprint_is_hashed_once_per_state_of_its_weights(monkeypatch):
    """A searcher checks its model on every search: the SHA-256 over every weight runs once while the weights stay
    as they are, and again after any in-place change (an optimizer step, load_state_dict) or settings change."""
    import hyte
    from hyte import lineage

    config = hyte.HyTEFHConfig(vocab_size=40, hidden_size=18, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=16)
    model = hyte.HyTEFHModel(config)
    hashed = []
    real = lineage._weights_digest
    monkeypatch.setattr(lineage, "_weights_digest", lambda m: hashed.append(1) or real(m))
    first = lineage.model_fingerprint(model)
    assert lineage.model_fingerprint(model) == first and len(hashed) == 1
    with torch.no_grad():
        model.embeddings.weight[0, 0] += 1.0  # in place, as an optimizer step
    changed = lineage.model_fingerprint(model)
    assert changed != first and len(hashed) == 2
    model.load_state_dict(hyte.HyTEFHModel(config).state_dict())
    assert lineage.model_fingerprint(model) != changed and len(hashed) == 3
    model.config.curvature = 2.0
    assert len({lineage.model_fingerprint(model), changed, first}) == 3 and len(hashed) == 4
