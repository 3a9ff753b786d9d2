"""``Array.__getitem__`` / ``__setitem__``: keys are planned by gparray/_engine/_index_plan.py
(pure, CPU-tested against NumPy) and executed here on the engines.

* VIEW: a new Array on the same buffer (views of int/slice/None/... keys are memoized per
  layout);
* GATHER: one gather launch (gparray/_engine/_index.py) reading the source through its
  strides into a C-contiguous result; boolean entries mixed with other advanced entries
  become integer arrays first (``nonzero``);
* MASK: ``x[mask]`` with a mask over every dimension of the view: count, scan, compaction
  (one synchronization for the output's size); masks over the leading dimensions go through
  ``nonzero`` and a gather (a row gather);
* FILL / COPY: a scalar or an array into the basic view (elementwise engine);
* SCATTER: one scatter launch; ``x[mask] = scalar`` is a masked ``where`` in place (no
  synchronization).
Index values are checked on the device: an out-of-range index raises NumPy's IndexError
after the launch and never touches memory outside the array.
"""
from __future__ import annotations

import numpy as np

from .._core import _dtypes as _dt
from . import _build
from .._engine import _search, _transfer
from ._build import _copy, _empty, _from_host, _scalar_array, _to_host
from .._core._device import same_device
from .._engine import _elementwise as _ew
from .._engine import _index as _ix
from .._engine import _shapes
from .._engine._index_plan import (PlanKind, gather_layout, index_shapes_of, key_signature, plan,
                                   setitem_plan)  # noqa: F401

_INT64 = np.dtype("int64")


# ---------------------------------------------------------------------------- keys
def _prepare_entry(k, x, name):
    """One key entry made ready for planning: 0-d integer Arrays become ints (one device read
    each), lists and NumPy arrays of integers or booleans become Arrays on x's device, Arrays
    on another device raise ValueError."""
    if isinstance(k, _build.Array):
        if k._device is not x._device:
            same_device(name, x, k, what="x and the index array")
        if k.ndim == 0 and k._dtype.kind in "iu":
            return int(k)
        return k
    if isinstance(k, (list, np.ndarray)):
        a = np.asarray(k)
        if a.size == 0 and a.dtype.kind not in "biu":
            a = a.astype(np.int64)
        if a.dtype.kind not in "biu":
            raise IndexError(f"{name}: arrays used as indices must be of integer or boolean type, got {a.dtype}")
        if a.ndim == 0:
            return a.item()
        return _from_host(a, x._device)
    return k


def _prepare_key(key, x, name):
    if isinstance(key, tuple):
        return tuple(_prepare_entry(k, x, name) for k in key)
    return _prepare_entry(key, x, name)


_views: dict = {}  # (shape, strides, key signature) -> (offset, shape, strides) of a VIEW
_VIEWS_MAX = 4096


_fast: dict = {}  # (x layout, index layout, device) -> (result shape, prepared launch)


def getitem(x, key):
    """``x[key]``: a view for basic keys, a new C-contiguous array for advanced ones (a key
    that is one integer Array reuses the launch prepared for the same layouts)."""
    if type(key) is _build.Array:
        d = _fast.get((x._shape, x._strides, x._dtype, key._shape, key._strides, key._dtype, key._device,
                       x._device))
        if d is not None and not (x._buf.ptr + x._offset) & 15:
            return _gather_fast(x, key, d)
    sig = key_signature(key)
    if sig is not None:
        v = _views.get((x._shape, x._strides, sig))
        if v is not None:
            return x._view(x._offset + v[0], v[1], v[2])
    key = _prepare_key(key, x, "__getitem__")
    p = plan(x._shape, x._strides, key)
    if p.kind is PlanKind.VIEW:
        if sig is not None:
            if len(_views) >= _VIEWS_MAX:
                _views.clear()
            _views[(x._shape, x._strides, sig)] = (p.offset, p.shape, p.strides)
        return x._view(x._offset + p.offset, p.shape, p.strides)
    if p.kind is PlanKind.MASK:
        a = p.advanced[0]
        if a.view_axis == 0 and a.index.ndim == len(p.shape):
            return _compact(x, p, a.index)
    return _gather(x, p, key if type(key) is _build.Array else None)


# ---------------------------------------------------------------------------- execution
def _compact(x, p, mask):
    """x[mask] for a mask over every dimension of the basic view of ``p``."""

    dev = x._device
    view = x._view(x._offset + p.offset, p.shape, p.strides)
    n = mask.size
    if n == 0:
        return _empty((0,), x._dtype, dev)
    tiles = _ix.mask_tiles(n)
    counts = _empty((tiles,), _INT64, dev)
    incl = _empty((tiles,), _INT64, dev)
    total = _ix.mask_count(mask, dev._id, counts, incl)
    out = _empty((total,), x._dtype, dev)
    if total:
        _ix.mask_compact(out._ptr, view, mask, incl, dev._id)
    return out


def _index_arrays(x, p, name):
    """(index Arrays, one per consumed view axis, in a dtype the kernel takes; the axis of x
    each indexes, for error messages; the gather layout)."""
    arrays, axes = [], []
    for a in p.advanced:
        if a.kind == "int":
            arrays.append(a.index)
            axes.append(a.axis)
        elif a.kind == "mask":
            nz = nonzero(a.index)
            arrays += nz
            axes += [a.axis + j for j in range(len(nz))]
        elif a.kind == "bool":
            z = _empty((1 if a.index else 0,), _dt.int64, x._device)
            _transfer.memset0(z)
            arrays.append(z)
            axes.append(-1)
    layout = gather_layout(p, [t._shape for t in arrays], name)
    dtypes = {t._dtype for t in arrays}
    target = _INT64 if len(dtypes) > 1 else _ix.index_conversion(arrays[0]._dtype)
    if target is not None:
        arrays = [t if t._dtype == target else _copy(t, target) for t in arrays]
    return arrays, axes, layout


def _strides_over(layout, p, arrays, isz):
    """Element strides over the result shape: of the source view (0 on the index dims) and
    of each index array (broadcast on the index dims, 0 elsewhere)."""
    nb = len(layout.index_shape)
    s0 = layout.start
    src = [p.strides[v] // isz for v in layout.view_axes[:s0]] + [0] * nb + \
          [p.strides[v] // isz for v in layout.view_axes[s0:]]
    before, after = (0,) * s0, (0,) * (len(layout.shape) - s0 - nb)
    idx = []
    for t in arrays:
        est = tuple(s // t._dtype.itemsize for s in t._strides)
        b = _shapes.broadcast_strides(t._shape, est, layout.index_shape)
        idx.append(before + tuple(b) + after)
    return tuple(src), idx


def _gather_fast(x, key, d):

    shape, prep = d
    out = _empty(shape, x._dtype, x._device)
    _ix.launch_prepared(prep, x._device._id, out._buf.ptr, x._buf.ptr + x._offset, (key._buf.ptr + key._offset,),
                        "__getitem__")
    return out


def _gather(x, p, key=None):
    """x[key] for a GATHER plan (and masks over leading dimensions); ``key``: the original
    key when it is one integer Array (its launch is then remembered for ``getitem``)."""

    arrays, axes, layout = _index_arrays(x, p, "__getitem__")
    isz = x._dtype.itemsize
    out = _empty(layout.shape, x._dtype, x._device)
    if out.size == 0:
        return out
    src, idx = _strides_over(layout, p, arrays, isz)
    exts = [p.shape[v] for v in layout.consumed]
    vsts = [p.strides[v] // isz for v in layout.consumed]
    dev = x._device._id
    align = _ix.alignment(out._ptr, x._ptr + p.offset)
    prep = _ix.prepare(_shapes.c_strides(layout.shape), src, idx, exts, vsts, axes, layout.shape, isz,
                       arrays[0]._dtype, False, dev, align)
    if key is not None and arrays[0] is key and align == 16:
        if len(_fast) >= _VIEWS_MAX:
            _fast.clear()
        _fast[(x._shape, x._strides, x._dtype, key._shape, key._strides, key._dtype, key._device, x._device)] = \
            (layout.shape, prep)
    _ix.launch_prepared(prep, dev, out._ptr, x._ptr + p.offset, [t._ptr for t in arrays], "__getitem__")
    return out


def _check_scalar_for(x, value):
    """A Python scalar must be of a kind the array's dtype can hold (spec's mixing rules)."""
    k = x._dtype.kind
    if isinstance(value, (bool, np.bool_)):
        if k != "b":
            raise TypeError(f"__setitem__: cannot assign a bool to an array of dtype {x._dtype}")
    elif isinstance(value, (int, np.integer)):
        if k == "b":
            raise TypeError(f"__setitem__: cannot assign an int to an array of dtype {x._dtype}")
        if k in "iu":
            info = np.iinfo(x._dtype)
            if not info.min <= int(value) <= info.max:
                raise OverflowError(f"__setitem__: {value} is out of range for {x._dtype}")
    elif isinstance(value, (float, np.floating)):
        if k not in "fc":
            raise TypeError(f"__setitem__: cannot assign a float to an array of dtype {x._dtype}")
    elif isinstance(value, (complex, np.complexfloating)):
        if k != "c":
            raise TypeError(f"__setitem__: cannot assign a complex to an array of dtype {x._dtype}")
    else:
        raise TypeError(f"__setitem__: value must be a gparray Array or a Python scalar, "
                        f"got {type(value).__name__}")


def _check_array_value(x, value):
    if value._device is not x._device:
        same_device("__setitem__", x, value, what="x and value")
    if value._dtype.kind == "c" and x._dtype.kind != "c":
        raise TypeError(f"__setitem__: cannot assign a {value._dtype} array into a {x._dtype} array")


def _overlaps(a, b) -> bool:
    """Whether the memory spans of two arrays may overlap."""
    if a._buf is not b._buf and a._buf.ptr != b._buf.ptr:
        return False

    def rng(x):
        if x.size == 0:
            return (0, -1)
        isz = x._dtype.itemsize
        lo, hi = _shapes.span_elements(x._shape, tuple(s // isz for s in x._strides))
        return (x._ptr + lo * isz, x._ptr + (hi + 1) * isz)

    (a0, a1), (b0, b1) = rng(a), rng(b)
    return a0 < b1 and b0 < a1


def setitem(x, key, value):
    """``x[key] = value``: FILL or COPY into the basic view of ``key``, SCATTER for advanced
    keys (``value`` a Python scalar or an Array broadcast to the indexed shape, cast to x's
    dtype)."""
    is_array = isinstance(value, _build.Array)
    if is_array:
        _check_array_value(x, value)
    else:
        _check_scalar_for(x, value)
    if type(key) is _build.Array and key.ndim and key._dtype.kind in "iu" and key._device == x._device:
        v = _as_value(x, value)
        fk = (x._shape, x._strides, x._dtype, key._shape, key._strides, key._dtype, x._device, v._shape, v._strides)
        d = _fast_set.get(fk)
        if d is None or (x._ptr | v._ptr) & 15:
            p = setitem_plan(x._shape, x._strides, key, value)
            d = _scatter(x, p, v, key)
            if d is not None:
                if len(_fast_set) >= _VIEWS_MAX:
                    _fast_set.clear()
                _fast_set[fk] = d
            return
        _ix.launch_prepared(d, x._device._id, v._ptr, x._ptr, (key._ptr,), "__setitem__")
        return
    key = _prepare_key(key, x, "__setitem__")
    p = setitem_plan(x._shape, x._strides, key, value)
    if p.kind is PlanKind.SCATTER:
        _scatter(x, p, value)
        return
    view = x._view(x._offset + p.offset, p.shape, p.strides)
    if p.kind is PlanKind.FILL:
        _ew.fill(view, value)
        return
    if _shapes.broadcast_shapes(view._shape, value._shape, name="__setitem__") != view._shape:
        raise ValueError(f"__setitem__: could not broadcast value of shape {value._shape} into the "
                         f"indexed shape {view._shape}")
    if _overlaps(view, value):
        value = _copy(value)
    _ew.copy_into(view, value)


def _as_value(x, value):
    """``value`` as an Array of x's dtype (a 0-d array for a scalar), not overlapping x."""
    if not isinstance(value, _build.Array):
        return _scalar_array(value, x._dtype, x._device, "__setitem__")
    if value._dtype != x._dtype or _overlaps(x, value):
        return _copy(value, x._dtype)
    return value


_fast_set: dict = {}  # (x, key, value layouts) -> prepared launch of x[key] = value


def _scatter(x, p, value, key=None):
    """x[key] = value for a SCATTER plan; returns the prepared launch when ``key`` (the
    original key, one integer Array) was the only index array and the launch can be reused
    for the same layouts."""
    a = p.advanced
    if len(a) == 1 and a[0].kind == "mask" and (not isinstance(value, _build.Array) or value.size == 1):
        _masked_fill(x, p, a[0], value)
        return None
    arrays, axes, layout = _index_arrays(x, p, "__setitem__")
    vshape = value._shape if isinstance(value, _build.Array) else ()
    if _shapes.broadcast_shapes(layout.shape, vshape, name="__setitem__") != layout.shape:
        raise ValueError(f"__setitem__: could not broadcast value of shape {vshape} into the indexed "
                         f"shape {layout.shape}")
    if _shapes.prod(layout.shape) == 0:
        return None
    v = _as_value(x, value)
    isz = x._dtype.itemsize
    src, idx = _strides_over(layout, p, arrays, isz)
    dense = _shapes.broadcast_strides(v._shape, tuple(s // isz for s in v._strides), layout.shape)
    exts = [p.shape[vx] for vx in layout.consumed]
    vsts = [p.strides[vx] // isz for vx in layout.consumed]
    dev = x._device._id
    align = _ix.alignment(v._ptr, x._ptr + p.offset)
    prep = _ix.prepare(dense, src, idx, exts, vsts, axes, layout.shape, isz, arrays[0]._dtype, True, dev, align)
    _ix.launch_prepared(prep, dev, v._ptr, x._ptr + p.offset, [t._ptr for t in arrays], "__setitem__")
    reuse = key is not None and arrays[0] is key and v is value and align == 16
    return prep if reuse else None


def _masked_fill(x, p, a, value):
    """x[mask] = v for one value: where(mask, v, x) into x's view, no synchronization."""
    view = x._view(x._offset + p.offset, p.shape, p.strides)
    m = a.index
    if view.size == 0 or m.size == 0:
        return
    nd = m.ndim
    mst = [0] * len(p.shape)
    mst[a.view_axis:a.view_axis + nd] = m._strides
    cond = m._view(m._offset, p.shape, tuple(mst))
    v = _as_value(x, value)
    v = v._view(v._offset, (), ()) if v.ndim else v
    _ew.where(cond, v, view, view)


def nonzero(x) -> tuple:
    """int64 index arrays (one per dimension of ``x``, at least one, C order) of its nonzero
    elements: count per tile and scan, one read of the total, then the compaction."""
    dev, i64, nd = x._device, _dt.int64, x.ndim
    n = x.size
    total = 0
    if n:
        tiles = _search.nonzero_tiles(n)
        counts, incl = _empty((tiles,), i64, dev), _empty((tiles,), i64, dev)
        _search.nonzero_count(x, counts, incl)
        total = int(_to_host(incl._view(incl._offset + (tiles - 1) * 8, (), ())))
    out = _empty((nd, total), i64, dev)
    if total:
        _search.nonzero_write(x, incl, out)
    return tuple(out._view(out._offset + d * total * 8, (total,), (8,)) for d in range(nd))
