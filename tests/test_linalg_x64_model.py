"""CPU tier: the one-call-per-matrix loops of the solver engine on cuSOLVER's 64-bit API
(gparray/_engine/_solver.py: Xpotrf, Xgetrf with 64-bit pivots, Xgetrs, Xsyevd), on a
LAPACK model of that API (the adapter ``_solver._X64`` replaced by ``FakeX64``, which
checks handles, parameters, data types, workspaces and 64-bit pivots on the registered host
memory of tests/_fake_solver.py). The factorization and solver tests of
tests/test_linalg_solver_model.py run again here with the model in place; what is checked
in addition: which API each path takes, ``ipiv_dtype``, and that GPARRAY_CUSOLVER_64=0
(``USE_64``) or a stand-in binding module keeps the legacy calls."""
import numpy as np
import pytest
from cupy_backends.cuda.libs import cusolver

from gparray._engine import _solver
from gparray.linalg import _decompositions as dec
from gparray.linalg import _solvers as sol

from _fake_solver import SOLVER_HANDLE, FakeLib, _op, _solve, lu, unlu
from test_linalg_solver_model import (FLOATS, hpd, mem, o, path, rand,  # noqa: F401
                                      test_cholesky, test_cholesky_not_positive_definite, test_det_singular_and_empty,
                                      test_det_slogdet, test_eigh, test_inv, test_inv_singular_names_the_matrix,
                                      test_matrix_power, test_solve, test_solve_singular_and_empty)

PARAMS = 55
_CODE = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}
_REAL = {"float32": 0, "float64": 1, "complex64": 0, "complex128": 1}


class FakeX64:
    """``_solver._X64`` on host memory."""

    def __init__(self, mem):
        self.mem = mem
        self.lib = FakeLib(cusolver, mem, SOLVER_HANDLE)     # its potrf / eigh models
        self.sizes = {}

    def params(self):
        return PARAMS

    def _head(self, name, h, params, dtype_a, compute):
        assert h == SOLVER_HANDLE and params == PARAMS and dtype_a == compute, (name, h, params, dtype_a, compute)
        self.mem.calls.append("X" + name)
        return _CODE[dtype_a]

    def _sizes(self, name, n):
        self.sizes[name] = (100 + 8 * n, 24)
        return self.sizes[name]

    def _work(self, name, dwork, dbytes, hwork, hbytes):
        want_d, want_h = self.sizes[name]
        assert dbytes >= want_d and hbytes >= want_h and hwork != 0, (name, dbytes, hbytes, hwork)
        self.mem.check(dwork, dbytes, f"X{name} device workspace")

    def potrf_bufferSize(self, h, params, uplo, n, dtype_a, a, lda, compute):
        self._head("potrf_bufferSize", h, params, dtype_a, compute)
        return self._sizes("potrf", n)

    def potrf(self, h, params, uplo, n, dtype_a, a, lda, compute, dwork, dbytes, hwork, hbytes, info):
        dt = self._head("potrf", h, params, dtype_a, compute)
        self._work("potrf", dwork, dbytes, hwork, hbytes)
        self.lib._info(info, [self.lib._potrf_one(dt, uplo, n, a, lda, False)])

    def getrf_bufferSize(self, h, params, m, n, dtype_a, a, lda, compute):
        self._head("getrf_bufferSize", h, params, dtype_a, compute)
        return self._sizes("getrf", n)

    def getrf(self, h, params, m, n, dtype_a, a, lda, ipiv, compute, dwork, dbytes, hwork, hbytes, info):
        dt = self._head("getrf", h, params, dtype_a, compute)
        self._work("getrf", dwork, dbytes, hwork, hbytes)
        piv, inf = lu(self.mem.cm(a, m, n, lda, dt, "Xgetrf A"))
        self.mem.vec(ipiv, min(m, n), np.int64, "Xgetrf ipiv (int64)")[:] = piv
        self.lib._info(info, [inf])

    def getrs(self, h, params, trans, n, nrhs, dtype_a, a, lda, ipiv, dtype_b, b, ldb, info):
        dt = self._head("getrs", h, params, dtype_a, dtype_b)
        f = unlu(self.mem.cm(a, n, n, lda, dt, "Xgetrs A"), self.mem.vec(ipiv, n, np.int64, "Xgetrs ipiv (int64)"))
        bb = self.mem.cm(b, n, nrhs, ldb, dt, "Xgetrs B")
        bb[...] = _solve(_op(f, trans), bb.copy())
        self.lib._info(info, [0])

    def syevd_bufferSize(self, h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute):
        dt = self._head("syevd_bufferSize", h, params, dtype_a, compute)
        assert dtype_w == _REAL[dt]
        return self._sizes("syevd", n)

    def syevd(self, h, params, jobz, uplo, n, dtype_a, a, lda, dtype_w, w, compute, dwork, dbytes, hwork, hbytes,
              info):
        dt = self._head("syevd", h, params, dtype_a, compute)
        assert dtype_w == _REAL[dt]
        self._work("syevd", dwork, dbytes, hwork, hbytes)
        self.lib._eig_one(dt, jobz, uplo, n, a, lda, w)
        self.lib._info(info, [0])


@pytest.fixture(autouse=True)
def x64(mem, monkeypatch):
    fake = FakeX64(mem)
    monkeypatch.setattr(_solver, "_x64", lambda: fake)
    return fake


def _names(mem):
    return [c for c in mem.calls if not c.endswith("_bufferSize") and not c.endswith("Info")]


def test_loops_take_the_64_bit_api(o, mem):
    a = hpd((2, 40, 40), "float64", 1)
    assert _solver.ipiv_dtype(40, 1) == "int64" and _solver.ipiv_dtype(4, 100) == "int32"
    dec._cholesky(o, a[0], False)
    assert _names(mem) == ["Xpotrf"]
    mem.calls.clear()
    sol._solve(o, a[0], np.ones(40))
    assert _names(mem) == ["Xgetrf", "Xgetrs"]
    mem.calls.clear()
    sol._inv(o, a[0])
    assert _names(mem) == ["Xgetrf", "Xgetrs"]
    mem.calls.clear()
    sol._det(o, a[0])
    assert _names(mem) == ["Xgetrf"]
    mem.calls.clear()
    dec._eigh(o, a[0], True)
    assert _names(mem) == ["Xsyevd"]
    mem.calls.clear()
    dec._cholesky(o, hpd((300, 4, 4), "float32"), False)       # batched: the legacy batched call
    assert _names(mem) == ["spotrfBatched"]


def test_use_64_off_and_stand_in_bindings_keep_the_legacy_calls(o, mem, monkeypatch):
    monkeypatch.undo()                                         # the real _x64, on the LAPACK model's bindings
    from _fake_solver import install

    install(monkeypatch, mem)
    assert _solver._x64() is None and _solver.ipiv_dtype(40, 1) == "int32"
    assert "legacy API" in _solver.x64_info()
    monkeypatch.setattr(_solver, "USE_64", False)
    assert _solver._x64() is None and _solver.x64_info() == "legacy API (GPARRAY_CUSOLVER_64=0)"
    a = hpd((40, 40), "complex64", 2)
    dec._cholesky(o, a, True)
    sol._solve(o, a, np.ones(40, "complex64"))
    assert _names(mem) == ["cpotrf", "cgetrf", "cgetrs"]
