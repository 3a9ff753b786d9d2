"""GPU tier: memory safety regressions (issue 11).

The fault behind the illegal addresses of the GPU tier: ``_reduce.reduce`` looked the pool's
``alloc`` up once, at the first reduction that needed a split workspace, and kept it in a
module global. In a pytest worker where that first one ran inside a CPU-tier test (which
patches ``_memory.alloc`` with a fake Block at ``1 << 30``), every later split reduction
wrote its partial states to address 0x40000000 + offset: ``cudaErrorIllegalAddress``, and
with it the CUDA context of the worker and every test after it. compute-sanitizer showed it
as "Invalid __global__ write of size 8 bytes at gp_reduce_outer<op_mean<float, float,
double>, 1, 8, 4, int> ... Access to 0x40000300 is out of bounds".
"""
import numpy as np
import pytest

import gparray as xp
from gparray import _memory
from gparray._engine import _reduce

pytestmark = pytest.mark.gpu


class _FakeBlock:
    ptr = 1 << 30


def test_split_reduction_after_a_test_double_allocator(monkeypatch):
    # the sequence that faulted: a double's allocator in place during the process's first
    # split reduction (the launches are doubled too: nothing runs on the device) ...
    monkeypatch.setattr(_reduce, "_alloc", None, raising=False)   # 199b72e's memo, reset
    a = np.random.default_rng(0).standard_normal((37, 129)).astype(np.float32)
    x = xp.asarray(a)
    out = xp.empty((129,), dtype=xp.float32)
    with monkeypatch.context() as m:
        m.setattr(_memory, "alloc", lambda nbytes, dev, stream=None: _FakeBlock())
        m.setattr(_reduce, "run", lambda *args, **kwargs: None)
        m.setattr(_reduce, "_launches", {})
        _reduce.reduce("mean", x, (0,), out)
    # ... then real split reductions (outer strategy with a workspace, and inner splits)
    np.testing.assert_allclose(np.asarray(xp.mean(x, axis=0)), a.astype(np.float64).mean(axis=0), rtol=1e-5)
    b = np.random.default_rng(1).standard_normal((4, 300000)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xp.sum(xp.asarray(b), axis=1)), b.astype(np.float64).sum(axis=1),
                               rtol=1e-4)
