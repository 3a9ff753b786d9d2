"""Utility functions (spec section "Utility Functions"): all, any."""
from __future__ import annotations

from . import _dtypes as _dt
from ._array import Array
from ._engine import _reduce, _shapes


def _logical_reduce(op: str, x, axis, keepdims: bool, name: str):
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    axes = _shapes.normalize_axes(axis, x.ndim, name)
    kept_shape = tuple(1 if i in axes else s for i, s in enumerate(x._shape)) if keepdims else \
        tuple(s for i, s in enumerate(x._shape) if i not in axes)
    from ._creation import _empty, full

    if x.size == 0:
        return full(kept_shape, op == "all", dtype=_dt.bool, device=x._device)
    out = _empty(kept_shape, _dt.bool, x._device)
    _reduce.reduce(op, x, axes, out, _dt.bool)
    return out


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """True where every element along ``axis`` is nonzero (logical AND reduction)."""
    return _logical_reduce("all", x, axis, keepdims, "all")


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001 (spec name)
    """True where some element along ``axis`` is nonzero (logical OR reduction)."""
    return _logical_reduce("any", x, axis, keepdims, "any")
