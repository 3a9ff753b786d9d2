"""CPU tier: svd, svdvals, pinv and matrix_rank of tall and wide matrices through a QR
factorization first (gparray/linalg/_decompositions.py, ``_svd_qr``: geqrf + orgqr, the
Jacobi SVD of the square R with gesvd as its fallback, U = Q U_r), on the LAPACK model of
CuPy's bindings (tests/_fake_solver.py), against numpy.linalg; the settings that turn it
off (QR_RATIO = 0) or pick gesvd for R."""
import numpy as np
import pytest

from gparray._engine import _solver
from gparray.linalg import _decompositions as dec
from gparray.linalg import _solvers as sol

from _fake_solver import FakeLib
from test_linalg_solver_model import FLOATS, close, layouts, mem, o, path, rand  # noqa: F401

SHAPES = [(9, 3), (3, 9), (8, 4), (2, 12, 5), (2, 5, 12), (70, 6), (6, 70), (3, 40, 1), (1, 7)]


def _qr_path(shape, path):
    m, n = shape[-2:]
    count = int(np.prod(shape[:-2]))
    return max(m, n) >= 2 * min(m, n) and not (path != "loop" and count >= 2 and m <= 32 and n <= 32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_reduced_svd_and_values(o, mem, path, dtype, shape):
    a = rand(shape, dtype, 21)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=False)
    for _, x in layouts(a):
        mem.calls.clear()
        u, s, vh = dec._svd(o, x, False, True, "svd")
        assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
        assert s.dtype == ws.dtype and u.dtype == vh.dtype == np.dtype(dtype)
        close(s, ws, dtype, 10)
        close((u * s[..., None, :]) @ vh, a, dtype, 20)
        close(np.conj(np.swapaxes(u, -1, -2)) @ u, np.eye(u.shape[-1]), dtype, 10)
        close(vh @ np.conj(np.swapaxes(vh, -1, -2)), np.eye(vh.shape[-2]), dtype, 10)
        qr = _qr_path(shape, path)
        routines = [c[1:] for c in mem.calls if c[1:] in ("geqrf", "orgqr", "ungqr", "gesvdj", "gesvd")]
        if qr:
            count = int(np.prod(shape[:-2]))
            q = "ungqr" if np.dtype(dtype).kind == "c" else "orgqr"
            assert routines == ["geqrf"] * count + [q] * count + ["gesvdj"] * count, mem.calls
        else:
            assert "geqrf" not in routines, mem.calls
        mem.calls.clear()
        close(dec._svd(o, x, False, False, "svdvals"), ws, dtype, 10)
        assert ("geqrf" in " ".join(mem.calls)) == qr


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_full_matrices_keep_gesvd(o, mem, dtype):
    a = rand((9, 3), dtype, 22)
    u, s, vh = dec._svd(o, a, True, True, "svd")
    assert u.shape == (9, 9) and vh.shape == (3, 3)
    close((u[:, :3] * s) @ vh, a, dtype, 20)
    assert not any("geqrf" in c for c in mem.calls)


@pytest.mark.parametrize("shape", [(9, 3), (3, 9), (2, 12, 5)])
def test_gesvd_takes_over_when_jacobi_does_not_converge(o, mem, monkeypatch, shape):
    monkeypatch.setattr(FakeLib, "gesvdj_fail", True)
    monkeypatch.setattr(_solver, "batched", lambda r, m, n, c: False)
    a = rand(shape, "float64", 23)
    u, s, vh = dec._svd(o, a, False, True, "svd")
    close(s, np.linalg.svd(a, compute_uv=False), "float64", 10)
    close((u * s[..., None, :]) @ vh, a, "float64", 20)
    names = [c[1:] for c in mem.calls]
    assert names.index("gesvdj") < names.index("gesvd")
    close(dec._svd(o, a, False, False, "svdvals"), np.linalg.svd(a, compute_uv=False), "float64", 10)


def test_settings_turn_it_off_or_pick_gesvd(o, mem, monkeypatch):
    a = rand((12, 4), "complex64", 24)
    want = np.linalg.svd(a, compute_uv=False)
    monkeypatch.setattr(dec, "SVD_R", "gesvd")
    u, s, vh = dec._svd(o, a, False, True, "svd")
    close(s, want, "complex64", 10)
    close((u * s) @ vh, a, "complex64", 20)
    assert [c[1:] for c in mem.calls if c[1:] in ("geqrf", "gesvd", "gesvdj")] == ["geqrf", "gesvd"]
    mem.calls.clear()
    monkeypatch.setattr(dec, "QR_RATIO", 0)
    close(dec._svd(o, a, False, False, "svdvals"), want, "complex64", 10)
    assert [c[1:] for c in mem.calls if c[1:] in ("geqrf", "gesvd", "gesvdj")] == ["gesvd"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(12, 4), (4, 12), (2, 40, 6)])
def test_pinv_and_matrix_rank(o, path, dtype, shape):
    a = rand(shape, dtype, 25)
    close(sol._pinv(o, a, None), np.linalg.pinv(a), dtype, 100)
    low = a[..., :, :1] @ a[..., :1, :]            # rank 1
    np.testing.assert_array_equal(sol._matrix_rank(o, low, None), np.linalg.matrix_rank(low))
    np.testing.assert_array_equal(sol._matrix_rank(o, a, None), np.linalg.matrix_rank(a))
