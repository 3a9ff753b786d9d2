"""GPU tier: gparray.linalg.eig and eigvals (cuSOLVER's Xgeev) against numpy.linalg.

Eigenvectors are not unique (a phase per vector), so they are checked through
x @ v = v * w per column and unit 2-norm; eigenvalues (in no specified order) are matched
to numpy.linalg.eigvals' one to one. Real inputs with complex-conjugate eigenvalue pairs
(rotations, random real matrices) exercise the unpacking of LAPACK's packed real vectors.
tests/test_linalg_eig_model.py checks the same algorithm on the CPU against a LAPACK model
of the binding; this file checks the real routine."""
import numpy as np
import pytest

import gparray as xp
from _arrays import host
from _linalg_inputs import rand

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64", "complex64", "complex128"]
CPLX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}
LA = xp.linalg


def views(a):
    """(name, gparray view with a's values): C order, .mT of a transposed buffer, steps."""
    t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    big = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
    return [("c", xp.asarray(a)), ("T", xp.asarray(t).mT), ("steps", xp.asarray(big)[..., ::2, ::2])]


def tol(dtype):
    return 1e-4 if np.dtype(dtype).char in "fF" else 1e-11


def rotation(theta):
    return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])


def same_multiset(got, want, atol):
    """Each stack's eigenvalues ``got`` match ``want`` one to one (greedy nearest)."""
    got, want = got.reshape(-1, got.shape[-1]), want.reshape(-1, want.shape[-1])
    for g, w in zip(got, want):
        left = list(g)
        for v in w:
            k = int(np.argmin([abs(v - u) for u in left]))
            assert abs(v - left[k]) <= atol, (k, v, left[k], g, w)
            left.pop(k)


def check(a, res, dtype, scale=10.0):
    """``res`` = eig(a): dtypes, shapes, a v = v w per column, unit columns, the eigenvalues
    of numpy.linalg.eigvals (in float64/complex128)."""
    w, v = res
    assert w.dtype == getattr(xp, CPLX[dtype]) and v.dtype == w.dtype
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    w, v = host(w), host(v)
    n = a.shape[-1]
    t = tol(dtype) * scale
    big = max(1.0, float(np.abs(a).max(initial=0.0)))
    wide = a.astype(np.complex128)
    np.testing.assert_allclose(wide @ v, v * w[..., None, :], atol=t * big * np.sqrt(n), rtol=0)
    np.testing.assert_allclose(np.linalg.norm(v.astype(np.complex128), axis=-2), np.ones(a.shape[:-1]), atol=t)
    same_multiset(w, np.linalg.eigvals(wide), t * big * n)


# ---------------------------------------------------------------------------- eig
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (4, 2, 2), (2, 3, 5, 5), (40, 40), (3, 17, 17), (130, 130)])
def test_eig(dtype, shape):
    a = rand(shape, dtype, 1)
    for name, x in views(a):
        check(a, LA.eig(x), dtype)
        np.testing.assert_array_equal(host(x), a)          # the input is copied, not destroyed
        wv = LA.eigvals(x)
        assert wv.dtype == getattr(xp, CPLX[dtype]) and wv.shape == shape[:-1], name
        same_multiset(host(wv), host(LA.eig(x).eigenvalues), tol(dtype) * 10 * shape[-1] * 4)


def test_eig_result_is_a_namedtuple():
    res = LA.eig(xp.asarray(rotation(0.5)))
    assert type(res).__name__ == "EigResult" and res._fields == ("eigenvalues", "eigenvectors")
    w, v = res
    assert w is res.eigenvalues and v is res.eigenvectors


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_matrices_with_complex_conjugate_pairs(dtype):
    """Rotations (e^{+-i theta}), pairs next to real eigenvalues, a pair in the last two
    columns; the vectors of a pair are conjugates of each other."""
    mats = [np.kron(np.eye(2), rotation(t)) * np.array([1, 1, 2, 2])[:, None] for t in (0.3, 1.2, np.pi / 2)]
    blk = np.zeros((4, 4))
    blk[:2, :2] = 3 * rotation(0.7)
    blk[2, 2], blk[3, 3], blk[0, 3] = -1.0, 5.0, 0.5
    mats.append(blk)
    blk2 = np.zeros((4, 4))
    blk2[0, 0], blk2[1, 1] = 2.0, -3.0
    blk2[2:, 2:] = rotation(2.0)
    mats.append(blk2)
    q = np.linalg.qr(rand((4, 4), "float64", 5))[0]
    a = (q @ np.stack(mats) @ q.T).astype(dtype)
    for name, x in views(a):
        w, v = LA.eig(x)
        check(a, (w, v), dtype)
        w, v = host(w), host(v)
        assert (np.abs(w.imag) > 0.1).sum() == 2 * 2 * 3 + 2 + 2, name
        for k in range(a.shape[0]):
            for j in range(4):
                if w[k, j].imag > 0.1:     # its partner: the conjugate eigenvalue
                    p = int(np.argmin(np.abs(w[k] - np.conj(w[k, j]))))
                    ph = np.vdot(np.conj(v[k, :, j]), v[k, :, p])   # vectors equal up to a phase
                    assert abs(abs(ph) - 1) < 10 * tol(dtype), (name, k, j)
    rot = LA.eig(xp.asarray(rotation(np.pi / 2).astype(dtype)))
    same_multiset(host(rot.eigenvalues)[None], np.array([[1j, -1j]]), 10 * tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_real_matrices(dtype):
    """Larger real matrices: roughly half their eigenvalues come in conjugate pairs."""
    a = rand((3, 64, 64), dtype, 9)
    check(a, LA.eig(xp.asarray(a)), dtype, 20)
    a = rand((300, 300), dtype, 10)
    check(a, LA.eig(xp.asarray(a)), dtype, 50)


@pytest.mark.parametrize("dtype", FLOATS)
def test_diagonal_and_triangular(dtype):
    d = np.diag(np.array([3.0, -1.0, 2.0, 0.5])).astype(dtype)
    w, v = LA.eig(xp.asarray(d))
    same_multiset(host(w)[None], np.diag(d)[None].astype(np.complex128), 10 * tol(dtype))
    np.testing.assert_allclose(np.abs(host(v)) @ np.ones(4), np.ones(4), atol=10 * tol(dtype))
    u = np.triu(rand((6, 6), dtype, 8)) + 4 * np.diag(np.arange(6)).astype(dtype)
    check(u, LA.eig(xp.asarray(u)), dtype)
    same_multiset(host(LA.eigvals(xp.asarray(u)))[None], np.diag(u)[None].astype(np.complex128), 100 * tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_empty(dtype, shape):
    w, v = LA.eig(xp.zeros(shape, dtype=getattr(xp, dtype)))
    nw, nv = np.linalg.eig(np.zeros(shape, dtype))
    assert w.shape == nw.shape and v.shape == nv.shape
    assert w.dtype == v.dtype == getattr(xp, CPLX[dtype])
    wv = LA.eigvals(xp.zeros(shape, dtype=getattr(xp, dtype)))
    assert wv.shape == nw.shape and wv.dtype == getattr(xp, CPLX[dtype])


@pytest.mark.parametrize("fn", ["eig", "eigvals"])
def test_argument_errors(fn):
    f = getattr(LA, fn)
    with pytest.raises(TypeError, match=rf"^{fn}: expected an array with a real or complex floating dtype, got int32"):
        f(xp.ones((3, 3), dtype=xp.int32))
    with pytest.raises(TypeError, match=rf"^{fn}: .*bool"):
        f(xp.ones((3, 3), dtype=xp.bool))
    with pytest.raises(ValueError, match=rf"^{fn}: last 2 dimensions of the array must be square, got 2 x 3"):
        f(xp.ones((2, 3)))
    with pytest.raises(ValueError, match=rf"^{fn}: expected an array of at least 2 dimensions"):
        f(xp.ones(3))
    with pytest.raises(TypeError, match=rf"^{fn}: expected a gparray Array"):
        f(np.eye(3))


def test_eig_in_a_stream():
    """Results ordered with gparray's kernels on a non-default stream."""
    import cupy as cp

    a = rand((4, 12, 12), "float64", 12)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = xp.asarray(a) * 2.0
        w, v = LA.eig(x)
        r = xp.astype(x, xp.complex128) @ v - v * xp.expand_dims(w, axis=-2)
    s.synchronize()
    assert float(np.abs(host(r)).max()) < 1e-10 * 2 * np.abs(a).max() * 12
