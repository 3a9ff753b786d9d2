"""DLPack and CUDA Array Interface interop on layouts, below the Array layer.

Export: ``to_dlpack`` implements ``Array.__dlpack__`` (a zero-copy CuPy view handed to
CuPy's exporter; copies when asked or when the consumer wants another device or the host).
Import: ``cupy_layout``, ``device_layout`` and ``host_array`` describe a producer's memory
(CuPy arrays, PyTorch CUDA tensors, any ``__dlpack__`` producer) without copying;
``gparray.from_dlpack`` (in ``gparray/_creation.py``) wraps them into Arrays.
"""
from __future__ import annotations

import numpy as np

from . import _backend, _transfer
from ._device import get_device
from ._dtypes import _normalize_dtype
from ._engine._shapes import Layout

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


def to_dlpack(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Implementation of ``Array.__dlpack__`` for layout ``x``."""
    if dl_device is not None:
        dev_type, dev_id = dl_device
        if dev_type == kDLCPU:
            if copy is False:
                raise BufferError("__dlpack__: exporting to the CPU needs a copy, but copy=False")
            host = _transfer.to_host(x)
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
    if stream is not None and stream != -1:
        _sync_stream(x, stream)
    view = cupy_view(x)
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    try:
        return view.__dlpack__(**kwargs)
    except TypeError:
        return view.__dlpack__()


def _sync_stream(x, stream):
    """Make the consumer's ``stream`` wait for work queued on our current stream."""
    cp = _backend.cupy()
    cur = cp.cuda.get_current_stream()
    if stream in (1, 2, 0):
        target_ptr = 0 if stream == 1 else stream
    else:
        target_ptr = stream
    if target_ptr == cur.ptr:
        return
    ev = cur.record()
    cp.cuda.ExternalStream(target_ptr).wait_event(ev)
