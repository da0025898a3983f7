"""The three training stages on real HPO data with tiny models, resume, config errors, LoRA via peft."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import TrainerCallback

from conftest import run_without_hyte
from hyte.artifacts import OutputNotAFolder, OutputRefused
from hyte.runner import run
from hyte.training import ConfigError, load_config, parse_config

TINY_FH = {"hidden_size": 33, "num_hidden_layers": 1, "num_attention_heads": 3, "intermediate_size": 65,
           "max_position_embeddings": 128}


def config_dict(stage: str, output_dir, model: dict, **sections) -> dict:
    values = {
        "stage": stage, "model": model,
        "data": {"source": "hpo", "max_examples": 64, "min_depth": 3},
        "training": {"output_dir": str(output_dir), "max_steps": 24, "per_device_train_batch_size": 16,
                     "learning_rate": 3e-3, "warmup_steps": 2, "logging_steps": 1, "save_steps": 12, "seed": 0},
        "loss": {"temperature": 0.1, "max_query_length": 24, "max_document_length": 48},
        "evaluation": {"enabled": False},
    }
    for name, fields in sections.items():
        values.setdefault(name, {}).update(fields)
    return values


def logged_losses(output_dir) -> dict[int, float]:
    state = json.loads((output_dir / "checkpoint-24" / "trainer_state.json").read_text())
    return {entry["step"]: entry["loss"] for entry in state["log_history"] if "loss" in entry}


def first_and_last(losses: dict[int, float], n: int = 4) -> tuple[float, float]:
    steps = sorted(losses)
    return sum(losses[s] for s in steps[:n]) / n, sum(losses[s] for s in steps[-n:]) / n


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parent.parent / "configs").glob("*.yaml")))
def test_every_shipped_config_parses(name):
    from hyte.training.config import STAGES

    # Raises ConfigError on a bad field; the compatible stage's old model comes from --old, as the README runs it.
    overrides = {"compatible.old_model": "runs/compat/old/final"} if name.startswith("compat_new") else None
    config = load_config(Path(__file__).parent.parent / "configs" / name, overrides)
    assert config.stage in STAGES and config.training.output_dir.startswith("runs/")


@pytest.mark.parametrize("name", ["finetune_hyte_h_hierarchy.yaml", "phrase_hyte_h.yaml", "mlm_hyte_fh.yaml"])
def test_print_config_writes_a_file_that_loads_back_to_the_same_run_with_every_field_explained(name, tmp_path,
                                                                                               capsys):
    import dataclasses

    from hyte.cli import main
    from hyte.training.config import SECTIONS

    source = Path(__file__).parent.parent / "configs" / name
    assert main(["train", load_config(source).stage, "--config", str(source), "--print-config",
                 "--set", "training.max_steps=7", "--set", "training.warmup_steps=1"]) == 0
    printed = capsys.readouterr().out
    (tmp_path / "printed.yaml").write_text(printed)
    expected = load_config(source, {"training.max_steps": 7, "training.warmup_steps": 1})
    assert load_config(tmp_path / "printed.yaml") == expected
    lines = printed.splitlines()
    for section, spec in SECTIONS.items():  # every field is printed under its comment
        for item in dataclasses.fields(spec):
            row = lines.index(f"{section}:") + 1
            while not lines[row].startswith(f"  {item.name}:"):
                row += 1
            assert lines[row - 1].startswith("  # "), (section, item.name)


def test_print_config_without_a_file_is_a_template_of_the_defaults(capsys):
    from hyte.cli import main
    from hyte.training.config import RunConfig

    assert main(["train", "finetune", "--print-config"]) == 0
    template = capsys.readouterr().out
    import yaml

    assert parse_config(yaml.safe_load(template)) == RunConfig(stage="finetune")
    assert main(["train", "finetune", "--print-config", "--set", "training.max_steps=3"]) == 2
    assert "--print-config without --config prints the defaults" in capsys.readouterr().err
    assert main(["train", "finetune"]) == 2
    assert "needs --config FILE" in capsys.readouterr().err


def test_trainer_draws_no_progress_bar_into_a_log(tmp_path):
    from hyte.training.loop import training_arguments

    # Under pytest stderr is captured, as in a log file: tqdm would write a line per step there.
    config = parse_config(config_dict("finetune", tmp_path, {"build": "load", "path": "unused"}))
    assert training_arguments(config).disable_tqdm is True


@pytest.mark.slow
def test_mlm_stage_lowers_the_loss(tmp_path):
    config = parse_config(config_dict("mlm", tmp_path, {"build": "hyte_fh", "options": {**TINY_FH, "sparse_prediction": True}},
                                      data={"max_examples": 400}, mlm={"max_length": 32}))
    final = run(config)
    first, last = first_and_last(logged_losses(tmp_path))
    assert last < first - 0.5, (first, last)
    assert (final / "model.safetensors").is_file() and (final / "hyte_card.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["contrastive", "finetune"])
def test_contrastive_stages_lower_the_loss(tmp_path, stage):
    config = parse_config(config_dict(stage, tmp_path, {"build": "hyte_fh", "options": TINY_FH},
                                      mining={"num_negatives": 1, "candidates": 10}))
    run(config)
    first, last = first_and_last(logged_losses(tmp_path))
    assert last < first * 0.8, (first, last)
    if stage == "finetune":
        mined = [json.loads(line) for line in (tmp_path / "mined_negatives.jsonl").open()]
        assert sum(bool(e["negatives"]) for e in mined) > 0
        assert all(n != e["document"] for e in mined for n in e["negatives"])


@pytest.mark.slow
def test_euclidean_twin_trains_through_the_same_script(tmp_path, tiny_bert):
    config = parse_config(config_dict("contrastive", tmp_path, {"build": "load", "path": tiny_bert}))
    run(config)
    first, last = first_and_last(logged_losses(tmp_path))
    assert last < first * 0.8, (first, last)


def test_head_and_logit_scale_learning_rates_get_their_own_groups(tmp_path, tiny_bert):
    from transformers import TrainingArguments

    from hyte import HyTEHModel
    from hyte.training.trainer import ContrastiveTrainer, head_parameters

    model = HyTEHModel.from_base(tiny_bert, hidden_size=17)
    trainer = ContrastiveTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to="none",
                                                                     learning_rate=1e-5, weight_decay=0.1),
                                 train_dataset=[{}], hyperbolic=True, head_learning_rate=1e-3,
                                 logit_scale_learning_rate=0.02)
    optimizer = trainer.create_optimizer()
    head = {id(p) for p in head_parameters(model)}
    assert len(head) == 3  # projection weight, bias, scale
    kinds = {**{key: "encoder" for key in map(id, model.parameters())}, **{key: "head" for key in head},
             id(model.log_logit_scale): "logit_scale"}
    expected_lr = {"encoder": 1e-5, "head": 1e-3, "logit_scale": 0.02}
    for group in optimizer.param_groups:
        kind = {kinds[id(p)] for p in group["params"]}
        assert len(kind) == 1 and group["lr"] == expected_lr[kind.pop()]
    scale_group = next(g for g in optimizer.param_groups if any(p is model.log_logit_scale for p in g["params"]))
    assert scale_group["weight_decay"] == 0.0 and len(scale_group["params"]) == 1
    assert sum(len(g["params"]) for g in optimizer.param_groups) == sum(1 for p in model.parameters() if p.requires_grad)


def test_the_specificity_head_can_train_at_its_own_rate(tmp_path, tiny_bert):
    """Issue 24: the radius head's rate x steps bounds how far the radius can spread, so it gets a rate of its own
    (training.radius_head_learning_rate) while the projection keeps head_learning_rate; at its default the run
    identity is what it was before the field existed (earlier finished runs stay finished)."""
    from transformers import TrainingArguments

    from hyte import HyTEHModel
    from hyte.training import load_config
    from hyte.training.run_folder import _identity
    from hyte.training.trainer import ContrastiveTrainer

    model = HyTEHModel.from_base(tiny_bert, hidden_size=17, radius_head=1.0)
    trainer = ContrastiveTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to="none",
                                                                     learning_rate=1e-5),
                                 train_dataset=[{}], hyperbolic=True, head_learning_rate=1e-3,
                                 radius_head_learning_rate=3e-2)
    rates = {id(p): group["lr"] for group in trainer.create_optimizer().param_groups for p in group["params"]}
    assert {rates[id(p)] for p in model.radius_head.parameters()} == {3e-2}
    assert rates[id(model.projection.weight)] == 1e-3 and rates[id(model.scale)] == 1e-3
    assert {rates[id(p)] for p in model.encoder.parameters()} == {1e-5}
    config = load_config(Path(__file__).parent.parent / "configs" / "finetune_hyte_h_hierarchy.yaml")
    assert "radius_head_learning_rate" not in _identity(config)["training"]
    changed = load_config(Path(__file__).parent.parent / "configs" / "finetune_hyte_h_hierarchy.yaml",
                          {"training.radius_head_learning_rate": 1e-2})
    assert _identity(changed)["training"]["radius_head_learning_rate"] == 1e-2


class PlaneEncoder:
    """A stand-in hyperbolic encoder: each text maps to expmap0 of a fixed 2-D tangent vector."""

    kind, curvature = "hyperbolic", 1.0

    def __init__(self, tangents: dict[str, tuple[float, float]]):
        self.tangents = tangents

    def encode(self, texts, role="document", **kwargs):
        from hyte import lorentz

        points = lorentz.expmap0(torch.tensor([self.tangents[t] for t in texts], dtype=torch.float64)).float()
        return (lorentz.flip_time(points) if role == "query" else points).numpy()


def test_miner_skips_the_positive_and_probable_false_negatives():
    from hyte.training.mining import mine_hard_negatives

    encoder = PlaneEncoder({"q": (0.0, 0.0), "pos": (0.5, 0.0), "twin": (0.0, 0.45), "near": (0.9, 0.0),
                            "far": (3.0, 0.0)})
    examples = [{"query": "q", "document": "pos"}, {"query": "far", "document": "far"},
                {"query": "near", "document": "near"}, {"query": "twin", "document": "twin"}]
    mined = mine_hard_negatives(encoder, examples, num_negatives=2, candidates=5, margin=0.95)
    # "twin" is closer to q than the positive: a probable false negative, skipped; "near" is the hardest true one.
    assert mined[0]["negatives"] == ["near", "far"]
    relaxed = mine_hard_negatives(encoder, examples, num_negatives=1, candidates=5, margin=2.0)
    assert relaxed[0]["negatives"] == ["twin"]


class StopAfter(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt("simulated kill")


@pytest.mark.slow
def test_killed_run_resumes_with_the_same_losses(tmp_path):
    def config(output_dir):
        return parse_config(config_dict("finetune", output_dir, {"build": "hyte_fh", "options": TINY_FH},
                                        mining={"num_negatives": 1, "candidates": 10}))

    run(config(tmp_path / "straight"))
    with pytest.raises(KeyboardInterrupt):
        run(config(tmp_path / "killed"), callbacks=[StopAfter(17)])
    assert (tmp_path / "killed" / "checkpoint-12").is_dir() and not (tmp_path / "killed" / "final").exists()
    # A checkpoint is a sentence-transformers folder too (never mean-pooled by SentenceTransformer(checkpoint)).
    assert (tmp_path / "killed" / "checkpoint-12" / "modules.json").is_file()
    run(config(tmp_path / "killed"), resume=True)
    straight, resumed = logged_losses(tmp_path / "straight"), logged_losses(tmp_path / "killed")
    for step in range(13, 25):
        assert resumed[step] == pytest.approx(straight[step], rel=1e-4, abs=1e-5), step


def test_bad_configs_fail_before_training(tmp_path):
    base = config_dict("contrastive", tmp_path / "out", {"build": "hyte_fh", "options": TINY_FH})
    with pytest.raises(ConfigError, match="unknown field"):
        parse_config({**base, "training": {**base["training"], "learning_rat": 1e-3}})
    with pytest.raises(ConfigError, match="unknown section"):
        parse_config({**base, "optimiser": {}})
    with pytest.raises(ConfigError, match="does not exist"):
        parse_config({**base, "data": {"source": "jsonl", "path": str(tmp_path / "missing.jsonl")}})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="holds no examples"):
        run(parse_config({**base, "data": {"source": "jsonl", "path": str(empty)}}))
    malformed = tmp_path / "bad.jsonl"
    malformed.write_text('{"query": "q", "document": "d"}\n{"query": "q"}\n')
    with pytest.raises(ValueError, match="bad.jsonl, line 2"):
        run(parse_config({**base, "data": {"source": "jsonl", "path": str(malformed)}}))
    assert not (tmp_path / "out").exists()  # nothing started
    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text("stage: contrastive\nmodel: {build: hyte_fh, options: {hidden_size: 33}}\n")
    assert load_config(yaml_file, {"training.max_steps": 5}).training.max_steps == 5


@pytest.mark.slow
def test_lora_adapter_trains_saves_reloads_and_merges(tmp_path, tiny_bert, bert_tokenizer):
    from peft import PeftModel

    from hyte import HyTEHModel

    config = parse_config(config_dict("contrastive", tmp_path, {"build": "hyte_h", "path": tiny_bert,
                                                                "options": {"hidden_size": 17}},
                                      lora={"r": 4, "alpha": 8, "target_modules": ["query", "value", "projection"]}))
    final = run(config)
    first, last = first_and_last(logged_losses(tmp_path))
    assert last < first, (first, last)
    adapter_files = {p.name for p in (tmp_path / "adapter").iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= adapter_files
    assert "model.safetensors" not in adapter_files
    assert (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size < 200_000  # adapter only
    batch = bert_tokenizer(["Abnormal heart rhythm.", "Short fingers."], padding=True, return_tensors="pt")
    with torch.no_grad():
        adapted = PeftModel.from_pretrained(HyTEHModel.from_pretrained(tmp_path / "base"), tmp_path / "adapter").eval()
        expected = adapted(**{k: batch[k] for k in ("input_ids", "attention_mask")}).pooler_output
        merged = HyTEHModel.from_pretrained(final).eval()
        torch.testing.assert_close(merged(batch["input_ids"], batch["attention_mask"]).pooler_output, expected,
                                   rtol=1e-4, atol=1e-5)
        untouched = HyTEHModel.from_pretrained(tmp_path / "base").eval()
        assert not torch.allclose(untouched(batch["input_ids"], batch["attention_mask"]).pooler_output, expected)
    torch.save({"batch": dict(batch), "expected": expected}, tmp_path / "expected.pt")
    run_without_hyte(
        f"""
        import torch
        from transformers import AutoModel
        data = torch.load("expected.pt")
        model = AutoModel.from_pretrained({str(final)!r}, trust_remote_code=True).eval()
        with torch.no_grad():
            out = model(data["batch"]["input_ids"], data["batch"]["attention_mask"]).pooler_output
        torch.testing.assert_close(out, data["expected"], rtol=1e-4, atol=1e-5)
        """,
        cwd=tmp_path,
    )


@pytest.mark.slow
def test_final_folder_loads_in_sentence_transformers_as_model_encode(tmp_path, tiny_bert):
    """SentenceTransformer(final) must give the model's own pooled points (specificity head included), never the
    mean Pooling it builds for a folder without modules.json."""
    import numpy as np
    from transformers import AutoTokenizer

    from hyte import HyTEHModel

    final = run(hierarchy_run(tmp_path, {"build": "hyte_h", "path": tiny_bert,
                                         "options": {"hidden_size": 17, "radius_head": 2.0}}))
    assert (final / "modules.json").is_file() and (final / "hyte_card.json").is_file()
    texts = ["Abnormal heart rhythm.", "Abnormally short fingers."]
    model = HyTEHModel.from_pretrained(final).eval()
    tokenizer = AutoTokenizer.from_pretrained(final)
    np.savez(tmp_path / "expected.npz", document=model.encode(texts, tokenizer, role="document"),
             query=model.encode(texts, tokenizer, role="query"))
    run_without_hyte(
        f"""
        import numpy as np
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer({str(final)!r}, trust_remote_code=True, device="cpu")
        expected = np.load("expected.npz")
        np.testing.assert_allclose(st.encode_document({texts!r}), expected["document"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(st.encode_query({texts!r}), expected["query"], rtol=1e-5, atol=1e-6)
        """,
        cwd=tmp_path,
    )


# ----------------------------------------------------------------------------------------------------------------
# Learnable temperature, hierarchy term, hierarchy-aware data (issue 10)
# ----------------------------------------------------------------------------------------------------------------


def hierarchy_run(tmp_path, model: dict, **loss):
    return parse_config(config_dict(
        "contrastive", tmp_path, model,
        data={"source": "hpo+icd10", "max_examples": 64, "min_depth": 2, "hierarchy": True},
        training={"max_steps": 8, "save_steps": 8, "logging_steps": 2},
        loss={"temperature": 0.5, "max_logit_scale": 4.0, "logit_scale_learning_rate": 0.5, "hierarchy_weight": 0.1,
              **loss}))


@pytest.mark.slow
def test_learned_logit_scale_stays_in_bounds_and_is_saved_with_the_model(tmp_path, tiny_bert):
    from transformers import AutoModel

    final = run(hierarchy_run(tmp_path, {"build": "hyte_h", "path": tiny_bert,
                                         "options": {"hidden_size": 17, "curvature": 100.0}}))
    history = json.loads((tmp_path / "checkpoint-8" / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    assert logged and all(1.0 <= entry["logit_scale"] <= 4.0 for entry in logged)
    # The logged radius is the distance to the origin, within the token clip (norm_clip 5), not the time
    # coordinate, which is at least sqrt(c) = 10.
    assert all(0.0 < entry["mean_radius"] <= 5.0 for entry in logged)
    assert all(entry["nonfinite_values"] == 0 and entry["hierarchy_loss"] >= 0 for entry in logged)
    # A learning rate of 0.5 on log(scale) drives it into the clamp: the learned value moved, the bound held.
    model = AutoModel.from_pretrained(final, trust_remote_code=True)
    card = json.loads((final / "hyte_card.json").read_text())["training"]
    assert model.config.max_logit_scale == 4.0
    assert float(model.logit_scale.detach()) == pytest.approx(card["final_logit_scale"])
    assert 1.0 <= card["final_logit_scale"] <= 4.0
    assert card["final_logit_scale"] != pytest.approx(logged[0]["logit_scale"], rel=1e-3)


@pytest.mark.slow
def test_plain_encoder_trains_a_logit_scale_and_is_saved_without_it(tmp_path, tiny_bert):
    from safetensors import safe_open

    final = run(hierarchy_run(tmp_path, {"build": "load", "path": tiny_bert}, learn_temperature=False))
    with safe_open(str(final / "model.safetensors"), "pt") as weights:
        assert not any("logit_scale" in key for key in weights.keys())
    card = json.loads((final / "hyte_card.json").read_text())["training"]
    assert card["final_logit_scale"] == pytest.approx(2.0)  # learn_temperature False: stays at 1 / 0.5


def test_collator_marks_parents_and_copies_of_the_positive():
    from hyte.training.trainer import ContrastiveCollator

    class Tokenizer:
        def __call__(self, texts, **kwargs):
            return {"input_ids": torch.zeros(len(texts), 2, dtype=torch.long),
                    "attention_mask": torch.ones(len(texts), 2, dtype=torch.long)}

    examples = [{"query": "q0", "document": "child", "negatives": ["n0"], "parent": "general"},
                {"query": "q1", "document": "general", "negatives": ["child"], "parent": None}]
    batch = ContrastiveCollator(Tokenizer())(examples)
    # documents: child, general, n0, child (negative of 1), general (parent of 0)
    assert batch["document_input_ids"].shape[0] == 5
    assert batch["parent_rows"].tolist() == [4, -1]
    assert batch["exclude_mask"].tolist() == [[False, False, False, True, False],
                                                [False, False, False, False, True]]


def _toy_hierarchy():
    """root > general > {child, sibling} > grandchild (under child); "elsewhere" under root."""
    from hyte.training.data import Hierarchy

    parents = {"general": {"root"}, "child": {"general"}, "sibling": {"general"}, "grandchild": {"child"},
               "elsewhere": {"root"}, "root": set()}

    def ancestors(node):
        found = set()
        for parent in parents[node]:
            found |= {parent} | ancestors(parent)
        return found

    return Hierarchy({f"text of {n}": frozenset({n}) for n in parents}, {n: frozenset(p) for n, p in parents.items()},
                     {n: frozenset(ancestors(n)) for n in parents})


def test_hierarchy_relations_are_read_both_ways():
    hierarchy = _toy_hierarchy()
    relation = lambda a, b: hierarchy.relation(f"text of {a}", f"text of {b}")  # noqa: E731
    assert relation("child", "general") == "ancestor" and relation("general", "child") == "descendant"
    assert relation("grandchild", "general") == "ancestor" and relation("root", "grandchild") == "descendant"
    assert relation("child", "sibling") == "sibling" and relation("child", "elsewhere") == "other"
    assert relation("child", "child") == "same" and hierarchy.relation("text of child", "unseen text") == "unknown"


def test_collator_keeps_a_querys_ancestors_and_descendants_out_of_its_negatives():
    """A parent in the batch is not its own child's negative (nor a grandchild its grandparent's), while siblings
    and unrelated concepts stay negatives, and the parent stays a negative for unrelated queries."""
    from hyte.training.losses import contrastive_loss
    from hyte.training.trainer import ContrastiveCollator

    class Tokenizer:
        def __call__(self, texts, **kwargs):
            return {"input_ids": torch.zeros(len(texts), 2, dtype=torch.long),
                    "attention_mask": torch.ones(len(texts), 2, dtype=torch.long)}

    examples = [{"query": "q0", "document": "text of child", "negatives": ["text of sibling"],
                 "parent": "text of general"},
                {"query": "q1", "document": "text of elsewhere", "negatives": ["text of grandchild"], "parent": None},
                {"query": "q2", "document": "text of general", "negatives": [], "parent": None}]
    batch = ContrastiveCollator(Tokenizer(), hierarchy=_toy_hierarchy())(examples)
    # documents: child, elsewhere, general (positives), sibling, grandchild (negatives), general (parent of 0)
    assert batch["exclude_mask"].tolist() == [
        [False, False, True, False, True, True],   # q0 (child): general is its ancestor, grandchild its descendant
        [False, False, False, False, False, False],  # q1 (elsewhere): everything is a negative
        [True, False, False, True, True, True],  # q2 (general): child, sibling, grandchild below it; its copy
    ]
    assert ContrastiveCollator(Tokenizer())(examples)["exclude_mask"][0].tolist() == [False] * 5 + [False]
    # The loss of query 0 does not move when its ancestor's score changes: it is not in its softmax.
    generator = torch.Generator().manual_seed(0)
    queries, documents = torch.randn(3, 8, generator=generator), torch.randn(6, 8, generator=generator)
    documents.requires_grad_(True)
    loss = contrastive_loss(queries[:1], documents, logit_scale=5.0, hyperbolic=False,
                            exclude=batch["exclude_mask"][:1])
    loss.backward()
    assert documents.grad[[2, 4, 5]].abs().sum() == 0 and documents.grad[3].abs().sum() > 0


def test_miner_skips_ancestors_and_descendants_of_the_positive():
    from hyte.training.mining import mine_hard_negatives

    hierarchy = _toy_hierarchy()
    texts = ["text of child", "text of general", "text of grandchild", "text of sibling", "text of elsewhere"]

    class Encoder:
        """Every query nearest to general, then grandchild, sibling, elsewhere, child (a fixed ranking)."""

        kind = "euclidean"

        def encode(self, batch, role="document", **kwargs):
            order = {"text of general": 5.0, "text of grandchild": 4.0, "text of sibling": 3.0,
                     "text of elsewhere": 2.0, "text of child": 1.0}
            if role == "query":
                return np.tile(np.array([[1.0, 0.0]]), (len(batch), 1))
            return np.array([[order[t], 0.0] for t in batch]) / 10.0

        def scores(self, queries, documents):
            return queries @ documents.T

    examples = [{"query": "q", "document": t} for t in texts]
    plain = mine_hard_negatives(Encoder(), examples, num_negatives=1, margin=100.0)
    masked = mine_hard_negatives(Encoder(), examples, num_negatives=1, margin=100.0, hierarchy=hierarchy)
    assert plain[0]["negatives"] == ["text of general"]  # without the hierarchy: the parent
    assert masked[0]["negatives"] == ["text of sibling"]  # with it: the nearest concept that is not a relative
    assert masked[1]["negatives"] == ["text of elsewhere"]  # general: its child, grandchild and sibling are below it


def test_eucbert_mines_with_its_own_pooling_and_cosine(tmp_path):
    """The miner of an EucBERT run is the model's own pooled vector (CLS here) compared by cosine, the similarity it
    trains with: not a mean over its token states, and not a dot product of vectors whose norms vary."""
    from hyte.encoders import HyteEncoder
    from hyte.training.mining import _miner, mine_hard_negatives
    from hyte.training.models import build_model

    config = parse_config(config_dict("finetune", tmp_path, {"build": "eucbert", "options": {**TINY_FH,
                                                                                          "pooling": "cls"}}))
    torch.manual_seed(0)
    built = build_model(config.model)
    miner = _miner(built, config)
    assert isinstance(miner, HyteEncoder) and miner.kind == "euclidean" and miner.curvature == 0.0
    texts = ["abnormal heart rate", "short stature of the femur", "seizure in infancy", "renal cyst",
             "ocular albinism", "delayed speech"]
    batch = built.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        pooled = built.model(**batch).pooler_output.double().numpy()  # (6, 33): each text's CLS vector
    assert np.allclose(miner.encode(texts), pooled, atol=1e-5)
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    cosines = unit @ unit.T
    examples = [{"query": t, "document": t} for t in texts]
    mined = mine_hard_negatives(miner, examples, num_negatives=2, candidates=6, margin=100.0)
    for row, example in enumerate(mined):
        order = [texts[i] for i in np.argsort(-cosines[row], kind="stable") if i != row]
        assert example["negatives"] == order[:2]


@pytest.mark.parametrize("hyperbolic", [True, False])
@pytest.mark.parametrize("term", ["cone", "radius"])
def test_hierarchy_terms_push_the_child_outward_and_the_parent_inward(hyperbolic, term):
    """On a pair whose child sits nearer the origin than its parent, one gradient step of the hierarchy term moves
    the child away from the origin and the parent towards it."""
    from hyte import lorentz
    from hyte.training.losses import hierarchy_loss

    generator = torch.Generator().manual_seed(3)
    direction = torch.nn.functional.normalize(torch.randn(2, 6, generator=generator), dim=-1)
    direction[1] = torch.nn.functional.normalize(direction[0] + 0.3 * direction[1], dim=-1)  # a nearby direction
    space = torch.stack([1.2 * direction[0], 0.6 * direction[1]])  # parent farther out than child
    space.requires_grad_(True)

    def radius(x):
        return lorentz.distance_to_origin(x, 1.0) if hyperbolic else x.norm(dim=-1)

    points = lorentz.add_time(space, 1.0) if hyperbolic else space
    before = radius(points).detach()
    hierarchy_loss(points[:1], points[1:], hyperbolic=hyperbolic, term=term, radius_margin=0.1).backward()
    with torch.no_grad():
        moved = space - 0.05 * space.grad
        after = radius(lorentz.add_time(moved, 1.0) if hyperbolic else moved)
    assert after[1] > before[1] and after[0] < before[0], (before, after)


def test_excluded_candidates_leave_the_softmax():
    from hyte.training.losses import contrastive_loss

    generator = torch.Generator().manual_seed(0)
    queries, documents = torch.randn(3, 8, generator=generator), torch.randn(5, 8, generator=generator)
    exclude = torch.zeros(3, 5, dtype=torch.bool)
    exclude[0, 4] = True
    scale = torch.tensor(7.0, requires_grad=True)
    masked = contrastive_loss(queries, documents, logit_scale=scale, hyperbolic=False, exclude=exclude)
    masked.backward()
    assert torch.isfinite(scale.grad)
    logits = 7.0 * torch.nn.functional.normalize(queries, dim=-1) @ torch.nn.functional.normalize(documents, dim=-1).T
    by_hand = torch.stack([torch.nn.functional.cross_entropy(logits[0, :4][None], torch.tensor([0])),
                           torch.nn.functional.cross_entropy(logits[1][None], torch.tensor([1])),
                           torch.nn.functional.cross_entropy(logits[2][None], torch.tensor([2]))]).mean()
    assert float(masked.detach()) == pytest.approx(float(by_hand), rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_hierarchy_term_gradients_are_finite_far_from_the_origin(dtype, c):
    from hyte import lorentz
    from hyte.training.losses import hierarchy_loss

    generator = torch.Generator().manual_seed(int(10 * c))
    for radius in (0.0, 1.0, 8.0, 15.0):
        tangent = torch.randn(2, 16, 12, generator=generator, dtype=torch.float64)
        tangent = tangent / tangent.norm(dim=-1, keepdim=True) * radius * torch.rand(2, 16, 1, generator=generator,
                                                                                      dtype=torch.float64)
        general, specific = (lorentz.expmap0(t, c).to(dtype).requires_grad_(True) for t in tangent)
        loss = hierarchy_loss(general, specific, hyperbolic=True, curvature=c)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(general.grad).all() and torch.isfinite(specific.grad).all()
    big = (1e4 * torch.randn(2, 16, 12, generator=generator, dtype=torch.float64)).to(dtype).requires_grad_(True)
    order = hierarchy_loss(big[0], big[1], hyperbolic=False)
    order.backward()
    assert torch.isfinite(order) and torch.isfinite(big.grad).all()


def test_hierarchy_examples_never_show_held_out_text():
    from hyte.data import icd10
    from hyte.data.hpo import load_hpo, split_by_branches
    from hyte.training.config import DataSpec
    from hyte.training.data import hpo_pairs, icd10_pairs

    spec = DataSpec(source="hpo+icd10", hierarchy=True, min_depth=2)
    ontology = load_hpo()
    train_ids, test_ids = split_by_branches(ontology)
    held_out_only = ({ontology.terms[t].definition for t in test_ids}
                     - {ontology.terms[t].definition for t in train_ids})
    examples = hpo_pairs(spec)
    shown = {e["parent"] for e in examples} | {n for e in examples for n in e["negatives"]} | {
        e["document"] for e in examples}
    assert sum(e["parent"] is not None for e in examples) > 0.8 * len(examples)
    assert not shown & held_out_only
    train_chapters, _ = icd10.split_chapters()
    train_titles = {icd10.title(code) for code in icd10.all_codes() if icd10.chapter_of(code) in train_chapters}
    icd_examples = icd10_pairs(spec)
    assert all(e["parent"] in train_titles | {None} and set(e["negatives"]) <= train_titles for e in icd_examples)
    # A parent or sibling with the document's own text is no distinct concept: never attached.
    for example in [*examples, *icd_examples]:
        assert example["parent"] != example["document"] and example["document"] not in example["negatives"]


@pytest.mark.parametrize("name, recipe", [("finetune_hyte_h_hierarchy.yaml", "QUICKSTART_RECIPE"),
                                          ("finetune_euclidean_hierarchy.yaml", "EUCLIDEAN_RECIPE")])
def test_recipe_config_file_equals_the_recorded_recipe(name, recipe):
    from pathlib import Path

    from hyte import quickstart
    from hyte.training.recipes import hierarchy_finetune

    path = Path(__file__).parent.parent / "configs" / name
    from_file = load_config(path).to_dict()
    variant, loss = getattr(quickstart, recipe)
    recipe = hierarchy_finetune(variant, from_file["training"]["output_dir"], loss=loss).to_dict()
    assert from_file == recipe


def test_recipe_model_options_change_only_the_hyte_h_model():
    """The curvature ablation's arms: a HyTE-H recipe with another curvature differs from the shipped one in that
    field alone; the Euclidean control has no such option and refuses it."""
    from hyte import quickstart
    from hyte.training.recipes import hierarchy_finetune

    variant, loss = quickstart.QUICKSTART_RECIPE
    shipped = hierarchy_finetune(variant, "out", loss=loss).to_dict()
    flat = hierarchy_finetune(variant, "out", loss=loss, model={"curvature": 100.0}).to_dict()
    assert flat["model"]["options"].pop("curvature") == 100.0 and flat == shipped
    with pytest.raises(ValueError, match="Euclidean control"):
        hierarchy_finetune(quickstart.EUCLIDEAN_RECIPE[0], "out", model={"curvature": 100.0})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_order_violation_is_zero_exactly_when_the_specific_side_dominates(seed, dtype):
    from hyte.training.losses import order_violation

    generator = torch.Generator().manual_seed(seed)
    general = torch.randn(32, 16, generator=generator, dtype=torch.float64)
    extra = torch.rand(32, 16, generator=generator, dtype=torch.float64)
    dominating = (general.abs() + extra) * torch.sign(torch.randn(32, 16, generator=generator, dtype=torch.float64))
    assert (order_violation(general.to(dtype), dominating.to(dtype)) == 0).all()  # |specific| >= |general|
    # Swapped, every coordinate violates: the penalty is the squared gap, summed.
    swapped = order_violation(dominating.to(dtype), general.to(dtype))
    torch.testing.assert_close(swapped, extra.pow(2).sum(-1).to(dtype), rtol=1e-4, atol=1e-4)
    assert (swapped > 0).all()


def test_a_run_is_never_overwritten_or_resumed_by_another(tmp_path, capsys):
    """`hyte train` into a folder holding a run: refused without --resume / --overwrite (the finished model stays
    byte for byte), --resume needs a checkpoint and the same run, --overwrite replaces it and says so; each refusal
    comes before any model is built."""
    from hyte.cli import main
    from hyte.training.run_folder import RUN_FILE

    values = config_dict("contrastive", tmp_path / "out", {"build": "hyte_fh", "options": TINY_FH},
                         training={"max_steps": 4, "save_steps": 2, "save_total_limit": 2})
    config_file = tmp_path / "run.json"
    config_file.write_text(json.dumps(values))
    argv = ["train", "contrastive", "--config", str(config_file)]

    assert main(argv + ["--resume"]) == 2  # nothing to resume yet
    assert "holds no checkpoint" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main(argv) == 0
    final = tmp_path / "out" / "final" / "model.safetensors"
    weights = final.read_bytes()
    assert json.loads((tmp_path / "out" / RUN_FILE).read_text())["loss"]["temperature"] == 0.1

    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "already holds a run" in error and "--overwrite" in error and final.read_bytes() == weights
    # --resume on the finished run: nothing left to train, nothing rewritten (not even the tokenizer files).
    before = {path: path.stat().st_mtime_ns for path in final.parent.iterdir()}
    assert main(argv + ["--resume"]) == 0
    assert {path: path.stat().st_mtime_ns for path in final.parent.iterdir()} == before

    other = {**values, "loss": {**values["loss"], "temperature": 0.05}}
    config_file.write_text(json.dumps(other))
    assert list((tmp_path / "out").glob("checkpoint-*"))  # the first run's, which --resume would continue from
    assert main(argv + ["--resume"]) == 2
    assert "holds another run" in (error := capsys.readouterr().err) and "loss.temperature: 0.1 -> 0.05" in error
    assert main(argv + ["--resume", "--overwrite"]) == 2

    assert main(argv + ["--overwrite"]) == 0
    assert final.read_bytes() != weights
    assert json.loads((tmp_path / "out" / RUN_FILE).read_text())["loss"]["temperature"] == 0.05


@pytest.mark.parametrize("section, values, problem", [
    ("training", {"gradient_accumulation_steps": 0}, "gradient_accumulation_steps must be >= 1"),
    ("training", {"max_grad_norm": float("nan")}, "max_grad_norm must be a finite number > 0"),
    ("mining", {"candidates": 0}, "candidates >= num_negatives"),
    ("mining", {"margin": -1.0}, "mining.margin must be > 0"),
    ("mining", {"miner": "bse"}, "mining.miner must be base, self"),
    ("loss", {"hierarchy_term": "cones"}, "hierarchy_term must be cone or radius"),
])
def test_settings_that_would_train_silently_wrong_are_refused(tmp_path, section, values, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_config(config_dict("finetune", tmp_path, {"build": "hyte_fh", "options": TINY_FH}, **{section: values}))


def test_set_of_a_dict_field_keeps_the_files_other_keys_and_a_model_folder_is_no_run_folder(tmp_path):
    from hyte.training.run_folder import claim_output_dir

    path = tmp_path / "run.json"
    path.write_text(json.dumps(config_dict("contrastive", tmp_path / "out", {
        "build": "hyte_h", "path": "bundled:all-MiniLM-L6-v2", "options": {"radius_head": 1.0, "norm_clip": 1.0}})))
    config = load_config(path, {"model.options": {"curvature": 2.0}})
    assert config.model.options == {"radius_head": 1.0, "norm_clip": 1.0, "curvature": 2.0}
    # One entry of a mapping field, the way a user first writes it (it was refused as an unknown field)
    config = load_config(path, {"model.options.curvature": 2.0, "model.options.radius_head": 0.5})
    assert config.model.options == {"radius_head": 0.5, "norm_clip": 1.0, "curvature": 2.0}
    with pytest.raises(ConfigError, match=r"training.max_steps is not a mapping"):
        load_config(path, {"training.max_steps.x": 1})
    with pytest.raises(ConfigError, match=r"--set: unknown field model.optionz"):
        load_config(path, {"model.optionz.x": 1})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "config.json").write_text("{}")
    with pytest.raises(OutputRefused, match="is or lies inside a model folder"):
        claim_output_dir(config, resume=False)
    (tmp_path / "out" / "config.json").unlink()  # a local PostgreSQL server's folder instead
    (tmp_path / "out" / "hyte_postgres.json").write_text("{}")
    with pytest.raises(OutputRefused, match="is or lies inside a local PostgreSQL server folder"):
        claim_output_dir(config, resume=False)


def test_a_second_run_into_a_folder_a_live_run_holds_is_refused(tmp_path):
    """New-user trial: two runs started a second apart into one training.output_dir both exited 0, the second's
    final/ replacing the first's without a word (neither had a checkpoint yet to be refused by). The folder is held
    for the life of a run, by a lock the operating system drops when the holder ends; a run that fails early, or
    ends, leaves no lock file behind, nor a folder it created."""
    import subprocess
    import sys

    from hyte.training.run_folder import RUN_LOCK_FILE, RunFolderError, hold_output_dir

    config = load_config(_config_file(tmp_path))
    out = Path(config.training.output_dir)
    holder = subprocess.Popen(  # another process, alive, holding the folder as a run does
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from hyte.training.run_folder import "
         "hold_output_dir\nwith hold_output_dir(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
         str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError, match=rf"{out} is in use by another run \(process {holder.pid}\)"):
            run(config)
    finally:
        holder.kill()
        holder.wait()
    with hold_output_dir(out):  # the holder was killed: its lock file stayed, its lock went with it
        assert (out / RUN_LOCK_FILE).is_file()
    assert out.is_dir() and not any(out.iterdir())  # the lock file goes when the run ends
    with hold_output_dir(tmp_path / "new"):
        pass
    assert not (tmp_path / "new").exists()  # created here, nothing else written: removed again


# ----------------------------------------------------------------------------------------------------------------
# A new user's mistakes (trial of `hyte train --config ... --set ...`): each refused at validation, before any model
# is loaded or negatives are mined, with one line naming the file or --set, the field, the value and the remedy
# ----------------------------------------------------------------------------------------------------------------

def _config_file(tmp_path, name: str = "run.json", model: dict | None = None, **sections) -> Path:
    path = tmp_path / name
    model = model or {"build": "hyte_fh", "options": TINY_FH}
    path.write_text(json.dumps(config_dict("finetune", tmp_path / "out", model,
                                           mining={"num_negatives": 1, "candidates": 10}, **sections)))
    return path


def test_negative_weight_decay_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"training.weight_decay must be a finite number >= 0"):
        load_config(_config_file(tmp_path), {"training.weight_decay": -1})
    with pytest.raises(ConfigError, match="training.weight_decay must be a finite number >= 0"):
        load_config(_config_file(tmp_path), {"training.weight_decay": float("nan")})
    assert load_config(_config_file(tmp_path), {"training.weight_decay": 0}).training.weight_decay == 0


def test_negative_lora_rank_is_refused_not_run_as_a_full_fine_tune(tmp_path):
    with pytest.raises(ConfigError, match=r"lora.r must be a positive integer \(the LoRA rank\)"):
        load_config(_config_file(tmp_path), {"lora.r": -2})
    with pytest.raises(ConfigError, match="lora.target_modules is empty"):
        load_config(_config_file(tmp_path), {"lora.r": 4, "lora.target_modules": []})
    assert load_config(_config_file(tmp_path), {"lora.r": 4}).lora.r == 4
    assert load_config(_config_file(tmp_path), {"lora.r": 0}).lora.r == 0  # 0 = no LoRA, as documented


def test_unknown_model_option_is_refused_naming_the_closest_field(tmp_path):
    path = _config_file(tmp_path, model={"build": "hyte_h", "path": "bundled:all-MiniLM-L6-v2",
                                         "options": {"norm_clip": 1.0}})
    with pytest.raises(ConfigError, match=r"HyTEHConfig field \(did you mean 'scale_init'\?\)"):
        load_config(path, {"model.options": {"scale_initt": 1.0}})
    assert load_config(path, {"model.options": {"scale_init": 1.0}}).model.options == {"norm_clip": 1.0,
                                                                                       "scale_init": 1.0}
    with pytest.raises(ConfigError, match="model.options.encoder_config cannot be set"):
        load_config(path, {"model.options": {"encoder_config": {}}})
    with pytest.raises(ConfigError, match=r"HyTEFHConfig field \(did you mean 'hidden_size'\?\)"):
        load_config(_config_file(tmp_path), {"model.options": {"hiden_size": 33}})
    with pytest.raises(ConfigError, match=r"model.options.curvature is not a EucBERTConfig field"):
        load_config(_config_file(tmp_path, model={"build": "eucbert", "options": {"curvature": 1.0}}))
    with pytest.raises(ConfigError, match="'norm_clip'. are not used with model.build load"):
        load_config(_config_file(tmp_path, model={"build": "load", "options": {"norm_clip": 1.0}}))


def test_yaml_or_json_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("stage: contrastive\nmodel: {build: hyte_fh, options: {hidden_size: 33}}\ntraining:\n"
                    "  output_dir: runs/a\n  max_steps: 5\n  output_dir: runs/b\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'output_dir' \(first on line 4"):
        load_config(path)
    from hyte.training.config_files import _read

    path.write_text("a: &a {k: 1, j: 1}\nb: {<<: *a, k: 2}\n")  # a merged key may still be overridden
    assert _read(path) == {"a": {"k": 1, "j": 1}, "b": {"k": 2, "j": 1}}
    path.write_text("stage: contrastive\nmodel: {build: hyte_fh, options: {hidden_size: 33}}\n"
                    "training: {output_dir: runs/a, max_steps: 5}\n")
    assert load_config(path).training.output_dir == "runs/a"
    json_path = tmp_path / "run.json"
    json_path.write_text('{"stage": "contrastive", "training": {"max_steps": 5, "max_steps": 6}}')
    with pytest.raises(ConfigError, match="run.json: key 'max_steps' appears twice in one JSON object"):
        load_config(json_path)


def test_warmup_steps_and_scheduler_name_are_checked_before_training(tmp_path):
    with pytest.raises(ConfigError, match=r"training.warmup_steps must be an integer >= 0"):
        load_config(_config_file(tmp_path), {"training.warmup_steps": -5})
    with pytest.raises(ConfigError, match=r"'cosin' is not a transformers scheduler"):
        load_config(_config_file(tmp_path), {"training.lr_scheduler_type": "cosin"})
    with pytest.raises(ConfigError, match="'reduce_lr_on_plateau' needs evaluation during training"):
        load_config(_config_file(tmp_path), {"training.lr_scheduler_type": "reduce_lr_on_plateau"})
    config = load_config(_config_file(tmp_path), {"training.lr_scheduler_type": "cosine", "training.warmup_steps": 0})
    assert (config.training.lr_scheduler_type, config.training.warmup_steps) == ("cosine", 0)


def test_a_run_that_would_be_all_warm_up_is_refused_or_warned_about(tmp_path, caplog):
    """warmup_steps 1000 with max_steps 2 trained entirely in warm-up without a word."""
    from hyte.training.loop import training_arguments

    with pytest.raises(ConfigError, match=r"max_steps = 24: the whole run would be warm-up"):
        load_config(_config_file(tmp_path), {"training.warmup_steps": 1000})
    # The default warm-up (10 steps) on a smoke-test run of 10 steps or fewer is accepted, with a warning.
    short = load_config(_config_file(tmp_path), {"training.warmup_steps": 10, "training.max_steps": 4})
    with caplog.at_level("WARNING", logger="hyte.training.loop"):
        training_arguments(short)
    assert "training.warmup_steps = 10 is not below training.max_steps = 4" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="hyte.training.loop"):
        training_arguments(load_config(_config_file(tmp_path)))  # warm-up 2 of 24 steps: nothing to say
    assert "warm-up" not in caplog.text


def test_a_config_without_a_stage_takes_the_commands_and_a_path_must_be_a_path(tmp_path, capsys):
    """`hyte train contrastive --config F` with no stage in F said "stage must be one of ...; got
    None"; load_config(123) raised a bare TypeError from pathlib."""
    from hyte.cli import main

    values = json.loads(_config_file(tmp_path).read_text())
    del values["stage"]
    path = tmp_path / "nostage.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ConfigError, match=r"nostage.json: no stage"):
        load_config(path)
    assert load_config(path, stage="finetune").stage == "finetune"
    assert main(["train", "finetune", "--config", str(path), "--print-config"]) == 0
    assert "stage: finetune" in capsys.readouterr().out
    # A file of another stage is named as such before its checks judge it as the command's stage.
    mlm_on_hyte_h = tmp_path / "mlm.json"
    mlm_on_hyte_h.write_text(json.dumps({**values, "stage": "mlm"}))
    with pytest.raises(ConfigError, match=r"mlm.json is a 'mlm' config; run it with `hyte train mlm`"):
        load_config(mlm_on_hyte_h, stage="finetune")
    with pytest.raises(TypeError, match="the path of a YAML or JSON config file; got int 123"):
        load_config(123)


def test_mlm_settings_that_train_nothing_or_another_model_are_refused_before_loading(tmp_path, tiny_hyte_h_dir):
    """mlm_probability 0 trained with loss 0 and wrote final/, 1.5 failed inside transformers;
    build hyte_fh with a model.path trained a new random model, ignoring the path; the mlm stage on HyTE-H
    failed after loading with "the model did not return a loss"."""
    new_fh = {"build": "hyte_fh", "options": {**TINY_FH, "sparse_prediction": True}}
    for probability in (0, 1.5, -0.1):
        with pytest.raises(ConfigError, match=rf"mlm.mlm_probability must lie in \(0, 1\] .*got {probability}"):
            parse_config(config_dict("mlm", tmp_path, new_fh, mlm={"mlm_probability": probability}))
    with pytest.raises(ConfigError, match=r"model.path .* would be ignored"):
        parse_config(config_dict("mlm", tmp_path, {**new_fh, "path": str(tiny_hyte_h_dir)}))
    for model in ({"build": "load", "path": str(tiny_hyte_h_dir)}, {"build": "hyte_h", "path": str(tiny_hyte_h_dir)}):
        with pytest.raises(ConfigError, match="masked-language-model head of HyTE-FH or EucBERT"):
            parse_config(config_dict("mlm", tmp_path, model))
    assert parse_config(config_dict("mlm", tmp_path, new_fh, mlm={"mlm_probability": 1.0})).mlm.mlm_probability == 1


def test_save_total_limit_below_one_is_refused_as_transformers_would_keep_every_checkpoint(tmp_path):
    for limit in (0, -1):  # 0 trained and kept checkpoint-1 and checkpoint-2 without a word
        with pytest.raises(ConfigError, match=rf"training.save_total_limit = {limit} would keep every checkpoint "
                                              r"\(transformers reads 0 or less as no limit\); give an integer >= 1"
                                              r".*or null for no limit"):
            load_config(_config_file(tmp_path), {"training.save_total_limit": limit})
    assert load_config(_config_file(tmp_path), {"training.save_total_limit": None}).training.save_total_limit is None
    assert load_config(_config_file(tmp_path), {"training.save_total_limit": 1}).training.save_total_limit == 1


def test_empty_output_dir_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"training.output_dir is empty \(''\)"):
        load_config(_config_file(tmp_path), {"training.output_dir": ""})
    with pytest.raises(ConfigError, match="training.output_dir is empty"):
        load_config(_config_file(tmp_path), {"training.output_dir": "  "})


@pytest.mark.parametrize("section, values, problem", [
    ("loss", {"max_logit_scale": 0}, (r"loss.max_logit_scale must be a finite number >= 1 \(the logit scale is "
                                      r"clamped to \[1, max_logit_scale\]\); got 0")),
    ("loss", {"max_logit_scale": float("inf")}, "loss.max_logit_scale must be a finite number >= 1"),
    ("loss", {"temperature": float("nan")}, "loss.temperature must be a finite number > 0; got nan"),
    ("loss", {"temperature": 0}, "loss.temperature must be a finite number > 0; got 0"),
    ("loss", {"logit_scale_learning_rate": float("inf")}, "loss.logit_scale_learning_rate must be a finite number"),
    ("loss", {"hierarchy_weight": float("nan")}, "loss.hierarchy_weight must be a finite number >= 0; got nan"),
    ("loss", {"cone_min_radius": float("inf")}, "loss.cone_min_radius > 0 .both finite."),
])
def test_loss_scales_must_be_positive_and_finite(tmp_path, section, values, problem):
    with pytest.raises(ConfigError, match=problem):  # max_logit_scale 0 was a ZeroDivisionError traceback
        parse_config(config_dict("finetune", tmp_path, {"build": "hyte_fh", "options": TINY_FH}, **{section: values}))


def test_config_file_must_end_in_yaml_yml_or_json(tmp_path):
    path = tmp_path / "run.txt"  # YAML saved under another name used to read as JSON: "invalid JSON: Expecting value"
    path.write_text("stage: contrastive\nmodel: {build: hyte_fh, options: {hidden_size: 33}}\n")
    with pytest.raises(ConfigError, match=r"run.txt: a config file must end in .yaml, .yml"):
        load_config(path)
    renamed = path.rename(tmp_path / "run.YML")
    assert load_config(renamed).stage == "contrastive"


def _checkpoint(folder: Path, step: int, *files: str) -> Path:
    from safetensors.torch import save_file

    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name in files:
        if name.endswith(".safetensors"):  # resume reads the weights' header
            save_file({"weight": torch.zeros(4)}, str(path / name))
        else:
            (path / name).write_text("{}")
    return path


def _record_run(config) -> None:
    """The run.json a run writes into its folder as training starts (--resume checks the config against it)."""
    from types import SimpleNamespace

    from hyte.training.run_folder import RecordRun

    Path(config.training.output_dir).mkdir(parents=True, exist_ok=True)
    RecordRun(config).on_train_begin(SimpleNamespace(output_dir=config.training.output_dir),
                                     SimpleNamespace(is_world_process_zero=True), None)


def test_resume_skips_an_incomplete_newest_checkpoint_or_names_it(tmp_path, caplog, capsys):
    from hyte.cli import main
    from hyte.training.run_folder import RunFolderError, resume_checkpoint

    config = load_config(_config_file(tmp_path))
    out = Path(config.training.output_dir)
    killed = _checkpoint(out, 4, "model.safetensors")  # killed while saving: no trainer_state.json yet
    _record_run(config)
    with pytest.raises(RunFolderError, match=r"checkpoint-4 lack\(s\) the weights"):
        resume_checkpoint(config, resume=True)
    assert main(["train", "finetune", "--config", str(tmp_path / "run.json"), "--resume"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and str(killed) in error

    complete = _checkpoint(out, 2, "model.safetensors", "trainer_state.json")
    _checkpoint(out, 10, "trainer_state.json")  # no weights either (checkpoint-10 sorts by step, not by name)
    with caplog.at_level("WARNING", logger="hyte.training.run_folder"):
        assert resume_checkpoint(config, resume=True) == str(complete)
    assert "checkpoint-10" in caplog.text and "checkpoint-4" in caplog.text
    assert f"resuming from {complete}" in caplog.text
    caplog.clear()  # the CLI checks a resume more than once: the warning is printed once
    with caplog.at_level("WARNING", logger="hyte.training.run_folder"):
        assert resume_checkpoint(config, resume=True) == str(complete)
    assert "skipping incomplete" not in caplog.text
    adapter = _checkpoint(out, 3, "adapter_model.safetensors", "trainer_state.json")  # a LoRA run's checkpoint
    assert resume_checkpoint(config, resume=True) == str(adapter)
    assert resume_checkpoint(config, resume=False) is None


def test_ctrl_c_during_training_says_how_to_resume_in_one_line(tmp_path, monkeypatch, capsys):
    """Ctrl-C while training printed a 30-line KeyboardInterrupt traceback and no word of --resume."""
    import hyte.runner
    from hyte.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hyte.runner, "run", interrupted)
    config_file = _config_file(tmp_path)
    assert main(["train", "finetune", "--config", str(config_file)]) == 130
    # Interrupted before the first checkpoint, there is nothing to resume.
    assert capsys.readouterr().err.strip() == (
        "hyte train: interrupted: no checkpoint was written yet, so there is nothing to resume: rerun the same "
        "command (without --resume) to start again")
    config = load_config(config_file)
    _checkpoint(Path(config.training.output_dir), 2, "model.safetensors", "trainer_state.json")
    _record_run(config)
    assert main(["train", "finetune", "--config", str(config_file)]) == 130
    assert capsys.readouterr().err.strip() == (
        f"hyte train: interrupted: {Path(config.training.output_dir) / 'checkpoint-2'} is its last complete "
        "checkpoint: rerun the same command with --resume to continue from it")


def test_a_final_model_of_another_run_is_not_this_runs_and_no_run_goes_into_a_model_through_a_link(tmp_path):
    """`--overwrite` with another seed, killed after its first checkpoint, left the earlier run's
    final/; `--resume` then called that run finished and returned the earlier model. A training.output_dir
    that is a symbolic link into a model folder was accepted, as the folder itself is not."""
    from hyte.training.run_folder import claim_output_dir, finished_run, identity_digest

    config = load_config(_config_file(tmp_path))
    final = Path(config.training.output_dir) / "final"
    final.mkdir(parents=True)
    card = {"training": {"steps": config.training.max_steps, "run_identity": identity_digest(config)}}
    (final / "hyte_card.json").write_text(json.dumps(card))
    assert finished_run(config) == final
    reseeded = load_config(_config_file(tmp_path), {"training.seed": 5})
    assert finished_run(reseeded) is None
    del card["training"]["run_identity"]  # a model saved before the identity was recorded: judged by its steps
    (final / "hyte_card.json").write_text(json.dumps(card))
    assert finished_run(reseeded) == final

    model = tmp_path / "model"
    (model / "inside").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (tmp_path / "link").symlink_to(model / "inside")
    linked = load_config(_config_file(tmp_path), {"training.output_dir": str(tmp_path / "link")})
    with pytest.raises(OutputRefused, match=r"lies inside a model folder \(.*model holds config.json\)"):
        claim_output_dir(linked, resume=False)


def test_a_moved_run_folder_with_its_mining_cache_is_still_the_same_run(tmp_path):
    """`hyte quickstart` and the benchmarks keep the mined-negatives cache inside the folder they train in: moving
    that folder changed mining.cache_dir, so its finished runs were "a finished run of other settings" (quickstart
    refused, benchmarks retrained). Where the cache sits no longer names the run; what it mines still does."""
    import shutil

    from hyte.training.run_folder import (
        RUN_FILE,
        _earlier_identity_digest,
        claim_output_dir,
        finished_run,
        finished_run_differences,
        identity_digest,
    )

    def config_in(folder: Path, **overrides):
        return load_config(_config_file(tmp_path), {"training.output_dir": str(folder / "run"),
                                                    "mining.cache_dir": str(folder / "mining-cache"), **overrides})

    config = config_in(tmp_path / "a")
    _record_run(config)
    final = Path(config.training.output_dir) / "final"
    final.mkdir()
    card = {"training": {"steps": config.training.max_steps, "run_identity": identity_digest(config)}}
    (final / "hyte_card.json").write_text(json.dumps(card))
    shutil.move(tmp_path / "a", tmp_path / "b")
    moved = config_in(tmp_path / "b")
    assert finished_run_differences(moved) == [] and finished_run(moved) == tmp_path / "b" / "run" / "final"
    claim_output_dir(moved, resume=True)  # no "holds another run"
    other = config_in(tmp_path / "b", **{"mining.num_negatives": 2})
    assert finished_run_differences(other) == ["mining.num_negatives: 1 -> 2"] and finished_run(other) is None

    # A run recorded before the cache left the identity: run.json names it, the card's digest includes it.
    recorded = json.loads((tmp_path / "b" / "run" / RUN_FILE).read_text())
    recorded["mining"]["cache_dir"] = moved.mining.cache_dir
    (tmp_path / "b" / "run" / RUN_FILE).write_text(json.dumps(recorded))
    card["training"]["run_identity"] = _earlier_identity_digest(moved)
    assert card["training"]["run_identity"] != identity_digest(moved)
    (tmp_path / "b" / "run" / "final" / "hyte_card.json").write_text(json.dumps(card))
    assert finished_run_differences(moved) == [] and finished_run(moved) == tmp_path / "b" / "run" / "final"
    assert finished_run(config_in(tmp_path / "b", **{"training.seed": 1})) is None


def test_resume_refuses_damaged_weights_and_run_json_naming_the_file(tmp_path, capsys):
    """New-user trial: a checkpoint's model.safetensors cut in half gave safetensors' traceback once negatives were
    mined, and a truncated run.json json's "Expecting property name" naming no file."""
    from hyte.cli import main
    from hyte.training.run_folder import RUN_FILE, RunFolderError, claim_output_dir, resume_checkpoint

    config = load_config(_config_file(tmp_path))
    out = Path(config.training.output_dir)
    earlier = _checkpoint(out, 2, "model.safetensors", "trainer_state.json")
    newest = _checkpoint(out, 4, "model.safetensors", "trainer_state.json")
    _record_run(config)
    weights = newest / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(RunFolderError, match=rf"cannot resume: {weights} is damaged \(.*\): delete {newest} to "
                                             rf"resume from {earlier}, or start over with --overwrite"):
        resume_checkpoint(config, resume=True)
    assert main(["train", "finetune", "--config", str(tmp_path / "run.json"), "--resume"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and str(weights) in error and not (out / "mined_negatives.jsonl").exists()
    (earlier / "model.safetensors").write_bytes(b"")
    with pytest.raises(RunFolderError, match="start over with --overwrite .no earlier complete checkpoint"):
        resume_checkpoint(config, resume=True)

    _checkpoint(out, 6, "model.safetensors", "trainer_state.json")
    assert resume_checkpoint(config, resume=True) == str(out / "checkpoint-6")  # an intact newer one is used
    (out / RUN_FILE).write_text('{"stage": "finetune", "model": {')
    with pytest.raises(ValueError, match=rf"{out / RUN_FILE} is not valid JSON \(line 1, .*the file is damaged; it "
                                         r"records which run .* start over there with --overwrite"):
        claim_output_dir(config, resume=True)


def test_config_that_is_not_utf8_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "run.yaml"  # a Windows editor's "Unicode": UTF-16 with a byte-order mark
    path.write_text("stage: contrastive\nmodel: {build: hyte_fh, options: {hidden_size: 33}}\n", encoding="utf-16")
    with pytest.raises(ConfigError, match=r"run.yaml is not UTF-8 text"):
        load_config(path)
    path.write_text(path.read_text(encoding="utf-16"), encoding="utf-8")
    assert load_config(path).stage == "contrastive"


def test_lora_fields_without_lora_r_are_refused_not_ignored(tmp_path):
    """New-user trial: --set lora.dropout=1.5 (or alpha, target_modules) without lora.r trained without LoRA."""
    path = _config_file(tmp_path)
    with pytest.raises(ConfigError, match=r"lora.dropout set, but LoRA is off"):
        load_config(path, {"lora.dropout": 1.5})
    with pytest.raises(ConfigError, match=r"lora.alpha, lora.target_modules set, but LoRA is off"):
        load_config(path, {"lora.alpha": 8, "lora.target_modules": ["query"]})
    with pytest.raises(ConfigError, match=r"lora.dropout must lie in \[0, 1\); got 1.5"):
        load_config(path, {"lora.r": 4, "lora.dropout": 1.5})
    assert load_config(path, {"lora.r": 4, "lora.dropout": 0.1}).lora.dropout == 0.1
    assert load_config(path).lora.r == 0


@pytest.mark.parametrize("field, value, problem", [
    ("training.logging_steps", 0, r"training.logging_steps must be an integer >= 1 .*; got 0"),
    ("training.save_steps", -1, r"training.save_steps must be an integer >= 1 .*; got -1"),
    ("training.dataloader_num_workers", -1, r"training.dataloader_num_workers must be an integer >= 0 .*; got -1"),
    ("loss.max_document_length", 0, r"loss.max_document_length = 0 leaves no token of the text .*give 3 or more"),
    ("loss.max_query_length", 2, r"loss.max_query_length = 2 leaves no token"),
    ("mlm.max_length", 1, r"mlm.max_length = 1 leaves no token"),
])
def test_intervals_workers_and_lengths_are_refused_before_mining(tmp_path, field, value, problem):
    """New-user trial: the Trainer or the encoder refused these only after negatives were mined, and a length of 0
    without naming the field."""
    with pytest.raises(ConfigError, match=problem):
        load_config(_config_file(tmp_path), {field: value})


def test_lora_target_modules_the_model_lacks_are_refused_before_any_data_is_read(tmp_path):
    """New-user trial: peft refused a target that is not in the model only after mining, and a misspelt name beside
    a right one not at all."""
    from transformers import BertConfig, BertModel

    from hyte.training.loop import check_lora_targets

    config = load_config(_config_file(tmp_path), {"lora.r": 4, "lora.target_modules": ["qkv", "valeu"]})
    with pytest.raises(ConfigError, match=r"names 'valeu', which HyTEFHModel has no module of"):
        run(config)
    assert not (tmp_path / "out").exists()  # no mined negatives, no LoRA base
    with pytest.raises(ConfigError, match="names 'query', 'value', 'projection', which HyTEFHModel"):
        run(load_config(_config_file(tmp_path), {"lora.r": 4}))  # the default list fits HyTE-H and BERT encoders
    bert = BertModel(BertConfig(vocab_size=100, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16))
    check_lora_targets(bert, load_config(_config_file(tmp_path), {"lora.r": 4}))  # no projection: query, value
    with pytest.raises(ConfigError, match="names 'projection', which BertModel"):  # ... but named, it must be there
        check_lora_targets(bert, load_config(_config_file(tmp_path), {"lora.r": 4, "lora.target_modules":
                                                                      ["query", "projection"]}))


def test_lora_modules_to_save_must_be_modules_and_lora_on_new_weights_is_warned(tmp_path, caplog, bert_tokenizer):
    """New-user trial: lora.modules_to_save naming a parameter (HyTE-H's scale) was accepted and left frozen; LoRA on
    a freshly built HyTE-FH trained adapters over random weights without a word."""
    import hyte
    from hyte.training.loop import apply_lora, check_lora_targets
    from hyte.training.models import BuiltModel

    class WithScale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.projection, self.query = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
            self.scale = torch.nn.Parameter(torch.ones(()))

    def config(saved):
        return load_config(_config_file(tmp_path), {"lora.r": 4, "lora.target_modules": ["query"],
                                                    "lora.modules_to_save": saved})

    check_lora_targets(WithScale(), config(["projection"]))
    with pytest.raises(ConfigError, match=r"'scale' is a parameter, not a module"):
        check_lora_targets(WithScale(), config(["scale"]))
    with pytest.raises(ConfigError, match=r"'projektion'.*no module of the model has that name"):
        check_lora_targets(WithScale(), config(["projection", "projektion"]))

    model = hyte.HyTEFHModel(hyte.HyTEFHConfig(vocab_size=50, **TINY_FH))
    lora = load_config(_config_file(tmp_path), {"lora.r": 4, "lora.target_modules": ["qkv"]})
    with caplog.at_level("WARNING", logger="hyte.training.loop"):
        apply_lora(BuiltModel(model, bert_tokenizer, True, None), lora)
    assert "LoRA on a new hyte_fh: its frozen weights are a random initialisation" in caplog.text

    # A new specificity head under LoRA would stay frozen at its initial radius: refused unless it is trained whole.
    from hyte.training import parse_config

    head = {"stage": "contrastive", "training": {"output_dir": str(tmp_path / "run")},
            "model": {"build": "hyte_h", "path": "bundled:all-MiniLM-L6-v2", "options": {"radius_head": 1.0}}}
    with pytest.raises(ConfigError, match=r"radius_head.*frozen.*modules_to_save: \[radius_head\]"):
        parse_config({**head, "lora": {"r": 4}})
    assert parse_config({**head, "lora": {"r": 4, "modules_to_save": ["radius_head"]}}).lora.r == 4
    assert parse_config({**head, "lora": {"r": 4, "target_modules": ["query", "radius_head"]}}).lora.r == 4


def test_a_beir_training_folder_is_read_by_the_evaluation_reader(tmp_path):
    """Training from a BEIR folder reads it as evaluation does (hyte.data.beir.load_beir): positive judgements become
    pairs, a folder evaluation would refuse (a fractional score) is refused for training too, naming the line."""
    from hyte.data.beir import BEIRFormatError
    from hyte.data.hpo import write_beir_folder
    from hyte.training.config import DataSpec
    from hyte.training.data import contrastive_examples

    folder = write_beir_folder(tmp_path / "beir", {"q0": "short fingers", "q1": "small head"},
                               {"d0": "Short fingers.", "d1": "Small head.", "d2": "Curved spine."},
                               {"q0": {"d0": 1, "d2": 0}, "q1": {"d1": 2}}, split="train")
    pairs = contrastive_examples(DataSpec(source="beir", path=str(folder), split="train"))
    assert sorted((p["query"], p["document"]) for p in pairs) == [("short fingers", "Short fingers."),
                                                                   ("small head", "Small head.")]
    qrels = folder / "qrels" / "train.tsv"
    qrels.write_text(qrels.read_text().replace("q1\td1\t2", "q1\td1\t0.5"))
    with pytest.raises(BEIRFormatError, match=r"train.tsv, line \d+: .*integer"):
        contrastive_examples(DataSpec(source="beir", path=str(folder), split="train"))


# ----------------------------------------------------------------------------------------------------------------
# Later trial: data that give no query a negative, resume without run.json or past max_steps, a finished run without
# a checkpoint, and an output_dir inside a model folder
# ----------------------------------------------------------------------------------------------------------------

def _pairs_config(tmp_path, rows: list[dict]) -> Path:
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = tmp_path / "pairs-run.json"
    path.write_text(json.dumps(config_dict("contrastive", tmp_path / "out", {"build": "hyte_fh", "options": TINY_FH},
                                           data={"source": "jsonl", "path": str(data), "max_examples": None},
                                           training={"per_device_train_batch_size": 4})))
    return path


@pytest.mark.parametrize("rows", [
    [{"query": "fever", "document": "High body temperature."}] * 8,  # every pair the same
    [{"query": f"query {i}", "document": "One text."} for i in range(8)],  # every document the same
])
def test_data_that_give_no_query_a_negative_are_refused_before_training(tmp_path, capsys, rows):
    """A copy of a query's own document is left out of its softmax (the right answer), so data with one document
    text trained with loss 0 and gradient 0 and wrote final/ without a word."""
    from hyte.cli import main

    config = _pairs_config(tmp_path, rows)
    assert main(["train", "contrastive", "--config", str(config)]) == 2
    error = capsys.readouterr().err
    assert f"{tmp_path / 'pairs.jsonl'}) gives no query a negative" in error and "different documents" in error
    assert not (tmp_path / "out").exists()  # refused before the model is built or anything written
    from hyte.training.config import DataSpec
    from hyte.training.data import contrastive_examples

    with_negative = [*rows[:-1], {**rows[-1], "negatives": ["Another text."]}]  # one real negative is enough
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in with_negative))
    assert len(contrastive_examples(DataSpec(source="jsonl", path=str(tmp_path / "pairs.jsonl")))) == 8


def test_batches_of_one_without_negatives_of_their_own_are_refused_before_training(tmp_path, capsys):
    """With per_device_train_batch_size 1 a query's batch holds no other document, so pairs without
    'negatives' trained with loss 0 and wrote final/ as if trained. One example with negatives makes it trainable."""
    from hyte.cli import main
    from hyte.training.config import ConfigError
    from hyte.training.data import refuse_lone_batches

    rows = [{"query": f"query {i}", "document": f"Document {i}."} for i in range(4)]
    config = _pairs_config(tmp_path, rows)
    assert main(["train", "contrastive", "--config", str(config), "--set", "training.per_device_train_batch_size=1"]) == 2
    error = capsys.readouterr().err
    assert "per_device_train_batch_size is 1 and no example has 'negatives'" in error and "at least 2" in error
    assert not (tmp_path / "out" / "final").exists()
    with pytest.raises(ConfigError):
        refuse_lone_batches([{**row, "parent": ""} for row in rows], 1, gather_negatives=False)
    refuse_lone_batches([*rows[:-1], {**rows[-1], "negatives": ["Other."]}], 1, gather_negatives=False)
    refuse_lone_batches(rows, 2, gather_negatives=False)
    refuse_lone_batches(rows, 1, gather_negatives=True)  # other processes' documents are its negatives


def test_a_run_whose_every_logged_loss_is_0_is_warned_in_the_log_and_run_json(tmp_path, caplog):
    """A run whose loss is exactly 0 at every logged step finished silently; now the log says so at the first
    such step and at the end, and run.json records it, without making the run another run for --resume."""
    from types import SimpleNamespace

    from hyte.training.run_folder import RUN_FILE, RecordRun, claim_output_dir

    config = load_config(_config_file(tmp_path))
    out = Path(config.training.output_dir)
    _checkpoint(out, 2, "model.safetensors", "trainer_state.json")
    args = SimpleNamespace(output_dir=str(out))
    state = SimpleNamespace(is_world_process_zero=True, global_step=2, log_history=[])
    record = RecordRun(config)
    record.on_train_begin(args, state, None)
    with caplog.at_level("WARNING", logger="hyte.training.run_folder"):
        for step in (1, 2):
            state.log_history.append({"loss": 0.0, "grad_norm": 0.0, "step": step})
            record.on_log(args, state, None, logs=state.log_history[-1])
        record.on_train_end(args, state, None)
    assert caplog.text.count("training loss was exactly 0 at every logged step") == 2  # at step 1, at the end
    warnings = json.loads((out / RUN_FILE).read_text())["warnings"]
    assert "exactly 0 at every logged step up to step 2" in warnings[0] and "negative" in warnings[0]
    claim_output_dir(config, resume=True)  # the warning is no difference in the run's settings

    caplog.clear()
    state.log_history.append({"loss": 0.5, "step": 3})
    record = RecordRun(config)
    record.on_train_begin(args, state, None)
    with caplog.at_level("WARNING", logger="hyte.training.run_folder"):
        record.on_log(args, state, None, logs=state.log_history[-1])
        record.on_train_end(args, state, None)
    assert "exactly 0" not in caplog.text and "warnings" not in json.loads((out / RUN_FILE).read_text())


def test_resume_without_run_json_or_past_max_steps_is_refused(tmp_path, capsys):
    """With run.json deleted, --resume took any checkpoint-N (of another run's settings too) and, from
    one at max_steps, trained past it (the Trainer checks max_steps only after a step) and wrote final/ unchecked."""
    from hyte.cli import main

    config_file = _config_file(tmp_path)
    config = load_config(config_file)
    out = Path(config.training.output_dir)
    _checkpoint(out, 24, "model.safetensors", "trainer_state.json")  # max_steps is 24
    argv = ["train", "finetune", "--config", str(config_file)]
    for extra in ([], ["--set", "loss.temperature=0.05"]):  # the same run's settings, or another's: unknowable
        assert main([*argv, "--resume", *extra]) == 2
        error = capsys.readouterr().err
        assert f"{out} holds 1 checkpoint(s) but no run.json" in error and "cannot be checked" in error
        assert "--overwrite" in error and "another training.output_dir" in error
    assert main(argv) == 2  # without --resume: not told to --resume, which would be refused as above
    error = capsys.readouterr().err
    assert "already holds a run" in error and "--resume" not in error and "--overwrite" in error

    _record_run(config)
    assert main([*argv, "--resume"]) == 2  # final/ deleted: the checkpoint is at max_steps already
    error = capsys.readouterr().err
    assert f"{out / 'checkpoint-24'} already reached training.max_steps = 24" in error and "raise training.max" in error
    assert main([*argv, "--resume", "--set", "training.max_steps=12"]) == 2
    assert "is at step 24, past training.max_steps = 12" in capsys.readouterr().err
    assert not (out / "final").exists() and not (out / "mined_negatives.jsonl").exists()


def test_a_finished_run_without_checkpoints_offers_a_way_out_that_works(tmp_path, capsys):
    """A finished run without a checkpoint: without --resume the user was told to --resume, with it that there
    was nothing to resume. Each message now names a way that works (--overwrite, another output_dir, its final/)."""
    from hyte.cli import main
    from hyte.training.run_folder import claim_output_dir

    config_file = _config_file(tmp_path)
    config = load_config(config_file)
    out = Path(config.training.output_dir)
    _record_run(config)
    (out / "final").mkdir()
    (out / "final" / "hyte_card.json").write_text(json.dumps({"training": {"steps": 12}}))
    argv = ["train", "finetune", "--config", str(config_file)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "a finished model (final/)" in error and "--resume" not in error and "--overwrite to replace it" in error
    assert main([*argv, "--resume"]) == 2  # max_steps 24: nothing to continue the 12 steps from
    error = capsys.readouterr().err
    assert "trained for 12 steps; training.max_steps = 24) but no checkpoint to continue it from" in error
    assert f"model.path {out / 'final'}, model.build load" in error and "--overwrite" in error
    assert main([*argv, "--resume", "--set", "training.max_steps=12"]) == 0  # finished: returned as it is
    assert f"final model: {out / 'final'}" in capsys.readouterr().out
    claim_output_dir(load_config(config_file, {"training.output_dir": str(tmp_path / "new")}), resume=False)


def test_output_dir_inside_a_model_folder_is_refused(tmp_path, capsys):
    """training.output_dir inside a model folder (the demo's model, a run's final/) was accepted: checkpoints
    among the model's files, pushed with it. Refused as `hyte index build` refuses its output there."""
    from hyte.cli import main
    from hyte.training.run_folder import claim_output_dir

    config_file = _config_file(tmp_path)
    for model in (tmp_path / "demo" / "model", tmp_path / "run" / "final"):
        model.mkdir(parents=True)
        (model / "config.json").write_text("{}")
        assert main(["train", "finetune", "--config", str(config_file), "--set",
                     f"training.output_dir={model / 'again'}"]) == 2
        error = capsys.readouterr().err
        assert f"training.output_dir {model / 'again'} is or lies inside a model folder ({model} holds config.json)" \
               in error and "e.g. runs/again" in error
        assert not (model / "again").exists()
    (tmp_path / "run" / "run.json").write_text("{}")  # a run's folder (or a config named run.json) is no model
    claim_output_dir(load_config(config_file, {"training.output_dir": str(tmp_path / "run" / "other")}), resume=False)
    with pytest.raises(OutputRefused, match="set training.output_dir to the run's folder"):
        claim_output_dir(load_config(config_file, {"training.output_dir": str(tmp_path / "run" / "final")}), False)
    # A data file as output_dir (or a folder under one) gave "[Errno 17] File exists" after the model loaded.
    (tmp_path / "pairs.jsonl").write_text("{}\n")
    with pytest.raises(OutputNotAFolder, match="pairs.jsonl is a file: give a folder"):
        claim_output_dir(load_config(config_file, {"training.output_dir": str(tmp_path / "pairs.jsonl")}), False)
    with pytest.raises(NotADirectoryError, match="pairs.jsonl is a file, not a folder"):
        claim_output_dir(load_config(config_file, {"training.output_dir": str(tmp_path / "pairs.jsonl" / "r")}), False)
    assert (tmp_path / "pairs.jsonl").read_text() == "{}\n"


# The config fields that were part of a run's identity (run.json) before fields began to be added with a default
# that keeps older runs' identities: each later field must say whether it changes the run (training.loop's
# _ADDED_FIELDS, with the default at which it is left out) or may change on a resumption (_RESUMABLE_CHANGES).
IDENTITY_FIELDS = {
    "model": ("path", "build", "options", "tokenizer"),
    "data": ("source", "path", "split", "max_examples", "query_field", "document_field", "text_field", "hpo_query",
             "hierarchy", "hpo_test_fraction", "hpo_seed", "min_depth", "mlm_names"),
    "training": ("per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "head_learning_rate",
                 "weight_decay", "warmup_steps", "lr_scheduler_type", "max_grad_norm", "seed", "bf16",
                 "gradient_checkpointing", "gather_negatives", "mini_batch_size"),
    "mlm": ("mlm_probability", "max_length"),
    "loss": ("similarity", "temperature", "learn_temperature", "temperature_from_radius", "max_logit_scale",
             "logit_scale_learning_rate", "hierarchy_weight", "hierarchy_term", "cone_min_radius", "radius_margin",
             "mask_hierarchy", "max_query_length", "max_document_length"),
    "mining": ("num_negatives", "candidates", "margin", "skip_top", "miner"),
    "lora": ("r", "alpha", "dropout", "target_modules", "modules_to_save"),
    "evaluation": ("enabled", "max_queries", "max_documents"),
    "phrase": ("query_budget", "document_budget", "global_weight", "token_weight", "lexical_weight",
               "segmentation_weight", "phrase_weight", "temperature", "lexical_temperature", "token_projection_size",
               "vocabularies", "max_term_words", "head_learning_rate", "fusion_global", "fusion_phrase",
               "fusion_lexical"),
    "compatible": ("old_model", "weight", "alignment", "cone", "q", "q_fixed", "rince_lambda", "temperature",
                   "cone_min_radius", "cone_widening", "permutation_seed"),
}


def test_a_new_config_field_says_whether_it_belongs_to_the_run_identity():
    """A field added to a config section without a word changed every earlier run's identity: --resume refused them
    and finished runs no longer counted as finished."""
    import dataclasses

    from hyte.training.config import SECTIONS
    from hyte.training.run_folder import _ADDED_FIELDS, _RESUMABLE_CHANGES

    unsaid = [f"{section}.{item.name}" for section, spec in SECTIONS.items() for item in dataclasses.fields(spec)
              if item.name not in IDENTITY_FIELDS.get(section, ()) and (section, item.name) not in _ADDED_FIELDS
              and item.name not in _RESUMABLE_CHANGES.get(section, ())]
    assert not unsaid, (f"{unsaid}: add each to training.run_folder._ADDED_FIELDS with its default (it changes the "
                        "run; runs recorded before it keep their identity) or to _RESUMABLE_CHANGES (a resumption may "
                        "change it)")
    gone = [f"{section}.{name}" for section, names in IDENTITY_FIELDS.items() for name in names
            if name not in {item.name for item in dataclasses.fields(SECTIONS[section])}]
    assert not gone, f"{gone} left the config: update IDENTITY_FIELDS (and say how old run.json files read)"
