"""The ``hyte`` command line.

    hyte quickstart                             build, fine-tune, evaluate, save, index, search (the main job)
    hyte demo                                   build HyTE-H on the bundled MiniLM, index HPO definitions, search
    hyte encode --model M --input F --output O  texts (.txt one per line, or .jsonl with "text") -> .npy/.safetensors
    hyte index build --model M --input F --output DIR [--kind flat|ivf|hnsw] [--phrase]
    hyte index search --index DIR --model M --query TEXT [--k 10] [--rerank phrase|hybrid|lexical]
    hyte rag "QUESTION" --index DIR [--model M] [--k 4] [--generator PATH_OR_ID]   answer with citations, offline
    hyte train mlm|contrastive|finetune|phrase --config FILE [--resume]
    hyte train compatible --old OLD_MODEL --config FILE    a new model whose queries search OLD_MODEL's index
    hyte eval retrieval|hierarchy|build-hierarchy|radius|report|mteb ...
    hyte bench [--quick]                        speed and ANN benchmarks -> benchmarks/results, BENCHMARKS.md
    hyte push MODEL_DIR --repo-id ORG/NAME [--private] [--revision R] [--dry-run DIR] [--adapter]
    hyte export onnx MODEL_DIR [--output FILE]    one ONNX graph: token ids -> documents and flipped queries

Errors a user can fix (bad files, bad options) are printed as one line and exit with status 2. Heavy libraries
(torch, transformers, FAISS, numpy) are imported by the commands that run, so ``--help`` and option errors are quick.
Each command group is a module of this package; library code never imports it.
"""

from __future__ import annotations

import argparse
import sys

from . import bench, eval, export, index, postgres, push, quickstart, rag, train
from .common import Parser, UserError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="hyte", description="Hyperbolic text embeddings and retrieval.")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (quickstart, index, rag, export, train, eval, bench, push, postgres):
        group.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UserError, ValueError, TypeError, OSError, ImportError) as error:  # OSError: missing, existing, unreadable files
        print(f"hyte {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line instead of a traceback (hyte train says what its run kept)
        print(f"hyte {args.command}: interrupted", file=sys.stderr)
        return 130  # the shell's code for a command ended by SIGINT


if __name__ == "__main__":
    sys.exit(main())
