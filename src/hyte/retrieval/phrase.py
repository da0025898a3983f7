"""Phrase-level reranking beside the global index: ``PhraseStore`` and ``PhraseIndex`` (H+, seed 001 section 3.6;
docs/training.md, "Serving"). The global index returns the top ``k_candidates``, which ``rerank`` rescores:
"phrase" (importance-weighted MaxSim over the top-B units), "lexical" (sum_t w_q(t) w_d(t)) or "hybrid" (a weighted
sum of the three, each z-normalised over the query's candidates first: a cosine, a sum of importance-weighted
cosines or distances and a sum of products of importances live on unrelated scales). Global scores are reported on
the phrase scale (cosines, or minus geodesic distances), so a bigger score is always better.

For a lorentz model ``PhraseStore`` keeps the **space coordinates only** and re-derives x_0 = sqrt(||x_s||^2 + c)
when scoring: in float16 a stored time coordinate and the space part would disagree (the Lorentz norm is a
difference of large numbers).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import torch

from .. import lorentz
from ..artifacts import INDEX_FILE, METADATA_FILE, PHRASE_INDEX_FILE, claim_folder
from ..io import atomic_directory, saved_directory
from ..lineage import check_query_model, model_fingerprint
from ..modeling_hyte_phrase import similarity_of_best
from .index import LorentzIndex, read_faiss_file
from .store import HyperboloidStore

__all__ = ["RERANK_MODES", "EuclideanFlatIndex", "PhraseIndex", "PhraseStore", "fuse", "ragged_rows", "segment_maxsim"]

RERANK_MODES = ("phrase", "lexical", "hybrid")
STORE_FORMAT_VERSION = 1
STORE_ARRAYS = ("ids", "unit_offsets", "units", "lexical_offsets", "lexical_ids", "lexical_weights")


class PhraseStore:
    """Unit vectors and lexical entries per document id (int64), in contiguous arrays.

    Args:
        dim: width D of the model's unit vectors (time coordinate included for lorentz).
        geometry: "euclidean" or "lorentz".
        curvature: c of the hyperboloid (lorentz).
        dtype: "float32" or "float16" for the stored unit vectors and lexical weights.
    """

    def __init__(self, dim: int, geometry: str, curvature: float = 1.0, dtype: str = "float32") -> None:
        if geometry not in ("euclidean", "lorentz"):
            raise ValueError(f"geometry must be 'euclidean' or 'lorentz'; got {geometry!r}")
        if dtype not in ("float32", "float16"):
            raise ValueError(f"dtype must be 'float32' or 'float16'; got {dtype!r}")
        self.dim, self.geometry, self.curvature, self.dtype = int(dim), geometry, float(curvature), dtype
        width = self.dim - 1 if geometry == "lorentz" else self.dim
        self._ids = np.empty(0, np.int64)  # row -> id, in insertion order
        self._unit_offsets = np.zeros(1, np.int64)
        self._units = np.empty((0, width), dtype)
        self._lexical_offsets = np.zeros(1, np.int64)
        self._lexical_ids = np.empty(0, np.int32)
        self._lexical_weights = np.empty(0, dtype)
        self._row_of: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> np.ndarray:
        return self._ids.copy()

    def stats(self) -> dict[str, float]:
        """Stored unit vectors per document (mean) and bytes per document (units + lexical entries + offsets)."""
        count = max(len(self), 1)
        return {"documents": len(self), "vectors_per_document": len(self._units) / count,
                "lexical_entries_per_document": len(self._lexical_ids) / count,
                "unit_bytes_per_document": self._units.nbytes / count,
                "bytes_per_document": sum(getattr(self, f"_{name}").nbytes for name in STORE_ARRAYS) / count}

    def add(self, ids: Sequence[int], encoded: Sequence[dict]) -> None:
        """Add documents: ids (N,) and their ``HyTEPhraseModel.encode_phrases(role="document")`` dicts."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if len(ids) != len(encoded):
            raise ValueError(f"{len(ids)} ids for {len(encoded)} encoded documents")
        clash = [int(i) for i in ids if int(i) in self._row_of]
        if clash or len(set(ids.tolist())) != len(ids):
            raise ValueError(f"ids already stored or repeated (first: {clash[:3] or 'repeated in the batch'}); remove "
                             "them first")
        units, lexical_ids, lexical_weights = [], [], []
        for entry in encoded:
            vectors = np.asarray(entry["units"], dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] != self.dim:
                raise ValueError(f"unit vectors must have shape (u, {self.dim}); got {vectors.shape}")
            units.append(vectors[:, 1:] if self.geometry == "lorentz" else vectors)
            lexical_ids.append(np.asarray(entry["lexical_ids"], dtype=np.int32))
            lexical_weights.append(np.asarray(entry["lexical_weights"], dtype=np.float32))
        first = len(self._ids)
        self._units = np.concatenate([self._units, *units], dtype=self.dtype)
        self._unit_offsets = np.concatenate([self._unit_offsets, self._unit_offsets[-1]
                                             + np.cumsum([len(u) for u in units], dtype=np.int64)])
        self._lexical_ids = np.concatenate([self._lexical_ids, *lexical_ids])
        self._lexical_weights = np.concatenate([self._lexical_weights, *lexical_weights], dtype=self.dtype)
        self._lexical_offsets = np.concatenate([self._lexical_offsets, self._lexical_offsets[-1]
                                                + np.cumsum([len(i) for i in lexical_ids], dtype=np.int64)])
        self._ids = np.concatenate([self._ids, ids])
        self._row_of.update({int(doc_id): first + k for k, doc_id in enumerate(ids)})

    def remove(self, ids: Sequence[int]) -> int:
        """Remove documents by id (unknown ids are ignored); returns how many were removed. Compacts the arrays."""
        keep = ~np.isin(self._ids, np.asarray(ids, dtype=np.int64).ravel())
        if keep.all():
            return 0
        self._units, self._unit_offsets = _keep_rows(self._units, self._unit_offsets, keep)
        self._lexical_weights, _ = _keep_rows(self._lexical_weights, self._lexical_offsets, keep)
        self._lexical_ids, self._lexical_offsets = _keep_rows(self._lexical_ids, self._lexical_offsets, keep)
        self._ids = self._ids[keep]
        self._row_of = {int(doc_id): row for row, doc_id in enumerate(self._ids)}
        return int((~keep).sum())

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        try:
            return np.fromiter((self._row_of[int(i)] for i in ids), dtype=np.int64, count=len(ids))
        except KeyError as error:
            raise KeyError(f"document id {error.args[0]} is in the global index but not in the phrase store; "
                           "add and remove documents through PhraseIndex so both stay in step") from None

    def lexical_scores(self, query: dict, ids: np.ndarray) -> np.ndarray:
        """S_L(q, d) = sum_t w_q(t) w_d(t) for documents ``ids``: (N,) float32."""
        flat_index, segment, _ = ragged_rows(self._lexical_offsets, self._rows(ids))
        query_ids = np.asarray(query["lexical_ids"], dtype=np.int64)
        dense = np.zeros(max(int(query_ids.max(initial=-1)) + 1, int(self._lexical_ids.max(initial=-1)) + 1),
                         np.float32)
        dense[query_ids] = query["lexical_weights"]
        products = dense[self._lexical_ids[flat_index]] * self._lexical_weights[flat_index].astype(np.float32)
        return np.bincount(segment, weights=products, minlength=len(ids)).astype(np.float32)

    def phrase_scores(self, query: dict, ids: np.ndarray) -> np.ndarray:
        """S_P(q, d) = sum_s a_q(s) max_t s(p_s, p_t) for documents ``ids``: (N,) float32 (-inf: no units).

        The same score as ``modeling_hyte_phrase.weighted_maxsim`` without padding: the max runs per document
        over its own units (a segment max), so there is nothing to mask. Lorentz units get their time coordinate
        re-derived from the stored space part.
        """
        flat_index, segment, _ = ragged_rows(self._unit_offsets, self._rows(ids))
        flat = torch.from_numpy(self._units[flat_index].astype(np.float32))  # (M, D), M units of N documents
        if self.geometry == "lorentz":
            flat = lorentz.add_time(flat, self.curvature)
        return segment_maxsim(torch.as_tensor(np.asarray(query["units"], np.float32)),
                              torch.as_tensor(np.asarray(query["weights"], np.float32)), flat,
                              torch.from_numpy(segment), len(ids), self.geometry, self.curvature).numpy()

    def write_files(self, directory: Path) -> None:
        """Write the arrays (``.npy``) and ``store.json`` into an existing directory (not atomic by itself)."""
        for name in STORE_ARRAYS:
            np.save(directory / f"{name}.npy", getattr(self, f"_{name}"))
        metadata = {"format_version": STORE_FORMAT_VERSION, "dim": self.dim, "geometry": self.geometry,
                    "curvature": self.curvature, "dtype": self.dtype, "count": len(self)}
        (directory / "store.json").write_text(json.dumps(metadata, indent=2) + "\n")

    @classmethod
    def read(cls, directory: Path) -> PhraseStore:
        metadata = json.loads((directory / "store.json").read_text())
        if metadata.get("format_version") != STORE_FORMAT_VERSION:
            raise ValueError(f"{directory}: phrase store format {metadata.get('format_version')!r} is not supported")
        store = cls(metadata["dim"], metadata["geometry"], metadata["curvature"], metadata["dtype"])
        for name in STORE_ARRAYS:
            setattr(store, f"_{name}", np.load(directory / f"{name}.npy"))
        if len(store._ids) != metadata["count"] or len(store._unit_offsets) != len(store._ids) + 1:
            raise ValueError(f"{directory}: the phrase store's arrays do not match its metadata (count "
                             f"{metadata['count']}); the store is damaged, rebuild it")
        store._row_of = {int(doc_id): row for row, doc_id in enumerate(store._ids)}
        return store


def ragged_rows(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of a ragged array (row r holds values offsets[r]:offsets[r + 1]), the values of ``rows``: their flat indices
    (M,), the position of their row among ``rows`` (M,) and their rank within their row (M,)."""
    starts, ends = offsets[rows], offsets[rows + 1]
    lengths = ends - starts
    flat = np.repeat(ends - lengths.cumsum(), lengths) + np.arange(lengths.sum())
    return flat, np.repeat(np.arange(len(rows)), lengths), flat - np.repeat(starts, lengths)


def _keep_rows(values: np.ndarray, offsets: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop the rows of a ragged array (values + offsets) where ``keep`` is False."""
    lengths = np.diff(offsets)
    return values[np.repeat(keep, lengths)], np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)


def segment_maxsim(query_units: torch.Tensor, query_weights: torch.Tensor, flat: torch.Tensor,
                   segment: torch.Tensor, count: int, geometry: str, curvature: float) -> torch.Tensor:
    """Weighted MaxSim of one query against ``count`` documents whose units are concatenated.

    query_units (A, D), query_weights (A,), flat (M, D) document units, segment (M,) their document in 0..count-1
    -> (count,). The max over a document's units is a segment max starting from -inf, so a document without units
    scores -inf and nothing else needs masking; lorentz maxima go through -arccosh afterwards (monotone map).
    """
    queries = lorentz.flip_time(query_units) if geometry == "lorentz" else query_units
    raw = queries.float() @ flat.float().T  # (A, M)
    best = torch.full((len(query_units), count), -math.inf)
    best = best.scatter_reduce(1, segment.unsqueeze(0).expand(len(query_units), -1), raw, "amax")
    return (query_weights.float().unsqueeze(1) * similarity_of_best(best, geometry, curvature)).sum(0)


def fuse(views: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """Weighted sum of per-view scores over one query's candidates, each view z-normalised first.

    A view that is constant over the candidates contributes 0; -inf scores (a document without units) stay the
    worst candidates.
    """
    total = np.zeros(len(next(iter(views.values()))), np.float64)
    for name, scores in views.items():
        scores = np.asarray(scores, np.float64)
        finite = np.isfinite(scores)
        if not finite.any():
            continue
        mean, std = scores[finite].mean(), scores[finite].std()
        z = np.where(finite, (scores - mean) / std if std > 0 else 0.0, -np.inf)
        total += weights.get(name, 0.0) * z if weights.get(name, 0.0) else 0.0
    return total


class EuclideanFlatIndex:
    """Exact inner-product search over normalised vectors (the euclidean model's global view), FAISS with ids."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    def __len__(self) -> int:
        return self._index.ntotal

    def add(self, vectors: Any, ids: Any) -> None:
        self._index.add_with_ids(np.ascontiguousarray(vectors, np.float32), np.asarray(ids, np.int64))

    def remove(self, ids: Any) -> int:
        return int(self._index.remove_ids(np.asarray(ids, np.int64)))

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, labels = self._index.search(np.ascontiguousarray(queries, np.float32), k)
        scores[labels < 0] = -np.inf
        return scores, labels

    def write_files(self, directory: Path) -> None:
        faiss.write_index(self._index, str(directory / INDEX_FILE))
        (directory / METADATA_FILE).write_text(json.dumps({"dim": self.dim, "kind": "euclidean-flat"}) + "\n")

    @classmethod
    def load(cls, directory: Path) -> EuclideanFlatIndex:
        metadata = json.loads((directory / METADATA_FILE).read_text())
        index = cls(metadata["dim"])
        index._index = read_faiss_file(directory / INDEX_FILE)
        return index


class PhraseIndex:
    """A global index (candidate generation) and a ``PhraseStore`` (reranking) over the same document ids.

    Build with ``PhraseIndex.create`` (empty) and ``add_texts`` / ``add``; ``search`` takes query dicts from
    ``HyTEPhraseModel.encode_phrases(role="query")`` (``search_texts`` encodes for you).
    """

    def __init__(self, global_index: LorentzIndex | EuclideanFlatIndex, store: PhraseStore,
                 fusion: dict[str, float] | None = None, model_name: str | None = None,
                 model_fingerprint: str | None = None) -> None:
        self.global_index, self.store = global_index, store
        self.fusion = dict(fusion or {"global": 1.0, "phrase": 1.0, "lexical": 0.2})
        self.model_name, self.model_fingerprint = model_name, model_fingerprint

    @classmethod
    def create(cls, model, kind: str = "flat", dtype: str = "float32", model_name: str | None = None,
               **index_options) -> PhraseIndex:
        """An empty index for ``model`` (a HyTEPhraseModel): its geometry, width, curvature, fusion weights and
        fingerprint (the lineage check, ``hyte.lineage``)."""
        config, fingerprint = model.config, model_fingerprint(model)
        dim, curvature = model.backbone.config.hidden_size, float(model.curvature)
        if config.geometry == "lorentz":
            global_index = LorentzIndex(dim, curvature, kind=kind, model_name=model_name,
                                        model_fingerprint=fingerprint, **index_options)
        elif kind != "flat":
            raise ValueError(f"euclidean phrase models support kind 'flat' only; got {kind!r}")
        else:
            global_index = EuclideanFlatIndex(dim)
        fusion = {"global": config.fusion_global, "phrase": config.fusion_phrase, "lexical": config.fusion_lexical}
        return cls(global_index, PhraseStore(dim, config.geometry, curvature, dtype), fusion, model_name, fingerprint)

    def __len__(self) -> int:
        return len(self.store)

    def add(self, ids: Sequence[int], encoded: Sequence[dict]) -> None:
        """Add encoded documents (``encode_phrases(role="document")``) under ``ids`` to both parts."""
        ids = np.asarray(ids, np.int64)
        self.store.add(ids, encoded)  # validates first: a rejected batch touches neither part
        try:
            self.global_index.add(np.stack([e["global"] for e in encoded]).astype(np.float32), ids)
        except BaseException:
            self.store.remove(ids)
            raise

    def add_texts(self, model, tokenizer, texts: Sequence[str], ids: Sequence[int] | None = None,
                  batch_size: int = 32, **encode_options) -> np.ndarray:
        """Encode documents with ``model`` and add them; ids default to (largest stored id + 1) onwards."""
        if ids is None:
            start = int(self.store.ids.max()) + 1 if len(self.store) else 0
            ids = np.arange(start, start + len(texts))
        self.add(ids, model.encode_phrases(list(texts), tokenizer, role="document", batch_size=batch_size,
                                           **encode_options))
        return np.asarray(ids, np.int64)

    def remove(self, ids: Sequence[int]) -> int:
        """Remove documents from both parts; returns how many the store held."""
        self.global_index.remove(np.asarray(ids, np.int64))
        return self.store.remove(ids)

    def search(self, queries: Sequence[dict], k: int = 10, rerank: str | None = None, k_candidates: int = 100,
               fusion: dict[str, float] | None = None, **search_options) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` documents per query: (scores (Q, k) float32, ids (Q, k) int64), padded with -inf / -1.

        ``rerank`` None ranks by the global view alone (the first ``k`` of the candidates); "phrase", "lexical" or
        "hybrid" rescore the global top ``k_candidates`` (module docstring). ``fusion`` overrides the hybrid
        weights ({"global", "phrase", "lexical"}). ``search_options`` go to the global index (nprobe, ef_search).
        """
        if rerank is not None and rerank not in RERANK_MODES:
            raise ValueError(f"rerank must be None or one of {RERANK_MODES}; got {rerank!r}")
        pool = k if rerank is None else max(k, k_candidates)
        global_queries = np.stack([q["global"] for q in queries]).astype(np.float32)
        raw, candidates = self.global_index.search(global_queries, pool, **search_options)
        if self.store.geometry == "lorentz":  # on the phrase scale: minus geodesic distances (cosines already are)
            raw = -lorentz.distance_from_inner(raw.astype(np.float64), self.store.curvature).astype(np.float32)
        out_scores = np.full((len(queries), k), -np.inf, np.float32)
        out_ids = np.full((len(queries), k), -1, np.int64)
        for row, query in enumerate(queries):
            found = candidates[row] >= 0
            ids = candidates[row][found]
            views = {"global": raw[row][found]}
            if rerank in ("phrase", "hybrid"):
                views["phrase"] = self.store.phrase_scores(query, ids)
            if rerank in ("lexical", "hybrid"):
                views["lexical"] = self.store.lexical_scores(query, ids)
            scores = (fuse(views, fusion or self.fusion) if rerank == "hybrid"
                      else views[rerank or "global"]).astype(np.float32)
            # Stable: equal scores keep the global order.
            order = np.argsort(-scores, kind="stable")[:k]
            out_scores[row, : len(order)], out_ids[row, : len(order)] = scores[order], ids[order]
        return out_scores, out_ids

    def search_texts(self, model, tokenizer, texts: Sequence[str], k: int = 10, *, check_model: bool = True,
                     **options):
        """``search`` for query texts, encoded with ``model``: the model that built the index or one declared
        compatible with it (``hyte.lineage``; another raises ``IncompatibleIndexError``). ``check_model=False`` skips
        the check (experts, or ``hyte index search``, which checks itself)."""
        if check_model:
            check_query_model(self, model, None)
        encode_keys = ("budget", "unit", "tags", "override", "max_length")
        encode = {key: options.pop(key) for key in encode_keys if key in options}
        return self.search(model.encode_phrases(list(texts), tokenizer, role="query", **encode), k, **options)

    def save(self, directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Save the global index (``global/``), the store (``phrase/``) and ``phrase_index.json`` together,
        atomically (``hyte.io.atomic_directory``): a crash at any point leaves the previous complete save loadable.
        A previous save there is replaced only with ``overwrite``."""
        claim_folder(directory, option="the phrase index folder", replaces="index", remedy="a folder of its own, e.g. "
                     "beside the model")  # as LorentzIndex.save and the command line refuse
        atomic_directory(directory, self.write_files, PHRASE_INDEX_FILE, "PhraseIndex",
                         owned=(PHRASE_INDEX_FILE, "global", "phrase"), overwrite=overwrite)

    def write_files(self, directory: Path) -> None:
        """Write ``global/``, ``phrase/`` and ``phrase_index.json`` into an existing folder (not atomic by itself:
        ``save`` and ``hyte.retrieval.folder`` call it on a staging folder)."""
        for name, part in (("global", self.global_index), ("phrase", self.store)):
            (directory / name).mkdir()
            part.write_files(directory / name)
        kind = "lorentz" if isinstance(self.global_index, LorentzIndex) else "euclidean-flat"
        (directory / PHRASE_INDEX_FILE).write_text(json.dumps(
            {"global_kind": kind, "fusion": self.fusion, "model_name": self.model_name,
             "model_fingerprint": self.model_fingerprint, "count": len(self.store)}, indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | os.PathLike) -> PhraseIndex:
        target = saved_directory(directory, PHRASE_INDEX_FILE, "PhraseIndex",
                                 "rebuild the index (hyte index build --phrase ... --overwrite)")
        metadata = json.loads((target / PHRASE_INDEX_FILE).read_text())
        global_class = LorentzIndex if metadata["global_kind"] == "lorentz" else EuclideanFlatIndex
        global_index = global_class.load(target / "global")
        store = PhraseStore.read(target / "phrase")
        if len(global_index) != len(store) or len(store) != metadata["count"]:
            raise ValueError(f"{target}: the global index holds {len(global_index)} documents and the phrase store "
                             f"{len(store)} (metadata: {metadata['count']}); the save is damaged, rebuild it")
        # model_fingerprint is absent from phrase indexes saved before lineage was recorded (names compared then).
        return cls(global_index, store, metadata["fusion"], metadata["model_name"], metadata.get("model_fingerprint"))

    check_query_model = HyperboloidStore.check_query_model  # the stores' lineage check, on this index's model
