"""One-off device probe: NVRTC/CuPy versions, struct-by-value kernel params, cubin load."""
import sys, time, subprocess
t0 = time.time()
import numpy as np
import cupy as cp
t1 = time.time()
from cupy_backends.cuda.libs import nvrtc
print("import cupy", round(t1 - t0, 3), "nvrtc", nvrtc.getVersion(), "cupy", cp.__version__, "numpy", np.__version__)
print("archs", nvrtc.getSupportedArchs())
sys.path.insert(0, ".")
from gparray._kernels import _compile, _registry
t = time.time()
f = _registry.get_kernel("elementwise", "gp_binary_strided<op_add, float, float, float, float, 4, int>", 0)
print("first compile+load", round(time.time() - t, 3))
a = cp.arange(12, dtype=cp.float32).reshape(3, 4)
b = cp.arange(4, dtype=cp.float32) * 10
out = cp.empty((3, 4), cp.float32)
K = 1 + 4 * 4
dt = np.dtype([("v", np.int64, (K,))])
rec = np.zeros((), dt)
v = rec["v"]
v[0] = 2; v[1] = 3; v[2] = 4
# strides: out (4,1), a (4,1), b (0,1)
v[1 + 4 * 1 + 0] = 4; v[1 + 4 * 1 + 1] = 1
v[1 + 4 * 2 + 0] = 4; v[1 + 4 * 2 + 1] = 1
v[1 + 4 * 3 + 0] = 0; v[1 + 4 * 3 + 1] = 1
f((1,), (256,), (np.uint64(out.data.ptr), np.uint64(a.data.ptr), np.uint64(b.data.ptr), rec[()], np.int32(12)))
cp.cuda.Device().synchronize()
print("struct ok:", bool((out == a + b).all()))
g = _registry.get_kernel("elementwise", "gp_scalar_contig<op_add, gp::complex64, gp::complex64, gp::complex64, false>", 0)
c = cp.arange(5, dtype=cp.complex64)
o = cp.empty_like(c)
g((1,), (256,), (np.uint64(o.data.ptr), np.uint64(c.data.ptr), np.complex64(1 + 2j), np.int64(5)))
print("complex scalar ok:", bool((o == c + (1 + 2j)).all()))
x = cp.arange(10**6, dtype=cp.float32)
y = cp.empty_like(x)
h = _registry.get_kernel("elementwise", "gp_unary_contig<op_identity, float, float, float>", 0)
args = (np.uint64(y.data.ptr), np.uint64(x.data.ptr), np.int64(x.size))
for _ in range(100): h((1024,), (256,), args)
cp.cuda.Device().synchronize()
t = time.perf_counter()
for _ in range(10000): h((1,), (256,), args)
print("launch us", (time.perf_counter() - t) / 10000 * 1e6)
t = time.perf_counter()
for _ in range(10000): h((1,), (256,), (np.uint64(y.data.ptr), np.uint64(x.data.ptr), np.int64(x.size)))
print("launch+args us", (time.perf_counter() - t) / 10000 * 1e6)
t = time.perf_counter()
for _ in range(10000): rec = np.zeros((), dt); rec["v"][:3] = (1,2,3); r = rec[()]
print("struct build us", (time.perf_counter() - t) / 10000 * 1e6)
t = time.perf_counter()
for _ in range(10000): s = cp.cuda.get_current_stream().ptr
print("get stream us", (time.perf_counter() - t) / 10000 * 1e6)
print(subprocess.run([sys.executable, "-X", "importtime", "-c", "import cupy"], capture_output=True, text=True).stderr.splitlines()[-1])
for i in range(2):
    t = time.time(); subprocess.run([sys.executable, "-c", "import cupy; cupy.cuda.runtime.getDeviceCount(); cupy.cuda.Device(0).synchronize()"]); print("import cupy + ctx", round(time.time() - t, 3))
