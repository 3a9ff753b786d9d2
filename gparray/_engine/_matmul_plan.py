"""Planning of ``matmul``: which BLAS call computes ``x1 @ x2`` straight from the operands'
layouts. Pure Python, CPU-testable (tests/test_matmul_plan.py runs every plan through a
NumPy model of the BLAS call on the operands' raw buffers).

cuBLAS is column-major, gparray's result C-contiguous. The plan therefore computes the
transposed problem: the row-major result C (m x n) is the column-major C' (n x m, ld n), and
C' = op(B') op(A'), where B' and A' are the operands' own memory read column-major:

* an operand X of logical (rows r, cols c) with element strides (s0, s1) and s1 == 1 (rows
  contiguous) is, column-major, the c x r matrix X^T with ld s0: op "N";
* with s0 == 1 (columns contiguous) it is the r x c matrix X with ld s1, so the call takes
  its transpose: op "T";
* anything else (steps in both, negative strides, an ld below the BLAS minimum or above
  int32) is copied once into a C-contiguous pool buffer first (``copy``: then op "N", ld c).

Stacks: the batch dimensions of both operands broadcast; after merging the dimensions every
operand (and the C-contiguous result) walks with one stride, the innermost run is one
strided-batched call (a broadcast operand has batch stride 0, so it is never materialized)
and the dimensions that do not merge are looped over on the host (``outer``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _shapes

INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class Operand:
    """How the BLAS call reads one operand (column-major terms of the swapped problem)."""
    op: str              # "N" or "T"
    ld: int              # leading dimension, elements
    copy: bool           # copied into a C-contiguous buffer first (op/ld describe the copy)


@dataclass(frozen=True)
class MatmulPlan:
    """``kind``: "empty" (no element to write), "zeros" (k == 0: the result is zeros), "blas"
    (cuBLAS: gemm, strided-batched gemm; ``vector`` when n == 1 or m == 1 for gemv) or "int"
    (integer/bool: gparray's own kernel reads the operands through their strides).
    Row-major problem: C (m, n) = A (m, k) @ B (k, n) per matrix of the stack; 1-D operands
    count as (1, k) / (k, 1) and their dimension is dropped from ``shape``."""
    kind: str
    shape: tuple          # result shape
    m: int
    n: int
    k: int
    batch_shape: tuple    # broadcast batch dims of the result
    a: Operand | None     # x1 (A)
    b: Operand | None     # x2 (B)
    inner: int            # matrices per strided-batched call
    inner_strides: tuple  # (A, B, C) element strides between those matrices
    outer: tuple          # ((extent, (A, B, C) strides), ...) looped over on the host
    vector: bool


def _operand(r: int, c: int, s0: int, s1: int) -> Operand:
    """The BLAS view of a logical (r, c) matrix with element strides (s0, s1)."""
    # a dimension of extent 1 has no stride to respect: give it the contiguous one
    t0 = max(c, 1) if r == 1 else s0
    t1 = 1 if c == 1 else s1
    if t1 == 1 and max(c, 1) <= t0 <= INT32_MAX:
        return Operand("N", t0, False)
    t0 = 1 if r == 1 else s0
    t1 = max(r, 1) if c == 1 else s1
    if t0 == 1 and max(r, 1) <= t1 <= INT32_MAX:
        return Operand("T", t1, False)
    return Operand("N", max(c, 1), True)


def core_error(name: str, x1_shape: tuple, x2_shape: tuple) -> str | None:
    """NumPy's message for operands whose contracted dimensions differ, else None."""
    k1 = x1_shape[-1]
    k2 = x2_shape[0] if len(x2_shape) == 1 else x2_shape[-2]
    if k1 == k2:
        return None
    return (f"{name}: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
            f"(n?,k),(k,m?)->(n?,m?) (size {k2} is different from {k1})")


def plan(x1_shape: tuple, x1_strides: tuple, x2_shape: tuple, x2_strides: tuple, kind: str = "f",
         name: str = "matmul") -> MatmulPlan:
    """The plan of ``x1 @ x2`` for operands of these shapes and element strides; ``kind``:
    the NumPy kind of the result dtype ("f"/"c": BLAS, "i"/"u"/"b": our kernel).
    Raises ValueError for 0-d operands, mismatched core dimensions and batch dimensions that
    do not broadcast (NumPy's wording)."""
    if len(x1_shape) == 0 or len(x2_shape) == 0:
        raise ValueError(f"{name}: operands must have at least one dimension, got shapes {tuple(x1_shape)} "
                         f"and {tuple(x2_shape)}")
    err = core_error(name, tuple(x1_shape), tuple(x2_shape))
    if err:
        raise ValueError(err)
    v1, v2 = len(x1_shape) == 1, len(x2_shape) == 1
    s1, st1 = ((1,) + tuple(x1_shape), (0,) + tuple(x1_strides)) if v1 else (tuple(x1_shape), tuple(x1_strides))
    s2, st2 = ((tuple(x2_shape) + (1,)), tuple(x2_strides) + (0,)) if v2 else (tuple(x2_shape), tuple(x2_strides))
    m, k = s1[-2], s1[-1]
    n = s2[-1]
    try:
        batch = _shapes.broadcast_shapes(s1[:-2], s2[:-2], name=name)
    except ValueError:
        raise ValueError(f"{name}: operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {tuple(x1_shape)}->{s1[:-2]} and "
                         f"{tuple(x2_shape)}->{s2[:-2]}") from None
    shape = batch + (() if v1 else (m,)) + (() if v2 else (n,))
    count = _shapes.prod(batch)
    vector = (m == 1 or n == 1) and count == 1
    if count == 0 or m == 0 or n == 0:
        return MatmulPlan("empty", shape, m, n, k, batch, None, None, 0, (0, 0, 0), (), vector)
    if k == 0:
        return MatmulPlan("zeros", shape, m, n, k, batch, None, None, 0, (0, 0, 0), (), vector)
    if kind not in "fc":
        return MatmulPlan("int", shape, m, n, k, batch, None, None, 0, (0, 0, 0), (), vector)
    a = _operand(m, k, st1[-2], st1[-1])
    b = _operand(k, n, st2[-2], st2[-1])
    # batch strides: a copied operand is C-contiguous over its own (unbroadcast) shape
    ba = _shapes.c_strides(s1[:-2]) if a.copy else st1[:-2]
    ba = tuple(x * m * k for x in ba) if a.copy else ba
    bb = _shapes.c_strides(s2[:-2]) if b.copy else st2[:-2]
    bb = tuple(x * k * n for x in bb) if b.copy else bb
    sa = _shapes.broadcast_strides(s1[:-2], ba, batch)
    sb = _shapes.broadcast_strides(s2[:-2], bb, batch)
    sc = tuple(x * m * n for x in _shapes.c_strides(batch))
    if not batch:
        return MatmulPlan("blas", shape, m, n, k, batch, a, b, 1, (0, 0, 0), (), vector)
    mshape, (ma, mb, mc) = _shapes.merge_dims(batch, [sa, sb, sc])
    inner = mshape[-1]
    outer = tuple((mshape[i], (ma[i], mb[i], mc[i])) for i in range(len(mshape) - 1))
    return MatmulPlan("blas", shape, m, n, k, batch, a, b, inner, (ma[-1], mb[-1], mc[-1]), outer, vector)
