"""GPU tier: the NaN-skipping reductions (extension: nansum nanprod nanmean nanmax nanmin
nanvar nanstd) on gparray arrays against NumPy's: dtypes, axes, keepdims, slices of NaNs
only, strided input, ddof/correction, and no host copy on the way (the result is a gparray
Array computed on the device)."""
import warnings

import numpy as np
import pytest

import gparray as xp

pytestmark = pytest.mark.gpu

AXES = [None, 0, -1, (0, 2)]


def data(dtype, shape=(6, 7, 5), seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -20, 20, shape).astype(dt)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dt.kind == "c" else 0)
    a = a.astype(dt)
    a[rng.random(shape) < 0.3] = np.nan
    a[1] = np.nan            # slices of NaNs only along the last two axes
    a[:, 2, :] = np.nan
    return a


def ref(f, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(f(*args, **kwargs))


def check(got, expected):
    assert isinstance(got, xp.Array), type(got)
    g = np.asarray(got)
    assert g.shape == expected.shape and g.dtype == expected.dtype, (g.shape, g.dtype, expected.shape, expected.dtype)
    tol = 2e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(g, expected, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int32", "bool"])
def test_nansum_nanmean_nanprod(dtype, axis, keepdims):
    a = data(dtype)
    x = xp.asarray(a)
    check(xp.nansum(x, axis=axis, keepdims=keepdims), ref(np.nansum, a, axis=axis, keepdims=keepdims))
    check(xp.nanmean(x, axis=axis, keepdims=keepdims), ref(np.nanmean, a, axis=axis, keepdims=keepdims))
    b = np.where(np.isnan(a), a, 1 + 0.05 * a) if a.dtype.kind in "fc" else a
    check(xp.nanprod(xp.asarray(b), axis=axis, keepdims=keepdims), ref(np.nanprod, b, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_nanmax_nanmin(dtype, axis, keepdims):
    a = data(dtype)
    if a.dtype.kind == "f":
        a[0, 0, 0], a[0, 1, 0] = -np.inf, np.inf
    x = xp.asarray(a)
    check(xp.nanmax(x, axis=axis, keepdims=keepdims), ref(np.nanmax, a, axis=axis, keepdims=keepdims))
    check(xp.nanmin(x, axis=axis, keepdims=keepdims), ref(np.nanmin, a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_nanvar_nanstd(dtype, axis, ddof):
    a = data(dtype)
    x = xp.asarray(a)
    check(xp.nanvar(x, axis=axis, ddof=ddof), ref(np.nanvar, a, axis=axis, ddof=ddof))
    check(xp.nanstd(x, axis=axis, correction=ddof, keepdims=True), ref(np.nanstd, a, axis=axis, ddof=ddof, keepdims=True))


def test_strided_input_dtype_argument_and_errors():
    a = data("float32", (8, 9, 6))
    x = xp.asarray(a)[::2, 1::2, ::-1]
    v = a[::2, 1::2, ::-1]
    check(xp.nanmean(x, axis=1), ref(np.nanmean, v, axis=1))
    check(xp.nanmean(x, axis=0, dtype=xp.float64), ref(np.nanmean, v, axis=0, dtype=np.float64))
    check(xp.nanvar(x, axis=2, dtype=xp.float64), ref(np.nanvar, v.astype(np.float64), axis=2))
    check(xp.nanmax(xp.asarray(a).mT, axis=-1), ref(np.nanmax, np.swapaxes(a, -1, -2), axis=-1))
    with pytest.raises(ValueError, match="^nanvar: give correction or ddof"):
        xp.nanvar(x, correction=1, ddof=1)
    with pytest.raises(TypeError):
        xp.nanmax(xp.asarray(data("complex64")))


def test_no_host_copy():
    a = data("float64")
    x = xp.asarray(a)
    with xp.cuda.host_conversion("raise"):
        outs = [xp.nanmean(x, axis=0), xp.nanmax(x, axis=(1, 2)), xp.nanstd(x, ddof=1), xp.nansum(x),
                xp.nanprod(x, axis=1), xp.nanvar(x, axis=-1), xp.nanmin(x)]
    assert all(isinstance(o, xp.Array) for o in outs)
    check(outs[0], ref(np.nanmean, a, axis=0))
    check(outs[2], ref(np.nanstd, a, ddof=1))
