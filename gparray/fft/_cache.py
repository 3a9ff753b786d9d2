"""Control of the cuFFT plan cache (gparray/_engine/_fft.py): one LRU per device, bounded by
a number of plans (default 256, ``GPARRAY_FFT_PLAN_CACHE`` at import; 0 turns caching off)
and optionally by memory: the sum of the cached plans' work-area sizes (cuFFT's estimate of
what a plan needs while it runs; the work areas themselves come from the memory pool for
each transform and are not held by the cache). These functions are gparray's own (not in
the standard). ``device=None`` in a setter or ``clear_plan_cache`` means every device
(also those whose cache is created later); in a getter, the current device."""
from __future__ import annotations

import operator

from .._device import normalize_device
from .._engine import _fft


def _count(v, name):
    if isinstance(v, bool):
        raise TypeError(f"{name}: expected an integer, got bool")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: expected an integer, got {type(v).__name__}") from None
    if v < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {v}")
    return v


def _caches_for(device, name):
    if device is None:
        return list(_fft.caches().values())
    return [_fft.cache(normalize_device(device, name)._id)]


def _cache_of(device, name):
    return _fft.cache(normalize_device(device, name)._id)


def clear_plan_cache(device=None) -> None:
    """Destroy the cached cuFFT plans of ``device`` (default: every device)."""
    if device is None:
        _fft.clear()
    else:
        _fft.clear(normalize_device(device, "clear_plan_cache")._id)


def get_plan_cache_info(device=None) -> dict:
    """The plan cache of ``device`` (default: the current one): ``size`` (plans),
    ``max_size``, ``memory`` (bytes of work area the plans need), ``max_memory`` (None: no
    bound), ``hits``, ``misses``, ``evictions``."""
    return _cache_of(device, "get_plan_cache_info").info()


def get_plan_cache_max_size(device=None) -> int:
    """The most plans the cache of ``device`` keeps (default: the current device)."""
    return _cache_of(device, "get_plan_cache_max_size").max_size


def set_plan_cache_max_size(size, device=None) -> None:
    """Keep at most ``size`` plans (0: none; least recently used plans are destroyed first)
    on ``device`` (default: every device)."""
    size = _count(size, "set_plan_cache_max_size")
    if device is None:
        _fft.set_default_limits(max_size=size)
    for c in _caches_for(device, "set_plan_cache_max_size"):
        c.set_limits(max_size=size)


def get_plan_cache_max_memory(device=None):
    """The bound on the plans' work-area bytes of ``device``'s cache (None: unbounded)."""
    return _cache_of(device, "get_plan_cache_max_memory").max_memory


def set_plan_cache_max_memory(nbytes, device=None) -> None:
    """Bound the sum of the cached plans' work-area sizes by ``nbytes`` (None: no bound) on
    ``device`` (default: every device). A plan larger than the bound is used once and not
    kept."""
    if nbytes is not None:
        nbytes = _count(nbytes, "set_plan_cache_max_memory")
    if device is None:
        _fft.set_default_limits(max_memory=nbytes)
    for c in _caches_for(device, "set_plan_cache_max_memory"):
        c.set_limits(max_memory=nbytes)


__all__ = ["clear_plan_cache", "get_plan_cache_info", "get_plan_cache_max_size", "set_plan_cache_max_size",
           "get_plan_cache_max_memory", "set_plan_cache_max_memory"]
