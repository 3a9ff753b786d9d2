"""The Array class's slot for the modules below it, and the helpers that build Arrays.

The Array layer is a small stack: the operations Array's operators and indexing are made of
(``_ops``, ``_elementwise``, ``_indexing``, ``_matmul``) sit below the class (``_object``),
because the class body is built from them. They construct their results through this module:
``_object.py`` hands the class down once, right after defining it (``bind``), before any
array can exist; nothing here imports it. The namespace imports these helpers from
``gparray._array``: ``_empty`` (an uninitialized C-contiguous array, the one allocation
helper), ``_from_layout``, ``_from_host``, ``_to_host``, ``_copy`` and ``_copy_to_device``.
"""
from __future__ import annotations

import math

import numpy as np

from .._core import _dtypes as _dt
from .._core._device import Device, current_device
from .._engine import _elementwise as _ew_engine
from .._engine import _shapes, _transfer
from .._memory import alloc

# The Array class (gparray/_array/_object.py), bound before any array exists.
Array = None


def bind(cls) -> None:
    """Called once by ``_object.py`` with the Array class it has just defined."""
    global Array
    Array = cls


def namespace():
    """The public namespace, ``gparray`` (what ``Array.__array_namespace__`` returns), looked
    up when called: the Array layer's one reference upward, for the NumPy-style methods and
    NumPy's ufuncs, which delegate to the namespace function of the same name."""
    import gparray

    return gparray


_strides_cache: dict = {}


def _empty(shape: tuple, dtype, dev: Device):
    """Uninitialized C-contiguous array from the device's pool (no checks): the one
    allocation helper of the namespace."""
    isz = dtype.itemsize
    buf = alloc(math.prod(shape) * isz, dev._id)
    key = (shape, isz)
    st = _strides_cache.get(key)
    if st is None:
        st = _shapes.c_strides(shape, isz)
        if len(_strides_cache) < 4096:
            _strides_cache[key] = st
    return Array._new(buf, 0, shape, st, dtype, dev)


def _from_layout(x):
    """An Array over layout ``x`` (a ``_shapes.Layout`` from a lower layer): same buffer."""
    return Array._new(x._buf, x._offset, x._shape, x._strides, x._dtype, x._device)


def _from_host(a: np.ndarray, dev: Device, dtype=None):
    """Upload NumPy array ``a`` (converted to ``dtype`` and made C-contiguous) to ``dev``."""
    if dtype is None:
        dtype = _dt._normalize_dtype(a.dtype, "asarray")
    a = np.asarray(a, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    return Array._new(_transfer.from_host(a, dev), 0, a.shape, _shapes.c_strides(a.shape, dtype.itemsize),
                      dtype, dev)


def _from_pickle(a: np.ndarray):
    """Rebuild a pickled Array (``Array.__reduce__``): ``a`` uploaded to the current device."""
    return _from_host(a, current_device())


def _to_host(x) -> np.ndarray:
    """Download ``x`` into a new C-contiguous NumPy array (synchronizes the current stream)."""
    return _transfer.to_host(x)


def _copy(x, dtype=None):
    """A new C-contiguous array with the values of ``x`` (converted to ``dtype``)."""
    out = _empty(x._shape, x._dtype if dtype is None else dtype, x._device)
    _ew_engine.copy_into(out, x)
    return out


def _copy_to_device(x, dev: Device, stream=None):
    """Peer copy of ``x`` to another GPU (C-contiguous), queued on ``stream`` ((handle,
    device ordinal); None: the current stream of x's device)."""
    return Array._new(_transfer.to_device(x, dev, stream), 0, x._shape,
                      _shapes.c_strides(x._shape, x._dtype.itemsize), x._dtype, dev)


def _fill_scalar(fill_value, dtype, name):
    """``fill_value`` as a host scalar of ``dtype`` (OverflowError when it does not fit)."""
    if isinstance(fill_value, Array):
        fill_value = fill_value._to_numpy().reshape(()).item()
    if dtype.kind in "iu" and isinstance(fill_value, (int, np.integer)) and not isinstance(fill_value, bool):
        info = np.iinfo(dtype)
        if not info.min <= int(fill_value) <= info.max:
            raise OverflowError(f"{name}: fill value {fill_value} is out of range for {dtype}")
    if dtype.kind in "iub" and isinstance(fill_value, complex):
        raise TypeError(f"{name}: cannot fill a {dtype} array with a complex value")
    if dtype.kind in "iu" and isinstance(fill_value, float):
        if not math.isfinite(fill_value):
            raise ValueError(f"{name}: cannot fill an integer array with {fill_value}")
    if dtype.kind == "f" and isinstance(fill_value, complex):
        raise TypeError(f"{name}: cannot fill a {dtype} array with a complex value")
    return fill_value


def _scalar_array(value, dtype, dev: Device, name: str):
    """A 0-d array of ``dtype`` on ``dev`` holding Python scalar ``value`` (checked as
    ``_fill_scalar`` checks it, errors naming ``name``): a scalar operand made an array."""
    v = _fill_scalar(value, dtype, name)
    out = _empty((), dtype, dev)
    _ew_engine.fill(out, v)
    return out
