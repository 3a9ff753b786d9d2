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


# ---------------------------------------------------------------------------- fault reports
_FAULT = r"""
import sys
import numpy as np
import gparray as xp
from gparray._array import Array

class Bogus:                 # a buffer at an address no allocation covers
    ptr = 1 << 12

dev = xp.asarray([1.0]).device
x = Array._new(Bogus(), 0, (1 << 22,), (4,), np.dtype("float32"), dev)
try:
    r = xp.sum(x)            # the kernel reads unmapped memory
    np.asarray(r)
except Exception as exc:
    print("RAISED", type(exc).__module__, type(exc).__name__, exc)
    sys.exit(0)
print("NOTHING RAISED")
"""


def _run_fault(**env):
    import os
    import subprocess
    import sys

    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", _FAULT], capture_output=True, text=True, env=e, timeout=240)
    return r.stdout + r.stderr


def test_after_a_fault_the_first_error_says_an_earlier_kernel_faulted():
    out = _run_fault(GPARRAY_LAUNCH_BLOCKING="0")
    assert "RAISED" in out and "KernelFaultError" in out, out
    assert "from an earlier gparray kernel launch" in out and "GPARRAY_LAUNCH_BLOCKING=1" in out, out


def test_launch_blocking_names_the_kernel_and_the_function():
    out = _run_fault(GPARRAY_LAUNCH_BLOCKING="1")
    assert "RAISED" in out and "KernelFaultError" in out, out
    assert "gparray.sum: kernel reduce: gp_reduce_inner<" in out and "(grid " in out, out
    assert "illegal memory access" in out, out


# ---------------------------------------------------------------------------- the device full
_FILL = r"""
import gc
import numpy as np
import gparray as xp
import gparray.cuda as gc_
from gparray import _memory

blocks = []
err = None
try:
    while True:
        blocks.append(_memory.alloc(1 << 30, 0))
except gc_.OutOfMemoryError as exc:
    err = exc
assert err is not None and len(blocks) > 0
msg = str(err)
assert msg.startswith("gparray: out of memory") and str(1 << 30) in msg and "reserved" in msg, msg
assert err.requested == 1 << 30 and err.stats["num_ooms"] >= 1, err.stats
# the process keeps working while the device is full of our blocks ...
blocks.pop().free()
a = xp.arange(1000, dtype=xp.float32)
assert float(np.asarray(xp.sum(a))) == 499500.0
del a
# ... and gives everything back
blocks.clear()
gc.collect()
from gparray._engine import _scan
_scan.release_workspaces()
gc_.empty_cache()
s = gc_.memory_stats()
assert s["reserved_bytes.current"] == 0 and s["allocated_bytes.current"] == 0, s
print("FILL OK", len(blocks), s["num_ooms"])
"""


@pytest.mark.gpu_exclusive
def test_out_of_memory_when_the_device_is_full():
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _FILL], capture_output=True, text=True, timeout=240,
                       env=dict(os.environ, GPARRAY_MEMORY_LIMIT="0"))
    assert r.returncode == 0 and "FILL OK" in r.stdout, r.stdout + r.stderr
