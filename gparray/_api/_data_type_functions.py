"""Data type functions (spec section "Data Type Functions"): can_cast, finfo, iinfo, isdtype,
result_type. The rules live in ``_dtypes``; these are the documented public entry points.
They accept the extension dtype float16 too, with NumPy 2's rules, and (except isdtype, as
in NumPy) the Python types bool, int, float, complex as the dtypes NumPy reads them as:
bool, int64, float64, complex128.
"""
from __future__ import annotations

from .._core import _dtypes

# astype is defined in _creation.py's copy engine and re-exported by gparray/__init__.py

__all__ = ["can_cast", "finfo", "iinfo", "isdtype", "result_type"]


def can_cast(from_, to, /) -> bool:
    """Whether a cast from ``from_`` to ``to`` is allowed by the type promotion rules.

    Parameters
    ----------
    from_ : dtype or Array
        the dtype, or an array whose dtype, to cast from.
    to : dtype
        the dtype to cast to.

    Returns
    -------
    bool
        True when ``result_type(from_, to) == to``. Within a kind this is the spec's
        promotion graph; across kinds (left open by the spec) it is NumPy 2's "safe"
        casting: bool casts to every dtype, int8/uint8/int16/uint16 to float32 and up,
        every integer to float64 and complex128, and never to a lower kind. float16
        (extension) casts to every floating dtype; bool, int8 and uint8 cast to it.

    Raises
    ------
    TypeError
        when ``from_`` is neither an array nor a gparray dtype, or ``to`` is not a dtype.
    """
    return _dtypes.can_cast(from_, to)


def finfo(type, /) -> _dtypes.FInfo:  # noqa: A002  (the spec's parameter name)
    """Machine limits of a floating-point dtype.

    Parameters
    ----------
    type : dtype or Array
        a floating-point dtype, or an array of one. For a complex dtype the limits are
        those of its real component.

    Returns
    -------
    FInfo
        with ``bits`` (int), ``eps``, ``max``, ``min``, ``smallest_normal`` (Python floats)
        and ``dtype`` (the real floating-point dtype: float32 for complex64). float16
        (extension) gives NumPy's values: 16 bits, eps 2**-10, max 65504.

    Raises
    ------
    TypeError
        for a non-floating dtype or anything that is not a dtype or an array.
    """
    return _dtypes.finfo(type)


def iinfo(type, /) -> _dtypes.IInfo:  # noqa: A002  (the spec's parameter name)
    """Machine limits of an integer dtype.

    Parameters
    ----------
    type : dtype or Array
        an integer dtype, or an array of one.

    Returns
    -------
    IInfo
        with ``bits``, ``max``, ``min`` (Python ints) and ``dtype``.

    Raises
    ------
    TypeError
        for a non-integer dtype (bool included) or anything that is not a dtype or an
        array.
    """
    return _dtypes.iinfo(type)


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of the given kind.

    Parameters
    ----------
    dtype : dtype
        the dtype to test.
    kind : dtype, str or tuple
        a dtype (equality); one of the kind strings ``'bool'``, ``'signed integer'``,
        ``'unsigned integer'``, ``'integral'``, ``'real floating'``, ``'complex floating'``,
        ``'numeric'``; or a tuple of dtypes and kind strings (True if any item matches).
        The extension dtype float16 is ``'real floating'`` and ``'numeric'``.

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        when ``dtype`` is not a gparray dtype, or ``kind`` (or a tuple item) is neither a
        dtype nor a string (nested tuples included).
    ValueError
        for an unknown kind string.
    """
    return _dtypes.isdtype(dtype, kind)


def result_type(*arrays_and_dtypes):
    """The dtype that results from applying the type promotion rules to the arguments.

    Parameters
    ----------
    *arrays_and_dtypes : Array, dtype, bool, int, float or complex
        at least one array or dtype (the Python types ``bool``, ``int``, ``float``,
        ``complex`` are dtypes here, as in NumPy: ``result_type(float, float32)`` is
        float64). Python scalars (values) are weak: they never widen the result
        within a kind (``result_type(int8, 1) == int8``). Where the spec is silent a Python
        scalar follows NumPy 2: a ``float`` with an integer or bool dtype gives float64, a
        ``complex`` gives complex128 (complex64 with float32), an ``int`` with bool gives
        int64.

    Returns
    -------
    dtype
        the spec's promotion for arguments of one kind; for mixed kinds (left open by the
        spec) exactly ``numpy.result_type`` of the same arguments, independent of their order.

    Raises
    ------
    TypeError
        for an argument that is not an array, a gparray dtype or a Python scalar.
    ValueError
        when no argument is an array or a dtype.
    """
    return _dtypes.result_type(*arrays_and_dtypes)
