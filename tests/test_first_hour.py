"""What a new user meets in the first hour (issue 12): FAISS results in the geometry helpers, model names on the
command line, config errors, and a ``hyte --help`` that answers at once."""

from __future__ import annotations

import faiss
import numpy as np
import torch

from hyte import lorentz as L


# ----------------------------------------------------------------------------------------------------------------
# The lorentz helpers take what FAISS returns (NumPy) and give NumPy back
# ----------------------------------------------------------------------------------------------------------------


def test_lorentz_helpers_take_faiss_results_and_return_numpy():
    torch.manual_seed(0)
    documents = L.expmap0(torch.randn(20, 8)).numpy()
    queries = L.expmap0(torch.randn(3, 8)).numpy()
    index = faiss.IndexFlatIP(documents.shape[1])
    index.add(documents)
    scores, ids = index.search(L.flip_time(queries), 5)

    distances = L.distance_from_inner(scores)
    assert isinstance(distances, np.ndarray) and distances.dtype == np.float32
    expected = L.pairwise_distance(torch.from_numpy(queries), torch.from_numpy(documents)).numpy()
    np.testing.assert_allclose(distances, np.take_along_axis(expected, ids, axis=1), rtol=1e-4, atol=1e-4)
    assert (np.diff(distances, axis=1) >= 0).all()  # FAISS's order is the geodesic order

    read_only = documents.copy()
    read_only.setflags(write=False)  # as np.load(..., mmap_mode="r") gives them
    for result in (L.radius(read_only), L.distance_to_origin(read_only), L.pairwise_distance(queries, read_only)):
        assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(L.distance_to_origin(documents), L.distance_to_origin(torch.from_numpy(documents)))
    assert isinstance(L.distance_from_inner(torch.from_numpy(scores)), torch.Tensor)  # tensors stay tensors
