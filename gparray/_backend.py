"""Lazy access to CuPy and the CUDA runtime.

Importing gparray never imports CuPy or touches a GPU. The first operation that needs the
device calls :func:`cupy` (or :func:`require_device`); on a machine without CUDA that
raises one clear :class:`CUDAUnavailableError`.
"""
from __future__ import annotations

import contextlib
import threading

_cupy = None
_error: Exception | None = None
_device_count: int | None = None


class CUDAUnavailableError(RuntimeError):
    """No usable CUDA device (or no CuPy) on this machine."""


def _import_cupy():
    global _cupy, _error
    if _cupy is not None:
        return _cupy
    if _error is not None:
        raise CUDAUnavailableError(str(_error))
    try:
        import cupy  # noqa: F401  (heavy import, deferred to first use)
    except Exception as exc:  # ImportError or a broken CUDA install
        _error = CUDAUnavailableError(
            f"gparray: CuPy could not be imported ({exc}); install gparray[cuda13] or gparray[cuda12]")
        raise _error from None
    _cupy = cupy
    return cupy


def cupy():
    """The CuPy module, imported on first call; raises CUDAUnavailableError without a GPU."""
    cp = _import_cupy()
    if device_count() == 0:
        raise CUDAUnavailableError("gparray: no CUDA device was found")
    return cp


def on_device(device_id: int):
    """A context making device ``device_id`` current (nothing to do when it already is)."""
    cp = cupy()
    if cp.cuda.runtime.getDevice() == device_id:
        return contextlib.nullcontext()
    return cp.cuda.Device(device_id)


def cupy_module():
    """The CuPy module without requiring a device (NVRTC compiles need no GPU)."""
    return _import_cupy()


def device_count() -> int:
    """Number of visible CUDA devices; 0 when CuPy or the driver is missing."""
    global _device_count
    if _device_count is None:
        try:
            cp = _import_cupy()
            _device_count = int(cp.cuda.runtime.getDeviceCount())
        except Exception:
            _device_count = 0
    return _device_count


def has_cuda() -> bool:
    """True when at least one CUDA device can be used."""
    return device_count() > 0


def require_device(name: str = "gparray"):
    """Raise CUDAUnavailableError naming ``name`` when no GPU is usable; return CuPy."""
    if not has_cuda():
        if _error is not None:
            raise CUDAUnavailableError(f"{name}: {_error}")
        raise CUDAUnavailableError(f"{name}: no CUDA device was found")
    return _cupy


# ----------------------------------------------------------------------------- live streams

_held: dict = {}                  # (device ordinal, raw stream handle) -> gparray Streams holding it
_held_lock = threading.Lock()     # its critical sections allocate no container: no GC runs inside


def hold_stream(device_id: int, handle: int) -> None:
    """Note one more gparray Stream holding raw stream ``handle`` of ``device_id``: the
    stream is alive at least until the matching :func:`release_stream`."""
    key = (device_id, handle)
    with _held_lock:
        _held[key] = _held.get(key, 0) + 1


def release_stream(device_id: int, handle: int) -> None:
    """Undo one :func:`hold_stream` (the finalizer of a gparray Stream calls it)."""
    key = (device_id, handle)
    with _held_lock:
        n = _held.get(key, 0) - 1
        if n > 0:
            _held[key] = n
        else:
            _held.pop(key, None)


def stream_held(device_id: int, handle: int) -> bool:
    """True while a gparray Stream holds raw stream ``handle`` of ``device_id``, which is then
    known to be alive (so an event may be recorded on it)."""
    return (device_id, handle) in _held
