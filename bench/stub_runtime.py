"""The host-side part of the "runtime" rows of bench/bench.py on a machine without a GPU.

The driver and CuPy are stubbed (no CUDA is needed): kernel launches go to the compiled
launcher's stand-in driver (``_claunch._stub_driver``), memory comes from a fake pool, the
profiler's CUDA events are counters (as in tests/test_profile.py). What is left is the Python
and C work gparray does on the host per call, which is what the rows' targets are about:

* ``a + b`` on 1-element float32 arrays, profiling off and inside ``gparray.cuda.profile()``;
* a user kernel launch ``k(1, 32, (v, np.int64(1)))`` (a ``UserKernel`` whose launcher is
  built on a fake function handle);
* the repeat reductions served in C (gparray/_native/_claunch_reduce.c): ``vector_norm`` of
  an (8, 8) float32 array along axis 1 and ``sum`` of a (64, 4) one along axis 0.

Figures are microseconds per call (median of rounds); they leave out the CUDA calls (the
launch itself and, with profiling on, two ``cudaEventRecord``), so they are not the device
machine's figures. Run: ``PYTHONPATH=. python bench/stub_runtime.py [--n N] [--rounds R]``.
Needs the C extension (``python setup.py build_ext --inplace``).
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import types

import numpy as np


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


class _Stream:
    ptr = 0x5000


class _Pool:
    def __init__(self):
        self.next = 0x100000

    def malloc(self, nbytes, stream):
        self.next += 0x100
        return _Buf(self.next)


class _Events:
    """The profiler's CUDA calls as counters (tests/test_profile.py's FakeCuda, minus the log)."""

    def __init__(self):
        self.t, self.n, self.stamp = 0.0, 0, {}

    def device(self):
        return 0

    def on_device(self, dev):
        return contextlib.nullcontext()

    def stream(self):
        return _Stream.ptr

    def event(self, dev):
        self.n += 1
        return self.n

    def record(self, ev, s):
        self.t += 1.0
        self.stamp[ev] = self.t

    def synchronize(self, ev):
        pass

    def elapsed(self, a, b):
        return self.stamp[b] - self.stamp[a]

    def release(self, dev, ev):
        pass


def _stub():
    """Stub CuPy, memory, kernel loading and the profiler's events; returns the launch log."""
    from gparray._core import _backend
    from gparray import _memory
    from gparray._array import _ops
    from gparray._array import Array
    from gparray._engine import _launch
    from gparray._kernels import _launcher
    from gparray.cuda import _profile

    c = _launcher._claunch
    if c is None:
        sys.exit("stub_runtime: the C extension is not built (python setup.py build_ext --inplace)")
    runtime = types.SimpleNamespace(getDevice=lambda: 0, getDeviceCount=lambda: 1)
    cuda = types.SimpleNamespace(runtime=runtime, get_current_stream=lambda device_id=None: _Stream(),
                                 Device=lambda d: contextlib.nullcontext())
    _backend._cupy = types.SimpleNamespace(cuda=cuda)
    _backend._device_count = 1
    _memory._pools[0] = _Pool()
    _memory._current_stream = lambda d: _Stream()
    _launch.get_kernel = lambda family, expr, dev: types.SimpleNamespace(ptr=0xF00D)
    _launch._cp, _launch._multi = _backend._cupy, False
    _launch._get_device, _launch._stream = runtime.getDevice, cuda.get_current_stream
    c.configure(Array, lambda device_id=None: _Stream())
    _ops._configured = True
    _profile._cuda = _Events()
    log = []
    c._stub_driver(log)
    return log


def _time(fn, n, rounds, log, setup=contextlib.nullcontext):
    per = []
    for _ in range(rounds):
        with setup():
            t0 = time.perf_counter()
            fn(n)
            t1 = time.perf_counter()
        log.clear()
        per.append((t1 - t0) / n * 1e6)
    return statistics.median(per)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args(argv)
    log = _stub()

    import gparray as xp
    from gparray._array import Array
    from gparray._core._device import get_device
    from gparray.cuda import _user_kernels as uk
    from gparray._kernels._launcher import Kernel

    f32 = np.dtype("float32")
    x = Array._new(_Buf(0x7000), 0, (1,), (4,), f32, get_device(0))
    y = Array._new(_Buf(0x8000), 0, (1,), (4,), f32, get_device(0))

    def adds(n):
        for _ in range(n):
            c = x + y
        return c

    adds(200)   # learn the plan (and the compiled path)
    off = _time(adds, a.n, a.rounds, log)
    n_on = min(a.n, 2000)   # as bench/runtime_rows.py: 2000 calls per profile
    with xp.cuda.profile():
        adds(200)
    on = _time(adds, n_on, a.rounds, log, xp.cuda.profile)
    with xp.cuda.profile() as prof:
        adds(3)
    recs = prof.records
    assert [(r.function, r.nbytes) for r in recs] == [("__add__", 12)] * 3, [(r.function, r.nbytes) for r in recs]
    # the Python path (what ops the compiled path does not serve take): off and on
    from gparray._kernels._launcher import _claunch

    _claunch.configure(None, None)
    py_off = _time(adds, a.n, a.rounds, log)
    py_on = _time(adds, n_on, a.rounds, log, xp.cuda.profile)
    _claunch.configure(Array, lambda device_id=None: _Stream())

    mod = uk.UserModule("// stub", "gp_bench_add_one", (), ("gp_bench_add_one",))
    k = mod["gp_bench_add_one"]
    fn = types.SimpleNamespace(ptr=0xBEEF)
    mod._functions = lambda dev: {"gp_bench_add_one": fn}
    args = (x, np.int64(1))

    def launches(n):
        for _ in range(n):
            k(1, 32, args)

    launches(200)
    assert isinstance(next(iter(k._launchers.values())), Kernel)
    user = _time(launches, a.n, a.rounds, log)

    from gparray._engine import _reduce

    _reduce.sm_count = lambda dev: 132     # (the device attribute a plan reads once)
    sq = Array._new(_Buf(0x10000), 0, (8, 8), (32, 4), f32, get_device(0))
    tall = Array._new(_Buf(0x20000), 0, (64, 4), (16, 4), f32, get_device(0))

    def norms(n):
        for _ in range(n):
            r = xp.linalg.vector_norm(sq, axis=1)
        return r

    def sums(n):
        for _ in range(n):
            r = xp.sum(tall, axis=0)
        return r

    norms(200)   # the Python path once, then recorded, then served
    sums(200)
    norm_us = _time(norms, a.n, a.rounds, log)
    sum_us = _time(sums, a.n, a.rounds, log)
    print(f"a + b, profiling off:  {off:7.2f} us/op")
    print(f"a + b, profiling on:   {on:7.2f} us/op  (on/off {on / off:.2f})")
    print(f"  Python path: off     {py_off:7.2f} us/op")
    print(f"  Python path: on      {py_on:7.2f} us/op  (on/off {py_on / py_off:.2f})")
    print(f"user kernel launch:    {user:7.2f} us/launch")
    print(f"vector_norm, served:   {norm_us:7.2f} us/call")
    print(f"sum(axis=0), served:   {sum_us:7.2f} us/call")


if __name__ == "__main__":
    main()
