"""CPU-tier stand-ins for the cuSOLVER/cuBLAS bindings and for gparray's arrays, so the
linalg algorithms (gparray/linalg/_decompositions.py, _solvers.py) run on the host.

* ``Memory``: every buffer the algorithms may hand to a routine (NumPy arrays made by
  ``NumpyOps``, workspaces, pointer arrays) is registered; a routine that touches bytes
  outside a registered buffer fails the test. New buffers are filled with garbage (NaN,
  -7777), so a result or status the routines never wrote shows up.
* ``FakeLib``: attribute access returns a function only when CuPy's real binding of that
  name exists; a call must pass exactly the real binding's arguments (their names and C
  types are read from its docstring, e.g. ``dgetrf(intptr_t handle, int m, ...)``), bound
  by position to those names, so a swapped or missing argument computes garbage or fails.
  The routines are a LAPACK model in NumPy on column-major views of host memory
  (``cm``): LU with partial pivoting, Cholesky, Householder QR, eigh, SVD, and the 64-bit
  generic ``xgeev`` (general eigenproblem: real input packed as LAPACK's sgeev/dgeev).
* ``NumpyOps``: the twin of gparray/linalg/_xp.py on NumPy arrays.
* ``install(monkeypatch, mem)``: points gparray/_engine/_solver.py's plumbing at the fakes.
"""
import contextlib
import ctypes
import re

import numpy as np

SOLVER_HANDLE, BLAS_HANDLE = 1001, 2002
_I32 = np.dtype("int32")
_PREFIX = {"s": "float32", "d": "float64", "c": "complex64", "z": "complex128"}
_PLUMBING = ("create", "setStream", "createSyevjInfo", "destroySyevjInfo", "createGesvdjInfo", "destroyGesvdjInfo",
             "createParams", "destroyParams")
_CUDA_TYPE = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}   # cudaDataType_t
_COMPLEX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}


# ---------------------------------------------------------------------------- memory
class Memory:
    def __init__(self):
        self.blocks = []          # (start, end, owner)
        self.calls = []           # names of the routines called, in order

    def register(self, a):
        a = np.asarray(a)
        if a.nbytes:
            self.blocks.append((a.ctypes.data, a.ctypes.data + a.nbytes, a))
        return a

    def check(self, ptr, nbytes, what):
        if nbytes == 0:
            return
        for lo, hi, _ in self.blocks:
            if lo <= ptr and ptr + nbytes <= hi:
                return
        raise AssertionError(f"{what}: bytes [{ptr:#x}, {ptr + nbytes:#x}) are outside every buffer")

    def cm(self, ptr, rows, cols, ld, dtype, what="matrix"):
        """Writable column-major rows x cols view of the memory at ``ptr`` (leading dim ld)."""
        dt = np.dtype(dtype)
        if rows == 0 or cols == 0:
            return np.empty((rows, cols), dt)
        assert ld >= max(rows, 1), f"{what}: leading dimension {ld} < rows {rows}"
        n = (cols - 1) * ld + rows
        self.check(ptr, n * dt.itemsize, what)
        flat = np.ctypeslib.as_array((ctypes.c_uint8 * (n * dt.itemsize)).from_address(ptr)).view(dt)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (dt.itemsize, ld * dt.itemsize))

    def vec(self, ptr, n, dtype, what="vector"):
        return self.cm(ptr, n, 1, max(n, 1), dtype, what)[:, 0]


class _Blk:
    def __init__(self, a):
        self.a = a
        self.ptr = a.ctypes.data


# ---------------------------------------------------------------------------- LAPACK model
def _garbage(a):
    a[...] = np.nan if a.dtype.kind in "fc" else -7777


def _hermitian(a, lower):
    t = np.tril(a, -1) if lower else np.triu(a, 1)
    return t + t.conj().T + np.diag(np.diag(a).real).astype(a.dtype)


def lu(a):
    """In-place LU with partial pivoting (LAPACK getrf semantics): (ipiv 1-based, info)."""
    m, n = a.shape
    k = min(m, n)
    piv, info = np.zeros(k, np.int32), 0
    for j in range(k):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv[j] = p + 1
        if a[p, j] != 0:
            if p != j:
                a[[j, p], :] = a[[p, j], :]
            a[j + 1:, j] /= a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return piv, info


def unlu(f, piv):
    """The matrix whose LU (as ``lu`` left it) is ``f`` with pivots ``piv``."""
    n = f.shape[0]
    a = (np.tril(f, -1) + np.eye(n, dtype=f.dtype)) @ np.triu(f)
    for j in reversed(range(len(piv))):
        p = int(piv[j]) - 1
        if p != j:
            a[[j, p], :] = a[[p, j], :]
    return a


def _solve(a, b):
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return np.full(b.shape, np.nan, a.dtype)


def _op(a, trans):
    return {0: a, 1: a.T, 2: a.conj().T}[trans]


def chol(a, lower):
    """(factor, info) of the Hermitian matrix read from ``a``'s triangle (LAPACK potrf)."""
    h = _hermitian(a, lower)
    n = h.shape[0]
    low = np.zeros_like(h)
    for j in range(n):
        d = (h[j, j] - np.vdot(low[j, :j], low[j, :j])).real
        if not d > 0:
            return None, j + 1
        low[j, j] = np.sqrt(d)
        low[j + 1:, j] = (h[j + 1:, j] - low[j + 1:, :j] @ low[j, :j].conj()) / low[j, j]
    return low, 0


def householder_qr(a):
    """In-place geqrf: R on and above the diagonal, v (v[0] = 1) below it; returns tau.
    Q = H(1) ... H(k), H(i) = I - tau_i v_i v_i^H."""
    m, n = a.shape
    k = min(m, n)
    tau = np.zeros(k, a.dtype)
    for j in range(k):
        x = a[j:, j].copy()
        alpha, xnorm = x[0], np.linalg.norm(x[1:])
        if xnorm == 0 and np.imag(alpha) == 0:
            continue
        beta = -np.copysign(np.sqrt(abs(alpha) ** 2 + xnorm ** 2), np.real(alpha))
        t = (beta - alpha) / beta
        v = x / (alpha - beta)
        v[0] = 1
        a[j, j] = beta
        a[j + 1:, j] = v[1:]
        a[j:, j + 1:] -= np.conj(t) * np.outer(v, v.conj() @ a[j:, j + 1:])
        tau[j] = t
    return tau


def form_q(a, tau, nq):
    m = a.shape[0]
    q = np.eye(m, nq, dtype=a.dtype)
    for j in reversed(range(len(tau))):
        v = np.zeros(m, a.dtype)
        v[j] = 1
        v[j + 1:] = a[j + 1:, j]
        q -= tau[j] * np.outer(v, v.conj() @ q)
    return q


def _sig(fn):
    """[(C type, name)] of a CuPy binding from its docstring's first line."""
    head = fn.__doc__.split("\n")[0]
    inside = head[head.index("(") + 1:head.index(")")]
    return [tuple(p.strip().rsplit(" ", 1)) for p in inside.split(",") if p.strip()]


class FakeLib:
    """The binding module ``real`` (cusolver or cublas) modelled on host memory."""

    def __init__(self, real, mem, handle):
        self.real, self.mem, self.handle = real, mem, handle
        self.bufsize = {}

    def __getattr__(self, name):
        real = getattr(self.real, name)         # AttributeError: no such binding
        sig = _sig(real)
        if name in _PLUMBING or name.startswith("x"):    # x...: the generic API, types as arguments
            family, dtype = name, None
        else:
            m = re.fullmatch(r"([sdcz])(\w+)", name)
            family, dtype = m.group(2), _PREFIX[m.group(1)]
        impl = getattr(self, "_" + family.replace("ungqr", "orgqr").replace("heev", "syev"))

        def call(*args, **kw):
            assert not kw, f"{name}: keyword arguments {sorted(kw)}"
            assert len(args) == len(sig), f"{name}: {len(args)} arguments, the binding takes {len(sig)}: {sig}"
            named = {}
            for (ctype, pname), v in zip(sig, args):
                assert isinstance(v, (int, np.integer)) and not isinstance(v, bool), f"{name}: {pname}={v!r}"
                v = int(v)
                if ctype == "int":
                    assert -2**31 <= v < 2**31, f"{name}: {pname}={v} does not fit int"
                elif ctype == "char":
                    assert 0 <= v < 256, f"{name}: {pname}={v}"
                elif ctype == "size_t":
                    assert v >= 0, f"{name}: {pname}={v}"
                named[pname] = v
            if "handle" in named:
                assert named["handle"] == self.handle, f"{name}: handle {named['handle']} of the other library"
            self.mem.calls.append(name)
            return impl(dtype, **named)

        return call

    # -- plumbing
    def _create(self, dtype):
        return self.handle

    def _setStream(self, dtype, handle, stream):
        pass

    def _createSyevjInfo(self, dtype):
        return 77

    def _createGesvdjInfo(self, dtype):
        return 78

    def _destroySyevjInfo(self, dtype, info):
        assert info == 77

    def _destroyGesvdjInfo(self, dtype, info):
        assert info == 78

    def _createParams(self, dtype):
        return 79

    def _destroyParams(self, dtype, params):
        assert params == 79

    # -- helpers
    def _work(self, name, dtype, work, lwork, n):
        want = self.bufsize[(name, n)]     # what the query answered for these sizes
        assert lwork >= want, f"{name}: lwork {lwork} < {want} from its bufferSize"
        self.mem.check(work, lwork * np.dtype(dtype).itemsize, f"{name} workspace")

    def _info(self, ptr, values, what="info"):
        v = self.mem.vec(ptr, len(values), _I32, what)
        v[:] = values

    def _ptrs(self, ptr, count):
        return [int(p) for p in self.mem.vec(ptr, count, np.uint64, "pointer array")]

    def _bs(self, name, value, n):
        self.bufsize[(name, n)] = value
        return value

    # -- Cholesky
    def _potrf_bufferSize(self, dtype, handle, uplo, n, A, lda):
        self.mem.cm(A, n, n, lda, dtype, "potrf A")
        return self._bs("potrf", 5 + n, n)

    def _potrf_one(self, dtype, uplo, n, ptr, lda, destroy):
        assert uplo in (0, 1)
        a = self.mem.cm(ptr, n, n, lda, dtype, "potrf A")
        f, info = chol(a, uplo == 0)
        if info:
            _garbage(a)
            return info
        other = np.triu(np.ones((n, n), bool), 1) if uplo == 0 else np.tril(np.ones((n, n), bool), -1)
        res = f if uplo == 0 else f.conj().T
        a[~other] = res[~other]
        if destroy:
            a[other] = np.nan
        return 0

    def _potrf(self, dtype, handle, uplo, n, A, lda, work, lwork, devInfo):
        self._work("potrf", dtype, work, lwork, n)
        self._info(devInfo, [self._potrf_one(dtype, uplo, n, A, lda, False)])

    def _potrfBatched(self, dtype, handle, uplo, n, Aarray, lda, infoArray, batchSize):
        ps = self._ptrs(Aarray, batchSize)
        self._info(infoArray, [self._potrf_one(dtype, uplo, n, p, lda, True) for p in ps], "potrfBatched info")

    # -- LU
    def _getrf_bufferSize(self, dtype, handle, m, n, A, lda):
        self.mem.cm(A, m, n, lda, dtype, "getrf A")
        return self._bs("getrf", 6 + n, n)

    def _getrf(self, dtype, handle, m, n, A, lda, work, devIpiv, devInfo):
        self._work("getrf", dtype, work, self.bufsize[("getrf", n)], n)
        piv, info = lu(self.mem.cm(A, m, n, lda, dtype, "getrf A"))
        self.mem.vec(devIpiv, min(m, n), _I32, "getrf ipiv")[:] = piv
        self._info(devInfo, [info])

    def _getrs(self, dtype, handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo):
        a = unlu(self.mem.cm(A, n, n, lda, dtype, "getrs A"), self.mem.vec(devIpiv, n, _I32, "getrs ipiv"))
        b = self.mem.cm(B, n, nrhs, ldb, dtype, "getrs B")
        b[...] = _solve(_op(a, trans), b.copy())
        self._info(devInfo, [0])

    def _getrfBatched(self, dtype, handle, n, Aarray, lda, PivotArray, infoArray, batchSize):
        infos = []
        for i, p in enumerate(self._ptrs(Aarray, batchSize)):
            piv, info = lu(self.mem.cm(p, n, n, lda, dtype, "getrfBatched A"))
            self.mem.vec(PivotArray + 4 * n * i, n, _I32, "getrfBatched pivots")[:] = piv
            infos.append(info)
        self._info(infoArray, infos, "getrfBatched info")

    def _getriBatched(self, dtype, handle, n, Aarray, lda, PivotArray, Carray, ldc, infoArray, batchSize):
        infos = []
        for i, (pa, pc) in enumerate(zip(self._ptrs(Aarray, batchSize), self._ptrs(Carray, batchSize))):
            f = self.mem.cm(pa, n, n, lda, dtype, "getriBatched A")
            piv = self.mem.vec(PivotArray + 4 * n * i, n, _I32, "getriBatched pivots")
            zero = np.flatnonzero(np.diag(f) == 0)
            c = self.mem.cm(pc, n, n, ldc, dtype, "getriBatched C")
            c[...] = _solve(unlu(f, piv), np.eye(n, dtype=dtype))
            infos.append(int(zero[0]) + 1 if zero.size else 0)
        self._info(infoArray, infos, "getriBatched info")

    def _getrsBatched(self, dtype, handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize):
        for i, (pa, pb) in enumerate(zip(self._ptrs(Aarray, batchSize), self._ptrs(Barray, batchSize))):
            a = unlu(self.mem.cm(pa, n, n, lda, dtype, "getrsBatched A"),
                     self.mem.vec(devIpiv + 4 * n * i, n, _I32, "getrsBatched pivots"))
            b = self.mem.cm(pb, n, nrhs, ldb, dtype, "getrsBatched B")
            b[...] = _solve(_op(a, trans), b.copy())
        ctypes.c_int32.from_address(info).value = 0     # a host pointer
        return 0

    # -- QR
    def _geqrf_bufferSize(self, dtype, handle, m, n, A, lda):
        self.mem.cm(A, m, n, lda, dtype, "geqrf A")
        return self._bs("geqrf", 4 + n, n)

    def _geqrf(self, dtype, handle, m, n, A, lda, tau, work, lwork, devInfo):
        self._work("geqrf", dtype, work, lwork, n)
        t = householder_qr(self.mem.cm(A, m, n, lda, dtype, "geqrf A"))
        self.mem.vec(tau, min(m, n), dtype, "geqrf tau")[:] = t
        self._info(devInfo, [0])

    def _orgqr_bufferSize(self, dtype, handle, m, n, k, A, lda, tau):
        assert m >= n >= k >= 0, f"orgqr: needs m >= n >= k, got {m}, {n}, {k}"
        return self._bs("orgqr", 3 + n, n)

    def _orgqr(self, dtype, handle, m, n, k, A, lda, tau, work, lwork, devInfo):
        assert m >= n >= k >= 0, f"orgqr: needs m >= n >= k, got {m}, {n}, {k}"
        self._work("orgqr", dtype, work, lwork, n)
        a = self.mem.cm(A, m, n, lda, dtype, "orgqr A")
        a[...] = form_q(a, self.mem.vec(tau, k, dtype, "orgqr tau"), n)
        self._info(devInfo, [0])

    # -- Hermitian eigenproblem
    def _eig_one(self, dtype, jobz, uplo, n, a_ptr, lda, w_ptr):
        assert jobz in (0, 1) and uplo in (0, 1)
        a = self.mem.cm(a_ptr, n, n, lda, dtype, "syevd A")
        w, v = np.linalg.eigh(_hermitian(a, uplo == 0))
        self.mem.vec(w_ptr, n, np.dtype(dtype).char.lower(), "syevd W")[:] = w
        if jobz == 1:
            a[...] = v
        else:
            _garbage(a)

    def _syevd_bufferSize(self, dtype, handle, jobz, uplo, n, A, lda, W):
        return self._bs("syevd", 8 + n, n)

    def _syevd(self, dtype, handle, jobz, uplo, n, A, lda, W, work, lwork, info):
        self._work("syevd", dtype, work, lwork, n)
        self._eig_one(dtype, jobz, uplo, n, A, lda, W)
        self._info(info, [0])

    def _syevjBatched_bufferSize(self, dtype, handle, jobz, uplo, n, A, lda, W, params, batchSize):
        assert n <= 32 and params == 77
        return self._bs("syevjBatched", 9 + n, n)

    def _syevjBatched(self, dtype, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params, batchSize):
        assert n <= 32 and params == 77
        self._work("syevjBatched", dtype, work, lwork, n)
        isz, rsz = np.dtype(dtype).itemsize, np.dtype(np.dtype(dtype).char.lower()).itemsize
        for i in range(batchSize):
            self._eig_one(dtype, jobz, uplo, n, A + i * lda * n * isz, lda, W + i * n * rsz)
        self._info(info, [0] * batchSize, "syevjBatched info")

    # -- SVD
    def _gesvd_bufferSize(self, dtype, handle, m, n):
        return self._bs("gesvd", 10 + n, n)

    def _gesvd(self, dtype, handle, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, Work, lwork, rwork, devInfo):
        assert m >= n, f"gesvd: cuSOLVER needs m >= n, got {m} x {n}"
        jobu, jobvt = chr(jobu), chr(jobvt)
        assert jobu in "ASN" and jobvt in "ASN", (jobu, jobvt)
        self._work("gesvd", dtype, Work, lwork, n)
        a = self.mem.cm(A, m, n, lda, dtype, "gesvd A")
        u, s, vh = np.linalg.svd(a)
        k = min(m, n)
        self.mem.vec(S, k, np.dtype(dtype).char.lower(), "gesvd S")[:] = s
        if jobu != "N":
            cols = m if jobu == "A" else k
            self.mem.cm(U, m, cols, ldu, dtype, "gesvd U")[...] = u[:, :cols]
        if jobvt != "N":
            rows = n if jobvt == "A" else k
            self.mem.cm(VT, rows, n, ldvt, dtype, "gesvd VT")[...] = vh[:rows, :]
        _garbage(a)
        self._info(devInfo, [0])

    def _gesvdjBatched_bufferSize(self, dtype, handle, jobz, m, n, A, lda, S, U, ldu, V, ldv, params, batchSize):
        assert m <= 32 and n <= 32 and params == 78
        return self._bs("gesvdjBatched", 11 + n, n)

    def _gesvdjBatched(self, dtype, handle, jobz, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info, params,
                       batchSize):
        assert m <= 32 and n <= 32 and params == 78 and jobz in (0, 1)
        self._work("gesvdjBatched", dtype, work, lwork, n)
        isz = np.dtype(dtype).itemsize
        rdt = np.dtype(dtype).char.lower()
        k = min(m, n)
        for i in range(batchSize):
            a = self.mem.cm(A + i * lda * n * isz, m, n, lda, dtype, "gesvdjBatched A")
            u, s, vh = np.linalg.svd(a)
            self.mem.vec(S + i * k * np.dtype(rdt).itemsize, k, rdt, "gesvdjBatched S")[:] = s
            uu = self.mem.cm(U + i * ldu * m * isz, m, m, ldu, dtype, "gesvdjBatched U")
            vv = self.mem.cm(V + i * ldv * n * isz, n, n, ldv, dtype, "gesvdjBatched V")
            if jobz == 1:
                uu[...], vv[...] = u, vh.conj().T
            _garbage(a)
        self._info(info, [0] * batchSize, "gesvdjBatched info")

    # -- general eigenproblem (cusolverDnXgeev, the 64-bit generic API)
    def _geev_check(self, params, jobvl, jobvr, n, dataTypeA, lda, dataTypeW, dataTypeVL, ldvl, dataTypeVR, ldvr,
                    computeType):
        """The combination gparray (and CuPy) use: A, VL, VR and the compute type of one dtype,
        W complex of its precision; only right eigenvectors."""
        assert params == 79, f"xgeev: params {params}"
        assert jobvl == 0, "xgeev: cuSOLVER computes no left eigenvectors (jobvl must be NOVECTOR)"
        assert jobvr in (0, 1), f"xgeev: jobvr {jobvr}"
        dt = _CUDA_TYPE[dataTypeA]
        assert _CUDA_TYPE[dataTypeW] == _COMPLEX[dt], f"xgeev: W of type {dataTypeW} for A of {dt}"
        assert dataTypeVL == dataTypeVR == computeType == dataTypeA, (dataTypeVL, dataTypeVR, computeType)
        assert n >= 1 and lda >= n and ldvl >= 1 and ldvr >= (n if jobvr else 1), (n, lda, ldvl, ldvr)
        return dt

    def _xgeev_bufferSize(self, dtype, handle, params, jobvl, jobvr, n, dataTypeA, A, lda, dataTypeW, W, dataTypeVL,
                          VL, ldvl, dataTypeVR, VR, ldvr, computeType):
        dt = self._geev_check(params, jobvl, jobvr, n, dataTypeA, lda, dataTypeW, dataTypeVL, ldvl, dataTypeVR, ldvr,
                              computeType)
        self.mem.cm(A, n, n, lda, dt, "xgeev_bufferSize A")
        sizes = (np.dtype(dt).itemsize * (n * n + 7), 8 * n + 13)      # (device bytes, host bytes)
        self.bufsize["xgeev"] = sizes
        return sizes

    def _xgeev(self, dtype, handle, params, jobvl, jobvr, n, dataTypeA, A, lda, dataTypeW, W, dataTypeVL, VL, ldvl,
               dataTypeVR, VR, ldvr, computeType, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
               workspaceInBytesOnHost, info):
        dt = self._geev_check(params, jobvl, jobvr, n, dataTypeA, lda, dataTypeW, dataTypeVL, ldvl, dataTypeVR, ldvr,
                              computeType)
        dsz, hsz = self.bufsize["xgeev"]
        assert workspaceInBytesOnDevice >= dsz and workspaceInBytesOnHost >= hsz, "xgeev: workspace below bufferSize"
        self.mem.check(bufferOnDevice, workspaceInBytesOnDevice, "xgeev device workspace")
        self.mem.check(bufferOnHost, workspaceInBytesOnHost, "xgeev host workspace")
        a = self.mem.cm(A, n, n, lda, dt, "xgeev A")
        w, v = np.linalg.eig(a)
        self.mem.vec(W, n, _COMPLEX[dt], "xgeev W")[:] = w
        if jobvr == 1:
            self.mem.cm(VR, n, n, ldvr, dt, "xgeev VR")[...] = v if np.dtype(dt).kind == "c" else lapack_pack(w, v)
        _garbage(a)
        self._info(info, [0])


def lapack_pack(w, v):
    """Real VR as sgeev/dgeev return it from NumPy's complex (w, v) of a real matrix: a real
    eigenvalue's vector in its column; a conjugate pair (positive imaginary part first) as
    Re v_j, Im v_j in columns j, j+1."""
    n = len(w)
    out = np.empty((n, n), v.real.dtype)
    j = 0
    while j < n:
        if np.imag(w[j]) == 0:
            out[:, j] = np.real(v[:, j])
            j += 1
            continue
        assert np.imag(w[j]) > 0 and j + 1 < n and w[j + 1] == np.conj(w[j]), "not LAPACK's pair order"
        assert np.array_equal(v[:, j + 1], np.conj(v[:, j]))
        out[:, j], out[:, j + 1] = np.real(v[:, j]), np.imag(v[:, j])
        j += 2
    return out


# ---------------------------------------------------------------------------- arrays
class NumpyOps:
    """gparray/linalg/_xp.py on NumPy arrays; every new array is registered in ``mem``."""

    def __init__(self, mem):
        self.mem = mem
        for name in ("conj", "triu", "tril", "abs", "log", "sign", "prod", "sum", "max", "where", "matmul",
                     "count_nonzero", "broadcast_to", "reshape", "expand_dims"):
            setattr(self, name, getattr(np, name))

    @staticmethod
    def is_array(x):
        return isinstance(x, np.ndarray)

    def _new(self, a):
        return self.mem.register(a if a.flags.c_contiguous else a.copy())

    def contig(self, x, dtype):
        return self._new(np.array(x, dtype=dtype, order="C", copy=True))

    def empty(self, shape, dtype, like):
        a = np.empty(tuple(shape), dtype)
        _garbage(a)
        return self._new(a)

    def zeros(self, shape, dtype, like):
        return self._new(np.zeros(tuple(shape), dtype))

    def upper_copy(self, x, trans, sb):
        """The kernel's reads: matrix m at x's first element + m * sb bytes, rows and columns
        by x's last two strides (a wrong ``sb`` reads the wrong matrices)."""
        assert x.ndim >= 2 and x.shape[-1] == x.shape[-2]
        n = x.shape[-1]
        count = int(np.prod(x.shape[:-2], dtype=np.int64))
        mats = np.lib.stride_tricks.as_strided(x, (count, n, n), (sb,) + x.strides[-2:])
        b = np.swapaxes(mats, -1, -2) if trans else mats
        return self._new(np.triu(np.array(b, order="C", copy=True)).reshape(x.shape))

    @staticmethod
    def keep_upper(x):
        assert x.flags.c_contiguous
        x[...] = np.triu(x)
        return x

    def eye(self, batch, n, dtype, like):
        return self._new(np.broadcast_to(np.eye(n, dtype=dtype), tuple(batch) + (n, n)).copy())

    def gather_last(self, x, perm, dtype):
        return self._new(np.array(np.take(x, perm, axis=-1), dtype=dtype, order="C"))

    @staticmethod
    def ptr(x):
        return x.ctypes.data

    @staticmethod
    def dev(x):
        return 0

    @staticmethod
    def host(x):
        return np.array(x)

    @staticmethod
    def diag(x):
        return np.diagonal(x, axis1=-2, axis2=-1)

    @staticmethod
    def promote(d1, d2):
        return np.promote_types(d1, d2)

    @staticmethod
    def astype(x, dtype):
        return np.asarray(x).astype(dtype)

    @staticmethod
    def arange(start, stop, dtype, like):
        return np.arange(start, stop, dtype=dtype)


def install(monkeypatch, mem):
    """Point gparray/_engine/_solver.py at the fake libraries and host memory."""
    from cupy_backends.cuda.libs import cublas, cusolver

    from gparray._engine import _solver

    libs = (FakeLib(cusolver, mem, SOLVER_HANDLE), FakeLib(cublas, mem, BLAS_HANDLE))

    def alloc(nbytes, dev):
        assert nbytes > 0 and dev == 0
        a = np.full(nbytes, 0xFF, np.uint8)
        mem.register(a)
        return _Blk(a)

    def ptr_array(base, step, count, dev):
        assert count > 0 and dev == 0
        a = mem.register(np.arange(count, dtype=np.uint64) * np.uint64(step) + np.uint64(base))
        return _Blk(a)

    monkeypatch.setattr(_solver, "_libs", lambda: libs)
    monkeypatch.setattr(_solver, "_handles", lambda dev: (SOLVER_HANDLE, BLAS_HANDLE))
    monkeypatch.setattr(_solver._backend, "on_device", lambda dev: contextlib.nullcontext())
    monkeypatch.setattr(_solver, "_alloc", alloc)
    monkeypatch.setattr(_solver, "_ptr_array", ptr_array)
    monkeypatch.setattr(_solver, "_lworks", {})    # the workspace sizes the fake answers
    return libs


def lu_perm_reference(ipiv, n):
    """The row permutation of getrf's 1-based pivots (gp_lu_perm's contract): the swaps of
    rows i and ipiv[i] - 1 applied in order to 0 ... n - 1; pivots outside [0, n) skipped."""
    perm = np.arange(n, dtype=np.int64)
    for i, p in enumerate(np.asarray(ipiv, dtype=np.int64)[:n] - 1):
        if p != i and 0 <= p < n:
            perm[[i, p]] = perm[[p, i]]
    return perm


def install_lu_perm(monkeypatch, mem, min_n=2):
    """The solve path of one large matrix on the model: lu_perm_ok from ``min_n`` up,
    lu_perm by lu_perm_reference, lu_solve by NumPy's triangular solves on the factors."""
    from gparray._engine import _solver

    def lu_perm(ipiv, perm, n, dev):
        mem.calls.append("lu_perm")
        mem.vec(perm, n, np.int64, "perm")[:] = lu_perm_reference(mem.vec(ipiv, n, np.int32, "ipiv"), n)

    def lu_solve(dtype, n, a, b, nrhs, dev):
        mem.calls.append("lu_solve")
        f = np.array(mem.cm(a, n, n, n, dtype, "A"))
        rhs = mem.cm(b, n, nrhs, n, dtype, "B")
        x = np.array(rhs)
        with np.errstate(all="ignore"):   # (a singular U gives inf/NaN, as cuBLAS' solves do)
            for i in range(n):                          # L (unit lower)
                x[i] -= f[i, :i] @ x[:i]
            for i in range(n - 1, -1, -1):              # U
                x[i] = (x[i] - f[i, i + 1:] @ x[i + 1:]) / f[i, i]
        rhs[...] = x

    monkeypatch.setattr(_solver, "lu_perm_ok", lambda n: min_n <= n <= _solver.LU_PERM_MAX)
    monkeypatch.setattr(_solver, "lu_perm", lu_perm)
    monkeypatch.setattr(_solver, "lu_solve", lu_solve)
