"""The held-out evaluation suite of the fine-tuning recipes: HPO branches and ICD-10-CM chapters that training never
sees (the training run's ``test_fraction`` / ``split_seed`` select the same ones), and general-domain text (Linux man
pages, the Debian Administrator's Handbook), built once per call and scored the same way for every encoder (HyTE or
Euclidean): retrieval (nDCG@10, R@10, MRR@10), the hierarchy benchmark (SpecHR, R@1, top-1 by candidate type) and
Spearman's rank correlation of radius with depth (95 % bootstrap interval).

``split="validation"`` scores HPO branches that a run with ``data.hpo_test_fraction = validation_fraction`` leaves
out of training but that are *not* among the test branches (the branch split takes branches in a seeded order
until the fraction is reached, so the test branches at 0.2 are a prefix of those at 0.35): hyper-parameters are
chosen there, never on the test branches.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping

from ..data.beir import check_sample_sizes, corpus_with_distractors, seeded_subset

RETRIEVAL_KEYS = ("ndcg@10", "recall@10", "mrr@10")
HIERARCHY_KEYS = ("spechr", "recall@1", "mrr")
# The general-domain controls (retrieval only; a fine-tune should not fall below its base on them), by key.
GENERAL_DOMAIN = {"manpages": "Linux man pages", "handbook": "Debian Administrator's Handbook"}


def _hpo_sets(split: str, sizes: Mapping[str, int], test_fraction: float, validation_fraction: float,
              split_seed: int, seed: int) -> dict:
    from ..data.hpo import load_hpo, retrieval_split, split_by_branches
    from .hierarchy_build import build_hierarchy_benchmark, hpo_hierarchy_benchmark
    from .radius import hpo_texts_by_depth

    ontology = load_hpo()
    _, test_ids = split_by_branches(ontology, test_fraction=test_fraction, seed=split_seed)
    if split == "test":
        held_out = {"seed": seed, "test_fraction": test_fraction, "split_seed": split_seed}
        return {"retrieval": heldout_retrieval_set(sizes["queries"], sizes["documents"], **held_out),
                "hierarchy": hpo_hierarchy_benchmark("test", max_queries=sizes["hierarchy_queries"], **held_out),
                "depth_texts": hpo_texts_by_depth(per_depth=sizes["per_depth"], split="test", **held_out),
                **_edges(hpo_edges, test_ids, sizes, seed=seed)}
    _, wider = split_by_branches(ontology, test_fraction=validation_fraction, seed=split_seed)
    validation_ids = wider - test_ids
    if not validation_ids:
        raise ValueError(f"no validation branches: the split at {validation_fraction} holds no branch beyond the "
                         f"test branches at {test_fraction}; raise validation_fraction")
    return {"retrieval": retrieval_split(ontology, validation_ids, max_queries=sizes["queries"], seed=seed),
            "hierarchy": build_hierarchy_benchmark(ontology, validation_ids, max_queries=sizes["hierarchy_queries"],
                                                   seed=seed),
            **_edges(hpo_edges, validation_ids, sizes, seed=seed)}


def _edges(build, selection, sizes: Mapping[str, int], **options) -> dict:
    """{"edges": build(selection, sizes["edges"], **options)} where the sizes ask for edge diagnostics (the
    compatibility evaluation reuses these sets without them), else {}."""
    return {"edges": build(selection, sizes["edges"], **options)} if sizes.get("edges") else {}


def _icd10_sets(sizes: Mapping[str, int], test_fraction: float, split_seed: int, seed: int) -> dict:
    held_out = {"seed": seed, "test_fraction": test_fraction, "split_seed": split_seed}
    return {"retrieval": icd10_heldout_retrieval_set(sizes["queries"], sizes["documents"], **held_out),
            "hierarchy": icd10_hierarchy_benchmark("test", max_queries=sizes["hierarchy_queries"], **held_out),
            "depth_texts": icd10_texts_by_depth(per_depth=sizes["per_depth"], split="test", **held_out),
            **_edges(icd10_edges, "test", sizes, **held_out)}


def _general_domain_sets(name: str, sizes: Mapping[str, int], seed: int) -> dict:
    """A general-domain control (``GENERAL_DOMAIN``): retrieval only, from installed Debian documentation."""
    from ..data.debian_handbook import handbook_retrieval_set
    from ..data.manpages import manpages_retrieval_set

    build = {"manpages": manpages_retrieval_set, "handbook": handbook_retrieval_set}[name]
    return {"retrieval": build(sizes["queries"], sizes["documents"], seed=seed)}


def _score(encoder, sets: dict, cone_min_radius: float) -> dict:
    from .hierarchy import evaluate_hierarchy
    from .radius import edge_diagnostics, radius_by_depth
    from .retrieval import evaluate_retrieval

    retrieval = evaluate_retrieval(encoder, *sets["retrieval"], k_values=(1, 10), per_query_ndcg=10)
    scores = {**{key: retrieval[key] for key in RETRIEVAL_KEYS}, "num_queries": len(sets["retrieval"][0])}
    # Per-query values in a fixed order (query id; hierarchy record), the same for every model scored on this seed's
    # sets: paired bootstrap intervals over queries.
    per_query = {"ndcg@10": [retrieval["ndcg_per_query"][q] for q in sorted(retrieval["ndcg_per_query"])]}
    if "hierarchy" in sets:
        hierarchy = evaluate_hierarchy(encoder, sets["hierarchy"])
        scores.update({key: hierarchy[key] for key in HIERARCHY_KEYS}, top1_by_type=hierarchy["top1_by_type"],
                      num_hierarchy_queries=hierarchy["num_queries"])
        per_query["spechr"] = hierarchy["spechr_per_query"]
    scores["per_query"] = per_query
    if "depth_texts" in sets:
        scores["radius_depth_spearman"] = radius_by_depth(encoder, sets["depth_texts"])["spearman"]
    if "edges" in sets:
        scores["edges"] = edge_diagnostics(encoder, sets["edges"], cone_min_radius=cone_min_radius)
    return scores


def evaluate_heldout(encoders: Mapping[str, object], *, split: str = "test",
                     ontologies=("hpo", "icd10", "manpages", "handbook"), queries: int = 500, documents: int = 2000,
                     hierarchy_queries: int = 500, per_depth: int = 50,
                     test_fraction: float = 0.2, validation_fraction: float = 0.35, split_seed: int = 0,
                     seed: int = 0, edges: int = 300, cone_min_radius: float = 0.1) -> dict[str, dict[str, dict]]:
    """{encoder name: {ontology: scores}} on the held-out ("test") or validation branches (module docstring).

    ``test_fraction`` / ``split_seed`` must be the training run's ``data.hpo_test_fraction`` / ``data.hpo_seed``
    (for "validation": the test fraction whose branches stay untouched). Validation covers HPO only, without the
    radius correlation (selection looks at retrieval, SpecHR and the edge diagnostics). Both give ``edges``:
    ``edge_diagnostics`` on up to ``edges`` is-a edges of the same branches (cones of half-aperture constant
    ``cone_min_radius``, the run's K). "manpages" and "handbook" are the general-domain controls (Linux
    man pages, :mod:`hyte.data.manpages`; the Debian Administrator's Handbook, :mod:`hyte.data.debian_handbook`):
    retrieval only, text unlike any training data, where a fine-tune should not fall below its base.
    """
    if split not in ("test", "validation"):
        raise ValueError(f"split must be 'test' or 'validation'; got {split!r}")
    sizes = {"queries": queries, "documents": documents, "hierarchy_queries": hierarchy_queries,
             "per_depth": per_depth, "edges": edges}
    sets = {}
    for ontology in ontologies:
        if ontology == "hpo":
            sets["hpo"] = _hpo_sets(split, sizes, test_fraction, validation_fraction, split_seed, seed)
        elif ontology == "icd10" and split == "test":
            sets["icd10"] = _icd10_sets(sizes, test_fraction, split_seed, seed)
        elif ontology in GENERAL_DOMAIN and split == "test":
            sets[ontology] = _general_domain_sets(ontology, sizes, seed)
        elif ontology != "icd10" and ontology not in GENERAL_DOMAIN:
            raise ValueError(f"unknown ontology {ontology!r}; known: hpo, icd10, {', '.join(GENERAL_DOMAIN)}")
    return {name: {ontology: _score(encoder, data, cone_min_radius) for ontology, data in sets.items()}
            for name, encoder in encoders.items()}


def aggregate_seeds(per_seed: list[dict]) -> dict:
    """{ontology: {score: {"mean", "std", "values"}}} over seeds' ``evaluate_heldout`` scores: mean and sample
    standard deviation of every numeric score, nested ones flattened (``top1_by_type.parent``); the key "training"
    (a run's own record, not an ontology) and lists (the per-query values) are skipped."""
    def flat(scores: dict) -> dict:
        out = {}
        for key, value in scores.items():
            if isinstance(value, dict):
                out.update({f"{key}.{inner}": v for inner, v in value.items() if isinstance(v, (int, float))})
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


def paired_difference(ours: list[dict], theirs: list[dict], key: str, seed: int = 0, resamples: int = 2000) -> dict:
    """The paired difference ours - theirs of score ``key`` between two models scored on the same sets, seed by seed
    (``_score`` results, same order of seeds).

    Returns ``{"mean_difference", "per_seed", "t_test_p"}`` (a paired t-test over seeds; None with one seed) and
    ``{"bootstrap_low", "bootstrap_high", "num_pairs"}``: a 95 % percentile interval of the mean difference from
    a bootstrap that resamples seeds, then queries within each (``per_query`` values; queries without a value are
    left out). ``verdict``:
    "win" / "loss" only where the t-test (p < 0.05) and the interval both exclude zero, else "tie".
    """
    from scipy.stats import ttest_rel

    from .metrics import seed_then_query_bootstrap

    a, b = [s[key] for s in ours], [s[key] for s in theirs]
    differences = [x - y for x, y in zip(a, b)]
    if len(a) < 2:
        p_value = None
    elif statistics.pstdev(differences) == 0:  # the same difference on every seed: t is infinite, or undefined at 0
        p_value = 0.0 if differences[0] != 0 else 1.0
    else:
        p_value = float(ttest_rel(a, b).pvalue)
    by_seed = [[(x, y) for x, y in zip(mine["per_query"][key], other["per_query"][key])
                if x is not None and y is not None] for mine, other in zip(ours, theirs)]
    by_seed = [pairs for pairs in by_seed if pairs]
    if not by_seed:
        raise ValueError(f"no per-query values of {key!r} to compare")
    interval = seed_then_query_bootstrap([[x for x, _ in p] for p in by_seed], [[y for _, y in p] for p in by_seed],
                                         resamples, seed)
    low, high = interval["low"], interval["high"]
    mean = statistics.fmean(differences)
    significant = p_value is not None and p_value < 0.05 and (low > 0 or high < 0)
    return {"mean_difference": mean, "per_seed": differences, "t_test_p": p_value, "bootstrap_low": low,
            "bootstrap_high": high, "num_pairs": sum(map(len, by_seed)),
            "verdict": ("win" if mean > 0 else "loss") if significant else "tie"}


def compare_models(ours: list[dict], theirs: list[dict], keys: tuple[str, ...] = ("ndcg@10", "spechr")) -> dict:
    """``{set: {key: paired_difference}}`` of two models' ``evaluate_heldout`` scores on the same sets, seed by seed
    (same order of seeds); a key a set does not score (SpecHR on a general-domain set) is left out."""
    return {name: {key: paired_difference([s[name] for s in ours], [s[name] for s in theirs], key)
                   for key in keys if key in first}
            for name, first in ours[0].items() if name != "training"}


def heldout_retrieval_set(max_queries: int | None = 300, max_documents: int | None = 2000, seed: int = 0,
                          test_fraction: float = 0.2, split_seed: int = 0, min_depth: int = 1):
    """(queries, corpus, qrels) from the HPO branches that training never sees (``split_by_branches``).

    The corpus keeps every sampled query's relevant definition and fills up with other held-out definitions
    (seeded) to ``max_documents``, so smaller sets stay comparable in difficulty.
    """
    from ..data.hpo import load_hpo, retrieval_split, split_by_branches

    check_sample_sizes(max_queries=max_queries, max_documents=max_documents)  # before the ontology is loaded
    ontology = load_hpo()
    _, test_ids = split_by_branches(ontology, test_fraction=test_fraction, seed=split_seed)
    queries, corpus, qrels = retrieval_split(ontology, test_ids, max_queries=max_queries, seed=seed,
                                             min_depth=min_depth)
    return queries, corpus_with_distractors(corpus, qrels, max_documents, seed), qrels


_SPLITS = ("test", "train", "all")


def _chapters(split: str, test_fraction: float, split_seed: int) -> set[str]:
    """The chapters of ``split``: "test" (held out), "train" or "all"."""
    from ..data.icd10 import split_chapters

    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}; got {split!r}")
    train, test = split_chapters(test_fraction=test_fraction, seed=split_seed)
    return {"test": test, "train": train, "all": train | test}[split]


def hpo_edges(term_ids, max_edges: int | None = 300, seed: int = 0) -> list[tuple[str, str]]:
    """(parent definition, child definition) of the is-a edges with both ends in ``term_ids`` and both defined by
    distinct texts: a ``seed``-ed sample of at most ``max_edges``, in id order, for ``edge_diagnostics``."""
    from ..data.hpo import load_hpo

    ontology = load_hpo()
    term_ids = set(term_ids)
    edges = sorted((parent, child) for child in term_ids for parent in ontology.parents(child)
                   if parent in term_ids and ontology.terms[child].definition
                   and ontology.terms[parent].definition not in (None, ontology.terms[child].definition))
    terms = ontology.terms
    return [(terms[p].definition, terms[c].definition) for p, c in seeded_subset(edges, max_edges, seed)]


def icd10_edges(split: str = "test", max_edges: int | None = 300, seed: int = 0, test_fraction: float = 0.2,
                split_seed: int = 0) -> list[tuple[str, str]]:
    """(parent title, child title) of the code -> parent edges below the chapters of ``split`` (chapters themselves
    are left out as parents: a chapter title is a list of topics, not a concept), distinct titles only."""
    from ..data.icd10 import all_codes, chapter_of, parent, title

    chapters = _chapters(split, test_fraction, split_seed)
    edges = sorted((above, code) for code in all_codes()
                   if (above := parent(code)) is not None and above not in chapters and chapter_of(code) in chapters
                   and title(above) != title(code))
    return [(title(p), title(c)) for p, c in seeded_subset(edges, max_edges, seed)]


def icd10_heldout_retrieval_set(max_queries: int | None = 300, max_documents: int | None = 2000, seed: int = 0,
                                test_fraction: float = 0.2, split_seed: int = 0):
    """(queries, corpus, qrels) from the ICD-10-CM chapters that training never sees.

    * queries: ``{query_id: inclusion term}``, one per (inclusion term, code) pair of a held-out code, ``query_id``
      = ``"<code>:<k>"`` (the code's k-th pair, from 0); with ``max_queries``, a ``seed``-ed sample;
    * corpus: ``{code: title}`` over every code of the held-out chapters (chapters, blocks, categories and
      7th-character extensions alike), so the parents and siblings of the answer are in it as distractors;
    * qrels: ``{query_id: {code: 1}}``, the code that lists the inclusion term.

    A non-relevant code titled exactly like a relevant one is left out of the corpus (it would be an unmarked right
    answer). With ``max_documents``, the corpus keeps every relevant code and fills up with other held-out codes
    (seeded) to that size, as :func:`~heldout_retrieval_set` does.
    """
    from ..data.icd10 import all_codes, chapter_of, inclusion_pairs, title

    check_sample_sizes(max_queries=max_queries, max_documents=max_documents)
    test_chapters = _chapters("test", test_fraction, split_seed)
    pairs = [p for p in inclusion_pairs() if p["chapter"] in test_chapters]
    seen: dict[str, int] = {}
    ids = []
    for pair in pairs:  # a code's pairs all sit in its chapter, so k is the same as over all pairs
        ids.append(f"{pair['code']}:{seen.get(pair['code'], 0)}")
        seen[pair["code"]] = seen.get(pair["code"], 0) + 1
    chosen = seeded_subset(range(len(pairs)), max_queries, seed)
    queries = {ids[i]: pairs[i]["query"] for i in chosen}
    qrels = {ids[i]: {pairs[i]["code"]: 1} for i in chosen}

    corpus = {code: title(code) for code in all_codes() if chapter_of(code) in test_chapters}
    needed = {code for relevant in qrels.values() for code in relevant}
    needed_texts = {corpus[code] for code in needed}
    corpus = {code: text for code, text in corpus.items() if code in needed or text not in needed_texts}
    return queries, corpus_with_distractors(corpus, qrels, max_documents, seed), qrels


def icd10_hierarchy_benchmark(split: str = "test", *, max_queries: int | None = None, seed: int = 0,
                              max_siblings: int = 3, min_siblings: int = 1, test_fraction: float = 0.2,
                              split_seed: int = 0) -> list[dict]:
    """Hierarchy benchmark records (the format of :func:`~hyte.evaluation.hierarchy.evaluate_hierarchy`) from ICD-10-CM.

    One record per code with an inclusion term: query = its first inclusion term (tabular order), target = the
    code's title; distractors are titles too: the parent's ("parent"), the grandparent's ("grandparent") and up to
    ``max_siblings`` other children of the parent ("sibling", a seeded choice). Codes without a grandparent, or with
    fewer than ``min_siblings`` siblings whose titles differ from the target's, parent's and grandparent's, are
    skipped. A candidate whose text equals an earlier candidate's is left out (some codes repeat their parent's
    title, "H55.89" under "H55.8": such a record has no parent candidate).

    ``split="test"`` (default) takes the codes of the held-out chapters, ``"train"`` those of the training chapters,
    ``"all"`` every chapter; distractors always come from the target's own chapter. With ``max_queries``, a
    ``seed``-ed sample of the eligible codes is kept. A record's candidates are drawn and shuffled from a generator
    seeded by ``seed`` and the code, so they do not depend on which other codes are sampled. Records are
    ``{"query", "depth", "term_id", "chapter", "candidates": [{"text", "type", "id"}]}`` (``term_id`` and ``id``:
    codes; ``depth``: the number of ancestors), sorted by code.
    """
    from ..data.icd10 import ancestors, children, inclusion_pairs, title
    from .hierarchy_build import Candidates

    if max_siblings < 0 or min_siblings < 0:
        raise ValueError("max_siblings and min_siblings must be >= 0")
    if min_siblings > max_siblings:
        raise ValueError(f"min_siblings ({min_siblings}) > max_siblings ({max_siblings}): no code would qualify")
    chapters = _chapters(split, test_fraction, split_seed)
    first_term: dict[str, str] = {}
    for pair in inclusion_pairs():
        if pair["chapter"] in chapters:
            first_term.setdefault(pair["code"], pair["query"])

    plans = {}
    for code in sorted(first_term):
        above = ancestors(code)
        if len(above) < 2:
            continue
        parent, grandparent = above[0], above[1]
        taken = {title(code), title(parent), title(grandparent)}
        siblings = [s for s in children(parent) if s != code and title(s) not in taken]
        if len({title(s) for s in siblings}) < min_siblings:
            continue
        plans[code] = (above, siblings)
    chosen = seeded_subset(sorted(plans), max_queries, seed)

    records = []
    for code in chosen:
        above, siblings = plans[code]
        rng = random.Random(f"{seed}:{code}")
        candidates = Candidates(title)
        candidates.add_family(code, above[0], above[1], siblings, max_siblings, rng)
        records.append({"query": first_term[code], "depth": len(above), "term_id": code, "chapter": above[-1],
                        "candidates": candidates.shuffled(rng)})
    return records


def icd10_texts_by_depth(per_depth: int = 200, split: str = "test", seed: int = 0, min_depth: int = 1,
                         max_depth: int | None = None, test_fraction: float = 0.2,
                         split_seed: int = 0) -> dict[int, list[str]]:
    """Up to ``per_depth`` ICD-10-CM titles per depth (a ``seed``-ed sample, in code order), depths ``min_depth``
    (default 1: blocks; chapters are 0) to ``max_depth`` (None: the deepest), from the chapters of ``split``
    ("test": held out, "train", "all"), for :func:`~hyte.evaluation.radius.radius_by_depth`."""
    from ..data.icd10 import all_codes, chapter_of, depth, title
    from .radius import texts_by_depth

    chapters = _chapters(split, test_fraction, split_seed)
    codes = [code for code in sorted(all_codes()) if chapter_of(code) in chapters]
    return texts_by_depth(codes, depth, title, per_depth, seed, min_depth, max_depth)
