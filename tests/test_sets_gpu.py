"""GPU tier: unique_values, unique_counts, unique_inverse, unique_all and isin against NumPy
(``np.unique(..., equal_nan=False)``, ``np.isin``); searchsorted on arrays sorted by
gparray's own sort and argsort (what the conformance suite does).

Every dtype (float16 and complex included) with duplicates, several NaNs, +-inf, -0.0 and
0.0, all-equal input, empty, 0-d and n-d input, non-contiguous views, sizes around the set
kernels' tile (4096) and one large input (2^22). isin: every integer dtype pair, invert,
scalars on either side (out-of-range ones too), empty tables, NaN, mixed kinds, tables
around the shared-sample boundary. Dense unique (unique_values and unique_inverse of integers
through a bitmap of their range): ranges at both ends of every integer dtype, sizes around
the tile, the capacity boundary (the range that just fits, one more value sorts), and the
same results as the sorted path.

Run on the device machine:  python -m pytest -q tests/test_sets_gpu.py
"""
import numpy as np
import pytest

import gparray as xp

pytestmark = pytest.mark.gpu

REAL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"]
ALL = REAL + ["complex64", "complex128"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def host(x):
    return np.asarray(x)


def sample(dtype, shape, seed=0, spread=20):
    """Values of ``dtype`` with many duplicates; floating ones with several NaNs, +-inf,
    -0.0 and 0.0."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo = max(info.min, -spread)
        a = rng.integers(lo, min(info.max, lo + 2 * spread), n, endpoint=True).astype(dt)
        if n >= 4:
            a[:2] = info.min, info.max
    else:
        a = rng.integers(-spread, spread, n).astype(np.float64) / 2
        if dt.kind == "c":
            a = a + 1j * rng.integers(-3, 3, n)
        a = a.astype(dt)
        if n >= 8:
            a[1], a[3], a[5] = -0.0, np.nan, np.inf
            a[6], a[7] = -np.inf, np.nan
            a[rng.random(n) < 0.05] = np.nan
            a[rng.random(n) < 0.05] = -0.0
            if dt.kind == "c":
                a[2] = complex(1.0, np.nan)
    return a.reshape(shape)


def _isnan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def check_unique(x, values, indices=None, inverse=None, counts=None):
    """Check gparray's results for NumPy input ``x`` against np.unique (real dtypes: the
    same arrays; complex: the same values without NaNs, NaN parts each unique)."""
    flat = x.reshape(-1)
    ev, ei, einv, ec = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                 equal_nan=False)
    v = host(values)
    assert v.dtype == x.dtype and v.ndim == 1
    nan_v, nan_e = _isnan(v), _isnan(ev)
    assert nan_v.sum() == nan_e.sum() == _isnan(flat).sum()
    np.testing.assert_array_equal(v[~nan_v], ev[~nan_e])
    if indices is not None:
        i = host(indices)
        assert i.dtype == np.int64 and i.shape == v.shape
        np.testing.assert_array_equal(i[~nan_v], ei[~nan_e])
        assert sorted(i[nan_v].tolist()) == sorted(ei[nan_e].tolist())
        np.testing.assert_array_equal(flat[i][~nan_v], v[~nan_v])
        if x.dtype.kind == "f":  # the first occurrence's sign of zero
            np.testing.assert_array_equal(np.signbit(flat[i]), np.signbit(v))
    if inverse is not None:
        inv = host(inverse)
        assert inv.dtype == np.int64 and inv.shape == x.shape
        back = v[inv.reshape(-1)]
        np.testing.assert_array_equal(back, flat)  # NaN positions compare equal here
        if x.dtype.kind in "fc":  # each NaN of x has its own value
            nan_at = np.flatnonzero(_isnan(flat))
            assert len(set(inv.reshape(-1)[nan_at].tolist())) == nan_at.size
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(inv.reshape(-1), einv.reshape(-1))
    if counts is not None:
        c = host(counts)
        assert c.dtype == np.int64 and c.shape == v.shape
        np.testing.assert_array_equal(c[~nan_v], ec[~nan_e])
        assert np.all(c[nan_v] == 1) and c.sum() == flat.size


def run_all(a, x=None):
    x = xp.asarray(a) if x is None else x
    check_unique(a, xp.unique_values(x))
    r = xp.unique_counts(x)
    check_unique(a, r.values, counts=r.counts)
    r = xp.unique_inverse(x)
    check_unique(a, r.values, inverse=r.inverse_indices)
    r = xp.unique_all(x)
    check_unique(a, r.values, r.indices, r.inverse_indices, r.counts)


# ---------------------------------------------------------------------------- unique
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [1, 5, 100, 4095, 4097, 20000])
def test_unique_every_dtype(dtype, n):
    run_all(sample(dtype, (n,), seed=n))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex64"])
def test_unique_many_distinct_values(dtype):
    run_all(sample(dtype, (30000,), seed=3, spread=100000))


@pytest.mark.parametrize("dtype", ["int64", "float16", "float32", "complex128", "bool"])
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 1, 7, 3), (64, 65)])
def test_unique_nd(dtype, shape):
    run_all(sample(dtype, shape, seed=sum(shape)))


@pytest.mark.parametrize("dtype", ["int16", "float32", "complex64", "uint64"])
@pytest.mark.parametrize("view", ["step", "transposed", "flipped", "broadcast"])
def test_unique_non_contiguous(dtype, view):
    a = sample(dtype, (40, 30), seed=7)
    x = xp.asarray(a)
    if view == "step":
        x, a = x[::2, 1::3], a[::2, 1::3]
    elif view == "transposed":
        x, a = x.T, a.T
    elif view == "flipped":
        x, a = xp.flip(x, axis=0), a[::-1]
    else:
        x, a = xp.broadcast_to(x[0], (5, 30)), np.broadcast_to(a[0], (5, 30))
    run_all(np.ascontiguousarray(a), x)


@pytest.mark.parametrize("dtype", ALL)
def test_unique_zero_d_and_empty(dtype):
    a = sample(dtype, (), seed=1)
    run_all(a)
    r = xp.unique_all(xp.asarray(a))
    assert r.inverse_indices.shape == () and r.values.shape == (1,)
    for shape in [(0,), (2, 0, 3)]:
        x = xp.asarray(np.zeros(shape, dtype))
        v = xp.unique_values(x)
        assert v.shape == (0,) and v.dtype == x.dtype
        r = xp.unique_all(x)
        assert r.values.shape == r.indices.shape == r.counts.shape == (0,)
        assert r.inverse_indices.shape == shape and r.inverse_indices.dtype == xp.int64
        assert xp.unique_inverse(x).inverse_indices.shape == shape
        assert xp.unique_counts(x).counts.shape == (0,)


@pytest.mark.parametrize("dtype", REAL)
def test_unique_all_equal(dtype):
    a = np.full(10000, 1, dtype=dtype)
    run_all(a)
    r = xp.unique_all(xp.asarray(a))
    assert host(r.counts).tolist() == [10000] and host(r.indices).tolist() == [0]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_unique_special_floats(dtype):
    a = np.array([np.nan, 0.0, -0.0, np.inf, np.nan, -np.inf, 0.0, np.nan, np.inf, -0.0], dtype=dtype)
    run_all(a)
    r = xp.unique_all(xp.asarray(a))
    v = host(r.values)
    assert v[:3].tolist() == [-np.inf, 0.0, np.inf] and np.isnan(v[3:]).all() and v.size == 6
    assert host(r.counts).tolist() == [1, 4, 2, 1, 1, 1]
    assert host(r.indices).tolist() == [5, 1, 3, 0, 4, 7]
    assert not np.signbit(v[1])  # 0.0 occurs first
    r = xp.unique_all(xp.asarray(a[2:]))
    assert np.signbit(host(r.values)[1])  # -0.0 occurs first
    all_nan = np.full(50, np.nan, dtype=dtype)
    r = xp.unique_counts(xp.asarray(all_nan))
    assert r.values.shape == (50,) and host(r.counts).tolist() == [1] * 50


def test_unique_large():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**20, 2**22, dtype=np.int32)
    run_all(a)
    f = rng.standard_normal(2**22).astype(np.float32)
    f[::1000] = np.nan
    check_unique(f, *[getattr(xp.unique_all(xp.asarray(f)), k) for k in ("values", "indices", "inverse_indices",
                                                                           "counts")])


# ---------------------------------------------------------------------------- dense unique (no sort)
@pytest.fixture
def dense_calls(monkeypatch):
    """The number of dense unique writes (the bitmap path was taken) while the test runs."""
    from gparray._engine import _sets

    calls = []
    real = _sets.dense_write

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_sets, "dense_write", spy)
    return calls


@pytest.mark.parametrize("dtype,lo", [("int8", -128), ("int16", 30000), ("int32", -2**31), ("int32", 5),
                                      ("int64", -2**63), ("int64", 2**63 - 70000), ("uint32", 2**32 - 5000),
                                      ("uint64", 2**64 - 70000), ("uint64", 0), ("uint8", 0)])
@pytest.mark.parametrize("n", [1, 33, 4096, 4097, 70000])
def test_unique_dense_ranges(dense_calls, dtype, lo, n):
    """Small ranges anywhere in the dtype (its ends included) take the bitmap: the same
    results as NumPy for unique_values and unique_inverse; the other two functions sort."""
    dt = np.dtype(dtype)
    hi = min(lo + 60000, int(np.iinfo(dt).max))
    offs = np.random.default_rng(n).integers(0, hi - lo, n, endpoint=True)
    a = np.array([lo + int(o) for o in offs], dtype=dt)
    if n >= 2:
        a[0], a[-1] = lo, hi
    x = xp.asarray(a)
    check_unique(a, xp.unique_values(x))
    r = xp.unique_inverse(x)
    check_unique(a, r.values, inverse=r.inverse_indices)
    assert len(dense_calls) == 2
    r = xp.unique_counts(x)
    check_unique(a, r.values, counts=r.counts)
    assert len(dense_calls) == 2


@pytest.mark.parametrize("extra", [0, 1])
def test_unique_dense_capacity_boundary(dense_calls, extra):
    """A range of exactly the bitmap's capacity takes it; one more value sorts instead."""
    from gparray._engine import _sets

    n = 5000
    cap = _sets.dense_bits(n)
    a = np.random.default_rng(1).integers(-7, -7 + cap, n).astype(np.int64)    # inside the capacity
    a[0], a[1] = -7, -7 + cap - 1 + extra                                     # span cap - 1 (+ 1)
    x = xp.asarray(a.reshape(50, 100))
    r = xp.unique_inverse(x)
    check_unique(a.reshape(50, 100), r.values, inverse=r.inverse_indices)
    assert len(dense_calls) == (0 if extra else 1)


def test_unique_dense_matches_the_sorted_path(monkeypatch):
    from gparray._engine import _sets

    a = np.random.default_rng(2).integers(-1000, 1000, (300, 301)).astype(np.int16)
    x = xp.asarray(a)[:, ::-2]
    got = xp.unique_inverse(x)
    monkeypatch.setattr(_sets, "DENSE", False)
    want = xp.unique_inverse(x)
    np.testing.assert_array_equal(host(got.values), host(want.values))
    np.testing.assert_array_equal(host(got.inverse_indices), host(want.inverse_indices))


def test_unique_results_are_namedtuples():
    x = xp.asarray([3, 1, 3])
    r = xp.unique_all(x)
    assert type(r).__name__ == "UniqueAllResult" and r._fields == ("values", "indices", "inverse_indices", "counts")
    v, i, inv, c = r
    assert host(v).tolist() == [1, 3] and host(i).tolist() == [1, 0]
    assert host(inv).tolist() == [1, 0, 1] and host(c).tolist() == [1, 2]
    assert xp.unique_counts(x)._fields == ("values", "counts")
    assert xp.unique_inverse(x)._fields == ("values", "inverse_indices")


# ---------------------------------------------------------------------------- isin
@pytest.mark.parametrize("dt1", INTS)
@pytest.mark.parametrize("dt2", INTS)
@pytest.mark.parametrize("invert", [False, True])
def test_isin_integer_pairs(dt1, dt2, invert):
    if not _promotable(dt1, dt2):
        pytest.skip("no promotion")
    a1 = sample(dt1, (37, 11), seed=1)
    a2 = sample(dt2, (300,), seed=2)
    got = xp.isin(xp.asarray(a1), xp.asarray(a2), invert=invert)
    assert got.dtype == xp.bool and got.shape == a1.shape
    np.testing.assert_array_equal(host(got), np.isin(a1, a2, invert=invert))


def _promotable(dt1, dt2):
    try:
        xp.result_type(getattr(xp, dt1), getattr(xp, dt2))
        return True
    except TypeError:
        return False


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n2", [1, 2, 100, 2047, 2048, 2049, 4096, 4097, 16385, 70000])
def test_isin_table_sizes(dtype, n2):
    rng = np.random.default_rng(n2)
    a2 = sample(dtype, (n2,), seed=n2, spread=max(2, n2))
    a1 = np.concatenate([sample(dtype, (3000,), seed=n2 + 1, spread=max(2, n2)), a2[: min(n2, 500)]])
    rng.shuffle(a1)
    for invert in (False, True):
        got = xp.isin(xp.asarray(a1), xp.asarray(a2), invert=invert)
        np.testing.assert_array_equal(host(got), np.isin(a1, a2, invert=invert))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_isin_nan_and_signed_zero(dtype):
    a1 = np.array([np.nan, 0.0, -0.0, 1.0, np.inf, -np.inf, 2.0], dtype=dtype)
    a2 = np.array([np.nan, -0.0, np.inf, 2.0, np.nan], dtype=dtype)
    got = host(xp.isin(xp.asarray(a1), xp.asarray(a2)))
    assert got.tolist() == [False, True, True, False, True, False, True]
    got = host(xp.isin(xp.asarray(a1), xp.asarray(a2), invert=True))
    assert got.tolist() == [True, False, False, True, False, True, False]
    assert not bool(xp.isin(xp.asarray(a1[:1]), float("nan"))[0])
    assert bool(xp.isin(xp.asarray(a1[:1]), float("nan"), invert=True)[0])


def test_isin_scalars():
    a = np.arange(-5, 20, dtype=np.int16).reshape(5, 5)
    x = xp.asarray(a)
    for v in (3, -5, 19, 20, 100):
        for invert in (False, True):
            np.testing.assert_array_equal(host(xp.isin(x, v, invert=invert)), np.isin(a, v, invert=invert))
            got = xp.isin(v, x, invert=invert)
            assert got.shape == () and got.dtype == xp.bool and bool(got) == bool(np.isin(v, a, invert=invert))
    # ints outside the dtype's range are in nothing (NumPy), on either side
    assert not host(xp.isin(x, 2**40)).any() and host(xp.isin(x, 2**40, invert=True)).all()
    assert not bool(xp.isin(-(2**40), x)) and bool(xp.isin(2**40, x, invert=True))
    f = xp.asarray([0.5, 1.0, 2.0], dtype=xp.float32)
    assert host(xp.isin(f, 1)).tolist() == [False, True, False]
    assert host(xp.isin(f, 0.5)).tolist() == [True, False, False]


def test_isin_empty_and_shapes():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = xp.asarray(a)
    e = xp.asarray(np.zeros((0,), np.int32))
    assert host(xp.isin(x, e)).shape == (3, 4) and not host(xp.isin(x, e)).any()
    assert host(xp.isin(x, e, invert=True)).all()
    got = xp.isin(e, x)
    assert got.shape == (0,) and got.dtype == xp.bool
    got = xp.isin(xp.asarray(np.zeros((2, 0, 3), np.int8)), x)
    assert got.shape == (2, 0, 3)
    z = xp.asarray(np.int32(7))
    assert xp.isin(z, x).shape == () and bool(xp.isin(z, x))
    t = np.array([[1, 5], [9, 100]], dtype=np.int64)
    np.testing.assert_array_equal(host(xp.isin(x, xp.asarray(t))), np.isin(a, t))


@pytest.mark.parametrize("view", ["transposed", "step", "flipped", "broadcast"])
def test_isin_non_contiguous(view):
    a = sample("int32", (60, 50), seed=5)
    t = sample("int32", (40, 10), seed=6)
    x, tx = xp.asarray(a), xp.asarray(t)
    if view == "transposed":
        x, a, tx, t = x.T, a.T, tx.T, t.T
    elif view == "step":
        x, a, tx, t = x[::3, 1::2], a[::3, 1::2], tx[::2], t[::2]
    elif view == "flipped":
        x, a = xp.flip(x, axis=1), a[:, ::-1]
    else:
        x, a = xp.broadcast_to(x[0], (7, 50)), np.broadcast_to(a[0], (7, 50))
    for invert in (False, True):
        np.testing.assert_array_equal(host(xp.isin(x, tx, invert=invert)), np.isin(a, t, invert=invert))


@pytest.mark.parametrize("dt1,dt2", [("int32", "float32"), ("float32", "int64"), ("uint8", "float16"),
                                     ("bool", "bool"), ("int64", "uint64"), ("bool", "int8")])
def test_isin_mixed_dtypes(dt1, dt2):
    if not _promotable(dt1, dt2):
        pytest.skip("no promotion")
    a1 = sample(dt1, (500,), seed=1)
    a2 = sample(dt2, (80,), seed=2)
    got = xp.isin(xp.asarray(a1), xp.asarray(a2))
    np.testing.assert_array_equal(host(got), np.isin(a1, a2))


def test_isin_large():
    rng = np.random.default_rng(1)
    a1 = rng.integers(0, 2**20, 2**22, dtype=np.int32)
    a2 = rng.integers(0, 2**20, 2**16, dtype=np.int32)
    np.testing.assert_array_equal(host(xp.isin(xp.asarray(a1), xp.asarray(a2))), np.isin(a1, a2))


def test_isin_errors():
    x = xp.asarray([1, 2, 3])
    with pytest.raises(TypeError, match="^isin: "):
        xp.isin(x, xp.asarray([1j]))
    with pytest.raises(TypeError, match="^isin: "):
        xp.isin(x, 1j)
    with pytest.raises(TypeError, match="^isin: invert must be a bool"):
        xp.isin(x, x, invert=1)


# ---------------------------------------------------------------------------- searchsorted
@pytest.mark.parametrize("dtype", ["int8", "uint64", "float32", "float64", "int64"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_on_sorted_and_argsorted(dtype, side):
    a = np.unique(sample(dtype, (200,), seed=4, spread=1000))
    a = a[~_isnan(a)]
    rng = np.random.default_rng(0)
    rng.shuffle(a)
    v = rng.choice(a, 50).reshape(5, 10)
    x, xv = xp.asarray(a), xp.asarray(v)
    s = xp.sort(x)
    np.testing.assert_array_equal(host(xp.searchsorted(s, xv, side=side)), np.searchsorted(np.sort(a), v, side=side))
    srt = xp.argsort(x)
    np.testing.assert_array_equal(host(xp.searchsorted(x, xv, side=side, sorter=srt)),
                                  np.searchsorted(a, v, side=side, sorter=np.argsort(a, kind="stable")))
    got = xp.searchsorted(s, v.reshape(-1)[0].item(), side=side)
    assert got.shape == () and got.dtype == xp.int64
    assert int(got) == np.searchsorted(np.sort(a), v.reshape(-1)[0], side=side)


@pytest.mark.parametrize("dtype,lo,hi", [("int64", -2**60, 2**60), ("uint64", 0, 2**64 - 1), ("int64", -2**40, -2**40 + 9000),
                                         ("uint64", 2**64 - 70000, 2**64 - 1), ("int32", -2**31, 2**31 - 1),
                                         ("int8", -128, 127), ("int32", 0, 2**20)])
@pytest.mark.parametrize("invert", [False, True])
def test_isin_table_ranges(dtype, lo, hi, invert):
    # integer tables whose range fits the bitmap (looked up there) or not (searched), with
    # both ends of the range and values just outside it
    rng = np.random.default_rng(abs(lo) % 1000 + hi % 997)
    dt = np.dtype(dtype)
    mid = rng.integers(0, 2**20 if hi - lo > 2**20 else hi - lo, 3000, dtype=np.uint64)
    a2 = np.concatenate([np.array([lo, hi], dtype=object), (lo + mid.astype(object))]).astype(dt)
    rng.shuffle(a2)
    near = np.array([lo, hi] + [v for v in (lo - 1, hi + 1) if np.iinfo(dt).min <= v <= np.iinfo(dt).max], dtype=object)
    a1 = np.concatenate([rng.choice(a2, 4000), near.astype(dt), (lo + rng.integers(0, 2**21, 4000)
                                                                  .astype(object)).clip(None, hi).astype(dt)])
    got = host(xp.isin(xp.asarray(a1), xp.asarray(a2), invert=invert))
    np.testing.assert_array_equal(got, np.isin(a1, a2, invert=invert))
