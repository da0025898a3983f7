"""RAG: the LangChain and LlamaIndex retrievers on real HPO text, ``hyte rag`` with the real SmolLM2 generator,
citations and support, ``hyte eval rag``, and the README's RAG snippets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hyte.cli import main

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

QUERIES = ["abnormal heart rhythm", "unusually large head", "short fingers"]
README = Path(__file__).resolve().parents[1] / "README.md"


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

    return sorted((t for t in load_hpo().terms.values() if t.definition), key=lambda t: t.id)[:300]


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

