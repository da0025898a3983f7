"""HyTE-H(MiniLM) encode throughput as a ratio to plain MiniLM with mean pooling, side by side; peak memory.

    python benchmarks/bench_encode.py [--texts 512] [--batch-size 32] [--threads 2] [--output FILE.json]

Same texts (real HPO definitions), batch size and threads for both; the two encoders alternate over repeats so
machine noise hits both. Peak memory is measured in a fresh child process per encoder (peak RSS while encoding,
and what encoding adds over the loaded model). Target (issue 46): ratio >= 0.95 (issue 3 asked 0.9).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path


TARGET = 0.95


def load(kind: str):
    from transformers import AutoModel, AutoTokenizer

    from hyte import HyTEHModel
    from hyte.bundled import bundled_minilm_path
    from hyte.encoders import EuclideanEncoder, HyteEncoder

    base = bundled_minilm_path()
    tokenizer = AutoTokenizer.from_pretrained(base)
    if kind == "hyte-h":
        return HyteEncoder(HyTEHModel.from_base(base), tokenizer)
    return EuclideanEncoder(AutoModel.from_pretrained(base), tokenizer)


def texts(n: int) -> list[str]:
    from hyte.data.hpo import load_hpo

    definitions = sorted(t.definition for t in load_hpo().terms.values() if t.definition)
    return definitions[:n]


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_child(kind: str, n: int, batch_size: int, threads: int) -> tuple[float, float]:
    """Run in a child: (peak resident MiB while encoding, MiB added by encoding over the loaded model).

    Writing 5 to /proc/self/clear_refs resets the kernel's peak-RSS mark (Linux), so loading does not count.
    """
    import gc

    import torch

    torch.set_num_threads(threads)
    encoder, corpus = load(kind), texts(n)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    loaded = _status_mib("VmRSS")
    encoder.encode(corpus, batch_size=batch_size, show_progress_bar=False)
    peak = _status_mib("VmHWM")
    return peak, peak - loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(peak_memory_child(args.memory_child, args.texts, args.batch_size, args.threads)))
        return

    import torch

    torch.set_num_threads(args.threads)
    corpus = texts(args.texts)
    encoders = {"hyte-h": load("hyte-h"), "minilm-mean": load("minilm-mean")}
    for encoder in encoders.values():  # warm-up
        encoder.encode(corpus[: args.batch_size], batch_size=args.batch_size)
    seconds = {key: [] for key in encoders}
    for _ in range(args.repeats):
        for key, encoder in encoders.items():
            start = time.perf_counter()
            encoder.encode(corpus, batch_size=args.batch_size, show_progress_bar=False)
            seconds[key].append(time.perf_counter() - start)
    throughput = {key: len(corpus) / statistics.median(values) for key, values in seconds.items()}
    memory = {}
    for key in encoders:
        child = subprocess.run([sys.executable, __file__, "--memory-child", key, "--texts", str(args.texts),
                                "--batch-size", str(args.batch_size), "--threads", str(args.threads)],
                               capture_output=True, text=True, check=True)
        memory[key] = json.loads(child.stdout.strip().splitlines()[-1])
    ratio = throughput["hyte-h"] / throughput["minilm-mean"]
    print(f"{'encoder':12} {'texts/s':>9} {'peak RSS MiB':>13} {'added by encoding MiB':>22}")
    for key in encoders:
        print(f"{key:12} {throughput[key]:9.1f} {memory[key][0]:13.1f} {memory[key][1]:22.1f}")
    print(f"throughput ratio HyTE-H / MiniLM: {ratio:.3f} (target >= {TARGET})")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({
            "benchmark": "encode", "target": TARGET, "texts": len(corpus), "batch_size": args.batch_size, "threads": args.threads,
            "texts_per_s": throughput, "peak_rss_mib": {k: v[0] for k, v in memory.items()},
            "encode_added_mib": {k: v[1] for k, v in memory.items()}, "ratio_hyte_h_to_minilm": ratio,
            "machine": platform.platform(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "command": "python benchmarks/bench_encode.py " + " ".join(sys.argv[1:]),
        }, indent=2))


if __name__ == "__main__":
    main()
