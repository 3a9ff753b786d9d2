"""DLPack and CUDA Array Interface interop on layouts, below the Array layer.

Export: ``to_dlpack`` implements ``Array.__dlpack__`` (a zero-copy CuPy view handed to
CuPy's exporter; copies when asked or when the consumer wants another device or the host).
Import: ``cupy_layout``, ``device_layout`` and ``host_array`` describe a producer's memory
(CuPy arrays, PyTorch CUDA tensors, any ``__dlpack__`` producer) without copying;
``gparray.from_dlpack`` (in ``gparray/_api/_creation.py``) wraps them into Arrays.
"""
from __future__ import annotations

import numpy as np

from .._core import _backend
from . import _streams, _transfer
from .._core._device import get_device
from .._core._dtypes import _normalize_dtype
from ._shapes import Layout
from ._streams import Stream

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13


class _Foreign:
    """Owner of memory that gparray did not allocate: keeps the producer alive."""

    __slots__ = ("ptr", "owner")

    def __init__(self, ptr: int, owner):
        self.ptr = ptr
        self.owner = owner


def cupy_view(x):
    """A zero-copy CuPy ndarray over layout ``x`` (it keeps ``x`` alive)."""
    cp = _backend.cupy()
    mem = cp.cuda.UnownedMemory(x._ptr if x.size else 0, x.nbytes, x, x._device._id)
    return cp.ndarray(x._shape, dtype=x._dtype, memptr=cp.cuda.MemoryPointer(mem, 0), strides=x._strides)


def cupy_layout(a) -> Layout:
    """A layout over the memory of CuPy array ``a`` (no copy; it keeps ``a`` alive)."""
    dtype = _normalize_dtype(a.dtype, "asarray")
    dev = get_device(a.device.id)
    return Layout(_Foreign(a.data.ptr, a), tuple(a.shape), dtype, dev, 0, tuple(a.strides))


def producer_device(x) -> tuple:
    """(DLPack device type, device id) of a ``__dlpack__`` producer."""
    dev_type, dev_id = x.__dlpack_device__()
    return int(dev_type), int(dev_id)


def host_array(x) -> np.ndarray:
    """The host producer ``x`` as a NumPy array (no copy)."""
    return np.from_dlpack(x)


def device_layout(x, dev_id: int) -> Layout:
    """A layout over the memory of the CUDA producer ``x`` on device ``dev_id`` (no copy)."""
    cp = _backend.cupy()
    with cp.cuda.Device(dev_id):
        a = cp.from_dlpack(x)
    return cupy_layout(a)


def _contiguous_layout(x, dev=None) -> Layout:
    """A C-contiguous copy of layout ``x`` (on ``dev``: a peer copy) as a Layout."""
    if dev is None:
        return Layout(_transfer.contiguous(x), x._shape, x._dtype, x._device)
    return Layout(_transfer.to_device(x, dev), x._shape, x._dtype, dev)


def consumer_stream(stream):
    """The consumer's stream of ``__dlpack__(stream=...)`` on a CUDA device, as the standard
    defines it: None means the legacy default stream (handle 1), -1 no synchronization
    (returned as None), 1 the legacy default stream, 2 the per-thread default stream, a
    larger int a stream handle; a gparray Stream (an extension) stands for its handle. 0 is
    ambiguous for CUDA, and other negative ints are no stream: ValueError; TypeError for
    anything else. Returns None or (handle, device ordinal or None for the array's)."""
    if stream is None:
        return (1, None)
    if isinstance(stream, Stream):
        return (stream.ptr, stream.device.id)
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)):
        raise TypeError(f"__dlpack__: stream must be an int (a CUDA stream handle), -1 or None, "
                        f"got {type(stream).__name__}")
    stream = int(stream)
    if stream == -1:
        return None
    if stream == 0:
        raise ValueError("__dlpack__: stream=0 is ambiguous for CUDA; pass 1 (the legacy default "
                         "stream), 2 (the per-thread default stream), a stream handle, or -1")
    if stream < -1:
        raise ValueError(f"__dlpack__: stream must be -1 or a positive stream handle, got {stream}")
    return (stream, None)


def to_dlpack(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Implementation of ``Array.__dlpack__`` for layout ``x``."""
    consumer = consumer_stream(stream)
    if dl_device is not None:
        dev_type, dev_id = dl_device
        if dev_type == kDLCPU:
            if copy is False:
                raise BufferError("__dlpack__: exporting to the CPU needs a copy, but copy=False")
            host = _transfer.to_host(x)   # synchronized: no stream is left to order
            # ``host`` is already the copy, and nothing else refers to it: NumPy's
            # __dlpack__(copy=True) would copy it once more (it made numpy.from_dlpack(x,
            # device="cpu") twice as slow as one download)
            if max_version is None:
                return host.__dlpack__()
            return host.__dlpack__(max_version=max_version)
        if dev_type != kDLCUDA:
            raise BufferError(f"__dlpack__: unsupported dl_device {dl_device!r}")
        if dev_id != x._device._id:
            if copy is False:
                raise BufferError("__dlpack__: exporting to another device needs a copy, but copy=False")
            x = _contiguous_layout(x, get_device(dev_id))
            copy = False
    if copy:
        x = _contiguous_layout(x)
    if consumer is not None:
        _sync_stream(x, *consumer)
    view = cupy_view(x)
    kwargs = {"stream": -1}   # ordered above: CuPy's exporter must not order its own stream
    if max_version is not None:
        kwargs["max_version"] = max_version
    try:
        return view.__dlpack__(**kwargs)
    except TypeError:
        return view.__dlpack__()


def _sync_stream(x, handle: int, dev) -> None:
    """Make the consumer's stream ``handle`` (of x's device) wait for the work queued so far
    on the current stream of x's device, which wrote x: an event, no host wait."""
    d = x._device._id
    if dev is not None and dev != d:
        raise ValueError(f"__dlpack__: the stream is on cuda:{dev}, the exported data on cuda:{d}")
    producer = _backend.cupy().cuda.get_current_stream(d).ptr
    _streams.order(producer, d, (handle, d))
