"""The ``hyte`` command line: ``hyte demo`` and, per sub-command module, encode / index / train / eval."""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(output_dir=args.output_dir, num_documents=args.num_documents)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hyte", description="Hyperbolic text embeddings and retrieval.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="build HyTE-H on the bundled MiniLM, encode HPO definitions, search (offline)")
    demo.add_argument("--output-dir", default="hyte-output/demo")
    demo.add_argument("--num-documents", type=int, default=2000)
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"hyte {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
