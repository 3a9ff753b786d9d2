"""Stream handling of :class:`CachingPool`: segments moving between streams (pure Python).

Every segment belongs to one stream. ``_StreamsMixin`` holds the methods of the pool that
move whole free segments between streams: a segment another stream needs is made *pending*
with an event recorded on its own stream (:meth:`_reclaim`), becomes *idle* once that event
has completed (:meth:`_poll_pending`) and is claimed by the first allocation that fits
(:meth:`_take_idle`); and the entry point of stream retirement (:meth:`retire_stream`; the
rest is in ``_retire.py``). It is a mixin: the state (the lock, ``_arenas``, ``_pending``,
``_idle``, the counters, ``record_event``/``event_done``) is :class:`CachingPool`'s, set up
in its ``__init__``. None of it runs on the fast path.
"""
from __future__ import annotations

from . import _retire
from ._blocks import _FREE, _PENDING, _Retirement


class _StreamsMixin:
    """Stream moves and retirement of :class:`CachingPool` (see the module docstring)."""

    def _poll_pending(self, force=False):
        """Move pending segments whose event completed (all of them if ``force``) to idle."""
        if not self._pending:
            return
        keep = []
        for entry in self._pending:
            ev, segs = entry
            if force or self._event_done(ev):
                for seg in segs:
                    seg.head.state = _FREE
                    seg.stream = None
                    self._pending_bytes -= seg.size
                    self._idle[seg.small].append(seg)
            else:
                keep.append(entry)
        self._pending = keep

    def _take_idle(self, ar, size):
        """Claim the best-fitting idle segment for ``ar``; its (only) chunk, or None."""
        self._poll_pending()
        idle = self._idle[ar.small]
        best = None
        for i, seg in enumerate(idle):
            if seg.size >= size and (best is None or seg.size < idle[best].size):
                best = i
                if seg.size == size:
                    break
        if best is None:
            return None
        seg = idle.pop(best)
        self._n_stream_moves += 1
        seg.stream = ar.stream
        seg.arena = ar
        seg.head.arena = ar
        return seg.head

    def _reclaim(self, ar, size):
        """Start moving one whole free segment of another stream towards ``ar``.

        Picks the smallest fully free segment of the same kind owned by another stream
        that can hold ``size``, records an event on that stream and makes the segment
        pending. Returns True if one was found (it may already be usable: the caller
        polls). Does nothing while a pending segment that would fit is still waiting.
        """
        small = ar.small
        for _, segs in self._pending:
            for seg in segs:
                if seg.small == small and seg.size >= size:
                    return False
        best = None
        for other in self._arenas.values():
            if (other is ar or other.small != small or other.stream == ar.stream
                    or other.retired is not None):   # never record on a retired handle
                continue
            if other.dirty:
                self._coalesce(other)
            for lst in other.bins.values():
                for c in lst:
                    if c.prev is None and c.next is None and c.size >= size:
                        if best is None or c.size < best.size:
                            best = c
        if best is None:
            return False
        seg = best.seg
        self._detach(seg)
        best.state = _PENDING
        self._pending_bytes += seg.size
        active = self._allocated + self._pending_bytes
        if active > self._active_peak:
            self._active_peak = active
        self._pending.append([self._record_event(seg.stream), [seg]])
        return True

    def _detach(self, seg):
        """Take whole free segment ``seg`` out of its arena (bins and dirty list)."""
        ar = seg.arena
        c = seg.head
        lst = ar.bins.get(c.size)
        if lst is not None:
            for i in range(len(lst) - 1, -1, -1):
                if lst[i] is c:
                    del lst[i]
                    break
        if seg.dirty:
            seg.dirty = False
            ar.dirty.remove(seg)
        seg.arena = None
        c.arena = None

    def has_stream(self, stream) -> bool:
        """True when some segment may belong to raw stream ``stream`` (it has an arena)."""
        arenas = self._arenas
        return (stream, True) in arenas or (stream, False) in arenas

    def retire_stream(self, stream, event, keep=None) -> None:
        """Retire raw stream handle ``stream``, which is about to be destroyed.

        Call it while the stream is still alive, with ``event`` just recorded on it (None:
        already complete). Every segment owned by ``stream`` is re-owned, so that a later
        stream given the same handle value cannot take its blocks before ``event`` has
        completed: entirely free segments become pending with ``event``; segments with live
        blocks move to a retired owner no allocation uses, and become pending with ``event``
        when their last block is freed. No event is recorded on ``stream`` afterwards. An
        unknown handle is a no-op. When the lock is taken (another thread, or a finalizer
        run by the garbage collector inside a pool operation) the retirement is queued and
        applied by the next pool operation; ``keep`` (the stream object) is held until then,
        so the handle cannot be reused meanwhile.
        """
        lock = self._lock
        if not lock.acquire(False):
            self._deferred.append(_Retirement(stream, event, keep))
            return
        try:
            if self._deferred:
                self._drain_deferred()
            _retire.retire_locked(self, stream, event)
            if self._deferred:
                self._drain_deferred()
        finally:
            lock.release()
