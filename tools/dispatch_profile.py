"""Where the host time of one small elementwise op goes (run on the GPU machine)."""
import time

import numpy as np

import gparray as xp
from gparray._creation import _empty
from gparray._engine import _launch
from gparray._memory import alloc

N = 20000


def per_op(fn, n=N):
    for _ in range(200):
        fn()
    xp.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t) / n * 1e6
    xp.cuda.synchronize()
    return dt


a = xp.ones(1, dtype=xp.float32)
b = xp.ones(1, dtype=xp.float32)
dev = a.device
plan = xp.add._fast[(a.dtype, b.dtype)] if (a.dtype, b.dtype) in xp.add._fast else None
a + b
plan = xp.add._fast[(a.dtype, b.dtype)]
odt, expr, tile = plan
out = a + b
args = (np.uint64(out._ptr), np.uint64(a._ptr), np.uint64(b._ptr), np.int64(1))
k = _launch.kernel("elementwise", expr, 0, args)
import cupy as cp  # noqa: E402

s = cp.cuda.get_current_stream().ptr
rows = {
    "a + b (operator)": lambda: a + b,
    "xp.add(a, b)": lambda: xp.add(a, b),
    "alloc+free 4 B": lambda: alloc(4, 0),
    "_empty((1,), f32)": lambda: _empty((1,), odt, dev),
    "launch() with prebuilt args": lambda: _launch.launch("elementwise", expr, 0, 1, args),
    "Kernel() packed launch only": lambda: k(1, 256, args, 0, s),
    "CuPy Function call": lambda: k.fn((1,), (256,), args),
    "args tuple build": lambda: (np.uint64(out._ptr), np.uint64(a._ptr), np.uint64(b._ptr), np.int64(1)),
    "get_current_stream().ptr": lambda: cp.cuda.get_current_stream().ptr,
    "runtime.getDevice()": lambda: cp.cuda.runtime.getDevice(),
    "cupy a + b (reference)": (lambda ca=cp.ones(1, cp.float32), cb=cp.ones(1, cp.float32): ca + cb),
}
# the driver call alone: CuPy's Cython binding, then libcuda through ctypes
from cupy_backends.cuda.api import driver  # noqa: E402
import ctypes  # noqa: E402

from gparray._kernels._launcher import _buffers  # noqa: E402

buf, size, extra_addr, _keep = _buffers()
k.st.pack_into(buf, 0, *args)
size.value = k.size
rows["driver.launchKernel (Cython)"] = lambda: driver.launchKernel(k.ptr, 1, 1, 1, 256, 1, 1, 0, s, 0, extra_addr)
_cu = ctypes.CDLL("libcuda.so.1")
_launch_c = _cu.cuLaunchKernel
_launch_c.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_launch_c.restype = ctypes.c_int
rows["cuLaunchKernel (ctypes)"] = lambda: _launch_c(k.ptr, 1, 1, 1, 256, 1, 1, 0, s, None, extra_addr)
rows["cuLaunchKernel x10 / 10 (ctypes)"] = None

for name, fn in rows.items():
    if fn is None:
        def ten():
            for _ in range(10):
                _launch_c(k.ptr, 1, 1, 1, 256, 1, 1, 0, s, None, extra_addr)
        print(f"{name:<32} {per_op(ten, N // 10) / 10:7.2f} us")
        continue
    print(f"{name:<32} {per_op(fn):7.2f} us")
