"""GPU tier: ``solve`` of one large matrix without getrs' row interchanges.

gp_lu_perm (gparray/_kernels/linalg_small.cu) turns getrf's pivots into one permutation, the
right-hand sides are gathered through it, and two cuBLAS triangular solves finish
(gparray/linalg/_solvers.py). Checked here: the kernel against the row interchanges done on
the host (random pivots as getrf writes them, pivots of a permutation matrix, every chunk
boundary of the kernel's staging, out-of-range pivots skipped), and ``solve`` against
numpy.linalg.solve around the path's bounds, over dtypes, layouts and right-hand-side stacks.
tests/test_linalg_solver_model.py checks the same path on the CPU against a model."""
import numpy as np
import pytest

import gparray as xp
from _arrays import host
from _fake_solver import lu_perm_reference
from gparray._engine import _solver

pytestmark = pytest.mark.gpu

LA = xp.linalg


def _perm(ipiv):
    n = len(ipiv)
    piv = xp.asarray(np.asarray(ipiv, np.int32))
    out = xp.full((n,), -7, dtype=xp.int64)
    _solver.lu_perm(piv._ptr, out._ptr, n, piv._device._id)
    return host(out)


@pytest.mark.parametrize("n", [1, 2, 3, 255, 2047, 2048, 2049, 4096, 4097, 8191, 8192])
def test_lu_perm_matches_the_row_interchanges(n):
    rng = np.random.default_rng(n)
    ipiv = (np.arange(n) + (rng.integers(0, n - np.arange(n)))).astype(np.int32) + 1   # i <= p < n, 1-based
    np.testing.assert_array_equal(_perm(ipiv), lu_perm_reference(ipiv, n))
    # no interchange, and every row swapped with the last
    np.testing.assert_array_equal(_perm(np.arange(1, n + 1)), np.arange(n))
    np.testing.assert_array_equal(_perm(np.full(n, n)), lu_perm_reference(np.full(n, n), n))


def test_lu_perm_skips_pivots_outside_the_matrix():
    ipiv = np.array([0, -5, 100, 2, 5, 6, 2**31 - 1, -(2**31)], np.int32)
    np.testing.assert_array_equal(_perm(ipiv), lu_perm_reference(ipiv, len(ipiv)))
    with pytest.raises(ValueError, match="^lu_perm: "):
        _solver.lu_perm(0, 0, _solver.LU_PERM_MAX + 1, 0)


def _well(n, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n))
    return (a + (n + 4) * np.eye(n)).astype(dtype)


def _close(got, want, dtype):
    t = 2e-4 if np.dtype(dtype).char in "fF" else 1e-10
    g = host(got)
    np.testing.assert_allclose(g, np.broadcast_to(want, g.shape), rtol=t, atol=t * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("n", [_solver.LU_PERM_MIN - 1, _solver.LU_PERM_MIN, 257, 1000])
def test_solve_one_matrix(dtype, n):
    assert _solver.lu_perm_ok(n) == (n >= _solver.LU_PERM_MIN)
    # a permutation of a well-conditioned matrix's rows: every step pivots
    a = _well(n, dtype, n)[np.random.default_rng(1).permutation(n)]
    rng = np.random.default_rng(2)
    for b in (rng.standard_normal(n), rng.standard_normal((n, 3)), rng.standard_normal((5, n, 2))):
        b = b.astype(dtype)
        want = np.linalg.solve(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), b)
        for x1 in (xp.asarray(a), xp.asarray(np.ascontiguousarray(a.T)).mT):
            for x2 in (xp.asarray(b), xp.asarray(np.repeat(b, 2, axis=-1))[..., ::2] if b.ndim > 1 else
                       xp.asarray(np.repeat(b, 2))[::2]):
                got = LA.solve(x1, x2)
                assert got.shape == want.shape and got.dtype == xp.asarray(b).dtype
                _close(got, want, dtype)


def test_solve_one_matrix_mixed_dtypes_broadcast_and_singular():
    n = 300
    a = _well(n, "float32", 3)
    b = np.random.default_rng(4).standard_normal((n, 1))
    got = LA.solve(xp.asarray(a), xp.asarray(b))   # float32 matrix, float64 right-hand side
    assert got.dtype == xp.float64
    _close(got, np.linalg.solve(a.astype(np.float64), b), "float32")
    got = LA.solve(xp.asarray(a.astype(np.float64)), xp.asarray(b.astype(np.float32)))   # gathered, then widened
    assert got.dtype == xp.float64
    _close(got, np.linalg.solve(a.astype(np.float64), b.astype(np.float32)), "float64")
    # one matrix against a broadcast stack of right-hand sides
    x2 = xp.broadcast_to(xp.asarray(b), (4, n, 1))
    _close(LA.solve(xp.asarray(a[None]), x2), np.linalg.solve(a.astype(np.float64), b), "float32")
    s = a.copy()
    s[7] = 0.0
    with pytest.raises(LA.LinAlgError, match=r"^solve: Singular matrix$"):
        LA.solve(xp.asarray(s), xp.asarray(b[:, 0]))
