"""Hard-negative mining with the model being fine-tuned, through the exact Lorentz index.

Why not sentence-transformers' ``mine_hard_negatives``: it L2-normalises the embeddings before scoring, which turns
hyperboloid points into unrelated unit vectors, so its neighbours are not hyperbolic neighbours. This miner keeps
the points, searches ``LorentzIndex`` (flat, exact) with sign-flipped queries, and applies a positive-aware margin
in the geometry the model is trained in.
"""

from __future__ import annotations

import math

import numpy as np

from ..retrieval import LorentzIndex


def mine_hard_negatives(encoder, examples: list[dict], *, num_negatives: int = 1, candidates: int = 30,
                        margin: float = 0.95, skip_top: int = 0, batch_size: int = 64) -> list[dict]:
    """Append up to ``num_negatives`` mined documents to each example's "negatives" (kept: e.g. hierarchy siblings).

    The candidate pool is every distinct document of ``examples``. A candidate is skipped when it is the example's
    own positive, among the first ``skip_top`` ranks, or a probable false negative: its similarity to the query
    exceeds ``margin`` x the positive's, where similarity is exp(-geodesic distance) for hyperbolic encoders and
    the cosine for Euclidean ones, or already among the example's negatives. Examples for which nothing survives
    keep their current negatives.
    """
    documents = sorted({e["document"] for e in examples})
    position = {text: i for i, text in enumerate(documents)}
    doc_vectors = encoder.encode(documents, role="document", batch_size=batch_size, show_progress_bar=True)
    query_vectors = encoder.encode([e["query"] for e in examples], role="query", batch_size=batch_size)
    depth = min(len(documents), candidates + skip_top + 1)
    if encoder.kind == "hyperbolic":
        index = LorentzIndex(doc_vectors.shape[1], encoder.curvature, kind="flat")
        index.add(doc_vectors)
        scores, found = index.search(query_vectors, k=depth)
        similarity = np.exp(-index.to_distances(scores))  # in (0, 1], 1 = same point
        positive_similarity = np.exp(-index.to_distances(np.einsum(
            "ij,ij->i", query_vectors, doc_vectors[[position[e["document"]] for e in examples]])[:, None]))[:, 0]
    else:
        scores = query_vectors @ doc_vectors.T
        found = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        similarity = np.take_along_axis(scores, found, axis=1)
        positive_similarity = scores[np.arange(len(examples)), [position[e["document"]] for e in examples]]
    mined = []
    for row, example in enumerate(examples):
        existing = list(example.get("negatives") or [])
        negatives = []
        for rank, (doc_index, value) in enumerate(zip(found[row], similarity[row])):
            if rank < skip_top or doc_index < 0 or documents[doc_index] in (example["document"], *existing):
                continue
            if value > margin * positive_similarity[row] or not math.isfinite(float(value)):
                continue
            negatives.append(documents[doc_index])
            if len(negatives) == num_negatives:
                break
        mined.append({**example, "negatives": existing + negatives})
    return mined
