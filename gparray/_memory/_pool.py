"""The caching device-memory pool, in pure Python (no CuPy import).

:class:`CachingPool` hands out :class:`Block` objects carved from *segments* that it gets from
an injected raw allocator (``raw_malloc(nbytes) -> address`` / ``raw_free(address)``), so the
CPU test tier can drive it over a fake address space. The CuPy glue lives in
``_cupy_backend.py``.

Modules
-------
This module has :class:`CachingPool` with its hot path (``malloc``, ``_release``,
``_free_locked``, ``_drain_deferred``) and the carving of free blocks (best fit, split,
coalescing). Its bases hold the rest, as methods of the same object: ``_pool_device.py``
(growing, giving cached segments back to the device, the out-of-memory retry, the
no-caching mode), ``_pool_streams.py`` (segments moving between streams, ``retire_stream``;
``_retire.py`` has the retirement itself) and ``_pool_stats.py`` (statistics, snapshots, the
out-of-memory error and its message). ``_blocks.py`` has :class:`Block` and the internal
nodes, ``_limits.py`` the limit parsing and :class:`OutOfMemoryError`; this module re-exports
the names other modules import from it. The C extension uses the pool's ``malloc``,
``_release`` and ``_deferred`` (a list of ``(chunk, nbytes)``, exact unless no-caching) by
name.

Layout
------
* Request sizes are rounded up to 512 bytes.
* *Small* requests (<= 1 MiB) are carved from shared 2 MiB segments; *large* requests from
  segments of their own (rounded up to 2 MiB), best-fit from cached free blocks of large
  segments, with split. The two kinds never share a segment, so small blocks cannot
  fragment the large segments.
* Every segment belongs to one stream (an int handle, 0 = legacy default stream); its free
  blocks are reused directly by allocations on that stream. A segment that is entirely free
  can move to another stream only after an event recorded on its stream has completed: it
  is then *pending* (its bytes count as active) until ``event_done(event)`` says so, then
  *idle* (usable by any stream, claimed by the first allocation that fits).
* A stream handle names a stream only while it lives: CUDA may give a destroyed stream's
  handle to a new stream. :meth:`CachingPool.retire_stream` (called while the stream is
  still alive, with an event just recorded on it) re-owns every segment of that handle so
  the new stream cannot take blocks whose last use may still be running: entirely free
  segments become pending with that event; segments with live blocks go to a *retired*
  owner (a negative int no allocation asks for) and become pending with the same event
  once their last block is freed. Nothing is ever recorded on a retired handle again.
  ``_retire.py`` has the code.

The fast path
-------------
Each (stream, kind) *arena* keeps free blocks in exact-size bins (``dict size -> list``) plus a
sorted list of the bin sizes for best-fit (``bisect``). An allocation that finds a block in
the bin of its exact size pops it; freeing pushes the block back onto its bin. Nothing else
happens on that path: coalescing is *deferred*. A free only marks its segment "dirty";
adjacent free blocks of dirty segments are merged when an allocation finds no cached block
big enough (before asking the device for memory), by :meth:`CachingPool.empty_cache`, and
before statistics or snapshots are taken, so every observable view shows merged segments.

Thread safety
-------------
A ``threading.Lock`` guards every mutation. Frees never block: a free that finds the lock
taken (another thread, or a ``__del__`` run by the garbage collector while the pool itself
is working) is queued and applied by the next pool operation (or at the end of the current
one), so finalizers can never deadlock the pool. A retirement that finds the lock taken is
queued the same way; it keeps the stream object it was given alive until it is applied, so
no new stream can get the handle before the pool has re-owned its segments.
"""
from __future__ import annotations

import bisect
import threading

from . import _retire
from ._blocks import (_ALLOC, _DEAD, _FREE, SMALL_REQUEST, Block, _Arena, _Chunk, _make_block,
                      _Retirement)
from ._limits import _fmt_bytes, resolve_limit
from ._pool_device import _DeviceMixin, _NoReuseList
from ._pool_stats import _StatsMixin
from ._pool_streams import _StreamsMixin

# re-exported: gparray._memory, _cupy_backend and the tests import these from _pool
from ._blocks import (_PENDING, LARGE_ROUND, ROUND, SMALL_SEGMENT, PyBlock,  # noqa: F401
                      _empty_block, _py_block)
from ._limits import ENV_LIMIT, OutOfMemoryError, parse_memory_limit  # noqa: F401
from ._pool_device import ENV_NO_CACHING, no_caching_from_env  # noqa: F401

__all__ = [
    "Block", "CachingPool", "OutOfMemoryError", "parse_memory_limit", "resolve_limit",
    "ROUND", "SMALL_REQUEST", "SMALL_SEGMENT", "LARGE_ROUND", "ENV_LIMIT", "ENV_NO_CACHING",
    "no_caching_from_env",
]


# --------------------------------------------------------------------------- the pool

class CachingPool(_DeviceMixin, _StreamsMixin, _StatsMixin):
    """A caching allocator over ``raw_malloc``/``raw_free`` for one device.

    Parameters
    ----------
    raw_malloc : callable(nbytes) -> int
        Gets a segment from the device; must raise MemoryError when the device is out of
        memory (other exceptions propagate unchanged).
    raw_free : callable(ptr)
        Returns a segment to the device.
    device_id : int
        Recorded on the blocks and in messages.
    total_memory : int, optional
        The device's memory size (needed for fractional limits).
    limit : int, float, str or None
        Initial limit, as for :meth:`set_limit`.
    record_event : callable(stream) -> event, optional
        Records an event on ``stream``. Default: streams are treated as synchronous
        (``None`` events, always complete).
    event_done : callable(event) -> bool, optional
        True once the work before the event has finished.
    synchronize : callable(), optional
        Waits for all work on the device; after it returns every recorded event counts as
        complete. Called before cached segments are returned to the device.
    no_caching : bool
        Debugging mode (``GPARRAY_NO_CACHING=1``): every block is its own raw allocation of
        exactly the requested bytes, returned to the device as soon as it is freed (after
        ``synchronize``, so no kernel still uses it), and no free is ever handed out again
        by the compiled fast path. A memory checker (``compute-sanitizer``) then sees every
        access outside an array, which a cache hides when it stays inside a segment.
    """

    def __init__(self, raw_malloc, raw_free, *, device_id=0, total_memory=None, limit=None,
                 record_event=None, event_done=None, synchronize=None, no_caching=False):
        self._raw_malloc = raw_malloc
        self._raw_free = raw_free
        self.device_id = device_id
        self.total_memory = total_memory
        self._record_event = record_event if record_event is not None else _no_event
        self._event_done = event_done if event_done is not None else _always_done
        self._synchronize = synchronize
        self._lock = threading.Lock()
        # (chunk, nbytes) frees not yet applied: those that found the lock taken, and every
        # collected compiled Block (applied at the next malloc or statistics read; the
        # compiled elementwise path hands the last one out again when it is the same request
        # on the same stream, which leaves every counter as it was)
        self._deferred = _NoReuseList() if no_caching else []
        self.no_caching = bool(no_caching)
        self._arenas = {}            # (stream, small) -> _Arena
        self._segments = {}          # ptr -> _Segment, every live raw allocation
        self._idle = {True: [], False: []}   # whole free segments usable by any stream
        self._pending = []           # [event, [segments]] waiting for their event
        self._limit = None
        # counters (bytes unless said otherwise)
        self._allocated = 0
        self._allocated_peak = 0
        self._reserved = 0
        self._reserved_peak = 0
        self._pending_bytes = 0
        self._active_peak = 0
        self._requested = 0
        self._requested_peak = 0
        self._nblocks = 0
        self._segment_peak = 0
        self._n_malloc = 0
        self._n_free = 0
        self._n_ooms = 0
        self._n_retries = 0
        self._n_stream_moves = 0
        self._n_retired = 0
        self._next_owner = -1        # the owner of the next retired stream's segments
        self._limit = resolve_limit(limit, total_memory, "CachingPool")

    # ------------------------------------------------------------------ fast path
    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """Allocate ``nbytes`` for use on ``stream``; raises OutOfMemoryError when impossible."""
        size = (nbytes + 511) & -512
        if size <= 0:
            if nbytes < 0:
                raise ValueError(f"alloc: nbytes must be >= 0, got {nbytes}")
            return _empty_block(nbytes, self.device_id, stream)
        lock = self._lock
        lock.acquire()
        try:
            if self._deferred:
                self._drain_deferred()
            ar = self._arenas.get((stream, size <= 1048576))
            lst = ar.bins.get(size) if ar is not None else None
            if lst:
                c = lst.pop()
                c.state = 1
            elif self.no_caching:
                c = self._malloc_uncached(nbytes, stream)
                size = c.size
            else:
                c = self._malloc_slow(size, nbytes, stream)
            a = self._allocated + size
            self._allocated = a
            if a > self._allocated_peak:
                self._allocated_peak = a
            a += self._pending_bytes
            if a > self._active_peak:
                self._active_peak = a
            r = self._requested + nbytes
            self._requested = r
            if r > self._requested_peak:
                self._requested_peak = r
            self._nblocks += 1
            b = _make_block(c.ptr, size, nbytes, self.device_id, stream, c, self)
            if self._deferred:
                self._drain_deferred()
            return b
        finally:
            lock.release()

    def _release(self, c, nbytes):
        """Block.free(): put the chunk back on its bin (queued if the lock is taken)."""
        lock = self._lock
        if not lock.acquire(False):
            self._deferred.append((c, nbytes))
            return
        try:
            self._free_locked(c, nbytes)
            if self._deferred:
                self._drain_deferred()
        finally:
            lock.release()

    def _free_locked(self, c, nbytes):
        size = c.size
        self._allocated -= size
        self._requested -= nbytes
        self._nblocks -= 1
        if self.no_caching:
            self._free_uncached(c)
            return
        c.state = 0
        ar = c.arena
        lst = ar.bins.get(size)
        if lst is None:
            ar.bins[size] = [c]
            bisect.insort(ar.sizes, size)
        else:
            lst.append(c)
        seg = c.seg
        if not seg.dirty:
            seg.dirty = True
            ar.dirty.append(seg)
        if ar.retired is not None:      # the last free of a retired segment makes it pending
            _retire.settle(self, ar, seg)

    def _drain_deferred(self):
        d = self._deferred
        while d:
            try:
                item = d.pop()
            except IndexError:  # the compiled fast path took the last one meanwhile
                break
            if item.__class__ is _Retirement:
                _retire.retire_locked(self, item.stream, item.event)
                continue
            c, nbytes = item
            self._free_locked(c, nbytes)

    # ------------------------------------------------------------------ slow path
    def _malloc_slow(self, size, nbytes, stream):
        """No block of the exact size is cached for ``stream``: best fit, reuse, or grow."""
        small = size <= SMALL_REQUEST
        ar = self._arena(stream, small)
        c = self._find_cached(ar, size)
        if c is None:
            c = self._grow(ar, size)
        if c is None:
            self._n_retries += 1
            self._release_cached(collect=True)
            ar = self._arena(stream, small)    # a retirement the collection ran may replace it
            c = self._find_cached(ar, size)
            if c is None:
                c = self._grow(ar, size)
            if c is None:
                self._n_ooms += 1
                raise self._oom_error(size, nbytes, stream)
        self._split(c, size)
        c.state = _ALLOC
        return c

    def _arena(self, stream, small):
        """The arena of (``stream``, kind), created on first use."""
        ar = self._arenas.get((stream, small))
        if ar is None:
            ar = self._arenas[(stream, small)] = _Arena(stream, small)
        return ar

    def _find_cached(self, ar, size):
        """A free chunk of ``ar`` (taken off its bin) of at least ``size``, or None."""
        c = self._best_fit(ar, size)
        if c is None and ar.dirty:
            self._coalesce(ar)
            c = self._best_fit(ar, size)
        if c is None:
            c = self._take_idle(ar, size)
        if c is None and self._reclaim(ar, size):
            c = self._take_idle(ar, size)
        return c

    @staticmethod
    def _best_fit(ar, size):
        """Pop the smallest cached free chunk of ``ar`` with at least ``size`` bytes."""
        sizes, bins = ar.sizes, ar.bins
        i = bisect.bisect_left(sizes, size)
        while i < len(sizes):
            s = sizes[i]
            lst = bins[s]
            if lst:
                return lst.pop()
            del bins[s]
            del sizes[i]
        return None

    def _push(self, ar, c):
        """Put free chunk ``c`` on its bin in ``ar``."""
        lst = ar.bins.get(c.size)
        if lst is None:
            ar.bins[c.size] = [c]
            bisect.insort(ar.sizes, c.size)
        else:
            lst.append(c)

    def _split(self, c, size):
        """Cut ``c`` down to ``size``; the rest becomes a free chunk on its bin."""
        rest = c.size - size
        if rest <= 0:
            return
        seg = c.seg
        r = _Chunk(c.ptr + size, rest, seg, c, c.next, _FREE, c.arena)
        if c.next is not None:
            c.next.prev = r
            if c.next.state == _FREE:
                self._mark_dirty(seg)
        c.next = r
        c.size = size
        self._push(c.arena, r)

    @staticmethod
    def _mark_dirty(seg):
        if not seg.dirty and seg.arena is not None:
            seg.dirty = True
            seg.arena.dirty.append(seg)

    def _coalesce(self, ar):
        """Merge adjacent free chunks in the dirty segments of ``ar``."""
        touched = set()
        for seg in ar.dirty:
            seg.dirty = False
            c = seg.head
            while c is not None:
                n = c.next
                if c.state != _FREE or n is None or n.state != _FREE:
                    c = n
                    continue
                total = 0
                first = c
                while c is not None and c.state == _FREE:
                    total += c.size
                    touched.add(c.size)
                    c.state = _DEAD
                    c = c.next
                m = _Chunk(first.ptr, total, seg, first.prev, c, _FREE, ar)
                if first.prev is None:
                    seg.head = m
                else:
                    first.prev.next = m
                if c is not None:
                    c.prev = m
                self._push(ar, m)
        ar.dirty = []
        self._compact(ar, touched)

    @staticmethod
    def _compact(ar, sizes):
        """Drop dead chunks from the given bins of ``ar``."""
        bins = ar.bins
        for s in sizes:
            lst = bins.get(s)
            if lst:
                lst[:] = [x for x in lst if x.state == _FREE]

    def _coalesce_all(self):
        for ar in list(self._arenas.values()):
            if ar.dirty:
                self._coalesce(ar)

    # ------------------------------------------------------------------ limit
    @property
    def limit(self) -> int | None:
        """The memory limit in bytes (None: no limit)."""
        return self._limit

    def set_limit(self, limit) -> int | None:
        """Set the limit on reserved bytes: int bytes, float fraction of the device, None/0.

        If more than ``limit`` bytes are reserved, unused cached segments are returned to
        the device first; if the memory in use still exceeds the limit, ValueError is raised
        and the old limit stays. Returns the new limit in bytes (None = no limit).
        """
        new = resolve_limit(limit, self.total_memory, "set_memory_limit")
        self._lock.acquire()
        try:
            self._drain_deferred()
            if new is not None and self._reserved > new:
                self._release_cached()
                if self._reserved > new:
                    raise ValueError(
                        f"set_memory_limit: {_fmt_bytes(self._reserved)} of cuda:"
                        f"{self.device_id} are still in use, more than the requested limit "
                        f"{_fmt_bytes(new)}; free arrays first")
            self._limit = new
            return new
        finally:
            self._lock.release()

    def __repr__(self):
        return (f"<gparray CachingPool cuda:{self.device_id} allocated={self._allocated} "
                f"reserved={self._reserved} segments={len(self._segments)}>")


def _no_event(stream):
    return None


def _always_done(event):
    return True
