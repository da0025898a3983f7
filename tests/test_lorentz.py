"""Property tests of the Lorentz geometry over seeds x dtypes x curvatures, radii up to 15 (geoopt style)."""

from __future__ import annotations

import inspect
import itertools
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hyte import lorentz as L

DTYPES = [torch.float32, torch.float64]
CURVATURES = [0.5, 1.0, 2.0]
# Tolerances by dtype: float32 carries ~7 digits.
RTOL = {torch.float32: 1e-3, torch.float64: 1e-6}

seeds = st.integers(0, 2**31 - 1)
dtypes = st.sampled_from(DTYPES)
curvatures = st.sampled_from(CURVATURES)
PROPERTY = settings(max_examples=40, deadline=None)


def random_points(seed: int, n: int, dim: int, c: float, dtype, max_distance: float = 15.0) -> torch.Tensor:
    """n points of H^dim_c at geodesic distances to the origin spread over [0, max_distance]."""
    g = torch.Generator().manual_seed(seed)
    direction = torch.randn(n, dim, generator=g, dtype=torch.float64)
    direction = direction / direction.norm(dim=-1, keepdim=True)
    distances = torch.rand(n, 1, generator=g, dtype=torch.float64) * max_distance
    return L.expmap0(direction * distances, c).to(dtype)


def on_hyperboloid_error(x: torch.Tensor, c: float) -> torch.Tensor:
    """|<x,x>_L + c| / x_0^2 in float64: the relative error of the constraint."""
    x64 = x.double()
    return (L.inner(x64, x64) + c).abs() / x64[..., 0] ** 2


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_expmap0_points_lie_on_hyperboloid(seed, dtype, c):
    x = random_points(seed, 64, 8, c, dtype)
    assert torch.isfinite(x).all()
    assert (x[:, 0] > 0).all()
    assert on_hyperboloid_error(x, c).max() < 10 * torch.finfo(dtype).eps


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_expmap0_logmap0_round_trip(seed, dtype, c):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(64, 8, generator=g, dtype=torch.float64)
    v = (v / v.norm(dim=-1, keepdim=True) * torch.rand(64, 1, generator=g, dtype=torch.float64) * 15).to(dtype)
    back = L.logmap0(L.expmap0(v, c), c)
    torch.testing.assert_close(back, v, rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)
    # The tangent norm is the distance to the origin.
    torch.testing.assert_close(L.distance_to_origin(L.expmap0(v, c), c), v.norm(dim=-1),
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_distance_is_symmetric_zero_on_diagonal_and_matches_origin_distance(seed, dtype, c):
    x = random_points(seed, 32, 6, c, dtype)
    y = random_points(seed + 1, 32, 6, c, dtype)
    d_xy, d_yx = L.pairwise_distance(x, y, c), L.pairwise_distance(y, x, c)
    assert torch.isfinite(d_xy).all()
    torch.testing.assert_close(d_xy, d_yx.T)
    # A point is at distance 0 from itself (the difference form of ``distance`` keeps this exact at any radius).
    assert L.distance(x, x, c).abs().max() <= 1e-6
    o = L.origin(6, c, dtype=dtype).expand_as(x)
    torch.testing.assert_close(L.distance(o, x, c), L.distance_to_origin(x, c), rtol=1e-3, atol=1e-3)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_triangle_inequality(seed, dtype, c):
    x, y, z = (random_points(seed + i, 48, 5, c, dtype, max_distance=10.0) for i in range(3))
    d_xz, d_xy, d_yz = L.distance(x, z, c), L.distance(x, y, c), L.distance(y, z, c)
    slack = 1e-3 if dtype == torch.float32 else 1e-8
    assert (d_xz <= d_xy + d_yz + slack * (1 + d_xz)).all()


@PROPERTY
@given(seed=seeds, c=curvatures)
def test_poincare_round_trip(seed, c):
    # float64 up to radius 15; float32 only while the ball still separates the point from its boundary (~r 10).
    for dtype, max_distance in ((torch.float64, 15.0), (torch.float32, 8.0)):
        x = random_points(seed, 32, 6, c, dtype, max_distance)
        p = L.to_poincare(x, c)
        assert (p.double().pow(2).sum(-1) < c).all()
        back = L.from_poincare(p, c)
        # Compared in log coordinates at the origin, which resolve every radius to relative precision.
        torch.testing.assert_close(L.logmap0(back, c), L.logmap0(x, c),
                                   rtol=1e-6 if dtype == torch.float64 else 1e-3, atol=1e-6)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_sign_flip_turns_dot_product_into_lorentz_inner_product(seed, dtype, c):
    q, x = random_points(seed, 16, 7, c, dtype, 5.0), random_points(seed + 7, 20, 7, c, dtype, 5.0)
    torch.testing.assert_close(L.flip_time(q) @ x.T, L.pairwise_inner(q, x))
    # ... and ranking by it is ranking by geodesic distance.
    order_dot = torch.argsort(L.flip_time(q).double() @ x.double().T, dim=1, descending=True)
    distances = L.pairwise_distance(q.double(), x.double(), c)
    assert (distances.gather(1, order_dot).diff(dim=1) >= -1e-9).all()


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_project_is_identity_on_points_and_lands_on_hyperboloid(seed, dtype, c):
    # Pi_c reads the Lorentz norm of its input, which a stored point only pins down while eps * x0^2 << c:
    # radius ~5 sqrt(c) in float32, ~14 sqrt(c) in float64 (beyond that use centroid/OEM, which re-derive time).
    max_distance = (5.0 if dtype == torch.float32 else 14.0) * math.sqrt(c)
    x = random_points(seed, 32, 6, c, dtype, max_distance)
    torch.testing.assert_close(L.project(x, c), x, rtol=1e-3 if dtype == torch.float32 else 1e-4, atol=0)
    # Any positive combination of points is time-like; its projection is a point.
    w = torch.rand(32, 1, dtype=dtype, generator=torch.Generator().manual_seed(seed)) + 0.1
    v = L.project((w * x) + x.roll(1, 0), c)
    assert on_hyperboloid_error(v, c).max() < 10 * torch.finfo(dtype).eps


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures, n=st.integers(2, 12))
def test_proposition_4_3_euclidean_mean_contracts_radius(seed, dtype, c, n):
    """Proposition 4.3: r(Pi(mean x_i)) <= mean r(x_i), equality only for identical points."""
    # float64 resolves the Lorentz norm of a sum of points up to x0 ~ 1e7, i.e. radius ~14 sqrt(c).
    x = random_points(seed, n, 5, c, dtype, max_distance=min(15.0, 14.0 * math.sqrt(c)))
    pooled = L.centroid(x, torch.full((n,), 1.0 / n, dtype=dtype), c)
    assert float(L.radius(pooled)) <= float(L.radius(x).mean()) * (1 + 1e-6)
    same = x[:1].expand(n, -1)
    # The Lorentz norm of the sum cancels to c out of ~x0^2: relative accuracy eps64 * x0^2 / c.
    rtol = max(RTOL[dtype], 10 * torch.finfo(torch.float64).eps * float(x[0, 0]) ** 2 / c)
    torch.testing.assert_close(L.radius(L.centroid(same, None, c)), L.radius(x[0]), rtol=rtol, atol=0)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures, p=st.floats(0.0, 4.0), n=st.integers(2, 12))
def test_theorem_4_6_oem_pre_projection_time_exceeds_weighted_mean_radius(seed, dtype, c, p, n):
    """Theorem 4.6: sum w x0^(p+2) / sum w x0^(p+1) >= sum w x0 / sum w (Chebyshev), at any p >= 0."""
    x = random_points(seed, n, 5, c, dtype, 8.0).double()
    w = torch.rand(n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) + 0.05
    x0 = x[:, 0]
    alpha = w * x0**p / (w * x0**p).sum()  # normalised OEM weights on hyperboloid points (our p convention)
    pre_projection_time = (alpha * x0).sum()
    weighted_mean_radius = (w * x0).sum() / w.sum()
    assert pre_projection_time >= weighted_mean_radius * (1 - 1e-12)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_theorem_4_7_holds_for_two_points_with_uniform_weights(seed, dtype, c):
    """Theorem 4.7 (OEM radius non-decreasing in p) holds for two equally weighted points.

    Float32 points are drawn within radius 5, where float32 resolves the hyperboloid (module docstring of lorentz):
    at radius 14 sqrt(c) (c = 0.5, distance 10) the stored float32 radius of the p = 2 and p = 4 midpoints, both
    almost the far point itself, differed by 5e-5 in relative terms (seed 1463107)."""
    x = random_points(seed, 2, 4, c, dtype, 10.0 if dtype == torch.float64 else 5.0)
    radii = [float(L.radius(L.outward_einstein_midpoint(x, p=p, c=c))) for p in (0.0, 0.5, 1.0, 2.0, 4.0)]
    assert all(b >= a * (1 - 1e-5) for a, b in itertools.pairwise(radii))


def test_theorem_4_7_fails_in_general():
    """The general statement is false: its proof assumes the pairwise dispersion term shrinks with p.

    Found by a random search (about 2% of random 3-8 point configurations violate r(OEM_1) >= r(OEM_0)). Here one
    point carries twice the weight of a slightly farther point at a small angle; moving weight outward moves the
    midpoint along a geodesic that dips towards the origin, so the radius first falls.
    """
    tangent = torch.tensor([[3.0, -4.0], [2.5, -4.0], [2.5, -4.0]], dtype=torch.float64)
    x = L.expmap0(tangent)
    r0 = float(L.radius(L.einstein_midpoint(x)))
    r1 = float(L.radius(L.outward_einstein_midpoint(x, p=1.0)))
    assert r1 < r0 - 0.3


@pytest.mark.parametrize("c", CURVATURES)
def test_oem_p0_is_lorentzian_centroid_and_mask_removes_points(c):
    x = random_points(3, 6, 4, c, torch.float64)
    torch.testing.assert_close(L.outward_einstein_midpoint(x, p=0.0, c=c), L.centroid(x, None, c))
    mask = torch.tensor([1, 1, 1, 0, 0, 0], dtype=torch.float64)
    torch.testing.assert_close(L.outward_einstein_midpoint(x, mask, p=1.0, c=c),
                               L.outward_einstein_midpoint(x[:3], p=1.0, c=c))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c", CURVATURES)
def test_far_points_stay_finite_in_forward_and_backward(dtype, c):
    """Radius 40 in float32 (x0 ~ 1e17) through OEM, distances and logmap: finite values and gradients."""
    tangent = (torch.randn(4, 16, 8, dtype=dtype) * 10).requires_grad_()
    x = L.expmap0(tangent / tangent.norm(dim=-1, keepdim=True) * 40, c)
    pooled = L.outward_einstein_midpoint(x, torch.ones(4, 16, dtype=dtype), p=2.0, c=c)
    loss = L.pairwise_distance(pooled, x[:, 0], c).sum() + L.logmap0(pooled, c).sum()
    loss.backward()
    assert torch.isfinite(pooled).all() and torch.isfinite(loss) and torch.isfinite(tangent.grad).all()


def test_bad_curvature_is_refused_and_a_set_of_only_padding_pools_to_the_origin():
    with pytest.raises(ValueError, match="curvature"):
        L.check_curvature(0.0)
    with pytest.raises(ValueError, match="curvature"):
        L.check_curvature(-1.0)
    with pytest.raises(ValueError, match="curvature"):
        L.check_curvature(math.nan)
    x = random_points(0, 3, 4, 1.0, torch.float32)
    for pool in (L.outward_einstein_midpoint, L.einstein_midpoint, L.tangent_mean):
        points = x.clone().requires_grad_()
        pooled = pool(points, torch.zeros(3))
        torch.testing.assert_close(pooled, L.origin(4, 1.0))
        pooled.sum().backward()  # the softmax of a row of -inf gave NaN gradients
        assert torch.isfinite(points.grad).all()


# ----------------------------------------------------------------------------------------------------------------
# Entailment cones
# ----------------------------------------------------------------------------------------------------------------


def ray_pairs(seed: int, n: int, dim: int, c: float, dtype, max_distance: float = 15.0):
    """(inner, outer): pairs of points on the same ray from the origin, outer strictly further out; distances in units
    of sqrt(c), up to ``max_distance`` sqrt(c) (float64 resolves the hyperboloid to ~14 sqrt(c))."""
    g = torch.Generator().manual_seed(seed)
    direction = torch.randn(n, dim, generator=g, dtype=torch.float64)
    direction = direction / direction.norm(dim=-1, keepdim=True)
    near = 0.2 + torch.rand(n, 1, generator=g, dtype=torch.float64) * (max_distance - 1.0)
    far = near + 0.5 + torch.rand(n, 1, generator=g, dtype=torch.float64) * 0.5
    scale = math.sqrt(c)
    return L.expmap0(direction * near * scale, c).to(dtype), L.expmap0(direction * far * scale, c).to(dtype)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_point_further_out_on_its_axis_is_inside_the_cone(seed, dtype, c):
    # Float32 storage fixes a far point's direction only to ~1e-7 sinh(r): at radius 14 two stored points "on one
    # ray" are ~0.1 rad apart in truth, so float32 is checked to radius 8 sqrt(c) and float64 to 10 sqrt(c) (beyond,
    # the chord's own float64 rounding, ~1e-16 x_0^2, shows in angles near 0).
    inner_point, outer_point = ray_pairs(seed, 64, 8, c, dtype, max_distance=8.0 if dtype == torch.float32 else 10.0)
    angle = L.exterior_angle(inner_point, outer_point, c)
    assert torch.isfinite(angle).all()
    # 0 in exact arithmetic; the clamp of the cosine at 1 - 1e-7 alone leaves 4.5e-4 rad.
    tolerance = 0.02 if dtype == torch.float32 else 2e-3
    assert angle.max() < tolerance
    # Far out the aperture itself is ~1e-7 rad, so "inside" means within the angle's own precision.
    assert L.entailment_violation(inner_point, outer_point, c).max() < tolerance
    # The reverse pair points back towards the origin: an exterior angle of pi, far outside any cone.
    back = L.exterior_angle(outer_point, inner_point, c)
    assert (back > math.pi - 0.02).all()
    assert (L.entailment_violation(outer_point, inner_point, c) > 1.0).all()


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_half_aperture_shrinks_with_radius_and_stays_in_range(seed, dtype, c):
    inner_point, outer_point = ray_pairs(seed, 64, 8, c, dtype)
    near, far = L.half_aperture(inner_point, c), L.half_aperture(outer_point, c)
    assert torch.isfinite(near).all() and torch.isfinite(far).all()
    assert ((far > 0) & (near <= math.pi / 2)).all()
    assert (far <= near).all()
    # Scale invariance: the same point rescaled to curvature 1 has the same aperture.
    torch.testing.assert_close(near, L.half_aperture(inner_point / math.sqrt(c), 1.0), rtol=RTOL[dtype] * 10,
                               atol=RTOL[dtype] * 10)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_exterior_angle_is_finite_in_range_with_finite_gradients_far_from_origin(seed, dtype, c):
    x = random_points(seed, 64, 8, c, dtype).requires_grad_(True)
    y = random_points(seed + 1, 64, 8, c, dtype).requires_grad_(True)
    angle = L.exterior_angle(x, y, c)
    assert torch.isfinite(angle).all()
    assert ((angle >= 0) & (angle <= math.pi)).all()
    # Identical points (undefined angle) and the origin (undefined axis) stay finite too.
    assert torch.isfinite(L.exterior_angle(x[:4], x[:4], c)).all()
    assert torch.isfinite(L.exterior_angle(L.origin(8, c, dtype=dtype).expand(4, 9), y[:4], c)).all()
    L.entailment_violation(x, y, c).sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(y.grad).all()


@PROPERTY
@given(seed=seeds, c=curvatures)
def test_exterior_angle_is_rotation_invariant_and_matches_float64(seed, c):
    x = random_points(seed, 32, 6, c, torch.float64, max_distance=5.0)
    y = random_points(seed + 7, 32, 6, c, torch.float64, max_distance=5.0)
    rotation, _ = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    rotate = lambda p: torch.cat([p[..., :1], p[..., 1:] @ rotation.T], dim=-1)
    torch.testing.assert_close(L.exterior_angle(rotate(x), rotate(y), c), L.exterior_angle(x, y, c))
    # float32 inputs agree with the float64 result (the computation itself runs in float64).
    torch.testing.assert_close(L.exterior_angle(x.float(), y.float(), c).double(), L.exterior_angle(x, y, c),
                               rtol=1e-3, atol=1e-3)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_a_point_entails_itself_with_zero_gradient(seed, dtype, c):
    # Parent text equal to child text gives two identical points; their exterior angle is undefined and its raw
    # gradient ~1e14 would swamp a whole batch (found in ICD-10-CM, where 345 codes share their parent's title).
    x = random_points(seed, 32, 8, c, dtype, max_distance=10.0).requires_grad_(True)
    y = x.detach().clone().requires_grad_(True)
    violation = L.entailment_violation(x, y, c)
    violation.sum().backward()
    assert (violation == 0).all()
    assert torch.isfinite(x.grad).all() and x.grad.abs().max() < 1.0 and y.grad.abs().max() < 1.0


@pytest.mark.parametrize("c", [0.0, -1.0, float("nan"), float("inf")])
def test_every_function_refuses_a_curvature_that_is_not_positive(c):
    """c <= 0 (or not finite) gives NaN downstream: every function taking c as a number refuses it, in one line (a
    tensor c, a model's own, is not read: its log parametrisation keeps it positive)."""
    x = L.expmap0(torch.randn(3, 4, generator=torch.Generator().manual_seed(0)))
    mask = torch.ones(1, 3)
    calls = {
        "origin": lambda: L.origin(4, c), "add_time": lambda: L.add_time(x[:, 1:], c),
        "time_coordinate": lambda: L.time_coordinate(x[:, 1:], c),
        "distance_from_inner": lambda: L.distance_from_inner(L.inner(x, x), c), "distance": lambda: L.distance(x, x, c),
        "pairwise_distance": lambda: L.pairwise_distance(x, x, c),
        "squared_lorentz_distance": lambda: L.squared_lorentz_distance(x, x, c),
        "distance_to_origin": lambda: L.distance_to_origin(x, c), "project": lambda: L.project(x, c),
        "expmap0": lambda: L.expmap0(x[:, 1:], c), "logmap0": lambda: L.logmap0(x, c),
        "to_poincare": lambda: L.to_poincare(x, c), "from_poincare": lambda: L.from_poincare(0.1 * x[:, 1:], c),
        "centroid": lambda: L.centroid(x, c=c),
        "outward_einstein_midpoint": lambda: L.outward_einstein_midpoint(x[None], mask, c=c),
        "einstein_midpoint": lambda: L.einstein_midpoint(x[None], mask, c=c),
        "tangent_mean": lambda: L.tangent_mean(x[None], mask, c=c), "half_aperture": lambda: L.half_aperture(x, c),
        "exterior_angle": lambda: L.exterior_angle(x, x, c), "entailment_violation": lambda: L.entailment_violation(x, x, c),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match="curvature c must be a finite number > 0"):
            call()
            pytest.fail(f"{name} accepted c = {c}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_check_point_names_vectors_that_are_not_points_of_this_hyperboloid(dtype):
    """Distances re-derive x_0 from x_s and read no values, so any vector becomes a point there: check_point is how a
    user asks, and says what is wrong."""
    x = random_points(0, 6, 8, 1.0, dtype, max_distance=3.0)
    wrong = {
        "Euclidean vectors": (torch.randn(6, 9, dtype=dtype), "not points of the hyperboloid <x,x>_L = -c with c = 1"),
        "a NaN coordinate": (torch.cat([x[:1].clone().fill_(math.nan), x[1:]]),
                             r"1 of 6 vectors hold NaN or inf \(first at index \(0,\)\)"),
        "sign-flipped queries": (L.flip_time(x), "not points of the hyperboloid <x,x>_L = -c with c = 1"),
        "points of c = 4 near the origin": (random_points(1, 6, 8, 4.0, dtype, max_distance=0.5),
                                            "not points of the hyperboloid <x,x>_L = -c with c = 1"),
    }
    L.check_point(x, 1.0)
    for what, (vectors, problem) in wrong.items():
        with pytest.raises(ValueError, match=f"^check_point: .*{problem}"):
            L.check_point(vectors, 1.0)
            pytest.fail(f"{what} accepted")
    with pytest.raises(ValueError, match="a sign-flipped query vector"):
        L.check_point(L.flip_time(x), 1.0)


def test_pooling_of_no_points_is_refused_not_turned_into_a_non_point():
    """einstein_midpoint of an empty set returned (0, 0, 0, 0), x_0 = 0, which is no point. Empty sets and a point
    without a set dimension are named (shapes); a set whose mask is all padding pools to the origin, finite."""
    x = random_points(0, 6, 3, 1.0, torch.float32)
    pools = {"einstein_midpoint": L.einstein_midpoint, "outward_einstein_midpoint": L.outward_einstein_midpoint,
             "tangent_mean": L.tangent_mean, "centroid": L.centroid}
    for name, pool in pools.items():
        with pytest.raises(ValueError, match=rf"^{name}: takes sets of points .* got shape \(0, 4\): the set is empty, "
                                             "there are no points to pool"):
            pool(x[:0])
        with pytest.raises(ValueError, match=rf"^{name}: .*got shape \(4,\): one point, no set"):
            pool(x[0])
    for name in ("einstein_midpoint", "outward_einstein_midpoint", "tangent_mean"):
        mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
        pooled = pools[name](x.view(2, 3, 4), mask)
        torch.testing.assert_close(pooled[1], L.origin(3, 1.0))
        assert torch.isfinite(pooled).all() and pooled[0, 0] > 1.0


def test_bad_arguments_are_named_not_turned_into_numbers():
    x = L.expmap0(torch.randn(4, 5, dtype=torch.float64) * 0.3)
    with pytest.raises(TypeError, match="curvature c must be a number or a tensor; got str"):
        L.distance(x, x, c="1.0")
    with pytest.raises(ValueError, match="weights must be >= 0, one per point: 4 points"):
        L.centroid(x, torch.ones(3))
    with pytest.raises(ValueError, match="dim is the space dimension"):
        L.origin(-1)


def test_a_tensor_curvature_is_one_number_and_numbers_are_not_points():
    """A one-element tensor c (a model's learnable curvature) gives what the float gives, gradients included; a tensor
    of several curvatures broadcast against the points and reshaped the result; a number or a 0-d tensor where
    points belong failed in indexing ("'float' object is not subscriptable", "too many indices")."""
    x, y = L.expmap0(torch.randn(3, 4, dtype=torch.float64) * 0.5, 2.0), L.expmap0(torch.randn(3, 4) * 0.5, 2.0)
    x = x.float()
    c = torch.tensor(2.0, requires_grad=True)
    torch.testing.assert_close(L.distance(x, y, c=c), L.distance(x, y, c=2.0))
    assert L.distance(x[0], y[0], c=torch.tensor([2.0])).shape == ()
    L.distance(x, y, c=c).sum().backward()
    assert c.grad is not None and torch.isfinite(c.grad)
    for several in (torch.full((3, 1), 2.0), torch.full((2,), 2.0)):  # (3, 1) gave a (3, 3) "distance"
        shape = re.escape(str(tuple(several.shape)))
        with pytest.raises(ValueError, match=f"one-element tensor .*got a tensor of shape {shape}"):
            L.distance(x, y, c=several)
    for number, named in ((3.0, "the number 3.0"), (torch.tensor(3.0), r"a 0-d tensor \(one number\)"),
                          (np.float64(3.0), "the number np.float64"), (np.array(3.0), "a 0-d tensor")):
        for call, name in ((L.radius, "radius"), (L.flip_time, "flip_time"), (L.half_aperture, "half_aperture"),
                           (L.add_time, "add_time"), (L.time_coordinate, "time_coordinate"), (L.expmap0, "expmap0"),
                           (lambda v: L.squared_lorentz_distance(v, v), "squared_lorentz_distance")):
            with pytest.raises(TypeError, match=rf"^{name} takes a tensor or NumPy array of .*; got {named}"):
                call(number)


def test_points_that_cannot_be_paired_are_named():
    x, y = L.expmap0(torch.randn(4, 8) * 0.3), L.expmap0(torch.randn(3, 8) * 0.3)
    with pytest.raises(ValueError, match="for every pair of rows use pairwise_distance"):
        L.distance(x, y)
    with pytest.raises(ValueError, match="9 and 7 coordinates"):
        L.distance(L.expmap0(torch.randn(2, 8)), L.expmap0(torch.randn(2, 6)))
    with pytest.raises(ValueError, match="9 and 7 coordinates"):
        L.pairwise_distance(L.expmap0(torch.randn(2, 8)), L.expmap0(torch.randn(2, 6)))
    with pytest.raises(TypeError, match="not a list"):
        L.expmap0([0.1, 0.2, 0.3])
    assert L.pairwise_distance(x, y).shape == (4, 3)


# ----------------------------------------------------------------------------------------------------------------
# Wrong inputs are refused in one line naming the function; valid ones, far out and in float32, are not
# ----------------------------------------------------------------------------------------------------------------


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_wrong_arguments_are_refused_naming_the_function_and_the_problem(seed, dtype, c):
    """What costs no pass over the data (numbers given as arguments, types, shapes) is checked by every function."""
    x = random_points(seed, 6, 8, c, dtype)
    mask = torch.ones(2, 3, dtype=dtype)
    refused = [  # (call, exception, pattern the message must match)
        # Numbers given as arguments: p finite, the cone's min_radius finite and > 0 (a tensor's values are not read).
        *[(lambda p=p: L.outward_einstein_midpoint(x.view(2, 3, 9), mask, p=p, c=c), ValueError,
           r"^outward_einstein_midpoint: p must be a finite number") for p in (math.nan, math.inf, -math.inf)],
        *[(lambda k=k: L.half_aperture(x, c, min_radius=k), ValueError,
           r"^half_aperture: min_radius must be a finite number > 0")
          for k in (0.0, -0.1, math.nan, math.inf)],
        (lambda: L.entailment_violation(x, x, c, min_radius=-0.1), ValueError, "^entailment_violation: min_radius"),
        (lambda: L.tangent_mean(x, c), TypeError, r"^tangent_mean: mask must be None or a tensor .* c=\.\.\."),
        # Scores: ids instead of scores.
        (lambda: L.distance_from_inner(torch.arange(6), c), TypeError, r"^distance_from_inner .*not the ids"),
        # Shapes and types, named instead of torch's own broadcasting / index errors.
        (lambda: L.inner(x[:3], x[:2]), ValueError, r"^inner pairs matching rows, .* use pairwise_inner"),
        (lambda: L.inner(x, x[:, :5]), ValueError, r"^inner: the points have 9 and 5 coordinates"),
        (lambda: L.pairwise_inner(x[0], x[1]), ValueError, r"^pairwise_inner pairs every row .* use inner"),
        (lambda: L.pairwise_distance(x[0], x[1], c), ValueError, r"^pairwise_distance pairs every row .* use distance"),
        (lambda: L.pairwise_distance(x.view(2, 3, 9), x.view(3, 2, 9), c), ValueError,
         r"^pairwise_distance: the leading \(batch\) dimensions"),
        *[(lambda d=d: L.origin(d, c), TypeError, r"^origin\(dim, c\): dim is the space dimension d, an int")
          for d in (3.0, "3", None, True)],
        # A mask that does not mark the points of x; an empty set.
        *[(lambda f=f: f(x.view(2, 3, 9), mask[:, :2], c=c), ValueError,
           rf"^{name}: the mask \(2, 2\) does not mark the points of x \(2, 3, 9\)")
          for name, f in (("einstein_midpoint", L.einstein_midpoint), ("tangent_mean", L.tangent_mean))],
        (lambda: L.centroid(x[:0], None, c), ValueError, r"^centroid: takes sets of points .* N >= 1"),
    ]
    for call, exception, pattern in refused:
        with pytest.raises(exception, match=pattern):
            call()
            pytest.fail(f"accepted, expected {exception.__name__} matching {pattern!r}")


def public_calls(x: torch.Tensor, c: float) -> dict[str, tuple]:
    """A valid call of every public function (but ``check_curvature``, the check itself): name -> (function, args);
    the first argument is what the user hands in."""
    y, sets, mask = x.flip(0), x.view(2, 3, -1), torch.ones(2, 3, dtype=x.dtype)
    calls = {
        "origin": (L.origin, (x.shape[-1] - 1,)), "add_time": (L.add_time, (x[:, 1:],)),
        "time_coordinate": (L.time_coordinate, (x[:, 1:],)),
        "expmap0": (L.expmap0, (x[:, 1:],)), "from_poincare": (L.from_poincare, (0.1 * x[:, 1:] / x[:, :1],)),
        "distance_from_inner": (L.distance_from_inner, (L.inner(x, y),)), "project": (L.project, (x,)),
        "flip_time": (L.flip_time, (x,)), "radius": (L.radius, (x,)), "inner": (L.inner, (x, y)),
        "projection_factor": (L.projection_factor, (x[:, :1], x[:, 1:].norm(dim=-1, keepdim=True))),
        "pairwise_inner": (L.pairwise_inner, (x, y)), "centroid": (L.centroid, (sets,)),
        "outward_einstein_midpoint": (L.outward_einstein_midpoint, (sets, mask)),
        "einstein_midpoint": (L.einstein_midpoint, (sets, mask)), "tangent_mean": (L.tangent_mean, (sets, mask)),
    }
    calls.update({name: (getattr(L, name), (x,)) for name in ("distance_to_origin", "logmap0", "to_poincare",
                                                              "half_aperture", "check_point")})
    calls.update({name: (getattr(L, name), (x, y)) for name in ("distance", "pairwise_distance",
                                                                "squared_lorentz_distance", "exterior_angle",
                                                                "entailment_violation")})
    return calls


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_every_public_function_names_itself_for_bad_input_not_a_helper(seed, dtype, c):
    """A bad curvature was named by no function at all. Every bad argument of every public function (its type, its
    shape, a curvature given as a number; values for check_point) is refused by a message that starts with the name of
    the function the user called."""
    x = random_points(seed, 6, 8, c, dtype, max_distance=5.0)
    calls = public_calls(x, c)
    # A new public function joins this test.
    assert set(calls) == set(L.__all__) - {"check_curvature"}
    euclidean = torch.randn(6, 9, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    for name, (function, args) in calls.items():
        first, rest = args[0], args[1:]
        bad_calls = [((3.0, *rest), {})]  # a number where vectors belong (a 0-d tensor is one score)
        if name != "distance_from_inner":
            bad_calls.append(((torch.tensor(3.0), *rest), {}))
        if name != "origin":
            bad_calls.append(((first.long(), *rest), {}))  # integer ids instead of vectors
        if name == "check_point":
            bad_calls.append(((euclidean.view(first.shape), *rest), {}))
            bad_calls.append(((L.flip_time(first), *rest), {}))  # sign-flipped queries
        if len(args) == 2 and name not in ("pairwise_inner", "pairwise_distance") and first.shape == args[1].shape:
            bad_calls.append(((first, args[1][:2]), {}))  # rows that do not pair up
        if "c" in inspect.signature(function).parameters:
            bad_calls += [(args, {"c": bad}) for bad in (-1.0, 0.0, math.nan, "1.0", torch.full((2,), c))]
        for bad_args, bad_kwargs in bad_calls:
            with pytest.raises((TypeError, ValueError)) as refused:
                function(*bad_args, **bad_kwargs)
                pytest.fail(f"{name} accepted {bad_args} {bad_kwargs}")
            assert re.match(rf"{name}\b", str(refused.value)), (name, str(refused.value))
    for bad in (math.nan, math.inf):
        poisoned = x.clone()
        poisoned[-1, -1] = bad
        with pytest.raises(ValueError, match=r"^check_point: 1 of 6 vectors hold NaN or inf"):
            L.check_point(poisoned, c)


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_valid_inputs_up_to_radius_15_are_accepted(seed, dtype, c):
    """Valid inputs far from the origin give finite results, in float32 too, and check_point leaves room for what
    rounding does to them."""
    x = random_points(seed, 12, 8, c, dtype)  # radius up to 15 (21 sqrt(c) for c = 0.5)
    g = torch.Generator().manual_seed(seed)
    sets, mask = x.view(3, 4, 9), (torch.rand(3, 4, generator=g) < 0.7).index_fill(1, torch.tensor([0]), True)
    for m in (mask, mask.to(dtype), mask.long()):  # booleans, floats and integer attention masks
        for pooled in (L.outward_einstein_midpoint(sets, m, p=2.0, c=c), L.einstein_midpoint(sets, m, c=c),
                       L.tangent_mean(sets, m, c=c)):
            assert torch.isfinite(pooled).all()
    weights = torch.rand(3, 4, generator=g, dtype=dtype).index_fill(1, torch.tensor([1]), 0)  # zeros are allowed
    assert torch.isfinite(L.centroid(sets, weights, c)).all()
    assert torch.isfinite(L.logmap0(x, c)).all() and torch.isfinite(L.distance_to_origin(x, c)).all()
    L.check_point(x, c)
    # Stored points are light-like or slightly space-like by rounding beyond ~5 sqrt(c) in float32; still accepted.
    assert L.project(x, c).shape == x.shape
    # What scaled dot-product attention gives rows of all padding passes through: zero.
    assert (L.project(torch.zeros(2, 9, dtype=dtype), c) == 0).all()
    # A float32 point far out rounds onto (or just outside) the boundary of the ball: accepted, mapped far away.
    assert L.from_poincare(L.to_poincare(x, c), c).shape == x.shape
    assert L.from_poincare(L.to_poincare(x.double(), c).to(dtype), c).shape == x.shape
    # Float32 scores of nearby far points can be positive (see test_float32_scores_of_far_points_can_be_positive).
    scores = L.flip_time(x) @ x.T
    distances = L.distance_from_inner(torch.cat([scores, torch.full((12, 1), -math.inf, dtype=dtype)], 1), c)
    assert (distances[:, :-1] >= 0).all() and (distances[:, -1] == math.inf).all()
    assert torch.isfinite(L.half_aperture(x, c, min_radius=torch.rand(12, generator=g, dtype=dtype) + 1e-3)).all()
    # NumPy inputs take the same route.
    assert np_finite(L.logmap0(x.numpy(), c)) and np_finite(L.to_poincare(x.numpy(), c))
    # Space coordinates, tangent vectors and the vector (sqrt(c), 0, ..., 0) lift; inner products of any vectors.
    tangent = torch.randn(12, 9, generator=g, dtype=dtype)
    axis = torch.zeros(2, 9, dtype=dtype).index_fill(1, torch.tensor([0]), math.sqrt(c))
    for v in (x[:, 1:], tangent, axis):
        assert torch.isfinite(L.add_time(v, c)).all() and torch.isfinite(L.expmap0(v, c)).all()
        # The time coordinate alone is add_time's first column (the same formula, not a second one).
        assert torch.equal(L.time_coordinate(v, c), L.add_time(v, c)[..., :1])
    assert torch.isfinite(L.pairwise_inner(x, x)).all() and torch.isfinite(L.inner(L.flip_time(x), L.flip_time(x))).all()
    assert torch.isfinite(L.inner(x - x.flip(0), x)).all()  # differences of points pair with anything


def np_finite(array) -> bool:
    return bool(torch.isfinite(torch.from_numpy(array)).all())


@pytest.mark.parametrize("c", CURVATURES)
def test_float32_scores_of_far_points_can_be_positive(c):
    """Why distance_from_inner does not refuse positive scores although <x, y>_L <= -c < 0 for points: the rounding
    error of a float32 inner product is ~eps32 x_0 y_0, more than c from radius ~9 sqrt(c) on."""
    x = random_points(0, 200, 8, c, torch.float32, max_distance=15.0)
    scores = (L.flip_time(x) * x).sum(-1)  # each point with itself: -c exactly in exact arithmetic
    positive = scores > 0
    assert positive.any()
    # They clamp to distance ~0 (rounding as often errs the other way, which no rule could detect either).
    assert (L.distance_from_inner(scores, c)[positive] < 1e-6).all()


@PROPERTY
@given(seed=seeds, dtype=dtypes, c=curvatures)
def test_projection_factor_is_what_project_multiplies_by(seed, dtype, c):
    """A combination of points, kept as (time, space) parts (HyTE-FH's residual stream), projects as the whole."""
    x = random_points(seed, 6, 8, c, dtype, max_distance=4.0)
    v = x + 0.5 * x.flip(0)  # a positive combination of points: time-like, off the hyperboloid
    factor = L.projection_factor(v[:, :1], v[:, 1:].norm(dim=-1, keepdim=True), c)
    torch.testing.assert_close(v * factor, L.project(v, c))
    assert on_hyperboloid_error(v * factor, c).max() < RTOL[dtype]


@pytest.mark.parametrize("c", CURVATURES)
def test_project_accepts_kmeans_centroids_perturbed_by_a_cluster_split(c):
    """FAISS k-means splits an empty cluster by scaling coordinates by 1 +- 1/1024 (alternating by coordinate); the
    centroids of far clusters, nearly light-like, then turn slightly space-like. HyperbolicIndex projects them."""
    x = random_points(1, 64, 8, c, torch.float64, max_distance=15.0)
    mean = x.view(8, 8, 9).mean(1)
    sign = torch.tensor([(-1) ** j for j in range(9)], dtype=torch.float64)
    for perturbed in (mean * (1 + sign / 1024), mean * (1 - sign / 1024)):
        assert torch.isfinite(L.project(perturbed, c)).all()


def test_the_geometry_reads_no_values_so_it_exports_and_runs_on_meta_tensors():
    """No function but check_point reads values (a host sync, a graph break): torch.export and meta tensors work."""

    class Pool(torch.nn.Module):
        def forward(self, x, mask, scores):
            pooled = L.outward_einstein_midpoint(x, mask, p=1.0, c=1.0)
            return (L.project(pooled + pooled, 1.0), L.logmap0(pooled), L.to_poincare(pooled),
                    L.distance_from_inner(scores), L.half_aperture(pooled, 1.0, torch.ones(2) * 0.1))

    x = L.expmap0(torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0)))
    arguments = (x, torch.ones(2, 3), -torch.ones(2, 2) * 2)
    exported = torch.export.export(Pool(), arguments)
    for got, expected in zip(exported.module()(*arguments), Pool()(*arguments)):
        torch.testing.assert_close(got, expected)
    # Meta tensors have no values to read.
    meta = torch.ones(2, 3, 5, device="meta")  # not points, not time-like, outside the ball: nothing to see
    for call in (L.project, L.logmap0, L.to_poincare, L.distance_to_origin, L.centroid,
                 lambda m: L.tangent_mean(m, torch.full((2, 3), 0.5, device="meta")),
                 lambda m: L.half_aperture(m, 1.0, torch.zeros(3, device="meta")), L.distance_from_inner,
                 lambda m: L.from_poincare(m[..., 1:])):
        assert call(meta).device.type == "meta"


def test_model_forward_reads_no_values_and_check_point_checks_on_request():
    """Checks at the boundary: a HyTE model's forward pass reads none of its tensors' values (each check was a host
    sync per call), shown by running it on meta tensors, which have none; check_point checks any points when asked."""
    import hyte

    config = dict(vocab_size=40, hidden_size=18, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    for model in (hyte.HyTEFHModel(hyte.HyTEFHConfig(**config)), hyte.EucBERTModel(hyte.EucBERTConfig(**config))):
        model = model.eval().to("meta")
        with torch.no_grad():
            output = model(input_ids=torch.randint(0, 40, (3, 7)).to("meta"),
                           attention_mask=torch.ones(3, 7, device="meta"))
        assert output.pooler_output.shape == (3, 18)
    points = L.expmap0(torch.randn(4, 5, dtype=torch.float64), 2.0)
    L.check_point(points, 2.0)
    with pytest.raises(ValueError, match=r"check_point: 1 of 4 vectors hold NaN or inf"):
        L.check_point(torch.cat([points[:3], torch.full((1, 6), float("nan"), dtype=torch.float64)]), 2.0)
    with pytest.raises(ValueError, match="check_point"):  # another curvature's points
        L.check_point(points, 0.5)
