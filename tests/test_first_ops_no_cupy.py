"""CPU tier: a new process's first operations do not import CuPy (issue 17, warm start).

``import cupy`` costs 0.2-0.3 s on the GPU machines, most of a warm start. The first
operations (``asarray``, ``ones``, ``+``, ``sum``, ``synchronize``, a download) need only the
CUDA runtime and driver bindings of ``cupy_backends`` (gparray._core._backend.runtime/driver).
Here a child process replaces those two modules with recording fakes and the compiled
launcher's driver with its stand-in, runs the operations, and reports which modules were
imported and which CUDA calls were made: the test fails when any of them imports CuPy, and
checks that the calls are the ones the operations need (a pool allocation, copies on the
default stream, kernel modules loaded and launched). The child runs twice: the first one
may compile kernels and write the NVRTC stamp (``_nvrtc_info``), the second must find
everything in the kernel cache. It then imports CuPy in the same
child and checks that every stream getter is CuPy's again and CuPy's allocator is hooked.
"""
import json
import subprocess
import sys

import pytest

from gparray._kernels import _launcher

pytestmark = pytest.mark.skipif(_launcher._claunch is None,
                                reason="C extension gparray._native._claunch not built")

_CHILD = r'''
import json, sys
import numpy as np
from gparray._core import _backend
from gparray._kernels import _launcher

calls = []

class CUDARuntimeError(RuntimeError):
    def __init__(self, status):
        super().__init__(f"cuda error {status}")
        self.status = status

class FakeRuntime:
    CUDARuntimeError = CUDARuntimeError
    streamPerThread = 2
    def __init__(self):
        self.dev, self.next = 0, 1 << 32
    def __getattr__(self, name):
        def call(*a):
            calls.append(name)
            return 0
        return call
    def getDeviceCount(self): return 1
    def getDevice(self): return self.dev
    def setDevice(self, d): calls.append("setDevice"); self.dev = d
    def memGetInfo(self): calls.append("memGetInfo"); return (80 << 30, 80 << 30)
    def deviceGetAttribute(self, attr, dev): return {75: 9, 76: 0, 16: 132}.get(attr, 1024)
    def malloc(self, n):
        calls.append("malloc"); p = self.next; self.next += (n + 0xFFFFF) & ~0xFFFFF; return p
    def memcpyAsync(self, dst, src, n, kind, stream):
        calls.append(("memcpyAsync", kind, stream))
    def pointerGetMemoryType(self, ptr): return 0
    def eventCreateWithFlags(self, flags): calls.append("eventCreate"); return 0xE000
    def eventQuery(self, ev): return 0

class FakeDriver:
    def moduleLoadData(self, cubin):
        calls.append("moduleLoadData"); assert isinstance(cubin, bytes) and len(cubin) > 100; return 0xA000
    def moduleGetFunction(self, mod, name):
        calls.append("moduleGetFunction"); return 0xF000

_backend._rt = FakeRuntime()
_backend.driver = lambda: FakeDriver()
if sys.argv[1:] == ["warm"]:
    # this run only fills the kernel cache and the NVRTC stamp; a compile imports CuPy, whose
    # stream and allocator calls would reach the real (absent) driver: keep gparray on the fakes
    _backend.when_cupy_imported = lambda fn: None
    _backend.current_stream = lambda device_id=-1: _backend.DefaultStream(0)
    _backend.stream_getter = lambda: _backend.current_stream
launches = []
_launcher._claunch._stub_driver(launches)
_launcher._claunch._stub_context(0xC0)

import gparray as xp
x = xp.asarray(np.arange(6, dtype=np.float32))
a = xp.ones(4)
b = a + a
y = x + 1
s = xp.sum(x)
xp.cuda.synchronize()
before = sorted(m for m in sys.modules if m == "cupy" or m.startswith("cupy."))
ops = {"launches": len(launches), "calls": [c if isinstance(c, str) else list(c) for c in calls]}
stream_before = _backend.current_stream().ptr
if sys.argv[1:] == ["warm"]:
    print(json.dumps({}))
    raise SystemExit(0)
import cupy
try:
    _backend.current_stream()     # sees CuPy in sys.modules: switches every getter to CuPy's
except Exception:
    pass                          # (CuPy's own getter then needs a real device)
from gparray import _memory
from gparray._engine import _launch
get = cupy.cuda.get_current_stream
out = {"cupy_modules": before, "ops": ops, "stream_before": stream_before,
       "getters_after": [_backend.stream_getter() is get, _launch._stream is get,
                         _memory._current_stream is get],
       "allocator_hooked": cupy.cuda.get_allocator() is _memory._cupy_allocator}
print(json.dumps(out))
'''


def _run(env_extra=None, warm=False):
    import os

    env = dict(os.environ)
    env.pop("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", None)
    env.update(env_extra or {})
    out = subprocess.run([sys.executable, "-c", _CHILD] + (["warm"] if warm else []), capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_ops_run_on_the_runtime_bindings_without_importing_cupy():
    _run(warm=True)   # a first process may compile (NVRTC imports CuPy) and writes the NVRTC stamp
    res = _run()    # the next one loads everything from the kernel cache
    assert res["cupy_modules"] == []
    calls = res["ops"]["calls"]
    assert calls.count("memGetInfo") == 1          # one pool
    assert "malloc" in calls
    # the upload queued on the legacy default stream (handle 0), host-to-device
    assert ["memcpyAsync", 1, 0] in calls
    assert calls.count("moduleLoadData") >= 2       # creation/elementwise and reduce modules
    assert res["ops"]["launches"] >= 4              # asarray needs none; ones, +, +1, sum
    assert res["stream_before"] == 0
    # once CuPy is imported its current stream is read again and its allocator is the pools'
    assert res["getters_after"] == [True, True, True]
    assert res["allocator_hooked"] is True


def test_default_stream_follows_cupys_per_thread_setting():
    _run(warm=True)
    res = _run({"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"})
    assert res["cupy_modules"] == []
    assert res["stream_before"] == 2                # cudaStreamPerThread, as CuPy would answer
    assert ["memcpyAsync", 1, 2] in res["ops"]["calls"]
