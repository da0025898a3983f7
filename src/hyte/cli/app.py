"""The ``hyte`` command line (``hyte --help`` lists the commands; each command group is a module of this package).

Errors a user can fix (bad files, bad options) are printed as one line and exit with status 2; any other error is
a bug, named as one (status 1); ``hyte --debug COMMAND`` shows the traceback of either. Heavy libraries
(torch, transformers, FAISS, numpy) are imported by the commands that run, so ``--help`` and option errors are quick.
Library code never imports this package.
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
