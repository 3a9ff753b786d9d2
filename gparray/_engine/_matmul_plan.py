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
    do not broadcast (NumPy's wording). Kind "int" plans carry only the shapes: the integer
    kernels read the operands through their strides (``_matmul_int.launch_plan``)."""
    for i, s in enumerate((x1_shape, x2_shape)):
        if len(s) == 0:
            raise ValueError(f"{name}: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                             f"with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
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


# ---------------------------------------------------------------------------- tensordot, vecdot
@dataclass(frozen=True)
class TensordotPlan:
    """``tensordot`` as one matmul: x1 permuted by ``perm1`` and reshaped to (m, k), x2
    permuted by ``perm2`` and reshaped to (k, n); the (m, n) product reshaped to ``shape``
    (x1's free axes, then x2's, in order)."""
    perm1: tuple
    perm2: tuple
    m: int
    k: int
    n: int
    shape: tuple


def _axis_list(axes, ndim: int, which: str, name: str) -> tuple:
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int):
            raise TypeError(f"{name}: axes must be integers, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for {which} of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {which}'s axes {tuple(axes)}")
    return tuple(out)


def tensordot_plan(shape1: tuple, shape2: tuple, axes=2, name: str = "tensordot") -> TensordotPlan:
    """The spec's ``tensordot(x1, x2, axes=...)``: ``axes`` an int N >= 0 (the last N axes of
    x1 with the first N of x2) or a pair of equally long sequences of axes; contracted axes
    must have equal sizes."""
    n1, n2 = len(shape1), len(shape2)
    if isinstance(axes, bool):
        raise TypeError(f"{name}: axes must be an int or a pair of sequences, got {axes!r}")
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"{name}: axes must be a non-negative integer, got {axes}")
        if axes > n1 or axes > n2:
            raise ValueError(f"{name}: axes={axes} exceeds the dimensions of the operands ({n1}, {n2})")
        a1, a2 = tuple(range(n1 - axes, n1)), tuple(range(axes))
    else:
        try:
            s1, s2 = axes
            s1, s2 = tuple(s1), tuple(s2)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: axes must be an int or a pair of sequences, got {axes!r}") from None
        if len(s1) != len(s2):
            raise ValueError(f"{name}: axes sequences of different lengths ({len(s1)}, {len(s2)})")
        a1, a2 = _axis_list(s1, n1, "x1", name), _axis_list(s2, n2, "x2", name)
    for i, j in zip(a1, a2):
        if shape1[i] != shape2[j]:
            raise ValueError(f"{name}: shape mismatch for the contracted axes: x1 axis {i} has size "
                             f"{shape1[i]}, x2 axis {j} has size {shape2[j]}")
    free1 = tuple(i for i in range(n1) if i not in a1)
    free2 = tuple(j for j in range(n2) if j not in a2)
    m = _shapes.prod(shape1[i] for i in free1)
    k = _shapes.prod(shape1[i] for i in a1)
    n = _shapes.prod(shape2[j] for j in free2)
    return TensordotPlan(free1 + a1, a2 + free2, m, k, n,
                         tuple(shape1[i] for i in free1) + tuple(shape2[j] for j in free2))


def vecdot_shape(shape1: tuple, shape2: tuple, axis: int = -1, name: str = "vecdot") -> tuple:
    """The result shape of the spec's ``vecdot(x1, x2, axis=axis)``: ``axis`` in [-N, -1]
    with N the smaller number of dimensions (counted from the end, so it names the same
    dimension of both), contracted sizes equal, the other dimensions broadcast."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{name}: axis must be an integer, got {axis!r}")
    nd = min(len(shape1), len(shape2))
    if nd == 0:
        raise ValueError(f"{name}: operands must have at least one dimension")
    if not -nd <= axis <= -1:
        if 0 <= axis < nd and len(shape1) == len(shape2):
            axis -= nd
        else:
            raise ValueError(f"{name}: axis {axis} is out of bounds for operands of dimensions "
                             f"{len(shape1)} and {len(shape2)} (the spec allows [-{nd}, -1])")
    if shape1[axis] != shape2[axis]:
        raise ValueError(f"{name}: x1 and x2 must have the same size along axis {axis}, got "
                         f"{shape1[axis]} and {shape2[axis]}")
    r1 = shape1[:len(shape1) + axis] + shape1[len(shape1) + axis + 1:]
    r2 = shape2[:len(shape2) + axis] + shape2[len(shape2) + axis + 1:]
    return _shapes.broadcast_shapes(r1, r2, name=name)
