"""The elementwise op factory: ``UnaryOp`` and ``BinaryOp`` objects built from one table
entry each (see ``_elementwise_funcs.py``). They normalize operands (Python scalars are
weak and travel to the kernel by value), check dtype categories, promote with the explicit
table, broadcast, allocate and call the elementwise engine once."""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtypes as _dt
from ._array import Array
from ._engine import _elementwise as _ew
from ._engine._shapes import broadcast_shapes

_PY_SCALARS = (bool, int, float, complex)

# result rules: how the output dtype follows from the promoted input dtype
PROMOTE = "promote"      # output = promoted dtype (add, multiply, ...)
BOOL = "bool"            # output bool, compute in the promoted dtype (equal, isnan, ...)
LOGICAL = "logical"      # output bool, compute in bool (logical_and, ...)
FLOAT = "float"          # integer inputs give the default float (divide)
REAL = "real"            # complex inputs give their real dtype (abs, real, imag)


def _result(rule: str, dt):
    """(output dtype, compute dtype) for promoted input dtype ``dt`` under ``rule``."""
    if rule == PROMOTE:
        return dt, dt
    if rule == BOOL:
        return _dt.bool, dt
    if rule == LOGICAL:
        return _dt.bool, _dt.bool
    if rule == FLOAT:
        if dt.kind in "fc":
            return dt, dt
        return _dt._default_float, _dt._default_float
    if rule == REAL:
        if dt.kind == "c":
            r = _dt._complex_to_real[dt]
            return r, dt
        return dt, dt
    raise ValueError(rule)


def _check_category(name, category, dt):
    if dt not in _dt._dtype_categories[category]:
        raise TypeError(f"{name}: expected an array of {category} dtype, got {dt.name}")


def _new_out(shape, dtype, device):
    from ._creation import _empty

    return _empty(shape, dtype, device)


class UnaryOp:
    """An elementwise function of one array (one table entry)."""

    def __init__(self, name: str, category: str, functor: str, rule: str = PROMOTE, doc: str = ""):
        self.__name__ = self.__qualname__ = name
        self.category = category
        self.functor = functor
        self.rule = rule
        self.__doc__ = doc

    def __repr__(self):
        return f"<gparray elementwise function {self.__name__}>"

    def __call__(self, x, /):
        return self._apply(x, None)

    def _apply(self, x, out):
        name = self.__name__
        if not isinstance(x, Array):
            raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
        dt = x._dtype
        _check_category(name, self.category, dt)
        odt, ct = _result(self.rule, dt)
        if out is None:
            out = _new_out(x._shape, odt, x._device)
        _ew.unary(self.functor, x, out, ct)
        return out


class BinaryOp:
    """An elementwise function of two operands (arrays or Python scalars; one table entry)."""

    def __init__(self, name: str, category: str, functor: str, rule: str = PROMOTE, doc: str = ""):
        self.__name__ = self.__qualname__ = name
        self.category = category
        self.functor = functor
        self.rule = rule
        self.__doc__ = doc

    def __repr__(self):
        return f"<gparray elementwise function {self.__name__}>"

    def __call__(self, x1, x2, /):
        return self._apply(x1, x2, None)

    def _apply(self, x1, x2, out):
        name = self.__name__
        a1, a2 = isinstance(x1, Array), isinstance(x2, Array)
        if a1 and a2:
            if x1._device != x2._device:
                raise ValueError(f"{name}: operands are on different devices ({x1._device}, {x2._device})")
            _check_category(name, self.category, x1._dtype)
            _check_category(name, self.category, x2._dtype)
            dt = _dt.promote_types(x1._dtype, x2._dtype)
            odt, ct = _result(self.rule, dt)
            shape = x1._shape if x1._shape == x2._shape else broadcast_shapes(x1._shape, x2._shape, name=name)
            out = self._out(out, shape, odt, x1._device, (x1, x2))
            _ew.binary(self.functor, x1, x2, out, ct)
            return out
        if a1 or a2:
            arr, sc = (x1, x2) if a1 else (x2, x1)
            if not isinstance(sc, _PY_SCALARS):
                raise TypeError(f"{name}: expected a gparray Array or a Python scalar, got {type(sc).__name__}")
            _check_category(name, self.category, arr._dtype)
            dt = _dt._scalar_result_type(arr._dtype, sc, name)
            _check_category(name, self.category, dt)
            _dt._check_scalar_fits(dt, sc, name)
            odt, ct = _result(self.rule, dt)
            out = self._out(out, arr._shape, odt, arr._device, (arr,))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                _ew.scalar(self.functor, arr, sc, not a1, out, ct)
            return out
        raise TypeError(f"{name}: expected at least one gparray Array operand, got "
                        f"{type(x1).__name__} and {type(x2).__name__}")

    def _out(self, out, shape, odt, device, inputs):
        if out is None:
            return _new_out(shape, odt, device)
        # in-place: the result must keep the left operand's dtype and shape
        if odt != out._dtype:
            raise TypeError(f"{self.__name__}: in-place result dtype {odt.name} differs from the "
                            f"array's dtype {out._dtype.name}")
        if shape != out._shape:
            raise ValueError(f"{self.__name__}: in-place result shape {shape} differs from the "
                             f"array's shape {out._shape}")
        return out
