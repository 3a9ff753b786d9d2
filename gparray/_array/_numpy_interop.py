"""How gparray Arrays meet NumPy objects (an extension; the standard leaves it open).

- NumPy scalars (``numpy.float64(2)``, ``numpy.int32(3)``, ``numpy.True_``) are operands of
  the operators like the Python numbers they hold, on either side (as PyTorch treats
  them): ``x * numpy.float32(2)`` and ``numpy.float32(2) * x`` are gparray arrays.
- NumPy's ufuncs called on gparray arrays (``numpy.log(x)``, and what NumPy's scalar
  operators run: ``numpy.float64(2) * x`` calls ``numpy.multiply``) dispatch to the gparray
  function of the same meaning through ``Array.__array_ufunc__``, as they do for CuPy's
  arrays, instead of copying the array to the host behind the caller's back. A ufunc
  gparray lacks, a method other than a plain call (``reduce``, ``at``, ...), or a NumPy
  array of more than 0 dimensions among the operands gives NumPy's TypeError.
- ``format(x, spec)`` of a 0-d array formats its value (``f"{x:.3g}"``), as NumPy's does.
- In-place operators cast their result as NumPy's do ('same_kind': ``int32 += int64``,
  ``float32 *= float64``; ``int32 += 2.5`` stays a TypeError).

Array (gparray/_array/_object.py) inherits ``NumpyInterop``; the namespace is imported at the call.
"""
from __future__ import annotations

import numpy as np

from .._core._device import same_device
from ._build import namespace

# NumPy ufunc name (``ufunc.__name__``) -> gparray function, where the two differ; every
# other ufunc whose name gparray also has maps to itself.
_RENAMED = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "conjugate": "conj", "power": "pow",
    "invert": "bitwise_invert", "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "true_divide": "divide", "rint": "round",
}
_NUMBER = (np.bool_, np.number)


class InplaceDtypeError(TypeError):
    """An in-place operator's result dtype is not the array's (``result_dtype``): Array's
    in-place operators then apply NumPy's 'same_kind' casting rule, or re-raise."""

    def __init__(self, message: str, result_dtype):
        super().__init__(message)
        self.result_dtype = result_dtype


def host_scalar(v):
    """A NumPy scalar (or 0-d NumPy array) as the Python number it holds; others unchanged."""
    if isinstance(v, _NUMBER) or (isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biufc"):
        return v.item()
    return v


def _function(ufunc):
    name = _RENAMED.get(ufunc.__name__, ufunc.__name__)
    return getattr(namespace(), name, None) if isinstance(ufunc, np.ufunc) else None


class NumpyInterop:
    """``__array_ufunc__`` and ``__format__`` of Array (see the module docstring)."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufunc calls on gparray arrays run the gparray function (result on the GPU)."""
        f = _function(ufunc)
        out = kwargs.pop("out", None)
        if f is None or method != "__call__" or any(v is not None for v in kwargs.values()):
            return NotImplemented
        args = [host_scalar(v) for v in inputs]
        if any(isinstance(v, (np.ndarray, np.generic)) for v in args):
            return NotImplemented
        if out is None or all(o is None for o in out):
            return f(*args)
        (o,) = out
        if not isinstance(o, NumpyInterop):
            return NotImplemented
        # out= on the inputs' device, checked before the function runs
        same_device(f.__name__, *(v for v in args if isinstance(v, NumpyInterop)), o)
        o[...] = f(*args)
        return o

    def __format__(self, spec):
        """``format(x, spec)``: the value's format for a 0-d array; ``str(x)`` for an empty spec."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Array.__format__")
        return str(self)
