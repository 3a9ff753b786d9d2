"""GPU tier: user kernels (gparray.cuda.compile_kernel) launched on gparray arrays vs NumPy."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gparray as xp
import gparray.cuda as gcuda
from gparray._core import _backend
from gparray._kernels import _compile
from gparray.cuda import _user_kernels as uk
from _arrays import host

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCALE = r"""
#include "gp/types.cuh"
// y[i] = a * x[i * sx]: x given by its first element and its element stride
extern "C" __global__ void scale(const float* x, long long sx, float* y, long long n, float a) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i * sx];
}
"""

COPY2D = r"""
extern "C" __global__ void twice2d(const double* x, long long s0, long long s1, double* y,
                                   long long rows, long long cols) {
    const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long r = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) y[r * cols + c] = 2.0 * x[r * s0 + c * s1];
}
"""

AXPY = r"""
template <class T>
__global__ void axpy(T a, const T* x, T* y, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

BLOCK_SUMS = r"""
extern "C" __global__ void block_sums(const float* x, float* out, int n) {
    extern __shared__ float s[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"""

SCALARS = r"""
#include "gp/types.cuh"
extern "C" __global__ void scalars(double* out, int i32, double d, bool flag, float f, long long i64,
                                   unsigned char u8, gp::complex64 c) {
    out[0] = i32; out[1] = d; out[2] = flag ? 1.0 : 0.0; out[3] = f; out[4] = static_cast<double>(i64);
    out[5] = u8; out[6] = c.re; out[7] = c.im;
}
"""


def _blocks(n, block):
    return (n + block - 1) // block


def test_offset_and_strided_views():
    a = np.arange(50, dtype=np.float32) * 0.5
    x = xp.asarray(a)[3::4]            # an offset and a stride
    n = x.shape[0]
    y = xp.empty((n,), dtype=xp.float32)
    k = gcuda.compile_kernel(SCALE, "scale")
    k(_blocks(n, 64), 64, (x, x.strides[0] // 4, y, n, np.float32(3.0)))
    np.testing.assert_array_equal(host(y), np.float32(3.0) * a[3::4])


def test_two_dimensional_grid_over_a_non_contiguous_view():
    a = np.arange(13 * 11, dtype=np.float64).reshape(13, 11)
    x = xp.asarray(a)[1:, ::3]
    rows, cols = x.shape
    y = xp.empty((rows, cols), dtype=xp.float64)
    k = gcuda.compile_kernel(COPY2D, "twice2d")
    k((_blocks(cols, 8), _blocks(rows, 8)), (8, 8), (x, x.strides[0] // 8, x.strides[1] // 8, y, rows, cols))
    np.testing.assert_array_equal(host(y), 2.0 * a[1:, ::3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_axpy_instantiations(dtype):
    mod = gcuda.compile_kernel(AXPY, "axpy", name_expressions=["axpy<float>", "axpy<double>"])
    k = mod["axpy<float>" if dtype == "float32" else "axpy<double>"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(1000).astype(dtype), rng.standard_normal(1000).astype(dtype)
    x, y = xp.asarray(a), xp.asarray(b)
    alpha = np.dtype(dtype).type(1.5)
    k(_blocks(1000, 128), 128, (alpha, x, y, 1000))
    # the compiler may contract alpha * x + y into one fused multiply-add (one rounding, not
    # two): allow two units in the last place of |alpha * x| + |y|, either way
    got, want = host(y).astype(np.float64), alpha.astype(np.float64) * a + b
    bound = 2 * np.finfo(dtype).eps * (np.abs(alpha * a.astype(np.float64)) + np.abs(b))
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


def test_dynamic_shared_memory():
    a = (np.arange(1000) % 7).astype(np.float32)
    x = xp.asarray(a)
    block = 128
    nb = _blocks(1000, block)
    out = xp.empty((nb,), dtype=xp.float32)
    k = gcuda.compile_kernel(BLOCK_SUMS, "block_sums")
    k(nb, block, (x, out, np.int32(1000)), shared_mem=block * 4)
    want = np.add.reduceat(a, np.arange(0, 1000, block))
    np.testing.assert_array_equal(host(out), want)


def test_scalars_arrive_as_their_documented_c_types():
    out = xp.zeros((8,), dtype=xp.float64)
    k = gcuda.compile_kernel(SCALARS, "scalars")
    k(1, 1, (out, np.int32(-5), 2.25, True, np.float32(0.5), 2**40 + 3, np.uint8(200), np.complex64(1.5 - 2j)))
    np.testing.assert_array_equal(host(out), [-5, 2.25, 1, 0.5, 2**40 + 3, 200, 1.5, -2])


def test_explicit_stream():
    cp = _backend.cupy()
    a = np.arange(4096, dtype=np.float32)
    x = xp.asarray(a)
    y = xp.zeros((4096,), dtype=xp.float32)
    gcuda.synchronize()  # x and y are ready before another stream reads them
    s = cp.cuda.Stream(non_blocking=True)
    k = gcuda.compile_kernel(SCALE, "scale")
    k(_blocks(4096, 256), 256, (x, 1, y, 4096, np.float32(-1)), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(host(y), -a)
    # a raw stream handle works too
    k(_blocks(4096, 256), 256, (x, 1, y, 4096, np.float32(2)), stream=s.ptr)
    s.synchronize()
    np.testing.assert_array_equal(host(y), 2 * a)


def test_cache_hit_after_clearing_the_in_memory_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(uk, "_loaded", {})
    src = SCALE + "\n// cache test\n"
    x = xp.asarray(np.arange(10, dtype=np.float32))
    y = xp.empty((10,), dtype=xp.float32)
    gcuda.compile_kernel(src, "scale")(1, 32, (x, 1, y, 10, np.float32(2)))
    assert any(p.suffix == ".cubin" for p in tmp_path.iterdir())
    uk.clear_memo()

    def no_nvrtc(*a, **k):
        raise AssertionError("NVRTC called on a cache hit")

    monkeypatch.setattr(_compile, "nvrtc_compile", no_nvrtc)
    gcuda.compile_kernel(src, "scale")(1, 32, (x, 1, y, 10, np.float32(4)))
    np.testing.assert_array_equal(host(y), 4 * np.arange(10, dtype=np.float32))


_SCRIPT = textwrap.dedent(r"""
    import sys
    import numpy as np
    import gparray as xp, gparray.cuda as gcuda
    from gparray._kernels import _compile
    if sys.argv[1] == "second":
        def no_nvrtc(*a, **k):
            raise AssertionError("NVRTC called on a cache hit")
        _compile.nvrtc_compile = no_nvrtc
    mod = gcuda.compile_kernel(sys.argv[2], "axpy", name_expressions=["axpy<float>", "axpy<double>"])
    x = xp.asarray(np.arange(8, dtype=np.float64))
    y = xp.ones((8,), dtype=xp.float64)
    mod["axpy<double>"](1, 32, (2.0, x, y, 8))
    print("result", np.asarray(y).tolist())
""")


def test_cache_hit_in_a_second_process(tmp_path):
    env = dict(os.environ, GPARRAY_CACHE_DIR=str(tmp_path), GPARRAY_HOST_CONVERSION="allow")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    src = AXPY + "\n// second process\n"
    want = "result " + str((2.0 * np.arange(8) + 1).tolist())
    for run in ("first", "second"):
        out = subprocess.run([sys.executable, "-c", _SCRIPT, run, src], capture_output=True, text=True, env=env,
                             timeout=300)
        assert out.returncode == 0, (run, out.stderr[-3000:])
        assert out.stdout.strip().splitlines()[-1] == want, (run, out.stdout)


@pytest.mark.skipif(_backend.device_count() < 2, reason="needs two CUDA devices")
def test_launches_on_the_arrays_device():
    a = np.arange(100, dtype=np.float32)
    with xp.Device(1):
        x = xp.asarray(a)
        y = xp.empty((100,), dtype=xp.float32)
    k = gcuda.compile_kernel(SCALE, "scale")
    k(1, 128, (x, 1, y, 100, np.float32(2)))  # current device 0; the arrays' device 1
    np.testing.assert_array_equal(host(y), 2 * a)
    z = xp.empty((100,), dtype=xp.float32)
    with pytest.raises(ValueError, match=r"^UserKernel.__call__ \(scale\): argument 2 is on cuda:0"):
        k(1, 128, (x, 1, z, 100, np.float32(2)))
