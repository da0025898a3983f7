"""Evaluation of phrase-level reranking at matched unit budgets (the H+ paper's Table 6 protocol; docs/training.md).

Every system reranks the **same** candidates, each query's exact global top-K. Unit kinds share the model's token
states, importance head and top-B selection and differ only in where unit boundaries fall: ``crf`` (the learned
units), ``token`` (every sub-word, ColBERT's unit), ``bigram`` (fixed pairs), ``random`` (seeded spans of 1-3 tokens).
``count="exact"`` (the paper's exact-count control) keeps C_x(B) = min(B, the least natural unit count of the four
kinds) units of a text under every kind, so the kinds are compared at identical vector counts; ``count="cap"``: each
kind keeps min(B, its own natural count). ``hybrid`` fuses global, CRF phrase and lexical scores, each z-normalised
over the query's candidates (``hyte.retrieval.phrase.fuse``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import lorentz
from ..evaluation.metrics import ndcg_at_k, recall_at_k
from ..modeling_hyte_phrase import segment, unit_counts, units_from_tags
from ..retrieval.phrase import fuse, ragged_rows, segment_maxsim

UNIT_KINDS = ("crf", "token", "bigram", "random")
SYSTEMS = ("global", *UNIT_KINDS, "hybrid")


@dataclass
class EncodedTexts:
    """The texts of one side (queries or documents) under every unit kind, all units kept.

    ``globals`` (N, D): global vectors, never flipped. Per kind: ``units[kind]`` (M, D) float32 all units of all
    texts, each text's units in **descending importance** (so its top B are its first B), ``weights[kind]`` (M,),
    ``offsets[kind]`` (N + 1,). ``natural[kind]`` (N,): unit count per text. Lexical view: ``lexical`` per text
    (token ids, max importance).
    """

    globals: np.ndarray
    units: dict[str, np.ndarray] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    offsets: dict[str, np.ndarray] = field(default_factory=dict)
    natural: dict[str, np.ndarray] = field(default_factory=dict)
    lexical: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def counts(self, budget: int, kind: str, count: str) -> np.ndarray:
        """Units kept per text at ``budget`` for ``kind``: (N,) (module docstring, ``count`` exact or cap)."""
        natural = np.minimum.reduce([self.natural[k] for k in UNIT_KINDS]) if count == "exact" else self.natural[kind]
        return np.minimum(budget, natural)


@torch.no_grad()
def encode_texts(model, tokenizer, texts: Sequence[str], kinds: Sequence[str] = UNIT_KINDS, seed: int = 0,
                 batch_size: int = 32, max_length: int | None = None) -> EncodedTexts:
    """Run the model once per batch and derive every unit kind from the same token states (``EncodedTexts``)."""
    model.eval()
    globals_, lexical = [], []
    parts: dict[str, list] = {kind: [] for kind in kinds}
    natural: dict[str, list] = {kind: [] for kind in kinds}
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(list(texts[start:start + batch_size]), padding=True, truncation=True,
                          max_length=max_length, return_tensors="pt")
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        globals_.append(out.global_vector.float().numpy())
        for row in range(len(batch["input_ids"])):
            keep = out.unit_mask[row]
            ids, weights = batch["input_ids"][row][keep], out.importance[row][keep]
            unique, inverse = torch.unique(ids, return_inverse=True)
            lexical.append((unique.numpy(), torch.zeros(len(unique)).scatter_reduce(0, inverse, weights, "amax")
                            .numpy()))
        for kind in kinds:
            if kind == "crf":
                unit_ids = units_from_tags(model.decode_tags(out, batch["attention_mask"]), out.unit_mask)
            else:
                unit_ids = segment(kind, out.unit_mask, seed=seed + start)
            pooled = model.units(out, unit_ids, None)
            natural[kind].append(unit_counts(unit_ids).numpy())
            for row in range(len(unit_ids)):
                vectors, weights = pooled.vectors[row][pooled.mask[row]], pooled.weights[row][pooled.mask[row]]
                order = torch.sort(weights, descending=True, stable=True).indices
                parts[kind].append((vectors[order].float().numpy(), weights[order].float().numpy()))
    encoded = EncodedTexts(globals=np.concatenate(globals_), lexical=lexical)
    for kind in kinds:
        encoded.units[kind] = np.concatenate([v for v, _ in parts[kind]])
        encoded.weights[kind] = np.concatenate([w for _, w in parts[kind]])
        encoded.offsets[kind] = np.concatenate([[0], np.cumsum([len(w) for _, w in parts[kind]])]).astype(np.int64)
        encoded.natural[kind] = np.concatenate(natural[kind])
    return encoded


def global_scores(queries: EncodedTexts, documents: EncodedTexts, geometry: str, curvature: float) -> np.ndarray:
    """(Q, N) global similarities: cosine, or minus the geodesic distance (float64 geometry)."""
    q, d = torch.as_tensor(queries.globals), torch.as_tensor(documents.globals)
    if geometry == "lorentz":
        return (-lorentz.pairwise_distance(q.double(), d.double(), curvature)).numpy()
    return (torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(d, dim=-1).T).numpy()


def unit_scores(queries: EncodedTexts, documents: EncodedTexts, query: int, candidates: np.ndarray, kind: str,
                budgets: Sequence[int], count: str, geometry: str, curvature: float) -> dict[int, np.ndarray]:
    """{B: (K,) weighted MaxSim of query ``query`` against documents ``candidates`` with ``kind`` units at B}.

    Each budget keeps the first B units of the query and of every candidate (their top-B by importance).
    """
    q_start, q_end = queries.offsets[kind][query], queries.offsets[kind][query + 1]
    q_vectors = torch.as_tensor(queries.units[kind][q_start:q_end])
    q_weights = torch.as_tensor(queries.weights[kind][q_start:q_end])
    flat, segment_of, rank = ragged_rows(documents.offsets[kind], candidates)
    d_vectors, segment_of, rank = (torch.as_tensor(a) for a in (documents.units[kind][flat], segment_of, rank))
    out = {}
    for budget in budgets:
        q_count = int(queries.counts(budget, kind, count)[query])
        kept = rank < torch.as_tensor(documents.counts(budget, kind, count)[candidates])[segment_of]
        out[budget] = segment_maxsim(q_vectors[:q_count], q_weights[:q_count], d_vectors[kept], segment_of[kept],
                                     len(candidates), geometry, curvature).numpy()
    return out


def lexical_scores(queries: EncodedTexts, documents: EncodedTexts, query: int, candidates: np.ndarray) -> np.ndarray:
    """(K,) sum_t w_q(t) w_d(t) of query ``query`` against ``candidates``."""
    weights = dict(zip(*(a.tolist() for a in queries.lexical[query])))
    return np.array([sum(weights.get(t, 0.0) * w for t, w in zip(ids.tolist(), ws.tolist()))
                     for ids, ws in (documents.lexical[c] for c in candidates)], np.float32)


def evaluate_reranking(model, tokenizer, queries: Mapping[str, str], corpus: Mapping[str, str],
                       qrels: Mapping[str, Mapping[str, float]], *, systems: Sequence[str] = SYSTEMS,
                       budgets: Sequence[int] = (4, 8, 16, 32, 64), k_candidates: Sequence[int] = (100, 1000),
                       count: str = "exact", fusion: Mapping[str, float] | None = None, seed: int = 0,
                       batch_size: int = 32, max_length: int | None = None,
                       encoded: tuple[EncodedTexts, EncodedTexts] | None = None) -> dict:
    """Per-query nDCG@10 / R@10 of each system at each budget and candidate pool size (module docstring).

    Returns {"per_query": {K: {system: {B: {"ndcg@10": [...], "recall@10": [...]}}}} ("global" has B = 0),
    "query_ids", "candidate_recall": {K: share of queries with a relevant document among the candidates},
    "vectors_per_document": {kind: {B: mean kept units}}, "natural_units_per_document": {kind: mean},
    "encoded": (queries, documents) as ``EncodedTexts``}. ``encoded``: reuse an earlier call's encodings of the
    same texts.
    """
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise ValueError(f"unknown systems {unknown}; choose from {SYSTEMS}")
    if count not in ("exact", "cap"):
        raise ValueError(f"count must be 'exact' or 'cap'; got {count!r}")
    geometry, curvature = model.config.geometry, float(model.curvature)
    fusion = dict(fusion or {"global": model.config.fusion_global, "phrase": model.config.fusion_phrase,
                             "lexical": model.config.fusion_lexical})
    query_ids, doc_ids = list(queries), list(corpus)
    if encoded is None:
        encoded = (encode_texts(model, tokenizer, [queries[i] for i in query_ids], seed=seed, batch_size=batch_size,
                                max_length=max_length),
                   encode_texts(model, tokenizer, [corpus[i] for i in doc_ids], seed=seed + 10**6,
                                batch_size=batch_size, max_length=max_length))
    q, d = encoded
    glob = global_scores(q, d, geometry, curvature)
    pool = min(max(k_candidates), len(doc_ids))
    kinds = [s for s in UNIT_KINDS if s in systems or (s == "crf" and "hybrid" in systems)]
    per_query: dict = {k: {s: {} for s in systems} for k in k_candidates}
    candidate_recall = {k: [] for k in k_candidates}

    def record(k, system, budget, ranking, relevant):
        rankings, qrels = {"q": [doc_ids[i] for i in ranking[:10]]}, {"q": dict(relevant)}
        slot = per_query[k][system].setdefault(budget, {"ndcg@10": [], "recall@10": []})
        slot["ndcg@10"].append(ndcg_at_k(rankings, qrels, 10))
        slot["recall@10"].append(recall_at_k(rankings, qrels, 10))

    for row, query_id in enumerate(query_ids):
        relevant = qrels[query_id]
        order = np.argsort(-glob[row], kind="stable")[:pool]
        scores = {kind: unit_scores(q, d, row, order, kind, budgets, count, geometry, curvature) for kind in kinds}
        lexical = lexical_scores(q, d, row, order) if "hybrid" in systems else None
        for k in k_candidates:
            top = order[:k]
            candidate_recall[k].append(any(doc_ids[i] in relevant for i in top))
            if "global" in systems:  # full-corpus global retrieval: its top 10 does not depend on K
                record(k, "global", 0, np.argsort(-glob[row], kind="stable")[:10], relevant)
            for kind in (kind for kind in kinds if kind in systems):
                for budget in budgets:
                    record(k, kind, budget, top[np.argsort(-scores[kind][budget][: len(top)], kind="stable")],
                           relevant)
            if "hybrid" in systems:
                for budget in budgets:
                    fused = fuse({"global": glob[row][top], "phrase": scores["crf"][budget][: len(top)],
                                  "lexical": lexical[: len(top)]}, fusion)
                    record(k, "hybrid", budget, top[np.argsort(-fused, kind="stable")], relevant)
    return {"per_query": per_query, "query_ids": query_ids,
            "candidate_recall": {k: float(np.mean(v)) for k, v in candidate_recall.items()},
            "vectors_per_document": {kind: {b: float(d.counts(b, kind, count).mean()) for b in budgets}
                                     for kind in kinds},
            "natural_units_per_document": {kind: float(d.natural[kind].mean()) for kind in kinds},
            "natural_units_per_query": {kind: float(q.natural[kind].mean()) for kind in kinds},
            "encoded": (q, d)}


def as_phrase_dicts(encoded: EncodedTexts, budget: int, kind: str = "crf", flip_globals: bool = False) -> list[dict]:
    """``encode_phrases``-style dicts (global, top-``budget`` units and weights, lexical) from ``EncodedTexts``, for
    ``PhraseIndex.add`` / ``search`` without encoding again. ``flip_globals``: lorentz queries (sign-flipped)."""
    out = []
    for row in range(len(encoded.globals)):
        start, end = encoded.offsets[kind][row], encoded.offsets[kind][row + 1]
        keep = slice(start, min(end, start + budget))
        vector = lorentz.flip_time(encoded.globals[row]) if flip_globals else encoded.globals[row].copy()
        ids, weights = encoded.lexical[row]
        out.append({"global": vector, "units": encoded.units[kind][keep], "weights": encoded.weights[kind][keep],
                    "lexical_ids": ids, "lexical_weights": weights, "num_units": int(end - start)})
    return out


def summarize(result: dict) -> dict:
    """Means of the per-query metrics: {K: {system: {B: {"ndcg@10", "recall@10"}}}}."""
    return {k: {system: {b: {m: float(np.mean(v)) for m, v in metrics.items()} for b, metrics in by_budget.items()}
                for system, by_budget in systems.items()} for k, systems in result["per_query"].items()}


__all__ = ["SYSTEMS", "UNIT_KINDS", "EncodedTexts", "as_phrase_dicts", "encode_texts", "evaluate_reranking", "global_scores",
           "lexical_scores", "summarize", "unit_scores"]
