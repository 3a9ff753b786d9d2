"""Array's Python operators, built from one table: each is the elementwise function of the
same meaning (``a + b`` is ``add(a, b)``), ``@`` is ``matmul``.

Binary and unary operators are the compiled fast path (``_claunch.Fast``, when the C
extension is built) in front of the Python method made here, sharing the function's table
of learnt combinations; without the extension the Python method is the operator. In-place
operators stay in Python: they write into the left operand and apply NumPy's 'same_kind'
rule to its dtype. ``Array`` inherits ``Operators`` (gparray/_array/_object.py).
"""
from __future__ import annotations

import numpy as np

from .._core import _dtypes as _dt
from .._core._device import same_device
from .._native import claunch as _claunch
from . import _build
from . import _elementwise as _ew
from ._build import _copy
from ._indexing import _overlaps
from ._matmul import _matmul_shape, matmul
from ._numpy_interop import InplaceDtypeError, host_scalar

# dunder -> (elementwise function, reflected); in-place forms: (function, None)
OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True), "__iadd__": ("add", None),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True), "__isub__": ("subtract", None),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True), "__imul__": ("multiply", None),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True), "__itruediv__": ("divide", None),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__ifloordiv__": ("floor_divide", None),
    "__mod__": ("remainder", False), "__rmod__": ("remainder", True), "__imod__": ("remainder", None),
    "__pow__": ("pow", False), "__rpow__": ("pow", True), "__ipow__": ("pow", None),
    "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True), "__iand__": ("bitwise_and", None),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True), "__ior__": ("bitwise_or", None),
    "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True), "__ixor__": ("bitwise_xor", None),
    "__lshift__": ("bitwise_left_shift", False), "__rlshift__": ("bitwise_left_shift", True),
    "__ilshift__": ("bitwise_left_shift", None),
    "__rshift__": ("bitwise_right_shift", False), "__rrshift__": ("bitwise_right_shift", True),
    "__irshift__": ("bitwise_right_shift", None),
    "__eq__": ("equal", False), "__ne__": ("not_equal", False),
    "__lt__": ("less", False), "__le__": ("less_equal", False),
    "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
    "__neg__": ("negative", False), "__pos__": ("positive", False),
    "__abs__": ("abs", False), "__invert__": ("bitwise_invert", False),
}

_OPERANDS = (bool, int, float, complex)


def _operand(other):
    """``other`` as an operator operand (a NumPy scalar counts as the Python number it
    holds), or None when operators do not take it."""
    other = host_scalar(other)
    if isinstance(other, _build.Array) or isinstance(other, _OPERANDS):
        return other
    return None


def _binary(op, reflected):
    if reflected:
        def method(self, other, /):
            other = _operand(other)
            return NotImplemented if other is None else op(other, self)
    else:
        def method(self, other, /):
            if type(other) is not _build.Array:
                other = _operand(other)
                if other is None:
                    return NotImplemented
            return op(self, other)
    return method


def _unary(op):
    def method(self, /):
        return op(self)
    return method


def _inplace(op):
    def method(self, other, /):
        other = _operand(other)
        if other is None:
            return NotImplemented
        if isinstance(other, _build.Array) and other is not self:
            if other._device is not self._device:
                same_device(op.__name__, self, other)     # before the overlap copy below
            if _overlaps(self, other) and (other._ptr, other._strides) != (self._ptr, self._strides):
                other = _copy(other)
        try:
            op._apply(self, other, self)
        except InplaceDtypeError as e:
            # NumPy's in-place casting rule, 'same_kind': int32 += int64, float32 *= float64
            if not np.can_cast(e.result_dtype, self._dtype, "same_kind"):
                raise
            self[...] = op(self, other)   # (__setitem__ casts to self's dtype)
        return self
    return method


def _operator(dunder: str):
    """The attribute ``dunder`` of Array, from its OPERATORS entry."""
    fname, reflected = OPERATORS[dunder]
    op = getattr(_ew, fname)
    if reflected is None:
        method = _inplace(op)
    elif op._nin == 1:
        method = _unary(op)
    else:
        method = _binary(op, reflected)
    # named as the operator, in the code object too (the profiler labels frames by their code)
    method.__name__, method.__qualname__ = dunder, f"Operators.{dunder}"
    code = method.__code__.replace(co_name=dunder)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=f"Operators.{dunder}")
    method.__code__ = code
    method.__doc__ = f"{dunder}: {fname}({'other, self' if reflected else 'self, other'})"
    if reflected is None or _claunch is None:
        return method
    return _claunch.Fast(op._table, method, op._nin, reflected, label=dunder)


def _matmul_operand(other):
    return other if isinstance(other, _build.Array) else None


class Operators:
    """The operators Array inherits (one line each, from OPERATORS)."""

    __slots__ = ()

    __add__ = _operator("__add__")
    __radd__ = _operator("__radd__")
    __iadd__ = _operator("__iadd__")
    __sub__ = _operator("__sub__")
    __rsub__ = _operator("__rsub__")
    __isub__ = _operator("__isub__")
    __mul__ = _operator("__mul__")
    __rmul__ = _operator("__rmul__")
    __imul__ = _operator("__imul__")
    __truediv__ = _operator("__truediv__")
    __rtruediv__ = _operator("__rtruediv__")
    __itruediv__ = _operator("__itruediv__")
    __floordiv__ = _operator("__floordiv__")
    __rfloordiv__ = _operator("__rfloordiv__")
    __ifloordiv__ = _operator("__ifloordiv__")
    __mod__ = _operator("__mod__")
    __rmod__ = _operator("__rmod__")
    __imod__ = _operator("__imod__")
    __pow__ = _operator("__pow__")
    __rpow__ = _operator("__rpow__")
    __ipow__ = _operator("__ipow__")
    __and__ = _operator("__and__")
    __rand__ = _operator("__rand__")
    __iand__ = _operator("__iand__")
    __or__ = _operator("__or__")
    __ror__ = _operator("__ror__")
    __ior__ = _operator("__ior__")
    __xor__ = _operator("__xor__")
    __rxor__ = _operator("__rxor__")
    __ixor__ = _operator("__ixor__")
    __lshift__ = _operator("__lshift__")
    __rlshift__ = _operator("__rlshift__")
    __ilshift__ = _operator("__ilshift__")
    __rshift__ = _operator("__rshift__")
    __rrshift__ = _operator("__rrshift__")
    __irshift__ = _operator("__irshift__")
    __eq__ = _operator("__eq__")
    __ne__ = _operator("__ne__")
    __lt__ = _operator("__lt__")
    __le__ = _operator("__le__")
    __gt__ = _operator("__gt__")
    __ge__ = _operator("__ge__")
    __neg__ = _operator("__neg__")
    __pos__ = _operator("__pos__")
    __abs__ = _operator("__abs__")
    __invert__ = _operator("__invert__")

    __hash__ = None  # mutable: not hashable

    def __matmul__(self, other, /):
        """``self @ other``: ``matmul(self, other)``."""
        return NotImplemented if _matmul_operand(other) is None else matmul(self, other)

    def __rmatmul__(self, other, /):
        """``other @ self``: ``matmul(other, self)``."""
        return NotImplemented if _matmul_operand(other) is None else matmul(other, self)

    def __imatmul__(self, other, /):
        """``self @= other``: in place only when the product keeps this array's dtype and
        shape (checked before any device work; the planner raises matmul's own errors first)."""
        if _matmul_operand(other) is None:
            return NotImplemented
        same_device("matmul", self, other)
        shape = _matmul_shape(self, other)
        odt = _dt.promote_types(self._dtype, other._dtype)
        if odt != self._dtype:
            raise TypeError(f"__imatmul__: in-place result dtype {odt.name} differs from the array's dtype "
                            f"{self._dtype.name}")
        if shape != self._shape:
            raise ValueError(f"__imatmul__: in-place result shape {shape} differs from the array's shape "
                             f"{self._shape}")
        self[...] = matmul(self, other)
        return self
