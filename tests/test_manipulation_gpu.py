"""GPU tier: roll, tile, repeat, moveaxis and permute_dims against NumPy.

Every dtype family (bool, int8, int64, uint16, float16, float32, float64, complex128) over
several source layouts: contiguous, a step view (x[::2]), transposed, flipped (negative
strides) and broadcast (stride 0); 0-d and empty arrays; shifts beyond the axis length and
negative; repeats of 0. Array-valued ``repeat`` counts go through ``take`` and are in their
own section at the end (``test_repeat_array_*``).

Run on the device machine:  python -m pytest -q tests/test_manipulation_gpu.py
"""
import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same, host
from _arrays import sample as _sample

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "int64", "uint16", "float16", "float32", "float64", "complex128"]
LAYOUTS = ["contiguous", "step", "transposed", "flipped", "broadcast"]


def sample(dtype, shape, seed=0):
    """Random values of ``dtype``; floating samples include -0.0 and NaN (bit-exact copies)."""
    return _sample(dtype, shape, seed, specials=True)


def layout(a, kind):
    """(gparray view, NumPy equivalent) of sample ``a`` (ndim >= 1) in layout ``kind``."""
    x = xp.asarray(a)
    if kind == "contiguous":
        return x, a
    if kind == "step":
        return x[::2], a[::2]
    if kind == "transposed":
        perm = tuple(reversed(range(a.ndim)))
        return xp.permute_dims(x, perm), a.transpose(perm)
    if kind == "flipped":
        return xp.flip(x), np.flip(a)
    if kind == "broadcast":  # the first row broadcast over the leading axis (stride 0)
        return xp.broadcast_to(x[:1], a.shape), np.broadcast_to(a[:1], a.shape)
    raise AssertionError(kind)


def assert_fresh(result, source):
    """The result is a new C-contiguous array: writing it leaves ``source`` alone."""
    before = host(source)
    if result.size:
        result[...] = xp.zeros((), dtype=result.dtype)
    np.testing.assert_array_equal(host(source), before)
    assert result._is_c_contig()


# ------------------------------------------------------------------------------- roll
ROLLS = [  # (shift, axis) on a (5, 4, 3) source
    (1, 0), (-1, 0), (2, 1), (7, 1), (-13, 2), (4, -2), (0, 1), (5, 0), (-5, 0),
    ((1, 2), (0, 2)), ((1, -1), (1, 1)), (3, (0, 1, 2)), ((2,), (0, 1)), ((1, 2, 3), 1),
    (2, None), (-61, None), (0, None), ((1, 1), None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_roll(dtype, kind):
    x, ref = layout(sample(dtype, (5, 4, 3)), kind)
    for shift, axis in ROLLS:
        got = xp.roll(x, shift, axis=axis)
        assert_same(got, np.roll(ref, shift, axis=axis), (kind, shift, axis))
    assert_fresh(xp.roll(x, 1, axis=0), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_zero_d_and_empty(dtype):
    a = sample(dtype, ())
    assert_same(xp.roll(xp.asarray(a), 3), np.roll(a, 3))
    assert_same(xp.roll(xp.asarray(a), (1, -2)), np.roll(a, (1, -2)))
    for shape, axis in [((0,), 0), ((0,), None), ((3, 0), 0), ((3, 0), 1), ((0, 4), (0, 1))]:
        e = sample(dtype, shape)
        assert_same(xp.roll(xp.asarray(e), 2, axis=axis), np.roll(e, 2, axis=axis), (shape, axis))


@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128"])
def test_roll_large_and_many_axes(dtype):
    a = sample(dtype, (257, 1031), seed=1)
    x = xp.asarray(a)
    for shift, axis in [(1000, 1), (-3, 0), ((100, -517), (0, 1)), (123457, None)]:
        assert_same(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis), (shift, axis))
    assert_same(xp.roll(x.mT, (5, 9), axis=(0, 1)), np.roll(a.T, (5, 9), axis=(0, 1)))
    b = sample(dtype, (2, 3, 2, 3, 2), seed=2)  # five rolled axes: two passes
    assert_same(xp.roll(xp.asarray(b), (1, 2, 1, -1, 1), axis=(0, 1, 2, 3, 4)),
                np.roll(b, (1, 2, 1, -1, 1), axis=(0, 1, 2, 3, 4)))


def test_roll_errors():
    x = xp.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match="^roll: "):
        xp.roll(np.arange(3), 1)
    with pytest.raises(IndexError, match="^roll: "):
        xp.roll(x, 1, axis=2)
    with pytest.raises(ValueError, match="^roll: "):
        xp.roll(x, (1, 2, 3), axis=(0, 1))


# ------------------------------------------------------------------------------- tile
TILES = [2, (2,), (1, 3), (3, 1, 1), (2, 1, 2, 1), (1, 1, 1), (0,), (2, 0), (0, 2, 1), ()]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_tile(dtype, kind):
    x, ref = layout(sample(dtype, (4, 3)), kind)
    for reps in TILES:
        assert_same(xp.tile(x, reps), np.tile(ref, reps), (kind, reps))
    assert_same(xp.tile(x, [2, 2]), np.tile(ref, [2, 2]), "list")
    assert_fresh(xp.tile(x, (1, 1)), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_zero_d_and_empty(dtype):
    a = sample(dtype, ())
    for reps in [(), (3,), (2, 3), 4, (0,)]:
        assert_same(xp.tile(xp.asarray(a), reps), np.tile(a, reps), reps)
    for shape in [(0,), (2, 0), (0, 3)]:
        e = sample(dtype, shape)
        for reps in [(2,), (3, 2), (1, 2, 2)]:
            assert_same(xp.tile(xp.asarray(e), reps), np.tile(e, reps), (shape, reps))


def test_tile_large_and_errors():
    a = sample("float32", (300, 517), seed=3)
    assert_same(xp.tile(xp.asarray(a), (3, 2)), np.tile(a, (3, 2)))
    assert_same(xp.tile(xp.asarray(a)[::-3, 1::2], (2, 1, 3)), np.tile(a[::-3, 1::2], (2, 1, 3)))
    with pytest.raises(ValueError, match="^tile: "):
        xp.tile(xp.asarray(a), (2, -1))
    with pytest.raises(TypeError, match="^tile: "):
        xp.tile(a, (2,))


# ------------------------------------------------------------------ repeat (int counts)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_repeat_int(dtype, kind):
    x, ref = layout(sample(dtype, (4, 3, 2)), kind)
    for r in (0, 1, 2, 5):
        for axis in (None, 0, 1, 2, -1):
            assert_same(xp.repeat(x, r, axis=axis), np.repeat(ref, r, axis=axis), (kind, r, axis))
    assert_fresh(xp.repeat(x, 1, axis=0), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_int_zero_d_and_empty(dtype):
    a = sample(dtype, ())
    for r in (0, 1, 3):
        assert_same(xp.repeat(xp.asarray(a), r), np.repeat(a, r))
        assert_same(xp.repeat(xp.asarray(a), r, axis=0), np.repeat(a, r, axis=0))
    for shape in [(0,), (2, 0), (0, 3)]:
        e = sample(dtype, shape)
        for axis in (None, 0, -1):
            assert_same(xp.repeat(xp.asarray(e), 3, axis=axis), np.repeat(e, 3, axis=axis), (shape, axis))


def test_repeat_int_large_and_errors():
    a = sample("int64", (1000, 77), seed=4)
    for axis in (None, 0, 1):
        assert_same(xp.repeat(xp.asarray(a), 3, axis=axis), np.repeat(a, 3, axis=axis), axis)
    x = xp.asarray(a)
    with pytest.raises(ValueError, match="^repeat: "):
        xp.repeat(x, -1)
    with pytest.raises(TypeError, match="^repeat: "):
        xp.repeat(x, 1.5)
    with pytest.raises(TypeError, match="^repeat: "):
        xp.repeat(a, 2)
    with pytest.raises(IndexError, match="^repeat: "):
        xp.repeat(x, 2, axis=2)


# ------------------------------------------------------------------- moveaxis, permute_dims
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_moveaxis_and_permute_dims(dtype, kind):
    x, ref = layout(sample(dtype, (4, 3, 2, 5)), kind)
    for src, dst in [(0, -1), ([0, 2], (-2, -1)), ((0, 2), [-2, -1]), ([3, 0], [0, 3]), ([], []),
                     ((0, 1, 2, 3), (3, 2, 1, 0))]:
        got = xp.moveaxis(x, src, dst)
        assert_same(got, np.moveaxis(ref, src, dst), (kind, src, dst))
        assert got._buf is x._buf  # a view
    for axes in ([3, 1, 0, 2], (0, 1, 2, 3), (2, 3, 0, 1)):
        assert_same(xp.permute_dims(x, axes), np.transpose(ref, tuple(axes)), (kind, axes))
    assert_same(xp.permute_dims(xp.asarray(np.arange(3)), 0), np.arange(3))
    with pytest.raises(ValueError, match="^moveaxis: "):
        xp.moveaxis(x, [0, 1], [0])
    with pytest.raises(ValueError, match="^permute_dims: "):
        xp.permute_dims(x, [0, 1])


# ------------------------------------------------- repeat with Array counts (uses take)
def _needs_take():
    return pytest.importorskip("gparray._api._indexing_functions", reason="take is not in this tree yet")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_repeat_array_counts(dtype, kind):
    _needs_take()
    x, ref = layout(sample(dtype, (4, 3, 2)), kind)
    rng = np.random.default_rng(5)
    for axis in (0, 1, 2, -1, None):
        n = ref.size if axis is None else ref.shape[axis]
        counts = rng.integers(0, 4, n)
        counts[0] = 0
        got = xp.repeat(x, xp.asarray(counts), axis=axis)
        assert_same(got, np.repeat(ref, counts, axis=axis), (kind, axis, counts))
        assert_fresh(got, x)


@pytest.mark.parametrize("rdtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_repeat_array_count_dtypes_and_layouts(rdtype):
    _needs_take()
    a = sample("float64", (6, 5), seed=6)
    x = xp.asarray(a)
    counts = np.array([2, 0, 1, 3, 0, 1], dtype=rdtype)
    c64 = counts.astype(np.int64)  # NumPy's repeat refuses uint64 counts (no safe cast to intp)
    assert_same(xp.repeat(x, xp.asarray(counts), axis=0), np.repeat(a, c64, axis=0))
    wide = np.array([1, 9, 0, 9, 3, 9, 2, 9, 0, 9, 4, 9], dtype=rdtype)  # counts as a step view
    assert_same(xp.repeat(x, xp.asarray(wide)[::2], axis=0), np.repeat(a, wide[::2].astype(np.int64), axis=0))
    assert_same(xp.repeat(x, xp.flip(xp.asarray(counts)), axis=0), np.repeat(a, c64[::-1], axis=0))


def test_repeat_array_special_counts():
    _needs_take()
    a = sample("int16", (3, 4), seed=7)
    x = xp.asarray(a)
    # all zeros: an empty result of the right shape
    assert_same(xp.repeat(x, xp.zeros(4, dtype=xp.int64), axis=1), np.repeat(a, np.zeros(4, int), axis=1))
    # one count for every element (shape (1,) and 0-d)
    assert_same(xp.repeat(x, xp.asarray([3]), axis=1), np.repeat(a, [3], axis=1))
    assert_same(xp.repeat(x, xp.asarray(2), axis=0), np.repeat(a, 2, axis=0))
    assert_same(xp.repeat(x, xp.asarray([0]), axis=None), np.repeat(a, [0]))
    # an empty axis takes an empty count array
    e = sample("float32", (0, 3))
    assert_same(xp.repeat(xp.asarray(e), xp.zeros(0, dtype=xp.int32), axis=0),
                np.repeat(e, np.zeros(0, np.int32), axis=0))
    # a long output (many positions per count)
    counts = np.arange(4) * 1000
    assert_same(xp.repeat(x, xp.asarray(counts), axis=1), np.repeat(a, counts, axis=1))
    b = sample("complex128", (2000,), seed=8)
    counts = np.random.default_rng(9).integers(0, 3, 2000)
    assert_same(xp.repeat(xp.asarray(b), xp.asarray(counts)), np.repeat(b, counts))


def test_repeat_array_errors():
    x = xp.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="^repeat: repeats must be non-negative"):
        xp.repeat(x, xp.asarray([1, -1, 2]), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats must be non-negative"):
        xp.repeat(x, xp.asarray([-2]), axis=1)
    with pytest.raises(TypeError, match="^repeat: repeats must have an integer dtype"):
        xp.repeat(x, xp.asarray([1.0, 2.0, 1.0]), axis=1)
    with pytest.raises(TypeError, match="^repeat: repeats must have an integer dtype"):
        xp.repeat(x, xp.asarray([True, False, True]), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats of shape"):
        xp.repeat(x, xp.asarray([1, 2]), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats of shape"):
        xp.repeat(x, xp.ones((1, 3), dtype=xp.int64), axis=1)
