"""cuSOLVER (and cuBLAS' batched LU) on gparray memory: the LAPACK routines behind
``gparray.linalg``'s factorizations, through CuPy's bindings (cupy_backends.cuda.libs).

Every function takes raw device pointers to C-contiguous stacks of ``count`` matrices that
the caller allocated (the namespace copies its input first: these routines overwrite it),
and works in LAPACK's column-major terms: a C-contiguous (R, C) buffer is the column-major
C x R matrix, its transpose. The namespace (gparray/linalg/) chooses which of the two to
hand over so that no extra transposition is needed (see its modules).

* One cusolverDn handle per (device, host thread), bound to the current stream before each
  call, so the routines run in stream order with gparray's kernels; the cuBLAS handle is
  ``_blas.shared_handle`` (CuPy's cuBLAS bindings set the current stream on it before
  every routine).
* Workspaces come from gparray's pool on the current stream and go back to it when the
  call returns (stream-ordered reuse is safe: the routines were queued before).
* Stacks: small matrices in a stack use the batched routines (``batched``: cuBLAS
  getrf/getri/getrsBatched, cuSOLVER potrfBatched, syevjBatched, gesvdjBatched), whose
  pointer arrays are filled on the device (one ``gp_arange`` launch, no host transfer);
  larger ones are a host loop of one call per matrix, sharing one workspace.
* ``info``: the routines write their per-matrix status into an int32 array the caller
  passed; nothing here reads it back (the caller does, once: that read synchronizes).
* SVD without full matrices (or of square ones) whose smaller dimension is at least
  GESVDP_MIN: cusolverDnXgesvdp (polar decomposition, cuSOLVER's 64-bit API, through
  ctypes on the libcusolver CuPy loaded: CuPy has no binding), 3.8x faster than gesvd on a
  4096 x 256 float32 matrix; gesvd stays for small and full matrices, as the fallback
  (``gesvdp_info`` says why) and for a matrix gesvdp reports a failure on.
"""
from __future__ import annotations

import collections
import ctypes
import os
import threading
import types

import numpy as np

from .._core import _backend
from .. import _memory
from .._core import _faults
from . import _blas, _loaded_libs
from . import _launch
from ._launch import ctype, launch

FILL_LOWER, FILL_UPPER = 0, 1              # cublasFillMode_t
OP_N, OP_T, OP_C = 0, 1, 2                 # cublasOperation_t
EIG_NOVECTOR, EIG_VECTOR = 0, 1            # cusolverEigMode_t
INT32_MAX = 2**31 - 1
PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}

# Inverses of real matrices up to this size run on gparray's own kernel (one thread per
# matrix, gparray/_kernels/linalg_small.cu) instead of cuBLAS' batched LU and inverse:
# one launch, read through the input's strides, no pointer arrays. 0 turns it off.
INV_SMALL_MAX = 8
INV_SMALL_THREADS = 128                    # GP_INV_SMALL_THREADS
SMALL_FAMILY = "linalg_small"
# solve with one matrix of order LU_PERM_MIN ... LU_PERM_MAX (GP_LU_PERM_MAX): getrf, the row
# permutation of its pivots (gp_lu_perm), the right-hand sides gathered through it, two
# triangular solves; getrs' row interchanges run one after another in global memory (476 us
# of a 4096 solve's 14.4 ms on an H200). 0 turns it off.
LU_PERM_MIN = 64
LU_PERM_MAX = 8192
LU_PERM_THREADS = 256                      # GP_LU_PERM_THREADS

# Largest sizes the batched routines take (syevjBatched and gesvdjBatched: at most 32 by
# cuSOLVER's contract); the LU and Cholesky ones follow CuPy's measured rule of thumb
# (batched while n * n <= 65536 * count).
JACOBI_MAX = 32
LU_BATCH_AREA = 65536

_local = threading.local()
# gesvdp from this smallest dimension up (H100, float32: 3 x 3 gesvdp 0.42 ms vs gesvd 0.17;
# 40 x 33 1.35 vs 1.18; 300 x 200 4.3 vs 19.9; 1024 x 1024 27 vs 100; 2048 x 2048 66 vs 299)
GESVDP_MIN = 64
_gesvdp = None         # _Gesvdp (ctypes functions); False: unavailable
_gesvdp_note = ""      # which library, or why none
CUDA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}   # cudaDataType


def batched(routine: str, m: int, n: int, count: int) -> bool:
    """Whether a stack of ``count`` m x n matrices goes to the batched form of ``routine``
    ("getrf", "getri", "getrs", "potrf", "syevj", "gesvdj") rather than a host loop of one
    call per matrix. Pure: tested on the CPU tier."""
    if count < 2:
        return False
    if routine in ("syevj", "gesvdj"):
        return m <= JACOBI_MAX and n <= JACOBI_MAX
    if routine in ("getrf", "getri", "getrs", "potrf"):
        return n * n <= LU_BATCH_AREA * count
    raise ValueError(f"batched: unknown routine {routine!r}")


# ---------------------------------------------------------------------------- plumbing
# Tests replace these five functions (tests/_fake_solver.py): the library modules, the
# handles, the device guard, temporary memory and the device pointer arrays.
def _libs():
    """(cusolver, cublas) binding modules of CuPy."""
    from cupy_backends.cuda.libs import cublas, cusolver

    return cusolver, cublas


def _handles(dev: int):
    """(cusolverDn handle, cuBLAS handle) of this thread on ``dev``, bound to the current
    stream (``dev`` is the current device)."""
    cp = _backend.cupy()
    cusolver, cublas = _libs()
    hs = getattr(_local, "handles", None)
    if hs is None:
        hs = _local.handles = {}
    h = hs.get(dev)
    if h is None:
        h = hs[dev] = cusolver.create()
    s = cp.cuda.get_current_stream().ptr
    b = _blas.shared_handle(dev)  # CuPy's cuBLAS bindings set the current stream themselves
    cusolver.setStream(h, s)
    return h, b


# (function, device, sizes) -> lwork: cuSOLVER's workspace queries depend on the sizes and
# options only (the pointers they take are not read), and one costs 20-45 us of host time
# on an H200 machine, all before the factorization's first kernel
_lworks: dict = {}
_LWORKS_MAX = 1024


def _lwork(cs, p: str, name: str, dev: int, sizes: tuple, *args) -> int:
    """``cusolverDn<p><name>(*args)``'s workspace size, memoized per (p + name, ``dev``,
    ``sizes``): ``sizes`` holds every argument the answer can depend on."""
    key = (p + name, dev) + sizes
    v = _lworks.get(key)
    if v is None:
        v = _fn(cs, p, name)(*args)
        if len(_lworks) >= _LWORKS_MAX:
            _lworks.clear()
        _lworks[key] = v
    return v


def _alloc(nbytes: int, dev: int):
    """A temporary pool Block on ``dev`` for the current stream."""
    return _memory.alloc(nbytes, dev)


def _ptr_array(base: int, step: int, count: int, dev: int):
    """A pool Block holding the ``count`` device pointers base, base + step, ... (uint64),
    filled on the device by one arange launch."""
    blk = _memory.alloc(8 * count, dev)
    launch("creation", "gp_arange<gp::uint64, long long>", dev, (count + 255) // 256,
           (np.uint64(blk.ptr), np.int64(base), np.int64(step), np.int64(count)))
    return blk


def _check_sizes(name: str, *sizes) -> None:
    big = max(sizes)
    if big > INT32_MAX:
        raise ValueError(f"{name}: a dimension of {big} exceeds cuSOLVER's 32-bit sizes")


def _fn(lib, prefix: str, name: str):
    return getattr(lib, prefix + name)


# ---------------------------------------------------------------------------- Cholesky
def potrf(dtype: str, n: int, a: int, count: int, uplo: int, info: int, dev: int) -> None:
    """Cholesky factorization in place of the ``count`` column-major n x n matrices at ``a``
    (contiguous, lda = n), from their ``uplo`` triangle (FILL_LOWER / FILL_UPPER, in
    column-major terms) into the same triangle; the other triangle is left unspecified
    (potrfBatched uses it as workspace). ``info``: int32[count], k > 0 when the leading
    minor of order k is not positive definite."""
    if count == 0 or n == 0:
        return
    _check_sizes("cholesky", n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    with _backend.on_device(dev), _faults.checked("cholesky"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        step = n * n * isz
        if batched("potrf", n, n, count):
            ptrs = _ptr_array(a, step, count, dev)
            _fn(cs, p, "potrfBatched")(h, uplo, n, ptrs.ptr, n, info, count)
            return
        lwork = _lwork(cs, p, "potrf_bufferSize", dev, (uplo, n), h, uplo, n, a, n)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, "potrf")
        for i in range(count):
            f(h, uplo, n, a + i * step, n, work.ptr, lwork, info + 4 * i)


# ---------------------------------------------------------------------------- LU
def getrf(dtype: str, n: int, a: int, count: int, ipiv: int, info: int, dev: int) -> None:
    """LU factorization with partial pivoting, in place, of the ``count`` column-major
    n x n matrices at ``a`` (contiguous, lda = n): L (unit diagonal, not stored) below the
    diagonal, U on and above it; ``ipiv``: int32[count, n], 1-based rows swapped with row i;
    ``info``: int32[count], k > 0 when U[k-1, k-1] is exactly zero (singular)."""
    if count == 0 or n == 0:
        return
    _check_sizes("getrf", n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    with _backend.on_device(dev), _faults.checked("getrf"):
        cs, cb = _libs()
        h, hb = _handles(dev)
        step = n * n * isz
        if batched("getrf", n, n, count):
            ptrs = _ptr_array(a, step, count, dev)
            _fn(cb, p, "getrfBatched")(hb, n, ptrs.ptr, n, ipiv, info, count)
            return
        lwork = _lwork(cs, p, "getrf_bufferSize", dev, (n,), h, n, n, a, n)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, "getrf")
        for i in range(count):
            f(h, n, n, a + i * step, n, work.ptr, ipiv + 4 * n * i, info + 4 * i)


def getrs(dtype: str, trans: int, n: int, nrhs: int, a: int, ipiv: int, b: int, count: int, dev: int) -> None:
    """Solve op(A_i) X_i = B_i in place of B_i for the ``count`` LU factors at ``a``/``ipiv``
    (as ``getrf`` left them) and the column-major n x nrhs right-hand sides at ``b``
    (contiguous, ldb = n); ``trans``: OP_N, OP_T or OP_C. A singular factor gives
    non-finite values (check getrf's info)."""
    if count == 0 or n == 0 or nrhs == 0:
        return
    _check_sizes("getrs", n, nrhs, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    with _backend.on_device(dev), _faults.checked("getrs"):
        cs, cb = _libs()
        h, hb = _handles(dev)
        sa, sb = n * n * isz, n * nrhs * isz
        if batched("getrs", n, n, count):
            pa = _ptr_array(a, sa, count, dev)
            pb = _ptr_array(b, sb, count, dev)
            host_info = np.zeros(1, np.int32)
            _fn(cb, p, "getrsBatched")(hb, trans, n, nrhs, pa.ptr, n, ipiv, pb.ptr, n, host_info.ctypes.data,
                                       count)
            if host_info[0] != 0:
                raise RuntimeError(f"getrs: cuBLAS getrsBatched rejected argument {-int(host_info[0])}")
            return
        scratch = _alloc(4, dev)
        f = _fn(cs, p, "getrs")
        for i in range(count):
            f(h, trans, n, nrhs, a + i * sa, n, ipiv + 4 * n * i, b + i * sb, n, scratch.ptr)


def inv(dtype: str, n: int, a: int, count: int, out: int, ipiv: int, info: int, dev: int) -> None:
    """Inverses of the ``count`` column-major n x n matrices at ``a`` (overwritten by their
    LU factors) into ``out`` (contiguous, ldc = n). When ``batched("getri", ...)``: cuBLAS
    getrfBatched + getriBatched (``out`` written whole); else cuSOLVER getrf + getrs, where
    ``out`` must hold identity matrices on entry. ``info`` as ``getrf``'s."""
    if count == 0 or n == 0:
        return
    _check_sizes("inv", n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    if not batched("getri", n, n, count):
        getrf(dtype, n, a, count, ipiv, info, dev)
        getrs(dtype, OP_N, n, n, a, ipiv, out, count, dev)
        return
    with _backend.on_device(dev), _faults.checked("inv"):
        _cs, cb = _libs()
        _h, hb = _handles(dev)
        step = n * n * isz
        pa = _ptr_array(a, step, count, dev)
        pc = _ptr_array(out, step, count, dev)
        scratch = _alloc(4 * count, dev)
        _fn(cb, p, "getrfBatched")(hb, n, pa.ptr, n, ipiv, info, count)
        _fn(cb, p, "getriBatched")(hb, n, pa.ptr, n, ipiv, pc.ptr, n, scratch.ptr, count)


def inv_small_ok(dtype: str, n: int) -> bool:
    """Whether ``inv_small`` takes n x n matrices of ``dtype`` (float32/float64, n <=
    INV_SMALL_MAX). The CPU tier's LAPACK model of the bindings (a stand-in module) models
    the library calls instead, so there it is False; tests of the kernel replace this."""
    return (0 < n <= INV_SMALL_MAX and dtype in ("float32", "float64")
            and isinstance(_libs()[0], types.ModuleType))


def inv_small(dtype: str, n: int, x: int, count: int, sb: int, s0: int, s1: int, out: int, status: int,
              dev: int) -> None:
    """Inverses of the ``count`` n x n matrices at ``x`` (element strides: ``sb`` from one
    matrix to the next, ``s0`` between rows, ``s1`` between columns; not modified) into the
    C-contiguous stack at ``out``, one launch of gp_inv_small (LU with partial pivoting as
    LAPACK's getf2, then getri). ``status``: uint64[2], zero on entry; for the singular
    matrices (an exactly zero pivot: that inverse is not written) status[0] = max of
    count - b, status[1] their number (``gparray.linalg._errors.check_status``)."""
    if count == 0:
        return
    k = _launch.kernel(SMALL_FAMILY, small_name(dtype, n), dev, _SMALL_PROTO)   # (typed once: ints later)
    with _backend.on_device(dev), _faults.checked("inv"):
        _launch.run(k, dev, (count + INV_SMALL_THREADS - 1) // INV_SMALL_THREADS,
                    (out, x, status, count, sb, s0, s1), 0, INV_SMALL_THREADS)


_small_names: dict = {}
_SMALL_PROTO = (np.uint64(0),) * 3 + (np.int64(0),) * 4   # gp_inv_small's argument types


def small_name(dtype: str, n: int) -> str:
    """The gp_inv_small instance of ``dtype`` (a name) and size ``n`` (memoized)."""
    k = _small_names.get((dtype, n))
    if k is None:
        k = _small_names[(dtype, n)] = f"gp_inv_small<{ctype(np.dtype(dtype))}, {n}>"
    return k


def lu_perm_ok(n: int) -> bool:
    """Whether ``solve`` of one n x n matrix takes ``lu_perm`` and ``_blas.lu_solve`` instead
    of getrs (LU_PERM_MIN <= n <= LU_PERM_MAX; the CPU tier's LAPACK model of the bindings
    models getrs, so there it is False)."""
    return (0 < LU_PERM_MIN <= n <= LU_PERM_MAX
            and isinstance(_libs()[0], types.ModuleType))


def lu_perm(ipiv: int, perm: int, n: int, dev: int) -> None:
    """perm (int64[n]) := the row permutation of getrf's pivots ipiv (int32[n], 1-based), so
    that P B = B[perm]; one block of gp_lu_perm. n <= LU_PERM_MAX."""
    if not 0 < n <= LU_PERM_MAX:
        raise ValueError(f"lu_perm: order {n} outside 1 ... {LU_PERM_MAX}")
    with _backend.on_device(dev), _faults.checked("solve"):
        launch(SMALL_FAMILY, "gp_lu_perm", dev, 1, (np.uint64(perm), np.uint64(ipiv), np.int32(n)),
               block=LU_PERM_THREADS)


def lu_solve(dtype: str, n: int, a: int, b: int, nrhs: int, dev: int) -> None:
    """B := U^-1 L^-1 B in place (the factors at ``a`` as getrf left them, the column-major n x
    ``nrhs`` right-hand sides at ``b`` already permuted by ``lu_perm``'s permutation), on the
    current stream: ``_blas.lu_solve``."""
    with _backend.on_device(dev), _faults.checked("solve"):
        _blas.lu_solve(dtype, n, a, b, nrhs, dev, _backend.cupy().cuda.get_current_stream().ptr)


def instances() -> list[str]:
    """Registered "linalg_small" instances: float32 and float64, n = 1 ... INV_SMALL_MAX,
    and gp_lu_perm."""
    return [small_name(dt, n) for dt in ("float32", "float64") for n in range(1, INV_SMALL_MAX + 1)] + ["gp_lu_perm"]


# ---------------------------------------------------------------------------- QR
def geqrf(dtype: str, m: int, n: int, a: int, count: int, tau: int, dev: int) -> None:
    """QR factorization in place of the ``count`` column-major m x n matrices at ``a``
    (contiguous, lda = m): R on and above the diagonal, the Householder vectors below it,
    their scalars in ``tau`` (dtype[count, min(m, n)])."""
    if count == 0 or min(m, n) == 0:
        return
    _check_sizes("qr", m, n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    k = min(m, n)
    with _backend.on_device(dev), _faults.checked("qr"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _lwork(cs, p, "geqrf_bufferSize", dev, (m, n), h, m, n, a, m)
        work = _alloc(max(lwork, 1) * isz, dev)
        scratch = _alloc(4, dev)
        f = _fn(cs, p, "geqrf")
        for i in range(count):
            f(h, m, n, a + i * m * n * isz, m, tau + i * k * isz, work.ptr, lwork, scratch.ptr)


def orgqr(dtype: str, m: int, nq: int, k: int, q: int, q_step: int, count: int, tau: int, dev: int) -> None:
    """Form the m x nq matrices Q with orthonormal columns (the first nq columns of
    H_1 ... H_k) in place of the column-major reflectors at ``q`` (lda = m; matrix i at
    q + i * q_step elements), ``tau`` as ``geqrf`` wrote it (k per matrix)."""
    if count == 0 or m == 0 or nq == 0:
        return
    _check_sizes("qr", m, nq, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    name = "orgqr" if p in "sd" else "ungqr"
    with _backend.on_device(dev), _faults.checked("qr"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _lwork(cs, p, name + "_bufferSize", dev, (m, nq, k), h, m, nq, k, q, m, tau)
        work = _alloc(max(lwork, 1) * isz, dev)
        scratch = _alloc(4, dev)
        f = _fn(cs, p, name)
        for i in range(count):
            f(h, m, nq, k, q + i * q_step * isz, m, tau + i * k * isz, work.ptr, lwork, scratch.ptr)


# ---------------------------------------------------------------------------- Hermitian eigen
def syevd(dtype: str, n: int, a: int, count: int, w: int, vectors: bool, uplo: int, info: int, dev: int) -> None:
    """Eigenvalues (ascending, real: ``w`` is real[count, n]) and, with ``vectors``, the
    orthonormal eigenvectors (the columns of the column-major matrices, in place of ``a``)
    of the ``count`` Hermitian n x n matrices at ``a`` (contiguous, lda = n), read from
    their ``uplo`` triangle. Small stacks: syevjBatched (Jacobi), else syevd (divide and
    conquer) per matrix. ``info``: int32[count], > 0 when the iteration did not converge."""
    if count == 0 or n == 0:
        return
    _check_sizes("eigh", n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    rsz = np.dtype(REAL[dtype]).itemsize
    jobz = EIG_VECTOR if vectors else EIG_NOVECTOR
    herm = "sy" if p in "sd" else "he"
    with _backend.on_device(dev), _faults.checked("eigh"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        if batched("syevj", n, n, count):
            params = cs.createSyevjInfo()
            try:
                lwork = _fn(cs, p, herm + "evjBatched_bufferSize")(h, jobz, uplo, n, a, n, w, params, count)
                work = _alloc(max(lwork, 1) * isz, dev)
                _fn(cs, p, herm + "evjBatched")(h, jobz, uplo, n, a, n, w, work.ptr, lwork, info, params, count)
            finally:
                cs.destroySyevjInfo(params)
            return
        lwork = _lwork(cs, p, herm + "evd_bufferSize", dev, (jobz, uplo, n), h, jobz, uplo, n, a, n, w)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, herm + "evd")
        for i in range(count):
            f(h, jobz, uplo, n, a + i * n * n * isz, n, w + i * n * rsz, work.ptr, lwork, info + 4 * i)


# ---------------------------------------------------------------------------- SVD
def gesvd(dtype: str, m: int, n: int, a: int, count: int, s: int, jobu: str, u: int, ldu: int, u_cols: int,
          jobvt: str, vt: int, ldvt: int, info: int, dev: int) -> None:
    """Singular value decomposition A_i = U_i S_i VT_i of the ``count`` column-major
    m x n matrices at ``a`` (contiguous, lda = m; destroyed), m >= n (cuSOLVER's gesvd
    takes no wide matrix). ``s``: real[count, n], descending. ``jobu`` "A" (U is m x m),
    "S" (m x n) or "N" (not computed); U_i at u + i * ldu * u_cols elements. ``jobvt`` "A"/
    "S" (VT is n x n) or "N"; VT_i at vt + i * ldvt * n. ``info``: int32[count], > 0 when
    the bidiagonal iteration did not converge."""
    if count == 0 or n == 0:
        return
    if m < n:
        raise ValueError(f"gesvd: needs m >= n, got {m} x {n} (a gparray bug)")
    _check_sizes("svd", m, n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    rsz = np.dtype(REAL[dtype]).itemsize
    with _backend.on_device(dev), _faults.checked("svd"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _lwork(cs, p, "gesvd_bufferSize", dev, (m, n), h, m, n)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, "gesvd")
        su, svt = ldu * u_cols * isz, ldvt * n * isz
        for i in range(count):
            f(h, ord(jobu), ord(jobvt), m, n, a + i * m * n * isz, m, s + i * n * rsz,
              u + i * su if u else 0, ldu, vt + i * svt if vt else 0, ldvt, work.ptr, lwork, 0, info + 4 * i)


class _Gesvdp:
    """cusolverDnXgesvdp and its bufferSize query through ctypes (argument types as in
    cuSOLVER's reference), with one cusolverDnParams_t per host thread."""

    def __init__(self, lib, cs):
        V, I, L, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
        PS = ctypes.POINTER(ctypes.c_size_t)
        head = (V, V, I, I, L, L, I, V, L, I, V, I, V, L, I, V, L, I)   # handle ... computeType
        self._bs = getattr(lib, "cusolverDnXgesvdp_bufferSize")
        self._bs.argtypes, self._bs.restype = list(head) + [PS, PS], ctypes.c_int
        self._run = getattr(lib, "cusolverDnXgesvdp")
        self._run.argtypes = list(head) + [V, S, V, S, V, ctypes.POINTER(ctypes.c_double)]
        self._run.restype = ctypes.c_int
        self._cs = cs
        # host workspaces and error outputs of the latest calls: kept past the call, in case
        # the routine still writes them from the stream (it is not documented not to)
        self.keep = collections.deque(maxlen=64)

    def params(self) -> int:
        p = getattr(_local, "params", None)
        if p is None:
            p = _local.params = self._cs.createParams()
        return p

    def buffer_size(self, h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute):
        d, hb = ctypes.c_size_t(), ctypes.c_size_t()
        st = self._bs(h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute,
                      ctypes.byref(d), ctypes.byref(hb))
        if st:
            raise RuntimeError(f"cusolverDnXgesvdp_bufferSize failed with cusolverStatus_t {st}")
        return d.value, hb.value

    def run(self, h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute, dwork, dbytes,
            hwork, hbytes, info):
        err = ctypes.c_double()
        self.keep.append((hwork, err))
        st = self._run(h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute, dwork,
                       dbytes, hwork, hbytes, info, ctypes.byref(err))
        if st:
            raise RuntimeError(f"cusolverDnXgesvdp failed with cusolverStatus_t {st}")


def _gesvdp_fns():
    """The ``_Gesvdp`` of the libcusolver CuPy loaded, or None: GPARRAY_SVD_POLAR=0, a
    stand-in binding module (the CPU tier's LAPACK model, which models gesvd), or no loaded
    libcusolver of CuPy's major version with cusolverDnXgesvdp (``gesvdp_info`` says why).
    Tests replace it."""
    global _gesvdp, _gesvdp_note
    if _gesvdp is not None:
        return _gesvdp or None
    if os.environ.get("GPARRAY_SVD_POLAR", "1").strip() in ("", "0"):
        _gesvdp, _gesvdp_note = False, "disabled (GPARRAY_SVD_POLAR=0)"
        return None
    cs, _ = _libs()
    if not isinstance(cs, types.ModuleType):
        return None
    _gesvdp = False
    major = int(cs.getProperty(0))               # MAJOR_VERSION
    names = [f"libcusolver.so.{major}"] + _loaded_libs.mapped("libcusolver.so")
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=_loaded_libs.NOLOAD)     # only a library already in the process
            prop = lib.cusolverGetProperty
            prop.argtypes, prop.restype = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)], ctypes.c_int
            v = ctypes.c_int(-1)
            if prop(0, ctypes.byref(v)) != 0 or v.value != major:
                continue
            fns = _Gesvdp(lib, cs)
        except (OSError, AttributeError):
            continue
        _gesvdp, _gesvdp_note = fns, f"cusolverDnXgesvdp from {name}"
        return fns
    _gesvdp_note = f"no loaded libcusolver of major version {major} with cusolverDnXgesvdp found (tried {names})"
    return None


def gesvdp_ok(m: int, n: int) -> bool:
    """Whether the SVD of m x n matrices goes to ``gesvdp``: available, and the smaller
    dimension at least GESVDP_MIN (below it gesvd is faster)."""
    return min(m, n) >= GESVDP_MIN and _gesvdp_fns() is not None


def gesvdp_info() -> str:
    """Which routine the SVDs without full matrices use, and why."""
    return (f"gesvdp: {_gesvdp_note}" if _gesvdp_fns() is not None
            else f"gesvd: {_gesvdp_note or 'stand-in bindings'}")


def gesvdp(dtype: str, m: int, n: int, a: int, count: int, s: int, u: int, v: int, vectors: bool, info: int,
           dev: int) -> None:
    """Polar-decomposition SVD A_i = U_i S_i V_i^H (economy size) of the ``count``
    column-major m x n matrices at ``a`` (contiguous, lda = m; destroyed), m >= n, one call
    per matrix: ``s`` real[count, n] (descending), U_i m x n (ldu = m) at u + i * m * n
    elements, V_i (not V^H) n x n (ldv = n) at v + i * n * n; both needed even without
    ``vectors``. ``info``: int32[count], nonzero when the routine failed for that matrix
    (the caller falls back to ``gesvd``). Needs ``gesvdp_ok(m, n)``."""
    if count == 0 or n == 0:
        return
    if m < n:
        raise ValueError(f"gesvdp: needs m >= n, got {m} x {n} (a gparray bug)")
    _check_sizes("svd", m, n, count)
    isz, rsz = np.dtype(dtype).itemsize, np.dtype(REAL[dtype]).itemsize
    dt, dr = CUDA_TYPE[dtype], CUDA_TYPE[REAL[dtype]]
    jobz = EIG_VECTOR if vectors else EIG_NOVECTOR
    g = _gesvdp_fns()
    with _backend.on_device(dev), _faults.checked("svd"):
        h, _b = _handles(dev)
        prm = g.params()
        dbytes, hbytes = g.buffer_size(h, prm, jobz, 1, m, n, dt, a, m, dr, s, dt, u, m, dt, v, n, dt)
        work = _alloc(max(dbytes, 1), dev)
        hbuf = ctypes.create_string_buffer(max(hbytes, 1))
        for i in range(count):
            g.run(h, prm, jobz, 1, m, n, dt, a + i * m * n * isz, m, dr, s + i * n * rsz, dt, u + i * m * n * isz, m,
                  dt, v + i * n * n * isz, n, dt, work.ptr, dbytes, hbuf, hbytes, info + 4 * i)


def gesvdj_batched(dtype: str, m: int, n: int, a: int, count: int, s: int, u: int, v: int, vectors: bool,
                   info: int, dev: int) -> None:
    """Jacobi SVD A_i = U_i S_i V_i^H of a stack of small (m, n <= 32) column-major m x n
    matrices at ``a`` (contiguous, lda = m; destroyed): ``s`` real[count, min(m, n)]
    (descending), U_i the full m x m (ldu = m) at ``u``, V_i (not V^H) the full n x n
    (ldv = n) at ``v``, both contiguous stacks (needed even without ``vectors``).
    ``info``: int32[count], > 0 when the iteration did not converge."""
    if count == 0 or min(m, n) == 0:
        return
    if not batched("gesvdj", m, n, count):
        raise ValueError(f"gesvdj_batched: {count} matrices of {m} x {n} do not fit the batched "
                         "Jacobi SVD (a gparray bug)")
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    jobz = EIG_VECTOR if vectors else EIG_NOVECTOR
    with _backend.on_device(dev), _faults.checked("svd"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        params = cs.createGesvdjInfo()
        try:
            lwork = _fn(cs, p, "gesvdjBatched_bufferSize")(h, jobz, m, n, a, m, s, u, m, v, n, params, count)
            work = _alloc(max(lwork, 1) * isz, dev)
            _fn(cs, p, "gesvdjBatched")(h, jobz, m, n, a, m, s, u, m, v, n, work.ptr, lwork, info, params, count)
        finally:
            cs.destroyGesvdjInfo(params)


__all__ = ["batched", "inv_small", "inv_small_ok", "instances", "potrf", "getrf", "getrs", "inv", "geqrf", "orgqr",
           "syevd", "gesvd", "gesvdp", "gesvdp_ok", "gesvdp_info", "gesvdj_batched",
           "FILL_LOWER", "FILL_UPPER", "OP_N", "OP_T", "OP_C", "PREFIX", "REAL"]
