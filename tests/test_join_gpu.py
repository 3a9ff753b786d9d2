"""GPU tier: concat and stack, one launch of the join engine (gparray/_engine/_join.py),
against NumPy.

Every dtype along axis 0, 1, -1 and None; inputs in every layout (contiguous, stepped,
transposed, flipped, broadcast by stride 0, at an element offset, a window of wider rows)
alone and mixed; mixed dtypes (promotion: those inputs go through the elementwise copy);
empty inputs among others and empty results; 0-d inputs; sizes around a block's tile and
not a multiple of the 16-byte unit; the by-value tables at each capacity boundary and the
device table (1000 inputs); many joins queued back to back on one stream (the device
table's block is reused, stream-ordered); a result beyond 2^31 elements and a piece of
more than 2^32 units (64-bit division; "large": gpu_exclusive, left out of the memcheck
pass with SANITIZE_K="not large").

Run on the device machine:  python -m pytest -q tests/test_join_gpu.py
"""
import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same, host
from _arrays import sample as _sample
from gparray._engine import _join

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          "float32", "float64", "complex64", "complex128"]
FEW = ["bool", "int8", "float16", "float32", "int64", "complex128"]
LAYOUTS = ["contiguous", "step", "transposed", "flipped", "broadcast", "offset", "window"]


def sample(dtype, shape, seed=0):
    """Random values of ``dtype``; floating samples include -0.0 and NaN (bit-exact copies)."""
    return _sample(dtype, shape, seed, specials=True)


def layout(a, kind, seed=0):
    """(gparray view, NumPy equivalent) of sample ``a`` laid out as ``kind``."""
    if kind == "contiguous" or a.ndim == 0:
        return xp.asarray(a), a
    if kind == "step":
        wide = sample(a.dtype, a.shape[:-1] + (2 * a.shape[-1],), seed + 1)
        wide[..., ::2] = a
        return xp.asarray(wide)[..., ::2], a
    if kind == "transposed":
        perm = tuple(reversed(range(a.ndim)))
        return xp.permute_dims(xp.asarray(np.ascontiguousarray(a.transpose(perm))), perm), a
    if kind == "flipped":
        return xp.flip(xp.asarray(np.flip(a).copy())), a
    if kind == "broadcast":  # the first row repeated along axis 0 (stride 0)
        if a.shape[0] == 0:
            return xp.asarray(a), a
        return xp.broadcast_to(xp.asarray(a[:1]), a.shape), np.broadcast_to(a[:1], a.shape)
    if kind == "offset":  # one element past a 512-byte boundary: misaligned for 16-byte units
        flat = sample(a.dtype, (a.size + 1,), seed + 2)
        flat[1:] = a.reshape(-1)
        return xp.reshape(xp.asarray(flat)[1:], a.shape), a
    if kind == "window":  # rows of a wider array (a row step longer than a row)
        wide = sample(a.dtype, a.shape[:-1] + (a.shape[-1] + 3,), seed + 3)
        wide[..., 1:-2] = a
        return xp.asarray(wide)[..., 1:-2], a
    raise AssertionError(kind)


class Count:
    """Counts the join engine's launches and its elementwise copies of left-over inputs."""

    def __init__(self, monkeypatch):
        self.launches = self.copies = 0
        run, copy = _join.run, _join._ew.copy_into

        def counted_run(*a, **k):
            self.launches += 1
            return run(*a, **k)

        def counted_copy(*a, **k):
            self.copies += 1
            return copy(*a, **k)
        monkeypatch.setattr(_join, "run", counted_run)
        monkeypatch.setattr(_join._ew, "copy_into", counted_copy)


def _shapes_along(base, axis, extents):
    out = []
    for k in extents:
        s = list(base)
        s[axis] = k
        out.append(tuple(s))
    return out


# ---------------------------------------------------------------------------- concat
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat_every_dtype_is_one_launch(dtype, axis, monkeypatch):
    base = (4, 5, 7)
    ax = 0 if axis is None else axis % 3
    arrays = [sample(dtype, s, seed=i) for i, s in enumerate(_shapes_along(base, ax, [3, 1, 6, 2]))]
    if axis is None:
        arrays[1] = sample(dtype, (2, 9), seed=11)            # any shapes when flattening
    c = Count(monkeypatch)
    got = xp.concat([xp.asarray(a) for a in arrays], axis=axis)
    assert_same(got, np.concatenate(arrays, axis=axis))
    assert (c.launches, c.copies) == (1, 0)
    assert got._is_c_contig()


@pytest.mark.parametrize("dtype", FEW)
@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat_layouts(dtype, kind, axis):
    base = (6, 5, 9)
    ax = 0 if axis is None else axis % 3
    shapes = _shapes_along(base, ax, [2, 5, 1, 3])
    pairs = [layout(sample(dtype, s, seed=10 + i), kind if i != 1 else "contiguous", seed=i)
             for i, s in enumerate(shapes)]
    got = xp.concat([p[0] for p in pairs], axis=axis)
    assert_same(got, np.concatenate([p[1] for p in pairs], axis=axis))


@pytest.mark.parametrize("kind", LAYOUTS)
def test_concat_every_layout_mixed_in_one_call(kind):
    """Each layout beside all the others, along a middle axis (pieces with row steps)."""
    arrays = [layout(sample("float32", (3, k, 4), seed=k), kd, seed=k)
              for k, kd in zip(range(1, 8), LAYOUTS[LAYOUTS.index(kind):] + LAYOUTS[:LAYOUTS.index(kind)])]
    got = xp.concat([a for a, _ in arrays], axis=1)
    assert_same(got, np.concatenate([b for _, b in arrays], axis=1))


def test_row_steps_that_stay_in_the_launch(monkeypatch):
    """Flipped rows (negative step), broadcast rows (step 0) and a window of wider rows are
    pieces of the launch; a transposed input is copied on its own."""
    a = sample("float64", (6, 8), seed=1)
    x = xp.asarray(a)
    c = Count(monkeypatch)
    got = xp.concat([x[::-1], xp.broadcast_to(x[2:3], (6, 8)), x[:, 1:5], x.T[:6, :6]], axis=1)
    exp = np.concatenate([a[::-1], np.broadcast_to(a[2:3], (6, 8)), a[:, 1:5], a.T[:6, :6]], axis=1)
    assert_same(got, exp)
    assert (c.launches, c.copies) == (1, 1)


@pytest.mark.parametrize("dtypes", [("int8", "int32"), ("bool", "uint8", "int16"), ("float16", "float32"),
                                    ("uint64", "int64"), ("complex64", "float64"), ("int32", "float32", "bool"),
                                    ("float16", "int8")])
@pytest.mark.parametrize("axis", [0, 1])
def test_mixed_dtypes_promote(dtypes, axis):
    arrays = [sample(dt, _shapes_along((3, 4), axis, [2 + i])[0], seed=i) for i, dt in enumerate(dtypes)]
    arrays.append(sample(dtypes[0], _shapes_along((3, 4), axis, [1])[0], seed=9))
    got = xp.concat([xp.asarray(a) for a in arrays], axis=axis)
    exp = np.concatenate(arrays, axis=axis)
    assert got.dtype == xp.result_type(*[xp.asarray(a) for a in arrays]) == exp.dtype
    assert_same(got, exp)


def test_empty_inputs_and_empty_results():
    a, e = sample("int32", (3, 4), seed=1), np.zeros((0, 4), np.int32)
    b = sample("int32", (2, 4), seed=2)
    assert_same(xp.concat([xp.asarray(v) for v in (e, a, e, b, e)]), np.concatenate([e, a, e, b, e]))
    assert_same(xp.concat([xp.asarray(e), xp.asarray(e)]), np.zeros((0, 4), np.int32))
    z = np.zeros((0, 3), np.float32)
    assert_same(xp.concat([xp.asarray(z), xp.asarray(z)], axis=1), np.zeros((0, 6), np.float32))
    assert_same(xp.stack([xp.asarray(z)] * 3, axis=1), np.zeros((0, 3, 3), np.float32))
    assert_same(xp.concat([xp.asarray(e)], axis=None), np.zeros(0, np.int32))
    # an empty input of another dtype changes the result dtype, not the values
    assert_same(xp.concat([xp.asarray(a), xp.asarray(np.zeros((0, 4), np.float64))]),
                np.concatenate([a, np.zeros((0, 4))]))


def test_zero_d_inputs():
    s = [np.array(v, dtype=np.float32) for v in (1.5, -0.0, np.nan)]
    with pytest.raises(ValueError, match="^concat: zero-dimensional"):
        xp.concat([xp.asarray(v) for v in s])
    assert_same(xp.concat([xp.asarray(v) for v in s], axis=None), np.concatenate(s, axis=None))
    assert_same(xp.stack([xp.asarray(v) for v in s]), np.stack(s))
    with pytest.raises(IndexError, match="^stack: axis 1 is out of bounds"):
        xp.stack([xp.asarray(s[0])], axis=1)


def test_one_input_is_a_fresh_copy():
    a = sample("int16", (4, 6), seed=3)
    x = xp.asarray(a)
    for got in (xp.concat([x]), xp.concat([x], axis=1), xp.stack([x], axis=2), xp.concat([x[:, ::-1]], axis=1)):
        assert got._is_c_contig() and got._buf is not x._buf
        got[...] = xp.zeros((), dtype=xp.int16)
    assert_same(x, a)


@pytest.mark.parametrize("n", [1, 3, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095,
                               4097, 8191, 8193, 100003])
def test_sizes_around_a_tile(n):
    for dt in ("float32", "int8", "complex128", "float16"):
        a, b = sample(dt, (n,), seed=1), sample(dt, (n + 1,), seed=2)
        xa, xo = xp.asarray(a), layout(b, "offset")[0]
        assert_same(xp.concat([xa, xo, xa[1:]]), np.concatenate([a, b, a[1:]]))
        m = sample(dt, (3, n), seed=3)
        assert_same(xp.concat([xp.asarray(m), xa[None, :]]), np.concatenate([m, a[None, :]]))
        assert_same(xp.concat([xp.asarray(m), xp.asarray(m[:, :2])], axis=1),
                    np.concatenate([m, m[:, :2]], axis=1))


# ---------------------------------------------------------------------------- stack
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_each_axis(dtype, axis, monkeypatch):
    arrays = [sample(dtype, (4, 5), seed=i) for i in range(3)]
    c = Count(monkeypatch)
    got = xp.stack([xp.asarray(a) for a in arrays], axis=axis)
    assert_same(got, np.stack(arrays, axis=axis))
    assert (c.launches, c.copies) == (1, 0)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_stack_layouts(kind, axis):
    pairs = [layout(sample("complex64", (5, 6), seed=i), kind if i % 2 else "contiguous", seed=i) for i in range(4)]
    got = xp.stack([p[0] for p in pairs], axis=axis)
    assert_same(got, np.stack([p[1] for p in pairs], axis=axis))


def test_stack_mixed_dtypes():
    a, b = sample("int8", (2, 3), seed=1), sample("float32", (2, 3), seed=2)
    assert_same(xp.stack([xp.asarray(a), xp.asarray(b)], axis=1), np.stack([a, b], axis=1))


# ---------------------------------------------------------------------------- tables
@pytest.mark.parametrize("count", [4, 5, 16, 17, 64, 65, 300])
def test_table_capacities(count, monkeypatch):
    """The by-value tables at each capacity boundary and the device table beyond them, with
    a few transposed inputs (copied on their own) and empty ones among the pieces."""
    rng = np.random.default_rng(count)
    arrays = [sample("float32", (3, int(rng.integers(0, 6))), seed=i) for i in range(count)]
    pairs = [layout(a, "transposed" if i % 9 == 4 else "contiguous") for i, a in enumerate(arrays)]
    c = Count(monkeypatch)
    got = xp.concat([p[0] for p in pairs], axis=1)
    assert_same(got, np.concatenate([p[1] for p in pairs], axis=1))
    slow = sum(1 for i, a in enumerate(arrays) if i % 9 == 4 and a.shape[1] > 1)
    assert c.launches == 1 and c.copies == slow


def test_thousand_small_inputs(monkeypatch):
    arrays = [sample("float32", (1000,), seed=i) for i in range(1000)]
    xs = [xp.asarray(a) for a in arrays]
    c = Count(monkeypatch)
    assert_same(xp.concat(xs), np.concatenate(arrays))
    assert_same(xp.stack(xs), np.stack(arrays))
    assert_same(xp.stack(xs, axis=1), np.stack(arrays, axis=1))
    assert_same(xp.concat([x[::-1] if i % 100 == 7 else x for i, x in enumerate(xs)]),
                np.concatenate([a[::-1] if i % 100 == 7 else a for i, a in enumerate(arrays)]))
    assert c.launches == 4 and c.copies == 10
    mixed = [xp.asarray(a.astype(np.float64)) if i == 500 else x for i, (a, x) in enumerate(zip(arrays, xs))]
    assert_same(xp.concat(mixed), np.concatenate([a.astype(np.float64) for a in arrays]))


def test_joins_queued_back_to_back_on_a_stream():
    """Many device-table joins before one synchronization, on a stream of their own: each
    table upload waits for the launch before it (the freed table block is reused)."""
    import cupy as cp

    arrays = [sample("int32", (int(k),), seed=i) for i, k in enumerate(np.arange(200) % 13)]
    xs = [xp.asarray(a) for a in arrays]
    xp.cuda.synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        outs = [xp.concat(xs[i:] + xs[:i]) for i in range(0, 200, 7)]
    s.synchronize()
    for j, i in enumerate(range(0, 200, 7)):
        assert_same(outs[j], np.concatenate(arrays[i:] + arrays[:i]))


# ---------------------------------------------------------------------------- large
@pytest.mark.gpu_exclusive
def test_large_beyond_int32():
    """A result of more than 2^31 elements (64-bit offsets; one row), then a piece of more
    than 2^32 one-byte units over several rows (64-bit division)."""
    n = 2**31 + 16
    x = xp.zeros((n,), dtype=xp.int8)
    x[-3:] = 7
    x[2**31 - 1] = 3
    y = xp.asarray(np.arange(1, 18, dtype=np.int8))
    out = xp.concat([y, x, y[1:]])
    assert out.shape == (2 * 17 - 1 + n,)
    assert_same(out[:17], np.arange(1, 18, dtype=np.int8))
    assert int(out[17 + 2**31 - 1]) == 3 and int(out[17 + 2**31]) == 0
    assert_same(out[17 + n - 4:], np.array([0, 7, 7, 7] + list(range(2, 18)), dtype=np.int8))
    assert int(xp.count_nonzero(out)) == 17 + 16 + 4
    del x, out
    r, c = 2**16 + 1, 2**16 + 3                       # r * c > 2^32 bytes, odd rows: 1-byte units
    a = xp.astype(xp.arange(r) % 101, xp.int8)[:, None] + xp.astype(xp.arange(c) % 113, xp.int8)[None, :]
    b = xp.astype(xp.arange(r) % 7, xp.int8)[:, None]
    out = xp.concat([a, b], axis=1)
    assert out.shape == (r, c + 1)
    assert bool(xp.all(out[:, :c] == a)) and bool(xp.all(out[:, c:] == b))
    assert_same(out[-2:, -3:], np.concatenate([host(a[-2:, -2:]), host(b[-2:])], axis=1))
