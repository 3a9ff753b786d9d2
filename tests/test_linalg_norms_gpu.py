"""GPU tier: linalg's vector_norm, matrix_norm, trace, diagonal, cross, outer and
matrix_transpose against numpy.linalg on the same inputs: the floating dtypes (integers
where the spec takes numeric ones), stacks, every axis form, keepdims, non-contiguous views
(transposed, stepped, reversed, broadcast), every reduction strategy, empty and 0-d inputs,
NaN/inf, overflow and underflow where NumPy's happen, and the errors.

Norms are compared with NumPy's result in the same dtype at rtol 1e-5 (float32, complex64),
1e-12 (float64, complex128) or 1e-2 (float16); counts, maxima and minima exactly. diagonal,
cross and outer compare exactly (the same products and differences as NumPy's)."""

import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same, host

pytestmark = pytest.mark.gpu

INF = float("inf")
FLOATS = ["float32", "float64", "complex64", "complex128"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NUMERIC = INTS + FLOATS
VECTOR_ORDS = [2, 1, 0, INF, -INF, 3, -1, -2, 0.5, 1.5]
MATRIX_ORDS = ["fro", 1, -1, INF, -INF]
SVD_ORDS = [2, -2, "nuc"]
RTOL = {"float16": 1e-2, "float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12}


def sample(dtype, shape, seed=0, zeros=False):
    """Normal values of magnitude ~10 (complex: both parts), no zeros unless ``zeros``
    (then every 7th element is 0)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -9), min(info.max, 9), shape, endpoint=True).astype(dt)
    a = rng.standard_normal(shape) * 10
    if dt.kind == "c":
        a = a + 1j * rng.standard_normal(shape) * 10
    a = np.asarray(a.astype(dt))
    if zeros and a.size:
        a.reshape(-1)[::7] = 0
    return a


def check_norm(got, ref, dtype, exact=False, msg=""):
    """``got`` (gparray) against NumPy's ``ref``: dtype, shape, values (NaN matches NaN)."""
    g = host(got)
    ref = np.asarray(ref)
    assert g.dtype == ref.dtype, (msg, g.dtype, ref.dtype)
    assert g.shape == ref.shape, (msg, g.shape, ref.shape)
    if exact:
        np.testing.assert_array_equal(g, ref, err_msg=str(msg))
    else:
        np.testing.assert_allclose(g, ref, rtol=RTOL[np.dtype(dtype).name], atol=0, equal_nan=True,
                                   err_msg=str(msg))


def _exact(ord_, dtype):
    """Counts are exact; so are max |x| and min |x| of real data (complex |x| is a hypot,
    whose last bit may differ from NumPy's)."""
    return ord_ == 0 or (ord_ in (INF, -INF) and np.dtype(dtype).kind == "f")


def np_vector_norm(a, **kw):
    with np.errstate(all="ignore"):
        return np.linalg.vector_norm(a, **kw)


def np_vector_norm_hi(a, **kw):
    """NumPy's norm of ``a`` computed in float64 / complex128, rounded to ``a``'s real dtype:
    NumPy's float32 sums along a strided axis add one row at a time, whose error grows with
    the length far beyond gparray's (double partial sums)."""
    hi = np.complex128 if a.dtype.kind == "c" else np.float64
    ref = np.asarray(np_vector_norm(a.astype(hi), **kw))
    return ref.astype(np.float32 if a.dtype in (np.float32, np.complex64) else np.float64)


def np_matrix_norm(a, **kw):
    with np.errstate(all="ignore"):
        return np.linalg.matrix_norm(a, **kw)


# ---------------------------------------------------------------------------- vector_norm
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord_", VECTOR_ORDS)
def test_vector_norm_axes_and_keepdims(dtype, ord_):
    a = sample(dtype, (3, 4, 5), seed=1)
    g = xp.asarray(a)
    for axis in [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (1, 2), (-1, -3), (0, 1, 2), ()]:
        for keepdims in (False, True):
            got = xp.linalg.vector_norm(g, axis=axis, keepdims=keepdims, ord=ord_)
            ref = np_vector_norm(a, axis=axis, keepdims=keepdims, ord=ord_)
            check_norm(got, ref, dtype, _exact(ord_, dtype), msg=(axis, keepdims, ord_))


@pytest.mark.parametrize("dtype", FLOATS)
def test_vector_norm_default_is_the_2_norm_of_everything(dtype):
    a = sample(dtype, (6, 7), seed=2)
    got = xp.linalg.vector_norm(xp.asarray(a))
    check_norm(got, np.linalg.vector_norm(a), dtype)
    assert got.shape == () and got.dtype == np.linalg.vector_norm(a).dtype


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord_", VECTOR_ORDS)
def test_vector_norm_with_zeros(dtype, ord_):
    """Zeros: ord 0 counts the others, negative p give 0 (the sum of |0|^p is inf)."""
    a = sample(dtype, (5, 30), seed=3, zeros=True)
    for axis in (None, 0, 1):
        check_norm(xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord_), np_vector_norm(a, axis=axis, ord=ord_),
                   dtype, _exact(ord_, dtype), msg=(axis, ord_))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((1024, 8192), 1), ((8192, 100), 1), ((64, 3000), 1), ((3000, 64), 0),
                                        ((1000, 1000), 0), ((2**20,), None), ((7, 2**17), 1), ((2**17, 7), 0),
                                        ((40, 50, 60), (0, 2)), ((128, 128, 4), (0, 1))])
def test_vector_norm_strategies(dtype, shape, axis):
    """Rows (a block or a warp per row), columns (threads along the kept axis), the whole
    array split across blocks with a second pass, few long rows split, axis tuples (against
    a float64 reference)."""
    a = sample(dtype, shape, seed=4)
    g = xp.asarray(a)
    for ord_ in (2, 1, INF, 0, 3):
        check_norm(xp.linalg.vector_norm(g, axis=axis, ord=ord_), np_vector_norm_hi(a, axis=axis, ord=ord_), dtype,
                   _exact(ord_, dtype), msg=(shape, axis, ord_))


def test_vector_norm_float32_rows_bench_shape():
    """The bench case, vector_norm(x, axis=1) of (8192, 8192) float32, against a float64
    reference: the double accumulation is at least as accurate as NumPy's float32 sums."""
    a = sample("float32", (8192, 8192), seed=5)
    got = host(xp.linalg.vector_norm(xp.asarray(a), axis=1))
    ref = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=1))
    assert got.dtype == np.float32 and got.shape == (8192,)
    np.testing.assert_allclose(got, ref, rtol=5e-7)


@pytest.mark.parametrize("dtype", FLOATS)
def test_vector_norm_non_contiguous(dtype):
    a = sample(dtype, (12, 10, 8), seed=6)
    g = xp.asarray(a)
    views = [
        ("T", np.transpose(a, (2, 0, 1)), xp.permute_dims(g, (2, 0, 1))),
        ("step", a[::2, 1::3, ::-1], g[::2, 1::3, ::-1]),
        ("flip", np.flip(a, axis=1), xp.flip(g, axis=1)),
        ("bcast", np.broadcast_to(a[:1], (5, 10, 8)), xp.broadcast_to(g[:1], (5, 10, 8))),
        ("mT", np.swapaxes(a, -1, -2), g.mT),
    ]
    for name, na, ga in views:
        for axis in (None, 0, 1, -1, (0, 2), (1, 2)):
            for ord_ in (2, 1, -INF, 0.5):
                check_norm(xp.linalg.vector_norm(ga, axis=axis, ord=ord_), np_vector_norm(na, axis=axis, ord=ord_),
                           dtype, _exact(ord_, dtype), msg=(name, axis, ord_))


@pytest.mark.parametrize("dtype", FLOATS)
def test_vector_norm_empty_and_0d(dtype):
    for shape, axis in [((0,), None), ((0, 3), 0), ((0, 3), None), ((3, 0), 0), ((3, 0), 1), ((2, 0, 4), (0, 1)),
                        ((2, 0, 4), 2)]:
        a = np.zeros(shape, dtype)
        for ord_ in VECTOR_ORDS:
            try:
                ref = np_vector_norm(a, axis=axis, ord=ord_)
            except ValueError:
                with pytest.raises(ValueError, match="^vector_norm: "):
                    xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord_)
                continue
            check_norm(xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord_), ref, dtype, True,
                       msg=(shape, axis, ord_))
    s = np.asarray(sample(dtype, (), seed=7))
    for ord_ in VECTOR_ORDS:
        check_norm(xp.linalg.vector_norm(xp.asarray(s), ord=ord_), np_vector_norm(s, ord=ord_), dtype, msg=ord_)
        check_norm(xp.linalg.vector_norm(xp.asarray(s), ord=ord_, keepdims=True),
                   np_vector_norm(s, ord=ord_, keepdims=True), dtype, msg=ord_)


@pytest.mark.parametrize("dtype", FLOATS)
def test_vector_norm_nan_and_inf(dtype):
    a = sample(dtype, (4, 9), seed=8)
    a[1, 3] = np.nan
    a[2, 5] = np.inf if np.dtype(dtype).kind == "f" else complex(2, -np.inf)
    a[3, 0] = np.nan
    a[3, 1] = -np.inf
    a[0, 0] = 0
    for ord_ in VECTOR_ORDS:
        for axis in (None, 0, 1):
            check_norm(xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord_),
                       np_vector_norm(a, axis=axis, ord=ord_), dtype, _exact(ord_, dtype), msg=(axis, ord_))


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_vector_norm_overflow_and_underflow_as_numpy():
    """No scaling, as NumPy: float32 squares and their sums overflow and underflow in float32."""
    for a in [np.full(1000, 1e19, np.float32), np.full(1000, 3e19, np.float32), np.full(1000, 1e-30, np.float32),
              np.full(1000, 1e19 + 1e19j, np.complex64), np.full(100, 1e160), np.full(100, 1e150),
              np.full(100, 1e-170)]:
        for ord_ in (2, 1, 3, INF):
            ref = np_vector_norm(a, ord=ord_)
            got = xp.linalg.vector_norm(xp.asarray(a), ord=ord_)
            check_norm(got, ref, a.dtype.name, msg=(a[0], ord_))


def test_vector_norm_float16():
    a = (sample("float32", (6, 9), seed=9) / 10).astype(np.float16)  # sums far from float16's 65504
    for ord_ in (2, 1, INF, -INF, 0, 3):
        for axis in (None, 0, 1):
            check_norm(xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord_),
                       np_vector_norm(a, axis=axis, ord=ord_), "float16", msg=(axis, ord_))


def test_vector_norm_errors():
    g = xp.asarray(np.ones((3, 4), np.float32))
    for dt in ["int32", "int64", "uint8", "bool"]:
        with pytest.raises(TypeError, match="^vector_norm: "):
            xp.linalg.vector_norm(xp.asarray(np.ones(3, dt)))
    with pytest.raises(ValueError, match="^vector_norm: "):
        xp.linalg.vector_norm(g, ord="fro")
    with pytest.raises(ValueError, match="vector_norm"):
        xp.linalg.vector_norm(g, axis=2)
    with pytest.raises(ValueError, match="vector_norm"):
        xp.linalg.vector_norm(g, axis=(0, 0))
    with pytest.raises(TypeError, match="vector_norm"):
        xp.linalg.vector_norm(g, axis=1.0)
    with pytest.raises(TypeError, match="^vector_norm: "):
        xp.linalg.vector_norm(np.ones(3))


# ---------------------------------------------------------------------------- matrix_norm
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord_", MATRIX_ORDS)
def test_matrix_norm(dtype, ord_):
    for shape in [(3, 4), (4, 3), (1, 1), (2, 3, 4), (2, 1, 5, 5), (300, 7, 9), (4, 200, 300)]:
        a = sample(dtype, shape, seed=sum(shape))
        g = xp.asarray(a)
        for keepdims in (False, True):
            check_norm(xp.linalg.matrix_norm(g, ord=ord_, keepdims=keepdims),
                       np_matrix_norm(a, ord=ord_, keepdims=keepdims), dtype, msg=(shape, keepdims))
    got = xp.linalg.matrix_norm(xp.asarray(sample(dtype, (3, 4))))  # default 'fro'
    check_norm(got, np.linalg.matrix_norm(sample(dtype, (3, 4))), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_norm_non_contiguous(dtype):
    a = sample(dtype, (4, 6, 10), seed=10)
    g = xp.asarray(a)
    for name, na, ga in [("mT", np.swapaxes(a, -1, -2), g.mT), ("step", a[::2, ::-2, 1::2], g[::2, ::-2, 1::2]),
                         ("bcast", np.broadcast_to(a[1], (3, 6, 10)), xp.broadcast_to(g[1], (3, 6, 10)))]:
        for ord_ in MATRIX_ORDS:
            check_norm(xp.linalg.matrix_norm(ga, ord=ord_), np_matrix_norm(na, ord=ord_), dtype, msg=(name, ord_))


@pytest.mark.parametrize("ord_", MATRIX_ORDS + SVD_ORDS)
def test_matrix_norm_empty(ord_):
    for shape in [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0), (0, 3, 3)]:
        a = np.zeros(shape, np.float32)
        try:
            ref = np_matrix_norm(a, ord=ord_)
        except ValueError:
            with pytest.raises(ValueError, match="^matrix_norm: "):
                xp.linalg.matrix_norm(xp.asarray(a), ord=ord_)
            continue
        check_norm(xp.linalg.matrix_norm(xp.asarray(a), ord=ord_), ref, "float32", True, msg=shape)
        check_norm(xp.linalg.matrix_norm(xp.asarray(a), ord=ord_, keepdims=True),
                   np_matrix_norm(a, ord=ord_, keepdims=True), "float32", True, msg=shape)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_norm_nan_and_inf(dtype):
    a = sample(dtype, (3, 4, 5), seed=11)
    a[0, 1, 2] = np.nan
    a[1, 0, 0] = np.inf
    for ord_ in MATRIX_ORDS:
        check_norm(xp.linalg.matrix_norm(xp.asarray(a), ord=ord_), np_matrix_norm(a, ord=ord_), dtype, msg=ord_)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord_", SVD_ORDS)
def test_matrix_norm_singular_values(dtype, ord_):
    for shape in [(3, 4), (4, 3), (5, 5), (2, 3, 6, 4)]:
        a = sample(dtype, shape, seed=12)
        for keepdims in (False, True):
            got = xp.linalg.matrix_norm(xp.asarray(a), ord=ord_, keepdims=keepdims)
            ref = np_matrix_norm(a, ord=ord_, keepdims=keepdims)
            g = host(got)
            assert g.dtype == ref.dtype and g.shape == ref.shape, (shape, keepdims)
            np.testing.assert_allclose(g, ref, rtol=1e-4 if np.dtype(dtype).itemsize <= 8 else 1e-10,
                                       err_msg=str((shape, keepdims)))


def test_matrix_norm_errors():
    with pytest.raises(ValueError, match="^matrix_norm: "):
        xp.linalg.matrix_norm(xp.asarray(np.ones(3, np.float32)))
    g = xp.asarray(np.ones((3, 3), np.float64))
    for bad in ("f", 3, 0, "max", None):
        with pytest.raises(ValueError, match="^matrix_norm: "):
            xp.linalg.matrix_norm(g, ord=bad)
    for dt in ["int32", "bool"]:
        with pytest.raises(TypeError, match="^matrix_norm: "):
            xp.linalg.matrix_norm(xp.asarray(np.ones((3, 3), dt)))


# ---------------------------------------------------------------------------- trace, diagonal
@pytest.mark.parametrize("dtype", NUMERIC)
def test_trace(dtype):
    for shape in [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 1, 4, 4), (0, 3, 3), (3, 0), (1, 1)]:
        a = sample(dtype, shape, seed=13)
        for offset in range(-5, 6):
            ref = np.linalg.trace(a, offset=offset)
            got = xp.linalg.trace(xp.asarray(a), offset=offset)
            if np.dtype(dtype).kind in "iu":
                assert_same(got, ref, msg=(shape, offset))
            else:
                check_norm(got, ref, dtype, msg=(shape, offset))


def test_trace_dtypes_and_views():
    a = sample("int8", (3, 4, 4), seed=14)
    assert xp.linalg.trace(xp.asarray(a)).dtype == xp.int64
    assert xp.linalg.trace(xp.asarray(a.astype(np.uint16))).dtype == xp.uint64
    assert_same(xp.linalg.trace(xp.asarray(a), dtype=xp.float64), np.linalg.trace(a, dtype=np.float64))
    assert_same(xp.linalg.trace(xp.asarray(a), dtype=xp.int32), np.linalg.trace(a, dtype=np.int32))
    f = sample("float32", (5, 6, 7), seed=15)
    assert xp.linalg.trace(xp.asarray(f)).dtype == xp.float32
    g = xp.asarray(f)
    for na, ga in [(np.swapaxes(f, -1, -2), g.mT), (f[::2, ::-1, 1::2], g[::2, ::-1, 1::2]),
                   (np.broadcast_to(f[0], (3, 6, 7)), xp.broadcast_to(g[0], (3, 6, 7)))]:
        for offset in (-2, 0, 3):
            check_norm(xp.linalg.trace(ga, offset=offset), np.linalg.trace(na, offset=offset), "float32")
    big = sample("float64", (3, 3000, 3000), seed=16)
    check_norm(xp.linalg.trace(xp.asarray(big), offset=7), np.linalg.trace(big, offset=7), "float64")


def test_trace_errors():
    with pytest.raises(TypeError, match="^trace: "):
        xp.linalg.trace(xp.asarray(np.ones((3, 3), bool)))
    with pytest.raises(ValueError, match="^trace: "):
        xp.linalg.trace(xp.asarray(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="^trace: "):
        xp.linalg.trace(xp.asarray(np.ones((3, 3), np.float32)), offset=1.0)
    with pytest.raises(TypeError, match="^trace: "):
        xp.linalg.trace(xp.asarray(np.ones((3, 3), np.float32)), dtype="float64")


@pytest.mark.parametrize("dtype", ["bool"] + NUMERIC + ["float16"])
def test_diagonal_is_a_view(dtype):
    for shape in [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 1, 4, 3), (0, 3), (3, 0), (2, 0, 5)]:
        a = sample(dtype, shape, seed=17) if dtype != "bool" else np.random.default_rng(1).integers(0, 2, shape) > 0
        g = xp.asarray(a)
        for offset in range(-6, 7):
            d = xp.linalg.diagonal(g, offset=offset)
            assert_same(d, np.linalg.diagonal(a, offset=offset), msg=(shape, offset))
            assert d._buf is g._buf  # no copy
    a = sample("float64", (4, 6, 5), seed=18)
    g = xp.asarray(a)
    for na, ga in [(np.swapaxes(a, -1, -2), g.mT), (a[::-1, ::2, 1::2], g[::-1, ::2, 1::2]),
                   (np.broadcast_to(a[0], (3, 6, 5)), xp.broadcast_to(g[0], (3, 6, 5)))]:
        for offset in (-3, -1, 0, 2, 4):
            assert_same(xp.linalg.diagonal(ga, offset=offset), np.linalg.diagonal(na, offset=offset))
    # the view feeds other functions: a copy, a reduction, an elementwise op
    d = xp.linalg.diagonal(g, offset=1)
    assert_same(xp.asarray(d, copy=True), np.linalg.diagonal(a, offset=1).copy())
    assert_same(d * 2, np.linalg.diagonal(a, offset=1) * 2)


def test_diagonal_errors():
    with pytest.raises(ValueError, match="^diagonal: "):
        xp.linalg.diagonal(xp.asarray(np.ones(3)))
    with pytest.raises(TypeError, match="^diagonal: "):
        xp.linalg.diagonal(xp.asarray(np.ones((3, 3))), offset=0.5)
    with pytest.raises(TypeError, match="^diagonal: "):
        xp.linalg.diagonal(np.ones((3, 3)))


# ---------------------------------------------------------------------------- cross, outer
def _same_or_close(got, ref, msg=""):
    if np.asarray(ref).dtype.kind == "c":  # complex products: allow a rounding of difference
        g = host(got)
        assert g.dtype == ref.dtype and g.shape == ref.shape, msg
        np.testing.assert_allclose(g, ref, rtol=RTOL[ref.dtype.name] * 10, err_msg=str(msg))
    else:
        assert_same(got, ref, msg=msg)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_cross(dtype):
    for s1, s2, axis in [((3,), (3,), -1), ((4, 3), (4, 3), -1), ((3,), (4, 3), -1), ((4, 3), (3,), -1),
                         ((5, 1, 3), (4, 3), -1), ((2, 3, 5), (2, 3, 5), -2), ((3, 5), (2, 3, 5), -2),
                         ((3, 2, 4), (3, 2, 4), -3), ((0, 3), (0, 3), -1), ((2, 0, 3), (3,), -1)]:
        a, b = sample(dtype, s1, seed=19), sample(dtype, s2, seed=20)
        _same_or_close(xp.linalg.cross(xp.asarray(a), xp.asarray(b), axis=axis), np.cross(a, b, axis=axis),
                       msg=(s1, s2, axis))


def test_cross_promotion_and_views():
    a, b = sample("float32", (6, 3), seed=21), sample("float64", (6, 3), seed=22)
    assert_same(xp.linalg.cross(xp.asarray(a), xp.asarray(b)), np.cross(a, b))
    i8, u8 = sample("int8", (4, 3), seed=23), np.abs(sample("int16", (4, 3), seed=24)).astype(np.uint8)
    assert_same(xp.linalg.cross(xp.asarray(i8), xp.asarray(u8)), np.cross(i8, u8))
    c = sample("float64", (3, 8), seed=25)
    g = xp.asarray(c)
    # vectors down the columns of a transposed view, reversed and stepped views
    assert_same(xp.linalg.cross(g.mT, xp.flip(g, axis=1).mT), np.cross(c.T, np.flip(c, axis=1).T))
    assert_same(xp.linalg.cross(g[:, ::2], g[::-1, 1::2], axis=-2), np.cross(c[:, ::2], c[::-1, 1::2], axis=-2))
    assert_same(xp.linalg.cross(xp.broadcast_to(g[:, 0], (5, 3)), g.mT[:5]), np.cross(np.broadcast_to(c[:, 0], (5, 3)),
                                                                                      c.T[:5]))


def test_cross_errors():
    v = xp.asarray(np.ones(3, np.float32))
    m = xp.asarray(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match="^cross: "):
        xp.linalg.cross(v, v, axis=0)       # the spec requires a negative axis
    with pytest.raises(ValueError, match="^cross: "):
        xp.linalg.cross(m, m, axis=-2)      # 4 elements along the axis
    with pytest.raises(ValueError, match="^cross: "):
        xp.linalg.cross(m, xp.asarray(np.ones((4, 1), np.float32)))  # the compute axis does not broadcast
    with pytest.raises(ValueError, match="^cross: "):
        xp.linalg.cross(v, m, axis=-2)      # beyond the smaller operand's dimensions
    with pytest.raises(ValueError, match="^cross: "):
        xp.linalg.cross(xp.asarray(np.ones((2, 3))), xp.asarray(np.ones((5, 3))))
    with pytest.raises(TypeError, match="^cross: "):
        xp.linalg.cross(xp.asarray(np.ones(3, bool)), v)
    with pytest.raises(TypeError, match="^cross: "):
        xp.linalg.cross(v, v, axis=-1.0)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_outer(dtype):
    for n, m in [(5, 7), (1, 4), (6, 1), (0, 3), (3, 0), (300, 500)]:
        a, b = sample(dtype, (n,), seed=26), sample(dtype, (m,), seed=27)
        _same_or_close(xp.linalg.outer(xp.asarray(a), xp.asarray(b)), np.outer(a, b), msg=(n, m))


def test_outer_promotion_views_and_errors():
    a, b = sample("int16", (9,), seed=28), sample("float32", (11,), seed=29)
    assert_same(xp.linalg.outer(xp.asarray(a), xp.asarray(b)), np.outer(a, b))
    ga, gb = xp.asarray(a), xp.asarray(b)
    assert_same(xp.linalg.outer(ga[::-2], gb[1::3]), np.outer(a[::-2], b[1::3]))
    assert_same(xp.linalg.outer(xp.broadcast_to(ga[:1], (4,)), gb), np.outer(np.broadcast_to(a[:1], (4,)), b))
    with pytest.raises(ValueError, match="^outer: "):
        xp.linalg.outer(xp.asarray(np.ones((2, 2))), gb)
    with pytest.raises(ValueError, match="^outer: "):
        xp.linalg.outer(xp.asarray(np.float32(1)), gb)
    with pytest.raises(TypeError, match="^outer: "):
        xp.linalg.outer(xp.asarray(np.ones(3, bool)), gb)


# ---------------------------------------------------------------------------- the rest
def test_matrix_transpose_and_reexports():
    a = sample("float32", (2, 3, 4), seed=30)
    t = xp.linalg.matrix_transpose(xp.asarray(a))
    assert_same(t, np.swapaxes(a, -1, -2))
    assert xp.linalg.matrix_transpose is xp.matrix_transpose
    with pytest.raises(ValueError, match="^matrix_transpose: "):
        xp.linalg.matrix_transpose(xp.asarray(np.ones(3, np.float32)))
    for name in ("matmul", "tensordot", "vecdot"):
        assert getattr(xp.linalg, name) is getattr(xp, name)
    for name in ("vector_norm", "matrix_norm", "trace", "diagonal", "cross", "outer", "matrix_transpose"):
        assert name in xp.linalg.__all__
