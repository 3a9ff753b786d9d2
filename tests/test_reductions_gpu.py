"""GPU tier: statistical, searching and utility functions (sum prod max min mean std var
cumulative_sum cumulative_prod argmax argmin count_nonzero nonzero searchsorted where all
any diff) against NumPy: dtype matrix, axes (None, int, negative, tuples, ()), keepdims,
empty and 0-d inputs, NaN/inf, non-contiguous layouts, every engine strategy, accuracy.

Floating results are compared with a float64/complex128 NumPy reference and an error bound
of a few ulps of the sum of magnitudes (gparray accumulates float32 in double), integer
results exactly (both wrap).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gparray as xp

pytestmark = pytest.mark.gpu

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
REAL = ["bool"] + INTS + FLOATS
NUMERIC = ALL[1:]


def host(x):
    return np.asarray(x)


def sample(dtype, shape, seed=0, kind="normal"):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        lo, hi = (-3, 3) if kind == "prod" else (-100, 100)
        info = np.iinfo(dt)
        return rng.integers(max(info.min, lo), min(info.max, hi), shape, endpoint=True).astype(dt)
    if kind == "prod":
        a = rng.uniform(0.5, 1.5, shape)
        if dt.kind == "c":
            a = a * np.exp(1j * rng.uniform(-0.3, 0.3, shape))
    else:
        a = rng.standard_normal(shape) * 10
        if dt.kind == "c":
            a = a + 1j * rng.standard_normal(shape) * 10
    return a.astype(dt)


def sum_dtype(dt):
    dt = np.dtype(dt)
    if dt.kind in "bi":
        return np.dtype("int64")
    if dt.kind == "u":
        return np.dtype("uint64")
    return dt


def hi_dtype(dt):
    return np.dtype("complex128") if np.dtype(dt).kind == "c" else np.dtype("float64")


def assert_exact(got, expected):
    g = host(got)
    assert g.dtype == expected.dtype, (g.dtype, expected.dtype)
    assert g.shape == expected.shape, (g.shape, expected.shape)
    np.testing.assert_array_equal(g, expected)


def assert_close(got, ref, dtype, bound):
    """|got - ref| <= bound elementwise (NaN/inf must match); got must have ``dtype``."""
    g = host(got)
    assert g.dtype == np.dtype(dtype), (g.dtype, dtype)
    ref = np.asarray(ref)
    assert g.shape == ref.shape, (g.shape, ref.shape)
    g = g.astype(hi_dtype(dtype))
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), ref.shape)
    for part in ((lambda v: v.real), (lambda v: v.imag)) if g.dtype.kind == "c" else ((lambda v: v),):
        gp, rp = part(g), part(ref)
        finite = np.isfinite(rp)
        np.testing.assert_array_equal(np.isnan(gp), np.isnan(rp))
        np.testing.assert_array_equal(gp[np.isinf(rp)], rp[np.isinf(rp)])
        err = np.abs(gp[finite] - rp[finite])
        assert np.all(err <= bound[finite]), (err.max(), bound[finite][np.argmax(err - bound[finite])])


def eps(dtype):
    return float(np.finfo(np.dtype(dtype)).eps)


# ------------------------------------------------------------------------ shapes and axes
CASES = [
    ((), None), ((), ()), ((0,), None), ((7,), None), ((7,), 0), ((7,), -1),
    ((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -2), ((3, 4), (0, 1)), ((3, 4), ()),
    ((2, 3, 5), 1), ((2, 3, 5), (0, 2)), ((2, 3, 5), (-1, 0)), ((2, 3, 5), (1, 2)),
    ((4, 0, 3), 0), ((4, 0, 3), 1), ((4, 0, 3), None), ((37, 129), 0), ((37, 129), 1),
    ((2, 1, 3, 4), (1, 3)), ((5, 40), 1),
]
CASE_IDS = [f"{s}-{a}" for s, a in CASES]


def _axes(shape, axis):
    if axis is None:
        return tuple(range(len(shape)))
    if isinstance(axis, tuple):
        return tuple(a % len(shape) for a in axis)
    return (axis % len(shape),)


def _np_axis(axis):
    return axis


def _count(shape, axis):
    return int(np.prod([shape[i] for i in _axes(shape, axis)], dtype=np.int64))


# ------------------------------------------------------------------------ sum / prod / mean
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_sum_and_prod(dtype, case):
    shape, axis = CASES[case]
    keepdims = case % 2 == 1
    for fname, kind in (("sum", "normal"), ("prod", "prod")):
        a = sample(dtype, shape, seed=case, kind=kind)
        got = getattr(xp, fname)(xp.asarray(a), axis=axis, keepdims=keepdims)
        out_dt = sum_dtype(dtype)
        npf = getattr(np, fname)
        if out_dt.kind in "iub":
            assert_exact(got, npf(a, axis=_np_axis(axis), dtype=out_dt, keepdims=keepdims))
        else:
            ah = a.astype(hi_dtype(dtype))
            ref = npf(ah, axis=axis, keepdims=keepdims)
            if fname == "sum":
                bound = 8 * eps(dtype) * np.sum(np.abs(ah), axis=axis, keepdims=keepdims)
            else:
                bound = 8 * eps(dtype) * (_count(shape, axis) + 1) * np.abs(ref)
            assert_close(got, ref, dtype, bound)


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX + INTS)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_mean(dtype, case):
    shape, axis = CASES[case]
    keepdims = case % 2 == 0
    a = sample(dtype, shape, seed=case)
    got = xp.mean(xp.asarray(a), axis=axis, keepdims=keepdims)
    out_dt = np.dtype(dtype) if np.dtype(dtype).kind in "fc" else np.dtype("float64")
    ah = a.astype(hi_dtype(dtype))
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.mean(ah, axis=axis, keepdims=keepdims) if ah.size or _count(shape, axis) else \
            np.full(np.sum(ah, axis=axis, keepdims=keepdims).shape, np.nan, dtype=ah.dtype)
        if out_dt.kind == "c" and _count(shape, axis) == 0:
            ref = ref.real * (1 + 1j)  # NaN + NaN j (spec)
        bound = 8 * eps(out_dt) * np.mean(np.abs(ah), axis=axis, keepdims=keepdims)
    assert_close(got, ref, out_dt, np.nan_to_num(bound))


def test_float32_mean_is_its_rounded_sum_over_n():
    # NumPy, CuPy and PyTorch: mean(x) = sum(x) / n in float32, so a sum past float32's range
    # gives inf (SciPy's tests rely on it); the sum itself is still accumulated in float64
    big = np.finfo(np.float32).max
    for dtype in (np.float32, np.complex64):
        a = np.array([big, big, big], dtype=dtype)
        with np.errstate(over="ignore"):
            ref = np.mean(a)
        got = host(xp.mean(xp.asarray(a)))
        assert got.dtype == dtype and np.isinf(got.real) and got.real > 0, got
        assert_exact(xp.mean(xp.asarray(a.astype(np.float64 if dtype == np.float32 else np.complex128))),
                     np.mean(a.astype(np.float64 if dtype == np.float32 else np.complex128)))
        assert np.isinf(ref.real)
    # just under the range: no overflow, and the division is float32's (rounded sum / n)
    a = np.array([big / 2, big / 2, -1.0, 3.5], dtype=np.float32)
    want = np.float32(np.float32(np.sum(a.astype(np.float64))) / np.float32(4))
    assert_exact(xp.mean(xp.asarray(a)), want)
    # float16 divides in its compute type, as NumPy does: 65504 + 65504 does not overflow
    h = np.array([65504, 65504], dtype=np.float16)
    assert_exact(xp.mean(xp.asarray(h)), np.mean(h))


def test_sum_dtype_argument_casts_first():
    a = np.array([100, 100, 100], dtype=np.int64)
    assert_exact(xp.sum(xp.asarray(a), dtype=xp.int8), np.sum(a, dtype=np.int8))  # wraps
    f = np.array([1.5, 2.7, -0.5])
    assert_exact(xp.sum(xp.asarray(f), dtype=xp.int32), np.sum(f.astype(np.int32), dtype=np.int32))
    assert host(xp.sum(xp.asarray(f), dtype=xp.float32)).dtype == np.float32
    b = np.ones(300, dtype=bool)
    assert_exact(xp.sum(xp.asarray(b)), np.int64(300))
    assert_exact(xp.prod(xp.asarray(np.array([2, 3], np.uint8)), dtype=xp.uint8), np.uint8(6))
    c = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    assert_close(xp.sum(xp.asarray(c), dtype=xp.complex128), np.sum(c.astype(np.complex128)),
                 np.complex128, 1e-12)


def test_integer_overflow_wraps_like_numpy():
    a = np.array([2**62, 2**62, 2**62, 5], dtype=np.int64)
    assert_exact(xp.sum(xp.asarray(a)), np.sum(a))
    assert_exact(xp.prod(xp.asarray(a)), np.prod(a))
    u = np.array([2**63, 2**63, 7], dtype=np.uint64)
    assert_exact(xp.sum(xp.asarray(u)), np.sum(u))
    i32 = np.full(1000, 2**31 - 1, dtype=np.int32)
    assert_exact(xp.sum(xp.asarray(i32)), np.sum(i32, dtype=np.int64))  # no wrap in int64
    assert_exact(xp.cumulative_sum(xp.asarray(a)), np.cumsum(a))


def test_empty_reductions():
    e = xp.asarray(np.zeros((0,), np.float32))
    assert_exact(xp.sum(e), np.float32(0))
    assert_exact(xp.prod(e), np.float32(1))
    assert np.isnan(host(xp.mean(e)))
    assert np.isnan(host(xp.var(e))) and np.isnan(host(xp.std(e)))
    ci = xp.asarray(np.zeros((0,), np.int16))
    assert_exact(xp.sum(ci), np.int64(0))
    assert_exact(xp.prod(ci), np.int64(1))
    cm = host(xp.mean(xp.asarray(np.zeros((0,), np.complex64))))
    assert np.isnan(cm.real) and np.isnan(cm.imag)
    for f in (xp.max, xp.min, xp.argmax, xp.argmin):
        with pytest.raises(ValueError):
            f(e)
        with pytest.raises(ValueError):
            f(xp.asarray(np.zeros((3, 0))), axis=1)
    assert host(xp.max(xp.asarray(np.zeros((0, 3))), axis=1)).shape == (0,)
    assert_exact(xp.sum(xp.asarray(np.zeros((2, 0, 3))), axis=1), np.zeros((2, 3)))
    assert_exact(xp.count_nonzero(e), np.int64(0))
    assert_exact(xp.all(e), np.bool_(True))
    assert_exact(xp.any(e), np.bool_(False))


def test_nan_and_inf_propagate():
    a = np.array([1.0, np.nan, 3.0, np.inf, -2.0], dtype=np.float32)
    x = xp.asarray(a)
    for f in (xp.sum, xp.max, xp.min, xp.mean, xp.prod, xp.var, xp.std):
        assert np.isnan(host(f(x))), f.__name__
    b = np.array([1.0, np.inf, 3.0], dtype=np.float64)
    assert host(xp.sum(xp.asarray(b))) == np.inf
    assert host(xp.max(xp.asarray(b))) == np.inf
    assert np.isnan(host(xp.sum(xp.asarray(np.array([np.inf, -np.inf])))))
    m = np.array([[1.0, np.nan, 2.0], [3.0, 4.0, 5.0]])
    assert_exact(xp.max(xp.asarray(m), axis=1), np.max(m, axis=1))
    assert_exact(xp.min(xp.asarray(m), axis=0), np.min(m, axis=0))
    big = np.zeros(100000, np.float32)
    big[77777] = np.nan
    assert np.isnan(host(xp.max(xp.asarray(big)))) and np.isnan(host(xp.sum(xp.asarray(big))))


# ------------------------------------------------------------------------ max / min
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_max_min(dtype, case):
    shape, axis = CASES[case]
    keepdims = case % 2 == 1
    a = sample(dtype, shape, seed=case)
    x = xp.asarray(a)
    for fname in ("max", "min"):
        if _count(shape, axis) == 0 and np.prod(np.sum(a, axis=axis, keepdims=True).shape) > 0:
            with pytest.raises(ValueError):
                getattr(xp, fname)(x, axis=axis, keepdims=keepdims)
            continue
        ref = getattr(np, fname)(a, axis=axis, keepdims=keepdims) if a.size else \
            np.zeros(np.sum(a, axis=axis, keepdims=keepdims).shape, a.dtype)
        assert_exact(getattr(xp, fname)(x, axis=axis, keepdims=keepdims), np.asarray(ref))


def test_max_min_reject_complex():
    z = xp.asarray(np.ones(3, np.complex64))
    for f in (xp.max, xp.min, xp.argmax, xp.argmin):
        with pytest.raises(TypeError):
            f(z)


# ------------------------------------------------------------------------ var / std
@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
@pytest.mark.parametrize("correction", [0, 1, 2.5])
def test_var_std(dtype, case, correction):
    shape, axis = CASES[case]
    keepdims = case % 2 == 0
    a = sample(dtype, shape, seed=case)
    out_dt = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype("float64")
    ah = a.astype(np.float64)
    n = _count(shape, axis)
    dof = n - correction
    with np.errstate(invalid="ignore", divide="ignore"):
        if ah.size:
            ref = np.var(ah, axis=axis, ddof=0, keepdims=keepdims) * n / (dof if dof > 0 else 1)
        else:
            ref = np.zeros(np.sum(ah, axis=axis, keepdims=keepdims).shape)
    if dof <= 0:
        ref = np.full(np.shape(ref), np.nan)
    scale = np.mean(ah * ah, axis=axis, keepdims=keepdims) if ah.size and n else 0.0
    tol = 64 * eps(out_dt) * np.nan_to_num(scale) * max(n, 1) / (dof if dof > 0 else 1)
    x = xp.asarray(a)
    assert_close(xp.var(x, axis=axis, correction=correction, keepdims=keepdims), ref, out_dt, tol)
    ref_std = np.sqrt(ref)
    tol_std = np.sqrt(tol) + 16 * eps(out_dt) * np.nan_to_num(ref_std)
    assert_close(xp.std(x, axis=axis, correction=correction, keepdims=keepdims), ref_std, out_dt, tol_std)


def test_var_rejects_bool_and_complex():
    for dt in (np.bool_, np.complex64):
        with pytest.raises(TypeError):
            xp.var(xp.asarray(np.zeros(3, dt)))


# ------------------------------------------------------------------------ layouts
def _layouts(a):
    """(name, Array holding a's values with that layout)."""
    out = [("c", xp.asarray(a))]
    if a.ndim >= 2:
        t = xp.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
        out.append(("transposed", xp.matrix_transpose(t)))
    if a.ndim >= 1:
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype)
        big[..., 1::2] = a
        out.append(("step2", xp.asarray(big)[..., 1::2]))
        out.append(("flipped", xp.flip(xp.asarray(np.flip(a, axis=0)), axis=0)))
    return out


LAYOUT_CASES = [((6, 7), None), ((6, 7), 0), ((6, 7), 1), ((4, 5, 6), (0, 2)), ((4, 5, 6), 1),
                ((300, 70), 0), ((70, 300), 1), ((9,), 0)]


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex64", "bool"])
@pytest.mark.parametrize("shape,axis", LAYOUT_CASES)
def test_non_contiguous_inputs(dtype, shape, axis):
    a = sample(dtype, shape, seed=3)
    for name, x in _layouts(a):
        assert_exact(host(x), a)
        assert_exact(xp.sum(x, axis=axis), np.sum(a, axis=axis, dtype=sum_dtype(dtype))) \
            if np.dtype(dtype).kind in "biu" else \
            assert_close(xp.sum(x, axis=axis), np.sum(a.astype(hi_dtype(dtype)), axis=axis), dtype,
                         8 * eps(dtype) * np.sum(np.abs(a.astype(hi_dtype(dtype))), axis=axis))
        assert_exact(xp.count_nonzero(x, axis=axis), np.asarray(np.count_nonzero(a, axis=axis), np.int64))
        assert_exact(xp.any(x, axis=axis), np.any(a, axis=axis))
        if np.dtype(dtype).kind != "c":
            assert_exact(xp.max(x, axis=axis), np.max(a, axis=axis))
            if axis is None or isinstance(axis, int):
                assert_exact(xp.argmax(x, axis=axis), np.asarray(np.argmax(a, axis=axis), np.int64))
                assert_exact(xp.argmin(x, axis=axis), np.asarray(np.argmin(a, axis=axis), np.int64))


def test_broadcast_input():
    row = np.arange(1000, dtype=np.float32)
    x = xp.broadcast_to(xp.asarray(row), (300, 1000))
    ref = np.broadcast_to(row, (300, 1000)).astype(np.float64)
    for axis in (None, 0, 1):
        assert_close(xp.sum(x, axis=axis), np.sum(ref, axis=axis), np.float32,
                     8 * eps(np.float32) * np.sum(np.abs(ref), axis=axis))
    assert_exact(xp.argmax(x, axis=0), np.zeros(1000, np.int64))
    assert_exact(xp.argmax(x), np.int64(999))


# ------------------------------------------------------------------------ strategies at size
BIG_CASES = [((2**20,), None), ((8, 100000), 1), ((100000, 8), 0), ((3000, 1000), 1),
             ((1000, 3000), 1), ((1000, 3000), 0), ((1001, 3001), 0), ((3001, 7), 1),
             ((64, 50, 70), (0, 2)), ((64, 50, 70), 1), ((64, 50, 70), (0, 1)), ((2**17, 3), None)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape,axis", BIG_CASES, ids=[f"{s}-{a}" for s, a in BIG_CASES])
def test_every_strategy_at_size(dtype, shape, axis):
    a = sample(dtype, shape, seed=11)
    x = xp.asarray(a)
    if np.dtype(dtype).kind in "biu":
        assert_exact(xp.sum(x, axis=axis), np.sum(a, axis=axis, dtype=sum_dtype(dtype)))
    else:
        ah = a.astype(np.float64)
        n = _count(shape, axis)
        # float64 partial sums run sequentially per thread along tall reduced axes (outer
        # strategy): rounding error grows like sqrt(n) there, not like a full tree's log(n)
        k = max(8.0, float(np.sqrt(n))) if dtype == "float64" else 8.0
        assert_close(xp.sum(x, axis=axis), np.sum(ah, axis=axis), dtype,
                     k * eps(dtype) * np.sum(np.abs(ah), axis=axis))
        assert_close(xp.mean(x, axis=axis), np.mean(ah, axis=axis), dtype,
                     k * eps(dtype) * np.mean(np.abs(ah), axis=axis))
        assert_close(xp.var(x, axis=axis), np.var(ah, axis=axis), dtype,
                     8 * k * eps(dtype) * np.mean(ah * ah, axis=axis))
    assert_exact(xp.max(x, axis=axis), np.max(a, axis=axis))
    assert_exact(xp.min(x, axis=axis), np.min(a, axis=axis))
    assert_exact(xp.count_nonzero(x, axis=axis), np.asarray(np.count_nonzero(a, axis=axis), np.int64))
    assert_exact(xp.all(x, axis=axis), np.all(a, axis=axis))
    if axis is None or isinstance(axis, int):
        assert_exact(xp.argmax(x, axis=axis), np.asarray(np.argmax(a, axis=axis), np.int64))
        assert_exact(xp.argmin(x, axis=axis), np.asarray(np.argmin(a, axis=axis), np.int64))


def test_split_argmax_keeps_first_occurrence():
    a = np.zeros(2**21, np.float32)
    a[[5, 1000000, 2000000]] = 7.0
    assert int(host(xp.argmax(xp.asarray(a)))) == 5
    m = np.zeros((4, 300000), np.int8)
    m[:, [17, 250000]] = 3
    assert_exact(xp.argmax(xp.asarray(m), axis=1), np.full(4, 17, np.int64))
    c = np.zeros((300000, 4), np.float64)
    c[[9, 200000], :] = -1
    assert_exact(xp.argmin(xp.asarray(c), axis=0), np.full(4, 9, np.int64))


# ------------------------------------------------------------------------ accuracy
def _rel(got, ref):
    return abs(float(host(got)) - ref) / abs(ref)


def test_float32_sum_accuracy_2_24():
    a = np.random.default_rng(0).random(2**24, dtype=np.float32)
    ref = float(np.sum(a.astype(np.float64)))
    assert _rel(xp.sum(xp.asarray(a)), ref) <= 1e-6
    assert _rel(xp.mean(xp.asarray(a)), ref / a.size) <= 1e-6
    cs = host(xp.cumulative_sum(xp.asarray(a)))
    assert abs(float(cs[-1]) - ref) / ref <= 1e-6


def test_float32_sum_accuracy_2_28():
    a = np.random.default_rng(1).random(2**28, dtype=np.float32)
    ref = float(np.sum(a.astype(np.float64)))
    x = xp.asarray(a)
    del a
    assert _rel(xp.sum(x), ref) <= 1e-6


@pytest.mark.parametrize("dtype,shift", [("float64", 1e8), ("float32", 1e4)])
def test_var_with_a_large_mean(dtype, shift):
    rng = np.random.default_rng(2)
    a = (shift + rng.standard_normal(2**22)).astype(dtype)
    ref = float(np.var(a.astype(np.float64)))  # two-pass reference
    assert abs(ref - 1) < 0.01
    assert _rel(xp.var(xp.asarray(a)), ref) <= 1e-5
    assert _rel(xp.std(xp.asarray(a), correction=1), np.sqrt(ref * a.size / (a.size - 1))) <= 1e-5
    m = a.reshape(2**11, 2**11)
    got = host(xp.var(xp.asarray(m), axis=0))
    np.testing.assert_allclose(got, np.var(m.astype(np.float64), axis=0), rtol=1e-4)
    got = host(xp.var(xp.asarray(m), axis=1))
    np.testing.assert_allclose(got, np.var(m.astype(np.float64), axis=1), rtol=1e-4)


# ------------------------------------------------------------------------ argmax / argmin
ARG_CASES = [((7,), None), ((7,), 0), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 5), 1),
             ((2, 3, 5), None), ((), None), ((0, 4), 1), ((37, 129), 1)]


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("case", range(len(ARG_CASES)))
def test_argmax_argmin(dtype, case):
    shape, axis = ARG_CASES[case]
    a = sample(dtype, shape, seed=case)
    x = xp.asarray(a)
    for keepdims in (False, True):
        for fname in ("argmax", "argmin"):
            ref = np.asarray(getattr(np, fname)(a, axis=axis, keepdims=keepdims), dtype=np.int64)
            assert_exact(getattr(xp, fname)(x, axis=axis, keepdims=keepdims), ref)


def test_argmax_ties_and_nans():
    a = np.array([1.0, 3.0, 3.0, np.nan, 2.0, np.nan], np.float32)
    assert int(host(xp.argmax(xp.asarray(a)))) == 3
    assert int(host(xp.argmin(xp.asarray(a)))) == 3
    b = np.array([5, 1, 5, 1], np.int16)
    assert int(host(xp.argmax(xp.asarray(b)))) == 0 and int(host(xp.argmin(xp.asarray(b)))) == 1
    m = np.array([[np.nan, 1.0], [2.0, np.nan], [-np.inf, -np.inf]])
    assert_exact(xp.argmax(xp.asarray(m), axis=1), np.argmax(m, axis=1))
    assert_exact(xp.argmin(xp.asarray(m), axis=0), np.argmin(m, axis=0))
    s = np.array([-0.0, 0.0, -np.inf, np.inf, np.inf])
    assert int(host(xp.argmax(xp.asarray(s)))) == 3 and int(host(xp.argmin(xp.asarray(s)))) == 2


# ------------------------------------------------------------------------ count_nonzero / all / any
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASE_IDS)
def test_count_nonzero_all_any(dtype, case):
    shape, axis = CASES[case]
    keepdims = case % 2 == 1
    a = sample(dtype, shape, seed=case)
    if a.size:
        a.flat[:: 3] = 0
    x = xp.asarray(a)
    assert_exact(xp.count_nonzero(x, axis=axis, keepdims=keepdims),
                 np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims), np.int64))
    assert_exact(xp.all(x, axis=axis, keepdims=keepdims), np.asarray(np.all(a, axis=axis, keepdims=keepdims)))
    assert_exact(xp.any(x, axis=axis, keepdims=keepdims), np.asarray(np.any(a, axis=axis, keepdims=keepdims)))


def test_nonzero_counting_details():
    c = np.array([0j, 1j, 0j, -0.0 + 0j, 2 + 0j], np.complex64)
    assert int(host(xp.count_nonzero(xp.asarray(c)))) == 2
    f = np.array([0.0, -0.0, np.nan, 1e-300])
    assert int(host(xp.count_nonzero(xp.asarray(f)))) == 2
    assert bool(host(xp.all(xp.asarray(np.array([np.nan, 1.0])))))


# ------------------------------------------------------------------------ cumulative
CUM_CASES = [((7,), None), ((7,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 5), 1),
             ((0,), None), ((4, 0), 1), ((0, 4), 1), ((5000,), 0), ((3, 5000), 1), ((5000, 3), 0),
             ((40000, 2), 1), ((100, 300), 0)]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("case", range(len(CUM_CASES)))
def test_cumulative_sum_prod(dtype, case):
    shape, axis = CUM_CASES[case]
    ax = 0 if axis is None else axis
    for fname, npf, kind, ident in (("cumulative_sum", np.cumsum, "normal", 0),
                                    ("cumulative_prod", np.cumprod, "prod", 1)):
        if fname == "cumulative_prod" and max(shape, default=0) > 1000 and np.dtype(dtype).kind in "fc":
            continue  # long products under/overflow; covered by the sum
        a = sample(dtype, shape, seed=case, kind=kind)
        x = xp.asarray(a)
        out_dt = sum_dtype(dtype)
        for initial in (False, True):
            got = getattr(xp, fname)(x, axis=axis, include_initial=initial)
            if out_dt.kind in "biu":
                ref = npf(a, axis=ax, dtype=out_dt)
                if initial:
                    pad = np.full(a.shape[:ax % a.ndim] + (1,) + a.shape[ax % a.ndim + 1:], ident, out_dt)
                    ref = np.concatenate([pad, ref], axis=ax)
                assert_exact(got, ref)
            else:
                ah = a.astype(hi_dtype(dtype))
                ref = npf(ah, axis=ax)
                bound = 8 * eps(dtype) * (np.cumsum(np.abs(ah), axis=ax) if fname == "cumulative_sum"
                                          else np.abs(ref) * (np.arange(a.shape[ax % a.ndim]) + 2).reshape(
                                              (-1,) + (1,) * (a.ndim - 1 - ax % a.ndim)))
                if initial:
                    pad = np.full(a.shape[:ax % a.ndim] + (1,) + a.shape[ax % a.ndim + 1:], ident, ah.dtype)
                    ref = np.concatenate([pad, ref], axis=ax)
                    bound = np.concatenate([np.zeros(pad.shape), bound], axis=ax)
                assert_close(got, ref, dtype, bound)


def test_cumulative_large_and_strided():
    a = np.random.default_rng(4).standard_normal(2**22).astype(np.float32)
    got = host(xp.cumulative_sum(xp.asarray(a)))
    ref = np.cumsum(a.astype(np.float64))
    assert np.all(np.abs(got - ref) <= 8 * eps(np.float32) * np.cumsum(np.abs(a.astype(np.float64))) + 1e-6)
    i = np.random.default_rng(5).integers(-9, 9, 3 * 10**6).astype(np.int32)
    assert_exact(xp.cumulative_sum(xp.asarray(i)[::3]), np.cumsum(i[::3], dtype=np.int64))
    assert_exact(xp.cumulative_sum(xp.flip(xp.asarray(i))), np.cumsum(i[::-1], dtype=np.int64))
    m = i[: 600 * 5000].reshape(600, 5000)
    mt = xp.matrix_transpose(xp.asarray(np.ascontiguousarray(m.T)))
    assert_exact(xp.cumulative_sum(mt, axis=0), np.cumsum(m, axis=0, dtype=np.int64))
    assert_exact(xp.cumulative_sum(mt, axis=1, include_initial=True),
                 np.concatenate([np.zeros((600, 1), np.int64), np.cumsum(m, axis=1, dtype=np.int64)], axis=1))
    b = np.random.default_rng(6).integers(0, 2, 2**20).astype(bool)
    assert_exact(xp.cumulative_sum(xp.asarray(b)), np.cumsum(b, dtype=np.int64))
    assert_exact(xp.cumulative_sum(xp.asarray(b), dtype=xp.int8), np.cumsum(b, dtype=np.int8))


def _f32_cumsum_bound(a, axis=-1):
    return 8 * eps(np.float32) * np.cumsum(np.abs(a.astype(np.float64)), axis=axis) + 1e-6


def test_cumulative_many_tiles_and_lines():
    """Look-back scans over thousands of tiles, several lines (a tile never straddles two),
    partial last tiles, unaligned line starts (no vector access), include_initial, the
    16-byte-accumulator path (complex) and wrapping integer overflow."""
    rng = np.random.default_rng(11)
    # float32, one line of 2049 tiles (8192 each), the last one holding 17 elements
    a = rng.standard_normal(2**24 + 17).astype(np.float32)
    ref = np.cumsum(a.astype(np.float64))
    assert_close(xp.cumulative_sum(xp.asarray(a)), ref, np.float32, _f32_cumsum_bound(a))
    # the same with include_initial (output shifted by one: scalar stores) and from an
    # unaligned start (input shifted by one: scalar loads)
    got = xp.cumulative_sum(xp.asarray(a), include_initial=True)
    assert_close(got, np.concatenate([[0.0], ref]), np.float32,
                 np.concatenate([[0.0], _f32_cumsum_bound(a)]))
    assert_close(xp.cumulative_sum(xp.asarray(a)[1:]), np.cumsum(a[1:].astype(np.float64)), np.float32,
                 _f32_cumsum_bound(a[1:]))
    # int32 -> int64, 3 lines of 733 tiles; line 1 starts unaligned for 8-byte vectors
    i = rng.integers(-1000, 1000, (3, 3_000_001)).astype(np.int32)
    assert_exact(xp.cumulative_sum(xp.asarray(i), axis=1), np.cumsum(i, axis=1, dtype=np.int64))
    # float64, 5 lines, include_initial (out lines of L + 1)
    f = rng.standard_normal((5, 1_000_003))
    got = xp.cumulative_sum(xp.asarray(f), axis=1, include_initial=True)
    ref = np.concatenate([np.zeros((5, 1)), np.cumsum(f, axis=1)], axis=1)
    bound = np.concatenate([np.zeros((5, 1)), 8 * eps(np.float64) * np.cumsum(np.abs(f), axis=1)], axis=1)
    assert_close(got, ref, np.float64, bound)
    # complex128 and complex64: 16-byte accumulators (status words + value arrays)
    c = (rng.standard_normal(2**20 + 5) + 1j * rng.standard_normal(2**20 + 5))
    bound = 8 * eps(np.float64) * np.cumsum(np.abs(c))
    assert_close(xp.cumulative_sum(xp.asarray(c)), np.cumsum(c), np.complex128, bound)
    c64 = c.astype(np.complex64)
    assert_close(xp.cumulative_sum(xp.asarray(c64)), np.cumsum(c64.astype(np.complex128)), np.complex64,
                 8 * eps(np.float32) * np.cumsum(np.abs(c64.astype(np.complex128))) + 1e-6)
    # int64 / uint64 sums that wrap around (NumPy wraps the same way)
    big = rng.integers(2**61, 2**62, 3 * 2**20 + 7, dtype=np.int64)
    assert_exact(xp.cumulative_sum(xp.asarray(big)), np.cumsum(big))
    ubig = big.astype(np.uint64) * np.uint64(3)
    assert_exact(xp.cumulative_sum(xp.asarray(ubig)), np.cumsum(ubig))
    # a product over many tiles (wrapping int64), and a reversed (strided) float32 line
    p = rng.choice(np.array([1, -1, 3], np.int64), 2**20 + 3)
    assert_exact(xp.cumulative_prod(xp.asarray(p)), np.cumprod(p))
    r = a[: 2**22 + 3]
    assert_close(xp.cumulative_sum(xp.flip(xp.asarray(r))), np.cumsum(r[::-1].astype(np.float64)),
                 np.float32, _f32_cumsum_bound(r[::-1]))


def _ws_key(x, packed=True):
    from gparray._engine import _scan
    dev = x._device._id
    return (dev, _scan._stream_ptr(dev), packed)


def test_cumulative_lookback_repeated():
    """The same large scan many times, back to back without a host synchronization: one
    persistent workspace for the stream, reused by every call (the descriptors of earlier
    launches stay in it; only the epoch tells them apart)."""
    from gparray._engine import _scan
    a = np.random.default_rng(12).integers(-5, 5, 2**22 + 1).astype(np.int32)
    x = xp.asarray(a)
    ref = np.cumsum(a, dtype=np.int64)
    assert_exact(xp.cumulative_sum(x), ref)
    ws = _scan._workspaces[_ws_key(x)][1]
    outs = [xp.cumulative_sum(x) for _ in range(20)]
    for o in outs:
        assert_exact(o, ref)
    assert _scan._workspaces[_ws_key(x)][1] is ws


def test_cumulative_interleaved_sizes_leave_stale_descriptors():
    """Scans of different sizes and line structures one after another on one stream, no
    synchronization in between: a later, smaller scan finds the inclusive descriptors of a
    bigger earlier one (other epochs) in the slots of its own tiles and must ignore them."""
    rng = np.random.default_rng(21)
    big = rng.integers(-9, 9, 2**24 + 17).astype(np.int32)                 # 1 line, 4097 tiles
    lines = rng.integers(-9, 9, (3, 3_000_001)).astype(np.int32)             # 3 lines of 733 tiles
    small = rng.integers(-9, 9, 3 * 4096 + 5).astype(np.int32)               # 4 tiles
    f = rng.standard_normal((5, 100_003))                                    # float64, 5 lines of 25 tiles
    c = rng.standard_normal(2**20 + 3) + 1j * rng.standard_normal(2**20 + 3)  # complex128, 513 tiles
    c_small = c[:5000]
    xb, xl, xs, xf, xc, xcs = (xp.asarray(v) for v in (big, lines, small, f, c, c_small))
    plan = [("b", xb), ("s", xs), ("l", xl), ("c", xc), ("f", xf), ("s", xs), ("cs", xcs),
            ("b", xb), ("l", xl), ("cs", xcs), ("c", xc), ("s", xs)] * 2
    outs = []
    for name, x in plan:
        axis = 1 if name in ("l", "f") else -1
        outs.append((name, xp.cumulative_sum(x, axis=axis)))
    refs = {"b": np.cumsum(big, dtype=np.int64), "s": np.cumsum(small, dtype=np.int64),
            "l": np.cumsum(lines, axis=1, dtype=np.int64)}
    for name, o in outs:
        if name in refs:
            assert_exact(o, refs[name])
        elif name == "f":
            assert_close(o, np.cumsum(f, axis=1), np.float64, 8 * eps(np.float64) * np.cumsum(np.abs(f), axis=1))
        else:
            v = c if name == "c" else c_small
            assert_close(o, np.cumsum(v), np.complex128, 8 * eps(np.float64) * np.cumsum(np.abs(v)))


def test_cumulative_workspace_grows_while_older_kernels_run():
    """A scan that needs more tiles than the stream's workspace holds gets a bigger one; the
    old one goes back to the pool while the kernels that used it may still run, and memory
    allocated right after (possibly that block) is written in stream order."""
    from gparray._engine import _scan
    _scan.release_workspaces()
    rng = np.random.default_rng(22)
    n_big = (_scan.WS_MIN // 16 + 1) * 4096                                   # one tile more than WS_MIN holds
    small = rng.integers(-9, 9, 10_000).astype(np.int32)
    big = rng.integers(-9, 9, n_big).astype(np.int32)
    xs, xb = xp.asarray(small), xp.asarray(big)
    o1 = xp.cumulative_sum(xs)
    ws0 = _scan._workspaces[_ws_key(xs)][1]
    o2 = xp.cumulative_sum(xb)                                               # grows: new Block, zeroed
    ws1 = _scan._workspaces[_ws_key(xs)][1]
    assert ws1 is not ws0 and ws1.nbytes > ws0.nbytes
    del ws0
    fill = [xp.full((_scan.WS_MIN // 8,), 7, dtype=xp.int64) for _ in range(4)]  # may reuse the old block
    o3 = xp.cumulative_sum(xs)
    o4 = xp.cumulative_sum(xb)
    for o, ref in ((o1, small), (o2, big), (o3, small), (o4, big)):
        assert_exact(o, np.cumsum(ref, dtype=np.int64))
    for v in fill:
        assert_exact(v, np.full(_scan.WS_MIN // 8, 7, np.int64))
    assert _scan._workspaces[_ws_key(xs)][1] is ws1


def test_cumulative_streams_have_their_own_workspaces():
    """Scans in flight on several streams at once: one workspace per stream (a shared one
    would let concurrent launches overwrite each other's descriptors)."""
    import cupy as cp
    from gparray._engine import _scan
    rng = np.random.default_rng(23)
    a = rng.integers(-9, 9, 2**23 + 11).astype(np.int32)
    c = rng.standard_normal(2**19 + 1) + 1j * rng.standard_normal(2**19 + 1)
    x, xc = xp.asarray(a), xp.asarray(c)
    xp.cuda.synchronize()
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(4)]
    outs = []
    for _ in range(3):
        for s in streams:
            with s:
                outs.append((xp.cumulative_sum(x), xp.cumulative_sum(xc), xp.cumulative_sum(x[1:])))
    keys = set()
    for s in streams:
        s.synchronize()
        with s:
            keys.add(_ws_key(x))
            keys.add(_ws_key(x, packed=False))
    blocks = [_scan._workspaces[k][1].ptr for k in keys]
    assert len(keys) == 8 and len(set(blocks)) == 8
    default = _scan._workspaces.get(_ws_key(x))
    assert default is None or default[1].ptr not in blocks
    ref, ref1 = np.cumsum(a, dtype=np.int64), np.cumsum(a[1:], dtype=np.int64)
    for o, oc, o1 in outs:
        assert_exact(o, ref)
        assert_exact(o1, ref1)
        assert_close(oc, np.cumsum(c), np.complex128, 8 * eps(np.float64) * np.cumsum(np.abs(c)))


def test_cumulative_threads_share_a_stream():
    """Host threads scanning on the same (default) stream share its workspace, which grows
    meanwhile (it starts at WS_MIN; one input needs more); their launches may reach the
    stream in another order than their epochs."""
    import threading
    from gparray._engine import _scan
    rng = np.random.default_rng(24)
    sizes = (2**24 + 17, 5 * 4096 + 1, 2**20, 3 * 2**20 + 7)                  # the first: 4097 tiles
    data = [rng.integers(-9, 9, n).astype(np.int32) for n in sizes]
    xs = [xp.asarray(v) for v in data]
    refs = [np.cumsum(v, dtype=np.int64) for v in data]
    xp.cuda.synchronize()
    _scan.release_workspaces()
    errors = []
    barrier = threading.Barrier(4)

    def work(i):
        try:
            barrier.wait()
            outs = []
            for k in range(12):
                j = (i + k) % 4
                outs.append((j, xp.cumulative_sum(xs[j])))
            for j, o in outs:
                assert_exact(o, refs[j])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    assert _scan._workspaces[_ws_key(xs[0])][0] >= 16 * 4097


def test_cumulative_errors_and_dtype():
    m = xp.asarray(np.ones((2, 3)))
    for f in (xp.cumulative_sum, xp.cumulative_prod):
        with pytest.raises(ValueError):
            f(m)
        with pytest.raises(ValueError):
            f(xp.asarray(np.float32(1.0)))
    assert xp.cumulative_sum(xp.asarray(np.ones(3, np.uint16))).dtype == xp.uint64
    assert xp.cumulative_prod(xp.asarray(np.ones(3, np.float32))).dtype == xp.float32
    assert_exact(xp.cumulative_sum(xp.asarray(np.array([1.9, 2.9])), dtype=xp.int32), np.array([1, 3], np.int32))


# ------------------------------------------------------------------------ nonzero
NZ_SHAPES = [(1,), (9,), (3, 4), (2, 3, 4), (2, 1, 3, 2, 2), (0,), (3, 0), (5000,), (70, 300), (100001,)]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", NZ_SHAPES, ids=[str(s) for s in NZ_SHAPES])
def test_nonzero(dtype, shape):
    a = sample(dtype, shape, seed=len(shape))
    if a.size:
        a.flat[::2] = 0
    got = xp.nonzero(xp.asarray(a))
    ref = np.nonzero(a)
    assert isinstance(got, tuple) and len(got) == len(ref)
    for g, r in zip(got, ref):
        assert_exact(g, r.astype(np.int64))


def test_nonzero_special_cases():
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(np.float32(1)))
    z = np.zeros((4, 5))
    for g in xp.nonzero(xp.asarray(z)):
        assert host(g).shape == (0,) and g.dtype == xp.int64
    o = np.ones((30, 40), bool)
    for g, r in zip(xp.nonzero(xp.asarray(o)), np.nonzero(o)):
        assert_exact(g, r.astype(np.int64))
    a = sample("float32", (60, 70), seed=9)
    a[a < 5] = 0
    for name, x in _layouts(a):
        for g, r in zip(xp.nonzero(x), np.nonzero(a)):
            assert_exact(g, r.astype(np.int64))
    c = np.array([0j, 1j, 0, 3 + 0j], np.complex128)
    assert_exact(xp.nonzero(xp.asarray(c))[0], np.array([1, 3], np.int64))
    big = np.random.default_rng(7).random(2**22) < 0.3
    for g, r in zip(xp.nonzero(xp.asarray(big)), np.nonzero(big)):
        assert_exact(g, r.astype(np.int64))


# ------------------------------------------------------------------------ searchsorted
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(dtype, side):
    x1 = np.sort(sample(dtype, (50,), seed=1))
    x2 = np.concatenate([sample(dtype, (34,), seed=2), x1[::9]]).reshape(5, 8)
    got = xp.searchsorted(xp.asarray(x1), xp.asarray(x2), side=side)
    assert_exact(got, np.searchsorted(x1, x2, side=side).astype(np.int64))
    unsorted = sample(dtype, (40,), seed=3)
    sorter = np.argsort(unsorted, kind="stable")
    got = xp.searchsorted(xp.asarray(unsorted), xp.asarray(x2), side=side, sorter=xp.asarray(sorter))
    assert_exact(got, np.searchsorted(unsorted, x2, side=side, sorter=sorter).astype(np.int64))
    got = xp.searchsorted(xp.asarray(unsorted), xp.asarray(x2), side=side,
                          sorter=xp.asarray(sorter.astype(np.int32)))
    assert_exact(got, np.searchsorted(unsorted, x2, side=side, sorter=sorter).astype(np.int64))


def test_searchsorted_special_cases():
    x1 = np.array([-np.inf, -1.0, 0.0, 0.0, 2.5, np.inf, np.nan, np.nan])
    x2 = np.array([np.nan, -np.inf, 0.0, 3.0, np.inf, -5.0])
    for side in ("left", "right"):
        assert_exact(xp.searchsorted(xp.asarray(x1), xp.asarray(x2), side=side),
                     np.searchsorted(x1, x2, side=side).astype(np.int64))
    assert_exact(xp.searchsorted(xp.asarray(x1), 0.0), np.int64(2))
    assert_exact(xp.searchsorted(xp.asarray(np.array([1, 3, 5], np.int32)), 4), np.int64(2))
    assert_exact(xp.searchsorted(xp.asarray(np.array([1, 3, 5], np.int8)),
                                 xp.asarray(np.array([300], np.int16))), np.array([3], np.int64))
    strided = xp.asarray(np.arange(20.0))[::2]
    assert_exact(xp.searchsorted(strided, xp.asarray(np.array([5.0, 6.0]))), np.array([3, 3], np.int64))
    assert_exact(xp.searchsorted(xp.asarray(np.zeros(0)), xp.asarray(np.ones(3))), np.zeros(3, np.int64))
    assert host(xp.searchsorted(xp.asarray(x1), xp.asarray(np.zeros((2, 0))))).shape == (2, 0)
    with pytest.raises(ValueError):
        xp.searchsorted(xp.asarray(np.ones((2, 2))), xp.asarray(np.ones(2)))
    with pytest.raises(ValueError):
        xp.searchsorted(xp.asarray(x1), xp.asarray(x2), side="middle")
    big = np.sort(np.random.default_rng(8).standard_normal(10**6))
    needles = np.random.default_rng(9).standard_normal(10**5)
    assert_exact(xp.searchsorted(xp.asarray(big), xp.asarray(needles)),
                 np.searchsorted(big, needles).astype(np.int64))


# ------------------------------------------------------------------------ diff
@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
def test_diff(dtype):
    a = sample(dtype, (4, 6), seed=5)
    x = xp.asarray(a)
    for axis in (-1, 0, 1):
        for n in (0, 1, 2, 7):
            got = xp.diff(x, axis=axis, n=n)
            assert_exact(got, np.diff(a, axis=axis, n=n))
    p = sample(dtype, (4, 2), seed=6)
    q = sample(dtype, (4, 1), seed=7)
    assert_exact(xp.diff(x, axis=1, prepend=xp.asarray(p), append=xp.asarray(q)),
                 np.diff(a, axis=1, prepend=p, append=q))
    assert_exact(xp.diff(x, axis=0, n=2, append=xp.asarray(a[:1])), np.diff(a, axis=0, n=2, append=a[:1]))


def test_diff_errors_and_promotion():
    x = xp.asarray(np.arange(5, dtype=np.int8))
    got = xp.diff(x, prepend=xp.asarray(np.array([1000], np.int16)))
    assert_exact(got, np.diff(np.arange(5, dtype=np.int8).astype(np.int16), prepend=np.int16(1000)))
    with pytest.raises(ValueError):
        xp.diff(xp.asarray(np.float32(1)))
    with pytest.raises(ValueError):
        xp.diff(x, n=-1)
    with pytest.raises(ValueError):
        xp.diff(xp.asarray(np.ones((2, 3))), axis=1, append=xp.asarray(np.ones((3, 1))))
    assert_exact(xp.diff(xp.asarray(np.ones((2, 3)))[:, ::2]), np.zeros((2, 1)))


# ------------------------------------------------------------------------ where still works
def test_where_still_works():
    c = np.array([True, False, True])
    assert_exact(xp.where(xp.asarray(c), xp.asarray(np.ones(3)), 0.0), np.where(c, 1.0, 0.0))


# ------------------------------------------------------------------------ hypothesis vs NumPy
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=0, max_size=4), st.data())
def test_reductions_hypothesis(shape, data):
    shape = tuple(shape)
    a = sample("float64", shape, seed=len(shape))
    nd = len(shape)
    axes = data.draw(st.sets(st.integers(0, max(nd - 1, 0))) if nd else st.just(set()))
    axis = tuple(sorted(axes)) if data.draw(st.booleans()) else None
    keepdims = data.draw(st.booleans())
    x = xp.asarray(a)
    assert_close(xp.sum(x, axis=axis, keepdims=keepdims), np.sum(a, axis=axis, keepdims=keepdims),
                 np.float64, 16 * eps(np.float64) * np.sum(np.abs(a), axis=axis, keepdims=keepdims))
    if _count(shape, axis) and a.size:
        assert_exact(xp.max(x, axis=axis, keepdims=keepdims), np.max(a, axis=axis, keepdims=keepdims))
    i = (a * 3).astype(np.int32)
    assert_exact(xp.prod(xp.asarray(i), axis=axis, keepdims=keepdims),
                 np.prod(i, axis=axis, keepdims=keepdims, dtype=np.int64))


def test_repeat_calls_skip_the_checks_but_keep_the_semantics():
    from gparray._api import _statistical

    a = sample(np.float32, (37, 53), seed=3)
    x = xp.asarray(a)
    for _ in range(3):  # the first call checks and remembers, the others take the short path
        np.testing.assert_allclose(host(xp.sum(x, axis=1)), a.sum(axis=1, dtype=np.float64), rtol=1e-5)
        np.testing.assert_allclose(host(xp.mean(x)), a.mean(dtype=np.float64), rtol=1e-5)
        np.testing.assert_array_equal(host(xp.max(x, axis=-2)), a.max(axis=0))
        np.testing.assert_allclose(host(xp.cumulative_sum(x, axis=1)), np.cumsum(a, axis=1), rtol=1e-5, atol=1e-5)
    assert ("sum", x.dtype, (37, 53), 1) in _statistical._seen
    assert ("max", x.dtype, (37, 53), -2) in _statistical._seen
    # other arguments still take the checked path and its rules
    assert xp.sum(x, axis=1, keepdims=True).shape == (37, 1)
    assert xp.sum(x, axis=1, dtype=xp.float64).dtype == xp.float64
    assert xp.cumulative_sum(x, axis=1, include_initial=True).shape == (37, 54)
    e = xp.zeros((0, 3), dtype=xp.float32)
    assert xp.max(e, axis=1).shape == (0,)
    for _ in range(2):  # a failing call is never remembered
        with pytest.raises(ValueError, match="max"):
            xp.max(e, axis=0)
        with pytest.raises(TypeError, match="max"):
            xp.max(xp.asarray(np.ones(3, np.complex64)))
    with pytest.raises(IndexError, match="sum"):
        xp.sum(x, axis=2)
