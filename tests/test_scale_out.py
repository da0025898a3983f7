"""Scale-out of contrastive training: gradient caching and cross-process negatives (2 real gloo processes)."""

from __future__ import annotations

import gc
import os
import socket
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from transformers import BertConfig, BertModel, TrainingArguments

from hyte import HyTEHModel
from hyte.training.losses import contrastive_loss
from hyte.training.models import embed, embed_queries_and_documents
from hyte.training.scale_out import average_across_processes, contrastive_loss_across_processes
from hyte.training.trainer import ContrastiveCollator, ContrastiveTrainer

TEXTS = [
    ("short fingers", "Abnormally short fingers or toes."),
    ("curved spine", "An abnormal lateral curvature of the spine."),
    ("big heart", "Increased size of the heart, clinically defined as an enlarged cardiac silhouette."),
    ("low muscle tone", "Hypotonia is an abnormally low muscle tone."),
    ("small head", "Occipitofrontal head circumference below the 3rd percentile."),
    ("seizures", "A seizure is an intermittent abnormality of nervous system physiology."),
    ("short stature", "A height below that which is expected according to age and gender norms."),
    ("cleft lip", "A gap or groove in the upper lip."),
]
EXAMPLES = [{"query": q, "document": d, "negatives": [TEXTS[(i + 3) % len(TEXTS)][1] + " (variant)"]}
            for i, (q, d) in enumerate(TEXTS)]


def tiny_encoder(dropout: float = 0.0) -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, hidden_dropout_prob=dropout,
                                attention_probs_dropout_prob=dropout))


def tiny_hyte_h(tmp_path, dropout: float = 0.0) -> HyTEHModel:
    tiny_encoder(dropout).save_pretrained(tmp_path / "encoder")
    torch.manual_seed(0)
    return HyTEHModel.from_base(str(tmp_path / "encoder"), hidden_size=17)


def gradients_of(model, tmp_path, tokenizer, hyperbolic: bool, mini_batch_size: int | None, seed: int = 0):
    trainer = ContrastiveTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path / "run"),
                                                                     report_to="none", use_cpu=True),
                                 hyperbolic=hyperbolic, mini_batch_size=mini_batch_size)
    inputs = ContrastiveCollator(tokenizer)(EXAMPLES)
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss = trainer.compute_loss(model, inputs)
    loss.backward()
    return float(loss), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def assert_same(reference, cached):
    loss, grads = reference
    cached_loss, cached_grads = cached
    assert cached_loss == pytest.approx(loss, rel=1e-5)
    assert grads.keys() == cached_grads.keys() and len(grads) >= 5  # LoRA: 4 adapter matrices and the logit scale
    for name in grads:
        torch.testing.assert_close(cached_grads[name], grads[name], rtol=1e-4, atol=1e-5, msg=lambda message, name=name: f"{name}: {message}")


@pytest.mark.parametrize("kind", ["hyperbolic", "euclidean", "lora"])
def test_gradient_cache_gives_the_loss_and_gradients_of_the_whole_batch(kind, tmp_path, bert_tokenizer):
    def build():
        if kind == "euclidean":
            return tiny_encoder()
        model = tiny_hyte_h(tmp_path)
        if kind == "lora":
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(r=4, target_modules=["query", "value"]))
        return model

    hyperbolic = kind != "euclidean"
    # 8 queries and 16 documents in chunks of 2 (b / 4): 12 chunk passes for one batch.
    assert_same(gradients_of(build(), tmp_path, bert_tokenizer, hyperbolic, None),
                gradients_of(build(), tmp_path, bert_tokenizer, hyperbolic, 2))


def test_gradient_cache_replays_each_chunks_dropout(tmp_path, bert_tokenizer):
    """With dropout on, the second pass must see the masks of the first: its gradients equal those of the same
    chunks embedded with a graph in the same order (the full batch draws different masks, so it cannot be the
    reference here)."""
    model = tiny_hyte_h(tmp_path, dropout=0.1)
    inputs = ContrastiveCollator(bert_tokenizer)(EXAMPLES)
    model.train()
    torch.manual_seed(0)
    queries = torch.cat([embed(model, inputs["query_input_ids"][i : i + 2], inputs["query_attention_mask"][i : i + 2],
                               True) for i in range(0, 8, 2)])
    documents = torch.cat([embed(model, inputs["document_input_ids"][i : i + 2],
                                 inputs["document_attention_mask"][i : i + 2], True) for i in range(0, 16, 2)])
    loss = contrastive_loss(queries, documents, logit_scale=model.logit_scale, hyperbolic=True,
                            exclude=inputs["exclude_mask"])
    loss.backward()
    reference = (float(loss), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert_same(reference, gradients_of(model, tmp_path, bert_tokenizer, True, 2, seed=0))


# ---------------------------------------------------------------------------------------------- two processes


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _shard_step(rank: int, world: int, port: int, folder: str, gather: bool, result_file: str) -> None:
    """One process of a 2-process DDP step on its half of the batch; rank 0 saves the loss and gradients."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        _ddp_step(rank, world, folder, gather, result_file)
        gc.collect()  # DDP's reducer must be gone before its process group: gloo's teardown hangs otherwise
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _ddp_step(rank: int, world: int, folder: str, gather: bool, result_file: str) -> None:
    """The step itself: its DDP model and graph are freed when it returns."""
    model = HyTEHModel.from_pretrained(folder)
    model._ddp_params_and_buffers_to_ignore = ["log_logit_scale"]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    inputs = torch.load(os.path.join(folder, f"shard{rank}.pt"))
    queries, documents = embed_queries_and_documents(ddp, inputs, True, together=True)  # the trainer's path
    loss, logged = contrastive_loss_across_processes(queries, documents, logit_scale=model.logit_scale,
                                                     exclude=inputs["exclude_mask"], gather=gather,
                                                     hyperbolic=True)
    loss.backward()
    average_across_processes([model.log_logit_scale])
    losses = [torch.zeros(()) for _ in range(world)]
    dist.all_gather(losses, logged.detach())
    if rank == 0:
        torch.save({"losses": losses, "grads": {n: p.grad for n, p in model.named_parameters()}}, result_file)


@pytest.mark.parametrize("gather", [True, False])
def test_two_processes_train_like_one_process(gather, tmp_path, bert_tokenizer):
    """2 gloo processes x 4 examples: with gathered negatives, the loss and gradients of one process with all 8
    examples; without, those of the mean of the two halves' losses (each half its own negatives)."""
    model = tiny_hyte_h(tmp_path)
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    collate = ContrastiveCollator(bert_tokenizer)
    for rank in range(2):
        torch.save(collate(EXAMPLES[rank * 4 : rank * 4 + 4]), folder / f"shard{rank}.pt")
    result_file = str(tmp_path / "result.pt")
    processes = mp.spawn(_shard_step, args=(2, _free_port(), str(folder), gather, result_file), nprocs=2, join=False)
    deadline = time.monotonic() + 300
    while not processes.join(timeout=5):  # a hung collective must fail the test, not stall the suite
        if time.monotonic() > deadline:
            for process in processes.processes:
                process.kill()
            pytest.fail("the 2-process step did not finish within 300 s")
    result = torch.load(result_file)

    single = HyTEHModel.from_pretrained(folder)
    if gather:
        batches = [collate(EXAMPLES)]
    else:
        batches = [collate(EXAMPLES[:4]), collate(EXAMPLES[4:])]
    losses = []
    for inputs in batches:
        queries = embed(single, inputs["query_input_ids"], inputs["query_attention_mask"], True)
        documents = embed(single, inputs["document_input_ids"], inputs["document_attention_mask"], True)
        losses.append(contrastive_loss(queries, documents, logit_scale=single.logit_scale, hyperbolic=True,
                                       exclude=inputs["exclude_mask"]))
    expected = torch.stack(losses).mean()
    expected.backward()
    if gather:  # every process logs the same global loss
        assert float(result["losses"][0]) == pytest.approx(float(expected), rel=1e-5)
        assert float(result["losses"][1]) == pytest.approx(float(expected), rel=1e-5)
    else:  # each process logs its own half's loss
        assert float(torch.stack(result["losses"]).mean()) == pytest.approx(float(expected), rel=1e-5)
    grads = {n: p.grad for n, p in single.named_parameters() if p.grad is not None}
    assert len(grads) > 10
    for name, grad in grads.items():
        torch.testing.assert_close(result["grads"][name], grad, rtol=1e-4, atol=1e-5, msg=lambda message, name=name: f"{name}: {message}")


def _torchrun_run(tmp_path, tokenizer, max_examples: int, **training) -> list[str]:
    """A tiny HyTE-H contrastive run config in tmp_path/run.json (output tmp_path/run); the 2-process torchrun
    command that trains it."""
    import json
    import sys

    tiny_encoder().save_pretrained(tmp_path / "encoder")
    tokenizer.save_pretrained(tmp_path / "encoder")
    config = {"stage": "contrastive", "model": {"build": "hyte_h", "path": str(tmp_path / "encoder"),
                                                 "options": {"hidden_size": 17}},
              "data": {"source": "hpo", "max_examples": max_examples, "min_depth": 3},
              "training": {"output_dir": str(tmp_path / "run"), "per_device_train_batch_size": 4,
                           "logging_steps": 1, "save_steps": 2, "seed": 0, **training},
              "loss": {"max_query_length": 16, "max_document_length": 32}, "evaluation": {"enabled": False}}
    (tmp_path / "run.json").write_text(json.dumps(config))
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
            str(_free_port()), "-m", "hyte.cli", "train", "contrastive", "--config", str(tmp_path / "run.json")]


def test_torchrun_trains_with_two_processes_and_one_writer(tmp_path, bert_tokenizer):
    """`torchrun --nproc_per_node 2 -m hyte.cli train contrastive`: both processes train (gathered negatives on by
    default), the first alone writes checkpoints and the final model, and --resume continues in 2 processes."""
    import json
    import subprocess

    command = _torchrun_run(tmp_path, bert_tokenizer, max_examples=32, max_steps=2)
    output = tmp_path / "run"

    def torchrun(*extra):
        result = subprocess.run([*command, *extra], capture_output=True, text=True, timeout=600,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert result.returncode == 0, result.stderr[-3000:]
        return result

    torchrun()
    card = json.loads((output / "final" / "hyte_card.json").read_text())
    assert card["training"]["steps"] == 2 and (output / "final" / "model.safetensors").is_file()
    state = json.loads((output / "checkpoint-2" / "trainer_state.json").read_text())
    assert [entry["step"] for entry in state["log_history"] if "loss" in entry] == [1, 2]
    torchrun("--resume", "--set", "training.max_steps=3")
    card = json.loads((output / "final" / "hyte_card.json").read_text())
    assert card["training"]["steps"] == 3


def test_killing_one_process_stops_the_run_and_resume_continues(tmp_path, bert_tokenizer):
    """SIGKILL one of 2 torchrun workers mid-run: torchrun stops the other and exits non-zero naming the failed
    worker; `--resume` then continues from the last checkpoint."""
    import json
    import signal
    import subprocess

    import psutil

    command = _torchrun_run(tmp_path, bert_tokenizer, max_examples=64, max_steps=10_000, save_total_limit=2)
    output = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def checkpoints() -> list[int]:
        return sorted(int(path.name.split("-")[1]) for path in output.glob("checkpoint-*"))

    # Output to files: an unread pipe fills up and blocks the workers' logging.
    with open(tmp_path / "stdout.txt", "w") as stdout, open(tmp_path / "stderr.txt", "w") as stderr:
        run = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True, env=env)
        try:
            deadline = time.monotonic() + 300
            while not (checkpoints() and checkpoints()[-1] >= 4) and time.monotonic() < deadline and run.poll() is None:
                time.sleep(0.2)
            workers = [p for p in psutil.Process(run.pid).children(recursive=True)
                       if "hyte.cli" in " ".join(p.cmdline())]
            assert len(workers) == 2 and run.poll() is None, "the run did not reach its second checkpoint"
            workers[1].send_signal(signal.SIGKILL)
            run.wait(timeout=300)
        finally:
            for process in [*psutil.Process(run.pid).children(recursive=True), run] if run.poll() is None else []:
                process.kill()
    errors = (tmp_path / "stderr.txt").read_text()
    assert run.returncode != 0 and "FAILED" in errors and "Signal 9 (SIGKILL)" in errors, errors[-2000:]
    assert not (output / "final").exists()

    last = checkpoints()[-1]
    resumed = subprocess.run([*command, "--resume", "--set", f"training.max_steps={last + 2}"], capture_output=True,
                             text=True, timeout=600, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((output / "final" / "hyte_card.json").read_text())["training"]["steps"] == last + 2


def test_a_damaged_shard_manifest_is_named_with_how_to_encode_again(tmp_path, tiny_hyte_h_dir, capsys):
    """`hyte index build --from-vectors` on a folder whose manifest.json was cut short said only json's
    "Expecting value: line 2 column 1" (no file); so did re-encoding into it. The rerun the message asks for works."""
    from hyte.cli import main
    from hyte.corpus import encode_corpus

    corpus, vectors = tmp_path / "corpus.txt", tmp_path / "vectors"
    corpus.write_text("".join(f"{document}\n" for _, document in TEXTS))
    encode_corpus(tiny_hyte_h_dir, corpus, vectors, shard_size=4, show_progress_bar=False)
    manifest = vectors / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    assert main(["index", "build", "--from-vectors", str(vectors), "--output", str(tmp_path / "index")]) == 2
    error = capsys.readouterr().err
    assert f"{manifest} is not valid JSON" in error and "rerun the hyte encode --corpus command" in error, error
    assert "--overwrite" in error
    with pytest.raises(ValueError, match=r"manifest\.json is not valid JSON .*with --overwrite"):
        encode_corpus(tiny_hyte_h_dir, corpus, vectors, shard_size=4, show_progress_bar=False)
    assert encode_corpus(tiny_hyte_h_dir, corpus, vectors, shard_size=4, overwrite=True,
                         show_progress_bar=False).encoded == 2  # the remedy: every shard is encoded again
    assert main(["index", "build", "--from-vectors", str(vectors), "--output", str(tmp_path / "index")]) == 0
