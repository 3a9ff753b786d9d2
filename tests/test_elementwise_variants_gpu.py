"""GPU tier: the 2-d kernel forms of the elementwise engine (rows: broadcasts and sliced
operands; tiled: a transposed operand) against NumPy, including ragged edges."""
import numpy as np
import pytest

import gparray as xp

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "int8", "int64", "complex128", "bool"]


def data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    a = rng.standard_normal(shape) * 20
    if dtype.startswith("uint"):
        a = np.abs(a)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def same(got, exp):
    g = np.asarray(got)
    assert g.dtype == exp.dtype and g.shape == exp.shape
    if exp.dtype.kind == "c":  # complex products: NumPy's SIMD loops may fuse, gparray does not
        np.testing.assert_allclose(g, exp, rtol=1e-14, atol=0)
    else:
        np.testing.assert_array_equal(g, exp)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(32, 32), (33, 47), (64, 96), (200, 31), (1, 40)])
def test_transposed_operand_tiled(dtype, shape):
    m = data(shape[::-1], dtype, 1)  # m.T has `shape`
    n = data(shape, dtype, 2)
    M, N = xp.asarray(m), xp.asarray(n)
    op = "add" if dtype != "bool" else "logical_xor"
    f, nf = getattr(xp, op), getattr(np, op)
    same(f(M.T, N), nf(m.T, n))
    same(f(N, M.T), nf(n, m.T))
    cmp = "less" if dtype not in ("complex128", "bool") else "equal"
    same(getattr(xp, cmp)(M.T, N), getattr(np, cmp)(m.T, n))
    # the transposed operand broadcast against a row
    same(f(M.T, N[:1]), nf(m.T, n[:1]))
    # a sliced transposed operand (column stride > 1, negative)
    big = data((shape[1] * 2, shape[0]), dtype, 3)
    B = xp.asarray(big)
    same(f(B[::-2].T, N), nf(big[::-2].T, n))


def test_square_transpose_plus_itself_mixed_dtypes():
    m = data((96, 96), "float32", 4)
    k = data((96, 96), "int8", 5)
    M, K = xp.asarray(m), xp.asarray(k)
    same(M.T + M, m.T + m)
    same(M.T * K, m.T * k)
    same(xp.divide(K.T, M), np.divide(k.T, m))


@pytest.mark.parametrize("dtype", DTYPES)
def test_outer_broadcast_rows(dtype):
    col, row = data((300, 1), dtype, 6), data((1, 1027), dtype, 7)
    C, R = xp.asarray(col), xp.asarray(row)
    op = "add" if dtype != "bool" else "logical_or"
    f, nf = getattr(xp, op), getattr(np, op)
    same(f(C, R), nf(col, row))
    same(f(R, C), nf(row, col))
    same(f(xp.asarray(col[:, 0]), R.T), nf(col[:, 0], row.T))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliced_1d_and_2d_rows(dtype):
    a, b = data((4099,), dtype, 8), data((4099 * 3,), dtype, 9)
    A, B = xp.asarray(a), xp.asarray(b)
    op = "multiply" if dtype != "bool" else "logical_and"
    f, nf = getattr(xp, op), getattr(np, op)
    same(f(A[::2], B[::6]), nf(a[::2], b[::6]))
    same(f(A[::-1], B[1::3]), nf(a[::-1], b[1::3]))
    m, n = data((40, 70), dtype, 10), data((40, 140), dtype, 11)
    same(f(xp.asarray(m), xp.asarray(n)[:, ::2]), nf(m, n[:, ::2]))
    same(f(xp.asarray(m)[::-1], xp.asarray(n)[:, 1::2]), nf(m[::-1], n[:, 1::2]))


def test_rows_edge_sizes():
    for cols in (1, 3, 1023, 1024, 1025, 4097):
        a, b = data((5, cols), "float64", cols), data((5, 1), "float64", cols + 1)
        same(xp.asarray(a) - xp.asarray(b), a - b)
        same(xp.asarray(a)[:, ::-1] - xp.asarray(b), a[:, ::-1] - b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "complex64", "complex128"])
def test_rows_vector_paths(dtype):
    """Full chunks of gp_binary_rows: stride-2 slices read as vector pairs (also when the
    base array ends right after the last element used), broadcasts walked down many rows,
    rows whose start is not vector-aligned, mixed operand dtypes."""
    f, nf = xp.add, np.add
    for n in (2048 * 3 + 5, 8192, 40000):
        a, b = data((2 * n - 1,), dtype, 12), data((2 * n + 2,), dtype, 13)
        A, B = xp.asarray(a), xp.asarray(b)
        same(f(A[::2], B[:2 * n:2]), nf(a[::2], b[:2 * n:2]))
        same(f(A[::2], B[1:2 * n:2]), nf(a[::2], b[1:2 * n:2]))  # misaligned second operand
        same(f(A[::2], B[2:n + 2]), nf(a[::2], b[2:n + 2]))
    for rows, cols in ((100, 2048), (37, 4096 + 4), (64, 3001), (17, 8192)):
        col, row = data((rows, 1), dtype, rows), data((1, cols), dtype, cols)
        same(f(xp.asarray(col), xp.asarray(row)), nf(col, row))
        full = data((rows, cols), dtype, 14)
        same(f(xp.asarray(full), xp.asarray(row)), nf(full, row))
        same(f(xp.asarray(col), xp.asarray(full)), nf(col, full))
        wide = data((rows, 2 * cols), dtype, 15)
        same(f(xp.asarray(wide)[:, ::2], xp.asarray(row)), nf(wide[:, ::2], row))
        same(f(xp.asarray(wide)[:, 1::2], xp.asarray(full)), nf(wide[:, 1::2], full))
    c32, r64 = data((50, 1), "float32", 16), data((1, 4096), "float64", 17)
    same(xp.multiply(xp.asarray(c32), xp.asarray(r64)), np.multiply(c32, r64))
    same(xp.subtract(xp.asarray(r64), xp.asarray(c32)), np.subtract(r64, c32))


SHORT_SHAPES = [(2, 1), (3, 5), (1000, 100), (257, 3), (33, 2047), (5000, 7), (4099, 64)]


@pytest.mark.parametrize("dtype", DTYPES + ["float16", "uint8", "int32"])
@pytest.mark.parametrize("shape", SHORT_SHAPES)
def test_short_rows_broadcasts(dtype, shape):
    """gp_binary_short_rows (rows.cu): rows shorter than a rows chunk, against NumPy: a
    column broadcast (x - x.max(axis=1, keepdims=True), x == m), a row broadcast, both
    broadcast, reversed and stride-2 operands, and runs that end mid-row, mid-run and at the
    array's end (odd sizes)."""
    R, C = shape
    x = data(shape, dtype, R * 7 + C)
    col = data((R, 1), dtype, R + 1)
    row = data((1, C), dtype, C + 2)
    X, COL, ROW = xp.asarray(x), xp.asarray(col), xp.asarray(row)
    op, nop = (xp.logical_xor, np.logical_xor) if dtype == "bool" else (xp.subtract, np.subtract)
    same(op(X, COL), nop(x, col))
    same(op(COL, X), nop(col, x))
    same(op(X, ROW), nop(x, row))
    same(op(COL, ROW), nop(col, row))
    same(xp.equal(X, COL), np.equal(x, col))
    if dtype != "bool":
        m = np.max(x, axis=1, keepdims=True) if dtype not in ("complex128",) else col
        same(xp.equal(X, xp.asarray(m)), np.equal(x, m))
    wide = data((R, 2 * C), dtype, 99)
    W = xp.asarray(wide)
    same(op(W[:, ::2], COL), nop(wide[:, ::2], col))
    same(op(W[::-1, ::-2], COL), nop(wide[::-1, ::-2], col))
    same(op(W[:, 1::2], X), nop(wide[:, 1::2], x))


def test_short_rows_special_values_and_mixed_dtypes():
    x = np.array([[np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0]] * 41, dtype=np.float32)
    x[::3] = x[::3][:, ::-1]
    m = np.array([[np.nan], [np.inf], [-0.0], [0.0], [1.5]] * 8 + [[-np.inf]], dtype=np.float32)
    X, M = xp.asarray(x), xp.asarray(m)
    for f in ("equal", "not_equal", "less", "greater_equal", "maximum", "minimum", "subtract", "divide"):
        with np.errstate(all="ignore"):
            exp = getattr(np, f)(x, m)
        got = np.asarray(getattr(xp, f)(X, M))
        assert got.dtype == exp.dtype
        np.testing.assert_array_equal(got, exp)
        if exp.dtype.kind == "f":   # the sign of zeros and infinities (a NaN's sign bit is the CPU's choice)
            num = ~np.isnan(exp)
            assert np.array_equal(np.signbit(got[num]), np.signbit(exp[num])), f

    i8 = data((300, 9), "int8", 3)
    f64 = data((300, 1), "float64", 4)
    same(xp.multiply(xp.asarray(i8), xp.asarray(f64)), np.multiply(i8, f64))


def test_short_rows_in_place_on_unaligned_views():
    """In-place ops whose output is a C-contiguous view starting off a vector boundary
    (scalar stores at the edges); the rest of the array is untouched. Also an input view at
    an odd offset."""
    for dtype in ("float32", "int8", "float64", "bool", "complex128"):
        base = data((501 * 30,), dtype, 5)
        col = data((500, 1), dtype, 6)
        flat, exp = xp.asarray(base), base.copy()
        view, ev = flat[3:3 + 500 * 29].reshape(500, 29), exp[3:3 + 500 * 29].reshape(500, 29)
        if dtype == "bool":
            view ^= xp.asarray(col)
            ev ^= col
        else:
            view -= xp.asarray(col)
            ev -= col
        same(flat, exp)
        got = xp.add(view, xp.asarray(col)) if dtype != "bool" else xp.logical_or(view, xp.asarray(col))
        same(got, np.add(ev, col) if dtype != "bool" else np.logical_or(ev, col))


def test_short_rows_empty_and_one_column():
    e = np.zeros((0, 5), np.float32)
    same(xp.asarray(e) - xp.asarray(np.ones((1, 5), np.float32)), e - np.ones((1, 5), np.float32))
    one = data((70000, 1), "float64", 8)
    r = data((1, 1), "float64", 9)
    same(xp.asarray(one)[::-1] - xp.asarray(r), one[::-1] - r)
