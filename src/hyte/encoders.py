"""One interface over HyTE models and plain Euclidean encoders, for retrieval, evaluation and the CLI.

* ``HyteEncoder``: a HyTE model (FH or H) and its tokenizer. Documents are hyperboloid points, queries are
  sign-flipped, and ``query_vectors @ document_vectors.T`` is the Lorentz inner product (larger = nearer).
* ``EuclideanEncoder``: any Hugging Face encoder with masked mean pooling and cosine similarity (vectors are
  L2-normalised, so the dot product is the cosine), the usual Euclidean baseline.

Both have ``encode(texts, role)``, ``scores(queries, documents)`` and ``radii(texts)`` (time coordinate for HyTE,
the norm of the un-normalised mean-pooled vector for Euclidean models), so evaluation code treats them alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from .modeling_hyte import HyTEPreTrainedModel

HYTE_MODEL_TYPES = ("hyte_fh", "hyte_h", "hyte_euc")


class HyteEncoder:
    """A HyTE model with its tokenizer: ``encode(texts, role)`` -> points (documents) or flipped points (queries)."""

    kind = "hyperbolic"

    def __init__(self, model: HyTEPreTrainedModel, tokenizer, name: str | None = None, max_length: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name or model.config.name_or_path or type(model).__name__
        self.max_length = max_length

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @property
    def curvature(self) -> float:
        return float(self.model.config.curvature) if self.model.is_hyperbolic else 0.0

    def encode(self, texts: list[str], role: str = "document", batch_size: int = 32,
               show_progress_bar: bool | None = None) -> np.ndarray:
        return self.model.encode(texts, self.tokenizer, role=role, batch_size=batch_size, max_length=self.max_length,
                                 show_progress_bar=show_progress_bar)

    def scores(self, queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
        """(Q, D) encoded queries x (N, D) encoded documents -> (Q, N) similarities (Lorentz inner products)."""
        return queries @ documents.T

    def radii(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Specificity of texts as documents: x_0 (hyperbolic) or the vector norm (the Euclidean twin)."""
        documents = self.encode(texts, batch_size=batch_size)
        return documents[:, 0] if self.model.is_hyperbolic else np.linalg.norm(documents, axis=1)


class EuclideanEncoder:
    """A Hugging Face encoder with masked mean pooling; cosine similarity through L2-normalised vectors."""

    kind = "euclidean"
    curvature = 0.0

    def __init__(self, model, tokenizer, name: str | None = None, max_length: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name or model.config.name_or_path or type(model).__name__
        self.max_length = max_length or getattr(model.config, "max_position_embeddings", 512)

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @torch.no_grad()
    def _mean_pooled(self, texts: list[str], batch_size: int, show_progress_bar: bool | None) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        starts = range(0, len(texts), batch_size)
        if show_progress_bar or (show_progress_bar is None and len(texts) >= 20 * batch_size):
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="encode", unit="batch")
        for start in starts:
            index = order[start : start + batch_size]
            batch = self.tokenizer([texts[i] for i in index], padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt")
            tokens = self.model(**batch).last_hidden_state
            weights = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            out[index] = ((tokens * weights).sum(1) / weights.sum(1).clamp_min(1.0)).float().numpy()
        return out

    def encode(self, texts: list[str], role: str = "document", batch_size: int = 32,
               show_progress_bar: bool | None = None) -> np.ndarray:
        if role not in ("document", "query"):
            raise ValueError(f"role must be 'document' or 'query'; got {role!r}.")
        vectors = self._mean_pooled(texts, batch_size, show_progress_bar)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def scores(self, queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
        return queries @ documents.T

    def radii(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Norms of the un-normalised mean-pooled vectors (the Euclidean analogue of the radius)."""
        return np.linalg.norm(self._mean_pooled(texts, batch_size, None), axis=1)


def model_type_of(path: str | Path) -> str | None:
    """The ``model_type`` in a local model folder's config.json (None if absent)."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text()).get("model_type")


def load_encoder(path: str | Path, kind: str = "auto", max_length: int | None = None) -> HyteEncoder | EuclideanEncoder:
    """Load a model folder (or hub id) as a HyTE encoder or, for any other encoder, a Euclidean mean-pooling one.

    ``kind``: "auto" (by config.json's model_type), "hyte" or "euclidean".
    """
    if kind not in ("auto", "hyte", "euclidean"):
        raise ValueError(f"kind must be 'auto', 'hyte' or 'euclidean'; got {kind!r}.")
    path = str(path)
    if Path(path).exists() and not (Path(path) / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a model folder: it has no config.json.")
    if kind == "auto":
        kind = "hyte" if model_type_of(path) in HYTE_MODEL_TYPES else "euclidean"
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    model = AutoModel.from_pretrained(path, trust_remote_code=True, dtype=torch.float32)
    if kind == "hyte":
        if not isinstance(model, HyTEPreTrainedModel) and not hasattr(model, "encode"):
            raise ValueError(f"{path} is not a HyTE model (model_type {model.config.model_type!r}).")
        return HyteEncoder(model, tokenizer, name=path, max_length=max_length)
    return EuclideanEncoder(model, tokenizer, name=path, max_length=max_length)
