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
NumPy arrays (e.g. FAISS search scores): given any NumPy array they return NumPy, otherwise a tensor. Vectors holding
NaN or inf are refused by every function (``distance_from_inner``: NaN and +inf scores; -inf is index padding). Like
every check that reads values, that runs on CPU tensors in eager mode (``_value_checks_apply``: no device sync,
nothing read while compiling, exporting or tracing) and outside ``values_unchecked()``, inside which HyTE's models
run their forward pass: the checks are for what users hand these functions, not for a model's own intermediate
points (``check_point`` checks any points on request, as geoopt's ``check_point`` does).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import numbers
import warnings

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
    "radius",
    "squared_lorentz_distance",
    "tangent_mean",
    "to_poincare",
    "values_unchecked",
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

# Relative slack of ``project``'s time-like check: ||v_s|| <= (1 + slack) v_0 is accepted. Rounding of a stored point
# or of a positive combination of points moves ||v_s|| / v_0 by ~1e-7 in float32 at any radius (beyond ~5 sqrt(c) a
# float32 point is itself light-like or space-like by that much, which ``abs`` then absorbs), and FAISS k-means splits
# an empty cluster by scaling coordinates by 1 +- 1/1024 (ratio up to 1.002; ``LorentzIndex`` projects its IVF
# centroids). The mistakes the check exists for are far outside: a Euclidean embedding has ||v_s|| / |v_0| ~ sqrt(d),
# a sign-flipped query or the zero vector v_0 <= 0.
_TIME_LIKE_SLACK = 1e-2

# Relative slack of distance_from_inner's warning: -<x, y>_L / c >= 1 for points; float32 scores of points near the
# origin round by ~1e-7, far from it by ~eps32 x_0 y_0 (which the warning then names as a cause).
_SCORE_SLACK = 1e-3

# Smallest relative slack of the checks that compare a value with the one a point must have (x_0 with the one its space
# part gives, ||p||^2 with c): float32 points handed over as float64 carry float32 rounding (~1e-7 relative).
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
    # Every public function that takes vectors passes here, so none of them turns NaN or inf into a plausible
    # result without a word (project returned NaN; a new function gets the check by calling this one).
    if _value_checks_apply(x):
        _refuse_nonfinite(x, name, what)


def _refuse_nonfinite(x: Tensor, name: str, what: str) -> None:
    off = ~torch.isfinite(x.detach()).all(-1)
    if off.any():
        where = f" (first at index {_first(off)})" if off.ndim else ""
        raise ValueError(f"{name}: {int(off.sum())} of {off.numel()} vectors hold NaN or inf{where}; {what} must "
                         "be finite. Find where they came from (a model with NaN weights, a division by zero, a "
                         "sequence that is all padding under eager attention)")


def check_curvature(c: float | Tensor, name: str | None = None) -> None:
    """Raise a clear ``ValueError`` unless ``c`` is a finite positive number (c > 0, K = -1/c); ``name``: the
    function whose argument c is, for the message."""
    value = float(c.detach().min()) if isinstance(c, Tensor) else float(c)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{f'{name}: ' if name else ''}curvature c must be a finite number > 0 (the hyperboloid is <x,x>_L = -c, "
            f"sectional curvature K = -1/c); got {value}. For K = -1 use c = 1."
        )


def _float64(x: Tensor) -> Tensor:
    return x if x.dtype == torch.float64 else x.to(torch.float64)


# False inside ``values_unchecked()``: a context variable, so one thread's model forward leaves another thread's
# calls checked.
_CHECK_VALUES = contextvars.ContextVar("hyte_lorentz_check_values", default=True)


@contextlib.contextmanager
def values_unchecked():
    """Run the functions of this module without the checks that read values (finite, on the hyperboloid, time-like):
    HyTE's models run their forward pass inside it, where every point is one the model made itself and a float64
    pass per call would cost throughput. Type and shape checks still run."""
    token = _CHECK_VALUES.set(False)
    try:
        yield
    finally:
        _CHECK_VALUES.reset(token)


def _value_checks_apply(x: Tensor) -> bool:
    """Whether checks that read a tensor's values run: on an accelerator each would be a device sync per call, and
    under torch.compile, torch.export or tracing reading a value breaks the graph, so they run on CPU in eager mode
    (where users call these functions on their own data), never inside ``values_unchecked()`` (a model's forward),
    and model code on a GPU relies on its own parametrisation."""
    return (x.device.type == "cpu" and not torch.compiler.is_compiling() and not torch.jit.is_tracing()
            and _CHECK_VALUES.get())


def _check_curvature_argument(c: float | Tensor, name: str) -> None:
    """Refuse a curvature argument of public function ``name`` that is not a number or a one-element tensor, or not
    > 0 (NaN downstream; a model's own c is kept positive by its log parametrisation)."""
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
    if _value_checks_apply(c):
        check_curvature(c, name)


def _curvature_like(c: float | Tensor, x: Tensor) -> Tensor:
    """c, checked by the public function's ``_accepts_numpy``, as a tensor that broadcasts against x[..., :1] and has
    x's dtype and device."""
    return torch.as_tensor(c.reshape(()) if isinstance(c, Tensor) else c, dtype=x.dtype, device=x.device)


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
    _refuse_points_as_space(space, c, "add_time")
    return _lift(space, c)


def _lift(space: Tensor, c: float | Tensor) -> Tensor:
    """``add_time`` without the input check, for space parts this module computed itself (a point's own space part
    can pass for a point by chance: its first coordinate close to the norm of the others)."""
    time = torch.hypot(torch.linalg.vector_norm(space, dim=-1, keepdim=True), torch.sqrt(_curvature_like(c, space)))
    return torch.cat([time, space], dim=-1)


def _refuse_points_as_space(space: Tensor, c: float | Tensor, name: str) -> None:
    """Refuse points (or flipped queries) passed where space coordinates (..., d) belong: they would silently become
    points of one more dimension. Every row meeting |x_0| = sqrt(c + ||x_s||^2) identifies points; space vectors meet
    it with probability zero, except rows near (+-sqrt(c), 0, ..., 0), which are both the origin and a plausible
    space vector, so those alone never trigger it. Skipped for tensors that require grad (model activations in
    training: they are never points, and the check would cost a pass over every layer's output)."""
    _check_vectors(space, name, "space coordinates (..., d)")
    if (space.shape[-1] < 2 or space.numel() == 0 or space.requires_grad
            or not _value_checks_apply(space)):
        return
    s64 = _float64(space)
    rest = torch.linalg.vector_norm(s64[..., 1:], dim=-1, keepdim=True)  # (..., 1)
    sqrt_c = torch.sqrt(_float64(_curvature_like(c, space)))  # broadcasts against (..., 1)
    expected = torch.hypot(rest, sqrt_c)
    is_point = (s64[..., :1].abs() - expected).abs() <= _rounding_slack(space) * expected
    if bool(is_point.all()) and bool((rest > 1e-3 * sqrt_c).any()):
        flipped = bool((s64[..., 0] < 0).all())
        raise ValueError(
            f"{name} takes space coordinates (..., d), but every row of this {tuple(space.shape)} input is already "
            f"{'a sign-flipped query (a point with x_0 negated)' if flipped else 'a point of the hyperboloid'} "
            f"(|x_0| = sqrt(c + ||x_s||^2)): use the points as they are{', flipped back with flip_time' * flipped}, "
            f"or pass their space part x[..., 1:].")


@_accepts_numpy
def inner(x: Tensor, y: Tensor, keepdim: bool = False) -> Tensor:
    """Elementwise Lorentz inner product <x, y>_L of (..., D) tensors -> (...,) (or (..., 1) with keepdim).

    Any vectors, not only points (differences of points, tangent vectors), with one exception: sign-flipped queries
    against points are refused, since their plain dot product already is the inner product (see ``flip_time``).
    """
    _check_pairable(x, y, "inner", "pairwise_inner")
    _refuse_flipped_against_points(x, y, "inner")
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
    """All Lorentz inner products between rows: (..., N, D) x (..., M, D) -> (..., N, M); any vectors, as ``inner``
    (sign-flipped queries against points refused)."""
    _check_pairable(x, y, "pairwise_inner", "inner", rows=True)
    _refuse_flipped_against_points(x, y, "pairwise_inner")
    return flip_time(x) @ y.transpose(-1, -2)


def _refuse_flipped_against_points(x: Tensor, y: Tensor, name: str) -> None:
    """Refuse one side of sign-flipped queries (every row time-like with x_0 < 0) against a side of points (every row
    x_0 > 0): the inner product then has the wrong sign on its time term, a plausible number rather than an error. A
    flipped query's plain dot product with a point already is <q, d>_L. Vectors of other kinds (differences of points,
    tangent vectors) pass. Skipped where value checks do not apply and for tensors that require grad (see
    ``_refuse_points_as_space``)."""
    if x.requires_grad or y.requires_grad or not (_value_checks_apply(x) and _value_checks_apply(y)):
        return
    if x.numel() == 0 or y.numel() == 0:
        return

    def sheet(v: Tensor) -> int:  # -1: every row past-pointing time-like, +1: every row x_0 > 0, 0: neither
        v64 = _float64(v)
        time, space_norm = v64[..., 0], torch.linalg.vector_norm(v64[..., 1:], dim=-1)
        # Far out a float32 point is light-like by rounding: the slack of ``project``'s time-like check.
        if bool(((time < 0) & (space_norm <= (1 + _TIME_LIKE_SLACK) * -time)).all()):
            return -1
        return 1 if bool((time > 0).all()) else 0

    if {sheet(x), sheet(y)} == {-1, 1}:
        raise ValueError(
            f"{name}: one argument holds sign-flipped query vectors (every time coordinate negative, as encode_query "
            "and role='query' emit them) and the other points; their plain dot product (q~ @ d.T) already is <q, d>_L. "
            f"For {name} pass points on both sides: flip the queries back with lorentz.flip_time(q~).")


@_accepts_numpy
def distance_from_inner(lorentz_inner: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Geodesic distance from a Lorentz inner product: d = sqrt(c) arccosh(-<x, y>_L / c).

    Evaluated in float64. The argument is >= 1 in exact arithmetic; rounding can push it slightly below 1 for
    (nearly) identical points, so it is clamped at 1 + 1e-15: the distance there is ~0, and the clamp also keeps
    the gradient finite (arccosh has an infinite slope at 1).

    Refused: integer input (FAISS ids instead of scores), NaN and +inf. Scores above -c are warned about
    (RuntimeWarning naming the causes: a dot product of two documents, a wrong c, float32 far out), not refused,
    although <x, y>_L <= -c < 0 for points: the rounding error of a float32 inner product is ~eps32 x_0 y_0, which exceeds c
    from radius ~9 sqrt(c) on (x_0^2 > 1 / eps32). A float32 point and itself at radius 15 give flip_time(x) @ x up to
    +6e5 (c = 1) and +6e10 (c = 0.5, radius 21 sqrt(c)), and a score carries no trace of the radii that produced it,
    so no sign or size rule can tell a misused cosine similarity from a valid far-out score; those clamp to distance 0.
    -inf (index padding) gives distance inf.
    """
    if not isinstance(lorentz_inner, Tensor):
        raise TypeError(f"distance_from_inner takes a tensor or NumPy array of Lorentz inner products; got "
                        f"{type(lorentz_inner).__name__}: wrap it with torch.tensor(...) or np.asarray(...)")
    if not lorentz_inner.is_floating_point():
        raise TypeError(f"distance_from_inner takes Lorentz inner products (floating-point scores); got a "
                        f"{lorentz_inner.dtype} tensor: pass the scores of a search (its first output), not the ids")
    if _value_checks_apply(lorentz_inner):
        off = torch.isnan(lorentz_inner) | (lorentz_inner == math.inf)
        if off.any():
            raise ValueError(f"distance_from_inner: {int(off.sum())} of {off.numel()} scores are NaN or +inf (first "
                             f"at index {_first(off)}); a Lorentz inner product of two points is finite and <= -c "
                             "(index padding is -inf, which gives distance inf)")
    c64 = _float64(_curvature_like(c, lorentz_inner))
    ratio = -_float64(lorentz_inner) / c64
    if _value_checks_apply(lorentz_inner) and not lorentz_inner.requires_grad:
        _warn_scores_above_minus_c(lorentz_inner, ratio, c64)
    return (torch.sqrt(c64) * torch.acosh(ratio.clamp_min(1.0 + 1e-15))).to(lorentz_inner.dtype)


def _warn_scores_above_minus_c(scores: Tensor, ratio: Tensor, c64: Tensor) -> None:
    """Warn (not refuse, see ``distance_from_inner``) about scores no inner product of two points of H_c can take:
    -<x, y>_L / c < 1 beyond float32 rounding near the origin (1e-3 relative). The warning names the likely causes;
    which one applies only the caller can tell."""
    above = torch.isfinite(ratio) & (ratio < 1 - _SCORE_SLACK)
    if not above.any():
        return
    first = _first(above)
    finite = torch.isfinite(scores)
    every_positive = bool((scores[finite] > 0).all())
    warnings.warn(
        f"distance_from_inner: {int(above.sum())} of {above.numel()} scores lie above -c = "
        f"{-float(c64.flatten()[0]):g} (first {float(scores.detach()[first]):.6g} at index {first}), where no Lorentz "
        "inner product of two points of H_c can lie; they give distance ~0. "
        + ("Every score is positive: a plain dot product of two document vectors (or a cosine similarity) is not a "
           "Lorentz inner product; flip one side with lorentz.flip_time, or use lorentz.pairwise_distance. Else: "
           if every_positive else "Likely causes: ")
        + "the curvature c is not the one the points were made with (the model's config.curvature), or float32 "
          "products of points far from the origin lost their precision (re-score those in float64 with "
          "lorentz.pairwise_distance).", RuntimeWarning, stacklevel=4)  # the caller of distance_from_inner


def _check_pairable(x: Tensor, y: Tensor, name: str, other: str | None = None, *, rows: bool = False) -> None:
    """A clear error for inputs ``name`` cannot pair up (torch's own names no function and no remedy).

    ``rows``: ``name`` pairs every row of x with every row of y, (..., N, D) x (..., M, D), instead of matching rows;
    ``other`` is the function doing the other kind of pairing, if any. The shape checks always run; the values are
    checked where ``_check_vectors`` reads them.
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


def _rounding_slack(x: Tensor, floor: float = _MIN_ROUNDING_SLACK) -> float:
    """Relative slack for a value of x's dtype compared with the value a point must have: ``floor``, or more for half
    precision, whose rounding (16 eps = 0.03 for float16, 0.125 for bfloat16) exceeds it."""
    return max(floor, 16 * torch.finfo(x.dtype).eps) if x.is_floating_point() else floor


def _refresh_time64(x: Tensor, c: float | Tensor, name: str) -> Tensor:
    """x in float64 with its time coordinate recomputed from its space part (see the module docstring).

    Recomputing would silently turn any vector into a point, so the given time coordinate must match the recomputed
    one: Euclidean vectors, sign-flipped queries, NaN and points of another curvature are refused (the last only near
    the origin, where x_0 depends on c; far out x_0 ~ ||x_s|| for every c).
    """
    _check_vectors(x, name)
    refreshed = _lift(_float64(x[..., 1:]), _float64(_curvature_like(c, x)))
    if _value_checks_apply(x):
        _check_time_coordinate(x, refreshed[..., 0], c, name)
    return refreshed


def _check_points(x: Tensor, c: float | Tensor, name: str) -> None:
    """Refuse vectors that are not points of H_c, for functions that read x as given (no refreshed time)."""
    if not isinstance(x, Tensor) or _value_checks_apply(x):
        with torch.no_grad():
            _refresh_time64(x.detach() if isinstance(x, Tensor) else x, c, name)


@_accepts_numpy
def check_point(x: Tensor, c: float | Tensor = 1.0) -> None:
    """Refuse ``x`` (..., D) unless every vector is a finite point of H_c (its time coordinate the one its space part
    gives, within rounding): ValueError naming how many are off and the first. On request, on any device, inside
    ``values_unchecked()`` too: the check the other functions make of their inputs on CPU."""
    _check_vectors(x, "check_point")
    with torch.no_grad():
        x = x.detach()
        _refuse_nonfinite(x, "check_point", "points (..., D)")
        refreshed = _lift(_float64(x[..., 1:]), _float64(_curvature_like(c, x)))
        _check_time_coordinate(x, refreshed[..., 0], c, "check_point")


def _check_time_coordinate(x: Tensor, expected_time: Tensor, c: float | Tensor, name: str) -> None:
    # Relative tolerance: float32 rounding of x_0 is ~1e-7 relative at any radius; half precision needs more.
    relative_error = (_float64(x[..., 0]) - expected_time).abs() / expected_time
    off = ~(relative_error <= _rounding_slack(x))  # NaN compares False, so it counts as off
    if off.any():
        first = _first(off)
        time = float(x.detach()[first + (0,)])
        c_value = float(c.detach().flatten()[0]) if isinstance(c, Tensor) else float(c)
        # -x_0 matching the expected time: the vector is a point with its time negated, i.e. a query as emitted.
        flipped = abs(-time - float(expected_time[first])) <= _rounding_slack(x) * float(expected_time[first])
        hint = ("x_0 = -(its point's x_0) there: a sign-flipped query vector (role='query' output); flip it back "
                "with lorentz.flip_time(x)" if flipped else "flip query vectors back with lorentz.flip_time")
        raise ValueError(
            f"{name}: {int(off.sum())} of {off.numel()} vectors are not points of the hyperboloid <x,x>_L = -c with "
            f"c = {c_value:g} (first at index {first}: x_0 = {time:.6g}, the point with that space part has x_0 = "
            f"{float(expected_time[first]):.6g}). Pass points with the time coordinate first (an encoder's "
            f"role='document' output, or lorentz.add_time(space, c)), made with this c (the model's "
            f"config.curvature); {hint}.")


def _check_number(value: float | Tensor, name: str, what: str, *, positive: bool) -> None:
    """Refuse a parameter (a number or a tensor of them) that is not finite or, with ``positive``, not > 0."""
    if isinstance(value, Tensor):
        if not _value_checks_apply(value):
            return
        values = _float64(value.detach())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        values = torch.tensor(float(value), dtype=torch.float64)
    else:
        raise TypeError(f"{name}: {what} must be a number or a tensor; got {type(value).__name__} {value!r}")
    off = ~torch.isfinite(values) | ((values <= 0) if positive else torch.zeros_like(values, dtype=torch.bool))
    if off.any():
        bad = float(values.flatten()[int(off.flatten().nonzero()[0])])
        raise ValueError(f"{name}: {what} must be a finite number{' > 0' if positive else ''}; got {bad}")


def _check_mask(mask: Tensor | None, name: str, x: Tensor) -> None:
    """Refuse masks that do not mark the N points of every set of x (..., N, D), or with values other than 0 and 1:
    a mask marks padding, it does not weigh points."""
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
    if mask is None or mask.dtype == torch.bool or not _value_checks_apply(mask):
        return
    off = ~((mask == 0) | (mask == 1))  # NaN is neither
    if off.any():
        first = _first(off)
        raise ValueError(f"{name}: mask values must be 0 (padding) or 1 (or booleans); got {float(mask[first]):g} at "
                         f"index {first}. For weighted points use lorentz.centroid(x, weights, c)")


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
    two_sqrt_c = 2 * torch.sqrt(_float64(_curvature_like(c, difference)))
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
    value = -2 * _float64(_curvature_like(c, x)) - 2 * inner(x64, y64)
    return value.clamp_min(0).to(x.dtype)


@_accepts_numpy
def radius(x: Tensor) -> Tensor:
    """Radial depth r(x) = x_0, (..., D) -> (...,). Monotone in the distance to the origin. A negative x_0 (a
    sign-flipped query) is refused: its "radius" would be negative."""
    _check_vectors(x, "radius")
    if _value_checks_apply(x) and x.numel() and bool((x[..., 0] < 0).any()):
        first = _first(x[..., 0] < 0)
        raise ValueError(f"radius: x_0 = {float(x.detach()[first + (0,)]):.6g} < 0 at index {first}: a sign-flipped "
                         "query vector (role='query' output), not a point; flip it back with lorentz.flip_time(x)")
    return x[..., 0]


@_accepts_numpy
def distance_to_origin(x: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """d(o, x) = sqrt(c) asinh(||x_s|| / sqrt(c)), (..., D) -> (...,).

    The asinh form uses only the space part, so it is accurate both near the origin (where arccosh(x_0 / sqrt(c))
    loses all digits) and far from it. Vectors that are not points of H_c are refused (see ``distance``).
    """
    _check_points(x, c, "distance_to_origin")
    sqrt_c = torch.sqrt(_curvature_like(c, x))
    return sqrt_c * torch.asinh(x[..., 1:].norm(dim=-1) / sqrt_c)


@_accepts_numpy
def project(v: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Pi_c: rescale a time-like ambient vector onto the hyperboloid, (..., D) -> (..., D).

    Pi_c(v) = sqrt(c) v / sqrt(|<v, v>_L|), evaluated in v's dtype: the input's own time coordinate is used, so its
    Lorentz norm is only as accurate as storage allows (eps x_0^2 << c: up to radius ~5 sqrt(c) for float32
    points, ~14 sqrt(c) for float64), and computing in a wider dtype would not help. ``centroid`` and OEM pooling
    re-derive the time of their inputs and are accurate further out. A space-like v, or one with v_0 <= 0 (a
    sign-flipped query), has no meaningful projection and is refused; callers pass positive combinations of points,
    which are time-like with v_0 > 0. Within rounding (``_TIME_LIKE_SLACK``) a vector may be light-like or slightly
    space-like: ``abs`` (as in the paper) and the clamp, which keeps a light-like v from dividing by zero, handle
    those. The zero vector maps to zero, as scaled dot-product attention over all-padding rows needs; NaN and inf are
    refused (on CPU in eager mode, as every value check of this module).
    """
    return _project(v, c, "project")


def _project(v: Tensor, c: float | Tensor, name: str) -> Tensor:
    """``project``, its errors naming the public function ``name`` that was called."""
    _check_time_like(v, name)
    # -<v, v>_L = v_0^2 - ||v_s||^2, factored as (v_0 - ||v_s||)(v_0 + ||v_s||), which cancels less.
    time, space_norm = v[..., :1], torch.linalg.vector_norm(v[..., 1:], dim=-1, keepdim=True)
    norm_sq = ((time - space_norm) * (time + space_norm)).abs().clamp_min(_MIN_LORENTZ_NORM_SQ)
    return v * (torch.sqrt(_curvature_like(c, v)) * torch.rsqrt(norm_sq))


def _check_time_like(v: Tensor, name: str) -> None:
    """Refuse vectors that are not time-like with v_0 > 0, up to rounding (see ``_TIME_LIKE_SLACK``)."""
    _check_vectors(v, name, "vectors (..., D)")
    if not _value_checks_apply(v):
        return
    v64 = _float64(v.detach())
    time, space_norm = v64[..., 0], torch.linalg.vector_norm(v64[..., 1:], dim=-1)
    slack = max(_TIME_LIKE_SLACK, _rounding_slack(v))
    time_like = (time > 0) & (space_norm <= (1 + slack) * time)
    # The zero vector passes (scaled to zero): scaled dot-product attention returns it for a sequence that is all
    # padding, and the model's pooling then names the padding. NaN and inf were refused by _check_vectors.
    off = ~time_like & ~((time == 0) & (space_norm == 0))
    if off.any():
        first = _first(off)
        raise ValueError(
            f"{name}: {int(off.sum())} of {off.numel()} vectors are not time-like with v_0 > 0 (first at index "
            f"{first}: v_0 = {float(time[first]):.6g}, ||v_s|| = {float(space_norm[first]):.6g}); their projection "
            "onto the hyperboloid is meaningless. Pass points or positive combinations of points (time coordinate "
            "first); lift space coordinates with lorentz.add_time(space, c), flip query vectors back with "
            "lorentz.flip_time.")


@_accepts_numpy
def expmap0(tangent: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Exponential map at the origin: tangent space part v (..., d) -> point (..., d + 1).

    x_s = sqrt(c) sinh(||v|| / sqrt(c)) v / ||v||, x_0 = sqrt(||x_s||^2 + c). The tangent vector at the origin is
    (0, v); only v is passed. Its length ||v|| is the distance of the result from the origin.

    ||v|| / sqrt(c) is clamped at a dtype-dependent maximum so that x_0^2 stays finite: beyond it the point is not
    representable in that dtype (float32: distance ~43 sqrt(c); callers such as HyTE-H clip norms far below this).
    """
    _refuse_points_as_space(tangent, c, "expmap0")
    return _expmap0(tangent, c)


def _expmap0(tangent: Tensor, c: float | Tensor) -> Tensor:
    """``expmap0`` without the input check, for tangent vectors this module computed itself (see ``_lift``)."""
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
    Vectors that are not points of H_c are refused (see ``distance``).
    """
    _check_points(x, c, "logmap0")
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
    apart from 0 only up to r ~ 14 sqrt(c). Use float64 for round trips of points further out. Vectors that are not
    points of H_c are refused (see ``distance``).
    """
    _check_points(x, c, "to_poincare")
    sqrt_c = torch.sqrt(_curvature_like(c, x))
    return sqrt_c * x[..., 1:] / (x[..., :1] + sqrt_c)


@_accepts_numpy
def from_poincare(p: Tensor, c: float | Tensor = 1.0) -> Tensor:
    """Poincare ball of radius sqrt(c) -> hyperboloid: x_s = 2 c p / (c - ||p||^2), time recomputed.

    c - ||p||^2 is clamped at a tiny positive value so a point rounded onto the boundary maps far away instead of
    to infinity or the other sheet. Points further outside than rounding can put them (||p||^2 > c (1 + 1e-3)) are
    refused: they are not points of the ball (see ``_MIN_ROUNDING_SLACK``: float32 rounds a point at radius 15 to
    ||p||^2 ~ c (1 + 6e-8)).
    """
    _check_vectors(p, "from_poincare", "Poincare ball points (..., d)")
    if _value_checks_apply(p):
        squared_norm = _float64(p.detach()).pow(2).sum(-1, keepdim=True)
        off = ~(squared_norm <= _float64(_curvature_like(c, p)) * (1 + _rounding_slack(p)))  # NaN counts as off
        if off.any():
            first = _first(off)[:-1]
            raise ValueError(
                f"from_poincare: {int(off.sum())} of {off.numel()} vectors lie outside the Poincare ball ||p||^2 < c "
                f"(first at index {first}: ||p||^2 = {float(squared_norm[first]):.6g}); pass points of the ball of "
                f"radius sqrt(c), e.g. lorentz.to_poincare(x, c) of hyperboloid points, made with this c.")
    c = _curvature_like(c, p)
    gap = (c - p.pow(2).sum(-1, keepdim=True)).clamp_min(torch.finfo(p.dtype).tiny)
    return _lift(2 * c * p / gap, c)


def _check_sets(x: Tensor, mask: Tensor | None, name: str) -> None:
    """Refuse what a pooling function of sets (..., N, D) would silently turn into the zero vector, which is no point
    (einstein_midpoint of no points), or into the origin: no set dimension, an empty set, a mask row of only
    padding. The mask check runs in eager mode on any device (a sequence of padding is a mistake worth a sync), not
    in compiled or exported graphs or on meta tensors, which have no values to read."""
    if x.ndim < 2 or x.shape[-2] == 0:
        raise ValueError(f"{name}: takes sets of points (..., N, D) with N >= 1; got shape {tuple(x.shape)}"
                         + (": the set is empty, there are no points to pool" if x.ndim >= 2
                            else ": one point, no set (add a set dimension: x[None])"))
    if (mask is None or mask.device.type == "meta" or torch.compiler.is_compiling()
            or torch.compiler.is_exporting()):
        return
    empty = ~mask.bool().any(-1)
    if empty.any():
        where = f" (first at index {_first(empty)})" if empty.ndim else ""
        raise ValueError(f"{name}: {int(empty.sum())} of {empty.numel()} rows of the mask are all padding{where}: no "
                         "points to pool; every sequence needs at least one unmasked token.")


@_accepts_numpy
def centroid(x: Tensor, weights: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """Weighted Lorentzian centroid Pi_c(sum_i w_i x_i): (..., N, D), weights (..., N) -> (..., D).

    With weights None every point weighs 1. Weights must be finite, >= 0 and not all zero along N. Computed in float64
    with each point's time recomputed from its space part (module docstring); float64 resolves the Lorentz norm of
    the sum up to x_0 ~ 1e7 (radius ~14 sqrt(c)); further out the result stays finite but loses accuracy.
    """
    x64 = _refresh_time64(x, c, "centroid")
    _check_sets(x64, None, "centroid")
    w64 = torch.ones_like(x64[..., 0]) if weights is None else _float64(weights)
    if weights is not None and (w64.ndim < 1 or x64.ndim < 2 or w64.shape[-1] != x64.shape[-2]):
        raise ValueError(f"centroid: weights must be >= 0, one per point: {x64.shape[-2] if x64.ndim > 1 else 1} "
                         f"points, weights of shape {tuple(w64.shape)}")
    if weights is not None and _value_checks_apply(weights):
        # A negative weight can make the sum space-like; an all-zero set sums to the zero vector, which has no
        # projection; NaN/inf poison the whole centroid.
        off = ~(torch.isfinite(w64) & (w64 >= 0))
        empty = ~(w64.sum(-1) > 0)
        if off.any() or empty.any():
            where = (f"{float(w64[_first(off)]):g} at index {_first(off)}" if off.any()
                     else "weights summing to 0" + (f" for the set at index {_first(empty)}" if empty.ndim else ""))
            raise ValueError(f"centroid: weights must be >= 0, one per point, finite, with a positive sum per set; "
                             f"got {where}. Pass weights=None to weigh every point 1")
    return _project((w64.unsqueeze(-1) * x64).sum(-2), _float64(_curvature_like(c, x)), "centroid").to(x.dtype)


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
    weights are formed as a softmax of p log x_0 + log w (masked points get log 0 = -inf).

    Refused: mask values other than 0/1, a p that is not finite, and vectors that are not points of H_c.
    """
    return _outward_einstein_midpoint(x, mask, p, c, "outward_einstein_midpoint")


def _outward_einstein_midpoint(x: Tensor, mask: Tensor | None, p: float, c: float | Tensor, name: str) -> Tensor:
    _check_number(p, name, "p", positive=False)
    _check_mask(mask, name, x)
    x64 = _refresh_time64(x, c, name)
    _check_sets(x64, mask, name)
    w64 = torch.ones_like(x64[..., 0]) if mask is None else _float64(mask)
    logits = p * torch.log(x64[..., 0]) + torch.log(w64)
    weights = torch.softmax(logits, dim=-1)
    return _project((weights.unsqueeze(-1) * x64).sum(-2), _float64(_curvature_like(c, x)), name).to(x.dtype)


@_accepts_numpy
def einstein_midpoint(x: Tensor, mask: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """The Einstein midpoint, OEM with p = 0: (..., N, D), mask (..., N) -> (..., D)."""
    return _outward_einstein_midpoint(x, mask, 0.0, c, "einstein_midpoint")


@_accepts_numpy
def tangent_mean(x: Tensor, mask: Tensor | None = None, c: float | Tensor = 1.0) -> Tensor:
    """expmap0 of the masked mean of logmap0(x_i): the 'naive' tangent-space mean pooling, (..., N, D) -> (..., D).

    Refused, as by OEM pooling: an empty set and a mask row of only padding (their mean would be the origin)."""
    _check_mask(mask, "tangent_mean", x)
    _check_points(x, c, "tangent_mean")
    _check_sets(x, mask, "tangent_mean")
    tangent = _logmap0(x, c)
    w = torch.ones_like(tangent[..., 0]) if mask is None else mask.to(tangent.dtype)
    total = w.sum(-1, keepdim=True).clamp_min(1.0)  # where _check_sets cannot look (compiled), padding gives the origin
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
    c64 = _float64(_curvature_like(c, x64[..., 0]))
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
