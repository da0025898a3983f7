"""``hyte quickstart`` (the main job: build, fine-tune, evaluate, save, index, search) and ``hyte demo``."""

from __future__ import annotations

import argparse

from .common import positive_int

__all__ = ["add_commands"]


def _quickstart(args: argparse.Namespace) -> int:
    from ..quickstart import run_quickstart

    run_quickstart(output_dir=args.output_dir, steps=args.steps, examples=args.examples,
                   with_euclidean=args.with_euclidean)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    run_demo(output_dir=args.output_dir, num_documents=args.num_documents, overwrite=args.overwrite)
    return 0


def add_commands(sub) -> None:
    quickstart = sub.add_parser("quickstart", help="the whole path offline: build, fine-tune, evaluate, save, index")
    quickstart.add_argument("--output-dir", default="hyte-output/quickstart")
    quickstart.add_argument("--steps", type=positive_int, default=60,
                            help="fine-tuning steps (batch 16 + hard negatives)")
    quickstart.add_argument("--examples", type=positive_int, default=4000,
                            help="HPO + ICD-10-CM training pairs to draw from")
    quickstart.add_argument("--with-euclidean", action="store_true",
                            help="also fine-tune the Euclidean control (same recipe, cosine) and compare (+4 min)")
    quickstart.set_defaults(func=_quickstart)

    demo = sub.add_parser("demo", help="build HyTE-H on the bundled MiniLM, index HPO definitions, search (offline)")
    demo.add_argument("--output-dir", default="hyte-output/demo")
    demo.add_argument("--num-documents", type=positive_int, default=2000)
    demo.add_argument("--overwrite", action="store_true",
                      help="replace a model folder in --output-dir that the demo did not write (a trained model)")
    demo.set_defaults(func=_demo)
