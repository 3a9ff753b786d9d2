"""gparray's device memory: one caching pool per device, also used as CuPy's allocator.

The interface the rest of gparray uses:

* :func:`alloc` ``(nbytes, device_id, stream=None) -> Block`` — ``stream=None`` is CuPy's
  current stream for that device; ``alloc(0, ...)`` returns an empty Block (``ptr == 0``)
  without touching the device.
* :class:`Block` — ``ptr``, ``size`` (rounded), ``nbytes`` (requested), ``device_id``,
  ``stream``; goes back to the pool when garbage collected or on ``.free()``.
* :func:`get_pool` ``(device_id) -> DevicePool`` — created lazily, reads
  ``GPARRAY_MEMORY_LIMIT``; CuPy's allocator is hooked to the pools as soon as both a pool
  exists and CuPy is imported (a pool does not import CuPy).
* :func:`install_cupy_allocator` — makes CuPy allocate through these pools.
* :func:`retire_stream` ``(device_id, stream)`` — a gparray-owned stream is about to be
  destroyed: the device's pool re-owns its segments (``_retire.py``).
* :class:`OutOfMemoryError` (a MemoryError).

Importing this package does not import CuPy, nor does a pool (CUDA runtime bindings only). The pool logic is in
``_pool.py`` and the modules it names (pure Python), the CUDA glue in ``_cupy_backend.py``;
pinned host memory (``pinned_empty``, ``is_pinned``, the staging buffers of host transfers)
in ``_host.py``.
"""
from __future__ import annotations

import threading

from . import _cupy_backend
from ._cupy_backend import DevicePool      # imports no CuPy until a pool is created
from ._pool import Block, CachingPool, OutOfMemoryError, parse_memory_limit, _empty_block

__all__ = ["alloc", "Block", "CachingPool", "DevicePool", "OutOfMemoryError", "get_pool",
           "install_cupy_allocator", "parse_memory_limit", "pools", "retire_stream"]

_pools: dict = {}                 # device_id -> DevicePool
_create_lock = threading.Lock()
_current_stream = None            # the current-stream getter (_backend.stream_getter), bound at the first pool


def alloc(nbytes: int, device_id: int, stream: int | None = None) -> Block:
    """Allocate ``nbytes`` on device ``device_id`` for use on ``stream``.

    ``stream`` is a raw stream handle (0 = legacy default stream); None means CuPy's
    current stream for the device. Raises OutOfMemoryError when the memory cannot be had.
    """
    pool = _pools.get(device_id)
    if pool is None:
        if nbytes == 0:
            return _empty_block(0, device_id, 0 if stream is None else stream)
        pool = get_pool(device_id)
    if stream is None:
        stream = _current_stream(device_id).ptr
    return pool.malloc(nbytes, stream)


def get_pool(device_id: int):
    """The DevicePool of ``device_id``, created on first use (CuPy's allocator is hooked then,
    or when CuPy is imported later)."""
    pool = _pools.get(device_id)
    if pool is not None:
        return pool
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
        raise ValueError(f"get_pool: expected a device ordinal (int >= 0), got {device_id!r}")
    global _current_stream
    from .._core import _backend
    _backend.require_device("get_pool")
    n = _backend.device_count()
    if device_id >= n:
        raise ValueError(f"get_pool: cuda:{device_id} does not exist ({n} CUDA device(s) visible)")
    with _create_lock:
        pool = _pools.get(device_id)
        if pool is None:
            pool = DevicePool(device_id)
            if _current_stream is None:
                _current_stream = _backend.stream_getter()
                _backend.when_cupy_imported(_on_cupy_import)
            _pools[device_id] = pool
    return pool


def _on_cupy_import(cp) -> None:
    """CuPy was imported (after the first pool): read its current stream directly and route
    its allocations through the pools."""
    global _current_stream
    _current_stream = cp.cuda.get_current_stream
    install_cupy_allocator()


def pools() -> dict:
    """The pools created so far, ``{device_id: pool}`` (a copy)."""
    return dict(_pools)


def retire_stream(device_id: int, stream) -> None:
    """Retire CuPy stream object ``stream`` of device ``device_id``, still alive and about to
    be destroyed: an event is recorded on it and the device's pool (if there is one yet)
    re-owns the segments of its handle (:meth:`CachingPool.retire_stream`), holding
    ``stream`` until that is done. Errors propagate; the caller (a finalizer) swallows them.
    """
    pool = _pools.get(device_id)
    handle = int(stream.ptr)
    if pool is None or not pool.has_stream(handle):   # no block was ever allocated on it
        return
    event = _cupy_backend.record_on_live_stream(device_id, handle)
    pool.retire_stream(handle, event, keep=stream)


def _cupy_allocator(size: int):
    """CuPy allocator hook: a MemoryPointer into a pool Block that the pointer keeps alive."""
    cuda = _cupy_cuda
    dev = cuda.runtime.getDevice()
    blk = alloc(size, dev)
    return cuda.MemoryPointer(cuda.UnownedMemory(blk.ptr, size, blk, dev), 0)


_cupy_cuda = None


def install_cupy_allocator() -> None:
    """Route CuPy's allocations (cupy.cuda.alloc) through gparray's pools. Idempotent."""
    global _cupy_cuda
    from .._core import _backend
    cp = _backend.cupy()
    _cupy_cuda = cp.cuda
    if cp.cuda.get_allocator() is not _cupy_allocator:
        cp.cuda.set_allocator(_cupy_allocator)
