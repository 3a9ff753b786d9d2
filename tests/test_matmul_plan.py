"""CPU tier: the matmul planner (gparray/_engine/_matmul_plan.py). Every plan is run through
a NumPy model of the BLAS calls it describes, reading the operands' raw buffers with the
plan's op flags, leading dimensions and batch strides, and compared with numpy.matmul on
hypothesis-generated shapes and layouts (transposed, stepped, flipped, broadcast)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gparray._engine import _matmul_plan as mp


def _raw(x):
    """(flat base buffer, element offset, element strides) of a NumPy view."""
    base = x
    while base.base is not None:
        base = base.base
    flat = np.frombuffer(base, dtype=x.dtype) if isinstance(base, (bytes, bytearray)) else base.reshape(-1)
    isz = x.dtype.itemsize
    off = (x.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // isz
    return flat, off, tuple(s // isz for s in x.strides)


def _stored(buf, off, opnd, rows, cols):
    """The column-major matrix op(stored) the BLAS call reads for a logical (rows, cols)
    operand: op N -> its transpose (cols x rows), op T -> (rows x cols) transposed."""
    isz = buf.dtype.itemsize
    if opnd.op == "N":
        view = np.lib.stride_tricks.as_strided(buf[off:], shape=(cols, rows), strides=(isz, opnd.ld * isz))
        return view
    view = np.lib.stride_tricks.as_strided(buf[off:], shape=(rows, cols), strides=(isz, opnd.ld * isz))
    return view.T


def run_plan(p, x1, x2):
    """x1 @ x2 computed the way the plan says the device will."""
    out = np.full(int(np.prod(p.shape)), np.nan if x1.dtype.kind in "fc" else 0, dtype=np.result_type(x1, x2))
    if p.kind == "empty":
        return out.reshape(p.shape)
    if p.kind == "zeros":
        return np.zeros(p.shape, out.dtype)
    e1 = x1[None, :] if x1.ndim == 1 else x1
    e2 = x2[:, None] if x2.ndim == 1 else x2
    ops = []
    for e, opnd in ((e1, p.a), (e2, p.b)):
        if opnd.copy:
            e = np.ascontiguousarray(e)
        ops.append(_raw(e))
    (ab, ao, _), (bb, bo, _) = ops
    ia, ib, ic = p.inner_strides
    ext = [x for x, _ in p.outer]
    for idx in itertools.product(*[range(x) for x in ext]):
        oa = ao + sum(i * s[0] for i, (_, s) in zip(idx, p.outer))
        ob = bo + sum(i * s[1] for i, (_, s) in zip(idx, p.outer))
        oc = sum(i * s[2] for i, (_, s) in zip(idx, p.outer))
        for t in range(p.inner):
            a_ = _stored(ab, oa + t * ia, p.a, p.m, p.k)            # A' (k x m)
            b_ = _stored(bb, ob + t * ib, p.b, p.k, p.n)            # B' (n x k)
            c_ = b_ @ a_                                            # C' (n x m), ldc = n
            o = oc + t * ic
            out[o:o + p.m * p.n] = c_.T.reshape(-1)
    return out.reshape(p.shape)


@st.composite
def operand(draw, shape):
    """A view of ``shape`` with a random layout, carved from a larger buffer."""
    kind = draw(st.sampled_from(["c", "T", "step", "flip", "bcast", "colvec"]))
    n = int(np.prod(shape)) if shape else 1
    if kind == "T" and len(shape) >= 2:
        a = np.arange(n, dtype=np.float64).reshape(shape[:-2] + (shape[-1], shape[-2])) % 7 - 3
        return a.swapaxes(-1, -2)
    if kind == "step" and shape:
        big = (np.arange(2 * n, dtype=np.float64) % 5 - 2).reshape(shape[:-1] + (2 * shape[-1],))
        return big[..., ::2]
    if kind == "flip" and shape:
        return np.flip((np.arange(n, dtype=np.float64) % 9 - 4).reshape(shape), axis=draw(st.integers(0, len(shape) - 1)))
    if kind == "bcast" and len(shape) >= 3:
        one = (np.arange(int(np.prod(shape[1:])), dtype=np.float64) % 4 - 1).reshape((1,) + shape[1:])
        return np.broadcast_to(one, shape)
    if kind == "colvec" and len(shape) >= 2:
        # each matrix stored column by column inside a larger column stride
        r, c = shape[-2], shape[-1]
        big = (np.arange(int(np.prod(shape[:-2] + (c, r + 2))), dtype=np.float64) % 6 - 2).reshape(shape[:-2] + (c, r + 2))
        return big[..., :r].swapaxes(-1, -2)
    return (np.arange(n, dtype=np.float64) % 11 - 5).reshape(shape)


@st.composite
def problems(draw):
    ext = st.sampled_from([1, 2, 3, 4, 2, 3, 0])      # empty extents now and then
    m, k, n = (draw(ext) for _ in range(3))
    batch = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 2, 3, 0]), max_size=3)))
    def own(b):  # noqa: E306 - a batch shape that broadcasts to ``batch``
        drop = draw(st.integers(0, len(b)))
        return tuple(1 if draw(st.booleans()) else x for x in b[drop:])
    v1, v2 = draw(st.booleans()), draw(st.booleans())
    s1 = (k,) if v1 else own(batch) + (m, k)
    s2 = (k,) if v2 else own(batch) + (k, n)
    return draw(operand(s1)), draw(operand(s2))


@settings(max_examples=800, deadline=None)
@given(problems())
def test_plans_compute_numpy_matmul(case):
    x1, x2 = case
    _, _, st1 = _raw(x1)
    _, _, st2 = _raw(x2)
    p = mp.plan(x1.shape, st1, x2.shape, st2, "f")
    expected = np.matmul(x1, x2)
    assert p.shape == expected.shape
    got = run_plan(p, x1, x2)
    np.testing.assert_array_equal(got, expected)
    if p.kind == "blas":
        for opnd in (p.a, p.b):
            assert opnd.op in "NT" and 1 <= opnd.ld <= mp.INT32_MAX


def test_layouts_become_op_flags_not_copies():
    a = np.zeros((6, 4))
    # row-major: op N with ld = row stride; a transposed view: op T; a column slice: still N
    assert mp._operand(6, 4, 4, 1) == mp.Operand("N", 4, False)
    assert mp._operand(4, 6, 1, 4) == mp.Operand("T", 4, False)
    assert mp._operand(6, 2, 4, 1) == mp.Operand("N", 4, False)
    # steps in both dimensions, negative strides: one copy
    assert mp._operand(3, 2, 8, 2).copy and mp._operand(6, 4, -4, 1).copy
    # extent-1 dimensions take any stride
    assert mp._operand(1, 4, 999, 1) == mp.Operand("N", 4, False)
    assert mp._operand(4, 1, 3, 77) == mp.Operand("T", 3, False) or mp._operand(4, 1, 3, 77).op == "N"
    p = mp.plan(a.T.shape, (1, 4), (6, 5), (5, 1))
    assert p.kind == "blas" and p.a == mp.Operand("T", 4, False) and not p.b.copy


def test_batches_are_strided_and_broadcasts_never_copied():
    # (8, m, k) @ (k, n): one strided-batched call, B's batch stride 0
    p = mp.plan((8, 3, 4), (12, 4, 1), (4, 5), (5, 1))
    assert p.kind == "blas" and p.inner == 8 and p.outer == () and p.inner_strides == (12, 0, 15)
    # (5, 1, m, k) @ (1, 7, k, n): the dims do not merge: 5 host iterations of 7 matrices
    p = mp.plan((5, 1, 2, 3), (6, 6, 3, 1), (1, 7, 3, 4), (84, 12, 4, 1))
    assert p.inner == 7 and [e for e, _ in p.outer] == [5] and p.inner_strides == (0, 12, 8)
    assert p.outer[0][1] == (6, 0, 56)


def test_special_shapes():
    assert mp.plan((3,), (1,), (3,), (1,)).shape == ()
    assert mp.plan((3,), (1,), (2, 3, 4), (12, 4, 1)).shape == (2, 4)
    assert mp.plan((0, 3), (3, 1), (3, 2), (2, 1)).kind == "empty"
    assert mp.plan((2, 0), (0, 1), (0, 3), (3, 1)).kind == "zeros"
    assert mp.plan((2, 2), (2, 1), (2, 2), (2, 1), "i").kind == "int"
    assert mp.plan((1, 4), (4, 1), (4, 1), (1, 1)).vector


def test_errors_use_numpy_wording():
    with pytest.raises(ValueError, match=r"^matmul: Input operand 1 has a mismatch in its core dimension 0.*"
                                         r"\(size 4 is different from 3\)"):
        mp.plan((2, 3), (3, 1), (4, 2), (2, 1))
    with np.testing.assert_raises(ValueError):
        np.matmul(np.zeros((2, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="^matmul: operands could not be broadcast"):
        mp.plan((2, 2, 3), (6, 3, 1), (3, 3, 2), (6, 2, 1))
    # 0-d operands: NumPy's gufunc message, naming the operand
    for s1, s2, i in (((), (3,), 0), ((3,), (), 1), ((), (), 0)):
        with pytest.raises(ValueError) as got:
            mp.plan(s1, (), s2, (1,) if s2 else ())
        with pytest.raises(ValueError) as want:
            np.matmul(np.ones(s1), np.ones(s2))
        assert str(got.value) == str(want.value)
        assert f"Input operand {i} does not have enough dimensions" in str(got.value)


# ---------------------------------------------------------------------------- tensordot, vecdot
@st.composite
def tensordot_cases(draw):
    n1, n2 = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    shape1 = tuple(draw(st.integers(0, 3)) for _ in range(n1))
    shape2 = list(draw(st.integers(0, 3)) for _ in range(n2))
    if draw(st.booleans()):
        c = draw(st.integers(0, min(n1, n2)))
        shape2[:c] = shape1[n1 - c:]
        return shape1, tuple(shape2), c
    c = draw(st.integers(0, min(n1, n2)))
    a1 = draw(st.permutations(range(n1)))[:c]
    a2 = draw(st.permutations(range(n2)))[:c]
    for i, j in zip(a1, a2):
        shape2[j] = shape1[i]
    neg = draw(st.booleans())
    a1 = [i - n1 if neg else i for i in a1]
    return shape1, tuple(shape2), (list(a1), tuple(a2))


@settings(max_examples=300, deadline=None)
@given(tensordot_cases())
def test_tensordot_plan_matches_numpy(case):
    s1, s2, axes = case
    x1 = (np.arange(int(np.prod(s1)), dtype=np.float64) % 7 - 3).reshape(s1)
    x2 = (np.arange(int(np.prod(s2)), dtype=np.float64) % 5 - 2).reshape(s2)
    p = mp.tensordot_plan(s1, s2, axes)
    expected = np.tensordot(x1, x2, axes=axes)
    got = (np.transpose(x1, p.perm1).reshape(p.m, p.k) @ np.transpose(x2, p.perm2).reshape(p.k, p.n)).reshape(p.shape)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_tensordot_plan_errors():
    with pytest.raises(ValueError, match="^tensordot: shape mismatch"):
        mp.tensordot_plan((2, 3), (4, 2), 1)
    with pytest.raises(ValueError, match="non-negative"):
        mp.tensordot_plan((2, 3), (3, 2), -1)
    with pytest.raises(ValueError, match="exceeds"):
        mp.tensordot_plan((2, 3), (3, 2), 3)
    with pytest.raises(ValueError, match="out of bounds"):
        mp.tensordot_plan((2, 3), (3, 2), ([2], [0]))
    with pytest.raises(ValueError, match="repeated axis"):
        mp.tensordot_plan((2, 2), (2, 2), ([0, 0], [0, 1]))
    with pytest.raises(ValueError, match="different lengths"):
        mp.tensordot_plan((2, 2), (2, 2), ([0], [0, 1]))
    with pytest.raises(TypeError):
        mp.tensordot_plan((2, 2), (2, 2), 1.5)


@pytest.mark.parametrize("s1,s2,axis", [((3,), (3,), -1), ((2, 3), (3,), -1), ((4, 1, 3), (5, 3), -1),
                                        ((3, 4), (3, 4), -2), ((2, 3, 4), (2, 3, 4), 1), ((0, 3), (1, 3), -1),
                                        ((2, 1, 5), (1, 4, 5), -1)])
def test_vecdot_shape_matches_numpy(s1, s2, axis):
    x1, x2 = np.ones(s1), np.ones(s2)
    assert mp.vecdot_shape(s1, s2, axis) == np.vecdot(x1, x2, axis=axis).shape


def test_vecdot_shape_errors():
    with pytest.raises(ValueError, match="same size"):
        mp.vecdot_shape((2, 3), (2, 4))
    with pytest.raises(ValueError, match="out of bounds"):
        mp.vecdot_shape((2, 3), (3,), -2)
    with pytest.raises(ValueError, match="at least one dimension"):
        mp.vecdot_shape((), (3,))
    with pytest.raises(ValueError):
        mp.vecdot_shape((2, 3), (4, 3))
