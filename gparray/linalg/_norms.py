"""``vector_norm`` and ``matrix_norm`` of the ``linalg`` extension.

Every vector norm is one pass of the reduction engine with a norm reducer
(``gp::red::op_norm`` in gparray/_kernels/include/gp/reduce.cuh): ``|x|``, its square or its
p-th power is taken inside the reduction, so ``vector_norm(x, axis=1)`` reads ``x`` once. The
values are computed as NumPy computes them (squares and powers in the result's precision,
float32 for float32 and complex64), with the partial sums in double; a sum beyond the result
dtype's range is inf, as NumPy's. The matrix norms: 'fro' is the 2-norm reduction over the
last two axes; 1, -1, inf, -inf are column or row sums of ``|x|`` then a max or min; 2, -2
and 'nuc' reduce the singular values (``svdvals``).

Empty inputs follow NumPy: every sum-based norm of nothing is 0 (inf for negative p: the
root of an empty sum), the max-based ones (inf, matrix 1, inf, 2, 'nuc') are 0 and the
min-based ones (-inf, matrix -1, -inf, -2) raise ValueError.
"""
from __future__ import annotations

import math
import numbers

from .._core import _dtypes as _dt
from .._array import Array
from .._engine import _linalg_plan as _lp
from .._engine import _reduce_fast, _shapes
from .._api._statistical import _reduce_into

_INF = float("inf")


def _check_floating(x, name: str) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if x._dtype.kind not in "fc":
        raise TypeError(f"{name}: expected an array with a real or complex floating dtype, got {x._dtype}")


def real_dtype(dtype):
    """The real floating dtype of the same precision (float32 for complex64, ...)."""
    return _dt._complex_to_real.get(dtype, dtype)


def vector_norm_op(ord) -> tuple:
    """(reduction op, parameter) of ``vector_norm``'s ``ord``: 2, 1, 0, inf and -inf have
    their own reducers, any other real p the generic ``(sum |x|^p)^(1/p)``."""
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid norm order {ord!r} for vectors")
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"vector_norm: ord must be an int or a float, got {type(ord).__name__}")
    p = float(ord)
    if math.isnan(p):
        raise ValueError("vector_norm: ord must not be NaN")
    if p == 2:
        return "norm2", 0.0
    if p == 1:
        return "norm1", 0.0
    if p == 0:
        return "norm0", 0.0
    if p == _INF:
        return "norm_max", 0.0
    if p == -_INF:
        return "norm_min", 0.0
    return "norm_p", p


def _nonempty(x, axes: tuple, name: str, what: str) -> None:
    """A minimum over nothing has no value: ValueError when the reduced axes are empty and
    the result is not (NumPy)."""
    if _shapes.prod(x._shape[i] for i in axes) == 0 and _shapes.prod(
            s for i, s in enumerate(x._shape) if i not in axes):
        raise ValueError(f"{name}: {what} of an empty {'vector' if len(axes) < 2 else 'matrix'} "
                         f"(axes {axes} of shape {x._shape}) has no value")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The ``ord``-norm of the vectors of ``x`` along ``axis`` (None: the whole array as one
    vector; an int; a tuple of ints: the elements over those axes form one vector).

    ``ord``: 2 (default, Euclidean), 1, inf (max |x|), -inf (min |x|), 0 (the number of
    nonzeros, as a float), any other real p: (sum |x|^p)^(1/p). ``x`` must have a real or
    complex floating dtype (TypeError otherwise); the result has the real dtype of the same
    precision. NaN propagates (ord=0 counts it). Norms of empty vectors are 0 (inf for
    negative p); ord=-inf of an empty vector raises ValueError.
    """
    name = "vector_norm"
    plain = type(ord) is int and ord == 2 and keepdims is False   # (repeat calls of these: in C)
    if plain and (r := _reduce_fast.serve(name, x, axis)) is not None:
        return r
    _check_floating(x, name)
    op, p = vector_norm_op(ord)
    axes = _lp.norm_axes(name, x.ndim, axis, 0)
    if op == "norm_min":
        _nonempty(x, axes, name, "the minimum")
    return _reduce_into(op, x, axes, bool(keepdims), real_dtype(x._dtype), p, learn=(name, axis) if plain else None)


def _keep(r, shape: tuple):
    """The C-contiguous result ``r`` viewed with ``shape`` (the kept size-1 axes)."""
    return r._view(r._offset, shape, _shapes.c_strides(shape, r._dtype.itemsize))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The ``ord``-norm of each matrix of ``x`` (the last two axes of a stack).

    ``ord``: 'fro' (default, the square root of the sum of |x|^2), 'nuc' (sum of the
    singular values), 1 / -1 (largest / smallest column sum of |x|), inf / -inf (largest /
    smallest row sum), 2 / -2 (largest / smallest singular value). ``x`` must have a real or
    complex floating dtype; the result has the real dtype of the same precision, of shape
    ``x.shape[:-2]`` (``keepdims``: with two size-1 axes). Empty matrices: 0, except for
    -1, -inf and -2, which raise ValueError where NumPy does.
    """
    name = "matrix_norm"
    _check_floating(x, name)
    shape = _lp.matrix_norm_shape(x._shape, bool(keepdims), ord)
    nd = x.ndim
    rt = real_dtype(x._dtype)
    if isinstance(ord, str) and ord == "fro":
        return _reduce_into("norm2", x, (nd - 2, nd - 1), bool(keepdims), rt)
    if not isinstance(ord, str) and ord in (1, -1, _INF, -_INF):
        # 1: sums down the columns (axis -2), then over the columns; inf: along the rows
        s = _reduce_into("norm1", x, (nd - 2 if abs(ord) == 1 else nd - 1,), False, rt)
        last = (nd - 2,)
        if ord < 0:
            _nonempty(s, last, name, "the minimum")
        r = _reduce_into("norm_max" if ord > 0 else "norm_min", s, last, False, rt)
        return _keep(r, shape) if keepdims else r
    # 2, -2, 'nuc': the singular values
    batch, m, n = x._shape[:-2], x._shape[-2], x._shape[-1]
    if x.size == 0:
        if ord == -2 and min(m, n) == 0 and _shapes.prod(batch):
            raise ValueError(f"{name}: the smallest singular value of an empty matrix (shape {x._shape}) "
                             f"has no value")
        from .._api._creation import zeros

        return zeros(shape, dtype=rt, device=x._device)
    from ._decompositions import svdvals

    sv = svdvals(x)
    op = {2: "norm_max", -2: "norm_min"}.get(ord, "norm1") if not isinstance(ord, str) else "norm1"
    r = _reduce_into(op, sv, (sv.ndim - 1,), False, rt)
    return _keep(r, shape) if keepdims else r


__all__ = ["matrix_norm", "vector_norm"]
