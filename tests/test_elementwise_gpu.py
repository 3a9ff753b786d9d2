"""GPU tier for the 67 elementwise functions: every function against NumPy 2 (or the spec
where gparray follows it instead) over its whole dtype matrix, special values, mixed-dtype
pairs, non-contiguous/broadcast/0-d/empty operands, Python scalars on either side, the
operators and in-place operators, and hypothesis property tests over random shapes and
strides. The expected values and the comparison come from tests/test_elementwise_tables.py
(the same checks its host tier runs on the functors compiled with g++).

Run on the device machine:  python -m pytest -q tests/test_elementwise_gpu.py
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gparray as xp
from gparray._core import _dtypes as _dt
from test_elementwise_tables import (BINARY, OPS, SPEC_ARITY, UNARY, Case, cases, complex_from, dtypes_of,
                                     random_values, reference, special_values, tolerance)

pytestmark = pytest.mark.gpu

ALL = [np.dtype(d) for d in _dt._all_dtypes]


def host(x):
    return np.asarray(x)


def dev(a):
    return xp.asarray(np.asarray(a))


def result_dtype(name, *dts):
    """gparray's result dtype for inputs of these dtypes."""
    from gparray._array._ops import _result

    p = dts[0]
    for d in dts[1:]:
        p = _dt.promote_types(p, d)
    return _result(OPS[name].rule, p)[0]


def check(name, got, case_or_expected, *inputs, rtol=None):
    got_np = host(got)
    if isinstance(case_or_expected, Case):
        assert got_np.dtype == case_or_expected.expected.dtype, (name, got_np.dtype)
        assert got_np.shape == case_or_expected.expected.shape
        case_or_expected.check(got_np)
        return
    exp = np.asarray(case_or_expected)
    assert got_np.dtype == exp.dtype and got_np.shape == exp.shape, (name, got_np.dtype, exp.dtype,
                                                                     got_np.shape, exp.shape)
    c = Case("", name, [np.broadcast_to(a, exp.shape) for a in inputs], exp,
             tolerance(name, inputs[0].dtype) if rtol is None else rtol)
    c.check(got_np)


# ----------------------------------------------------------------------------- semantics, all dtypes
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_function_over_its_dtypes(name):
    """Special values (every pair for binary functions), random values and targeted cases,
    contiguous operands, for every dtype of the function's category."""
    f = getattr(xp, name)
    for dt in dtypes_of(name):
        for case in cases(name, dt):
            check(name, f(*[dev(a) for a in case.inputs]), case)


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_non_dtype_inputs_raise(name):
    f = getattr(xp, name)
    allowed = set(dtypes_of(name))
    for dt in ALL:
        if dt in allowed:
            continue
        x = dev(np.ones(3, dt))
        if dt == np.bool_ and name in ("add", "multiply"):
            # NumPy's bool + bool / bool * bool: logical or / and (a bool array), not an error
            y = dev(np.array([True, False, False]))
            ref = np.ones(3, bool) + np.array([True, False, False]) if name == "add" else \
                np.ones(3, bool) * np.array([True, False, False])
            got = f(x, y)
            assert got.dtype == xp.bool and np.array_equal(np.asarray(got), ref)
            continue
        with pytest.raises(TypeError, match=f"^{name}: "):
            f(x, x) if name in SPEC_ARITY else f(x)


# ----------------------------------------------------------------------------- layouts
LAYOUT_DTYPES = {"float32", "float64", "int16", "uint8", "complex128", "bool", "int64"}


def _first_dtypes(name):
    ds = [d for d in dtypes_of(name) if d.name in LAYOUT_DTYPES]
    return ds or dtypes_of(name)[:1]


def _values(dt, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    s = special_values(dt)
    v = np.concatenate([s, random_values(dt, max(n, 1), rng)])[:n] if n else s[:0]
    rng.shuffle(v)
    return v.reshape(shape)


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_non_contiguous_broadcast_0d_and_empty(name):
    f = getattr(xp, name)
    binary = name in SPEC_ARITY
    for dt in _first_dtypes(name):
        base = _values(dt, (6, 10), 1)
        b2 = _values(dt, (6, 10), 2)
        xb, yb = dev(base), dev(b2)
        views = [(lambda a: a[::2, 1::3]), (lambda a: a[::-1, ::-2]), (lambda a: a.T),
                 (lambda a: a[1:, :-1])]
        for v in views:
            a = np.asarray(v(base))
            if binary:
                bv = np.asarray(v(b2))
                check(name, f(v(xb), v(yb)), reference(name, a, bv), a, bv)
                # one contiguous, one strided; then broadcasting a row and a column
                check(name, f(v(xb), dev(bv)), reference(name, a, bv), a, bv)
            else:
                check(name, f(v(xb)), reference(name, a), a)
        if binary:
            row, col = base[:1, :], b2[:, :1]
            check(name, f(dev(row), dev(col)), reference(name, *np.broadcast_arrays(row, col)), *np.broadcast_arrays(row, col))
            check(name, f(xb, dev(b2[0])), reference(name, base, np.broadcast_to(b2[0], base.shape)), base, b2[0])
            z0, z1 = base[2, 3], b2[4, 5]
            check(name, f(dev(np.asarray(z0)), dev(np.asarray(z1))), reference(name, np.asarray(z0), np.asarray(z1)),
                  np.asarray(z0), np.asarray(z1))
            check(name, f(dev(np.asarray(z0)), yb), reference(name, np.broadcast_to(z0, b2.shape), b2), z0, b2)
            e = f(dev(base[:0]), dev(b2[:0]))
            assert e.shape == (0, 10) and e.dtype == result_dtype(name, dt, dt)
            with pytest.raises(ValueError):
                f(xb, dev(b2[:4]))
        else:
            z = np.asarray(base[2, 3])
            check(name, f(dev(z)), reference(name, z), z)
            e = f(dev(base[:0]))
            assert e.shape == (0, 10) and e.dtype == result_dtype(name, dt)


@pytest.mark.parametrize("name", ["add", "sin", "floor_divide", "pow", "abs", "equal"])
def test_large_and_misaligned(name):
    """Sizes around the vector tiles and views starting one element in (unaligned)."""
    f = getattr(xp, name)
    for dt in _first_dtypes(name):
        for n in (1, 31, 1023, 4097, 100003):
            a, b = _values(dt, (n + 1,), n), _values(dt, (n + 1,), n + 7)
            if name == "pow" and dt.kind in "iu":
                b = b % 8
            for sl in (slice(0, n), slice(1, n + 1)):
                if name in SPEC_ARITY:
                    check(name, f(dev(a)[sl], dev(b)[sl]), reference(name, a[sl], b[sl]), a[sl], b[sl])
                else:
                    check(name, f(dev(a)[sl]), reference(name, a[sl]), a[sl])


# ----------------------------------------------------------------------------- mixed dtypes
def _pairs(name, full):
    ds = dtypes_of(name)
    pairs = [(a, b) for a in ds for b in ds if a != b]
    if full:
        return pairs
    pick = {("int8", "uint8"), ("int32", "float32"), ("float32", "complex128"), ("int64", "uint64"),
            ("uint8", "int64"), ("bool", "int8"), ("float32", "float64"), ("uint16", "int16"),
            ("int8", "float64"), ("complex64", "float64"), ("bool", "float32"), ("uint32", "int8")}
    return [(a, b) for a, b in pairs if (a.name, b.name) in pick]


def test_mixed_dtype_pairs_full_matrix():
    """add over every ordered pair of distinct numeric dtypes (132 kernels)."""
    _mixed("add", full=True)


@pytest.mark.parametrize("name", ["less", "equal", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow",
                                  "maximum", "minimum", "atan2", "hypot", "copysign", "logaddexp",
                                  "bitwise_and", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                                  "not_equal", "greater_equal", "nextafter"])
def test_mixed_dtype_pairs(name):
    _mixed(name, full=False)


def _mixed(name, full):
    f = getattr(xp, name)
    for da, db in _pairs(name, full):
        p = _dt.promote_types(da, db)
        if p not in _dt._dtype_categories[OPS[name].category]:
            with pytest.raises(TypeError, match=f"^{name}: "):
                f(dev(np.ones(2, da)), dev(np.ones(2, db)))
            continue
        a, b = _values(da, (40,), 3), _values(db, (40,), 4)
        if name == "pow" and p.kind in "iu":
            b = np.abs(b % 8).astype(db)
        # the kernel converts each operand to the promoted dtype in registers
        exp = reference(name, a.astype(p), b.astype(p))
        check(name, f(dev(a), dev(b)), exp, a.astype(p), b.astype(p))


# ----------------------------------------------------------------------------- Python scalars
def _scalars_for(dt):
    if dt.kind == "b":
        return [True, False]
    if dt.kind in "iu":
        return [0, 1, 3, 7, True] + ([-1, -5] if dt.kind == "i" else []) + [2.5, -0.0, float("nan"), 1j]
    if dt.kind == "f":
        return [0, 1, -3, 2.5, -0.0, float("inf"), float("nan"), True, 1 + 2j]
    return [0, 1, 2.5, -0.0, 1.5 - 2j, complex(float("inf"), 0), float("nan")]


@pytest.mark.parametrize("name", BINARY)
def test_python_scalars_on_either_side(name):
    """Same-kind scalars for every dtype of the function; scalars of another kind (which
    change the result dtype) for one dtype of each kind; a strided array with a scalar."""
    f = getattr(xp, name)
    kinds_done = set()
    for dt in dtypes_of(name):
        a = _values(dt, (17,), 5)
        x = dev(a)
        first_of_kind = dt.kind not in kinds_done
        kinds_done.add(dt.kind)
        strided_done = False
        for sc in _scalars_for(dt):
            try:
                rdt = _dt._scalar_result_type(dt, sc, name)
            except TypeError:
                continue
            if rdt != dt and not first_of_kind:
                continue
            if rdt not in _dt._dtype_categories[OPS[name].category]:
                with pytest.raises(TypeError, match=f"^{name}: "):
                    f(x, sc)
                continue
            s = np.full(a.shape, sc, rdt)
            aa = a.astype(rdt)
            if (name == "pow" and rdt.kind in "iu" and isinstance(sc, int) and not isinstance(sc, bool)
                    and sc < 0):
                with pytest.raises(ValueError, match="^pow: "):
                    f(x, sc)
                check(name, f(sc, x), reference(name, s, aa), s, aa)
                continue
            check(name, f(x, sc), reference(name, aa, s), aa, s)
            check(name, f(sc, x), reference(name, s, aa), s, aa)
            if rdt == dt and not strided_done and first_of_kind:
                strided_done = True
                check(name, f(x[::-2], sc), reference(name, aa[::-2], s[::-2]), aa[::-2], s[::-2])


def test_python_scalar_errors_and_out_of_range_comparisons():
    i8 = dev(np.array([-128, -1, 0, 5, 127], np.int8))
    u8 = dev(np.array([0, 1, 255], np.uint8))
    a = np.array([-128, -1, 0, 5, 127], np.int8)
    for op, name in [(operator.lt, "less"), (operator.le, "less_equal"), (operator.gt, "greater"),
                     (operator.ge, "greater_equal"), (operator.eq, "equal"), (operator.ne, "not_equal")]:
        for sc in (300, -300, 2**70, -(2**70), 128, -129):
            exp = op(a.astype(object), sc).astype(bool)
            check(name, op(i8, sc), exp, a)
            check(name, getattr(xp, name)(i8, sc), exp, a)
            check(name, getattr(xp, name)(sc, i8), op(sc, a.astype(object)).astype(bool), a)
        check(name, op(u8, -1), op(np.array([0, 1, 255]), -1), np.array([0, 1, 255]))
    with pytest.raises(OverflowError, match="^add: "):
        xp.add(i8, 300)
    with pytest.raises(OverflowError, match="^multiply: "):
        i8 * -129
    with pytest.raises(ValueError, match="^pow: integers to negative integer powers"):
        xp.pow(i8, -1)
    with pytest.raises(ValueError, match="^pow: "):
        i8 ** -2
    check("pow", 2 ** dev(np.array([0, 3, -1], np.int64)), np.array([1, 8, 0]), np.array([0, 3, -1]))
    with pytest.raises(TypeError, match="^bitwise_and: "):
        xp.bitwise_and(dev(np.ones(2)), 1)
    with pytest.raises(TypeError, match="^bitwise_left_shift: "):
        xp.bitwise_left_shift(dev(np.ones(2, np.int64)), dev(np.ones(2, np.uint64)))
    with pytest.raises(TypeError, match="^less: "):
        xp.less(dev(np.ones(2)), 1j)
    with pytest.raises(TypeError, match="^add: expected"):
        xp.add(1, 2)
    with pytest.raises(TypeError, match="^add: "):
        xp.add(dev(np.ones(2)), "1")
    with pytest.raises(TypeError, match="^sin: "):
        xp.sin(np.ones(2))


# ----------------------------------------------------------------------------- operators
def test_operators_call_the_functions():
    a = _values(np.dtype("float64"), (5, 4), 9)
    b = _values(np.dtype("float64"), (5, 4), 10)
    x, y = dev(a), dev(b)
    with np.errstate(all="ignore"):
        pairs = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x // y, reference("floor_divide", a, b)),
                 (x % y, a % b), (x ** y, a ** b), (-x, -a), (+x, +a), (abs(x), abs(a)),
                 (x < y, a < b), (x <= y, a <= b), (x > y, a > b), (x >= y, a >= b), (x == y, a == b),
                 (x != y, a != b), (1 - x, 1 - a), (2 / x, 2 / a), (3 // x, reference("floor_divide", np.full_like(a, 3), a)), (2 % x, 2 % a),
                 (2 ** x, 2 ** a)]
    for got, exp in pairs:
        g = host(got)
        assert g.dtype == exp.dtype
        np.testing.assert_allclose(g, exp, rtol=1e-13, equal_nan=True)
    i = np.array([[1, -2, 3], [-128, 127, 0]], np.int8)
    j = np.array([[1, 2, 9], [1, 3, 7]], np.int8)
    xi, xj = dev(i), dev(j)
    for got, exp in [(xi & xj, i & j), (xi | xj, i | j), (xi ^ xj, i ^ j), (~xi, ~i), (xi << xj, i << j),
                     (xi >> xj, i >> j), (3 & xi, 3 & i), (1 << xj, np.left_shift(np.int8(1), j))]:
        check("bitwise_and", got, exp.astype(np.int8), i)


def test_in_place_operators():
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    x = dev(a)
    ptr = x._ptr
    y = dev(np.ones(4, np.float32) * 2)
    x += y
    a += 2
    assert x._ptr == ptr
    check("add", x, a, a)
    x *= 3
    x -= 1
    x /= 2
    a = (a * 3 - 1) / 2
    check("divide", x, a, a)
    x **= 2
    check("pow", x, a ** 2, a, rtol=1e-6)
    a = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 7
    x = dev(a)
    ptr = x._ptr
    x //= 3
    x %= 5
    with np.errstate(all="ignore"):
        a = (a // 3) % 5
    check("remainder", x, a, a)
    assert x._ptr == ptr
    # a view writes through to its base; aliasing operands
    base = np.arange(10, dtype=np.int32)
    xb = dev(base)
    v = xb[::2]
    v += 100
    base[::2] += 100
    check("add", xb, base, base)
    xb -= xb
    check("subtract", xb, np.zeros(10, np.int32), base)
    xi = dev(np.array([5, -7, 3], np.int16))
    xi //= 0
    check("floor_divide", xi, np.zeros(3, np.int16), np.zeros(3, np.int16))
    xi = dev(np.array([1, 2, 3], np.int16))
    xi <<= 2
    xi >>= 1
    xi &= 6
    xi |= 1
    xi ^= 3
    check("bitwise_xor", xi, ((((np.array([1, 2, 3], np.int16) << 2) >> 1) & 6) | 1) ^ 3, np.ones(3, np.int16))
    bb = dev(np.array([True, False]))
    bb &= True
    check("bitwise_and", bb, np.array([True, False]), np.array([True, False]))
    # NumPy's 'same_kind' rule: int16 += int32 casts back; a float result into ints and
    # shape-changing in-place operations raise and leave the array alone
    xs = dev(np.array([1, 2, 3], np.int16))
    xs += dev(np.array([7, 8, 2**16 + 1], np.int32))
    ref = np.array([1, 2, 3], np.int16)
    ref += np.array([7, 8, 2**16 + 1], np.int32)
    assert xs.dtype == xp.int16 and np.array_equal(np.asarray(xs), ref)
    xi = dev(np.array([1, 2, 3], np.int16))
    with pytest.raises(TypeError, match="^add: in-place"):
        xi += 1.5
    with pytest.raises(TypeError, match="^divide: in-place"):
        xi /= 2
    with pytest.raises(TypeError, match="^add: in-place"):
        xi += dev(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="^add: in-place"):
        xi += dev(np.ones((2, 3), np.int16))
    with pytest.raises(OverflowError):
        xi += 2**20
    check("add", xi, np.array([1, 2, 3], np.int16), np.ones(3, np.int16))
    xf = dev(np.array([1.0, 2.0], np.float32))
    xf += dev(np.array([1, 2], np.int8))  # promotes to float32: allowed
    check("add", xf, np.array([2.0, 4.0], np.float32), np.ones(2, np.float32))


# ----------------------------------------------------------------------------- clip
def test_clip():
    for dt in dtypes_of("clip"):
        s = special_values(dt)
        x, lo, hi = (v.ravel() for v in np.meshgrid(s, s[::3], s[::4], indexing="ij"))
        check("clip", xp.clip(dev(x), dev(lo), dev(hi)), reference("clip", x, lo, hi), x, lo, hi)
        a = _values(dt, (5, 6), 11)
        b = _values(dt, (6,), 12)
        c = _values(dt, (5, 1), 13)
        xa = dev(a)
        check("clip", xp.clip(xa, dev(b), dev(c)), reference("clip", *np.broadcast_arrays(a, b, c)), a)
        exp = np.minimum(a[::2, ::-1], c[::2]).astype(dt)
        check("clip", xp.clip(xa[::2, ::-1], max=dev(c[::2])), exp, exp)
        check("clip", xp.clip(xa), a, a)
        assert xp.clip(xa)._ptr != xa._ptr
        # a bound array broadcasts the result beyond x's shape
        # (float16 is computed in float32: NumPy's float16 maximum keeps the other zero of +-0)
        hi = np.float32 if dt == np.float16 else dt
        check("clip", xp.clip(dev(a[0]), dev(c)), np.maximum(a[0].astype(hi), c.astype(hi)).astype(dt), a)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            for lo_, hi_ in [(3, 5), (-1000, 1000), (info.min - 1, info.max + 1), (5, 3), (2**70, None),
                             (None, -(2**70))]:
                exp = a
                if lo_ is not None:
                    exp = np.maximum(exp, min(max(lo_, info.min), info.max))
                if hi_ is not None:
                    exp = np.minimum(exp, min(max(hi_, info.min), info.max))
                check("clip", xp.clip(xa, lo_, hi_), exp.astype(dt), a)
            with pytest.raises(TypeError, match="^clip: "):
                xp.clip(xa, 1.5)
            with pytest.raises(TypeError, match="^clip: "):
                xp.clip(xa, dev(np.ones(6)))
        else:
            for lo_, hi_ in [(-1.5, 2), (float("nan"), None), (None, float("nan")), (3, -3), (-np.inf, np.inf)]:
                with np.errstate(all="ignore"):
                    exp = a
                    if lo_ is not None:
                        exp = np.maximum(exp, dt.type(lo_))
                    if hi_ is not None:
                        exp = np.minimum(exp, dt.type(hi_))
                check("clip", xp.clip(xa, lo_, hi_), exp.astype(dt), a)
            # bounds of another dtype: computed in the promoted dtype, result in x's dtype
            lo64 = np.full(6, -0.25)
            check("clip", xp.clip(xa, dev(lo64)), np.maximum(a, lo64).astype(dt), a)
    with pytest.raises(TypeError, match="^clip: "):
        xp.clip(dev(np.ones(2, np.complex64)), 0)
    with pytest.raises(TypeError, match="^clip: "):
        xp.clip(dev(np.ones(2)), 1j)
    with pytest.raises(TypeError, match="^clip: "):
        xp.clip(np.ones(2), 0)
    with pytest.raises(ValueError):
        xp.clip(dev(np.ones((2, 3))), dev(np.ones(4)))


# ----------------------------------------------------------------------------- property tests
_PROP_UNARY = ["sqrt", "exp", "log1p", "abs", "sign", "round", "negative", "isnan", "tanh", "square",
               "floor", "signbit", "conj", "real", "imag", "bitwise_invert", "logical_not", "acos"]
_PROP_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "atan2",
                "maximum", "less", "equal", "bitwise_xor", "bitwise_left_shift", "logaddexp", "hypot",
                "copysign", "logical_or", "nextafter"]


@st.composite
def _strided(draw, dt, shape, fix=None):
    """(base, steps, pre-transpose shape, perm, view): ``view`` is a NumPy view of ``base``
    with ``shape``, made with steps +-1/+-2 and a transposition."""
    perm = draw(st.permutations(range(len(shape))))
    pre = [0] * len(shape)
    for i, p in enumerate(perm):
        pre[p] = shape[i]
    steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in pre]
    base_shape = tuple(n * abs(k) + draw(st.integers(0, 1)) for n, k in zip(pre, steps))
    base = _values(dt, base_shape, draw(st.integers(0, 2**16)))
    if fix is not None:
        base = fix(base)
    view = base[tuple(slice(None, None, k) for k in steps)][tuple(slice(0, n) for n in pre)]
    view = np.transpose(view, perm)
    assert view.shape == tuple(shape)
    return base, steps, tuple(pre), list(perm), view


def _device_view(base, steps, pre, perm):
    x = dev(base)
    x = x[tuple(slice(None, None, k) for k in steps)][tuple(slice(0, n) for n in pre)]
    return xp.permute_dims(x, tuple(perm)) if perm else x


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(_PROP_UNARY),
       shape=st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple))
def test_property_unary_any_layout(data, name, shape):
    dt = data.draw(st.sampled_from(dtypes_of(name)))
    base, steps, pre, perm, view = data.draw(_strided(dt, shape))
    got = getattr(xp, name)(_device_view(base, steps, pre, perm))
    check(name, got, reference(name, view), view)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(_PROP_BINARY),
       shape=st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple))
def test_property_binary_any_layout_and_broadcasting(data, name, shape):
    dt = data.draw(st.sampled_from(dtypes_of(name)))
    b1, s1, pre1, p1, v1 = data.draw(_strided(dt, shape))
    # the second operand: a trailing part of the shape, some dimensions set to 1
    k = data.draw(st.integers(0, len(shape)))
    shape2 = tuple(1 if data.draw(st.booleans()) else n for n in shape[len(shape) - k:])
    fix = (lambda b: np.abs(b % 8).astype(b.dtype)) if name == "pow" and dt.kind in "iu" else None
    b2, s2, pre2, p2, v2 = data.draw(_strided(dt, shape2, fix))
    swap = data.draw(st.booleans())
    x1, x2 = _device_view(b1, s1, pre1, p1), _device_view(b2, s2, pre2, p2)
    f = getattr(xp, name)
    if swap and fix is not None:
        swap = False
    got = f(x2, x1) if swap else f(x1, x2)
    a1, a2 = np.broadcast_arrays(v1, v2)
    ins = (a2, a1) if swap else (a1, a2)
    check(name, got, reference(name, *ins), *ins)
