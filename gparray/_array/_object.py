"""The gparray Array: a device buffer + byte offset, shape, byte strides, dtype and device.

Arrays are created only through the namespace's functions (``Array._new`` is the private
constructor). Views share the owner of the memory (a pool Block, or a foreign object such as
a CuPy array, a PyTorch tensor or a DLPack capsule holder) and keep it alive.

This module is the top of the Array layer (see docs/architecture.md). The class inherits its
operators (``_operators.py``, built from the elementwise op objects and ``matmul`` below it),
NumPy's ndarray methods (``_methods.py``) and NumPy interop (``_numpy_interop.py``); its
indexing is ``_indexing.py``. Right after the class is defined it is handed down to
``_build.py``, through which the modules below build their results.
"""
from __future__ import annotations

import numpy as np

from .._core import _backend, _host_conversion
from .._core._device import Device, normalize_device
from .._engine import _dlpack, _shapes, _streams, _transfer
from . import _build
from ._build import _copy, _copy_to_device, _from_pickle
from ._indexing import getitem, setitem
from ._methods import ArrayMethods
from ._numpy_interop import NumpyInterop
from ._operators import Operators

_SUPPORTED_API_VERSIONS = ("2023.12", "2024.12", "2025.12")


class Array(Operators, ArrayMethods, NumpyInterop):
    """An n-dimensional array in CUDA device memory (Array API standard array object), with
    NumPy's ndarray methods as an extension (``x.sum(axis=0)``, ``x.reshape(2, 3)``: see
    gparray/_array/_methods.py)."""

    __slots__ = ("_buf", "_offset", "_shape", "_strides", "_dtype", "_device", "_flags", "__weakref__")

    __hash__ = None  # mutable: not hashable

    def __init__(self, *args, **kwargs):
        raise TypeError("Array: use gparray.asarray() or another creation function to make arrays")

    @classmethod
    def _new(cls, buf, offset: int, shape: tuple, strides: tuple, dtype, device: Device):
        """Private constructor: no checks. ``strides`` are in bytes."""
        self = object.__new__(cls)
        self._buf = buf
        self._offset = offset
        self._shape = shape
        self._strides = strides
        self._dtype = dtype
        self._device = device
        self._flags = None
        return self

    # ------------------------------------------------------------------ attributes
    @property
    def _ptr(self) -> int:
        """Device address of element [0, ..., 0]."""
        return self._buf.ptr + self._offset

    def _is_c_contig(self) -> bool:
        f = self._flags
        if f is None:
            f = self._flags = _shapes.is_c_contiguous(self._shape, self._strides, self._dtype.itemsize)
        return f

    @property
    def dtype(self):
        """Data type of the array elements (one of the 13 spec dtypes or float16; NumPy dtypes)."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The CUDA device holding the data."""
        return self._device

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def shape(self) -> tuple:
        """Array dimensions."""
        return self._shape

    @property
    def size(self) -> int:
        """Number of elements."""
        return _shapes.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy (size * itemsize)."""
        return self.size * self._dtype.itemsize

    @property
    def strides(self) -> tuple:
        """Byte strides (NumPy convention)."""
        return self._strides

    @property
    def T(self):
        """Transpose of a two-dimensional array (a view)."""
        if self.ndim != 2:
            raise ValueError(f"Array.T: expected a 2-dimensional array, got {self.ndim} dimensions; "
                             "use permute_dims() or mT")
        return self._view(self._offset, self._shape[::-1], self._strides[::-1])

    @property
    def mT(self):
        """Transpose of the last two axes (a view); needs ndim >= 2."""
        if self.ndim < 2:
            raise ValueError(f"Array.mT: expected at least 2 dimensions, got {self.ndim}")
        sh, st = list(self._shape), list(self._strides)
        sh[-1], sh[-2] = sh[-2], sh[-1]
        st[-1], st[-2] = st[-2], st[-1]
        return self._view(self._offset, tuple(sh), tuple(st))

    def _view(self, offset, shape, strides, dtype=None):
        return Array._new(self._buf, offset, shape, strides, self._dtype if dtype is None else dtype,
                          self._device)

    def __array_namespace__(self, /, *, api_version=None):
        """The gparray namespace (api_version 2023.12, 2024.12 or 2025.12)."""
        if api_version is not None and api_version not in _SUPPORTED_API_VERSIONS:
            raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}; "
                             f"expected one of {_SUPPORTED_API_VERSIONS}")
        return _build.namespace()

    def to_device(self, device, /, *, stream=None):
        """This array on ``device``: self when already there, else a peer copy.

        ``stream``: where the copy is queued: a ``gparray.cuda.Stream`` or a CuPy stream of
        either device, or an int handle of a stream of ``device`` (1: the legacy default
        stream, 2: the per-thread default stream); default: the current stream of this
        array's device. The copy is asynchronous: it waits for the work queued on this
        array's device's current stream, and the current streams of both devices (and
        ``stream``) wait for it, so the result may be used on them at once. With ``stream``
        and self returned, ``stream`` waits for this device's current stream."""
        dev = normalize_device(device, "to_device")
        s = None
        if stream is not None:
            s = _streams.stream_arg(stream, "to_device", dev)
            if s[1] not in (dev._id, self._device._id):
                raise ValueError(f"to_device: the stream is on cuda:{s[1]}, not on {self._device} or {dev}")
        if dev == self._device:
            if s is not None:
                d = dev._id
                _streams.order(_backend.cupy().cuda.get_current_stream(d).ptr, d, s)
            return self
        return _copy_to_device(self, dev, s)

    # ------------------------------------------------------------------ host copies
    def _to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (one device-to-host transfer, stream synchronized)."""
        return _transfer.to_host(self)

    def __array__(self, dtype=None, copy=None):
        """NumPy conversion: always a device-to-host copy (copy=False raises ValueError), as
        the host conversion mode permits (gparray.cuda.set_host_conversion: "allow", "warn"
        or "raise"; gparray/_core/_host_conversion.py)."""
        if copy is False:
            raise ValueError("__array__: converting a gparray Array to NumPy always copies "
                             "(device to host); copy=False cannot be honoured")
        _host_conversion.check(self)
        a = self._to_numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            a = a.astype(dtype)
        return a

    def _scalar(self, name: str):
        if self.size != 1:
            raise TypeError(f"{name}: only arrays with one element can be converted to Python scalars "
                            f"(shape {self._shape})")
        return self._to_numpy().reshape(()).item()

    def __bool__(self):
        """Python bool of a one-element array."""
        return bool(self._scalar("__bool__"))

    def __int__(self):
        """Python int of a one-element real array."""
        if self._dtype.kind == "c":
            raise TypeError("__int__: cannot convert a complex array to int")
        v = self._scalar("__int__")
        return int(v)

    def __float__(self):
        """Python float of a one-element real array."""
        if self._dtype.kind == "c":
            raise TypeError("__float__: cannot convert a complex array to float")
        return float(self._scalar("__float__"))

    def __complex__(self):
        """Python complex of a one-element array."""
        return complex(self._scalar("__complex__"))

    def __index__(self):
        """Python int of a one-element integer array (for use as an index)."""
        if self._dtype.kind not in "iu":
            raise TypeError(f"__index__: only integer arrays can be used as an index, not {self._dtype}")
        if self.ndim != 0:
            raise TypeError("__index__: only 0-dimensional integer arrays can be used as an index")
        return int(self._scalar("__index__"))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("__len__: len() of a 0-dimensional array")
        return self._shape[0]

    def __iter__(self):
        """Iterator over the first axis (``self[0]``, ``self[1]``, ...). A 0-dimensional
        array raises TypeError here, at ``iter(x)``, as NumPy does (so ``numpy.iterable(x)``
        is False for it), not at the first ``next()``."""
        if self.ndim == 0:
            raise TypeError("__iter__: iteration over a 0-dimensional array")
        return (self[i] for i in range(self._shape[0]))

    def __repr__(self):
        return _format(self, repr_=True)

    def __str__(self):
        return _format(self, repr_=False)

    # ------------------------------------------------------------------ copies, pickling
    def __copy__(self):
        """``copy.copy(x)``: a new C-contiguous array with x's values, dtype and device (a
        device copy, as ``copy.copy`` of a NumPy array copies its data)."""
        return _copy(self)

    def __deepcopy__(self, memo, /):
        """``copy.deepcopy(x)``: a device copy, as ``__copy__`` (the elements hold no objects)."""
        return _copy(self)

    def __reduce__(self):
        """Pickling: the values travel as a NumPy array (one device-to-host copy); unpickling
        uploads them to the current device (``_from_pickle``), with the same dtype and shape."""
        return (_from_pickle, (self._to_numpy(),))

    # ------------------------------------------------------------------ interop
    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 (zero-copy export to Numba, CuPy, PyTorch...)."""
        cp = _backend.cupy()
        sp = cp.cuda.get_current_stream(self._device._id).ptr   # of the array's device
        if sp == 0:
            sp = 1  # legacy default stream
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "descr": [("", self._dtype.str)],
            "data": (self._ptr if self.size else 0, False),
            "strides": None if self._is_c_contig() else self._strides,
            "version": 3,
            "stream": sp,
        }

    def __dlpack_device__(self):
        """(kDLCUDA = 2, device ordinal)."""
        return (2, self._device._id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (1.0 versioned capsules when max_version >= (1, 0)); host copy for kDLCPU.

        ``stream``: the consumer's CUDA stream, as the standard defines it. Unless it is -1
        (no synchronization) it waits, through an event, for the work queued on the current
        stream of this array's device; None means the legacy default stream, 1 the legacy
        default stream, 2 the per-thread default stream, a larger int a stream handle, and a
        ``gparray.cuda.Stream`` is accepted too. 0 is ambiguous for CUDA: ValueError."""
        return _dlpack.to_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key):
        """``x[key]``: a view for basic indexing, a gather for integer arrays, a compaction
        for boolean masks (gparray/_array/_indexing.py)."""
        return getitem(self, key)

    def __setitem__(self, key, value):
        """``x[key] = value``: a fill, a strided copy or a scatter, as the key's plan says."""
        setitem(self, key, value)


def _format(x: Array, repr_: bool) -> str:
    """NumPy-style text of ``x`` (repr: ``Array([...], dtype=float32, device=cuda:0)``)."""
    a = x._to_numpy()
    if not repr_:
        return np.array2string(a, separator=" ")
    prefix = "Array("
    if a.size == 0 and a.ndim != 1:
        body = f"[], shape={a.shape}"
    else:
        body = np.array2string(a, separator=", ", prefix=prefix, threshold=1000)
    return f"{prefix}{body}, dtype={x._dtype.name}, device={x._device})"


_build.bind(Array)

__all__ = ["Array"]
