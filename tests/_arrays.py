"""Host-side helpers of the GPU tier: sample inputs and the exact comparison with NumPy."""
import numpy as np


def host(x):
    """A gparray (or any) array as a NumPy array (one download)."""
    return np.asarray(x)


def sample(dtype, shape=(3, 4), seed=0, specials=False):
    """Random values of ``dtype`` and ``shape`` (an ndarray also for shape ()): bools, integers
    in [-100, 100] within the dtype's range, floats and complexes of magnitude ~10;
    ``specials``: floating samples of 3 or more elements hold -0.0 (first) and NaN (third)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)
    a = rng.standard_normal(shape) * 10
    if dt.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = np.array(a, dtype=dt)
    flat = a.reshape(-1)
    if specials and flat.size >= 3:
        flat[0], flat[2] = -0.0, np.nan
    return a


def assert_same(got, expected, msg=""):
    """``got`` equals ``expected`` exactly: dtype, shape, values (NaN matches NaN) and, for
    floating dtypes, the sign of every zero."""
    g = host(got)
    expected = np.asarray(expected)
    assert g.dtype == expected.dtype, (msg, g.dtype, expected.dtype)
    assert g.shape == expected.shape, (msg, g.shape, expected.shape)
    np.testing.assert_array_equal(g, expected, err_msg=str(msg))
    if expected.dtype.kind in "fc":
        np.testing.assert_array_equal(np.signbit(g.real), np.signbit(expected.real), err_msg=str(msg))
