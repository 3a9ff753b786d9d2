"""``diagonal``, ``trace``, ``cross``, ``outer`` and ``matrix_transpose`` of the ``linalg``
extension: views and compositions of namespace functions (no kernels of their own).

``diagonal`` is a strided view (no copy); ``trace`` sums that view with the reduction
engine (``sum``'s dtype rules); ``cross`` and ``outer`` are NumPy's formulas on broadcast
views (the same products and differences, so the same roundings); ``matrix_transpose`` is
the namespace's (a view).
"""
from __future__ import annotations

import operator

from .._core import _dtypes as _dt
from .._array import Array
from .._core._device import same_device
from .._engine import _linalg_plan as _lp
from .._api._manipulation import matrix_transpose


def _check(x, name: str, kinds: str, what: str) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if x._dtype.kind not in kinds:
        raise TypeError(f"{name}: expected an array with {what} dtype, got {x._dtype}")


def _pair(x1, x2, name: str) -> None:
    _check(x1, name, "iufc", "a numeric")
    _check(x2, name, "iufc", "a numeric")
    same_device(name, x1, x2)


def _int(v, name: str, what: str) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{name}: {what} must be an integer, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {type(v).__name__}") from None


def diagonal_layout(shape: tuple, strides: tuple, offset: int) -> tuple:
    """(byte offset of the first element, shape, byte strides) of the diagonal ``offset`` of
    the last two axes of an array of ``shape`` and byte ``strides``: the batch axes, then
    one axis stepping down the diagonal (row stride + column stride)."""
    out_shape = _lp.diagonal_shape(shape, offset)
    rs, cs = strides[-2], strides[-1]
    start = 0
    if out_shape[-1]:
        start = offset * cs if offset >= 0 else -offset * rs
    return start, out_shape, tuple(strides[:-2]) + (rs + cs,)


def _diagonal(x, offset, name: str):
    _lp._matrices(name, x._shape)
    offset = _int(offset, name, "offset")
    start, shape, strides = diagonal_layout(x._shape, x._strides, offset)
    return x._view(x._offset + start, shape, strides)


def diagonal(x, /, *, offset=0):
    """The diagonal ``offset`` (0: the main one, > 0 above it, < 0 below it) of each matrix
    of ``x`` (the last two axes), as a view of ``x`` (no copy) of shape ``x.shape[:-2] +
    (L,)``, L the diagonal's length (0 when ``offset`` is beyond the matrix). Any dtype."""
    _check(x, "diagonal", "biufc", "any")
    return _diagonal(x, offset, "diagonal")


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the diagonal ``offset`` of each matrix of ``x`` (the last two axes); shape
    ``x.shape[:-2]``. ``dtype`` as ``sum``'s: None keeps floating dtypes and widens signed
    integers to int64 and unsigned ones to uint64; a given dtype casts the input first. The
    trace of an empty diagonal is 0. ``x`` must have a numeric dtype."""
    from .._api._statistical import sum as _sum

    _check(x, "trace", "iufc", "a numeric")
    dt = _dt._normalize_dtype(dtype, "trace")
    d = _diagonal(x, offset, "trace")
    return _sum(d, axis=-1, dtype=dt)


def _component(x, axis: int, i: int):
    """View of element ``i`` along negative ``axis`` of ``x`` (that axis removed)."""
    ax = x.ndim + axis
    return x._view(x._offset + i * x._strides[ax], x._shape[:ax] + x._shape[ax + 1:],
                   x._strides[:ax] + x._strides[ax + 1:])


def cross(x1, x2, /, *, axis=-1):
    """The cross product of the 3-element vectors along ``axis`` of ``x1`` and ``x2``
    (negative, within the smaller number of dimensions; both must have 3 elements there,
    unbroadcast); the other axes broadcast. Dtype: the promotion of the two (numeric).
    Components as NumPy computes them: ``x1[1] * x2[2] - x1[2] * x2[1]``, ..."""
    from .._array._elementwise import multiply, subtract
    from .._api._manipulation import stack

    name = "cross"
    _pair(x1, x2, name)
    axis = _int(axis, name, "axis")
    _lp.cross_shape(x1._shape, x2._shape, axis)
    a = [_component(x1, axis, i) for i in range(3)]
    b = [_component(x2, axis, i) for i in range(3)]
    c = [subtract(multiply(a[(i + 1) % 3], b[(i + 2) % 3]), multiply(a[(i + 2) % 3], b[(i + 1) % 3]))
         for i in range(3)]
    return stack(c, axis=axis)


def outer(x1, x2, /):
    """The outer product of the 1-D arrays ``x1`` (N) and ``x2`` (M): ``out[i, j] = x1[i] *
    x2[j]``, shape (N, M), dtype the promotion of the two (numeric)."""
    from .._array._elementwise import multiply

    name = "outer"
    _pair(x1, x2, name)
    n, m = _lp.outer_shape(x1._shape, x2._shape)
    a = x1._view(x1._offset, (n, 1), (x1._strides[0], 0))
    b = x2._view(x2._offset, (1, m), (0, x2._strides[0]))
    return multiply(a, b)


__all__ = ["cross", "diagonal", "matrix_transpose", "outer", "trace"]
