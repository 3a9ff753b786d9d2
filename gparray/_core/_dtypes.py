"""gparray's data types: the 13 Array API dtypes plus the extension dtype float16, their
categories, the promotion table and the dtype rules.

The dtypes ARE NumPy dtype objects (``gparray.float32 is numpy.dtype("float32")``), so
``numpy.dtype(x.dtype)``, ``.kind``, ``.itemsize`` and ``.name`` work everywhere. Only these
14 objects are gparray dtypes. As in NumPy, the Python types ``bool``, ``int``, ``float`` and
``complex`` stand for bool and the default int64, float64 and complex128 wherever a dtype is
asked for (``zeros(3, dtype=float)``, ``astype(x, bool)``, ``finfo(float)``,
``result_type(float, x)``: the dtype, not a weak scalar), except in ``isdtype``, which
rejects them as NumPy's does. ``_normalize_dtype`` rejects everything else (strings,
byte-swapped dtypes, other NumPy dtypes) with a TypeError naming the calling function.

float16 is an extension (like NumPy's, CuPy's and PyTorch's half): arrays of it can be
created, converted, computed with (in float32, rounded to float16 on store) and reduced, and
``isdtype(float16, "real floating")`` is True; but it is not one of the spec's dtypes, so the
spec's lists (``_all_dtypes``, ``_real_floating_dtypes``, ... and through them
``__array_namespace_info__().dtypes()``) leave it out. ``_supported_dtypes`` lists all 14.

Promotion has three layers, all value-independent:

* ``_promotion_table``: one entry per ordered pair of dtypes (196). Pairs the spec requires
  follow the spec's tables; pairs the spec leaves open (mixed kinds, signed with uint64,
  everything with float16) follow NumPy 2 exactly. ``promote_types`` reads it.
* ``_result_type``: promotion of a sequence of dtypes with NumPy 2's order-independent rule
  (see its docstring); for spec-only inputs it is the plain left fold of the table.
* ``_scalar_result_type``: Python scalars are weak (spec 2024.12+, "Mixing arrays with Python
  scalars"); ``_scalar_promotion`` spells out every case, NumPy 2 where the spec is silent.

This module imports only NumPy and the standard library: arrays are recognised by their
``.dtype`` attribute, never by importing ``_array``.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy

# The names ``bool`` and friends below are dtypes; keep the Python types at hand.
_PyBool = builtins.bool
_PyInt = builtins.int
_PyFloat = builtins.float
_PyComplex = builtins.complex

# ---------------------------------------------------------------------------------------
# 1. The 13 spec dtypes and the extension dtype float16
# ---------------------------------------------------------------------------------------

bool = numpy.dtype("bool")  # noqa: A001  (the spec's name)
int8 = numpy.dtype("int8")
int16 = numpy.dtype("int16")
int32 = numpy.dtype("int32")
int64 = numpy.dtype("int64")
uint8 = numpy.dtype("uint8")
uint16 = numpy.dtype("uint16")
uint32 = numpy.dtype("uint32")
uint64 = numpy.dtype("uint64")
float32 = numpy.dtype("float32")
float64 = numpy.dtype("float64")
complex64 = numpy.dtype("complex64")
complex128 = numpy.dtype("complex128")
float16 = numpy.dtype("float16")    # extension: not a spec dtype

# ---------------------------------------------------------------------------------------
# 2. Categories (tuples, in this canonical order)
# ---------------------------------------------------------------------------------------

_boolean_dtypes = (bool,)
_signed_integer_dtypes = (int8, int16, int32, int64)
_unsigned_integer_dtypes = (uint8, uint16, uint32, uint64)
_integer_dtypes = _signed_integer_dtypes + _unsigned_integer_dtypes
_real_floating_dtypes = (float32, float64)
_complex_floating_dtypes = (complex64, complex128)
_floating_dtypes = _real_floating_dtypes + _complex_floating_dtypes
_real_numeric_dtypes = _integer_dtypes + _real_floating_dtypes
_numeric_dtypes = _real_numeric_dtypes + _complex_floating_dtypes
_integer_or_boolean_dtypes = _boolean_dtypes + _integer_dtypes
_all_dtypes = _boolean_dtypes + _numeric_dtypes     # the spec's 13 (info().dtypes())

# The extension dtypes, and every dtype a gparray array can have.
_extension_dtypes = (float16,)
_supported_dtypes = _all_dtypes + _extension_dtypes


def _with_float16(dtypes: tuple) -> tuple:
    """``dtypes`` plus float16 when they hold the real floating-point dtypes."""
    return dtypes + (float16,) if float32 in dtypes else dtypes


# What the elementwise functions accept, by the category names the spec's elementwise docs
# use ("Should have a ... data type"): the spec's dtypes plus float16 wherever real floats
# are accepted.
_dtype_categories = {
    "all": _with_float16(_all_dtypes),
    "real numeric": _with_float16(_real_numeric_dtypes),
    "numeric": _with_float16(_numeric_dtypes),
    "integer": _integer_dtypes,
    "integer or boolean": _integer_or_boolean_dtypes,
    "boolean": _boolean_dtypes,
    "real floating-point": _with_float16(_real_floating_dtypes),
    "complex floating-point": _complex_floating_dtypes,
    "floating-point": _with_float16(_floating_dtypes),
    # gparray's extension for the real floating-point functions that also take integers and
    # bools (atan2, hypot, ...; computed in the default floating dtype)
    "real numeric or boolean": _with_float16(_boolean_dtypes + _real_numeric_dtypes),
}

# Kind names of isdtype() (float16 included: it is a real floating dtype). The listing
# __array_namespace_info__().dtypes(kind=...) filters the spec's 13 with them.
_dtype_kinds = {
    "bool": _boolean_dtypes,
    "signed integer": _signed_integer_dtypes,
    "unsigned integer": _unsigned_integer_dtypes,
    "integral": _integer_dtypes,
    "real floating": _with_float16(_real_floating_dtypes),
    "complex floating": _complex_floating_dtypes,
    "numeric": _with_float16(_numeric_dtypes),
}

# Kernels compute float16 in float32 (loads and stores convert; NumPy and CuPy do the same).
_compute = {float16: float32}


def _compute_dtype(dt: numpy.dtype) -> numpy.dtype:
    """The dtype kernels compute ``dt`` values in: float32 for float16, ``dt`` otherwise."""
    return _compute.get(dt, dt)


_real_to_complex = {float16: complex64, float32: complex64, float64: complex128}
_complex_to_real = {complex64: float32, complex128: float64}

# ---------------------------------------------------------------------------------------
# 3. Default dtypes
# ---------------------------------------------------------------------------------------

_default_float = float64
_default_int = int64
_default_complex = complex128
_default_index = int64


def _default_dtypes() -> dict:
    """The dict returned by ``__array_namespace_info__().default_dtypes()``."""
    return {
        "real floating": _default_float,
        "complex floating": _default_complex,
        "integral": _default_int,
        "indexing": _default_index,
    }


# ---------------------------------------------------------------------------------------
# 4. Normalization: only the 14 objects are dtypes
# ---------------------------------------------------------------------------------------

# Maps every NumPy dtype equal to one of the 14 (e.g. dtype("q") == dtype("l") on Linux)
# to the canonical object above.
_canonical = {dt: dt for dt in _supported_dtypes}
_DTYPE_NAMES = ", ".join(dt.name for dt in _all_dtypes) + "; extension: float16"
_DTYPE_LIST = _DTYPE_NAMES + "; or the Python types bool, int, float, complex"

# The Python scalar types as dtypes, as NumPy reads them (numpy.dtype(float) is float64): the
# exact types only (NumPy's own scalar types, numpy.float64 included, are dtypes above).
_python_type_dtypes = {_PyBool: bool, _PyInt: _default_int, _PyFloat: _default_float,
                       _PyComplex: _default_complex}


def _as_dtype(obj, python_types: _PyBool = True) -> numpy.dtype | None:
    """The canonical dtype for ``obj`` if it is one of the 14 (a numpy.dtype instance, or a
    NumPy scalar type such as ``numpy.float32``) or, when ``python_types``, the Python type
    bool, int, float or complex (bool, int64, float64, complex128); None for anything else,
    never raising."""
    if isinstance(obj, numpy.dtype):
        pass
    elif isinstance(obj, type) and issubclass(obj, numpy.generic):
        try:
            obj = numpy.dtype(obj)
        except TypeError:  # abstract scalar types: numpy.floating, numpy.number, ...
            return None
    elif python_types and isinstance(obj, type):
        return _python_type_dtypes.get(obj)
    else:
        return None
    return _canonical.get(obj)


def _normalize_dtype(dtype, name: str) -> numpy.dtype | None:
    """Return the canonical dtype for ``dtype`` (None stays None; the Python types bool, int,
    float and complex give bool, int64, float64, complex128 as in NumPy); TypeError naming
    ``name`` for anything that is not one of the 14 dtypes (strings, float128, ...)."""
    if dtype is None:
        return None
    dt = _as_dtype(dtype)
    if dt is None:
        raise TypeError(f"{name}: expected one of the Array API dtypes ({_DTYPE_LIST}), "
                        f"got {dtype!r}")
    return dt


def _dtype_of(obj, name: str) -> numpy.dtype:
    """The dtype of ``obj`` when it is a dtype or an array (anything with a ``.dtype``
    attribute holding one of the 14); TypeError naming ``name`` otherwise."""
    dt = _as_dtype(obj)
    if dt is not None:
        return dt
    if not isinstance(obj, type) and obj is not None:
        dt = _as_dtype(getattr(obj, "dtype", None))
        if dt is not None:
            return dt
    raise TypeError(f"{name}: expected an array or one of the Array API dtypes "
                    f"({_DTYPE_LIST}), got {obj!r}")


# ---------------------------------------------------------------------------------------
# 5. The promotion table: every ordered pair of the 14 dtypes
# ---------------------------------------------------------------------------------------

_promotion_table = {
    # --- spec: bool with bool
    (bool, bool): bool,
    # --- spec: signed integers (signed integer type promotion table)
    (int8, int8): int8,
    (int8, int16): int16,
    (int8, int32): int32,
    (int8, int64): int64,
    (int16, int8): int16,
    (int16, int16): int16,
    (int16, int32): int32,
    (int16, int64): int64,
    (int32, int8): int32,
    (int32, int16): int32,
    (int32, int32): int32,
    (int32, int64): int64,
    (int64, int8): int64,
    (int64, int16): int64,
    (int64, int32): int64,
    (int64, int64): int64,
    # --- spec: unsigned integers (unsigned integer type promotion table)
    (uint8, uint8): uint8,
    (uint8, uint16): uint16,
    (uint8, uint32): uint32,
    (uint8, uint64): uint64,
    (uint16, uint8): uint16,
    (uint16, uint16): uint16,
    (uint16, uint32): uint32,
    (uint16, uint64): uint64,
    (uint32, uint8): uint32,
    (uint32, uint16): uint32,
    (uint32, uint32): uint32,
    (uint32, uint64): uint64,
    (uint64, uint8): uint64,
    (uint64, uint16): uint64,
    (uint64, uint32): uint64,
    (uint64, uint64): uint64,
    # --- spec: mixed signed and unsigned integers, uint64 excluded
    (int8, uint8): int16,
    (int8, uint16): int32,
    (int8, uint32): int64,
    (int16, uint8): int16,
    (int16, uint16): int32,
    (int16, uint32): int64,
    (int32, uint8): int32,
    (int32, uint16): int32,
    (int32, uint32): int64,
    (int64, uint8): int64,
    (int64, uint16): int64,
    (int64, uint32): int64,
    (uint8, int8): int16,
    (uint16, int8): int32,
    (uint32, int8): int64,
    (uint8, int16): int16,
    (uint16, int16): int32,
    (uint32, int16): int64,
    (uint8, int32): int32,
    (uint16, int32): int32,
    (uint32, int32): int64,
    (uint8, int64): int64,
    (uint16, int64): int64,
    (uint32, int64): int64,
    # --- spec: real and complex floating point (floating-point type promotion table)
    (float32, float32): float32,
    (float32, float64): float64,
    (float32, complex64): complex64,
    (float32, complex128): complex128,
    (float64, float32): float64,
    (float64, float64): float64,
    (float64, complex64): complex128,
    (float64, complex128): complex128,
    (complex64, float32): complex64,
    (complex64, float64): complex128,
    (complex64, complex64): complex64,
    (complex64, complex128): complex128,
    (complex128, float32): complex128,
    (complex128, float64): complex128,
    (complex128, complex64): complex128,
    (complex128, complex128): complex128,
    # --- open (NumPy 2): signed integer with uint64 -> float64
    (int8, uint64): float64,
    (int16, uint64): float64,
    (int32, uint64): float64,
    (int64, uint64): float64,
    (uint64, int8): float64,
    (uint64, int16): float64,
    (uint64, int32): float64,
    (uint64, int64): float64,
    # --- open (NumPy 2): bool with any numeric dtype -> that dtype
    (bool, int8): int8,
    (bool, int16): int16,
    (bool, int32): int32,
    (bool, int64): int64,
    (bool, uint8): uint8,
    (bool, uint16): uint16,
    (bool, uint32): uint32,
    (bool, uint64): uint64,
    (bool, float32): float32,
    (bool, float64): float64,
    (bool, complex64): complex64,
    (bool, complex128): complex128,
    (int8, bool): int8,
    (int16, bool): int16,
    (int32, bool): int32,
    (int64, bool): int64,
    (uint8, bool): uint8,
    (uint16, bool): uint16,
    (uint32, bool): uint32,
    (uint64, bool): uint64,
    (float32, bool): float32,
    (float64, bool): float64,
    (complex64, bool): complex64,
    (complex128, bool): complex128,
    # --- open (NumPy 2): integer with real floating point
    #     (int8/uint8/int16/uint16 fit in float32; wider integers need float64)
    (int8, float32): float32,
    (int8, float64): float64,
    (int16, float32): float32,
    (int16, float64): float64,
    (int32, float32): float64,
    (int32, float64): float64,
    (int64, float32): float64,
    (int64, float64): float64,
    (uint8, float32): float32,
    (uint8, float64): float64,
    (uint16, float32): float32,
    (uint16, float64): float64,
    (uint32, float32): float64,
    (uint32, float64): float64,
    (uint64, float32): float64,
    (uint64, float64): float64,
    (float32, int8): float32,
    (float64, int8): float64,
    (float32, int16): float32,
    (float64, int16): float64,
    (float32, int32): float64,
    (float64, int32): float64,
    (float32, int64): float64,
    (float64, int64): float64,
    (float32, uint8): float32,
    (float64, uint8): float64,
    (float32, uint16): float32,
    (float64, uint16): float64,
    (float32, uint32): float64,
    (float64, uint32): float64,
    (float32, uint64): float64,
    (float64, uint64): float64,
    # --- open (NumPy 2): integer with complex floating point
    #     (int8/uint8/int16/uint16 fit in complex64; wider integers need complex128)
    (int8, complex64): complex64,
    (int8, complex128): complex128,
    (int16, complex64): complex64,
    (int16, complex128): complex128,
    (int32, complex64): complex128,
    (int32, complex128): complex128,
    (int64, complex64): complex128,
    (int64, complex128): complex128,
    (uint8, complex64): complex64,
    (uint8, complex128): complex128,
    (uint16, complex64): complex64,
    (uint16, complex128): complex128,
    (uint32, complex64): complex128,
    (uint32, complex128): complex128,
    (uint64, complex64): complex128,
    (uint64, complex128): complex128,
    (complex64, int8): complex64,
    (complex128, int8): complex128,
    (complex64, int16): complex64,
    (complex128, int16): complex128,
    (complex64, int32): complex128,
    (complex128, int32): complex128,
    (complex64, int64): complex128,
    (complex128, int64): complex128,
    (complex64, uint8): complex64,
    (complex128, uint8): complex128,
    (complex64, uint16): complex64,
    (complex128, uint16): complex128,
    (complex64, uint32): complex128,
    (complex128, uint32): complex128,
    (complex64, uint64): complex128,
    (complex128, uint64): complex128,
    # --- extension (NumPy 2): float16 with every dtype
    #     (bool/int8/uint8 fit in float16; int16/uint16 need float32; wider integers float64)
    (float16, float16): float16,
    (float16, bool): float16,
    (float16, int8): float16,
    (float16, uint8): float16,
    (float16, int16): float32,
    (float16, uint16): float32,
    (float16, int32): float64,
    (float16, uint32): float64,
    (float16, int64): float64,
    (float16, uint64): float64,
    (float16, float32): float32,
    (float16, float64): float64,
    (float16, complex64): complex64,
    (float16, complex128): complex128,
    (bool, float16): float16,
    (int8, float16): float16,
    (uint8, float16): float16,
    (int16, float16): float32,
    (uint16, float16): float32,
    (int32, float16): float64,
    (uint32, float16): float64,
    (int64, float16): float64,
    (uint64, float16): float64,
    (float32, float16): float32,
    (float64, float16): float64,
    (complex64, float16): complex64,
    (complex128, float16): complex128,
}

# Position of each dtype in NumPy's builtin type order (its type numbers): in a sequence,
# the highest one is the "main" dtype that _result_type promotes every other dtype with.
# float16's type number (NPY_HALF, 23) comes after all the others'.
_numpy_order = {
    bool: 0,
    int8: 1,
    uint8: 2,
    int16: 3,
    uint16: 4,
    int32: 5,
    uint32: 6,
    int64: 7,
    uint64: 8,
    float32: 9,
    float64: 10,
    complex64: 11,
    complex128: 12,
    float16: 13,
}


def promote_types(t1: numpy.dtype, t2: numpy.dtype) -> numpy.dtype:
    """The promoted dtype of two dtypes, read from ``_promotion_table``."""
    try:
        return _promotion_table[(t1, t2)]
    except (KeyError, TypeError):
        pass
    a = _normalize_dtype(t1, "promote_types")
    b = _normalize_dtype(t2, "promote_types")
    if a is None or b is None:
        raise TypeError(f"promote_types: expected two Array API dtypes, got {t1!r} and {t2!r}")
    return _promotion_table[(a, b)]


def _result_type(*dtypes: numpy.dtype) -> numpy.dtype:
    """Promote a sequence of (canonical) dtypes.

    The spec's table is associative, and for spec-only inputs this is the left fold of the
    table. Mixed kinds are not associative in NumPy 2 (``(int8 + uint16) + float32`` is
    float64 but ``int8 + (uint16 + float32)`` is float32); NumPy's result_type makes the
    answer order-independent by promoting every dtype with the highest one in its type order
    (the "main" dtype) and folding those results. We do the same, so the answer always
    equals ``numpy.result_type`` for the same dtypes, in any order.
    """
    n = len(dtypes)
    if n == 0:
        raise ValueError("_result_type: at least one dtype is required")
    if n == 1:
        return dtypes[0]
    if n == 2:
        return _promotion_table[(dtypes[0], dtypes[1])]
    main = max(dtypes, key=_numpy_order.__getitem__)
    result = main
    for dt in dtypes:
        result = _promotion_table[(result, _promotion_table[(main, dt)])]
    return result


# ---------------------------------------------------------------------------------------
# 6. Python scalars (weak)
# ---------------------------------------------------------------------------------------

# Markers for _scalar_promotion results that depend on the array dtype.
_SAME = "same"              # the array's dtype
_COMPLEX = "complex"        # the complex dtype of the array's precision

# (array dtype kind, Python scalar type) -> result dtype, for every combination.
# Kinds are numpy dtype.kind letters: b bool, i signed, u unsigned, f real float, c complex.
# A value of None would make the combination a TypeError; no entry uses it today.
_scalar_promotion = {
    ("b", _PyBool): _SAME,              # spec
    ("i", _PyBool): _SAME,              # spec: a bool is a Python int
    ("u", _PyBool): _SAME,              # spec: a bool is a Python int
    ("f", _PyBool): _SAME,              # spec: a bool is a Python int
    ("c", _PyBool): _SAME,              # spec: a bool is a Python int
    ("b", _PyInt): _default_int,        # spec silent; NumPy 2: int64
    ("i", _PyInt): _SAME,               # spec (value must fit: _check_scalar_fits)
    ("u", _PyInt): _SAME,               # spec (value must fit: _check_scalar_fits)
    ("f", _PyInt): _SAME,               # spec
    ("c", _PyInt): _SAME,               # spec
    ("b", _PyFloat): _default_float,    # spec silent; NumPy 2: float64
    ("i", _PyFloat): _default_float,    # spec: implementation-specific; NumPy 2: float64
    ("u", _PyFloat): _default_float,    # spec: implementation-specific; NumPy 2: float64
    ("f", _PyFloat): _SAME,             # spec
    ("c", _PyFloat): _SAME,             # spec
    ("b", _PyComplex): _default_complex,  # spec silent; NumPy 2: complex128
    ("i", _PyComplex): _default_complex,  # spec: implementation-specific; NumPy 2
    ("u", _PyComplex): _default_complex,  # spec: implementation-specific; NumPy 2
    ("f", _PyComplex): _COMPLEX,        # spec: complex of the same precision
    ("c", _PyComplex): _SAME,           # spec
}


def _scalar_type(scalar):
    """The Python scalar type that governs ``scalar`` (bool before int), or None."""
    if isinstance(scalar, _PyBool):
        return _PyBool
    if isinstance(scalar, _PyInt):
        return _PyInt
    if isinstance(scalar, _PyFloat):
        return _PyFloat
    if isinstance(scalar, _PyComplex):
        return _PyComplex
    return None


def _scalar_result_type(dtype: numpy.dtype, scalar, name: str) -> numpy.dtype:
    """The result dtype of an array of ``dtype`` combined with the Python scalar ``scalar``
    (value-independent: the scalar is weak). This is also the dtype the scalar should be
    converted to. TypeError naming ``name`` when ``scalar`` is not a Python bool, int, float
    or complex, or when the combination is not allowed."""
    pytype = _scalar_type(scalar)
    if pytype is None:
        raise TypeError(f"{name}: expected a Python bool, int, float or complex scalar, "
                        f"got {type(scalar).__name__}")
    rule = _scalar_promotion[(dtype.kind, pytype)]
    if rule is _SAME:
        return dtype
    if rule is _COMPLEX:
        return _real_to_complex[dtype]
    if rule is None:
        raise TypeError(f"{name}: a Python {pytype.__name__} cannot be combined with an "
                        f"array of dtype {dtype.name}")
    return rule


def _int_text(value: int) -> str:
    """``str(value)``, or a short description for ints too long to print."""
    if abs(value) < 10**40:
        return str(value)
    return f"with {value.bit_length()} bits"


def _check_scalar_fits(dtype: numpy.dtype, scalar, name: str) -> None:
    """Raise OverflowError naming ``name`` when the Python scalar cannot be converted to
    ``dtype`` (the dtype _scalar_result_type gave), like NumPy 2: an int outside the bounds
    of an integer dtype, or an int too large for a double. Floats that overflow float32 and
    ints that overflow float32 become inf, as in NumPy."""
    if isinstance(scalar, _PyBool) or not isinstance(scalar, _PyInt):
        return
    kind = dtype.kind
    if kind in "iu":
        lo, hi = _int_bounds[dtype]
        if not lo <= scalar <= hi:
            raise OverflowError(f"{name}: Python int {_int_text(scalar)} is out of bounds "
                                f"for {dtype.name} (expected {lo} <= value <= {hi})")
    elif kind in "fc":
        try:
            _PyFloat(scalar)
        except OverflowError:
            raise OverflowError(f"{name}: Python int {_int_text(scalar)} is too large to "
                                f"convert to {dtype.name}") from None


# ---------------------------------------------------------------------------------------
# 7. Machine limits, written out from IEEE 754 and two's complement
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FInfo:
    """What ``finfo`` returns: limits of a real floating-point dtype, as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: numpy.dtype


@dataclass(frozen=True)
class IInfo:
    """What ``iinfo`` returns: limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: numpy.dtype


def _ieee(bits: int, mantissa: int, exponent_bits: int, dtype: numpy.dtype) -> FInfo:
    emax = 2 ** (exponent_bits - 1) - 1
    largest = (2.0 - 2.0 ** -mantissa) * 2.0 ** emax
    return FInfo(bits=bits, eps=2.0 ** -mantissa, max=largest, min=-largest,
                 smallest_normal=2.0 ** (1 - emax), dtype=dtype)


_finfo = {
    float32: _ieee(32, 23, 8, float32),
    float64: _ieee(64, 52, 11, float64),
    float16: _ieee(16, 10, 5, float16),
}
_finfo[complex64] = _finfo[float32]
_finfo[complex128] = _finfo[float64]

_int_bounds = {
    **{dt: (-(2 ** (8 * dt.itemsize - 1)), 2 ** (8 * dt.itemsize - 1) - 1)
       for dt in _signed_integer_dtypes},
    **{dt: (0, 2 ** (8 * dt.itemsize) - 1) for dt in _unsigned_integer_dtypes},
}
_iinfo = {dt: IInfo(bits=8 * dt.itemsize, max=hi, min=lo, dtype=dt)
          for dt, (lo, hi) in _int_bounds.items()}


# ---------------------------------------------------------------------------------------
# 8. The data type functions (gparray/_api/_data_type_functions.py documents and exports them)
# ---------------------------------------------------------------------------------------

def result_type(*arrays_and_dtypes) -> numpy.dtype:
    """Promote arrays, dtypes and Python scalars (weak) to one dtype. A Python type
    (``float``) is a dtype here (float64, strong), as in ``numpy.result_type``."""
    dtypes = []
    scalars = []
    for obj in arrays_and_dtypes:
        dt = _as_dtype(obj)
        if dt is None and not isinstance(obj, type) and hasattr(obj, "dtype"):
            dt = _as_dtype(obj.dtype)   # an array (or a NumPy scalar: strong, as in NumPy)
            if dt is None:
                raise TypeError(f"result_type: expected arrays of the Array API dtypes "
                                f"({_DTYPE_NAMES}), got one of dtype {obj.dtype!r}")
        if dt is not None:
            dtypes.append(dt)
        elif _scalar_type(obj) is not None:
            scalars.append(obj)
        else:
            raise TypeError(f"result_type: expected arrays, Array API dtypes or Python "
                            f"bool/int/float/complex scalars, got {obj!r}")
    if not dtypes:
        raise ValueError("result_type: at least one array or dtype is required"
                         + (" (got only Python scalars)" if scalars else ""))
    result = _result_type(*dtypes)
    for scalar in scalars:
        result = _scalar_result_type(result, scalar, "result_type")
    return result


def can_cast(from_, to, /) -> _PyBool:
    """True when ``from_`` (a dtype or an array) promotes to ``to``: ``promote_types(from_,
    to) == to``. This is NumPy 2's "safe" casting on the 14 dtypes: the spec's promotion
    graph, plus bool to anything, and integers to floating dtypes that hold them exactly."""
    src = _dtype_of(from_, "can_cast")
    dst = _as_dtype(to)
    if dst is None:
        raise TypeError(f"can_cast: expected one of the Array API dtypes ({_DTYPE_LIST}) "
                        f"for 'to', got {to!r}")
    return _promotion_table[(src, dst)] is dst


def finfo(type, /) -> FInfo:  # noqa: A002  (the spec's parameter name)
    """Limits of a floating-point dtype (of its real component for complex dtypes)."""
    dt = _dtype_of(type, "finfo")
    info = _finfo.get(dt)
    if info is None:
        raise TypeError(f"finfo: expected a floating-point dtype or array, got {dt.name}")
    return info


def iinfo(type, /) -> IInfo:  # noqa: A002  (the spec's parameter name)
    """Limits of an integer dtype."""
    dt = _dtype_of(type, "iinfo")
    info = _iinfo.get(dt)
    if info is None:
        raise TypeError(f"iinfo: expected an integer dtype or array, got {dt.name}")
    return info


_KIND_LIST = ", ".join(repr(k) for k in _dtype_kinds)


def _kind_matches(dt: numpy.dtype, kind, name: str, in_tuple: _PyBool = False) -> _PyBool:
    if isinstance(kind, str):
        try:
            return dt in _dtype_kinds[kind]
        except KeyError:
            raise ValueError(f"{name}: unknown dtype kind {kind!r}; expected one of "
                             f"{_KIND_LIST}") from None
    if isinstance(kind, tuple) and not in_tuple:
        matches = [_kind_matches(dt, k, name, True) for k in kind]   # validate every item
        return any(matches)
    other = _as_dtype(kind, python_types=False)    # NumPy's isdtype rejects Python types
    if other is None:
        raise TypeError(f"{name}: expected a dtype, a kind string ({_KIND_LIST}) or a tuple "
                        f"of those for 'kind', got {kind!r}")
    return dt is other


def isdtype(dtype, kind) -> _PyBool:
    """Whether ``dtype`` is ``kind`` (a dtype), of kind ``kind`` (a kind string), or either
    for one of the items of ``kind`` (a tuple). Python types (``float``) are not dtypes here,
    as in ``numpy.isdtype``."""
    dt = _as_dtype(dtype, python_types=False)
    if dt is None:
        raise TypeError(f"isdtype: expected one of the Array API dtypes "
                        f"({_DTYPE_NAMES}), got {dtype!r}")
    return _kind_matches(dt, kind, "isdtype")


def _dtypes_of_kind(kind=None, name: str = "dtypes") -> dict:
    """``{name: dtype}`` of the dtypes of ``kind`` (None, a kind string or a tuple of kind
    strings), for ``__array_namespace_info__().dtypes(kind=...)``."""
    if kind is None:
        return {dt.name: dt for dt in _all_dtypes}
    items = kind if isinstance(kind, tuple) else (kind,)
    for k in items:
        if not isinstance(k, str):
            raise TypeError(f"{name}: expected a kind string ({_KIND_LIST}) or a tuple of "
                            f"them for 'kind', got {kind!r}")
    return {dt.name: dt for dt in _all_dtypes if _kind_matches(dt, items, name)}
