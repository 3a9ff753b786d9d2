"""The gparray Array: a device buffer + byte offset, shape, byte strides, dtype and device.

Arrays are created only through the namespace's functions (``Array._new`` is the private
constructor). Views share the owner of the memory (a pool Block, or a foreign object such as
a CuPy array, a PyTorch tensor or a DLPack capsule holder) and keep it alive.

This module is the Array layer (see docs/architecture.md) with ``_array_methods.py`` (the
NumPy-style methods Array inherits): it imports only the layers below (engines, transfers,
DLPack export, memory). It is also the one home of the Array-building helpers every
namespace module uses: ``_empty`` (an uninitialized C-contiguous array), ``_from_layout``,
``_from_host``, ``_to_host``, ``_copy`` and ``_copy_to_device``.

The operators call the elementwise functions of ``gparray/_elementwise_funcs.py``, a
namespace module above this one: that module binds itself here (``_ew``) when it is imported,
and ``gparray/__init__.py`` imports it before any array can exist; ``@`` likewise calls
``gparray/_linear_algebra.py`` (``_la``).
"""
from __future__ import annotations

import math

import numpy as np

from . import _backend, _dlpack, _host_conversion, _streams, _transfer
from . import _dtypes as _dt
from ._array_methods import ArrayMethods
from ._numpy_interop import InplaceDtypeError, NumpyInterop, host_scalar
from ._device import Device, current_device, normalize_device, same_device
from ._engine import _elementwise as _ew_engine
from ._engine import _shapes
from ._memory import alloc

_SUPPORTED_API_VERSIONS = ("2023.12", "2024.12", "2025.12")


class Array(ArrayMethods, NumpyInterop):
    """An n-dimensional array in CUDA device memory (Array API standard array object), with
    NumPy's ndarray methods as an extension (``x.sum(axis=0)``, ``x.reshape(2, 3)``: see
    gparray/_array_methods.py)."""

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
        import gparray

        return gparray

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
        or "raise"; gparray/_host_conversion.py)."""
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
        from ._indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key, value):
        from ._indexing import setitem

        setitem(self, key, value)

    # ------------------------------------------------------------------ operators
    # Each operator is one call into the elementwise function of the same meaning.
    def _binop(self, fname, other, reflected=False):
        other = host_scalar(other)  # a NumPy scalar counts as the Python number it holds
        if not isinstance(other, (Array, bool, int, float, complex)):
            return NotImplemented
        f = getattr(_ew, fname)
        return f(other, self) if reflected else f(self, other)

    def _iop(self, fname, other):
        other = host_scalar(other)
        if not isinstance(other, (Array, bool, int, float, complex)):
            return NotImplemented
        if isinstance(other, Array) and other is not self:
            if other._device is not self._device:
                same_device(fname, self, other)     # before the overlap copy below
            from ._indexing import _overlaps

            if _overlaps(self, other) and (other._ptr, other._strides) != (self._ptr, self._strides):
                other = _copy(other)
        try:
            getattr(_ew, fname)._apply(self, other, self)
        except InplaceDtypeError as e:
            # NumPy's in-place casting rule, 'same_kind': int32 += int64, float32 *= float64
            if not np.can_cast(e.result_dtype, self._dtype, "same_kind"):
                raise
            self[...] = getattr(_ew, fname)(self, other)   # (__setitem__ casts to self's dtype)
        return self

    def __add__(self, other, /):
        if type(other) is Array:
            return _ew.add(self, other)
        return self._binop('add', other)

    def __radd__(self, other, /):
        return self._binop('add', other, True)

    def __iadd__(self, other, /):
        return self._iop('add', other)

    def __sub__(self, other, /):
        if type(other) is Array:
            return _ew.subtract(self, other)
        return self._binop('subtract', other)

    def __rsub__(self, other, /):
        return self._binop('subtract', other, True)

    def __isub__(self, other, /):
        return self._iop('subtract', other)

    def __mul__(self, other, /):
        if type(other) is Array:
            return _ew.multiply(self, other)
        return self._binop('multiply', other)

    def __rmul__(self, other, /):
        return self._binop('multiply', other, True)

    def __imul__(self, other, /):
        return self._iop('multiply', other)

    def __truediv__(self, other, /):
        if type(other) is Array:
            return _ew.divide(self, other)
        return self._binop('divide', other)

    def __rtruediv__(self, other, /):
        return self._binop('divide', other, True)

    def __itruediv__(self, other, /):
        return self._iop('divide', other)

    def __floordiv__(self, other, /):
        if type(other) is Array:
            return _ew.floor_divide(self, other)
        return self._binop('floor_divide', other)

    def __rfloordiv__(self, other, /):
        return self._binop('floor_divide', other, True)

    def __ifloordiv__(self, other, /):
        return self._iop('floor_divide', other)

    def __mod__(self, other, /):
        if type(other) is Array:
            return _ew.remainder(self, other)
        return self._binop('remainder', other)

    def __rmod__(self, other, /):
        return self._binop('remainder', other, True)

    def __imod__(self, other, /):
        return self._iop('remainder', other)

    def __pow__(self, other, /):
        if type(other) is Array:
            return _ew.pow(self, other)
        return self._binop('pow', other)

    def __rpow__(self, other, /):
        return self._binop('pow', other, True)

    def __ipow__(self, other, /):
        return self._iop('pow', other)

    def __and__(self, other, /):
        if type(other) is Array:
            return _ew.bitwise_and(self, other)
        return self._binop('bitwise_and', other)

    def __rand__(self, other, /):
        return self._binop('bitwise_and', other, True)

    def __iand__(self, other, /):
        return self._iop('bitwise_and', other)

    def __or__(self, other, /):
        if type(other) is Array:
            return _ew.bitwise_or(self, other)
        return self._binop('bitwise_or', other)

    def __ror__(self, other, /):
        return self._binop('bitwise_or', other, True)

    def __ior__(self, other, /):
        return self._iop('bitwise_or', other)

    def __xor__(self, other, /):
        if type(other) is Array:
            return _ew.bitwise_xor(self, other)
        return self._binop('bitwise_xor', other)

    def __rxor__(self, other, /):
        return self._binop('bitwise_xor', other, True)

    def __ixor__(self, other, /):
        return self._iop('bitwise_xor', other)

    def __lshift__(self, other, /):
        if type(other) is Array:
            return _ew.bitwise_left_shift(self, other)
        return self._binop('bitwise_left_shift', other)

    def __rlshift__(self, other, /):
        return self._binop('bitwise_left_shift', other, True)

    def __ilshift__(self, other, /):
        return self._iop('bitwise_left_shift', other)

    def __rshift__(self, other, /):
        if type(other) is Array:
            return _ew.bitwise_right_shift(self, other)
        return self._binop('bitwise_right_shift', other)

    def __rrshift__(self, other, /):
        return self._binop('bitwise_right_shift', other, True)

    def __irshift__(self, other, /):
        return self._iop('bitwise_right_shift', other)

    def __eq__(self, other, /):
        if type(other) is Array:
            return _ew.equal(self, other)
        return self._binop('equal', other)

    def __ne__(self, other, /):
        if type(other) is Array:
            return _ew.not_equal(self, other)
        return self._binop('not_equal', other)

    def __lt__(self, other, /):
        if type(other) is Array:
            return _ew.less(self, other)
        return self._binop('less', other)

    def __le__(self, other, /):
        if type(other) is Array:
            return _ew.less_equal(self, other)
        return self._binop('less_equal', other)

    def __gt__(self, other, /):
        if type(other) is Array:
            return _ew.greater(self, other)
        return self._binop('greater', other)

    def __ge__(self, other, /):
        if type(other) is Array:
            return _ew.greater_equal(self, other)
        return self._binop('greater_equal', other)

    def __neg__(self, /):
        return _ew.negative(self)

    def __pos__(self, /):
        return _ew.positive(self)

    def __abs__(self, /):
        return _ew.abs(self)

    def __invert__(self, /):
        return _ew.bitwise_invert(self)

    def __matmul__(self, other, /):
        if not isinstance(other, Array):
            return NotImplemented
        return (_la or _linear_algebra()).matmul(self, other)

    def __rmatmul__(self, other, /):
        if not isinstance(other, Array):
            return NotImplemented
        return (_la or _linear_algebra()).matmul(other, self)

    def __imatmul__(self, other, /):
        # in place only when the product keeps this array's dtype and shape (checked before
        # any device work; the planner raises matmul's own errors first)
        from . import _linear_algebra as _la

        if not isinstance(other, Array):
            return NotImplemented
        same_device("matmul", self, other)
        shape = _la._matmul_shape(self, other)
        odt = _dt.promote_types(self._dtype, other._dtype)
        if odt != self._dtype:
            raise TypeError(f"__imatmul__: in-place result dtype {odt.name} differs from the array's dtype "
                            f"{self._dtype.name}")
        if shape != self._shape:
            raise ValueError(f"__imatmul__: in-place result shape {shape} differs from the array's shape "
                             f"{self._shape}")
        self[...] = _la.matmul(self, other)
        return self



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



# ---------------------------------------------------------------------------- building arrays
_strides_cache: dict = {}


def _empty(shape: tuple, dtype, dev: Device) -> Array:
    """Uninitialized C-contiguous array from the device's pool (no checks): the one
    allocation helper of the namespace (``gparray._creation._empty`` is an alias)."""
    isz = dtype.itemsize
    buf = alloc(math.prod(shape) * isz, dev._id)
    key = (shape, isz)
    st = _strides_cache.get(key)
    if st is None:
        st = _shapes.c_strides(shape, isz)
        if len(_strides_cache) < 4096:
            _strides_cache[key] = st
    return Array._new(buf, 0, shape, st, dtype, dev)


def _from_layout(x) -> Array:
    """An Array over layout ``x`` (a ``_shapes.Layout`` from a lower layer): same buffer."""
    return Array._new(x._buf, x._offset, x._shape, x._strides, x._dtype, x._device)


def _from_host(a: np.ndarray, dev: Device, dtype=None) -> Array:
    """Upload NumPy array ``a`` (converted to ``dtype`` and made C-contiguous) to ``dev``."""
    if dtype is None:
        dtype = _dt._normalize_dtype(a.dtype, "asarray")
    a = np.asarray(a, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    return Array._new(_transfer.from_host(a, dev), 0, a.shape, _shapes.c_strides(a.shape, dtype.itemsize),
                      dtype, dev)


def _from_pickle(a: np.ndarray) -> Array:
    """Rebuild a pickled Array (``Array.__reduce__``): ``a`` uploaded to the current device."""
    return _from_host(a, current_device())


def _to_host(x) -> np.ndarray:
    """Download ``x`` into a new C-contiguous NumPy array (synchronizes the current stream)."""
    return _transfer.to_host(x)


def _copy(x, dtype=None) -> Array:
    """A new C-contiguous array with the values of ``x`` (converted to ``dtype``)."""
    out = _empty(x._shape, x._dtype if dtype is None else dtype, x._device)
    _ew_engine.copy_into(out, x)
    return out


def _copy_to_device(x, dev: Device, stream=None) -> Array:
    """Peer copy of ``x`` to another GPU (C-contiguous), queued on ``stream`` ((handle,
    device ordinal); None: the current stream of x's device)."""
    return Array._new(_transfer.to_device(x, dev, stream), 0, x._shape, _shapes.c_strides(x._shape, x._dtype.itemsize),
                      x._dtype, dev)


# The elementwise namespace module the operators call; bound by gparray/_elementwise_funcs.py
# (_install_operators) when it is imported.
_ew = None
# The namespace module of ``@`` (gparray/_linear_algebra.py), bound by it when it is imported.
_la = None


def _linear_algebra():
    from . import _linear_algebra

    return _linear_algebra

__all__ = ["Array"]
