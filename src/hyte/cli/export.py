"""``hyte export onnx MODEL_DIR [--output FILE]``: one ONNX graph, token ids -> documents and flipped queries."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bundled import resolve_model
from .common import MODEL_HELP, UserError

__all__ = ["add_commands"]


def _export_onnx(args: argparse.Namespace) -> int:
    from ..export import export_onnx

    if args.output is None and not Path(resolve_model(args.model)).is_dir():
        raise UserError(f"model folder {args.model} not found (a Hub id needs --output for the ONNX file)")
    if args.output is None and str(args.model).startswith("bundled:"):
        raise UserError(f"{args.model} is a bundled Euclidean encoder, not a HyTE model: export a HyTE model folder "
                        "(hyte demo or hyte quickstart write one)")
    path = export_onnx(args.model, args.output, overwrite=args.overwrite)
    print(f"wrote {path} (inputs input_ids, attention_mask; outputs documents, queries); check it against PyTorch "
          f"with hyte.export.onnx_matches_pytorch")
    return 0


def add_commands(sub) -> None:
    export = sub.add_parser("export", help="export a HyTE model for serving without PyTorch")
    export_sub = export.add_subparsers(dest="export_format", required=True)
    onnx = export_sub.add_parser("onnx", help="one ONNX graph: input_ids, attention_mask -> documents, queries")
    onnx.add_argument("model", help=MODEL_HELP)
    onnx.add_argument("--output", default=None, help="ONNX file to write (default: MODEL/onnx/model.onnx)")
    onnx.add_argument("--overwrite", action="store_true", help="replace the ONNX file if it exists")
    onnx.set_defaults(func=_export_onnx)
