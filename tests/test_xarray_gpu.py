"""GPU tier: xarray DataArrays backed by gparray arrays.

xarray keeps any array with ``__array_namespace__`` as the data of a Variable (a "duck
array") and computes with that array's namespace: operators, ``xp.where``, ``xp.sum`` and,
for its default ``skipna`` reductions of floating data, the namespace's ``nanmean``,
``nanmax``, ``nanstd`` ... (gparray's NaN-skipping extension; a namespace without them gets
NumPy's, on a host copy). Indexing goes through ``ArrayApiIndexingAdapter``: basic keys as
they are, outer (orthogonal) keys one axis at a time, integer lists as NumPy arrays (which
gparray uploads).

Checked: arithmetic, reductions over one, several and all dimensions (skipna on and off),
``isel``/``sel`` (labels, lists, slices), ``.mean(dim)``; every result is backed by a gparray
Array, equals xarray's result on the NumPy twin of the data, and no host copy happens on
the way (xarray computes under the host conversion mode "raise").

Skipped, with the reason, when xarray is not installed.
"""
import importlib.util

import numpy as np
import pytest

import gparray as xp

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("xarray") is None, reason="xarray is not installed"),
]


@pytest.fixture(scope="module")
def xr():
    import xarray

    return xarray


def on_device():
    """gparray's host conversion mode "raise" (``numpy.asarray(x)`` is a TypeError) for the
    block: what xarray computes must not go through NumPy."""
    return xp.cuda.host_conversion("raise")


def values(nan=True):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 6, 3))
    if nan:
        a[1, 2, 0] = a[3, 0, 2] = np.nan
        a[2, :, 1] = np.nan          # a slice of NaNs only along "y"
    return a


def pair(xr, a):
    """The same DataArray over a gparray array and over a NumPy array."""
    coords = {"x": [10, 20, 30, 40], "y": np.arange(6) * 0.5, "z": ["u", "v", "w"]}
    dims = ("x", "y", "z")
    return (xr.DataArray(xp.asarray(a), dims=dims, coords=coords, attrs={"units": "m"}),
            xr.DataArray(a, dims=dims, coords=coords, attrs={"units": "m"}))


def check(xr, got, expected, name=""):
    """``got`` is gparray-backed and equals ``expected`` (a NumPy-backed DataArray), coordinates
    and dimension names included."""
    assert isinstance(got.data, xp.Array), (name, type(got.data))
    assert got.dims == expected.dims and got.shape == expected.shape, (name, got.dims, expected.dims)
    host = got.copy(data=np.asarray(got.data))
    assert host.dtype == expected.dtype, (name, host.dtype, expected.dtype)
    xr.testing.assert_allclose(host, expected, rtol=1e-12, atol=1e-12)


ARITHMETIC = {
    "add scalar": lambda d: d + 7,
    "mul": lambda d: d * d,
    "neg, abs, pow": lambda d: abs(-d) ** 2,
    "broadcast by name": lambda d: d - d.isel(x=0),
    "transposed operand": lambda d: d + d.transpose("z", "y", "x"),
    "compare": lambda d: d > 0.5,
    "where": lambda d: d.where(d > 0),
    "astype": lambda d: d.astype(np.float32),
}


@pytest.mark.parametrize("name", list(ARITHMETIC))
def test_arithmetic(xr, name):
    f = ARITHMETIC[name]
    g, n = pair(xr, values())
    with on_device():
        r = f(g)
    check(xr, r, f(n), name)


REDUCTIONS = {
    "mean(x)": lambda d: d.mean("x"),
    "mean(y)": lambda d: d.mean(dim="y"),
    "mean(x, z)": lambda d: d.mean(("x", "z")),
    "mean()": lambda d: d.mean(),
    "mean(x, keepdims)": lambda d: d.mean("x", keepdims=True),
    "mean(y, skipna=False)": lambda d: d.mean("y", skipna=False),
    "sum(y)": lambda d: d.sum("y"),
    "sum(x, skipna=False)": lambda d: d.sum("x", skipna=False),
    "max(x)": lambda d: d.max("x"),
    "min(z)": lambda d: d.min("z"),
    "std(y)": lambda d: d.std("y"),
    "var(x, ddof=1)": lambda d: d.var("x", ddof=1),
    "prod(z)": lambda d: d.prod("z"),
    "count(y)": lambda d: d.count("y"),
    "any(x)": lambda d: (d > 1).any("x"),
}


@pytest.mark.parametrize("nan", [True, False], ids=["with NaNs", "no NaN"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(xr, name, nan):
    f = REDUCTIONS[name]
    g, n = pair(xr, values(nan))
    with on_device():
        r = f(g)
    check(xr, r, f(n), name)


SELECTIONS = {
    "isel slice": lambda d: d.isel(x=slice(1, 3)),
    "isel int": lambda d: d.isel(y=2),
    "isel list": lambda d: d.isel(y=[0, 2, 5]),
    "isel lists on two dims": lambda d: d.isel(x=[3, 0], z=[2, 1]),
    "isel negative step": lambda d: d.isel(y=slice(None, None, -2)),
    "sel label": lambda d: d.sel(x=20),
    "sel labels": lambda d: d.sel(x=[20, 40], z="v"),
    "sel slice": lambda d: d.sel(y=slice(0.5, 2.0)),
    "sel string labels": lambda d: d.sel(z=["w", "u"]),
    "head": lambda d: d.head(y=2),
}


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_isel_sel(xr, name):
    f = SELECTIONS[name]
    g, n = pair(xr, values())
    with on_device():
        r = f(g)
    check(xr, r, f(n), name)


def test_mean_over_a_dimension_then_more(xr):
    # the example: a mean over a named dimension, and what one does with it next
    g, n = pair(xr, values())
    with on_device():
        m = g.mean("y")
        anomaly = g - m
        picked = anomaly.sel(x=[10, 30]).isel(z=0)
        summary = picked.mean("x")
    for got, expected in ((m, n.mean("y")), (anomaly, n - n.mean("y")),
                          (picked, (n - n.mean("y")).sel(x=[10, 30]).isel(z=0)),
                          (summary, (n - n.mean("y")).sel(x=[10, 30]).isel(z=0).mean("x"))):
        check(xr, got, expected)
    assert m.attrs == n.mean("y").attrs
    # the data stays a gparray Array through a Dataset too
    ds = g.to_dataset(name="v")
    with on_device():
        dm = ds.mean("x")
    check(xr, dm["v"], n.to_dataset(name="v").mean("x")["v"])
