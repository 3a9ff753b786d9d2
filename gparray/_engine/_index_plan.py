"""Index plans: ``x[key]`` and ``x[key] = v`` parsed into a frozen :class:`IndexPlan`, in
pure Python (no GPU, no Array import), so the CPU tier checks every plan against NumPy.

A key is planned against (shape, byte strides) into one of

* VIEW    basic indexing (ints, slices, None, Ellipsis, 0-d booleans): new shape, byte
          strides and byte offset; zero copy.
* GATHER  integer arrays (and boolean arrays mixed with other advanced keys): the basic view
          first, then the advanced entries with NumPy's placement rule.
* MASK    one boolean array as the only advanced entry: ``x[mask]`` compaction.
* SCATTER setitem whose key has advanced entries.
* COPY    setitem of an array into a basic view (strided copy, broadcasting, casting).
* FILL    setitem of a Python scalar into a basic view.

Index arrays are recognised by their ``dtype``/``shape``/``ndim`` attributes (gparray Arrays
at run time, NumPy arrays in the CPU tests). NumPy is the oracle for the semantics: an
integer scalar counts as an advanced entry (a 0-d index) when the key has index arrays, and
so does a boolean scalar (an index of shape (1,) or (0,) on a new axis); the advanced result
dimensions replace the indexed ones in place when the advanced entries are consecutive in
the key, else they go first.
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass


class PlanKind(enum.Enum):
    VIEW = "view"
    GATHER = "gather"
    MASK = "mask"
    SCATTER = "scatter"
    COPY = "copy"
    FILL = "fill"


@dataclass(frozen=True)
class AdvIndex:
    """One advanced entry of a key: ``kind`` "int" (an integer array), "mask" (a boolean
    array consuming ``index.ndim`` axes), "bool" (a boolean scalar on a new length-1 axis)
    or "scalar" (an integer scalar, already applied to the view's offset: it only takes part
    in the placement rule)."""

    view_axis: int     # first axis of the basic view it indexes (-1 for "scalar")
    axis: int          # first axis of the original array it indexes (-1 for "bool")
    kind: str
    index: object      # the index array, the bool, or the int


@dataclass(frozen=True)
class IndexPlan:
    """Result of planning a key against (shape, byte strides)."""

    kind: PlanKind
    shape: tuple          # shape of the basic view (advanced axes still present, full length)
    strides: tuple        # byte strides of the basic view
    offset: int           # byte offset of the view's origin from the array's origin
    advanced: tuple = ()  # AdvIndex entries, in key order (GATHER / MASK / SCATTER)
    adjacent: bool = True  # advanced entries consecutive in the key: results replace them in place
    first: int = 0        # view dims (not advanced) before the first advanced entry


@dataclass(frozen=True)
class GatherLayout:
    """Where the result of an advanced index comes from, dimension by dimension."""

    shape: tuple          # result shape
    index_shape: tuple    # broadcast shape of the index arrays
    start: int            # result dim where index_shape's dims begin
    view_axes: tuple      # for each result dim outside index_shape: the basic view's axis
    consumed: tuple       # view axes indexed by the advanced entries, in entry order


def _is_index_array(obj) -> bool:
    return hasattr(obj, "dtype") and hasattr(obj, "shape") and hasattr(obj, "ndim")


def _entry_kind(k, name: str):
    """'int', 'slice', 'none', 'ellipsis', 'bool', 'intarray', 'boolarray' for one key entry."""
    if k is None:
        return "none"
    if k is Ellipsis:
        return "ellipsis"
    if isinstance(k, slice):
        return "slice"
    if type(k).__name__ in ("bool", "bool_"):
        return "bool"
    if _is_index_array(k):
        kind = k.dtype.kind
        if kind == "b":
            return "bool" if k.ndim == 0 else "boolarray"
        if kind in "iu":
            return "int" if k.ndim == 0 else "intarray"
        raise IndexError(f"{name}: arrays used as indices must be of integer or boolean type, got {k.dtype}")
    try:
        operator.index(k)
        return "int"
    except TypeError:
        pass
    raise IndexError(f"{name}: only integers, slices (`:`), ellipsis (`...`), None (`newaxis`) and "
                     f"integer or boolean arrays are valid indices; got {type(k).__name__}")


def broadcast_index_shapes(shapes, name: str) -> tuple:
    """NumPy broadcast of index shapes; IndexError (NumPy's "shape mismatch") when they don't."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, e in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = e
            elif e != 1 and e != out[j]:
                raise IndexError(f"{name}: shape mismatch: indexing arrays could not be broadcast "
                                 f"together with shapes {' '.join(str(tuple(t)) for t in shapes)}")
    return tuple(out)


def plan(shape: tuple, strides: tuple, key, name: str = "__getitem__") -> IndexPlan:
    """Plan ``key`` against an array of ``shape`` and byte ``strides``.

    0-d integer arrays count as integers (the caller may pass them as Python ints already).
    """
    entries = key if isinstance(key, tuple) else (key,)
    kinds = [_entry_kind(k, name) for k in entries]
    if kinds.count("ellipsis") > 1:
        raise IndexError(f"{name}: an index can only have a single ellipsis ('...')")
    consumed = sum(1 if k in ("int", "slice", "intarray") else (entries[i].ndim if k == "boolarray" else 0)
                   for i, k in enumerate(kinds))
    ndim = len(shape)
    if consumed > ndim:
        raise IndexError(f"{name}: too many indices for array: array is {ndim}-dimensional, "
                         f"but {consumed} were indexed")
    if "ellipsis" in kinds:
        pos = kinds.index("ellipsis")
        fill = ndim - consumed
        # an Ellipsis of no axes still separates the advanced entries around it (NumPy)
        entries = entries[:pos] + ((slice(None),) * fill if fill else (None,)) + entries[pos + 1:]
        kinds = kinds[:pos] + (["slice"] * fill if fill else ["gap"]) + kinds[pos + 1:]
    else:
        entries = entries + (slice(None),) * (ndim - consumed)
        kinds = kinds + ["slice"] * (ndim - consumed)
    has_arrays = "intarray" in kinds or "boolarray" in kinds
    # NumPy: boolean scalars are advanced entries too (and make the ints advanced)
    has_adv = has_arrays or "bool" in kinds

    out_shape, out_strides, advanced, adv_pos = [], [], [], []
    offset = 0
    axis = 0
    first = None
    for pos, (k, kind) in enumerate(zip(entries, kinds)):
        if kind == "none":
            out_shape.append(1)
            out_strides.append(0)
        elif kind == "gap":
            pass
        elif kind == "bool":
            if first is None:
                first = len(out_shape)
            advanced.append(AdvIndex(len(out_shape), -1, "bool", bool(k)))
            adv_pos.append(pos)
            out_shape.append(1)
            out_strides.append(0)
        elif kind == "int":
            n = shape[axis]
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"{name}: index {i} is out of bounds for axis {axis} with size {n}")
            if i < 0:
                i += n
            offset += i * strides[axis]
            if has_adv:
                if first is None:
                    first = len(out_shape)
                advanced.append(AdvIndex(-1, axis, "scalar", i))
                adv_pos.append(pos)
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
            if first is None:
                first = len(out_shape)
            advanced.append(AdvIndex(len(out_shape), axis, "int", k))
            adv_pos.append(pos)
            out_shape.append(shape[axis])
            out_strides.append(strides[axis])
            axis += 1
        else:  # boolarray
            nd = k.ndim
            for j in range(nd):
                # an empty mask axis matches any axis (NumPy and the spec's tests accept it)
                if k.shape[j] != shape[axis + j] and k.shape[j] != 0:
                    raise IndexError(f"{name}: boolean index did not match indexed array along axis "
                                     f"{axis + j}; size of axis is {shape[axis + j]} but size of "
                                     f"corresponding boolean axis is {k.shape[j]}")
            if first is None:
                first = len(out_shape)
            advanced.append(AdvIndex(len(out_shape), axis, "mask", k))
            adv_pos.append(pos)
            for j in range(nd):
                out_shape.append(shape[axis + j])
                out_strides.append(strides[axis + j])
            axis += nd
    if not has_adv:
        return IndexPlan(PlanKind.VIEW, tuple(out_shape), tuple(out_strides), offset)
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    if not has_arrays:
        # only boolean scalars (and ints): one new axis of length 1 (all True) or 0, where
        # the advanced result goes; still a view
        bools = [a for a in advanced if a.kind == "bool"]
        keep = [i for i in range(len(out_shape)) if i not in {a.view_axis for a in bools}]
        at = first if adjacent else 0
        shp = [out_shape[i] for i in keep]
        sts = [out_strides[i] for i in keep]
        shp.insert(at, 1 if all(a.index for a in bools) else 0)
        sts.insert(at, 0)
        return IndexPlan(PlanKind.VIEW, tuple(shp), tuple(sts), offset)
    real = [a for a in advanced if a.kind != "scalar"]
    kind = PlanKind.MASK if len(advanced) == 1 and real[0].kind == "mask" else PlanKind.GATHER
    return IndexPlan(kind, tuple(out_shape), tuple(out_strides), offset, tuple(advanced), adjacent,
                     first if adjacent else 0)


def index_shapes_of(p: IndexPlan, mask_counts=None) -> list:
    """One index shape per view axis consumed by ``p``'s advanced entries, in entry order:
    an integer array its shape, a boolean array of k dims k times ``(count,)`` (its number of
    True values, from ``mask_counts`` in entry order, since it is data-dependent), a boolean
    scalar (1,) or (0,)."""
    out = []
    counts = iter(mask_counts or ())
    for a in p.advanced:
        if a.kind == "int":
            out.append(tuple(a.index.shape))
        elif a.kind == "mask":
            c = next(counts)
            out += [(c,)] * a.index.ndim
        elif a.kind == "bool":
            out.append((1,) if a.index else (0,))
    return out


def gather_layout(p: IndexPlan, index_shapes, name: str = "__getitem__") -> GatherLayout:
    """The result layout of GATHER/SCATTER plan ``p`` given one index shape per consumed view
    axis (``index_shapes_of``)."""
    consumed = []
    for a in p.advanced:
        if a.kind == "mask":
            consumed += range(a.view_axis, a.view_axis + a.index.ndim)
        elif a.kind != "scalar":
            consumed.append(a.view_axis)
    bshape = broadcast_index_shapes(list(index_shapes), name)
    rest = tuple(i for i in range(len(p.shape)) if i not in set(consumed))
    start = p.first if p.adjacent else 0
    shape = tuple(p.shape[i] for i in rest[:start]) + bshape + tuple(p.shape[i] for i in rest[start:])
    return GatherLayout(shape, bshape, start, rest, tuple(consumed))


def setitem_plan(shape, strides, key, value) -> IndexPlan:
    """Plan ``x[key] = value``: FILL (scalar) or COPY (array) into the basic view, SCATTER
    when the key has advanced entries."""
    value_is_array = _is_index_array(value)
    p = plan(shape, strides, key, "__setitem__")
    if p.kind is not PlanKind.VIEW:
        return IndexPlan(PlanKind.SCATTER, p.shape, p.strides, p.offset, p.advanced, p.adjacent, p.first)
    return IndexPlan(PlanKind.COPY if value_is_array else PlanKind.FILL, p.shape, p.strides, p.offset)


# ---------------------------------------------------------------------------- memo of VIEW keys
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


def key_signature(key):
    """A hashable signature of a key made only of ints, int slices, None and ..., else None
    (types are part of it: True and 1 index differently)."""
    if type(key) is tuple:
        sig = tuple(_entry_sig(k) for k in key)
        return None if None in sig else (4,) + sig
    return _entry_sig(key)
