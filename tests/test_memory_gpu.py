"""GPU tier: the real device pool, CuPy's allocator hook, OOM, empty_cache, limit, speed."""
import gc

import pytest

from gparray._core import _backend

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _backend.has_cuda(), reason="no CUDA device")]

MiB = 1 << 20

REQUIRED_KEYS = [
    "allocated_bytes.current", "allocated_bytes.peak", "reserved_bytes.current",
    "reserved_bytes.peak", "active_bytes.current", "active_bytes.peak",
    "requested_bytes.current", "allocation.current", "segment.current",
    "inactive_split.current", "num_device_malloc", "num_device_free", "num_ooms",
    "num_alloc_retries", "fragmentation", "limit_bytes",
]


@pytest.fixture
def mem():
    from gparray import _memory
    from gparray.cuda import _memory_api
    _memory.get_pool(0)
    yield _memory, _memory_api
    gc.collect()


def test_stats_keys(mem):
    _, api = mem
    s = api.memory_stats()
    for key in REQUIRED_KEYS:
        assert key in s
    assert s["total_bytes"] > 0
    assert api.memory_stats(0) == api.memory_stats("cuda:0")


def test_real_alloc_and_free(mem):
    memory, api = mem
    before = api.memory_allocated(0)
    b = memory.alloc(1000, 0)
    assert b.ptr != 0 and b.size == 1024 and b.nbytes == 1000 and b.device_id == 0
    assert b.stream == _backend.cupy().cuda.get_current_stream().ptr
    assert api.memory_allocated(0) == before + 1024
    blocks = [blk for seg in api.memory_snapshot(0) for blk in seg["blocks"]]
    assert any(blk["address"] == b.ptr and blk["state"] == "allocated" for blk in blocks)
    b.free()
    assert api.memory_allocated(0) == before
    z = memory.alloc(0, 0)
    assert z.ptr == 0


def test_memory_is_usable(mem):
    memory, _ = mem
    cp = _backend.cupy()
    b = memory.alloc(4 * MiB, 0)
    view = cp.ndarray((MiB,), dtype=cp.float32,
                      memptr=cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(b.ptr, b.size, b, 0), 0))
    view[...] = 3.0
    assert float(view.sum()) == 3.0 * MiB


def test_cupy_allocations_go_through_the_pool(mem):
    memory, api = mem
    cp = _backend.cupy()
    memory.install_cupy_allocator()
    memory.install_cupy_allocator()                    # idempotent
    assert cp.cuda.get_allocator() is memory._cupy_allocator
    before = api.memory_allocated(0)
    a = cp.arange(MiB, dtype=cp.float64)               # 8 MiB
    assert api.memory_allocated(0) >= before + 8 * MiB
    ptrs = {blk["address"] for seg in api.memory_snapshot(0) for blk in seg["blocks"]
            if blk["state"] == "allocated"}
    assert a.data.ptr in ptrs
    m = cp.ones((64, 64), dtype=cp.float32)
    r = cp.linalg.norm(m[::2] @ m[::2].T)              # cuBLAS on views
    assert float(r) > 0
    del a, m, r
    gc.collect()
    assert api.memory_allocated(0) <= before + MiB     # cuBLAS may keep a small workspace


def _segments(api):
    """The pool's segments after an empty_cache (a failure message: what stays reserved)."""
    return [(seg["size"], seg["stream"], [(b["size"], b["state"]) for b in seg["blocks"]][:6])
            for seg in api.memory_snapshot()]


def test_empty_cache_returns_reserved(mem):
    memory, api = mem
    cp = _backend.cupy()
    gc.collect()
    api.empty_cache()
    r0 = api.memory_reserved()
    # what empty_cache had to keep: free space inside segments that still hold a live block
    # (arrays other tests of this worker keep alive) may serve part of what follows
    slack = r0 - api.memory_allocated()
    blocks = [memory.alloc(n, 0) for n in (100, 5 * MiB, 64 * MiB, 3000)]
    arr = cp.zeros(10 * MiB, dtype=cp.uint8)
    assert api.memory_reserved() >= r0 + 79 * MiB - slack, _segments(api)
    del blocks, arr
    gc.collect()
    api.empty_cache()
    assert api.memory_reserved() <= r0
    for seg in api.memory_snapshot():
        assert any(b["state"] == "allocated" for b in seg["blocks"]), "unused segment kept"
    if api.memory_allocated() == 0:
        assert api.memory_reserved() == 0


def test_oom_then_small_alloc_works(mem):
    memory, api = mem
    total = api.memory_stats(0)["total_bytes"]
    ooms = api.memory_stats(0)["num_ooms"]
    with pytest.raises(api.OutOfMemoryError) as info:
        memory.alloc(total + (1 << 30), 0)
    err = info.value
    assert isinstance(err, MemoryError)
    assert str(err).startswith("gparray: out of memory")
    assert str(total + (1 << 30)) in str(err) and "reserved" in str(err)
    assert err.requested == total + (1 << 30) and "num_ooms" in err.stats
    assert api.memory_stats(0)["num_ooms"] == ooms + 1
    b = memory.alloc(4096, 0)
    assert b.ptr != 0
    b.free()


def test_limit(mem):
    memory, api = mem
    gc.collect()
    api.empty_cache()
    old = api.get_memory_limit()
    try:
        reserved = api.memory_reserved()
        slack = reserved - api.memory_allocated()   # free space in segments kept for live blocks
        limit = reserved + 64 * MiB
        assert api.set_memory_limit(limit) == limit
        with pytest.raises(api.OutOfMemoryError, match="limit"):
            memory.alloc(128 * MiB + slack, 0)
        b = memory.alloc(32 * MiB, 0)
        assert api.memory_reserved() <= limit
        del b
        frac = api.set_memory_limit(0.5)
        assert frac == api.memory_stats()["total_bytes"] // 2
    finally:
        api.set_memory_limit(old)


def test_non_default_stream(mem):
    memory, api = mem
    cp = _backend.cupy()
    s = cp.cuda.Stream(non_blocking=True)
    b = memory.alloc(3 * MiB, 0, s.ptr)
    assert b.stream == s.ptr
    segs = [seg for seg in api.memory_snapshot()
            if seg["address"] <= b.ptr < seg["address"] + seg["size"]]
    assert segs and segs[0]["stream"] == s.ptr
    with s:
        c = memory.alloc(100, 0)                       # stream=None: the current stream
    assert c.stream == s.ptr
    del b, c
    s.synchronize()
    d = memory.alloc(3 * MiB, 0, 0)                    # may move s's segment after its event
    assert d.ptr != 0


def test_segments_of_a_destroyed_stream_are_reclaimed_safely(mem):
    """Memory freed on a stream that is destroyed afterwards stays in the pool; taking it
    for another stream must not record an event on the dead handle (undefined behaviour,
    it can crash the driver): the pool synchronizes the device instead."""
    memory, api = mem
    cp = _backend.cupy()
    pool = memory.get_pool(0)
    ooms = pool.stats()["num_ooms"]
    for _ in range(3):
        gc.collect()
        api.empty_cache()                               # nothing cached for stream 0
        s = cp.cuda.Stream(non_blocking=True)
        b = memory.alloc(96 * MiB, 0, s.ptr)
        x = cp.ndarray((24 * MiB,), cp.float32, memptr=cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(b.ptr, b.size, b, 0), 0))
        with s:
            x.fill(1.0)
        del x, b
        s.synchronize()
        del s
        gc.collect()
        d = memory.alloc(96 * MiB, 0, 0)                # only the dead stream's segment fits
        y = cp.ndarray((24 * MiB,), cp.float32, memptr=cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(d.ptr, d.size, d, 0), 0))
        y.fill(2.0)
        assert float(y.sum()) == 2.0 * 24 * MiB
        del y, d
    assert pool.stats()["num_ooms"] == ooms


def test_bench_alloc_free(mem):
    from gparray._memory import _bench
    us = _bench.bench_alloc_free(n=20000, nbytes=4096, device_id=0)
    print(f"real pool alloc+free: {us:.3f} us per pair")
    assert 0 < us < 20
