"""Utility functions (spec section "Utility Functions"): all, any, diff."""
from __future__ import annotations

import builtins
import operator

from .._core import _dtypes as _dt
from .._array import Array
from .._core._device import same_device
from .._engine import _shapes
from ._statistical import _check, _reduce_into


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """True where every element along ``axis`` is nonzero (logical AND reduction)."""
    _check(x, "all", "biufc", "any")
    return _reduce_into("all", x, _shapes.normalize_axes(axis, x.ndim, "all"), keepdims, _dt.bool)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """True where some element along ``axis`` is nonzero (logical OR reduction)."""
    _check(x, "any", "biufc", "any")
    return _reduce_into("any", x, _shapes.normalize_axes(axis, x.ndim, "any"), keepdims, _dt.bool)


def _along(x, axis: int, start: int, length: int):
    """View of ``x`` holding ``length`` elements along ``axis`` from ``start``."""
    shape = list(x._shape)
    shape[axis] = length
    return x._view(x._offset + start * x._strides[axis], tuple(shape), x._strides)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """n-th forward difference along ``axis`` (out[i] = x[i+1] - x[i], applied n times),
    after joining ``prepend``/``append`` (arrays of x's shape off ``axis``; dtypes promote).
    bool input gives x[i+1] != x[i] (as NumPy)."""
    from .._array._elementwise import not_equal, subtract
    from ._manipulation import concat

    _check(x, "diff", "biufc", "a numeric")
    if x.ndim == 0:
        raise ValueError("diff: expected an array with at least one dimension, got a 0-d array")
    axis = _shapes.normalize_axis(axis, x.ndim, "diff")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"diff: n must be an integer, got {type(n).__name__}") from None
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    if n == 0:  # NumPy: x itself, prepend/append ignored
        return x
    parts, names = [], []
    for name, p in (("prepend", prepend), ("x", x), ("append", append)):
        if p is None:
            continue
        if not isinstance(p, Array):
            raise TypeError(f"diff: {name} must be a gparray Array, got {type(p).__name__}")
        if p.ndim != x.ndim or builtins.any(p._shape[i] != x._shape[i] for i in range(x.ndim) if i != axis):
            raise ValueError(f"diff: {name} must have shape {x._shape} off axis {axis}, got {p._shape}")
        parts.append(p)
        names.append(name)
    # one device, before concat copies them ("prepend and x are on different devices (...)")
    same_device("diff", *parts, what=", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "x")
    y = concat(parts, axis=axis) if len(parts) > 1 else x
    for _ in range(n):
        m = y._shape[axis]
        if m == 0:
            break
        hi, lo = _along(y, axis, 1, m - 1), _along(y, axis, 0, m - 1)
        y = not_equal(hi, lo) if y._dtype == _dt.bool else subtract(hi, lo)
    return y
