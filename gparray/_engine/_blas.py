"""cuBLAS on gparray memory: the calls a ``MatmulPlan`` (gparray/_engine/_matmul_plan.py)
describes, through CuPy's cuBLAS bindings.

One cuBLAS handle per (device, host thread), in pointer mode host and the default math
mode: float32 products are computed in full float32, as NumPy does (no TF32). Set
``GPARRAY_ALLOW_TF32=1`` (read at import) to let cuBLAS use TF32 tensor cores for float32.
Each call first binds the handle to the current stream, so the products run in stream order
with gparray's kernels.
"""
from __future__ import annotations

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


def _cublas():
    from cupy_backends.cuda.libs import cublas

    return cublas


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


def gemm(p, dtype, a_ptr: int, b_ptr: int, c_ptr: int, dev: int, stream_ptr: int) -> None:
    """Run plan ``p`` (kind "blas") for operands at ``a_ptr``/``b_ptr`` (their copies when
    the plan copies them) into the C-contiguous result at ``c_ptr``; ``dtype``: float32,
    float64, complex64 or complex128."""
    if max(p.m, p.n, p.k) > INT32_MAX:
        raise ValueError(f"matmul: a dimension of {max(p.m, p.n, p.k)} exceeds cuBLAS' 32-bit sizes")
    cublas = _cublas()
    h = handle(dev)
    cublas.setStream(h, stream_ptr)
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
