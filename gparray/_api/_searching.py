"""Searching functions (spec section "Searching Functions"): argmax, argmin, count_nonzero,
nonzero, searchsorted, where.

argmax/argmin/count_nonzero are reductions (gparray/_engine/_reduce.py); nonzero counts,
scans and compacts (gparray/_engine/_search.py) in two passes around one device-to-host
read of the count, which decides the output shape; searchsorted is one binary search per
needle.
"""
from __future__ import annotations

from .._core import _dtypes as _dt
from .._array import Array, _copy, _empty, _scalar_array
from .._array._indexing import nonzero as _nonzero
from .._core._device import same_device
from .._engine import _elementwise as _ew
from .._engine import _search, _shapes
from .._engine._shapes import broadcast_shapes
from ._statistical import _check, _reduce_into

_PY = (bool, int, float, complex)


_where_dtypes: dict = {}  # (x1 dtype, x2 dtype) -> result dtype, for promotions that succeeded


def _py_type(v) -> type:
    """Which of bool, int, float, complex a Python scalar is (subclasses included)."""
    return next(t for t in _PY if isinstance(v, t) and (t is not int or not isinstance(v, bool)))


def where(condition, x1, x2, /):
    """Elements of ``x1`` where ``condition`` is True, of ``x2`` elsewhere (either or both may
    be Python scalars; two scalars give the default dtype of the wider kind, as NumPy)."""
    if type(condition) is Array and type(x1) is Array and type(x2) is Array:
        # fast path: one shape, C-contiguous, one device, a dtype pair seen before
        odt = _where_dtypes.get((x1._dtype, x2._dtype))
        if (odt is not None and condition._dtype is _dt.bool and condition._shape == x1._shape == x2._shape
                and condition._device is x1._device is x2._device and condition._is_c_contig()
                and x1._is_c_contig() and x2._is_c_contig()):
            out = _empty(x1._shape, odt, x1._device)
            _ew.where_contig(condition, x1, x2, out)
            return out
    if not isinstance(condition, Array):
        raise TypeError(f"where: condition must be a gparray Array, got {type(condition).__name__}")
    if condition._dtype != _dt.bool:
        raise TypeError(f"where: condition must have dtype bool, got {condition._dtype}")
    a1, a2 = isinstance(x1, Array), isinstance(x2, Array)
    for v in (x1, x2):
        if not isinstance(v, (Array,) + _PY):
            raise TypeError(f"where: x1 and x2 must be Arrays or Python scalars, got {type(v).__name__}")
    dev = same_device("where", condition, x1 if a1 else None, x2 if a2 else None)
    if a1 and a2:
        dtype = _where_dtypes[(x1._dtype, x2._dtype)] = _dt.promote_types(x1._dtype, x2._dtype)
    elif a1:
        dtype = _dt._scalar_result_type(x1._dtype, x2, "where")
        _dt._check_scalar_fits(dtype, x2, "where")
    elif a2:
        dtype = _dt._scalar_result_type(x2._dtype, x1, "where")
        _dt._check_scalar_fits(dtype, x1, "where")
    else:
        # two Python scalars (NumPy allows them; SciPy writes xp.where(c, 0., 1.)): the
        # default dtype of the wider kind, bool < int < float < complex
        wider = max((_py_type(x1), _py_type(x2)), key=_PY.index)
        dtype = _dt._as_dtype(wider)
        _dt._check_scalar_fits(dtype, x1, "where")
        _dt._check_scalar_fits(dtype, x2, "where")
    x1 = x1 if a1 else _scalar_array(x1, dtype, dev, "where")
    x2 = x2 if a2 else _scalar_array(x2, dtype, dev, "where")
    shape = broadcast_shapes(condition._shape, x1._shape, x2._shape, name="where")
    out = _empty(shape, dtype, dev)
    _ew.where(condition, x1, x2, out)
    return out


def _arg_reduce(op: str, x, axis, keepdims: bool):
    _check(x, op, "biuf", "a real")
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = (_shapes.normalize_axis(axis, x.ndim, op),)
    if _shapes.prod(x._shape[i] for i in axes) == 0:
        raise ValueError(f"{op}: attempt to get {op} of an empty sequence (shape {x._shape})")
    return _reduce_into(op, x, axes, keepdims, _dt.int64)


def argmax(x, /, *, axis=None, keepdims=False):
    """Index of the first largest element along ``axis`` (None: of the flattened array, C
    order); a NaN counts as the largest (the first NaN wins); int64 result."""
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    """Index of the first smallest element along ``axis`` (None: of the flattened array, C
    order); a NaN counts as the smallest (the first NaN wins); int64 result."""
    return _arg_reduce("argmin", x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """Number of nonzero elements over ``axis`` (complex: either part nonzero); int64."""
    _check(x, "count_nonzero", "biufc", "any")
    axes = _shapes.normalize_axes(axis, x.ndim, "count_nonzero")
    return _reduce_into("count_nonzero", x, axes, keepdims, _dt.int64)


def nonzero(x, /):
    """Tuple of int64 index arrays (one per dimension, C order) of the nonzero elements;
    0-d input raises ValueError. Synchronizes once to read the count."""
    _check(x, "nonzero", "biufc", "any")
    nd = x.ndim
    if nd == 0:
        raise ValueError("nonzero: expected an array with at least one dimension, got a 0-d array")
    return _nonzero(x)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Indices where the elements of ``x2`` (an array or a Python scalar) would be inserted
    into the ascending 1-D ``x1`` (or ``x1[sorter]``) to keep it sorted; NaNs sort last.
    side="left": first suitable index, "right": last. int64 result of x2's shape."""
    name = "searchsorted"
    _check(x1, name, "biuf", "a real")
    if x1.ndim != 1:
        raise ValueError(f"{name}: x1 must be one-dimensional, got {x1.ndim} dimensions")
    if side not in ("left", "right"):
        raise ValueError(f"{name}: side must be 'left' or 'right', got {side!r}")
    # x1, x2 and sorter on one device, before x2 (a scalar) or sorter is copied
    same_device(name, x1, x2 if isinstance(x2, Array) else None,
                sorter if isinstance(sorter, Array) else None)
    if isinstance(x2, Array):
        _check(x2, name, "biuf", "a real")
        ct = _dt.promote_types(x1._dtype, x2._dtype)
    elif isinstance(x2, _PY):
        ct = _dt._scalar_result_type(x1._dtype, x2, name)
        _dt._check_scalar_fits(ct, x2, name)
        if ct.kind == "c":
            raise TypeError(f"{name}: x2 must be real, got {x2!r}")
        x2 = _scalar_array(x2, ct, x1._device, name)
    else:
        raise TypeError(f"{name}: x2 must be an Array or a Python scalar, got {type(x2).__name__}")
    srt = None
    if sorter is not None:
        if not isinstance(sorter, Array) or sorter._dtype.kind not in "iu":
            raise TypeError(f"{name}: sorter must be an integer Array")
        if sorter._shape != x1._shape:
            raise ValueError(f"{name}: sorter must have x1's shape {x1._shape}, got {sorter._shape}")
        srt = sorter if sorter._dtype == _dt.int64 else _copy(sorter, _dt.int64)
    needles = x2 if x2._is_c_contig() else _copy(x2)
    out = _empty(x2._shape, _dt.int64, x1._device)
    _search.searchsorted(x1, needles, out, _dt._compute_dtype(ct), side == "right", srt)
    return out
