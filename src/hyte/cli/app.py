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

Errors a user can fix (bad files, bad options) are printed as one line and exit with status 2; any other error is
a bug, named as one (status 1); ``hyte --debug COMMAND`` shows the traceback of either. Heavy libraries
(torch, transformers, FAISS, numpy) are imported by the commands that run, so ``--help`` and option errors are quick.
Each command group is a module of this package; library code never imports it.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from ..errors import HyteError
from . import bench, eval, export, index, postgres, push, quickstart, rag, train
from .common import Parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="hyte", description="Hyperbolic text embeddings and retrieval.")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of any error (before the command: hyte --debug train ...)")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (quickstart, index, rag, export, train, eval, bench, push, postgres):
        group.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line instead of a traceback (hyte train says what its run kept)
        print(f"hyte {args.command}: interrupted", file=sys.stderr)
        return 130  # the shell's code for a command ended by SIGINT
    except Exception as error:
        if args.debug:
            raise
        if _for_the_user(error):
            print(f"hyte {args.command}: error: {error}", file=sys.stderr)
            return 2
        print(f"hyte {args.command}: internal error: {type(error).__name__}: {error}\nThis is a bug in hyte, not a "
              f"problem with what you gave it: rerun with hyte --debug {args.command} ... for the traceback and "
              "report it.", file=sys.stderr)
        return 1


def _for_the_user(error: Exception) -> bool:
    """Whether ``error`` tells the user what to fix: a ``HyteError`` (a shard that did not answer, a Debian package
    to install, ...), a ValueError, OSError (missing, existing, unreadable files) or ImportError, or a TypeError
    raised on purpose by a ``raise`` statement (a wrong kind of argument). A TypeError or AttributeError the
    interpreter raised (calling None, a missing attribute) is a bug, whose one-line message would only mislead."""
    if isinstance(error, (HyteError, ValueError, OSError, ImportError)):
        return True
    if isinstance(error, TypeError):
        frames = traceback.extract_tb(error.__traceback__)
        return bool(frames) and (frames[-1].line or "").lstrip().startswith("raise")
    return False


if __name__ == "__main__":
    sys.exit(main())
