"""Costs of scaling contrastive training out, measured side by side in one run on this machine.

1. Peak memory of one contrastive step (HyTE-H on the bundled all-MiniLM-L6-v2: embed queries and documents,
   InfoNCE, backward) by batch size, without and with gradient caching (chunks of --chunk texts). Each
   configuration runs in a fresh process; the number reported is that process's peak resident memory above its
   resident memory after loading the model and the batch.
2. Step time of 2 gloo processes x batch b with gathered negatives, against 1 process x b and 1 process x 2b (the
   batch the 2 processes train like).

    python benchmarks/bench_scale_out.py [--batches 8 16 32 64] [--chunk 8] [--steps 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist


def _batch(size: int):
    from transformers import AutoTokenizer

    from hyte.bundled import bundled_minilm_path
    from hyte.data.hpo import load_hpo
    from hyte.training.trainer import ContrastiveCollator

    terms = [t for t in load_hpo().terms.values() if t.definition][: 2 * size]
    examples = [{"query": t.name, "document": t.definition} for t in terms[:size]]
    tokenizer = AutoTokenizer.from_pretrained(bundled_minilm_path())
    return ContrastiveCollator(tokenizer, max_query_length=32, max_document_length=128)(examples)


def _model():
    from hyte import HyTEHModel
    from hyte.bundled import bundled_minilm_path

    torch.manual_seed(0)
    return HyTEHModel.from_base(bundled_minilm_path()).train()


def _step(model, inputs, chunk: int | None, gather: bool = False) -> None:
    from hyte.training.models import embed, embed_queries_and_documents
    from hyte.training.scale_out import GradientCache, contrastive_loss_across_processes

    def loss_of(queries, documents):
        return contrastive_loss_across_processes(queries, documents, logit_scale=model.logit_scale if not hasattr(
            model, "module") else model.module.logit_scale, exclude=inputs["exclude_mask"], gather=gather,
            hyperbolic=True)[0]

    if chunk:
        cache = GradientCache(lambda ids, mask: embed(model, ids, mask, True), chunk)
        loss = cache.loss((inputs["query_input_ids"], inputs["query_attention_mask"]),
                          (inputs["document_input_ids"], inputs["document_attention_mask"]), loss_of, [])
    else:
        loss = loss_of(*embed_queries_and_documents(model, inputs, True, together=gather))
    loss.backward()
    model.zero_grad(set_to_none=True)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kilobytes


def memory_child(batch: int, chunk: int | None) -> None:
    model, inputs = _model(), _batch(batch)
    before = _peak_rss_mb()
    _step(model, inputs, chunk)
    print(json.dumps({"batch": batch, "chunk": chunk, "step_mb": round(_peak_rss_mb() - before, 1)}))


def timing_child(rank: int, world: int, port: int, batch: int, steps: int) -> None:
    torch.set_num_threads(1)  # one core per process, and the same for the 1-process runs
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    _timed_steps(rank, world, batch, steps)
    if world > 1:
        gc.collect()  # DDP's reducer must be gone before its process group: gloo's teardown hangs otherwise
        dist.destroy_process_group()


def _timed_steps(rank: int, world: int, batch: int, steps: int) -> None:
    model, inputs = _model(), _batch(batch)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    _step(model, inputs, None, gather=world > 1)  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        _step(model, inputs, None, gather=world > 1)
    if rank == 0:
        print(json.dumps({"world": world, "batch": batch, "seconds_per_step": (time.perf_counter() - start) / steps}))


def _run(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--chunk", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *values = args.child
        if kind == "memory":
            memory_child(int(values[0]), int(values[1]) or None)
        else:
            world, batch = int(values[0]), int(values[1])
            if world == 1:
                timing_child(0, 1, 0, batch, args.steps)
            else:
                torch.multiprocessing.spawn(timing_child, args=(world, _free_port(), batch, args.steps), nprocs=world)
        return

    print(f"1. peak memory of one contrastive step above the loaded model (MB), chunks of {args.chunk} texts")
    print(f"{'batch':>6} {'whole batch':>12} {'cached':>8} {'ratio':>6}")
    for batch in args.batches:
        whole = _run("--child", "memory", str(batch), "0")["step_mb"]
        cached = _run("--child", "memory", str(batch), str(args.chunk))["step_mb"]
        print(f"{batch:>6} {whole:>12.1f} {cached:>8.1f} {cached / max(whole, 1e-9):>6.2f}")
    b = args.batches[0]
    one = _run("--steps", str(args.steps), "--child", "timing", "1", str(b))["seconds_per_step"]
    double = _run("--steps", str(args.steps), "--child", "timing", "1", str(2 * b))["seconds_per_step"]
    two = _run("--steps", str(args.steps), "--child", "timing", "2", str(b))["seconds_per_step"]
    print(f"\n2. step time, one thread per process, {args.steps} steps after a warm-up")
    print(f"1 process x {b}: {one:.2f} s; 1 process x {2 * b}: {double:.2f} s; 2 processes x {b} (gathered): "
          f"{two:.2f} s")
    print(f"ratio 2 processes x {b} / 1 process x {b}: {two / one:.2f}; / 1 process x {2 * b}: {two / double:.2f}")


if __name__ == "__main__":
    main()
