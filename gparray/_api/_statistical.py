"""Statistical functions (spec section "Statistical Functions"): sum, prod, max, min, mean,
std, var, cumulative_sum, cumulative_prod.

Argument checks and dtype rules here; the work is one call into the reduction engine
(gparray/_engine/_reduce.py) or the scan engine (gparray/_engine/_scan.py). Accumulation:
float16 (extension), float32 and float64 in double, complex in complex128, integers in 64
bits (wrapping like NumPy); var/std merge Welford states (one pass, no cancellation on a
large mean). Results keep the input's floating dtype (float16 stays float16, like NumPy).
"""
from __future__ import annotations

import operator

from .._core import _dtypes as _dt
from .._array import _ops
from .._array import Array, _empty
from .._engine import _reduce, _reduce_fast, _scan, _shapes


def _check(x, name: str, kinds: str, what: str) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if x._dtype.kind not in kinds:
        raise TypeError(f"{name}: expected an array with {what} dtype, got {x._dtype}")


def _result_dtype(dtype, default, name: str):
    dt = _dt._normalize_dtype(dtype, name)
    return default if dt is None else dt


def _reduce_into(op: str, x, axes: tuple, keepdims: bool, out_dtype, param: float = 0.0, learn=None):
    """The reduction of ``x`` over normalized ``axes`` as a new array (kept axes in order,
    reduced ones as size-1 axes when ``keepdims``). ``learn=(name, axis)``: record the
    launch for the compiled repeat calls of ``name`` over the caller's ``axis``
    (gparray/_engine/_reduce_fast.py; keepdims must be False)."""
    shape = x._shape
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    out = _empty(kept, out_dtype, x._device)
    lp = _reduce.reduce(op, x, axes, out, param)
    if learn is not None:
        _learn(learn[0], x, learn[1], out, lp)
    if keepdims:
        ks = tuple(1 if i in axes else s for i, s in enumerate(shape))
        out = out._view(out._offset, ks, _shapes.c_strides(ks, out_dtype.itemsize))
    return out


def _learn(name: str, x, axis, out, lp) -> None:
    """Record the launch ``lp`` for the compiled repeat calls of ``name`` (see
    gparray/_engine/_reduce_fast.py), configuring the compiled path first when no
    elementwise call has yet: a process that only reduces was otherwise never served (on
    the H200, 30 of 30 repeat calls took the Python path)."""
    if _ops._ensure_configured():     # (else no compiled path to serve from: nothing is recorded)
        _reduce_fast.learn(name, x, axis, out, lp)


# Repeat calls skip the checks: (op, input dtype, shape, axis) -> (axes, result shape, result
# dtype) of calls without dtype= and keepdims whose checks passed (they depend on nothing else).
_seen: dict = {}
_SEEN_MAX = 4096


def _repeat(op: str, x, axis):
    """The result of a reduction whose checks passed before for this (op, dtype, shape,
    axis), computed without them (in C once such a call has launched here on a C-contiguous
    input: gparray/_engine/_reduce_fast.py); None when not seen (or ``axis`` is not None or
    an int)."""
    r = _reduce_fast.serve(op, x, axis)
    if r is not None:
        return r
    if type(x) is not Array or not (axis is None or type(axis) is int):
        return None
    f = _seen.get((op, x._dtype, x._shape, axis))
    if f is None:
        return None
    out = _empty(f[1], f[2], x._device)
    _learn(op, x, axis, out, _reduce.reduce(op, x, f[0], out))
    return out


def _store(key, value) -> None:
    if len(_seen) >= _SEEN_MAX:
        _seen.clear()
    _seen[key] = value


def _remember(op: str, x, axis, axes: tuple, out):
    if axis is None or type(axis) is int:
        _store((op, x._dtype, x._shape, axis), (axes, out._shape, out._dtype))
    return out


def _reduced_count(x, axes: tuple) -> int:
    return _shapes.prod(x._shape[i] for i in axes)


def _check_nonempty(x, axes: tuple, name: str) -> None:
    """max/min/argmax/argmin have no identity: an empty reduction over a non-empty output
    is a ValueError (as NumPy)."""
    if _reduced_count(x, axes) == 0 and _shapes.prod(s for i, s in enumerate(x._shape) if i not in axes):
        raise ValueError(f"{name}: zero-size reduction (axes {axes} of shape {x._shape}) has no identity")


def _sum_like(op: str, x, axis, dtype, keepdims):
    plain = dtype is None and not keepdims
    if plain and (r := _repeat(op, x, axis)) is not None:
        return r
    _check(x, op, "biufc", "a numeric")
    out_dt = _result_dtype(dtype, _reduce.sum_dtype(x._dtype), op)
    axes = _shapes.normalize_axes(axis, x.ndim, op)
    out = _reduce_into(op, x, axes, keepdims, out_dt)
    return _remember(op, x, axis, axes, out) if plain else out


def _extreme(op: str, x, axis, keepdims):
    if not keepdims and (r := _repeat(op, x, axis)) is not None:
        return r
    _check(x, op, "biuf", "a real")
    axes = _shapes.normalize_axes(axis, x.ndim, op)
    _check_nonempty(x, axes, op)
    out = _reduce_into(op, x, axes, keepdims, x._dtype)
    return out if keepdims else _remember(op, x, axis, axes, out)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001 (spec name)
    """Sum over ``axis`` (default: all). Default dtype: int64 for bool and signed integers,
    uint64 for unsigned, the input's for floating types; ``dtype`` casts the input first.
    Float sums accumulate in double (complex in complex128), integers wrap."""
    return _sum_like("sum", x, axis, dtype, keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """Product over ``axis`` (default: all); dtype rules as ``sum``; empty products are 1."""
    return _sum_like("prod", x, axis, dtype, keepdims)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """Largest element over ``axis``; NaN propagates; an empty reduction raises ValueError."""
    return _extreme("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """Smallest element over ``axis``; NaN propagates; an empty reduction raises ValueError."""
    return _extreme("min", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    """Arithmetic mean over ``axis``: floating types keep their dtype, integers give
    float64; the mean of nothing is NaN (NaN + NaN j for complex)."""
    if not keepdims and (r := _repeat("mean", x, axis)) is not None:
        return r
    _check(x, "mean", "iufc", "a numeric (not bool)")
    axes = _shapes.normalize_axes(axis, x.ndim, "mean")
    out = _reduce_into("mean", x, axes, keepdims, _reduce.float_result(x._dtype))
    return out if keepdims else _remember("mean", x, axis, axes, out)


def _correction(correction, name: str) -> float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        try:
            correction = operator.index(correction)
        except TypeError:
            raise TypeError(f"{name}: correction must be an int or a float, "
                            f"got {type(correction).__name__}") from None
    return float(correction)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """Variance over ``axis`` with divisor N - correction (NaN when that is <= 0); one
    pass over the data (Welford/Chan). Real floating types keep their dtype, integers give
    float64."""
    _check(x, "var", "iuf", "a real numeric (not bool)")
    c = _correction(correction, "var")
    axes = _shapes.normalize_axes(axis, x.ndim, "var")
    return _reduce_into("var", x, axes, keepdims, _reduce.float_result(x._dtype), c)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    """Standard deviation: the square root of ``var`` (same rules)."""
    _check(x, "std", "iuf", "a real numeric (not bool)")
    c = _correction(correction, "std")
    axes = _shapes.normalize_axes(axis, x.ndim, "std")
    return _reduce_into("std", x, axes, keepdims, _reduce.float_result(x._dtype), c)


def _cumulative(op: str, x, axis, dtype, include_initial: bool, name: str):
    key = None
    if type(x) is Array and dtype is None and (axis is None or type(axis) is int) and type(include_initial) is bool:
        key = (op, x._dtype, x._shape, axis, include_initial)
        f = _seen.get(key)
        if f is not None:  # checks passed before for this (op, dtype, shape, axis, include_initial)
            out = _empty(f[1], f[2], x._device)
            _scan.scan(op, x, f[0], out, include_initial)
            return out
    _check(x, name, "biufc", "a numeric")
    if x.ndim == 0:
        raise ValueError(f"{name}: expected an array with at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is required for an array of {x.ndim} dimensions")
        axis = 0
    axis = _shapes.normalize_axis(axis, x.ndim, name)
    out_dt = _result_dtype(dtype, _reduce.sum_dtype(x._dtype), name)
    shape = list(x._shape)
    shape[axis] += 1 if include_initial else 0
    out = _empty(tuple(shape), out_dt, x._device)
    _scan.scan(op, x, axis, out, bool(include_initial))
    if key is not None:
        _store(key, (axis, out._shape, out_dt))
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along ``axis`` (optional for 1-D input); dtype rules as ``sum``;
    ``include_initial`` prepends the 0 along ``axis``."""
    return _cumulative("sum", x, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along ``axis`` (optional for 1-D input); dtype rules as ``prod``;
    ``include_initial`` prepends the 1 along ``axis``."""
    return _cumulative("prod", x, axis, dtype, include_initial, "cumulative_prod")


__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]
