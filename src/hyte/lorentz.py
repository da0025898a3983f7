"""Lorentz-model geometry as pure functions.

Storage convention (every function in HyTE follows it):

* A point of the hyperboloid H^d_c is a vector x = (x_0, x_s) in R^{d+1}, **time coordinate first**.
* Lorentz inner product: <x, y>_L = -x_0 y_0 + x_s . y_s.
* Curvature is stored as a positive number ``c``: the hyperboloid is <x, x>_L = -c with x_0 > 0, so the
  sectional curvature is K = -1/c. (The HypRAG paper writes <x, x>_L = 1/K, i.e. c = -1/K. geoopt's ``k`` and
  HyperCore's ``c`` mean the same as ours; MERU's ``curv`` is |K| = 1/c.) Functions take c as a Python number or a
  one-element tensor (a model's learnable curvature; gradients flow through it): one curvature for every point.
* The origin is o = (sqrt(c), 0, ..., 0). A point is built from its space part: x_0 = sqrt(||x_s||^2 + c).
* The radius r(x) = x_0 orders points by geodesic distance to the origin, d(o, x) = sqrt(c) asinh(||x_s|| / sqrt(c)).
* Geodesic distance: d(x, y) = sqrt(c) arccosh(-<x, y>_L / c).

Precision: the Lorentz norm of a point far from the origin is a small difference of two huge numbers
(-x_0^2 + ||x_s||^2 = -c while x_0^2 ~ c cosh^2(r / sqrt(c))). Functions that must evaluate it (distances,
re-projection, centroids) do so in float64 and, where they combine points, re-derive each point's time
coordinate from its space part first, so a float32 point at radius 15 (x_0 ~ 1.6e6) is handled exactly as well as
its space coordinates allow. Results come back in the input dtype.

All functions broadcast over leading dimensions; ``D = d + 1`` is the ambient dimension. They take torch tensors or
NumPy arrays (e.g. FAISS search scores): given any NumPy array they return NumPy, otherwise a tensor.

Checks: the functions check what costs no pass over the data (types, shapes, a curvature given as a number) and
never read values: no device sync, nothing in the way of torch.compile, the same behaviour on every device. Values
are checked where users hand them over (the indexes check vectors; ``encode`` texts) and, on request, by
``check_point`` (as geoopt's ``check_point``): points that are not points of H_c (a sign-flipped query, a Euclidean
vector, another curvature's points) give meaningless numbers here, not errors.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "add_time",
    "centroid",
    "check_curvature",
    "check_point",
    "distance",
    "distance_from_inner",
    "distance_to_origin",
    "einstein_midpoint",
    "entailment_violation",
    "expmap0",
    "exterior_angle",
    "flip_time",
    "from_poincare",
    "half_aperture",
    "inner",
    "logmap0",
    "origin",
    "outward_einstein_midpoint",
    "pairwise_distance",
    "pairwise_inner",
    "project",
    "projection_factor",
    "radius",
    "squared_lorentz_distance",
    "tangent_mean",
    "time_coordinate",
    "to_poincare",
]

# Smallest |<v, v>_L| accepted when dividing by a Lorentz norm: keeps a (degenerate) light-like or zero vector
# from dividing by zero. Real time-like vectors in float64 are many orders of magnitude above it.
_MIN_LORENTZ_NORM_SQ = 1e-15

# Keeps arcsin / arccos arguments inside the open interval (-1, 1): their derivatives are infinite at +-1, and a
# cosine rounded to 1 + 1e-16 would give NaN. The angle error this introduces is below 1e-4 rad.
_ANGLE_EPS = 1e-7

# Below this geodesic distance two points count as one for entailment_violation (their exterior angle is undefined);
# well above float64 rounding of the chord (~1e-8 at radius 10 sqrt(c)), far below any distance between two texts.
_MIN_CONE_DISTANCE = 1e-6

# Smallest Euclidean norm accepted when normalising a direction (x_s / ||x_s||): the direction of the zero vector is
# arbitrary, and the factor multiplying it is zero there, so any finite value gives the right (zero) result.
_MIN_DIRECTION_NORM = 1e-15

# Smallest relative slack of check_point's comparison of x_0 with the one a point's space part gives.
_MIN_ROUNDING_SLACK = 1e-3


def _accepts_numpy(function):
    """Run ``function`` on tensors made from its NumPy arguments and return NumPy if it got any.

    Its curvature argument ``c`` is checked here, once, in the name of the function the user called: the functions
    below convert c without checking it (a check inside a helper would name the helper)."""
    parameters = list(inspect.signature(function).parameters)
    c_position = parameters.index("c") if "c" in parameters else None

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if args and isinstance(args[0], (list, tuple)):
            raise TypeError(f"{function.__name__} takes a tensor or a NumPy array of points, not a "
                            f"{type(args[0]).__name__}: wrap it with torch.tensor(...) or np.asarray(...)")
        numpy = any(isinstance(value, np.ndarray) for value in (*args, *kwargs.values()))
        if numpy:
            args, kwargs = tuple(map(_as_tensor, args)), {name: _as_tensor(value) for name, value in kwargs.items()}
        if c_position is not None and ("c" in kwargs or len(args) > c_position):
            _check_curvature_argument(kwargs["c"] if "c" in kwargs else args[c_position], function.__name__)
        result = function(*args, **kwargs)
        return result.numpy(force=True) if numpy else result

    return wrapper


def _as_tensor(value):
    # np.require copies read-only arrays (e.g. memory-mapped .npy files), which torch.from_numpy warns about.
    return torch.from_numpy(np.require(value, requirements="W")) if isinstance(value, np.ndarray) else value


def _check_vectors(x, name: str, what: str = "points (..., D)") -> None:
    """Refuse a number or a 0-d tensor where vectors belong: indexing x[..., 0] would fail with Python's or torch's
    own message, naming neither the function nor what it takes."""
    if not isinstance(x, Tensor) or x.ndim < 1:
        got = ("a 0-d tensor (one number)" if isinstance(x, Tensor)
               else f"the number {x!r}" if isinstance(x, numbers.Number) else type(x).__name__)
        raise TypeError(f"{name} takes a tensor or NumPy array of {what}; got {got}")
    # Integer points would fail deep inside with torch's message ("linalg.vector_norm: Expected a floating point
    # or complex tensor"), naming neither the function nor the fix.
    if not x.is_floating_point():
        raise TypeError(f"{name} takes floating-point {what}; got {x.dtype} values: convert them (x.float(), "
                        "or np.asarray(x, dtype=np.float32))")


def check_curvature(c: float | Tensor, name: str | None = None) -> None:
    """Raise a clear ``ValueError`` unless ``c`` is a finite positive number (c > 0, K = -1/c); ``name``: the
    function whose argument c is, for the message."""
    value = float(c.detach().min()) if isinstance(c, Tensor) else float(c)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{f'{name}: ' if name else ''}curvature c must be a finite number > 0 (the hyperboloid is <x,x>_L = -c, "
            f"sectional curvature K = -1/c); got {value}. For K = -1 use c = 1."
        )


def _check_curvature_argument(c: float | Tensor, name: str) -> None:
    """Refuse a curvature argument of public function ``name`` that is not a number > 0 (NaN downstream) or a
    one-element tensor (whose value is not read: a model's own c is kept positive by its log parametrisation)."""
    if not isinstance(c, Tensor):
        if not isinstance(c, numbers.Real):
            raise TypeError(f"{name}: curvature c must be a number or a tensor; got {type(c).__name__} {c!r}")
        check_curvature(c, name)
        return
    # A tensor of several curvatures would broadcast against the points and silently reshape the result
    # (distance of (3, D) points with c of shape (3, 1) gave a (3, 3) matrix).
    if c.numel() != 1:
        raise ValueError(f"{name}: curvature c must be a number or a one-element tensor (one curvature for every "
                         f"point); got a tensor of shape {tuple(c.shape)}")


def _curvature_like(c: float | Tensor, x: Tensor) -> Tensor:
    """c, checked by the public function's ``_accepts_numpy``, as a tensor that broadcasts against x[..., :1] and has
    x's dtype and device."""
    if not isinstance(c, Tensor):
        return torch.as_tensor(c, dtype=x.dtype, device=x.device)
    c = c.reshape(()) if c.ndim else c
    # A model's c already matches its points: no conversion op (HyTE-FH calls this a dozen times per layer).
    return c if c.dtype == x.dtype and c.device == x.device else c.to(dtype=x.dtype, device=x.device)


def origin(dim: int, c: float = 1.0, *, dtype=torch.float32, device=None) -> Tensor:
    """The origin o = (sqrt(c), 0, ..., 0) of H^dim_c, shape (dim + 1,)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"origin(dim, c): dim is the space dimension d, an int >= 1 (the origin has d + 1 "
                        f"coordinates); got {type(dim).__name__} {dim!r}")
    _check_curvature_argument(c, "origin")
    if dim < 1:
        raise ValueError(f"dim is the space dimension, >= 1; got {dim}")
    o = torch.zeros(dim + 1, dtype=dtype, device=device)
    o[0] = math.sqrt(c)
    return o


@_accepts_numpy
def add_time(space: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Lift space coordinates onto the hyperboloid: (..., d) -> (..., d + 1), x_0 = sqrt(||x_s||^2 + c).

    Computed as hypot(||x_s||, sqrt(c)): two fused kernels, no overflow of ||x_s||^2, no clamp needed (>= sqrt(c)).
    """
    _check_vectors(space, "add_time", "space coordinates (..., d)")
    return _lift(space, c)


@_accepts_numpy
def time_coordinate(space: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """The time coordinate alone, (..., d) -> (..., 1): ``add_time`` without the join, for code that keeps a point's
    time and space parts apart (HyTE-FH's residual stream)."""
    _check_vectors(space, "time_coordinate", "space coordinates (..., d)")
    return _time(space, c)


def _time(space: Tensor, c: float | Tensor) -> Tensor:
    return torch.hypot(torch.linalg.vector_norm(space, dim=-1, keepdim=True), torch.sqrt(_curvature_like(c, space)))


def _lift(space: Tensor, c: float | Tensor) -> Tensor:
    return torch.cat([_time(space, c), space], dim=-1)


@_accepts_numpy
def inner(x: Tensor, y: Tensor, keepdim: bool = False) -> Tensor:
    """Elementwise Lorentz inner product <x, y>_L of (..., D) tensors -> (...,) (or (..., 1) with keepdim).

    Any vectors, not only points (differences of points, tangent vectors). A sign-flipped query's plain dot product
    with a point already is their inner product (see ``flip_time``): do not pass flipped queries here.
    """
    _check_pairable(x, y, "inner", "pairwise_inner")
    product = x * y
    result = product[..., 1:].sum(-1, keepdim=True) - product[..., :1]
    return result if keepdim else result.squeeze(-1)


@_accepts_numpy
def flip_time(x: Tensor) -> Tensor:
    """Negate the time coordinate: (x_0, x_s) -> (-x_0, x_s), so that flip_time(q) . x == <q, x>_L.

    This is how queries are emitted for retrieval: a plain inner-product index over document points then ranks by
    the Lorentz inner product, which orders documents exactly like the geodesic distance (see ``distance``).
    """
    _check_vectors(x, "flip_time", "vectors (..., D)")
    return torch.cat([-x[..., :1], x[..., 1:]], dim=-1)


@_accepts_numpy
def pairwise_inner(x: Tensor, y: Tensor) -> Tensor:
    """All Lorentz inner products between rows: (..., N, D) x (..., M, D) -> (..., N, M); any vectors, as ``inner``."""
    _check_pairable(x, y, "pairwise_inner", "inner", rows=True)
    return flip_time(x) @ y.transpose(-1, -2)


@_accepts_numpy
def distance_from_inner(lorentz_inner: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Geodesic distance from a Lorentz inner product: d = sqrt(c) arccosh(-<x, y>_L / c).

    Evaluated in float64. The argument is >= 1 in exact arithmetic; rounding can push it slightly below 1 for
    (nearly) identical points, so it is clamped at 1 + 1e-15: the distance there is ~0, and the clamp also keeps
    the gradient finite (arccosh has an infinite slope at 1).

    Refused: integer input (FAISS ids instead of scores). Scores above -c give distance ~0 (the clamp): although
    <x, y>_L <= -c < 0 for points, the rounding error of a float32 inner product is ~eps32 x_0 y_0, which exceeds c
    from radius ~9 sqrt(c) on (x_0^2 > 1 / eps32), so no sign or size rule can tell a misused cosine similarity from
    a valid far-out score. -inf (index padding) gives distance inf.
    """
    if not isinstance(lorentz_inner, Tensor):
        raise TypeError(f"distance_from_inner takes a tensor or NumPy array of Lorentz inner products; got "
                        f"{type(lorentz_inner).__name__}: wrap it with torch.tensor(...) or np.asarray(...)")
    if not lorentz_inner.is_floating_point():
        raise TypeError(f"distance_from_inner takes Lorentz inner products (floating-point scores); got a "
                        f"{lorentz_inner.dtype} tensor: pass the scores of a search (its first output), not the ids")
    c64 = _curvature_like(c, lorentz_inner).double()
    ratio = -lorentz_inner.double() / c64
    return (torch.sqrt(c64) * torch.acosh(ratio.clamp_min(1.0 + 1e-15))).to(lorentz_inner.dtype)


def _check_pairable(x: Tensor, y: Tensor, name: str, other: str | None = None, *, rows: bool = False) -> None:
    """A clear error for inputs ``name`` cannot pair up (torch's own names no function and no remedy).

    ``rows``: ``name`` pairs every row of x with every row of y, (..., N, D) x (..., M, D), instead of matching rows;
    ``other`` is the function doing the other kind of pairing, if any.
    """
    for value in (x, y):
        _check_vectors(value, name, "vectors (..., D)")
    if rows and min(x.ndim, y.ndim) < 2:
        raise ValueError(f"{name} pairs every row of (..., N, D) with every row of (..., M, D), but got shapes "
                         f"{tuple(x.shape)} and {tuple(y.shape)}; add a row dimension (x[None]) or, for matching "
                         f"points, use {other}")
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"{name}: the points have {x.shape[-1]} and {y.shape[-1]} coordinates; both must be points "
                         "of the same hyperboloid")
    try:
        torch.broadcast_shapes(x.shape[:-2], y.shape[:-2]) if rows else torch.broadcast_shapes(x.shape, y.shape)
    except RuntimeError:
        if rows:
            raise ValueError(f"{name}: the leading (batch) dimensions of {tuple(x.shape)} and {tuple(y.shape)} do "
                             "not broadcast; rows are paired within matching batches") from None
        raise ValueError(f"{name} pairs matching rows, but got {tuple(x.shape)} and {tuple(y.shape)}"
                         + (f"; for every pair of rows use {other}" if other else "")) from None


def _first(mask: Tensor) -> tuple[int, ...]:
    """Index of the first True of a boolean tensor, for error messages."""
    return tuple(int(i) for i in mask.nonzero()[0])


def _refresh_time64(x: Tensor, c: float | Tensor, name: str) -> Tensor:
    """x in float64 with its time coordinate recomputed from its space part (see the module docstring). Any vector
    becomes a point this way: ``check_point`` tells whether x was one."""
    _check_vectors(x, name)
    return _lift(x[..., 1:].double(), _curvature_like(c, x).double())


@_accepts_numpy
def check_point(x: Tensor, c: float | Tensor = 1.0) -> None:
    """Refuse ``x`` (..., D) unless every vector is a finite point of H_c (its time coordinate the one its space part
    gives, within rounding): ValueError naming how many are off and the first. The value check the other functions
    leave out, on request (one pass over x in float64; a device sync on an accelerator)."""
    _check_vectors(x, "check_point")
    with torch.no_grad():
        x = x.detach()
        off = ~torch.isfinite(x).all(-1)
        if off.any():
            where = f" (first at index {_first(off)})" if off.ndim else ""
            raise ValueError(f"check_point: {int(off.sum())} of {off.numel()} vectors hold NaN or inf{where}; points "
                             "must be finite. Find where they came from (a model with NaN weights, a division by zero)")
        expected_time = _refresh_time64(x, c, "check_point")[..., 0]
        # Relative tolerance: float32 rounding of x_0 is ~1e-7 relative at any radius (float32 points handed over as
        # float64 carry it too); half precision's (16 eps = 0.03 for float16, 0.125 for bfloat16) needs more.
        slack = max(_MIN_ROUNDING_SLACK, 16 * torch.finfo(x.dtype).eps)
        off = ~((x[..., 0].double() - expected_time).abs() / expected_time <= slack)
        if not off.any():
            return
        first = _first(off)
        time, expected = float(x[first + (0,)]), float(expected_time[first])
        c_value = float(c.detach().flatten()[0]) if isinstance(c, Tensor) else float(c)
        # -x_0 matching the expected time: the vector is a point with its time negated, i.e. a query as emitted.
        hint = ("x_0 = -(its point's x_0) there: a sign-flipped query vector (role='query' output); flip it back "
                "with lorentz.flip_time(x)" if abs(-time - expected) <= slack * expected
                else "flip query vectors back with lorentz.flip_time")
        raise ValueError(
            f"check_point: {int(off.sum())} of {off.numel()} vectors are not points of the hyperboloid <x,x>_L = -c "
            f"with c = {c_value:g} (first at index {first}: x_0 = {time:.6g}, the point with that space part has "
            f"x_0 = {expected:.6g}). Pass points with the time coordinate first (an encoder's role='document' "
            f"output, or lorentz.add_time(space, c)), made with this c (the model's config.curvature); {hint}.")


def _check_number(value: float | Tensor, name: str, what: str, *, positive: bool) -> None:
    """Refuse a parameter given as a number that is not finite or, with ``positive``, not > 0 (a tensor's values
    are not read)."""
    if isinstance(value, Tensor):
        return
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name}: {what} must be a number or a tensor; got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name}: {what} must be a finite number{' > 0' if positive else ''}; got {value}")


def _check_mask(mask: Tensor | None, name: str, x: Tensor) -> None:
    """Refuse masks that do not mark the N points of every set of x (..., N, D): their shape, not their values (a
    mask holds 0 for padding, 1 per point; other values are not read as such and act as weights)."""
    if mask is not None and not isinstance(mask, Tensor):
        raise TypeError(f"{name}: mask must be None or a tensor (..., N) of 0/1 or booleans; got "
                        f"{type(mask).__name__} {mask!r} (the curvature goes by keyword: c=...)")
    if mask is not None and isinstance(x, Tensor):
        try:
            fits = torch.broadcast_shapes(mask.shape, x.shape[:-1]) == x.shape[:-1]
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"{name}: the mask {tuple(mask.shape)} does not mark the points of x "
                             f"{tuple(x.shape)}: it must have shape (..., N) = {tuple(x.shape[:-1])}, one 0/1 per "
                             "point (the attention mask of the token points)")


@_accepts_numpy
def distance(x: Tensor, y: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Geodesic distance between matching points: (..., D), (..., D) -> (...,).

    Uses d = 2 sqrt(c) asinh(||x - y||_L / (2 sqrt(c))) with ||x - y||_L^2 = <x-y, x-y>_L = 4c sinh^2(d / 2 sqrt(c)):
    the difference x - y is formed first, so nearby points far from the origin keep their digits (the arccosh form
    cancels at the scale of x_0^2; it is what ``pairwise_distance`` uses, where forming all differences would cost
    N x M x D memory). ||x - y||_L^2 >= 0 for points of the hyperboloid; rounding can make it slightly negative,
    hence the clamp, whose tiny floor also keeps the gradient of the square root finite at x = y.
    """
    return _distance(x, y, c, "distance")


def _distance(x: Tensor, y: Tensor, c: float | Tensor, name: str) -> Tensor:
    """``distance``, its errors naming the public function ``name`` that was called."""
    _check_pairable(x, y, name, "pairwise_distance")
    difference = _refresh_time64(x, c, name) - _refresh_time64(y, c, name)
    chord = torch.sqrt(inner(difference, difference).clamp_min(1e-30))
    two_sqrt_c = 2 * torch.sqrt(_curvature_like(c, difference).double())
    return (two_sqrt_c * torch.asinh(chord / two_sqrt_c)).to(x.dtype)


@_accepts_numpy
def pairwise_distance(x: Tensor, y: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """All geodesic distances between rows: (..., N, D) x (..., M, D) -> (..., N, M)."""
    _check_pairable(x, y, "pairwise_distance", "distance", rows=True)
    x64, y64 = _refresh_time64(x, c, "pairwise_distance"), _refresh_time64(y, c, "pairwise_distance")
    return distance_from_inner(pairwise_inner(x64, y64), c).to(x.dtype)


@_accepts_numpy
def squared_lorentz_distance(x: Tensor, y: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Squared Lorentzian distance d_L^2 = ||x - y||_L^2 = -2c - 2<x, y>_L of matching points, (..., D) -> (...,).

    Not the squared geodesic distance; it is what the attention logits use. Clamped at 0 because rounding can make
    it slightly negative for identical points.
    """
    name = "squared_lorentz_distance"
    _check_pairable(x, y, name)
    x64, y64 = _refresh_time64(x, c, name), _refresh_time64(y, c, name)
    value = -2 * _curvature_like(c, x).double() - 2 * inner(x64, y64)
    return value.clamp_min(0).to(x.dtype)


@_accepts_numpy
def radius(x: Tensor) -> Tensor:
    """Radial depth r(x) = x_0, (..., D) -> (...,). Monotone in the distance to the origin (a sign-flipped query's is
    negative: flip it back first)."""
    _check_vectors(x, "radius")
    return x[..., 0]


@_accepts_numpy
def distance_to_origin(x: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """d(o, x) = sqrt(c) asinh(||x_s|| / sqrt(c)), (..., D) -> (...,).

    The asinh form uses only the space part, so it is accurate both near the origin (where arccosh(x_0 / sqrt(c))
    loses all digits) and far from it.
    """
    _check_vectors(x, "distance_to_origin")
    sqrt_c = torch.sqrt(_curvature_like(c, x))
    return sqrt_c * torch.asinh(x[..., 1:].norm(dim=-1) / sqrt_c)


@_accepts_numpy
def project(v: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Pi_c: rescale a time-like ambient vector onto the hyperboloid, (..., D) -> (..., D).

    Pi_c(v) = sqrt(c) v / sqrt(|<v, v>_L|), evaluated in v's dtype: the input's own time coordinate is used, so its
    Lorentz norm is only as accurate as storage allows (eps x_0^2 << c: up to radius ~5 sqrt(c) for float32
    points, ~14 sqrt(c) for float64), and computing in a wider dtype would not help. ``centroid`` and OEM pooling
    re-derive the time of their inputs and are accurate further out. Pass time-like vectors with v_0 > 0 (positive
    combinations of points): a space-like v, or one with v_0 <= 0 (a sign-flipped query), has no meaningful
    projection. Within rounding a vector may be light-like or slightly space-like: ``abs`` (as in the paper) and the
    clamp, which keeps a light-like v from dividing by zero, handle those. The zero vector maps to zero, as scaled
    dot-product attention over all-padding rows needs.
    """
    _check_vectors(v, "project", "vectors (..., D)")
    return _project(v, c)


def _project(v: Tensor, c: float | Tensor) -> Tensor:
    return v * _projection_factor(v[..., :1], torch.linalg.vector_norm(v[..., 1:], dim=-1, keepdim=True), c)


@_accepts_numpy
def projection_factor(time: Tensor, space_norm: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """The factor sqrt(c) / sqrt(|<v, v>_L|) by which ``project`` scales a vector v, from its time coordinate v_0
    and the norm of its space part ||v_s||, each (..., 1) -> (..., 1): for callers that keep a point's time and
    space parts apart (HyTE-FH's residual stream)."""
    _check_pairable(time, space_norm, "projection_factor")
    if time.shape[-1] != 1:
        raise ValueError(f"projection_factor takes time coordinates and space norms of shape (..., 1); got "
                         f"{tuple(time.shape)}: pass v[..., :1] and the norm of v[..., 1:] with keepdim=True")
    return _projection_factor(time, space_norm, c)


def _projection_factor(time: Tensor, space_norm: Tensor, c: float | Tensor) -> Tensor:
    # -<v, v>_L = v_0^2 - ||v_s||^2, factored as (v_0 - ||v_s||)(v_0 + ||v_s||), which cancels less.
    norm_sq = ((time - space_norm) * (time + space_norm)).abs().clamp_min(_MIN_LORENTZ_NORM_SQ)
    return torch.sqrt(_curvature_like(c, time)) * torch.rsqrt(norm_sq)


@_accepts_numpy
def expmap0(tangent: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Exponential map at the origin: tangent space part v (..., d) -> point (..., d + 1).

    x_s = sqrt(c) sinh(||v|| / sqrt(c)) v / ||v||, x_0 = sqrt(||x_s||^2 + c). The tangent vector at the origin is
    (0, v); only v is passed. Its length ||v|| is the distance of the result from the origin.

    ||v|| / sqrt(c) is clamped at a dtype-dependent maximum so that x_0^2 stays finite: beyond it the point is not
    representable in that dtype (float32: distance ~43 sqrt(c); callers such as HyTE-H clip norms far below this).
    """
    _check_vectors(tangent, "expmap0", "tangent vectors (..., d)")
    return _expmap0(tangent, c)


def _expmap0(tangent: Tensor, c: float | Tensor) -> Tensor:
    sqrt_c = torch.sqrt(_curvature_like(c, tangent))
    norm = tangent.norm(dim=-1, keepdim=True)
    max_scaled_norm = 0.5 * math.log(torch.finfo(tangent.dtype).max) - 1.0
    scaled = (norm / sqrt_c).clamp(max=max_scaled_norm)
    direction = tangent / norm.clamp_min(_MIN_DIRECTION_NORM)
    return _lift(sqrt_c * torch.sinh(scaled) * direction, c)


@_accepts_numpy
def logmap0(x: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Logarithmic map at the origin: point (..., d + 1) -> tangent space part v (..., d), inverse of expmap0.

    ||v|| = d(o, x) = sqrt(c) asinh(||x_s|| / sqrt(c)) (accurate at every radius, see ``distance_to_origin``).
    """
    _check_vectors(x, "logmap0")
    return _logmap0(x, c)


def _logmap0(x: Tensor, c: float | Tensor) -> Tensor:
    space = x[..., 1:]
    norm = space.norm(dim=-1, keepdim=True)
    sqrt_c = torch.sqrt(_curvature_like(c, x))
    return sqrt_c * torch.asinh(norm / sqrt_c) * space / norm.clamp_min(_MIN_DIRECTION_NORM)


@_accepts_numpy
def to_poincare(x: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Hyperboloid -> Poincare ball of radius sqrt(c): (..., d + 1) -> (..., d), p = sqrt(c) x_s / (x_0 + sqrt(c)).

    Far from the origin p approaches the boundary, where 1 - ||p||^2 / c ~ 4 exp(-r / sqrt(c)): float32 keeps that
    apart from 0 only up to r ~ 14 sqrt(c). Use float64 for round trips of points further out.
    """
    _check_vectors(x, "to_poincare")
    sqrt_c = torch.sqrt(_curvature_like(c, x))
    return sqrt_c * x[..., 1:] / (x[..., :1] + sqrt_c)


@_accepts_numpy
def from_poincare(p: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Poincare ball of radius sqrt(c) -> hyperboloid: x_s = 2 c p / (c - ||p||^2), time recomputed.

    c - ||p||^2 is clamped at a tiny positive value so a point rounded onto the boundary (float32 rounds a point at
    radius 15 to ||p||^2 ~ c (1 + 6e-8)) maps far away instead of to infinity or the other sheet.
    """
    _check_vectors(p, "from_poincare", "Poincare ball points (..., d)")
    c = _curvature_like(c, p)
    gap = (c - p.pow(2).sum(-1, keepdim=True)).clamp_min(torch.finfo(p.dtype).tiny)
    return _lift(2 * c * p / gap, c)


def _check_sets(x: Tensor, name: str) -> None:
    """Refuse shapes a pooling function of sets (..., N, D) would silently turn into the zero vector, which is no
    point: no set dimension, an empty set. (A set whose mask is all padding pools to the origin.)"""
    if x.ndim < 2 or x.shape[-2] == 0:
        raise ValueError(f"{name}: takes sets of points (..., N, D) with N >= 1; got shape {tuple(x.shape)}"
                         + (": the set is empty, there are no points to pool" if x.ndim >= 2
                            else ": one point, no set (add a set dimension: x[None])"))


@_accepts_numpy
def centroid(x: Tensor, weights: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """Weighted Lorentzian centroid Pi_c(sum_i w_i x_i): (..., N, D), weights (..., N) -> (..., D).

    With weights None every point weighs 1. Pass finite weights >= 0, not all zero along N (a negative weight can make
    the sum space-like, all-zero weights sum to the zero vector, which has no projection). Computed in float64
    with each point's time recomputed from its space part (module docstring); float64 resolves the Lorentz norm of
    the sum up to x_0 ~ 1e7 (radius ~14 sqrt(c)); further out the result stays finite but loses accuracy.
    """
    x64 = _refresh_time64(x, c, "centroid")
    _check_sets(x64, "centroid")
    w64 = torch.ones_like(x64[..., 0]) if weights is None else weights.double()
    if weights is not None and (w64.ndim < 1 or x64.ndim < 2 or w64.shape[-1] != x64.shape[-2]):
        raise ValueError(f"centroid: weights must be >= 0, one per point: {x64.shape[-2] if x64.ndim > 1 else 1} "
                         f"points, weights of shape {tuple(w64.shape)}")
    return _project((w64.unsqueeze(-1) * x64).sum(-2), _curvature_like(c, x).double()).to(x.dtype)


@_accepts_numpy
def outward_einstein_midpoint(
    x: Tensor, mask: Tensor | None = None, p: float = 1.0, c: float | Tensor = 1.0
) -> Tensor:
    """Outward Einstein Midpoint OEM_p = Pi_c(sum_i w_i x_{i,0}^p x_i): (..., N, D), mask (..., N) -> (..., D).

    ``mask`` holds the weights w_i, an attention mask: 1 (or True) per token, 0 for padding; None weighs every point
    1. p = 0 is the Einstein midpoint (= the Lorentzian centroid of hyperboloid points); HyTE's default is p = 1, the
    HypRAG reference code's value. The paper's appendix writes the weights as x_0^(p+1) applied to Klein points,
    which is x_0^p on hyperboloid points: its p and ours coincide.

    x_0^p overflows for far points and large p, and Pi_c does not care about a common positive factor, so the
    weights are formed as a softmax of p log x_0 + log w (masked points get log 0 = -inf). A set that is all padding
    pools to the origin, as in ``tangent_mean``.
    """
    return _outward_einstein_midpoint(x, mask, p, c, "outward_einstein_midpoint")


def _outward_einstein_midpoint(x: Tensor, mask: Tensor | None, p: float, c: float | Tensor, name: str) -> Tensor:
    _check_number(p, name, "p", positive=False)
    _check_mask(mask, name, x)
    x64 = _refresh_time64(x, c, name)
    _check_sets(x64, name)
    w64 = torch.ones_like(x64[..., 0]) if mask is None else mask.double()
    empty = w64.sum(-1, keepdim=True) == 0  # (..., 1): sets of only padding
    # A row of -inf (all padding) would give the softmax NaN, in value and gradient: it gets finite logits, and its
    # sum is replaced by the origin's direction below.
    logits = (p * torch.log(x64[..., 0]) + torch.log(w64)).masked_fill(empty, 0.0)
    weights = torch.softmax(logits, dim=-1)
    summed = (weights.unsqueeze(-1) * x64).sum(-2)
    time_axis = summed.new_zeros(summed.shape[-1])
    time_axis[0] = 1.0
    summed = torch.where(empty, time_axis, summed)
    return _project(summed, _curvature_like(c, x).double()).to(x.dtype)


@_accepts_numpy
def einstein_midpoint(x: Tensor, mask: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """The Einstein midpoint, OEM with p = 0: (..., N, D), mask (..., N) -> (..., D)."""
    return _outward_einstein_midpoint(x, mask, 0.0, c, "einstein_midpoint")


@_accepts_numpy
def tangent_mean(x: Tensor, mask: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """expmap0 of the masked mean of logmap0(x_i): the 'naive' tangent-space mean pooling, (..., N, D) -> (..., D).

    A set that is all padding pools to the origin (its mean tangent vector is 0)."""
    _check_mask(mask, "tangent_mean", x)
    _check_vectors(x, "tangent_mean")
    _check_sets(x, "tangent_mean")
    tangent = _logmap0(x, c)
    w = torch.ones_like(tangent[..., 0]) if mask is None else mask.to(tangent.dtype)
    total = w.sum(-1, keepdim=True).clamp_min(1.0)  # all padding: 0 / 1, the origin
    # Padding's points may be anything (a NaN there times 0 would still be NaN): left out, not multiplied by 0.
    tangent = torch.where(w.unsqueeze(-1) > 0, tangent, 0.0)
    return _expmap0((w.unsqueeze(-1) * tangent).sum(-2) / total, c)


# ----------------------------------------------------------------------------------------------------------------
# Entailment cones (Ganea et al. 2018 on the Poincare ball; the Lorentz form of MERU, Desai et al. 2023)
# ----------------------------------------------------------------------------------------------------------------


@_accepts_numpy
def half_aperture(x: Tensor, c: float | Tensor = 1.0, min_radius: float = 0.1) -> Tensor:
    """Half-aperture of the entailment cone at x: (..., D) -> (...,), in radians, in (0, pi/2].

    aperture(x) = arcsin( 2 K sqrt(c) / ||x_s|| ), K = ``min_radius``. The cone of a point narrows as it moves away
    from the origin: general concepts (near the origin) entail wide regions, specific ones narrow regions. Points
    with ||x_s|| <= 2 K sqrt(c) get the widest cone, pi/2 (the argument is clamped below 1). MERU writes
    2K / (||x_s|| sqrt(curv)) with curv = |K_sectional| = 1/c: the same value in this module's convention.
    Scale-invariant: a point of H_c and its rescaling to H_c' (x sqrt(c'/c)) have the same aperture.
    ``min_radius`` must be finite and > 0 (0 would give every cone aperture 0, a negative one a negative angle).
    """
    return _half_aperture(x, c, min_radius, "half_aperture")


def _half_aperture(x: Tensor, c: float | Tensor, min_radius: float | Tensor, name: str) -> Tensor:
    """``half_aperture``, its errors naming the public function ``name`` that was called."""
    _check_vectors(x, name)
    _check_number(min_radius, name, "min_radius", positive=True)
    space_norm = x[..., 1:].norm(dim=-1)
    # ||x_s|| = 0 (the origin) makes the argument infinite; the clamp below turns that into the widest cone.
    argument = 2 * min_radius * torch.sqrt(_curvature_like(c, space_norm)) / space_norm.clamp_min(_MIN_DIRECTION_NORM)
    return torch.asin(argument.clamp(max=1 - _ANGLE_EPS))


@_accepts_numpy
def exterior_angle(x: Tensor, y: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Exterior angle at x between the outward radial ray through x and the geodesic from x to y, (..., D) -> (...,).

    In [0, pi]: 0 when y lies further out on the ray from the origin through x, pi when y lies between x and the
    origin. With t = <x, y>_L / c:

        cos angle = (y_0 + t x_0) / ( ||x_s|| sqrt(t^2 - 1) )

    (MERU's ``oxy_angle`` with curv = 1/c; every sqrt(c) cancels, so the angle does not depend on the scale of the
    hyperboloid). Evaluated in float64 from quantities that do not cancel far from the origin: with the chord
    D = ||x - y||_L^2 (formed from the difference, as in ``distance``), t = -1 - D / 2c, so
    y_0 + t x_0 = (y_0 - x_0) - x_0 D / 2c and t^2 - 1 = (D / 2c)(2 + D / 2c). The textbook form subtracts terms of
    size x_0 y_0 and returns garbage beyond radius ~5 sqrt(c) even in float64; this one keeps small angles to ~1e-3
    rad up to radius ~10 sqrt(c) (the chord's own rounding, ~1e-16 x_0^2, is what remains).

    Float32 *storage* bounds the accuracy far out: a float32 point at radius 14 has its direction known only to
    ~1e-7 x sinh(14) ~ 0.06 in geodesic units, so two stored points on one ray can be ~0.1 rad apart in truth.
    """
    return _exterior_angle(x, y, c, "exterior_angle")


def _exterior_angle(x: Tensor, y: Tensor, c: float | Tensor, name: str) -> Tensor:
    """``exterior_angle``, its errors naming the public function ``name`` that was called."""
    _check_pairable(x, y, name)
    x64, y64 = _refresh_time64(x, c, name), _refresh_time64(y, c, name)
    c64 = _curvature_like(c, x64[..., 0]).double()
    difference = x64 - y64
    half_chord = inner(difference, difference).clamp_min(0) / (2 * c64)  # D / 2c >= 0; rounding can dip below
    x_norm, y_norm = x64[..., 1:].norm(dim=-1), y64[..., 1:].norm(dim=-1)
    time_gap = (y_norm - x_norm) * (y_norm + x_norm) / (x64[..., 0] + y64[..., 0])  # y_0 - x_0 without cancelling
    numerator = time_gap - x64[..., 0] * half_chord
    # t^2 - 1 = sinh^2(d / sqrt(c)) is 0 for y = x, where the angle is undefined; the floor keeps the division and
    # the gradient of sqrt finite (the clamped cosine then gives a finite angle). ||x_s|| = 0 is the origin, whose
    # radial direction is undefined: same treatment.
    sinh_distance = torch.sqrt((half_chord * (2 + half_chord)).clamp_min(1e-30))
    cosine = numerator / (x_norm.clamp_min(_MIN_DIRECTION_NORM) * sinh_distance)
    return torch.acos(cosine.clamp(-1 + _ANGLE_EPS, 1 - _ANGLE_EPS)).to(x.dtype)


@_accepts_numpy
def entailment_violation(general: Tensor, specific: Tensor, c: float | Tensor = 1.0,
                         min_radius: float = 0.1) -> Tensor:
    """How far ``specific`` lies outside the entailment cone of ``general``: (..., D), (..., D) -> (...,) >= 0.

    max(0, exterior_angle(general, specific) - half_aperture(general)), in radians; 0 when the specific point (a
    child concept) is inside its general point's (parent's) cone, which also places it further from the origin.
    """
    name = "entailment_violation"  # what every error names, not the helpers it calls
    angle = _exterior_angle(general, specific, c, name)
    violation = torch.relu(angle - _half_aperture(general, c, min_radius, name).to(angle.dtype))
    # Coincident points: the angle is undefined and its gradient ~1 / (||x_s|| 1e-15) would swamp every other term
    # of a batch; a point entails itself, so the violation is 0 there (masked, which also zeroes its gradient).
    coincident = _distance(general, specific, c, name) < _MIN_CONE_DISTANCE
    return violation.masked_fill(coincident, 0.0)
