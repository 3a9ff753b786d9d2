"""CPU tier: staged host transfers (gparray/_engine/_staging.py), the pinned staging pool and pinned
detection (gparray/_memory/_host.py), and the path each host transfer of
gparray/_engine/_transfer.py takes, on a fake asynchronous GPU (tests/_fake_cuda_host.py: real
memmoves over host memory, an in-order stream that runs at random moments)."""
import ctypes
import threading

import numpy as np
import pytest

from _fake_cuda_host import DeviceBuffer, DeviceLayout, Dev, FakeGPU, install
from gparray._engine import _staging, _transfer
from gparray._memory import _host
from gparray._engine._staging import Chunk

MiB = 1 << 20
KiB = 1 << 10


# --------------------------------------------------------------------------- the plan

def _check_cover(chunks, nbytes, nbuf, start, step):
    off = 0
    for i, c in enumerate(chunks):
        assert c.offset == off
        assert 0 < c.size <= step
        assert c.buf == (start + i) % nbuf
        off += c.size
    assert off == nbytes
    assert all(c.size == step for c in chunks[:-1])


@pytest.mark.parametrize("nbytes", [0, 1, 8 * MiB - 1, 8 * MiB, 8 * MiB + 1, 256 * MiB, 256 * MiB + 12345,
                                    3 * MiB, 4 * MiB, 5 * MiB + 3])
@pytest.mark.parametrize("start", [0, 2])
def test_plan_covers_the_transfer_in_order(nbytes, start):
    chunks = _staging.plan(nbytes, 3, start)
    step = _staging.chunk_size(nbytes) if nbytes else 0
    _check_cover(chunks, nbytes, 3, start, step)
    if nbytes:
        assert step % _staging.ALIGN == 0 and _staging.MIN_CHUNK <= step <= _staging.BUFFER_BYTES


@pytest.mark.parametrize("nbytes, want", [
    (0, []),
    (1, [Chunk(0, 1, 0)]),
    # one buffer less a byte: split in four 2 MiB chunks, the last one byte short
    (8 * MiB - 1, [Chunk(0, 2 * MiB, 0), Chunk(2 * MiB, 2 * MiB, 1), Chunk(4 * MiB, 2 * MiB, 2),
                   Chunk(6 * MiB, 2 * MiB - 1, 0)]),
    (8 * MiB, [Chunk(i * 2 * MiB, 2 * MiB, i % 3) for i in range(4)]),
    # just over: the quarter rounds up to the next 64 KiB
    (8 * MiB + 1, [Chunk(0, 2 * MiB + 64 * KiB, 0), Chunk(2 * MiB + 64 * KiB, 2 * MiB + 64 * KiB, 1),
                   Chunk(4 * MiB + 128 * KiB, 2 * MiB + 64 * KiB, 2),
                   Chunk(6 * MiB + 192 * KiB, 2 * MiB - 192 * KiB + 1, 0)]),
    # the smallest staged transfer: four 1 MiB chunks
    (4 * MiB, [Chunk(i * MiB, MiB, i % 3) for i in range(4)]),
    # small transfers: one chunk of at least MIN_CHUNK
    (MiB + 1, [Chunk(0, MiB, 0), Chunk(MiB, 1, 1)]),
])
def test_plan_expected_chunks(nbytes, want):
    assert _staging.plan(nbytes, 3) == want


def test_plan_many_chunks_use_full_buffers():
    n = 32 * MiB + 7
    chunks = _staging.plan(n, 3, start=1)
    assert len(chunks) == 5
    assert [c.size for c in chunks] == [8 * MiB] * 4 + [7]
    assert [c.buf for c in chunks] == [1, 2, 0, 1, 2]


def test_chunk_size_clamps():
    assert _staging.chunk_size(10, buffer_bytes=16, min_chunk=4, split=4, align=1) == 4
    assert _staging.chunk_size(100, buffer_bytes=16, min_chunk=4, split=4, align=1) == 16
    assert _staging.chunk_size(40, buffer_bytes=16, min_chunk=4, split=4, align=4) == 12
    with pytest.raises(ValueError, match="chunk_size"):
        _staging.chunk_size(10, buffer_bytes=0)
    with pytest.raises(ValueError, match="plan"):
        _staging.plan(-1, 3)
    with pytest.raises(ValueError, match="plan"):
        _staging.plan(10, 0)


# --------------------------------------------------------------------------- the loops on a fake stream

SMALL = dict(buffer_bytes=16, min_chunk=4, split=4, align=4)


class Copier:
    """The staged loops' copier over a FakeGPU (one event per buffer); ``skip_waits``
    breaks it on purpose."""

    def __init__(self, gpu, nbuf, skip_waits=False):
        self.gpu, self.skip = gpu, skip_waits
        self.events = [100 + b for b in range(nbuf)]
        self.calls = []

    def host_copy(self, dst, src, n):
        self.gpu._advance()
        self.calls.append(("host", n))
        ctypes.memmove(dst, src, n)

    def dma(self, dst, src, n):
        self.calls.append(("dma", n))
        self.gpu.memcpyAsync(dst, src, n, 0, 0)

    def record(self, b):
        self.gpu.eventRecord(self.events[b], 0)

    def wait(self, b):
        if not self.skip:
            self.gpu.eventSynchronize(self.events[b])


def _bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


SIZES = [0, 1, 3, 4, 5, 15, 16, 17, 63, 64, 65, 200, 1001]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nbytes", SIZES)
def test_upload_reads_the_source_before_returning(nbytes, seed):
    gpu = FakeGPU(seed, progress=[0.0, 0.3, 0.9][seed % 3])
    data = _bytes(nbytes, seed)
    src, dst = gpu.buffer(nbytes), gpu.buffer(nbytes, kind=2)
    ctypes.memmove(src, data, nbytes)
    bufs = [gpu.buffer(16, kind=1) for _ in range(3)]
    cp = Copier(gpu, 3)
    nxt = _staging.upload(cp, dst, src, nbytes, bufs, start=seed % 3, **SMALL)
    assert nxt == (seed % 3 + len(_staging.plan(nbytes, 3, **SMALL))) % 3
    ctypes.memset(src, 0xAB, max(nbytes, 1))      # the caller changes its array at once
    gpu.drain()
    assert gpu.read(dst, nbytes) == data


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nbytes", SIZES)
def test_download_is_complete_when_it_returns(nbytes, seed):
    gpu = FakeGPU(seed, progress=[0.0, 0.3, 0.9][seed % 3])
    data = _bytes(nbytes, seed + 100)
    stale = _bytes(nbytes, seed + 200)
    dev, other, dst = gpu.buffer(nbytes, kind=2), gpu.buffer(nbytes, kind=2), gpu.buffer(nbytes)
    ctypes.memmove(dev, stale, nbytes)
    ctypes.memmove(other, data, nbytes)
    gpu.kernel_write(dev, other, nbytes)           # earlier work on the stream writes the source
    bufs = [gpu.buffer(16, kind=1) for _ in range(3)]
    _staging.download(Copier(gpu, 3), dst, dev, nbytes, bufs, start=seed % 3, **SMALL)
    assert gpu.read(dst, nbytes) == data           # no drain: complete on return


def test_download_overlaps_cpu_copies_with_queued_dmas():
    """The DMAs of the next chunks are queued before the CPU copies a chunk out."""
    gpu = FakeGPU(0, progress=0.0)
    n = 16 * 6
    dev, dst = gpu.buffer(n, kind=2), gpu.buffer(n)
    cp = Copier(gpu, 3)
    _staging.download(cp, dst, dev, n, [gpu.buffer(16, kind=1) for _ in range(3)], **SMALL)
    kinds = [k for k, _ in cp.calls]
    assert kinds[:4] == ["dma", "dma", "dma", "host"]
    assert kinds.count("dma") == kinds.count("host") == 6


def test_upload_overlaps_dmas_with_cpu_copies():
    """No wait before the CPU has filled every buffer once (the GPU never runs here)."""
    gpu = FakeGPU(0, progress=0.0)
    n = 16 * 3
    src, dst = gpu.buffer(n), gpu.buffer(n, kind=2)
    _staging.upload(Copier(gpu, 3), dst, src, n, [gpu.buffer(16, kind=1) for _ in range(3)], **SMALL)
    assert len(gpu.queue) == 6      # three DMAs and three events still queued, nothing waited


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_the_fake_catches_a_loop_that_does_not_wait(direction):
    """Without its waits the loop reuses a buffer before its DMA ran: the data comes out
    wrong, so the tests above can fail."""
    gpu = FakeGPU(0, progress=0.0)
    n = 16 * 7
    data = _bytes(n, 5)
    a, b = gpu.buffer(n), gpu.buffer(n)
    ctypes.memmove(a, data, n)
    bufs = [gpu.buffer(16, kind=1) for _ in range(3)]
    run = getattr(_staging, direction)
    run(Copier(gpu, 3, skip_waits=True), b, a, n, bufs, **SMALL)
    gpu.drain()
    assert gpu.read(b, n) != data


# --------------------------------------------------------------------------- the staging pool

class _Alloc:
    def __init__(self, fail=False):
        self.n, self.fail = 0, fail

    def __call__(self, nbytes):
        if self.fail:
            raise MemoryError("no pinned memory")
        self.n += 1
        return type("Buf", (), {"ptr": 4096 * self.n})()


def test_staging_pool_allocates_once_and_is_exclusive():
    alloc = _Alloc()
    pool = _host.StagingPool(3, 64, alloc=alloc)
    assert pool.buffers is None and alloc.n == 0       # nothing until the first staged transfer
    assert pool.try_acquire()
    try:
        ptrs = pool.ptrs()
        assert ptrs == pool.ptrs() and len(set(ptrs)) == 3 and alloc.n == 3
        seen = []
        t = threading.Thread(target=lambda: seen.append(pool.try_acquire()))
        t.start()
        t.join()
        assert seen == [False]                           # another thread never waits
    finally:
        pool.lock.release()
    waited = []
    pool.pending = ["e0", None, "e2"]
    assert pool.release(waited.append)
    assert waited == ["e0", "e2"] and pool.buffers is None and pool.pending == [None] * 3
    assert pool.try_acquire()
    try:
        assert not pool.release(waited.append, timeout=0.01)   # in use: nothing freed
        assert not pool.release(waited.append, timeout=0)
    finally:
        pool.lock.release()


def test_staging_pool_without_pinned_memory_gives_none_until_released():
    alloc = _Alloc(fail=True)
    pool = _host.StagingPool(2, 64, alloc=alloc)
    assert pool.ptrs() is None and pool.failed
    alloc.fail = False
    assert pool.ptrs() is None                           # not retried on every transfer
    assert pool.release(lambda ev: None)
    assert pool.ptrs() is not None


# --------------------------------------------------------------------------- pinned memory

@pytest.fixture
def gpu(monkeypatch):
    g = FakeGPU(1, progress=0.4)
    install(monkeypatch, g)
    return g


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_pinned_empty_layout(gpu, shape, dtype):
    a = _host.pinned_empty(shape, np.dtype(dtype))
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert _host.is_pinned(a) and _host.is_pinned(a.reshape(-1)[::2])
    assert not _host.is_pinned(a.copy())
    a[...] = 1
    assert (a == 1).all()


def test_pinned_arrays_are_recognized_without_a_cuda_call(gpu):
    a = _host.pinned_empty((10, 10), np.dtype("float32"))
    views = [a, a[2:], a.T, a.view(np.int32), a[::3, ::2][1:], a.reshape(100)[50:].reshape(5, 10)]
    n = len(gpu.log)
    assert all(_host.is_pinned(v) for v in views)
    assert not [e for e in gpu.log[n:] if e[0] == "pointerGetMemoryType"]


def test_pinned_memory_lives_as_long_as_a_view(gpu):
    import gc
    import weakref

    a = _host.pinned_empty((4,), np.dtype("int64"))
    owner = weakref.ref(a.base if isinstance(a.base, _host.PinnedHostMemory) else a.base.base)
    v = a[1:]
    del a
    gc.collect()
    assert owner() is not None
    del v
    gc.collect()
    assert owner() is None


def test_is_pinned_asks_the_driver_for_foreign_memory(gpu):
    for kind, want in ((0, False), (1, True), (3, True)):
        addr = gpu.buffer(64, kind=kind)
        a = np.frombuffer((ctypes.c_char * 64).from_address(addr), dtype=np.uint8)
        assert _host.is_pinned(a) is want
    assert not _host.is_pinned(np.arange(10))


def test_is_pinned_treats_a_refused_pointer_as_pageable(gpu, monkeypatch):
    def refuse(ptr):
        raise gpu.CUDARuntimeError(1, "cudaErrorInvalidValue")
    monkeypatch.setattr(gpu, "pointerGetMemoryType", refuse)
    assert not _host.is_pinned(np.arange(10))


def test_pinned_allocation_failure_is_a_memory_error(gpu):
    gpu.fail_alloc = True
    with pytest.raises(MemoryError, match="pinned_empty: could not allocate 80 bytes"):
        _host.pinned_empty((10,), np.dtype("float64"))


# --------------------------------------------------------------------------- paths of _transfer

def _copies(gpu):
    return [e for e in gpu.log if e[0] == "memcpyAsync"]


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5)])
def test_small_host_transfers_are_one_direct_copy(gpu, dtype, shape):
    a = np.random.default_rng(3).integers(0, 100, shape).astype(dtype)
    a.flags.writeable = False                           # read-only sources are fine
    buf = _transfer.from_host(a, Dev())
    want = a.tobytes()
    assert [e[2] for e in _copies(gpu)] == ([a.ctypes.data] if a.nbytes else [])
    gpu.drain()
    assert gpu.read(buf.ptr, a.nbytes) == want
    lay = DeviceLayout(gpu, a)
    b = _transfer.to_host(lay)
    assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == want


@pytest.mark.parametrize("nbytes", [_staging.STAGE_MIN - 1, _staging.STAGE_MIN, _staging.STAGE_MIN + 1,
                                    _staging.BUFFER_BYTES * 4 + 4097])
def test_large_pageable_transfers_are_staged(gpu, nbytes):
    a = np.frombuffer(_bytes(nbytes, nbytes), dtype=np.uint8).copy()
    want = a.tobytes()
    buf = _transfer.from_host(a, Dev())
    a[:] = 7                                            # changed right after asarray returns
    copies = _copies(gpu)
    gpu.drain()
    assert gpu.read(buf.ptr, nbytes) == want
    staged = nbytes >= _staging.STAGE_MIN
    pool = _host._pool
    if staged:
        pinned = {p for p in pool.ptrs()}
        assert {e[2] for e in copies} <= pinned and len(copies) == len(_staging.plan(nbytes, 3))
    else:
        assert [e[2] for e in copies] == [a.ctypes.data]

    gpu.log.clear()
    lay = DeviceLayout(gpu, np.frombuffer(want, dtype=np.uint8))
    out = _transfer.to_host(lay)
    assert out.tobytes() == want
    if staged:
        assert {e[1] for e in _copies(gpu)} <= set(pool.ptrs())
    else:
        assert [e[1] for e in _copies(gpu)] == [out.ctypes.data]


def test_staged_transfers_continue_with_the_least_recently_used_buffer(gpu):
    n = _staging.STAGE_MIN      # four chunks through three buffers
    _transfer.from_host(np.zeros(n, np.uint8), Dev())
    assert _host._pool.next == 1
    _transfer.to_host(DeviceLayout(gpu, np.zeros(n, np.uint8)))
    assert _host._pool.next == 2


def test_pinned_sources_and_destinations_take_one_dma_and_wait(gpu):
    n = _staging.BUFFER_BYTES + 3
    p = _host.pinned_empty((n,), np.dtype("uint8"))
    p[:] = np.frombuffer(_bytes(n, 9), dtype=np.uint8)
    want = p.tobytes()
    gpu.log.clear()
    buf = _transfer.from_host(p, Dev())
    assert [e[2] for e in _copies(gpu)] == [p.ctypes.data]
    assert not gpu.queue                               # waited: p may change now
    p[:] = 0
    assert gpu.read(buf.ptr, n) == want
    gpu.log.clear()
    out = _transfer.to_host(DeviceLayout(gpu, np.frombuffer(want, np.uint8)), p)
    assert out is p and p.tobytes() == want
    assert [e[1] for e in _copies(gpu)] == [p.ctypes.data]
    assert _host._pool is None or _host._pool.buffers is None   # no staging buffers were needed


def test_a_busy_pool_falls_back_to_the_direct_copy(gpu):
    n = _staging.STAGE_MIN * 2
    a = np.frombuffer(_bytes(n, 4), dtype=np.uint8)
    pool = _host.staging(_staging.NBUF, _staging.BUFFER_BYTES)
    assert pool.try_acquire()
    try:
        buf = _transfer.from_host(a, Dev())
        assert [e[2] for e in _copies(gpu)] == [a.ctypes.data]
        out = _transfer.to_host(DeviceLayout(gpu, a))
    finally:
        pool.lock.release()
    gpu.drain()
    assert gpu.read(buf.ptr, n) == a.tobytes() and out.tobytes() == a.tobytes()
    assert pool.buffers is None


def test_no_pinned_memory_falls_back_to_the_direct_copy(gpu):
    gpu.fail_alloc = True
    n = _staging.STAGE_MIN * 2
    a = np.frombuffer(_bytes(n, 6), dtype=np.uint8)
    buf = _transfer.from_host(a, Dev())
    gpu.drain()
    assert gpu.read(buf.ptr, n) == a.tobytes()
    assert [e[2] for e in _copies(gpu)] == [a.ctypes.data]


def test_an_error_inside_staging_drains_the_stream_and_frees_the_pool(gpu, monkeypatch):
    calls = []
    real = gpu.memcpyAsync

    def flaky(dst, src, n, kind, s):
        calls.append(n)
        if len(calls) == 3:
            raise gpu.CUDARuntimeError(1, "cudaErrorInvalidValue")
        real(dst, src, n, kind, s)
    monkeypatch.setattr(gpu, "memcpyAsync", flaky)
    with pytest.raises(gpu.CUDARuntimeError):
        _transfer.from_host(np.zeros(_staging.STAGE_MIN * 2, np.uint8), Dev())
    assert not gpu.queue                               # the queued DMAs ran before re-raising
    assert _host._pool.try_acquire()
    _host._pool.lock.release()


@pytest.mark.parametrize("bad, exc, msg", [
    ([0.0] * 6, TypeError, "to_host: out must be a NumPy array"),
    (np.zeros(6, np.float64), TypeError, "to_host: out has dtype float64"),
    (np.zeros(5, np.float32), ValueError, "to_host: out has shape"),
    (np.zeros(12, np.float32)[::2], ValueError, "C-contiguous"),
])
def test_to_host_checks_out(gpu, bad, exc, msg):
    lay = DeviceLayout(gpu, np.arange(6, dtype=np.float32))
    with pytest.raises(exc, match=msg):
        _transfer.to_host(lay, bad)
    ro = np.zeros(6, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="to_host: out is read-only"):
        _transfer.to_host(lay, ro)


def test_to_host_into_a_pageable_out(gpu):
    data = np.arange(_staging.STAGE_MIN // 4 + 5, dtype=np.float32)
    out = np.empty_like(data)
    assert _transfer.to_host(DeviceLayout(gpu, data), out) is out
    np.testing.assert_array_equal(out, data)


def test_release_staging_waits_for_pending_dmas(gpu):
    n = _staging.STAGE_MIN
    gpu.progress = 0.0
    buf = _transfer.from_host(np.full(n, 3, np.uint8), Dev())
    assert gpu.queue                                   # the last DMAs are still queued
    assert _host.release_staging()
    assert not gpu.queue and _host._pool.buffers is None
    assert gpu.read(buf.ptr, n) == bytes([3]) * n


def test_public_to_host_refuses_non_arrays():
    import gparray as xp

    with pytest.raises(TypeError, match="to_host: expected a gparray Array"):
        xp.cuda.to_host(np.zeros(3))
    assert "pinned_empty" in xp.cuda.__all__ and "to_host" in xp.cuda.__all__


@pytest.mark.parametrize("n", [0, 1, (2 << 20) - 1, 2 << 20, (2 << 20) + 1, (5 << 20) + 12345])
@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_parallel_memmove_copies_every_byte_once(monkeypatch, n, parts):
    from gparray._engine import _transfer
    monkeypatch.setattr(_transfer, "HOST_COPY_PARTS", parts)
    rng = np.random.default_rng(n + parts)
    src = rng.integers(0, 256, n + 64, dtype=np.uint8)
    dst = np.zeros(n + 64, dtype=np.uint8)
    _transfer._parallel_memmove(dst.ctypes.data + 32, src.ctypes.data + 16, n)
    np.testing.assert_array_equal(dst[32:32 + n], src[16:16 + n])
    assert not dst[:32].any() and not dst[32 + n:].any()  # nothing outside the range
