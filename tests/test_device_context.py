"""CPU tier: the current device per host thread (``with gparray.cuda.Device(i):`` blocks in
several threads, the fft engine binding a device's context) on a fake runtime whose current
device is per thread, as CUDA's is."""
import threading
import types

import pytest

from gparray import _backend, _device
from gparray._engine import _fft


class FakeRuntime:
    """getDevice/setDevice per thread (a new thread starts on device 0); every setDevice is
    logged with its thread."""

    def __init__(self):
        self._tls = threading.local()
        self.log = []

    def getDevice(self):
        return getattr(self._tls, "dev", 0)

    def setDevice(self, dev):
        self.log.append((threading.get_ident(), dev))
        self._tls.dev = dev


def _fake_cupy(rt):
    class Device:
        """CuPy's Device context: __enter__ switches and remembers the device it replaced."""

        def __init__(self, dev):
            self.id, self._prev = dev, []

        def __enter__(self):
            self._prev.append(rt.getDevice())
            rt.setDevice(self.id)
            return self

        def __exit__(self, *exc):
            rt.setDevice(self._prev.pop())

    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt, Device=Device))


@pytest.fixture
def rt(monkeypatch):
    rt = FakeRuntime()
    cp = _fake_cupy(rt)
    monkeypatch.setattr(_backend, "cupy", lambda: cp)
    monkeypatch.setattr(_backend, "_cupy", cp)
    monkeypatch.setattr(_backend, "_device_count", 4)
    return rt


def test_device_blocks_of_two_threads_restore_each_threads_device(rt):
    """Thread A (on cuda:3) and thread B (on cuda:0) enter Device blocks, then leave them in
    the other order: each gets its own device back."""
    enter_a, enter_b, exit_a = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        rt.setDevice(3)
        with _device.Device(1):
            seen["a in"] = rt.getDevice()
            enter_a.set()
            enter_b.wait(5)
        seen["a out"] = rt.getDevice()
        exit_a.set()

    def b():
        enter_a.wait(5)
        with _device.Device(2):
            seen["b in"] = rt.getDevice()
            enter_b.set()
            exit_a.wait(5)
        seen["b out"] = rt.getDevice()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert seen == {"a in": 1, "b in": 2, "a out": 3, "b out": 0}


def test_nested_device_blocks_in_one_thread(rt):
    with _device.Device(1):
        with _device.Device(2):
            assert rt.getDevice() == 2
        assert rt.getDevice() == 1
    assert rt.getDevice() == 0


@pytest.mark.parametrize("start, dev", [(0, 1), (1, 0), (2, 2)])
def test_fft_binding_a_context_keeps_the_current_device(rt, start, dev):
    """A thread's first use of a device's plan cache makes that device current once (binding
    its context to the thread), then restores the thread's own device."""
    rt.setDevice(start)
    rt.log.clear()
    _fft._bind_context(dev)
    assert rt.getDevice() == start
    assert rt.log[0][1] == dev


def test_normalize_device_gives_the_interned_device(rt):
    """``device=Device(1)`` (a new object) places arrays on the interned cuda:1, so identity
    checks of devices (fast paths) hold for them as for ``device="cuda:1"``."""
    for spec in (_device.Device(1), "cuda:1", 1):
        assert _device.normalize_device(spec) is _device.get_device(1)
    assert _device.normalize_device(None) is _device.get_device(0)
