"""GPU tier: advanced indexing against NumPy on the same inputs.

* GATHER ``x[idx]``: every dtype, every integer index dtype, index arrays broadcasting together,
  mixed with ints, slices (negative steps), None and ..., separated vs adjacent advanced
  entries, non-contiguous and broadcast sources, lists and NumPy arrays as keys, empty index
  arrays and results, 0-d sources with 0-d boolean keys; a hypothesis pass over the CPU tier's
  key generator (tests/test_index_plan.py) on the same layouts;
* out-of-range indices: NumPy's IndexError for getitem, setitem, take and take_along_axis, and
  the next op works afterwards (the device error word is reset; nothing outside is touched);
* MASK ``x[mask]``: full-shape and leading-dims masks, all-False/all-True, non-contiguous x
  and mask, sizes around the 4096-element tile and 2**20+3, masks mixed with index arrays,
  ``nonzero``;
* SCATTER ``x[idx] = v``: scalars, 0-d and broadcast arrays, other dtypes (cast like NumPy),
  masks, repeated indices (one of the candidates wins), views writing into their base, values
  overlapping x, TypeError/ValueError;
* take and take_along_axis.

Run on the device machine:  python -m pytest -q tests/test_indexing_gpu.py
"""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gparray as xp
from _arrays import assert_same, host, sample
from test_index_plan import advanced_cases  # the CPU tier's generator of keys

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _bounds_checked_at_the_call(monkeypatch):
    """These tests expect NumPy's IndexError at the indexing call itself: GPARRAY_BOUNDS_CHECK
    =sync (tests/test_bounds_check_gpu.py covers the default, deferred mode)."""
    from gparray._engine import _index

    monkeypatch.setattr(_index, "MODE", "sync")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]
INDEX_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
TILE = 4096  # the mask compaction tile (gparray/_engine/_index.py CP_TILE)


def scalar_for(dtype):
    """A Python scalar of the kind ``dtype`` holds (spec's mixing rules)."""
    k = np.dtype(dtype).kind
    return True if k == "b" else 7 if k in "iu" else -2.5 if k == "f" else complex(1.5, -2.0)


def dev(key, how="array"):
    """``key`` with its n-d NumPy index arrays as gparray Arrays ("array"), left as NumPy
    arrays ("numpy", uploaded by gparray) or as Python lists ("list")."""
    def conv(k):
        if isinstance(k, np.ndarray) and k.ndim > 0:
            if how == "numpy":
                return k
            return k.tolist() if how == "list" and k.size else xp.asarray(k)   # [] would lose the shape
        return k
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


def np_error(fn):
    """NumPy's IndexError message for ``fn()`` (which must raise one)."""
    with pytest.raises(IndexError) as info:
        fn()
    return str(info.value).strip()


I = np.array([4, 0, -1, 2, 2])             # negative and repeated
I2 = np.array([[1], [-2]])                 # broadcasts with J
J = np.array([0, 3, -1])
GATHER_KEYS = [
    (I,),
    (I2, J),
    (slice(None), J),
    (I2, slice(None), J),                                  # separated: index dims first
    (I2, J, slice(None)),                                  # adjacent, leading
    (slice(None), I2, J),                                  # adjacent, in place
    (1, slice(None), J),                                   # an int counts as advanced: separated
    (slice(1, None), J, 0),                                # int + array adjacent
    (None, I, Ellipsis, None),
    (Ellipsis, I2),
    (slice(None, None, -2), J, slice(None, None, -1)),
    (slice(4, 0, -1), None, J, slice(None, None, 2)),
    (np.array([[0, 1], [2, 3]]),),                         # n-d index
    (np.array(3), slice(None), J),                         # 0-d array: an int
    (I2, True, J),                                         # boolean scalar among arrays
    (I2, np.array(True), J),                               # 0-d boolean array among arrays
    (J[:1], np.array(False)),                              # (1,) with (0,): an empty result
]


# ------------------------------------------------------------------------ gather
@pytest.mark.parametrize("dtype", ALL)
def test_gather_every_dtype(dtype):
    a = sample(dtype, (5, 6, 4), seed=1)
    x = xp.asarray(a)
    for key in GATHER_KEYS:
        assert_same(x[dev(key)], a[key])


@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
def test_gather_index_dtypes(idx_dtype):
    a = sample("float32", (5, 6), seed=2)
    x = xp.asarray(a)
    signed = np.dtype(idx_dtype).kind == "i"
    i = np.array([4, 0, -5, 2, -1] if signed else [4, 0, 0, 2, 4]).astype(idx_dtype)
    j = np.array([[4, -5], [0, 3]] if signed else [[4, 0], [0, 3]]).astype(idx_dtype)   # in range on both axes
    for key in [(i,), (j,), (slice(None), j), (i[:2, None], j[0]), (j, slice(None)), (i[:2], np.array([1, 5]))]:
        for how in ("array", "numpy"):
            assert_same(x[dev(key, how)], a[key])
    # a longer index array of that dtype (positive values up to 2999, as far as its range goes)
    b = sample("int64", (3000,), seed=3)
    k = np.arange(2999, -1, -7).astype(idx_dtype) if np.iinfo(idx_dtype).max >= 2999 else \
        np.arange(0, np.iinfo(idx_dtype).max, 3).astype(idx_dtype)
    assert_same(xp.asarray(b)[xp.asarray(k)], b[k])


def test_gather_mixed_index_dtypes():
    a = sample("int32", (4, 5, 6), seed=4)
    x = xp.asarray(a)
    key = (np.array([0, -1, 2], dtype=np.int8), slice(None), np.array([5, 0, 1], dtype=np.uint64))
    assert_same(x[dev(key)], a[key])
    key = (np.array([[3]], dtype=np.uint16), np.array([0, 4], dtype=np.int64), np.array([1], dtype=np.uint32))
    assert_same(x[dev(key)], a[key])


def _sources():
    """(NumPy array, gparray Array) pairs of one layout: strided, transposed, flipped, broadcast."""
    a = sample("float64", (6, 8), seed=5)
    x = xp.asarray(a)
    row = sample("int16", (8,), seed=6)
    return [
        (a, x),
        (a[::2], x[::2]),
        (a[1::2, ::-3], x[1::2, ::-3]),
        (a.T, xp.permute_dims(x, (1, 0))),
        (a.T, x.T),
        (np.flip(a), xp.flip(x)),
        (np.flip(a, axis=1)[::-2], xp.flip(x, axis=1)[::-2]),
        (np.broadcast_to(row, (4, 8)), xp.broadcast_to(xp.asarray(row), (4, 8))),
        (np.broadcast_to(a[:, :1], (6, 5)), xp.broadcast_to(x[:, :1], (6, 5))),
    ]


@pytest.mark.parametrize("case", range(9))
def test_gather_non_contiguous_sources(case):
    a, x = _sources()[case]
    n0, n1 = a.shape
    keys = [(np.array([0, n0 - 1, -1, 1]),),
            (slice(None), np.array([n1 - 1, 0, -2])),
            (np.array([[0], [n0 - 1]]), np.array([1, -1, 0])),
            (np.array([2, 0]), slice(None, None, -1)),
            (slice(None, None, -1), np.array([[0, 1], [1, 0]])),
            (None, np.array([-1]), None, slice(1, None, 2))]
    for key in keys:
        assert_same(x[dev(key)], a[key])
    for key in keys[:3]:  # the gather's result is C-contiguous
        r = x[dev(key)]
        assert r.shape == a[key].shape
        assert r._strides == tuple(np.empty(r.shape, dtype=r.dtype).strides)


def test_index_lists_and_numpy_arrays():
    a = sample("float32", (5, 4), seed=7)
    x = xp.asarray(a)
    for key in ([0, 2], [[0, 1], [1, 0]], [-1, -5], (slice(None), [0, -1]), ([1, 2], [3, 0]),
                ([[0], [4]], slice(None, None, -1), ), ([True, False, True, False, True],),
                (slice(None), [False, True, True, False])):
        assert_same(x[key], a[key])
    for dt in INDEX_DTYPES:
        k = np.array([3, 1, 0], dtype=dt)
        assert_same(x[k], a[k])
        assert_same(x[:, k], a[:, k])
    m = a > 0
    assert_same(x[m], a[m])          # NumPy boolean array: uploaded


def test_empty_index_arrays_and_results():
    a = sample("int64", (4, 3), seed=8)
    x = xp.asarray(a)
    e = np.array([], dtype=np.int64)
    for key in [(e,), (slice(None), e), (e, e), (e, slice(None)), (np.zeros((2, 0), dtype=np.int32),),
                (np.zeros((0, 1), dtype=np.uint8), np.array([0, 2]))]:
        assert_same(x[dev(key)], a[key])
    assert_same(x[[]], a[np.array([], dtype=np.intp)])
    z = np.zeros((0, 3), dtype=np.float32)
    assert_same(xp.asarray(z)[xp.asarray(e)], z[e])
    assert_same(xp.asarray(z)[:, xp.asarray([0, 2])], z[:, [0, 2]])
    w = np.zeros((3, 0), dtype=np.complex64)
    assert_same(xp.asarray(w)[xp.asarray([0, 2, -1])], w[[0, 2, -1]])
    # an empty broadcast never reads the indices (NumPy does not check them either)
    assert_same(x[xp.asarray([9]), xp.asarray(e)], a[np.array([9]), e])


def test_zero_d_sources_and_bool_keys():
    a = np.array(5.5, dtype=np.float32)
    x = xp.asarray(a)
    for kx, ka in [(xp.asarray(True), True), (xp.asarray(False), False), (True, True), (False, False),
                   (np.True_, True), ((Ellipsis, True), (Ellipsis, True)), ((None, False), (None, False))]:
        assert_same(x[kx], a[ka])
    y = xp.asarray(np.array(1, dtype=np.int16))
    y[xp.asarray(True)] = 9
    assert int(y) == 9
    y[xp.asarray(False)] = 3
    assert int(y) == 9
    b = sample("int32", (3, 2), seed=9)
    assert_same(xp.asarray(b)[xp.asarray(True)], b[True])
    assert_same(xp.asarray(b)[xp.asarray([0, 2]), True], b[[0, 2], True])
    assert_same(xp.asarray(b)[xp.asarray([1]), False], b[[1], False])           # (1,) with (0,)
    with pytest.raises(IndexError, match="shape mismatch"):
        xp.asarray(b)[xp.asarray([0, 2]), False]                               # (2,) with (0,)


# ------------------------------------------------------------------------ the CPU tier's keys on the GPU
def _same_layout(buf_x, buf, a):
    """A gparray view of ``buf_x`` (an upload of ``buf``) with ``a``'s layout over ``buf``."""
    off = a.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    return buf_x._view(buf_x._offset + off, a.shape, a.strides)


def _value_for(dtype):
    k = np.dtype(dtype).kind
    return -7 if k in "iu" else -7.5 if k == "f" else complex(-7.5, 2.0)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_planner_keys_on_device(data):
    buf, a, key = data.draw(advanced_cases())
    how = data.draw(st.sampled_from(["array", "array", "numpy", "list"]))
    key_x = dev(key, how)
    buf_x = xp.asarray(buf)
    x = _same_layout(buf_x, buf, a)
    assert_same(x, a)
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            x[key_x]
        with pytest.raises(IndexError):
            x[key_x] = _value_for(buf.dtype)
        assert_same(buf_x, buf)
        return
    assert_same(x[key_x], expected)
    # setitem of one scalar (repeated indices write the same value); the whole buffer compares
    v = _value_for(buf.dtype)
    a[key] = v
    x[key_x] = v
    assert_same(buf_x, buf)


# ------------------------------------------------------------------------ out-of-range indices
def test_out_of_range_getitem():
    a = np.arange(5.0)
    x = xp.asarray(a)
    for bad in ([10], [0, 10, 1], [-6], [2, 3, 4, 5]):
        msg = np_error(lambda: a[np.array(bad)])
        with pytest.raises(IndexError, match=re.escape(msg)):
            x[xp.asarray(bad)]
        assert_same(x[xp.asarray([1, -1])], a[[1, -1]])   # the next op works
        assert_same(x, a)
    assert "index 10 is out of bounds for axis 0 with size 5" == np_error(lambda: a[np.array([10])])
    for dt, bad in [("int8", -6), ("uint8", 200), ("int16", 300), ("uint32", 5), ("uint64", 7), ("int32", -9)]:
        k = np.array([0, bad, 1]).astype(dt)
        with pytest.raises(IndexError, match=re.escape(np_error(lambda: a[k]))):
            x[xp.asarray(k)]
        with pytest.raises(IndexError, match=re.escape(np_error(lambda: a[k]))):
            x[k]                                        # NumPy key, uploaded
    b = np.arange(15).reshape(3, 5)
    y = xp.asarray(b)
    for key in [(slice(None), np.array([0, 7])), (np.array([0, 1]), np.array([1, 9])),
                (np.array([[3]]), slice(None)), (slice(None, None, -1), np.array([-6])), (np.array([0]), -6),
                (None, np.array([2, -3]), None, np.array([4, 4]))]:
        try:
            b[key]
        except IndexError as exc:
            with pytest.raises(IndexError, match=re.escape(str(exc).strip())):
                y[dev(key)]
        else:
            assert_same(y[dev(key)], b[key])
    assert_same(y, b)


def test_out_of_range_setitem_leaves_memory_outside_alone():
    base = np.arange(10.0)
    bx = xp.asarray(base)
    y = bx[2:7]
    msg = np_error(lambda: base[2:7].__setitem__(np.array([0, 10]), 5.0))
    assert msg == "index 10 is out of bounds for axis 0 with size 5"
    with pytest.raises(IndexError, match=re.escape(msg)):
        y[xp.asarray([0, 10])] = 5.0
    got = host(bx)
    # NumPy writes nothing; gparray may have written the in-range target (it skips the bad
    # index and raises after the launch), but nothing else
    assert got[2] in (2.0, 5.0)
    np.testing.assert_array_equal(np.delete(got, 2), np.delete(base, 2))
    bx[2] = 2.0
    with pytest.raises(IndexError, match=re.escape("index -7 is out of bounds for axis 0 with size 5")):
        y[xp.asarray([-7])] = xp.asarray([1.0])
    assert_same(bx, base)
    y[xp.asarray([1, -1])] = -1.0                        # the next scatter works
    base[[3, 6]] = -1.0
    assert_same(bx, base)
    # the error of one launch does not leak into the next: a second error names its own value
    with pytest.raises(IndexError, match=re.escape("index 11 is out of bounds for axis 0 with size 5")):
        y[xp.asarray([11])] = 0.0
    with pytest.raises(IndexError, match=re.escape("index 12 is out of bounds for axis 0 with size 5")):
        y[xp.asarray([12])]
    assert_same(y[xp.asarray([0, 4])], base[2:7][[0, 4]])
    assert_same(bx, base)
    # a 2-d scatter names the axis
    c = np.zeros((3, 4), dtype=np.int32)
    cx = xp.asarray(c)
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: c.__setitem__((slice(None), np.array([4])), 1)))):
        cx[:, xp.asarray([4])] = 1
    cx[:, xp.asarray([3])] = 1
    c[:, 3] = 1
    assert_same(cx, c)


def test_out_of_range_take_and_take_along_axis():
    a = np.arange(5.0)
    x = xp.asarray(a)
    msg = np_error(lambda: np.take(a, np.array([10])))
    assert msg == "index 10 is out of bounds for axis 0 with size 5"
    with pytest.raises(IndexError, match=re.escape(msg)):
        xp.take(x, xp.asarray([10]))
    assert_same(xp.take(x, xp.asarray([4, -5])), np.take(a, [4, -5]))
    b = np.arange(15.0).reshape(3, 5)
    y = xp.asarray(b)
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: np.take(b, np.array([0, 5]), axis=1)))):
        xp.take(y, xp.asarray([0, 5]), axis=1)
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: np.take(b, np.array([-4]), axis=0)))):
        xp.take(y, xp.asarray([-4]), axis=-2)
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: np.take_along_axis(a, np.array([10]), axis=0)))):
        xp.take_along_axis(x, xp.asarray([10]), axis=0)
    k = np.array([[0, 5], [1, 1], [2, 2]])
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: np.take_along_axis(b, k, axis=1)))):
        xp.take_along_axis(y, xp.asarray(k), axis=1)
    k = np.array([[0, 1, 2, -1, -4]])
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: np.take_along_axis(b, k, axis=0)))):
        xp.take_along_axis(y, xp.asarray(k), axis=0)
    assert_same(xp.take_along_axis(y, xp.asarray([[0, -1, 2, 1, 0]]), axis=0),
                np.take_along_axis(b, np.array([[0, -1, 2, 1, 0]]), axis=0))
    assert_same(y, b)


def test_bad_index_dtypes():
    x = xp.asarray(np.arange(6.0))
    for key in [xp.asarray([0.0, 1.0]), (xp.asarray([1.0]),), np.array([0.5]), xp.asarray([1 + 0j]),
                (slice(None), xp.asarray([0], dtype=xp.float32))]:
        with pytest.raises(IndexError):
            x[key]
        with pytest.raises(IndexError):
            x[key] = 1.0
    with pytest.raises(IndexError):
        x[[0.5, 1.0]]
    with pytest.raises(TypeError):
        xp.take(x, xp.asarray([0.0]))
    with pytest.raises(TypeError):
        xp.take_along_axis(x, xp.asarray([0.0]), axis=0)
    with pytest.raises(TypeError):
        xp.take(x, [0, 1])                   # spec: indices must be an array
    assert_same(x, np.arange(6.0))
    assert_same(x[xp.asarray([5, 0])], np.array([5.0, 0.0]))


# ------------------------------------------------------------------------ masks
@pytest.mark.parametrize("dtype", ALL)
def test_mask_every_dtype(dtype):
    a = sample(dtype, (4, 5, 3), seed=10)
    x = xp.asarray(a)
    rng = np.random.default_rng(11)
    for mshape in [(4, 5, 3), (4, 5), (4,)]:
        m = rng.integers(0, 2, mshape).astype(bool)
        assert_same(x[xp.asarray(m)], a[m])
    m = rng.integers(0, 2, (5, 3)).astype(bool)
    assert_same(x[:, xp.asarray(m)], a[:, m])          # trailing dims
    assert_same(x[1, xp.asarray(m)], a[1, m])          # int + mask


def test_mask_all_false_all_true():
    a = sample("float32", (6, 7), seed=12)
    x = xp.asarray(a)
    for fill in (False, True):
        for mshape in [(6, 7), (6,)]:
            m = np.full(mshape, fill)
            assert_same(x[xp.asarray(m)], a[m])
    e = np.zeros((0, 7), dtype=np.float32)
    assert_same(xp.asarray(e)[xp.asarray(np.zeros((0, 7), bool))], e[np.zeros((0, 7), bool)])
    assert_same(xp.asarray(e)[xp.asarray(np.zeros((0,), bool))], e[np.zeros((0,), bool)])


def test_mask_non_contiguous():
    a = sample("int32", (8, 10), seed=13)
    x = xp.asarray(a)
    xs, s = x[::2, 1::3], a[::2, 1::3]
    m = xs > 0                                          # from a comparison of a strided view
    assert_same(m, s > 0)
    assert_same(xs[m], s[s > 0])
    mn = (x > 0)[1::2, ::-3]                            # a strided, flipped mask
    an = (a > 0)[1::2, ::-3]
    assert_same(x[1::2, ::-3][mn], a[1::2, ::-3][an])
    assert_same(x[::2, ::3][mn], a[::2, ::3][an])
    mt = xp.permute_dims(x > 3, (1, 0))                 # transposed x and mask
    assert_same(xp.permute_dims(x, (1, 0))[mt], a.T[(a > 3).T])
    assert_same(xp.flip(x)[x > 0], np.flip(a)[a > 0])
    mr = xp.asarray((a > 0)[:, 0])[::-1]                # leading-dims mask, reversed
    assert_same(x[mr], a[(a > 0)[:, 0][::-1]])


@pytest.mark.parametrize("n", [TILE - 1, TILE, TILE + 1, 3 * TILE + 5, 2**20 + 3])
def test_mask_tile_boundaries(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    x = xp.asarray(a)
    for m in (rng.random(n) < 0.5, rng.random(n) < 0.01, np.ones(n, bool)):
        mx = xp.asarray(m)
        assert_same(x[mx], a[m])
    m = np.zeros(n, bool)
    m[[0, n // 2, n - 1]] = True                        # first and last elements
    assert_same(x[xp.asarray(m)], a[m])
    m2 = rng.random(n) < 0.3
    assert_same(x[::-1][xp.asarray(m2)], a[::-1][m2])   # a reversed source
    b = a.astype(np.float64)
    bx = xp.asarray(b)
    bx[xp.asarray(m2)] = 0.0
    b[m2] = 0.0
    assert_same(bx, b)


def test_mask_two_dims_large():
    rng = np.random.default_rng(14)
    a = rng.integers(-50, 50, (1025, 1027)).astype(np.int16)
    x = xp.asarray(a)
    m = a > 10
    assert_same(x[x > 10], a[m])
    assert_same(x[m[:, 0]], a[m[:, 0]])                 # leading dims: a row gather
    assert_same(x.T[xp.asarray(m.T)], a.T[m.T])


def test_mask_mixed_with_index_arrays():
    a = sample("float64", (4, 5, 6), seed=15)
    x = xp.asarray(a)
    m4 = np.array([True, False, True, True])            # 3 True
    m5 = np.array([False, True, True, False, False])    # 2 True
    m45 = np.zeros((4, 5), bool)
    m45[[0, 1, 3], [4, 0, 2]] = True                    # 3 True
    keys = [(m4, np.array([0, 4, -1])), (m4, np.array([2])), (m4, slice(None), np.array([5, 0, 1])),
            (m4, slice(None), 3), (np.array([[1], [3]]), m5), (slice(None), m5, np.array([0, -1])),
            (m45, np.array([1, 2, 3])), (m45, np.array([0])), (m4, None, np.array([1, 1, 0])),
            (m4, True), (m4, np.array([0, 1, 2]))]
    for key in keys:
        assert_same(x[dev(key)], a[key])
    with pytest.raises(IndexError, match="shape mismatch"):
        x[xp.asarray(m4), xp.asarray(m5)]              # counts 3 and 2 do not broadcast
    with pytest.raises(IndexError, match=re.escape(np_error(lambda: a[m5]))):
        x[xp.asarray(m5)]


def test_nonzero_consistency():
    rng = np.random.default_rng(16)
    for shape in [(7,), (5, 6), (3, 4, 5), (TILE + 3,)]:
        a = rng.integers(-3, 3, shape).astype(np.int32)
        x = xp.asarray(a)
        m = a > 0
        nz = xp.nonzero(x > 0)
        assert len(nz) == len(shape)
        for g, e in zip(nz, np.nonzero(m)):
            assert_same(g, e.astype(np.int64))
        assert_same(x[nz], a[m])
        assert_same(x[x > 0], x[nz])


# ------------------------------------------------------------------------ scatter
@pytest.mark.parametrize("dtype", ALL)
def test_scatter_every_dtype(dtype):
    a = sample(dtype, (5, 4), seed=17)
    x = xp.asarray(a)
    s = scalar_for(dtype)
    v = sample(dtype, (3, 4), seed=18)
    row = sample(dtype, (4,), seed=19)
    steps = [
        ((np.array([0, -1, 2]),), s),                                  # scalar
        ((np.array([1, 3]),), np.asarray(s, dtype=dtype)),             # 0-d array
        ((np.array([4, 0, 1]),), v),                                   # full shape
        ((np.array([2, 3]), slice(None)), row),                        # broadcast
        ((slice(None), np.array([3, -4])), row[:2]),
        ((np.array([[0], [4]]), np.array([1, 2])), v[:2, :2]),
        ((sample("bool", (5, 4), seed=20),), s),                       # mask = scalar
        ((1, np.array([0, 2])), row[:2]),
    ]
    for key, val in steps:
        a[key] = val
        x[dev(key)] = xp.asarray(val) if isinstance(val, np.ndarray) else val
        assert_same(x, a)


@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
def test_scatter_index_dtypes(idx_dtype):
    a = np.zeros((6, 5), dtype=np.int64)
    x = xp.asarray(a)
    signed = np.dtype(idx_dtype).kind == "i"
    i = np.array([5, 0, -2] if signed else [5, 0, 4]).astype(idx_dtype)
    j = np.array([1, 4, 0]).astype(idx_dtype)
    a[i, j] = [1, 2, 3]
    x[xp.asarray(i), xp.asarray(j)] = xp.asarray([1, 2, 3])
    assert_same(x, a)
    a[:, j] = 9
    x[:, j] = 9                                         # NumPy key, uploaded
    assert_same(x, a)


def test_scatter_value_casts():
    a = np.zeros(6, dtype=np.float32)
    x = xp.asarray(a)
    idx = np.array([0, 3, 5])
    for val in [np.array([1, -2, 3], dtype=np.int64), np.array([True, False, True]),
                np.array([2**24 + 1, 7, -1], dtype=np.int64), np.array([0.1, 3e38, -0.0])]:
        a[idx] = val
        x[xp.asarray(idx)] = xp.asarray(val)
        assert_same(x, a)
    b = np.zeros(5, dtype=np.int32)
    y = xp.asarray(b)
    for val in [np.array([1.0, -2.0, 300.0]), np.array([True, True, False]), np.array([7], dtype=np.uint8)]:
        b[[4, 0, 2]] = val
        y[xp.asarray([4, 0, 2])] = xp.asarray(val)
        assert_same(y, b)
    c = np.zeros(4, dtype=np.float16)
    z = xp.asarray(c)
    c[[1, 2]] = np.array([1.0009765625, 65504.0])
    z[xp.asarray([1, 2])] = xp.asarray([1.0009765625, 65504.0])
    assert_same(z, c)
    d = np.zeros(3, dtype=np.complex64)
    w = xp.asarray(d)
    d[[0, 2]] = np.array([1.5, -2.0])
    w[xp.asarray([0, 2])] = xp.asarray([1.5, -2.0])
    assert_same(w, d)
    w[xp.asarray([1])] = 2                               # a Python int into a complex array
    d[1] = 2
    assert_same(w, d)


def test_scatter_masks():
    rng = np.random.default_rng(21)
    a = sample("float32", (6, 7), seed=22)
    x = xp.asarray(a)
    m = rng.random((6, 7)) < 0.4
    a[m] = -1.0
    x[xp.asarray(m)] = -1.0                              # scalar
    assert_same(x, a)
    vals = np.arange(m.sum(), dtype=np.float32) * 3
    a[m] = vals
    x[xp.asarray(m)] = xp.asarray(vals)                  # an array of the masked count
    assert_same(x, a)
    a[m] = np.float32(4.0)
    x[xp.asarray(m)] = xp.asarray(4.0, dtype=xp.float32)  # 0-d array
    assert_same(x, a)
    a[m] = np.array([5.0], dtype=np.float32)
    x[xp.asarray(m)] = xp.asarray([5.0], dtype=xp.float32)  # size-1 array
    assert_same(x, a)
    r = np.array([True, False, True, True, False, False])
    a[r] = np.arange(7, dtype=np.float32)                # leading-dims mask, broadcast row
    x[xp.asarray(r)] = xp.arange(7, dtype=xp.float32)
    assert_same(x, a)
    a[r] = 0.5
    x[xp.asarray(r)] = 0.5
    assert_same(x, a)
    a[~m] = 2                                            # Python int into a float array
    x[xp.asarray(~m)] = 2
    assert_same(x, a)
    a[np.zeros((6, 7), bool)] = 8.0                      # all False: nothing
    x[xp.asarray(np.zeros((6, 7), bool))] = 8.0
    assert_same(x, a)
    # a non-contiguous target and mask
    xs, s_ = x[::2, ::-1], a[::2, ::-1]
    ms = rng.random(s_.shape) < 0.5
    s_[ms] = -9.0
    xs[xp.asarray(ms)] = -9.0
    assert_same(x, a)
    s_[ms] = np.arange(ms.sum(), dtype=np.float32)
    xs[xp.asarray(ms)] = xp.arange(int(ms.sum()), dtype=xp.float32)
    assert_same(x, a)
    with pytest.raises(ValueError):
        x[xp.asarray(m)] = xp.zeros(int(m.sum()) + 1, dtype=xp.float32)


def test_scatter_separated_and_broadcast():
    a = np.zeros((4, 3, 5), dtype=np.int32)
    x = xp.asarray(a)
    i1, i2 = np.array([0, 3, -1]), np.array([4, 0, 2])
    v = np.arange(9, dtype=np.int32).reshape(3, 3) + 1
    # x[i1, :, i2]: index dims first -> the indexed shape is (3, 3)
    a[i1, :, i2] = v
    x[xp.asarray(i1), :, xp.asarray(i2)] = xp.asarray(v)
    assert_same(x, a)
    a[i1, :, i2] = v[:, :1]                               # broadcast along the middle axis
    x[xp.asarray(i1), :, xp.asarray(i2)] = xp.asarray(v[:, :1])
    assert_same(x, a)
    a[:, np.array([[0], [2]]), np.array([1, 3])] = -5
    x[:, xp.asarray([[0], [2]]), xp.asarray([1, 3])] = -5
    assert_same(x, a)
    a[1, :, i2[:2]] = np.array([7, 8], dtype=np.int32)[:, None]
    x[1, :, xp.asarray(i2[:2])] = xp.asarray([[7], [8]], dtype=xp.int32)
    assert_same(x, a)
    a[np.array([], dtype=np.int64)] = 3                  # empty: nothing
    x[xp.asarray([], dtype=xp.int64)] = 3
    assert_same(x, a)


def test_scatter_repeated_indices():
    x = xp.asarray(np.zeros(4))
    x[xp.asarray([0, 0, 1, 0, 2, 2])] = xp.asarray([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    got = host(x)
    assert got[0] in (1.0, 2.0, 4.0) and got[1] == 3.0 and got[2] in (5.0, 6.0) and got[3] == 0.0
    c = xp.asarray(np.zeros(3, dtype=np.complex128))    # 16-byte elements: never torn
    vals = np.array([1 + 2j, 3 + 4j, 5 + 6j, 7 + 8j])
    c[xp.asarray([1, 1, 1, 1])] = xp.asarray(vals)
    assert host(c)[1] in vals and host(c)[0] == 0 and host(c)[2] == 0
    y = xp.asarray(np.zeros((3, 2), dtype=np.int8))
    y[xp.asarray([2, -1]), xp.asarray([0, 0])] = xp.asarray([5, 6], dtype=xp.int8)
    assert host(y)[2, 0] in (5, 6) and int(host(y).sum()) == int(host(y)[2, 0])


def test_scatter_through_views_writes_the_base():
    a = np.arange(10.0)
    x = xp.asarray(a)
    y = x[1:]
    y[xp.asarray([0, 2])] = 5.0
    a[1:][[0, 2]] = 5.0
    assert_same(x, a)
    assert float(x[1]) == 5.0 and float(x[3]) == 5.0
    y = x[::2]
    y[xp.asarray([1, -1])] = -1.0
    a[::2][[1, -1]] = -1.0
    assert_same(x, a)
    y = x[::-3]
    y[xp.asarray([0, 2])] = xp.asarray([100.0, 200.0])
    a[::-3][[0, 2]] = [100.0, 200.0]
    assert_same(x, a)
    b = np.arange(12).reshape(3, 4)
    z = xp.asarray(b)
    t = xp.permute_dims(z, (1, 0))
    t[xp.asarray([3, 0]), 1] = -7
    b.T[[3, 0], 1] = -7
    assert_same(z, b)
    m = np.array([True, False, False, True])
    t[xp.asarray(m)] = 0
    b.T[m] = 0
    assert_same(z, b)


def test_scatter_value_overlapping_x():
    a = np.arange(10.0)
    x = xp.asarray(a)
    idx = np.array([0, 2, 4, 6])
    x[xp.asarray(idx)] = x[::-1][:4]
    a[idx] = a[::-1][:4].copy()
    assert_same(x, a)
    x[xp.asarray([9, 8, 7])] = x[:3]
    a[[9, 8, 7]] = a[:3].copy()
    assert_same(x, a)
    x[1:][xp.asarray([0, 1, 2])] = x[:3]                  # target and value shifted by one
    a[1:][[0, 1, 2]] = a[:3].copy()
    assert_same(x, a)
    m = np.zeros(10, bool)
    m[[1, 3, 5, 7]] = True
    x[xp.asarray(m)] = x[::-2][:4]
    a[m] = a[::-2][:4].copy()
    assert_same(x, a)
    b = np.arange(16).reshape(4, 4)
    y = xp.asarray(b)
    y[xp.asarray([0, 1, 2, 3]), xp.asarray([3, 2, 1, 0])] = y[0]   # a row of y into its anti-diagonal
    b[[0, 1, 2, 3], [3, 2, 1, 0]] = b[0].copy()
    assert_same(y, b)
    y[:, xp.asarray([0, 1])] = y.T[:, 2:]                 # a transposed view of y
    b[:, [0, 1]] = b.T[:, 2:].copy()
    assert_same(y, b)


def test_scatter_errors():
    x = xp.asarray(np.zeros(5, dtype=np.float32))
    with pytest.raises(TypeError):
        x[xp.asarray([0, 1])] = 1j
    with pytest.raises(TypeError):
        x[xp.asarray([0, 1])] = xp.asarray([1j, 2j])
    with pytest.raises(TypeError):
        x[xp.asarray([True, False, True, False, False])] = 1j
    n = xp.asarray(np.zeros(5, dtype=np.int32))
    with pytest.raises(TypeError):
        n[xp.asarray([0])] = xp.asarray([1 + 0j], dtype=xp.complex64)
    with pytest.raises(ValueError):
        x[xp.asarray([0, 1, 2])] = xp.asarray([1.0, 2.0], dtype=xp.float32)
    with pytest.raises(ValueError):
        x[xp.asarray([[0], [1]])] = xp.ones((2, 2), dtype=xp.float32)
    y = xp.asarray(np.zeros((3, 4)))
    with pytest.raises(ValueError):
        y[xp.asarray([0, 1]), :] = xp.ones((2, 3))
    with pytest.raises(ValueError):
        y[xp.asarray([0, 2]), :, None] = xp.ones((2, 4, 2))
    assert_same(x, np.zeros(5, dtype=np.float32))
    assert_same(y, np.zeros((3, 4)))


# ------------------------------------------------------------------------ take / take_along_axis
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float16", "float32", "int64", "complex128"])
def test_take(dtype):
    a = sample(dtype, (4, 5, 6), seed=23)
    x = xp.asarray(a)
    idx = np.array([3, 0, -1, 2, 2])
    for axis in (0, 1, 2, -1, -3):
        k = idx % a.shape[axis] - (a.shape[axis] if axis % 2 else 0)
        assert_same(xp.take(x, xp.asarray(k), axis=axis), np.take(a, k, axis=axis))
    v = a[:, 1, 2]
    assert_same(xp.take(xp.asarray(v), xp.asarray(idx)), np.take(v, idx))          # 1-D, axis omitted
    assert_same(xp.take(xp.asarray(v), xp.asarray(idx), axis=0), np.take(v, idx))
    e = np.array([], dtype=np.int64)
    assert_same(xp.take(x, xp.asarray(e), axis=1), np.take(a, e, axis=1))
    assert_same(xp.take(x[:, ::-2], xp.asarray([0, 2]), axis=1), np.take(a[:, ::-2], [0, 2], axis=1))
    for dt in INDEX_DTYPES:
        k = np.array([1, 0, 3]).astype(dt)
        assert_same(xp.take(x, xp.asarray(k), axis=2), np.take(a, k, axis=2))
    with pytest.raises(ValueError):
        xp.take(x, xp.asarray([0]))                     # axis is required for ndim > 1
    with pytest.raises((ValueError, IndexError)):
        xp.take(x, xp.asarray([0]), axis=3)
    with pytest.raises(ValueError):
        xp.take(xp.asarray(a[0, 0, 0]), xp.asarray([0]))


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64", "complex64", "bool"])
def test_take_along_axis(dtype):
    rng = np.random.default_rng(24)
    a = sample(dtype, (4, 5, 3), seed=25)
    x = xp.asarray(a)
    for axis in (0, 1, 2, -1, -2):
        n = a.shape[axis]
        ishape = list(a.shape)
        ishape[axis] = 7
        k = rng.integers(-n, n, ishape)
        assert_same(xp.take_along_axis(x, xp.asarray(k), axis=axis), np.take_along_axis(a, k, axis=axis))
    assert_same(xp.take_along_axis(x, xp.asarray(np.argsort(a, axis=1)), axis=1),
                np.take_along_axis(a, np.argsort(a, axis=1), axis=1))
    # broadcasting of x and indices off the axis
    k = rng.integers(0, 5, (1, 2, 3))
    assert_same(xp.take_along_axis(x, xp.asarray(k), axis=1), np.take_along_axis(a, k, axis=1))
    k = rng.integers(0, 5, (4, 2, 1))
    assert_same(xp.take_along_axis(x, xp.asarray(k), axis=1), np.take_along_axis(a, k, axis=1))
    b = a[:1]                                           # x of extent 1 off the axis
    k = rng.integers(-3, 3, (6, 5, 2))
    assert_same(xp.take_along_axis(xp.asarray(b), xp.asarray(k), axis=2), np.take_along_axis(b, k, axis=2))
    # index dtypes, non-contiguous x and indices, empty
    for dt in INDEX_DTYPES:
        k = rng.integers(0, 3, (4, 5, 2)).astype(dt)
        assert_same(xp.take_along_axis(x, xp.asarray(k), axis=-1), np.take_along_axis(a, k, axis=-1))
    k = rng.integers(-4, 4, (8, 5, 6))
    assert_same(xp.take_along_axis(xp.flip(x, axis=1), xp.asarray(k)[::2, :, ::-2], axis=0),
                np.take_along_axis(np.flip(a, axis=1), k[::2, :, ::-2], axis=0))
    e = np.zeros((4, 0, 3), dtype=np.int64)
    assert_same(xp.take_along_axis(x, xp.asarray(e), axis=1), np.take_along_axis(a, e, axis=1))
    v = a[:, 0, 0]
    assert_same(xp.take_along_axis(xp.asarray(v), xp.asarray([3, -4, 0]), axis=0),
                np.take_along_axis(v, np.array([3, -4, 0]), axis=0))
    assert_same(xp.take_along_axis(xp.asarray(v), xp.asarray([1, 2])), np.take_along_axis(v, np.array([1, 2]), -1))
    with pytest.raises(ValueError):
        xp.take_along_axis(x, xp.asarray([0]), axis=0)   # ndim mismatch
    with pytest.raises(ValueError):
        xp.take_along_axis(x, xp.asarray(np.zeros((3, 5, 3), dtype=np.int64)), axis=1)  # 3 vs 4 off the axis


# ------------------------------------------------------------------------ many arrays, high rank, strided indices
def test_many_index_arrays():
    rng = np.random.default_rng(26)
    shape = (2, 3, 2, 3, 2, 2, 2, 2)
    a = sample("float32", shape, seed=27)
    x = xp.asarray(a)

    def idx(n, size=4):
        return rng.integers(-n, n, size)

    for k in (3, 4, 5, 7, 8):                            # K padded to 4 and 8
        key = tuple(idx(n) for n in shape[:k])
        assert_same(x[dev(key)], a[key])
        key = (slice(None),) + tuple(idx(n, (2, 1) if i % 2 else (3,)) for i, n in enumerate(shape[1:k]))
        assert_same(x[dev(key)], a[key])
    key = (idx(2), slice(None), idx(2), slice(None, None, -1), idx(2), 1, idx(2), idx(2))   # separated
    assert_same(x[dev(key)], a[key])
    m = rng.random(shape[:3]) < 0.5                      # a 3-d mask (3 arrays) with 2 more arrays
    key = (m, idx(3, 1), idx(2, 1))
    assert_same(x[dev(key)], a[key])
    x[dev(key)] = -1.0
    a[key] = -1.0
    assert_same(x, a)
    # NumPy takes any number; gparray's launch takes at most 8 index arrays
    b = sample("int8", (2,) * 9, seed=28)
    key = tuple(idx(2) for _ in range(9))
    try:
        got = xp.asarray(b)[dev(key)]
    except IndexError as exc:
        assert "at most 8" in str(exc)
    else:
        assert_same(got, b[key])


def test_high_rank_non_contiguous_sources():
    a = sample("int64", (3, 2, 4, 2, 3, 2), seed=29)
    x = xp.asarray(a)
    perm = (5, 0, 3, 1, 4, 2)
    at, xt = a.transpose(perm)[::-1, :, :, ::-1, 1:, ::2], xp.permute_dims(x, perm)[::-1, :, :, ::-1, 1:, ::2]
    assert_same(xt, at)
    for key in [(slice(None), np.array([2, 0, -1])),
                (Ellipsis, np.array([1, 0])),
                (slice(None), slice(None), np.array([[1], [0]]), slice(None), np.array([0, 1, 1])),
                (np.array([1, 0]), slice(None), slice(None), slice(None), np.array([-1, 0]), slice(None)),
                (None, slice(None), np.array([0]), None, slice(None, None, -1), Ellipsis, np.array([1, 0]))]:
        assert_same(xt[dev(key)], at[key])
        xt[dev(key)] = -3
        at[key] = -3
        assert_same(x, a)
    m = at[..., 0] > 0                                   # a 5-d mask on a strided 6-d view
    assert_same(xt[xp.asarray(m)], at[m])
    full = at > 0
    assert_same(xt[xt > 0], at[full])


def test_non_contiguous_index_arrays():
    a = sample("float64", (7, 6), seed=30)
    x = xp.asarray(a)
    base = np.array([6, -1, 0, 3, 2, -7, 5, 1, 4, 0])
    for dt in ("int64", "int32", "uint64", "int8", "uint32"):
        b = np.abs(base).astype(dt) % 7 if np.dtype(dt).kind == "u" else base.astype(dt)
        bx = xp.asarray(b)
        for kn, kx in [(b[::2], bx[::2]), (b[::-3], bx[::-3]), (b[3:], bx[3:]), (b[1:9:2][::-1], bx[1:9:2][::-1])]:
            assert_same(x[kx], a[kn])
            assert_same(x[kx, 1], a[kn, 1])
        k2 = b[:6].reshape(2, 3)
        k2x = bx[:6]
        k2x = xp.reshape(k2x, (2, 3))
        assert_same(x[xp.permute_dims(k2x, (1, 0))], a[k2.T])                        # transposed
        assert_same(x[xp.broadcast_to(bx[2:5], (4, 3))], a[np.broadcast_to(b[2:5], (4, 3))])  # stride 0
        assert_same(x[xp.broadcast_to(bx[2:3], (5,)), xp.asarray([0, 5, 1, 2, 3])],
                    a[np.broadcast_to(b[2:3], (5,)), np.array([0, 5, 1, 2, 3])])
    # scatter through strided indices
    c = np.zeros(12)
    cx = xp.asarray(c)
    k = np.arange(12)[::-2]                              # 11, 9, ..., 1
    kx = xp.asarray(np.arange(12))[::-2]
    cx[kx] = xp.asarray(np.arange(6.0))
    c[k] = np.arange(6.0)
    assert_same(cx, c)
    cx[:][xp.broadcast_to(xp.asarray([3]), (4,))] = 9.0  # a broadcast index: one target
    c[3] = 9.0
    assert_same(cx, c)


def test_scatter_non_contiguous_values():
    a = np.zeros((5, 4), dtype=np.float32)
    x = xp.asarray(a)
    v = sample("float32", (8, 6), seed=31)
    vx = xp.asarray(v)
    i = np.array([4, 0, 2])
    for vn, vv in [(v[::2, 1:5][:3], vx[::2, 1:5][:3]),            # strided
                   (v[::-3, ::-1][:3, :4], vx[::-3, ::-1][:3, :4]),  # flipped
                   (v[:4, :3].T, xp.permute_dims(vx[:4, :3], (1, 0))),  # transposed
                   (np.broadcast_to(v[0, :4], (3, 4)), xp.broadcast_to(vx[0, :4], (3, 4)))]:
        a[i] = vn
        x[xp.asarray(i)] = vv
        assert_same(x, a)
    m = np.array([[True, False, True, False]] * 5)       # 10 True
    u = sample("float32", (20,), seed=33)
    ux = xp.asarray(u)
    a[m] = u[::2]
    x[xp.asarray(m)] = ux[::2]
    assert_same(x, a)
    a[m] = u[::-2]
    x[xp.asarray(m)] = ux[::-2]
    assert_same(x, a)
    w = sample("int16", (2, 12), seed=32)                 # another dtype, strided: cast on the way
    a[i, 1] = w[1, ::4]
    x[xp.asarray(i), 1] = xp.asarray(w)[1, ::4]
    assert_same(x, a)


def test_offsets_beyond_int32():
    n = 2**31 + 16                                       # 2 GiB of int8: 64-bit offsets in every launch
    x = xp.zeros((n,), dtype=xp.int8)
    x[-3:] = 7
    x[2**31 - 1] = 3
    idx = np.array([2**31 + 13, 0, -1, 2**31 - 1, -n])
    assert_same(x[xp.asarray(idx)], np.array([7, 0, 7, 3, 0], dtype=np.int8))
    assert_same(x[xp.asarray([2**31 - 1], dtype=xp.int32)], np.array([3], dtype=np.int8))
    assert_same(x[xp.asarray([2**31 + 14], dtype=xp.uint64)], np.array([7], dtype=np.int8))
    assert_same(x[xp.asarray([2**31 + 5], dtype=xp.uint32)], np.array([0], dtype=np.int8))
    x[xp.asarray([2**31 + 1, 5])] = xp.asarray([4, 5], dtype=xp.int8)
    assert int(x[2**31 + 1]) == 4 and int(x[5]) == 5 and int(x[2**31]) == 0
    with pytest.raises(IndexError, match=re.escape(f"index {n} is out of bounds for axis 0 with size {n}")):
        x[xp.asarray([n])]
    with pytest.raises(IndexError, match=re.escape(f"index {-n - 1} is out of bounds for axis 0 with size {n}")):
        x[xp.asarray([-n - 1])] = 1
    assert_same(xp.take(x, xp.asarray([-2, 2**31 + 1])), np.array([7, 4], dtype=np.int8))
    y = xp.reshape(x[:2**31 + 16], (2, 2**30 + 8))       # a 2-d view whose row stride times 1 exceeds int32
    assert_same(y[xp.asarray([1, 0]), xp.asarray([-1, 5])], np.array([7, 5], dtype=np.int8))
    del x, y


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "int64", "complex128"])
def test_mask_tiles_every_element_size(dtype):
    n = 3 * TILE + 5
    rng = np.random.default_rng(34)
    a = sample(dtype, (n,), seed=35)
    x = xp.asarray(a)
    m = rng.random(n) < 0.6
    assert_same(x[xp.asarray(m)], a[m])
    b = sample(dtype, (2 * TILE + 7, 3), seed=36)       # strided source and mask, more than a tile
    y = xp.asarray(b)
    mb = rng.random(b.shape) < 0.5
    assert_same(y[:, ::-1][xp.asarray(mb)[::-1]], b[:, ::-1][mb[::-1]])
    vals = sample(dtype, (int(mb.sum()),), seed=37)
    y[xp.asarray(mb)] = xp.asarray(vals)
    b[mb] = vals
    assert_same(y, b)


def test_broadcast_masks():
    a = sample("float32", (4, 5), seed=38)
    x = xp.asarray(a)
    row = np.array([True, False, True, True, False])
    col = np.array([False, True, True, False])
    mr, mc = np.broadcast_to(row, (4, 5)), np.broadcast_to(col[:, None], (4, 5))
    assert_same(x[xp.broadcast_to(xp.asarray(row), (4, 5))], a[mr])
    assert_same(x[xp.broadcast_to(xp.asarray(col)[:, None], (4, 5))], a[mc])
    for g, e in zip(xp.nonzero(xp.broadcast_to(xp.asarray(row), (4, 5))), np.nonzero(mr)):
        assert_same(g, e.astype(np.int64))
    x[xp.broadcast_to(xp.asarray(row), (4, 5))] = -1.0
    a[mr] = -1.0
    assert_same(x, a)
    x[xp.broadcast_to(xp.asarray(col)[:, None], (4, 5))] = xp.arange(10, dtype=xp.float32)
    a[mc] = np.arange(10, dtype=np.float32)
    assert_same(x, a)


def test_scatter_zero_d_value_views_of_x():
    a = np.arange(8.0)
    x = xp.asarray(a)
    m = np.array([True, False, False, True, True, False, True, False])
    x[xp.asarray(m)] = x[3]                              # a 0-d view of an element the fill overwrites
    a[m] = a[3].copy()
    assert_same(x, a)
    a = np.arange(8.0)
    x = xp.asarray(a)
    x[xp.asarray([6, 0, 2])] = x[2]                      # scatter of a 0-d view, overwritten on the way
    a[[6, 0, 2]] = a[2].copy()
    assert_same(x, a)
    x[xp.asarray([1, 5])] = xp.asarray(7)                # a 0-d int64 array into float64
    a[[1, 5]] = 7
    assert_same(x, a)
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    y = xp.asarray(b)
    y[xp.asarray([0, 2])] = y[1]                         # a row view of y into other rows
    b[[0, 2]] = b[1].copy()
    assert_same(y, b)
    y[xp.asarray([2, 1, 0])] = y[::-1]                   # the whole of y, reversed
    b[[2, 1, 0]] = b[::-1].copy()
    assert_same(y, b)


def test_take_along_axis_repeat_calls():
    """The second call with the same layouts takes the remembered launch: new data, views at
    other offsets (other alignment), other axes and an out-of-range index all still behave."""
    from gparray._api import _indexing_functions as _f

    rng = np.random.default_rng(31)
    a = rng.standard_normal((6, 40)).astype(np.float32)
    k = rng.integers(-40, 40, (6, 9))
    for _ in range(3):
        assert_same(xp.take_along_axis(xp.asarray(a), xp.asarray(k), axis=1), np.take_along_axis(a, k, axis=1))
    assert any(key[-1] == 1 for key in _f._fast)
    big = xp.asarray(np.concatenate([a, a], axis=1))   # same shape and strides at offsets 1 and 3
    for off in (1, 3, 0):
        view = big[:, off:off + 40:1]
        view2 = xp.asarray(a)[:, :]
        exp = np.take_along_axis(np.concatenate([a, a], axis=1)[:, off:off + 40], k, axis=1)
        assert_same(xp.take_along_axis(view, xp.asarray(k), axis=1), exp)
        assert_same(xp.take_along_axis(view2, xp.asarray(k), axis=-1), np.take_along_axis(a, k, axis=1))
    bad = k.copy()
    bad[2, 3] = 40
    for _ in range(2):
        with pytest.raises(IndexError, match="axis 1 with size 40"):
            xp.take_along_axis(xp.asarray(a), xp.asarray(bad), axis=1)
