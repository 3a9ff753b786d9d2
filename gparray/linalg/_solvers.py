"""Inverses, solves and determinants of ``gparray.linalg``: inv, solve, det, slogdet,
pinv, matrix_rank, matrix_power (LU on cuSOLVER and cuBLAS, gparray/_engine/_solver.py;
pinv and matrix_rank on the SVD of ``_decompositions.py``).

Operands are stacks (..., M, N) of float32, float64, complex64 or complex128 matrices
(TypeError for other dtypes). The LU of a C-contiguous copy of x is the column-major LU of
x^T: ``inv`` solves x^T Y = I (Y^T = inv(x) is the row-major view of Y, no transposition)
and det(x^T) = det(x); ``solve`` copies x1.mT (column-major x1) and x2.mT (column-major
right-hand sides) and returns the transposed view of the solution. Small stacks take
cuBLAS' batched getrf/getri/getrs; larger matrices a host loop of cuSOLVER calls.

``inv`` and ``solve`` raise LinAlgError ("Singular matrix") naming the first singular
matrix of a stack: they read the LU status back once, which synchronizes the stream.
``det`` and ``slogdet`` never raise and never synchronize (a singular matrix has det 0).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core._device import same_device
from .._engine import _linalg_plan as _lp
from .._engine import _shapes, _solver
from . import _xp
from ._decompositions import _batch_stride, _input, _svd, dtype_name
from ._errors import check_info, check_status

_I32 = np.dtype("int32")
_U64 = np.dtype("uint64")


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


# ---------------------------------------------------------------------------- inv
def inv(x, /):
    """Inverse of each square matrix of ``x`` (..., M, M). Real matrices up to 8 x 8:
    gparray's kernel (one thread per matrix, LAPACK's getf2 + getri in registers); other
    stacks of small matrices: cuBLAS getrfBatched + getriBatched; else cuSOLVER getrf +
    getrs against the identity. Raises LinAlgError ("Singular matrix", with the stack
    index); the status read synchronizes."""
    return _inv(_xp, x)


def _inv(o, x):
    dt, _ = _input(o, x, "inv")
    b, n = _lp.square("inv", x.shape)
    count = _shapes.prod(b)
    if count == 0 or n == 0:
        return o.empty(x.shape, dt, x)
    name = dtype_name(dt)
    if _solver.inv_small_ok(name, n):
        # gparray's kernel: x read in place through its strides (when its batch dimensions
        # walk with one stride), the LU of x as LAPACK sees NumPy's input, C-order inverses
        isz = dt.itemsize
        sb = _batch_stride(x.shape, x.strides)
        if x.dtype != dt or sb is None:
            x = o.contig(x, dt)
            sb = _batch_stride(x.shape, x.strides)
        out = o.empty(x.shape, dt, x)
        status = o.zeros((2,), _U64, x)      # the singular matrices: 16 bytes to read back
        st = x.strides
        _solver.inv_small(name, n, o.ptr(x), count, sb // isz, st[-2] // isz, st[-1] // isz, o.ptr(out),
                          o.ptr(status), o.dev(x))
        check_status("inv", o.host(status), b, count, "Singular matrix")
        return out
    # column-major x (the C-contiguous copy of x^T), factored as LAPACK sees NumPy's input, so
    # exactly singular matrices show the same zero pivots as numpy.linalg.inv; the inverse
    # comes back column-major: its C-order view is the transpose
    a = o.contig(x.mT, dt)
    ipiv = o.empty(b + (n,), _I32, x)
    info = o.empty(b, _I32, x)
    out = o.empty(x.shape, dt, x) if _solver.batched("getri", n, n, count) else o.eye(b, n, dt, x)
    _solver.inv(dt.name, n, o.ptr(a), count, o.ptr(out), o.ptr(ipiv), o.ptr(info), o.dev(x))
    check_info("inv", o.host(info), b, "Singular matrix")
    return out.mT


# ---------------------------------------------------------------------------- solve
def solve(x1, x2, /):
    """The solution X of x1 @ X = x2 for the square matrices of ``x1`` (..., M, M).
    ``x2`` is one vector (M,) when it is 1-D (the result (..., M)), else a stack (..., M, K)
    whose batch dimensions broadcast against x1's (the result (..., M, K)); dtypes promote.
    When x1 is one matrix it is factored once and every right-hand side is solved in one
    call. Raises LinAlgError ("Singular matrix", with the stack index); the status read
    synchronizes."""
    if _xp.is_array(x1) and _xp.is_array(x2):
        same_device("solve", x1, x2)
    return _solve(_xp, x1, x2)


def _solve(o, x1, x2):
    d1, _ = _input(o, x1, "solve")
    d2, _ = _input(o, x2, "solve")
    dt = np.dtype(_lp.float_dtype("solve", o.promote(d1, d2).name))
    s1, s2 = _lp.solve_shapes(x1.shape, x2.shape)
    vector = len(x2.shape) == 1
    m = s1[-1]
    b = s2[:-1] if vector else s2[:-2]
    k = 1 if vector else s2[-1]
    count = _shapes.prod(b)
    if count == 0 or m == 0 or k == 0:
        return o.empty(s2, dt, x1)
    # right-hand sides: column-major B (ldb = M) is the C-contiguous copy of B^T
    src = o.broadcast_to(x2, b + (m,)) if vector else o.broadcast_to(x2, s2).mT
    dev = o.dev(x1)
    b1 = tuple(x1.shape[:-2])
    if _shapes.prod(b1) == 1:
        # one matrix: one LU for every right-hand side of the stack (nrhs = count * K)
        a = o.contig(o.reshape(x1, (m, m)).mT, dt)
        ipiv, info = o.empty((m,), _I32, x1), o.empty((), _I32, x1)
        _solver.getrf(dt.name, m, o.ptr(a), 1, o.ptr(ipiv), o.ptr(info), dev)
        if _solver.lu_perm_ok(m):
            # its pivots as one permutation, the right-hand sides gathered through it (that is
            # their copy), two triangular solves: no getrs row interchanges
            perm = o.empty((m,), np.dtype("int64"), x1)
            _solver.lu_perm(o.ptr(ipiv), o.ptr(perm), m, dev)
            rhs = o.gather_last(src, perm, dt)
            _solver.lu_solve(dt.name, m, o.ptr(a), o.ptr(rhs), count * k, dev)
        else:
            rhs = o.contig(src, dt)
            _solver.getrs(dt.name, _solver.OP_N, m, count * k, o.ptr(a), o.ptr(ipiv), o.ptr(rhs), 1, dev)
        check_info("solve", o.host(info), (), "Singular matrix")
    else:
        rhs = o.contig(src, dt)
        a = o.contig((x1 if b1 == b else o.broadcast_to(x1, s1)).mT, dt)
        ipiv, info = o.empty(b + (m,), _I32, x1), o.empty(b, _I32, x1)
        _solver.getrf(dt.name, m, o.ptr(a), count, o.ptr(ipiv), o.ptr(info), dev)
        _solver.getrs(dt.name, _solver.OP_N, m, k, o.ptr(a), o.ptr(ipiv), o.ptr(rhs), count, dev)
        check_info("solve", o.host(info), b, "Singular matrix")
    return rhs if vector else rhs.mT


# ---------------------------------------------------------------------------- det, slogdet
def _lu_diag(o, x, dt, b, n):
    """(the diagonals of U (..., n), the pivots' sign (..., int64 +1/-1)) of the LU of x."""
    count = _shapes.prod(b)
    a = o.contig(x.mT, dt)                   # column-major x: the LU NumPy's LAPACK call computes
    ipiv = o.empty(b + (n,), _I32, x)
    info = o.empty(b, _I32, x)               # not read: a singular matrix has a zero on U's diagonal
    _solver.getrf(dt.name, n, o.ptr(a), count, o.ptr(ipiv), o.ptr(info), o.dev(x))
    swaps = o.count_nonzero(ipiv != o.arange(1, n + 1, _I32, x), axis=-1)   # ipiv[i] != i + 1: a swap
    return o.diag(a), 1 - 2 * (swaps % 2)


def det(x, /):
    """Determinant of each square matrix of ``x`` (..., M, M) (1 for 0 x 0), from the LU
    factorization: the product of U's diagonal and the sign of the row permutation. A
    singular matrix gives 0 (no error, no synchronization)."""
    return _det(_xp, x)


def _det(o, x):
    dt, _ = _input(o, x, "det")
    b, n = _lp.square("det", x.shape)
    if _shapes.prod(b) == 0:
        return o.empty(b, dt, x)
    if n == 0:
        return o.zeros(b, dt, x) + 1
    d, psign = _lu_diag(o, x, dt, b, n)
    return o.prod(d, axis=-1) * o.astype(psign, dt)


def slogdet(x, /):
    """Sign and natural log of the absolute value of the determinant of each square matrix
    of ``x`` (..., M, M): det = sign * exp(logabsdet). ``sign`` has x's dtype (a complex
    number of modulus 1 for complex x), ``logabsdet`` the real dtype; a singular matrix
    gives sign 0 and logabsdet -inf (no error, no synchronization)."""
    return _slogdet(_xp, x)


def _slogdet(o, x):
    dt, rdt = _input(o, x, "slogdet")
    b, n = _lp.square("slogdet", x.shape)
    if _shapes.prod(b) == 0:
        return SlogdetResult(o.empty(b, dt, x), o.empty(b, rdt, x))
    if n == 0:
        return SlogdetResult(o.zeros(b, dt, x) + 1, o.zeros(b, rdt, x))
    d, psign = _lu_diag(o, x, dt, b, n)
    sign = o.prod(o.sign(d), axis=-1) * o.astype(psign, dt)
    return SlogdetResult(sign, o.sum(o.log(o.abs(d)), axis=-1))


# ---------------------------------------------------------------------------- pinv, matrix_rank
def _rtol(o, rtol, m, n, rdt, smax, name):
    """The cutoff rtol * largest singular value, shape (..., 1); rtol None: max(M, N) * eps."""
    if rtol is None:
        return smax * float(max(m, n) * np.finfo(rdt).eps)
    if o.is_array(rtol):
        if rtol.dtype.kind != "f":
            raise TypeError(f"{name}: rtol must have a real floating dtype, got {rtol.dtype}")
        return o.expand_dims(rtol, axis=-1) * smax
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"{name}: rtol must be a real number, an Array or None, got {type(rtol).__name__}")
    return smax * float(rtol)


def _rtol_device(x, rtol, name):
    """An Array ``rtol`` must be on x's device (checked before the SVD runs)."""
    if _xp.is_array(x) and _xp.is_array(rtol):
        same_device(name, x, rtol, what="x and rtol")


def pinv(x, /, *, rtol=None):
    """Moore-Penrose pseudo-inverse (..., N, M) of the matrices of ``x`` (..., M, N), from
    the SVD: singular values at most ``rtol`` times the largest are dropped. ``rtol``: a
    float or an Array broadcasting against the batch dimensions; default max(M, N) * eps."""
    _rtol_device(x, rtol, "pinv")
    return _pinv(_xp, x, rtol)


def _pinv(o, x, rtol):
    dt, rdt = _input(o, x, "pinv")
    if len(x.shape) < 2:
        _lp.square("pinv", x.shape)
    b, m, n = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]
    if _shapes.prod(b) == 0 or m == 0 or n == 0:
        return o.zeros(b + (n, m), dt, x)
    u, s, vh = _svd(o, x, False, True, "pinv")
    cut = _rtol(o, rtol, m, n, rdt, o.max(s, axis=-1, keepdims=True), "pinv")
    keep = s > cut
    sinv = o.where(keep, 1 / o.where(keep, s, 1), 0)              # no division by a dropped zero
    v = o.conj(vh).mT if dt.kind == "c" else vh.mT                # (..., N, K)
    uh = o.conj(u).mT if dt.kind == "c" else u.mT                 # (..., K, M)
    return o.matmul(v * o.astype(o.expand_dims(sinv, axis=-2), dt), uh)


def matrix_rank(x, /, *, rtol=None):
    """Number of singular values of each matrix of ``x`` (..., M, N) larger than ``rtol``
    times the largest (default rtol max(M, N) * eps; a float or an Array broadcasting
    against the batch dimensions), as int64 (...)."""
    _rtol_device(x, rtol, "matrix_rank")
    return _matrix_rank(_xp, x, rtol)


def _matrix_rank(o, x, rtol):
    dt, rdt = _input(o, x, "matrix_rank")
    if len(x.shape) < 2:
        _lp.square("matrix_rank", x.shape)
    b, m, n = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]
    if _shapes.prod(b) == 0 or m == 0 or n == 0:
        return o.zeros(b, np.dtype("int64"), x)
    s = _svd(o, x, False, False, "matrix_rank")
    cut = _rtol(o, rtol, m, n, rdt, o.max(s, axis=-1, keepdims=True), "matrix_rank")
    return o.count_nonzero(s > cut, axis=-1)


# ---------------------------------------------------------------------------- matrix_power
def matrix_power(x, n, /):
    """``x`` (..., M, M) raised to the integer power ``n``: repeated squaring with matmul;
    n = 0 gives identity matrices, n < 0 the power of ``inv(x)`` (LinAlgError when a
    matrix is singular)."""
    return _matrix_power(_xp, x, n)


def _matrix_power(o, x, n):
    dt, _ = _input(o, x, "matrix_power")
    steps, invert = _lp.matrix_power_plan(x.shape, n)
    b, m = _lp.square("matrix_power", x.shape)
    if n == 0:
        return o.eye(b, m, dt, x)
    base = _inv(o, x) if invert else x
    result = None
    for i, bit in enumerate(steps):
        if bit:
            result = base if result is None else o.matmul(result, base)
        if i < len(steps) - 1:
            base = o.matmul(base, base)
    return o.contig(result, dt) if result is x else result


__all__ = ["det", "inv", "matrix_power", "matrix_rank", "pinv", "slogdet", "solve", "SlogdetResult"]
