"""The held-out HPO retrieval set: queries and definitions from the test branches of the branch split."""

from __future__ import annotations

import random


def heldout_retrieval_set(max_queries: int | None = 300, max_documents: int | None = 2000, seed: int = 0,
                          test_fraction: float = 0.2, split_seed: int = 0, min_depth: int = 1):
    """(queries, corpus, qrels) from the HPO branches that training never sees (``split_by_branches``).

    The corpus keeps every sampled query's relevant definition and fills up with other held-out definitions
    (seeded) to ``max_documents``, so smaller sets stay comparable in difficulty.
    """
    from ..data.hpo import load_hpo, retrieval_split, split_by_branches

    ontology = load_hpo()
    _, test_ids = split_by_branches(ontology, test_fraction=test_fraction, seed=split_seed)
    queries, corpus, qrels = retrieval_split(ontology, test_ids, max_queries=max_queries, seed=seed,
                                             min_depth=min_depth)
    if max_documents is not None and len(corpus) > max_documents:
        needed = {doc for relevant in qrels.values() for doc in relevant}
        others = sorted(set(corpus) - needed)
        fill = random.Random(seed).sample(others, max(0, max_documents - len(needed)))
        corpus = {doc: corpus[doc] for doc in sorted(needed | set(fill))}
    return queries, corpus, qrels
