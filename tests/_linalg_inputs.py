"""Inputs shared by the linalg tests (the GPU tier and the CPU models of cuSOLVER): random
matrices, Hermitian positive-definite ones, and the ``path`` fixture that forces the
solver engine's per-matrix loop or its batched routines."""
import numpy as np
import pytest

from gparray._engine import _solver


@pytest.fixture(params=["auto", "loop", "batched"])
def path(request, monkeypatch):
    """auto: the engine's own choice; loop: one cuSOLVER call per matrix; batched: the
    batched routines wherever they take the size."""
    if request.param == "loop":
        monkeypatch.setattr(_solver, "batched", lambda r, m, n, c: False)
    elif request.param == "batched":
        monkeypatch.setattr(_solver, "batched", lambda r, m, n, c: c >= 2 and (
            r not in ("syevj", "gesvdj") or (m <= 32 and n <= 32)))
    return request.param


def rand(shape, dtype, seed=0):
    """Standard normal values of ``dtype`` (complex: independent real and imaginary parts)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def hpd(shape, dtype, seed=0):
    """Hermitian positive-definite matrices: a a^H + n I."""
    a = rand(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
