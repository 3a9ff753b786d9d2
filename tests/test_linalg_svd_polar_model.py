"""CPU tier: svd, svdvals, pinv and matrix_rank through cusolverDnXgesvdp (the polar
decomposition SVD, gparray/_engine/_solver.py ``gesvdp``, called by
gparray/linalg/_decompositions.py ``_svd_polar``) on a LAPACK model of that routine
(``FakeGesvdp``: handle, params, data types, economy size, leading dimensions, workspaces,
every buffer inside registered host memory; tests/_fake_solver.py), against numpy.linalg
over tall, wide and square stacks and layouts; which routine each case takes (gesvd for
full matrices of non-square stacks, gesvdjBatched for small stacks), the fallback to gesvd
when gesvdp reports a failure, and that the CPU tier's stand-in bindings keep gesvd."""
import numpy as np
import pytest

from gparray._engine import _solver
from gparray.linalg import _decompositions as dec
from gparray.linalg import _solvers as sol

from _fake_solver import SOLVER_HANDLE, _garbage
from test_linalg_solver_model import FLOATS, close, layouts, mem, o, path, rand  # noqa: F401

PARAMS = 66
_CODE = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}
_REAL = {"float32": 0, "float64": 1, "complex64": 0, "complex128": 1}


class FakeGesvdp:
    fail = False

    def __init__(self, mem):
        self.mem, self.size = mem, None

    def params(self):
        return PARAMS

    def _check(self, h, params, jobz, econ, m, n, dt, lda, dts, dtu, ldu, dtv, ldv, compute):
        assert h == SOLVER_HANDLE and params == PARAMS and jobz in (0, 1) and econ == 1
        assert m >= n >= 1 and lda >= m and ldu >= m and ldv >= n
        assert dt == dtu == dtv == compute and dts == _REAL[_CODE[dt]]
        return _CODE[dt]

    def buffer_size(self, h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute):
        self._check(h, params, jobz, econ, m, n, dt, lda, dts, dtu, ldu, dtv, ldv, compute)
        self.mem.calls.append("Xgesvdp_bufferSize")
        self.size = (64 + 8 * m, 16)
        return self.size

    def run(self, h, params, jobz, econ, m, n, dt, a, lda, dts, s, dtu, u, ldu, dtv, v, ldv, compute, dwork, dbytes,
            hwork, hbytes, info):
        dtype = self._check(h, params, jobz, econ, m, n, dt, lda, dts, dtu, ldu, dtv, ldv, compute)
        self.mem.calls.append("Xgesvdp")
        assert dbytes >= self.size[0] and hbytes >= self.size[1] and hwork is not None
        self.mem.check(dwork, dbytes, "Xgesvdp device workspace")
        aa = self.mem.cm(a, m, n, lda, dtype, "Xgesvdp A")
        uu, ss, vh = np.linalg.svd(aa, full_matrices=False)
        ub = self.mem.cm(u, m, n, ldu, dtype, "Xgesvdp U")
        vb = self.mem.cm(v, n, n, ldv, dtype, "Xgesvdp V")
        sb = self.mem.vec(s, n, np.dtype(dtype).char.lower(), "Xgesvdp S")
        _garbage(aa)
        iv = self.mem.vec(info, 1, np.int32, "Xgesvdp info")
        if self.fail:
            iv[0] = 3
            return
        sb[:] = ss
        if jobz == 1:
            ub[...], vb[...] = uu, vh.conj().T
        iv[0] = 0


@pytest.fixture
def polar(mem, monkeypatch):
    fake = FakeGesvdp(mem)
    monkeypatch.setattr(_solver, "_gesvdp_fns", lambda: fake)
    monkeypatch.setattr(_solver, "GESVDP_MIN", 1)          # every size (the default: 64 and up)
    return fake


def _routines(mem):
    return [c.lstrip("sdcz") for c in mem.calls if c.lstrip("sdcz") in ("Xgesvdp", "gesvd", "gesvdjBatched")]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(9, 3), (3, 9), (5, 5), (2, 12, 5), (2, 5, 12), (40, 33), (33, 40), (3, 1, 4),
                                   (2, 40, 35), (1, 1)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_and_values(o, mem, path, polar, dtype, shape, full):
    a = rand(shape, dtype, 31)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full)
    m, n = shape[-2:]
    count = int(np.prod(shape[:-2]))
    jacobi = path != "loop" and count >= 2 and m <= 32 and n <= 32
    for _, x in layouts(a):
        mem.calls.clear()
        u, s, vh = dec._svd(o, x, full, True, "svd")
        assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
        assert s.dtype == ws.dtype and u.dtype == vh.dtype == np.dtype(dtype)
        close(s, ws, dtype, 10)
        k = s.shape[-1]
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 20)
        close(np.conj(np.swapaxes(u, -1, -2)) @ u, np.eye(u.shape[-1]), dtype, 10)
        close(vh @ np.conj(np.swapaxes(vh, -1, -2)), np.eye(vh.shape[-2]), dtype, 10)
        want = (["gesvdjBatched"] if jacobi else ["gesvd"] * count if full and m != n else ["Xgesvdp"] * count)
        assert _routines(mem) == want, mem.calls
        mem.calls.clear()
        close(dec._svd(o, x, False, False, "svdvals"), ws, dtype, 10)
        assert _routines(mem) == (["gesvdjBatched"] if jacobi else ["Xgesvdp"] * count)


@pytest.mark.parametrize("shape", [(9, 3), (3, 9), (2, 40, 40)])
def test_gesvd_takes_over_when_gesvdp_fails(o, mem, polar, monkeypatch, shape):
    monkeypatch.setattr(FakeGesvdp, "fail", True)
    a = rand(shape, "complex128", 32)
    u, s, vh = dec._svd(o, a, False, True, "svd")
    close(s, np.linalg.svd(a, compute_uv=False), "complex128", 10)
    close((u * s[..., None, :]) @ vh, a, "complex128", 20)
    count = int(np.prod(shape[:-2]))
    assert _routines(mem) == ["Xgesvdp"] * count + ["gesvd"] * count


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(12, 4), (4, 12), (2, 40, 6)])
def test_pinv_and_matrix_rank(o, polar, dtype, shape):
    a = rand(shape, dtype, 33)
    close(sol._pinv(o, a, None), np.linalg.pinv(a), dtype, 100)
    low = a[..., :, :1] @ a[..., :1, :]            # rank 1
    np.testing.assert_array_equal(sol._matrix_rank(o, low, None), np.linalg.matrix_rank(low))
    np.testing.assert_array_equal(sol._matrix_rank(o, a, None), np.linalg.matrix_rank(a))


def test_stand_in_bindings_keep_gesvd(o, mem, monkeypatch):
    # forget what an earlier GPU test found in this process (the real libcusolver)
    monkeypatch.setattr(_solver, "_gesvdp", None)
    monkeypatch.setattr(_solver, "_gesvdp_note", "")
    assert not _solver.gesvdp_ok(100, 100) and _solver.gesvdp_info().startswith("gesvd:")
    dec._svd(o, rand((9, 3), "float32", 34), False, True, "svd")
    assert _routines(mem) == ["gesvd"]


def test_small_matrices_keep_gesvd(o, mem, polar, monkeypatch):
    monkeypatch.setattr(_solver, "GESVDP_MIN", 64)
    assert _solver.gesvdp_ok(64, 70) and not _solver.gesvdp_ok(63, 1000)
    dec._svd(o, rand((70, 63), "float32", 35), False, True, "svd")
    dec._svd(o, rand((64, 80), "float32", 36), False, True, "svd")
    assert _routines(mem) == ["gesvd", "Xgesvdp"]
