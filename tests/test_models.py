"""HyTE-FH and EucBERT: shapes, manifold, masking, numerics, bad input, remote code, MLM training."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import run_without_hyte, tiny_euc_config, tiny_fh_config
from huggingface_hub.errors import StrictDataclassClassValidationError

import hyte
from hyte import lorentz as L

TEXTS = [
    "Abnormality of the cardiovascular system.",
    "A short stature.",
    "An abnormal increase in the size of the heart, often seen with long-standing high blood pressure.",
]


def on_hyperboloid(x: torch.Tensor, c: float = 1.0, tol: float = 1e-4) -> bool:
    x64 = x.double()
    return bool(((L.inner(x64, x64) + c).abs() / x64[..., 0] ** 2).max() < tol)


@pytest.mark.parametrize("pooling", ["oem", "einstein", "mean", "cls"])
@pytest.mark.parametrize("curvature", [0.5, 1.0, 2.0])
def test_fh_outputs_are_points(pooling, curvature):
    torch.manual_seed(0)
    model = hyte.HyTEFHModel(tiny_fh_config(pooling=pooling, curvature=curvature)).eval()
    ids = torch.randint(1, 30522, (3, 12))
    out = model(ids, torch.ones(3, 12))
    assert out.last_hidden_state.shape == (3, 12, 33) and out.pooler_output.shape == (3, 33)
    assert on_hyperboloid(out.last_hidden_state, curvature) and on_hyperboloid(out.pooler_output, curvature)


@pytest.mark.parametrize("model_class,config", [(hyte.HyTEFHModel, tiny_fh_config), (hyte.EucBERTModel, tiny_euc_config)])
def test_embedding_does_not_depend_on_padding_or_batch(model_class, config, bert_tokenizer):
    torch.manual_seed(0)
    model = model_class(config()).eval()
    batch = bert_tokenizer(TEXTS, padding="max_length", max_length=64, return_tensors="pt")
    together = model(**{k: batch[k] for k in ("input_ids", "attention_mask")}).pooler_output
    for i, text in enumerate(TEXTS):
        alone = bert_tokenizer([text], return_tensors="pt")
        single = model(alone["input_ids"], alone["attention_mask"]).pooler_output[0]
        torch.testing.assert_close(single, together[i], rtol=1e-5, atol=1e-5)


def test_sdpa_fast_path_matches_eager_reference_path():
    torch.manual_seed(0)
    model = hyte.HyTEFHModel(tiny_fh_config()).eval()
    ids, mask = torch.randint(1, 30522, (2, 20)), torch.ones(2, 20)
    mask[1, 11:] = 0
    fast = model(ids, mask).last_hidden_state
    model.set_attn_implementation("eager")
    reference = model(ids, mask).last_hidden_state
    torch.testing.assert_close(fast[0], reference[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fast[1, :11], reference[1, :11], rtol=1e-5, atol=1e-5)
    # A row of only padding (an empty text without special tokens) gives finite points on the reference path too.
    mask[1] = 0
    assert torch.isfinite(model(ids, mask).last_hidden_state).all()


@pytest.mark.parametrize("out_features", [1, 7, 8, 63, 255])
@pytest.mark.parametrize("bias", [True, False])
def test_padded_linear_is_the_linear_map_in_value_and_gradient(out_features, bias):
    from hyte.modeling_hyte import linear_padded

    torch.manual_seed(out_features)
    x = torch.randn(3, 5, 17, requires_grad=True)
    weight = torch.randn(out_features, 17, requires_grad=True)
    b = torch.randn(out_features, requires_grad=True) if bias else None
    padded = linear_padded(x, weight, b)
    plain = torch.nn.functional.linear(x, weight, b)
    assert padded.shape == plain.shape
    torch.testing.assert_close(padded, plain)
    grad = torch.randn_like(plain)
    inputs = [x, weight] + ([b] if bias else [])
    for ours, reference in zip(torch.autograd.grad(padded, inputs, grad), torch.autograd.grad(plain, inputs, grad)):
        torch.testing.assert_close(ours, reference)


def test_lora_on_hyte_fh_lorentz_linears_changes_every_one_of_them():
    """The padded GEMM reads the layer's weight directly: a peft-wrapped layer must go through its own forward."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    ids, mask = torch.randint(1, 30522, (2, 9)), torch.ones(2, 9)
    for target in ("attention.out.linear", "gate_up.linear", "down.linear"):
        model = get_peft_model(hyte.HyTEFHModel(tiny_fh_config()).eval(),
                               LoraConfig(r=2, target_modules=[target], init_lora_weights=False))
        with torch.no_grad():
            adapted = model(ids, mask).pooler_output
            with model.disable_adapter():
                base = model(ids, mask).pooler_output
        assert not torch.allclose(adapted, base, atol=1e-6), target


def _host_reads(run) -> list[str]:
    """The aten calls of ``run()`` that read a tensor's value on the host (``.item()``, ``bool(t)``, ``int(t)``): what
    a value check needs, and a device sync on an accelerator."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class HostReads(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.reads = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._local_scalar_dense.default:
                self.reads.append(str(func))
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), HostReads() as mode:
        run()
    return mode.reads


def test_model_forward_reads_no_tensor_value_on_the_host(tiny_bert):
    """Checks live at the boundary (encode, the loaders, the CLI), not in forward: a value check in forward would
    read a tensor on the host, which this counts (and the probe itself must see one)."""
    torch.manual_seed(0)
    ids, mask = torch.randint(1, 1000, (2, 9)), torch.ones(2, 9)
    mask[1, 5:] = 0
    for model in (hyte.HyTEFHModel(tiny_fh_config()), hyte.EucBERTModel(tiny_euc_config())):
        assert _host_reads(lambda: model(ids, mask)) == [], type(model).__name__
    # HyTE-H adds none to its backbone's own (transformers' BERT reads its padding mask to skip an SDPA mask).
    hyte_h = hyte.HyTEHModel.from_base(tiny_bert, hidden_size=21, num_attention_heads=3, num_hyperbolic_layers=1,
                                       radius_head=1.0)
    assert _host_reads(lambda: hyte_h(ids, mask)) == _host_reads(lambda: hyte_h.encoder(ids, mask.long()))
    assert _host_reads(lambda: bool((ids > 0).all())) == ["aten._local_scalar_dense.default"]


def test_fh_long_sequences_and_large_radii_stay_finite_in_float32():
    torch.manual_seed(0)
    config = tiny_fh_config(max_position_embeddings=2048, residual_space_scale=4 * 33**0.5)
    model = hyte.HyTEFHForMaskedLM(config)
    with torch.no_grad():  # push the token embeddings far out: space norms ~ 1e4 (radius ~ 10)
        model.hyte.embeddings.weight.mul_(5e3)
    ids = torch.randint(1, 30522, (2, 2048))
    labels = torch.where(torch.rand(2, 2048) < 0.15, ids, torch.full_like(ids, -100))
    out = model(ids, torch.ones(2, 2048), labels=labels)
    out.loss.backward()
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    with torch.no_grad():  # the residual stream really is far out (the final norm brings it back)
        states = torch.stack(model.hyte(ids[:, :64], output_hidden_states=True).hidden_states)
    assert torch.isfinite(states).all() and float(states[..., 0].max()) > 100


def test_gradient_checkpointing_gives_the_same_gradients():
    torch.manual_seed(0)
    model = hyte.HyTEFHForMaskedLM(tiny_fh_config())
    ids = torch.randint(1, 30522, (2, 16))
    labels = ids.clone()

    def gradients():
        model.zero_grad(set_to_none=True)
        model(ids, labels=labels).loss.backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    plain = gradients()
    model.gradient_checkpointing_enable()
    model.train()
    checkpointed = gradients()
    assert all(layer.gradient_checkpointing for layer in model.hyte.encoder.layers)
    # Every parameter learns from the MLM loss (the masked-LM classes carry no contrastive logit scale).
    assert {name for name, p in model.named_parameters() if p.requires_grad} == set(plain)
    assert plain.keys() == checkpointed.keys()
    for name in plain:
        torch.testing.assert_close(plain[name], checkpointed[name], rtol=1e-4, atol=1e-6)


def test_lorentz_mlr_bias_carries_the_class_prior_and_old_checkpoints_load_unchanged(tmp_path):
    """The MLR head's per-class bias lets the prior (unigram frequencies) be learned apart from the hyperplanes: with
    zero normals (logit 0 everywhere), fitting the bias alone on skewed labels reaches the labels' entropy. A checkpoint saved
    before the bias existed loads with a zero bias and scores exactly as before."""
    from safetensors.torch import load_file, save_file

    from hyte.modeling_hyte import LorentzMLR

    torch.manual_seed(0)
    head = LorentzMLR(17, 5)
    points = L.expmap0(torch.randn(512, 16) * 0.5, torch.tensor(1.0))
    prior = torch.tensor([0.6, 0.25, 0.1, 0.04, 0.01])
    labels = torch.multinomial(prior, 512, replacement=True, generator=torch.Generator().manual_seed(1))
    frequencies = torch.bincount(labels, minlength=5).double() / 512
    entropy = float(-(frequencies * frequencies.log()).sum())
    head.normal.data.zero_()  # hyperplanes with a zero normal give logit 0 everywhere: only the bias can fit
    optimizer = torch.optim.Adam([head.bias], lr=0.1)
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(head(points, torch.tensor(1.0)), labels)
        loss.backward()
        optimizer.step()
    assert float(loss) == pytest.approx(entropy, abs=1e-3)

    model = hyte.HyTEFHForMaskedLM(tiny_fh_config())
    model.classifier.bias.data.uniform_(-1, 1)
    ids = torch.randint(1, 99, (2, 7))
    model.save_pretrained(tmp_path / "old")
    weights = load_file(tmp_path / "old" / "model.safetensors")
    save_file({k: v for k, v in weights.items() if k != "classifier.bias"}, tmp_path / "old" / "model.safetensors",
              metadata={"format": "pt"})
    old = hyte.HyTEFHForMaskedLM.from_pretrained(tmp_path / "old").eval()
    assert float(old.classifier.bias.abs().sum()) == 0.0
    model.classifier.bias.data.zero_()
    torch.testing.assert_close(old(ids).logits, model.eval()(ids).logits)


@pytest.mark.parametrize("mlm_class,model_class,config", [(hyte.HyTEFHForMaskedLM, hyte.HyTEFHModel, tiny_fh_config),
                                                           (hyte.EucBERTForMaskedLM, hyte.EucBERTModel, tiny_euc_config)])
def test_logit_scale_lives_in_the_embedding_models_only(mlm_class, model_class, config, tmp_path):
    """Contrastive training trains the embedding model's logit scale; the masked-LM loss never uses one. Masked-LM
    checkpoints written while the masked-LM classes still carried one load without complaint, in either class."""
    from safetensors.torch import load_file, save_file

    from hyte.training.models import PLAIN_LOGIT_SCALE, log_logit_scale_parameter, logit_scale

    mlm = mlm_class(config(logit_scale_init=30.0))
    assert not any("logit_scale" in name for name, _ in mlm.named_parameters())
    assert float(model_class(config(logit_scale_init=30.0)).logit_scale.detach()) == pytest.approx(30.0)
    mlm.save_pretrained(tmp_path / "new")
    embedder, info = model_class.from_pretrained(tmp_path / "new", output_loading_info=True)
    assert float(embedder.logit_scale.detach()) == pytest.approx(30.0)  # from the config: the checkpoint has none
    assert not info["missing_keys"]  # (the masked-LM head is unexpected, as in every transformers model)
    weights = load_file(tmp_path / "new" / "model.safetensors")
    save_file({**weights, "hyte.log_logit_scale": torch.tensor(math.log(7.0))}, tmp_path / "new" / "model.safetensors",
              metadata={"format": "pt"})
    old_mlm, info = mlm_class.from_pretrained(tmp_path / "new", output_loading_info=True)
    assert not info["unexpected_keys"] and not info["missing_keys"]
    embedder = model_class.from_pretrained(tmp_path / "new")
    assert float(embedder.logit_scale.detach()) == pytest.approx(7.0)  # an old checkpoint's value is still read
    # Contrastive training on a masked-LM model itself attaches the plain parameter, as for any other encoder.
    assert log_logit_scale_parameter(old_mlm) is getattr(old_mlm, PLAIN_LOGIT_SCALE)
    assert float(logit_scale(embedder, 100.0).detach()) == pytest.approx(7.0)


def test_bad_input_gets_clear_errors():
    with pytest.raises(StrictDataclassClassValidationError, match="split evenly"):
        tiny_fh_config(hidden_size=34)
    with pytest.raises(StrictDataclassClassValidationError, match="curvature"):
        tiny_fh_config(curvature=0.0)
    with pytest.raises(StrictDataclassClassValidationError, match="curvature"):
        tiny_fh_config(curvature=-1.0)
    with pytest.raises(StrictDataclassClassValidationError, match="pooling"):
        tiny_fh_config(pooling="max")
    model = hyte.HyTEFHModel(tiny_fh_config())
    # Token ids are checked where texts come in (encode), not in every forward (a host sync per call).
    from hyte.modeling_hyte import check_token_ids

    for ids in ([[1, 2, 40000]], [[1, -3]]):
        with pytest.raises(ValueError, match=r"input_ids must lie in \[0, 30522\)"):
            check_token_ids(torch.tensor(ids), model.config.vocab_size)
    with pytest.raises(ValueError, match="attention_mask must have the shape"):
        model(torch.tensor([[1, 2, 3]]), torch.ones(1, 4))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(torch.ones(1, 129, dtype=torch.long))
    with torch.no_grad():  # forward reads no values: a sequence that is all padding pools to the origin, finite
        pooled = model(torch.tensor([[1, 2, 3]]), torch.zeros(1, 3)).pooler_output
    torch.testing.assert_close(pooled[0], L.origin(pooled.shape[-1] - 1, model.config.curvature))


def test_euclidean_twin_has_the_same_shape_and_interface():
    fh, euc = tiny_fh_config(), tiny_euc_config()
    for field in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        assert getattr(fh, field) == getattr(euc, field)
    model = hyte.EucBERTForMaskedLM(euc)
    ids = torch.randint(1, 30522, (2, 10))
    out = model(ids, labels=ids)
    assert out.logits.shape == (2, 10, 30522) and out.loss > 0
    fh_params = sum(p.numel() for p in hyte.HyTEFHModel(fh).parameters())
    euc_params = sum(p.numel() for p in hyte.EucBERTModel(euc).parameters())
    assert abs(fh_params - euc_params) / euc_params < 0.05  # comparable capacity: a controlled baseline


def test_auto_classes_are_registered():
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

    config = AutoConfig.for_model("hyte_fh", vocab_size=100, hidden_size=33, num_attention_heads=3)
    assert isinstance(AutoModel.from_config(config), hyte.HyTEFHModel)
    assert isinstance(AutoModelForMaskedLM.from_config(config), hyte.HyTEFHForMaskedLM)
    euc = AutoConfig.for_model("hyte_euc", vocab_size=100, hidden_size=33, num_attention_heads=3)
    assert isinstance(AutoModel.from_config(euc), hyte.EucBERTModel)


@pytest.mark.slow
def test_save_and_remote_code_load_without_hyte_gives_identical_outputs(tmp_path, bert_tokenizer):
    torch.manual_seed(0)
    batch = bert_tokenizer(TEXTS, padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    expected = {}
    for name, model in (("fh", hyte.HyTEFHModel(tiny_fh_config())), ("mlm", hyte.HyTEFHForMaskedLM(tiny_fh_config())),
                        ("euc", hyte.EucBERTModel(tiny_euc_config()))):
        model.eval().save_pretrained(tmp_path / name)
        bert_tokenizer.save_pretrained(tmp_path / name)
        with torch.no_grad():
            out = model(ids, mask)
        expected[name] = (out.logits if name == "mlm" else out.last_hidden_state).tolist()
        files = {p.name for p in (tmp_path / name).iterdir()}
        assert {"config.json", "model.safetensors", "modeling_hyte.py", "configuration_hyte.py", "lorentz.py"} <= files
        assert not any(f.endswith((".bin", ".pt", ".pkl")) for f in files)
    torch.save({"ids": ids, "mask": mask}, tmp_path / "inputs.pt")
    stdout = run_without_hyte(
        """
        import json, sys, torch
        from transformers import AutoModel, AutoModelForMaskedLM
        inputs = torch.load("inputs.pt")
        result = {}
        for name, auto in (("fh", AutoModel), ("mlm", AutoModelForMaskedLM), ("euc", AutoModel)):
            model = auto.from_pretrained(name, trust_remote_code=True).eval()
            assert "transformers_modules" in type(model).__module__, type(model).__module__
            with torch.no_grad():
                out = model(inputs["ids"], inputs["mask"])
            result[name] = (out.logits if name == "mlm" else out.last_hidden_state).tolist()
        print(json.dumps(result))
        """,
        cwd=tmp_path,
    )
    loaded = json.loads(stdout.strip().splitlines()[-1])
    for name in expected:
        assert torch.equal(torch.tensor(loaded[name]), torch.tensor(expected[name])), name


@pytest.mark.slow
@pytest.mark.parametrize("config_factory", [tiny_fh_config, tiny_euc_config])
def test_mlm_trainer_run_on_real_text_lowers_the_loss(tmp_path, bert_tokenizer, config_factory):
    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

    from hyte.data.hpo import load_hpo, mlm_corpus

    texts = mlm_corpus(load_hpo())[:1000]
    dataset = Dataset.from_dict({"text": texts}).map(
        lambda rows: bert_tokenizer(rows["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"]
    )
    torch.manual_seed(0)
    config = config_factory(sparse_prediction=True)
    model_class = hyte.HyTEFHForMaskedLM if config_factory is tiny_fh_config else hyte.EucBERTForMaskedLM
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=40, per_device_train_batch_size=16, learning_rate=5e-3,
                             warmup_steps=4, logging_steps=8, report_to="none", dataloader_pin_memory=False,
                             save_strategy="no", seed=0, disable_tqdm=True)
    trainer = Trainer(model=model_class(config), args=args, train_dataset=dataset, processing_class=bert_tokenizer,
                      data_collator=DataCollatorForLanguageModeling(bert_tokenizer, mlm_probability=0.15, seed=0))
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) >= 5
    assert losses[-1] < losses[0] - 1.0, losses  # nats; ln(30522) = 10.3 at the start


def test_encode_progress_bar_stays_quiet_when_output_is_not_a_terminal(bert_tokenizer, capsys):
    model = hyte.HyTEFHModel(tiny_fh_config()).eval()
    model.encode(["a text"] * 8, bert_tokenizer, role="query", batch_size=2, show_progress_bar=True)
    captured = capsys.readouterr()  # pytest's captured stderr is not a TTY, like a log file
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize("learnable", [False, True])
def test_loading_keeps_a_fixed_curvature_fixed(learnable, tmp_path):
    model = hyte.HyTEFHModel(tiny_fh_config(curvature=2.0, learnable_curvature=learnable))
    model.save_pretrained(tmp_path)
    loaded = hyte.HyTEFHModel.from_pretrained(tmp_path)
    assert float(loaded.curvature) == pytest.approx(2.0)
    trainable = {name for name, p in loaded.named_parameters() if p.requires_grad}
    assert ("log_curvature" in trainable) == learnable


@pytest.mark.parametrize("options, message", [
    ({"max_length": 2.5}, r"max_length must be a whole number > 0; got 2\.5"),  # was range()'s "float ... integer"
    ({"max_length": "64"}, "max_length must be a whole number > 0; got '64'"),  # was "'<' not supported"
    ({"max_length": True}, "max_length must be a whole number > 0; got True"),  # was accepted as 1 token
    ({"max_length": 129}, "between 1 and the model's 128 positions"),
    ({"batch_size": 1.5}, r"batch_size must be a whole number > 0; got 1\.5"),
])
def test_encode_refuses_a_length_or_batch_size_that_is_not_a_whole_number(bert_tokenizer, options, message):
    model = hyte.HyTEFHModel(tiny_fh_config())
    with pytest.raises(ValueError, match=message):
        model.encode(["a heart"], bert_tokenizer, **options)
    assert model.encode(["a heart"], bert_tokenizer, max_length=np.int64(8), batch_size=np.int64(2)).shape == (1, 33)


@pytest.mark.parametrize("texts, message", [(None, "a list of strings; got NoneType"),
                                            (5, "a list of strings; got int"), (["a", None], "item 1 is a NoneType")])
def test_encode_refuses_what_is_not_text_in_one_line(bert_tokenizer, texts, message):
    model = hyte.HyTEFHModel(tiny_fh_config())
    with pytest.raises(TypeError, match=message):
        model.encode(texts, bert_tokenizer)


def test_from_pretrained_of_a_run_or_an_index_folder_says_where_the_model_is(tmp_path):
    """HyTEHModel.from_pretrained(<training run folder>) said transformers' "no file named model.safetensors";
    every HyTE model class now says where the model is. Model folders, subfolder= and Hub ids load as before."""
    import re

    run, index = tmp_path / "run", tmp_path / "index"
    torch.manual_seed(0)
    saved = hyte.HyTEFHModel(tiny_fh_config())
    saved.save_pretrained(run / "final")
    (run / "checkpoint-2").mkdir()
    (run / "run.json").write_text("{}")
    index.mkdir()
    (index / "index.json").write_text(json.dumps({"model": str(run / "final")}))
    for model_class in (hyte.HyTEHModel, hyte.HyTEFHModel, hyte.HyTEFHForMaskedLM, hyte.HyTEPhraseModel):
        with pytest.raises(FileNotFoundError, match=re.escape(f"{run} is a training run's folder, not a model: its "
                                                              f"model is {run / 'final'}")):
            model_class.from_pretrained(run)
        with pytest.raises(FileNotFoundError, match=re.escape(f"{index} is an index folder, not a model: give the "
                                                              f"model it was built with: {run / 'final'}")):
            model_class.from_pretrained(str(index))
        module = run / "final" / "1_HyperbolicPooling"  # A sentence-transformers module folder of a model
        module.mkdir(exist_ok=True)
        (run / "final" / "modules.json").write_text("[]")
        with pytest.raises(FileNotFoundError, match=re.escape(f"{module} is one module of the sentence-transformers "
                                                              f"model {run / 'final'}, not a model: give {run / 'final'}")):
            model_class.from_pretrained(module)
        # A LoRA run's adapter and a checkpoint: each named, and the run's final model offered instead.
        (run / "adapter").mkdir(exist_ok=True)
        (run / "adapter" / "adapter_config.json").write_text("{}")
        (run / "checkpoint-2" / "trainer_state.json").write_text("{}")
        for folder, kind in ((run / "adapter", "is a LoRA adapter"),
                             (run / "checkpoint-2", f"is a checkpoint of the training run {run}")):
            with pytest.raises(FileNotFoundError, match=re.escape(f"{folder} {kind}")) as refused:
                model_class.from_pretrained(folder)
            assert f"its finished model is {run / 'final'}" in str(refused.value)
        with pytest.raises(OSError) as hub:  # a Hub id: transformers' own answer, as before
            model_class.from_pretrained("no-such-org/no-such-model")
        assert "not a model" not in str(hub.value)
    ids = torch.tensor([[101, 2054, 102]])
    for loaded in (hyte.HyTEFHModel.from_pretrained(run / "final"), hyte.HyTEFHModel.from_pretrained(run, subfolder="final")):
        torch.testing.assert_close(loaded(ids).pooler_output, saved(ids).pooler_output)


def test_a_demo_rerun_through_a_symbolic_link_to_its_folder_changes_nothing(tmp_path, minilm_path):
    """`hyte demo --output-dir LINK` (LINK -> the first run's folder) rewrote index.json and metadata.json to
    name the model by the link's path; the demo now records the resolved path, the same on every run."""
    from hyte.demo import run_demo

    folder, link = tmp_path / "demo", tmp_path / "link"
    run_demo(folder, num_documents=2)
    recorded = {name: (folder / "index" / name).read_bytes() for name in ("index.json", "metadata.json")}
    assert json.loads(recorded["index.json"])["model"] == str((folder / "model").resolve())
    link.symlink_to(folder, target_is_directory=True)
    run_demo(link, num_documents=2)
    assert {name: (folder / "index" / name).read_bytes() for name in recorded} == recorded


def test_hyte_h_is_not_built_on_a_hyte_model(tmp_path, tiny_bert):
    """New-user trial: model.build hyte_h on a HyTE model's folder nested one HyTE-H in another, which failed only
    in forward with "'NoneType' object is not callable"."""
    hyte.HyTEHModel.from_base(tiny_bert).save_pretrained(tmp_path / "hyte-h")
    with pytest.raises(ValueError, match=r"is already a HyTE model \(hyte_h\).*model.build: load"):
        hyte.HyTEHModel.from_base(str(tmp_path / "hyte-h"))
