"""Statistics, snapshots and the out-of-memory message of :class:`CachingPool` (pure Python).

``_StatsMixin`` holds the methods of the pool that only read its counters and segments:
:meth:`stats`, :meth:`reset_peaks`, :meth:`snapshot`, the ``allocated_bytes`` and
``reserved_bytes`` properties, and the :class:`OutOfMemoryError` the allocation paths raise
(its message carries the statistics). It is a mixin: the state (the lock, the counters,
``_segments``, ``_deferred``) is :class:`CachingPool`'s, set up in its ``__init__``. Every
view first applies the deferred frees, polls the pending events and merges the free blocks
of dirty segments, so it shows merged segments.
"""
from __future__ import annotations

from ._blocks import _FREE, _STATE_NAMES
from ._limits import ENV_LIMIT, OutOfMemoryError, _fmt_bytes


class _StatsMixin:
    """The reading side of :class:`CachingPool` (see the module docstring)."""

    def stats(self) -> dict:
        """Pool statistics (bytes unless said otherwise).

        * ``allocated_bytes``: bytes in blocks handed out and not yet freed (rounded sizes).
        * ``reserved_bytes``: bytes held from the device in segments (allocated + cached free
          + pending).
        * ``active_bytes``: allocated bytes plus freed bytes that cannot be reused yet because
          their stream event is pending.
        * ``requested_bytes``: bytes asked for by the live blocks (before rounding).
        * ``allocation``: number of live blocks; ``segment``: number of segments.
        * ``inactive_split``: free blocks inside segments that are split into several blocks;
          ``inactive_split_bytes`` their bytes.
        * ``free_cached_bytes``: bytes in free blocks, reusable now; ``pending_bytes``: bytes
          waiting for an event; ``largest_free_block``: the biggest free block.
        * ``fragmentation``: 1 - largest_free_block / free_cached_bytes (0.0 when nothing is
          cached).
        * ``num_device_malloc``/``num_device_free``: raw allocations/frees; ``num_ooms``:
          OutOfMemoryErrors raised; ``num_alloc_retries``: times the cache was flushed to
          retry an allocation; ``num_stream_moves``: segments moved to another stream;
          ``num_streams_retired``: stream handles retired (:meth:`retire_stream`) that owned
          segments.
        * ``limit_bytes``: the limit (0 = none); ``total_bytes``: device memory (0 = unknown).

        ``.current`` is the value now, ``.peak`` the highest since creation or the last
        :meth:`reset_peaks`.
        """
        self._lock.acquire()
        try:
            self._drain_deferred()
            return self._stats_locked()
        finally:
            self._lock.release()

    def _stats_locked(self) -> dict:
        self._poll_pending()
        self._coalesce_all()
        free_bytes = largest = split_n = split_bytes = 0
        for seg in self._segments.values():
            c = seg.head
            split = c.next is not None
            while c is not None:
                if c.state == _FREE:
                    free_bytes += c.size
                    if c.size > largest:
                        largest = c.size
                    if split:
                        split_n += 1
                        split_bytes += c.size
                c = c.next
        frag = 1.0 - largest / free_bytes if free_bytes else 0.0
        active = self._allocated + self._pending_bytes
        return {
            "allocated_bytes.current": self._allocated,
            "allocated_bytes.peak": self._allocated_peak,
            "reserved_bytes.current": self._reserved,
            "reserved_bytes.peak": self._reserved_peak,
            "active_bytes.current": active,
            "active_bytes.peak": self._active_peak,
            "requested_bytes.current": self._requested,
            "requested_bytes.peak": self._requested_peak,
            "allocation.current": self._nblocks,
            "segment.current": len(self._segments),
            "segment.peak": self._segment_peak,
            "inactive_split.current": split_n,
            "inactive_split_bytes.current": split_bytes,
            "free_cached_bytes.current": free_bytes,
            "pending_bytes.current": self._pending_bytes,
            "largest_free_block": largest,
            "fragmentation": frag,
            "num_device_malloc": self._n_malloc,
            "num_device_free": self._n_free,
            "num_ooms": self._n_ooms,
            "num_alloc_retries": self._n_retries,
            "num_stream_moves": self._n_stream_moves,
            "num_streams_retired": self._n_retired,
            "limit_bytes": self._limit or 0,
            "total_bytes": self.total_memory or 0,
        }

    def reset_peaks(self) -> None:
        """Set every ``.peak`` statistic to its current value."""
        self._lock.acquire()
        try:
            self._drain_deferred()
            self._allocated_peak = self._allocated
            self._reserved_peak = self._reserved
            self._active_peak = self._allocated + self._pending_bytes
            self._requested_peak = self._requested
            self._segment_peak = len(self._segments)
        finally:
            self._lock.release()

    @property
    def allocated_bytes(self) -> int:
        """Bytes in live blocks (rounded sizes)."""
        if self._deferred:
            self._flush_deferred()
        return self._allocated

    @property
    def reserved_bytes(self) -> int:
        """Bytes held from the device."""
        if self._deferred:
            self._flush_deferred()
        return self._reserved

    def _flush_deferred(self):
        self._lock.acquire()
        try:
            self._drain_deferred()
        finally:
            self._lock.release()

    def snapshot(self) -> list:
        """Segments sorted by address, each a dict.

        Segment keys: ``address``, ``size``, ``stream`` (owner stream; None while idle, i.e.
        free and usable by any stream; a negative int for a retired stream's segment that
        still has live blocks), ``segment_type`` ("small"/"large"), ``device`` and
        ``blocks``: a list of dicts with ``address``, ``size``, ``state`` ("allocated",
        "free" or "pending") and ``stream``.
        """
        self._lock.acquire()
        try:
            self._drain_deferred()
            self._poll_pending()
            self._coalesce_all()
            out = []
            for ptr in sorted(self._segments):
                seg = self._segments[ptr]
                blocks = []
                c = seg.head
                while c is not None:
                    blocks.append({"address": c.ptr, "size": c.size,
                                   "state": _STATE_NAMES[c.state], "stream": seg.stream})
                    c = c.next
                out.append({"address": seg.ptr, "size": seg.size, "stream": seg.stream,
                            "segment_type": "small" if seg.small else "large",
                            "device": self.device_id, "blocks": blocks})
            return out
        finally:
            self._lock.release()

    def _oom_error(self, size, nbytes, stream) -> OutOfMemoryError:
        stats = self._stats_locked()
        limit = f"limit {_fmt_bytes(self._limit)}" if self._limit else "no limit"
        total = _fmt_bytes(self.total_memory) if self.total_memory else "unknown"
        msg = (f"gparray: out of memory: alloc could not allocate {_fmt_bytes(nbytes)} "
               f"(rounded to {size}) on cuda:{self.device_id} (stream {stream}); {limit}, "
               f"device total {total}, "
               f"reserved {_fmt_bytes(stats['reserved_bytes.current'])}, allocated "
               f"{_fmt_bytes(stats['allocated_bytes.current'])}, free cached "
               f"{_fmt_bytes(stats['free_cached_bytes.current'])}, pending "
               f"{_fmt_bytes(stats['pending_bytes.current'])}. Free arrays you no longer "
               "need, or raise the limit (gparray.cuda.set_memory_limit, "
               f"{ENV_LIMIT}). Pool statistics: {stats}")
        return OutOfMemoryError(msg, nbytes, stats)
