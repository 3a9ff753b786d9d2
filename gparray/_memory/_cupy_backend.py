"""The CuPy-backed device pool: raw cudaMalloc/cudaFree, CUDA events and device sync,
through CuPy's runtime bindings (``gparray._core._backend.runtime``: ``cupy_backends``, the module
``cupy.cuda.runtime`` re-exports), so a pool does not import CuPy itself.
"""
from __future__ import annotations

import os

from .._core import _backend
from .._core import _faults
from ._pool import ENV_LIMIT, CachingPool, no_caching_from_env, parse_memory_limit

_CUDA_ERROR_MEMORY_ALLOCATION = 2   # cudaErrorMemoryAllocation


class DevicePool(CachingPool):
    """The caching pool of one CUDA device, over CuPy's ``runtime.malloc``/``free``.

    The limit comes from ``GPARRAY_MEMORY_LIMIT`` and the debugging mode from
    ``GPARRAY_NO_CACHING`` (both read here, when the pool is created).
    """

    def __init__(self, device_id: int):
        runtime = _backend.runtime()
        device = _device_context(device_id)
        with device():
            total = int(runtime.memGetInfo()[1])
        env = os.environ.get(ENV_LIMIT)
        limit = parse_memory_limit(env, total) if env is not None else None
        super().__init__(
            _raw_malloc(runtime, device), _raw_free(runtime, device), device_id=device_id,
            total_memory=total, limit=limit, record_event=_record_event(runtime, device),
            event_done=_event_done, synchronize=_synchronize(runtime, device),
            no_caching=no_caching_from_env())


class _device_context:
    """``device()`` gives a new context making the pool's device current (one per use: a
    light context object is not reentrant across threads)."""

    __slots__ = ("device_id",)

    def __init__(self, device_id: int):
        self.device_id = device_id

    def __call__(self):
        return _backend.OnDevice(self.device_id)


def _raw_malloc(runtime, device):

    def raw_malloc(nbytes):
        """cudaMalloc on the pool's device; MemoryError when the device is out of memory."""
        with device(), _faults.checked("alloc"):
            try:
                return runtime.malloc(nbytes)
            except runtime.CUDARuntimeError as exc:
                if getattr(exc, "status", None) == _CUDA_ERROR_MEMORY_ALLOCATION:
                    raise MemoryError(str(exc)) from exc
                raise
    return raw_malloc


def _raw_free(runtime, device):

    def raw_free(ptr):
        """cudaFree on the pool's device."""
        with device(), _faults.checked("free"):
            runtime.free(ptr)
    return raw_free


def _synchronize(runtime, device):
    def synchronize():
        """Wait for all work on the pool's device (a lost context: KernelFaultError)."""
        with _faults.checked("synchronize"), device():
            runtime.deviceSynchronize()
    return synchronize


_ALWAYS_ALIVE = (0, 1, 2)  # the legacy default stream (0, cudaStreamLegacy) and cudaStreamPerThread


def _recorder(runtime, device):
    event_cls = _backend.Event

    def record(stream):
        """A timing-free event recorded on live stream ``stream``, or None (already complete)
        after a device synchronize when the record fails."""
        with device():
            ev = event_cls(block=False, disable_timing=True)
            try:
                runtime.eventRecord(ev.ptr, stream)
                return ev
            except runtime.CUDARuntimeError:
                pass
            runtime.deviceSynchronize()
        return None
    return record


def _record_event(runtime, device):
    current = _backend.current_stream
    held = _backend.stream_held
    dev_id = device.device_id
    record = _recorder(runtime, device)
    sync = runtime.deviceSynchronize

    def record_event(stream):
        """A timing-free event recorded on the raw stream handle ``stream``, or None (already
        complete) after a device synchronize.

        Recording on a destroyed stream is undefined behaviour (it can crash the driver), and
        a raw handle cannot be checked. Known to be alive: the default streams, this thread's
        current stream, and every stream a live ``gparray.cuda.Stream`` holds
        (``_backend.stream_held``). For any other stream the pool's blocks may have outlived
        it (a user's ``cupy.cuda.Stream`` gone out of scope), so the device is synchronized
        instead, which orders everything.
        """
        if stream in _ALWAYS_ALIVE or held(dev_id, stream) or current(dev_id).ptr == stream:
            return record(stream)
        with device():
            sync()
        return None
    return record_event


def record_on_live_stream(device_id: int, stream: int):
    """An event recorded on raw stream ``stream`` of ``device_id``, which the caller knows to
    be alive (a gparray Stream being retired); None (already complete) after a device
    synchronize when the record fails."""
    return _recorder(_backend.runtime(), _device_context(device_id))(stream)


def _event_done(ev) -> bool:
    return ev is None or bool(ev.done)


def current_stream_ptr(device_id: int) -> int:
    """The raw handle of CuPy's current stream for ``device_id`` (0 = legacy default)."""
    return _backend.current_stream(device_id).ptr
