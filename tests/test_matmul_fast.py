"""CPU tier: floating ``xp.matmul`` without a GPU (gparray/_api/_linear_algebra.py,
gparray/_engine/_blas.py). The library calls are a column-major model of cuBLAS' gemm on
host buffers at fake device addresses (tests/test_matmul_int.py's ``Mem``), reached through
``_blas.launch`` exactly as on the device, in both forms: the ctypes functions of
libcublas (argument by argument: C ints as Python ints, pointers as ``c_void_p``, batch
strides as ``c_longlong``, the host scalars one and zero) and CuPy's bindings (plain
ints). Checked: every plan's products against numpy.matmul on hypothesis-generated
layouts, the per-layout memo (a second call is served from it, keyed by shapes, strides
and dtypes, never for copies or float16), the stream of the result's block and the device
check."""
import ctypes

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gparray as xp
from gparray._core import _backend
from gparray._array import _matmul as _la
from gparray._engine import _blas

from test_matmul_int import Mem, _Buf
from test_matmul_plan import problems

HANDLE = 4242
FLOATS = ["float32", "float64", "complex64", "complex128"]
_PRE = {"S": "float32", "D": "float64", "C": "complex64", "Z": "complex128"}


class _StreamBuf(_Buf):
    def __init__(self, ptr, stream):
        super().__init__(ptr)
        self.stream = stream


def _scalar(ptr, dt):
    return np.frombuffer(ctypes.string_at(ptr, dt.itemsize), dt)[0]


class Device:
    """The fakes: host memory, the current stream and device, and the cuBLAS model."""

    def __init__(self, monkeypatch, form):
        self.form = form
        self.stream, self.current = 77, 0
        self.calls, self.binds = [], []
        self.native_calls, self.keep = 0, []
        self.reset()

        def empty(shape, dtype, dev=None):
            out = self.mem.empty(shape, dtype)
            out._buf = _StreamBuf(out._buf.ptr, self.stream)
            return out

        def copy(x, dtype=None):
            out = empty(x._shape, dtype or x._dtype)
            vals = self.mem.host(x).astype(out._dtype)
            if vals.size:
                self.mem.scatter(out._ptr, out._dtype, np.arange(vals.size), vals.reshape(-1))
            return out

        class _CP:
            class cuda:
                class runtime:
                    @staticmethod
                    def getDevice():
                        return self.current

        real_slow = _la._matmul

        def slow(x1, x2):
            self.slow += 1
            return real_slow(x1, x2)

        def memset0(x):
            if x.size:
                self.mem.scatter(x._ptr, x._dtype, np.arange(x.size), np.zeros(x.size, x._dtype))

        monkeypatch.setattr(_la, "_empty", empty)
        monkeypatch.setattr(_la, "_copy", copy)
        monkeypatch.setattr(_la._transfer, "memset0", memset0)
        monkeypatch.setattr(_la, "_matmul", slow)
        monkeypatch.setattr(_la, "_fast", {})
        monkeypatch.setattr(_la, "_one_device", None)
        monkeypatch.setattr(_backend, "cupy", lambda: _CP)
        monkeypatch.setattr(_backend, "device_count", lambda: 1)
        monkeypatch.setattr(_blas, "bind", lambda dev, s: self.binds.append((dev, s)) or HANDLE)
        monkeypatch.setattr(_blas, "_fns", {})
        monkeypatch.setattr(_blas, "_resolve", self.resolve)

    def reset(self):
        """Fresh host memory and counters (the memo stays)."""
        self.mem, self.slow = Mem(), 0

    def resolve(self, fkey, h):
        assert h == HANDLE
        if self.form == "native":
            f = (self.native_fn(fkey), None)
        else:
            f = (self.lib_fn(fkey), None) if self.form == "ctypes" else (None, self.binding(fkey))
        _blas._fns[fkey] = f
        return f

    def native_fn(self, fkey):
        """A C function pointer (a ctypes callback of cuBLAS' gemm signature) over the model:
        the compiled calls (_claunch.Gemm) reach it through C, as they reach libcublas."""
        pre, batched = fkey
        V, I, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        if batched:
            proto = ctypes.CFUNCTYPE(I, V, I, I, I, I, I, V, V, I, L, V, I, L, V, V, I, L, I)

            def fn(h, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt):
                assert h == HANDLE
                self.native_calls += 1
                self.gemm(pre, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt)
                return 0
        else:
            proto = ctypes.CFUNCTYPE(I, V, I, I, I, I, I, V, V, I, V, I, V, V, I)

            def fn(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc):
                assert h == HANDLE
                self.native_calls += 1
                self.gemm(pre, ta, tb, m, n, k, al, A, lda, 0, B, ldb, 0, be, C, ldc, 0, 1)
                return 0
        cb = proto(fn)
        self.keep.append(cb)
        return cb

    def lib_fn(self, fkey):
        pre, batched = fkey

        def fn(*a):
            assert isinstance(a[0], ctypes.c_void_p) and a[0].value == HANDLE
            ints = (1, 2, 3, 4, 5, 8, 10, 13) if not batched else (1, 2, 3, 4, 5, 8, 11, 15, 17)
            ptrs = (6, 7, 9, 11, 12) if not batched else (6, 7, 10, 13, 14)
            assert len(a) == (18 if batched else 14)
            for i in ints:
                assert type(a[i]) is int, (i, a[i])
            for i in ptrs:
                assert isinstance(a[i], ctypes.c_void_p), (i, a[i])
            if batched:
                for i in (9, 12, 16):
                    assert isinstance(a[i], ctypes.c_longlong), (i, a[i])
                ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt = (
                    v if type(v) is int else v.value for v in a[1:])
            else:
                ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc = (v if type(v) is int else v.value for v in a[1:])
                sa = sb = sc = 0
                cnt = 1
            self.gemm(pre, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt)
            return 0

        return fn

    def binding(self, fkey):
        pre, batched = fkey

        def fn(h, *a):
            assert h == HANDLE and all(type(v) is int for v in a)
            if batched:
                self.gemm(pre, *a)
            else:
                ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc = a
                self.gemm(pre, ta, tb, m, n, k, al, A, lda, 0, B, ldb, 0, be, C, ldc, 0, 1)

        return fn

    def gemm(self, pre, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt):
        """Column-major C (m x n, ldc) = op(A) (m x k) op(B) (k x n), ``cnt`` times."""
        dt = np.dtype(_PRE[pre])
        assert _scalar(al, dt) == 1 and _scalar(be, dt) == 0
        assert ta in (0, 1) and tb in (0, 1) and cnt >= 1
        assert lda >= max(1, m if ta == 0 else k) and ldb >= max(1, k if tb == 0 else n) and ldc >= max(1, m)
        self.calls.append((pre, cnt))
        i, j, l_ = np.arange(m)[:, None], np.arange(n)[None, :], np.arange(k)
        for t in range(cnt):
            ia = (i + l_[None, :] * lda) if ta == 0 else (l_[None, :] + i * lda)          # (m, k)
            ib = (l_[:, None] + j * ldb) if tb == 0 else (j + l_[:, None] * ldb)          # (k, n)
            a = self.mem.gather(A + t * sa * dt.itemsize, dt, ia.reshape(-1)).reshape(m, k)
            b = self.mem.gather(B + t * sb * dt.itemsize, dt, ib.reshape(-1)).reshape(k, n)
            self.mem.scatter(C + t * sc * dt.itemsize, dt, (i + j * ldc).reshape(-1), (a @ b).reshape(-1))


@pytest.fixture(params=["ctypes", "cupy", "native"])
def device(request, monkeypatch):
    if request.param == "native" and _blas._Gemm is None:
        pytest.skip("C extension gparray._native._claunch not built")
    if request.param != "native":
        monkeypatch.setattr(_blas, "_Gemm", None)   # the Python loop of the ctypes/CuPy forms
    return Device(monkeypatch, request.param)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=problems())
def test_products_match_numpy_and_repeat_from_the_memo(case, device):
    x1, x2 = case                                   # float64 views: transposed, stepped, flipped, broadcast
    device.reset()
    g1, g2 = device.mem.array(x1), device.mem.array(x2)
    key = (g1._shape, g1._strides, g1._dtype, g2._shape, g2._strides, g2._dtype)
    known = key in _la._fast                        # an earlier example had these layouts
    want = np.matmul(x1, x2)
    for _ in range(2):
        got = xp.matmul(g1, g2)
        assert got._shape == want.shape and got._dtype == want.dtype
        np.testing.assert_array_equal(device.mem.host(got), want)
    assert device.slow == (0 if known else 1 if key in _la._fast else 2)


def _views(shape, dtype, seed):
    """(C order, transposed buffer, broadcast stack) views of random values of ``shape``."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-3, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        v = (v + 1j * rng.integers(-3, 4, shape)).astype(dtype)
    t = np.ascontiguousarray(np.swapaxes(v, -1, -2)).swapaxes(-1, -2)
    return [v, t, np.broadcast_to(v[:1], v.shape)]


@pytest.mark.parametrize("dtype", FLOATS)
def test_every_dtype_and_its_library_function(device, dtype):
    for va in _views((3, 4, 5), dtype, 1):
        for vb in _views((3, 5, 2), dtype, 2) + [_views((5, 2), dtype, 3)[1]]:
            device.reset()
            want = np.matmul(va, vb)
            g1, g2 = device.mem.array(va), device.mem.array(vb)
            for _ in range(2):
                got = xp.matmul(g1, g2)
                assert got._dtype == want.dtype
                np.testing.assert_allclose(device.mem.host(got), want, rtol=1e-6)
            assert device.slow == 1
    assert {pre for pre, _ in device.calls} == {dtype_prefix(dtype)}
    if device.form == "native":   # every call made by the compiled Gemm, through C
        assert device.native_calls == len(device.calls) > 0
        assert all(type(c.native) is _blas._Gemm for c in (f[2] for f in _la._fast.values()))


def dtype_prefix(dtype):
    return {v: k for k, v in _PRE.items()}[dtype]


def test_memo_keys_hold_shapes_strides_and_dtypes(device):
    mem = device.mem
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    g1, g2 = mem.array(a), mem.array(b)
    np.testing.assert_array_equal(mem.host(g1 @ g2), a @ b)
    assert len(_la._fast) == 1 and device.slow == 1
    np.testing.assert_array_equal(mem.host(g1 @ g2), a @ b)
    assert device.slow == 1
    # the same shapes read transposed (other strides), another dtype, another shape
    at = np.ascontiguousarray(a.T).T
    np.testing.assert_array_equal(mem.host(mem.array(at) @ g2), a @ b)
    a64 = a.astype(np.float64)
    np.testing.assert_array_equal(mem.host(mem.array(a64) @ mem.array(b.astype(np.float64))), a64 @ b)
    np.testing.assert_array_equal(mem.host(mem.array(a[:2]) @ g2), a[:2] @ b)
    assert device.slow == 4 and len(_la._fast) == 4
    # stacks: one strided-batched call, served from the memo the second time
    s1 = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for _ in range(2):
        np.testing.assert_array_equal(mem.host(mem.array(s1) @ g2), s1 @ b)
    assert device.slow == 5 and device.calls[-1] == ("S", 2) and device.calls[-2] == ("S", 2)


def test_copies_and_promotions_are_never_memoized(device):
    mem = device.mem
    a = np.arange(36, dtype=np.float64).reshape(6, 6)[::2, ::2]     # steps in both: copied
    b = np.ones((3, 2), np.float64)
    for _ in range(2):
        np.testing.assert_array_equal(mem.host(mem.array(a) @ mem.array(b)), a @ b)
    c = np.ones((3, 3), np.float32)
    for _ in range(2):                                               # float32 @ float64: converted
        np.testing.assert_array_equal(mem.host(mem.array(c) @ mem.array(b)), c @ b)
    assert _la._fast == {} and device.slow == 4


def test_products_run_on_the_stream_of_the_result(device):
    mem = device.mem
    a = np.ones((2, 2), np.float32)
    g = mem.array(a)
    g @ g
    device.stream = 99                                               # e.g. inside `with stream:`
    g @ g
    assert device.slow == 1 and [s for _, s in device.binds] == [77, 99]


def test_another_current_device_takes_the_checked_path(device, monkeypatch):
    mem = device.mem
    g = mem.array(np.ones((2, 2), np.float32))
    monkeypatch.setattr(_backend, "device_count", lambda: 2)
    g @ g
    g @ g
    assert device.slow == 1                                          # same device: memo
    device.current = 1                                               # cuda:0 arrays, cuda:1 current

    entered = []

    class _Dev:
        def __init__(self, i):
            entered.append(i)

        def __enter__(self):
            return self

        def __exit__(self, *e):
            return False

    class _S:
        ptr = 55

    cp = _backend.cupy()
    monkeypatch.setattr(cp.cuda, "Device", _Dev, raising=False)
    monkeypatch.setattr(cp.cuda, "get_current_stream", lambda: _S, raising=False)
    np.testing.assert_array_equal(mem.host(g @ g), np.full((2, 2), 2, np.float32))
    assert device.slow == 2 and entered == [0] and device.binds[-1] == (0, 55)


@pytest.mark.skipif(_blas._Gemm is None, reason="C extension gparray._native._claunch not built")
def test_compiled_gemm_passes_every_argument_and_stops_at_a_failed_status():
    """_claunch.Gemm calls a C function of cuBLAS' signature once per offset run with the
    operands offset by the run's bytes (B's pointer first) and returns the first nonzero
    status; bad construction arguments raise."""
    V, I, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    seen = []

    def fn(h, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt):
        seen.append((h, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, cnt))
        return 7 if len(seen) == 2 else 0

    cb = ctypes.CFUNCTYPE(I, V, I, I, I, I, I, V, V, I, L, V, I, L, V, V, I, L, I)(fn)
    addr = ctypes.cast(cb, V).value
    g = _blas._Gemm(addr, True, (1, 0, 3, 4, 5, 6, 7, 8), 0x100, 0x200, ((0, 0, 0), (16, 32, 64), (1, 2, 3)),
                    (10, 20, 30), 9, None)
    assert g(0x42, 0x1000, 0x2000, 0x3000) == 7 and len(seen) == 2      # the third run not made
    assert seen[0] == (0x42, 1, 0, 3, 4, 5, 0x100, 0x2000, 6, 20, 0x1000, 7, 10, 0x200, 0x3000, 8, 30, 9)
    assert seen[1][7] == 0x2000 + 32 and seen[1][10] == 0x1000 + 16 and seen[1][14] == 0x3000 + 64
    with pytest.raises(ValueError):
        _blas._Gemm(0, False, (0,) * 8, 1, 1, (), (0, 0, 0), 1, None)
    with pytest.raises(ValueError):
        _blas._Gemm(addr, False, (0,) * 7, 1, 1, (), (0, 0, 0), 1, None)
    with pytest.raises(OverflowError):
        _blas._Gemm(addr, False, (0,) * 7 + (2**31,), 1, 1, (), (0, 0, 0), 1, None)
    with pytest.raises(TypeError):
        g(1, 2, 3)
