"""Stream retirement for :class:`~gparray._memory._pool.CachingPool` (pure Python).

The pool keys segments by raw stream handle, and CUDA may hand a destroyed stream's handle
to a new stream. Blocks freed on the old stream may still be in use by its last kernels, so
the new stream must not take them through the same-stream fast path. Before the stream is
destroyed its owner calls ``CachingPool.retire_stream(stream, event)`` with an event just
recorded on it; the functions here then run under the pool's lock:

* :func:`retire_locked` takes both arenas of the handle out of the pool. Entirely free
  segments become pending with the event (then idle, as any pending segment). Segments
  with live blocks move to the arenas of a fresh *retired owner*, a negative int that no
  allocation asks for (so neither the pool nor the compiled fast path, which compares the
  arena's stream with the request's, hands their blocks out again).
* :func:`settle`: when the last live block of a retired segment is freed, the segment
  becomes pending with the same event (already recorded: nothing is recorded on the dead
  handle, and the device is not synchronized).
* :func:`segment_left`: a retired owner's arena is dropped once it holds no segment.
"""
from __future__ import annotations

from ._blocks import _FREE, _PENDING, _Arena

__all__ = ["Retired", "retire_locked", "settle", "segment_left"]


class Retired:
    """What a retired owner's arena remembers: the retirement event and how many of its
    segments still have live blocks."""

    __slots__ = ("event", "nseg")

    def __init__(self, event):
        self.event = event
        self.nseg = 0


def _make_pending(pool, seg, event):
    """Whole free segment ``seg`` (out of any arena) waits for ``event``."""
    seg.head.state = _PENDING
    pool._pending_bytes += seg.size
    active = pool._allocated + pool._pending_bytes
    if active > pool._active_peak:
        pool._active_peak = active
    pool._pending.append([event, [seg]])


def retire_locked(pool, stream, event) -> bool:
    """Re-own every segment of ``stream`` (see the module docstring); the pool's lock is
    held. False (nothing done) when the pool has no arena for ``stream``."""
    arenas = [ar for ar in (pool._arenas.pop((stream, True), None),
                            pool._arenas.pop((stream, False), None)) if ar is not None]
    if not arenas:
        return False
    pool._n_retired += 1
    owner = pool._next_owner
    pool._next_owner -= 1
    for ar in arenas:
        if ar.dirty:
            pool._coalesce(ar)   # a free segment is one chunk now (clean ones already were)
        ar.bins, ar.sizes, ar.dirty = {}, [], []   # a stale reference finds nothing in it
    retired = {}
    for seg in list(pool._segments.values()):
        ar = seg.arena
        if ar is None or not any(ar is a for a in arenas):
            continue
        c = seg.head
        seg.dirty = False
        if c.next is None and c.state == _FREE:
            seg.arena = None
            c.arena = None
            _make_pending(pool, seg, event)
            continue
        rar = retired.get(seg.small)
        if rar is None:
            rar = retired[seg.small] = _Arena(owner, seg.small)
            rar.retired = Retired(event)
            pool._arenas[(owner, seg.small)] = rar
        rar.retired.nseg += 1
        seg.arena = rar
        seg.stream = owner
        while c is not None:
            c.arena = rar
            if c.state == _FREE:
                pool._push(rar, c)
            c = c.next
    return True


def settle(pool, ar, seg) -> None:
    """A block of retired arena ``ar`` in ``seg`` was just freed: when none of ``seg`` is
    live any more, merge it and make it pending with the retirement event."""
    c = seg.head
    while c is not None:
        if c.state != _FREE:
            return
        c = c.next
    pool._coalesce(ar)        # seg was marked dirty by the free: it is one chunk now
    pool._detach(seg)
    _make_pending(pool, seg, ar.retired.event)
    segment_left(pool, ar)


def segment_left(pool, ar) -> None:
    """One segment left retired arena ``ar``; drop the arena when it was the last."""
    rec = ar.retired
    rec.nseg -= 1
    if rec.nseg <= 0:
        pool._arenas.pop((ar.stream, ar.small), None)
