"""The texts beside an index: ``documents.jsonl`` in an index folder, row i holding index id i."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..artifacts import DOCUMENTS_FILE
from ..io import read_jsonl, write_jsonl

__all__ = ["DOCUMENTS_FILE", "read_documents", "write_documents"]



def read_documents(directory: str | os.PathLike) -> list[dict]:
    """The ``documents.jsonl`` that ``hyte index build`` stores beside the index: row i holds index id i."""
    path = Path(directory) / DOCUMENTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: build the index with `hyte index build` (it stores the texts) "
                                "or use HyteSearcher.from_texts")
    return read_jsonl(path, "documents file")


def write_documents(directory: str | os.PathLike, documents: Sequence[dict]) -> None:
    """Write ``documents.jsonl`` into a folder, atomically."""
    write_jsonl(Path(directory) / DOCUMENTS_FILE, documents)
