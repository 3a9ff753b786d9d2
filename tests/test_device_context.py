"""CPU tier: the current device per host thread (``with gparray.cuda.Device(i):`` blocks in
several threads, the fft engine binding a device's context) on a fake runtime whose current
device is per thread, as CUDA's is."""
import threading
import types

import pytest

from gparray._core import _backend, _device
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


def _install(monkeypatch, cp):
    """gparray's CuPy is ``cp`` for one test, with four devices visible."""
    monkeypatch.setattr(_backend, "cupy", lambda: cp)
    monkeypatch.setattr(_backend, "_cupy", cp)
    monkeypatch.setattr(_backend, "_device_count", 4)


@pytest.fixture
def rt(monkeypatch):
    rt = FakeRuntime()
    _install(monkeypatch, _fake_cupy(rt))
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


# ----------------------------------------------------------------------------- kernel loads

class FakeContextRuntime(FakeRuntime):
    """FakeRuntime whose threads also have a bound CUDA context: none until a runtime call
    binds one (here setDevice, which binds the device's primary context, as CUDA 12's does);
    getDevice of a new thread says 0 without binding anything."""

    def setDevice(self, dev):
        super().setDevice(dev)
        self._tls.ctx = dev

    def context(self):
        return getattr(self._tls, "ctx", None)


def _fake_cupy_with_modules(rt):
    """CuPy's Device context as CuPy has it (setDevice only when the device changes; the exit
    restores unconditionally) and the driver's module calls, which need a current context:
    the load's context owns the module, and a lookup needs that context current."""

    class Device:
        def __init__(self, dev):
            self.id, self._prev = dev, []

        def __enter__(self):
            prev = rt.getDevice()
            self._prev.append(prev)
            if prev != self.id:
                rt.setDevice(self.id)
            return self

        def __exit__(self, *exc):
            rt.setDevice(self._prev.pop())

    def moduleLoadData(cubin):
        ctx = rt.context()
        assert ctx is not None, "cuModuleLoadData with no current context (CUDA_ERROR_INVALID_CONTEXT)"
        return ("module", ctx)

    def moduleGetFunction(module, lowered):
        cur = rt.context()
        assert cur == module[1], f"cuModuleGetFunction: module of cuda:{module[1]}, context {cur} current"
        return (module[1], lowered)

    driver = types.SimpleNamespace(moduleLoadData=moduleLoadData, moduleGetFunction=moduleGetFunction)
    cuda = types.SimpleNamespace(runtime=rt, Device=Device, driver=driver)
    return types.SimpleNamespace(cuda=cuda)


@pytest.fixture
def ctx_rt(monkeypatch):
    from gparray._kernels import _compile, _registry

    rt = FakeContextRuntime()
    _install(monkeypatch, _fake_cupy_with_modules(rt))
    monkeypatch.setattr(_registry, "_arch_of_device", {d: "90" for d in range(4)})
    monkeypatch.setattr(_registry, "_functions", {})
    monkeypatch.setattr(_registry, "_pending", {})
    monkeypatch.setattr(_registry, "_modules", [])
    mapping = {f"k<{i}>": f"_Z1k{i}" for i in range(4)}     # a module of several instances
    monkeypatch.setattr(_compile, "compile_cached", lambda family, exprs, arch, *a, **kw: (b"cubin", dict(mapping)))
    return rt


def test_kernels_of_device1_load_and_look_up_in_its_context(ctx_rt):
    """A kernel of cuda:1 first used while cuda:0 is current: the module is loaded and both
    the instance asked for and a later one of the same module are looked up with cuda:1's
    context current; cuda:0 stays the thread's device."""
    from gparray._kernels import _registry

    ctx_rt.setDevice(0)
    assert _registry.get_kernel("fam", "k<1>", 1).ptr == (1, "_Z1k1")
    assert ctx_rt.getDevice() == 0 and ctx_rt.context() == 0
    assert _registry.get_kernel("fam", "k<2>", 1).ptr == (1, "_Z1k2")        # pending in the loaded module
    assert ctx_rt.getDevice() == 0 and ctx_rt.context() == 0
    assert _registry.get_kernel("fam", "k<1>", 0).ptr == (0, "_Z1k1")        # cuda:0 has its own module


def test_a_new_threads_first_kernel_load_binds_the_context(ctx_rt):
    """A host thread whose first CUDA work is a kernel load on its current device (0, no
    context bound yet): the load binds cuda:0's context first."""
    from gparray._kernels import _registry

    seen = {}

    def work():
        try:
            seen["fn"] = _registry.get_kernel("fam", "k<3>", 0).ptr
            seen["fn2"] = _registry.get_kernel("fam", "k<0>", 0).ptr
            seen["dev"] = ctx_rt.getDevice()
        except BaseException as exc:   # reported below
            seen["error"] = exc

    t = threading.Thread(target=work)
    t.start()
    t.join(10)
    assert "error" not in seen, seen.get("error")
    assert seen == {"fn": (0, "_Z1k3"), "fn2": (0, "_Z1k0"), "dev": 0}


def test_user_kernels_of_device1_load_in_its_context(ctx_rt, monkeypatch):
    """A user module's first use on cuda:1 while cuda:0 is current: loaded and looked up with
    cuda:1's context current."""
    from gparray.cuda import _user_kernels

    monkeypatch.setattr(_user_kernels, "_loaded", {})
    mod = _user_kernels.UserModule("src", "m", (), ("k<1>", "k<2>"))
    ctx_rt.setDevice(0)
    fns = mod._functions(1)
    assert fns["k<1>"].ptr == (1, "_Z1k1") and fns["k<2>"].ptr == (1, "_Z1k2")
    assert ctx_rt.getDevice() == 0 and ctx_rt.context() == 0
