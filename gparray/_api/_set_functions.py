"""Set functions (spec section "Set Functions"): isin, unique_all, unique_counts,
unique_inverse, unique_values.

unique: the flattened input (C order) is sorted (``sort`` when only values and counts are
asked, otherwise one stable sort of (value, index) pairs that writes both the sorted values
and the permutation: it gives first occurrences and the inverse), then the
set engine (gparray/_engine/_sets.py) marks group heads (an element unequal to the one
before it), scans their counts, reads the number of groups back (the one synchronization:
it decides the output shapes) and writes values, indices, the inverse and the counts in one
more pass. Results are sorted ascending as NumPy's ``unique``; every NaN is its own value
(count 1), -0.0 and 0.0 are one value (the first occurrence's sign for ``unique_all`` and
``unique_inverse``). Complex values are ordered by real part, then imaginary part, NaNs last
in each (two stable argsorts); an element with a NaN part is unique.

isin: the second operand is converted to the promoted dtype and sorted once; each element
of the first is looked up in a bitmap over the table's range (integer tables whose range
fits it) or searched in the table (a shared-memory sample table, then a short search in
global memory). NaN is in nothing.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core import _dtypes as _dt
from .._array import Array, _copy, _empty
from .._core._device import same_device
from .._engine import _sets

_I64 = _dt.int64
_PY = (bool, int, float, complex)


class UniqueAllResult(NamedTuple):
    """Result of ``unique_all``."""

    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    """Result of ``unique_counts``."""

    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    """Result of ``unique_inverse``."""

    values: Array
    inverse_indices: Array


def _flat(x) -> Array:
    """``x`` as a 1-D C-order array: a view when C-contiguous, else a copy."""
    if not x._is_c_contig():
        x = _copy(x)
    n = x.size
    return x._view(x._offset, (n,), (x._dtype.itemsize,))


def _complex_perm(xf) -> Array:
    """Stable permutation sorting complex ``xf`` by real part, then imaginary part (NaNs last
    in each): argsort of the imaginary parts, then a stable argsort of the real parts in
    that order."""
    from ._indexing_functions import take
    from ._sorting import argsort

    rdt = _dt._complex_to_real[xf._dtype]
    isz, n = rdt.itemsize, xf._shape[0]
    re = xf._view(xf._offset, (n,), (2 * isz,), rdt)
    im = xf._view(xf._offset + isz, (n,), (2 * isz,), rdt)
    p1 = argsort(im, stable=True)
    p2 = argsort(take(re, p1), stable=True)
    return take(p1, p2)


def _unique(x, name: str):
    """(values, indices, inverse, counts) of ``x``, None for what ``name`` does not return."""
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    idx, inv, cnt = _sets.VARIANTS[name]
    dev, dt, n = x._device, x._dtype, x.size
    if n == 0:
        e = _empty((0,), _I64, dev)
        return (_empty((0,), dt, dev), e if idx else None, _empty(x._shape, _I64, dev) if inv else None,
                e if cnt else None)
    xf = _flat(x)
    if not (idx or cnt) and _sets.DENSE and _sets.dense_ok(dt):
        got = _unique_dense(x, xf, inv)
        if got is not None:
            return got
    perm = s = None
    if dt.kind == "c":
        perm = _complex_perm(xf)
    elif idx or inv:  # one stable pairs sort: the sorted values and their permutation
        from .._engine import _sort

        s, perm = _empty((n,), dt, dev), _empty((n,), _I64, dev)
        _sort.sort(xf, 0, s, perm)
    t = _sets.tiles(n)
    counts, incl = _empty((t,), _I64, dev), _empty((t,), _I64, dev)
    if perm is None or s is not None:
        if s is None:
            from ._sorting import sort

            s = sort(xf)
        total = _sets.unique_count(s, counts, incl)
    else:
        s = _empty((n,), dt, dev)
        total = _sets.unique_count(xf, counts, incl, perm, s)
    del counts
    values = _empty((total,), dt, dev)
    indices = _empty((total,), _I64, dev) if idx else None
    inverse = _empty(x._shape, _I64, dev) if inv else None
    first = _empty((total + 1,), _I64, dev) if cnt else None
    _sets.unique_write(s, incl, values, perm, indices, inverse, first)
    out_counts = None
    if cnt:
        out_counts = _empty((total,), _I64, dev)
        _sets.unique_counts(out_counts, first)
    return values, indices, inverse, out_counts


def _unique_dense(x, xf, inv: bool):
    """(values, None, inverse or None, None) of integer or bool ``x`` through a bitmap of its
    range (gparray/_engine/_sets.py, no sort); None when the range does not fit it."""
    dev = x._device
    t = _sets.dense_bits(xf.size) // _sets.TILE
    counts, incl = _empty((t,), _I64, dev), _empty((t,), _I64, dev)
    total, state = _sets.dense_count(xf, counts, incl)
    if total < 0:
        return None
    values = _empty((total,), x._dtype, dev)
    inverse = _empty(x._shape, _I64, dev) if inv else None
    _sets.dense_write(state, values, incl, xf, inverse)
    return values, None, inverse, None


def unique_values(x, /):
    """The unique elements of ``x`` (flattened), sorted ascending; every NaN is kept (NaNs
    are distinct), -0.0 and 0.0 are one value. 1-D, x's dtype."""
    return _unique(x, "unique_values")[0]


def unique_counts(x, /):
    """``(values, counts)``: the unique elements of ``x`` (flattened, sorted ascending) and
    how often each occurs (int64; 1 for each NaN)."""
    v, _, _, c = _unique(x, "unique_counts")
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    """``(values, inverse_indices)``: the unique elements of ``x`` (flattened, sorted
    ascending) and, shaped like ``x``, the index into ``values`` of each element (int64)."""
    v, _, i, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(v, i)


def unique_all(x, /):
    """``(values, indices, inverse_indices, counts)``: the unique elements of ``x``
    (flattened, sorted ascending), the flat index of each one's first occurrence, the index
    into ``values`` of each element (shaped like ``x``) and the counts; indices int64."""
    return UniqueAllResult(*_unique(x, "unique_all"))


# ---------------------------------------------------------------------------- isin
def _isin_operand(v, other, name: str):
    """(Array or None, promoted dtype or None): None for a scalar that no element of the
    other operand's dtype can equal (an int outside an integer dtype's range)."""
    dt = _dt._scalar_result_type(other._dtype, v, name)
    if dt.kind == "c":
        raise TypeError(f"{name}: complex values are not supported, got {v!r}")
    try:
        _dt._check_scalar_fits(dt, v, name)
    except OverflowError:
        if dt.kind in "iu":
            return None, dt
        raise
    from ._creation import full

    return full((), v, dtype=dt, device=other._device), dt


def _sorted_table(x2, dt) -> Array:
    """x2 flattened, converted to ``dt`` and sorted ascending (NaNs last)."""
    t = _flat(x2) if x2._dtype == dt else _copy(x2, dt)
    n = t.size
    t = t._view(t._offset, (n,), (dt.itemsize,))
    if n <= 1:
        return t
    from ._sorting import sort

    return sort(t)


def isin(x1, x2, /, *, invert=False):
    """Whether each element of ``x1`` is in ``x2`` (``not in`` when ``invert``): a bool
    array of x1's shape (0-d when x1 is a Python scalar). Either operand may be a Python
    scalar (not both); values are compared in the promoted dtype (value equality: NaN is in
    nothing, -0.0 equals 0.0). Real dtypes only."""
    name = "isin"
    a1, a2 = isinstance(x1, Array), isinstance(x2, Array)
    for v in (x1, x2):
        if not isinstance(v, (Array,) + _PY):
            raise TypeError(f"{name}: x1 and x2 must be Arrays or Python scalars, got {type(v).__name__}")
    if not (a1 or a2):
        raise TypeError(f"{name}: at least one of x1 and x2 must be an Array")
    for v in (x1, x2):
        if isinstance(v, Array) and v._dtype.kind == "c":
            raise TypeError(f"{name}: expected arrays of real dtypes, got {v._dtype}")
    if not isinstance(invert, (bool, np.bool_)):
        raise TypeError(f"{name}: invert must be a bool, got {type(invert).__name__}")
    if a1 and a2:
        same_device(name, x1, x2, what="x1 and x2")
        try:
            dt = _dt.promote_types(x1._dtype, x2._dtype)
        except (KeyError, TypeError):
            raise TypeError(f"{name}: dtypes {x1._dtype} and {x2._dtype} have no common dtype") from None
    elif a1:
        x2, dt = _isin_operand(x2, x1, name)
    else:
        x1, dt = _isin_operand(x1, x2, name)
        if x1 is None:
            from ._creation import full

            return full((), bool(invert), dtype=_dt.bool, device=x2._device)
    dev = x1._device
    out = _empty(x1._shape, _dt.bool, dev)
    if out.size == 0:
        return out
    if x2 is None or x2.size == 0:
        from .._engine import _elementwise as _ew

        _ew.fill(out, bool(invert))
        return out
    s2 = _sorted_table(x2, dt)
    _sets.isin(x1, s2, out, _dt._compute_dtype(dt), bool(invert))
    return out


__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"]
