"""Integer and boolean ``matmul`` ("matmul" family, gparray/_kernels/matmul.cu): gparray's
own kernels for the products cuBLAS does not compute, with NumPy's semantics (exact in the
result type with wraparound; booleans: OR of ANDs).

``launch_plan`` (pure Python, CPU-tested) reads both operands through their element strides
(1-D operands as a row (1, k) or a column (k, 1) of stride 0 in the added dimension), so no
layout is ever copied; the batch dimensions broadcast (stride 0 for a broadcast operand)
and are merged, and the kernel finds each matrix's operands from its C-order batch index.
It picks

* ``tiled`` (``gp_matmul_int``): 64 x 64 tiles of the result, 16-deep slices of k staged in
  shared memory, 4 x 4 outputs per thread; blocks loop over every tile of the stack;
* ``dot`` (``gp_matmul_int_dot``): one output per block and a block reduction over k, when
  the tiles would be mostly empty and k is long (dot products, few rows times few columns),
  where one tile's sequential walk over k would leave the GPU idle.

The caller (gparray/_api/_linear_algebra.py) gives both operands the result dtype (casting the
one that differs), allocates the C-contiguous result and handles empty and k == 0
products (the planner's kinds "empty" and "zeros").
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _shapes
from ._launch import ctype, launch, nd_template, strided_params

FAMILY = "matmul"
THREADS = 256                   # GP_MM_THREADS
BM, BN, BK = 64, 64, 16         # GP_MM_BM, GP_MM_BN, GP_MM_BK
MAX_GRID = 1 << 22              # blocks per launch; blocks loop over the rest
DOT_MAX_OUTPUTS = 16            # "dot" when a matrix has at most this many outputs ...
DOT_MIN_K = 256                 # ... and k is at least this long
DTYPES = tuple(np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                     "uint64"))

_ptr = np.uint64
_i64 = np.int64


class IntMatmulLaunch(NamedTuple):
    """How one integer matmul runs (element strides; offsets are 64-bit in the kernels)."""

    variant: str          # "tiled" | "dot"
    m: int
    n: int
    k: int
    a_strides: tuple      # (row, column) element strides of A (x1; a 1-D x1 is one row)
    b_strides: tuple      # (row, column) element strides of B (x2; a 1-D x2 is one column)
    batch_shape: tuple    # merged broadcast batch shape (at least one dimension)
    batch_strides: tuple  # (A's, B's) element strides over batch_shape
    count: int            # matrices in the stack
    nd: int               # the ND template argument
    tiles_m: int
    tiles_n: int
    total: int            # work items: tiles of the stack (tiled) or outputs (dot)
    grid: int


def _as_matrix(shape: tuple, strides: tuple, row: bool) -> tuple:
    if len(shape) == 1:
        return ((1,) + tuple(shape), (0,) + tuple(strides)) if row else \
               (tuple(shape) + (1,), tuple(strides) + (0,))
    return tuple(shape), tuple(strides)


def launch_plan(x1_shape: tuple, x1_strides: tuple, x2_shape: tuple, x2_strides: tuple,
                max_grid: int | None = None) -> IntMatmulLaunch:
    """The launch of ``x1 @ x2`` for operands of these shapes and element strides, which the
    matmul planner (``_matmul_plan.plan``) has accepted with kind "int" (at least one
    element to write and k >= 1)."""
    s1, st1 = _as_matrix(x1_shape, x1_strides, True)
    s2, st2 = _as_matrix(x2_shape, x2_strides, False)
    m, k, n = s1[-2], s1[-1], s2[-1]
    batch = _shapes.broadcast_shapes(s1[:-2], s2[:-2])
    ba = _shapes.broadcast_strides(s1[:-2], st1[:-2], batch)
    bb = _shapes.broadcast_strides(s2[:-2], st2[:-2], batch)
    mshape, (ma, mb) = _shapes.merge_dims(batch, [ba, bb])
    count = _shapes.prod(batch)
    max_grid = MAX_GRID if max_grid is None else max_grid
    tiles_m, tiles_n = -(-m // BM), -(-n // BN)
    if m * n <= DOT_MAX_OUTPUTS and k >= DOT_MIN_K:
        variant, total = "dot", count * m * n
    else:
        variant, total = "tiled", count * tiles_m * tiles_n
    return IntMatmulLaunch(variant, m, n, k, (st1[-2], st1[-1]), (st2[-2], st2[-1]), mshape, (ma, mb), count,
                           nd_template(len(mshape)), tiles_m, tiles_n, total, max(1, min(total, max_grid)))


def _addr(x) -> int:
    return x._buf.ptr + x._offset


def kernel_name(variant: str, dtype, nd: int) -> str:
    """The name expression of ``variant`` for ``dtype`` and ``nd`` batch dimensions."""
    base = "gp_matmul_int" if variant == "tiled" else "gp_matmul_int_dot"
    return f"{base}<{ctype(np.dtype(dtype))}, {nd}>"


def matmul(x1, x2, out) -> None:
    """``out`` (C-contiguous, the result's shape and dtype, at least one element) =
    ``x1 @ x2`` for operands (layout objects, any strides) of ``out``'s dtype: bool or an
    integer dtype; k >= 1."""
    isz = out._dtype.itemsize
    e1 = tuple(s // isz for s in x1._strides)
    e2 = tuple(s // isz for s in x2._strides)
    p = launch_plan(x1._shape, e1, x2._shape, e2)
    args = (_ptr(_addr(out)), _ptr(_addr(x1)), _ptr(_addr(x2)),
            strided_params(p.batch_shape, list(p.batch_strides), p.nd),
            _i64(p.m), _i64(p.n), _i64(p.k), _i64(p.a_strides[0]), _i64(p.a_strides[1]),
            _i64(p.b_strides[0]), _i64(p.b_strides[1]))
    if p.variant == "tiled":
        args += (_i64(p.tiles_m), _i64(p.tiles_n), _i64(p.total))
    else:
        args += (_i64(p.total),)
    launch(FAMILY, kernel_name(p.variant, out._dtype, p.nd), out._device._id, p.grid, args, 0, THREADS)


def instances() -> list[str]:
    """Registered "matmul" instances: both variants for bool and every integer dtype, up to
    4 merged batch dimensions (more compile on first use)."""
    return [kernel_name(v, dt, 4) for dt in DTYPES for v in ("tiled", "dot")]
