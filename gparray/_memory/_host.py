"""Pinned (page-locked) host memory: NumPy arrays over it, telling it apart from pageable
memory, and the staging buffers of large host transfers.

* :class:`PinnedHostMemory`: one ``cudaHostAlloc`` allocation with the portable flag (pinned
  for every device's context, so one buffer serves transfers to any GPU), freed when the
  object is collected.
* :func:`pinned_empty`: a NumPy array over a new allocation; the allocation is the array's
  base object, so it lives as long as any view of it.
* :func:`is_pinned`: whether the DMA engine can read a NumPy array's memory directly.
* :class:`StagingPool` / :func:`staging`: the process's few pinned buffers that pageable
  transfers are staged through (``gparray/_engine/_staging.py`` plans and runs them), allocated at
  the first staged transfer, guarded by a lock, freed by :func:`release_staging` (called by
  ``gparray.cuda.empty_cache`` and at exit).

Importing this module imports no CuPy.
"""
from __future__ import annotations

import atexit
import math
import threading

import numpy as np

from .._core import _backend
from .._core import _faults

_MEMORY_TYPE_UNREGISTERED = 0   # cudaMemoryTypeUnregistered: pageable host memory
_CUDA_ERROR_MEMORY_ALLOCATION = 2


class PinnedHostMemory:
    """``nbytes`` of pinned host memory (``cudaHostAlloc``, portable) at ``ptr``; freed with
    ``cudaFreeHost`` when this object is collected. ``what`` names the caller in errors.

    NumPy sees it through ``__array_interface__`` (bytes, writeable), which makes this object
    the base of the arrays built over it: :func:`is_pinned` recognizes them by that.
    """

    __slots__ = ("_mem", "ptr", "nbytes", "__weakref__")

    def __init__(self, nbytes: int, what: str = "pinned_empty"):
        cp = _backend.cupy()
        rt = _backend.runtime()
        try:
            with _faults.checked(what):
                # at least one byte: cudaHostAlloc(0) gives no address to build an array on
                self._mem = cp.cuda.PinnedMemory(max(int(nbytes), 1), rt.hostAllocPortable)
        except rt.CUDARuntimeError as exc:
            if _faults.status_of(exc) == _CUDA_ERROR_MEMORY_ALLOCATION:
                raise MemoryError(f"{what}: could not allocate {nbytes} bytes of pinned host "
                                  f"memory ({exc})") from exc
            raise
        self.ptr = int(self._mem.ptr)
        self.nbytes = int(nbytes)

    @property
    def __array_interface__(self):
        return {"version": 3, "shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False)}


def pinned_empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous NumPy array of ``shape`` and ``dtype`` over new pinned
    host memory (kept alive by the array's base object)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.asarray(PinnedHostMemory(nbytes))
    return raw[:nbytes].view(dtype).reshape(shape)


def _own_pinned(a: np.ndarray) -> bool:
    """True when ``a`` is a view (at any depth) of a :class:`PinnedHostMemory`."""
    b = a.base
    for _ in range(64):
        if isinstance(b, PinnedHostMemory):
            return True
        if not isinstance(b, np.ndarray):
            return False
        b = b.base
    return False


def is_pinned(a: np.ndarray, ptr: int | None = None) -> bool:
    """Whether the GPU can DMA the memory of ``a`` (at host address ``ptr``, default
    ``a.ctypes.data``) directly: page-locked memory (:func:`pinned_empty`, any
    ``cudaHostAlloc`` or ``cudaHostRegister``) or managed memory.

    Arrays over :class:`PinnedHostMemory` are recognized by their base object, without a
    CUDA call; anything else costs one allocation-free ``cudaPointerGetAttributes``
    (CuPy's ``pointerGetMemoryType``). Nothing is cached: host memory can be registered,
    unregistered or freed and reused at any time, and the query is cheaper than a check
    that would make a cache safe. A pointer the driver does not know is pageable."""
    if _own_pinned(a):
        return True
    if ptr is None:
        ptr = a.ctypes.data
    rt = _backend.runtime()
    query = getattr(rt, "pointerGetMemoryType", None)
    try:
        kind = query(ptr) if query is not None else rt.pointerGetAttributes(ptr).type
    except rt.CUDARuntimeError:
        return False   # (CUDA < 11 refused pageable pointers with cudaErrorInvalidValue)
    return int(kind) != _MEMORY_TYPE_UNREGISTERED


class StagingPool:
    """The pinned buffers pageable host transfers are staged through, shared by every thread
    and device (portable memory).

    One transfer at a time uses them: a transfer takes ``lock`` without waiting
    (:meth:`try_acquire`) and, when another thread holds it, takes the direct
    ``cudaMemcpyAsync`` path instead, so no thread waits for another's transfer.
    ``pending[b]`` is the CUDA event recorded after the last DMA that used buffer ``b`` (or
    None): whoever reuses the buffer waits for it first, whichever device or stream that DMA
    ran on. ``events`` holds one reusable event per (device, buffer); ``next`` is the
    buffer the next transfer starts with (the least recently used one).
    """

    def __init__(self, nbuf: int, buffer_bytes: int, alloc=None):
        self.nbuf, self.buffer_bytes = nbuf, buffer_bytes
        self._alloc = alloc if alloc is not None else (lambda n: PinnedHostMemory(n, "staging"))
        self.lock = threading.Lock()
        self.buffers = None         # list of allocations once made
        self.pending = [None] * nbuf
        self.events = {}
        self.next = 0
        self.failed = False         # allocation failed: no staging until release()

    def try_acquire(self) -> bool:
        """Take the pool if no other transfer has it (never waits)."""
        return self.lock.acquire(blocking=False)

    def ptrs(self):
        """The buffers' addresses, allocating them at the first call; None when pinned memory
        cannot be had (the caller copies directly). Call with the lock held."""
        if self.buffers is None:
            if self.failed:
                return None
            try:
                self.buffers = [self._alloc(self.buffer_bytes) for _ in range(self.nbuf)]
            except MemoryError:
                self.failed = True
                return None
            _register_exit()
        return [b.ptr for b in self.buffers]

    def release(self, wait, timeout: float = 5.0) -> bool:
        """Free the buffers (after ``wait(event)`` on every pending event: a DMA may still
        read one) and forget the events; False when a transfer holds the pool for more
        than ``timeout`` seconds (nothing is freed then)."""
        got = self.lock.acquire(timeout=timeout) if timeout > 0 else self.lock.acquire(blocking=False)
        if not got:
            return False
        try:
            for ev in self.pending:
                if ev is not None:
                    wait(ev)
            self.pending = [None] * self.nbuf
            self.buffers = None
            self.events = {}
            self.next = 0
            self.failed = False
        finally:
            self.lock.release()
        return True


_pool = None
_pool_lock = threading.Lock()
_exit_registered = False


def staging(nbuf: int, buffer_bytes: int) -> StagingPool:
    """The process's staging pool of ``nbuf`` buffers of ``buffer_bytes`` (the sizes of the
    first call; the pool is created then, its buffers at the first staged transfer)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = StagingPool(nbuf, buffer_bytes)
    return _pool


def _register_exit():
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        # registered after CuPy's own exit handlers, so it runs before them
        atexit.register(release_staging)


def _event_synchronize(ev):
    _backend.runtime().eventSynchronize(ev.ptr)


def release_staging(timeout: float = 5.0) -> bool:
    """Free the staging buffers (they come back at the next staged transfer); False when a
    transfer kept them for more than ``timeout`` seconds (0: do not wait)."""
    if _pool is None or _pool.buffers is None:
        return True
    try:
        return _pool.release(_event_synchronize, timeout)
    except Exception:   # a lost context at exit: the driver frees the memory with it
        return False
