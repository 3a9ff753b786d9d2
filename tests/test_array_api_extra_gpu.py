"""GPU tier: array-api-extra's ``at`` on gparray arrays.

``array_api_extra.at(x, idx).set(v)`` (and ``.add``, ``.subtract``, ``.multiply``,
``.divide``, ``.power``, ``.min``, ``.max``) is how SciPy and scikit-learn write
``x[idx] = v`` / ``x[idx] += v`` for every namespace: on a writeable array (array-api-compat's
``is_writeable_array``, True for gparray) it updates ``x`` in place with ``__setitem__`` and
returns ``x`` itself; with ``copy=True`` it leaves ``x`` alone and returns an updated copy.
Checked here with basic, boolean-mask and integer-array indices against the same update in
NumPy, under the host conversion mode "raise" (no ``numpy.asarray`` of a gparray Array on
the way).

Skipped, with the reason, when array-api-extra is not installed: ``python3
tools/test_site.py`` installs the carried wheel (.vendor/array_api_extra-*.whl, and
array-api-compat, which it needs).
"""
import importlib.util

import numpy as np
import pytest

import gparray as xp

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("array_api_extra") is None,
                       reason="array-api-extra is not installed (python3 tools/test_site.py installs "
                              ".vendor/array_api_extra-*.whl)"),
]

SHAPE = (6, 5)


@pytest.fixture
def xpx():
    import array_api_extra

    return array_api_extra


def on_device():
    """gparray's host conversion mode "raise" (``numpy.asarray(x)`` is a TypeError) for the
    block: an update must not go through NumPy."""
    return xp.cuda.host_conversion("raise")


def host(x):
    return np.asarray(x)


def start(dtype):
    rng = np.random.default_rng(7)
    a = rng.uniform(1, 9, SHAPE) if np.dtype(dtype).kind == "f" else rng.integers(1, 9, SHAPE)
    return a.astype(dtype)


def indices():
    """(id, index) pairs over SHAPE: basic, boolean mask, integer arrays (NumPy arrays here;
    ``on_gpu`` turns them into gparray arrays inside the tests)."""
    rng = np.random.default_rng(3)
    mask = rng.random(SHAPE) < 0.4
    rows = np.array([4, 0, 2])             # no repeats: one update per element
    cols = np.array([1, 3, 4])
    return [
        ("int", 2),
        ("slice", slice(1, 5, 2)),
        ("tuple", (slice(None), 3)),
        ("ellipsis", (Ellipsis, slice(2, None))),
        ("bool mask", mask),
        ("bool rows", mask[:, 0]),
        ("int array", rows),
        ("int arrays", (rows, cols)),
        ("int array and slice", (rows, slice(1, 4))),
    ]


def on_gpu(idx):
    if isinstance(idx, tuple):
        return tuple(on_gpu(i) for i in idx)
    return xp.asarray(idx) if isinstance(idx, np.ndarray) else idx


IDS = [i[0] for i in indices()]


def index(which):
    """(gparray index, NumPy index) of ``indices()[which]``."""
    nidx = indices()[which][1]
    return on_gpu(nidx), nidx


OPS = {   # method -> the NumPy update
    "set": lambda a, k, v: a.__setitem__(k, v),
    "add": lambda a, k, v: a.__setitem__(k, a[k] + v),
    "subtract": lambda a, k, v: a.__setitem__(k, a[k] - v),
    "multiply": lambda a, k, v: a.__setitem__(k, a[k] * v),
    "divide": lambda a, k, v: a.__setitem__(k, a[k] / v),
    "power": lambda a, k, v: a.__setitem__(k, a[k] ** v),
    "min": lambda a, k, v: a.__setitem__(k, np.minimum(a[k], v)),
    "max": lambda a, k, v: a.__setitem__(k, np.maximum(a[k], v)),
}


@pytest.mark.parametrize("which", range(len(IDS)), ids=IDS)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_at_updates_in_place(xpx, op, which, dtype):
    gidx, nidx = index(which)
    a = start(dtype)
    x = xp.asarray(a)
    value = 3 if dtype == "int32" else 2.5
    if dtype == "int32" and op == "divide":
        # true division of an int array in place is not defined: NumPy and gparray raise
        with pytest.raises(TypeError):
            np.divide(a[nidx], value, out=a[nidx].copy(), casting="same_kind")
        with on_device(), pytest.raises(TypeError):
            xpx.at(x, gidx).divide(value)
        np.testing.assert_array_equal(host(x), a)      # nothing was written
        return
    with on_device():
        out = getattr(xpx.at(x, gidx), op)(value)
    assert out is x, "at(...) with copy=None must update a gparray array in place and return it"
    expected = a.copy()
    OPS[op](expected, nidx, value)
    np.testing.assert_allclose(host(x), expected, rtol=1e-6 if dtype == "float32" else 1e-15)
    assert x.dtype == xp.asarray(a).dtype


@pytest.mark.parametrize("which", range(len(IDS)), ids=IDS)
def test_at_array_values_and_copy(xpx, which):
    gidx, nidx = index(which)
    a = start("float64")
    sub = a[nidx]
    # an array value of the indexed shape, as in x[idx] = y
    y = np.arange(1, sub.size + 1, dtype=np.float64).reshape(sub.shape) if np.ndim(sub) else np.float64(7)
    x, yy = xp.asarray(a), xp.asarray(y)
    with on_device():
        assert xpx.at(x, gidx).set(yy) is x
    expected = a.copy()
    expected[nidx] = y
    np.testing.assert_array_equal(host(x), expected)
    # at(x)[idx] is the same as at(x, idx)
    with on_device():
        assert xpx.at(x)[gidx].add(yy) is x
    expected[nidx] += y
    np.testing.assert_array_equal(host(x), expected)
    # copy=True: x is left alone, the result is a new updated array
    before = host(x)
    with on_device():
        r = xpx.at(x, gidx).multiply(2.0, copy=True)
    assert r is not x and isinstance(r, xp.Array)
    np.testing.assert_array_equal(host(x), before)
    want = before.copy()
    want[nidx] *= 2.0
    np.testing.assert_array_equal(host(r), want)


def test_at_views_share_the_update(xpx):
    # an update through at() on a view writes the base array's memory, as NumPy
    a = start("float64")
    base = xp.asarray(a)
    view = base[1:5, ::2]
    with on_device():
        assert xpx.at(view, (slice(None), 0)).add(10.0) is view
    expected = a.copy()
    expected[1:5, ::2][:, 0] += 10.0
    np.testing.assert_array_equal(host(base), expected)
