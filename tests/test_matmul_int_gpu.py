"""GPU tier: integer and boolean matmul on gparray's kernels (gparray/_kernels/matmul.cu)
against numpy.matmul, exactly: every integer dtype with values at the ends of its range (the
products and sums wrap around), bool (OR of ANDs), mixed promotion, transposed / column-
sliced / stepped / flipped / broadcast operands read in place, batches that do not merge
(more than 4 batch dimensions: ND = 16), sizes just over a 64 x 64 tile, long dot products
(the "dot" variant), empty and k = 0 products, a grid smaller than the work; the operators
(@, reflected, @=) and their errors; float16 through float32 cuBLAS; and the cuBLAS
workspace taken from gparray's pool (gparray/_engine/_blas.py)."""
import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same
from test_matmul_gpu import layouts

pytestmark = pytest.mark.gpu

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def wrap_values(shape, dtype, seed):
    """Values near both ends of ``dtype``'s range and small ones (bool: 30% True)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.3
    info = np.iinfo(dt)
    big = rng.integers(info.max - 3, info.max, shape, endpoint=True, dtype=dt)
    small = rng.integers(max(info.min, -4), 5, shape, dtype=dt)
    low = rng.integers(info.min, info.min + 4, shape, endpoint=True, dtype=dt)
    pick = rng.integers(0, 3, shape)
    return np.where(pick == 0, big, np.where(pick == 1, small, low)).astype(dt)


SHAPES = [((5, 64), (64, 7)), ((65, 17), (17, 65)), ((129, 33), (33, 130)), ((64,), (64, 3)), ((3, 64), (64,)),
          ((300,), (300,)), ((2, 3, 64), (64, 5)), ((3, 64), (2, 64, 5)), ((2, 1, 3, 16), (1, 3, 16, 2)),
          ((4, 5, 1000), (4, 1000, 2)), ((1, 1), (1, 1))]


@pytest.mark.parametrize("dtype", INTS + ["bool"])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}@{s[1]}")
def test_integer_matmul_matches_numpy_in_every_layout(dtype, shapes):
    s1, s2 = shapes
    a, b = wrap_values(s1, dtype, 1), wrap_values(s2, dtype, 2)
    for n1, na, ga in layouts(a):
        for n2, nb, gb in layouts(b):
            assert_same(xp.matmul(ga, gb), np.matmul(na, nb), msg=(n1, n2))
    assert_same(xp.asarray(a) @ xp.asarray(b), np.matmul(a, b))


def test_int8_wraps_like_numpy():
    a = np.full((3, 64), 127, np.int8)
    b = np.full((64, 2), -127, np.int8)
    got = xp.asarray(a) @ xp.asarray(b)
    assert_same(got, a @ b)
    assert np.asarray(got)[0, 0] == np.array(127 * -127 * 64).astype(np.int8)
    u = np.full((2, 1000), 2**63 + 12345, np.uint64)
    assert_same(xp.asarray(u) @ xp.asarray(u.T.copy()), u @ u.T)


@pytest.mark.parametrize("d1,d2", [("int8", "uint8"), ("bool", "int8"), ("uint16", "int32"), ("uint8", "uint64"),
                                   ("int16", "uint32"), ("int32", "bool"), ("uint8", "int64")])
def test_mixed_integer_promotion(d1, d2):
    a, b = wrap_values((4, 70), d1, 3), wrap_values((70, 66), d2, 4)
    got = xp.matmul(xp.asarray(a), xp.asarray(b))
    assert got.dtype == np.result_type(a, b)
    assert_same(got, np.matmul(a, b))


def test_int64_with_uint64_is_float64_as_numpy():
    a = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    b = np.arange(8, dtype=np.uint64).reshape(4, 2)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)


def test_broadcast_and_unmergeable_batches():
    a = wrap_values((5, 1, 2, 3), "int16", 5)
    b = wrap_values((1, 7, 3, 4), "int16", 6)
    assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))
    one = wrap_values((1, 3, 4), "int32", 7)
    x = wrap_values((6, 2, 3), "int32", 8)
    assert_same(xp.matmul(xp.asarray(x), xp.broadcast_to(xp.asarray(one), (6, 3, 4))),
                np.matmul(x, np.broadcast_to(one, (6, 3, 4))))
    # five batch dimensions whose strides do not merge: the ND = 16 instance (compiled on use)
    base = wrap_values((2, 3, 2, 3, 2, 5, 4), "uint8", 9)
    perm = (4, 3, 2, 1, 0, 5, 6)
    other = wrap_values((4, 6), "uint8", 10)
    assert_same(xp.matmul(xp.permute_dims(xp.asarray(base), perm), xp.asarray(other)),
                np.matmul(np.transpose(base, perm), other))


def test_long_dot_products():
    rng = np.random.default_rng(11)
    a = rng.integers(-2**62, 2**62, 1 << 20, dtype=np.int64)
    b = rng.integers(-2**62, 2**62, 1 << 20, dtype=np.int64)
    assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))
    m = wrap_values((3, 5000), "int32", 12)
    v = wrap_values((5000,), "int32", 13)
    assert_same(xp.asarray(m) @ xp.asarray(v), m @ v)
    assert_same(xp.asarray(v) @ xp.asarray(m.T.copy()), v @ m.T)
    bm = wrap_values((5000,), "bool", 14)
    assert_same(xp.asarray(bm) @ xp.asarray(~bm), bm @ ~bm)
    assert_same(xp.asarray(bm) @ xp.asarray(bm), bm @ bm)


def test_grid_smaller_than_the_work(monkeypatch):
    from gparray._engine import _matmul_int

    monkeypatch.setattr(_matmul_int, "MAX_GRID", 7)
    a, b = wrap_values((3, 130, 40), "int64", 15), wrap_values((40, 200), "int64", 16)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)
    a, b = wrap_values((9, 2, 700), "uint16", 17), wrap_values((9, 700, 3), "uint16", 18)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "bool"])
def test_empty_and_k_zero(dtype):
    for s1, s2 in [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0,), (0,)), ((2, 0, 3), (3, 1)), ((3, 2), (2, 0)),
                   ((2, 3, 0), (0, 5))]:
        a, b = np.ones(s1, dtype), np.ones(s2, dtype)
        assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))


def test_operators():
    a, b = wrap_values((4, 4), "int32", 19), wrap_values((4, 4), "int32", 20)
    ga, gb = xp.asarray(a), xp.asarray(b)
    assert_same(ga @ gb, a @ b)
    assert_same(gb.__rmatmul__(ga), a @ b)
    x = xp.asarray(a)
    x @= gb
    assert_same(x, a @ b)
    keep = x
    x @= gb
    assert x is keep
    assert_same(x, (a @ b) @ b)
    with pytest.raises(ValueError, match="^__imatmul__: in-place result shape"):
        x @= xp.asarray(np.ones((4, 2), np.int32))
    with pytest.raises(TypeError, match="^__imatmul__: in-place result dtype int64"):
        x @= xp.asarray(np.ones((4, 4), np.int64))
    with pytest.raises(TypeError):
        ga @ 2
    with pytest.raises(TypeError):
        2 @ ga


def test_zero_d_operands_raise_numpys_error():
    for s1, s2 in (((), (3,)), ((3,), ())):
        with pytest.raises(ValueError) as got:
            xp.matmul(xp.asarray(np.ones(s1, np.int32)), xp.asarray(np.ones(s2, np.int32)))
        with pytest.raises(ValueError) as want:
            np.matmul(np.ones(s1, np.int32), np.ones(s2, np.int32))
        assert str(got.value) == str(want.value)


def test_float16_is_computed_in_float32():
    rng = np.random.default_rng(22)
    a = rng.integers(-4, 5, (33, 65)).astype(np.float16)
    b = rng.integers(-4, 5, (65, 17)).astype(np.float16)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)
    assert_same(xp.asarray(a) @ xp.asarray(np.int8(3) * np.ones((65, 2), np.int8)), a @ (3 * np.ones((65, 2), np.int8)))


def test_cublas_workspace_comes_from_the_pool():
    import cupy as cp

    from gparray._engine import _blas

    a = xp.asarray(np.ones((64, 64), np.float32))
    _ = a @ a
    dev = 0
    s = cp.cuda.get_current_stream().ptr
    info = _blas.workspace_info(dev, s)
    assert info["status"] == 0, info                     # cublasSetWorkspace_v2 succeeded
    assert info["bytes"] == _blas.WORKSPACE_BYTES == 32 << 20
    blocks = [b for seg in xp.cuda.memory_snapshot() for b in seg["blocks"]]
    assert any(b["address"] == info["ptr"] and b["state"] == "allocated" and b["size"] >= 32 << 20
               for b in blocks), "the workspace is a live pool block"
    # another stream: its own workspace; products there are right (setStream reset the
    # handle's workspace, so it was set again)
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        r = a @ a
        info2 = _blas.workspace_info(dev, st.ptr)
    st.synchronize()
    assert info2["status"] == 0 and info2["ptr"] != info["ptr"]
    assert_same(r, np.full((64, 64), 64, np.float32))
    # back on the first stream, a product that uses a workspace (split k), then release
    t = np.random.default_rng(23).integers(-2, 3, (64, 1 << 16)).astype(np.float32)
    gt = xp.asarray(t)
    assert_same(gt @ xp.matrix_transpose(gt), t @ t.T)
    assert _blas.workspace_info(dev, s)["ptr"] == info["ptr"]
    before = xp.cuda.memory_allocated()
    _blas.release_workspaces()
    assert xp.cuda.memory_allocated() <= before - 2 * (32 << 20)
    assert_same(gt @ xp.matrix_transpose(gt), t @ t.T)    # bound again to a new block
    assert _blas.workspace_info(dev, s)["status"] == 0
    _blas.release_workspaces()
