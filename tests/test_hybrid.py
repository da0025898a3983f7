"""HyTE-H on the real all-MiniLM-L6-v2 and the encode API (sign-flipped queries)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import run_without_hyte

import hyte
from hyte import lorentz as L

DOCUMENTS = [
    "Abnormal shortness of the fingers.",
    "A disorder of the heart in which the walls of the left ventricle thicken.",
    "Increased sensitivity of the skin to sunlight.",
    "Fever",  # one word: the shortest text there is (an empty one is refused, test_encode_edge_cases)
]
QUERIES = ["short fingers", "thick heart muscle"]


@pytest.fixture(scope="module")
def hybrid(minilm_path):
    torch.manual_seed(0)
    return hyte.HyTEHModel.from_base(minilm_path, num_hyperbolic_layers=1, hidden_size=129, num_attention_heads=3,
                                     intermediate_size=257).eval()


def test_from_base_builds_offline_and_keeps_the_encoder_weights(minilm_path):
    from transformers import AutoModel

    model = hyte.HyTEHModel.from_base(minilm_path)
    base = AutoModel.from_pretrained(minilm_path)
    encoder = model.encoder.state_dict()
    # Every weight but the base's pooler, which HyTE-H drops (it pools the token states itself).
    assert set(base.state_dict()) - set(encoder) == {"pooler.dense.weight", "pooler.dense.bias"}
    for name, tensor in encoder.items():
        assert torch.equal(base.state_dict()[name], tensor), name
    assert model.config.hidden_size == base.config.hidden_size + 1
    assert model.config.encoder_config.model_type == "bert"
    # The orthogonal projection keeps the encoder's geometry: an untrained HyTE-H ranks like its base encoder.
    assert torch.allclose(model.projection.weight @ model.projection.weight.T, torch.eye(384), atol=1e-5)


def test_documents_are_points_and_queries_are_sign_flipped(hybrid, bert_tokenizer):
    docs = hybrid.encode(DOCUMENTS, bert_tokenizer)
    queries = hybrid.encode(QUERIES, bert_tokenizer, role="query")
    assert docs.shape == (4, 129) and docs.dtype == np.float32 and queries.shape == (2, 129)
    d, q_flipped = torch.from_numpy(docs), torch.from_numpy(queries)
    assert ((L.inner(d.double(), d.double()) + 1).abs() < 1e-4 * d[:, 0].double() ** 2).all()
    assert (d[:, 0] > 0).all() and (q_flipped[:, 0] < 0).all()
    q_points = L.flip_time(q_flipped)
    torch.testing.assert_close(q_flipped @ d.T, L.pairwise_inner(q_points, d))
    # ... which converts to geodesic distances, and radii are the time coordinates.
    distances = hybrid.distances_from_scores(queries.astype(np.float64) @ docs.astype(np.float64).T)
    assert isinstance(distances, np.ndarray)
    torch.testing.assert_close(torch.from_numpy(distances), L.pairwise_distance(q_points.double(), d.double()),
                               rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(hybrid.radii(docs), docs[:, 0])


def test_encode_is_order_and_batch_invariant(hybrid, bert_tokenizer):
    together = hybrid.encode(DOCUMENTS, bert_tokenizer, batch_size=4)
    one_by_one = np.concatenate([hybrid.encode([text], bert_tokenizer) for text in DOCUMENTS])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-5)
    reversed_order = hybrid.encode(DOCUMENTS[::-1], bert_tokenizer, batch_size=2)[::-1]
    np.testing.assert_allclose(together, reversed_order, rtol=1e-5, atol=1e-5)


def test_encode_edge_cases(hybrid, bert_tokenizer):
    assert hybrid.encode([], bert_tokenizer).shape == (0, 129)
    with pytest.raises(TypeError, match="item 1 is a int"):
        hybrid.encode(["fine", 3], bert_tokenizer)
    with pytest.raises(ValueError, match="role"):
        hybrid.encode(["x"], bert_tokenizer, role="passage")
    with pytest.warns(UserWarning, match="nothing to embed"):  # the origin, not [CLS] [SEP]'s point
        blank = hybrid.encode(["fine", ""], bert_tokenizer)
    assert not blank[1, 1:].any() and blank[1, 0] == pytest.approx(float(hybrid.curvature) ** 0.5)
    long_text = "abnormality of the heart " * 4000  # 100k characters: truncated to the model's 512 tokens
    long_vector = hybrid.encode([long_text], bert_tokenizer)
    assert np.isfinite(long_vector).all()
    truncated = hybrid.encode([long_text], bert_tokenizer, max_length=32)
    assert not np.allclose(long_vector, truncated)


def test_hybrid_runs_geometry_in_float32_under_a_bf16_encoder(minilm_path, bert_tokenizer):
    model = hyte.HyTEHModel.from_base(minilm_path).eval()
    model.encoder.to(torch.bfloat16)
    batch = bert_tokenizer(DOCUMENTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(batch["input_ids"], batch["attention_mask"])
    assert out.pooler_output.dtype == torch.float32 and torch.isfinite(out.pooler_output).all()


@pytest.mark.slow
def test_save_and_remote_code_load_without_hyte_gives_identical_encodings(tmp_path, hybrid, bert_tokenizer):
    hybrid.save_pretrained(tmp_path / "model")
    bert_tokenizer.save_pretrained(tmp_path / "model")
    expected = {role: hybrid.encode(DOCUMENTS + QUERIES, bert_tokenizer, role=role).tolist()
                for role in ("document", "query")}
    stdout = run_without_hyte(
        f"""
        import json
        from transformers import AutoModel, AutoTokenizer
        model = AutoModel.from_pretrained("model", trust_remote_code=True)
        tokenizer = AutoTokenizer.from_pretrained("model", trust_remote_code=True)
        texts = {json.dumps(DOCUMENTS + QUERIES)}
        print(json.dumps({{role: model.encode(texts, tokenizer, role=role).tolist() for role in ("document", "query")}}))
        """,
        cwd=tmp_path,
    )
    loaded = json.loads(stdout.strip().splitlines()[-1])
    for role in expected:
        assert np.array_equal(np.array(loaded[role], dtype=np.float32), np.array(expected[role], dtype=np.float32))


def test_radius_head_starts_every_text_at_r0_and_ranks_by_angle(minilm_path, tmp_path):
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    model = hyte.HyTEHModel.from_base(minilm_path, radius_head=1.5, scale_init=1.0, norm_clip=1.0).eval()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    texts = DOCUMENTS[:3] + QUERIES
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        pooled = model(**batch).pooler_output
    torch.testing.assert_close(L.distance_to_origin(pooled, 1.0), torch.full((5,), 1.5), rtol=1e-4, atol=1e-4)
    # At a common radius the geodesic distance is monotone in the angle: nearest by distance == nearest by cosine.
    distances = L.pairwise_distance(pooled[3:], pooled[:3], 1.0)
    cosines = torch.nn.functional.normalize(pooled[3:, 1:], dim=-1) @ torch.nn.functional.normalize(pooled[:3, 1:],
                                                                                                      dim=-1).T
    assert torch.equal(distances.argsort(dim=1), (-cosines).argsort(dim=1))
    # The head learns: its gradient is non-zero, and a saved model reloads with the same radii.
    model.train()
    model(**batch).pooler_output[:, 0].sum().backward()
    assert model.radius_head.weight.grad.abs().sum() > 0
    model.save_pretrained(tmp_path)
    reloaded = hyte.HyTEHModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**batch).pooler_output, pooled)
