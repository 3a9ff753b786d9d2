"""NumPy-style methods of Array (an extension: the standard's array object has none of them).

CuPy arrays and PyTorch tensors both have these, and array-agnostic code written against
them calls them (SciPy: ``res.nfev.sum(axis=-1)``, ``S.reshape(shape)[()]``). Each method
delegates to the namespace function of the same meaning, with NumPy's argument names and
defaults (``axis=None`` reduces over everything; ``ddof`` for std/var; ``cumsum()`` flattens;
``transpose()`` reverses the axes; ``sort()`` works in place). ``out=`` (an Array of the
result's shape) receives the result, so NumPy's functions (``numpy.sum(x)`` calls
``x.sum(axis=None, out=None)``) reach these methods too. The standard's own attributes
(``T``, ``mT``, ``shape``, ``to_device``, ...) keep the standard's meaning.

This module belongs to the Array layer (see docs/architecture.md): ``Array`` inherits
``ArrayMethods``, and the namespace is imported only when a method is called.
"""
from __future__ import annotations

import operator

import numpy as np

from .._core import _dtypes as _dt
from .._core._device import same_device
from .._engine import _shapes
from ._build import namespace


def _c_order(order, name: str) -> None:
    if order not in ("C", None):
        raise ValueError(f"{name}: only order='C' is supported (gparray arrays are C-ordered), got {order!r}")


def _no_fields(order, name: str) -> None:
    if order is not None:
        raise ValueError(f"{name}: order= needs a structured dtype (NumPy's), got {order!r}")


def _check_out(x, out, name: str) -> None:
    """``out=`` (None, or a gparray Array on x's device), checked before anything runs."""
    if out is None:
        return
    if not isinstance(out, ArrayMethods):
        raise TypeError(f"{name}: out must be a gparray Array, got {type(out).__name__}")
    same_device(name, x, out, what="x and out")


def _into(out, result, name: str):
    """``result``, or ``out`` with ``result`` written into it (NumPy's ``out=``)."""
    if out is None:
        return result
    if not isinstance(out, ArrayMethods):
        raise TypeError(f"{name}: out must be a gparray Array, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"{name}: out has shape {out.shape}, the result has shape {result.shape}")
    out[...] = result
    return out


def _axes_args(axes: tuple, ndim: int):
    """``transpose``'s axes: none or None (reversed), one sequence, or the ints themselves."""
    if not axes or axes == (None,):
        return tuple(range(ndim))[::-1]
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        return tuple(axes[0])
    return axes


def _shape_args(shape: tuple, name: str):
    """``reshape``'s shape: one int or sequence, or the ints themselves."""
    if not shape:
        raise TypeError(f"{name}: expected a shape (ints, or one tuple of ints)")
    s = shape[0] if len(shape) == 1 else shape
    return (operator.index(s),) if isinstance(s, (int, np.integer)) else s


def _numeric(x, dtype, name: str):
    """``x`` for mean/std/var: converted to ``dtype`` when given, bool to float64 (NumPy)."""
    if dtype is not None:
        return namespace().astype(x, _dt._normalize_dtype(dtype, name))
    return namespace().astype(x, _dt._default_float) if x.dtype == _dt.bool else x


class ArrayMethods:
    """NumPy's ndarray methods on Array, each delegating to a namespace function."""

    __slots__ = ()

    # ------------------------------------------------------------------ shape
    def reshape(self, *shape, order="C", copy=None):
        """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``: ``reshape(x, shape, copy=copy)``."""
        _c_order(order, "reshape")
        return namespace().reshape(self, _shape_args(shape, "reshape"), copy=copy)

    def ravel(self, order="C"):
        """The elements as a 1-d array (a view when the layout allows): ``reshape(x, (-1,))``."""
        _c_order(order, "ravel")
        return namespace().reshape(self, (-1,))

    def flatten(self, order="C"):
        """A 1-d copy of the elements: ``reshape(x, (-1,), copy=True)``."""
        _c_order(order, "flatten")
        return namespace().reshape(self, (-1,), copy=True)

    def squeeze(self, axis=None):
        """``squeeze(x, axis)``; ``axis=None`` removes every length-1 axis (NumPy's)."""
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        return namespace().squeeze(self, axis=axis)

    def transpose(self, *axes):
        """``permute_dims(x, axes)``: ``x.transpose()`` reverses the axes, ``x.transpose(1, 0, 2)``
        and ``x.transpose((1, 0, 2))`` permute them."""
        return namespace().permute_dims(self, _axes_args(axes, self.ndim))

    def swapaxes(self, axis1, axis2, /):
        """View with ``axis1`` and ``axis2`` exchanged: ``permute_dims`` of the swap."""
        p = list(range(self.ndim))
        a, b = (_shapes.normalize_axis(operator.index(i), self.ndim, "swapaxes") for i in (axis1, axis2))
        p[a], p[b] = p[b], p[a]
        return namespace().permute_dims(self, tuple(p))

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):  # noqa: A003
        """``sum(x, axis=axis, dtype=dtype, keepdims=keepdims)``."""
        _check_out(self, out, "sum")
        return _into(out, namespace().sum(self, axis=axis, dtype=dtype, keepdims=keepdims), "sum")

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        """``prod(x, axis=axis, dtype=dtype, keepdims=keepdims)``."""
        _check_out(self, out, "prod")
        return _into(out, namespace().prod(self, axis=axis, dtype=dtype, keepdims=keepdims), "prod")

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        """``mean(x, axis=axis, keepdims=keepdims)``, of ``astype(x, dtype)`` when ``dtype`` is
        given (bool arrays: float64, as NumPy)."""
        _check_out(self, out, "mean")
        r = namespace().mean(_numeric(self, dtype, "mean"), axis=axis, keepdims=keepdims)
        return _into(out, r, "mean")

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
        """``std(x, axis=axis, correction=ddof, keepdims=keepdims)`` (``correction`` wins if given)."""
        _check_out(self, out, "std")
        c = ddof if correction is None else correction
        r = namespace().std(_numeric(self, dtype, "std"), axis=axis, correction=c, keepdims=keepdims)
        return _into(out, r, "std")

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
        """``var(x, axis=axis, correction=ddof, keepdims=keepdims)`` (``correction`` wins if given)."""
        _check_out(self, out, "var")
        c = ddof if correction is None else correction
        r = namespace().var(_numeric(self, dtype, "var"), axis=axis, correction=c, keepdims=keepdims)
        return _into(out, r, "var")

    def max(self, axis=None, out=None, keepdims=False):  # noqa: A003
        """``max(x, axis=axis, keepdims=keepdims)``."""
        _check_out(self, out, "max")
        return _into(out, namespace().max(self, axis=axis, keepdims=keepdims), "max")

    def min(self, axis=None, out=None, keepdims=False):  # noqa: A003
        """``min(x, axis=axis, keepdims=keepdims)``."""
        _check_out(self, out, "min")
        return _into(out, namespace().min(self, axis=axis, keepdims=keepdims), "min")

    def any(self, axis=None, out=None, keepdims=False):  # noqa: A003
        """``any(x, axis=axis, keepdims=keepdims)``."""
        _check_out(self, out, "any")
        return _into(out, namespace().any(self, axis=axis, keepdims=keepdims), "any")

    def all(self, axis=None, out=None, keepdims=False):  # noqa: A003
        """``all(x, axis=axis, keepdims=keepdims)``."""
        _check_out(self, out, "all")
        return _into(out, namespace().all(self, axis=axis, keepdims=keepdims), "all")

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """``argmax(x, axis=axis, keepdims=keepdims)`` (``axis=None``: index into the flattened array)."""
        _check_out(self, out, "argmax")
        return _into(out, namespace().argmax(self, axis=axis, keepdims=keepdims), "argmax")

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """``argmin(x, axis=axis, keepdims=keepdims)`` (``axis=None``: index into the flattened array)."""
        _check_out(self, out, "argmin")
        return _into(out, namespace().argmin(self, axis=axis, keepdims=keepdims), "argmin")

    def cumsum(self, axis=None, dtype=None, out=None):
        """``cumulative_sum(x, axis=axis, dtype=dtype)``; ``axis=None`` flattens x first (NumPy's)."""
        _check_out(self, out, "cumsum")
        x, axis = (namespace().reshape(self, (-1,)), 0) if axis is None else (self, axis)
        return _into(out, namespace().cumulative_sum(x, axis=axis, dtype=dtype), "cumsum")

    def cumprod(self, axis=None, dtype=None, out=None):
        """``cumulative_prod(x, axis=axis, dtype=dtype)``; ``axis=None`` flattens x first (NumPy's)."""
        _check_out(self, out, "cumprod")
        x, axis = (namespace().reshape(self, (-1,)), 0) if axis is None else (self, axis)
        return _into(out, namespace().cumulative_prod(x, axis=axis, dtype=dtype), "cumprod")

    # ------------------------------------------------------------------ elementwise
    def clip(self, min=None, max=None, out=None):  # noqa: A002  (NumPy's names)
        """``clip(x, min, max)``."""
        _check_out(self, out, "clip")
        return _into(out, namespace().clip(self, min, max), "clip")

    def round(self, decimals=0, out=None):  # noqa: A003
        """``round(x)`` to ``decimals`` digits as NumPy does: ``round(x * 10**d) / 10**d``
        (``round(x / 10**-d) * 10**-d`` for negative ``d``, cast back for integers, which
        ``d >= 0`` leaves unchanged)."""
        _check_out(self, out, "round")
        xp, d = namespace(), operator.index(decimals)
        if d == 0 or (d > 0 and self.dtype.kind in "iu"):
            r = xp.round(self)
        elif d > 0:
            r = xp.round(self * 10.0**d) / 10.0**d
        else:
            r = xp.round(self / 10.0**-d) * 10.0**-d
            r = xp.astype(r, self.dtype) if self.dtype.kind in "iu" else r
        return _into(out, r, "round")

    def conj(self):
        """``conj(x)``: the complex conjugate (a copy for real arrays)."""
        return namespace().conj(self)

    def conjugate(self):
        """``conj(x)``, NumPy's other name."""
        return namespace().conj(self)

    @property
    def real(self):
        """The real part as a view (writes go to x), as NumPy's ``x.real``; a view of x itself
        for real arrays."""
        dt = _dt._complex_to_real.get(self.dtype, self.dtype)
        return self._view(self._offset, self.shape, self.strides, dt)

    @property
    def imag(self):
        """The imaginary part as a view (writes go to x), as NumPy's ``x.imag``; for real arrays
        a new array of zeros of x's dtype (NumPy's is read-only)."""
        if self.dtype.kind != "c":
            return namespace().zeros_like(self)
        dt = _dt._complex_to_real[self.dtype]
        return self._view(self._offset + dt.itemsize, self.shape, self.strides, dt)

    # ------------------------------------------------------------------ searching, sorting
    def nonzero(self):
        """``nonzero(x)``: a tuple of index arrays, one per axis."""
        return namespace().nonzero(self)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort x in place along ``axis`` (``x[...] = sort(x, axis=axis)``); every gparray sort
        is stable, whatever ``kind``."""
        _no_fields(order, "sort")
        self[...] = namespace().sort(self, axis=axis)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """``argsort(x, axis=axis)`` (stable); ``axis=None`` sorts the flattened array."""
        _no_fields(order, "argsort")
        x, axis = (namespace().reshape(self, (-1,)), 0) if axis is None else (self, axis)
        return namespace().argsort(x, axis=axis)

    # ------------------------------------------------------------------ products
    def dot(self, b, /, out=None):
        """NumPy's ``dot``: a product with a 0-d operand, ``matmul`` when both operands have at
        most 2 dimensions or b has 1, else the sum over x's last and b's second-to-last axis
        (``tensordot``)."""
        _check_out(self, out, "dot")
        if isinstance(b, ArrayMethods):
            same_device("dot", self, b)
        xp = namespace()
        if self.ndim == 0 or b.ndim == 0:
            r = xp.multiply(self, b)
        elif b.ndim == 1 or (self.ndim <= 2 and b.ndim <= 2):
            r = xp.matmul(self, b)
        else:
            r = xp.tensordot(self, b, axes=((self.ndim - 1,), (b.ndim - 2,)))
        return _into(out, r, "dot")

    # ------------------------------------------------------------------ copies, host values
    def copy(self, order="C"):
        """A C-contiguous device copy: ``asarray(x, copy=True)``."""
        _c_order(order, "copy")
        return namespace().asarray(self, copy=True)

    def fill(self, value, /):
        """Set every element to ``value``, in place (``x[...] = value``)."""
        self[...] = value

    def item(self, *args):
        """One element as a Python scalar: of a one-element array, or at flat index ``i``
        (``x.item(i)``) or index tuple (``x.item((i, j))``, ``x.item(i, j)``)."""
        if not args:
            if self.size != 1:
                raise ValueError(f"item: can only convert an array of size 1 to a Python scalar, "
                                 f"got size {self.size}")
            x = self
        elif len(args) == 1 and not isinstance(args[0], tuple):
            i = operator.index(args[0])
            if not -self.size <= i < self.size:
                raise IndexError(f"item: index {i} is out of bounds for size {self.size}")
            x = self[tuple(int(k) for k in np.unravel_index(i % self.size, self.shape))]
        else:
            x = self[args[0] if len(args) == 1 else args]
        return x._to_numpy().reshape(()).item()

    def tolist(self):
        """The values as nested Python lists (a Python scalar for a 0-d array)."""
        return self._to_numpy().tolist()
