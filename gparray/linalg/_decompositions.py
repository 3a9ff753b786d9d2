"""Factorizations of ``gparray.linalg``: cholesky, qr, eigh, eigvalsh, svd, svdvals, on
cuSOLVER (gparray/_engine/_solver.py).

Every function takes a stack (..., M, N) of float32, float64, complex64 or complex128
matrices (TypeError for other dtypes) and copies it once into a C-contiguous buffer that
the routine overwrites. cuSOLVER is column-major: a C-contiguous (R, C) buffer is the
column-major C x R matrix, its transpose. Each function copies either ``x`` (the routine
sees x^T) or ``x.mT`` (it sees x) so that the results land in buffers whose row-major
views are the answer or its transpose, returned as views (``.mT``) without another copy.

Functions that can fail on their input (cholesky: not positive definite; eigh, svd: no
convergence) read the routines' status array back once: that synchronizes the stream.

The algorithms are ``_name(o, ...)`` with ``o`` the array operations (gparray/linalg/_xp.py
on the GPU; the CPU tier passes a NumPy twin and a LAPACK model of the bindings).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._engine import _linalg_plan as _lp
from .._engine import _shapes, _solver
from . import _xp
from ._errors import check_info

_I32 = np.dtype("int32")


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


_inputs: dict = {}   # (function name, operand dtype) -> (dtype, real dtype)


def _input(o, x, name: str):
    """(dtype, real dtype) of a linalg operand; TypeError for a non-Array or a dtype the
    factorizations do not take. Memoized per function and dtype (NumPy's ``dtype.name`` is
    computed in Python at every read: microseconds in a call of small matrices)."""
    if not o.is_array(x):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    key = (name, x.dtype)
    r = _inputs.get(key)
    if r is None:
        dt = _lp.float_dtype(name, x.dtype.name)
        r = _inputs[key] = (np.dtype(dt), np.dtype(_lp.real_of(dt)))
    return r


_names: dict = {}


def dtype_name(dt) -> str:
    """``dt.name``, memoized per dtype."""
    n = _names.get(dt)
    if n is None:
        n = _names[dt] = dt.name
    return n


def _batch_stride(shape, strides):
    """The byte stride from one matrix of a stack to the next in C order when the batch
    dimensions walk with one stride (0 for a single matrix), else None."""
    stride, span = None, None
    for e, st in zip(reversed(shape[:-2]), reversed(strides[:-2])):
        if e == 1:
            continue
        if stride is None:
            stride, span = st, st * e
        elif st != span:
            return None
        else:
            span = st * e
    return 0 if stride is None else stride


# ---------------------------------------------------------------------------- cholesky
def cholesky(x, /, *, upper=False):
    """Cholesky factor of the Hermitian positive-definite matrices of ``x`` (..., M, M):
    lower L with x = L @ L^H (default), or upper U = L^H with x = U^H @ U when ``upper``.
    Only the lower triangle of each matrix is read (the upper one when ``upper``).
    Raises LinAlgError ("Matrix is not positive definite") naming the first failing matrix
    of a stack; reading the status back synchronizes the stream."""
    return _cholesky(_xp, x, upper)


def _cholesky(o, x, upper):
    dt, _ = _input(o, x, "cholesky")
    b, n = _lp.square("cholesky", x.shape)
    count = _shapes.prod(b)
    if count == 0 or n == 0:
        return o.empty(x.shape, dt, x)
    # Always the column-major lower triangle: cuSOLVER's potrf is 2.5x faster on it than on
    # the upper one (n = 4096 float64 on an H100: 1.96 ms against 4.95 ms).
    # lower: the working matrix c is x.mT in C order (column-major x, whose lower triangle is
    # x's): x = L L^H, and the factor written in place, seen row-major, is L^T in c's upper
    # triangle. upper: c is x in C order (column-major x^T, whose lower triangle is x's upper
    # one): x^T = L' L'^H, x = U^H U with U = L'^T, again c's upper triangle. So once c's
    # lower triangle is zero, U = c and L = c.mT (a column-major view, as PyTorch returns it).
    # One call per matrix leaves that triangle alone: c is written by one pass that copies
    # only the triangle potrf reads and zeroes the rest. The batched routine uses it as
    # workspace: a full copy, then the triangle zeroed in place (queued before the status is
    # read, so the device does not wait for the host between the two).
    sb = None if x.dtype != dt or _solver.batched("potrf", n, n, count) else _batch_stride(x.shape, x.strides)
    masked = sb is None or count * (-(-n // 32)) ** 2 >= 2**31
    c = o.contig(x if upper else x.mT, dt) if masked else o.upper_copy(x, not upper, sb)
    info = o.empty(b, _I32, x)
    _solver.potrf(dtype_name(dt), n, o.ptr(c), count, _solver.FILL_LOWER, o.ptr(info), o.dev(x))
    if masked:
        c = o.keep_upper(c)
    check_info("cholesky", o.host(info), b, "Matrix is not positive definite")
    return c if upper else c.mT


# ---------------------------------------------------------------------------- qr
def qr(x, /, *, mode="reduced"):
    """QR factorization of the matrices of ``x`` (..., M, N): Q with orthonormal columns
    and upper-triangular R, x = Q @ R. ``mode="reduced"``: Q (..., M, K), R (..., K, N)
    with K = min(M, N); ``"complete"``: Q (..., M, M), R (..., M, N). Householder QR
    (geqrf, then orgqr/ungqr), one host call per matrix of a stack."""
    return _qr(_xp, x, mode)


def _qr(o, x, mode):
    dt, _ = _input(o, x, "qr")
    qshape, rshape = _lp.qr_shapes(x.shape, mode)
    b, m, n = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]
    k, count = min(m, n), _shapes.prod(b)
    if count == 0 or k == 0:
        q = o.eye(b, m, dt, x) if mode == "complete" and count else o.empty(qshape, dt, x)
        return QRResult(q, o.zeros(rshape, dt, x))
    c = o.contig(x.mT, dt)     # (..., N, M) C-contiguous: column-major x (lda = M)
    tau = o.empty(b + (k,), dt, x)
    dev = o.dev(x)
    _solver.geqrf(dt.name, m, n, o.ptr(c), count, o.ptr(tau), dev)
    mc = m if (mode == "complete" and m > n) else k    # columns of Q
    r = o.triu(c.mT[..., :mc, :])                      # (..., mc, N), copied before orgqr runs
    if mc <= n:
        qbuf, step = c, n * m                          # Q in place: the first mc columns
    else:
        qbuf, step = o.empty(b + (m, m), dt, x), m * m
        qbuf[..., :n, :] = c                           # the reflectors; orgqr fills the rest
    _solver.orgqr(dt.name, m, mc, k, o.ptr(qbuf), step, count, o.ptr(tau), dev)
    return QRResult(qbuf[..., :mc, :].mT, r)


# ---------------------------------------------------------------------------- eigh
def eigh(x, /):
    """Eigenvalues (ascending, real dtype of x's precision) and orthonormal eigenvectors
    (the columns of ``eigenvectors``) of the Hermitian matrices of ``x`` (..., M, M), read
    from their lower triangle as NumPy does. Stacks of matrices up to 32 x 32: Jacobi
    (syevjBatched); else divide and conquer (syevd) per matrix. Raises LinAlgError
    ("Eigenvalues did not converge"); reading the status back synchronizes the stream."""
    return _eigh(_xp, x, True)


def eigvalsh(x, /):
    """Eigenvalues (ascending, real dtype) of the Hermitian matrices of ``x`` (..., M, M),
    read from their lower triangle; as ``eigh`` without the eigenvectors."""
    return _eigh(_xp, x, False)


def _eigh(o, x, vectors):
    name = "eigh" if vectors else "eigvalsh"
    dt, rdt = _input(o, x, name)
    b, n = _lp.square(name, x.shape)
    count = _shapes.prod(b)
    if count == 0 or n == 0:
        w = o.empty(b + (n,), rdt, x)
        return EighResult(w, o.empty(x.shape, dt, x)) if vectors else w
    # A C-order copy of x is column-major x^T, whose upper triangle is x's lower one: for
    # real x the same symmetric matrix (its eigenvectors, written in place column-major, are
    # the columns of the copy's transpose); for complex x it is conj of the Hermitian matrix
    # (same eigenvalues, conjugate vectors), so complex eigenvectors copy x.mT (column-major
    # x, its lower triangle) instead: a transposing copy, where the others are contiguous.
    flip = vectors and dt.kind == "c"
    c = o.contig(x.mT if flip else x, dt)
    w = o.empty(b + (n,), rdt, x)
    info = o.empty(b, _I32, x)
    _solver.syevd(dt.name, n, o.ptr(c), count, o.ptr(w), vectors,
                  _solver.FILL_LOWER if flip else _solver.FILL_UPPER, o.ptr(info), o.dev(x))
    check_info(name, o.host(info), b, "Eigenvalues did not converge")
    return EighResult(w, c.mT) if vectors else w


# ---------------------------------------------------------------------------- svd
def svd(x, /, *, full_matrices=True):
    """Singular value decomposition x = U @ diag(S) @ Vh of the matrices of ``x``
    (..., M, N): S (..., K) descending, real dtype, K = min(M, N); U (..., M, M) and Vh
    (..., N, N) with ``full_matrices``, else (..., M, K) and (..., K, N). Stacks of
    matrices up to 32 x 32: Jacobi (gesvdjBatched); matrices at least 64 x 64 without full
    matrices (or square ones): the polar decomposition (gesvdp) per matrix; else, and for
    a matrix gesvdp fails on, QR iteration (gesvd) per matrix. Raises LinAlgError ("SVD did not converge"); reading
    the status back synchronizes."""
    return _svd(_xp, x, full_matrices, True, "svd")


def svdvals(x, /):
    """Singular values (..., K), descending, real dtype, of the matrices of ``x`` (..., M, N)."""
    return _svd(_xp, x, False, False, "svdvals")


def _svd(o, x, full, vectors, name):
    dt, rdt = _input(o, x, name)
    if vectors:
        ushape, sshape, vshape = _lp.svd_shapes(x.shape, full)
    else:
        sshape = _lp.svdvals_shape(x.shape)
    b, m, n = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]
    k, count = min(m, n), _shapes.prod(b)
    if count == 0 or k == 0:
        s = o.empty(sshape, rdt, x)
        if not vectors:
            return s
        if full and count:
            return SVDResult(o.eye(b, m, dt, x), s, o.eye(b, n, dt, x))
        return SVDResult(o.empty(ushape, dt, x), s, o.empty(vshape, dt, x))
    if (not _solver.batched("gesvdj", m, n, count) and (m == n or not (vectors and full))
            and _solver.gesvdp_ok(m, n)):
        r = _svd_polar(o, x, dt, rdt, vectors, name)
        if r is not None:
            return r
    s = o.empty(sshape, rdt, x)
    info = o.empty(b, _I32, x)
    dev = o.dev(x)
    if _solver.batched("gesvdj", m, n, count):
        # column-major x^T (N x M) = U' S V'^H: x = conj(V') S U'^T, so Vh = U'^T (the
        # row-major view of U') and U = conj(V') (the conjugated transpose of V's view)
        c = o.contig(x, dt)
        vh = o.empty(b + (n, n), dt, x)
        v = o.empty(b + (m, m), dt, x)
        _solver.gesvdj_batched(dt.name, n, m, o.ptr(c), count, o.ptr(s), o.ptr(vh), o.ptr(v), vectors,
                               o.ptr(info), dev)
        check_info(name, o.host(info), b, "SVD did not converge")
        if not vectors:
            return s
        u = (o.conj(v) if dt.kind == "c" else v).mT
        if not full:
            u, vh = u[..., :, :k], vh[..., :k, :]
        return SVDResult(u, s, vh)
    if m <= n:
        # wide: column-major x^T (N x M, N >= M) = U' S VT'; x = VT'^T S U'^T, so the
        # row-major view of U' is Vh and the row-major view of VT' (M x M) is U
        c = o.contig(x, dt)
        if vectors:
            vh = o.empty(b + ((n if full else k), n), dt, x)
            u = o.empty(b + (m, m), dt, x)
            _solver.gesvd(dt.name, n, m, o.ptr(c), count, o.ptr(s), "A" if full else "S", o.ptr(vh), n,
                          n if full else k, "S", o.ptr(u), m, o.ptr(info), dev)
        else:
            _solver.gesvd(dt.name, n, m, o.ptr(c), count, o.ptr(s), "N", 0, 1, 0, "N", 0, 1, o.ptr(info), dev)
    else:
        # tall: column-major x (M x N, M > N) = U' S VT'; U and Vh are the transposes of
        # the row-major views of U' and VT'
        c = o.contig(x.mT, dt)
        if vectors:
            ut = o.empty(b + ((m if full else k), m), dt, x)
            vt = o.empty(b + (n, n), dt, x)
            _solver.gesvd(dt.name, m, n, o.ptr(c), count, o.ptr(s), "A" if full else "S", o.ptr(ut), m,
                          m if full else k, "S", o.ptr(vt), n, o.ptr(info), dev)
            u, vh = ut.mT, vt.mT
        else:
            _solver.gesvd(dt.name, m, n, o.ptr(c), count, o.ptr(s), "N", 0, 1, 0, "N", 0, 1, o.ptr(info), dev)
    check_info(name, o.host(info), b, "SVD did not converge")
    return SVDResult(u, s, vh) if vectors else s


def _svd_polar(o, x, dt, rdt, vectors, name):
    """The economy SVD (or the singular values) of the stack ``x`` by gesvdp, or None when
    it failed for a matrix (the caller then runs gesvd; reading the status synchronizes)."""
    b, m, n = tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]
    k, count = min(m, n), _shapes.prod(b)
    tall = m >= n
    # column-major tall x (M x N: copy x.mT) or, for a wide x, x^T (N x M: copy x)
    c = o.contig(x.mT if tall else x, dt)
    big = m if tall else n
    s = o.empty(b + (k,), rdt, x)
    ub = o.empty(b + (k, big), dt, x)        # U' (big x k, ld big): its row-major view is U'^T
    vb = o.empty(b + (k, k), dt, x)          # V' (k x k): its row-major view is V'^T
    info = o.empty(b, _I32, x)
    _solver.gesvdp(dt.name, big, k, o.ptr(c), count, o.ptr(s), o.ptr(ub), o.ptr(vb), vectors, o.ptr(info), o.dev(x))
    if o.host(info).any():
        return None
    if not vectors:
        return s
    cv = o.conj(vb) if dt.kind == "c" else vb
    if tall:        # x = U' S V'^H: U = U', Vh = V'^H = conj(V'^T)
        return SVDResult(ub.mT, s, cv)
    # x^T = U' S V'^H, so x = conj(V') S U'^T: U = conj(V'), Vh = U'^T
    return SVDResult(cv.mT, s, ub)


__all__ = ["cholesky", "eigh", "eigvalsh", "qr", "svd", "svdvals", "EighResult", "QRResult", "SVDResult"]
