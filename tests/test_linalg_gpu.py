"""GPU tier: gparray.linalg's cuSOLVER functions (cholesky, inv, solve, det, slogdet, qr,
eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, matrix_power) against numpy.linalg.

Inputs are well conditioned (a random matrix plus (n + 4) I, Hermitian positive definite
ones A A^H + n I), so a float32 result is within ~1e-4 relative of NumPy's float64 answer
on the same values. Factorizations whose factors are not unique (the signs or phases of
eigen- and singular vectors, Q and R) are checked through their reconstructions and
orthonormality; values are compared directly. Every function runs on its batched path
(small stacks), its host loop (forced, and for large matrices) and on transposed and
stepped views. tests/test_linalg_solver_model.py checks the same algorithms on the CPU
against a LAPACK model of the bindings; this file checks the real routines."""
import numpy as np
import pytest

import gparray as xp
from _arrays import host
from _linalg_inputs import path, rand, hpd  # noqa: F401 (path: a fixture)

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64", "complex64", "complex128"]
LA = xp.linalg


def well(shape, dtype, seed=0):
    n = shape[-1]
    return (rand(shape, dtype, seed) + (n + 4) * np.eye(n)).astype(dtype)


def wide(a):
    """``a`` in float64/complex128, NumPy's reference precision."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def views(a):
    """(name, gparray view with a's values): C order, .mT of a transposed buffer, steps."""
    t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    big = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
    return [("c", xp.asarray(a)), ("T", xp.asarray(t).mT), ("steps", xp.asarray(big)[..., ::2, ::2])]


def tol(dtype):
    return 1e-4 if np.dtype(dtype).char in "fF" else 1e-11


def close(got, want, dtype, scale=10.0):
    g = host(got)
    want = np.broadcast_to(want, g.shape)
    big = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(g, want, rtol=tol(dtype) * scale, atol=tol(dtype) * scale * big)


def mh(a):
    return np.conj(np.swapaxes(a, -1, -2))


# ---------------------------------------------------------------------------- inv
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 2, 2), (2, 3, 5, 5), (3, 40, 40), (130, 130)])
def test_inv(path, dtype, shape):
    a = well(shape, dtype)
    want = np.linalg.inv(wide(a))
    for name, x in views(a):
        got = LA.inv(x)
        assert got.dtype == getattr(xp, dtype) and got.shape == shape, name
        close(got, want, dtype)


def test_inv_large_stack_of_small_matrices():
    a = well((65536, 4, 4), "float32", 1)
    got = host(LA.inv(xp.asarray(a)))
    close(got @ a, np.eye(4), "float32", 20)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_inv_singular_raises_with_the_stack_index(path, dtype):
    a = np.broadcast_to(np.eye(3, dtype=dtype), (2, 3, 3, 3)).copy()
    a[1, 2] = [[1, 2, 3], [2, 4, 6], [1, 0, 1]]
    with pytest.raises(LA.LinAlgError, match=r"^inv: Singular matrix \(stack index \(1, 2\)\)$"):
        LA.inv(xp.asarray(a))
    with pytest.raises(np.linalg.LinAlgError, match="^inv: Singular matrix$"):
        LA.inv(xp.zeros((3, 3), dtype=getattr(xp, dtype)))
    assert issubclass(LA.LinAlgError, ValueError)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)])
def test_inv_empty(shape):
    got = LA.inv(xp.zeros(shape, dtype=xp.float64))
    assert got.shape == shape and got.dtype == xp.float64


# ---------------------------------------------------------------------------- solve
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"), ("complex64", "complex64"),
                                    ("complex128", "complex128"), ("float32", "complex128"), ("float64", "float32")])
@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 4)),
                                    ((3, 3), (5, 3, 2)), ((1, 3, 3), (4, 3, 1)), ((2, 1, 3, 3), (1, 4, 3, 2)),
                                    ((4, 3, 3), (3, 2)), ((100, 100), (100, 7)), ((3, 70, 70), (70,))])
def test_solve(path, dtypes, shapes):
    d1, d2 = dtypes
    a, b = well(shapes[0], d1), rand(shapes[1], d2, 1)
    want = np.linalg.solve(wide(a), wide(b))
    dt = np.promote_types(d1, d2)
    bviews = views(b) if b.ndim >= 2 else [("c", xp.asarray(b)), ("step", xp.asarray(np.repeat(b, 2))[::2])]
    for n1, x1 in views(a):
        for n2, x2 in bviews:
            got = LA.solve(x1, x2)
            assert got.shape == want.shape and got.dtype == dt, (n1, n2)
            close(got, want, dt)


def test_solve_singular_and_empty():
    a = np.stack([np.eye(2), [[1.0, 1], [1, 1]]])
    with pytest.raises(LA.LinAlgError, match=r"^solve: Singular matrix \(stack index \(1,\)\)$"):
        LA.solve(xp.asarray(a), xp.ones((2, 2, 1)))
    with pytest.raises(LA.LinAlgError, match=r"^solve: Singular matrix$"):
        LA.solve(xp.asarray(a[1]), xp.ones((4, 2, 3)))
    for s1, s2 in [((0, 0), (0,)), ((0, 3, 3), (3,)), ((3, 3), (3, 0)), ((2, 0, 0), (2, 0, 5))]:
        e = np.broadcast_to(np.eye(s1[-1]), s1)
        got = LA.solve(xp.asarray(e), xp.ones(s2))
        assert got.shape == np.linalg.solve(e, np.ones(s2)).shape
    with pytest.raises(ValueError, match="^solve: "):
        LA.solve(xp.ones((2, 3, 3)), xp.ones((2, 3)))   # a 2-D x2 is a stack: (2, 3) has M = 2


# ---------------------------------------------------------------------------- det, slogdet
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (5, 4, 4), (2, 2, 6, 6), (2, 35, 35), (90, 90)])
def test_det_slogdet(path, dtype, shape):
    a = rand(shape, dtype, 3)
    wd = np.linalg.det(wide(a))
    ws, wl = np.linalg.slogdet(wide(a))
    finite = np.all(wl < np.log(np.finfo(dtype).max) - 1)   # else det over- or underflows, as NumPy's does
    for name, x in views(a):
        d = LA.det(x)
        assert d.dtype == getattr(xp, dtype) and d.shape == shape[:-2]
        if finite:
            close(np.log(np.abs(host(d))), wl, dtype, 100)
            close(host(d) / np.abs(host(d)), ws, dtype, 100)
        sign, logabs = LA.slogdet(x)
        assert sign.dtype == getattr(xp, dtype) and logabs.dtype == np.dtype(dtype).char.lower()
        close(sign, ws, dtype, 100)
        close(logabs, wl, dtype, 100)
    if shape[-1] <= 6:
        close(LA.det(xp.asarray(a)), wd, dtype, 100)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_det_singular_and_empty(path, dtype):
    a = np.array([[[1, 2], [2, 4]], [[2, 0], [0, 3]], [[0, 0], [0, 0]]], dtype)
    close(LA.det(xp.asarray(a)), [0, 6, 0], dtype)
    sign, logabs = LA.slogdet(xp.asarray(a))
    close(sign, [0, 1, 0], dtype)
    lg = host(logabs)
    assert lg[0] == -np.inf and lg[2] == -np.inf and abs(lg[1] - np.log(6)) < 1e-5
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2)]:
        z = np.zeros(shape, dtype)
        np.testing.assert_array_equal(host(LA.det(xp.asarray(z))), np.linalg.det(z))
        s, l = LA.slogdet(xp.asarray(z))
        np.testing.assert_array_equal(host(s), np.linalg.slogdet(z)[0])
        np.testing.assert_array_equal(host(l), np.linalg.slogdet(z)[1])


# ---------------------------------------------------------------------------- cholesky
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 5, 5), (2, 2, 3, 3), (2, 40, 40), (150, 150)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(path, dtype, shape, upper):
    a = hpd(shape, dtype)
    want = np.linalg.cholesky(wide(a), upper=upper)
    for name, x in views(a):
        got = LA.cholesky(x, upper=upper)
        assert got.dtype == getattr(xp, dtype) and got.shape == shape
        close(got, want, dtype, 20)
    junk = a.copy()                       # the triangle that is not read
    iu = np.triu_indices(shape[-1], 1)
    if upper:
        junk[..., iu[1], iu[0]] = 99
    else:
        junk[..., iu[0], iu[1]] = 99
    close(LA.cholesky(xp.asarray(junk), upper=upper), want, dtype, 20)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_of_a_broadcast_stack(path, upper):
    a = hpd((33, 33), "float64", 3)
    x = xp.broadcast_to(xp.asarray(a), (3, 33, 33))     # batch stride 0
    close(LA.cholesky(x, upper=upper), np.linalg.cholesky(a, upper=upper), "float64", 20)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 31, 32, 33, 97])
@pytest.mark.parametrize("trans", [False, True])
def test_upper_copy_reads_one_triangle(dtype, n, trans):
    """gp_tri_copy (cholesky's working matrix): the upper triangle of each matrix (or of its
    transpose), zeros below, from every layout, tile sizes around 32."""
    from gparray.linalg import _xp
    from gparray.linalg._decompositions import _batch_stride

    a = rand((3, n, n), dtype, n)
    cases = views(a) + [("broadcast", xp.broadcast_to(xp.asarray(a[1]), (3, n, n)))]
    for name, x in cases:
        src = host(x)
        want = np.triu(np.swapaxes(src, -1, -2) if trans else src)
        got = _xp.upper_copy(x, trans, _batch_stride(x.shape, x.strides))
        assert got.shape == (3, n, n) and got.dtype == x.dtype, name
        np.testing.assert_array_equal(host(got), want, err_msg=name)


def test_cholesky_not_positive_definite(path):
    a = np.stack([np.eye(3), np.eye(3), np.diag([1.0, -1, 1])]).astype(np.float32)
    with pytest.raises(LA.LinAlgError, match=r"^cholesky: Matrix is not positive definite \(stack index \(2,\)\)$"):
        LA.cholesky(xp.asarray(a))
    with pytest.raises(LA.LinAlgError, match=r"^cholesky: Matrix is not positive definite$"):
        LA.cholesky(xp.asarray(-np.eye(70)))
    assert LA.cholesky(xp.zeros((0, 3, 3))).shape == (0, 3, 3)
    assert LA.cholesky(xp.zeros((2, 0, 0), dtype=xp.complex64)).dtype == xp.complex64


# ---------------------------------------------------------------------------- qr
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 5), (6, 1), (1, 6), (2, 2, 7, 4),
                                   (150, 97), (97, 150)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype, shape, mode):
    a = rand(shape, dtype, 5)
    wq, wr = np.linalg.qr(a, mode=mode)
    for name, x in views(a):
        q, r = LA.qr(x, mode=mode)
        assert q.shape == wq.shape and r.shape == wr.shape and q.dtype == r.dtype == getattr(xp, dtype), name
        q, r = host(q), host(r)
        close(q @ r, a, dtype, 50)
        close(mh(q) @ q, np.eye(q.shape[-1]), dtype, 50)
        np.testing.assert_array_equal(r, np.triu(r))
        close(np.abs(np.diagonal(r, axis1=-2, axis2=-1)), np.abs(np.diagonal(wr, axis1=-2, axis2=-1)), dtype, 50)


def test_qr_empty_and_mode():
    for shape in [(3, 0), (0, 3), (2, 0, 4), (0, 3, 3)]:
        for mode in ("reduced", "complete"):
            q, r = LA.qr(xp.zeros(shape), mode=mode)
            wq, wr = np.linalg.qr(np.zeros(shape), mode=mode)
            assert q.shape == wq.shape and r.shape == wr.shape
            np.testing.assert_array_equal(host(q), wq)
    with pytest.raises(ValueError, match="^qr: mode"):
        LA.qr(xp.ones((2, 2)), mode="r")


# ---------------------------------------------------------------------------- eigh, eigvalsh
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 5, 5), (2, 2, 3, 3), (2, 32, 32), (2, 33, 33), (120, 120)])
def test_eigh(path, dtype, shape):
    a = rand(shape, dtype, 7)     # not Hermitian: only the lower triangle is read, as NumPy does
    w_want = np.linalg.eigvalsh(wide(a))
    n = shape[-1]
    h = np.tril(wide(a), -1)
    h = h + mh(h) + np.real(wide(a) * np.eye(n))
    scale = 50
    for name, x in views(a):
        w, v = LA.eigh(x)
        assert w.dtype == np.dtype(dtype).char.lower() and v.dtype == getattr(xp, dtype) and v.shape == shape
        w, v = host(w), host(v)
        close(w, w_want, dtype, scale)
        assert np.all(np.diff(w, axis=-1) >= -tol(dtype) * scale * np.abs(w).max())     # ascending
        close(h @ v, v * w[..., None, :], dtype, scale)
        close(mh(v) @ v, np.eye(n), dtype, scale)
        close(LA.eigvalsh(x), w_want, dtype, scale)


def test_eigh_empty_and_named_fields():
    r = LA.eigh(xp.zeros((2, 0, 0), dtype=xp.complex128))
    assert r.eigenvalues.shape == (2, 0) and r.eigenvalues.dtype == xp.float64 and r.eigenvectors.shape == (2, 0, 0)
    assert LA.eigvalsh(xp.zeros((0, 3, 3), dtype=xp.float32)).shape == (0, 3)


# ---------------------------------------------------------------------------- svd, svdvals
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 5), (3, 1, 4), (2, 32, 20),
                                   (120, 70), (70, 120), (2, 40, 35)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(path, dtype, shape, full):
    a = rand(shape, dtype, 9)
    wu, ws, wvh = np.linalg.svd(wide(a), full_matrices=full)
    scale = 50
    for name, x in views(a):
        r = LA.svd(x, full_matrices=full)
        u, s, vh = host(r.U), host(r.S), host(r.Vh)
        assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape), name
        assert r.S.dtype == np.dtype(dtype).char.lower() and r.U.dtype == r.Vh.dtype == getattr(xp, dtype)
        close(s, ws, dtype, scale)
        k = s.shape[-1]
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, scale)
        close(mh(u) @ u, np.eye(u.shape[-1]), dtype, scale)
        close(vh @ mh(vh), np.eye(vh.shape[-2]), dtype, scale)
        close(LA.svdvals(x), ws, dtype, scale)


def test_svd_empty():
    for shape in [(3, 0), (0, 3), (2, 0, 4), (0, 3, 2)]:
        for full in (True, False):
            u, s, vh = LA.svd(xp.zeros(shape, dtype=xp.float32), full_matrices=full)
            wu, ws, wvh = np.linalg.svd(np.zeros(shape, np.float32), full_matrices=full)
            assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape) and s.dtype == ws.dtype
            np.testing.assert_array_equal(host(u), wu)
            np.testing.assert_array_equal(host(vh), wvh)
        assert LA.svdvals(xp.zeros(shape)).shape == np.linalg.svd(np.zeros(shape), compute_uv=False).shape


# ---------------------------------------------------------------------------- pinv, matrix_rank
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 40, 33), (100, 60)])
def test_pinv(path, dtype, shape):
    a = rand(shape, dtype, 11)
    scale = 50
    close(LA.pinv(xp.asarray(a)), np.linalg.pinv(wide(a)), dtype, scale)
    low = a[..., :, :1] @ a[..., :1, :]             # rank 1: the cutoff drops the rest
    close(LA.pinv(xp.asarray(low), rtol=1e-3), np.linalg.pinv(wide(low), rtol=1e-3), dtype, scale)
    rt = np.full(shape[:-2], 1e-3, np.dtype(dtype).char.lower())
    close(LA.pinv(xp.asarray(low), rtol=xp.asarray(rt)), np.linalg.pinv(wide(low), rtol=rt), dtype, scale)
    assert LA.pinv(xp.zeros((2, 0, 3), dtype=getattr(xp, dtype))).shape == (2, 3, 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_rank(path, dtype):
    a = rand((3, 6, 5), dtype, 12)
    a[1] = a[1, :, :1] @ a[1, :1, :]
    a[2, :, 2:] = 0
    got = LA.matrix_rank(xp.asarray(a))
    assert got.dtype == xp.int64 and host(got).tolist() == [5, 1, 2]
    assert host(LA.matrix_rank(xp.asarray(a), rtol=0.5)).tolist() == np.linalg.matrix_rank(a, rtol=0.5).tolist()
    assert host(LA.matrix_rank(xp.zeros((2, 0, 3), dtype=getattr(xp, dtype)))).tolist() == [0, 0]
    assert host(LA.matrix_rank(xp.asarray(np.eye(50, dtype=dtype)))) == 50


# ---------------------------------------------------------------------------- matrix_power
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5, 6])
def test_matrix_power(dtype, n):
    a = (rand((2, 3, 3), dtype, 13) / 2 + np.eye(3)).astype(dtype)
    x = xp.asarray(a)
    got = LA.matrix_power(x, n)
    assert got is not x and got.dtype == getattr(xp, dtype) and got.shape == a.shape
    close(got, np.linalg.matrix_power(wide(a), n), dtype, 100)


def test_matrix_power_errors():
    with pytest.raises(TypeError, match="^matrix_power: n must be an integer"):
        LA.matrix_power(xp.eye(2), 1.5)
    with pytest.raises(LA.LinAlgError, match="^inv: Singular matrix"):
        LA.matrix_power(xp.zeros((2, 2)), -1)


# ---------------------------------------------------------------------------- checks, streams
@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.qr, LA.eigh, LA.eigvalsh, LA.svd,
                                LA.svdvals, LA.pinv, LA.matrix_rank, lambda x: LA.solve(x, x),
                                lambda x: LA.matrix_power(x, 2)])
def test_integer_input_is_a_type_error(fn):
    with pytest.raises(TypeError, match=r"^\w+: expected an array with a real or complex floating dtype, got int64"):
        fn(xp.ones((2, 2), dtype=xp.int64))
    with pytest.raises(ValueError, match=r"^\w+: "):
        fn(xp.ones(3))


def test_runs_in_stream_order_on_a_user_stream():
    import cupy as cp

    a = well((8, 16, 16), "float64", 21)
    b = rand((8, 16, 3), "float64", 22)
    with cp.cuda.Stream(non_blocking=True):
        x, y = xp.asarray(a), xp.asarray(b)
        got = (host(LA.solve(x, y)), host(LA.inv(x)), host(LA.det(x)), host(LA.eigvalsh(x + x.mT)),
               host(LA.svdvals(x)), host(LA.qr(x).R))
    close(got[0], np.linalg.solve(a, b), "float64")
    close(got[1], np.linalg.inv(a), "float64")
    close(got[2], np.linalg.det(a), "float64", 1e3)
    close(got[3], np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), "float64", 100)
    close(got[4], np.linalg.svd(a, compute_uv=False), "float64", 100)
    close(np.abs(np.diagonal(got[5], axis1=-2, axis2=-1)),
          np.abs(np.diagonal(np.linalg.qr(a).R, axis1=-2, axis2=-1)), "float64", 100)
