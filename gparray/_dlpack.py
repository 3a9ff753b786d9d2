"""DLPack and CUDA Array Interface interop: export (``Array.__dlpack__``) and import
(``from_dlpack``, zero-copy wrapping of CuPy arrays, PyTorch CUDA tensors and any
``__dlpack__``/``__cuda_array_interface__`` producer)."""
from __future__ import annotations

import numpy as np

from . import _backend
from ._device import get_device, normalize_device

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
    """A zero-copy CuPy ndarray over Array ``x`` (it keeps ``x`` alive)."""
    cp = _backend.cupy()
    mem = cp.cuda.UnownedMemory(x._ptr if x.size else 0, x.nbytes, x, x._device._id)
    return cp.ndarray(x._shape, dtype=x._dtype, memptr=cp.cuda.MemoryPointer(mem, 0), strides=x._strides)


def wrap_cupy(a, device=None):
    """A gparray Array sharing the memory of CuPy array ``a`` (no copy)."""
    from ._array import Array
    from ._dtypes import _normalize_dtype

    dtype = _normalize_dtype(a.dtype, "asarray")
    dev = get_device(a.device.id)
    return Array._new(_Foreign(a.data.ptr, a), 0, tuple(a.shape), tuple(a.strides), dtype, dev)


def to_dlpack(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Implementation of ``Array.__dlpack__``."""
    if dl_device is not None:
        dev_type, dev_id = dl_device
        if dev_type == kDLCPU:
            if copy is False:
                raise BufferError("__dlpack__: exporting to the CPU needs a copy, but copy=False")
            host = x._to_numpy()
            if max_version is None:
                return host.__dlpack__()
            return host.__dlpack__(max_version=max_version, copy=True)
        if dev_type != kDLCUDA:
            raise BufferError(f"__dlpack__: unsupported dl_device {dl_device!r}")
        if dev_id != x._device._id:
            if copy is False:
                raise BufferError("__dlpack__: exporting to another device needs a copy, but copy=False")
            x = x.to_device(get_device(dev_id))
            copy = False
    if copy:
        from ._creation import _copy

        x = _copy(x)
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


def from_dlpack(x, /, *, device=None, copy=None):
    """Array sharing (or, when needed or asked, copying) the memory of a DLPack producer."""
    from ._array import Array
    from ._creation import _copy, _from_host

    if isinstance(x, Array):
        out = x
        if device is not None:
            dev = normalize_device(device, "from_dlpack")
            if dev != x._device:
                if copy is False:
                    raise ValueError("from_dlpack: copy=False but the array is on another device")
                return x.to_device(dev)
        return _copy(out) if copy else out
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(x).__name__}")
    dev_type, dev_id = x.__dlpack_device__()
    dev_type = int(dev_type)
    want_cpu = False
    if device is not None:
        if isinstance(device, str) and device.strip().lower() == "cpu":
            want_cpu = True
    if dev_type in (kDLCPU, kDLCUDAHost) or want_cpu:
        if copy is False:
            raise ValueError("from_dlpack: the producer is on the host; moving it to the GPU needs a copy")
        host = np.from_dlpack(x)
        dev = normalize_device(None if want_cpu else device, "from_dlpack")
        return _from_host(host, dev)
    if dev_type not in (kDLCUDA, kDLCUDAManaged):
        raise BufferError(f"from_dlpack: unsupported DLPack device type {dev_type}")
    cp = _backend.cupy()
    with cp.cuda.Device(int(dev_id)):
        a = cp.from_dlpack(x)
    out = wrap_cupy(a)
    if device is not None:
        dev = normalize_device(device, "from_dlpack")
        if dev != out._device:
            if copy is False:
                raise ValueError("from_dlpack: copy=False but the producer is on another device")
            return out.to_device(dev)
    return _copy(out) if copy else out
