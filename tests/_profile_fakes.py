"""Test doubles of the CPU-tier profiler tests (tests/test_profile*.py): a fake CUDA, fake
kernels, gparray-named fake modules (a frame's module is its globals' ``__name__``) and the
fixtures that put them in place."""
import contextlib

import numpy as np
import pytest

from gparray._core._device import Device
from gparray._engine import _launch
from gparray._engine._shapes import Layout
from gparray.cuda import _profile, _profile_frames, _user_kernels

f32 = np.dtype("float32")
DEV = Device(0)
KNAME = "elementwise: gp_binary_contig<op_add, float, float, float, float>"


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


def _layout(shape, ptr, dtype=f32, strides=None, offset=0):
    return Layout(_Buf(ptr), tuple(shape), np.dtype(dtype), DEV, offset, strides)


class FakeCuda:
    """Events whose timestamps count up by one per record; every call logged."""

    def __init__(self):
        self.t, self.next = 0.0, 1
        self.stamp, self.synced, self.released, self.created = {}, [], [], []

    def device(self):
        return 0

    def on_device(self, dev):
        return contextlib.nullcontext()

    def stream(self):
        return 0x77

    def event(self, dev):
        e = self.next
        self.next += 1
        self.created.append(e)
        return e

    def record(self, ev, s):
        self.t += 1.0
        self.stamp[ev] = self.t

    def synchronize(self, ev):
        self.synced.append(ev)

    def elapsed(self, a, b):
        return self.stamp[b] - self.stamp[a]

    def release(self, dev, ev):
        self.released.append(ev)


class FakeKernel:
    def __init__(self, name=KNAME, fail=None):
        self.name, self.calls, self.fail = name, [], fail

    def launch(self, grid, block, args, smem, s):
        if self.fail is not None:
            raise self.fail
        self.calls.append((grid, block, args, smem, s))

    def launch3(self, grid, block, args, smem, s):
        self.calls.append((grid, block, args, smem, s))


@pytest.fixture
def fake(monkeypatch):
    """The profiler on a fake CUDA; launches outside a profile go to a recording run_plain."""
    cu = FakeCuda()
    plain = []
    monkeypatch.setattr(_profile, "_cuda", cu)
    monkeypatch.setattr(_launch, "run_plain", lambda *a: plain.append(a))
    yield cu, plain
    assert _launch._hook is None and _launch._copy_hook is None and _user_kernels._hook is None


@pytest.fixture(params=["c", "python"])
def walker(request, monkeypatch):
    """The stack walk of the records: the compiled one (when built) and the Python one."""
    if request.param == "python":
        monkeypatch.setattr(_profile_frames, "_cwalk", None)
    elif _profile_frames._cwalk is None:
        pytest.skip("C extension gparray._native._claunch not built")
    return request.param


def _gp_module(name, src, **ns):
    """The globals of ``src`` run as if it were module ``name`` (its frames name that module)."""
    g = {"__name__": name, **ns}
    exec(compile(src, f"<{name}>", "exec"), g)
    return g


# an engine that launches, and a namespace function above it holding the arrays
ENGINE = _gp_module("gparray._engine._fake", """
def engine(k, out, x):
    run(k, 0, 5, (1, 2, 3))
""", run=_launch.run)
NAMESPACE = _gp_module("gparray._fake_namespace", """
def my_function(k, x, y):
    out = make_out()
    engine(k, out, x)
    return out

def copy_thing(nbytes):
    with copy_span("memcpy HtoD", nbytes, 0, 0x55):
        pass
""", engine=ENGINE["engine"], make_out=lambda: _layout((10,), 0x9000), copy_span=_launch.copy_span)
