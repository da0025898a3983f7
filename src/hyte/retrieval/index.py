"""Nearest-neighbour search over hyperboloid points with FAISS: ``LorentzIndex``.

Documents and queries follow the stores' contract (``hyte.retrieval.store``): points of H^d_c searched with
sign-flipped queries, so that the maximum inner product is the nearest geodesic neighbour. Kinds of index:

* ``"flat"`` (default): exact. ``IndexFlatIP`` over the documents, searched with the flipped queries.
* ``"ivf"``: IVF-Flat with inner product. The coarse centroids are Lorentzian centroids of k-means clusters, and
  documents go to the list of their geodesically nearest centroid, as queries are routed (``_add_ivf``).
* ``"hnsw"``: HNSW with L2 on the MIPS -> L2 augmentation x^ = [x, sqrt(M^2 - |x|^2)], q^ = [q~, 0], which ranks
  exactly like <q, x>_L. The graph itself is built on Poincare-ball coordinates (see ``_add_hnsw``).
  HNSW with inner product is refused (see ``_check_metric``).

Every approximate index should ship with a recall measured against exact search: ``measure_recall``.

Precision: FAISS computes in float32. An inner product of two points far from the origin is a small difference of
two numbers of size ~ x_0(q) x_0(x), so its absolute error is ~ 1e-7 x_0(q) x_0(x), and near neighbours far out
can swap ranks. The flat index therefore stays exact at any radius: it re-scores FAISS's shortlist in float64 and
widens the shortlist until a bound on the float32 error certifies that it holds the true top k
(``hyte.retrieval.store.certified_top_k``). The approximate kinds return what they find (hnsw re-scored in float64).

Not thread-safe: do not call ``add``/``remove`` concurrently with anything else on the same index.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from faiss.contrib.inspect_tools import get_flat_data, get_invlist

from .. import __version__ as _hyte_version
from .. import lorentz
from ..artifacts import DOCUMENTS_FILE, FOLDER_FILE, INDEX_FILE, METADATA_FILE, claim_folder
from ..io import atomic_directory, read_json_file, saved_directory
from ..lineage import IncompatibleIndexError
from .store import (HyperboloidStore, augment, certified_top_k, check_index_curvature, check_positive_int,
                    integer_ids, time_bounds)

__all__ = ["IncompatibleIndexError", "LorentzIndex"]

FORMAT_VERSION = 1
KINDS = ("flat", "ivf", "hnsw")
_REBUILD = "rebuild the index (hyte index build ... --overwrite)"
# A search padded far beyond the documents (k > len(index)) is refused above this result size, not allocated.
PADDED_RESULT_LIMIT_BYTES = 2**30

# IVF default nprobe 16: recall@10 1.000 on 20k clustered points (nlist 512; nprobe 4 gives 0.993, 8 gives 1.000)
# and 0.9999 on 100k x 385 (nlist 1265), at 10x the exact queries/s (benchmarks/bench_index.py). The margin is for
# real data, less clustered than these; 16 lists are still only ~1% of the documents.
DEFAULT_NPROBE = 16

# HNSW defaults. With the Poincare-built graph, efSearch 64 gives recall@10 0.996 (20k) and 0.99 (100k x 385);
# recall no longer rises above 64. efConstruction 100 builds twice as fast as 200 at the same recall.
DEFAULT_HNSW_M = 32
DEFAULT_EF_CONSTRUCTION = 100
DEFAULT_EF_SEARCH = 64


def _graph_coordinates(points: np.ndarray, c: float) -> np.ndarray:
    """Coordinates the HNSW graph is built on: Poincare ball, zero-padded to the augmented width, (N, D) -> (N, D + 1).

    Euclidean distances between Poincare points follow hyperbolic neighbourhoods far better than those between
    augmented vectors, which are dominated by radial differences: built on the augmented vectors, the graph gave
    recall@10 0.35 on 20k clustered points with radii up to 5 (0.99 only with radii below 1); built on Poincare
    coordinates and searched with the augmented vectors, 0.997.
    """
    ball = lorentz.to_poincare(points.astype(np.float64), c)
    return np.hstack([ball, np.zeros((len(points), 2))]).astype(np.float32)


def _write_codes(flat_storage: faiss.IndexFlat, vectors: np.ndarray) -> None:
    """Overwrite all vectors of an IndexFlat in place (same count and width), keeping its HNSW graph."""
    faiss.copy_array_to_vector(np.ascontiguousarray(vectors, dtype=np.float32).view(np.uint8).ravel(),
                               flat_storage.codes)


def _check_metric(kind: str, metric: str | None) -> str:
    """The metric FAISS uses for ``kind``; raises for a metric that cannot give hyperbolic neighbours."""
    expected = "l2" if kind == "hnsw" else "inner_product"
    metric = metric or expected
    if kind == "hnsw" and metric == "inner_product":
        # Measured on 100k hyperboloid points (DESIGN.md): greedy search with flipped queries gets lost.
        raise ValueError("HNSW with inner product is refused: HNSW builds its graph from document-document inner "
                         "products, which are Euclidean, not hyperbolic, so its neighbours are wrong (measured "
                         "recall@10 0.001-0.03). Use kind='hnsw' with metric='l2' (the MIPS->L2 augmentation, the "
                         "default), kind='ivf', or the exact kind='flat'.")
    if metric != expected:
        raise ValueError(f"kind={kind!r} supports metric={expected!r} only; got metric={metric!r}")
    return metric


def read_faiss_file(path: Path):
    """``faiss.read_index`` with a one-line error for a missing or damaged file (FAISS raises a C++ traceback)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the index folder is incomplete; {_REBUILD}")
    try:
        return faiss.read_index(str(path))
    except RuntimeError:
        raise ValueError(f"{path} is damaged (cut short, or not a FAISS index: FAISS cannot read it); "
                         f"{_REBUILD}") from None


class LorentzIndex(HyperboloidStore):
    """A FAISS index over hyperboloid documents, searched with sign-flipped queries.

    Args:
        dim: ambient dimension D = d + 1 (time coordinate included).
        curvature: c > 0 of the hyperboloid <x,x>_L = -c.
        kind: "flat" (exact, default), "ivf" or "hnsw" (approximate; see the module docstring).
        model_name: the model whose embeddings this holds; saved with the index and checked on load.
        model_fingerprint: ``hyte.lineage.model_fingerprint`` of that model; saved with the index, and
            ``check_query_model`` admits only queries from this model or from one declared compatible with it.
        metric: "inner_product" for flat/ivf, "l2" for hnsw (the defaults). "inner_product" with "hnsw" raises.
        nlist: IVF list count; None picks ~4 sqrt(N) from the first ``add`` (the IVF is trained on that batch).
        nprobe: IVF lists searched per query (default ``DEFAULT_NPROBE``).
        hnsw_m, ef_construction, ef_search: HNSW graph degree and build / search beam widths.
        threads: if given, ``faiss.omp_set_num_threads(threads)`` (process-wide).

    Ids are non-negative int64. ``remove`` on "hnsw" leaves a tombstone (FAISS HNSW cannot delete): the row's id
    becomes -1 and searches skip it with an ``IDSelector``; the row keeps its memory and graph links until the
    index is rebuilt from its documents. The id can be added again.
    """

    def __init__(self, dim: int, curvature: float = 1.0, kind: str = "flat", model_name: str | None = None, *,
                 model_fingerprint: str | None = None, metric: str | None = None, nlist: int | None = None,
                 nprobe: int = DEFAULT_NPROBE, hnsw_m: int = DEFAULT_HNSW_M,
                 ef_construction: int = DEFAULT_EF_CONSTRUCTION, ef_search: int = DEFAULT_EF_SEARCH,
                 threads: int | None = None) -> None:
        self.dim = check_positive_int("dim", dim)
        if self.dim < 2:
            raise ValueError(f"dim is the ambient dimension d + 1 and must be >= 2; got {dim}")
        check_index_curvature(curvature, model_name)
        self.curvature = float(curvature)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        self.kind = kind
        self.metric = _check_metric(kind, metric)
        self.model_name = model_name
        self.model_fingerprint = model_fingerprint
        if threads is not None:
            faiss.omp_set_num_threads(check_positive_int("threads", threads))

        self.options: dict[str, Any] = {}
        self._index: faiss.Index | None = None  # ivf: created and trained by the first add()
        if kind == "flat":
            self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        elif kind == "ivf":
            self.options = {"nlist": None if nlist is None else check_positive_int("nlist", nlist),
                            "nprobe": check_positive_int("nprobe", nprobe)}
        else:
            given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search}
            self.options = {name: check_positive_int(name, value) for name, value in given.items()}
            hnsw = faiss.IndexHNSWFlat(self.dim + 1, self.options["hnsw_m"])
            hnsw.hnsw.efConstruction = self.options["ef_construction"]
            self._index = faiss.IndexIDMap2(hnsw)
        self._ids = np.empty(0, dtype=np.int64)  # sorted ids of the live documents
        # Bounds over the stored documents (None: not yet computed; see _time_bounds): the largest x_0, and the largest
        # gap between a stored x_0 and the one its space part gives in float64.
        self._time_bound: tuple[float, float] | None = None

    def __len__(self) -> int:
        """Number of live documents."""
        return len(self._ids)

    @property
    def ids(self) -> np.ndarray:
        """Sorted ids of the stored documents, (N,) int64 (a copy)."""
        return self._ids.copy()

    def __repr__(self) -> str:
        return (f"LorentzIndex(kind={self.kind!r}, dim={self.dim}, curvature={self.curvature}, model_name="
                f"{self.model_name!r}, model_fingerprint={self.model_fingerprint!r}, count={len(self)}, "
                f"options={self.options})")

    def add(self, vectors: Any, ids: Any = None) -> np.ndarray:
        """Add documents: hyperboloid points (N, D) (numpy or torch), ids (N,) int or None (numbered from the largest
        stored id + 1). Returns the ids, (N,) int64. Another model's points are not detected: ``HyteSearcher.add_texts``
        encodes with the index's own model. On "ivf", the first call trains the index on its batch: make it
        representative of the collection."""
        points = self._check_points(vectors, "documents")
        new_ids = self._check_ids(ids, len(points))
        if len(points) == 0:
            return new_ids
        if self.kind == "flat":
            self._index.add_with_ids(points, new_ids)
        elif self.kind == "ivf":
            self._add_ivf(points, new_ids)
        else:
            self._add_hnsw(points, new_ids)
        self._ids = np.union1d(self._ids, new_ids)
        if self._time_bound is not None:
            self._time_bound = tuple(map(max, self._time_bound, time_bounds(points, self.curvature)))
        return new_ids

    def _time_bounds(self) -> tuple[float, float]:
        """``store.time_bounds`` over every stored document (removals leave it as it was: still a bound)."""
        if self._time_bound is None:
            bounds = [time_bounds(self._index.reconstruct_batch(self._ids[start:start + 65536]), self.curvature)
                      for start in range(0, len(self._ids), 65536)]
            self._time_bound = tuple(map(max, zip(*bounds))) if bounds else (0.0, 0.0)
        return self._time_bound

    def _train_ivf(self, points: np.ndarray) -> faiss.IndexIVFFlat:
        """A trained, empty IVF-Flat (inner product) whose centroids lie on the hyperboloid."""
        # By default the usual 4 sqrt(n), capped at n / 39: FAISS's k-means wants at least 39 points per centroid.
        nlist = self.options["nlist"] or max(1, min(round(4 * math.sqrt(len(points))), len(points) // 39))
        if nlist > len(points):
            raise ValueError(f"the first add() of an IVF index trains it and needs >= nlist = {nlist} documents; "
                             f"got {len(points)}")
        # Euclidean k-means, each cluster mean projected onto the hyperboloid (its Lorentzian centroid). FAISS's
        # IVF-IP training (spherical k-means) puts centroids of mixed far clusters near the origin: one list drew 19%
        # of 100k documents, where these lists are balanced. niter 10: 5 and 25 gave the same recall.
        kmeans = faiss.Kmeans(self.dim, nlist, niter=10, seed=1234)
        kmeans.train(points)
        quantizer = faiss.IndexFlatIP(self.dim)
        quantizer.add(lorentz.project(kmeans.centroids.astype(np.float64), self.curvature).astype(np.float32))
        self.options["nlist"] = nlist
        # Trained as built: FAISS marks an IVF trained when its quantizer holds nlist centroids.
        return faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)

    def _add_ivf(self, points: np.ndarray, ids: np.ndarray) -> None:
        if self._index is None:
            self._index = self._train_ivf(points)
        # FAISS would assign each document to argmax x . centroid, a Euclidean product that favours centroids far
        # from the origin (recall@10 0.21 at nprobe 32 on 20k clustered points), while queries are routed by
        # q~ . centroid = <q, centroid>_L. The flipped document routes by <x, centroid>_L, as queries do.
        _, lists = self._index.quantizer.search(lorentz.flip_time(points), 1)
        lists = np.ascontiguousarray(lists.ravel())
        self._index.add_core(len(points), faiss.swig_ptr(points), faiss.swig_ptr(ids), faiss.swig_ptr(lists))

    def _hnsw_storage(self) -> faiss.IndexFlat:
        return faiss.downcast_index(faiss.downcast_index(self._index.index).storage)

    def _add_hnsw(self, points: np.ndarray, ids: np.ndarray) -> None:
        # The graph is built on Poincare coordinates but searched with the augmented vectors (``augment``,
        # ``_graph_coordinates``). FAISS HNSW uses one storage for both, so the stored vectors are swapped in place:
        # Poincare coordinates of all rows while the new rows are linked, augmented vectors for searching.
        storage = self._hnsw_storage()
        stored = get_flat_data(storage)[:, : self.dim]  # all rows, tombstones included
        _write_codes(storage, _graph_coordinates(stored, self.curvature))
        try:
            self._index.add_with_ids(_graph_coordinates(points, self.curvature), ids)
        finally:
            # Rewritten whole: the new documents may raise M (``augment``), so no headroom is needed. Also restores
            # search vectors if the add failed part-way.
            rows = np.vstack([stored, points])[: storage.ntotal]
            _write_codes(storage, augment(rows))

    def remove(self, ids: Any) -> int:
        """Remove documents by id, (M,) ints. Ids not in the index are ignored. Returns how many were removed."""
        present = np.intersect1d(integer_ids(ids).ravel(), self._ids)
        if len(present) == 0:
            return 0
        if self.kind == "hnsw":
            id_map = faiss.vector_to_array(self._index.id_map)
            id_map[np.isin(id_map, present)] = -1  # tombstones, skipped by searches (``_search_hnsw``)
            faiss.copy_array_to_vector(id_map, self._index.id_map)
            self._index.construct_rev_map()
        else:
            self._index.remove_ids(present)
        self._ids = np.setdiff1d(self._ids, present)
        return len(present)

    def search(self, queries: Any, k: int = 10, *, nprobe: int | None = None,
               ef_search: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k documents for sign-flipped query vectors (N, D) (the encoder's role="query" output).

        Returns (scores, ids), both (N, k): scores float32 Lorentz inner products <q, x>_L (<= -c; larger is
        nearer; ``to_distances`` gives geodesic distances), ids int64, best first. Where fewer than k documents
        are found (k > len(self), or an approximate index reaching fewer), the row is padded with id -1 and score
        -inf, as FAISS pads. ``nprobe`` (ivf) and ``ef_search`` (hnsw) override the index's defaults for this call.
        """
        q = self._check_queries(queries)
        k = check_positive_int("k", k)
        if k > len(self) and len(q) * k * 12 > PADDED_RESULT_LIMIT_BYTES:  # float32 score + int64 id per hit
            raise ValueError(f"k {k} is above the {len(self)} documents this index holds, and the padded result "
                             f"({len(q)} x {k}) would take {len(q) * k * 12 / 2**30:.1f} GiB: ask for k <= "
                             f"len(index) ({len(self)})")
        if len(self) == 0:  # FAISS's answer, padded; a forgotten add() would otherwise pass unnoticed
            warnings.warn("searching an empty LorentzIndex: every hit is id -1 (score -inf); add() documents first",
                          stacklevel=2)
            return np.full((len(q), k), -np.inf, dtype=np.float32), np.full((len(q), k), -1, dtype=np.int64)
        if self.kind == "flat":
            scores, labels = self.exact_search64(q, k)
            scores = scores.astype(np.float32)
        elif self.kind == "ivf":
            nprobe = self.options["nprobe"] if nprobe is None else nprobe
            params = faiss.SearchParametersIVF(nprobe=check_positive_int("nprobe", nprobe))
            scores, labels = self._index.search(q, k, params=params)
        else:
            scores, labels = self._search_hnsw(q, k, self.options["ef_search"] if ef_search is None else ef_search)
        scores[labels < 0] = -np.inf
        return scores, labels

    @property
    def is_exact(self) -> bool:
        return self.kind == "flat"

    def exact_search64(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.kind != "flat":
            raise ValueError(f"exact_search64 needs a flat index; this one is {self.kind!r}")
        return certified_top_k(q, k, len(self), self._flat_shortlist, self._time_bounds(), self.curvature,
                               self.stored)

    def _flat_shortlist(self, q: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``certified_top_k``'s float32 shortlist: FAISS's flat search and the stored points it found."""
        scores, labels = self._index.search(q, size)
        points = np.zeros((*labels.shape, self.dim), dtype=np.float32)
        found = labels >= 0
        points[found] = self._index.reconstruct_batch(labels[found])
        return scores, labels, points

    def _search_hnsw(self, q: np.ndarray, k: int, ef_search: int) -> tuple[np.ndarray, np.ndarray]:
        params = faiss.SearchParametersHNSW(efSearch=max(check_positive_int("ef_search", ef_search), k))
        if self._index.ntotal > len(self):
            # Tombstones (id -1, see ``remove``): IndexIDMap2 translates the selector to its stored ids.
            # Both selectors are kept in local variables: FAISS holds only raw pointers to them.
            tombstone = faiss.IDSelectorBatch(np.array([-1], dtype=np.int64))
            live = faiss.IDSelectorNot(tombstone)
            params.sel = live
        queries_augmented = np.hstack([q, np.zeros((len(q), 1), dtype=np.float32)])
        _, labels = self._index.search(queries_augmented, k, params=params)
        # The L2 distances hold <q, x>_L only as a small difference of |q~|^2 + M^2 terms; the inner products are
        # recomputed (in float64) from the k stored documents instead.
        rows, cols = np.nonzero(labels >= 0)
        documents = self._index.reconstruct_batch(labels[rows, cols])[:, : self.dim]
        scores = np.full(labels.shape, -np.inf, dtype=np.float32)
        scores[rows, cols] = np.einsum("ij,ij->i", documents.astype(np.float64), q[rows].astype(np.float64))
        return scores, labels

    def stored(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the live documents: ids (N,) int64 and points (N, D) float32 (N x D x 4 bytes), storage order."""
        if self._index is None:
            return np.empty(0, dtype=np.int64), np.empty((0, self.dim), dtype=np.float32)
        if self.kind == "ivf":
            invlists = self._index.invlists
            lists = [get_invlist(invlists, i) for i in range(invlists.nlist)]
            ids = np.concatenate([list_ids for list_ids, _ in lists])
            points = np.concatenate([codes.view(np.float32).reshape(-1, self.dim) for _, codes in lists])
            return ids, points
        ids = faiss.vector_to_array(self._index.id_map)
        storage = faiss.downcast_index(self._index.index) if self.kind == "flat" else self._hnsw_storage()
        points = get_flat_data(storage)[:, : self.dim]  # hnsw: drop the augmentation coordinate
        live = ids >= 0  # hnsw tombstones
        return ids[live], np.ascontiguousarray(points[live])

    def renumbered(self) -> LorentzIndex:
        """A copy of this index (same kind, options, model) whose documents are numbered 0..N-1 in the order of
        their ids: the numbering an index folder needs (row i of its texts is id i) after documents were removed.
        Rebuilt from the stored points (an IVF index is trained again on them)."""
        ids, points = self.stored()
        order = np.argsort(ids)
        copy = LorentzIndex(self.dim, self.curvature, self.kind, self.model_name,
                            model_fingerprint=self.model_fingerprint, metric=self.metric, **self.options)
        copy.add(points[order], np.arange(len(ids)))
        return copy

    def _fill_points(self, flat: np.ndarray, result: np.ndarray) -> None:
        if self.kind == "ivf":  # IVF lists have no id lookup: read them all (``stored``)
            return super()._fill_points(flat, result)
        present = np.isin(flat, self._ids)
        if present.any():
            result[present] = self._index.reconstruct_batch(flat[present])[:, : self.dim]

    def _largest_id(self) -> int | None:
        return int(self._ids[-1]) if len(self._ids) else None

    def _stored_among(self, ids: np.ndarray) -> np.ndarray:
        return ids[np.isin(ids, self._ids)]

    def _exact_search(self, queries: np.ndarray, k: int, ids: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Brute force with ``faiss.knn`` (float32): much faster than the base class's float64 blocks."""
        _, rows = faiss.knn(queries, points, k, metric=faiss.METRIC_INNER_PRODUCT)
        return ids[rows]

    def write_files(self, directory: Path) -> None:
        """Write ``index.faiss`` and ``metadata.json`` into an existing folder (not atomic by itself: ``save`` and
        ``hyte.retrieval.folder`` call it on a staging folder)."""
        if self._index is None:
            raise ValueError("nothing to save: an IVF index is created and trained by its first add()")
        faiss.write_index(self._index, str(directory / INDEX_FILE))
        metadata = {"format_version": FORMAT_VERSION, "hyte_version": _hyte_version, "faiss_version": faiss.__version__,
                    "model_name": self.model_name, "model_fingerprint": self.model_fingerprint,
                    "curvature": self.curvature, "dim": self.dim, "kind": self.kind, "metric": self.metric,
                    "options": self.options, "count": len(self)}
        (directory / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")

    def save(self, directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Save atomically to ``directory`` (``index.faiss`` + ``metadata.json``; ``hyte.io.atomic_directory``): a
        failure at any step leaves the previous save loadable. A previous save there is replaced only with
        ``overwrite``."""
        claim_folder(directory, option="the index folder", replaces="index", remedy="a folder of its own, e.g. "
                     "beside the model")  # as the command line refuses
        texts = [name for name in (FOLDER_FILE, DOCUMENTS_FILE) if (Path(directory) / name).is_file()]
        if texts:
            raise ValueError(f"{directory} is an index folder with texts ({texts[0]}): saving the bare LorentzIndex "
                             "there would delete them. Save the index with its texts (HyteSearcher(encoder, index, "
                             "documents).save(folder), or hyte.retrieval.folder.write_index_folder), or choose "
                             "another folder")
        atomic_directory(directory, self.write_files, METADATA_FILE, "LorentzIndex", owned=(INDEX_FILE, METADATA_FILE),
                         overwrite=overwrite)

    @classmethod
    def load(cls, directory: str | os.PathLike, *, expected_model: str | None = None,
             expected_dim: int | None = None, expected_curvature: float | None = None,
             threads: int | None = None) -> LorentzIndex:
        """Load a ``save``d index. ``expected_*`` are checked with ``check_compatible`` (IncompatibleIndexError)."""
        target = saved_directory(directory, METADATA_FILE, "LorentzIndex", _REBUILD)
        metadata = read_json_file(target / METADATA_FILE, _REBUILD)
        if metadata.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{target}: index format version {metadata.get('format_version')!r} is not supported "
                             f"(this hyte reads version {FORMAT_VERSION})")
        # model_fingerprint is absent from indexes saved before lineage was recorded (same format otherwise).
        index = cls(metadata["dim"], metadata["curvature"], metadata["kind"], metadata["model_name"],
                    model_fingerprint=metadata.get("model_fingerprint"), metric=metadata["metric"], threads=threads,
                    **metadata["options"])
        index.check_compatible(expected_model, expected_dim, expected_curvature)
        index._index = read_faiss_file(target / INDEX_FILE)
        expected_width = index.dim + 1 if index.kind == "hnsw" else index.dim
        if index._index.d != expected_width:
            raise ValueError(f"{target}: {INDEX_FILE} has dimension {index._index.d}, metadata says {index.dim}")
        index._ids = np.sort(index.stored()[0])
        if len(index) != metadata["count"]:
            raise ValueError(f"{target}: {INDEX_FILE} holds {len(index)} documents, metadata says "
                             f"{metadata['count']}")
        return index
