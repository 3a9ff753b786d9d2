"""cuBLAS on gparray memory: the calls a ``MatmulPlan`` (gparray/_engine/_matmul_plan.py)
describes.

One cuBLAS handle per (device, host thread), in pointer mode host and the default math
mode: float32 products are computed in full float32, as NumPy does (no TF32). Set
``GPARRAY_ALLOW_TF32=1`` (read at import) to let cuBLAS use TF32 tensor cores for float32.
A handle is bound to the current stream before a call whenever that stream (or the
workspace generation, below) differs from the one it was last bound to, so the products
run in stream order with gparray's kernels and an unchanged stream costs one dict lookup.

The products call ``cublas<t>gemm_v2`` / ``cublas<t>gemmStridedBatched`` through ctypes on
the libcublas CuPy loaded (found as below). CuPy's own bindings call ``cublasSetStream``
before every routine, and ``cublasSetStream`` resets the handle's workspace to cuBLAS's
own, so a product through them would never use the pool workspace; they are the fallback
when that library cannot be found (``workspace_info`` says why). A caller that hands
gparray's handle to CuPy's bindings (the solver engine's batched LU) takes it from
``shared_handle``, which makes the next product bind the handle again.

Workspace. ``cublasCreate`` allocates a default workspace with cudaMalloc, outside the pool,
and ``cublasSetStream`` switches a handle back to it. So after binding a stream the handle
gets a workspace from gparray's pool: one Block of ``WORKSPACE_BYTES`` (32 MiB, what cuBLAS
itself uses on Hopper; ``GPARRAY_CUBLAS_WORKSPACE=<bytes>`` read at import, 0 keeps
cuBLAS's own) per (host thread, device, stream), allocated on that stream at its first
product there and held until ``release_workspaces()`` (a process usually has one: the
default stream of its one thread; at most ``WS_MAX`` are kept, the oldest dropped first).
If the pool cannot give one (a memory limit), that stream keeps cuBLAS's own. A workspace is used only in its stream's order, and
the pool's stream-ordered frees cover a released one that queued products still use.
CuPy's binding has no ``setWorkspace``; ``cublasSetWorkspace_v2`` is called through ctypes
on the libcublas CuPy already loaded (``dlopen`` with RTLD_NOLOAD by the soname of CuPy's
cuBLAS major version, else the path mapped in /proc/self/maps), after checking its major
version. Best effort: when that library cannot be found or the call fails, products use
cuBLAS's own workspace and ``workspace_info`` says why. The default workspace that
``cublasCreate`` itself allocates stays allocated for the handle's life (cuBLAS offers no
way to avoid it short of ``CUBLAS_WORKSPACE_CONFIG=:0:0`` in the environment, which gparray
does not set since it would change every cuBLAS user of the process).

Host cost. ``prepare`` turns a plan into a ``GemmCall`` (everything but the three
pointers, with the ctypes arguments that never change already built), which the matmul
namespace memoizes per operand layout; ``launch`` is then the stream check and one
library call per matrix run.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading

import numpy as np

from .._native import claunch as _claunch
from . import _loaded_libs
from ._matmul_plan import INT32_MAX

ALLOW_TF32 = os.environ.get("GPARRAY_ALLOW_TF32", "0") not in ("", "0")
_OP = {"N": 0, "T": 1}                     # CUBLAS_OP_N, CUBLAS_OP_T
_DEFAULT_MATH, _TF32_MATH = 0, 3           # CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH
_FUNCS = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
_local = threading.local()
_scalars: dict = {}                        # dtype name -> (&one, &zero, c_void_p(&one), c_void_p(&zero), arrays)
_V, _LL = ctypes.c_void_p, ctypes.c_longlong
_Gemm = getattr(_claunch, "Gemm", None)     # the gemm calls in C (None: the ctypes loop below)
_CFuncPtr = ctypes._CFuncPtr                 # a foreign function: its address is what C calls


def _workspace_bytes() -> int:
    v = os.environ.get("GPARRAY_CUBLAS_WORKSPACE", "")
    try:
        return max(0, int(v)) if v.strip() else 32 << 20
    except ValueError:
        return 32 << 20


WORKSPACE_BYTES = _workspace_bytes()
_ws_lock = threading.Lock()
_workspaces: dict = {}                     # (thread token, device, stream) -> [Block, status]
WS_MAX = 64                                # workspaces kept (the oldest dropped first)
_generation = 0                            # bumped by release_workspaces: handles re-bind
_lib = None                                # ctypes CDLL of CuPy's libcublas; False: not found
_lib_note = ""                             # which library, or why none
_setter = None                             # ctypes cublasSetWorkspace_v2; False: unavailable
_setter_note = ""                          # why it is unavailable
_fns: dict = {}                            # (prefix, batched) -> (ctypes function or None, CuPy binding)


def _host_scalars(dt) -> tuple:
    """(&one, &zero, c_void_p(&one), c_void_p(&zero), the arrays) of dtype ``dt``: host
    scalars for cuBLAS' pointer mode host, made once per dtype and kept alive here."""
    sc = _scalars.get(dt.name)
    if sc is None:
        one, zero = np.ones(1, dt), np.zeros(1, dt)
        p1, p0 = one.ctypes.data, zero.ctypes.data
        sc = _scalars[dt.name] = (p1, p0, _V(p1), _V(p0), (one, zero))
    return sc


def _cublas():
    from cupy_backends.cuda.libs import cublas

    return cublas


def _thread_token():
    t = getattr(_local, "token", None)
    if t is None:
        t = _local.token = object()  # kept alive by its keys: never reused by a later thread
    return t


def handle(dev: int) -> int:
    """This thread's cuBLAS handle on device ``dev`` (created on first use)."""
    hs = getattr(_local, "handles", None)
    if hs is None:
        hs = _local.handles = {}
    h = hs.get(dev)
    if h is None:
        import cupy as cp

        cublas = _cublas()
        with cp.cuda.Device(dev):
            h = cublas.create()
        cublas.setMathMode(h, _TF32_MATH if ALLOW_TF32 else _DEFAULT_MATH)
        hs[dev] = h
    return h


def _library(h: int):
    """The libcublas CuPy loaded (which created ``h``) as a ctypes CDLL, or None."""
    global _lib, _lib_note
    if _lib is not None:
        return _lib or None
    _lib = False
    major = _cublas().getVersion(h) // 10000     # e.g. 130100 -> 13
    names = [f"libcublas.so.{major}"] + _loaded_libs.mapped("libcublas.so")
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=_loaded_libs.NOLOAD)   # only a library already in the process
            lib.cublasSetWorkspace_v2, lib.cublasSgemm_v2    # noqa: B018 - both must exist
            prop = lib.cublasGetProperty
        except (OSError, AttributeError):
            continue
        prop.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        prop.restype = ctypes.c_int
        v = ctypes.c_int(-1)
        if prop(0, ctypes.byref(v)) != 0 or v.value != major:   # MAJOR_VERSION
            continue
        _lib, _lib_note = lib, f"from {name}"
        return lib
    _lib_note = f"no loaded libcublas of major version {major} found (tried {names})"
    return None


def _find_setter(h: int):
    """``cublasSetWorkspace_v2`` of the libcublas CuPy loaded (which created ``h``), or None."""
    global _setter, _setter_note
    if _setter is not None:
        return _setter or None
    _setter = False
    if WORKSPACE_BYTES <= 0:
        _setter_note = "disabled (GPARRAY_CUBLAS_WORKSPACE=0): cuBLAS's own workspace"
        return None
    lib = _library(h)
    if lib is None:
        _setter_note = _lib_note
        return None
    fn = lib.cublasSetWorkspace_v2
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    _setter = fn
    _setter_note = f"cublasSetWorkspace_v2 {_lib_note}"
    return fn


def bind(dev: int, stream_ptr: int) -> int:
    """This thread's handle on ``dev``, bound to ``stream_ptr`` and to this stream's pool
    workspace (cublasSetStream and cublasSetWorkspace_v2 are called only when the stream or
    the workspace generation changed since the handle's last binding here, or after
    ``shared_handle`` handed it out). Every cuBLAS call on gparray's handles goes through
    here or through ``shared_handle``."""
    bound = getattr(_local, "bound", None)
    if bound is not None:
        e = bound.get(dev)
        if e is not None and e[1] == stream_ptr and e[2] == _generation:
            return e[0]
    return _bind(dev, stream_ptr)


def _bind(dev: int, stream_ptr: int) -> int:
    h = handle(dev)
    bound = getattr(_local, "bound", None)
    if bound is None:
        bound = _local.bound = {}
    gen = _generation
    _cublas().setStream(h, stream_ptr)          # also resets the workspace to cuBLAS's own
    fn = _find_setter(h)
    if fn is not None:
        e = _workspace(dev, stream_ptr)
        if e is not None:
            e[1] = int(fn(h, e[0].ptr, WORKSPACE_BYTES))    # CUBLAS_STATUS_SUCCESS == 0
    bound[dev] = (h, stream_ptr, gen)
    return h


def shared_handle(dev: int) -> int:
    """This thread's handle on ``dev`` for CuPy's cuBLAS bindings, which set the current
    stream themselves before every routine (and so reset the handle's workspace to
    cuBLAS's own): the next product binds the handle again."""
    h = handle(dev)
    bound = getattr(_local, "bound", None)
    if bound is not None:
        bound.pop(dev, None)
    return h


def _workspace(dev: int, stream_ptr: int):
    """[Block, status] of this thread's workspace on ``dev``/``stream_ptr`` (allocated on that
    stream on first use); None when the pool cannot give it (then cuBLAS's own is used)."""
    global _generation
    key = (_thread_token(), dev, stream_ptr)
    with _ws_lock:
        e = _workspaces.get(key)
        if e is not None:
            return e
        from .. import _memory

        try:
            blk = _memory.alloc(WORKSPACE_BYTES, dev, stream_ptr)
        except _memory.OutOfMemoryError:
            return None
        if len(_workspaces) >= WS_MAX:
            # the oldest goes back to the pool; every handle re-binds at its next product, so
            # none keeps using memory it no longer owns
            _workspaces.pop(next(iter(_workspaces)))
            _generation += 1
        e = _workspaces[key] = [blk, None]
        return e


def workspace_info(dev: int, stream_ptr: int) -> dict:
    """What this thread's handle on ``dev`` uses on ``stream_ptr``: ``ptr`` and ``bytes`` of the
    pool workspace (None: cuBLAS's own), ``status`` of the last cublasSetWorkspace_v2 (0:
    set), ``note`` (which library call, or why none) and ``products`` ("ctypes": the gemm
    calls of that library, which keep the workspace; "cupy": CuPy's bindings, which reset
    it to cuBLAS's own before every call; None: no product yet)."""
    e = _workspaces.get((_thread_token(), dev, stream_ptr))
    how = None if _lib is None else ("ctypes" if _lib else "cupy")
    return {"ptr": e[0].ptr if e else None, "bytes": WORKSPACE_BYTES if e else None,
            "status": e[1] if e else None, "note": _setter_note, "products": how}


def release_workspaces() -> None:
    """Drop every pool workspace (they go back to the pool, stream-ordered); each handle binds
    a new one at its next product. Call it while no other host thread is enqueueing
    products (tests, memory accounting)."""
    global _generation
    with _ws_lock:
        _workspaces.clear()
        _generation += 1


# ---------------------------------------------------------------------------- products
class GemmCall:
    """The cuBLAS calls of one "blas" plan for one dtype, less the operands' pointers:
    ``fkey`` (type prefix, strided-batched?), the int arguments of the swapped problem
    C' (n x m, ld n) = op(B') op(A'), the batch strides in elements, the host
    scalars one and zero, and ``offsets``: the byte offsets (A, B, C) of each run of the
    host loop over the plan's outer dimensions."""

    __slots__ = ("fkey", "ints", "strides", "scalars", "offsets", "inner", "native")

    def __init__(self, p, dtype):
        if max(p.m, p.n, p.k) > INT32_MAX:
            raise ValueError(f"matmul: a dimension of {max(p.m, p.n, p.k)} exceeds cuBLAS' 32-bit sizes")
        dt = np.dtype(dtype)
        sc = _host_scalars(dt)
        isz = dt.itemsize
        self.fkey = (_FUNCS[dt.name], p.inner != 1)
        # the swapped problem: C' (n x m, ld n) = op(B') (n x k) . op(A') (k x m)
        self.ints = (_OP[p.b.op], _OP[p.a.op], p.n, p.m, p.k, p.b.ld, p.a.ld, max(p.n, 1))
        sa, sb, scs = p.inner_strides
        self.strides = (sa, sb, scs)
        self.scalars = sc
        self.inner = p.inner
        self.native = None   # the calls in C (_claunch.Gemm), made at the first launch
        self.offsets = tuple(
            tuple(isz * sum(i * s[j] for i, (_, s) in zip(idx, p.outer)) for j in range(3))
            for idx in itertools.product(*(range(e) for e, _ in p.outer)))


def prepare(p, dtype) -> GemmCall:
    """The ``GemmCall`` of plan ``p`` (kind "blas") for ``dtype`` (float32, float64, complex64
    or complex128); ValueError when a dimension exceeds cuBLAS' 32-bit sizes."""
    return GemmCall(p, dtype)


def _resolve(fkey, h):
    """(ctypes function or None, CuPy binding) of ``fkey`` = (prefix, batched)."""
    f = _fns.get(fkey)
    if f is None:
        pre, batched = fkey
        name = pre.lower() + ("gemmStridedBatched" if batched else "gemm")
        binding = getattr(_cublas(), name)
        lib, fn = _library(h), None
        if lib is not None:
            fn = getattr(lib, f"cublas{pre}gemmStridedBatched" if batched else f"cublas{pre}gemm_v2")
            fn.restype = ctypes.c_int   # arguments: Python ints (C int) and ctypes pointers/long longs
        f = _fns[fkey] = (fn, binding)
    return f


def launch(c: GemmCall, a_ptr: int, b_ptr: int, c_ptr: int, dev: int, stream_ptr: int) -> None:
    """Run ``c`` for operands at ``a_ptr``/``b_ptr`` into the C-contiguous result at ``c_ptr``
    on ``stream_ptr`` (``dev`` must be the current device)."""
    h = bind(dev, stream_ptr)
    g = c.native
    if g is None:
        f = _fns.get(c.fkey)
        if f is None:
            f = _resolve(c.fkey, h)
        fn = f[0]
        if _Gemm is not None and isinstance(fn, _CFuncPtr):   # from now on the calls are made in C
            sc = c.scalars
            g = c.native = _Gemm(ctypes.cast(fn, _V).value, c.inner != 1, c.ints, sc[0], sc[1], c.offsets,
                                 c.strides, c.inner, sc)
    if g is not None:
        st = g(h, a_ptr, b_ptr, c_ptr)
        if st:
            _status(st, c)
        return
    ta, tb, n, m, k, lda, ldb, ldc = c.ints
    if fn is not None:
        one, zero = c.scalars[2], c.scalars[3]
        hv = _V(h)
        if c.inner == 1:
            for oa, ob, oc in c.offsets:
                st = fn(hv, ta, tb, n, m, k, one, _V(b_ptr + ob), lda, _V(a_ptr + oa), ldb, zero,
                        _V(c_ptr + oc), ldc)
                if st:
                    _status(st, c)
        else:
            sa, sb, scs = c.strides
            sa, sb, scs, cnt = _LL(sa), _LL(sb), _LL(scs), c.inner
            for oa, ob, oc in c.offsets:
                st = fn(hv, ta, tb, n, m, k, one, _V(b_ptr + ob), lda, sb, _V(a_ptr + oa), ldb, sa, zero,
                        _V(c_ptr + oc), ldc, scs, cnt)
                if st:
                    _status(st, c)
        return
    fn = f[1]   # CuPy's binding (it sets the current stream itself)
    one, zero = c.scalars[0], c.scalars[1]
    if c.inner == 1:
        for oa, ob, oc in c.offsets:
            fn(h, ta, tb, n, m, k, one, b_ptr + ob, lda, a_ptr + oa, ldb, zero, c_ptr + oc, ldc)
    else:
        sa, sb, scs = c.strides
        for oa, ob, oc in c.offsets:
            fn(h, ta, tb, n, m, k, one, b_ptr + ob, lda, sb, a_ptr + oa, ldb, sa, zero, c_ptr + oc, ldc, scs,
               c.inner)


def _status(st: int, c: GemmCall):
    pre, batched = c.fkey
    raise RuntimeError(f"matmul: cublas{pre}gemm{'StridedBatched' if batched else '_v2'} failed with "
                       f"cublasStatus_t {st}")


def gemm(p, dtype, a_ptr: int, b_ptr: int, c_ptr: int, dev: int, stream_ptr: int) -> None:
    """Run plan ``p`` (kind "blas") for operands at ``a_ptr``/``b_ptr`` (their copies when
    the plan copies them) into the C-contiguous result at ``c_ptr``; ``dtype``: float32,
    float64, complex64 or complex128."""
    launch(prepare(p, dtype), a_ptr, b_ptr, c_ptr, dev, stream_ptr)


# ---------------------------------------------------------------------------- LU solves
_FILL_LOWER, _FILL_UPPER, _DIAG_NON_UNIT, _DIAG_UNIT, _SIDE_LEFT = 0, 1, 0, 1, 0


def _tr_fn(pre: str, vector: bool, h: int):
    """ctypes ``cublas<t>trsv_v2`` (vector) or ``cublas<t>trsm_v2`` of the loaded libcublas,
    or None (then CuPy's trsm binding serves)."""
    key = (pre, "trsv" if vector else "trsm")
    f = _fns.get(key)
    if f is None:
        lib = _library(h)
        f = None if lib is None else getattr(lib, f"cublas{pre}{key[1]}_v2", None)
        if f is not None:
            f.restype = ctypes.c_int
        _fns[key] = f = f or False
    return f or None


def lu_solve(dtype: str, n: int, a: int, b: int, nrhs: int, dev: int, stream_ptr: int) -> None:
    """B := U^-1 L^-1 B in place for the LU factors at ``a`` (column-major n x n, lda = n, as
    getrf leaves them: L unit lower, U upper) and the column-major n x ``nrhs`` right-hand
    sides at ``b`` (ldb = n), already row-permuted: two triangular solves on
    ``stream_ptr`` (``dev`` current), trsv for one right-hand side, else trsm."""
    if n == 0 or nrhs == 0:
        return
    if max(n, nrhs) > INT32_MAX:
        raise ValueError(f"solve: a dimension of {max(n, nrhs)} exceeds cuBLAS' 32-bit sizes")
    pre = _FUNCS[dtype]
    dt = np.dtype(dtype)
    sc = _host_scalars(dt)
    h = bind(dev, stream_ptr)
    fn = _tr_fn(pre, nrhs == 1, h)
    steps = ((_FILL_LOWER, _DIAG_UNIT), (_FILL_UPPER, _DIAG_NON_UNIT))
    if fn is not None:
        hv, av, bv = _V(h), _V(a), _V(b)
        for uplo, diag in steps:
            if nrhs == 1:
                st = fn(hv, uplo, _OP["N"], diag, n, av, n, bv, 1)
            else:
                st = fn(hv, _SIDE_LEFT, uplo, _OP["N"], diag, n, nrhs, sc[2], av, n, bv, n)
            if st:
                raise RuntimeError(f"solve: cublas{pre}{'trsv' if nrhs == 1 else 'trsm'}_v2 failed with "
                                   f"cublasStatus_t {st}")
        return
    binding = getattr(_cublas(), pre.lower() + "trsm")   # (sets the current stream itself)
    hs = shared_handle(dev)
    for uplo, diag in steps:
        binding(hs, _SIDE_LEFT, uplo, _OP["N"], diag, n, nrhs, sc[0], a, n, b, n)
