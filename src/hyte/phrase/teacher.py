"""Offline BIO teacher for the phrase CRF: a terminology trie over HPO and ICD-10-CM, no LLM (docs/training.md).

The H+ paper labels units with an LLM told to keep domain terms, abbreviations, compounds and numbers whole; this
module does it deterministically, in priority order (a later rule never cuts an earlier span): 1. multi-word terms
of the trie, leftmost-longest, case-insensitive, on word boundaries; 2. numbers ("7.5", "3,000", "20 %", "1.5-2");
3. words split into sub-words ("nephropathy" -> ne ##ph ##rop ##athy: the tokenizer's split is no boundary). A span
of two or more tokens is tagged B I I ...; every other token is O (a singleton unit, as in the paper).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..data.icd10 import chapter_texts as icd10_terms  # ICD-10-CM titles and inclusion terms (of some chapters)
from ..data.icd10 import split_chapters

TAG_O, TAG_B, TAG_I = 0, 1, 2  # the same values as hyte.modeling_hyte_phrase

# Words for matching: letters/digits runs, and single punctuation marks (so "Kimmelstiel-Wilson" is 3 words).
_WORD = re.compile(r"[^\W_]+|[^\w\s]")
# A number standing alone (not the "1" of "HbA1c"), with decimals, thousands, a percent sign or a range.
_NUMBER = re.compile(r"(?<![^\W_])\d+(?:[.,]\d+)*(?:\s?(?:%|-\s?\d+(?:[.,]\d+)*))?(?![^\W_])")
_ALNUM_RUN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def _words(text: str) -> list[tuple[str, int, int]]:
    """(lower-cased word, start, end) for each word of ``text``."""
    return [(m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(text)]


@dataclass
class TermTrie:
    """A word-level trie of terms; ``find`` returns the character spans of leftmost-longest matches."""

    min_words: int = 2
    max_words: int = 5
    root: dict = field(default_factory=dict, repr=False)
    size: int = 0

    def add(self, term: str) -> bool:
        """Add one term; returns False (not added) when it has fewer than min_words or more than max_words words."""
        words = [w for w, _, _ in _words(term)]
        if not self.min_words <= len(words) <= self.max_words:
            return False
        node = self.root
        for word in words:
            node = node.setdefault(word, {})
        if "$" not in node:
            node["$"] = True
            self.size += 1
        return True

    def update(self, terms: Iterable[str]) -> TermTrie:
        for term in terms:
            self.add(term)
        return self

    def find(self, text: str) -> list[tuple[int, int]]:
        """Character spans (start, end) of non-overlapping matches, leftmost first, longest at each start."""
        words = _words(text)
        spans = []
        i = 0
        while i < len(words):
            node, end = self.root, None
            for j in range(i, min(len(words), i + self.max_words)):
                node = node.get(words[j][0])
                if node is None:
                    break
                if "$" in node:
                    end = j
            if end is None:
                i += 1
            else:
                spans.append((words[i][1], words[end][2]))
                i = end + 1
        return spans


def hpo_terms(term_ids: Iterable[str] | None = None) -> list[str]:
    """Names and synonyms of HPO terms (all terms, or ``term_ids``), from the installed HPO release."""
    from ..data.hpo import load_hpo

    ontology = load_hpo()
    terms = [ontology.terms[term_id] for term_id in (ontology.terms if term_ids is None else term_ids)]
    return [text for term in terms for text in (term.name, *(synonym for synonym, _ in term.synonyms))]


@functools.lru_cache(maxsize=4)
def build_trie(sources: Sequence[str] = ("hpo", "icd10"), max_words: int = 5,
               training_split: tuple[float, int] | None = None) -> TermTrie:
    """The terminology trie over the named vocabularies ("hpo", "icd10"), multi-word terms of 2..max_words words.

    ``training_split`` = (test_fraction, seed): only the terms of the training HPO branches and ICD-10-CM chapters of
    that split (``hyte.data.hpo.split_by_branches``, ``hyte.data.icd10.split_chapters``), so that a teacher labelling
    training texts never marks the span of a held-out term as a unit. None: every term (an inference-time override).
    Cached per process (building it reads HPO, ~10 s): treat the result as read-only."""
    trie = TermTrie(max_words=max_words)
    for source in sources:
        if source == "hpo":
            trie.update(hpo_terms(None if training_split is None else _training_hpo_terms(*training_split)))
        elif source == "icd10":
            trie.update(icd10_terms(None if training_split is None else split_chapters(*training_split)[0]))
        else:
            raise ValueError(f"unknown vocabulary {source!r}; known: hpo, icd10")
    return trie


def _training_hpo_terms(test_fraction: float, seed: int) -> list[str]:
    """Every HPO term but the held-out branches' (terms outside "Phenotypic abnormality" are never held out)."""
    from ..data.hpo import load_hpo, split_by_branches

    ontology = load_hpo()
    return sorted(set(ontology.terms) - split_by_branches(ontology, test_fraction=test_fraction, seed=seed)[1])


def teacher_spans(text: str, trie: TermTrie | None) -> list[tuple[int, int, str]]:
    """Non-overlapping character spans (start, end, rule) of the three rules, in priority order (module docstring)."""
    chosen = [(start, end, "term") for start, end in (trie.find(text) if trie is not None else [])]

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in chosen)

    for rule, pattern in (("number", _NUMBER), ("word", _ALNUM_RUN)):
        for m in pattern.finditer(text):
            if free(m.start(), m.end()):
                chosen.append((m.start(), m.end(), rule))
    return sorted(chosen)


def tags_for_offsets(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, str]],
                     special: Sequence[bool]) -> tuple[list[int], list[bool]]:
    """BIO tags over tokens with character ``offsets``, and which tokens lie in a "term" span.

    A token belongs to a span when its characters lie inside it; a span of >= 2 tokens becomes B I ..., one of a
    single token stays O. ``special`` tokens (and empty offsets, e.g. padding) are O.
    """
    tags = [TAG_O] * len(offsets)
    in_term = [False] * len(offsets)
    for start, end, rule in spans:
        members = [i for i, (s, e) in enumerate(offsets)
                   if not special[i] and e > s and s >= start and e <= end]
        if len(members) >= 2:
            tags[members[0]] = TAG_B
            for i in members[1:]:
                tags[i] = TAG_I
        if rule == "term":
            for i in members:
                in_term[i] = True
    return tags, in_term


def teacher_tags(texts: Sequence[str], tokenizer, trie: TermTrie | None, max_length: int | None = None,
                 ) -> tuple[list[list[int]], list[list[bool]]]:
    """Per text: BIO tags over the tokenizer's tokens (specials included, as O) and the trie-covered tokens.

    The token positions are those of ``tokenizer(text, truncation=True, max_length=max_length)``, so the tags line
    up with the model's input. Needs a fast tokenizer (character offsets).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("teacher_tags needs a fast tokenizer (offset mapping); load it with use_fast=True.")
    encoded = tokenizer(list(texts), truncation=True, max_length=max_length, return_offsets_mapping=True,
                        return_special_tokens_mask=True)
    rows = [tags_for_offsets(offsets, teacher_spans(text, trie), [bool(s) for s in special])
            for text, offsets, special in zip(texts, encoded["offset_mapping"], encoded["special_tokens_mask"])]
    return [tags for tags, _ in rows], [covered for _, covered in rows]


def override_tags(model_tags: Sequence[int], trie_tags: Sequence[int], covered: Sequence[bool]) -> list[int]:
    """The paper's inference-time trie override for one text: inside trie matches the trie's tags, elsewhere the
    model's; a model I right after a trie match becomes B (``modeling_hyte_phrase.apply_override``). For a batch
    pass ``override=list(zip(*teacher_tags(...)))`` to ``HyTEPhraseModel.encode_phrases``."""
    import torch

    from ..modeling_hyte_phrase import apply_override

    out = apply_override(torch.tensor([list(model_tags)]), torch.tensor([list(trie_tags)]),
                         torch.tensor([list(covered)]))
    return out[0].tolist()


def unit_boundaries(tags: Sequence[int], unit_positions: Sequence[bool]) -> set[int]:
    """Positions i (unit tokens) that start a unit, from BIO tags (the same rule as ``units_from_tags``)."""
    starts, open_unit = set(), False
    for i, (tag, usable) in enumerate(zip(tags, unit_positions)):
        if not usable:
            open_unit = False
            continue
        if not (tag == TAG_I and open_unit):
            starts.add(i)
        open_unit = tag in (TAG_B, TAG_I)
    return starts


def boundary_f1(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]],
                unit_positions: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Boundary precision/recall/F1 of predicted against gold units, micro-averaged over texts.

    A boundary is a unit start other than a text's first unit token (that one is a boundary in every
    segmentation and would inflate the score). Also reports exact-match F1 of multi-token units ("span_f1").
    """
    boundaries, spans = [0, 0, 0], [0, 0, 0]  # true positives, false positives, false negatives
    for pred, ref, usable in zip(predicted, gold, unit_positions):
        first = next((i for i, u in enumerate(usable) if u), None)
        _tally(boundaries, unit_boundaries(pred, usable) - {first}, unit_boundaries(ref, usable) - {first})
        _tally(spans, _multi_spans(pred, usable), _multi_spans(ref, usable))

    def f1(t, f_p, f_n):
        precision = t / (t + f_p) if t + f_p else 0.0
        recall = t / (t + f_n) if t + f_n else 0.0
        return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)

    precision, recall, score = f1(*boundaries)
    tp, fp, fn = boundaries
    return {"precision": precision, "recall": recall, "f1": score, "span_f1": f1(*spans)[2],
            "gold_boundaries": tp + fn, "predicted_boundaries": tp + fp}


def _tally(totals: list[int], predicted: set, gold: set) -> None:
    """Add the true positives, false positives and false negatives of ``predicted`` against ``gold`` to ``totals``."""
    for i, count in enumerate((len(predicted & gold), len(predicted - gold), len(gold - predicted))):
        totals[i] += count


def _multi_spans(tags: Sequence[int], usable: Sequence[bool]) -> set[tuple[int, int]]:
    """(start, end) token spans of units with >= 2 tokens."""
    starts = sorted(unit_boundaries(tags, usable))
    positions = [i for i, u in enumerate(usable) if u]
    spans = set()
    for start, nxt in zip(starts, [*starts[1:], None]):
        members = [i for i in positions if i >= start and (nxt is None or i < nxt)]
        if len(members) >= 2:
            spans.add((members[0], members[-1]))
    return spans


def coverage(texts: Sequence[str], tokenizer, trie: TermTrie | None, max_length: int | None = None) -> dict:
    """How much of ``texts`` the teacher groups: texts with a term match, tokens in term / multi-token units, and
    the mean length of multi-token units (tokens)."""
    tags, covered = teacher_tags(texts, tokenizer, trie, max_length)
    encoded = tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)
    tokens = in_term = with_term = 0
    lengths: list[int] = []  # tokens of each multi-token unit
    for row_tags, row_covered, special in zip(tags, covered, encoded["special_tokens_mask"]):
        usable = [not s for s in special]
        tokens += sum(usable)
        in_term += sum(row_covered)
        with_term += any(row_covered)
        lengths.extend(sum(usable[s:e + 1]) for s, e in _multi_spans(row_tags, usable))
    return {"texts": len(texts), "texts_with_term_match": with_term / max(len(texts), 1),
            "tokens": tokens, "token_share_in_terms": in_term / max(tokens, 1),
            "token_share_in_multi_token_units": sum(lengths) / max(tokens, 1),
            "mean_multi_token_unit_length": sum(lengths) / max(len(lengths), 1)}


__all__ = ["TermTrie", "boundary_f1", "build_trie", "coverage", "hpo_terms", "icd10_terms", "override_tags",
           "tags_for_offsets", "teacher_spans", "teacher_tags", "unit_boundaries"]
