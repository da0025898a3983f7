"""``hyte bench [--quick]``: run the speed benchmarks (``benchmarks/bench_*.py`` of a source checkout) and
regenerate the report."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from ..results import check_result_output, machine_info, portable_command, write_result
from .common import positive_int

# A benchmark run measures this machine: its files go beside the other outputs, not over the tracked results and
# report, which a run replaces only when asked (--output-dir benchmarks/results --markdown BENCHMARKS.md).
BENCH_OUTPUT_DIR = "hyte-output/bench"

__all__ = ["add_commands", "find_benchmarks_dir"]


# name: (script, options for --quick, options for a full run)
BENCHMARKS = {
    "forward": ("bench_forward.py", ["--shapes", "tiny", "--repeats", "3"], []),
    "encode": ("bench_encode.py", ["--texts", "64", "--repeats", "1"], []),
    "index": ("bench_index.py", ["--num-docs", "5000", "--queries", "200", "--repeats", "1"], []),
}


def find_benchmarks_dir(explicit: str | None = None) -> Path:
    """The folder of the ``bench_*.py`` scripts: ``explicit``, else ``./benchmarks``, else the source checkout's."""
    candidates = [Path(explicit)] if explicit else [Path.cwd() / "benchmarks",
                                                    Path(__file__).resolve().parents[3] / "benchmarks"]
    for candidate in candidates:
        if (candidate / "bench_index.py").is_file():
            return candidate
    raise FileNotFoundError("benchmark scripts not found (looked for bench_index.py in "
                            f"{', '.join(map(str, candidates))}); run from the repository root or pass "
                            "--benchmarks-dir")


def _bench(args: argparse.Namespace) -> int:
    from ..report import write_benchmarks_md
    from ..report.build import check_report_output

    directory = find_benchmarks_dir(args.benchmarks_dir)
    output_dir = Path(args.output_dir)
    check_report_output(args.markdown or output_dir / "BENCHMARKS.md")  # before the benchmarks run
    names = args.only or list(BENCHMARKS)
    outputs = {name: output_dir / f"{name}{'_quick' if args.quick else ''}.json" for name in names}
    for name, output in outputs.items():  # an earlier run's result of the same benchmark, or nothing
        check_result_output(output, name)
    output_dir.mkdir(parents=True, exist_ok=True)
    failed = []
    for name, output in outputs.items():
        script, quick, full = BENCHMARKS[name]
        command = [sys.executable, str(directory / script), *(quick if args.quick else full),
                   "--threads", str(args.threads), "--output", str(output)]
        shown = portable_command(shlex.join(["python", *command[1:]]))
        print(f"[bench] {shown}", flush=True)
        started = time.perf_counter()
        completed = subprocess.run(command, text=True)
        seconds = time.perf_counter() - started
        if completed.returncode != 0 or not output.is_file():
            print(f"[bench] {name} failed (exit status {completed.returncode})", file=sys.stderr)
            failed.append(name)
            continue
        payload = json.loads(output.read_text(encoding="utf-8"))
        payload.setdefault("benchmark", name)
        payload["meta"] = {"command": shown, "quick": args.quick, "wall_s": round(seconds, 1), **machine_info()}
        write_result(output, payload, replace=True)  # the script's own output, just written: checked above
        print(f"[bench] {name}: {seconds:.0f} s -> {output}", flush=True)
    path = write_benchmarks_md(output_dir, args.markdown or output_dir / "BENCHMARKS.md")
    print(f"wrote {path}")
    if failed:
        print(f"[bench] failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def add_commands(subparsers) -> None:
    bench = subparsers.add_parser("bench", help="run the speed benchmarks and regenerate BENCHMARKS.md")
    bench.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    bench.add_argument("--output-dir", default=BENCH_OUTPUT_DIR,
                       help="where the result JSON go (benchmarks/results to record them)")
    bench.add_argument("--markdown", default=None,
                       help="the report to write (default: OUTPUT_DIR/BENCHMARKS.md; BENCHMARKS.md to record it)")
    bench.add_argument("--only", nargs="+", choices=list(BENCHMARKS), help="run only these benchmarks")
    bench.add_argument("--threads", type=positive_int, default=2)
    bench.add_argument("--benchmarks-dir", help="folder of the bench_*.py scripts (default: ./benchmarks)")
    bench.set_defaults(func=_bench)
