"""Export a saved HyTE model to ONNX, for serving without PyTorch (onnxruntime, Triton, ...).

The graph takes ``input_ids`` and ``attention_mask`` (int64, batch x tokens, both dynamic) and returns what
``model.encode`` returns for the same tokens: ``documents`` (hyperboloid points, time first) and ``queries`` (the
same points sign-flipped, so ``queries @ documents.T`` is the Lorentz inner product for a FAISS inner-product index).
Euclidean models (EucBERT) return their pooled vectors twice. Tokenisation stays outside the graph: use the
tokenizer saved with the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from .artifacts import NOT_MODELS, OutputRefused, claim_file, enclosing_artifact
from .encoders import load_encoder
from .io import atomic_file
from .lorentz import flip_time

OPSET = 18
INPUT_NAMES = ["input_ids", "attention_mask"]
OUTPUT_NAMES = ["documents", "queries"]


class _DocumentsAndQueries(nn.Module):
    """(input_ids, attention_mask) -> (documents, queries), the two encode() outputs of a HyTE model."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        points = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).pooler_output
        return points, flip_time(points) if self.model.is_hyperbolic else points


def _hypot(x, y):
    """torch.hypot for the ONNX exporter, which has no translation for it: max * sqrt(1 + (min / max)^2), the
    overflow-free form (x^2 + y^2 would overflow float32 for coordinates above ~1e19)."""
    from onnxscript import opset18 as op

    big = op.Max(op.Abs(x), op.Abs(y))
    small = op.Min(op.Abs(x), op.Abs(y))
    one = op.CastLike(1.0, big)
    ratio = op.Div(small, op.Where(op.Equal(big, op.CastLike(0.0, big)), one, big))  # 0 / 0 -> 0
    return op.Mul(big, op.Sqrt(op.Add(one, op.Mul(ratio, ratio))))


def export_onnx(model: str | Path, output: str | Path | None = None, *, overwrite: bool = True) -> Path:
    """Export a HyTE model folder (or bundled alias / hub id) to ONNX; returns the file written.

    ``output`` defaults to ``MODEL/onnx/model.onnx`` (where sentence-transformers' ONNX backend looks). The file is
    written next to its final name and renamed into place, so an interrupted export leaves no partial file. The
    model's own folder may hold its graph; another model's, a run's, an index's or vector shards' folder may not
    (OutputRefused, before the slow export); an existing file is replaced only with ``overwrite``.
    """
    output = Path(output) if output is not None else Path(model) / "onnx" / "model.onnx"
    claim_file(output, (".onnx",), what="the ONNX graph", example=f"{model}/onnx/model.onnx", overwrite=overwrite,
               refuse_inside=NOT_MODELS, option="output")
    model_folder = enclosing_artifact(output, ("model",))  # through a symbolic link too
    if model_folder and model_folder[0].resolve() != Path(model).resolve():
        raise OutputRefused(f"output {output} is inside another model's folder ({model_folder[0]}): that model would "
                            f"ship this graph (e.g. with hyte push); write it into {model} or a folder of its own")
    encoder = load_encoder(model, kind="hyte")  # refuses any other model
    sample = encoder.tokenizer(["an example text", "a second, somewhat longer example text"], padding=True,
                               return_tensors="pt")
    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens", max=encoder.model.config.max_position_embeddings)
    program = torch.onnx.export(
        _DocumentsAndQueries(encoder.model).eval(),
        (sample["input_ids"], sample["attention_mask"]),
        dynamo=True,
        verbose=False,  # the exporter's progress lines and graph dumps are no use to a user
        opset_version=OPSET,
        input_names=INPUT_NAMES,
        output_names=OUTPUT_NAMES,
        dynamic_shapes=({0: batch, 1: tokens}, {0: batch, 1: tokens}),
        custom_translation_table={torch.ops.aten.hypot.default: _hypot, torch.ops.prims.hypot.default: _hypot},
    )
    return atomic_file(output, lambda partial: program.save(str(partial)))


def onnx_matches_pytorch(model: str | Path, onnx_file: str | Path, texts: list[str]) -> float:
    """Largest absolute difference between the ONNX graph (run by onnxruntime) and PyTorch, documents and queries
    of ``texts`` together."""
    import onnxruntime

    encoder = load_encoder(model, kind="hyte")
    batch = encoder.tokenizer(texts, padding=True, truncation=True, return_tensors="np")
    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    documents, queries = session.run(OUTPUT_NAMES, {name: batch[name].astype(np.int64) for name in INPUT_NAMES})
    return max(float(np.abs(got - encoder.encode(texts, role=role)).max())
               for got, role in ((documents, "document"), (queries, "query")))
