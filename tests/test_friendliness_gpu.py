"""GPU tier: linspace with 0-d Array bounds (and NumPy's samples bit for bit), the floating-point
functions on integer and bool arrays (computed in float64 inside the kernel), complex log1p near
z = -1, against NumPy."""
import numpy as np
import pytest

import gparray as xp

pytestmark = pytest.mark.gpu


def host(x):
    return np.asarray(x)


@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_with_0d_array_bounds(endpoint):
    for start, stop in [(np.float64(-2.5), np.float64(7.25)), (np.int64(3), np.float32(-1.5)),
                        (np.float16(0.5), np.int32(9))]:
        got = xp.linspace(xp.asarray(start), xp.asarray(stop), 11, endpoint=endpoint)
        exp = np.linspace(float(start), float(stop), 11, endpoint=endpoint)
        assert got.dtype == xp.float64
        np.testing.assert_allclose(host(got), exp, rtol=1e-12, atol=1e-12)
        mixed = xp.linspace(xp.asarray(start), float(stop), 5, endpoint=endpoint, dtype=xp.float32)
        np.testing.assert_allclose(host(mixed), np.linspace(float(start), float(stop), 5, endpoint=endpoint,
                                                            dtype=np.float32), rtol=1e-6, atol=1e-6)
    c = xp.linspace(xp.asarray(1 + 2j), xp.asarray(-3 - 1j), 7, endpoint=endpoint)
    assert c.dtype == xp.complex128
    np.testing.assert_allclose(host(c), np.linspace(1 + 2j, -3 - 1j, 7, endpoint=endpoint), rtol=1e-12)
    x = xp.asarray(4.0)
    assert xp.linspace(x, 8.0, 3).device == x.device
    with pytest.raises(ValueError, match="^linspace: start and stop must be numbers or 0-d arrays"):
        xp.linspace(xp.asarray([0.0]), 1.0, 3)


@pytest.mark.parametrize("num", [1, 2, 11, 257, 1000])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_is_numpys_bit_for_bit(num, endpoint):
    """The samples equal NumPy's exactly (SciPy's histograms compare values to these edges):
    float32 bounds are computed in float32, Python numbers in float64, without FMA."""
    rng = np.random.default_rng(num)
    for _ in range(5):
        lo, hi = np.sort(rng.standard_normal(2) * 10.0 ** rng.integers(-3, 4))
        for a, b, dtype in [(np.float32(lo), np.float32(hi), None), (np.float32(lo), np.float32(hi), "float64"),
                            (np.float32(lo), float(hi), "float32"), (float(lo), float(hi), None),
                            (float(lo), float(hi), "float32")]:
            exp = np.linspace(np.asarray(a), np.asarray(b) if isinstance(b, np.generic) else b, num,
                              endpoint=endpoint, dtype=dtype or np.float64)
            bounds = [xp.asarray(v) if isinstance(v, np.generic) else v for v in (a, b)]
            got = host(xp.linspace(*bounds, num, endpoint=endpoint, dtype=getattr(xp, dtype) if dtype else None))
            assert got.dtype == exp.dtype
            np.testing.assert_array_equal(got, exp)


INT_DTYPES = ["int64", "int32", "uint8", "int8", "uint64", "bool"]


def _ints(dtype, shape=(6, 7), seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)
    a.flat[:3] = [0, 1, info.max]
    return a


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "atanh", "log1p"])
def test_floating_functions_of_integer_arrays(name, dtype):
    a = _ints(dtype)
    x = xp.asarray(a)
    f = getattr(xp, name)
    with np.errstate(all="ignore"):
        exp = getattr(np, {"atanh": "arctanh"}.get(name, name))(a.astype(np.float64))
    for _ in range(2):  # the second call takes the learnt fast path
        got = f(x)
        assert got.dtype == xp.float64 and got.shape == a.shape
        np.testing.assert_allclose(host(got), exp, rtol=1e-13, equal_nan=True)
    # a strided view and a transposed one (the strided and 2-d kernels)
    np.testing.assert_allclose(host(f(x[::2, 1::3])), exp[::2, 1::3], rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(host(f(x.T)), exp.T, rtol=1e-13, equal_nan=True)
    if np.dtype(dtype).itemsize >= 4 and dtype != "bool":  # NumPy's own result dtype agrees here
        with np.errstate(all="ignore"):
            assert getattr(np, {"atanh": "arctanh"}.get(name, name))(a).dtype == np.float64


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_real_binary_floating_functions_of_integer_arrays(dtype):
    a, b = _ints(dtype, seed=1), _ints(dtype, seed=2)
    x, y = xp.asarray(a), xp.asarray(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for name, ref in [("atan2", np.arctan2), ("hypot", np.hypot), ("logaddexp", np.logaddexp),
                      ("copysign", np.copysign)]:
        f = getattr(xp, name)
        got = f(x, y)
        assert got.dtype == xp.float64, name
        np.testing.assert_allclose(host(got), ref(a64, b64), rtol=1e-13)
        np.testing.assert_allclose(host(f(x, 2.5)), ref(a64, 2.5), rtol=1e-13)      # a Python float
        np.testing.assert_allclose(host(f(3, x)), ref(3.0, a64), rtol=1e-13)       # a Python int
        np.testing.assert_allclose(host(f(x, xp.asarray(b.astype(np.float32)))),  # promoted with float32
                                   ref(a64, b64) if np.dtype(dtype).itemsize >= 4 and dtype != "bool"
                                   else ref(a.astype(np.float32), b.astype(np.float32)).astype(np.float64),
                                   rtol=1e-6)


def test_complex_inputs_of_the_real_binary_functions_still_raise():
    z = xp.asarray(np.ones(3, np.complex64))
    i = xp.asarray(np.ones(3, np.int64))
    for name in ("atan2", "hypot", "logaddexp", "copysign"):
        with pytest.raises(TypeError, match=f"^{name}: "):
            getattr(xp, name)(z, i)


def test_complex_log1p_near_minus_one():
    """log1p(z) with 1 + z tiny (SciPy's complex logsumexp takes log1p(-e^d) with d ~ 1e-5):
    relative error a few ulp, not 1e-16 / |1 + z|^2."""
    rng = np.random.default_rng(3)
    d = 10.0 ** rng.uniform(-12, -1, 2000)
    x = -1.0 + d * rng.choice([-1.0, 1.0], d.size)         # 1 + x is exact here
    y = d * rng.uniform(-1.0, 1.0, d.size) * 1e-3
    z = x + 1j * y
    exp = np.log(np.hypot(1.0 + x, y)) + 1j * np.arctan2(y, 1.0 + x)
    got = np.asarray(xp.log1p(xp.asarray(z)))
    assert np.max(np.abs(got.real - exp.real) / np.abs(exp.real)) < 1e-15
    np.testing.assert_allclose(got.imag, exp.imag, rtol=1e-15)
    # still accurate near |1 + z| = 1 and for small |z|
    w = (1e-9 * rng.standard_normal(500)) * (1 + 1j)
    np.testing.assert_allclose(np.asarray(xp.log1p(xp.asarray(w))), w - w * w / 2, rtol=1e-12)
