"""Shape and stride algebra, pure Python (tested on the CPU tier).

Strides here are in *elements* unless a name says bytes.
"""
from __future__ import annotations

import operator


def prod(shape) -> int:
    """Product of a shape's extents (1 for ())."""
    n = 1
    for s in shape:
        n *= s
    return n


def c_strides(shape, itemsize: int = 1) -> tuple:
    """C-order strides (in units of ``itemsize``) for ``shape``."""
    strides = []
    acc = itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def is_c_contiguous(shape, strides, itemsize: int) -> bool:
    """True when (shape, byte strides) describe a C-contiguous layout (size-1 dims ignored)."""
    if 0 in shape:
        return True
    acc = itemsize
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1:
            if st != acc:
                return False
            acc *= s
    return True


class Layout:
    """Memory as the engines see it: a buffer (anything with ``.ptr``: a pool Block, a
    foreign owner) + byte offset, shape, byte strides (C order when None), dtype, device.
    gparray Arrays carry the same attributes; the layers below the Array layer
    (``gparray/_engine/_transfer.py``, ``gparray/_engine/_dlpack.py``) describe raw blocks with this, and
    the Array layer wraps them. It keeps its buffer alive."""

    __slots__ = ("_buf", "_offset", "_shape", "_strides", "_dtype", "_device")

    def __init__(self, buf, shape: tuple, dtype, device, offset: int = 0, strides: tuple | None = None):
        self._buf = buf
        self._offset = offset
        self._shape = shape
        self._strides = c_strides(shape, dtype.itemsize) if strides is None else strides
        self._dtype = dtype
        self._device = device

    @property
    def _ptr(self) -> int:
        """Device address of element [0, ..., 0]."""
        return self._buf.ptr + self._offset

    @property
    def size(self) -> int:
        """Number of elements."""
        return prod(self._shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy."""
        return self.size * self._dtype.itemsize

    def _is_c_contig(self) -> bool:
        """True when the layout is C-contiguous."""
        return is_c_contiguous(self._shape, self._strides, self._dtype.itemsize)


def broadcast_shapes(*shapes, name: str = "broadcast_shapes") -> tuple:
    """The broadcast of ``shapes`` (NumPy rules); ValueError naming ``name`` otherwise."""
    if len(shapes) == 1:
        return tuple(shapes[0])
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        off = nd - len(s)
        for i, d in enumerate(s):
            cur = out[off + i]
            if d == cur or d == 1:
                continue
            if cur == 1:
                out[off + i] = d
            else:
                raise ValueError(f"{name}: shapes {', '.join(str(tuple(x)) for x in shapes)} "
                                 f"cannot be broadcast together")
    return tuple(out)


def broadcast_strides(shape, strides, target) -> tuple:
    """Strides that view an array of ``shape``/``strides`` as ``target`` (0 on new/size-1 dims)."""
    off = len(target) - len(shape)
    out = [0] * len(target)
    for i, (s, st) in enumerate(zip(shape, strides)):
        out[off + i] = 0 if (s == 1 and target[off + i] != 1) else st
    return tuple(out)


def merge_dims(shape, strides_list):
    """Drop size-1 dimensions and merge adjacent ones that are contiguous for every operand.

    ``strides_list`` holds one stride tuple per operand (same length as ``shape``).
    Returns (shape, strides_list) with the fewest dimensions (at least one).
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (1,), [(0,) for _ in strides_list]
    new_shape = [shape[dims[0]]]
    new_strides = [[st[dims[0]]] for st in strides_list]
    for i in dims[1:]:
        ext = shape[i]
        if all(ns[-1] == st[i] * ext for ns, st in zip(new_strides, strides_list)):
            new_shape[-1] *= ext
            for ns, st in zip(new_strides, strides_list):
                ns[-1] = st[i]
        else:
            new_shape.append(ext)
            for ns, st in zip(new_strides, strides_list):
                ns.append(st[i])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]


class AxisError(ValueError, IndexError):
    """An axis outside an array's dimensions. Both a ValueError and an IndexError, like
    NumPy's ``numpy.exceptions.AxisError``, whose message wording it shares (after the
    function's name): ``sum: axis 10 is out of bounds for array of dimension 1``."""


def normalize_axis(axis, ndim: int, name: str) -> int:
    """A non-negative axis for ``ndim`` dims; AxisError naming ``name`` when out of range."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axis, ndim: int, name: str) -> tuple:
    """Sorted unique non-negative axes from None/int/tuple; ValueError on repeats."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim, name) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, name),)


def span_elements(shape, strides) -> tuple:
    """(lowest, highest) element offset reachable from the origin of a strided view."""
    lo = hi = 0
    for s, st in zip(shape, strides):
        if s == 0:
            return 0, 0
        if st > 0:
            hi += (s - 1) * st
        else:
            lo += (s - 1) * st
    return lo, hi
