"""HyTE as a LangChain retriever: ``HyTERetriever``, a ``langchain_core`` ``BaseRetriever`` (docs/rag.md).

Each ``Document`` carries the document's own id as ``id`` and, in ``metadata``, ``score`` (the Lorentz inner
product, larger is nearer), ``distance`` (geodesic), ``radius`` (x0; larger is more specific) and ``index_id``.
Not a LangChain vector store, whose cosine / L2 scoring would rank hyperboloid points wrongly. ``ainvoke`` runs the
search in a worker thread (LangChain's default for retrievers).
"""

from __future__ import annotations

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as error:
    raise ImportError("hyte.integrations.langchain needs langchain-core: "
                      "pip install 'hyte-embeddings[langchain]'") from error
from pydantic import ConfigDict, Field

from ..rag import HyteSearcher, SearcherConstructors

__all__ = ["HyTERetriever"]


class HyTERetriever(SearcherConstructors, BaseRetriever):
    """Top-``k`` documents of a ``HyteSearcher`` (HyTE encoder + ``LorentzIndex`` + texts) as LangChain Documents.

    Build it with ``from_folder(directory, model=None, k=4)`` or ``from_texts(texts, model, ids=None, k=4)``;
    ``invoke(query, k=2)`` overrides ``k`` for one call.
    """

    searcher: HyteSearcher
    k: int = Field(default=4, ge=1)
    model_config = ConfigDict(extra="forbid")  # a misspelt option fails instead of being ignored

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        return [Document(page_content=p.text, id=p.id, metadata=p.metadata())
                for p in self.searcher.search(query, self.k if k is None else k)]
