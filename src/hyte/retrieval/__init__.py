"""Retrieval over hyperboloid embeddings: stores of document points searched with sign-flipped query vectors.

``LorentzIndex`` (FAISS, in memory / an index folder), ``PgVectorIndex`` (PostgreSQL + pgvector), ``ShardedIndex``
(several stores searched as one) and ``HyteSearcher`` (texts in, hits out, over any of them). The PostgreSQL store and
the searcher are imported on first use, so that ``import hyte.retrieval`` needs neither psycopg nor a model stack.
"""

from .index import IncompatibleIndexError, LorentzIndex

__all__ = ["HyteSearcher", "IncompatibleIndexError", "LorentzIndex", "PgVectorIndex", "ShardedIndex"]

_LAZY = {"PgVectorIndex": ".postgres", "ShardedIndex": ".sharded", "HyteSearcher": ".searcher"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
