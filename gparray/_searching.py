"""Searching functions (spec section "Searching Functions"): where. (argmax, argmin,
nonzero, count_nonzero and searchsorted arrive with the reductions issue.)"""
from __future__ import annotations

from . import _dtypes as _dt
from ._array import Array
from ._engine import _elementwise as _ew
from ._engine._shapes import broadcast_shapes

_PY = (bool, int, float, complex)


def where(condition, x1, x2, /):
    """Elements of ``x1`` where ``condition`` is True, of ``x2`` elsewhere (scalars allowed)."""
    from ._creation import _empty, full

    if not isinstance(condition, Array):
        raise TypeError(f"where: condition must be a gparray Array, got {type(condition).__name__}")
    if condition._dtype != _dt.bool:
        raise TypeError(f"where: condition must have dtype bool, got {condition._dtype}")
    a1, a2 = isinstance(x1, Array), isinstance(x2, Array)
    for v in (x1, x2):
        if not isinstance(v, (Array,) + _PY):
            raise TypeError(f"where: x1 and x2 must be Arrays or Python scalars, got {type(v).__name__}")
    if a1 and a2:
        dtype = _dt.promote_types(x1._dtype, x2._dtype)
    elif a1:
        dtype = _dt._scalar_result_type(x1._dtype, x2, "where")
        _dt._check_scalar_fits(dtype, x2, "where")
    elif a2:
        dtype = _dt._scalar_result_type(x2._dtype, x1, "where")
        _dt._check_scalar_fits(dtype, x1, "where")
    else:
        raise TypeError("where: at least one of x1 and x2 must be an Array")
    dev = condition._device
    for v in (x1, x2):
        if isinstance(v, Array) and v._device != dev:
            raise ValueError(f"where: operands are on different devices ({v._device}, {dev})")
    x1 = x1 if a1 else full((), x1, dtype=dtype, device=dev)
    x2 = x2 if a2 else full((), x2, dtype=dtype, device=dev)
    shape = broadcast_shapes(condition._shape, x1._shape, x2._shape, name="where")
    out = _empty(shape, dtype, dev)
    _ew.where(condition, x1, x2, out)
    return out
