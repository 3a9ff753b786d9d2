"""Manipulation functions (spec section "Manipulation Functions"): views where the layout
allows (reshape of contiguous data, broadcast_to, expand_dims, squeeze, permute_dims,
flip, moveaxis), copies otherwise (concat, stack, roll, tile, repeat).

``concat`` and ``stack`` are one launch of the join engine (gparray/_engine/_join.py). The
other copies are one or a few strided copies (``_ew.copy_into``) of views of the source into
views of a new C-contiguous output; the layouts of those views come from the pure helpers
``roll_plan``, ``tile_layout`` and ``repeat_layout`` (tested on the CPU tier)."""
from __future__ import annotations

import itertools
import math
import operator

import numpy as _np

from .._core import _dtypes as _dt
from .._array import Array
from .._core._device import same_device
from .._engine import _elementwise as _ew
from .._engine import _join
from .._engine import _shapes


def _check(x, name):
    """TypeError naming ``name`` unless ``x`` is a gparray Array."""
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")


def _int_seq(v, name, what):
    """A tuple of ints from an int or a list/tuple/range of ints; TypeError naming ``name``."""
    seq = v if isinstance(v, (list, tuple, range)) else (v,)
    out = []
    for a in seq:
        try:
            out.append(operator.index(a))
        except TypeError:
            raise TypeError(f"{name}: {what} must be an int or a sequence of ints, "
                            f"got {type(a).__name__}") from None
    return tuple(out)


def _reshape_strides(shape, strides, new_shape):
    """Byte strides viewing (shape, strides) as new_shape without a copy, or None."""
    # NumPy's attempt_nocopy_reshape: walk groups of old and new dims with equal products.
    old = [(s, st) for s, st in zip(shape, strides) if s != 1]
    new_strides = [0] * len(new_shape)
    oi = ni = 0
    on, nn = len(old), len(new_shape)
    # skip size-1 dims of new shape by treating them separately
    new_idx = [i for i, s in enumerate(new_shape) if s != 1]
    nn = len(new_idx)
    while oi < on and ni < nn:
        op, np_ = old[oi][0], new_shape[new_idx[ni]]
        oj, nj = oi + 1, ni + 1
        while op != np_:
            if np_ < op:
                np_ *= new_shape[new_idx[nj]]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        st = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[new_idx[k]] = st
            st *= new_shape[new_idx[k]]
        oi, ni = oj, nj
    return tuple(new_strides)


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new shape (a view when the layout allows; ``copy`` per spec)."""
    _check(x, "reshape")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    if shape.count(-1) > 1:
        raise ValueError("reshape: can only specify one unknown dimension (-1)")
    if any(s < -1 for s in shape):
        raise ValueError(f"reshape: invalid shape {shape}")
    size = x.size
    if -1 in shape:
        known = _shapes.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if _shapes.prod(shape) != size:
        raise ValueError(f"reshape: cannot reshape array of size {size} into shape {shape}")
    if not copy:
        if x._is_c_contig():
            return x._view(x._offset, shape, _shapes.c_strides(shape, x._dtype.itemsize))
        st = _reshape_strides(x._shape, x._strides, shape) if size else None
        if st is not None:
            return x._view(x._offset, shape, st)
        if copy is False:
            raise ValueError("reshape: copy=False, but this reshape needs a copy")
    from ._creation import _copy

    c = _copy(x)
    return c._view(c._offset, shape, _shapes.c_strides(shape, x._dtype.itemsize))


def broadcast_to(x, /, shape):
    """A read-only-by-convention view of ``x`` broadcast to ``shape`` (stride 0)."""
    _check(x, "broadcast_to")
    shape = tuple(operator.index(s) for s in shape)
    if len(shape) < x.ndim or _shapes.broadcast_shapes(x._shape, shape, name="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x._shape} to {shape}")
    return x._view(x._offset, shape, _shapes.broadcast_strides(x._shape, x._strides, shape))


def broadcast_arrays(*arrays):
    """Views of ``arrays`` broadcast against each other, which must be on one device.

    The views copy nothing, so nothing would fail if the arrays were on different devices;
    they are refused all the same (ValueError), as every other function of several arrays
    refuses them: the views exist to be combined in one operation, which would refuse them
    later, far from the call that mixed them."""
    for a in arrays:
        _check(a, "broadcast_arrays")
    same_device("broadcast_arrays", *arrays, what="arrays")
    shape = _shapes.broadcast_shapes(*(a._shape for a in arrays), name="broadcast_arrays")
    return tuple(broadcast_to(a, shape) for a in arrays)


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to."""
    return _shapes.broadcast_shapes(*(tuple(operator.index(s) for s in sh) for sh in shapes))


def expand_dims(x, /, axis=0):
    """View of ``x`` with new length-1 axes inserted at ``axis`` (int or sequence of ints;
    positions in the result, whose dimension the axes are normalized against)."""
    _check(x, "expand_dims")
    axes = _int_seq(axis, "expand_dims", "axis")
    nd = x.ndim + len(axes)
    norm = [_shapes.normalize_axis(a, nd, "expand_dims") for a in axes]
    if len(set(norm)) != len(norm):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    shape, strides = list(x._shape), list(x._strides)
    for a in sorted(norm):
        shape.insert(a, 1)
        strides.insert(a, 0)
    return x._view(x._offset, tuple(shape), tuple(strides))


def squeeze(x, /, axis):
    """View of ``x`` without the length-1 axes named by ``axis``."""
    _check(x, "squeeze")
    axes = _shapes.normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x._shape[a] != 1:
            raise ValueError(f"squeeze: cannot remove axis {a} of length {x._shape[a]}")
    keep = [i for i in range(x.ndim) if i not in axes]
    return x._view(x._offset, tuple(x._shape[i] for i in keep), tuple(x._strides[i] for i in keep))


def permute_dims(x, /, axes):
    """View of ``x`` with its axes permuted (``axes``: a tuple or list of ints, or an int
    for a 1-D array)."""
    _check(x, "permute_dims")
    axes = tuple(_shapes.normalize_axis(a, x.ndim, "permute_dims")
                 for a in _int_seq(axes, "permute_dims", "axes"))
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: {axes} is not a permutation of the {x.ndim} axes")
    return x._view(x._offset, tuple(x._shape[a] for a in axes), tuple(x._strides[a] for a in axes))


def matrix_transpose(x, /):
    """View of ``x`` with its last two axes swapped (``x`` has at least two dimensions)."""
    _check(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: expected an array of at least 2 dimensions, got shape {x._shape}")
    return x.mT


def moveaxis(x, source, destination, /):
    """View of ``x`` with axes moved from ``source`` to ``destination`` (each an int or a
    tuple/list of ints, of the same length)."""
    _check(x, "moveaxis")
    src = _int_seq(source, "moveaxis", "source")
    dst = _int_seq(destination, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    src = [_shapes.normalize_axis(a, x.ndim, "moveaxis") for a in src]
    dst = [_shapes.normalize_axis(a, x.ndim, "moveaxis") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def flip(x, /, *, axis=None):
    """View of ``x`` with the order of elements reversed along ``axis``."""
    _check(x, "flip")
    axes = _shapes.normalize_axes(axis, x.ndim, "flip")
    offset, strides = x._offset, list(x._strides)
    for a in axes:
        if x._shape[a] > 0:
            offset += (x._shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return x._view(offset, x._shape, tuple(strides))


def _join_checks(arrays, name):
    """The arrays as a list and their result dtype; checks type, count and device (in
    passes of plain attribute reads: concat of a thousand arrays stays cheap on the host)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{name}: need at least one array")
    if list(map(type, arrays)).count(Array) != len(arrays):
        for a in arrays:
            _check(a, name)
    devices = [a._device for a in arrays]
    if devices.count(devices[0]) != len(devices):   # identity first, then Device ==
        same_device(name, *arrays, what="arrays")
    dtypes = [a._dtype for a in arrays]
    if dtypes.count(dtypes[0]) == len(dtypes):
        return arrays, dtypes[0]
    # promotion is order-independent and idempotent: each dtype once
    return arrays, _dt._result_type(*set(dtypes))


def concat(arrays, /, *, axis=0):
    """Join ``arrays`` along an existing axis (axis=None: their flattened elements, C order).

    One launch of the join engine (gparray/_engine/_join.py) writes every input of the
    result's dtype whose layout it can walk; any other input (a different dtype, or e.g. a
    transposed view) is copied into its place on its own."""
    from ._creation import _empty

    sc = _join.scan(Array, arrays, axis, False)
    if sc is not None:  # one dtype and device, shapes that join: checked in one compiled pass
        dtype, device, ax, addrs, ks, total = sc
        s0 = arrays[0]._shape
        shape = (total,) if axis is None else s0[:ax] + (total,) + s0[ax + 1:]
        out = _empty(shape, dtype, device)
        _join.join(out, arrays, ax, ks, addrs)
        return out
    arrays, dtype = _join_checks(arrays, "concat")
    if axis is None:
        ks = [math.prod(a._shape) for a in arrays]
        out = _empty((sum(ks),), dtype, arrays[0]._device)
        _join.join(out, arrays, 0, ks)
        return out
    shapes = [a._shape for a in arrays]
    s0 = shapes[0]
    nd = len(s0)
    if nd == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated")
    axis = _shapes.normalize_axis(axis, nd, "concat")
    if len(set(shapes)) > 1 and (len({len(s) for s in shapes}) > 1
                                 or len({s[:axis] + s[axis + 1:] for s in shapes}) > 1):
        raise ValueError(f"concat: shapes {shapes} do not match off axis {axis}")
    ks = [s[axis] for s in shapes]
    out = _empty(s0[:axis] + (sum(ks),) + s0[axis + 1:], dtype, arrays[0]._device)
    _join.join(out, arrays, axis, ks)
    return out


def stack(arrays, /, *, axis=0):
    """Join same-shaped ``arrays`` along a new axis (one launch of the join engine, as
    ``concat``)."""
    from ._creation import _empty

    sc = _join.scan(Array, arrays, axis, True)
    if sc is not None:  # one dtype, device and shape: checked in one compiled pass
        dtype, device, ax, addrs, _, _ = sc
        shape = arrays[0]._shape
        out = _empty(shape[:ax] + (len(arrays),) + shape[ax:], dtype, device)
        _join.join(out, arrays, ax, _np.ones(len(arrays), dtype=_np.int64), addrs)
        return out
    arrays, dtype = _join_checks(arrays, "stack")
    shapes = {a._shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack: all arrays must have the same shape, got {[a._shape for a in arrays]}")
    shape = arrays[0]._shape
    axis = _shapes.normalize_axis(axis, len(shape) + 1, "stack")
    out = _empty(shape[:axis] + (len(arrays),) + shape[axis:], dtype, arrays[0]._device)
    _join.join(out, arrays, axis, [1] * len(arrays))
    return out


def unstack(x, /, *, axis=0):
    """Tuple of views of ``x`` split along ``axis``."""
    _check(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: input must have at least one dimension")
    axis = _shapes.normalize_axis(axis, x.ndim, "unstack")
    moved = moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(moved._shape[0]))


# ----------------------------------------------------------------- copies: roll, tile, repeat
_ROLL_AXES_PER_PASS = 3  # 2**3 piece copies per pass; more rolled axes take further passes


def roll_plan(shape, shifts, max_axes=_ROLL_AXES_PER_PASS):
    """Copy passes for rolling an array of ``shape`` by ``shifts`` (a dict axis -> shift).

    Returns a list of passes; each pass reads the previous pass's result (the source for the
    first) into a new array of ``shape``. A pass is a list of pieces, and a piece is one
    ``(dst_start, src_start, length)`` per axis: ``dst[dst_start:dst_start+length] =
    src[src_start:src_start+length]`` along every axis at once. An axis rolled by ``s``
    (mod its length) contributes two slices; a pass rolls at most ``max_axes`` axes, so it
    has at most ``2**max_axes`` pieces. There is always at least one pass (a plain copy when
    nothing moves); an empty shape gives passes with no pieces.
    """
    shape = tuple(shape)
    if 0 in shape:
        return [[]]
    rolled = [a for a in sorted(shifts) if shifts[a] % shape[a]]
    groups = [rolled[i:i + max_axes] for i in range(0, len(rolled), max_axes)] or [[]]
    passes = []
    for group in groups:
        per_axis = []
        for a, n in enumerate(shape):
            s = shifts[a] % n if a in group else 0
            per_axis.append(((s, 0, n - s), (0, n - s, s)) if s else ((0, 0, n),))
        passes.append(list(itertools.product(*per_axis)))
    return passes


def _piece_view(a, piece, which):
    """View of ``a`` on one roll piece (``which``: 0 for the destination, 1 for the source)."""
    off = a._offset + sum(p[which] * st for p, st in zip(piece, a._strides))
    return a._view(off, tuple(p[2] for p in piece), a._strides)


def roll(x, /, shift, *, axis=None):
    """Elements of ``x`` rolled (shifted cyclically) by ``shift`` along ``axis``.

    ``shift`` and ``axis`` are ints or tuples/lists of ints; a length-1 one applies to each
    entry of the other, and shifts of a repeated axis add up (NumPy). ``axis=None`` rolls the
    flattened array and restores the shape. Always a new C-contiguous array: at most two
    strided copies per rolled axis (a product over the rolled axes, three axes per pass).
    """
    from ._creation import _empty

    _check(x, "roll")
    shifts = _int_seq(shift, "roll", "shift")
    shape = x._shape
    if axis is None:
        src = reshape(x, (-1,))
        axes = (0,)
    else:
        src = x
        axes = tuple(_shapes.normalize_axis(a, x.ndim, "roll")
                     for a in _int_seq(axis, "roll", "axis"))
    if len(shifts) != len(axes):
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        elif len(axes) == 1:
            axes = axes * len(shifts)
        else:
            raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    total = {}
    for a, s in zip(axes, shifts):
        total[a] = total.get(a, 0) + s
    for p in roll_plan(src._shape, total):
        out = _empty(src._shape, src._dtype, src._device)
        for piece in p:
            _ew.copy_into(_piece_view(out, piece, 0), _piece_view(src, piece, 1))
        src = out
    return src._view(src._offset, shape, _shapes.c_strides(shape, x._dtype.itemsize))


def tile_layout(shape, strides, reps):
    """(view shape, view strides, result shape) for ``tile``.

    ``shape``/``strides`` describe the source and ``reps`` the repetitions (non-negative);
    the shorter of the two is padded with leading 1s. The view has shape (r0, d0, r1, d1,
    ...) with stride 0 on every r axis; copied into a C-contiguous array of that shape, it
    is the result of shape (r0*d0, r1*d1, ...) without a further copy.
    """
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + tuple(shape)
    strides = (0,) * (nd - len(strides)) + tuple(strides)
    reps = (1,) * (nd - len(reps)) + tuple(reps)
    vshape, vstrides = [], []
    for r, d, st in zip(reps, shape, strides):
        vshape += [r, d]
        vstrides += [0, st]
    return tuple(vshape), tuple(vstrides), tuple(r * d for r, d in zip(reps, shape))


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions`` times along each axis (NumPy's ``tile``).

    ``repetitions``: an int or a tuple/list of non-negative ints; when it is longer than
    ``x.ndim`` new leading axes are added, when shorter it is padded with leading 1s. A new
    C-contiguous array written by one strided copy of a stride-0 view of ``x``.
    """
    from ._creation import _empty

    _check(x, "tile")
    reps = _int_seq(repetitions, "tile", "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {repetitions}")
    vshape, vstrides, shape = tile_layout(x._shape, x._strides, reps)
    out = _empty(vshape, x._dtype, x._device)
    _ew.copy_into(out, x._view(x._offset, vshape, vstrides))
    return out._view(out._offset, shape, _shapes.c_strides(shape, x._dtype.itemsize))


def repeat_layout(shape, strides, axis, repeats):
    """(view shape, view strides, result shape) for ``repeat`` by an int along ``axis``.

    The view inserts an axis of length ``repeats`` and stride 0 after ``axis``; copied into a
    C-contiguous array of that shape, it is the result (``axis`` ``repeats`` times longer)
    without a further copy.
    """
    shape, strides = tuple(shape), tuple(strides)
    vshape = shape[:axis + 1] + (repeats,) + shape[axis + 1:]
    vstrides = strides[:axis + 1] + (0,) + strides[axis + 1:]
    rshape = shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:]
    return vshape, vstrides, rshape


def _repeat_int(x, r, axis):
    """``repeat`` by a non-negative int: one strided copy of a stride-0 view."""
    from ._creation import _empty

    vshape, vstrides, shape = repeat_layout(x._shape, x._strides, axis, r)
    out = _empty(vshape, x._dtype, x._device)
    _ew.copy_into(out, x._view(x._offset, vshape, vstrides))
    return out._view(out._offset, shape, _shapes.c_strides(shape, x._dtype.itemsize))


def repeat(x, repeats, /, *, axis=None):
    """Each element of ``x`` repeated ``repeats`` times along ``axis``.

    ``repeats``: a non-negative int, or an integer Array of shape (1,) or (x.shape[axis],)
    (one count per element; a 0-d Array counts as shape (1,)). ``axis=None`` flattens ``x``
    first; a 0-d ``x`` is treated as 1-D (NumPy). An int (or one-element Array) is one
    strided copy; per-element counts take one device read for the total and the smallest
    count, then a gather: the source index of output position j is the number of
    cumulative counts <= j (``searchsorted(..., side="right")``) fed to ``take``.
    """
    from ._creation import astype
    from .._core._dtypes import int64

    _check(x, "repeat")
    flat = axis is None or x.ndim == 0
    if flat:
        if axis is not None:
            _shapes.normalize_axis(axis, 1, "repeat")
        axis, n = 0, x.size
    else:
        axis = _shapes.normalize_axis(axis, x.ndim, "repeat")
        n = x._shape[axis]
    counts = None
    if isinstance(repeats, Array):
        if repeats._dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats._dtype}")
        same_device("repeat", x, repeats, what="x and repeats")
        if repeats.ndim > 1 or (repeats.ndim == 1 and repeats._shape[0] not in (1, n)):
            raise ValueError(f"repeat: repeats of shape {repeats._shape} do not broadcast to "
                             f"({n},) along axis {axis}")
        if repeats.size == 1:
            repeats = int(reshape(repeats, ()))
        elif n == 0:
            repeats = 0
        else:
            counts = astype(repeats, int64, copy=False)
    else:
        try:
            repeats = operator.index(repeats)
        except TypeError:
            raise TypeError(f"repeat: repeats must be an int or an integer Array, "
                            f"got {type(repeats).__name__}") from None
    if counts is None and repeats < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
    if flat:
        x = reshape(x, (-1,))
    if counts is not None:
        return _repeat_array(x, counts, axis)
    return _repeat_int(x, repeats, axis)


def _repeat_array(x, r64, axis):
    """``repeat`` by per-element int64 counts ``r64`` (shape (x.shape[axis],), not empty)."""
    from .._array import _to_host
    from ._creation import _empty, arange
    from ._searching import searchsorted
    from ._statistical import cumulative_sum, min as amin

    cs = cumulative_sum(r64)
    # one device read, explicit (numpy.asarray would go through the host conversion policy,
    # which must not refuse or warn about gparray's own reads)
    both = _to_host(concat([cs[-1:], reshape(amin(r64), (1,))]))
    total, low = int(both[0]), int(both[1])
    if low < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {low}")
    if total < 0:
        raise ValueError("repeat: the total number of repeats overflows int64")
    if total == 0:
        shape = x._shape[:axis] + (0,) + x._shape[axis + 1:]
        return _empty(shape, x._dtype, x._device)
    idx = searchsorted(cs, arange(total, dtype=r64._dtype, device=x._device), side="right")
    from ._indexing_functions import take  # (the gather lands with advanced indexing)

    return take(x, idx, axis=axis)
