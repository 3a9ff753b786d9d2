"""The array operations gparray.linalg's algorithms use, bound to gparray.

The algorithms in ``_decompositions.py`` and ``_solvers.py`` take this module as their
first argument (``o``) and reach arrays only through it and through the engine calls
(gparray/_engine/_solver.py), which take pointers. The CPU tier runs the very same
algorithms with ``o`` a NumPy twin of this module and the cuSOLVER bindings replaced by a
LAPACK model on host memory (tests/_fake_solver.py), so the column-major bookkeeping is
checked against numpy.linalg without a GPU.
"""
from __future__ import annotations

from .._core import _dtypes as _dt
from .._array import Array, _copy, _empty, _to_host
from .._api._creation import arange as _arange, astype, eye as _eye, tril, triu  # noqa: F401
from .._api._creation import tri_copy as _tri_copy, tri_mask_inplace as _tri_mask_inplace
from .._array._elementwise import abs, conj, log, sign  # noqa: F401,A004
from .._api._linear_algebra import matmul  # noqa: F401
from .._engine._transfer import memset0 as _memset0
from .._api._manipulation import broadcast_to, expand_dims, reshape  # noqa: F401
from .._api._searching import count_nonzero, where  # noqa: F401
from .._api._statistical import max, prod, sum  # noqa: F401,A004


def is_array(x) -> bool:
    return isinstance(x, Array)


def contig(x, dtype):
    """A new C-contiguous copy of ``x`` (any layout) converted to ``dtype``."""
    return _copy(x, dtype)


def empty(shape, dtype, like):
    """An uninitialized C-contiguous array on ``like``'s device."""
    return _empty(tuple(shape), dtype, like._device)


def zeros(shape, dtype, like):
    """A C-contiguous array of zeros on ``like``'s device (shape and dtype already checked by
    the caller: one allocation and one ``cudaMemsetAsync``)."""
    out = _empty(tuple(shape), dtype, like._device)
    _memset0(out)
    return out


def keep_upper(x):
    """``x`` (C-contiguous, a new array of the caller's) with the elements below the main
    diagonal of each matrix zeroed in place; returns ``x``."""
    return _tri_mask_inplace(x, 0, True)


def upper_copy(x, trans: bool, sb: int):
    """A new C-contiguous stack holding the upper triangle of each of x's matrices (``trans``:
    of its transpose) and zeros below it (x's dtype, read through its strides; ``sb``: the
    byte stride between its matrices)."""
    out = _empty(tuple(x.shape), x.dtype, x._device)
    _tri_copy(out, x, trans, sb)
    return out


def eye(batch: tuple, n: int, dtype, like):
    """A C-contiguous stack of identity matrices, shape batch + (n, n)."""
    e = _eye(n, dtype=dtype, device=like._device)
    return _copy(broadcast_to(e, tuple(batch) + (n, n))) if batch else e


def gather_last(x, perm, dtype):
    """A new C-contiguous array of ``x`` (any layout) with its last axis gathered through
    ``perm`` (int64[x.shape[-1]]: element i of the result is element perm[i] of x), in
    ``dtype``."""
    from .._api._indexing_functions import take

    r = take(x, perm, axis=x.ndim - 1)
    return r if r.dtype == dtype else _copy(r, dtype)


def ptr(x) -> int:
    return x._ptr


def dev(x) -> int:
    return x._device._id


def host(x):
    """``x`` as a NumPy array (a device-to-host copy: synchronizes the current stream)."""
    return _to_host(x)


def diag(x):
    """The main diagonals of a stack of square matrices, shape (..., n): a view."""
    st = x._strides
    return x._view(x._offset, x._shape[:-1], st[:-2] + (st[-2] + st[-1],))


def promote(d1, d2):
    return _dt.promote_types(d1, d2)


def arange(start: int, stop: int, dtype, like):
    return _arange(start, stop, dtype=dtype, device=like._device)
