"""GPU tier: matmul / @ on cuBLAS against numpy.matmul. Operands hold small integers, so
every product is exact in every floating dtype whatever the summation order, and results
are compared exactly; layouts cover op flags (transposed, column slices), copies (steps in
both dimensions, negative strides), broadcast batch dimensions (stride 0), host loops over
unmergeable batch dimensions, 1-D operands, empty and k = 0 products."""
import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64", "complex64", "complex128"]


def ints(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.integers(-4, 5, shape)
    return a.astype(dtype)


def layouts(a):
    """(name, NumPy view, gparray view) of ``a`` in several layouts with the same values."""
    out = [("c", a, xp.asarray(a))]
    if a.ndim >= 2:
        t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        out.append(("T", np.swapaxes(t, -1, -2), xp.matrix_transpose(xp.asarray(t))))
        big = np.concatenate([a, a], axis=-1)
        out.append(("colslice", big[..., : a.shape[-1]], xp.asarray(big)[..., : a.shape[-1]]))
        wide = np.repeat(a, 2, axis=-1)
        tall = np.repeat(wide, 2, axis=-2)
        out.append(("steps", tall[..., ::2, ::2], xp.asarray(tall)[..., ::2, ::2]))
    f = np.flip(a, axis=-1).copy()
    out.append(("flip", np.flip(f, axis=-1), xp.flip(xp.asarray(f), axis=-1)))
    return out


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((1, 4), (4, 1)), ((4,), (4, 3)), ((3, 4), (4,)),
                                    ((4,), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
                                    ((2, 1, 3, 4), (1, 3, 4, 2)), ((5, 2, 3), (5, 3, 2)),
                                    ((33, 65), (65, 17))])
def test_matmul_layouts(dtype, shapes):
    s1, s2 = shapes
    a, b = ints(s1, dtype, 1), ints(s2, dtype, 2)
    expected = np.matmul(a, b)
    for n1, na, ga in layouts(a):
        for n2, nb, gb in layouts(b):
            assert_same(xp.matmul(ga, gb), np.matmul(na, nb), msg=(n1, n2))
    assert_same(xp.asarray(a) @ xp.asarray(b), expected)


def test_broadcast_batch_is_not_materialized_and_loops():
    a = ints((5, 1, 2, 3), "float32", 3)
    b = ints((1, 7, 3, 4), "float32", 4)
    assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))
    one = ints((1, 3, 4), "float64", 5)
    bb = np.broadcast_to(one, (6, 3, 4))
    assert_same(xp.matmul(xp.asarray(ints((6, 2, 3), "float64", 6)), xp.broadcast_to(xp.asarray(one), (6, 3, 4))),
                np.matmul(ints((6, 2, 3), "float64", 6), bb))


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_empty_and_k_zero(dtype):
    for s1, s2 in [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0,), (0,)), ((2, 0, 3), (3, 1)), ((3, 2), (2, 0))]:
        a, b = np.zeros(s1, dtype), np.zeros(s2, dtype)
        assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))
    a = np.ones((2, 0), dtype)
    got = xp.matmul(xp.asarray(a), xp.asarray(np.ones((0, 3), dtype)))
    assert_same(got, np.zeros((2, 3), dtype))


def test_promotion_and_operators():
    a, b = ints((3, 4), "float32", 7), ints((4, 2), "float64", 8)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)
    x = xp.asarray(ints((3, 3), "float64", 9))
    y = ints((3, 3), "float64", 10)
    e = np.asarray(x) @ y
    x @= xp.asarray(y)
    assert_same(x, e)
    with pytest.raises(ValueError):
        x @= xp.asarray(ints((3, 2), "float64", 11))


def test_full_float32_precision():
    # 1 + 2^-20 is exact in float32 but not in TF32 (10-bit mantissa)
    a = np.full((64, 64), 1 + 2.0 ** -20, np.float32)
    b = np.eye(64, dtype=np.float32)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)


def test_errors():
    a = xp.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        xp.matmul(a, xp.asarray(np.ones((4, 2), np.float32)))
    with pytest.raises(ValueError):
        xp.matmul(xp.asarray(np.float32(1)), a)
    with pytest.raises(ValueError, match="could not be broadcast"):
        xp.matmul(xp.asarray(np.ones((2, 2, 3))), xp.asarray(np.ones((3, 3, 2))))
    with pytest.raises(TypeError):
        xp.matmul(a, np.ones((3, 2)))


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("s1,s2,axes", [((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 2), 1), ((2, 3), (4, 5), 0),
                                        ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((4, 3), (3, 4), ([-1], [0])),
                                        ((2, 0, 3), (3, 0), ([2, 1], [0, 1]))])
def test_tensordot(dtype, s1, s2, axes):
    a, b = ints(s1, dtype, 12), ints(s2, dtype, 13)
    assert_same(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=axes), np.tensordot(a, b, axes=axes))
    assert_same(xp.linalg.tensordot(xp.asarray(a), xp.asarray(b), axes=axes), np.tensordot(a, b, axes=axes))


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("s1,s2,axis", [((5,), (5,), -1), ((3, 5), (5,), -1), ((4, 1, 5), (3, 5), -1),
                                        ((5, 3), (5, 3), -2), ((2, 5, 3), (2, 5, 3), 1), ((0, 5), (1, 5), -1)])
def test_vecdot(dtype, s1, s2, axis):
    a, b = ints(s1, dtype, 14), ints(s2, dtype, 15)
    expected = np.vecdot(a, b, axis=axis)          # conjugates the first operand, as the spec
    assert_same(xp.vecdot(xp.asarray(a), xp.asarray(b), axis=axis), np.asarray(expected, dtype=dtype))
