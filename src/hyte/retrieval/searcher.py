"""``HyteSearcher``: a HyTE encoder, an index over its document points, and the documents' texts and ids.

It is the retriever of ``hyte rag`` and the one the LangChain and LlamaIndex adapters (``hyte.integrations``) wrap:
exact or approximate search of a document store (``LorentzIndex`` in memory, ``PgVectorIndex`` in
PostgreSQL, ``ShardedIndex`` over several) with sign-flipped queries, and each hit's geodesic distance and radius
(x0). Plain and phrase index folders open alike (``hyte.retrieval.folder``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import lorentz
from ..lineage import check_query_encoder
from .folder import (documents_for, index_texts, open_index_folder, read_documents, resolve_index_model,
                     write_index_folder)
from .index import LorentzIndex
from .postgres import PgVectorIndex

if TYPE_CHECKING:
    from ..encoders import HyteEncoder
    from .store import HyperboloidStore

__all__ = ["HyteSearcher", "Passage", "SearcherConstructors"]


@dataclass(frozen=True)
class Passage:
    """One search hit. ``index_id``: the LorentzIndex id (row of documents.jsonl); ``id``: the document's own id;
    ``score``: the Lorentz inner product <q, x>_L (larger is nearer); ``distance``: geodesic; ``radius``: x0;
    ``specificity``: the geodesic distance to the origin (larger = farther out = more specific, where the model
    was trained to place texts by specificity; None for a passage built by hand without it)."""

    index_id: int
    id: str
    text: str
    score: float
    distance: float
    radius: float
    specificity: float | None = None

    def metadata(self) -> dict[str, float | int | str]:
        """What the framework adapters put in a hit's metadata: every field but the text."""
        return {name: value for name, value in asdict(self).items() if name != "text"}


def _load_hyte_encoder(model) -> HyteEncoder:
    from ..encoders import HyteEncoder, load_encoder

    if isinstance(model, (str, os.PathLike)):
        return load_encoder(model, kind="hyte")
    if not isinstance(model, HyteEncoder):
        raise TypeError(f"model must be a model folder, a Hub id or a hyte.encoders.HyteEncoder; got "
                        f"{type(model).__name__}. For a loaded model and tokenizer: HyteEncoder(model, tokenizer)")
    return model


class HyteSearcher:
    """A HyTE encoder, a store of its document points (``LorentzIndex``, ``PgVectorIndex``, ``ShardedIndex``), and
    the documents' texts and ids (``documents``, or the store's own where it keeps them beside the vectors).

    ``documents[i]`` is ``{"id": ..., "text": ...}`` for index id i. Build one with ``from_folder`` (an index
    folder; a phrase index folder is searched through its global index) or ``from_texts``. The encoder must be the
    model that built the index or one declared compatible with it (``LorentzIndex.check_query_model``;
    ``check_model=False`` skips that check for experts), and match its dimension and curvature.
    """

    def __init__(self, encoder: HyteEncoder, index: HyperboloidStore, documents: Sequence[dict] | None = None, *,
                 check_model: bool = True):
        check_query_encoder(index, encoder, allow_incompatible=not check_model)
        if documents is None:  # a store that keeps the texts beside the vectors (PgVectorIndex, ShardedIndex)
            documents = getattr(index, "documents", None)
            if documents is None:
                raise ValueError(f"{type(index).__name__} holds no texts: pass documents=[{{'id': ..., 'text': ...}}, "
                                 "...] (row i = index id i)")
        else:
            documents = list(documents)
            bad = next((i for i, d in enumerate(documents) if not isinstance(d, dict) or "text" not in d), None)
            if bad is not None:
                raise TypeError(f"documents[{bad}] is {documents[bad]!r:.60}: each document is a dict "
                                "{'id': ..., 'text': ...} (row i = index id i); hyte.retrieval.folder.documents_for "
                                "makes them from texts and ids")
            largest = index._largest_id()
            if largest is not None and largest >= len(documents):
                raise ValueError(f"the index holds id {largest} but there are only {len(documents)} documents")
        self.encoder, self.index, self.documents = encoder, index, documents

    @classmethod
    def from_pgvector(cls, dsn: str, table: str, model=None, *, check_model: bool = True) -> HyteSearcher:
        """Over a ``PgVectorIndex`` table (``hyte index build --backend pgvector``); ``model`` defaults to the one
        it was built with."""
        index = PgVectorIndex.open(dsn, table)
        if model is None:
            if index.model_name is None:
                raise ValueError(f"index {table!r} does not name its model: pass the model that built it (--model)")
            model = index.model_name
        return cls(_load_hyte_encoder(model), index, check_model=check_model)

    @classmethod
    def from_folder(cls, directory: str | os.PathLike, model=None, *, check_model: bool = True) -> HyteSearcher:
        """Load an index folder; ``model`` (folder, Hub id or ``HyteEncoder``) defaults to the one it was built
        with; another model must be declared compatible with it (see the class)."""
        folder = open_index_folder(directory)
        if folder.documents is None:
            read_documents(folder.path)  # raises: the folder holds no texts, and says how to get them
        if not isinstance(folder.vector_index, LorentzIndex):
            raise ValueError(f"{directory} is a Euclidean phrase index: HyteSearcher needs hyperbolic vectors")
        if model is None:
            model = resolve_index_model(folder)
        return cls(_load_hyte_encoder(model), folder.vector_index, folder.documents, check_model=check_model)

    @classmethod
    def from_texts(cls, texts: Sequence[str], model, ids: Sequence[str | int] | None = None, kind: str = "flat",
                   batch_size: int = 32, show_progress_bar: bool | None = None) -> HyteSearcher:
        """Encode ``texts`` as documents with ``model`` (folder, Hub id or ``HyteEncoder``) into a new index of
        ``kind``; ``ids`` are the documents' own ids: strings or integers, unique as text (1 and '1' are one id; a
        float is refused); default: their positions. Checked before the model is loaded."""
        documents = documents_for(texts, ids)
        encoder = _load_hyte_encoder(model)
        index = index_texts(encoder, texts, kind=kind, batch_size=batch_size, show_progress_bar=show_progress_bar)
        return cls(encoder, index, documents)

    def add_texts(self, texts: Sequence[str], ids: Sequence[str | int] | None = None, *, batch_size: int = 32,
                  show_progress_bar: bool | None = None) -> np.ndarray:
        """Encode ``texts`` with this searcher's own encoder and add them with their texts; returns their index ids.

        The safe way to grow an index: vectors handed to a store's ``add`` carry no trace of the model that made
        them, so points of another model would be accepted there and silently mix two embedding spaces. ``ids``:
        the documents' own ids (default: their index ids), unique among all documents."""
        documents = documents_for(texts, ids, allow_no_texts=True)  # refuses a bare string, empty texts, repeated ids
        in_list = isinstance(self.documents, list)  # row i of the list is index id i
        if in_list:
            start = len(self.documents)
            own = [d["id"] for d in documents] if ids is not None else [start + i for i in range(len(documents))]
            taken = sorted({str(d["id"]) for d in self.documents} & {str(i) for i in own})
        elif hasattr(self.index, "stored_own_ids"):
            taken = self.index.stored_own_ids([str(d["id"]) for d in documents]) if ids is not None else []
        else:
            raise TypeError(f"{type(self.index).__name__} keeps no texts to add to")
        if taken:  # before anything is encoded
            raise ValueError(f"id {taken[0]!r} is already in this index: ids must be unique")
        points = self.encoder.encode(list(texts), role="document", batch_size=batch_size,
                                     show_progress_bar=show_progress_bar)
        if in_list:
            new_ids = self.index.add(points, np.arange(start, start + len(points)))
            self.documents.extend({"id": identifier, "text": d["text"]} for identifier, d in zip(own, documents))
            return new_ids
        # A store keeping texts beside the vectors: without ids of their own, documents answer with their index id.
        return self.index.add(points, documents=documents if ids is not None else
                              [{"id": None, "text": d["text"]} for d in documents])

    def remove(self, ids: Sequence[str | int] | str | int) -> int:
        """Remove documents by their own ids (those of ``from_texts`` / ``add_texts`` or of the built folder's
        input); returns how many were removed. An id this searcher does not hold is refused, naming it: a typo
        would otherwise remove nothing without a word. A store that keeps its own texts (PostgreSQL) removes
        documents itself."""
        if not isinstance(self.documents, list) or not isinstance(self.index, LorentzIndex):
            raise TypeError(f"{type(self.index).__name__} keeps its documents itself: remove them there")
        wanted = [ids] if isinstance(ids, (str, int)) else list(ids)
        live = set(self.index.ids.tolist())
        rows = {str(document["id"]): row for row, document in enumerate(self.documents) if row in live}
        unknown = [identifier for identifier in wanted if str(identifier) not in rows]
        if unknown:
            raise ValueError(f"id {unknown[0]!r} is not in this index ({len(unknown)} of the {len(wanted)} ids "
                             "given are not): nothing was removed")
        return self.index.remove(np.array([rows[str(identifier)] for identifier in wanted], dtype=np.int64))

    def save(self, directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Save the index and the texts to ``directory`` as one index folder (``hyte.retrieval.folder``), which
        ``from_folder``, ``hyte index search`` and ``hyte rag`` read. An existing index folder is replaced only with
        ``overwrite``. After removals the folder holds the remaining documents, numbered afresh (its rows are its
        ids); this searcher is left as it is."""
        index, documents = self.index, self.documents
        if isinstance(index, LorentzIndex) and isinstance(documents, list):
            live = index.ids
            if len(live) != len(documents):  # documents were removed: their rows stay, unindexed, in the list
                index, documents = index.renumbered(), [documents[row] for row in live]
        write_index_folder(directory, index, documents, overwrite=overwrite)

    def __len__(self) -> int:
        return len(self.index)

    def search_batch(self, queries: Sequence[str], k: int = 4, *, relation: str | None = None,
                     candidates: int | None = None) -> list[list[Passage]]:
        """The top-k passages of each query, nearest first (fewer where the index holds fewer).

        ``relation`` "broader": only passages more general than the query (nearer the origin than the query's text
        would sit as a document), "narrower": only more specific ones (farther out); searched among the nearest
        ``candidates`` (default 100), so fewer than k may come back. Meaningful for a model trained so that the
        radius follows specificity (BENCHMARKS.md says how well each recipe does).
        """
        if relation not in (None, "broader", "narrower"):
            raise ValueError(f"relation must be None, 'broader' or 'narrower'; got {relation!r}")
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of query texts; for one text use search(query)")
        queries = list(queries)
        for position, query in enumerate(queries):
            if not isinstance(query, str):
                raise TypeError(f"query {position} is a {type(query).__name__}, not a text (search_batch takes a "
                                "list of texts)")
            if not query.strip():
                raise ValueError(f"query {position} is empty: give a text to search for")
        if candidates is not None:
            if relation is None:
                raise ValueError("candidates sets how many nearest hits relation='broader' / 'narrower' choose "
                                 "among; without a relation it changes nothing: drop it or give a relation")
            if isinstance(candidates, bool) or not isinstance(candidates, (int, np.integer)) or candidates < 1:
                raise ValueError(f"candidates must be a whole number >= 1; got {candidates!r}")
            if candidates < k:
                raise ValueError(f"candidates ({candidates}) is below k ({k}): the k hits are chosen among the "
                                 f"candidates nearest; give candidates >= k")
        depth = k if relation is None else max(k, 100 if candidates is None else int(candidates))
        scores, found = self.index.search(self.encoder.encode(queries, role="query"), k=depth)
        distances = self.index.to_distances(scores)
        points = self.index.points_of(found).astype(np.float64)  # (N, depth, D), NaN rows for padding
        specificity = lorentz.distance_to_origin(points, self.index.curvature)  # (N, depth), NaN for padding
        if relation is not None:
            own = self.specificity(queries)  # (N,)
            keep = (found >= 0) & ((specificity < own[:, None]) if relation == "broader"
                                   else (specificity > own[:, None]))
            found = np.where(keep, found, -1)

        def passage(row: int, column: int) -> Passage:
            document = self.documents[int(found[row, column])]
            return Passage(index_id=int(found[row, column]), id=str(document["id"]), text=document["text"],
                           score=float(scores[row, column]), distance=float(distances[row, column]),
                           radius=float(points[row, column, 0]), specificity=float(specificity[row, column]))

        return [[passage(row, column) for column in np.flatnonzero(found[row] >= 0)[:k]] for row in range(len(queries))]

    def specificity(self, texts: Sequence[str]) -> np.ndarray:
        """(N,) each text's distance to the origin as a document would sit: what ``relation`` compares hits with."""
        return lorentz.distance_to_origin(self.encoder.encode(list(texts), role="document").astype(np.float64),
                                          self.index.curvature)

    def search(self, query: str, k: int = 4, *, relation: str | None = None,
               candidates: int | None = None) -> list[Passage]:
        """The top-k passages of one query text (``search_batch`` for several)."""
        if not isinstance(query, str):
            raise TypeError(f"search takes one query text, not a {type(query).__name__}; for several use "
                            "search_batch(queries)")
        return self.search_batch([query], k, relation=relation, candidates=candidates)[0]


class SearcherConstructors:
    """``from_folder`` / ``from_texts`` for the framework retrievers, which take ``searcher=`` and their options."""

    @classmethod
    def from_folder(cls, directory: str | os.PathLike, model=None, *, check_model: bool = True, **options):
        """Over an index folder (``hyte index build`` or ``HyteSearcher.save``); see ``HyteSearcher.from_folder``."""
        return cls(searcher=HyteSearcher.from_folder(directory, model, check_model=check_model), **options)

    @classmethod
    def from_texts(cls, texts: Sequence[str], model, ids: Sequence[str | int] | None = None, *, kind: str = "flat",
                   **options):
        """Over a new index of ``texts``; see ``HyteSearcher.from_texts``."""
        return cls(searcher=HyteSearcher.from_texts(texts, model, ids, kind=kind), **options)
