"""cuBLAS on gparray memory: the calls a ``MatmulPlan`` (gparray/_engine/_matmul_plan.py)
describes, through CuPy's cuBLAS bindings.

One cuBLAS handle per (device, host thread), in pointer mode host and the default math
mode: float32 products are computed in full float32, as NumPy does (no TF32). Set
``GPARRAY_ALLOW_TF32=1`` (read at import) to let cuBLAS use TF32 tensor cores for float32.
A handle is bound to the current stream before a call whenever that stream (or the
workspace generation, below) differs from the one it was last bound to, so the products
run in stream order with gparray's kernels and an unchanged stream costs nothing.

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
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading

import numpy as np

from ._matmul_plan import INT32_MAX

ALLOW_TF32 = os.environ.get("GPARRAY_ALLOW_TF32", "0") not in ("", "0")
_OP = {"N": 0, "T": 1}                     # CUBLAS_OP_N, CUBLAS_OP_T
_DEFAULT_MATH, _TF32_MATH = 0, 3           # CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH
_FUNCS = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_local = threading.local()
_scalars: dict = {}                        # dtype -> (one, zero) host arrays


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
_setter = None                             # ctypes cublasSetWorkspace_v2; False: unavailable
_setter_note = ""                          # why it is unavailable


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


def _find_setter(h: int):
    """``cublasSetWorkspace_v2`` of the libcublas CuPy loaded (which created ``h``), or None."""
    global _setter, _setter_note
    if _setter is not None:
        return _setter or None
    _setter = False
    if WORKSPACE_BYTES <= 0:
        _setter_note = "disabled (GPARRAY_CUBLAS_WORKSPACE=0): cuBLAS's own workspace"
        return None
    major = _cublas().getVersion(h) // 10000     # e.g. 130100 -> 13
    names = [f"libcublas.so.{major}"]
    try:
        with open("/proc/self/maps") as f:
            names += sorted({ln.split()[-1] for ln in f
                             if os.path.basename(ln.split()[-1]).startswith("libcublas.so")})
    except OSError:
        pass
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2)
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=mode)   # only a library already in the process
            fn = lib.cublasSetWorkspace_v2
            prop = lib.cublasGetProperty
        except (OSError, AttributeError):
            continue
        prop.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        prop.restype = ctypes.c_int
        v = ctypes.c_int(-1)
        if prop(0, ctypes.byref(v)) != 0 or v.value != major:   # MAJOR_VERSION
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = ctypes.c_int
        _setter = fn
        _setter_note = f"cublasSetWorkspace_v2 from {name}"
        return fn
    _setter_note = f"no loaded libcublas of major version {major} found (tried {names})"
    return None


def bind(dev: int, stream_ptr: int) -> int:
    """This thread's handle on ``dev``, bound to ``stream_ptr`` and to this stream's pool
    workspace (cublasSetStream and cublasSetWorkspace_v2 are called only when the stream or
    the workspace generation changed since the handle's last use). Every cuBLAS call on
    gparray's handles should go through here: a direct ``setStream`` on the handle drops
    the pool workspace (cuBLAS's own is used until the stream changes again; the stream
    itself is checked on every call, so products never run on a stale one)."""
    h = handle(dev)
    bound = getattr(_local, "bound", None)
    if bound is None:
        bound = _local.bound = {}
    cublas = _cublas()
    # getStream too: code that calls setStream on the handle itself must not make a product
    # run on the stream it chose (its reset of the workspace only costs the pool's)
    if bound.get(dev) == (stream_ptr, _generation) and cublas.getStream(h) == stream_ptr:
        return h
    gen = _generation
    cublas.setStream(h, stream_ptr)             # also resets the workspace to cuBLAS's own
    fn = _find_setter(h)
    if fn is not None:
        e = _workspace(dev, stream_ptr)
        if e is not None:
            e[1] = int(fn(h, e[0].ptr, WORKSPACE_BYTES))    # CUBLAS_STATUS_SUCCESS == 0
    bound[dev] = (stream_ptr, gen)
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
    set), and ``note`` (which library call, or why none)."""
    e = _workspaces.get((_thread_token(), dev, stream_ptr))
    return {"ptr": e[0].ptr if e else None, "bytes": WORKSPACE_BYTES if e else None,
            "status": e[1] if e else None, "note": _setter_note}


def release_workspaces() -> None:
    """Drop every pool workspace (they go back to the pool, stream-ordered); each handle binds
    a new one at its next product. Call it while no other host thread is enqueueing
    products (tests, memory accounting)."""
    global _generation
    with _ws_lock:
        _workspaces.clear()
        _generation += 1


def gemm(p, dtype, a_ptr: int, b_ptr: int, c_ptr: int, dev: int, stream_ptr: int) -> None:
    """Run plan ``p`` (kind "blas") for operands at ``a_ptr``/``b_ptr`` (their copies when
    the plan copies them) into the C-contiguous result at ``c_ptr``; ``dtype``: float32,
    float64, complex64 or complex128."""
    if max(p.m, p.n, p.k) > INT32_MAX:
        raise ValueError(f"matmul: a dimension of {max(p.m, p.n, p.k)} exceeds cuBLAS' 32-bit sizes")
    cublas = _cublas()
    h = bind(dev, stream_ptr)
    dt = np.dtype(dtype)
    sc = _scalars.get(dt)
    if sc is None:
        sc = _scalars[dt] = (np.ones(1, dt), np.zeros(1, dt))
    one, zero = sc[0].ctypes.data, sc[1].ctypes.data
    pre = _FUNCS[dt.name]
    isz = dt.itemsize
    # the swapped problem: C' (n x m, ld n) = op(B') (n x k) . op(A') (k x m)
    ta, tb = _OP[p.b.op], _OP[p.a.op]
    lda, ldb, ldc = p.b.ld, p.a.ld, max(p.n, 1)
    sa, sb, scs = p.inner_strides
    single = getattr(cublas, pre + "gemm")
    batched = getattr(cublas, pre + "gemmStridedBatched")
    for idx in itertools.product(*(range(e) for e, _ in p.outer)):
        oa = sum(i * s[0] for i, (_, s) in zip(idx, p.outer))
        ob = sum(i * s[1] for i, (_, s) in zip(idx, p.outer))
        oc = sum(i * s[2] for i, (_, s) in zip(idx, p.outer))
        A, B, C = a_ptr + oa * isz, b_ptr + ob * isz, c_ptr + oc * isz
        if p.inner == 1:
            single(h, ta, tb, p.n, p.m, p.k, one, B, lda, A, ldb, zero, C, ldc)
        else:
            batched(h, ta, tb, p.n, p.m, p.k, one, B, lda, sb, A, ldb, sa, zero, C, ldc, scs, p.inner)
