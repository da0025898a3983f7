"""Hard-negative mining through the exact Lorentz index, and the mined examples of a stage-3 run (cached for resume).

Why not sentence-transformers' ``mine_hard_negatives``: it L2-normalises the embeddings before scoring, which turns
hyperboloid points into unrelated unit vectors, so its neighbours are not hyperbolic neighbours. This miner keeps
the points, searches ``LorentzIndex`` (flat, exact) with sign-flipped queries, and applies a positive-aware margin
in the geometry the model is trained in.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from pathlib import Path

import numpy as np

from ..identity import digest
from ..io import read_jsonl, write_jsonl
from ..retrieval import LorentzIndex
from .config import RunConfig
from .data import Hierarchy, contrastive_examples, hierarchy_for
from .models import BuiltModel, encoder_for

logger = logging.getLogger(__name__)


def mine_hard_negatives(encoder, examples: list[dict], *, num_negatives: int = 1, candidates: int = 30,
                        margin: float = 0.95, skip_top: int = 0, batch_size: int = 64,
                        hierarchy: Hierarchy | None = None) -> list[dict]:
    """Append up to ``num_negatives`` mined documents to each example's "negatives" (kept: e.g. hierarchy siblings).

    The candidate pool is every distinct document of ``examples``. A candidate is skipped when it is the example's
    own positive, among the first ``skip_top`` ranks, or a probable false negative: its similarity to the query
    exceeds ``margin`` x the positive's, where similarity is exp(-geodesic distance) for hyperbolic encoders and
    the cosine for Euclidean ones, or already among the example's negatives; given a ``hierarchy``, also when it
    is an ancestor or descendant of the positive (the same concept at another level, not a negative). Examples for
    which nothing survives keep their current negatives.
    """
    documents = sorted({e["document"] for e in examples})
    position = {text: i for i, text in enumerate(documents)}
    doc_vectors = encoder.encode(documents, role="document", batch_size=batch_size, show_progress_bar=True)
    # Both encodings show progress: on the quickstart's 4000 pairs they are most of its 2.5 minutes of mining.
    query_vectors = encoder.encode([e["query"] for e in examples], role="query", batch_size=batch_size,
                                   show_progress_bar=True)
    depth = min(len(documents), candidates + skip_top + 1)
    if encoder.kind == "hyperbolic":
        index = LorentzIndex(doc_vectors.shape[1], encoder.curvature, kind="flat")
        index.add(doc_vectors)
        scores, found = index.search(query_vectors, k=depth)
        similarity = np.exp(-index.to_distances(scores))  # in (0, 1], 1 = same point
        positive_similarity = np.exp(-index.to_distances(np.einsum(
            "ij,ij->i", query_vectors, doc_vectors[[position[e["document"]] for e in examples]])[:, None]))[:, 0]
    else:
        scores = encoder.scores(query_vectors, doc_vectors)  # the encoder's own similarity (EucBERT: cosine)
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
            if hierarchy is not None and hierarchy.not_a_negative(example, documents[doc_index]):
                continue
            if value > margin * positive_similarity[row] or not math.isfinite(float(value)):
                continue
            negatives.append(documents[doc_index])
            if len(negatives) == num_negatives:
                break
        mined.append({**example, "negatives": existing + negatives})
    return mined


def examples_with_mined_negatives(built: BuiltModel, config: RunConfig, resume: bool) -> list[dict]:
    """The data's examples with mined hard negatives added to their own (none when ``mining.num_negatives`` is 0),
    kept in output_dir/mined_negatives.jsonl: a resumed run reads them back and trains on exactly the same data.
    For ontology data each example also records what its negatives are to its positive ("negative_relations":
    sibling, other, ...; ``Hierarchy.relation``), and the run's log counts them."""
    cache = Path(config.training.output_dir) / "mined_negatives.jsonl"
    if resume and cache.is_file():
        return read_jsonl(cache, "mined-negatives file")
    examples = contrastive_examples(config.data, seed=config.training.seed,
                                    batch_size=config.training.per_device_train_batch_size)
    hierarchy = hierarchy_for(config)
    if config.mining.num_negatives > 0:
        mined = _mined_negatives(built, config, [{"query": e["query"], "document": e["document"]} for e in examples],
                                 hierarchy)
        examples = [{**e, "negatives": list(dict.fromkeys([*e.get("negatives", []), *m]))}
                    for e, m in zip(examples, mined)]
        built.model.train()
    if hierarchy is not None:
        examples = [{**e, "negative_relations": [hierarchy.relation(e["document"], n) for n in e["negatives"]]}
                    for e in examples]
        counts = Counter(r for e in examples for r in e["negative_relations"])
        logger.info("negatives by relation to their positive: %s", dict(counts.most_common()))
    write_jsonl(cache, examples)
    return examples


# Part of the cache key: raised when what a miner computes changes, so negatives cached under the old rule are not
# served to a new run. 2: a HyTE model (EucBERT included) mines with its own pooled vector, not a masked mean.
MINING_RULES = 2


def _mined_negatives(built: BuiltModel, config: RunConfig, pairs: list[dict],
                     hierarchy: Hierarchy | None) -> list[list[str]]:
    """Each pair's mined negatives. With ``mining.cache_dir`` and a fixed miner (not "self"), the result is kept
    under a hash of the pairs, the miner and the mining options, so runs that differ only in the model or the loss
    (e.g. HyTE-H vs its Euclidean control) reuse it instead of mining again."""
    spec = config.mining
    shared = None
    if spec.cache_dir and spec.miner != "self":
        # What the miner is: the encoder at model.path (the base of a HyTE-H, or a loaded model itself), a new
        # model described by its build (random weights: seeded, but never shared with a pretrained one), or a path.
        model = config.model
        miner = None if spec.miner != "base" else model.path if model.build in ("hyte_h", "load") else [
            model.path, model.build, model.options, model.tokenizer, config.training.seed]
        key = digest([pairs, spec.miner, miner, spec.num_negatives, spec.candidates, spec.margin, spec.skip_top,
                      config.loss.max_document_length, hierarchy is not None, MINING_RULES])
        shared = Path(spec.cache_dir) / f"mined-{key}.jsonl"
        if shared.is_file():
            return read_jsonl(shared, "mined-negatives cache", objects=False)  # one list per line
    mined = [e["negatives"] for e in mine_hard_negatives(
        _miner(built, config), pairs, num_negatives=spec.num_negatives, candidates=spec.candidates,
        margin=spec.margin, skip_top=spec.skip_top, hierarchy=hierarchy)]
    if shared is not None:
        write_jsonl(shared, mined)
    return mined


def _miner(built: BuiltModel, config: RunConfig):
    """The encoder that mines hard negatives (``mining.miner``, see MiningSpec)."""
    from ..encoders import load_encoder

    miner, max_length = config.mining.miner, config.loss.max_document_length
    if miner == "base" and config.model.build == "hyte_h":
        return load_encoder(config.model.path, kind="euclidean", max_length=max_length)
    if miner in ("base", "self"):
        return encoder_for(built, max_length)
    return load_encoder(miner, max_length=max_length)
