"""LorentzIndex: exact and approximate FAISS search over hyperboloid points, persistence, validation."""

from __future__ import annotations

import math
import os
import re
import warnings

import faiss
import numpy as np
import pytest
import torch

from hyte import lorentz
from hyte.retrieval import IncompatibleIndexError, LorentzIndex
from hyte.retrieval import index as index_module

DIM = 33  # ambient: d = 32 space coordinates + time


def random_points(n: int, dim: int = DIM, c: float = 1.0, max_radius: float = 5.0, seed: int = 0) -> np.ndarray:
    """(n, dim) float32 hyperboloid points, uniform directions, geodesic radius uniform in [0, max_radius]."""
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((n, dim - 1))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    tangent = directions * rng.uniform(0.0, max_radius, (n, 1))
    return lorentz.expmap0(torch.from_numpy(tangent), c).numpy().astype(np.float32)


def clustered_points(n: int, clusters: int = 200, dim: int = DIM, c: float = 1.0, seed: int = 0,
                     centers_seed: int = 123, radii: tuple[float, float] = (0.5, 5.0)) -> np.ndarray:
    """(n, dim) float32 hyperboloid points in ``clusters`` tangent-space Gaussian clusters with centres at geodesic
    radius in ``radii`` (the centres depend on ``centers_seed`` only, so two calls share them)."""
    centers_rng, rng = np.random.default_rng(centers_seed), np.random.default_rng(seed)
    directions = centers_rng.standard_normal((clusters, dim - 1))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    centers = directions * centers_rng.uniform(*radii, (clusters, 1))
    tangent = centers[rng.integers(clusters, size=n)] + rng.standard_normal((n, dim - 1)) * 0.5 / np.sqrt(dim - 1)
    return lorentz.expmap0(torch.from_numpy(tangent), c).numpy().astype(np.float32)


def flip(points: np.ndarray) -> np.ndarray:
    return lorentz.flip_time(torch.from_numpy(points)).numpy()


def brute_force_top_k(queries: np.ndarray, documents: np.ndarray, k: int, c: float = 1.0) -> np.ndarray:
    """Row indices of the k geodesically nearest documents to each (unflipped) query, float64."""
    distances = lorentz.pairwise_distance(torch.from_numpy(queries).double(), torch.from_numpy(documents).double(), c)
    return torch.topk(distances, k, dim=1, largest=False).indices.numpy()


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(np.intersect1d(f, t)) / len(t) for f, t in zip(found, truth)]))


# ---------------------------------------------------------------------------------------------- exact search


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_flat_top10_equals_brute_force_geodesic_top10(c):
    documents = random_points(10_000, c=c, seed=1)
    queries = random_points(200, c=c, seed=2)
    index = LorentzIndex(DIM, c)
    index.add(documents)
    scores, ids = index.search(flip(queries), 10)
    truth = brute_force_top_k(queries, documents, 10, c)
    # Every query, in order, up to float32 ties: FAISS scores in float32, so two documents whose float64 Lorentz
    # inner products with the query differ by less than float32 resolution may swap places (seen: geodesic
    # distances 0.019044 and 0.019040). The found documents' exact scores must equal the true top-10's.
    exact_scores = flip(queries).astype(np.float64) @ documents.astype(np.float64).T
    np.testing.assert_allclose(np.take_along_axis(exact_scores, ids, axis=1),
                               np.take_along_axis(exact_scores, truth, axis=1), rtol=1e-6)
    assert (ids == truth).mean() > 0.99
    # Scores are <q, x>_L; their distances match the float64 geodesic distances.
    exact = lorentz.pairwise_distance(torch.from_numpy(queries).double(), torch.from_numpy(documents).double(), c)
    expected = np.take_along_axis(exact.numpy(), truth, axis=1)
    np.testing.assert_allclose(index.to_distances(scores), expected, rtol=1e-3, atol=1e-2)
    # search_points flips unflipped query points itself.
    np.testing.assert_array_equal(index.search_points(queries, 10)[1], ids)


# ---------------------------------------------------------------------------------------------- approximate search


@pytest.fixture(scope="module")
def clustered():
    """20k documents in 200 clusters, 300 fresh queries from the same clusters, exact top-10 rows."""
    documents = clustered_points(20_000, seed=0)
    queries = clustered_points(300, seed=1)
    return documents, queries, brute_force_top_k(queries, documents, 10)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_recall_at_defaults(kind, clustered):
    documents, queries, truth = clustered
    index = LorentzIndex(DIM, kind=kind)
    index.add(documents)
    _, ids = index.search(flip(queries), 10)
    assert recall(ids, truth) >= 0.95  # ids are row numbers: add() numbers from 0

    # measure_recall (self-queries over stored documents) against an independent float64 computation.
    measured = index.measure_recall(k=10, sample=500, seed=3)
    sample = np.random.default_rng(7).choice(len(documents), 500, replace=False)
    _, found = index.search(flip(documents[sample]), 10)
    independent = recall(found, brute_force_top_k(documents[sample], documents, 10))
    assert measured >= 0.95 and independent >= 0.95
    assert abs(measured - independent) <= 0.02


def test_hnsw_with_inner_product_is_refused():
    with pytest.raises(ValueError, match="HNSW with inner product is refused.*not hyperbolic"):
        LorentzIndex(DIM, kind="hnsw", metric="inner_product")
    with pytest.raises(ValueError, match="supports metric='inner_product' only"):
        LorentzIndex(DIM, kind="ivf", metric="l2")


def test_hnsw_documents_added_beyond_the_old_max_norm_are_found():
    # The augmentation's M grows with the new documents (the column is rewritten on every add).
    near = clustered_points(3000, clusters=30, radii=(0.5, 2.0), seed=4)
    far = clustered_points(1000, clusters=10, radii=(5.0, 6.0), seed=5, centers_seed=7)
    index = LorentzIndex(DIM, kind="hnsw")
    index.add(near)
    assert np.linalg.norm(far, axis=1).min() > np.linalg.norm(near, axis=1).max()
    index.add(far)
    queries = clustered_points(200, clusters=10, radii=(5.0, 6.0), seed=6, centers_seed=7)
    _, ids = index.search(flip(queries), 10)
    assert recall(ids, brute_force_top_k(queries, np.vstack([near, far]), 10)) >= 0.95


def test_ivf_trains_on_first_batch_and_accepts_later_ones():
    documents = clustered_points(4000, seed=6)
    index = LorentzIndex(DIM, kind="ivf")
    index.add(documents[:3000])
    assert index.options["nlist"] == 76  # min(4 sqrt(3000), 3000 // 39)
    index.add(documents[3000:])
    _, ids = index.search(flip(documents[3000:3100]), 1)
    np.testing.assert_array_equal(ids[:, 0], np.arange(3000, 3100))
    with pytest.raises(ValueError, match="needs >= nlist = 50"):
        LorentzIndex(DIM, kind="ivf", nlist=50).add(documents[:10])


# ---------------------------------------------------------------------------------------------- ids, k, threads


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_remove_by_id(kind):
    documents = clustered_points(3000, clusters=30, seed=8)
    index = LorentzIndex(DIM, kind=kind)
    index.add(documents, ids=np.arange(3000) * 10)
    removed = np.arange(0, 30_000, 20)  # every other document
    assert index.remove(np.concatenate([removed, removed[:5], [7, 10**9]])) == 1500  # repeats and unknowns ignored
    assert len(index) == 1500 and not np.isin(index.ids, removed).any()
    _, ids = index.search(flip(documents[::7]), 50)
    assert not np.isin(ids, removed).any()
    # A removed id can be added again (hnsw: its old row stays a tombstone).
    index.add(documents[:1], ids=[0])
    _, ids = index.search(flip(documents[:1]), 1)
    assert ids[0, 0] == 0 and len(index) == 1501


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_k_beyond_count_is_padded(kind):
    documents = random_points(60, seed=9)
    index = LorentzIndex(DIM, kind=kind, nlist=1) if kind == "ivf" else LorentzIndex(DIM, kind=kind)
    index.add(documents)
    scores, ids = index.search(flip(documents[:3]), 80)
    assert ids.shape == (3, 80) and (ids[:, :60] >= 0).all() and (ids[:, 60:] == -1).all()
    assert np.isneginf(scores[:, 60:]).all() and np.isposinf(index.to_distances(scores)[:, 60:]).all()
    empty = LorentzIndex(DIM, kind=kind)
    with pytest.warns(UserWarning, match="searching an empty LorentzIndex"):  # A forgotten add() is said
        assert (empty.search(flip(documents[:2]), 3)[1] == -1).all()


def test_threads_option_sets_faiss_threads():
    before = faiss.omp_get_max_threads()
    try:
        LorentzIndex(DIM, threads=1)
        assert faiss.omp_get_max_threads() == 1
    finally:
        faiss.omp_set_num_threads(before)


# ---------------------------------------------------------------------------------------------- validation


def test_add_rejects_bad_documents_with_clear_errors():
    index = LorentzIndex(DIM, model_name="hyte-test")
    good = random_points(10, seed=10)
    with pytest.raises(ValueError, match="dimension 17, but this index expects dimension 33"):
        index.add(random_points(10, dim=17))
    with pytest.raises(ValueError, match=r"2-D array \(N, 33\)"):
        index.add(good[0])
    nan = good.copy()
    nan[3, 5] = np.nan
    with pytest.raises(ValueError, match="NaN or Inf in 1 row.*first row 3"):
        index.add(nan)
    with pytest.raises(ValueError, match="sign-flipped query vectors as documents"):
        index.add(flip(good))
    with pytest.raises(ValueError, match="off the hyperboloid.*Euclidean vectors"):
        index.add(np.random.default_rng(0).standard_normal((10, DIM)))
    # On the hyperboloid of another curvature: named as such (it blamed flipped or Euclidean vectors).
    with pytest.raises(ValueError, match=r"lie on the hyperboloid of curvature 2"):
        index.add(random_points(10, c=2.0))
    index.add(good, ids=np.arange(10))
    with pytest.raises(ValueError, match=r"duplicate ids: \[3\] are already in the index"):
        index.add(random_points(2, seed=11), ids=[3, 42])
    with pytest.raises(ValueError, match=r"duplicate ids within the batch: \[5\]"):
        index.add(random_points(2, seed=11), ids=[5, 5])
    with pytest.raises(ValueError, match="ids must be >= 0"):
        index.add(random_points(1, seed=11), ids=[-1])
    assert len(index) == 10  # nothing was added by the failed calls
    # torch tensors are accepted.
    assert index.add(torch.from_numpy(random_points(2, seed=12))).tolist() == [10, 11]


def test_search_detects_unflipped_points_and_bad_queries():
    index = LorentzIndex(DIM)
    points = random_points(100, seed=13)
    index.add(points)
    with pytest.raises(ValueError, match="unflipped hyperboloid points.*search_points"):
        index.search(points[:5], 3)
    with pytest.raises(ValueError, match="dimension 32, but this index expects dimension 33"):
        index.search(flip(points)[:, 1:], 3)
    queries = flip(points[:5])
    queries[1, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or Inf"):
        index.search(queries, 3)
    with pytest.raises(ValueError, match="off the hyperboloid"):
        index.search_points(flip(points[:5]), 3)
    # Euclidean vectors are refused. (A whole point negated, -x, cannot be told from a query: it is the flipped
    # point (x_0, -x_s).)
    with pytest.raises(ValueError, match="not \\(first: row 0\\).*flip_time"):
        index.search(np.random.default_rng(0).standard_normal((2, DIM)), 3)


def test_ids_that_are_not_integers_are_refused_everywhere():
    index = LorentzIndex(DIM)
    index.add(random_points(4, seed=3))
    with pytest.raises(ValueError, match="ids must be integers; got dtype float64"):
        index.remove([0.9])  # would have removed id 0
    with pytest.raises(ValueError, match="ids must be integers; got dtype bool"):
        index.remove(np.array([True]))
    with pytest.raises(ValueError, match="ids must fit in int64"):
        index.add(random_points(1, seed=4), ids=np.array([2**63 + 5], dtype=np.uint64))
    assert len(index) == 4


# ---------------------------------------------------------------------------------------------- persistence


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_save_load_round_trip(kind, tmp_path):
    documents = clustered_points(3000, clusters=30, seed=14)
    queries = flip(clustered_points(50, clusters=30, seed=15))
    index = LorentzIndex(DIM, 1.0, kind, model_name="org/hyte-h", ef_search=40)
    index.add(documents)
    index.remove([1, 2, 3])
    expected = index.search(queries, 10)
    index.save(tmp_path / "idx")
    assert sorted(os.listdir(tmp_path)) == ["idx"]  # no staging or backup left behind
    assert sorted(os.listdir(tmp_path / "idx")) == ["index.faiss", "metadata.json"]
    loaded = LorentzIndex.load(tmp_path / "idx", expected_model="org/hyte-h", expected_dim=DIM,
                               expected_curvature=1.0)
    assert (loaded.kind, loaded.model_name, loaded.options, len(loaded)) == (kind, "org/hyte-h", index.options, 2997)
    for got, want in zip(loaded.search(queries, 10), expected):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(loaded.ids, index.ids)
    loaded.add(documents[1:4], ids=[1, 2, 3])  # a loaded index keeps working
    assert len(loaded) == 3000


def test_load_refuses_another_model_dimension_or_curvature(tmp_path):
    index = LorentzIndex(DIM, 1.0, model_name="org/model-a")
    index.add(random_points(20, seed=16))
    index.save(tmp_path / "idx")
    with pytest.raises(IncompatibleIndexError, match="model 'org/model-b' != the index's 'org/model-a'"):
        LorentzIndex.load(tmp_path / "idx", expected_model="org/model-b")
    with pytest.raises(ValueError, match="dimension 385 != the index's 33"):
        LorentzIndex.load(tmp_path / "idx", expected_dim=385)
    loaded = LorentzIndex.load(tmp_path / "idx")
    with pytest.raises(IncompatibleIndexError, match="curvature 2.0 != the index's 1.0"):
        loaded.check_compatible("org/model-a", DIM, 2.0)
    loaded.check_compatible("org/model-a", DIM, 1.0)


def _saved_index(directory, count: int) -> LorentzIndex:
    index = LorentzIndex(DIM, model_name="m")
    index.add(random_points(count, seed=17))
    index.save(directory)
    return index


def test_save_interrupted_while_writing_keeps_previous_index(tmp_path, monkeypatch):
    target = tmp_path / "idx"
    index = _saved_index(target, 100)
    index.add(random_points(50, seed=18))

    def crash(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(index_module.faiss, "write_index", crash)
    with pytest.raises(OSError, match="simulated"):
        index.save(target, overwrite=True)
    monkeypatch.undo()
    assert len(LorentzIndex.load(target)) == 100
    assert sorted(os.listdir(tmp_path)) == ["idx"]


def test_save_interrupted_while_renaming_keeps_previous_index(tmp_path, monkeypatch):
    target = tmp_path / "idx"
    index = _saved_index(target, 100)
    index.add(random_points(50, seed=19))
    real_replace = os.replace

    def failing_replace(source, destination):
        if os.path.basename(str(source)).startswith(".idx.tmp-"):  # moving the new index into place
            raise OSError("rename failed (simulated)")
        return real_replace(source, destination)

    monkeypatch.setattr(index_module.os, "replace", failing_replace)
    with pytest.raises(OSError, match="simulated"):
        index.save(target, overwrite=True)
    monkeypatch.undo()
    assert len(LorentzIndex.load(target)) == 100
    assert sorted(os.listdir(tmp_path)) == ["idx"]
    index.save(target, overwrite=True)  # and a later save succeeds
    assert len(LorentzIndex.load(target)) == 150


def test_load_falls_back_to_backup_after_a_crash_between_renames(tmp_path):
    target = tmp_path / "idx"
    _saved_index(target, 100)
    os.replace(target, tmp_path / ".idx.previous")  # state after a crash right after the first rename
    with pytest.warns(UserWarning, match="save was interrupted"):
        assert len(LorentzIndex.load(target)) == 100
    index = LorentzIndex(DIM, model_name="m")
    index.add(random_points(30, seed=20))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.save(target)
        assert len(LorentzIndex.load(target)) == 30
    assert sorted(os.listdir(tmp_path)) == ["idx"]


def test_a_second_save_into_the_same_folder_needs_overwrite(tmp_path):
    """A 2-document index saved where a 6-document one was replaced it without a word."""
    _saved_index(tmp_path / "idx", 6)
    smaller = LorentzIndex(DIM, model_name="m")
    smaller.add(random_points(2, seed=22))
    with pytest.raises(FileExistsError, match="already holds a saved LorentzIndex: pass overwrite=True"):
        smaller.save(tmp_path / "idx")
    assert len(LorentzIndex.load(tmp_path / "idx")) == 6
    smaller.save(tmp_path / "idx", overwrite=True)
    assert len(LorentzIndex.load(tmp_path / "idx")) == 2


def test_a_k_far_beyond_the_documents_is_refused_instead_of_allocated():
    """k = 10**9 on five documents padded the result to (1, 10**9) and the process was killed."""
    index = LorentzIndex(DIM)
    index.add(random_points(5, seed=23))
    queries = flip(random_points(1, seed=24))
    with pytest.raises(ValueError, match=r"k 1000000000 is above the 5 documents"):
        index.search(queries, k=10**9)
    assert index.search(queries, k=8)[1].shape == (1, 8)  # a small overshoot is still padded, as FAISS pads


def test_save_refuses_to_replace_an_unrelated_directory(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("keep me")
    index = LorentzIndex(DIM)
    index.add(random_points(5, seed=21))
    with pytest.raises(FileExistsError, match="not a saved LorentzIndex"):
        index.save(tmp_path / "data")
    assert (tmp_path / "data" / "notes.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match="trained by its first add"):
        LorentzIndex(DIM, kind="ivf").save(tmp_path / "ivf")


def _ball_at(radius: float, n: int, dim: int, c: float, seed: int) -> np.ndarray:
    """n float32 points within geodesic distance ~0.5 of each other around a point at distance ``radius`` from the
    origin: a packed neighbourhood far out, where float32 inner products cancel (serving pitfall 3 in the notes).
    Radii spread by +-0.25, directions by ~exp(-radius) (an angle theta at radius r spans ~e^r theta / 2)."""
    generator = torch.Generator().manual_seed(seed)
    centre = torch.nn.functional.normalize(torch.randn(dim - 1, dtype=torch.float64, generator=generator), dim=0)
    directions = torch.nn.functional.normalize(
        centre + math.exp(-radius) * torch.randn(n, dim - 1, dtype=torch.float64, generator=generator), dim=-1)
    radii = radius + 0.25 * (2 * torch.rand(n, 1, dtype=torch.float64, generator=generator) - 1)
    return lorentz.expmap0(radii.clamp_min(0.01) * math.sqrt(c) * directions, c).float().numpy()


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("radius", [0.0, 3.0, 6.0, 11.5])
def test_flat_search_is_exact_at_every_radius_the_specificity_head_allows(radius, c):
    """Top-10 of the flat index = top-10 of float64 geodesic search on the same float32 points, up to the head's
    cap of 12 sqrt(c); FAISS's own float32 ranking is not (checked at 11.5: the test can tell the difference)."""
    documents = _ball_at(radius, 640, 17, c, seed=int(radius * 10) + 1)
    queries, documents = documents[:40], documents[40:]  # queries from the same neighbourhood
    index = LorentzIndex(17, c)
    index.add(documents)
    flipped = queries.copy()
    flipped[:, 0] *= -1
    _, found = index.search(flipped, k=10)
    exact = -lorentz.pairwise_distance(torch.from_numpy(queries).double(), torch.from_numpy(documents).double(), c)
    expected = torch.topk(exact, 10, dim=1).indices.numpy()
    assert (np.sort(found, axis=1) == np.sort(expected, axis=1)).all()
    if radius == 11.5:
        raw = faiss.IndexFlatIP(17)
        raw.add(documents)
        _, plain = raw.search(flipped, 10)
        assert (np.sort(plain, axis=1) != np.sort(expected, axis=1)).any()


def test_searcher_from_a_file_names_the_absolute_folder_that_holds_it(tmp_path, monkeypatch):
    from hyte.retrieval.searcher import HyteSearcher

    (tmp_path / "index.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    folder = re.escape(os.getcwd())  # tmp_path with any symbolic link resolved
    for given in ("index.json", os.path.join("..", tmp_path.name, "index.json")):  # the first named "(.)"
        with pytest.raises(NotADirectoryError, match=rf"^{re.escape(given)} is a file: give the index folder that "
                                                    rf"holds it \({folder}\)$"):
            HyteSearcher.from_folder(given)


def test_eleventh_trial_searcher_ids_and_folders_that_are_no_index_are_named(tmp_path):
    """Found by the eleventh new-user trial: float ids were kept as '1.0' beside '1'; a vector-shard folder or a
    BEIR folder given as the index got the hint to build an index into that very folder."""
    from hyte.retrieval.folder import documents_for, open_index_folder
    from hyte.retrieval.searcher import HyteSearcher

    # Refused before the model is loaded (there is none at that path).
    with pytest.raises(ValueError, match=r"ids\[1\]: the id 1.0 is a float"):
        HyteSearcher.from_texts(["a", "b"], str(tmp_path / "no-model"), ids=[1, 1.0])
    with pytest.raises(ValueError, match=r"id '1' is given twice \(as 1 before; both are '1' as text\)"):
        documents_for(["a", "b"], [1, "1"])
    with pytest.raises(ValueError, match=r"ids\[0\]: the id must be a string or an integer; got True"):
        documents_for(["a"], [True])
    assert documents_for(["a", "b"], [np.int64(3), "x"])[0]["id"] == 3  # numpy integers are integers
    with pytest.raises(ValueError, match=r"^text 1 \(id 'y'\) is empty"):  # The id finds it in the user's data
        documents_for(["a", " "], ["x", "y"])

    shards, beir = tmp_path / "vectors", tmp_path / "beir"
    shards.mkdir(), beir.mkdir()
    (shards / "manifest.json").write_text("{}")
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    with pytest.raises(FileNotFoundError, match=rf"is a folder of encoded vector shards .*`hyte index build --from-vectors "
                                                rf"{re.escape(str(shards))} --output NEW_FOLDER`"):
        open_index_folder(shards)
    with pytest.raises(FileNotFoundError, match=rf"is a BEIR folder, not an index: .*--input "
                                                rf"{re.escape(str(beir / 'corpus.jsonl'))} --output NEW_FOLDER`"):
        HyteSearcher.from_folder(beir)


def test_an_index_is_not_saved_inside_a_model_folder_from_python_either(tmp_path):
    """LorentzIndex.save and HyteSearcher.save wrote into a model's folder, which the command line
    refuses (hyte push would upload the index, documents and all, with the model)."""
    from hyte.retrieval.folder import check_index_folder_free
    from hyte.retrieval.index import LorentzIndex

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"model/sub is or lies inside a model folder"):
        LorentzIndex(3, 1.0).save(model / "sub")
    with pytest.raises(FileExistsError, match=r"lies inside a model folder"):
        check_index_folder_free(model / "sub", overwrite=True)
    assert sorted(path.name for path in model.iterdir()) == ["config.json"]
    LorentzIndex(3, 1.0).save(tmp_path / "beside")
    assert (tmp_path / "beside" / "index.faiss").is_file()


def test_a_euclidean_curvature_is_refused_naming_the_model():
    with pytest.raises(ValueError, match="eucbert-run is Euclidean"):
        LorentzIndex(9, 0.0, model_name="eucbert-run")
    with pytest.raises(ValueError, match="c must be a finite number > 0"):  # other bad curvatures: the geometry's
        LorentzIndex(9, -1.0)


def test_a_folder_is_refused_after_remove_and_add_left_a_gap(tmp_path):
    from hyte.retrieval.folder import documents_for, write_index_folder

    points = lorentz.expmap0(torch.randn(4, 8, dtype=torch.float64) * 0.5).float().numpy()
    index = LorentzIndex(9, 1.0)
    index.add(points[:3])
    index.remove([1])
    index.add(points[3:], ids=[3])  # the count is right again (3), the rows are not: ids 0, 2, 3
    with pytest.raises(ValueError, match=r"ids are not 0\.\.2 \(it holds id 3\)"):
        write_index_folder(tmp_path / "folder", index, documents_for(["a", "c", "d"]))
    assert not (tmp_path / "folder").exists()


@pytest.mark.parametrize("kind, options", [("flat", {}), ("hnsw", {}), ("ivf", {"nlist": 4})])
def test_renumbered_index_holds_the_same_points_numbered_in_id_order(kind, options):
    """After removals an index folder needs ids 0..N-1 (row i of its texts is id i): the renumbered copy holds the
    remaining points in the order of their old ids, with the same kind, options and model."""
    points = random_points(60, seed=3)
    index = LorentzIndex(DIM, kind=kind, model_name="m", model_fingerprint="f", **options)
    index.add(points)
    index.remove(np.arange(0, 60, 3))
    kept = index.ids
    copy = index.renumbered()
    assert (copy.kind, copy.options, copy.model_name, copy.model_fingerprint) == (
        index.kind, index.options, "m", "f")
    assert np.array_equal(copy.ids, np.arange(len(kept)))
    np.testing.assert_array_equal(copy.points_of(np.arange(len(kept))), index.points_of(kept))
