"""GPU tier: the float16 extension dtype against NumPy.

astype between float16 and every dtype (bit for bit: NaN sign, +-inf, -0.0, overflow to
inf, subnormals, ties to even), host transfers, creation functions, arithmetic (computed in
float32 and rounded to float16, as NumPy does), Python scalars (rounded to float16 first),
comparisons, where, reductions and scans, DLPack/CuPy/PyTorch interop and non-contiguous
inputs. The elementwise suite (tests/test_elementwise_gpu.py) also runs every function of
the table on float16 through the categories.

Run on the device machine:  python -m pytest -q tests/test_float16_gpu.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gparray as xp
from gparray._core import _dtypes as _dt
from test_elementwise_tables import ALL_HALVES, _half_inputs, reference

pytestmark = pytest.mark.gpu

F16 = np.dtype("float16")
SUPPORTED = [np.dtype(d) for d in _dt._supported_dtypes]


def host(x):
    return np.asarray(x)


def same_halves(got, exp, nan_sign=True):
    """Bit-for-bit float16 equality; NaNs: same positions (and signs, for conversions and
    copies: arithmetic may give the GPU's canonical NaN, whose sign the spec leaves open)."""
    got, exp = host(got), np.asarray(exp)
    assert got.dtype == F16 and exp.dtype == F16 and got.shape == exp.shape, (got.dtype, exp.dtype)
    nan = np.isnan(exp)
    np.testing.assert_array_equal(np.isnan(got), nan)
    g, e = got.view(np.uint16), exp.view(np.uint16)
    bad = np.flatnonzero(~nan & (g != e))
    assert bad.size == 0, [(float(exp.flat[i]), float(got.flat[i])) for i in bad[:8]]
    if nan_sign:
        np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(exp[nan]))


def close16(got, exp, ulps=1):
    """float16 results within ``ulps`` units in the last place of NumPy's (NaN, inf exact)."""
    got, exp = host(got), np.asarray(exp)
    assert got.dtype == exp.dtype == F16 and got.shape == exp.shape, (got.dtype, exp.dtype)
    g, e = got.astype(np.float64), exp.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
    fin = np.isfinite(e)
    np.testing.assert_array_equal(g[~fin & ~np.isnan(e)], e[~fin & ~np.isnan(e)])
    tol = ulps * np.spacing(np.abs(exp[fin])).astype(np.float64)
    err = np.abs(g[fin] - e[fin])
    assert (err <= tol).all(), (g[fin][err > tol][:8], e[fin][err > tol][:8])


def quiet(f, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


def values16(n=1000, seed=0, scale=10.0):
    """Random float16 values of both signs, log-uniform magnitudes up to ``scale``."""
    rng = np.random.default_rng(seed)
    mag = np.exp(rng.uniform(-6, np.log(scale), n))
    return (mag * rng.choice([-1.0, 1.0], n)).astype(F16)


SPECIAL16 = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -2.5, 0.1, 65504.0, -65504.0, 6.1035e-05, 5.96e-08,
                      -5.96e-08, np.inf, -np.inf, np.nan, -np.nan, 1000.0, 2049.0], F16)


# ------------------------------------------------------------------------------ astype
def test_astype_float32_to_float16_every_rounding_case():
    x = _half_inputs(np.float32)           # every float16, every tie, near-ties, overflow, NaN
    same_halves(xp.astype(xp.asarray(x), xp.float16), quiet(x.astype, F16))


def test_astype_float16_to_float32_every_value():
    got = host(xp.astype(xp.asarray(ALL_HALVES), xp.float32))
    exp = ALL_HALVES.astype(np.float32)
    np.testing.assert_array_equal(got, exp)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(exp))   # -0.0 and NaN signs


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_astype_every_dtype_to_float16(dt):
    x = _half_inputs(dt)
    same_halves(xp.astype(xp.asarray(x), xp.float16), quiet(x.astype, F16))


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_astype_float16_to_every_dtype(dt):
    got = host(xp.astype(xp.asarray(ALL_HALVES), dt))
    exp = quiet(ALL_HALVES.astype, dt)
    assert got.dtype == dt
    if dt.kind in "iu":   # NaN, inf and out-of-range values follow the float32 -> integer rules
        v = ALL_HALVES.astype(np.float64)
        info = np.iinfo(dt)
        ok = np.isfinite(v) & (v >= info.min) & (v < float(info.max) + 1)
        np.testing.assert_array_equal(got[ok], exp[ok])
        f32 = host(xp.astype(xp.astype(xp.asarray(ALL_HALVES), xp.float32), dt))
        np.testing.assert_array_equal(got, f32)
    elif dt == F16:
        same_halves(got, exp)
    elif dt.kind in "fc":   # exact, -0.0 and NaN signs included
        np.testing.assert_array_equal(got, exp)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(exp.real))
    else:
        np.testing.assert_array_equal(got, exp)


def test_astype_large_misaligned_and_non_contiguous():
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(2**20 + 13) * 1000).astype(np.float32)
    x = xp.asarray(a)
    for sl in (slice(None), slice(1, None), slice(3, -5)):       # vector and tail paths, unaligned
        same_halves(xp.astype(x[sl], xp.float16), a[sl].astype(F16))
        h = a[sl].astype(F16)
        np.testing.assert_array_equal(host(xp.astype(xp.asarray(h), xp.float32)), h.astype(np.float32))
    m = a[: 600 * 1000].reshape(600, 1000)
    xm = xp.asarray(m)
    for v in (lambda t: t[::3], lambda t: t[:, ::-2], lambda t: t.T, lambda t: t[10:20, 5::7]):
        same_halves(xp.astype(v(xm), xp.float16), np.asarray(v(m)).astype(F16))
    h = m.astype(F16)
    xh = xp.asarray(h)
    for dst in (np.float32, np.float64, np.int32, np.complex64):
        exp = quiet(h.T[::2].astype, dst)
        np.testing.assert_array_equal(host(xp.astype(xh.T[::2], np.dtype(dst))), exp)


def test_astype_copy_semantics_and_round_trip():
    h = values16(100)
    x = xp.asarray(h)
    assert x.dtype == xp.float16 and host(x).dtype == F16
    same_halves(x, h)
    assert xp.astype(x, xp.float16, copy=False) is x
    y = xp.astype(x, xp.float16)
    assert y is not x
    same_halves(y, h)
    same_halves(xp.astype(xp.astype(x, xp.float64), xp.float16), h)   # exact both ways


# ------------------------------------------------------------------------------ host, creation
def test_host_transfers_and_scalars():
    same_halves(xp.asarray(SPECIAL16), SPECIAL16)
    z = xp.asarray(np.float16(1.5))
    assert z.shape == () and z.dtype == xp.float16 and float(z) == 1.5
    a = xp.asarray([0.1, 2, 70000.0], dtype=xp.float16)
    same_halves(a, quiet(np.asarray, [0.1, 2, 70000.0], F16))
    assert "dtype=float16" in repr(a)
    assert xp.asarray(a, dtype=xp.float32).dtype == xp.float32
    same_halves(xp.asarray(SPECIAL16.reshape(1, -1))[0, ::2], SPECIAL16[::2])
    assert bool(xp.asarray(np.float16(np.nan))) and not bool(xp.asarray(np.float16(-0.0)))
    assert int(xp.asarray(np.float16(-2.75))) == -2


def test_creation_functions():
    f16 = xp.float16
    for shape in ((), (0,), (7,), (3, 5)):
        assert xp.empty(shape, dtype=f16).dtype == f16
        same_halves(xp.zeros(shape, dtype=f16), np.zeros(shape, F16))
        same_halves(xp.ones(shape, dtype=f16), np.ones(shape, F16))
        for v in (0.1, -0.0, 65520.0, float("nan"), 3, True):
            same_halves(xp.full(shape, v, dtype=f16), quiet(np.full, shape, v, F16))
    x = xp.asarray(np.arange(6.0, dtype=F16).reshape(2, 3))
    for fn, ref in ((xp.zeros_like, np.zeros_like), (xp.ones_like, np.ones_like)):
        same_halves(fn(x), ref(host(x)))
    same_halves(xp.full_like(x, 2.5), np.full((2, 3), 2.5, F16))
    assert xp.empty_like(x).dtype == f16
    assert xp.zeros_like(xp.ones(3), dtype=f16).dtype == f16
    for args in ((10,), (0, 1, 0.1), (-3, 3, 0.25), (1, 2, 1 / 3), (100, 0, -7.5)):
        got, exp = xp.arange(*args, dtype=f16), np.arange(*args, dtype=F16)
        assert got.shape == exp.shape
        close16(got, exp)
    for endpoint in (True, False):
        close16(xp.linspace(0, 1, 11, dtype=f16, endpoint=endpoint),
                np.linspace(0, 1, 11, dtype=F16, endpoint=endpoint))
        close16(xp.linspace(-1000, 3, 257, dtype=f16, endpoint=endpoint),
                np.linspace(-1000, 3, 257, endpoint=endpoint).astype(F16))
    same_halves(xp.eye(3, 4, k=1, dtype=f16), np.eye(3, 4, k=1, dtype=F16))
    m = values16(20).reshape(4, 5)
    same_halves(xp.tril(xp.asarray(m), k=1), np.tril(m, k=1))
    same_halves(xp.triu(xp.asarray(m)), np.triu(m))


# ------------------------------------------------------------------------------ arithmetic
def test_arithmetic_matches_numpy():
    a, b = values16(3000, 1), values16(3000, 2)
    a[:19], b[-19:] = SPECIAL16, SPECIAL16
    x, y = xp.asarray(a), xp.asarray(b)
    # +, -, *, /, sqrt in float32 then rounded: exactly NumPy's float16 results
    with np.errstate(all="ignore"):
        pairs = ((x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b),
                 (xp.sqrt(xp.abs(x)), np.sqrt(np.abs(a))), (-x, -a), (xp.square(x), np.square(a)),
                 (xp.floor(x), np.floor(a)), (xp.round(x), np.round(a)), (xp.abs(x), np.abs(a)),
                 (xp.maximum(x, y), np.maximum(a, b)), (xp.copysign(x, y), np.copysign(a, b)),
                 (x // y, reference("floor_divide", a, b)), (x % y, np.remainder(a, b)))
    for got, exp in pairs:
        same_halves(got, exp, nan_sign=False)
    for f, g in ((xp.exp, np.exp), (xp.log, np.log), (xp.sin, np.sin), (xp.tanh, np.tanh),
                 (xp.expm1, np.expm1), (xp.log1p, np.log1p)):
        close16(f(x), quiet(g, a))
    close16(xp.pow(xp.abs(x), y), quiet(np.power, np.abs(a), b))
    close16(xp.atan2(x, y), np.arctan2(a, b))
    close16(xp.hypot(x, y), np.hypot(a, b))
    same_halves(xp.nextafter(x, y), np.where(a == b, b, np.nextafter(a, b)))
    same_halves(xp.nextafter(xp.asarray(np.float16(1.0)), xp.asarray(np.float16(2.0))),
                np.float16(1.0 + 2.0**-10))


def test_mixed_dtypes_and_scalars():
    a = values16(500, 3)
    x = xp.asarray(a)
    i8 = np.arange(-250, 250).astype(np.int8)
    i16 = np.arange(-250, 250).astype(np.int16)
    f32 = values16(500, 4).astype(np.float32) * np.float32(1.001)
    m = np.arange(500) % 3 == 0                     # a bool array with float16: NumPy's float16
    same_halves(xp.add(x, xp.asarray(m)), a + m)
    for other, rdt in ((i8, F16), (i16, np.float32), (f32, np.float32), (i16.astype(np.int32), np.float64)):
        got = xp.add(x, xp.asarray(other))
        exp = a + other
        assert got.dtype == rdt == exp.dtype
        if rdt == F16:
            same_halves(got, exp)
        else:
            np.testing.assert_array_equal(host(got), exp)
        np.testing.assert_array_equal(host(xp.multiply(xp.asarray(other), x)), other * a)
    # weak Python scalars: rounded to float16 first (x + 0.1 adds float16(0.1)), as NumPy
    for sc in (0.1, 3, -2.5, 1e-8, 70000, float("inf"), True):
        same_halves(x + sc, quiet(np.add, a, sc))
        same_halves(sc - x, quiet(np.subtract, sc, a))
        same_halves(x * sc, quiet(np.multiply, a, sc))
        np.testing.assert_array_equal(host(x < sc), quiet(np.less, a, sc))
        np.testing.assert_array_equal(host(x == sc), quiet(np.equal, a, sc))
    c = x + 1j
    assert c.dtype == xp.complex64
    np.testing.assert_array_equal(host(c), a + 1j)
    h = xp.asarray(np.array([0.1], F16))
    assert bool(h == 0.1) and not bool(h < 0.1)     # float16(0.1) == float16(0.1)
    y = xp.asarray(a)
    y += 1.5
    same_halves(y, a + np.float16(1.5))
    z, zr = xp.asarray(a), a.copy()
    z += xp.asarray(f32)                            # float32 into float16: 'same_kind', as NumPy
    zr += f32
    same_halves(z, zr)
    same_halves(x / 3, a / np.float16(3))
    np.testing.assert_array_equal(host(xp.divide(x, xp.asarray(i16))), quiet(np.divide, a, i16))


def test_comparisons_classification_and_errors():
    a = np.concatenate([SPECIAL16, values16(200, 5)])
    b = np.concatenate([SPECIAL16[::-1], values16(200, 6)])
    x, y = xp.asarray(a), xp.asarray(b)
    for f, g in ((xp.equal, np.equal), (xp.not_equal, np.not_equal), (xp.less, np.less),
                 (xp.less_equal, np.less_equal), (xp.greater, np.greater), (xp.greater_equal, np.greater_equal)):
        got = f(x, y)
        assert got.dtype == xp.bool
        np.testing.assert_array_equal(host(got), g(a, b))
    for f, g in ((xp.isnan, np.isnan), (xp.isinf, np.isinf), (xp.isfinite, np.isfinite),
                 (xp.signbit, np.signbit)):
        np.testing.assert_array_equal(host(f(x)), g(a))
    assert bool(xp.signbit(xp.asarray(np.array([-np.nan], F16)))[0])
    for name in ("bitwise_and", "bitwise_left_shift"):
        with pytest.raises(TypeError, match=f"^{name}: "):
            getattr(xp, name)(x, x)
    with pytest.raises(TypeError, match="^bitwise_invert: "):
        xp.bitwise_invert(x)


def test_where_clip_searchsorted_setitem():
    a, b = values16(300, 7), values16(300, 8)
    c = a > b
    x, y, cx = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    same_halves(xp.where(cx, x, y), np.where(c, a, b))
    same_halves(xp.where(cx, x, 0.1), np.where(c, a, np.float16(0.1)))
    got = xp.where(cx, x, xp.asarray(b.astype(np.float32)))
    assert got.dtype == xp.float32
    np.testing.assert_array_equal(host(got), np.where(c, a.astype(np.float32), b.astype(np.float32)))
    same_halves(xp.where(cx[::2], x[::2], y[::-2]), np.where(c[::2], a[::2], b[::-2]))
    same_halves(xp.clip(x, -1.5, 0.1), np.minimum(np.maximum(a, np.float16(-1.5)), np.float16(0.1)))
    same_halves(xp.clip(x, min=y), np.maximum(a, b))
    s = np.sort(a)
    for side in ("left", "right"):
        np.testing.assert_array_equal(host(xp.searchsorted(xp.asarray(s), y, side=side)),
                                      np.searchsorted(s, b, side=side))
        assert int(xp.searchsorted(xp.asarray(s), 0.1, side=side)) == np.searchsorted(s, np.float16(0.1), side=side)
    z = xp.asarray(a.copy())
    z[1:4] = 0.1
    z[10:13] = xp.asarray(np.array([1.0, 2.0, 70000.0], np.float32))
    exp = a.copy()
    exp[1:4] = 0.1
    exp[10:13] = quiet(np.asarray, [1.0, 2.0, 70000.0], F16)
    same_halves(z, exp)


# ------------------------------------------------------------------------------ reductions
def _ref64(f, a, axis=None):
    return f(a.astype(np.float64), axis=axis)


@pytest.mark.parametrize("shape, axis", [((1000,), None), ((2**20 + 7,), None), ((37, 129), 0), ((37, 129), 1),
                                         ((4, 50, 33), (0, 2)), ((3, 0), 0), ((2, 3, 4), ())])
def test_sum_mean_max_min(shape, axis):
    a = values16(int(np.prod(shape)), 9).reshape(shape)
    x = xp.asarray(a)
    for f, g in ((xp.sum, np.sum), (xp.mean, np.mean)):
        if f is xp.mean and 0 in shape:
            continue
        got = f(x, axis=axis)
        assert got.dtype == xp.float16
        # accumulated in double and rounded once: the float64 reference rounded to float16
        # (exact here: these sums are exact in double). NumPy's own float16 sums round along
        # the way (float32 pairwise, or float16 steps along strided axes), so not compared.
        same_halves(got, quiet(_ref64, g, a, axis).astype(F16))
    if 0 not in shape:
        for f, g in ((xp.max, np.max), (xp.min, np.min)):
            same_halves(f(x, axis=axis), g(a, axis=axis))
        if axis is None or isinstance(axis, int):
            np.testing.assert_array_equal(host(xp.argmax(x, axis=axis)), np.argmax(a, axis=axis))
            np.testing.assert_array_equal(host(xp.argmin(x, axis=axis)), np.argmin(a, axis=axis))


def test_reductions_special_values_strided_and_others():
    a = values16(4000, 10).reshape(40, 100)
    a[3, 7] = np.nan
    a[5, 1] = np.inf
    x = xp.asarray(a)
    for axis in (None, 0, 1):
        same_halves(xp.max(x, axis=axis), np.max(a, axis=axis))
        same_halves(xp.min(x, axis=axis), np.min(a, axis=axis))
        same_halves(xp.sum(x, axis=axis), quiet(_ref64, np.sum, a, axis).astype(F16), nan_sign=False)
    assert int(xp.argmax(x)) == np.argmax(a) == 307
    v = a[::3, ::-2]
    xv = x[::3, ::-2]
    for axis in (None, 0, 1):
        same_halves(xp.sum(xv, axis=axis), quiet(_ref64, np.sum, v, axis).astype(F16))
        same_halves(xp.max(xv, axis=axis), np.max(v, axis=axis))
    b = values16(500, 11)
    xb = xp.asarray(b)
    close16(xp.std(xb), np.std(b.astype(np.float64)).astype(F16))
    close16(xp.var(xb, correction=1), np.var(b.astype(np.float64), ddof=1).astype(F16))
    assert xp.std(xb).dtype == xp.float16
    same_halves(xp.prod(xp.asarray(np.array([1.5, -2, 0.25, 3], F16))), np.float16(-2.25))
    assert int(xp.count_nonzero(xp.asarray(SPECIAL16))) == np.count_nonzero(SPECIAL16)
    assert bool(xp.any(xp.asarray(SPECIAL16))) and not bool(xp.all(xp.asarray(SPECIAL16)))
    assert xp.sum(xb, dtype=xp.float32).dtype == xp.float32
    np.testing.assert_allclose(host(xp.sum(xb, dtype=xp.float32)), b.astype(np.float64).sum(), rtol=1e-6)
    assert xp.sum(xp.asarray(b.astype(np.float32)), dtype=xp.float16).dtype == xp.float16
    nz = xp.nonzero(xp.asarray(SPECIAL16))
    np.testing.assert_array_equal(host(nz[0]), np.nonzero(SPECIAL16)[0])


def test_cumulative_sum():
    rng = np.random.default_rng(12)
    a = rng.integers(-3, 4, (5, 3000)).astype(F16)       # partial sums stay exact in float16
    x = xp.asarray(a)
    for axis in (0, 1):
        got = xp.cumulative_sum(x, axis=axis)
        assert got.dtype == xp.float16
        same_halves(got, np.cumsum(a.astype(np.float64), axis=axis).astype(F16))
    same_halves(xp.cumulative_sum(x[0], include_initial=True),
                np.concatenate([[0], np.cumsum(a[0].astype(np.float64))]).astype(F16))
    c = xp.cumulative_prod(xp.asarray(np.array([1.5, 2, -0.5, 4], F16)))
    same_halves(c, np.array([1.5, 3, -1.5, -6], F16))


# ------------------------------------------------------------------------------ interop
def test_dlpack_and_cupy_round_trips():
    h = np.concatenate([SPECIAL16, values16(100, 13)])
    x = xp.asarray(h)
    assert x.__dlpack_device__() == (2, 0)
    same_halves(np.from_dlpack(x, device="cpu"), h)
    same_halves(xp.from_dlpack(x), h)
    cp = pytest.importorskip("cupy")
    c = cp.from_dlpack(x)
    assert c.dtype == cp.float16 and c.data.ptr == x._ptr
    same_halves(cp.asnumpy(c), h)
    c2 = cp.asarray(h)[::2]
    y = xp.from_dlpack(c2)
    assert y.dtype == xp.float16 and y._ptr == c2.data.ptr
    same_halves(y, h[::2])
    z = xp.asarray(c2)                                  # CuPy arrays wrap without a copy
    same_halves(z, h[::2])
    cai = x.__cuda_array_interface__
    assert cai["typestr"] == "<f2"
    same_halves(cp.asnumpy(cp.asarray(x)), h)
    same_halves(xp.from_dlpack(np.asarray(h)), h)       # host producer: copied
    torch = pytest.importorskip("torch")
    t = torch.from_dlpack(x)
    assert t.dtype == torch.float16 and t.data_ptr() == x._ptr
    back = xp.from_dlpack(torch.arange(6, dtype=torch.float16, device="cuda")[1::2])
    same_halves(back, np.arange(6, dtype=F16)[1::2])
