"""Sorting functions (spec section "Sorting Functions"): sort, argsort.

Both are stable LSD radix sorts of gparray's own (gparray/_engine/_sort.py) along one axis
of any layout, over every real dtype (bool, integers, float16, float32, float64). Order as
NumPy: NaNs after every number; ``-0.0`` and ``0.0`` compare equal and keep their order.
``descending=True`` is stable in the spec's sense (equal elements keep their input order;
it is not the reverse of an ascending sort) and puts NaNs first, as PyTorch and
array-api-compat do. ``stable=False`` is accepted and sorts stably too. Like NumPy (and so
array-api-strict), a 0-d array has no axis -1: AxisError.
"""
from __future__ import annotations

from .._core import _dtypes as _dt
from .._array import Array, _empty
from .._engine import _shapes
from .._engine import _sort as _sort_engine


def _prepare(x, axis, name: str) -> int:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if x._dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected an array with a real dtype, got {x._dtype}")
    return _shapes.normalize_axis(axis, x.ndim, name)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """A sorted copy of ``x`` along ``axis`` (ascending unless ``descending``; stable)."""
    ax = _prepare(x, axis, "sort")
    out = _empty(x._shape, x._dtype, x._device)
    _sort_engine.sort(x, ax, out, None, bool(descending))
    return out


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The int64 indices along ``axis`` that sort ``x`` (ascending unless ``descending``;
    stable: equal elements in their input order)."""
    ax = _prepare(x, axis, "argsort")
    out = _empty(x._shape, _dt.int64, x._device)
    _sort_engine.sort(x, ax, None, out, bool(descending))
    return out
