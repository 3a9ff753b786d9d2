"""CPU tier: the NaN-skipping reductions (gparray/_api/_nan_functions.py) run their algorithms
with NumPy as the namespace and must agree with NumPy's own nan-functions: dtypes, axes
(None, int, negative, tuples), keepdims, slices of NaNs only, ddof/correction. The GPU
tier (tests/test_nan_functions_gpu.py) checks the same on gparray arrays."""
import warnings

import numpy as np
import pytest

import gparray as xp
from gparray._api import _nan_functions as nf

AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]
FLOATS = ["float32", "float64"]


def data(dtype, shape=(4, 5, 3), seed=0, nan_rows=True):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -20, 20, shape).astype(dt)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dt.kind == "c" else 0)
    a = a.astype(dt)
    a[rng.random(shape) < 0.3] = np.nan
    if nan_rows:
        a[1] = np.nan                     # slices of NaNs only along axes 1 and 2
        a[:, 2, :] = np.nan
    return a


def close(got, expected, dtype):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    tol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)


def quiet(f, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kwargs)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", FLOATS + ["complex128", "int32", "bool"])
def test_nansum_nanprod_nanmean_match_numpy(dtype, axis, keepdims):
    a = data(dtype)
    close(nf._sum_or_prod(np, "sum", a, axis, None, keepdims), np.nansum(a, axis=axis, keepdims=keepdims), dtype)
    b = data(dtype, seed=1) if np.dtype(dtype).kind in "fc" else a
    if np.dtype(dtype).kind in "fc":
        b = np.where(np.isnan(b), b, 1 + 0.1 * b)   # products of numbers near 1
    close(nf._sum_or_prod(np, "prod", b, axis, None, keepdims), np.nanprod(b, axis=axis, keepdims=keepdims), dtype)
    close(quiet(nf._nanmean, np, a, axis, None, keepdims), quiet(np.nanmean, a, axis=axis, keepdims=keepdims), dtype)


def test_nanmean_dtype_and_all_nan():
    a = data("float32")
    close(quiet(nf._nanmean, np, a, 0, np.float64, False), quiet(np.nanmean, a, axis=0, dtype=np.float64), "float64")
    r = quiet(nf._nanmean, np, a, 2, None, False)
    assert np.isnan(r[1]).all() and np.isnan(r[:, 2]).all() and not np.isnan(r[0, 0])
    assert np.isnan(quiet(nf._nanmean, np, np.full(3, np.nan), None, None, False))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", FLOATS + ["int16", "uint8"])
def test_nanmax_nanmin_match_numpy(op, dtype, axis, keepdims):
    a = data(dtype)
    if np.dtype(dtype).kind == "f":
        a[0, 0, 0], a[0, 1, 0] = -np.inf, np.inf
    expected = quiet(getattr(np, "nan" + op), a, axis=axis, keepdims=keepdims)
    close(quiet(nf._nanextreme, np, op, a, axis, keepdims), expected, dtype)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("correction", [0, 1, 2.5])
@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
def test_nanvar_matches_numpy(dtype, axis, keepdims, correction):
    a = data(dtype)
    got = quiet(nf._nanvar, np, a, axis, None, correction, keepdims)
    close(got, quiet(np.nanvar, a, axis=axis, ddof=correction, keepdims=keepdims), dtype)


def test_nanvar_dtype_converts_first():
    a = data("float32")
    close(quiet(nf._nanvar, np, a, 1, np.float64, 1, False), quiet(np.nanvar, a.astype(np.float64), axis=1, ddof=1),
          "float64")
    # N - correction <= 0 is NaN (every column of 4 has at most 3 numbers after the NaN row)
    r = quiet(nf._nanvar, np, a, 0, None, 4, False)
    assert np.isnan(r).all()


def test_correction_and_ddof():
    assert nf._correction(0.0, None, "nanvar") == 0.0
    assert nf._correction(1.5, None, "nanvar") == 1.5
    assert nf._correction(0.0, 1, "nanvar") == 1
    with pytest.raises(ValueError, match="^nanvar: give correction or ddof"):
        nf._correction(1.0, 1, "nanvar")


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"])
def test_public_names_check_their_input(name):
    assert name in xp.__all__ and name in nf.__all__
    with pytest.raises(TypeError, match=f"^{name}: expected a gparray Array, got ndarray"):
        getattr(xp, name)(np.ones(3))
