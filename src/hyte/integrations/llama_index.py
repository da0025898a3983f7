"""HyTE as a LlamaIndex retriever: ``HyTERetriever``, a ``llama_index.core`` ``BaseRetriever`` (docs/rag.md).

Each ``NodeWithScore`` has ``score`` = the Lorentz inner product (larger is nearer) and a ``TextNode`` whose
``id_`` is the document's own id and whose metadata holds ``distance`` (geodesic), ``radius`` (x0; larger is more
specific), ``score`` and ``index_id``. Not a LlamaIndex vector store, whose cosine / L2 scoring would rank
hyperboloid points wrongly.
"""

from __future__ import annotations

import asyncio

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as error:
    raise ImportError("hyte.integrations.llama_index needs llama-index-core: "
                      "pip install 'hyte-embeddings[llamaindex]'") from error

from ..rag import HyteSearcher, SearcherConstructors

__all__ = ["HyTERetriever"]


class HyTERetriever(SearcherConstructors, BaseRetriever):
    """Top-``k`` documents of a ``HyteSearcher`` (HyTE encoder + ``LorentzIndex`` + texts) as LlamaIndex nodes.

    Build it with ``from_folder(directory, model=None, k=4)`` or ``from_texts(texts, model, ids=None, k=4)``.
    """

    def __init__(self, searcher: HyteSearcher, k: int = 4, callback_manager: CallbackManager | None = None,
                 verbose: bool = False):
        if k < 1:
            raise ValueError(f"k must be >= 1; got {k}")
        self.searcher, self.k = searcher, k
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        _check_query(str_or_query_bundle)  # before LlamaIndex's event models, whose errors name no query
        return super().retrieve(str_or_query_bundle)

    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        _check_query(str_or_query_bundle)
        return await super().aretrieve(str_or_query_bundle)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=p.id, text=p.text, metadata=p.metadata()), score=p.score)
                for p in self.searcher.search(query_bundle.query_str, self.k)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The base class would run the search on the event loop and block it.
        return await asyncio.to_thread(self._retrieve, query_bundle)


def _check_query(query) -> None:
    if not isinstance(query, (str, QueryBundle)):
        raise TypeError(f"retrieve takes one query text (or a QueryBundle); got {type(query).__name__} {query!r:.60}")
    if isinstance(query, QueryBundle) and (query.custom_embedding_strs or query.embedding is not None):
        raise ValueError("HyTERetriever encodes query_str with its own HyTE model; a QueryBundle's "
                         "custom_embedding_strs / embedding would be ignored: put the text to search in query_str")
