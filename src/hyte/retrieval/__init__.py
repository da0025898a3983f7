"""Retrieval over hyperboloid embeddings: FAISS indexes searched with sign-flipped query vectors."""

from .index import IncompatibleIndexError, LorentzIndex

__all__ = ["IncompatibleIndexError", "LorentzIndex"]
