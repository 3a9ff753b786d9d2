"""Index planning and execution for ``Array.__getitem__`` / ``__setitem__``.

A key is parsed (pure Python, no GPU) into a frozen :class:`IndexPlan` whose kind is one of

* VIEW    basic indexing (ints, slices, None, Ellipsis, 0-d integer arrays): new shape,
          byte strides and byte offset; zero copy.
* GATHER  integer-array (advanced) indexing: the VIEW part first, then the advanced
          indices with NumPy's placement rule (recorded in ``advanced``).
* MASK    boolean-array indexing (recorded in ``advanced``).
* SCATTER setitem whose key has advanced indices.
* COPY    setitem of an array into a basic view (strided copy, broadcasting, casting).
* FILL    setitem of a Python scalar into a basic view.

NumPy is the oracle for the semantics (tests/test_index_plan.py checks views against it).
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass

import numpy as np


class PlanKind(enum.Enum):
    VIEW = "view"
    GATHER = "gather"
    MASK = "mask"
    SCATTER = "scatter"
    COPY = "copy"
    FILL = "fill"


@dataclass(frozen=True)
class IndexPlan:
    """Result of planning a key against (shape, byte strides)."""

    kind: PlanKind
    shape: tuple          # shape of the basic view
    strides: tuple        # byte strides of the basic view
    offset: int           # byte offset of the view's origin from the array's origin
    advanced: tuple = ()  # ((view axis, index object), ...) still to apply (GATHER/MASK)


def _is_array(obj) -> bool:
    return type(obj).__name__ == "Array" and hasattr(obj, "_dtype")


def _normalize_key(key) -> tuple:
    if isinstance(key, tuple):
        return key
    return (key,)


def _entry_kind(k):
    """'int', 'slice', 'none', 'ellipsis', 'bool', 'intarray', 'boolarray' for one key entry."""
    if k is None:
        return "none"
    if k is Ellipsis:
        return "ellipsis"
    if isinstance(k, slice):
        return "slice"
    if isinstance(k, (bool, np.bool_)):
        return "bool"
    if _is_array(k):
        kind = k._dtype.kind
        if kind == "b":
            return "bool" if k.ndim == 0 else "boolarray"
        if kind in "iu":
            return "int" if k.ndim == 0 else "intarray"
        raise IndexError(f"__getitem__: arrays used as indices must be of integer or boolean dtype, "
                         f"got {k._dtype}")
    if isinstance(k, np.ndarray):
        raise IndexError("__getitem__: NumPy arrays are not valid indices; use a gparray Array")
    try:
        operator.index(k)
        return "int"
    except TypeError:
        pass
    raise IndexError(f"__getitem__: only integers, slices (:), ellipsis (...), None and integer or "
                     f"boolean arrays are valid indices; got {type(k).__name__}")


def plan(shape: tuple, strides: tuple, key, name: str = "__getitem__") -> IndexPlan:
    """Plan ``key`` against an array of ``shape`` and byte ``strides``.

    0-d integer arrays must already be Python ints (the caller converts them); boolean
    scalars behave as in NumPy (a new axis of length 1 for True, 0 for False).
    """
    entries = _normalize_key(key)
    kinds = [_entry_kind(k) for k in entries]
    if kinds.count("ellipsis") > 1:
        raise IndexError(f"{name}: an index can only have a single ellipsis ('...')")
    consumed = sum(1 if k in ("int", "slice", "intarray") else (entries[i].ndim if k == "boolarray" else 0)
                   for i, k in enumerate(kinds))
    ndim = len(shape)
    if consumed > ndim:
        raise IndexError(f"{name}: too many indices for array: array is {ndim}-dimensional, "
                         f"but {consumed} were indexed")
    # expand the ellipsis (or pad at the end)
    if "ellipsis" in kinds:
        pos = kinds.index("ellipsis")
        fill = ndim - consumed
        entries = entries[:pos] + (slice(None),) * fill + entries[pos + 1:]
        kinds = kinds[:pos] + ["slice"] * fill + kinds[pos + 1:]
    else:
        entries = entries + (slice(None),) * (ndim - consumed)
        kinds = kinds + ["slice"] * (ndim - consumed)

    out_shape, out_strides, advanced = [], [], []
    offset = 0
    axis = 0
    for k, kind in zip(entries, kinds):
        if kind == "none":
            out_shape.append(1)
            out_strides.append(0)
        elif kind == "bool":
            out_shape.append(1 if bool(k) else 0)
            out_strides.append(0)
            advanced.append((len(out_shape) - 1, "bool", bool(k)))
        elif kind == "int":
            n = shape[axis]
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"{name}: index {i} is out of bounds for axis {axis} with size {n}")
            if i < 0:
                i += n
            offset += i * strides[axis]
            axis += 1
        elif kind == "slice":
            n = shape[axis]
            for part in (k.start, k.stop, k.step):
                if part is not None:
                    try:
                        operator.index(part)
                    except TypeError:
                        raise IndexError(f"{name}: slice indices must be integers or None, "
                                         f"got {type(part).__name__} (axis {axis})") from None
            if k.step is not None and operator.index(k.step) == 0:
                raise IndexError(f"{name}: slice step cannot be zero (axis {axis})")
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            if length > 0:
                offset += start * strides[axis]
            out_shape.append(length)
            out_strides.append(strides[axis] * step)
            axis += 1
        elif kind == "intarray":
            out_shape.append(shape[axis])
            out_strides.append(strides[axis])
            advanced.append((len(out_shape) - 1, "int", k))
            axis += 1
        elif kind == "boolarray":
            nd = k.ndim
            if tuple(k.shape) != tuple(shape[axis:axis + nd]):
                raise IndexError(f"{name}: boolean index of shape {tuple(k.shape)} does not match the "
                                 f"indexed dimensions {tuple(shape[axis:axis + nd])} (axes {axis}..)")
            for j in range(nd):
                out_shape.append(shape[axis + j])
                out_strides.append(strides[axis + j])
            advanced.append((len(out_shape) - nd, "mask", k))
            axis += nd
    kinds_adv = {a[1] for a in advanced if a[1] != "bool"}
    if not kinds_adv:
        kind = PlanKind.VIEW
        advanced = [a for a in advanced if a[1] != "bool"]
    elif kinds_adv == {"mask"} and len(advanced) == 1:
        kind = PlanKind.MASK
    else:
        kind = PlanKind.GATHER
    return IndexPlan(kind, tuple(out_shape), tuple(out_strides), offset, tuple(advanced))


def setitem_plan(shape, strides, key, value) -> IndexPlan:
    """Plan ``x[key] = value``: FILL (scalar) or COPY (array) into the basic view, SCATTER otherwise."""
    p = plan(shape, strides, key, "__setitem__")
    if p.kind is not PlanKind.VIEW:
        return IndexPlan(PlanKind.SCATTER, p.shape, p.strides, p.offset, p.advanced)
    kind = PlanKind.COPY if _is_array(value) else PlanKind.FILL
    return IndexPlan(kind, p.shape, p.strides, p.offset, ())


# ---------------------------------------------------------------------------- execution
def _resolve_0d(key):
    """Replace 0-d integer Arrays in ``key`` by Python ints (one device read each)."""
    entries = _normalize_key(key)
    if not any(_is_array(k) and k.ndim == 0 and k._dtype.kind in "iu" for k in entries):
        return key
    out = tuple(int(k) if (_is_array(k) and k.ndim == 0 and k._dtype.kind in "iu") else k for k in entries)
    return out


_views: dict = {}  # (shape, strides, key signature) -> (offset, shape, strides) of a VIEW
_VIEWS_MAX = 4096


def _entry_sig(k):
    t = type(k)
    if t is slice:
        a, b, c = k.start, k.stop, k.step
        if (a is None or type(a) is int) and (b is None or type(b) is int) and (c is None or type(c) is int):
            return (0, a, b, c)
        return None
    if t is int:
        return (1, k)
    if k is None:
        return (2,)
    if k is Ellipsis:
        return (3,)
    return None


def _key_sig(key):
    """A hashable signature of a key made only of ints, int slices, None and ..., else None
    (types are part of it: True and 1 index differently)."""
    if type(key) is tuple:
        sig = tuple(_entry_sig(k) for k in key)
        return None if None in sig else (4,) + sig
    return _entry_sig(key)


def getitem(x, key):
    """``x[key]``: a view for basic keys (views of int/slice/None/... keys are memoized per
    layout)."""
    sig = _key_sig(key)
    if sig is not None:
        v = _views.get((x._shape, x._strides, sig))
        if v is not None:
            return x._view(x._offset + v[0], v[1], v[2])
    key = _resolve_0d(key)
    p = plan(x._shape, x._strides, key)
    if p.kind is PlanKind.VIEW:
        if sig is not None:
            if len(_views) >= _VIEWS_MAX:
                _views.clear()
            _views[(x._shape, x._strides, sig)] = (p.offset, p.shape, p.strides)
        return x._view(x._offset + p.offset, p.shape, p.strides)
    raise IndexError(f"__getitem__: {p.kind.value} indexing (integer or boolean arrays) is not "
                     "supported yet; only basic indexing (ints, slices, ..., None) is")


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


def _overlaps(a, b) -> bool:
    """Whether the memory spans of two arrays may overlap."""
    if a._buf is not b._buf:
        pa, pb = a._buf.ptr, b._buf.ptr
        if pa != pb:
            return False
    from ._engine._shapes import span_elements

    def rng(x):
        if x.size == 0:
            return (0, -1)
        isz = x._dtype.itemsize
        lo, hi = span_elements(x._shape, tuple(s // isz for s in x._strides))
        return (x._ptr + lo * isz, x._ptr + (hi + 1) * isz)

    (a0, a1), (b0, b1) = rng(a), rng(b)
    return a0 < b1 and b0 < a1


def setitem(x, key, value):
    """``x[key] = value``: FILL or COPY into the basic view of ``key``."""
    from ._engine import _elementwise as ew
    from ._engine._shapes import broadcast_shapes

    key = _resolve_0d(key)
    p = setitem_plan(x._shape, x._strides, key, value)
    if p.kind is PlanKind.SCATTER:
        raise IndexError("__setitem__: integer or boolean array keys are not supported yet; "
                         "only basic indexing (ints, slices, ..., None) is")
    view = x._view(x._offset + p.offset, p.shape, p.strides)
    if p.kind is PlanKind.FILL:
        _check_scalar_for(x, value)
        ew.fill(view, value)
        return
    if value._device != x._device:
        raise ValueError(f"__setitem__: value is on {value._device}, the array on {x._device}")
    if value._dtype.kind == "c" and x._dtype.kind != "c":
        raise TypeError(f"__setitem__: cannot assign a {value._dtype} array into a {x._dtype} array")
    if broadcast_shapes(view._shape, value._shape, name="__setitem__") != view._shape:
        raise ValueError(f"__setitem__: could not broadcast value of shape {value._shape} into the "
                         f"indexed shape {view._shape}")
    if _overlaps(view, value):
        from ._creation import _copy

        value = _copy(value)
    ew.copy_into(view, value)
