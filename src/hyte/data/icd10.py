"""ICD-10-CM (2026 tabular list, from the simple-icd-10-cm package): inclusion term -> code title pairs.

The data is public domain; the package is MIT. Every code has a short title (no definitions); 6,805 codes carry
inclusion terms ("Typhoid endocarditis" under A01.02 "Typhoid fever with heart involvement"). Pairs are split by
whole chapters, like HPO by branches, so train and test never share a chapter (:func:`split_chapters`).

The code hierarchy (chapter > block > category > subcategory > 7th-character extension) is read through small
accessors: :func:`all_codes`, :func:`parent`, :func:`children`, :func:`ancestors`, :func:`depth`,
:func:`chapter_of` and :func:`title`. Codes are written with dots ("A01.02"); chapters are "1" to "22".
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache


def _icd():
    try:
        import simple_icd_10_cm
    except ImportError as error:
        raise ImportError("ICD-10-CM data needs the simple-icd-10-cm package: pip install simple-icd-10-cm") from error
    return simple_icd_10_cm


@lru_cache(maxsize=1)
def inclusion_pairs() -> tuple[dict, ...]:
    """One pair per (inclusion term, code): {"query", "document", "code", "chapter", "depth"}, sorted by code.

    ``depth`` is :func:`depth` (the number of ancestors, e.g. 4 for "A01.02").
    """
    icd = _icd()
    pairs = []
    for code in sorted(all_codes()):
        terms = icd.get_inclusion_term(code)
        if not terms:
            continue
        document = icd.get_description(code)
        for term in terms:
            if term.strip() and term.strip().lower() != document.strip().lower():
                pairs.append({"query": term, "document": document, "code": code, "chapter": chapter_of(code),
                              "depth": depth(code)})
    return tuple(pairs)


def _held_out_chapters(sizes: Mapping[str, int], test_fraction: float, seed: int) -> set[str]:
    """The chapters held out: shuffled (seeded) and moved to test until it holds ``test_fraction`` of the pairs."""
    chapters = sorted(sizes)
    random.Random(seed).shuffle(chapters)
    total = sum(sizes.values())
    test_chapters, test_count = set(), 0
    for chapter in chapters[:-1]:  # at least one chapter stays in train
        if test_count >= test_fraction * total:
            break
        test_chapters.add(chapter)
        test_count += sizes[chapter]
    return test_chapters


def split_chapters(test_fraction: float = 0.2, seed: int = 0) -> tuple[set[str], set[str]]:
    """(train chapters, test chapters): the chapter split of :func:`split_by_chapters` on :func:`inclusion_pairs`.

    The one split every ICD-10-CM training and evaluation set uses; chapters are weighed by their number of
    inclusion pairs. Every chapter ("1" to "22") is in exactly one of the two sets.
    """
    test = _held_out_chapters(Counter(p["chapter"] for p in inclusion_pairs()), test_fraction, seed)
    return {code for code in all_codes() if parent(code) is None} - test, test


def split_by_chapters(pairs, test_fraction: float = 0.2, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, test) pairs with whole chapters held out (seeded), test holding at least ``test_fraction``.

    On :func:`inclusion_pairs` the test chapters are :func:`split_chapters`'s (same ``test_fraction`` and ``seed``).
    """
    test_chapters = _held_out_chapters(Counter(p["chapter"] for p in pairs), test_fraction, seed)
    train = [p for p in pairs if p["chapter"] not in test_chapters]
    test = [p for p in pairs if p["chapter"] in test_chapters]
    return train, test


def mlm_corpus(test_fraction: float = 0.2, seed: int = 0, split: str = "train") -> list[str]:
    """The titles of every code, block and chapter in the training chapters of :func:`split_chapters`, then their
    inclusion terms; first occurrence kept, in tabular order. Masked-language-model text that never shows a held-out
    chapter; ``split="test"``: the same text of the held-out chapters (to measure a model's held-out MLM loss)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}")
    return list(dict.fromkeys(chapter_texts(split_chapters(test_fraction, seed)[0 if split == "train" else 1])))


def chapter_texts(chapters: Iterable[str] | None = None) -> list[str]:
    """The titles of every code, block and chapter (of ``chapters``, or all), in tabular order, then their inclusion
    terms; duplicates kept."""
    chapters = None if chapters is None else set(chapters)
    titles = [title(code) for code in all_codes() if chapters is None or chapter_of(code) in chapters]
    return titles + [pair["query"] for pair in inclusion_pairs() if chapters is None or pair["chapter"] in chapters]


# ----------------------------------------------------------------------------------------------------------------
# The code hierarchy
# ----------------------------------------------------------------------------------------------------------------

# A code or code range closing a chapter or block title: "(A00-B99)", "(Q00-QA0)", "(X50)".
_CODE_RANGE = re.compile(r"\s*\([A-Z][0-9A-Z]{2}(?:\.[0-9A-Z]+)?(?:-[A-Z][0-9A-Z]{2}(?:\.[0-9A-Z]+)?)?\)\s*$")


@lru_cache(maxsize=1)
def _tree() -> tuple[dict[str, str | None], dict[str, tuple[str, ...]]]:
    """({code: parent or None}, {code: children in tabular order}), every code in tabular order."""
    icd = _icd()
    codes = list(dict.fromkeys(icd.get_all_codes(with_dots=True)))
    parents: dict[str, str | None] = {}
    children: dict[str, list[str]] = {code: [] for code in codes}
    for code in codes:
        # The 39 blocks made of one category ("B20") share its code, which the package resolves to the category
        # (listing "B20" as its own parent); here they are one node, so no code is its own ancestor.
        above = [a for a in dict.fromkeys(icd.get_ancestors(code)) if a != code]
        parents[code] = above[0] if above else None
        if above:
            children[above[0]].append(code)
    return parents, {code: tuple(kids) for code, kids in children.items()}


def _check(code: str) -> str:
    if code not in _tree()[0]:
        raise KeyError(f"unknown ICD-10-CM code {code!r} (codes are written with dots, e.g. 'A01.02')")
    return code


def all_codes() -> tuple[str, ...]:
    """Every chapter, block and code once, in tabular order (98,466 in the 2026 release)."""
    return tuple(_tree()[0])


def parent(code: str) -> str | None:
    """The code's parent (a chapter has none)."""
    return _tree()[0][_check(code)]


def children(code: str) -> tuple[str, ...]:
    """The code's children in tabular order (empty for a leaf)."""
    return _tree()[1][_check(code)]


def ancestors(code: str) -> tuple[str, ...]:
    """The code's ancestors, nearest first; the last is its chapter (empty for a chapter)."""
    parents, found = _tree()[0], []
    above = parents[_check(code)]
    while above is not None:
        found.append(above)
        above = parents[above]
    return tuple(found)


def depth(code: str) -> int:
    """The number of ancestors: 0 for a chapter, 1 for a top-level block, e.g. 4 for "A01.02"."""
    return len(ancestors(code))


def chapter_of(code: str) -> str:
    """The chapter holding the code (a chapter holds itself)."""
    found = ancestors(code)
    return found[-1] if found else code


def title(code: str) -> str:
    """The code's title; for chapters and blocks without the closing code range ("Tuberculosis", not
    "Tuberculosis (A15-A19)"), which is an identifier, not text, and would set ancestors apart by form alone."""
    icd = _icd()
    text = icd.get_description(_check(code))
    return (_CODE_RANGE.sub("", text) or text) if icd.is_chapter_or_block(code) else text
