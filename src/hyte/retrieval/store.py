"""What every store of HyTE document points shares: ``HyperboloidStore``, the base of ``LorentzIndex`` (FAISS in
memory), ``PgVectorIndex`` (PostgreSQL + pgvector) and ``ShardedIndex`` (scatter-gather over stores).

One contract for all of them: documents are points of H^d_c, (N, D) float32, time coordinate first; queries arrive
sign-flipped (q~ = (-q_0, q_s), the encoders' role="query" output) so that q~ . x = <q, x>_L; ``search`` returns
(scores, ids), both (N, k), scores the Lorentz inner products (larger is nearer), padded with id -1 / score -inf.
The input checks, the lineage check, the float64 certification of exact search and the recall measurement are
written here once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .. import lorentz
from ..lineage import IncompatibleIndexError, check_lineage

__all__ = ["HyperboloidStore", "StoredDocuments", "TextStore", "certified_top_k"]

# A document x is accepted when x_0 > 0 and |<x,x>_L + c| / x_0^2 <= this: a valid point stored in float32 is
# ~1e-7 off, a Euclidean vector is off by O(1). (A sign-flipped query has the right Lorentz norm but x_0 < 0.)
HYPERBOLOID_RTOL = 1e-3


def check_index_curvature(curvature: float, model_name: str | None = None) -> None:
    """A store's curvature c > 0 (``lorentz.check_curvature``). Curvature 0 is how hyte's encoders mark a Euclidean
    model (EucBERT or a plain encoder, compared by cosine), whose vectors are no hyperboloid points: refused with
    what to do instead of the geometry's bare "c must be > 0"."""
    if curvature == 0:
        raise ValueError(f"{model_name or 'the model'} is Euclidean (curvature 0: EucBERT or a plain encoder, compared "
                         "by cosine), and a HyTE index holds hyperboloid points. Index a HyTE-FH or HyTE-H model; for "
                         "this one, put its vectors (hyte encode), scaled to unit length, in a FAISS inner-product "
                         "index")
    lorentz.check_curvature(curvature)


def as_array(x: Any) -> np.ndarray:
    """A numpy view of an array-like or a (CPU or GPU) torch tensor."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def refreshed(points: np.ndarray, c: float, sign: float = 1.0) -> np.ndarray:
    """A float64 copy of float32 points, (N, D) -> (N, D), x_0 recomputed from the space part as sign * sqrt(c +
    |x_s|^2) (as hyte.lorentz's float64 distances recompute it; ``sign`` -1 for sign-flipped queries)."""
    x64 = points.astype(np.float64)
    x64[:, 0] = sign * np.sqrt(c + np.einsum("ij,ij->i", x64[:, 1:], x64[:, 1:]))
    return x64


def on_hyperboloid(x: np.ndarray, c: float, time_sign: int = 1) -> np.ndarray:
    """Row mask, (N, D) -> (N,) bool: x_0 > 0 and |<x,x>_L + c| / x_0^2 <= HYPERBOLOID_RTOL (in float64).
    ``time_sign=-1`` asks x_0 < 0 instead: a sign-flipped point (-x_0, x_s), whose <x,x>_L is its point's."""
    x64 = torch.from_numpy(x.astype(np.float64))
    time_sq = x64[:, 0] ** 2  # clamped below only so that x_0 = 0 (rejected anyway) does not divide by zero
    relative_error = (lorentz.inner(x64, x64) + c).abs() / time_sq.clamp_min(torch.finfo(torch.float64).tiny)
    return ((time_sign * x64[:, 0] > 0) & (relative_error <= HYPERBOLOID_RTOL)).numpy()


def integer_ids(ids: Any) -> np.ndarray:
    """Document ids as int64, any shape; floats, booleans and values beyond int64 are refused (not truncated)."""
    array = as_array(ids)
    if array.size and (not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"ids must be integers; got dtype {array.dtype}")
    if array.size and array.dtype == np.uint64 and int(array.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"ids must fit in int64 (at most {np.iinfo(np.int64).max}); got {int(array.max())}")
    return np.ascontiguousarray(array, dtype=np.int64)


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def augment(points: np.ndarray, bound: float | None = None) -> np.ndarray:
    """MIPS -> L2 augmentation of documents: (N, D) -> (N, D + 1), x^ = [x, sqrt(M^2 - |x|^2)], M = ``bound``
    (default: max |x|; |x| > M gives 0).

    Every x^ has norm M, so for q^ = [q~, 0]: |q^ - x^|^2 = |q~|^2 + M^2 - 2 q~ . x, the same constant for all
    documents minus 2 <q, x>_L: nearest in L2 is largest Lorentz inner product.
    """
    x64 = np.asarray(points, dtype=np.float64)
    norm_sq = np.einsum("ij,ij->i", x64, x64)
    bound_sq = norm_sq.max(initial=0.0) if bound is None else bound ** 2
    return np.hstack([x64, np.sqrt(np.maximum(bound_sq - norm_sq, 0.0))[:, None]]).astype(np.float32)


def time_bounds(points: np.ndarray, c: float) -> tuple[float, float]:
    """(largest x_0, largest |x_0 - x_0 recomputed in float64 from the space part|) of float32 points: what
    ``certified_top_k`` needs to bound the float32 error of a store's inner products."""
    return (float(np.abs(points[:, 0]).max(initial=0.0)),
            float(np.abs(points[:, 0] - refreshed(points, c)[:, 0]).max(initial=0.0)))


def _top_k_columns(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's k largest scores, largest first, (B, N) -> (B, min(k, N)) (a tie at the k-th
    place is broken arbitrarily)."""
    if k < scores.shape[1]:
        candidates = np.sort(np.argpartition(-scores, k - 1, axis=1)[:, :k], axis=1)
    else:
        candidates = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.argsort(-np.take_along_axis(scores, candidates, axis=1), axis=1, kind="stable")
    return np.take_along_axis(candidates, order, axis=1)


def scan64(q: np.ndarray, ids: np.ndarray, stored: np.ndarray, c: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top k of float32 flipped queries (M, D) over stored float32 points (N, D), both with their time
    recomputed in float64: (scores float64, ids), both (M, min(k, N)), largest first."""
    q64, documents = refreshed(q, c, sign=-1.0), refreshed(stored, c)
    rows = max(1, 2 ** 24 // max(len(ids), 1))  # query rows per block: at most 128 MB of scores
    scores, labels = [], []
    for start in range(0, len(q64), rows):
        exact = q64[start:start + rows] @ documents.T  # (B, N)
        top = _top_k_columns(exact, k)
        scores.append(np.take_along_axis(exact, top, axis=1))
        labels.append(ids[top])
    return np.vstack(scores), np.vstack(labels)


# A store's float32 search of a shortlist: (queries (P, D), size) -> (float32 scores (P, size), ids (P, size) with
# -1 padding, the stored float32 points of those ids (P, size, D), any values where the id is -1).
Shortlist = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def certified_top_k(q: np.ndarray, k: int, count: int, shortlist: Shortlist, bounds: tuple[float, float],
                    c: float, everything: Callable[[], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The exact top k in float64 arithmetic, from a store's float32 inner-product search of a shortlist.

    The reference is ``hyte.lorentz``'s float64 geodesic search: the stored float32 space coordinates, each time
    coordinate recomputed from them in float64. The shortlist's documents are re-scored that way. One float32
    inner product of length D errs from the float64 one of the same coordinates by at most gamma_D
    sum_i |q_i x_i| (gamma_D = D u / (1 - D u), u = 2^-24, any summation order) <= gamma_D 2 |q_0| X, with X
    the largest stored x_0 (|x_s| < x_0 on the hyperboloid); the recomputed time coordinates add at most
    |q_0| dX + X dq (dX, dq: the largest change of a stored / query x_0); ``bounds`` is (X, dX). A document outside
    the shortlist scores at most the shortlist's last float32 score plus that error; once the k-th float64 score is
    above it, the top k is certified. Rows that are not grow their shortlist fourfold; rows whose next shortlist
    would hold every document are scored against ``everything()`` (the stored ids and points, read once) in float64
    instead. Near the origin the first shortlist (2k, at least k + 16) is nearly always certified; far out (x_0 in
    the hundreds) the float32 error exceeds the gaps between near neighbours and most rows end in the full scan,
    which is what exactness costs there.
    Returns (scores float64, ids int64), both (len(q), k), padded with -inf / -1 beyond ``count`` documents.
    """
    dim = q.shape[1]
    unit = 2.0 ** -24
    gamma = dim * unit / (1.0 - dim * unit)
    largest, drift = bounds
    q64 = refreshed(q, c, sign=-1.0)  # flipped queries: -q_0
    query_time = np.abs(q[:, 0].astype(np.float64))
    error = (2.0 * gamma * query_time * largest + query_time * drift
             + largest * np.abs(q64[:, 0] - q[:, 0]))  # (N,)
    scores = np.full((len(q), k), -np.inf, dtype=np.float64)
    labels = np.full((len(q), k), -1, dtype=np.int64)
    pending, size = np.arange(len(q)), min(count, max(2 * k, k + 16))
    while len(pending) and size > 0:
        if size >= count > 2 * max(2 * k, k + 16):  # every document: one float64 pass over them all
            top_scores, top_ids = scan64(q[pending], *everything(), c, k)
            scores[pending, :top_ids.shape[1]], labels[pending, :top_ids.shape[1]] = top_scores, top_ids
            break
        shortlist_scores, found, points = shortlist(q[pending], size)
        documents = refreshed(points.reshape(-1, dim), c).reshape(points.shape)  # (P, size, D)
        exact = np.where(found >= 0, np.einsum("pij,pj->pi", documents, q64[pending]), -np.inf)
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]  # (P, min(k, size))
        top = np.take_along_axis(exact, order, axis=1)
        done = (size >= count) | (top[:, -1] >= shortlist_scores[:, -1].astype(np.float64) + error[pending])
        width = order.shape[1]
        scores[pending[done], :width] = top[done]
        labels[pending[done], :width] = np.where(np.isfinite(top), np.take_along_axis(found, order, axis=1), -1)[done]
        pending, size = pending[~done], min(count, 4 * size)
    return scores, labels


class StoredDocuments:
    """The ``documents`` of a store that keeps each document's text beside its vector (``PgVectorIndex``,
    ``ShardedIndex``): ``documents[i]`` is index id i's {"id", "text"}, read with the store's ``document(i)``."""

    def __init__(self, index: HyperboloidStore):
        self._index = index

    def __len__(self) -> int:
        largest = self._index._largest_id()
        return 0 if largest is None else largest + 1

    def __getitem__(self, index_id: int) -> dict[str, str]:
        return self._index.document(int(index_id))


class HyperboloidStore:
    """The shared part of every HyTE vector store (module docstring). Subclasses set ``dim``, ``curvature``,
    ``model_name`` and ``model_fingerprint`` and implement ``__len__``, ``add``, ``remove``, ``search``, ``stored``,
    ``_stored_among(ids)`` (those of ``ids`` already stored) and ``_largest_id()`` (None when empty)."""

    dim: int
    curvature: float
    model_name: str | None
    model_fingerprint: str | None

    @property
    def is_exact(self) -> bool:
        """Whether ``search`` with its defaults is exact (then ``exact_search64`` is available)."""
        return False

    def exact_search64(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``search`` of checked float32 flipped queries with float64 scores: what a merge of several stores
        compares (``hyte.retrieval.sharded``)."""
        raise NotImplementedError

    def _check_vectors(self, vectors: Any, what: str) -> np.ndarray:
        """2-D, width ``dim``, finite; returned as C-contiguous float32 (N, D)."""
        array = as_array(vectors)
        if array.ndim != 2:
            raise ValueError(f"{what} must be a 2-D array (N, {self.dim}); got shape {array.shape}")
        if array.shape[1] != self.dim:
            raise ValueError(f"{what} have dimension {array.shape[1]}, but this index expects dimension {self.dim} "
                             f"(ambient d + 1, time coordinate included; model {self.model_name!r})")
        if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
            raise ValueError(f"{what} must be real numbers; got dtype {array.dtype}")
        bad = ~np.isfinite(array).all(axis=1)
        if bad.any():
            raise ValueError(f"{what} contain NaN or Inf in {int(bad.sum())} row(s), first row {int(np.argmax(bad))}")
        return np.ascontiguousarray(array, dtype=np.float32)

    def _check_points(self, points: Any, what: str) -> np.ndarray:
        """``_check_vectors`` plus: every row is a point of the hyperboloid (x_0 > 0, <x,x>_L = -c)."""
        array = self._check_vectors(points, what)
        off = ~on_hyperboloid(array, self.curvature)
        if off.any():
            first = int(np.argmax(off))
            rows = array[off].astype(np.float64)
            norms = lorentz.inner(rows, rows)  # <x,x>_L = -c' of another hyperboloid, if one
            if (rows[:, 0] > 0).all() and (norms < 0).all() and np.ptp(norms) <= 1e-3 * abs(norms.mean()):
                raise ValueError(f"{what}: {int(off.sum())} of {len(array)} points lie on the hyperboloid of curvature "
                                 f"{-norms.mean():.4g} (<x,x>_L = {norms.mean():.4g}), but this index holds curvature "
                                 f"{self.curvature}: encode them with the index's model, or build the index with the "
                                 "model's curvature (the model's config.curvature)")
            raise ValueError(f"{what}: {int(off.sum())} of {len(array)} points off the hyperboloid <x,x>_L = "
                             f"-{self.curvature} with x_0 > 0 (first: row {first}, x_0 = {float(array[first, 0]):.6g});"
                             " did you pass sign-flipped query vectors as documents, or Euclidean vectors? Documents "
                             "are the encoder's role='document' output, time coordinate first.")
        return array

    def _check_queries(self, queries: Any) -> np.ndarray:
        """Sign-flipped query vectors (N, D) -> float32. Unflipped hyperboloid points are rejected."""
        array = self._check_vectors(queries, "queries")
        # A flipped query always has q~_0 = -q_0 < 0. Every row one is the common case: one float64 pass.
        flipped = on_hyperboloid(array, self.curvature, time_sign=-1)
        if flipped.all():
            return array
        # A row with q_0 > 0 on the hyperboloid is an unflipped point.
        unflipped = on_hyperboloid(array, self.curvature)
        if unflipped.any():
            raise ValueError(f"search() expects sign-flipped query vectors (first coordinate -q_0 < 0, the encoder's "
                             f"role='query' output), but {int(unflipped.sum())} of {len(array)} rows are unflipped "
                             "hyperboloid points (first coordinate > 0). Use search_points() for points; it flips them "
                             "itself.")
        # Anything else that is not a flipped point (Euclidean vectors, another model's) would be ranked too.
        other = ~flipped
        first = int(np.argmax(other))
        raise ValueError(f"search() expects sign-flipped query points (-q_0, q_s) of the hyperboloid <x,x>_L = "
                         f"-{self.curvature}, the encoder's role='query' output; {int(other.sum())} of {len(array)} "
                         f"rows are not (first: row {first}). Flip only the time coordinate (hyte.lorentz.flip_time), "
                         "not the whole vector, and query with the model that built the index.")

    def _check_ids(self, ids: Any, count: int) -> np.ndarray:
        """New document ids: (count,) non-negative int64, unique, not already stored; None numbers them from the
        largest stored id + 1."""
        if ids is None:
            largest = self._largest_id()
            start = 0 if largest is None else largest + 1
            return np.arange(start, start + count, dtype=np.int64)
        array = self._check_id_values(ids, count)
        stored = self._stored_among(array)
        if len(stored):
            raise ValueError(f"duplicate ids: {stored[:10].tolist()} are already in the index (remove them first)")
        return array

    @staticmethod
    def _check_id_values(ids: Any, count: int) -> np.ndarray:
        """(count,) non-negative int64 ids, unique within the batch."""
        array = as_array(ids)
        if array.ndim != 1 or len(array) != count:
            raise ValueError(f"ids must be a 1-D array with one id per vector ({count}); got shape {array.shape}")
        array = integer_ids(array)
        if (array < 0).any():  # -1 is the "no result" padding (and FAISS's HNSW tombstone)
            raise ValueError(f"ids must be >= 0; got {int(array.min())}")
        unique, counts = np.unique(array, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"duplicate ids within the batch: {unique[counts > 1][:10].tolist()}")
        return array

    def check_compatible(self, model_name: str | None = None, dim: int | None = None,
                         curvature: float | None = None) -> None:
        """Raise ``IncompatibleIndexError`` if any given value differs from what this index was built for."""
        problems = []
        if model_name is not None and model_name != self.model_name:
            problems.append(f"model {model_name!r} != the index's {self.model_name!r}")
        if dim is not None and dim != self.dim:
            problems.append(f"dimension {dim} != the index's {self.dim}")
        if curvature is not None and not math.isclose(curvature, self.curvature, rel_tol=1e-9):
            problems.append(f"curvature {curvature} != the index's {self.curvature}")
        if problems:
            raise IncompatibleIndexError("this index cannot be used with these embeddings: " + "; ".join(problems)
                                         + ". Rebuild the index with the model you query with; vectors of different "
                                         "models are not comparable.")

    def check_query_model(self, model_name: str | None, fingerprint: str | None,
                          compatible_with: list[dict] | None = None, *, allow_incompatible: bool = False) -> str:
        """Refuse (``IncompatibleIndexError``) queries from a model that may not search this index: see
        ``hyte.lineage.check_lineage``. Returns how the query model was admitted."""
        return check_lineage(self.model_name, self.model_fingerprint, model_name, fingerprint, compatible_with,
                             allow_incompatible=allow_incompatible)

    def search_points(self, points: Any, k: int = 10, **search_options) -> tuple[np.ndarray, np.ndarray]:
        """``search`` for unflipped query points (N, D) on the hyperboloid: flips them, then searches."""
        return self.search(lorentz.flip_time(self._check_points(points, "query points")), k, **search_options)

    def to_distances(self, scores: np.ndarray) -> np.ndarray:
        """Geodesic distances from ``search`` scores, (N, k) -> (N, k) float64 (padding -inf -> inf)."""
        return lorentz.distance_from_inner(np.asarray(scores, dtype=np.float64), self.curvature)

    def points_of(self, ids: np.ndarray) -> np.ndarray:
        """The stored points of ``ids`` (any shape, -1 allowed) -> ids.shape + (D,) float32, NaN rows for -1 or
        absent ids (``_fill_points`` finds them)."""
        flat = np.asarray(ids, dtype=np.int64).ravel()
        result = np.full((len(flat), self.dim), np.nan, dtype=np.float32)
        self._fill_points(flat, result)
        return result.reshape(*np.shape(ids), self.dim)

    def _fill_points(self, flat: np.ndarray, result: np.ndarray) -> None:
        """Write the stored points of the ids ``flat`` (N,) into their rows of ``result`` (N, D); the other rows stay
        NaN. The default reads ``stored()``; stores that can look ids up directly override it."""
        stored_ids, points = self.stored()
        order = np.argsort(stored_ids)
        found = np.isin(flat, stored_ids)
        result[found] = points[order[np.searchsorted(stored_ids, flat[found], sorter=order)]]

    def _exact_search(self, queries: np.ndarray, k: int, ids: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Ids (N, k) of the exact float64 top k over the stored ``ids`` and ``points``: the reference
        ``measure_recall`` compares with."""
        return scan64(queries, ids, points, self.curvature, k)[1]

    def measure_recall(self, k: int = 10, sample: int = 1000, seed: int = 0, **search_options) -> float:
        """Recall@k of this store's ``search`` against exact search over its own documents.

        ``sample`` stored documents (drawn with ``seed``) are the queries, flipped; each one's own id is among its
        exact top k, which is the usual self-query protocol. Returns the mean over queries of
        |approximate top k & exact top k| / min(k, N). An exact store gives 1.0 up to ties.
        """
        k = check_positive_int("k", k)
        ids, points = self.stored()
        if len(ids) == 0:
            raise ValueError("measure_recall needs a non-empty index")
        sample = min(check_positive_int("sample", sample), len(ids))
        chosen = np.random.default_rng(seed).choice(len(ids), size=sample, replace=False)
        queries = lorentz.flip_time(points[chosen])
        _, found = self.search(queries, k, **search_options)
        exact = self._exact_search(queries, min(k, len(ids)), ids, points)
        hits = [len(np.intersect1d(f[f >= 0], e)) for f, e in zip(found, exact)]
        return float(np.mean(hits) / exact.shape[1])


class TextStore(HyperboloidStore):
    """A store that keeps each document's text beside its vector (``PgVectorIndex``, ``ShardedIndex``): its
    ``documents``, and ``add`` / ``upsert`` that check the points and ids, then ``_write`` them."""

    @property
    def documents(self) -> StoredDocuments:
        """The texts beside the vectors: ``documents[i]`` is {"id": ..., "text": ...} of index id i."""
        return StoredDocuments(self)

    def add(self, vectors: Any, ids: Any = None, documents: Sequence[dict] | None = None) -> np.ndarray:
        """Add documents: hyperboloid points (N, D), ids (N,) or None (numbered on), and optionally their
        ``documents`` ({"id": own id, "text": ...}, one per point). Returns the ids. Another model's points are not
        detected: ``HyteSearcher.add_texts`` encodes with the store's own model."""
        points = self._check_points(vectors, "documents")
        new_ids = self._check_ids(ids, len(points))
        self._write(points, new_ids, documents, upsert=False)
        return new_ids

    def upsert(self, vectors: Any, ids: Any, documents: Sequence[dict] | None = None) -> np.ndarray:
        """Insert or replace documents by id (the ids are required). Returns the ids."""
        points = self._check_points(vectors, "documents")
        new_ids = self._check_id_values(ids, len(points))
        self._write(points, new_ids, documents, upsert=True)
        return new_ids

    def _write(self, points: np.ndarray, ids: np.ndarray, documents: Sequence[dict] | None, *, upsert: bool) -> None:
        raise NotImplementedError
