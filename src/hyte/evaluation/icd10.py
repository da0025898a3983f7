"""ICD-10-CM evaluation sets from the chapters that training never sees (:func:`hyte.data.icd10.split_chapters`).

* :func:`icd10_heldout_retrieval_set`: inclusion term -> code title retrieval in BEIR's in-memory shape, the
  ICD counterpart of :func:`hyte.evaluation.hpo.heldout_retrieval_set`;
* :func:`icd10_hierarchy_benchmark`: records for :func:`hyte.evaluation.hierarchy.evaluate_hierarchy` (the target
  title against its parent's, grandparent's and siblings' titles);
* :func:`icd10_texts_by_depth`: titles grouped by depth for :func:`hyte.evaluation.hierarchy.radius_by_depth`.

Everything is built at run time from the simple-icd-10-cm package; the same ``test_fraction`` / ``split_seed``
as the training run select the same held-out chapters.
"""

from __future__ import annotations

import random

__all__ = ["icd10_heldout_retrieval_set", "icd10_hierarchy_benchmark", "icd10_texts_by_depth"]

_SPLITS = ("test", "train", "all")


def _chapters(split: str, test_fraction: float, split_seed: int) -> set[str]:
    """The chapters of ``split``: "test" (held out), "train" or "all"."""
    from ..data.icd10 import split_chapters

    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}; got {split!r}")
    train, test = split_chapters(test_fraction=test_fraction, seed=split_seed)
    return {"test": test, "train": train, "all": train | test}[split]


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
    (seeded) to that size, as :func:`~hyte.evaluation.hpo.heldout_retrieval_set` does.
    """
    from ..data.icd10 import all_codes, chapter_of, inclusion_pairs, title

    test_chapters = _chapters("test", test_fraction, split_seed)
    pairs = [p for p in inclusion_pairs() if p["chapter"] in test_chapters]
    seen: dict[str, int] = {}
    ids = []
    for pair in pairs:  # a code's pairs all sit in its chapter, so k is the same as over all pairs
        ids.append(f"{pair['code']}:{seen.get(pair['code'], 0)}")
        seen[pair["code"]] = seen.get(pair["code"], 0) + 1
    chosen = range(len(pairs))
    if max_queries is not None and max_queries < len(pairs):
        chosen = sorted(random.Random(seed).sample(chosen, max_queries))
    queries = {ids[i]: pairs[i]["query"] for i in chosen}
    qrels = {ids[i]: {pairs[i]["code"]: 1} for i in chosen}

    corpus = {code: title(code) for code in all_codes() if chapter_of(code) in test_chapters}
    needed = {code for relevant in qrels.values() for code in relevant}
    needed_texts = {corpus[code] for code in needed}
    corpus = {code: text for code, text in corpus.items() if code in needed or text not in needed_texts}
    if max_documents is not None and len(corpus) > max_documents:
        others = sorted(set(corpus) - needed)
        fill = random.Random(seed).sample(others, max(0, max_documents - len(needed)))
        kept = needed | set(fill)
        corpus = {code: text for code, text in corpus.items() if code in kept}
    return queries, corpus, qrels


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
    chosen = sorted(plans)
    if max_queries is not None and max_queries < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, max_queries))

    records = []
    for code in chosen:
        above, siblings = plans[code]
        rng = random.Random(f"{seed}:{code}")
        candidates: list[dict] = []
        texts: set[str] = set()

        def add(candidate: str, kind: str) -> bool:
            text = title(candidate)
            if text in texts:
                return False
            texts.add(text)
            candidates.append({"text": text, "type": kind, "id": candidate})
            return True

        add(code, "target")
        add(above[0], "parent")
        add(above[1], "grandparent")
        picked = 0
        for sibling in rng.sample(siblings, len(siblings)):
            if picked >= max_siblings:
                break
            picked += add(sibling, "sibling")
        rng.shuffle(candidates)
        records.append({"query": first_term[code], "depth": len(above), "term_id": code, "chapter": above[-1],
                        "candidates": candidates})
    return records


def icd10_texts_by_depth(per_depth: int = 200, split: str = "test", seed: int = 0, min_depth: int = 1,
                         max_depth: int | None = None, test_fraction: float = 0.2,
                         split_seed: int = 0) -> dict[int, list[str]]:
    """Up to ``per_depth`` ICD-10-CM titles per depth (a ``seed``-ed sample, in code order), depths ``min_depth``
    (default 1: blocks; chapters are 0) to ``max_depth`` (None: the deepest), from the chapters of ``split``
    ("test": held out, "train", "all"), for :func:`~hyte.evaluation.hierarchy.radius_by_depth`."""
    from ..data.icd10 import all_codes, chapter_of, depth, title

    chapters = _chapters(split, test_fraction, split_seed)
    by_depth: dict[int, list[tuple[str, str]]] = {}
    for code in sorted(all_codes()):
        if chapter_of(code) not in chapters:
            continue
        level = depth(code)
        if level >= min_depth and (max_depth is None or level <= max_depth):
            by_depth.setdefault(level, []).append((code, title(code)))
    rng = random.Random(seed)
    sampled = {}
    for level in sorted(by_depth):
        items = by_depth[level]
        if len(items) > per_depth:
            items = sorted(rng.sample(items, per_depth))
        sampled[level] = [text for _, text in items]
    return sampled
