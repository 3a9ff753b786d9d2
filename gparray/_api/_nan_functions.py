"""NaN-skipping reductions, an extension beyond the standard (as NumPy's and CuPy's):
nansum, nanprod, nanmean, nanmax, nanmin, nanvar, nanstd.

Why here: xarray reduces floating data with ``skipna`` on by default and looks these names
up on the array's namespace (``xarray/core/nputils.py``); where a namespace lacks them it
calls NumPy's, which turns a gparray Array into a host copy (``Array.__array__``) and
returns a NumPy result. With them, ``DataArray.mean(dim)``, ``.max``, ``.std`` ... stay on
the GPU. cubed's nan-functions call ``nansum`` on its backend namespace too.

Semantics follow NumPy: NaN elements are left out (complex: NaN in either part); a slice
with nothing left gives 0 (``nansum``), 1 (``nanprod``) or NaN (``nanmean``, ``nanmax``,
``nanmin``, and ``nanvar``/``nanstd`` when N - correction <= 0), without NumPy's
RuntimeWarning. Integer and bool arrays have no NaN: the plain reductions run (``nanmean``,
``nanvar``, ``nanstd`` of integers give float64 as ``mean``). Like ``max``/``min`` and
``var``/``std``, ``nanmax``/``nanmin``/``nanvar``/``nanstd`` take real dtypes only.

Each is a few of the namespace's own operations (no kernels of their own): the algorithms
take the namespace as their first argument, ``_GP`` here and ``numpy`` on the CPU tier
(tests/test_nan_functions.py), where they are checked against NumPy's nan-functions.
"""
from __future__ import annotations

import types

from .._array import Array
from ._creation import asarray, astype
from .._core._dtypes import float32, float64
from .._array._elementwise import divide, isnan, logical_not, multiply, sqrt, subtract
from ._searching import count_nonzero, where
from ._statistical import max as _max, mean, min as _min, prod, std, sum as _sum, var

# the operations the algorithms use, bound to gparray (numpy has the same names)
_GP = types.SimpleNamespace(
    asarray=asarray, astype=astype, count_nonzero=count_nonzero, divide=divide, float32=float32,
    float64=float64, isnan=isnan, logical_not=logical_not, max=_max, mean=mean, min=_min,
    multiply=multiply, prod=prod, sqrt=sqrt, std=std, subtract=subtract, sum=_sum, var=var,
    where=where)

_NAN = float("nan")
_INF = float("inf")


def _check(x, name: str) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")


def _correction(correction, ddof, name: str):
    """NumPy's ``ddof`` as another name for the standard's ``correction``."""
    if ddof is None:
        return correction
    if correction != 0.0:
        raise ValueError(f"{name}: give correction or ddof (its NumPy name), not both")
    return ddof


def _real_dtype(o, dt):
    """The real floating dtype of floating or complex ``dt``."""
    if dt.kind == "c":
        return o.float32 if dt.itemsize == 8 else o.float64
    return dt


# ---------------------------------------------------------------------- the algorithms
def _sum_or_prod(o, op: str, x, axis, dtype, keepdims):
    f = getattr(o, op)
    if x.dtype.kind not in "fc":
        return f(x, axis=axis, dtype=dtype, keepdims=keepdims)
    filled = o.where(o.isnan(x), 0 if op == "sum" else 1, x)
    return f(filled, axis=axis, dtype=dtype, keepdims=keepdims)


def _nanmean(o, x, axis, dtype, keepdims):
    if x.dtype.kind not in "fc":
        return o.mean(o.astype(x, o.float64 if dtype is None else dtype), axis=axis, keepdims=keepdims)
    mask = o.isnan(x)
    total = o.sum(o.where(mask, 0, x), axis=axis, dtype=dtype, keepdims=keepdims)
    count = o.count_nonzero(o.logical_not(mask), axis=axis, keepdims=keepdims)
    total = o.asarray(total)
    return o.divide(total, o.astype(o.asarray(count), _real_dtype(o, total.dtype)))


def _nanextreme(o, op: str, x, axis, keepdims):
    f = getattr(o, op)
    if x.dtype.kind != "f":   # integers and bool have no NaN; complex: f raises TypeError
        return f(x, axis=axis, keepdims=keepdims)
    mask = o.isnan(x)
    r = f(o.where(mask, -_INF if op == "max" else _INF, x), axis=axis, keepdims=keepdims)
    # a slice of NaNs only: NaN (its filled max/min is -inf/inf)
    nothing = o.asarray(o.count_nonzero(o.logical_not(mask), axis=axis, keepdims=keepdims)) == 0
    return o.where(nothing, _NAN, o.asarray(r))


def _nanvar(o, x, axis, dtype, correction, keepdims):
    if dtype is not None:
        x = o.astype(x, dtype)
    if x.dtype.kind != "f":   # integers: var gives float64; bool and complex: var raises
        return o.var(x, axis=axis, correction=correction, keepdims=keepdims)
    mask = o.isnan(x)
    count = o.astype(o.asarray(o.count_nonzero(o.logical_not(mask), axis=axis, keepdims=True)), x.dtype)
    avg = o.divide(o.sum(o.where(mask, 0, x), axis=axis, keepdims=True), count)
    dev = o.where(mask, 0, o.subtract(x, avg))
    ss = o.asarray(o.sum(o.multiply(dev, dev), axis=axis, keepdims=keepdims))
    # N - correction, reduced over the (size-1) reduced axes to the result's shape
    dof = o.asarray(o.subtract(o.sum(count, axis=axis, keepdims=keepdims), correction))
    return o.where(dof > 0, o.divide(ss, o.where(dof > 0, dof, 1)), _NAN)


# ---------------------------------------------------------------------- the namespace's functions
def nansum(x, /, *, axis=None, dtype=None, keepdims=False):
    """Sum over ``axis`` leaving out NaNs (all-NaN slices sum to 0); dtype rules as ``sum``."""
    _check(x, "nansum")
    return _sum_or_prod(_GP, "sum", x, axis, dtype, keepdims)


def nanprod(x, /, *, axis=None, dtype=None, keepdims=False):
    """Product over ``axis`` leaving out NaNs (all-NaN slices give 1); dtype rules as ``prod``."""
    _check(x, "nanprod")
    return _sum_or_prod(_GP, "prod", x, axis, dtype, keepdims)


def nanmean(x, /, *, axis=None, dtype=None, keepdims=False):
    """Mean over ``axis`` of the non-NaN elements (NaN where there are none); floating and
    complex types keep their dtype (``dtype`` accumulates and returns another), integers and
    bool give float64."""
    _check(x, "nanmean")
    return _nanmean(_GP, x, axis, dtype, keepdims)


def nanmax(x, /, *, axis=None, keepdims=False):
    """Largest non-NaN element over ``axis`` (NaN for a slice of NaNs only); real dtypes."""
    _check(x, "nanmax")
    return _nanextreme(_GP, "max", x, axis, keepdims)


def nanmin(x, /, *, axis=None, keepdims=False):
    """Smallest non-NaN element over ``axis`` (NaN for a slice of NaNs only); real dtypes."""
    _check(x, "nanmin")
    return _nanextreme(_GP, "min", x, axis, keepdims)


def nanvar(x, /, *, axis=None, dtype=None, correction=0.0, keepdims=False, ddof=None):
    """Variance of the non-NaN elements over ``axis``, divisor N - correction (``ddof`` is
    NumPy's name for it; NaN when that is <= 0); real dtypes, integers give float64;
    ``dtype`` converts the input first."""
    _check(x, "nanvar")
    return _nanvar(_GP, x, axis, dtype, _correction(correction, ddof, "nanvar"), keepdims)


def nanstd(x, /, *, axis=None, dtype=None, correction=0.0, keepdims=False, ddof=None):
    """Standard deviation of the non-NaN elements: the square root of ``nanvar`` (same rules)."""
    _check(x, "nanstd")
    c = _correction(correction, ddof, "nanstd")
    if dtype is None and x.dtype.kind != "f":
        return std(x, axis=axis, correction=c, keepdims=keepdims)
    return sqrt(_nanvar(_GP, x, axis, dtype, c, keepdims))


__all__ = ["nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar"]
