"""HyTE document points in PostgreSQL with pgvector: ``PgVectorIndex``, a ``LorentzIndex`` that lives in a table, so
an index can live in the PostgreSQL users already run. docs/serving.md ("Beyond one machine") describes the table,
the two kinds and what was measured.

One table per index (id, doc_id, text, embedding, and for kind "hnsw" the augmented vector) and one ``hyte_indexes``
row of what it holds. Kind "exact" certifies its float32 ``<#>`` scan in float64
(``hyte.retrieval.store.certified_top_k``); kind "hnsw" is L2 over x^ = [x, sqrt(M^2 - |x|^2)], queried with
[q~, 0] (inner-product HNSW builds its graph from Euclidean document-document products: never used). M is fixed
when the first documents arrive and recorded; a later document beyond it is refused, since x^ needs |x| <= M.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any, Self

import numpy as np

from .. import __version__ as _hyte_version
from ..errors import HyteError
from ..lineage import model_fingerprint
from .folder import documents_for, model_reference
from .store import (TextStore, augment, certified_top_k, check_index_curvature, check_positive_int, integer_ids,
                    scan64, time_bounds)

__all__ = ["PgVectorError", "PgVectorIndex", "build_pgvector_index"]

FORMAT_VERSION = 1
KINDS = ("exact", "hnsw")
METADATA_TABLE = "hyte_indexes"
# pgvector indexes at most 2000 dimensions; the augmented column has D + 1.
MAX_INDEXED_DIM = 2000
# HNSW defaults: m 16 / ef_construction 64 are pgvector's; the search beam and the re-scored candidates are wider
# because the augmented vectors crowd far-out documents together. Chosen from the recorded sweep over 1M documents
# (benchmarks/results/serving_scale_1m.json): the fastest setting with recall@10 >= 0.95 (0.97, 45x exact search);
# ef_search 200 / 100 candidates reached 0.94.
DEFAULT_HNSW_M = 16
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_EF_SEARCH = 400
DEFAULT_CANDIDATES = 200
# max_norm headroom over the first documents: later documents up to 25% farther out (in Euclidean norm) still fit.
NORM_HEADROOM = 1.25
_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PgVectorError(HyteError, ConnectionError):
    """The server cannot be reached or cannot serve HyTE vectors (no pgvector)."""


def redacted(dsn: str) -> str:
    """The DSN without its password, for messages."""
    return re.sub(r"(password=)\S+", r"\1***", re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", dsn))


def connect(dsn: str):
    """A psycopg connection (autocommit) with pgvector's types registered; one-line errors for the usual causes."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError:
        raise ImportError("the pgvector store needs psycopg and pgvector: pip install "
                          "'hyte-embeddings[postgres]'") from None
    if not isinstance(dsn, str):
        raise TypeError(f"dsn must be a PostgreSQL connection string (postgresql://USER@HOST:PORT/DATABASE); got "
                        f"{type(dsn).__name__}")
    try:
        connection = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.ProgrammingError as error:  # not a connection string at all (e.g. a folder path)
        raise PgVectorError(f"{redacted(dsn)!r} is not a PostgreSQL connection string ({str(error).strip()}): give "
                            "postgresql://USER@HOST:PORT/DATABASE (hyte postgres start prints its DSN)") from None
    except psycopg.OperationalError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PgVectorError(f"cannot connect to PostgreSQL at {redacted(dsn)}: {first}. Is the server running and the "
                            f"DSN right (postgresql://USER@HOST:PORT/DATABASE)?") from None
    try:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as error:
        connection.close()
        first = str(error).strip().splitlines()[0]
        raise PgVectorError(f"PostgreSQL at {redacted(dsn)} has no usable pgvector extension ({first}): install "
                            f"pgvector on the server (https://github.com/pgvector/pgvector#installation) and run "
                            f"CREATE EXTENSION vector as a user allowed to") from None
    register_vector(connection)
    return connection


def _check_max_norm(max_norm: Any, kind: str) -> float | None:
    """``max_norm`` as a float: None (taken from the first documents), or for kind "hnsw" a finite number > 0 (NaN
    would fail as invalid JSON in the database, after all documents were encoded)."""
    if max_norm is None:
        return None
    if kind != "hnsw":
        raise ValueError(f"max_norm bounds the augmented vectors of kind 'hnsw'; kind {kind!r} has none: leave it out "
                         "or use kind='hnsw'")
    value = float(max_norm)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"max_norm (the HNSW augmentation bound M, --max-norm) must be a finite number > 0; got "
                         f"{max_norm!r}. Give a bound above the largest |x| of the documents, or leave it out "
                         f"(None: {NORM_HEADROOM} x that of the first documents)")
    return value


def _check_table_name(table: str) -> None:
    if not isinstance(table, str) or not _TABLE_NAME.match(table):
        raise ValueError(f"table name must be lower-case letters, digits and _ (starting with a letter or _, at most "
                         f"63 characters); got {table!r}")


class PgVectorIndex(TextStore):
    """HyTE document points in a PostgreSQL table (module docstring). Make one with ``create``, open one with
    ``open``; ``close`` (or a ``with`` block) releases the connection."""

    def __init__(self, connection, dsn: str, table: str, metadata: dict[str, Any]):
        self._live_connection, self.dsn, self.table = connection, dsn, table
        info = connection.info  # where the rows live, whatever the DSN's spelling (localhost or 127.0.0.1)
        self.location = (info.hostaddr or info.host, info.port, info.dbname, table)
        self._metadata = metadata
        self.dim = int(metadata["dim"])
        self.curvature = float(metadata["curvature"])
        self.kind = metadata["kind"]
        self.model_name = metadata.get("model_name")
        self.model_fingerprint = metadata.get("model_fingerprint")
        self.options = dict(metadata.get("options", {}))

    @classmethod
    def create(cls, dsn: str, table: str, dim: int, curvature: float = 1.0, kind: str = "exact",
               model_name: str | None = None, *, model_fingerprint: str | None = None, hnsw_m: int = DEFAULT_HNSW_M,
               ef_construction: int = DEFAULT_EF_CONSTRUCTION, ef_search: int = DEFAULT_EF_SEARCH,
               candidates: int = DEFAULT_CANDIDATES, max_norm: float | None = None, overwrite: bool = False,
               points: Any = None, ids: Any = None, documents: Sequence[dict] | None = None) -> PgVectorIndex:
        """Create the table ``table`` (and its ``hyte_indexes`` row) for points of H^(dim-1)_c.

        An existing HyTE table of that name is refused unless ``overwrite``; a table that is not HyTE's is never
        dropped. ``points`` (with ``ids`` and ``documents``, as ``add`` takes them) are loaded in the same
        transaction as the table is made: with ``overwrite`` the previous index stays until the new one is complete.
        ``max_norm`` (kind "hnsw"): the augmentation bound M; None takes 1.25 x the largest |x| of the first
        documents.
        """
        _check_table_name(table)
        check_index_curvature(curvature, model_name)
        dim = check_positive_int("dim", dim)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        max_norm = _check_max_norm(max_norm, kind)
        if kind == "hnsw" and dim + 1 > MAX_INDEXED_DIM:
            raise ValueError(f"pgvector HNSW indexes at most {MAX_INDEXED_DIM} dimensions; the augmented vectors have "
                             f"{dim + 1}. Use kind='exact'.")
        options = {}
        if kind == "hnsw":
            given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search,
                     "candidates": candidates}
            options = {**{name: check_positive_int(name, value) for name, value in given.items()}, "max_norm": max_norm}
            if options["ef_search"] > 1000:
                raise ValueError(f"pgvector's hnsw.ef_search is at most 1000; got {ef_search}")
        metadata = {"format_version": FORMAT_VERSION, "hyte_version": _hyte_version, "model_name": model_name,
                    "model_fingerprint": model_fingerprint, "curvature": float(curvature), "dim": dim, "kind": kind,
                    "options": options, "time_bounds": [0.0, 0.0]}
        with ExitStack() as on_failure:
            connection = on_failure.enter_context(connect(dsn))  # closed unless the index is made
            with connection.transaction():
                connection.execute(f"CREATE TABLE IF NOT EXISTS {METADATA_TABLE} (name text PRIMARY KEY, "
                                   "metadata jsonb NOT NULL)")
                cls._check_free(connection, dsn, table, overwrite)
                connection.execute(f"DROP TABLE IF EXISTS {table}")
                augmented = f", augmented vector({dim + 1})" if kind == "hnsw" else ""
                connection.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, doc_id text, text text, "
                                   f"embedding vector({dim}) NOT NULL{augmented})")
                connection.execute(f"INSERT INTO {METADATA_TABLE} (name, metadata) VALUES (%s, %s) ON CONFLICT (name) "
                                   f"DO UPDATE SET metadata = EXCLUDED.metadata", (table, json.dumps(metadata)))
                index = cls(connection, dsn, table, metadata)
                if points is not None:
                    index.add(points, ids, documents)
            on_failure.pop_all()
            return index

    @classmethod
    def check_table_free(cls, dsn: str, table: str, overwrite: bool = False) -> None:
        """Raise (as ``create`` would) unless ``create(dsn, table, overwrite=overwrite)`` can make the table: run it
        before slow work such as encoding."""
        _check_table_name(table)
        with connect(dsn) as connection:
            cls._check_free(connection, dsn, table, overwrite)

    @classmethod
    def _check_free(cls, connection, dsn: str, table: str, overwrite: bool) -> None:
        known = cls._table_exists(connection, METADATA_TABLE) and connection.execute(
            f"SELECT 1 FROM {METADATA_TABLE} WHERE name = %s", (table,)).fetchone()
        if known and not overwrite:
            raise FileExistsError(f"PostgreSQL at {redacted(dsn)} already holds the HyTE index {table!r}: open it, "
                                  f"choose another table name, or pass overwrite=True (--overwrite) to replace it")
        if not known and cls._table_exists(connection, table):
            raise FileExistsError(f"PostgreSQL at {redacted(dsn)} has a table {table!r} that is not a HyTE index; "
                                  f"choose another table name")

    @classmethod
    def open(cls, dsn: str, table: str, *, expected_model: str | None = None, expected_dim: int | None = None,
             expected_curvature: float | None = None) -> PgVectorIndex:
        """Open an index ``create`` made; ``expected_*`` are checked like ``LorentzIndex.load``'s."""
        _check_table_name(table)
        with ExitStack() as on_failure:
            connection = on_failure.enter_context(connect(dsn))  # closed unless the index is opened
            row = cls._table_exists(connection, METADATA_TABLE) and connection.execute(
                f"SELECT metadata FROM {METADATA_TABLE} WHERE name = %s", (table,)).fetchone()
            if not row:
                raise FileNotFoundError(f"PostgreSQL at {redacted(dsn)} holds no HyTE index {table!r}: build one "
                                        f"with `hyte index build --backend pgvector --dsn DSN --table {table} ...`")
            metadata = row[0]
            if metadata.get("format_version") != FORMAT_VERSION:
                raise ValueError(f"HyTE index {table!r}: format version {metadata.get('format_version')!r} is not "
                                 f"supported (this hyte reads version {FORMAT_VERSION})")
            index = cls(connection, dsn, table, metadata)
            index.check_compatible(expected_model, expected_dim, expected_curvature)
            on_failure.pop_all()
            return index

    @staticmethod
    def _table_exists(connection, table: str) -> bool:
        return connection.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]

    @property
    def _connection(self):
        """The connection, opened again when the last one was lost (a restarted server): the call that met the lost
        connection failed, the next one reconnects."""
        if self._live_connection.closed and not self._closed_by_user:
            self._live_connection = connect(self.dsn)
        return self._live_connection

    _closed_by_user = False

    def close(self) -> None:
        self._closed_by_user = True
        self._live_connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"PgVectorIndex(table={self.table!r}, dsn={redacted(self.dsn)!r}, kind={self.kind!r}, dim={self.dim}, "
                f"curvature={self.curvature}, model_name={self.model_name!r}, count={len(self)})")

    def __len__(self) -> int:
        return int(self._connection.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])

    @property
    def ids(self) -> np.ndarray:
        rows = self._connection.execute(f"SELECT id FROM {self.table} ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def _largest_id(self) -> int | None:
        return self._connection.execute(f"SELECT max(id) FROM {self.table}").fetchone()[0]

    def _stored_among(self, ids: np.ndarray) -> np.ndarray:
        rows = self._connection.execute(f"SELECT id FROM {self.table} WHERE id = ANY(%s)", (ids.tolist(),)).fetchall()
        return np.array(sorted(row[0] for row in rows), dtype=np.int64)

    def stored(self) -> tuple[np.ndarray, np.ndarray]:
        rows = self._connection.execute(f"SELECT id, embedding FROM {self.table} ORDER BY id", binary=True).fetchall()
        return (np.array([row[0] for row in rows], dtype=np.int64),
                np.array([row[1].to_numpy() for row in rows], dtype=np.float32).reshape(-1, self.dim))

    def _fill_points(self, flat: np.ndarray, result: np.ndarray) -> None:
        rows = self._connection.execute(f"SELECT id, embedding FROM {self.table} WHERE id = ANY(%s)",
                                        (flat[flat >= 0].tolist(),), binary=True).fetchall()
        found = {row[0]: row[1].to_numpy() for row in rows}
        for position, identifier in enumerate(flat):
            if identifier in found:
                result[position] = found[identifier]

    def document(self, index_id: int) -> dict[str, str]:
        """Index id ``index_id``'s {"id": its own id (the index id if it has none), "text": ...}."""
        row = self._connection.execute(f"SELECT doc_id, text FROM {self.table} WHERE id = %s",
                                       (index_id,)).fetchone()
        if row is None:
            raise KeyError(f"no document with index id {index_id} in {self.table!r}")
        return {"id": row[0] if row[0] is not None else str(index_id), "text": row[1]}

    def stored_own_ids(self, own_ids: Sequence[str]) -> list[str]:
        """Which of the documents' own ids (``documents[i]["id"]``) the table already holds, sorted."""
        rows = self._connection.execute(f"SELECT DISTINCT doc_id FROM {self.table} WHERE doc_id = ANY(%s)",
                                        (list(own_ids),)).fetchall()
        return sorted(row[0] for row in rows)

    def remove(self, ids: Any) -> int:
        """Delete documents by id; absent ids are ignored. Returns how many were removed."""
        flat = integer_ids(ids).ravel().tolist()
        return self._connection.execute(f"DELETE FROM {self.table} WHERE id = ANY(%s)", (flat,)).rowcount

    @staticmethod
    def _check_documents(documents: Sequence[dict] | None, count: int) -> list[tuple[str | None, str | None]]:
        if documents is None:
            return [(None, None)] * count
        documents = list(documents)
        if len(documents) != count:
            raise ValueError(f"{len(documents)} documents for {count} vectors: give one {{'id', 'text'}} per vector")
        rows = []
        for position, document in enumerate(documents):
            if not isinstance(document, dict) or not isinstance(document.get("text"), str):
                raise TypeError(f"document {position} must be a dict with a 'text' string (and an 'id'); got "
                                 f"{document!r:.80}")
            rows.append((None if document.get("id") is None else str(document["id"]), document["text"]))
        return rows

    def _write(self, points: np.ndarray, ids: np.ndarray, documents: Sequence[dict] | None, *, upsert: bool) -> None:
        """``add`` / ``upsert``: bulk-loaded with COPY in one transaction."""
        documents = self._check_documents(documents, len(points))
        if len(points) == 0:
            return
        from pgvector import Vector

        augmented = self._augmented(points) if self.kind == "hnsw" else None
        columns = "id, doc_id, text, embedding" + (", augmented" if augmented is not None else "")
        bounds = tuple(map(max, self._metadata["time_bounds"], time_bounds(points, self.curvature)))
        with self._connection.transaction():
            target = self.table
            if upsert:  # COPY cannot update: load a temporary table, then merge it in
                target = f"{self.table}_upsert"
                self._connection.execute(f"CREATE TEMPORARY TABLE {target} (LIKE {self.table}) ON COMMIT DROP")
            with self._connection.cursor().copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
                for row, (identifier, (doc_id, text)) in enumerate(zip(ids.tolist(), documents)):
                    values = [identifier, doc_id, text, Vector(points[row])]
                    if augmented is not None:
                        values.append(Vector(augmented[row]))
                    copy.write_row(values)
            if upsert:
                updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in columns.split(", ")[1:])
                self._connection.execute(f"INSERT INTO {self.table} ({columns}) SELECT {columns} FROM {target} "
                                         f"ON CONFLICT (id) DO UPDATE SET {updates}")
            self._metadata.update(time_bounds=list(bounds), options=self.options)
            self._connection.execute(f"UPDATE {METADATA_TABLE} SET metadata = %s WHERE name = %s",
                                     (json.dumps(self._metadata), self.table))
            if self.kind == "hnsw":
                # Built once the first documents are in (a bulk build is much faster than row-by-row inserts into
                # an empty graph); later rows are linked in as they arrive.
                self._connection.execute(
                    f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} USING hnsw (augmented "
                    f"vector_l2_ops) WITH (m = {self.options['hnsw_m']}, ef_construction = "
                    f"{self.options['ef_construction']})")

    def _augmented(self, points: np.ndarray) -> np.ndarray:
        """``augment``ed points, (N, D) -> (N, D + 1); fixes M at the first documents (module docstring)."""
        norm = np.linalg.norm(points.astype(np.float64), axis=1)
        bound = self.options.get("max_norm") or NORM_HEADROOM * float(norm.max())
        self.options["max_norm"] = bound
        too_far = norm > abs(bound)  # older tables recorded a negative M, which worked as only M^2 is used
        if too_far.any():
            first = int(np.argmax(too_far))
            raise ValueError(
                f"{int(too_far.sum())} documents lie beyond this HNSW index's augmentation bound M = {bound:.6g} "
                f"(first: row {first}, |x| = {norm[first]:.6g}, x_0 = {float(points[first, 0]):.6g}), fixed when "
                "its first documents arrived. Rebuild the index with a larger bound: PgVectorIndex.create(..., "
                "max_norm=M, overwrite=True) (hyte index build --max-norm M --overwrite)")
        return augment(points, bound)

    def search(self, queries: Any, k: int = 10, *, exact: bool | None = None, ef_search: int | None = None,
               candidates: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k documents for sign-flipped query vectors (N, D): (scores, ids), both (N, k), as
        ``LorentzIndex.search`` returns them. Kind "exact" (or ``exact=True``) scans the table and is exact in
        float64; kind "hnsw" walks the graph (``ef_search`` beam, ``candidates`` re-scored rows)."""
        q = self._check_queries(queries)
        k = check_positive_int("k", k)
        if exact or (exact is None and self.kind == "exact"):
            scores, ids = self.exact_search64(q, k)
            return scores.astype(np.float32), ids
        if self.kind != "hnsw":
            raise ValueError("exact=False needs an index of kind 'hnsw'")
        return self._search_hnsw(q, k, ef_search or self.options["ef_search"], candidates or self.options["candidates"])

    @property
    def is_exact(self) -> bool:
        return self.kind == "exact"

    def exact_search64(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return certified_top_k(q, k, len(self), self._scan_shortlist, tuple(self._metadata["time_bounds"]),
                               self.curvature, self.stored)

    def _scan_shortlist(self, q: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``certified_top_k``'s float32 shortlist: the exact scan ``ORDER BY embedding <#> q~``. Vectors travel in
        pgvector's binary format (``binary=True``): parsing their text form took ~40 % of a 100-row query here."""
        scores = np.full((len(q), size), -np.inf, dtype=np.float32)
        ids = np.full((len(q), size), -1, dtype=np.int64)
        points = np.zeros((len(q), size, self.dim), dtype=np.float32)
        for row, query in enumerate(q):
            found = self._connection.execute(
                f"SELECT id, embedding <#> %s, embedding FROM {self.table} ORDER BY embedding <#> %s LIMIT %s",
                (query, query, size), binary=True).fetchall()
            for column, (identifier, negative, embedding) in enumerate(found):
                scores[row, column], ids[row, column] = -negative, identifier
                points[row, column] = embedding.to_numpy()
        return scores, ids, points

    def _search_hnsw(self, q: np.ndarray, k: int, ef_search: int, candidates: int) -> tuple[np.ndarray, np.ndarray]:
        width = max(k, check_positive_int("candidates", candidates))
        ef_search = max(check_positive_int("ef_search", ef_search), width)
        if ef_search > 1000:
            raise ValueError(f"pgvector's hnsw.ef_search is at most 1000; got {ef_search} (it must cover k and "
                             f"candidates)")
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)
        ids = np.full((len(q), k), -1, dtype=np.int64)
        queries_augmented = np.hstack([q, np.zeros((len(q), 1), dtype=np.float32)])
        with self._connection.transaction():
            # SET LOCAL: the beam width holds for this transaction only (and, on Citus, reaches the workers only
            # with citus.propagate_set_commands = 'local'; README).
            self._connection.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
            for row, query in enumerate(queries_augmented):
                found = self._connection.execute(
                    f"SELECT id, embedding FROM {self.table} ORDER BY augmented <-> %s LIMIT %s",
                    (query, width), binary=True).fetchall()
                if found:  # re-scored in float64 (``scan64``)
                    top_scores, top_ids = scan64(q[row:row + 1], np.array([identifier for identifier, _ in found]),
                                                 np.stack([embedding.to_numpy() for _, embedding in found]),
                                                 self.curvature, k)
                    scores[row, :top_ids.shape[1]], ids[row, :top_ids.shape[1]] = top_scores[0], top_ids[0]
        return scores, ids

    def _exact_search(self, queries: np.ndarray, k: int, ids: np.ndarray, points: np.ndarray) -> np.ndarray:
        return self.exact_search64(queries, k)[1]


def build_pgvector_index(encoder, texts: Sequence[str], dsn: str, table: str, *,
                         ids: Sequence[str | int] | None = None, kind: str = "exact", overwrite: bool = False,
                         max_norm: float | None = None, batch_size: int = 32,
                         show_progress_bar: bool | None = None) -> PgVectorIndex:
    """Encode ``texts`` as documents with ``encoder`` into the new table ``table`` with their texts (``ids``: the
    documents' own ids), recording the model as ``hyte.retrieval.folder.index_texts`` does. The table name is
    checked before anything is encoded; an index it replaces (``overwrite``) stays until the new one is loaded."""
    documents = documents_for(texts, ids)
    _check_max_norm(max_norm, kind)
    check_index_curvature(encoder.curvature, encoder.name)  # before the texts are encoded
    PgVectorIndex.check_table_free(dsn, table, overwrite)
    points = encoder.encode(list(texts), role="document", batch_size=batch_size, show_progress_bar=show_progress_bar)
    return PgVectorIndex.create(dsn, table, encoder.dim, encoder.curvature, kind, model_reference(encoder.name),
                                model_fingerprint=model_fingerprint(encoder.model), max_norm=max_norm,
                                overwrite=overwrite, points=points, documents=documents)
