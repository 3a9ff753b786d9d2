"""Where :class:`CachingPool` meets the device: raw allocations and frees (pure Python).

``_DeviceMixin`` holds the methods of the pool that call ``raw_malloc``/``raw_free``:
growing by a new segment when no cached block fits (:meth:`_grow`, within the limit),
returning every entirely free cached segment to the device (:meth:`_release_cached`: on
:meth:`empty_cache`, when a lower limit is set, and on the out-of-memory path, where it also
runs ``gc.collect()`` before the one retry), and the ``GPARRAY_NO_CACHING`` debugging mode
(one raw allocation per block, freed at once; :class:`_NoReuseList`). It is a mixin: the
state (the lock, ``_segments``, ``_idle``, the counters, the injected callables) is
:class:`CachingPool`'s, set up in its ``__init__``. None of it runs on the fast path.
"""
from __future__ import annotations

import gc
import os
import sys

from . import _retire
from ._blocks import (_ALLOC, _DEAD, _FREE, LARGE_ROUND, SMALL_REQUEST, SMALL_SEGMENT, _Chunk,
                      _Segment)

ENV_NO_CACHING = "GPARRAY_NO_CACHING"


class _DeviceMixin:
    """Growing, releasing and the no-caching mode of :class:`CachingPool` (see the module
    docstring)."""

    def _grow(self, ar, size):
        """Get a new segment from the device for a request of ``size``; its chunk or None."""
        small = ar.small
        if small:
            wanted = SMALL_SEGMENT
        else:
            wanted = -(-size // LARGE_ROUND) * LARGE_ROUND
        for seg_size in ((wanted, size) if wanted != size else (size,)):
            if self._limit is not None and self._reserved + seg_size > self._limit:
                continue
            try:
                ptr = self._raw_malloc(seg_size)
            except MemoryError:
                continue
            return self._new_segment(ar, ptr, seg_size)
        return None

    def _new_segment(self, ar, ptr, seg_size):
        seg = _Segment(ptr, seg_size, ar.small, ar.stream, ar)
        c = _Chunk(ptr, seg_size, seg, None, None, _FREE, ar)
        seg.head = c
        self._segments[ptr] = seg
        self._n_malloc += 1
        self._reserved += seg_size
        if self._reserved > self._reserved_peak:
            self._reserved_peak = self._reserved
        if len(self._segments) > self._segment_peak:
            self._segment_peak = len(self._segments)
        return c

    def _release_cached(self, collect=False):
        """Return every entirely free segment to the device.

        Synchronizes first (if the backend can), which completes all pending events; with
        ``collect`` also runs ``gc.collect()`` so unreachable arrays give their blocks back.
        """
        if self._synchronize is not None:
            self._synchronize()
            self._poll_pending(force=True)
        else:
            self._poll_pending()
        if collect:
            gc.collect()
            self._drain_deferred()
        self._coalesce_all()
        doomed = []
        touched = {}
        for seg in self._segments.values():
            c = seg.head
            if c.next is None and c.state == _FREE:
                doomed.append(seg)
                if seg.arena is not None:
                    ar = seg.arena
                    if seg.dirty:
                        seg.dirty = False
                        ar.dirty.remove(seg)
                    touched.setdefault(id(ar), (ar, set()))[1].add(c.size)
                c.state = _DEAD
        for ar, sizes in touched.values():
            self._compact(ar, sizes)
        for kind in (True, False):
            self._idle[kind] = [s for s in self._idle[kind] if s.head.state != _DEAD]
        error = None
        for seg in doomed:
            del self._segments[seg.ptr]
            self._reserved -= seg.size
            seg.arena = None
            try:
                self._raw_free(seg.ptr)
            except Exception as exc:   # keep the pool consistent; report the first one
                error = error or exc
            self._n_free += 1
        if error is not None:
            raise error
        return len(doomed)

    def empty_cache(self) -> int:
        """Return every unused cached segment to the device; the number of segments freed."""
        self._lock.acquire()
        try:
            self._drain_deferred()
            return self._release_cached()
        finally:
            self._lock.release()

    # ------------------------------------------------------------------ no caching (debugging)
    def _malloc_uncached(self, nbytes, stream):
        """no_caching: one raw allocation of exactly ``nbytes`` (a segment of one chunk)."""
        small = nbytes <= SMALL_REQUEST
        for attempt in (0, 1):
            if self._limit is None or self._reserved + nbytes <= self._limit:
                try:
                    ptr = self._raw_malloc(nbytes)
                    break
                except MemoryError:
                    pass
            if attempt == 0:   # unreachable arrays give their blocks back, then once more
                self._n_retries += 1
                gc.collect()
                self._drain_deferred()
        else:
            self._n_ooms += 1
            raise self._oom_error(nbytes, nbytes, stream)
        c = self._new_segment(self._arena(stream, small), ptr, nbytes)
        c.state = _ALLOC
        return c

    def _free_uncached(self, c):
        """no_caching: give chunk ``c``'s own allocation back to the device at once. The
        device is synchronized first: a kernel queued before the free may still use it."""
        c.state = _DEAD
        seg = c.seg
        self._segments.pop(seg.ptr, None)
        self._reserved -= seg.size
        self._n_free += 1
        if seg.arena.retired is not None:
            _retire.segment_left(self, seg.arena)
        seg.arena = None
        if sys.is_finalizing():   # interpreter exit: CuPy is being torn down; the process's
            return                # end returns the memory
        if self._synchronize is not None:
            self._synchronize()
        self._raw_free(seg.ptr)


class _NoReuseList(list):
    """The deferred-free queue of a no-caching pool: not an exact list, so the compiled
    Block frees through ``_release`` at once and the compiled fast path never takes a
    freed chunk back (both look for an exact list)."""


def no_caching_from_env() -> bool:
    """True when ``GPARRAY_NO_CACHING`` is set to anything but "", "0", "false", "no", "off"."""
    return os.environ.get(ENV_NO_CACHING, "").strip().lower() not in ("", "0", "false", "no", "off")
