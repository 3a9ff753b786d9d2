"""CPU tier: the linalg algorithms (gparray/linalg/_decompositions.py, _solvers.py) and the
solver engine (gparray/_engine/_solver.py) run on NumPy arrays against a LAPACK model of
CuPy's cuSOLVER/cuBLAS bindings (tests/_fake_solver.py), compared with numpy.linalg.

What this checks without a GPU: the column-major bookkeeping (which copy, which triangle,
which transposed view), the argument lists (arity and C types of the real bindings, the
handle of the right library), every buffer a routine touches lying inside an allocation,
statuses and results the routines never wrote, batched and looped paths, broadcasting in
``solve``, empty stacks, and the LinAlgError messages. What it cannot check: that the
real routines mean what the model says (the GPU tier, tests/test_linalg_gpu.py)."""
import numpy as np
import pytest

from gparray._engine import _solver
from gparray.linalg import _decompositions as dec
from gparray.linalg import _solvers as sol
from gparray.linalg._errors import LinAlgError

from _fake_solver import Memory, NumpyOps, install, install_lu_perm, lu_perm_reference
from _linalg_inputs import path, rand, hpd  # noqa: F401 (path: a fixture)

FLOATS = ["float32", "float64", "complex64", "complex128"]


@pytest.fixture
def mem(monkeypatch):
    m = Memory()
    install(monkeypatch, m)
    return m


@pytest.fixture
def o(mem):
    return NumpyOps(mem)


def layouts(a):
    """(name, a view with a's values): C order, a transposed buffer, steps in both axes."""
    t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    big = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
    return [("c", a), ("T", np.swapaxes(t, -1, -2)), ("steps", big[..., ::2, ::2])]


def tol(dtype):
    return 2e-4 if np.dtype(dtype).char in "fF" else 1e-10


def close(got, want, dtype, scale=1.0):
    """``got`` within the dtype's tolerance of ``want`` (broadcast to got's shape: identities)."""
    np.testing.assert_allclose(got, np.broadcast_to(want, np.shape(got)), rtol=tol(dtype) * scale,
                               atol=tol(dtype) * scale)


# ---------------------------------------------------------------------------- the engine's plan
def test_batched_plan():
    assert not _solver.batched("getrf", 4, 4, 1)
    assert _solver.batched("getrf", 4, 4, 2) and _solver.batched("getri", 256, 256, 1 + 1)
    assert not _solver.batched("getrf", 600, 600, 2) and _solver.batched("getrf", 600, 600, 6)
    assert _solver.batched("syevj", 32, 32, 2) and not _solver.batched("syevj", 33, 33, 1000)
    assert _solver.batched("gesvdj", 32, 5, 2) and not _solver.batched("gesvdj", 5, 33, 1000)
    with pytest.raises(ValueError):
        _solver.batched("nope", 1, 1, 2)


def test_constants_match_the_bindings():
    from cupy_backends.cuda.libs import cublas, cusolver

    assert (_solver.FILL_LOWER, _solver.FILL_UPPER) == (cublas.CUBLAS_FILL_MODE_LOWER,
                                                        cublas.CUBLAS_FILL_MODE_UPPER)
    assert (_solver.OP_N, _solver.OP_T, _solver.OP_C) == (cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_C)
    assert (_solver.EIG_NOVECTOR, _solver.EIG_VECTOR) == (cusolver.CUSOLVER_EIG_MODE_NOVECTOR,
                                                          cusolver.CUSOLVER_EIG_MODE_VECTOR)


# ---------------------------------------------------------------------------- inv, solve
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2, 2), (2, 3, 5, 5), (40, 40), (3, 40, 40), (1, 1)])
def test_inv(o, mem, path, dtype, shape):
    a = rand(shape, dtype) + 4 * np.eye(shape[-1], dtype=dtype)
    for name, x in layouts(a):
        got = sol._inv(o, x)
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        close(got, np.linalg.inv(a), dtype, 10)
    if path == "batched" and len(shape) > 2:
        assert any(c.endswith("getriBatched") for c in mem.calls)
    if path == "loop":
        assert not any("Batched" in c for c in mem.calls)


def test_inv_singular_names_the_matrix(o):
    a = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    a[1, 0] = [[1, 2, 3], [2, 4, 6], [0, 0, 1]]
    a[1, 2, 1, 1] = 0
    with pytest.raises(LinAlgError, match=r"^inv: Singular matrix \(stack index \(1, 0\); 2 of 6 matrices\)$"):
        sol._inv(o, a)
    with pytest.raises(ValueError, match="^inv: Singular matrix$"):
        sol._inv(o, np.zeros((2, 2)))


def _check_solve(o, a, b, dt, before=lambda: None, after=lambda: None):
    """sol._solve of every layout of ``a`` and of ``b`` against numpy.linalg.solve (result
    dtype ``dt``); ``before``/``after`` run around each call."""
    want = np.linalg.solve(a, b)
    for n1, x1 in layouts(a):
        for n2, x2 in (layouts(b) if b.ndim >= 2 else [("c", b), ("step", np.repeat(b, 2)[::2])]):
            before()
            got = sol._solve(o, x1, x2)
            assert got.shape == want.shape and got.dtype == dt, (n1, n2)
            close(got, want, dt, 20)
            after()


@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "float32"), ("complex64", "float32"),
                                    ("float32", "complex128"), ("complex128", "complex128")])
@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 4)),
                                    ((3, 3), (5, 3, 2)), ((1, 3, 3), (4, 3, 1)), ((2, 1, 3, 3), (1, 4, 3, 2)),
                                    ((4, 3, 3), (3, 2)), ((30, 30), (30, 7)), ((2, 30, 30), (30,))])
def test_solve(o, path, dtypes, shapes):
    d1, d2 = dtypes
    a = rand(shapes[0], d1) + 3 * np.eye(shapes[0][-1], dtype=d1)
    b = rand(shapes[1], d2, 1)
    _check_solve(o, a, b, np.promote_types(d1, d2))


@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "float32"), ("complex64", "float32"),
                                    ("float32", "complex128")])
@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (3, 2)), ((3, 3), (5, 3, 2)), ((1, 3, 3), (4, 3, 1)),
                                    ((30, 30), (30, 7)), ((1, 1, 30, 30), (30, 2)), ((30, 30), (30,))])
def test_solve_one_matrix_through_its_permutation(o, mem, monkeypatch, dtypes, shapes):
    """One matrix (any stack of one): getrf, lu_perm, the right-hand sides gathered through
    the permutation, lu_solve; no getrs. The same answers as numpy.linalg.solve."""
    install_lu_perm(monkeypatch, mem)
    d1, d2 = dtypes
    a = rand(shapes[0], d1) + 3 * np.eye(shapes[0][-1], dtype=d1)
    b = rand(shapes[1], d2, 1)
    def no_getrs():
        assert "getrs" not in mem.calls and mem.calls.count("lu_perm") == mem.calls.count("lu_solve") == 1, mem.calls

    _check_solve(o, a, b, np.promote_types(d1, d2), before=mem.calls.clear, after=no_getrs)


def test_solve_one_matrix_pivots_and_singular(o, mem, monkeypatch):
    # a permutation matrix needs every pivot; a singular one still raises after the solves
    install_lu_perm(monkeypatch, mem)
    p = np.eye(6)[[3, 0, 5, 1, 4, 2]]
    b = np.arange(12.0).reshape(6, 2)
    np.testing.assert_allclose(sol._solve(o, p, b), np.linalg.solve(p, b))
    with pytest.raises(LinAlgError, match=r"^solve: Singular matrix$"):
        sol._solve(o, np.ones((4, 4)), np.ones(4))


def test_lu_perm_reference_is_the_row_interchanges():
    # the permutation equals LAPACK's laswp applied to the rows of the identity
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 100):
        ipiv = np.array([rng.integers(i, n) + 1 for i in range(n)], np.int32)
        perm = lu_perm_reference(ipiv, n)
        rows = np.eye(n)
        for i, q in enumerate(ipiv - 1):
            rows[[i, q]] = rows[[q, i]]
        np.testing.assert_array_equal(rows, np.eye(n)[perm])
    assert list(lu_perm_reference(np.array([0, 9, -3, 4], np.int32), 4)) == [0, 1, 2, 3]
    assert list(lu_perm_reference(np.array([2, 4, 3, 4], np.int32), 4)) == [1, 3, 2, 0]


def test_lu_perm_bounds_and_header(mem):
    import re
    from pathlib import Path

    text = (Path(_solver.__file__).parents[1] / "_kernels" / "linalg_small.cu").read_text()
    assert int(re.search(r"#define GP_LU_PERM_MAX (\d+)", text).group(1)) == _solver.LU_PERM_MAX
    assert int(re.search(r"#define GP_LU_PERM_THREADS (\d+)", text).group(1)) == _solver.LU_PERM_THREADS
    assert "gp_lu_perm" in _solver.instances()
    for n in (0, _solver.LU_PERM_MAX + 1):
        with pytest.raises(ValueError, match="^lu_perm: "):
            _solver.lu_perm(0, 0, n, 0)
    assert not _solver.lu_perm_ok(_solver.LU_PERM_MIN)   # the CPU tier's bindings are a model


def test_solve_singular_and_empty(o):
    a = np.stack([np.eye(2), [[1.0, 1], [1, 1]]])
    with pytest.raises(LinAlgError, match=r"^solve: Singular matrix \(stack index \(1,\)\)$"):
        sol._solve(o, a, np.ones((2, 2, 1)))
    with pytest.raises(LinAlgError, match=r"^solve: Singular matrix$"):
        sol._solve(o, a[1], np.ones((4, 2, 3)))
    for s1, s2 in [((0, 0), (0,)), ((0, 3, 3), (3,)), ((3, 3), (3, 0)), ((2, 0, 0), (2, 0, 5))]:
        a = np.broadcast_to(np.eye(s1[-1]), s1)
        got = sol._solve(o, a, np.ones(s2))
        assert got.shape == np.linalg.solve(a, np.ones(s2)).shape


# ---------------------------------------------------------------------------- det, slogdet
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 3), (5, 4, 4), (2, 2, 6, 6), (1, 1), (35, 35)])
def test_det_slogdet(o, path, dtype, shape):
    a = rand(shape, dtype, 3)
    for name, x in layouts(a):
        close(sol._det(o, x), np.linalg.det(a), dtype, 50)
        sign, logabs = sol._slogdet(o, x)
        ws, wl = np.linalg.slogdet(a)
        assert sign.dtype == np.dtype(dtype) and logabs.dtype == wl.dtype
        close(sign, ws, dtype, 10)
        close(logabs, wl, dtype, 10)


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_det_singular_and_empty(o, dtype):
    a = np.array([[[1, 2], [2, 4]], [[2, 0], [0, 3]]], dtype)
    close(sol._det(o, a), [0, 6], dtype)
    sign, logabs = sol._slogdet(o, a)
    close(sign, [0, 1], dtype)
    assert logabs[0] == -np.inf and abs(logabs[1] - np.log(6)) < 1e-5
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2)]:
        z = np.zeros(shape, dtype)
        d, (s, l) = sol._det(o, z), sol._slogdet(o, z)
        np.testing.assert_array_equal(d, np.linalg.det(z))
        np.testing.assert_array_equal(s, np.linalg.slogdet(z)[0])
        np.testing.assert_array_equal(l, np.linalg.slogdet(z)[1])
        assert d.shape == shape[:-2] and d.dtype == np.dtype(dtype)


# ---------------------------------------------------------------------------- cholesky
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 3, 3), (40, 40), (1, 1)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(o, path, dtype, shape, upper):
    a = hpd(shape, dtype)
    want = np.linalg.cholesky(a, upper=upper)
    for name, x in layouts(a):
        got = dec._cholesky(o, x, upper)
        assert got.dtype == np.dtype(dtype)
        close(got, want, dtype, 10)
    # only one triangle is read: garbage in the other changes nothing
    junk = a.copy()
    iu = np.triu_indices(shape[-1], 1)
    if upper:
        junk[..., iu[1], iu[0]] = 99
    else:
        junk[..., iu[0], iu[1]] = 99
    close(dec._cholesky(o, junk, upper), want, dtype, 10)


def test_cholesky_not_positive_definite(o):
    a = np.stack([np.eye(3), np.eye(3), -np.eye(3)])
    with pytest.raises(LinAlgError, match=r"^cholesky: Matrix is not positive definite \(stack index \(2,\)\)$"):
        dec._cholesky(o, a, False)
    assert dec._cholesky(o, np.zeros((0, 3, 3)), False).shape == (0, 3, 3)
    assert dec._cholesky(o, np.zeros((2, 0, 0), "complex64"), True).dtype == np.complex64


# ---------------------------------------------------------------------------- qr
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 5), (6, 1), (1, 6), (2, 2, 7, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(o, dtype, shape, mode):
    a = rand(shape, dtype, 5)
    wq, wr = np.linalg.qr(a, mode=mode)
    for name, x in layouts(a):
        q, r = dec._qr(o, x, mode)
        assert q.shape == wq.shape and r.shape == wr.shape and q.dtype == r.dtype == np.dtype(dtype)
        close(q @ r, a, dtype, 10)
        close(np.conj(np.swapaxes(q, -1, -2)) @ q, np.eye(q.shape[-1]), dtype, 10)
        np.testing.assert_array_equal(r, np.triu(r))


def test_qr_empty(o):
    for shape in [(3, 0), (0, 3), (2, 0, 4), (0, 3, 3)]:
        for mode in ("reduced", "complete"):
            q, r = dec._qr(o, np.zeros(shape), mode)
            wq, wr = np.linalg.qr(np.zeros(shape), mode=mode)
            assert q.shape == wq.shape and r.shape == wr.shape
            np.testing.assert_array_equal(q, wq)
    with pytest.raises(ValueError, match="^qr: mode"):
        dec._qr(o, np.zeros((2, 2)), "r")


# ---------------------------------------------------------------------------- eigh
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 33, 33), (1, 1), (2, 2, 3, 3)])
def test_eigh(o, path, dtype, shape):
    a = rand(shape, dtype, 7)          # not Hermitian: only the lower triangle counts, as in NumPy
    w_want = np.linalg.eigvalsh(a)
    h = np.tril(a, -1)
    h = h + np.conj(np.swapaxes(h, -1, -2)) + np.real(a * np.eye(shape[-1]))
    for name, x in layouts(a):
        w, v = dec._eigh(o, x, True)
        assert w.dtype == w_want.dtype and v.dtype == np.dtype(dtype) and v.shape == shape
        close(w, w_want, dtype, 10)
        close(h @ v, v * w[..., None, :], dtype, 50)
        close(np.conj(np.swapaxes(v, -1, -2)) @ v, np.eye(shape[-1]), dtype, 10)
        close(dec._eigh(o, x, False), w_want, dtype, 10)


def test_workspace_queries_are_asked_once_per_sizes(o, mem):
    """A repeat factorization takes its workspace size from the memo (each query costs tens
    of microseconds of host time before the first kernel); other sizes or options ask again,
    and the workspace the call passes is still at least what the library answered."""
    a, b = rand((40, 40), "float64", 3), rand((41, 41), "float64", 4)
    for x in (a, a, b, a):
        dec._eigh(o, x, True)
    dec._eigh(o, a, False)     # no vectors: another query
    assert mem.calls.count("dsyevd_bufferSize") == 3 and mem.calls.count("dsyevd") == 5
    for x in (a, a, b):
        np.testing.assert_allclose(dec._cholesky(o, x @ x.T + 40 * np.eye(len(x)), False),
                                   np.linalg.cholesky(x @ x.T + 40 * np.eye(len(x))), rtol=1e-9, atol=1e-9)
    assert mem.calls.count("dpotrf_bufferSize") == 2 and mem.calls.count("dpotrf") == 3


def test_eigh_empty(o):
    w, v = dec._eigh(o, np.zeros((2, 0, 0), "complex128"), True)
    assert w.shape == (2, 0) and w.dtype == np.float64 and v.shape == (2, 0, 0)
    assert dec._eigh(o, np.zeros((0, 3, 3), "float32"), False).shape == (0, 3)


# ---------------------------------------------------------------------------- svd
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 5), (40, 33), (33, 40), (2, 40, 35),
                                   (3, 1, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(o, path, dtype, shape, full):
    a = rand(shape, dtype, 9)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full)
    for name, x in layouts(a):
        u, s, vh = dec._svd(o, x, full, True, "svd")
        assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
        assert s.dtype == ws.dtype and u.dtype == vh.dtype == np.dtype(dtype)
        close(s, ws, dtype, 10)
        k = s.shape[-1]
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 20)
        close(np.conj(np.swapaxes(u, -1, -2)) @ u, np.eye(u.shape[-1]), dtype, 10)
        close(vh @ np.conj(np.swapaxes(vh, -1, -2)), np.eye(vh.shape[-2]), dtype, 10)
        close(dec._svd(o, x, False, False, "svdvals"), ws, dtype, 10)


def test_svd_empty(o):
    for shape in [(3, 0), (0, 3), (2, 0, 4), (0, 3, 2)]:
        for full in (True, False):
            u, s, vh = dec._svd(o, np.zeros(shape, "float32"), full, True, "svd")
            wu, ws, wvh = np.linalg.svd(np.zeros(shape, "float32"), full_matrices=full)
            assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape) and s.dtype == ws.dtype
            np.testing.assert_array_equal(u, wu)
            np.testing.assert_array_equal(vh, wvh)


# ---------------------------------------------------------------------------- pinv, matrix_rank
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 40, 33)])
def test_pinv(o, path, dtype, shape):
    a = rand(shape, dtype, 11)
    close(sol._pinv(o, a, None), np.linalg.pinv(a), dtype, 100)
    low = a[..., :, :1] @ a[..., :1, :]            # rank 1
    close(sol._pinv(o, low, 1e-3), np.linalg.pinv(low, rtol=1e-3), dtype, 100)
    rt = np.full(shape[:-2], 1e-3, np.dtype(dtype).char.lower())
    close(sol._pinv(o, low, rt), np.linalg.pinv(low, rtol=rt), dtype, 100)
    assert sol._pinv(o, np.zeros((2, 0, 3), dtype), None).shape == (2, 3, 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_rank(o, path, dtype):
    a = rand((3, 6, 5), dtype, 12)
    a[1] = a[1, :, :1] @ a[1, :1, :]
    a[2, :, 2:] = 0
    np.testing.assert_array_equal(sol._matrix_rank(o, a, None), [5, 1, 2])
    np.testing.assert_array_equal(sol._matrix_rank(o, a, 0.5), np.linalg.matrix_rank(a, rtol=0.5))
    assert sol._matrix_rank(o, np.zeros((2, 0, 3), dtype), None).tolist() == [0, 0]
    assert sol._matrix_rank(o, a, None).dtype.kind == "i"


# ---------------------------------------------------------------------------- matrix_power
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5, 6])
def test_matrix_power(o, dtype, n):
    a = (rand((2, 3, 3), dtype, 13) / 2 + np.eye(3)).astype(dtype)
    got = sol._matrix_power(o, a, n)
    close(got, np.linalg.matrix_power(a, n), dtype, 100)
    assert got is not a and got.dtype == np.dtype(dtype)
    with pytest.raises(TypeError, match="^matrix_power: n must be an integer"):
        sol._matrix_power(o, a, 1.5)


# ---------------------------------------------------------------------------- argument checks
@pytest.mark.parametrize("call", [
    lambda o, x: sol._inv(o, x), lambda o, x: sol._det(o, x), lambda o, x: sol._slogdet(o, x),
    lambda o, x: dec._cholesky(o, x, False), lambda o, x: dec._qr(o, x, "reduced"),
    lambda o, x: dec._eigh(o, x, True), lambda o, x: dec._svd(o, x, True, True, "svd"),
    lambda o, x: sol._pinv(o, x, None), lambda o, x: sol._matrix_rank(o, x, None),
    lambda o, x: sol._solve(o, x, x), lambda o, x: sol._matrix_power(o, x, 2)])
def test_dtype_and_shape_errors(o, call):
    with pytest.raises(TypeError, match=r"^\w+: expected an array with a real or complex floating dtype, got int64"):
        call(o, np.ones((2, 2), np.int64))
    with pytest.raises(TypeError, match="float16"):
        call(o, np.ones((2, 2), np.float16))
    with pytest.raises(ValueError, match=r"^\w+: "):
        call(o, np.ones(3))
    with pytest.raises(TypeError, match=r"^\w+: expected a gparray Array"):
        call(o, [[1.0, 0.0], [0.0, 1.0]])
