"""CPU tier: gparray's dtypes, promotion table and data type functions.

Oracles: NumPy 2 (promote_types, result_type with weak Python scalars, can_cast "safe",
finfo, iinfo, dtype.kind) for everything it defines, and the spec's promotion tables,
transcribed below and checked against the spec's own text when the vendored spec is present.
The extension dtype float16 follows NumPy 2 everywhere and stays out of the spec's lists.
"""
from __future__ import annotations


class _Opaque:
    """An arbitrary object with a stable repr (pytest-xdist needs identical test ids)."""

    def __repr__(self):
        return "opaque"


_OPAQUE = _Opaque()

import ast
import itertools
import sys
from pathlib import Path

import numpy
import pytest

from tools import spec_facts
from hypothesis import given, settings
from hypothesis import strategies as st

from gparray._api import _data_type_functions as dtf
from gparray._core import _dtypes as dt

NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128")
ALL = tuple(getattr(dt, n) for n in NAMES)
PAIRS = list(itertools.product(ALL, repeat=2))
F16 = numpy.dtype("float16")
SUPPORTED = ALL + (F16,)
F16_PAIRS = [p for p in itertools.product(SUPPORTED, repeat=2) if F16 in p]
KIND_STRINGS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                "complex floating", "numeric")
# NumPy kind letters for each isdtype kind string: the oracle for membership.
KIND_LETTERS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
                "real floating": "f", "complex floating": "c", "numeric": "iufc"}


class FakeArray:
    """Stands in for gparray.Array: only the ``.dtype`` attribute matters here."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return f"FakeArray({self.dtype})"


def name_of(d):
    return numpy.dtype(d).name


# ---------------------------------------------------------------------------------------
# The spec's promotion tables (type_promotion.rst, 2025.12), transcribed
# ---------------------------------------------------------------------------------------

CODES = {"b": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
         "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
         "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128"}

SPEC_TABLES = {
    "signed": """
        i1 i2 i4 i8
    i1  i1 i2 i4 i8
    i2  i2 i2 i4 i8
    i4  i4 i4 i4 i8
    i8  i8 i8 i8 i8
    """,
    "unsigned": """
        u1 u2 u4 u8
    u1  u1 u2 u4 u8
    u2  u2 u2 u4 u8
    u4  u4 u4 u4 u8
    u8  u8 u8 u8 u8
    """,
    "mixed": """
        u1 u2 u4
    i1  i2 i4 i8
    i2  i2 i4 i8
    i4  i4 i4 i8
    i8  i8 i8 i8
    """,
    "floating": """
         f4  f8  c8  c16
    f4   f4  f8  c8  c16
    f8   f8  f8  c16 c16
    c8   c8  c16 c8  c16
    c16  c16 c16 c16 c16
    """,
}


def parse_matrix(text):
    rows = [line.split() for line in text.strip().splitlines()]
    header, body = rows[0], rows[1:]
    out = {}
    for row in body:
        for col, res in zip(header, row[1:]):
            out[(row[0], col)] = res
    return out


def spec_required():
    """{(dtype1, dtype2): result} for every ordered pair the spec requires (both orders)."""
    out = {(dt.bool, dt.bool): dt.bool}   # "bool" has its own node in the lattice
    for text in SPEC_TABLES.values():
        for (r, c), res in parse_matrix(text).items():
            a, b, v = (numpy.dtype(CODES[x]) for x in (r, c, res))
            out[(a, b)] = v
            out[(b, a)] = v
    return out


SPEC = spec_required()
# Groups inside which the spec defines every promotion (so result_type is associative).
SPEC_GROUPS = {
    "bool": (dt.bool,),
    "signed": (dt.int8, dt.int16, dt.int32, dt.int64),
    "integers without uint64": (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16,
                                dt.uint32),
    "unsigned": (dt.uint8, dt.uint16, dt.uint32, dt.uint64),
    "floating": (dt.float32, dt.float64, dt.complex64, dt.complex128),
}

def test_spec_transcription_matches_the_spec():
    """The tables above are the spec's (tests/spec/facts-2025.12.json, read from its
    type_promotion.rst by tools/spec_facts.py)."""
    parsed = [{f"{a},{b}": r for (a, b), r in parse_matrix(t).items()} for t in SPEC_TABLES.values()]
    assert parsed == spec_facts.load()["promotion_tables"]


def test_spec_required_pair_count():
    # 1 bool + 16 signed + 16 unsigned + 2*12 mixed + 16 floating
    assert len(SPEC) == 73


# ---------------------------------------------------------------------------------------
# The dtype objects and categories
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_dtypes_are_numpy_dtypes(name):
    d = getattr(dt, name)
    assert isinstance(d, numpy.dtype)
    assert d is numpy.dtype(name)
    assert d.name == name
    assert numpy.dtype(d).itemsize == d.itemsize


def test_all_dtypes_distinct_and_complete():
    assert len(set(dt._all_dtypes)) == 13
    assert set(dt._all_dtypes) == set(ALL)


def kind_set(letters):
    return {d for d in ALL if d.kind in letters}


@pytest.mark.parametrize("attr, letters", [
    ("_boolean_dtypes", "b"),
    ("_signed_integer_dtypes", "i"),
    ("_unsigned_integer_dtypes", "u"),
    ("_integer_dtypes", "iu"),
    ("_real_floating_dtypes", "f"),
    ("_complex_floating_dtypes", "c"),
    ("_floating_dtypes", "fc"),
    ("_real_numeric_dtypes", "iuf"),
    ("_numeric_dtypes", "iufc"),
    ("_integer_or_boolean_dtypes", "biu"),
    ("_all_dtypes", "biufc"),
])
def test_categories(attr, letters):
    members = getattr(dt, attr)
    assert len(members) == len(set(members))
    assert set(members) == kind_set(letters)


def test_dtype_categories_dict():
    # what the elementwise functions accept: the spec's categories, float16 wherever real
    # floating-point dtypes are accepted, and gparray's "real numeric or boolean" (atan2,
    # hypot, logaddexp, copysign also take integers and bools)
    expected = {"all": "biufc", "real numeric": "iuf", "numeric": "iufc", "integer": "iu",
                "integer or boolean": "biu", "boolean": "b", "real floating-point": "f",
                "complex floating-point": "c", "floating-point": "fc", "real numeric or boolean": "biuf"}
    assert set(dt._dtype_categories) == set(expected)
    for key, letters in expected.items():
        f16 = {F16} if "f" in letters else set()
        assert set(dt._dtype_categories[key]) == kind_set(letters) | f16, key
        assert len(dt._dtype_categories[key]) == len(set(dt._dtype_categories[key]))


def test_float16_is_an_extension_dtype():
    assert dt.float16 is F16 and dt._supported_dtypes == ALL + (F16,)
    assert dt._extension_dtypes == (F16,)
    # the spec's lists leave it out
    for attr in ("_real_floating_dtypes", "_floating_dtypes", "_real_numeric_dtypes", "_numeric_dtypes",
                 "_all_dtypes"):
        assert F16 not in getattr(dt, attr), attr
    assert dt._compute_dtype(F16) is dt.float32
    for d in ALL:
        assert dt._compute_dtype(d) is d


def test_real_complex_maps():
    for r, c in dt._real_to_complex.items():
        assert numpy.dtype(c) == numpy.result_type(r, numpy.complex64)
        if r is not F16:   # float16 + complex scalar -> complex64, whose real dtype is float32
            assert dt._complex_to_real[c] is r
            assert numpy.finfo(c).dtype == r
    assert dt._real_to_complex[F16] is dt.complex64


def test_defaults():
    assert dt._default_float is dt.float64
    assert dt._default_int is dt.int64
    assert dt._default_complex is dt.complex128
    assert dt._default_index is dt.int64
    assert dt._default_dtypes() == {"real floating": dt.float64, "complex floating": dt.complex128,
                                    "integral": dt.int64, "indexing": dt.int64}
    # the defaults are NumPy's on 64-bit Linux: Python scalars convert to them
    assert numpy.asarray(1).dtype == dt._default_int
    assert numpy.asarray(1.0).dtype == dt._default_float
    assert numpy.asarray(1j).dtype == dt._default_complex


def test_dtypes_module_imports_only_numpy_and_stdlib():
    tree = ast.parse(Path(dt.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "gparray._core._dtypes must not import other gparray modules"
            names.add(node.module.split(".")[0])
    assert names - {"numpy"} <= set(sys.stdlib_module_names) | {"__future__"}, names


# ---------------------------------------------------------------------------------------
# The promotion table
# ---------------------------------------------------------------------------------------

def test_table_has_every_ordered_pair():
    assert set(dt._promotion_table) == set(PAIRS) | set(F16_PAIRS)
    assert len(dt._promotion_table) == 196


@pytest.mark.parametrize("a, b", F16_PAIRS, ids=lambda d: d.name)
def test_float16_pairs_match_numpy(a, b):
    got = dt._promotion_table[(a, b)]
    assert got == numpy.promote_types(a, b)
    assert any(got is d for d in SUPPORTED)
    assert dt.promote_types(a, b) is got and dt.promote_types(a.type, b.type) is got
    assert dt.result_type(a, b) is got and dt.result_type(FakeArray(a), b) is got


def test_float16_result_type_sequences_match_numpy():
    # NumPy's "main" dtype of a sequence with float16 is float16 (its type number is the
    # highest): every triple, and random longer sequences in every order
    for combo in itertools.product(SUPPORTED, repeat=3):
        if F16 in combo:
            assert dt._result_type(*combo) == numpy.result_type(*combo), combo
    rng = numpy.random.default_rng(0)
    for _ in range(300):
        seq = [SUPPORTED[i] for i in rng.integers(0, len(SUPPORTED), 5)] + [F16]
        rng.shuffle(seq)
        assert dt.result_type(*seq) == numpy.result_type(*seq), seq


@pytest.mark.parametrize("scalar", [True, 1, -3, 70000, 0.1, 1e300, float("nan"), 1j], ids=repr)
def test_float16_with_python_scalars_matches_numpy(scalar):
    assert dt.result_type(F16, scalar) == numpy.result_type(numpy.zeros(1, F16), scalar)
    with numpy.errstate(all="ignore"):
        expected = (numpy.zeros(1, F16) + scalar).dtype
    assert dt._scalar_result_type(F16, scalar, "add") == expected
    assert dt._check_scalar_fits(dt._scalar_result_type(F16, scalar, "add"), scalar, "add") is None


def test_float16_check_scalar_fits_matches_numpy():
    for value in int_edge_values(F16):
        target = dt._scalar_result_type(F16, value, "add")
        if numpy_overflows(F16, value):
            with pytest.raises(OverflowError, match="^add"):
                dt._check_scalar_fits(target, value, "add")
        else:
            assert dt._check_scalar_fits(target, value, "add") is None


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_table_matches_numpy(a, b):
    got = dt._promotion_table[(a, b)]
    assert got == numpy.promote_types(a, b)
    assert any(got is d for d in ALL)     # values are the canonical objects


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_table_symmetric(a, b):
    assert dt._promotion_table[(a, b)] is dt._promotion_table[(b, a)]


@pytest.mark.parametrize("pair", sorted(SPEC, key=lambda p: (p[0].name, p[1].name)),
                         ids=lambda p: f"{p[0].name}-{p[1].name}")
def test_table_matches_spec(pair):
    assert dt._promotion_table[pair] is SPEC[pair]
    assert dt.promote_types(*pair) is SPEC[pair]


def test_promote_types_normalizes_and_rejects():
    assert dt.promote_types(numpy.int8, numpy.dtype("uint8")) is dt.int16
    assert dt.promote_types(numpy.dtype("q"), numpy.dtype("l")) is dt.int64
    assert dt.promote_types(numpy.float16, numpy.dtype("b")) is dt.float16
    for pytype in (bool, int, float, complex):   # NumPy's: the dtype numpy.dtype(pytype)
        assert dt.promote_types(dt.float32, pytype) == numpy.promote_types(numpy.float32, pytype)
    for bad in ("float32", numpy.longdouble, object, None):
        with pytest.raises(TypeError, match="^promote_types"):
            dt.promote_types(dt.float32, bad)


# ---------------------------------------------------------------------------------------
# _result_type over dtype sequences
# ---------------------------------------------------------------------------------------

def test_result_type_triples_match_numpy():
    for triple in itertools.product(ALL, repeat=3):
        got = dt._result_type(*triple)
        assert got == numpy.result_type(*triple), triple
        assert any(got is d for d in ALL)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(ALL), min_size=1, max_size=9), st.randoms())
def test_result_type_sequences_match_numpy_any_order(dtypes, rnd):
    expected = numpy.result_type(*dtypes)
    assert dt._result_type(*dtypes) == expected
    shuffled = list(dtypes)
    rnd.shuffle(shuffled)
    assert dt._result_type(*shuffled) == expected


def spec_fold(dtypes):
    result = dtypes[0]
    for d in dtypes[1:]:
        result = SPEC[(result, d)]
    return result


@st.composite
def spec_sequences(draw):
    group = draw(st.sampled_from(sorted(SPEC_GROUPS)))
    return draw(st.lists(st.sampled_from(SPEC_GROUPS[group]), min_size=1, max_size=8))


@settings(max_examples=300)
@given(spec_sequences(), st.data())
def test_result_type_associative_where_spec_defines_it(dtypes, data):
    expected = spec_fold(dtypes)
    assert dt._result_type(*dtypes) is expected
    perm = data.draw(st.permutations(dtypes))
    assert dt._result_type(*perm) is expected
    assert dt.result_type(*perm) is expected
    cut = data.draw(st.integers(0, len(dtypes)))
    left, right = perm[:cut], perm[cut:]
    parts = [dt._result_type(*p) for p in (left, right) if p]
    assert dt._result_type(*parts) is expected


def test_private_result_type_needs_a_dtype():
    with pytest.raises(ValueError):
        dt._result_type()


# ---------------------------------------------------------------------------------------
# result_type: dtypes, arrays, Python scalars
# ---------------------------------------------------------------------------------------

SCALARS = (True, 1, 1.0, 1j)


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_result_type_arrays_and_dtypes(a, b):
    expected = numpy.result_type(a, b)
    assert dt.result_type(a, b) == expected
    assert dt.result_type(FakeArray(a), b) == expected
    assert dt.result_type(FakeArray(a), FakeArray(b)) == expected
    assert dtf.result_type(a, FakeArray(b)) == expected


def test_result_type_single_and_numpy_scalar_types():
    for d in ALL:
        assert dt.result_type(d) is d
        assert dt.result_type(FakeArray(d)) is d
        assert dt.result_type(d.type) is d        # numpy.float32 etc.
    # numpy scalars carry a dtype, so they are strong (as in NumPy)
    assert dt.result_type(dt.float32, numpy.float64(1.0)) == numpy.result_type(
        numpy.float32, numpy.float64(1.0))


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_result_type_with_one_scalar_matches_numpy(d, scalar):
    expected = numpy.result_type(d, scalar)
    assert dt.result_type(d, scalar) == expected
    assert dt.result_type(scalar, FakeArray(d)) == expected
    assert dt._scalar_result_type(d, scalar, "add") == expected


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_scalar_rules_required_by_spec(d):
    """The spec's required cases, independently of NumPy."""
    if d.kind == "b":
        assert dt.result_type(d, True) is d
    if d.kind in "iu":
        assert dt.result_type(d, 1) is d
        assert dt.result_type(d, True) is d       # a bool is a Python int
    if d.kind in "fc":
        for s in (1, 1.0):
            assert dt.result_type(d, s) is d
    if d.kind == "c":
        assert dt.result_type(d, 1j) is d
    if d.kind == "f":
        got = dt.result_type(d, 1j)
        assert got.kind == "c" and got.itemsize == 2 * d.itemsize


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_result_type_with_several_scalars_matches_numpy_in_any_order(d):
    for n in (2, 3):
        for scalars in itertools.product(SCALARS, repeat=n):
            expected = numpy.result_type(d, *scalars)
            for perm in itertools.permutations((d,) + scalars):
                assert dt.result_type(*perm) == expected, perm


@given(spec_sequences(), st.data())
def test_result_type_scalars_do_not_change_spec_result(dtypes, data):
    """array-api-tests' test_with_scalars: a scalar of the result's kind is neutral."""
    out = dt.result_type(*dtypes)
    if out.kind == "b":
        choices = [True]
    elif out.kind in "iu":
        choices = [1]
    elif out.kind == "f":
        choices = [1, 1.0]
    else:
        choices = [1, 1.0, 1j]
    scalar = data.draw(st.sampled_from(choices))
    inputs = data.draw(st.permutations(list(dtypes) + [scalar]))
    assert dt.result_type(*inputs) is out
    arrays = [FakeArray(x) for x in dtypes]
    assert dt.result_type(*data.draw(st.permutations(arrays + [scalar]))) is out


def test_result_type_ignores_scalar_values():
    # weak scalars are value-independent, as numpy.result_type
    assert dt.result_type(dt.int8, 300) is dt.int8
    assert dt.result_type(dt.uint8, -1) is dt.uint8
    assert numpy.result_type(numpy.int8, 300) == dt.int8


@pytest.mark.parametrize("args", [(), (1,), (True, 1.0), (1j, 2)], ids=repr)
def test_result_type_needs_an_array_or_dtype(args):
    with pytest.raises(ValueError, match="^result_type"):
        dt.result_type(*args)
    with pytest.raises(ValueError, match="^result_type"):
        dtf.result_type(*args)


@pytest.mark.parametrize("bad", [
    numpy.dtype("longdouble"), numpy.longdouble, "float32", None, object, str, _OPAQUE, [1],
    numpy.dtype(">f4"), FakeArray(numpy.dtype(">f2")), FakeArray("float32"),
    numpy.dtype("O"), numpy.floating,
], ids=repr)
def test_result_type_rejects(bad):
    with pytest.raises(TypeError, match="^result_type"):
        dt.result_type(dt.float32, bad)
    with pytest.raises(TypeError, match="^result_type"):
        dt.result_type(bad, dt.float32)


# ---------------------------------------------------------------------------------------
# _scalar_result_type and _check_scalar_fits
# ---------------------------------------------------------------------------------------

def test_scalar_promotion_table_complete():
    assert set(dt._scalar_promotion) == {(k, t) for k in "biufc"
                                         for t in (bool, int, float, complex)}


@pytest.mark.parametrize("bad", ["1", None, b"1", [1], numpy.float16(1)], ids=repr)
def test_scalar_result_type_rejects_non_scalars(bad):
    with pytest.raises(TypeError, match="^multiply"):
        dt._scalar_result_type(dt.float32, bad, "multiply")


def test_scalar_result_type_python_subclasses():
    # subclasses of the Python scalar types follow their base class (bool before int)
    assert dt._scalar_result_type(dt.int8, numpy.float64(1.0), "add") == numpy.result_type(
        numpy.int8, 1.0)
    assert dt._scalar_result_type(dt.bool, True, "add") is dt.bool


def numpy_overflows(d, value):
    """Oracle: does NumPy 2 raise OverflowError for ``array(d) + value``?"""
    try:
        with numpy.errstate(all="ignore"):
            numpy.zeros(1, dtype=d) + value
    except OverflowError:
        return True
    return False


def int_edge_values(d):
    if d.kind in "iu":
        info = numpy.iinfo(d)
        lo, hi = int(info.min), int(info.max)
        return [lo - 1, lo, 0, hi, hi + 1, hi * 3, -(2 ** 70), 2 ** 70]
    return [0, -1, 2 ** 63, 2 ** 64, 2 ** 1000, 10 ** 308, 10 ** 309, -(10 ** 400)]


@pytest.mark.parametrize("d", dt._numeric_dtypes, ids=lambda d: d.name)
def test_check_scalar_fits_matches_numpy(d):
    for value in int_edge_values(d):
        target = dt._scalar_result_type(d, value, "add")
        if numpy_overflows(d, value):
            with pytest.raises(OverflowError, match="^add"):
                dt._check_scalar_fits(target, value, "add")
        else:
            assert dt._check_scalar_fits(target, value, "add") is None


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_check_scalar_fits_accepts_bools_and_floats(d):
    for value in (True, False, 1.5, 1e300, float("inf"), float("nan"), 1j, 1e300j):
        assert dt._check_scalar_fits(d, value, "add") is None


def test_check_scalar_fits_bool_array_with_int():
    # bool array + int -> int64 (NumPy 2): the int must fit int64, as in NumPy
    target = dt._scalar_result_type(dt.bool, 2 ** 63, "add")
    assert target is dt.int64
    assert numpy_overflows(dt.bool, 2 ** 63)
    with pytest.raises(OverflowError, match="^add"):
        dt._check_scalar_fits(target, 2 ** 63, "add")


def test_check_scalar_fits_huge_int_message():
    with pytest.raises(OverflowError, match="^equal.*bits"):
        dt._check_scalar_fits(dt.int64, 10 ** 5000, "equal")


# ---------------------------------------------------------------------------------------
# can_cast
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_can_cast_matches_numpy_safe(a, b):
    expected = bool(numpy.can_cast(a, b, casting="safe"))
    for f in (dt.can_cast, dtf.can_cast):
        out = f(a, b)
        assert type(out) is bool
        assert out == expected
        assert f(FakeArray(a), b) == expected
        assert f(a.type, b.type) == expected


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_can_cast_spec_graph(a, b):
    """array-api-tests: True whenever some promotion in the spec's table gives ``to``."""
    if any(SPEC.get((a, other)) is b for other in ALL):
        assert dt.can_cast(a, b)
    if a.kind == b.kind and (a, b) in SPEC:
        assert dt.can_cast(a, b) == (SPEC[(a, b)] is b)


@pytest.mark.parametrize("a, b", F16_PAIRS, ids=lambda d: d.name)
def test_float16_can_cast_matches_numpy_safe(a, b):
    expected = bool(numpy.can_cast(a, b, casting="safe"))
    assert dt.can_cast(a, b) is expected and dtf.can_cast(FakeArray(a), b) is expected


@pytest.mark.parametrize("bad", ["float32", None, object, numpy.longdouble, _OPAQUE], ids=repr)
def test_can_cast_rejects(bad):
    with pytest.raises(TypeError, match="^can_cast"):
        dt.can_cast(bad, dt.float32)
    with pytest.raises(TypeError, match="^can_cast"):
        dt.can_cast(dt.float32, bad)
    with pytest.raises(TypeError, match="^can_cast"):
        dt.can_cast(dt.float32, FakeArray(dt.float64))   # 'to' must be a dtype


# ---------------------------------------------------------------------------------------
# finfo / iinfo
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", dt._floating_dtypes + (F16,), ids=lambda d: d.name)
def test_finfo_matches_numpy(d):
    ref = numpy.finfo(d)
    for arg in (d, FakeArray(d), d.type):
        for f in (dt.finfo, dtf.finfo):
            info = f(arg)
            assert type(info.bits) is int and info.bits == ref.bits
            for field in ("eps", "max", "min", "smallest_normal"):
                value = getattr(info, field)
                assert type(value) is float, field
                assert value == float(getattr(ref, field)), field
            assert info.dtype == ref.dtype
            assert info.dtype is dt._complex_to_real.get(d, d)
            assert not isinstance(info.dtype, str)


@pytest.mark.parametrize("d", dt._integer_dtypes, ids=lambda d: d.name)
def test_iinfo_matches_numpy(d):
    ref = numpy.iinfo(d)
    for arg in (d, FakeArray(d), d.type):
        for f in (dt.iinfo, dtf.iinfo):
            info = f(arg)
            for field in ("bits", "max", "min"):
                value = getattr(info, field)
                assert type(value) is int, field
                assert value == int(getattr(ref, field)), field
            assert info.dtype is d


@pytest.mark.parametrize("bad", list(dt._integer_or_boolean_dtypes)
                         + [int, bool, "float32", None, numpy.dtype("longdouble"), numpy.longdouble,
                            FakeArray(dt.int8), 1.0], ids=repr)
def test_finfo_rejects(bad):
    with pytest.raises(TypeError, match="^finfo"):
        dt.finfo(bad)


@pytest.mark.parametrize("bad", [dt.bool, F16] + list(dt._floating_dtypes)
                         + [float, bool, complex, "int32", None, numpy.dtype("int64").newbyteorder(),
                            FakeArray(dt.float32), 1], ids=repr)
def test_iinfo_rejects(bad):
    with pytest.raises(TypeError, match="^iinfo"):
        dt.iinfo(bad)


def test_info_objects_are_frozen():
    info = dt.finfo(dt.float64)
    with pytest.raises(AttributeError):
        info.eps = 1.0


# ---------------------------------------------------------------------------------------
# isdtype
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("kind", KIND_STRINGS)
def test_isdtype_kind_strings(d, kind):
    out = dt.isdtype(d, kind)
    assert type(out) is bool
    assert out == (d.kind in KIND_LETTERS[kind])
    assert dtf.isdtype(d, kind) == out


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_isdtype_dtype_kinds(d):
    for other in ALL:
        assert dt.isdtype(d, other) is (d == other)
        assert dt.isdtype(d, other.type) is (d == other)
    assert dt.isdtype(d.type, d) is True


@pytest.mark.parametrize("kind", KIND_STRINGS)
def test_isdtype_float16(kind):
    # a real floating dtype for isdtype, though not listed by info().dtypes()
    assert dt.isdtype(F16, kind) is (kind in ("real floating", "numeric"))
    assert dtf.isdtype(F16, kind) is dt.isdtype(F16, kind)
    assert dt.isdtype(F16, F16) and dt.isdtype(F16, numpy.float16) and not dt.isdtype(F16, dt.float32)
    assert dt.isdtype(F16, ("bool", "real floating")) and not dt.isdtype(dt.float32, F16)


def atomic_kinds():
    return st.sampled_from(ALL) | st.sampled_from(KIND_STRINGS)


def oracle_isdtype(d, kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return any(d.kind in KIND_LETTERS[k] if isinstance(k, str) else d == k for k in kinds)


@given(st.sampled_from(ALL), atomic_kinds() | st.lists(atomic_kinds(), max_size=5).map(tuple))
def test_isdtype_tuples(d, kind):
    assert dt.isdtype(d, kind) is oracle_isdtype(d, kind)


@pytest.mark.parametrize("kind", ["integer", "floating", "Bool", "", "real floating-point"])
def test_isdtype_unknown_kind(kind):
    with pytest.raises(ValueError, match="^isdtype"):
        dt.isdtype(dt.float32, kind)
    with pytest.raises(ValueError, match="^isdtype"):
        dt.isdtype(dt.float32, ("numeric", kind))


@pytest.mark.parametrize("kind", [float, None, 1, ("numeric", ("bool",)), ("numeric", None),
                                  numpy.dtype("M8[s]"), ["numeric"]], ids=repr)
def test_isdtype_bad_kind_type(kind):
    with pytest.raises(TypeError, match="^isdtype"):
        dt.isdtype(dt.int8, kind)


@pytest.mark.parametrize("bad", ["float32", float, None, numpy.dtype("M8[s]"),
                                 FakeArray(dt.float32)], ids=repr)
def test_isdtype_bad_dtype(bad):
    with pytest.raises(TypeError, match="^isdtype"):
        dt.isdtype(bad, "numeric")


def test_isdtype_validates_every_tuple_item():
    # a match on the first item does not hide a bad later one
    with pytest.raises(ValueError, match="^isdtype"):
        dt.isdtype(dt.bool, ("bool", "nope"))


# ---------------------------------------------------------------------------------------
# _normalize_dtype and _dtypes_of_kind
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_normalize_accepts_the_13(d):
    assert dt._normalize_dtype(d, "zeros") is d
    assert dt._normalize_dtype(d.type, "zeros") is d            # numpy.float32 etc.
    assert dt._normalize_dtype(numpy.dtype(d.str), "zeros") is d


def test_normalize_accepts_float16():
    for obj in (F16, numpy.float16, numpy.dtype("e"), numpy.dtype("<f2")):
        assert dt._normalize_dtype(obj, "astype") is dt.float16
    assert dt._dtype_of(FakeArray(F16), "finfo") is dt.float16
    with pytest.raises(TypeError, match="^zeros: expected"):
        dt._normalize_dtype(numpy.dtype(">f2"), "zeros")


def test_normalize_platform_aliases():
    for alias in ("q", "l", "Q", "L", "i", "I", "h", "H", "b", "B", "?", "d", "f", "D", "F"):
        nd = numpy.dtype(alias)
        assert dt._normalize_dtype(nd, "zeros") is dt._as_dtype(numpy.dtype(nd.name))


def test_normalize_none():
    assert dt._normalize_dtype(None, "zeros") is None


# ---------------------------------------------------------------------------------------
# Python types as dtypes (NumPy's reading: numpy.dtype(float) is float64)
# ---------------------------------------------------------------------------------------

PYTYPES = (bool, int, float, complex)


@pytest.mark.parametrize("pytype", PYTYPES, ids=lambda t: t.__name__)
def test_normalize_python_types_as_numpy(pytype):
    got = dt._normalize_dtype(pytype, "zeros")
    assert got == numpy.dtype(pytype)
    assert any(got is d for d in ALL)                   # the canonical object
    assert dt._dtype_of(pytype, "finfo") is got
    assert got is {bool: dt.bool, int: dt._default_int, float: dt._default_float,
                   complex: dt._default_complex}[pytype]


def test_python_type_subclasses_are_not_dtypes():
    class MyFloat(float):   # numpy.dtype(MyFloat) is object: not a dtype here either
        pass
    for bad in (MyFloat, "float", "int"):
        with pytest.raises(TypeError, match="^zeros: expected"):
            dt._normalize_dtype(bad, "zeros")


@pytest.mark.parametrize("pytype", PYTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("d", SUPPORTED, ids=lambda d: d.name)
def test_result_type_and_can_cast_python_types_match_numpy(pytype, d):
    # a Python type is the (strong) dtype, not a weak scalar: result_type(float, float32)
    # is float64 in NumPy, where result_type(1.0, float32) is float32
    expected = numpy.result_type(pytype, d)
    assert dt.result_type(pytype, d) == expected and dt.result_type(d, pytype) == expected
    assert dtf.result_type(FakeArray(d), pytype) == expected
    assert dt.can_cast(pytype, d) is bool(numpy.can_cast(pytype, d, casting="safe"))
    assert dt.can_cast(d, pytype) is bool(numpy.can_cast(d, pytype, casting="safe"))
    assert dtf.can_cast(FakeArray(d), pytype) is dt.can_cast(d, pytype)


def test_result_type_python_types_with_scalars_match_numpy():
    for args in [(float,), (int, 1.0), (bool, 1), (bool, True), (float, 1j), (int, float, 3)]:
        assert dt.result_type(*args) == numpy.result_type(*args), args
    assert dt.result_type(float, dt.float32) is dt.float64
    assert dt.result_type(1.0, dt.float32) is dt.float32   # the scalar stays weak


def test_finfo_iinfo_of_python_types():
    assert dt.finfo(float) == dt.finfo(dt.float64) and dtf.finfo(float).dtype is dt.float64
    assert dt.finfo(complex).dtype is dt.float64 == numpy.finfo(complex).dtype
    assert dt.iinfo(int) == dt.iinfo(dt.int64) and dtf.iinfo(int).max == numpy.iinfo(int).max


@pytest.mark.parametrize("pytype", PYTYPES, ids=lambda t: t.__name__)
def test_isdtype_rejects_python_types_as_numpy_does(pytype):
    with pytest.raises(TypeError):
        numpy.isdtype(pytype, "numeric")
    with pytest.raises(TypeError, match="^isdtype"):
        dt.isdtype(pytype, "numeric")
    with pytest.raises(TypeError, match="^isdtype"):
        dtf.isdtype(dt.float64, pytype)
    with pytest.raises(TypeError, match="^isdtype"):
        dt.isdtype(dt.float64, ("numeric", pytype))


@pytest.mark.parametrize("bad", [
    object, str, bytes, "float32", "f4", "bool", "float16", "float", numpy.dtype(">f2"),
    numpy.dtype(">f4"), numpy.dtype(">i8"), numpy.floating, numpy.number, numpy.generic,
    numpy.dtype("O"), numpy.dtype("M8[s]"), numpy.dtype("U3"), numpy.longdouble,
    numpy.dtype([("a", "f4")]), _OPAQUE, FakeArray(dt.float32), 1, numpy.float32(1),
], ids=repr)
def test_normalize_rejects(bad):
    with pytest.raises(TypeError, match="^zeros: expected"):
        dt._normalize_dtype(bad, "zeros")


def test_dtypes_of_kind():
    assert dt._dtypes_of_kind() == {name: numpy.dtype(name) for name in NAMES}
    assert list(dt._dtypes_of_kind()) == list(NAMES)
    for kind in KIND_STRINGS:
        got = dt._dtypes_of_kind(kind)
        assert got == {d.name: d for d in ALL if d.kind in KIND_LETTERS[kind]}
    both = dt._dtypes_of_kind(("bool", "complex floating"))
    assert set(both) == {"bool", "complex64", "complex128"}
    with pytest.raises(ValueError, match="^dtypes"):
        dt._dtypes_of_kind("floating")
    with pytest.raises(TypeError, match="^dtypes"):
        dt._dtypes_of_kind(dt.float32)
    # float16 is an extension: never listed, whatever the kind
    for kind in KIND_STRINGS + (None, ("real floating", "numeric")):
        assert "float16" not in dt._dtypes_of_kind(kind)


# ---------------------------------------------------------------------------------------
# The public module
# ---------------------------------------------------------------------------------------

def test_public_functions_documented():
    for name in ("can_cast", "finfo", "iinfo", "isdtype", "result_type"):
        f = getattr(dtf, name)
        assert f.__doc__ and f.__doc__.strip(), name
        assert f.__module__ == "gparray._api._data_type_functions"
    assert set(dtf.__all__) == {"can_cast", "finfo", "iinfo", "isdtype", "result_type"}
    assert not hasattr(dtf, "astype")
