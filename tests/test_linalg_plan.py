"""CPU tier: the linalg shape and dtype planner (gparray/_engine/_linalg_plan.py) against
numpy.linalg's result shapes (hypothesis-generated stacks) and the spec's refusals."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gparray._engine import _linalg_plan as lp

small = st.integers(0, 4)


@st.composite
def stacks(draw, square=False, min_side=0):
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    m = draw(st.integers(min_side, 4))
    n = m if square else draw(st.integers(min_side, 4))
    return batch + (m, n)


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@settings(max_examples=150, deadline=None)
@given(stacks(), st.sampled_from(["reduced", "complete"]))
def test_qr_shapes(shape, mode):
    q, r = np.linalg.qr(rand(shape), mode=mode)
    assert lp.qr_shapes(shape, mode) == (q.shape, r.shape)


@settings(max_examples=150, deadline=None)
@given(stacks(), st.booleans())
def test_svd_shapes(shape, full):
    u, s, vh = np.linalg.svd(rand(shape), full_matrices=full)
    assert lp.svd_shapes(shape, full) == (u.shape, s.shape, vh.shape)
    assert lp.svdvals_shape(shape) == np.linalg.svd(rand(shape), compute_uv=False).shape


@settings(max_examples=100, deadline=None)
@given(stacks(square=True))
def test_square_functions(shape):
    a = rand(shape)
    w, v = np.linalg.eigh(a)
    assert lp.eigh_shapes(shape) == (w.shape, v.shape)
    assert lp.square("det", shape)[0] == np.linalg.det(a).shape


@settings(max_examples=200, deadline=None)
@given(stacks(square=True), st.data())
def test_solve_shapes(shape1, data):
    m = shape1[-1]
    if data.draw(st.booleans()):
        shape2 = (m,)
    else:
        b = shape1[:-2]
        b2 = tuple(1 if data.draw(st.booleans()) else x for x in b[data.draw(st.integers(0, len(b))):])
        shape2 = b2 + (m, data.draw(small))
    a = rand(shape1) + 4 * np.eye(m)
    x = np.linalg.solve(a, rand(shape2, 1))
    assert lp.solve_shapes(shape1, shape2)[1] == x.shape


def test_solve_refusals():
    with pytest.raises(ValueError, match="square"):
        lp.solve_shapes((2, 3), (2,))
    with pytest.raises(ValueError, match="does not match"):
        lp.solve_shapes((3, 3), (2,))
    with pytest.raises(ValueError, match="do not broadcast"):
        lp.solve_shapes((2, 3, 3), (4, 3, 1))


@settings(max_examples=150, deadline=None)
@given(stacks(), st.booleans(), st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]))
def test_matrix_norm_shape(shape, keepdims, ord):
    if 0 in shape[-2:] and ord not in ("fro",):
        return  # numpy.linalg refuses norms of empty matrices other than fro
    got = lp.matrix_norm_shape(shape, keepdims, ord)
    assert got == np.linalg.matrix_norm(rand(shape), keepdims=keepdims, ord=ord).shape


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=4).map(tuple), st.data(), st.booleans())
def test_vector_norm_shape(shape, data, keepdims):
    nd = len(shape)
    axis = None
    if nd and data.draw(st.booleans()):
        axes = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda a: a % nd))
        axis = axes[0] if len(axes) == 1 else tuple(axes)
    expected = np.linalg.vector_norm(rand(shape), axis=axis, keepdims=keepdims).shape
    assert lp.vector_norm_shape(shape, axis, keepdims) == expected


@settings(max_examples=150, deadline=None)
@given(stacks(), st.integers(-5, 5))
def test_diagonal_shape(shape, offset):
    assert lp.diagonal_shape(shape, offset) == np.linalg.diagonal(rand(shape), offset=offset).shape


def test_cross_outer_power():
    assert lp.cross_shape((4, 3), (3,)) == np.linalg.cross(rand((4, 3)), rand((3,))).shape
    assert lp.cross_shape((2, 3, 5), (1, 3, 5), axis=-2) == (2, 3, 5)
    with pytest.raises(ValueError, match="3 elements"):
        lp.cross_shape((4, 2), (4, 2))
    with pytest.raises(ValueError, match="negative"):
        lp.cross_shape((4, 3), (4, 3), axis=1)
    assert lp.outer_shape((3,), (4,)) == np.linalg.outer(rand(3), rand(4)).shape
    with pytest.raises(ValueError):
        lp.outer_shape((3, 1), (4,))
    assert lp.matrix_power_plan((2, 2), 5) == ((1, 0, 1), False)
    assert lp.matrix_power_plan((2, 2), -2) == ((0, 1), True)
    assert lp.matrix_power_plan((2, 2), 0) == ((), False)
    with pytest.raises(TypeError):
        lp.matrix_power_plan((2, 2), 1.0)
    with pytest.raises(ValueError, match="square"):
        lp.matrix_power_plan((2, 3), 2)


def test_dtypes():
    assert lp.float_dtype("inv", "float32") == "float32"
    assert lp.real_of("complex128") == "float64"
    with pytest.raises(TypeError, match="^cholesky: expected an array with a real or complex floating dtype"):
        lp.float_dtype("cholesky", "int64")
    with pytest.raises(TypeError):
        lp.float_dtype("eigh", "complex64", kinds="f")
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        lp.square("inv", (3,))
