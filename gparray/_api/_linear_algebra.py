"""Linear algebra functions of the main namespace (spec section "Linear Algebra Functions"):
``matmul`` (also ``@``) on cuBLAS through the matmul planner, which turns transposed and
column-sliced views into op flags and broadcast batch dimensions into strided-batched calls
(gparray/_engine/_matmul_plan.py, gparray/_engine/_blas.py); integer and boolean products
on gparray's own kernels (gparray/_engine/_matmul_int.py)."""
from __future__ import annotations

from .._array._elementwise import conj
from .._array._matmul import _operands, matmul
from .._engine import _matmul_plan as _mp
from ._manipulation import expand_dims, moveaxis, permute_dims, reshape


def tensordot(x1, x2, /, *, axes=2):
    """Contraction of ``x1``'s and ``x2``'s ``axes`` (an int N: the last N of x1 with the
    first N of x2; or a pair of equally long axis sequences), as one matmul of the permuted
    operands reshaped to matrices (gparray/_engine/_matmul_plan.py, ``tensordot_plan``)."""
    _operands(x1, x2, "tensordot")
    p = _mp.tensordot_plan(x1._shape, x2._shape, axes)
    a = reshape(permute_dims(x1, p.perm1), (p.m, p.k))
    b = reshape(permute_dims(x2, p.perm2), (p.k, p.n))
    return reshape(matmul(a, b), p.shape)


def vecdot(x1, x2, /, *, axis=-1):
    """Dot products of the vectors along ``axis`` (in [-N, -1], N the smaller number of
    dimensions), the first operand conjugated; the other dimensions broadcast."""
    _operands(x1, x2, "vecdot")
    shape = _mp.vecdot_shape(x1._shape, x2._shape, axis)
    ax = axis if axis < 0 else axis - x1.ndim
    a, b = moveaxis(x1, ax, -1), moveaxis(x2, ax, -1)
    if a._dtype.kind == "c":
        a = conj(a)
    return reshape(matmul(expand_dims(a, axis=-2), expand_dims(b, axis=-1)), shape)


__all__ = ["matmul", "tensordot", "vecdot"]
