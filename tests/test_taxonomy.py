"""A user's own taxonomy: readers, splits, HiT's protocol and training through the config (issue 44)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from hyte.data.taxonomy import load_taxonomy
from hyte.data.taxonomy_splits import SplitMismatchError, ancestors_of, split_taxonomy, training_split
from hyte.evaluation import subsumption
from hyte.io import DataFormatError

# A small taxonomy: 3 top-level branches, 4 levels, a concept with two parents.
GROUPS = {"animal": ["mammal", "bird", "fish"], "plant": ["tree", "flower", "grass"],
          "tool": ["hammer", "saw", "drill"]}
LEAVES = ["a", "b", "c", "d"]


def small_taxonomy() -> list[dict]:
    """~50 concepts: root > group > kind > 'kind a' ... 'kind d'; 'bat' is both a mammal and a bird-like flyer."""
    rows = [{"id": "thing", "name": "thing"}]
    for group, kinds in GROUPS.items():
        rows.append({"id": group, "name": group, "description": f"any {group}", "parents": ["thing"]})
        for kind in kinds:
            rows.append({"id": kind, "name": kind, "parents": [group]})
            rows += [{"id": f"{kind}-{leaf}", "name": f"{kind} of sort {leaf}", "parents": [kind]} for leaf in LEAVES]
    rows.append({"id": "bat", "name": "bat", "parents": ["mammal", "bird"]})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_csv_table(path: Path, rows: list[dict]) -> Path:
    lines = ["id,name,description,parents"]
    lines += [f"{r['id']},{r['name']},{r.get('description', '')},{'|'.join(r.get('parents', []))}" for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_obo(path: Path, rows: list[dict]) -> Path:
    stanzas = ["format-version: 1.2\n"]
    for r in rows:
        stanza = f"[Term]\nid: {r['id']}\nname: {r['name']}\n"
        if r.get("description"):
            stanza += f'def: "{r["description"]}" []\n'
        stanza += "".join(f"is_a: {p}\n" for p in r.get("parents", []))
        stanzas.append(stanza)
    path.write_text("\n".join(stanzas))
    return path


def write_edges(folder: Path, rows: list[dict]) -> tuple[Path, Path]:
    edges = folder / "edges.csv"
    edges.write_text("child,parent\n" + "".join(f"{r['id']},{p}\n" for r in rows for p in r.get("parents", [])))
    names = write_jsonl(folder / "names.jsonl", [{k: v for k, v in r.items() if k != "parents"} for r in rows])
    return edges, names


def write_hit_folder(folder: Path, taxonomy, seed: int = 0) -> Path:
    """HiT's Zenodo layout, built from our own mixed-hop split (as HiT's construct.py lays it out)."""
    folder.mkdir()
    lexicon = {c: {"name": t.name} for c, t in taxonomy.ontology.terms.items()}
    (folder / "entity_lexicon.json").write_text(json.dumps(lexicon))
    split = split_taxonomy(taxonomy, "mixed_hop", seed=seed, num_negatives=3, eval_fraction=0.4)
    for name, side in (("train", split.train), ("val", split.validation), ("test", split.test)):
        write_jsonl(folder / f"{name}.jsonl", [{"child": s.child, "parent": s.parent,
                                                "random_negatives": list(s.random_negatives),
                                                "hard_negatives": list(s.hard_negatives)} for s in side])
    return folder


def edges_and_names(taxonomy) -> tuple[list, dict]:
    return taxonomy.ontology.edges(), {c: t.name for c, t in taxonomy.ontology.terms.items()}


# ----------------------------------------------------------------------------------------------------------------
# Readers
# ----------------------------------------------------------------------------------------------------------------


def test_every_format_reads_the_same_taxonomy(tmp_path):
    rows = small_taxonomy()
    expected = load_taxonomy(write_jsonl(tmp_path / "t.jsonl", rows))
    edges_file, names_file = write_edges(tmp_path, rows)
    readings = {"csv": load_taxonomy(write_csv_table(tmp_path / "t.csv", rows)),
                "obo": load_taxonomy(write_obo(tmp_path / "t.obo", rows)),
                "edges": load_taxonomy(edges_file, names=names_file),
                "hit": load_taxonomy(write_hit_folder(tmp_path / "hit", expected))}
    assert len(expected.ontology) == len(rows)
    assert expected.ontology.parents("bat") == ["mammal", "bird"]
    assert expected.text("animal", with_description=True) == "animal: any animal"
    for name, reading in readings.items():
        assert edges_and_names(reading) == edges_and_names(expected), name
    # HiT's folder keeps its own splits and negatives as written.
    given = readings["hit"].given_splits
    assert set(given) == {"train", "validation", "test"} and all(s.hard_negatives for s in given["test"])
    assert split_taxonomy(readings["hit"], "given").test == given["test"]


def test_hit_hub_export_of_triplets_or_pairs_rebuilds_the_direct_edges(tmp_path):
    rows = [{"child": "puppy", "parent": "dog", "negative": "cat"}, {"child": "dog", "parent": "animal",
                                                                       "negative": "rock"},
            {"child": "puppy", "parent": "animal", "negative": "rock"}]  # transitive: not a direct edge
    folder = tmp_path / "export"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", rows[:2])
    write_jsonl(folder / "test.jsonl", rows[2:])
    taxonomy = load_taxonomy(folder)
    assert taxonomy.ontology.edges() == [("dog", "animal"), ("puppy", "dog")]
    assert taxonomy.given_splits["test"][0].random_negatives == ("rock",)
    # The same rows as Parquet, HiT's Hub format.
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "parquet"
    parquet.mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:1]), parquet / "train-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:2]), parquet / "train-00001-of-00002.parquet")  # a split in shards
    pq.write_table(pa.Table.from_pylist(rows[2:]), parquet / "test-00000-of-00001.parquet")
    assert edges_and_names(load_taxonomy(parquet)) == edges_and_names(taxonomy)
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    write_jsonl(pairs / "train.jsonl", [{"child": "dog", "parent": "animal", "label": 1},
                                        {"child": "dog", "parent": "rock", "label": 0}])
    assert load_taxonomy(pairs).given_splits["train"][0].random_negatives == ("rock",)


@pytest.mark.parametrize("problem, rows, fragment, line", [
    ("cycle", [{"id": "a", "name": "a", "parents": ["b"]}, {"id": "b", "name": "b", "parents": ["a"]}], "cycle", 2),
    ("unknown parent", [{"id": "a", "name": "a"}, {"id": "b", "name": "b", "parents": ["z"]}], "'z'", 2),
    ("duplicate id", [{"id": "a", "name": "a"}, {"id": "a", "name": "again"}], "duplicate concept id 'a'", 2),
    ("empty name", [{"id": "a", "name": "a"}, {"id": "b", "name": "", "parents": ["a"]}], "no name", 2),
    ("unknown field", [{"id": "a", "name": "a"}, {"id": "b", "name": "b", "parent": "a"}], "'parent'", 2),
    ("own parent", [{"id": "a", "name": "a", "parents": ["a"]}], "its own parent", 1),
])
def test_a_broken_taxonomy_is_refused_naming_file_and_line(tmp_path, problem, rows, fragment, line):
    for path in (write_jsonl(tmp_path / "t.jsonl", rows), write_csv_table(tmp_path / "t.csv", rows)):
        expected_line = line + 1 if path.suffix == ".csv" else line  # the CSV's header is line 1
        if problem == "unknown field" and path.suffix == ".csv":
            path.write_text("id,name,parent\na,a,\nb,b,a\n")
            expected_line = 1  # an unknown column is the header's
        with pytest.raises(DataFormatError) as caught:
            load_taxonomy(path)
        assert caught.value.path == path and caught.value.line == expected_line, str(caught.value)
        assert fragment in str(caught.value)


def test_a_cycle_in_an_obo_file_or_in_hit_rows_is_named_at_its_line(tmp_path):
    rows = [{"id": "T:1", "name": "a", "parents": ["T:2"]}, {"id": "T:2", "name": "b", "parents": ["T:1"]}]
    obo = write_obo(tmp_path / "t.obo", rows)
    with pytest.raises(DataFormatError, match="cycle") as caught:
        load_taxonomy(obo)
    is_a_lines = [n for n, line in enumerate(obo.read_text().splitlines(), 1) if line.startswith("is_a")]
    assert caught.value.path == obo and caught.value.line in is_a_lines
    hit = tmp_path / "hit"
    hit.mkdir()
    write_jsonl(hit / "train.jsonl", [{"child": "dog", "parent": "animal", "negative": "rock"},
                                      {"child": "animal", "parent": "dog", "negative": "rock"}])
    with pytest.raises(DataFormatError, match="cycle") as caught:
        load_taxonomy(hit)
    assert caught.value.path == hit / "train.jsonl" and caught.value.line in (1, 2)


@pytest.mark.parametrize("row, fragment", [
    ({"child": "dog", "parent": "animal", "negative": " "}, "negative must be a non-empty name"),
    ({"child": "dog", "parent": "animal", "label": "yes"}, "label must be 1"),
    ({"child": "dog", "parent": "animal", "label": 2}, "label must be 1"),
])
def test_a_broken_hit_row_is_refused_naming_its_line(tmp_path, row, fragment):
    hit = tmp_path / "hit"
    hit.mkdir()
    write_jsonl(hit / "train.jsonl", [{"child": "cat", "parent": "animal", "negative": "rock"}, row])
    with pytest.raises(DataFormatError, match=fragment) as caught:
        load_taxonomy(hit)
    assert caught.value.path == hit / "train.jsonl" and caught.value.line == 2


def test_edge_list_errors_point_into_the_edge_list(tmp_path):
    edges, names = write_edges(tmp_path, small_taxonomy())
    with edges.open("a") as handle:
        handle.write("thing,bat\n")  # closes a cycle: bat is below thing
    with pytest.raises(DataFormatError, match="cycle") as caught:
        load_taxonomy(edges, names=names)
    assert caught.value.path == edges
    edges.write_text("child,parent\nmammal,unicorn\n")
    with pytest.raises(DataFormatError, match="'unicorn' has no name") as caught:
        load_taxonomy(edges, names=names)
    assert caught.value.line == 2
    with pytest.raises(ValueError, match="give the names"):
        load_taxonomy(edges)


# ----------------------------------------------------------------------------------------------------------------
# Splits
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scheme", ["multi_hop", "mixed_hop", "branches"])
def test_no_test_edge_and_no_held_out_concept_reaches_training(tmp_path, scheme, seed):
    taxonomy = load_taxonomy(write_jsonl(tmp_path / "t.jsonl", small_taxonomy()))
    split = split_taxonomy(taxonomy, scheme, seed=seed, num_negatives=3, eval_fraction=0.3)
    assert split == split_taxonomy(taxonomy, scheme, seed=seed, num_negatives=3, eval_fraction=0.3)
    train = {(s.child, s.parent) for s in split.train}
    judged = {(s.child, s.parent) for s in split.validation + split.test}
    assert split.test and split.validation and not train & judged
    ancestors = ancestors_of(taxonomy.ontology)
    for s in split.validation + split.test:
        assert s.parent in ancestors[s.child]
        assert not set(s.random_negatives + s.hard_negatives) & (ancestors[s.child] | {s.child})
    direct = set(taxonomy.ontology.edges())
    if scheme == "multi_hop":
        assert train == direct and not judged & direct
    if scheme == "branches":
        trained_concepts = {c for s in split.train for c in (s.child, s.parent, *s.hard_negatives)}
        assert split.held_out and not trained_concepts & split.held_out
        assert all({s.child, s.parent} <= split.held_out for s in split.test)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_branch_split_trains_on_no_held_out_text_even_under_another_id(tmp_path, seed):
    """Names repeat across branches in real taxonomies (the customs code's "Other" in every chapter): a training
    concept named as a held-out one would train on its text under another id."""
    rows = small_taxonomy() + [{"id": f"{group}-other", "name": "Other", "parents": [group]} for group in GROUPS]
    taxonomy = load_taxonomy(write_jsonl(tmp_path / "t.jsonl", rows))
    split = split_taxonomy(taxonomy, "branches", seed=seed, num_negatives=3, eval_fraction=0.3)
    for described in (False, True):  # concept_text: name, name_description
        trained = {taxonomy.text(c, described) for s in split.train for c in (s.child, s.parent, *s.hard_negatives)}
        held = {taxonomy.text(c, described) for c in split.held_out}
        assert trained and held and not trained & held


# ----------------------------------------------------------------------------------------------------------------
# HiT's protocol
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("child_norm, found", [(2.0, True), (0.8, False)])
def test_broader_and_narrower_search_find_the_held_out_edge_only_when_the_radius_orders_it(child_norm, found):
    """The parent is the child's first broader hit (and the child among the parent's narrower ones) exactly when the
    child sits farther out; an unrelated concept nearer the origin never outranks a nearer parent."""
    from hyte.data.taxonomy import Subsumption

    angles = {"parent": 0.0, "child": 0.1, "unrelated": 2.0, "grandparent": 0.05}
    norms = {"parent": 1.0, "child": child_norm, "unrelated": 0.5, "grandparent": 0.3}
    ids = list(angles)
    vectors = np.array([[np.cos(angles[i]), np.sin(angles[i])] for i in ids])
    embedded = subsumption.Embedded("cosine", {c: row for row, c in enumerate(ids)}, vectors,
                                    np.array([norms[i] for i in ids]), 0.0)
    ancestors = {"child": frozenset({"parent", "grandparent"}), "parent": frozenset({"grandparent"}),
                 "unrelated": frozenset(), "grandparent": frozenset()}
    result = subsumption.broader_narrower(embedded, [Subsumption("child", "parent")], ancestors)
    assert result["broader@1"] == result["broader@10"] == result["narrower@10"] == float(found)
    assert result["unfiltered@1"] == 1.0 and result["questions"] == 1


def hit_metrics():
    """``hierarchy_transformers.evaluation.metrics`` (the installed HiT 0.1.1), loaded from its file: the package's
    __init__ imports geoopt and its models, which the metrics do not need."""
    spec = importlib.util.find_spec("hierarchy_transformers")
    if spec is None:
        pytest.fail("hierarchy-transformers is not installed: README's test command installs it (--no-deps)")
    path = Path(spec.submodule_search_locations[0]) / "evaluation" / "metrics.py"
    module_spec = importlib.util.spec_from_file_location("hit_metrics", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", range(5))
def test_threshold_search_and_metrics_match_hits_own_functions(seed):
    metrics = hit_metrics()
    rng = np.random.default_rng(seed)
    labels = (rng.random(300) < 0.2).astype(np.int64)
    scores = rng.normal(size=300) + 1.5 * labels  # separable in part, as real scores are
    threshold, f1 = subsumption.search_threshold(scores, labels)
    theirs = metrics.grid_search(torch.tensor(scores), torch.tensor(labels), preformatted_best_results={})
    assert threshold == pytest.approx(theirs["threshold"]) and f1 == pytest.approx(theirs["f1"])
    ours = subsumption.threshold_metrics(scores, labels, threshold)
    at_threshold = metrics.evaluate_by_threshold(torch.tensor(scores), torch.tensor(labels), threshold)
    for key in ("precision", "recall", "f1", "accuracy", "accuracy_on_negatives"):
        assert ours[key] == pytest.approx(at_threshold[key]), key


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dim", [8, 384])
def test_poincare_distance_is_the_hyperboloid_distance_of_the_same_points(seed, dim):
    from hyte import lorentz

    rng = np.random.default_rng(seed)
    c = 1.0 / dim
    directions = rng.normal(size=(20, dim))
    # Points inside the ball of radius 1 / sqrt(c), out to 0.99 of it (far from the origin, where rounding bites).
    raw = directions / np.linalg.norm(directions, axis=1, keepdims=True) * rng.uniform(0.05, 0.99, (20, 1)) / np.sqrt(c)
    embedded = subsumption.Embedded("poincare", {}, raw, np.zeros(20), c)
    ours = embedded.distances(np.arange(10), np.arange(10, 20))
    # HiT's ball of curvature -c is HyTE's hyperboloid with <x, x>_L = -1 / c (lorentz.py's convention).
    points = lorentz.from_poincare(torch.tensor(raw, dtype=torch.float64), 1 / c)
    expected = lorentz.distance(points[:10], points[10:], 1 / c).numpy()
    np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_a_hit_model_scored_here_gets_hits_f1_on_the_same_pairs(tmp_path, minilm_path):
    """HiT's reading of a sentence encoder (mean pooling, a Poincaré ball of curvature 1 / dim, its score), through
    this evaluation, against HiT's metric functions on the same pairs and scores."""
    from hyte.encoders import load_encoder

    metrics = hit_metrics()
    taxonomy = load_taxonomy(write_jsonl(tmp_path / "t.jsonl", small_taxonomy()))
    split = split_taxonomy(taxonomy, "mixed_hop", seed=0, num_negatives=3, eval_fraction=0.4)
    encoder = load_encoder(minilm_path, kind="euclidean")
    texts = {c: taxonomy.text(c) for c in taxonomy.ontology.terms}
    embedded = subsumption.embed_concepts(encoder, texts, "poincare")
    result = subsumption.choose_and_test(embedded, split.validation, split.test, "hard")
    children, candidates, labels = subsumption.subsumption_pairs(split.test, "hard")
    # HiT's own score on its own manifold arithmetic: dist(c, p) and dist0 from the raw vectors.
    vectors = encoder.pooled([texts[c] for c in children]), encoder.pooled([texts[p] for p in candidates])
    c = 1.0 / vectors[0].shape[1]
    child, parent = (torch.tensor(v, dtype=torch.float64) for v in vectors)

    def dist0(x):
        return 2 / c ** 0.5 * torch.atanh(c ** 0.5 * x.norm(dim=-1))

    def mobius_add(x, y):
        xy, x2, y2 = (x * y).sum(-1, keepdim=True), (x * x).sum(-1, keepdim=True), (y * y).sum(-1, keepdim=True)
        return ((1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y) / (1 + 2 * c * xy + c ** 2 * x2 * y2)

    distance = 2 / c ** 0.5 * torch.atanh(c ** 0.5 * mobius_add(-child, parent).norm(dim=-1))
    scores = -(distance + result["weight"] * (dist0(parent) - dist0(child)))
    theirs = metrics.evaluate_by_threshold(scores, torch.tensor(labels), result["threshold"])
    # HiT's metrics divide in float32.
    assert result["f1"] == pytest.approx(theirs["f1"], abs=1e-6)
    assert result["precision"] == pytest.approx(theirs["precision"], abs=1e-6)


def test_parent_nearer_origin_counts_held_out_edges_whose_parent_has_the_smaller_norm():
    index = {"a": 0, "b": 1, "c": 2}
    embedded = subsumption.Embedded("cosine", index, np.eye(3), np.array([1.0, 2.0, 3.0]), 0.0)
    questions = [subsumption.Subsumption("b", "a"), subsumption.Subsumption("c", "a"),
                 subsumption.Subsumption("a", "c")]
    assert subsumption.parent_nearer_origin(embedded, questions) == pytest.approx(2 / 3)


def test_parent_ranking_leaves_out_the_childs_other_ancestors():
    index = {name: row for row, name in enumerate(["child", "parent", "grandparent", "stranger"])}
    # On a line: the grandparent is nearer the child than the parent is, the stranger farther.
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6], [-1.0, 0.0]])
    embedded = subsumption.Embedded("cosine", index, vectors, np.ones(4), 0.0)
    question = subsumption.Subsumption("child", "parent")
    ancestors = {"child": frozenset({"parent", "grandparent"})}
    assert subsumption.parent_ranking(embedded, [question], ancestors, 0.0)["hits@1"] == 1.0
    assert subsumption.parent_ranking(embedded, [question], {"child": frozenset({"parent"})}, 0.0)["mrr"] == 0.5


# ----------------------------------------------------------------------------------------------------------------
# Training through the config and the CLI
# ----------------------------------------------------------------------------------------------------------------


def test_subsumption_examples_mask_the_querys_ancestors_and_keep_siblings_as_negatives(tmp_path):
    from hyte.training import parse_config
    from hyte.training.data import contrastive_examples, hierarchy_of
    from hyte.training.trainer import ContrastiveCollator

    path = write_jsonl(tmp_path / "t.jsonl", small_taxonomy())
    spec = parse_config({"stage": "contrastive", "model": {"build": "load", "path": "bundled:all-MiniLM-L6-v2"},
                         "data": {"source": "taxonomy", "path": str(path), "taxonomy_split": "multi_hop"},
                         "training": {"output_dir": str(tmp_path / "run"), "per_device_train_batch_size": 2}}).data
    examples = {(e["query"], e["document"]): e for e in contrastive_examples(spec)}
    hierarchy = hierarchy_of(spec)
    leaf = examples[("mammal of sort a", "mammal")]
    kind = examples[("mammal", "animal")]
    group = examples[("animal", "thing")]
    assert leaf["negatives"] and leaf["negatives"][0].startswith("mammal of sort")  # a sibling first

    class Tokenizer:
        def __call__(self, texts, **kwargs):
            return {"input_ids": torch.zeros(len(texts), 2, dtype=torch.long),
                    "attention_mask": torch.ones(len(texts), 2, dtype=torch.long)}

    sibling = {**leaf, "query": "mammal of sort b", "negatives": []}
    batch = ContrastiveCollator(Tokenizer(), hierarchy=hierarchy)([leaf, kind, group, sibling])
    # documents: mammal, animal, thing, mammal, <leaf's sibling negative>
    excluded = batch["exclude_mask"].tolist()
    assert excluded[0][:4] == [False, True, True, True]  # animal and thing are the leaf's ancestors: no negatives
    assert excluded[0][4] is False  # its sibling is a hard negative
    assert excluded[1][:3] == [True, False, True]  # for the query "mammal": its own text and "thing" are no negatives
    assert batch["query_is_child"].tolist() == [True] * 4


def taxonomy_data(tmp_path: Path, form: str) -> dict:
    """The small taxonomy written in one of the formats a user brings, as the config's ``data`` section."""
    rows = small_taxonomy()
    if form == "jsonl":
        return {"path": str(write_jsonl(tmp_path / "t.jsonl", rows))}
    if form == "csv":
        return {"path": str(write_csv_table(tmp_path / "t.csv", rows))}
    if form == "obo":
        return {"path": str(write_obo(tmp_path / "t.obo", rows))}
    if form == "edges":
        edges, names = write_edges(tmp_path, rows)
        return {"path": str(edges), "names": str(names)}
    hit = write_hit_folder(tmp_path / "hit", load_taxonomy(write_jsonl(tmp_path / "t.jsonl", rows)))
    if form == "hit-parquet":  # HiT's Hub form: one Parquet file a split, the same rows
        import pyarrow as pa
        import pyarrow.parquet as pq

        hit = tmp_path / "hit-parquet"
        hit.mkdir()
        for split in ("train", "val", "test"):
            rows = [json.loads(line) for line in (tmp_path / "hit" / f"{split}.jsonl").read_text().splitlines()]
            pq.write_table(pa.Table.from_pylist([{"child": r["child"], "parent": r["parent"],
                                                  "negative": r["hard_negatives"][0]} for r in rows]),
                           hit / f"{split}-00000-of-00001.parquet")
    return {"path": str(hit), "taxonomy_split": "given"}


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True])
@pytest.mark.parametrize("form", ["jsonl", "csv", "obo", "edges", "hit-jsonl", "hit-parquet"])
def test_a_taxonomy_trains_from_the_cli_full_and_with_lora(tmp_path, tiny_bert, form, lora, capsys):
    import re

    import yaml

    from hyte.cli import main

    data = {"source": "taxonomy", "taxonomy_split": "mixed_hop", **taxonomy_data(tmp_path, form)}
    path = Path(data["path"])
    config = {"stage": "contrastive", "model": {"build": "hyte_h", "path": tiny_bert, "options": {"hidden_size": 17}},
              "data": data,
              "training": {"output_dir": str(tmp_path / "run"), "max_steps": 4, "per_device_train_batch_size": 8,
                           "learning_rate": 1e-3, "warmup_steps": 0, "logging_steps": 1, "save_steps": 4},
              "loss": {"temperature": 0.1, "hierarchy_weight": 1.0, "hierarchy_term": "radius",
                       "max_query_length": 16, "max_document_length": 16},
              "evaluation": {"enabled": False}}
    if lora:
        config["lora"] = {"r": 4}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", "contrastive", "--config", str(tmp_path / "run.yaml")]) == 0
    assert re.search(r"^4 steps in \d+ s: [\d.]+ s a step", capsys.readouterr().out, re.MULTILINE)
    history = json.loads((tmp_path / "run" / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    # Every batch holds taxonomy pairs, so the hierarchy term (parent nearer the origin) is computed on each.
    assert logged and all("hierarchy_loss" in entry for entry in logged)
    final = tmp_path / "run" / "final"
    assert (final / "config.json").is_file()
    names = ["--names", data["names"]] if "names" in data else []
    assert main(["eval", "taxonomy", "--model", str(final), "--data", str(path), *names, "--ranking-questions", "5",
                 "--output", str(tmp_path / "result.json")]) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    # A Hub export does not say which kind its negatives are: they are judged as given (random), nothing as hard.
    kinds = {"random"} if form == "hit-parquet" else {"random", "hard"}
    assert result["geometry"] == "lorentz" and set(result["prediction"]) == kinds
    assert all(0.0 <= result["prediction"][kind]["f1"] <= 1.0 for kind in kinds)


def test_eval_taxonomy_judges_a_model_on_the_split_it_was_trained_on(tmp_path, tiny_hyte_h_dir, capsys):
    """Another split's (or seed's) test edges may be edges the model trained on: left out, --split and --seed follow
    the model's training run; given otherwise, refused. A model trained on another taxonomy takes them as given."""
    from hyte.cli import main

    path = write_jsonl(tmp_path / "t.jsonl", small_taxonomy())
    model = tmp_path / "model"
    shutil.copytree(tiny_hyte_h_dir, model)
    data = {"source": "taxonomy", "path": str(path), "taxonomy_split": "multi_hop", "taxonomy_seed": 3,
            "concept_text": "name"}
    (model / "hyte_card.json").write_text(json.dumps({"training": {"config": {"data": data}}}))
    with pytest.raises(SplitMismatchError, match="with taxonomy_seed 3; judged with seed 0"):
        training_split(model, path, seed=0)
    assert training_split(model, path) == ({"split": "multi_hop", "seed": 3, "text": "name"},
                                           [f"split multi_hop, as {model} was trained (taxonomy_split)",
                                            f"seed 3, as {model} was trained (taxonomy_seed)"])
    evaluate = ["eval", "taxonomy", "--model", str(model), "--data", str(path), "--ranking-questions", "3"]
    assert main([*evaluate, "--split", "mixed_hop"]) == 2
    assert "trained on" in capsys.readouterr().err
    assert main([*evaluate, "--seed", "0"]) == 2
    assert main([*evaluate, "--output", str(tmp_path / "own.json")]) == 0
    printed = capsys.readouterr()
    assert "--split multi_hop, as" in printed.err and "split multi_hop (seed 3)" in printed.out
    assert json.loads((tmp_path / "own.json").read_text())["seed"] == 3
    other = write_jsonl(tmp_path / "other.jsonl", small_taxonomy())
    assert main(["eval", "taxonomy", "--model", str(model), "--data", str(other), "--ranking-questions", "3",
                 "--split", "mixed_hop", "--seed", "1"]) == 0
    assert "split mixed_hop (seed 1)" in capsys.readouterr().out


def test_taxonomy_config_errors_say_what_to_do(tmp_path):
    from hyte.training import ConfigError, parse_config

    path = write_jsonl(tmp_path / "t.jsonl", small_taxonomy())
    base = {"stage": "contrastive", "model": {"build": "load", "path": "bundled:all-MiniLM-L6-v2"},
            "training": {"output_dir": str(tmp_path / "run")}}
    for data, fragment in (({"source": "taxonomy", "path": str(path), "taxonomy_split": "random"}, "taxonomy_split"),
                           ({"source": "taxonomy", "path": str(path), "concept_text": "title"}, "concept_text"),
                           ({"source": "jsonl", "path": str(path), "names": str(path)}, "data.names is for"),
                           ({"source": "taxonomy"}, "needs data.path")):
        with pytest.raises(ConfigError, match=fragment):
            parse_config({**base, "data": data})


@pytest.mark.slow
def test_the_readme_own_hierarchy_section_runs_as_written(tmp_path, monkeypatch, capsys, tiny_bert):
    """The README's config, Python and commands, on the small taxonomy above; only the budget (4 steps, not 600)
    and the base (a tiny encoder, not MiniLM) are changed."""
    import re
    import shlex

    import yaml

    from hyte.cli import main

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Your own hierarchy"):]
    section = section[:section.index("\n### ", 1)]
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1))
    python = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    shell = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).strip().splitlines()
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / config["data"]["path"], small_taxonomy())
    assert config["model"]["path"] == "bundled:all-MiniLM-L6-v2" and config["lora"]["r"] > 0
    config["model"]["path"] = tiny_bert
    config["training"].update(max_steps=4, warmup_steps=0, save_steps=4)
    (tmp_path / "my-taxonomy.yaml").write_text(yaml.safe_dump(config))
    exec(python, {})  # noqa: S102 - the README's own snippet, run as a user would paste it
    assert len((tmp_path / "concepts.jsonl").read_text().splitlines()) == len(small_taxonomy())
    capsys.readouterr()
    for line in shell:
        assert main(shlex.split(line)[1:]) == 0, line
    out = capsys.readouterr().out
    assert "parent ranking among all concepts" in out and "(broader hits only)" in out
    assert "broader / narrower search on" in out
    result = json.loads((tmp_path / "my-taxonomy.json").read_text())
    assert result["benchmark"] == "taxonomy" and result["split"] == "mixed_hop"


def test_a_jsonl_pair_with_a_field_nobody_reads_is_refused(tmp_path):
    from hyte.training.data import read_jsonl_pairs

    path = write_jsonl(tmp_path / "pairs.jsonl", [{"query": "dog", "document": "mammal"},
                                                  {"query": "cat", "document": "mammal", "parent": "animal"}])
    with pytest.raises(DataFormatError, match="'parent'.*data.source taxonomy") as caught:
        read_jsonl_pairs(path)
    assert caught.value.line == 2


def test_a_saved_dataset_with_a_column_nobody_reads_is_refused(tmp_path):
    """As a JSONL pair's unknown field: a column nobody reads would train as if it had been used."""
    from datasets import Dataset

    from hyte.training import parse_config
    from hyte.training.data import contrastive_examples

    good, extra = tmp_path / "good", tmp_path / "extra"
    Dataset.from_dict({"query": ["dog", "oak"], "document": ["mammal", "tree"]}).save_to_disk(str(good))
    Dataset.from_dict({"query": ["dog"], "document": ["mammal"], "parent": ["animal"]}).save_to_disk(str(extra))

    def spec(path):
        return parse_config({"stage": "contrastive", "data": {"source": "hf_dataset", "path": str(path)}}).data

    assert [e["document"] for e in contrastive_examples(spec(good))] == ["mammal", "tree"]
    with pytest.raises(DataFormatError, match="'parent'.*data.source taxonomy"):
        contrastive_examples(spec(extra))
    with pytest.raises(DataFormatError, match="no column 'text'"):
        contrastive_examples(parse_config({"stage": "contrastive", "data": {
            "source": "hf_dataset", "path": str(good), "document_field": "text"}}).data)


@pytest.mark.parametrize("spread, noted", [(0.01, True), (0.5, False)])
def test_broader_search_prints_the_querys_specificity_and_notes_a_flat_radius(capsys, spread, noted):
    import argparse

    from hyte.cli.index import _print_passages
    from hyte.retrieval.searcher import Passage

    class Searcher:
        def specificity(self, texts):
            return np.full(len(texts), 1.5)

        def search_batch(self, queries, k, relation=None, candidates=None):
            radii = 1.5 + spread * np.linspace(-1.7, 1.7, k)
            hits = [Passage(index_id=i, id=str(i), text=f"t{i}", score=0.0, distance=0.1, radius=0.0,
                            specificity=float(r)) for i, r in enumerate(radii)]
            return [[h for h in hits if relation != "broader" or h.specificity < 1.5] for _ in queries]

    _print_passages(Searcher(), ["dog"], argparse.Namespace(k=3, k_candidates=10, relation="broader"))
    out = capsys.readouterr().out
    assert "query: dog  spec=1.500  (broader hits only)" in out
    assert ("specificity spreads by sd" in out) is noted


@pytest.mark.slow
def test_a_model_fine_tuned_from_a_trained_one_names_its_parent_and_asserts_no_licence(tmp_path, tiny_bert,
                                                                                         monkeypatch):
    from hyte.hub.card import render_model_card
    from hyte.runner import run
    from hyte.training import parse_config

    path = write_jsonl(tmp_path / "t.jsonl", small_taxonomy())
    monkeypatch.chdir(tmp_path)  # paths are recorded relative to the working folder (hyte.results.portable_path)

    def trained(model: dict, output: str, split: str) -> Path:
        return run(parse_config({
            "stage": "contrastive", "model": model,
            "data": {"source": "taxonomy", "path": str(path), "taxonomy_split": split},
            "training": {"output_dir": str(tmp_path / output), "max_steps": 2, "per_device_train_batch_size": 8,
                         "warmup_steps": 0, "save_steps": 2},
            "loss": {"max_query_length": 16, "max_document_length": 16}, "evaluation": {"enabled": False}}))

    parent = trained({"build": "hyte_h", "path": tiny_bert, "options": {"hidden_size": 17}}, "first", "multi_hop")
    child = trained({"build": "load", "path": str(parent)}, "second", "mixed_hop")
    card = json.loads((child / "hyte_card.json").read_text())
    assert "license" not in card
    assert card["fine_tuned_from"]["model"] == "first/final"
    assert card["fine_tuned_from"]["datasets"] == ["taxonomy t.jsonl (multi_hop split)"]
    assert card["datasets"] == ["taxonomy t.jsonl (multi_hop split)", "taxonomy t.jsonl (mixed_hop split)"]
    text = str(render_model_card(child))
    assert "Fine-tuned from | first/final (built on" in text and "No licence is stated" in text
    assert "license:" not in text.split("---")[1]  # the card's metadata claims none


def test_eval_radius_measures_a_taxonomy_by_depth(tmp_path, tiny_hyte_h_dir, capsys):
    from hyte.cli import main

    path = write_jsonl(tmp_path / "t.jsonl", small_taxonomy())
    assert main(["eval", "radius", "--model", str(tiny_hyte_h_dir), "--taxonomy", str(path), "--min-depth", "1",
                 "--output-dir", str(tmp_path / "radius"), "--name", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "radius by depth (t.jsonl concepts" in out
    result = json.loads((tmp_path / "radius" / "radius_tiny.json").read_text())
    # depth 1: the 3 groups; 2: the 9 kinds; 3: the 36 leaves and bat (under mammal and bird)
    assert result["texts"]["counts"] == {"1": 3, "2": 9, "3": 37}
    assert main(["eval", "radius", "--model", str(tiny_hyte_h_dir), "--taxonomy", str(path), "--split", "test",
                 "--output-dir", str(tmp_path / "radius2")]) == 2


def test_a_taxonomy_round_judges_only_edges_no_earlier_round_tested_or_chose_on(tmp_path):
    """benchmarks/run_taxonomy.py --fresh-against: the kept test questions share no edge with earlier rounds' test
    splits or the selection split's validation, and the bootstrap reads them as contiguous questions."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    from run_taxonomy import SPLIT, edges_of, fresh_metrics, fresh_questions, restricted

    taxonomy = load_taxonomy(write_jsonl(tmp_path / "t.jsonl", small_taxonomy()))
    seen = set().union(*(edges_of(split_taxonomy(taxonomy, SPLIT, seed=s).test) for s in range(6)))
    seen |= edges_of(split_taxonomy(taxonomy, SPLIT, seed=100).validation)
    split = split_taxonomy(taxonomy, SPLIT, seed=7)
    keep = fresh_questions(split, seen)
    assert 0 < keep.sum() < len(split.test)  # earlier rounds did test some of seed 7's edges
    assert not edges_of(q for q, kept in zip(split.test, keep) if kept) & seen
    sizes = [1 + len(q.hard_negatives) for q in split.test]
    question = np.repeat(np.arange(len(split.test)), sizes)
    labels = np.concatenate([[1] + [0] * (size - 1) for size in sizes])
    predictions = {"predicted": labels == 1, "labels": labels, "question": question}
    fresh = restricted(predictions, keep)
    assert fresh["question"].max() + 1 == keep.sum() and np.all(np.diff(fresh["question"]) >= 0)
    assert fresh["labels"].sum() == keep.sum()  # one positive per kept question
    hard = fresh_metrics({"threshold": 0.1, "f1": 0.5, "precision": 0.5, "recall": 0.5, "accuracy": 0.5,
                          "accuracy_on_negatives": 0.5, "pairs": labels.size, "positives": len(sizes)}, fresh)
    assert hard["f1"] == 1.0 and hard["full_test"]["f1"] == 0.5 and hard["threshold"] == 0.1
    assert hard["questions"] == keep.sum() and hard["pairs"] == fresh["labels"].size


def test_the_report_shows_a_taxonomy_study_with_its_verdicts(tmp_path):
    from hyte.report.build import write_benchmarks_md

    def arm(f1: float) -> dict:
        return {"seed": 0, "prediction": {"hard": {"f1": f1}, "random": {"f1": f1 + 0.2}},
                "parent_ranking_distance": {"mrr": 0.3}, "seconds_per_step": 2.0}

    study = {"benchmark": "taxonomy-study", "split": "mixed_hop", "steps": 120, "batch": 32,
             "primary_metric": "test F1, mixed-hop, hard negatives",
             "taxonomies": {"hscodes": {"concepts": 6957, "arms": {"hyte": [arm(0.66), {**arm(0.64),
                                                                                    "seconds_per_step": None}],
                                                                  "hit": [arm(0.60), arm(0.61)]},
                                        "comparisons": {"hyte - hit": {"mean_difference": 0.045,
                                                                       "interval_95": [0.01, 0.08],
                                                                       "verdict": "ahead"}}}},
             "meta": {"command": "python benchmarks/run_taxonomy.py", "date": "2026-12-06"}}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "taxonomy_hscodes.json").write_text(json.dumps(study))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "## Your own hierarchy: HiT's protocol" in text
    assert "| HyTE-H | 2 | – | 0.6500 ± 0.0141 |" in text
    assert "| HyTE-H − HiT (hierarchy-transformers 0.1.1) | +0.0450 | [+0.0100, +0.0800] | ahead |" in text
    assert "Your own taxonomy (hscodes, neither tuned): is HyTE-H better?" in text
    # A newer study whose knobs were chosen on validation says which, per arm; its verdicts replace the older's.
    tuned = json.loads(json.dumps(study))
    hscodes = tuned["taxonomies"]["hscodes"]
    for seeds, rate, scale in ((hscodes["arms"]["hyte"], 1e-4, 5.0), (hscodes["arms"]["hit"], 5e-5, 1.0)):
        for seed in seeds:
            seed["learning_rate"], seed["margin_scale"] = rate, scale
    hscodes["selection"] = {"seed": 100, "arms": {"hyte": {"validation_f1": {"5e-05": 0.61, "0.0001": 0.64},
                                                           "chosen": 1e-4, "chosen_margin_scale": 5.0},
                                                  "hit": {"validation_f1": {"5e-05": 0.7, "0.0001": 0.69},
                                                          "chosen": 5e-5}}}
    tuned["meta"]["date"] = "2026-12-07 10:00"  # the newer study: its section and verdicts come first
    (tmp_path / "results" / "taxonomy_hscodes_tuned.json").write_text(json.dumps(tuned))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "| HyTE-H | 2 | 0.0001, margin ×5 | 0.6500 ± 0.0141 |" in text
    assert "| HiT (hierarchy-transformers 0.1.1) | 2 | 5e-05 |" in text
    assert "HyTE-H 5e-05 0.6100; 0.0001 0.6400 (chose 0.0001, margin ×5)" in text
    tuned_question = "Your own taxonomy (hscodes, each arm's learning rate and order margin chosen on validation)"
    assert text.count(tuned_question) == 1  # one verdict row (HyTE-H − HiT) ...
    assert "Your own taxonomy (hscodes, neither tuned)" not in text  # ... replacing the older study's
    tuned_first = text.index("**hscodes, each arm's learning rate and order margin chosen on validation**")
    assert tuned_first < text.index("**hscodes, neither tuned** (`taxonomy_hscodes.json`)")  # kept as history
    # HyTE-H's recipe with its specificity head is named in the study's heading and its verdicts.
    tuned["hyte_radius_head"] = {"radius": 1.0, "learning_rate": 0.01}
    tuned["meta"]["date"] = "2026-12-07 11:00"
    (tmp_path / "results" / "taxonomy_hscodes_head.json").write_text(json.dumps(tuned))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    headed = ("hscodes, HyTE-H with its specificity head from radius 1, head learning rate 0.01; each arm's "
              "learning rate")
    assert f"**{headed}" in text and f"Your own taxonomy ({headed}" in text
    # One learning rate for every candidate: only the margin was chosen, and the label says so.
    for record in hscodes["selection"]["arms"].values():
        record["validation_f1"] = {"0.0001": 0.6, "0.0001, margin x5": 0.62}
    tuned["meta"]["date"] = "2026-12-07 12:00"
    (tmp_path / "results" / "taxonomy_hscodes_margin.json").write_text(json.dumps(tuned))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "head learning rate 0.01; learning rate 0.0001 for all, each arm's order margin chosen on validation" in text
    # A selection that names the knobs it varied (order margin and contrast) is read by those names.
    hscodes["selection"]["varied"] = ["margin_scale", "contrast_scale"]
    for record in hscodes["selection"]["arms"].values():
        record.update(validation_f1={"0.0001, margin x5": 0.6, "0.0001, margin x5, contrast x2.5": 0.63},
                      chosen=1e-4, chosen_margin_scale=5.0, chosen_contrast_scale=2.5)
    for seed in hscodes["arms"]["hyte"]:
        seed.update(learning_rate=1e-4, margin_scale=5.0, contrast_scale=2.5)
    tuned["meta"]["date"] = "2026-12-07 13:00"
    (tmp_path / "results" / "taxonomy_hscodes_contrast.json").write_text(json.dumps(tuned))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert ("learning rate 0.0001 for all, each arm's order margin and contrast (temperature; HiT: clustering margin) "
            "chosen on validation") in text
    assert "| HyTE-H | 2 | 0.0001, margin ×5, contrast ×2.5 |" in text
    assert "(chose 0.0001, margin ×5, contrast ×2.5)" in text
    # A round judged on fresh test edges shows the full test's F1 beside them, and its verdicts name the metric.
    tuned["primary_metric"] = "test F1, mixed-hop, hard negatives, test edges no earlier round tested (seeds 0 1)"
    for seeds in hscodes["arms"].values():
        for seed in seeds:
            seed["prediction"]["hard"]["full_test"] = {"f1": 0.5}
    tuned["meta"]["date"] = "2026-12-07 14:00"
    (tmp_path / "results" / "taxonomy_hscodes_fresh.json").write_text(json.dumps(tuned))
    text = write_benchmarks_md(tmp_path / "results", tmp_path / "BENCHMARKS.md").read_text()
    assert "| F1, hard negatives (fresh test edges) | F1, hard negatives (all test edges) |" in text
    assert "| HyTE-H | 2 | 0.0001, margin ×5, contrast ×2.5 | 0.6500 ± 0.0141 | 0.5000 ± 0.0000 |" in text
    assert "| test F1, mixed-hop, hard negatives, test edges no earlier round tested (seeds 0 1) |" in text


def test_a_hub_export_split_is_judged_on_the_negatives_it_carries(tmp_path, minilm_path):
    from hyte.encoders import load_encoder

    folder = tmp_path / "export"
    folder.mkdir()
    rows = [{"child": f"{kind} of sort {leaf}", "parent": kind, "negative": other}
            for kind, other in (("mammal", "tree"), ("tree", "hammer"), ("hammer", "mammal")) for leaf in LEAVES]
    for split, part in (("train", rows[:4]), ("val", rows[4:8]), ("test", rows[8:])):
        write_jsonl(folder / f"{split}.jsonl", part)
    taxonomy = load_taxonomy(folder)
    result = subsumption.evaluate_taxonomy(load_encoder(minilm_path, kind="euclidean"), taxonomy,
                                           split_taxonomy(taxonomy, "given"), "cosine")
    assert set(result["prediction"]) == {"random"} and result["prediction"]["random"]["positives"] == 4
