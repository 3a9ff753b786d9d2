"""CPU tier: stream retirement in the caching pool (gparray/_memory/_retire.py) and its wiring
to gparray.cuda.Stream (gparray/_engine/_streams.py, gparray/_memory/__init__.py), and the registry
of live streams the CUDA backend records events on (gparray/_core/_backend.py).

CUDA may give a destroyed stream's handle to a new stream. The pool keys its segments by
handle, so before a gparray-owned stream is destroyed its handle is retired with an event
recorded on it: no later stream with the same handle may take the old stream's blocks
before that event completes. Everything here runs on the fake allocator and fake events of
tests/test_memory_pool.py; tests/test_streams_gpu.py has the GPU tier.
"""
import gc
import sys
import weakref

import pytest

from gparray._core import _backend, _device
from gparray import _memory
from gparray._engine import _streams
from gparray._memory import _cupy_backend
from gparray._memory._pool import CachingPool
from test_memory_pool import KiB, MiB, FakeDevice, check_consistent, check_internal, make_pool

H = 0x7F00_AA00       # the handle of the stream being retired (and of the later stream)


def segment_of(pool, ptr):
    """The snapshot entry of the segment holding address ``ptr``."""
    for seg in pool.snapshot():
        if seg["address"] <= ptr < seg["address"] + seg["size"]:
            return seg
    raise AssertionError(f"no segment holds 0x{ptr:x}")


def inside(ptr, seg):
    return seg["address"] <= ptr < seg["address"] + seg["size"]


def records_on(evs, stream):
    return [ev for ev in evs.events if ev.stream == stream]


# --------------------------------------------------------------------------- the pool

def test_retire_free_and_live_segments():
    pool, dev, evs = make_pool(sync=False)
    a = pool.malloc(3 * MiB, H)            # a large segment, freed before the retirement
    b = pool.malloc(3 * MiB, H)            # a large segment still in use
    x = pool.malloc(4 * KiB, H)            # one small segment, half freed
    y = pool.malloc(4 * KiB, H)
    seg_a, seg_b, seg_s = (segment_of(pool, p)["address"] for p in (a.ptr, b.ptr, x.ptr))
    x_ptr = x.ptr
    del a, x
    ev = evs.record(H)                     # the owner records it while the stream lives
    pool.retire_stream(H, ev)
    stats, snap = check_consistent(pool, dev, [b, y])
    by_addr = {s["address"]: s for s in snap}
    assert [blk["state"] for blk in by_addr[seg_a]["blocks"]] == ["pending"]
    owner = by_addr[seg_b]["stream"]
    assert owner < 0 and by_addr[seg_s]["stream"] == owner, "live segments go to one retired owner"
    assert ("allocated", "free") == tuple(blk["state"] for blk in by_addr[seg_b]["blocks"])
    assert stats["pending_bytes.current"] == 4 * MiB and stats["num_streams_retired"] == 1
    assert all(key[0] != H for key in pool._arenas), "the handle's arenas left the pool"

    # a new stream with the same handle: none of the old blocks, no record on the handle
    n_events = len(evs.events)
    c = pool.malloc(3 * MiB, H)
    z = pool.malloc(4 * KiB, H)
    assert not inside(c.ptr, by_addr[seg_a]) and not inside(c.ptr, by_addr[seg_b])
    assert not inside(z.ptr, by_addr[seg_s]) and z.ptr != x_ptr
    assert dev.n_malloc == 5 and len(evs.events) == n_events
    check_consistent(pool, dev, [b, y, c, z])

    # the old stream's last blocks are freed: their segments wait for the retirement event
    del b
    stats, snap = check_consistent(pool, dev, [y, c, z])
    assert [blk["state"] for blk in segment_of(pool, seg_b)["blocks"]] == ["pending"]
    del y
    stats, snap = check_consistent(pool, dev, [c, z])
    assert [blk["state"] for blk in segment_of(pool, seg_s)["blocks"]] == ["pending"]
    assert stats["pending_bytes.current"] == 8 * MiB + 2 * MiB
    assert [e for e, _ in pool._pending] == [ev, ev, ev], "every one waits for the retirement event"
    assert len(evs.events) == n_events, "no event recorded after the retirement"
    assert not any(ar.retired for ar in pool._arenas.values()), "the retired arenas are gone"

    # before the event completes no stream gets them; after, any stream may
    d = pool.malloc(3 * MiB, 9)
    w = pool.malloc(4 * KiB, H)            # H's own new small segment serves it
    assert not any(inside(d.ptr, segment_of(pool, s)) for s in (seg_a, seg_b))
    assert not inside(w.ptr, segment_of(pool, seg_s))
    ev.done = True
    e = pool.malloc(3 * MiB, H)
    assert segment_of(pool, e.ptr)["address"] in (seg_a, seg_b), "reusable once the event completed"
    stats, _ = check_consistent(pool, dev, [c, z, d, w, e])
    assert stats["pending_bytes.current"] == 0


def test_retiring_an_unknown_handle_is_a_noop():
    pool, dev, evs = make_pool(sync=False)
    a = pool.malloc(3 * MiB, 1)
    b = pool.malloc(4 * KiB, 1)
    del b
    before = (pool.snapshot(), pool.stats(), sorted(pool._arenas, key=repr))
    pool.retire_stream(0x5EED, evs.record(0x5EED))
    assert (pool.snapshot(), pool.stats(), sorted(pool._arenas, key=repr)) == before
    assert pool.stats()["num_streams_retired"] == 0
    check_consistent(pool, dev, [a])


def test_retire_merges_a_split_free_segment_first():
    pool, dev, evs = make_pool(sync=False)
    blocks = [pool.malloc(64 * KiB, H) for _ in range(4)]
    seg = segment_of(pool, blocks[0].ptr)["address"]
    blocks.reverse()
    del blocks                             # all free, neighbours not merged yet
    pool.retire_stream(H, evs.record(H))
    check_internal(pool)
    assert segment_of(pool, seg)["blocks"] == [
        {"address": seg, "size": 2 * MiB, "state": "pending", "stream": H}]
    check_consistent(pool, dev, [])


def test_retired_blocks_are_not_handed_out_by_the_compiled_path():
    """gp_block_reuse (gparray/_native/_claunch_block.c) hands a deferred free out again
    only when the chunk's arena belongs to the requesting stream: after the retirement no
    chunk of the old stream may look like it belongs to ``H``."""
    pool, dev, evs = make_pool(sync=False)
    a = pool.malloc(4 * KiB, H)
    keep = pool.malloc(4 * KiB, H)
    pool._deferred.append((a._chunk, a.nbytes))   # what a collected C Block does
    a._chunk = None
    pool.retire_stream(H, evs.record(H))
    assert keep._chunk.arena.stream != H
    assert pool._deferred == [] and keep._chunk.arena.stream < 0
    check_consistent(pool, dev, [keep])


def test_retire_while_the_lock_is_held_is_queued_and_keeps_the_stream():
    pool, dev, evs = make_pool(sync=False)
    b = pool.malloc(3 * MiB, H)

    class CupyStream:
        pass

    cs = CupyStream()
    alive = weakref.ref(cs)
    pool._lock.acquire()
    try:
        pool.retire_stream(H, evs.record(H), keep=cs)     # must not deadlock
        del cs
        assert alive() is not None, "the stream must live until the retirement is applied"
        assert (H, False) in pool._arenas
    finally:
        pool._lock.release()
    stats = pool.stats()                   # the next pool operation applies it
    assert alive() is None and stats["num_streams_retired"] == 1
    assert segment_of(pool, b.ptr)["stream"] < 0
    check_consistent(pool, dev, [b])


def test_retire_from_a_finalizer_inside_a_pool_operation():
    """The garbage collector may run a Stream's finalizer while the pool works (here: inside
    raw_malloc); the retirement is applied when that operation ends."""
    dev = FakeDevice()
    events = []
    hook = {}

    def malloc_running_a_finalizer(n):
        f = hook.pop("finalizer", None)
        if f is not None:
            f()
        return dev.malloc(n)

    pool = CachingPool(malloc_running_a_finalizer, dev.free,
                       record_event=lambda s: events.append(s), event_done=lambda e: True)
    old = pool.malloc(4 * KiB, H)
    hook["finalizer"] = lambda: pool.retire_stream(H, "retirement event", keep=object())
    b = pool.malloc(8 * MiB, 3)
    assert pool._deferred == [] and pool.stats()["num_streams_retired"] == 1
    assert segment_of(pool, old.ptr)["stream"] < 0
    assert events == []
    check_consistent(pool, dev, [old, b])


def test_a_retirement_run_by_the_out_of_memory_collection():
    """The out-of-memory retry runs gc.collect() inside malloc: a Stream finalizer may retire
    the very stream being allocated on (possible while a raw CuPy reference keeps it alive).
    The allocation must go on in the stream's new arena, not the retired one."""
    pool, dev, evs = make_pool(capacity=12 * MiB, sync=False)
    old = pool.malloc(3 * MiB, H)
    filler = pool.malloc(3 * MiB, 5)
    del old                                # H's 4 MiB segment: cached, too small below
    ev = evs.record(H)

    class Garbage:
        """A reference cycle: only the collector frees it (and the filler block with it)."""

        def __init__(self, block):
            self.block, self.me = block, self

        def __del__(self):
            pool.retire_stream(H, ev)

    gc.disable()
    try:
        Garbage(filler)
        del filler
        b = pool.malloc(5 * MiB, H)        # no room until the collection frees the filler
    finally:
        gc.enable()
    assert pool.stats()["num_streams_retired"] == 1
    assert segment_of(pool, b.ptr)["stream"] == H and pool._arenas[(H, False)].retired is None
    assert pool._arenas[(H, False)] is b._chunk.arena
    check_consistent(pool, dev, [b])


def test_retire_in_no_caching_mode():
    _, dev, evs = make_pool()
    pool = CachingPool(dev.malloc, dev.free, record_event=evs.record, event_done=evs.query,
                       synchronize=evs.complete_all, no_caching=True)
    a = pool.malloc(1024, H)
    pool.retire_stream(H, evs.record(H))
    assert segment_of(pool, a.ptr)["stream"] < 0
    check_internal(pool)
    del a                                  # given back to the device at once
    assert dev.live == {} and pool._arenas == {}
    check_internal(pool)


def test_empty_cache_after_a_retirement():
    pool, dev, evs = make_pool()
    a = pool.malloc(3 * MiB, H)
    b = pool.malloc(3 * MiB, H)
    del a
    pool.retire_stream(H, evs.record(H))
    pool.empty_cache()                     # synchronizes: the pending segment is freed
    stats, _ = check_consistent(pool, dev, [b])
    assert stats["segment.current"] == 1 and stats["pending_bytes.current"] == 0
    del b
    pool.empty_cache()
    assert dev.live == {} and pool._arenas == {} and pool._pending == []


def test_two_retirements_of_the_same_handle():
    pool, dev, evs = make_pool(sync=False)
    a = pool.malloc(4 * KiB, H)
    ev1 = evs.record(H)
    pool.retire_stream(H, ev1)
    b = pool.malloc(4 * KiB, H)            # the next stream with that handle
    ev2 = evs.record(H)
    pool.retire_stream(H, ev2)
    owners = {segment_of(pool, a.ptr)["stream"], segment_of(pool, b.ptr)["stream"]}
    assert len(owners) == 2 and all(o < 0 for o in owners)
    del a, b
    check_consistent(pool, dev, [])       # (applies the frees a collected C Block queued)
    assert sorted(id(e) for e, _ in pool._pending) == sorted((id(ev1), id(ev2)))


# --------------------------------------------------------------------------- live streams

class _CupyStream:
    """What a Stream wraps: ``ptr`` and ``device_id``."""

    def __init__(self, ptr, device_id=0):
        self.ptr = ptr
        self.device_id = device_id


def test_streams_hold_their_handles_while_they_exist():
    dev = _device.get_device(0)
    cs = _CupyStream(0xBEEF00)
    assert not _backend.stream_held(0, 0xBEEF00)
    s = _streams.Stream._wrap(cs, dev)
    t = _streams.Stream._wrap(_CupyStream(0xBEEF00), dev)
    assert _backend.stream_held(0, 0xBEEF00) and not _backend.stream_held(1, 0xBEEF00)
    del s
    gc.collect()
    assert _backend.stream_held(0, 0xBEEF00)
    del t
    gc.collect()
    assert not _backend.stream_held(0, 0xBEEF00)
    assert (0, 0xBEEF00) not in _backend._held


class _Runtime:
    class CUDARuntimeError(RuntimeError):
        pass

    def __init__(self, log):
        self.log = log

    def eventRecord(self, ev, stream):
        self.log.append(("record", stream))

    def deviceSynchronize(self):
        self.log.append("synchronize")


class _Cupy:
    def __init__(self, log, current=0):
        rt = _Runtime(log)

        class Event:
            def __init__(self, block, disable_timing):
                self.ptr = 0xE0

        class cuda:
            runtime = rt

            @staticmethod
            def get_current_stream(dev):
                return _CupyStream(current, dev)

        cuda.Event = Event
        self.cuda = cuda


class _Device:
    id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _DeviceContext:
    """The pool's device-context factory (``_cupy_backend._device_context``) of device 0."""
    device_id = 0

    def __call__(self):
        return _Device()


def test_the_backend_records_on_held_streams_without_synchronizing(monkeypatch):
    from gparray._core import _backend

    log = []
    cp = _Cupy(log)
    monkeypatch.setattr(_backend, "_cupy", cp)     # its Event and current stream are the fakes
    record = _cupy_backend._record_event(cp.cuda.runtime, _DeviceContext())
    assert record(0x5A00) is None and log == ["synchronize"], "unknown stream: synchronize"
    log.clear()
    s = _streams.Stream._wrap(_CupyStream(0x5A00), _device.get_device(0))
    assert record(0x5A00) is not None and log == [("record", 0x5A00)]
    log.clear()
    assert record(2) is not None and record(0) is not None and "synchronize" not in log
    del s
    gc.collect()
    log.clear()
    assert record(0x5A00) is None and log == ["synchronize"], "the Stream is gone: unknown again"


@pytest.fixture
def fake_pool_0(monkeypatch):
    """A fake pool as device 0's, and a fake event recorder for retirements."""
    pool, dev, evs = make_pool(sync=False)
    monkeypatch.setitem(_memory._pools, 0, pool)
    recorded = []

    def record_on_live_stream(device_id, handle):
        recorded.append((device_id, handle))
        return evs.record(handle)

    monkeypatch.setattr(_cupy_backend, "record_on_live_stream", record_on_live_stream)
    return pool, dev, evs, recorded


def test_the_last_stream_over_an_owned_stream_retires_it(fake_pool_0):
    pool, dev, evs, recorded = fake_pool_0
    b = pool.malloc(3 * MiB, H)
    cs = _CupyStream(H)
    alive = weakref.ref(cs)
    token = _streams._own(cs, 0)           # what Stream() does with the CuPy stream it made
    s = _streams.Stream._wrap(cs, _device.get_device(0))
    t = _streams.Stream._wrap(_CupyStream(H), _device.get_device(0))   # as current_stream()
    assert s._owner is token and t._owner is token, "a Stream over an owned handle keeps it alive"
    del cs, token
    gc.collect()
    assert alive() is not None and recorded == []
    del s, t
    gc.collect()
    assert recorded == [(0, H)], "one event recorded on the stream, while it was alive"
    assert alive() is None, "then the CuPy stream is let go"
    assert segment_of(pool, b.ptr)["stream"] < 0 and pool.stats()["num_streams_retired"] == 1
    assert not _backend.stream_held(0, H)
    check_consistent(pool, dev, [b])


def test_external_and_current_streams_are_not_retired(fake_pool_0):
    pool, dev, evs, recorded = fake_pool_0
    b = pool.malloc(3 * MiB, H)
    s = _streams.Stream._wrap(_CupyStream(H), _device.get_device(0))   # not owned by gparray
    del s
    gc.collect()
    assert recorded == [] and segment_of(pool, b.ptr)["stream"] == H
    check_consistent(pool, dev, [b])


def test_the_retirement_finalizer_never_raises(monkeypatch):
    def broken(device_id, stream):
        raise RuntimeError("CUDA is gone")

    monkeypatch.setattr(_memory, "retire_stream", broken)
    _streams._retire(_CupyStream(H), 0)                     # swallowed
    monkeypatch.setattr(sys, "is_finalizing", lambda: True)
    monkeypatch.setattr(_memory, "retire_stream", lambda *a: pytest.fail("ran at shutdown"))
    _streams._retire(_CupyStream(H), 0)


def test_retire_without_a_pool_does_nothing(monkeypatch):
    monkeypatch.setattr(_memory, "_pools", {})
    monkeypatch.setattr(_cupy_backend, "record_on_live_stream",
                        lambda *a: pytest.fail("recorded although no pool exists"))
    _memory.retire_stream(0, _CupyStream(H))


def test_a_finalizer_during_a_pool_operation_defers_and_keeps_the_stream(fake_pool_0):
    pool, dev, evs, recorded = fake_pool_0
    b = pool.malloc(3 * MiB, H)
    cs = _CupyStream(H)
    alive = weakref.ref(cs)
    token = _streams._own(cs, 0)
    del cs
    pool._lock.acquire()
    try:
        del token                          # the finalizer runs while the pool is busy
        gc.collect()
        assert recorded == [(0, H)] and alive() is not None
    finally:
        pool._lock.release()
    assert pool.stats()["num_streams_retired"] == 1 and alive() is None
    check_consistent(pool, dev, [b])


def test_an_external_wrapper_of_an_owned_handle_keeps_it_unretired(fake_pool_0):
    pool, dev, evs, recorded = fake_pool_0
    b = pool.malloc(4 * KiB, H)
    cs = _CupyStream(H)
    token = _streams._own(cs, 0)
    proto = _CupyStream(H)                 # e.g. an object with __cuda_stream__
    s = _streams.Stream._wrap(cs, _device.get_device(0), proto)
    assert s._owner == (proto, token)
    del cs, token
    gc.collect()
    assert recorded == []
    del s
    gc.collect()
    assert recorded == [(0, H)]
    check_consistent(pool, dev, [b])


def test_a_stream_the_pool_never_saw_records_nothing(fake_pool_0):
    pool, dev, evs, recorded = fake_pool_0
    token = _streams._own(_CupyStream(0xF00D00), 0)
    del token
    gc.collect()
    assert recorded == [] and pool.stats()["num_streams_retired"] == 0
