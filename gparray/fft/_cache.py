"""Control of the cuFFT plan caches (gparray/_engine/_fft.py). cuFFT plans cannot be shared
between host threads, so every thread has its own cache per device: an LRU bounded by a
number of plans (default 256, ``GPARRAY_FFT_PLAN_CACHE`` at import; 0 turns caching off) and
optionally by memory: the sum of the cached plans' work-area sizes (device memory the
cached plans hold: a plan keeps its work area between transforms). The bounds apply to each
thread's cache separately (n threads transforming on one device may hold n times the bound).
These functions are gparray's own (not in the standard). ``device=None`` in a setter or
``clear_plan_cache`` means every device (also those whose cache is created later); in a
getter, the current device. Setters and ``clear_plan_cache`` act on every thread's caches:
the calling thread's at once, other threads' at their next transform; ``get_plan_cache_info``
describes the calling thread's cache."""
from __future__ import annotations


from .._core._device import normalize_device
from .._engine import _fft
from ._transforms import _length


def _count(v, name, what):
    v = _length(v, name, what)
    if v < 0:
        raise ValueError(f"{name}: {what} must be a non-negative integer, got {v}")
    return v


def _device_id(device, name):
    return normalize_device(device, name)._id


def clear_plan_cache(device=None) -> None:
    """Destroy the cached cuFFT plans of ``device`` (default: every device), in every
    thread (the calling thread's at once, other threads' at their next transform)."""
    _fft.clear(None if device is None else _device_id(device, "clear_plan_cache"))


def get_plan_cache_info(device=None) -> dict:
    """The calling thread's plan cache of ``device`` (default: the current one): ``size``
    (plans), ``max_size``, ``memory`` (bytes of work area the plans hold), ``max_memory``
    (None: no bound), ``hits``, ``misses``, ``evictions``; ``threads``: how many live
    threads have a cache on the device."""
    dev = _device_id(device, "get_plan_cache_info")
    info = _fft.cache(dev).info()
    info["threads"] = _fft.thread_count(dev)
    return info


def get_plan_cache_max_size(device=None) -> int:
    """The most plans a thread's cache of ``device`` keeps (default: the current device)."""
    return _fft.limit("max_size", _device_id(device, "get_plan_cache_max_size"))


def set_plan_cache_max_size(size, device=None) -> None:
    """Keep at most ``size`` plans per thread (0: none; least recently used plans are
    destroyed first) on ``device`` (default: every device)."""
    size = _count(size, "set_plan_cache_max_size", "size")
    dev = None if device is None else _device_id(device, "set_plan_cache_max_size")
    _fft.set_limits(dev, max_size=size)


def get_plan_cache_max_memory(device=None):
    """The bound on the work-area bytes a thread's cache of ``device`` holds (None: unbounded)."""
    return _fft.limit("max_memory", _device_id(device, "get_plan_cache_max_memory"))


def set_plan_cache_max_memory(nbytes, device=None) -> None:
    """Bound the sum of a thread's cached plans' work-area sizes by ``nbytes`` (None: no
    bound) on ``device`` (default: every device). A plan larger than the bound is used once
    and not kept."""
    if nbytes is not None:
        nbytes = _count(nbytes, "set_plan_cache_max_memory", "nbytes")
    dev = None if device is None else _device_id(device, "set_plan_cache_max_memory")
    _fft.set_limits(dev, max_memory=nbytes)


__all__ = ["clear_plan_cache", "get_plan_cache_info", "get_plan_cache_max_size", "set_plan_cache_max_size",
           "get_plan_cache_max_memory", "set_plan_cache_max_memory"]
