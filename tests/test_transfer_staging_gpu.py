"""GPU tier: host transfers against NumPy: staged pageable transfers (gparray/_engine/_staging.py)
at the sizes where the plan changes, pinned host memory (gparray.cuda.pinned_empty,
foreign and registered pinned memory), non-default streams, changes to the source right
after ``asarray`` returns, read-only and non-contiguous inputs, many threads at once."""
import concurrent.futures
import gc

import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same, sample
from gparray._core import _backend
from gparray._engine import _staging
from gparray._memory import _host

pytestmark = pytest.mark.gpu

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]
MiB = 1 << 20
STAGE, BUF = _staging.STAGE_MIN, _staging.BUFFER_BYTES
# byte sizes around every threshold of the plan (element counts are these / itemsize)
EDGES = {"one": None, "stage-1": STAGE - 1, "stage": STAGE, "stage+1": STAGE + 1, "buf-1": BUF - 1,
         "buf": BUF, "buf+1": BUF + 1, "many": 4 * BUF + 12345}


def _n(nbytes, itemsize):
    return 1 if nbytes is None else max(1, nbytes // itemsize + (nbytes % itemsize > 0))


def _downloads(x):
    """Every way to copy x to the host."""
    return {"from_dlpack": np.from_dlpack(x, device="cpu"), "asarray": np.asarray(x),
            "to_host": xp.cuda.to_host(x)}


@pytest.mark.parametrize("edge", list(EDGES))
@pytest.mark.parametrize("dtype", ALL)
def test_round_trip_at_every_plan_edge(dtype, edge):
    a = sample(dtype, (_n(EDGES[edge], np.dtype(dtype).itemsize),), seed=len(edge))
    x = xp.asarray(a)
    for how, b in _downloads(x).items():
        assert b.dtype == a.dtype and b.shape == a.shape, how
        assert b.flags.c_contiguous and b.flags.writeable, how
        np.testing.assert_array_equal(b, a, err_msg=how)
    if a.nbytes >= STAGE:
        assert _host._pool is not None and _host._pool.buffers is not None   # it was staged


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 5, 7), (1,), (1025, 2049), (3, 1000, 700)])
@pytest.mark.parametrize("dtype", ["bool", "float32", "complex128"])
def test_round_trip_shapes(dtype, shape):
    a = sample(dtype, shape, seed=3)
    x = xp.asarray(a)
    assert x.shape == shape
    for how, b in _downloads(x).items():
        assert b.shape == shape, how
        assert_same(b, a, how)


@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128"])
def test_non_contiguous_host_and_device_arrays(dtype):
    a = sample(dtype, (2048, 3000), seed=4)                 # 6-48 MiB: staged
    for view in (a[::2], a.T, a[:, ::-3], a[5:-7, 11:]):
        assert_same(xp.asarray(view), np.ascontiguousarray(view))
    x = xp.asarray(a)
    for key in ((slice(None, None, 2),), (slice(None), slice(None, None, -3))):
        for how, b in _downloads(x[key]).items():
            assert_same(b, a[key], how)
    assert_same(np.asarray(x.T), a.T)


@pytest.mark.parametrize("n", [10, STAGE // 4 + 3, 3 * BUF // 4 + 5])
def test_read_only_inputs(n):
    a = sample("float32", (n,), seed=5)
    a.flags.writeable = False
    assert_same(xp.asarray(a), a)
    p = xp.cuda.pinned_empty((n,), xp.float32)
    p[...] = a
    p.flags.writeable = False
    assert_same(xp.asarray(p), a)


def _busy(stream_work=16):
    """Queue several ms of kernels on the current stream (32 passes over 256 MiB), so that
    copies queued after them run late."""
    y = xp.ones(1 << 26, dtype=xp.float32)
    for _ in range(stream_work):
        y = y * 1.0001 + 0.5
    return y


@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("n", [1000, STAGE // 4 + 1, 5 * BUF // 4 + 17])
def test_changing_the_source_after_asarray_does_not_reach_the_device(n, pinned):
    a = sample("float32", (n,), seed=6)
    src = xp.cuda.pinned_empty(a.shape, a.dtype) if pinned else a.copy()
    src[...] = a
    keep = _busy()
    x = xp.asarray(src)
    src[...] = -1.0                                         # at once, while the GPU is busy
    assert_same(x, a)
    del keep


def test_changing_registered_host_memory_after_asarray():
    """A NumPy array pinned with cudaHostRegister is recognized by the driver query and
    waited for as well."""
    cp = _backend.cupy()
    a = sample("float64", (3 * BUF // 8 + 5,), seed=7)
    src = a.copy()
    cp.cuda.runtime.hostRegister(src.ctypes.data, src.nbytes, 0)
    try:
        assert _host.is_pinned(src)
        keep = _busy()
        x = xp.asarray(src)
        src[...] = 0.0
        assert_same(x, a)
        del keep
    finally:
        cp.cuda.runtime.hostUnregister(src.ctypes.data)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (BUF // 8 + 3,)])
def test_pinned_empty_round_trips(dtype, shape):
    p = xp.cuda.pinned_empty(shape, np.dtype(dtype))
    assert p.shape == shape and p.dtype == np.dtype(dtype) and p.flags.c_contiguous
    assert _host.is_pinned(p)
    a = sample(dtype, shape, seed=8)
    p[...] = a
    x = xp.asarray(p)
    assert_same(x, a)
    q = xp.cuda.pinned_empty(shape, np.dtype(dtype))
    assert xp.cuda.to_host(x, out=q) is q
    assert_same(q, a)
    assert_same(xp.from_dlpack(p), a)                       # a host producer


def test_pinned_views_and_foreign_pinned_memory():
    cp = _backend.cupy()
    p = xp.cuda.pinned_empty((4096, 1024), xp.float32)
    p[...] = sample("float32", p.shape, seed=9)
    assert_same(xp.asarray(p[100:]), p[100:])
    assert_same(xp.asarray(p[:, 1:]), p[:, 1:])             # made contiguous (pageable) first
    mem = cp.cuda.alloc_pinned_memory(8 * BUF)
    f = np.frombuffer(mem, np.float64, BUF)
    f[...] = sample("float64", (BUF,), seed=10)
    assert _host.is_pinned(f)
    x = xp.asarray(f)
    assert_same(x, f)
    g = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * BUF), np.float64, BUF)
    xp.cuda.to_host(x, out=g)
    assert_same(g, f)
    assert not _host.is_pinned(np.ones(10))
    assert xp.cuda.pinned_empty(3).dtype == np.float64


def test_to_host_into_pageable_out():
    a = sample("int32", (3 * BUF // 4 + 1,), seed=11)
    out = np.empty_like(a)
    assert xp.cuda.to_host(xp.asarray(a), out=out) is out
    assert_same(out, a)
    with pytest.raises(ValueError, match="^to_host"):
        xp.cuda.to_host(xp.asarray(a), out=out[1:])


@pytest.mark.parametrize("n", [100, STAGE // 4 + 1, 9 * BUF // 4 + 3])
def test_non_default_stream(n):
    cp = _backend.cupy()
    a = sample("float32", (n,), seed=12)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        keep = _busy()
        x = xp.asarray(a)
        y = x * 2.0
        b = np.from_dlpack(y, device="cpu")
        c = xp.cuda.to_host(x + 1.0)
        p = xp.cuda.pinned_empty(a.shape, a.dtype)
        xp.cuda.to_host(y, out=p)
        del keep
    np.testing.assert_array_equal(b, a * 2.0)
    np.testing.assert_array_equal(c, a + 1.0)
    np.testing.assert_array_equal(p, a * 2.0)
    s.synchronize()


def test_many_threads_transfer_at_once():
    sizes = [37, STAGE // 4 + 1, BUF // 4 - 3, 3 * BUF // 4 + 11, 5 * BUF // 4]

    def work(seed):
        rng = np.random.default_rng(seed)
        for i in range(6):
            n = sizes[(seed + i) % len(sizes)]
            a = rng.standard_normal(n).astype(np.float32)
            x = xp.asarray(a)
            a2 = a.copy()
            a[...] = 0                                      # the device copy must not see it
            b = np.asarray(x)
            if not np.array_equal(b, a2):
                return f"thread {seed}, size {n}: round trip differs"
        return None

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        errors = [e for e in ex.map(work, range(16)) if e]
    assert not errors
    pool = _host._pool
    assert pool.try_acquire()                               # nobody kept the staging pool
    pool.lock.release()


def test_empty_cache_gives_the_staging_buffers_back():
    a = sample("float32", (BUF // 2,), seed=13)
    assert_same(xp.asarray(a), a)
    assert _host._pool.buffers is not None
    gc.collect()
    xp.cuda.empty_cache()
    assert _host._pool.buffers is None
    assert_same(xp.asarray(a), a)                           # allocated again
    assert _host._pool.buffers is not None


@pytest.mark.skipif(_backend.device_count() < 2, reason="needs two CUDA devices")
def test_staged_transfers_on_two_devices():
    a = sample("float32", (5 * BUF // 4,), seed=14)
    for dev in (1, 0, 1):
        x = xp.asarray(a, device=xp.Device(dev))
        assert x.device == xp.Device(dev)
        assert_same(x, a)
