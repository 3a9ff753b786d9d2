"""Creation functions (spec section "Creation Functions"): asarray, from_dlpack, empty,
zeros, ones, full, the *_like forms, arange, linspace, eye, tril, triu, meshgrid, plus astype
(spec: data type functions) and logspace (an extension, as NumPy's and CuPy's).

Allocation and host transfers live below: ``_empty``, ``_from_host``, ``_to_host``, ``_copy``
and ``_fill_scalar`` in gparray/_array/_build.py (over gparray/_engine/_transfer.py)."""
from __future__ import annotations

import math
import operator

import numpy as np

from .._core import _backend
from .._engine import _dlpack, _transfer
from .._core import _dtypes as _dt
from .._array import _elementwise as _ef
from .._array import Array, _copy, _empty, _fill_scalar, _from_host, _from_layout, _to_host
from .._core._device import normalize_device, same_device
from .._engine import _elementwise as _ew
from .._engine._launch import ctype, launch


# ---------------------------------------------------------------------------- helpers
def _normalize_shape(shape, name: str) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"{name}: negative dimensions are not allowed, got {out}")
    return out


# ---------------------------------------------------------------------------- asarray
def _infer_scalar_dtype(v, name: str):
    if isinstance(v, (bool, np.bool_)):
        return _dt.bool
    if isinstance(v, int):
        return _dt.int64
    if isinstance(v, float):
        return _dt.float64
    if isinstance(v, complex):
        return _dt.complex128
    raise TypeError(f"{name}: expected a bool, int, float or complex, got {type(v).__name__}")


def _has_typed(obj) -> bool:
    """Whether a nested sequence holds a NumPy scalar or array (whose dtype then counts)."""
    if isinstance(obj, (np.generic, np.ndarray)):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_typed(o) for o in obj)
    return False


def _nested_to_numpy(obj, dtype, name: str) -> np.ndarray:
    """NumPy array of a Python scalar / nested sequence with the spec's default dtypes; a
    sequence holding NumPy scalars or arrays keeps the dtype NumPy gives it (as NumPy,
    CuPy and PyTorch do: ``[np.int32(1), np.int32(2)]`` is int32)."""
    if dtype is not None:
        try:
            return np.asarray(obj, dtype=dtype)
        except OverflowError as e:
            raise OverflowError(f"{name}: {e}") from None
    a = np.asarray(obj)
    k = a.dtype.kind
    if k in "biufc" and _dt._as_dtype(a.dtype) is not None and _has_typed(obj):
        return a
    if k == "b":
        return a
    if k == "i":
        return a.astype(np.int64, copy=False)
    if k == "u":
        if a.dtype == np.uint64 or a.dtype.itemsize == 8:
            raise OverflowError(f"{name}: Python int out of range for the default integer dtype int64")
        return a.astype(np.int64, copy=False)
    if k == "f":
        return a.astype(np.float64, copy=False)
    if k == "c":
        return a.astype(np.complex128, copy=False)
    if k == "O":
        raise OverflowError(f"{name}: Python int out of range for int64 (or an unsupported object)")
    raise TypeError(f"{name}: cannot make an array from {type(obj).__name__} (NumPy dtype {a.dtype})")


def _contains_arrays(obj) -> bool:
    if isinstance(obj, Array):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_arrays(o) for o in obj)
    return False


def _host_nested(obj):
    """Replace gparray Arrays nested in lists/tuples by NumPy copies."""
    if isinstance(obj, Array):
        return obj._to_numpy()
    if isinstance(obj, (list, tuple)):
        return [_host_nested(o) for o in obj]
    return obj


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """Convert ``obj`` (Array, CuPy/PyTorch/DLPack producer, NumPy array, scalar, nested
    sequence or buffer) to an Array; ``copy`` follows the spec (False: never copy, or raise)."""
    dtype = _dt._normalize_dtype(dtype, "asarray")
    if isinstance(obj, Array):
        dev = obj._device if device is None else normalize_device(device, "asarray")
        same_dev = dev == obj._device
        if (dtype is None or dtype == obj._dtype) and same_dev:
            return _copy(obj) if copy else obj
        if copy is False:
            raise ValueError("asarray: copy=False, but changing dtype or device needs a copy")
        x = obj if same_dev else obj.to_device(dev)
        if dtype is not None and dtype != x._dtype:
            return _copy(x, dtype)
        return _copy(x) if (copy and x is obj) else x
    # zero-copy device producers (CuPy, PyTorch CUDA tensors, ...)
    cp_mod = _backend._cupy
    if cp_mod is not None and isinstance(obj, cp_mod.ndarray):
        return asarray(_from_layout(_dlpack.cupy_layout(obj)), dtype=dtype, device=device, copy=copy)
    if hasattr(obj, "__dlpack_device__") and not isinstance(obj, np.ndarray):
        try:
            dev_type = int(obj.__dlpack_device__()[0])
        except Exception:
            dev_type = None
        if dev_type in (2, 13):
            return asarray(from_dlpack(obj), dtype=dtype, device=device, copy=copy)
    if hasattr(obj, "__cuda_array_interface__"):
        cp = _backend.cupy()
        return asarray(cp.asarray(obj), dtype=dtype, device=device, copy=copy)
    # host data: always a copy
    if copy is False:
        raise ValueError("asarray: copy=False, but host data must be copied to the GPU")
    dev = normalize_device(device, "asarray")
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        a = np.asarray(obj)
        if dtype is None:
            dtype = _dt._normalize_dtype(a.dtype, "asarray")
        return _from_host(a, dev, dtype)
    if isinstance(obj, (bool, int, float, complex)):
        if dtype is None:
            dtype = _infer_scalar_dtype(obj, "asarray")
        return _from_host(_nested_to_numpy(obj, dtype, "asarray"), dev, dtype)
    if isinstance(obj, (list, tuple)):
        if _contains_arrays(obj):
            obj = _host_nested(obj)
        a = _nested_to_numpy(obj, dtype, "asarray")
        return _from_host(a, dev, _dt._normalize_dtype(a.dtype, "asarray") if dtype is None else dtype)
    if isinstance(obj, (bytes, bytearray, memoryview)) or hasattr(obj, "__array_interface__") \
            or hasattr(obj, "__array__"):
        a = np.asarray(obj)
        if a.dtype.kind == "O":
            raise TypeError(f"asarray: cannot convert {type(obj).__name__} to an array")
        return _from_host(a, dev, _dt._normalize_dtype(a.dtype, "asarray") if dtype is None else dtype)
    raise TypeError(f"asarray: cannot convert {type(obj).__name__} to an array")


def from_dlpack(x, /, *, device=None, copy=None):
    """Array sharing (or, when needed or asked, copying) the memory of a DLPack producer."""
    if isinstance(x, Array):
        return _placed(x, device, copy, "the array")
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(x).__name__}")
    dev_type, dev_id = _dlpack.producer_device(x)
    want_cpu = isinstance(device, str) and device.strip().lower() == "cpu"
    if dev_type in (_dlpack.kDLCPU, _dlpack.kDLCUDAHost) or want_cpu:
        if copy is False:
            raise ValueError("from_dlpack: the producer is on the host; moving it to the GPU needs a copy")
        host = _dlpack.host_array(x)
        dev = normalize_device(None if want_cpu else device, "from_dlpack")
        return _from_host(host, dev)
    if dev_type not in (_dlpack.kDLCUDA, _dlpack.kDLCUDAManaged):
        raise BufferError(f"from_dlpack: unsupported DLPack device type {dev_type}")
    return _placed(_from_layout(_dlpack.device_layout(x, dev_id)), device, copy, "the producer")


def _placed(out, device, copy, what):
    """``out`` moved to ``device`` (a copy, refused with copy=False) or, with copy=True,
    copied in place; else ``out`` itself."""
    if device is not None:
        dev = normalize_device(device, "from_dlpack")
        if dev != out._device:
            if copy is False:
                raise ValueError(f"from_dlpack: copy=False but {what} is on another device")
            return out.to_device(dev)
    return _copy(out) if copy else out


# ---------------------------------------------------------------------------- filled arrays
def empty(shape, *, dtype=None, device=None):
    """Uninitialized array of ``shape`` (default dtype float64)."""
    dtype = _dt._normalize_dtype(dtype, "empty") or _dt._default_float
    return _empty(_normalize_shape(shape, "empty"), dtype, normalize_device(device, "empty"))


def zeros(shape, *, dtype=None, device=None):
    """Array of ``shape`` filled with zeros (default dtype float64)."""
    dtype = _dt._normalize_dtype(dtype, "zeros") or _dt._default_float
    out = _empty(_normalize_shape(shape, "zeros"), dtype, normalize_device(device, "zeros"))
    _transfer.memset0(out)
    return out


def _fill_value_dtype(fill_value, name):
    if isinstance(fill_value, Array):
        if fill_value.ndim != 0:
            raise ValueError(f"{name}: fill_value must be a scalar or a 0-d array")
        return fill_value._dtype
    return _infer_scalar_dtype(fill_value, name)


def full(shape, fill_value, *, dtype=None, device=None):
    """Array of ``shape`` filled with ``fill_value`` (dtype inferred from it when None)."""
    dtype = _dt._normalize_dtype(dtype, "full") or _fill_value_dtype(fill_value, "full")
    v = _fill_scalar(fill_value, dtype, "full")
    out = _empty(_normalize_shape(shape, "full"), dtype, normalize_device(device, "full"))
    _ew.fill(out, v)
    return out


def ones(shape, *, dtype=None, device=None):
    """Array of ``shape`` filled with ones (default dtype float64)."""
    dtype = _dt._normalize_dtype(dtype, "ones") or _dt._default_float
    out = _empty(_normalize_shape(shape, "ones"), dtype, normalize_device(device, "ones"))
    _ew.fill(out, 1)
    return out


def _like(x, name, dtype, device):
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    dtype = _dt._normalize_dtype(dtype, name) or x._dtype
    dev = x._device if device is None else normalize_device(device, name)
    return dtype, dev


def empty_like(x, /, *, dtype=None, device=None):
    """Uninitialized array with the shape (and by default dtype/device) of ``x``."""
    dtype, dev = _like(x, "empty_like", dtype, device)
    return _empty(x._shape, dtype, dev)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros with the shape (and by default dtype/device) of ``x``."""
    dtype, dev = _like(x, "zeros_like", dtype, device)
    out = _empty(x._shape, dtype, dev)
    _transfer.memset0(out, "zeros_like")
    return out


def ones_like(x, /, *, dtype=None, device=None):
    """Ones with the shape (and by default dtype/device) of ``x``."""
    dtype, dev = _like(x, "ones_like", dtype, device)
    out = _empty(x._shape, dtype, dev)
    _ew.fill(out, 1)
    return out


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` with the shape (and by default dtype/device) of ``x``."""
    dtype, dev = _like(x, "full_like", dtype, device)
    if isinstance(fill_value, Array):   # an operand, like x (``device`` places the result)
        same_device("full_like", x, fill_value, what="x and fill_value")
    v = _fill_scalar(fill_value, dtype, "full_like")
    out = _empty(x._shape, dtype, dev)
    _ew.fill(out, v)
    return out


# ---------------------------------------------------------------------------- ranges
def _is_real_scalar(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in [start, stop) (NumPy's arange; default int64 or float64)."""
    for v in (start, stop, step):
        if v is not None and not _is_real_scalar(v):
            raise TypeError(f"arange: start, stop and step must be real numbers, got {type(v).__name__}")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dtype = _dt._normalize_dtype(dtype, "arange")
    all_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    if dtype is None:
        dtype = _dt._default_int if all_int else _dt._default_float
    if all_int:
        n = max(0, -(-(int(stop) - int(start)) // int(step)))
    else:
        n = max(0, math.ceil((stop - start) / step))
    if dtype.kind == "b" or dtype.kind == "c":
        raise TypeError(f"arange: dtype {dtype} is not supported (real numeric dtypes only)")
    dev = normalize_device(device, "arange")
    out = _empty((n,), dtype, dev)
    if n:
        if all_int and dtype.kind in "iu":
            info = np.iinfo(dtype)
            last = int(start) + (n - 1) * int(step)
            if not (info.min <= int(start) <= info.max and info.min <= last <= info.max):
                raise OverflowError(f"arange: values from {start} to {last} do not fit {dtype}")
            acc, a0, st = "long long", np.int64(start), np.int64(step)
        elif dtype in _dt._compute:
            # float16: NumPy steps by float16(start + step) - float16(start) (its fill
            # function works from the first two stored elements)
            h0 = float(dtype.type(start))
            acc, a0, st = "double", np.float64(h0), np.float64(float(dtype.type(start + step)) - h0)
        else:
            acc, a0, st = "double", np.float64(start), np.float64((start + step) - start if not all_int else step)
        launch("creation", f"gp_arange<{ctype(dtype)}, {acc}>", dev._id, (n + 255) // 256,
               (np.uint64(out._ptr), a0, st, np.int64(n)))
    return out


def _linspace_bound(v):
    """(value, dtype) of a linspace bound: a 0-d Array read as a Python number (one device
    read) with its dtype, a NumPy scalar with its dtype, a Python number with None (weak,
    as NumPy's promotion treats it)."""
    if isinstance(v, np.generic):
        return v.item(), v.dtype
    if not isinstance(v, Array):
        return v, None
    if v.ndim != 0:
        raise ValueError(f"linspace: start and stop must be numbers or 0-d arrays, got an array of shape {v.shape}")
    if v._dtype.kind == "b":
        raise TypeError("linspace: start and stop must be numbers, got a bool array")
    return _to_host(v).item(), v._dtype


def _linspace_real(out, start, stop, num, div, endpoint, typed, dev):
    """Fill ``out`` as NumPy's linspace does: in float32 arithmetic when the bounds' dtypes
    promote (with a Python float) to float32 or float16, else in float64; step = (stop -
    start) / div rounded in that type, sample i = i * step + start (two roundings)."""
    ct = np.result_type(*typed, 1.0) if typed else np.dtype(np.float64)
    f = np.float32 if ct.itemsize < 8 else np.float64
    s, e = f(start), f(stop)
    with np.errstate(all="ignore"):
        delta = f(e - s)
        step = f(delta / f(div)) if div > 0 else f(0.0)
    launch("creation", f"gp_linspace<{ctype(out._dtype)}, {'float' if f is np.float32 else 'double'}>",
           dev._id, (num + 255) // 256,
           (np.uint64(out._ptr), s, e, step, delta, f(max(div, 1)), np.int64(num), np.bool_(endpoint and num > 1)))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """``num`` evenly spaced samples from ``start`` to ``stop`` (inclusive when ``endpoint``).

    ``start`` and ``stop`` are numbers or, like NumPy's, 0-d Arrays (read once each; the
    default dtype is then chosen as for the Python numbers they hold, and the default device
    is the first such array's). Real samples are NumPy's bit for bit: computed in float32
    when both bounds are float32 arrays or scalars (or one is and the other a Python
    number), else in float64, then cast to ``dtype``."""
    # 0-d Array bounds on one device (before either is read); ``device`` places the result
    bound_dev = same_device("linspace", *(v for v in (start, stop) if isinstance(v, Array)),
                            what="start and stop")
    if device is None:
        device = bound_dev
    (start, t0), (stop, t1) = _linspace_bound(start), _linspace_bound(stop)
    for v in (start, stop):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, complex, np.number)):
            raise TypeError(f"linspace: start and stop must be numbers or 0-d arrays, got {type(v).__name__}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    dtype = _dt._normalize_dtype(dtype, "linspace")
    if dtype is None:
        dtype = _dt._default_complex if is_complex else _dt._default_float
    if dtype.kind not in "fc":
        raise TypeError(f"linspace: dtype must be a floating-point dtype, got {dtype}")
    if is_complex and dtype.kind != "c":
        raise TypeError("linspace: complex start/stop need a complex dtype")
    dev = normalize_device(device, "linspace")
    out = _empty((num,), dtype, dev)
    if num == 0:
        return out
    div = (num - 1) if endpoint else num
    if dtype.kind == "c":
        s, e = complex(start), complex(stop)
        d = (e - s) / div if div > 0 else 0j
        real = "float" if dtype == _dt.complex64 else "double"
        f = np.float64
        launch("creation", f"gp_linspace_complex<{real}, double>", dev._id, (num + 255) // 256,
               (np.uint64(out._ptr), f(s.real), f(s.imag), f(e.real), f(e.imag), f(d.real), f(d.imag),
                np.int64(num), np.bool_(endpoint and num > 1)))
    else:
        _linspace_real(out, start, stop, num, div, endpoint, [t for t in (t0, t1) if t is not None], dev)
    return out


def _logspace_arg(v, what: str) -> None:
    """Check a bound or base of logspace: a number or a 0-d Array (not bool); not read here."""
    if isinstance(v, Array):
        if v.ndim != 0 or v._dtype.kind == "b":
            raise ValueError(f"logspace: {what} must be a number or a 0-d non-bool array, got an array "
                             f"of shape {v.shape} and dtype {v._dtype}")
    elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, complex, np.number)):
        raise TypeError(f"logspace: {what} must be a number or a 0-d array, got {type(v).__name__}")


def logspace(start, stop, /, num, *, base=10.0, endpoint=True, dtype=None, device=None):
    """``num`` samples ``base ** t`` for ``t`` evenly spaced from ``start`` to ``stop``
    (inclusive when ``endpoint``): an extension, as NumPy's and CuPy's ``logspace`` (not in
    the standard).

    ``pow(base, linspace(start, stop, num, endpoint=endpoint))`` as NumPy computes it: float64,
    or complex128 when ``start``, ``stop`` or ``base`` is complex, converted to ``dtype`` when
    one is given (integer dtypes truncate, as in NumPy). ``start``, ``stop`` and ``base`` are
    numbers or 0-d Arrays (``base`` is read once; the default device is the first array's)."""
    dtype = _dt._normalize_dtype(dtype, "logspace")
    for what, v in (("start", start), ("stop", stop), ("base", base)):
        _logspace_arg(v, what)
    bound_dev = same_device("logspace", *(v for v in (start, stop, base) if isinstance(v, Array)),
                            what="start, stop and base")
    if device is None:
        device = bound_dev
    if isinstance(base, Array):
        base = _to_host(base).item()
    elif isinstance(base, np.generic):
        base = base.item()
    out = _ef.pow(base, linspace(start, stop, num, endpoint=endpoint, device=device))
    return out if dtype is None or dtype == out._dtype else astype(out, dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """2-D array with ones on diagonal ``k`` and zeros elsewhere."""
    n_rows = operator.index(n_rows)
    n_cols = n_rows if n_cols is None else operator.index(n_cols)
    k = operator.index(k)
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"eye: dimensions must be non-negative, got ({n_rows}, {n_cols})")
    dtype = _dt._normalize_dtype(dtype, "eye") or _dt._default_float
    dev = normalize_device(device, "eye")
    out = _empty((n_rows, n_cols), dtype, dev)
    n = n_rows * n_cols
    k = max(-n_rows - 1, min(n_cols + 1, k))  # any |k| past the matrix gives zeros; keep it in int64
    if n:
        launch("creation", f"gp_eye<{ctype(dtype)}>", dev._id, (n + 255) // 256,
               (np.uint64(out._ptr), np.int64(n_rows), np.int64(n_cols), np.int64(k)))
    return out


def _tri(x, k, upper: bool, name: str):
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name}: expected an array with at least 2 dimensions, got {x.ndim}")
    k = operator.index(k)
    return tri_mask_inplace(_copy(x), k, upper)


def tri_copy(out, x, trans: bool, sb: int) -> None:
    """``out`` (a new C-contiguous stack of n x n matrices, x's dtype) = the upper triangle
    of each of x's matrices (``trans``: of its transpose), zeros below; x read through its
    strides, ``sb`` the byte stride from one of its matrices to the next. One pass of
    gp_tri_copy that reads only the triangle."""
    n = out._shape[-1]
    count = out.size // (n * n) if n else 0
    if count == 0:
        return
    isz = x._dtype.itemsize
    tiles = -(-n // 32)
    launch("creation", f"gp_tri_copy<{ctype(x._dtype)}, {'true' if trans else 'false'}>", x._device._id,
           count * tiles * tiles, (np.uint64(out._ptr), np.uint64(x._ptr), np.int64(n), np.int64(tiles),
                                   np.int64(sb // isz), np.int64(x._strides[-2] // isz),
                                   np.int64(x._strides[-1] // isz)))


def tri_mask_inplace(out, k: int, upper: bool):
    """Zero, in place, the elements of the C-contiguous array ``out`` below diagonal ``k`` of
    its last two axes (``upper``: what ``triu`` keeps stays) or above it (else); returns
    ``out``. One pass of gp_tri_mask, which writes only the zeroed elements."""
    n = out.size
    if n:
        rows, cols = out._shape[-2], out._shape[-1]
        launch("creation", f"gp_tri_mask<{ctype(out._dtype)}, {'true' if upper else 'false'}>", out._device._id,
               (n + 255) // 256, (np.uint64(out._ptr), np.int64(rows), np.int64(cols), np.int64(k), np.int64(n)))
    return out


def tril(x, /, *, k=0):
    """Copy of ``x`` with the elements above diagonal ``k`` of the last two axes zeroed."""
    return _tri(x, k, False, "tril")


def triu(x, /, *, k=0):
    """Copy of ``x`` with the elements below diagonal ``k`` of the last two axes zeroed."""
    return _tri(x, k, True, "triu")


def meshgrid(*arrays, indexing="xy"):
    """Coordinate matrices from 1-D coordinate vectors (``indexing`` 'xy' or 'ij')."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"meshgrid: expected gparray Arrays, got {type(a).__name__}")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: expected 1-D arrays, got {a.ndim} dimensions")
    same_device("meshgrid", *arrays, what="arrays")
    if len({a._dtype for a in arrays}) > 1:
        raise ValueError("meshgrid: all arrays must have the same dtype")
    n = len(arrays)
    shape = [a._shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    shape = tuple(shape)
    outs = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        st = [0] * n
        st[axis] = a._strides[0]
        view = a._view(a._offset, shape, tuple(st))
        outs.append(_copy(view))
    return tuple(outs)


# ---------------------------------------------------------------------------- astype
def astype(x, dtype, /, *, copy=True, device=None):
    """Copy of ``x`` converted to ``dtype`` (``x`` itself when nothing changes and copy=False)."""
    if not isinstance(x, Array):
        raise TypeError(f"astype: expected a gparray Array, got {type(x).__name__}")
    dtype = _dt._normalize_dtype(dtype, "astype")
    if dtype is None:
        raise TypeError("astype: dtype is required")
    dev = x._device if device is None else normalize_device(device, "astype")
    if dev != x._device:
        x = x.to_device(dev)
        if dtype == x._dtype:
            return x
    if dtype == x._dtype and not copy:
        return x
    return _copy(x, dtype)
