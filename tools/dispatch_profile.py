"""Where the host time of one small elementwise op goes (run on the GPU machine)."""
import time

import numpy as np

import gparray as xp
from gparray._array import _empty
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
odt, expr, tile = plan[:3]
out = a + b
args = (np.uint64(out._ptr), np.uint64(a._ptr), np.uint64(b._ptr), np.int64(1))
k = _launch.kernel("elementwise", expr, 0, args)
import cupy as cp  # noqa: E402
from gparray._array import Array  # noqa: E402
from gparray._engine import _elementwise as _ew  # noqa: E402
from gparray._memory import get_pool  # noqa: E402
from gparray._kernels import _launcher  # noqa: E402

pool = get_pool(0)
pyargs = (out._ptr, a._ptr, b._ptr, 1)
print("compiled launch path:", _launcher._claunch is not None)

s = cp.cuda.get_current_stream().ptr
rows = {
    "a + b (operator)": lambda: a + b,
    "xp.add(a, b)": lambda: xp.add(a, b),
    "alloc+free 4 B": lambda: alloc(4, 0),
    "_empty((1,), f32)": lambda: _empty((1,), odt, dev),
    "launch() with prebuilt args": lambda: _launch.launch("elementwise", expr, 0, 1, args),
    "Kernel() packed launch only": lambda: k(1, 256, args, 0, s),
    "k.launch, Python ints": lambda: k.launch(1, 256, pyargs, 0, s),
    "k._py_launch, Python ints": lambda: k._py_launch(1, 256, pyargs, 0, s),
    "Array._new": lambda: Array._new(out._buf, 0, (1,), (4,), odt, dev),
    "pool.malloc + free 4 B": lambda: pool.malloc(4, s),
    "empty Python call": lambda: None,
    "a._is_c_contig()": lambda: a._is_c_contig(),
    "_empty + _ew.contig(plan,out,a,b)": lambda: _ew.contig(plan, _empty((1,), odt, dev), a, (b._ptr,)),
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

# ---- the reduction / scan / strided-slice paths, piece by piece
s_ptr = s
from gparray._engine import _reduce, _scan  # noqa: E402
from gparray._api import _statistical  # noqa: E402

sv = xp.ones(4096, dtype=xp.float32)
sout = _empty((), xp.float32, dev)
cout = _empty((4096,), xp.float32, dev)
xp.sum(sv)
xp.cumulative_sum(sv)
key = next(k for k in _reduce._launches if k[0] == "sum" and k[3] == (4096,))
lp = _reduce._launches[key]
rows2 = {
    "xp.sum(sv) 4096": lambda: xp.sum(sv),
    "_reduce.reduce(sum) prebuilt out": lambda: _reduce.reduce("sum", sv, (0,), sout),
    "sum checks (_check+dtype+axes)": lambda: (_statistical._check(sv, "sum", "biufc", "n"),
                                              _statistical._result_dtype(None, _reduce.sum_dtype(sv._dtype), "sum"),
                                              _statistical._shapes.normalize_axes(None, 1, "sum")),
    "alloc ws + free": lambda: alloc(lp.ws_bytes or 512, 0),
    "xp.cumulative_sum(sv) 4096": lambda: xp.cumulative_sum(sv),
    "_scan.scan(sum) prebuilt out": lambda: _scan.scan("sum", sv, 0, cout),
    "memsetAsync 4 KiB": lambda: cp.cuda.runtime.memsetAsync(cout._ptr, 0, 4096, s_ptr),
    "sv[::2]": lambda: sv[::2],
    "sv[::2] + sv[::2]": lambda: sv[::2] + sv[::2],
    "xp.where(sv > 0, sv, sv)": lambda: xp.where(sv > 0, sv, sv),
    "sv > 0": lambda: sv > 0,
}
for name, fn in rows2.items():
    print(f"{name:<32} {per_op(fn):7.2f} us")

# ---- the driver alone: n launches in a C loop, per stream kind and parameter passing
if _launcher._claunch is not None:
    c = k.launch
    if isinstance(c, _launcher._claunch.Launch):
        nb = cp.cuda.Stream(non_blocking=True)
        blk = cp.cuda.Stream()
        for sname, sp in (("legacy 0", 0), ("per-thread 2", 2), ("current", s), ("blocking new", blk.ptr),
                          ("non-blocking new", nb.ptr)):
            for params in (False, True):
                c.repeat(200, 1, 256, pyargs, 0, sp, params)
                cp.cuda.runtime.deviceSynchronize()
                t = time.perf_counter()
                st = c.repeat(N, 1, 256, pyargs, 0, sp, params)
                dt = (time.perf_counter() - t) / N * 1e6
                cp.cuda.runtime.deviceSynchronize()
                print(f"C loop cuLaunchKernel {sname:<17} {'params' if params else 'extra':<6} {dt:6.2f} us (status {st})")
    import torch  # noqa: E402

    ta = torch.ones(1, device="cuda")
    tb = torch.ones(1, device="cuda")
    print(f"{'torch a + b':<32} {per_op(lambda: ta + tb):7.2f} us")
    print(f"{'a + b (operator) again':<32} {per_op(lambda: a + b):7.2f} us")
