"""CPU tier: ``eig``/``eigvals`` (gparray/linalg/_eig.py) and their engine
(gparray/_engine/_geev.py) on NumPy arrays against a LAPACK model of CuPy's
``cusolver.xgeev`` binding (tests/_fake_solver.py: the real binding's argument list, every
buffer bounds-checked, real results packed in conjugate-pair columns as sgeev/dgeev do).

What this checks without a GPU: the column-major bookkeeping (x.mT copied, V^T in the
buffer, the .mT view returned), the unpacking of real input's packed pairs into complex
eigenvectors, dtypes, stacks (one call per matrix, pointer offsets), empty inputs, the
LinAlgError message. What it cannot check: the real routine (tests/test_linalg_eig_gpu.py).
"""
import numpy as np
import pytest

from gparray._engine import _geev
from gparray.linalg import _eig
from gparray.linalg._errors import LinAlgError

import _fake_solver
from _fake_solver import Memory, NumpyOps, install, lapack_pack
from _linalg_inputs import rand

FLOATS = ["float32", "float64", "complex64", "complex128"]
CPLX = {"float32": np.complex64, "float64": np.complex128, "complex64": np.complex64, "complex128": np.complex128}


class EigOps(NumpyOps):
    @staticmethod
    def parts(c):
        return c.real, c.imag


@pytest.fixture
def mem(monkeypatch):
    m = Memory()
    install(monkeypatch, m)
    monkeypatch.setattr(_geev, "_host_alloc", lambda nbytes: m.register(np.full(max(int(nbytes), 1), 0xFF, np.uint8)))
    return m


@pytest.fixture
def o(mem):
    return EigOps(mem)


def layouts(a):
    t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    big = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
    return [("c", a), ("T", np.swapaxes(t, -1, -2)), ("steps", big[..., ::2, ::2])]


def tol(dtype):
    return 1e-4 if np.dtype(dtype).char in "fF" else 1e-10


def same_multiset(got, want, atol):
    """Each stack's eigenvalues ``got`` match ``want`` one to one (greedy nearest)."""
    got, want = np.asarray(got).reshape(-1, got.shape[-1]), np.asarray(want).reshape(-1, want.shape[-1])
    for g, w in zip(got, want):
        left = list(g)
        for v in w:
            k = int(np.argmin([abs(v - u) for u in left]))
            assert abs(v - left[k]) <= atol * max(1.0, abs(v)), (g, w)
            left.pop(k)


def check_eig(a, w, v, dtype, scale=10):
    n = a.shape[-1]
    cdt = CPLX[dtype]
    assert w.dtype == cdt and v.dtype == cdt and w.shape == a.shape[:-1] and v.shape == a.shape
    t = tol(dtype) * scale
    big = max(1.0, float(np.abs(a).max(initial=0)))
    np.testing.assert_allclose(a.astype(cdt) @ v, v * w[..., None, :], atol=t * big, rtol=t)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), np.ones(a.shape[:-1]), atol=t)
    same_multiset(w, np.linalg.eigvals(a.astype(np.complex128)), t * big * n)


def rotation(theta):
    return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])


# ---------------------------------------------------------------------------- constants
def test_constants_match_cupy():
    from cupy.cuda import runtime

    assert _geev.CUDA_TYPE == {"float32": runtime.CUDA_R_32F, "float64": runtime.CUDA_R_64F,
                               "complex64": runtime.CUDA_C_32F, "complex128": runtime.CUDA_C_64F}
    assert _fake_solver._CUDA_TYPE == {v: k for k, v in _geev.CUDA_TYPE.items()}


def test_lapack_pack_round_trip():
    a = np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    w, v = np.linalg.eig(a)
    p = lapack_pack(w, v)
    assert p.dtype == np.float64 and np.iscomplexobj(w)
    j = int(np.flatnonzero(np.imag(w) > 0)[0])
    np.testing.assert_array_equal(p[:, j] + 1j * p[:, j + 1], v[:, j])


# ---------------------------------------------------------------------------- eig, eigvals
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (6, 6), (4, 2, 2), (2, 3, 5, 5), (3, 1, 1), (40, 40)])
def test_eig(o, mem, dtype, shape):
    a = rand(shape, dtype, 3)
    want_w, want_v = np.linalg.eig(a)
    for name, x in layouts(a):
        mem.calls.clear()
        w, v = _eig._eig(o, x, True)
        check_eig(a, w, v, dtype)
        # the model is LAPACK itself: same values, same vectors (in the same order)
        np.testing.assert_allclose(w, want_w, rtol=tol(dtype), atol=tol(dtype))
        np.testing.assert_allclose(v, want_v, rtol=tol(dtype), atol=tol(dtype))
        wv = _eig._eig(o, x, False)
        assert wv.dtype == CPLX[dtype] and wv.shape == shape[:-1]
        np.testing.assert_allclose(wv, want_w, rtol=tol(dtype), atol=tol(dtype))
        count = int(np.prod(shape[:-2]))
        assert mem.calls.count("xgeev") == 2 * count and mem.calls.count("xgeev_bufferSize") == 2
        assert mem.calls.count("createParams") == mem.calls.count("destroyParams") == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_matrices_with_conjugate_pairs(o, dtype):
    """Rotations (eigenvalues e^{+-i theta}), mixed real and complex eigenvalues, a pair in
    the last two columns, several pairs in a row: the packed columns unpack correctly."""
    mats = []
    for theta in (0.3, 1.2, np.pi / 2):
        mats.append(np.kron(np.eye(2), rotation(theta)) * np.array([1, 1, 2, 2])[:, None])
    blk = np.zeros((4, 4))
    blk[:2, :2] = 3 * rotation(0.7)
    blk[2, 2], blk[3, 3], blk[0, 3] = -1.0, 5.0, 0.5
    mats.append(blk)
    blk2 = np.zeros((4, 4))
    blk2[0, 0], blk2[1, 1] = 2.0, -3.0
    blk2[2:, 2:] = rotation(2.0)
    mats.append(blk2)
    a = np.stack(mats).astype(dtype)
    q = np.linalg.qr(rand((4, 4), "float64", 5))[0]          # hide the block structure
    a = (q @ a @ q.T).astype(dtype)
    for name, x in layouts(a):
        w, v = _eig._eig(o, x, True)
        check_eig(a, w, v, dtype)
        assert (np.abs(np.imag(w)) > 0.1).sum() >= 2 * len(mats) - 2
        # conjugate pairs: conjugate vectors
        for k in range(a.shape[0]):
            for j in np.flatnonzero(np.imag(w[k]) > 0):
                np.testing.assert_allclose(v[k, :, j + 1], np.conj(v[k, :, j]), atol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_diagonal_and_triangular(o, dtype):
    d = np.diag(np.array([3.0, -1.0, 2.0, 0.5])).astype(dtype)
    w, v = _eig._eig(o, d, True)
    np.testing.assert_allclose(w, np.diag(d), rtol=tol(dtype))
    np.testing.assert_allclose(np.abs(v), np.eye(4), atol=tol(dtype))
    u = np.triu(rand((5, 5), dtype, 8))
    w, v = _eig._eig(o, u, True)
    check_eig(u, w, v, dtype)
    same_multiset(w, np.diag(u), 10 * tol(dtype))


def test_eigvals_equal_eig_values(o):
    a = rand((3, 7, 7), "float64", 4)
    w, _ = _eig._eig(o, a, True)
    np.testing.assert_array_equal(_eig._eig(o, a, False), w)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_empty(o, dtype, shape):
    a = np.zeros(shape, dtype)
    w, v = _eig._eig(o, a, True)
    nw, nv = np.linalg.eig(a)
    assert w.shape == nw.shape and v.shape == nv.shape
    assert w.dtype == v.dtype == CPLX[dtype]
    wv = _eig._eig(o, a, False)
    assert wv.shape == np.linalg.eigvals(a).shape and wv.dtype == CPLX[dtype]


def test_no_convergence_names_the_matrix(o, monkeypatch):
    """A status > 0 from the routine: LinAlgError with NumPy's wording and the stack index."""
    real = _fake_solver.FakeLib._xgeev

    def failing(self, dtype, **kw):
        n = kw["n"]
        if np.isnan(self.mem.cm(kw["A"], n, n, kw["lda"], _fake_solver._CUDA_TYPE[kw["dataTypeA"]])).any():
            self._info(kw["info"], [n])
            return
        real(self, dtype, **kw)

    monkeypatch.setattr(_fake_solver.FakeLib, "_xgeev", failing)
    a = rand((2, 3, 4, 4), "float64", 6)
    a[1, 0, 2, 2] = np.nan
    with pytest.raises(LinAlgError, match=r"^eig: Eigenvalues did not converge \(stack index \(1, 0\)\)$"):
        _eig._eig(o, a, True)
    with pytest.raises(np.linalg.LinAlgError, match=r"^eigvals: Eigenvalues did not converge$"):
        _eig._eig(o, a[1, 0], False)


@pytest.mark.parametrize("vectors", [True, False])
def test_argument_errors(o, vectors):
    name = "eig" if vectors else "eigvals"
    with pytest.raises(TypeError, match=rf"^{name}: expected an array with a real or complex floating dtype, "
                                        "got int64"):
        _eig._eig(o, np.ones((2, 2), np.int64), vectors)
    with pytest.raises(TypeError, match="float16"):
        _eig._eig(o, np.ones((2, 2), np.float16), vectors)
    with pytest.raises(ValueError, match=rf"^{name}: last 2 dimensions of the array must be square"):
        _eig._eig(o, np.ones((2, 3)), vectors)
    with pytest.raises(ValueError, match=rf"^{name}: expected an array of at least 2 dimensions"):
        _eig._eig(o, np.ones(3), vectors)
    with pytest.raises(TypeError, match=rf"^{name}: expected a gparray Array"):
        _eig._eig(o, [[1.0, 0.0], [0.0, 1.0]], vectors)


def test_namespace_exports():
    import gparray as xp

    assert xp.linalg.eig is _eig.eig and xp.linalg.eigvals is _eig.eigvals
    assert "eig" in xp.linalg.__all__ and "eigvals" in xp.linalg.__all__
    assert _eig.EigResult._fields == ("eigenvalues", "eigenvectors")
