"""CPU tier: the caching pool's bookkeeping over a fake device allocator (no GPU needed)."""
import gc
import os
import random
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gparray._core import _backend
from gparray._memory import _bench, _pool
from gparray._memory._pool import (Block, CachingPool, OutOfMemoryError, parse_memory_limit,
                                   resolve_limit)

KiB, MiB = 1 << 10, 1 << 20

REQUIRED_KEYS = [
    "allocated_bytes.current", "allocated_bytes.peak", "reserved_bytes.current",
    "reserved_bytes.peak", "active_bytes.current", "active_bytes.peak",
    "requested_bytes.current", "allocation.current", "segment.current",
    "inactive_split.current", "num_device_malloc", "num_device_free", "num_ooms",
    "num_alloc_retries", "fragmentation", "limit_bytes",
]


def rounded(n):
    return -(-n // 512) * 512


# --------------------------------------------------------------------------- fakes

class FakeDevice:
    """A fake address space: bump-pointer raw allocations, MemoryError past ``capacity``."""

    def __init__(self, capacity=64 * MiB, contiguous=True):
        self.capacity = capacity
        self.contiguous = contiguous    # segments back to back: merging across them would show
        self.live = {}
        self.used = 0
        self.next = 0x7F00_0000_0000
        self.n_malloc = 0
        self.n_free = 0
        self.n_failed = 0

    def malloc(self, n):
        assert n > 0 and n % 512 == 0, n
        if self.used + n > self.capacity:
            self.n_failed += 1
            raise MemoryError("fake device: out of memory")
        ptr = self.next
        self.next += n if self.contiguous else n + 64 * KiB
        self.live[ptr] = n
        self.used += n
        self.n_malloc += 1
        return ptr

    def free(self, ptr):
        n = self.live.pop(ptr)          # KeyError: double free or foreign pointer
        self.used -= n
        self.n_free += 1


class FakeEvent:
    def __init__(self, stream, seq):
        self.stream = stream
        self.seq = seq          # position on the shared clock when it was recorded
        self.done = False


class FakeEvents:
    """Events that complete only when the test says so (or on synchronize)."""

    def __init__(self):
        self.events = []
        self.clock = 0
        self.check = None       # called with the stream of every record, when set

    def tick(self):
        self.clock += 1
        return self.clock

    def record(self, stream):
        assert not (isinstance(stream, int) and stream < 0), "an event recorded on a retired owner"
        if self.check is not None:
            self.check(stream)
        ev = FakeEvent(stream, self.tick())
        self.events.append(ev)
        return ev

    def safe_after(self, stream, t):
        """True if an event recorded on ``stream`` after time ``t`` has completed."""
        return any(ev.done and ev.stream == stream and ev.seq > t for ev in self.events)

    @staticmethod
    def query(ev):
        return ev.done

    def complete_all(self):
        for ev in self.events:
            ev.done = True


def make_pool(capacity=64 * MiB, limit=None, events=True, sync=True, contiguous=True,
              total=None):
    dev = FakeDevice(capacity, contiguous)
    evs = FakeEvents()
    kw = {}
    if events:
        kw.update(record_event=evs.record, event_done=evs.query)
    if sync:
        kw.update(synchronize=evs.complete_all)
    pool = CachingPool(dev.malloc, dev.free, total_memory=total or capacity, limit=limit, **kw)
    return pool, dev, evs


# --------------------------------------------------------------------------- checkers

def check_internal(pool):
    """Private-structure invariants, checked without coalescing (no observable side effect)."""
    binned = set()
    for (stream, small), ar in pool._arenas.items():
        assert ar.stream == stream and ar.small == small
        assert ar.sizes == sorted(ar.bins), "sorted sizes must equal the bin keys"
        for size, lst in ar.bins.items():
            for c in lst:
                assert c.state == _pool._FREE and c.size == size
                assert c.arena is ar and c.seg.arena is ar
                assert id(c) not in binned, "a chunk is binned twice"
                binned.add(id(c))
        assert len({id(s) for s in ar.dirty}) == len(ar.dirty)
        for seg in ar.dirty:
            assert seg.dirty and seg.arena is ar
    n_free_owned = 0
    pending_segs = {id(s) for _, segs in pool._pending for s in segs}
    idle_segs = {id(s) for kind in (True, False) for s in pool._idle[kind]}
    pending_bytes = 0
    for ptr, seg in pool._segments.items():
        assert seg.ptr == ptr
        c, prev, addr = seg.head, None, seg.ptr
        while c is not None:
            assert c.seg is seg and c.prev is prev and c.ptr == addr and c.size > 0
            assert c.state != _pool._DEAD
            if seg.arena is not None:
                assert c.arena is seg.arena
                if c.state == _pool._FREE:
                    assert id(c) in binned, "a free chunk is missing from its bin"
                    n_free_owned += 1
            addr += c.size
            prev, c = c, c.next
        assert addr == seg.ptr + seg.size
        if seg.arena is None:
            assert seg.head.next is None, "pending/idle segments are whole"
            if seg.head.state == _pool._PENDING:
                assert id(seg) in pending_segs
                pending_bytes += seg.size
            else:
                assert seg.head.state == _pool._FREE and id(seg) in idle_segs
        else:
            assert seg.dirty == (seg in seg.arena.dirty)
            assert seg.small == seg.arena.small and seg.stream == seg.arena.stream
            if not seg.dirty:                # clean segments have nothing left to merge
                c = seg.head
                while c.next is not None:
                    assert not (c.state == c.next.state == _pool._FREE), "unmarked mergeable"
                    c = c.next
    assert n_free_owned == len(binned)
    assert pending_bytes == pool._pending_bytes
    # a retired stream's arena holds only segments with live blocks, and counts them
    for (stream, _), ar in pool._arenas.items():
        segs = [seg for seg in pool._segments.values() if seg.arena is ar]
        if ar.retired is None:
            assert not (isinstance(stream, int) and stream < 0)
            continue
        assert stream < 0 and ar.retired.nseg == len(segs) > 0
        for seg in segs:
            c = seg.head
            while c is not None and c.state == _pool._FREE:
                c = c.next
            assert c is not None, "an entirely free segment left in a retired arena"


def check_consistent(pool, dev, live):
    """Public-view invariants: snapshot vs fake device vs live blocks vs statistics."""
    check_internal(pool)
    snap = pool.snapshot()
    stats = pool.stats()
    assert {(s["address"], s["size"]) for s in snap} == set(dev.live.items()), \
        "segments must be exactly the live raw allocations"
    allocated = {}
    free_sizes, pending, split_free = [], 0, 0
    for seg in snap:
        addr = seg["address"]
        prev_state = None
        for b in seg["blocks"]:
            assert b["address"] == addr, "blocks must tile their segment"
            assert b["size"] > 0 and b["size"] % 512 == 0
            assert b["stream"] == seg["stream"]
            addr += b["size"]
            if b["state"] == "allocated":
                allocated[b["address"]] = (b["size"], b["stream"])
            elif b["state"] == "free":
                assert prev_state != "free", "adjacent free blocks must be merged"
                free_sizes.append(b["size"])
                if len(seg["blocks"]) > 1:
                    split_free += 1
            else:
                assert b["state"] == "pending" and len(seg["blocks"]) == 1
                pending += b["size"]
            prev_state = b["state"]
        assert addr == seg["address"] + seg["size"]
    # every live block is one allocated block of a live segment: so no two overlap
    assert len(allocated) == len(live)
    for blk in live:
        size, owner = allocated.get(blk.ptr, (None, None))
        # a retired stream's segments belong to a negative owner (gparray/_memory/_retire.py)
        assert size == blk.size and (owner == blk.stream or owner < 0), (blk, owner)
    spans = sorted((b.ptr, b.ptr + b.size) for b in live)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start, "live blocks overlap"
    alloc_bytes = sum(b.size for b in live)
    free_bytes = sum(free_sizes)
    assert stats["allocated_bytes.current"] == alloc_bytes
    assert stats["requested_bytes.current"] == sum(b.nbytes for b in live)
    assert stats["allocation.current"] == len(live)
    assert stats["reserved_bytes.current"] == dev.used == sum(dev.live.values())
    assert stats["reserved_bytes.current"] == alloc_bytes + free_bytes + pending
    assert stats["active_bytes.current"] == alloc_bytes + pending
    assert stats["pending_bytes.current"] == pending
    assert stats["free_cached_bytes.current"] == free_bytes
    assert stats["segment.current"] == len(dev.live)
    assert stats["inactive_split.current"] == split_free
    assert stats["num_device_malloc"] == dev.n_malloc
    assert stats["num_device_free"] == dev.n_free
    expect_frag = 1.0 - max(free_sizes) / free_bytes if free_bytes else 0.0
    assert stats["fragmentation"] == pytest.approx(expect_frag)
    assert stats["largest_free_block"] == (max(free_sizes) if free_sizes else 0)
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        assert stats[key + ".peak"] >= stats[key + ".current"]
    if pool.limit is not None:
        assert stats["reserved_bytes.current"] <= pool.limit
    for key in REQUIRED_KEYS:
        assert key in stats
    return stats, snap


def check_oom(err, pool, dev, nbytes, stream):
    """An OutOfMemoryError must be justified, informative, and leave no cache behind."""
    size = rounded(nbytes)
    msg = str(err)
    assert msg.startswith("gparray: out of memory")
    assert "alloc" in msg and str(nbytes) in msg and "reserved" in msg
    assert err.requested == nbytes and isinstance(err, MemoryError)
    for key in REQUIRED_KEYS:
        assert key in err.stats
    snap = pool.snapshot()
    # the retry gave every unused segment back (synchronize completed the events)
    for seg in snap:
        assert any(b["state"] == "allocated" for b in seg["blocks"]), seg
    room = dev.capacity - dev.used
    if pool.limit is not None:
        room = min(room, pool.limit - pool.reserved_bytes)
    assert size > room, "OOM although a new segment would have fitted"
    small = size <= _pool.SMALL_REQUEST
    for seg in snap:
        if seg["stream"] == stream and (seg["segment_type"] == "small") == small:
            for b in seg["blocks"]:
                assert not (b["state"] == "free" and b["size"] >= size), \
                    "OOM although a cached block would have fitted"


class StreamModel:
    """Remembers freed ranges; a new block on another stream may overlap one only after an
    event recorded on the freeing stream, after the free, has completed.

    A retired handle (``retire``) names a new stream afterwards (its next *incarnation*):
    memory freed by the old one goes to any later stream only after an event of the old one
    recorded after the free, or, for a free after the retirement (the old stream is dead by
    then), the retirement event itself."""

    def __init__(self, evs):
        self.evs = evs
        self.freed = []     # (start, end, stream, incarnation, time)
        self.inc = {}       # stream -> its current incarnation (0 until retired)
        self.retired_at = {}    # (stream, incarnation) -> seq of the retirement event
        self.allocs = {}    # (stream, incarnation) -> allocations made in it
        self.block_inc = {}     # id(live block) -> (stream, incarnation) it was allocated in

    def on_free(self, b):
        key = self.block_inc.pop(id(b), (b.stream, 0))
        self.freed.append((b.ptr, b.ptr + b.size) + key + (self.evs.tick(),))

    def retire(self, stream, seq):
        i = self.inc.get(stream, 0)
        self.retired_at[(stream, i)] = seq
        self.inc[stream] = i + 1

    def safe(self, stream, inc, t):
        tr = self.retired_at.get((stream, inc))
        if tr is None:
            return self.evs.safe_after(stream, t)
        t = min(t, tr - 1)
        return any(ev.done and ev.stream == stream and t < ev.seq <= tr for ev in self.evs.events)

    def check_record(self, stream):
        """The pool records only on a live stream: a retired handle's new incarnation counts
        only once something was allocated in it."""
        i = self.inc.get(stream, 0)
        assert i == 0 or self.allocs.get((stream, i)), f"recorded on retired handle {stream}"

    def on_alloc(self, b):
        key = (b.stream, self.inc.get(b.stream, 0))
        self.block_inc[id(b)] = key
        self.allocs[key] = self.allocs.get(key, 0) + 1
        for start, end, stream, inc, t in self.freed:
            if (stream, inc) != key and start < b.ptr + b.size and b.ptr < end:
                assert self.safe(stream, inc, t), \
                    "memory freed on one stream reused by another before its event completed"


# --------------------------------------------------------------------------- basics

def test_rounding_and_block_attributes():
    pool, dev, _ = make_pool()
    for n, size in [(1, 512), (511, 512), (512, 512), (513, 1024), (4096, 4096),
                    (MiB, MiB), (MiB + 1, MiB + 512), (5 * MiB + 7, 5 * MiB + 512)]:
        b = pool.malloc(n, 3)
        assert (b.size, b.nbytes, b.stream, b.device_id) == (size, n, 3, 0)
        assert b.ptr != 0 and b.ptr % 512 == 0
        assert any(p <= b.ptr and b.ptr + b.size <= p + s for p, s in dev.live.items())
        b.free()
    assert not hasattr(pool.malloc(10), "__dict__"), "Block must use __slots__"
    assert _pool.PyBlock.__slots__


def test_zero_bytes_owns_nothing():
    pool, dev, _ = make_pool()
    b = pool.malloc(0, 5)
    assert (b.ptr, b.size, b.nbytes, b.stream) == (0, 0, 0, 5)
    b.free()
    b.free()
    del b
    assert dev.n_malloc == 0 and pool.stats()["allocation.current"] == 0


def test_module_alloc_zero_needs_no_device():
    from gparray import _memory
    b = _memory.alloc(0, 0, stream=0)
    assert b.ptr == 0 and b.size == 0 and b.device_id == 0
    b.free()


def test_negative_size_rejected():
    pool, _, _ = make_pool()
    with pytest.raises(ValueError, match="^alloc: nbytes"):
        pool.malloc(-1)


def test_free_is_idempotent_and_del_frees():
    pool, dev, _ = make_pool()
    b = pool.malloc(1000)
    assert pool.allocated_bytes == 1024
    b.free()
    assert b.freed and pool.allocated_bytes == 0
    b.free()
    assert pool.allocated_bytes == 0 and pool.stats()["allocation.current"] == 0
    b2 = pool.malloc(3000)
    assert pool.allocated_bytes == 3072
    del b2
    assert pool.allocated_bytes == 0
    check_consistent(pool, dev, [])


def test_same_stream_reuse_is_direct():
    pool, dev, _ = make_pool()
    a = pool.malloc(4096, 7)
    ptr = a.ptr
    del a
    b = pool.malloc(4096, 7)
    assert b.ptr == ptr and dev.n_malloc == 1
    big = pool.malloc(8 * MiB, 7)
    p = big.ptr
    del big
    big = pool.malloc(8 * MiB, 7)
    assert big.ptr == p and dev.n_malloc == 2


def test_small_requests_share_a_segment():
    pool, dev, _ = make_pool()
    blocks = [pool.malloc(4 * KiB) for _ in range(100)] + [pool.malloc(100) for _ in range(50)]
    assert dev.n_malloc == 1 and list(dev.live.values()) == [_pool.SMALL_SEGMENT]
    stats, snap = check_consistent(pool, dev, blocks)
    assert snap[0]["segment_type"] == "small"
    assert stats["allocated_bytes.current"] == 100 * 4 * KiB + 50 * 512


def test_small_and_large_never_share_segments():
    pool, dev, _ = make_pool()
    big = pool.malloc(3 * MiB)
    del big                                # a 4 MiB large segment is now cached
    small = pool.malloc(4 * KiB)
    assert dev.n_malloc == 2, "a small request must not be carved from a large segment"
    _, snap = check_consistent(pool, dev, [small])
    kinds = {s["segment_type"] for s in snap}
    assert kinds == {"small", "large"}


def test_large_best_fit_split_and_merge():
    pool, dev, _ = make_pool()
    whole = pool.malloc(8 * MiB)
    seg = whole.ptr
    del whole
    a = pool.malloc(3 * MiB)               # best fit: split the cached 8 MiB block
    b = pool.malloc(5 * MiB)               # the 5 MiB remainder, exact hit
    assert dev.n_malloc == 1
    assert a.ptr == seg and b.ptr == seg + 3 * MiB
    stats, _ = check_consistent(pool, dev, [a, b])
    assert stats["inactive_split.current"] == 0
    del a
    stats, snap = check_consistent(pool, dev, [b])
    assert stats["inactive_split.current"] == 1
    assert stats["inactive_split_bytes.current"] == 3 * MiB
    del b
    stats, snap = check_consistent(pool, dev, [])
    assert [blk["size"] for blk in snap[0]["blocks"]] == [8 * MiB], "free neighbours merge"
    assert stats["fragmentation"] == 0.0 and stats["inactive_split.current"] == 0
    c = pool.malloc(8 * MiB)
    assert c.ptr == seg and dev.n_malloc == 1


def test_best_fit_picks_smallest_sufficient_block():
    pool, dev, _ = make_pool(contiguous=False)
    blocks = [pool.malloc(n * MiB) for n in (6, 4, 10)]
    ptrs = [b.ptr for b in blocks]
    del blocks
    x = pool.malloc(3 * MiB)               # fits in 4, 6 and 10: must take the 4 MiB one
    assert x.ptr == ptrs[1]
    y = pool.malloc(5 * MiB)               # fits in 6 and 10
    assert y.ptr == ptrs[0]
    check_consistent(pool, dev, [x, y])


def test_coalescing_is_deferred_then_visible():
    pool, dev, _ = make_pool()
    blocks = [pool.malloc(64 * KiB) for _ in range(8)]
    keep = pool.malloc(64 * KiB)
    seg = next(iter(pool._segments.values()))
    for b in blocks:
        b.free()
    chunks = 0
    c = seg.head
    while c is not None:
        chunks += 1
        c = c.next
    assert chunks == 10, "frees must not merge on the fast path"
    assert seg.dirty
    stats, snap = check_consistent(pool, dev, [keep])
    assert [b["state"] for b in snap[0]["blocks"]] == ["free", "allocated", "free"]
    assert snap[0]["blocks"][0]["size"] == 8 * 64 * KiB
    # a request bigger than any unmerged piece is served by merging, not by the device
    big = pool.malloc(256 * KiB)
    assert dev.n_malloc == 1 and big.ptr == snap[0]["address"]


def test_fragmentation_formula():
    pool, dev, _ = make_pool()
    a, b, c = (pool.malloc(512 * KiB) for _ in range(3))
    stats, _ = check_consistent(pool, dev, [a, b, c])
    assert stats["fragmentation"] == 0.0          # one free block: the 512 KiB tail
    del b
    stats, _ = check_consistent(pool, dev, [a, c])
    # free blocks: b (512 KiB) and the tail (512 KiB), not adjacent
    assert stats["free_cached_bytes.current"] == MiB
    assert stats["fragmentation"] == pytest.approx(0.5)
    del a, c
    stats, _ = check_consistent(pool, dev, [])
    assert stats["fragmentation"] == 0.0
    pool.empty_cache()
    assert pool.stats()["fragmentation"] == 0.0   # nothing cached


# --------------------------------------------------------------------------- streams

def test_cross_stream_reuse_waits_for_event():
    pool, dev, evs = make_pool(sync=False)
    a = pool.malloc(3 * MiB, 1)
    seg = a.ptr
    del a
    b = pool.malloc(3 * MiB, 2)
    assert b.ptr != seg and dev.n_malloc == 2, "reused before the event completed"
    assert len(evs.events) == 1 and evs.events[0].stream == 1
    stats, snap = check_consistent(pool, dev, [b])
    assert stats["pending_bytes.current"] == 4 * MiB
    assert stats["active_bytes.current"] == b.size + 4 * MiB
    assert [s["blocks"][0]["state"] for s in snap if s["address"] == seg] == ["pending"]
    # the same stream cannot use it either while pending, but its own cache still works
    c = pool.malloc(3 * MiB, 2)
    assert c.ptr != seg and dev.n_malloc == 3
    assert len(evs.events) == 1, "no second event while one that fits is pending"
    evs.complete_all()
    d = pool.malloc(3 * MiB, 2)
    assert d.ptr == seg and dev.n_malloc == 3, "reusable once the event completed"
    stats, snap = check_consistent(pool, dev, [b, c, d])
    assert stats["num_stream_moves"] == 1 and stats["pending_bytes.current"] == 0
    assert {s["stream"] for s in snap} == {2}


def test_cross_stream_small_segment_moves_only_when_whole():
    pool, dev, evs = make_pool(sync=False)
    x = pool.malloc(4 * KiB, 1)
    y = pool.malloc(4 * KiB, 1)
    del x                                  # stream 1's segment still holds y
    z = pool.malloc(4 * KiB, 2)
    assert dev.n_malloc == 2 and evs.events == []
    del y
    del z
    w = pool.malloc(MiB, 2)                # stream 2's own segment serves it directly
    assert dev.n_malloc == 2 and evs.events == []
    check_consistent(pool, dev, [w])


def test_streams_without_event_backend_move_at_once():
    pool, dev, _ = make_pool(events=False, sync=False)
    a = pool.malloc(3 * MiB, 1)
    seg = a.ptr
    del a
    b = pool.malloc(3 * MiB, 2)
    assert b.ptr == seg and dev.n_malloc == 1
    check_consistent(pool, dev, [b])


def test_empty_cache_synchronizes_pending():
    pool, dev, evs = make_pool()
    a = pool.malloc(3 * MiB, 1)
    del a
    b = pool.malloc(3 * MiB, 2)            # stream 1's segment becomes pending
    assert pool.stats()["pending_bytes.current"] == 4 * MiB
    pool.empty_cache()
    assert all(ev.done for ev in evs.events)
    stats, _ = check_consistent(pool, dev, [b])
    assert stats["reserved_bytes.current"] == 4 * MiB and stats["pending_bytes.current"] == 0
    del b
    pool.empty_cache()
    assert dev.live == {} and pool.reserved_bytes == 0


# --------------------------------------------------------------------------- out of memory

def test_oom_message_stats_and_consistency():
    pool, dev, _ = make_pool(capacity=10 * MiB)
    a = pool.malloc(8 * MiB)
    with pytest.raises(OutOfMemoryError) as info:
        pool.malloc(4 * MiB + 1)
    err = info.value
    check_oom(err, pool, dev, 4 * MiB + 1, 0)
    assert str(rounded(4 * MiB + 1)) in str(err)
    stats, _ = check_consistent(pool, dev, [a])
    assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1
    small = pool.malloc(MiB)               # the pool still works
    stats, _ = check_consistent(pool, dev, [a, small])
    del a, small
    pool.empty_cache()
    assert dev.live == {}


def test_oom_retry_releases_cached_segments():
    pool, dev, _ = make_pool(capacity=10 * MiB)
    a = pool.malloc(6 * MiB)
    s = pool.malloc(KiB)                   # a 2 MiB small segment
    del a, s
    b = pool.malloc(9 * MiB)               # needs the cache flushed first
    stats, _ = check_consistent(pool, dev, [b])
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    assert stats["num_device_free"] == 2


def test_oom_retry_runs_gc():
    pool, dev, _ = make_pool(capacity=10 * MiB)

    class Cycle:
        pass

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        holder = Cycle()
        holder.self = holder
        holder.block = pool.malloc(8 * MiB)
        del holder                         # unreachable, but only gc can free it
        b = pool.malloc(8 * MiB)
    finally:
        if was_enabled:
            gc.enable()
    stats, _ = check_consistent(pool, dev, [b])
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0


def test_oom_when_device_is_smaller_than_request():
    pool, dev, _ = make_pool(capacity=32 * MiB)
    with pytest.raises(OutOfMemoryError) as info:
        pool.malloc(64 * MiB)
    check_oom(info.value, pool, dev, 64 * MiB, 0)
    assert dev.live == {}
    b = pool.malloc(1000)
    check_consistent(pool, dev, [b])


def test_rounded_segment_falls_back_to_exact_size():
    pool, dev, _ = make_pool(capacity=5 * MiB)
    b = pool.malloc(4 * MiB + 512)         # 6 MiB wanted, 4 MiB + 512 fits
    assert list(dev.live.values()) == [4 * MiB + 512]
    check_consistent(pool, dev, [b])


def test_raw_malloc_errors_other_than_oom_propagate():
    state = {"fail": False}
    dev = FakeDevice()

    def flaky_malloc(n):
        if state["fail"]:
            raise RuntimeError("driver exploded")
        return dev.malloc(n)

    pool = CachingPool(flaky_malloc, dev.free)
    a = pool.malloc(100)
    state["fail"] = True
    with pytest.raises(RuntimeError, match="driver exploded"):
        pool.malloc(8 * MiB)
    state["fail"] = False
    b = pool.malloc(8 * MiB)
    check_consistent(pool, dev, [a, b])


# --------------------------------------------------------------------------- limit

def test_limit_is_never_exceeded():
    pool, dev, _ = make_pool(capacity=100 * MiB, limit=5 * MiB)
    a = pool.malloc(4 * MiB)
    with pytest.raises(OutOfMemoryError) as info:
        pool.malloc(MiB + 512)             # 2 MiB wanted, exact 1 MiB + 512 still too much
    check_oom(info.value, pool, dev, MiB + 512, 0)
    assert "limit" in str(info.value)
    b = pool.malloc(MiB - 512)             # small: 2 MiB segment too big, exact size fits
    stats, _ = check_consistent(pool, dev, [a, b])
    assert stats["reserved_bytes.current"] <= 5 * MiB and stats["limit_bytes"] == 5 * MiB


def test_set_limit_forms():
    pool, _, _ = make_pool(capacity=100 * MiB, total=100 * MiB)
    assert pool.set_limit(0.5) == 50 * MiB and pool.limit == 50 * MiB
    assert pool.set_limit(1.0) == 100 * MiB
    assert pool.set_limit(12345) == 12345
    assert pool.set_limit("8MiB") == 8 * MiB
    assert pool.set_limit("10%") == 10 * MiB
    assert pool.set_limit(None) is None and pool.stats()["limit_bytes"] == 0
    assert pool.set_limit(0) is None
    for bad in (1.5, -0.5, -1):
        with pytest.raises(ValueError, match="^set_memory_limit"):
            pool.set_limit(bad)
    for bad in (True, [1], "x"):
        with pytest.raises((TypeError, ValueError), match="set_memory_limit"):
            pool.set_limit(bad)
    assert pool.limit is None


def test_set_limit_below_usage():
    pool, dev, _ = make_pool(capacity=100 * MiB)
    a = pool.malloc(10 * MiB)
    c = pool.malloc(20 * MiB)
    del c                                   # 20 MiB cached
    assert pool.set_limit(15 * MiB) == 15 * MiB, "cached memory is released to fit"
    assert dev.used == 10 * MiB
    with pytest.raises(ValueError, match="^set_memory_limit"):
        pool.set_limit(5 * MiB)
    assert pool.limit == 15 * MiB
    check_consistent(pool, dev, [a])


@pytest.mark.parametrize("text, total, expected", [
    ("8GB", None, 8 * 10**9),
    ("8 GB", None, 8 * 10**9),
    ("512MiB", None, 512 * MiB),
    ("512mib", None, 512 * MiB),
    ("2G", None, 2 << 30),
    ("1.5GiB", None, 3 << 29),
    ("1000", None, 1000),
    ("80%", 10**9, 8 * 10**8),
    ("100%", 1000, 1000),
    ("", None, None),
    ("0", None, None),
    ("none", None, None),
])
def test_parse_memory_limit(text, total, expected):
    assert parse_memory_limit(text, total) == expected


@pytest.mark.parametrize("text, total", [
    ("abc", None), ("8XB", None), ("-5", None), ("80%", None), ("0%", 100), ("150%", 100),
    ("1e9", None), ("GB", None), ("8 G B", None),
])
def test_parse_memory_limit_rejects(text, total):
    with pytest.raises(ValueError, match="^GPARRAY_MEMORY_LIMIT"):
        parse_memory_limit(text, total)


def test_resolve_limit_types():
    assert resolve_limit(None, 100) is None
    assert resolve_limit(0.25, 100) == 25
    assert resolve_limit("50%", 100) == 50
    with pytest.raises(ValueError, match="^f: a fractional limit needs"):
        resolve_limit(0.5, None, "f")


# --------------------------------------------------------------------------- stats

def test_peaks_monotone_and_reset():
    pool, dev, _ = make_pool()
    a = pool.malloc(5 * MiB)
    b = pool.malloc(KiB)
    peak = pool.stats()
    del a
    s = pool.stats()
    assert s["allocated_bytes.peak"] == peak["allocated_bytes.peak"] == 5 * MiB + KiB
    assert s["allocated_bytes.current"] == KiB
    pool.reset_peaks()
    s = pool.stats()
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes"):
        assert s[key + ".peak"] == s[key + ".current"]
    check_consistent(pool, dev, [b])


def test_stats_keys_and_types():
    pool, _, _ = make_pool()
    s = pool.stats()
    for key in REQUIRED_KEYS:
        assert key in s
    assert isinstance(s["fragmentation"], float)
    assert all(isinstance(v, int) for k, v in s.items() if k != "fragmentation")


def test_empty_cache_returns_everything():
    pool, dev, _ = make_pool(capacity=1 << 30)
    rng = random.Random(0)
    blocks = [pool.malloc(rng.randint(1, 6 * MiB), rng.choice([0, 1, 2])) for _ in range(30)]
    check_consistent(pool, dev, blocks)
    del blocks
    pool.empty_cache()
    assert dev.live == {} and dev.n_malloc == dev.n_free
    stats, snap = check_consistent(pool, dev, [])
    assert snap == [] and stats["reserved_bytes.current"] == 0


# --------------------------------------------------------------------------- concurrency

def test_free_while_lock_is_held_is_deferred():
    pool, dev, _ = make_pool()
    b = pool.malloc(4096)
    pool._lock.acquire()
    try:
        b.free()                            # must not deadlock
        assert len(pool._deferred) == 1
    finally:
        pool._lock.release()
    assert pool.allocated_bytes == 0 and pool._deferred == []
    assert pool.stats()["allocation.current"] == 0
    check_consistent(pool, dev, [])


def test_block_dropped_inside_raw_malloc_is_not_lost():
    dev = FakeDevice()
    holder = {}

    def malloc_dropping_a_block(n):
        holder.pop("victim", None)          # runs Block.__del__ while the pool is busy
        return dev.malloc(n)

    pool = CachingPool(malloc_dropping_a_block, dev.free)
    holder["victim"] = pool.malloc(KiB)
    b = pool.malloc(16 * MiB)
    assert "victim" not in holder
    assert pool._allocated == b.size, "the free queued during malloc is applied at its end"
    check_consistent(pool, dev, [b])


def test_threads():
    pool, dev, _ = make_pool(capacity=1 << 30)
    errors = []

    def work(seed):
        rng = random.Random(seed)
        mine = []
        try:
            for _ in range(1500):
                if mine and rng.random() < 0.5:
                    mine.pop(rng.randrange(len(mine))).free()
                else:
                    mine.append(pool.malloc(rng.choice([512, 4096, 100_000, 3 * MiB]),
                                            rng.choice([0, seed])))
        except Exception as exc:            # pragma: no cover - reported below
            errors.append(exc)
        mine.clear()

    threads = [threading.Thread(target=work, args=(i + 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check_consistent(pool, dev, [])
    pool.empty_cache()
    assert dev.live == {}


# --------------------------------------------------------------------------- speed

def test_fast_path_does_no_slow_work(monkeypatch):
    pool, dev, _ = make_pool()
    calls = {"slow": 0}
    slow = pool._malloc_slow

    def counting(*args):
        calls["slow"] += 1
        return slow(*args)

    monkeypatch.setattr(pool, "_malloc_slow", counting)
    for _ in range(1000):
        pool.malloc(4096, 0)
        b = pool.malloc(200_000, 0)
        b.free()
    assert calls["slow"] <= 2 and dev.n_malloc == 1


def test_fast_path_speed():
    pool, _, _ = make_pool()
    us = _bench.time_pairs(lambda: pool.malloc(4096, 0), n=20000, repeat=3)
    print(f"fake pool malloc+free: {us:.3f} us per pair")
    assert 0 < us < 20, f"cache-hit malloc+free took {us:.2f} us"


# --------------------------------------------------------------------------- randomized

class PoolMachine(RuleBasedStateMachine):
    """Random malloc/free/stream/limit sequences; the invariants are checked after each step."""

    def __init__(self):
        super().__init__()
        self.pool, self.dev, self.evs = make_pool(capacity=48 * MiB, total=48 * MiB)
        self.live = []
        self.last_peaks = None
        self.streams = StreamModel(self.evs)
        self.evs.check = self.streams.check_record

    sizes = st.one_of(st.integers(1, 4096), st.integers(1, MiB), st.integers(MiB, 12 * MiB),
                      st.sampled_from([512, MiB, MiB + 1, 2 * MiB, 2 * MiB + 1, 4096]))

    @rule(nbytes=sizes, stream=st.sampled_from([0, 1, 2]))
    def alloc(self, nbytes, stream):
        try:
            b = self.pool.malloc(nbytes, stream)
        except OutOfMemoryError as err:
            check_oom(err, self.pool, self.dev, nbytes, stream)
            return
        assert (b.size, b.nbytes, b.stream) == (rounded(nbytes), nbytes, stream)
        self.streams.on_alloc(b)
        self.live.append(b)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), explicit=st.booleans())
    def free(self, data, explicit):
        b = self.live.pop(data.draw(st.integers(0, len(self.live) - 1)))
        self.streams.on_free(b)
        if explicit:
            b.free()
            b.free()
        del b

    @rule(stream=st.sampled_from([1, 2]))
    def retire(self, stream):
        """The stream is destroyed after this; CUDA may give its handle to a new stream."""
        self.evs.check = None          # the owner records the retirement event, not the pool
        ev = self.evs.record(stream)
        self.evs.check = self.streams.check_record
        self.streams.retire(stream, ev.seq)
        self.pool.retire_stream(stream, ev)

    @rule(data=st.data())
    def complete_some_events(self, data):
        for ev in self.evs.events:
            if data.draw(st.booleans()):
                ev.done = True

    @rule()
    def empty_cache(self):
        self.pool.empty_cache()
        for seg in self.pool.snapshot():
            assert any(b["state"] == "allocated" for b in seg["blocks"])

    @rule(limit=st.one_of(st.none(), st.integers(4 * MiB, 48 * MiB), st.floats(0.1, 1.0)))
    def set_limit(self, limit):
        try:
            self.pool.set_limit(limit)
        except ValueError:
            new = resolve_limit(limit, 48 * MiB)
            assert self.pool.reserved_bytes > new

    @rule()
    def reset_peaks(self):
        self.pool.reset_peaks()
        self.last_peaks = None

    @invariant()
    def consistent(self):
        stats, _ = check_consistent(self.pool, self.dev, self.live)
        peaks = {k: v for k, v in stats.items() if k.endswith(".peak")}
        if self.last_peaks is not None:
            for k, v in peaks.items():
                assert v >= self.last_peaks[k], f"{k} went down without a reset"
        else:
            for k, v in peaks.items():
                assert v >= stats[k.replace(".peak", ".current")]
        self.last_peaks = peaks

    def teardown(self):
        self.live.clear()
        self.pool.empty_cache()
        assert self.dev.live == {}, "after freeing everything and empty_cache nothing is held"


PoolMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestPoolMachine = PoolMachine.TestCase


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.integers(0, 9), st.integers(1, 6 * MiB),
                              st.sampled_from([0, 1])), max_size=120),
       contiguous=st.booleans())
def test_unobserved_sequences(ops, contiguous):
    """Long runs with no stats/snapshot between steps (so lazy merging is really lazy)."""
    pool, dev, evs = make_pool(capacity=40 * MiB, contiguous=contiguous)
    live = []
    model = StreamModel(evs)
    for kind, n, stream in ops:
        if kind < 5 or not live:
            n = n if kind % 2 else n % 8192 + 1
            try:
                live.append(pool.malloc(n, stream))
            except OutOfMemoryError as err:
                check_oom(err, pool, dev, n, stream)
            else:
                model.on_alloc(live[-1])
        elif kind < 9:
            b = live.pop(n % len(live))
            model.on_free(b)
            b.free()
        else:
            if evs.events:
                evs.events[n % len(evs.events)].done = True
        check_internal(pool)
    check_consistent(pool, dev, live)
    live.clear()
    pool.empty_cache()
    assert dev.live == {}


# --------------------------------------------------------------------------- packaging

def test_import_does_not_import_cupy():
    code = ("import sys, gparray._memory, gparray._memory._pool, gparray._memory._bench;"
            "import gparray.cuda._memory_api;"
            "assert 'cupy' not in sys.modules, 'cupy imported'")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_pool_module_has_no_cupy_reference():
    src = open(_pool.__file__).read()
    assert "import cupy" not in src and "_backend import" not in src


@pytest.fixture
def fake_device_0(monkeypatch):
    """Pretend one CUDA device exists and give it a fake pool."""
    from gparray import _memory
    pool, dev, _ = make_pool(capacity=64 * MiB, total=64 * MiB)
    monkeypatch.setattr(_backend, "device_count", lambda: 1)
    monkeypatch.setitem(_memory._pools, 0, pool)
    return pool, dev


def test_public_api_over_fake_pool(fake_device_0):
    from gparray._core._device import Device
    from gparray.cuda import _memory_api as api
    pool, dev = fake_device_0
    for name in api.__all__:
        assert hasattr(api, name)
    assert api.OutOfMemoryError is OutOfMemoryError
    b = pool.malloc(3 * MiB)
    for d in (0, "cuda:0", Device(0)):
        s = api.memory_stats(d)
        assert s["allocated_bytes.current"] == 3 * MiB
        assert api.memory_allocated(d) == 3 * MiB
        assert api.memory_reserved(d) == 4 * MiB
        assert api.max_memory_allocated(d) == 3 * MiB
        assert api.max_memory_reserved(d) == 4 * MiB
    snap = api.memory_snapshot(0)
    assert snap[0]["blocks"][0]["state"] == "allocated"
    del b
    api.reset_peak_memory_stats(0)
    assert api.max_memory_allocated(0) == 0
    assert api.set_memory_limit(0.5, 0) == 32 * MiB
    assert api.get_memory_limit("cuda:0") == 32 * MiB
    assert api.set_memory_limit(None, 0) is None and api.get_memory_limit(0) is None
    api.empty_cache(0)
    assert api.memory_reserved(0) == 0 and dev.live == {}
    with pytest.raises(ValueError, match="^memory_stats"):
        api.memory_stats("cpu")
    with pytest.raises(ValueError, match="^memory_stats"):
        api.memory_stats(3)


@pytest.mark.skipif(_backend.has_cuda(), reason="checks the error without a GPU")
def test_public_api_without_gpu():
    from gparray.cuda import _memory_api as api
    with pytest.raises(_backend.CUDAUnavailableError, match="^memory_stats"):
        api.memory_stats()
    with pytest.raises(_backend.CUDAUnavailableError, match="^empty_cache"):
        api.empty_cache()


class _Releases:
    def __init__(self):
        self.calls = []

    def _release(self, c, nbytes):
        self.calls.append((c, nbytes))


@pytest.mark.parametrize("impl", ["python", "compiled"])
def test_both_block_implementations_behave_alike(impl):
    if impl == "python":
        make = _pool._py_block
    else:
        from gparray._kernels import _launcher
        if _launcher._claunch is None:
            pytest.skip("C extension gparray._native._claunch not built")
        make = _launcher._claunch.Block
    p = _Releases()
    b = make(0x2000, 512, 100, 0, 7, "chunk", p)
    assert (b.ptr, b.size, b.nbytes, b.device_id, b.stream, b._chunk, b._pool) == (0x2000, 512, 100, 0, 7, "chunk", p)
    assert not b.freed and repr(b) == "<gparray Block ptr=0x2000 size=512 nbytes=100 device=0 stream=7 live>"
    assert not hasattr(b, "__dict__")
    b.free()
    b.free()
    assert b.freed and p.calls == [("chunk", 100)] and b._chunk is None
    assert repr(b).endswith("freed>")
    del b
    assert p.calls == [("chunk", 100)]          # freed once, not again when collected
    b = make(0x4000, 1024, 1000, 0, 0, "c2", p)
    try:
        raise KeyError("in flight")
    except KeyError:
        del b                                   # collected while an exception is being handled
        assert p.calls[-1] == ("c2", 1000)
    e = make(0, 0, 0, 1, 0, None, None)         # an empty block owns nothing
    assert not e.freed
    e.free()
    del e
    assert len(p.calls) == 2
