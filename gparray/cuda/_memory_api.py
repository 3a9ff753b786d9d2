"""Public memory API (re-exported by ``gparray.cuda``): statistics, cache, limit, snapshot.

Every function takes ``device=None`` (the current device), a gparray Device, "cuda:N" or an
int ordinal. Terms used below:

* *allocated* bytes: bytes in blocks handed out to arrays (and to CuPy) and not yet freed,
  counted at their rounded size (a multiple of 512 bytes).
* *reserved* bytes: bytes held from the device in segments by the pool: allocated blocks,
  cached free blocks and pending blocks.
* *active* bytes: allocated bytes plus freed bytes that cannot be reused yet because an
  event on the stream that freed them has not completed.
"""
from __future__ import annotations

from .._core import _backend
from .. import _memory
from .._core._device import normalize_device
from .._memory import OutOfMemoryError, _host

__all__ = [
    "OutOfMemoryError", "memory_stats", "memory_allocated", "memory_reserved",
    "max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats", "empty_cache",
    "memory_snapshot", "set_memory_limit", "get_memory_limit",
]


def _pool(device, name):
    _backend.require_device(name)
    return _memory.get_pool(normalize_device(device, name).id)


def memory_stats(device=None) -> dict:
    """Statistics of the device's memory pool, as a flat dict.

    Keys ending in ``.current`` are values now, ``.peak`` the highest since the pool was
    created or :func:`reset_peak_memory_stats`:

    * ``allocated_bytes``: bytes in live blocks (rounded sizes);
    * ``reserved_bytes``: bytes held from the device in segments;
    * ``active_bytes``: allocated bytes plus freed bytes still waiting for a stream event;
    * ``requested_bytes``: bytes asked for by live blocks, before rounding;
    * ``allocation``: live blocks; ``segment``: segments held from the device;
    * ``inactive_split`` / ``inactive_split_bytes``: free blocks (bytes) inside segments
      split into several blocks;
    * ``free_cached_bytes``: free cached bytes reusable now; ``pending_bytes``: freed bytes
      waiting for an event; ``largest_free_block``: largest free cached block;
    * ``fragmentation``: ``1 - largest_free_block / free_cached_bytes`` (0.0 when nothing
      is cached);
    * ``num_device_malloc`` / ``num_device_free``: raw cudaMalloc / cudaFree calls;
      ``num_ooms``: OutOfMemoryErrors raised; ``num_alloc_retries``: times the cache was
      flushed to retry an allocation; ``num_stream_moves``: cached segments handed to
      another stream; ``num_streams_retired``: destroyed gparray streams whose memory the
      pool re-owned (so a new stream with the same handle cannot reuse it too early);
    * ``limit_bytes``: the memory limit (0 = none); ``total_bytes``: device memory.
    """
    return _pool(device, "memory_stats").stats()


def memory_allocated(device=None) -> int:
    """Bytes currently allocated to arrays on the device (rounded block sizes)."""
    return _pool(device, "memory_allocated").allocated_bytes


def memory_reserved(device=None) -> int:
    """Bytes currently held from the device by the pool (allocated + cached)."""
    return _pool(device, "memory_reserved").reserved_bytes


def max_memory_allocated(device=None) -> int:
    """Peak allocated bytes since the pool's creation or :func:`reset_peak_memory_stats`."""
    return _pool(device, "max_memory_allocated").stats()["allocated_bytes.peak"]


def max_memory_reserved(device=None) -> int:
    """Peak reserved bytes since the pool's creation or :func:`reset_peak_memory_stats`."""
    return _pool(device, "max_memory_reserved").stats()["reserved_bytes.peak"]


def reset_peak_memory_stats(device=None) -> None:
    """Set every peak statistic of the device's pool to its current value."""
    _pool(device, "reset_peak_memory_stats").reset_peaks()


def empty_cache(device=None) -> None:
    """Return every unused cached segment of the device's pool to the device, and the
    pinned host buffers that large host transfers are staged through (24 MiB, shared by
    every device; allocated again at the next such transfer; kept when a transfer in
    another thread is using them) to the system.

    Synchronizes the device first. Memory still referenced by arrays stays; once every
    array is gone, ``memory_reserved()`` is 0 after this call.
    """
    _pool(device, "empty_cache").empty_cache()
    _host.release_staging(timeout=0)   # kept while another thread's transfer uses them


def memory_snapshot(device=None) -> list:
    """The pool's segments, sorted by address: a list of dicts.

    Each segment: ``address``, ``size``, ``stream`` (its owner stream handle; None for a
    free segment usable by any stream), ``segment_type`` ("small" for the shared 2 MiB
    segments, "large"), ``device`` and ``blocks``, a list of dicts with ``address``, ``size``,
    ``state`` ("allocated", "free" or "pending": freed, waiting for a stream event) and
    ``stream``.
    """
    return _pool(device, "memory_snapshot").snapshot()


def set_memory_limit(limit, device=None):
    """Limit the bytes the device's pool may reserve.

    ``limit``: an int number of bytes, a float in (0, 1] (fraction of the device's total
    memory), a string like "8GB", "512MiB" or "80%", or None/0 for no limit. Cached unused
    segments are released if needed; ValueError if the memory in use already exceeds the
    new limit. Returns the limit in bytes (None = no limit). The initial limit comes from
    the environment variable ``GPARRAY_MEMORY_LIMIT``.
    """
    return _pool(device, "set_memory_limit").set_limit(limit)


def get_memory_limit(device=None):
    """The device pool's memory limit in bytes, or None when there is none."""
    return _pool(device, "get_memory_limit").limit
