"""ICD-10-CM (2026 tabular list, from the simple-icd-10-cm package): inclusion term -> code title pairs.

The data is public domain; the package is MIT. Every code has a short title (no definitions); 6,805 codes carry
inclusion terms ("Typhoid endocarditis" under A01.02 "Typhoid fever with heart involvement"). Pairs are split by
whole chapters, like HPO by branches, so train and test never share a chapter.
"""

from __future__ import annotations

import random
from functools import lru_cache


def _icd():
    try:
        import simple_icd_10_cm
    except ImportError as error:
        raise ImportError("ICD-10-CM data needs the simple-icd-10-cm package: pip install simple-icd-10-cm") from error
    return simple_icd_10_cm


@lru_cache(maxsize=1)
def inclusion_pairs() -> tuple[dict, ...]:
    """One pair per (inclusion term, code): {"query", "document", "code", "chapter", "depth"}, sorted by code."""
    icd = _icd()
    pairs = []
    for code in sorted(icd.get_all_codes(with_dots=True)):
        terms = icd.get_inclusion_term(code)
        if not terms:
            continue
        ancestors = icd.get_ancestors(code)  # nearest first; the last is the chapter
        title = icd.get_description(code)
        for term in terms:
            if term.strip() and term.strip().lower() != title.strip().lower():
                pairs.append({"query": term, "document": title, "code": code, "chapter": ancestors[-1] if ancestors else code,
                              "depth": len(ancestors)})
    return tuple(pairs)


def split_by_chapters(pairs, test_fraction: float = 0.2, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, test) pairs with whole chapters held out (seeded), test holding at least ``test_fraction``."""
    chapters = sorted({p["chapter"] for p in pairs})
    random.Random(seed).shuffle(chapters)
    test_chapters, test_count = set(), 0
    for chapter in chapters[:-1]:  # at least one chapter stays in train
        if test_count >= test_fraction * len(pairs):
            break
        test_chapters.add(chapter)
        test_count += sum(p["chapter"] == chapter for p in pairs)
    train = [p for p in pairs if p["chapter"] not in test_chapters]
    test = [p for p in pairs if p["chapter"] in test_chapters]
    return train, test
