"""GPU tier: sort and argsort against NumPy on the same inputs.

Every real dtype with duplicates, NaN (both signs, payloads), +-inf, -0.0 next to 0.0
(argsort keeps their input order; sort returns the input's exact bits), all-equal keys,
sorted and reverse-sorted input; empty and 0-d arrays; sizes around every tile and digit
boundary (the warp/block thresholds 32/256/1024/4096, the 4096-, 4224- and 6912-key onesweep tiles,
2**16 +-1, 2**20 + 3); indices carried as 32- and (forced) 64-bit values between passes;
every axis of 3-D arrays; transposed and negative-stride inputs; many short rows and few
long rows (rows folded into the key); 2**24 keys once; OutOfMemoryError without
half-state. Descending is the spec's stable descending order (equal elements in input order,
NaNs first), as array-api-strict computes it.

Run on the device machine:  python -m pytest -q tests/test_sorting_gpu.py
"""
import numpy as np
import pytest

import gparray as xp
from test_sort_plan import specials, stable_desc_argsort

pytestmark = pytest.mark.gpu

REAL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIZES = [1, 2, 3, 16, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 8193,
         6911, 6912, 6913, 13824, 13825,  # the wide tile (384 x 18 keys: keys-only sorts of 4-byte keys)
         6143, 6144, 6145, 12289,  # 384 x 16 keys (GP_SORT_WIDE_ITEMS=16)
         4223, 4224, 4225, 8448, 8449,  # the 8-byte-key tile (384 x 11 keys: keys-only sorts of 8-byte keys)
         2**16 - 1, 2**16, 2**16 + 1, 2**20 + 3]


def data(dtype, shape, seed=0):
    """Values of ``dtype`` drawn (with many repeats) from specials(): duplicates, extremes,
    NaNs of both signs, +-inf, -0.0 and 0.0."""
    rng = np.random.default_rng(seed)
    return rng.choice(specials(dtype, 300, seed), int(np.prod(shape))).reshape(shape)


def expected_argsort(a, axis=-1, descending=False):
    m = np.moveaxis(a, axis, -1)
    idx = stable_desc_argsort(m) if descending else np.argsort(m, axis=-1, kind="stable")
    return np.moveaxis(idx, -1, axis)


def check(x_dev, a, axis=-1, descending=False):
    """sort and argsort of x_dev (holding NumPy array a) against NumPy: argsort exactly, sort
    bit for bit (the values at the expected indices)."""
    idx = expected_argsort(a, axis, descending)
    got_i = np.asarray(xp.argsort(x_dev, axis=axis, descending=descending))
    assert got_i.dtype == np.int64 and got_i.shape == a.shape
    np.testing.assert_array_equal(got_i, idx)
    got = np.asarray(xp.sort(x_dev, axis=axis, descending=descending))
    want = np.take_along_axis(a, idx, axis)
    assert got.dtype == a.dtype and got.shape == a.shape
    U = UINT[a.dtype.itemsize]
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(U), np.ascontiguousarray(want).view(U))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("descending", [False, True])
def test_every_dtype_with_specials(dtype, descending):
    for n in (5, 40, 700, 3000, 20000):
        a = data(dtype, (n,), n)
        check(xp.asarray(a), a, descending=descending)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_sizes_around_tile_and_digit_boundaries(n, dtype):
    a = data(dtype, (n,), n)
    x = xp.asarray(a)
    check(x, a)
    if n in (33, 4097, 6913, 8193, 13825, 2**16 + 1):
        check(x, a, descending=True)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint64", "float64", "bool"])
@pytest.mark.parametrize("n", [100, 5000, 2**20])
def test_all_equal_sorted_and_reversed(dtype, n):
    rng = np.random.default_rng(n)
    base = np.sort(data(dtype, (n,), 3), kind="stable")
    for a in (np.full(n, base[n // 2]), base, base[::-1].copy(), np.repeat(base[: n // 7 + 1], 7)[:n]):
        check(xp.asarray(a), a)
        check(xp.asarray(a), a, descending=True)
    # integers in a small range: most digits constant (their passes are skipped)
    if np.dtype(dtype).kind in "iu":
        a = rng.integers(0, 100, n).astype(dtype)
        check(xp.asarray(a), a)


def test_negative_zero_and_nan_order():
    a = np.array([0.0, -0.0, np.nan, 1.0, -0.0, 0.0, -np.nan, -1.0, np.inf, -np.inf], np.float32)
    x = xp.asarray(a)
    np.testing.assert_array_equal(np.asarray(xp.argsort(x)), [9, 7, 0, 1, 4, 5, 3, 8, 2, 6])
    np.testing.assert_array_equal(np.asarray(xp.argsort(x, descending=True)), [2, 6, 8, 3, 0, 1, 4, 5, 7, 9])
    s = np.asarray(xp.sort(x))
    np.testing.assert_array_equal(np.signbit(s[2:6]), [False, True, True, False])   # input order kept
    check(x, a)
    check(x, a, descending=True)


@pytest.mark.parametrize("shape", [(4, 6, 20), (3, 700, 5), (2, 3, 5000), (5000, 2, 3), (9, 40, 33)])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_every_axis_of_3d(shape, axis):
    for i, dtype in enumerate(["float32", "int16"]):
        a = data(dtype, shape, i)
        check(xp.asarray(a), a, axis=axis)
    check(xp.asarray(a), a, axis=axis, descending=True)


@pytest.mark.parametrize("shape", [(64, 20), (300, 500), (3, 9000), (9000, 3)])
@pytest.mark.parametrize("dtype", ["float64", "int32", "uint16"])
def test_non_contiguous_inputs(shape, dtype):
    a = data(dtype, shape, 1)
    x = xp.asarray(a)
    for view, ref in [(x.T, a.T), (x[::-1], a[::-1]), (x[:, ::-2], a[:, ::-2]), (x.T[::-1], a.T[::-1])]:
        for axis in (0, 1):
            check(view, ref, axis=axis)
            check(view, ref, axis=axis, descending=True)


@pytest.mark.parametrize("shape", [(2**16, 16), (1000, 3), (5000, 100), (100, 2000), (777, 1), (3, 70000),
                                   (2, 2**17 + 1), (300, 5000)])
def test_many_short_rows_and_few_long_rows(shape):
    for i, dtype in enumerate(["float32", "int64", "uint8"]):
        a = data(dtype, shape, i)
        check(xp.asarray(a), a, axis=1)
    check(xp.asarray(a), a, axis=1, descending=True)
    check(xp.asarray(a), a, axis=0)


@pytest.mark.parametrize("shape", [(20000,), (3, 9000), (2, 2**17 + 1)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_64_bit_values_between_passes(monkeypatch, shape, dtype):
    """Device-wide sorts of 2^32 elements or more carry their indices as int64 between passes
    (the 256 x 16 tile for 4-byte keys): that path forced on small inputs."""
    from gparray._engine import _sort

    monkeypatch.setattr(_sort, "VALUE32_LIMIT", 0)
    st = (1,) if len(shape) == 1 else (shape[1], 1)
    p = _sort.plan(shape, st, len(shape) - 1, 4, argsort=True)
    assert p.strategy == "onesweep" and p.vbytes == 8 and p.threads == _sort.OS_THREADS
    a = data(dtype, shape, 4)
    check(xp.asarray(a), a)
    check(xp.asarray(a), a, descending=True)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5), (2, 0, 4)])
def test_empty(shape):
    for axis in range(len(shape)):
        x = xp.asarray(np.zeros(shape, np.float32))
        assert xp.sort(x, axis=axis).shape == shape
        r = xp.argsort(x, axis=axis)
        assert r.shape == shape and r.dtype == xp.int64


def test_zero_d_and_errors():
    x = xp.asarray(np.float32(3.0))
    with pytest.raises(IndexError, match="^sort: axis -1 is out of bounds for array of dimension 0"):
        xp.sort(x)
    with pytest.raises(ValueError, match="^argsort: axis -1 is out of bounds"):
        xp.argsort(x)
    m = xp.asarray(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="^sort: axis 3 is out of bounds for array of dimension 2"):
        xp.sort(m, axis=3)
    with pytest.raises(TypeError, match="^sort: expected an array with a real dtype, got complex64"):
        xp.sort(xp.asarray(np.zeros(3, np.complex64)))
    with pytest.raises(TypeError, match="^argsort: expected a gparray Array"):
        xp.argsort(np.zeros(3))
    with pytest.raises(TypeError, match="^sort: axis must be an integer"):
        xp.sort(m, axis=1.0)
    # stable=False is accepted (the sort is stable anyway)
    np.testing.assert_array_equal(np.asarray(xp.argsort(m, stable=False)), np.zeros((2, 3), np.int64) + [0, 1, 2])


def test_large_once():
    n = 2**24
    rng = np.random.default_rng(5)
    a = rng.standard_normal(n).astype(np.float32)
    a[rng.integers(0, n, 1000)] = np.nan
    a[rng.integers(0, n, 1000)] = -0.0
    check(xp.asarray(a), a)
    b = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    check(xp.asarray(b), b, descending=True)


def test_out_of_memory_is_clean():
    """The output fits, the temporaries do not: OutOfMemoryError from the engine before any
    launch, every temporary back in the pool, and the next sort works. The pool may hold
    memory that earlier tests' live blocks keep from being released (seen in random order on
    the device: 50 MB); the sort may use it, so n is chosen to make the temporaries (12 bytes
    per element) at least twice that slack plus the headroom."""
    import gc

    from gparray import cuda
    from gparray._engine import _sort

    gc.collect()
    cuda.synchronize()
    cuda.empty_cache()
    headroom = 4 << 20
    slack = cuda.memory_reserved() - cuda.memory_allocated()
    n = 2**22
    while 12 * n < 2 * (slack + headroom) and n < 2**26:
        n *= 2
    a = data("float32", (n,), 9)
    x = xp.asarray(a)
    gc.collect()
    cuda.synchronize()
    cuda.empty_cache()
    old = cuda.get_memory_limit()
    before = cuda.memory_allocated()
    # the premise: what the pool holds but does not use, plus the headroom, is less than the
    # argsort's temporaries (else the sort fits and this test proves nothing)
    slack = cuda.memory_reserved() - before
    temps = sum(_sort.temporaries(_sort.plan((n,), (1,), 0, 4, argsort=True), 4, True).values())
    assert slack + headroom < temps, (n, slack, temps)
    try:
        cuda.set_memory_limit(cuda.memory_reserved() + 8 * n + headroom)   # the int64 result, little more
        with pytest.raises(cuda.OutOfMemoryError):
            xp.argsort(x)
    finally:
        cuda.set_memory_limit(old)
    gc.collect()
    assert cuda.memory_allocated() == before           # nothing held on to
    check(x, a)                                        # and the next sort works
