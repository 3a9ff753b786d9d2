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
* The one-call-per-matrix loops of potrf, getrf, getrs and syevd use cuSOLVER's 64-bit API
  (cusolverDnXpotrf, Xgetrf, Xgetrs through ctypes on the libcusolver CuPy loaded; Xsyevd
  through CuPy's binding), as PyTorch does: for large matrices they are faster than the
  legacy calls. ``GPARRAY_CUSOLVER_64=0`` (read at import; ``USE_64``) keeps the legacy
  calls, which are also the fallback when that library cannot be found (``x64_info`` says
  why). Xgetrf writes 64-bit pivots: ``ipiv_dtype`` tells the caller which to allocate.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import types

import numpy as np

from .. import _backend, _memory
from .._kernels import _faults
from . import _blas
from ._launch import launch

FILL_LOWER, FILL_UPPER = 0, 1              # cublasFillMode_t
OP_N, OP_T, OP_C = 0, 1, 2                 # cublasOperation_t
EIG_NOVECTOR, EIG_VECTOR = 0, 1            # cusolverEigMode_t
INT32_MAX = 2**31 - 1
PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}

# Largest sizes the batched routines take (syevjBatched and gesvdjBatched: at most 32 by
# cuSOLVER's contract); the LU and Cholesky ones follow CuPy's measured rule of thumb
# (batched while n * n <= 65536 * count).
JACOBI_MAX = 32
LU_BATCH_AREA = 65536

_local = threading.local()

USE_64 = os.environ.get("GPARRAY_CUSOLVER_64", "1").strip() not in ("", "0")
CUDA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}   # cudaDataType
_x = None              # the _X64 adapter; False: unavailable
_x_note = ""           # which library, or why none


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


def _device(dev: int):
    """A context making ``dev`` the current device (nothing when it already is)."""
    cp = _backend.cupy()
    if cp.cuda.runtime.getDevice() == dev:
        return contextlib.nullcontext()
    return cp.cuda.Device(dev)


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


# ---------------------------------------------------------------------------- the 64-bit API
class _X64:
    """cuSOLVER's 64-bit API on the libcusolver CuPy loaded: Xpotrf, Xgetrf and Xgetrs (and
    their bufferSize queries) through ctypes, Xsyevd through CuPy's binding; one
    cusolverDnParams_t per host thread (default algorithms). Every call returns or raises
    like CuPy's bindings (RuntimeError naming the routine and its cusolverStatus_t)."""

    def __init__(self, lib, cs):
        V, I, L, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
        PS = ctypes.POINTER(ctypes.c_size_t)

        def fn(name, *argtypes):
            f = getattr(lib, name)
            f.argtypes, f.restype = list(argtypes), ctypes.c_int
            return f

        # handle, params, then as cuSOLVER's reference lists them
        self._potrf_bs = fn("cusolverDnXpotrf_bufferSize", V, V, I, L, I, V, L, I, PS, PS)
        self._potrf = fn("cusolverDnXpotrf", V, V, I, L, I, V, L, I, V, S, V, S, V)
        self._getrf_bs = fn("cusolverDnXgetrf_bufferSize", V, V, L, L, I, V, L, I, PS, PS)
        self._getrf = fn("cusolverDnXgetrf", V, V, L, L, I, V, L, V, I, V, S, V, S, V)
        self._getrs = fn("cusolverDnXgetrs", V, V, I, L, L, I, V, L, V, I, V, L, V)
        self._cs = cs

    def params(self) -> int:
        p = getattr(_local, "params", None)
        if p is None:
            p = _local.params = self._cs.createParams()
        return p

    @staticmethod
    def _ok(status: int, name: str) -> None:
        if status:
            raise RuntimeError(f"cusolverDn{name} failed with cusolverStatus_t {status}")

    def potrf_bufferSize(self, h, params, uplo, n, dtype_a, a, lda, compute):
        d, hb = ctypes.c_size_t(), ctypes.c_size_t()
        self._ok(self._potrf_bs(h, params, uplo, n, dtype_a, a, lda, compute, ctypes.byref(d), ctypes.byref(hb)),
                 "Xpotrf_bufferSize")
        return d.value, hb.value

    def potrf(self, h, params, uplo, n, dtype_a, a, lda, compute, dwork, dbytes, hwork, hbytes, info):
        self._ok(self._potrf(h, params, uplo, n, dtype_a, a, lda, compute, dwork, dbytes, hwork, hbytes, info),
                 "Xpotrf")

    def getrf_bufferSize(self, h, params, m, n, dtype_a, a, lda, compute):
        d, hb = ctypes.c_size_t(), ctypes.c_size_t()
        self._ok(self._getrf_bs(h, params, m, n, dtype_a, a, lda, compute, ctypes.byref(d), ctypes.byref(hb)),
                 "Xgetrf_bufferSize")
        return d.value, hb.value

    def getrf(self, h, params, m, n, dtype_a, a, lda, ipiv, compute, dwork, dbytes, hwork, hbytes, info):
        self._ok(self._getrf(h, params, m, n, dtype_a, a, lda, ipiv, compute, dwork, dbytes, hwork, hbytes, info),
                 "Xgetrf")

    def getrs(self, h, params, trans, n, nrhs, dtype_a, a, lda, ipiv, dtype_b, b, ldb, info):
        self._ok(self._getrs(h, params, trans, n, nrhs, dtype_a, a, lda, ipiv, dtype_b, b, ldb, info), "Xgetrs")

    def syevd_bufferSize(self, h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute):
        return tuple(self._cs.xsyevd_bufferSize(h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute))

    def syevd(self, h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute, dwork, dbytes, hwork, hbytes,
              info):
        self._cs.xsyevd(h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute, dwork, dbytes, hwork, hbytes,
                        info)


def _x64():
    """The 64-bit API (an ``_X64``), or None: ``USE_64`` off, a stand-in binding module (the
    CPU tier's LAPACK model: the legacy calls are what it models) or no loaded libcusolver
    of CuPy's major version with those functions (``x64_info`` says why). Tests replace it."""
    global _x, _x_note
    if not USE_64:
        return None
    if _x is not None:
        return _x or None
    cs, _ = _libs()
    if not isinstance(cs, types.ModuleType):
        return None
    _x = False
    major = int(cs.getProperty(0))               # MAJOR_VERSION
    names = [f"libcusolver.so.{major}"]
    try:
        with open("/proc/self/maps") as f:
            names += sorted({ln.split()[-1] for ln in f
                             if os.path.basename(ln.split()[-1]).startswith("libcusolver.so")})
    except OSError:
        pass
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2)
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=mode)     # only a library already in the process
            prop = lib.cusolverGetProperty
            prop.argtypes, prop.restype = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)], ctypes.c_int
            v = ctypes.c_int(-1)
            if prop(0, ctypes.byref(v)) != 0 or v.value != major:
                continue
            _x = _X64(lib, cs)
        except (OSError, AttributeError):
            continue
        _x_note = f"cusolverDnX* from {name}"
        return _x
    _x_note = f"no loaded libcusolver of major version {major} with the 64-bit API found (tried {names})"
    return None


def x64_info() -> str:
    """Which cuSOLVER API the one-matrix loops use, and why."""
    if not USE_64:
        return "legacy API (GPARRAY_CUSOLVER_64=0)"
    x = _x64()
    return f"64-bit API: {_x_note}" if x is not None else f"legacy API: {_x_note or 'stand-in bindings'}"


def ipiv_dtype(n: int, count: int) -> str:
    """The pivot dtype ``getrf`` writes (and ``getrs``/``inv`` read) for a stack of ``count``
    n x n matrices: "int64" on the 64-bit API's loop, else "int32"."""
    return "int64" if not batched("getrf", n, n, count) and _x64() is not None else "int32"


def _host_work(nbytes: int):
    """(keep-alive object, address) of ``nbytes`` of host workspace (0: none)."""
    if not nbytes:
        return None, 0
    buf = ctypes.create_string_buffer(nbytes)
    return buf, ctypes.addressof(buf)


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
    with _device(dev), _faults.checked("cholesky"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        step = n * n * isz
        if batched("potrf", n, n, count):
            ptrs = _ptr_array(a, step, count, dev)
            _fn(cs, p, "potrfBatched")(h, uplo, n, ptrs.ptr, n, info, count)
            return
        x = _x64()
        if x is not None:
            dt, prm = CUDA_TYPE[dtype], x.params()
            dbytes, hbytes = x.potrf_bufferSize(h, prm, uplo, n, dt, a, n, dt)
            work = _alloc(max(dbytes, 1), dev)
            _keep, hwork = _host_work(hbytes)
            for i in range(count):
                x.potrf(h, prm, uplo, n, dt, a + i * step, n, dt, work.ptr, dbytes, hwork, hbytes, info + 4 * i)
            return
        lwork = _fn(cs, p, "potrf_bufferSize")(h, uplo, n, a, n)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, "potrf")
        for i in range(count):
            f(h, uplo, n, a + i * step, n, work.ptr, lwork, info + 4 * i)


# ---------------------------------------------------------------------------- LU
def getrf(dtype: str, n: int, a: int, count: int, ipiv: int, info: int, dev: int) -> None:
    """LU factorization with partial pivoting, in place, of the ``count`` column-major
    n x n matrices at ``a`` (contiguous, lda = n): L (unit diagonal, not stored) below the
    diagonal, U on and above it; ``ipiv``: [count, n] of ``ipiv_dtype(n, count)``, 1-based
    rows swapped with row i; ``info``: int32[count], k > 0 when U[k-1, k-1] is exactly zero
    (singular)."""
    if count == 0 or n == 0:
        return
    _check_sizes("getrf", n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    with _device(dev), _faults.checked("getrf"):
        cs, cb = _libs()
        h, hb = _handles(dev)
        step = n * n * isz
        if batched("getrf", n, n, count):
            ptrs = _ptr_array(a, step, count, dev)
            _fn(cb, p, "getrfBatched")(hb, n, ptrs.ptr, n, ipiv, info, count)
            return
        x = _x64()
        if x is not None:       # 64-bit pivots
            dt, prm = CUDA_TYPE[dtype], x.params()
            dbytes, hbytes = x.getrf_bufferSize(h, prm, n, n, dt, a, n, dt)
            work = _alloc(max(dbytes, 1), dev)
            _keep, hwork = _host_work(hbytes)
            for i in range(count):
                x.getrf(h, prm, n, n, dt, a + i * step, n, ipiv + 8 * n * i, dt, work.ptr, dbytes, hwork, hbytes,
                        info + 4 * i)
            return
        lwork = _fn(cs, p, "getrf_bufferSize")(h, n, n, a, n)
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
    with _device(dev), _faults.checked("getrs"):
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
        x = _x64()
        if x is not None:       # 64-bit pivots
            dt, prm = CUDA_TYPE[dtype], x.params()
            for i in range(count):
                x.getrs(h, prm, trans, n, nrhs, dt, a + i * sa, n, ipiv + 8 * n * i, dt, b + i * sb, n, scratch.ptr)
            return
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
    with _device(dev), _faults.checked("inv"):
        _cs, cb = _libs()
        _h, hb = _handles(dev)
        step = n * n * isz
        pa = _ptr_array(a, step, count, dev)
        pc = _ptr_array(out, step, count, dev)
        scratch = _alloc(4 * count, dev)
        _fn(cb, p, "getrfBatched")(hb, n, pa.ptr, n, ipiv, info, count)
        _fn(cb, p, "getriBatched")(hb, n, pa.ptr, n, ipiv, pc.ptr, n, scratch.ptr, count)


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
    with _device(dev), _faults.checked("qr"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _fn(cs, p, "geqrf_bufferSize")(h, m, n, a, m)
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
    with _device(dev), _faults.checked("qr"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _fn(cs, p, name + "_bufferSize")(h, m, nq, k, q, m, tau)
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
    with _device(dev), _faults.checked("eigh"):
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
        x = _x64()
        if x is not None:
            dt, dw, prm = CUDA_TYPE[dtype], CUDA_TYPE[REAL[dtype]], x.params()
            dbytes, hbytes = x.syevd_bufferSize(h, prm, jobz, uplo, n, dt, a, n, dw, w, dt)
            work = _alloc(max(dbytes, 1), dev)
            _keep, hwork = _host_work(hbytes)
            for i in range(count):
                x.syevd(h, prm, jobz, uplo, n, dt, a + i * n * n * isz, n, dw, w + i * n * rsz, dt, work.ptr, dbytes,
                        hwork, hbytes, info + 4 * i)
            return
        lwork = _fn(cs, p, herm + "evd_bufferSize")(h, jobz, uplo, n, a, n, w)
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
    with _device(dev), _faults.checked("svd"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        lwork = _fn(cs, p, "gesvd_bufferSize")(h, m, n)
        work = _alloc(max(lwork, 1) * isz, dev)
        f = _fn(cs, p, "gesvd")
        su, svt = ldu * u_cols * isz, ldvt * n * isz
        for i in range(count):
            f(h, ord(jobu), ord(jobvt), m, n, a + i * m * n * isz, m, s + i * n * rsz,
              u + i * su if u else 0, ldu, vt + i * svt if vt else 0, ldvt, work.ptr, lwork, 0, info + 4 * i)


def gesvdj(dtype: str, m: int, n: int, a: int, count: int, s: int, u: int, v: int, vectors: bool, info: int,
           dev: int) -> None:
    """Jacobi SVD A_i = U_i S_i V_i^H (economy size) of the ``count`` column-major m x n
    matrices at ``a`` (contiguous, lda = m; destroyed), one call per matrix: ``s``
    real[count, k] (k = min(m, n), descending), U_i m x k (ldu = m) at u + i * m * k
    elements, V_i (not V^H) n x k (ldv = n) at v + i * n * k; both needed even without
    ``vectors``. ``info``: int32[count], > 0 when the iteration did not converge (the
    caller falls back to ``gesvd``)."""
    if count == 0 or min(m, n) == 0:
        return
    _check_sizes("svd", m, n, count)
    p, isz = PREFIX[dtype], np.dtype(dtype).itemsize
    rsz = np.dtype(REAL[dtype]).itemsize
    k = min(m, n)
    jobz = EIG_VECTOR if vectors else EIG_NOVECTOR
    with _device(dev), _faults.checked("svd"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        params = cs.createGesvdjInfo()
        try:
            lwork = _fn(cs, p, "gesvdj_bufferSize")(h, jobz, 1, m, n, a, m, s, u, m, v, n, params)
            work = _alloc(max(lwork, 1) * isz, dev)
            f = _fn(cs, p, "gesvdj")
            for i in range(count):
                f(h, jobz, 1, m, n, a + i * m * n * isz, m, s + i * k * rsz, u + i * m * k * isz, m,
                  v + i * n * k * isz, n, work.ptr, lwork, info + 4 * i, params)
        finally:
            cs.destroyGesvdjInfo(params)


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
    with _device(dev), _faults.checked("svd"):
        cs, _ = _libs()
        h, _b = _handles(dev)
        params = cs.createGesvdjInfo()
        try:
            lwork = _fn(cs, p, "gesvdjBatched_bufferSize")(h, jobz, m, n, a, m, s, u, m, v, n, params, count)
            work = _alloc(max(lwork, 1) * isz, dev)
            _fn(cs, p, "gesvdjBatched")(h, jobz, m, n, a, m, s, u, m, v, n, work.ptr, lwork, info, params, count)
        finally:
            cs.destroyGesvdjInfo(params)


__all__ = ["batched", "ipiv_dtype", "x64_info", "USE_64", "potrf", "getrf", "getrs", "inv", "geqrf", "orgqr", "syevd", "gesvd", "gesvdj", "gesvdj_batched",
           "FILL_LOWER", "FILL_UPPER", "OP_N", "OP_T", "OP_C", "PREFIX", "REAL"]
