"""The held-out evaluation suite of the fine-tuning recipes: HPO branches and ICD-10-CM chapters that training never
sees, and general-domain text (Linux man pages), scored the same way for every encoder (HyTE or Euclidean).

Per ontology: retrieval (nDCG@10, R@10, MRR@10 over the held-out corpus), the hierarchy benchmark (SpecHR, R@1,
top-1 by candidate type) and the rank correlation of radius with depth (Spearman, 95 % bootstrap interval). The
sets are built once per call and every encoder is scored on exactly the same texts.

``split="validation"`` scores HPO branches that a run with ``data.hpo_test_fraction = validation_fraction`` leaves
out of training but that are *not* among the test branches (the branch split takes branches in a seeded order
until the fraction is reached, so the test branches at 0.2 are a prefix of those at 0.35): hyper-parameters are
chosen there, never on the test branches.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

RETRIEVAL_KEYS = ("ndcg@10", "recall@10", "mrr@10")
HIERARCHY_KEYS = ("spechr", "recall@1", "mrr")


def _hpo_sets(split: str, sizes: Mapping[str, int], test_fraction: float, validation_fraction: float,
              split_seed: int, seed: int) -> dict:
    from ..data.hpo import load_hpo, retrieval_split, split_by_branches
    from .hierarchy_build import build_hierarchy_benchmark, hpo_hierarchy_benchmark
    from .radius import hpo_texts_by_depth
    from .hpo import heldout_retrieval_set

    if split == "test":
        return {"retrieval": heldout_retrieval_set(sizes["queries"], sizes["documents"], seed=seed,
                                                   test_fraction=test_fraction, split_seed=split_seed),
                "hierarchy": hpo_hierarchy_benchmark("test", test_fraction=test_fraction, split_seed=split_seed,
                                                     max_queries=sizes["hierarchy_queries"], seed=seed),
                "depth_texts": hpo_texts_by_depth(per_depth=sizes["per_depth"], split="test", seed=seed,
                                                  test_fraction=test_fraction, split_seed=split_seed)}
    ontology = load_hpo()
    _, test_ids = split_by_branches(ontology, test_fraction=test_fraction, seed=split_seed)
    _, wider = split_by_branches(ontology, test_fraction=validation_fraction, seed=split_seed)
    validation_ids = wider - test_ids
    if not validation_ids:
        raise ValueError(f"no validation branches: the split at {validation_fraction} holds no branch beyond the "
                         f"test branches at {test_fraction}; raise validation_fraction")
    return {"retrieval": retrieval_split(ontology, validation_ids, max_queries=sizes["queries"], seed=seed),
            "hierarchy": build_hierarchy_benchmark(ontology, validation_ids, max_queries=sizes["hierarchy_queries"],
                                                   seed=seed)}


def _icd10_sets(sizes: Mapping[str, int], test_fraction: float, split_seed: int, seed: int) -> dict:
    from .icd10 import icd10_heldout_retrieval_set, icd10_hierarchy_benchmark, icd10_texts_by_depth

    return {"retrieval": icd10_heldout_retrieval_set(sizes["queries"], sizes["documents"], seed=seed,
                                                     test_fraction=test_fraction, split_seed=split_seed),
            "hierarchy": icd10_hierarchy_benchmark("test", max_queries=sizes["hierarchy_queries"], seed=seed,
                                                   test_fraction=test_fraction, split_seed=split_seed),
            "depth_texts": icd10_texts_by_depth(per_depth=sizes["per_depth"], split="test", seed=seed,
                                                test_fraction=test_fraction, split_seed=split_seed)}


def _manpages_sets(sizes: Mapping[str, int], seed: int) -> dict:
    from .manpages import manpages_retrieval_set

    return {"retrieval": manpages_retrieval_set(sizes["queries"], sizes["documents"], seed=seed)}


def _score(encoder, sets: dict) -> dict:
    from .hierarchy import evaluate_hierarchy
    from .radius import radius_by_depth
    from .retrieval import evaluate_retrieval

    retrieval = evaluate_retrieval(encoder, *sets["retrieval"], k_values=(1, 10))
    scores = {**{key: retrieval[key] for key in RETRIEVAL_KEYS}, "num_queries": len(sets["retrieval"][0])}
    if "hierarchy" in sets:
        hierarchy = evaluate_hierarchy(encoder, sets["hierarchy"])
        scores.update({key: hierarchy[key] for key in HIERARCHY_KEYS}, top1_by_type=hierarchy["top1_by_type"],
                      num_hierarchy_queries=hierarchy["num_queries"])
    if "depth_texts" in sets:
        scores["radius_depth_spearman"] = radius_by_depth(encoder, sets["depth_texts"])["spearman"]
    return scores


def evaluate_heldout(encoders: Mapping[str, object], *, split: str = "test", ontologies=("hpo", "icd10", "manpages"),
                     queries: int = 500, documents: int = 2000, hierarchy_queries: int = 500, per_depth: int = 50,
                     test_fraction: float = 0.2, validation_fraction: float = 0.35, split_seed: int = 0,
                     seed: int = 0) -> dict[str, dict[str, dict]]:
    """{encoder name: {ontology: scores}} on the held-out ("test") or validation branches (module docstring).

    ``test_fraction`` / ``split_seed`` must be the training run's ``data.hpo_test_fraction`` / ``data.hpo_seed``
    (for "validation": the test fraction whose branches stay untouched). Validation covers HPO only, without the
    radius correlation (selection looks at retrieval and SpecHR). "manpages" is the general-domain control (Linux
    man pages, :mod:`hyte.evaluation.manpages`): retrieval only, text unlike any training data, where a fine-tune
    should not fall below its base.
    """
    if split not in ("test", "validation"):
        raise ValueError(f"split must be 'test' or 'validation'; got {split!r}")
    sizes = {"queries": queries, "documents": documents, "hierarchy_queries": hierarchy_queries,
             "per_depth": per_depth}
    sets = {}
    for ontology in ontologies:
        if ontology == "hpo":
            sets["hpo"] = _hpo_sets(split, sizes, test_fraction, validation_fraction, split_seed, seed)
        elif ontology == "icd10" and split == "test":
            sets["icd10"] = _icd10_sets(sizes, test_fraction, split_seed, seed)
        elif ontology == "manpages" and split == "test":
            sets["manpages"] = _manpages_sets(sizes, seed)
        elif ontology not in ("icd10", "manpages"):
            raise ValueError(f"unknown ontology {ontology!r}; known: hpo, icd10, manpages")
    return {name: {ontology: _score(encoder, data) for ontology, data in sets.items()}
            for name, encoder in encoders.items()}


def aggregate_seeds(per_seed: list[dict]) -> dict:
    """{ontology: {score: {"mean", "std", "values"}}} over seeds' ``evaluate_heldout`` scores: mean and sample
    standard deviation of every numeric score, nested ones flattened (``top1_by_type.parent``); the key "training"
    (a run's own record, not an ontology) is skipped."""
    def flat(scores: dict) -> dict:
        out = {}
        for key, value in scores.items():
            if isinstance(value, dict):
                out.update({f"{key}.{inner}": v for inner, v in value.items()})
            elif isinstance(value, (int, float)):
                out[key] = value
        return out

    summary = {}
    for ontology in per_seed[0]:
        if ontology == "training":
            continue
        rows = [flat(s[ontology]) for s in per_seed]
        summary[ontology] = {}
        for key in rows[0]:
            values = [row[key] for row in rows if row.get(key) is not None]
            if values:
                summary[ontology][key] = {"mean": statistics.fmean(values),
                                          "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                                          "values": values}
    return summary
