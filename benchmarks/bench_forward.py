"""HyTE-FH forward throughput as a ratio to its same-shape Euclidean twin (EucBERT), measured side by side.

    python benchmarks/bench_forward.py [--threads 2] [--dtypes float32 bfloat16] [--output benchmarks/results/forward.json]

Both models see the same token ids, batch, sequence length, thread count and precision (bfloat16: CPU autocast, as
mixed-precision training runs them); runs alternate between the models so that machine noise hits both alike.
Target (issue 46): ratio >= 0.8 for the tiny and the base shape, in float32 and bfloat16 (issue 2 asked 0.6).

The allocator matters at the tiny shape: glibc's malloc returns freed tensors' pages to the OS, and on these VMs
every forward then pays the page faults of touching them again (more for HyTE-FH, whose temporaries are larger).
``MALLOC_*`` settings (or an ``LD_PRELOAD``ed jemalloc / tcmalloc, as PyTorch's CPU tuning guide advises) given to
the process are recorded in the result's command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from hyte import EucBERTConfig, EucBERTModel, HyTEFHConfig, HyTEFHModel

SHAPES = {
    # name: (hyperbolic config fields, batch, tokens); the twin gets the same fields.
    "tiny": (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256), 32, 64),
    "base": (dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072), 8, 128),
}


TARGET = 0.8


def seconds_per_batch(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, dtype: str) -> float:
    start = time.perf_counter()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
        model(ids, mask)
    return time.perf_counter() - start


def bench_shape(name: str, repeats: int, dtype: str) -> dict:
    fields, batch, tokens = SHAPES[name]
    torch.manual_seed(0)
    models = {
        "hyte_fh": HyTEFHModel(HyTEFHConfig(vocab_size=30522, **fields)).eval(),
        "eucbert": EucBERTModel(EucBERTConfig(vocab_size=30522, **fields)).eval(),
    }
    ids = torch.randint(1, 30522, (batch, tokens))
    mask = torch.ones(batch, tokens)
    mask[batch // 2 :, tokens // 2 :] = 0  # half the batch padded: the masking path is exercised
    for model in models.values():  # warm-up
        seconds_per_batch(model, ids, mask, dtype)
    times = {key: [] for key in models}
    for _ in range(repeats):
        for key, model in models.items():
            times[key].append(seconds_per_batch(model, ids, mask, dtype))
    result = {"shape": name, "dtype": dtype, "batch": batch, "tokens": tokens, **fields}
    for key, values in times.items():
        result[f"{key}_sequences_per_s"] = batch / statistics.median(values)
    result["ratio_fh_to_euclidean"] = result["hyte_fh_sequences_per_s"] / result["eucbert_sequences_per_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--dtypes", nargs="+", default=["float32"], choices=["float32", "bfloat16"])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = [bench_shape(name, args.repeats, dtype) for dtype in args.dtypes for name in args.shapes]
    print(f"{'shape':6} {'dtype':9} {'HyTE-FH seq/s':>14} {'EucBERT seq/s':>14} {'ratio':>7}  (target >= {TARGET})")
    for r in results:
        print(f"{r['shape']:6} {r['dtype']:9} {r['hyte_fh_sequences_per_s']:14.1f} {r['eucbert_sequences_per_s']:14.1f} "
              f"{r['ratio_fh_to_euclidean']:7.2f}")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        payload = {"benchmark": "forward", "threads": args.threads, "torch": torch.__version__, "target": TARGET,
                   "command": " ".join([*(f"{k}={v}" for k, v in sorted(os.environ.items())
                                          if k.startswith("MALLOC_") or k == "LD_PRELOAD"),
                                        "python benchmarks/bench_forward.py", *sys.argv[1:]]),
                   "machine": platform.platform(), "processor": platform.processor(),
                   "date": time.strftime("%Y-%m-%d"), "results": results}
        args.output.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
