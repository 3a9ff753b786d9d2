"""CPU tier: gparray._core._backend's light CUDA layer (the first operations run on it without
importing CuPy): the default-stream answer and its switch to CuPy's getter, the hooks run
once CuPy is imported, light device contexts and events over a recording fake runtime, and
the driver's module calls."""
import sys
import types

import pytest

from gparray._core import _backend

# These tests swap the process's CUDA layer for fakes (``_backend._rt``, ``_backend._cupy``);
# on a GPU machine another thread's finalizer could reach a fake in that window, and the GPU
# tier exercises the real layer there anyway.
pytestmark = pytest.mark.skipif(_backend.has_cuda(), reason="swaps the CUDA layer for fakes: CPU machines only")


class _Runtime:
    """The runtime calls the light layer makes, recorded."""

    def __init__(self, dev=0):
        self.dev, self.log = dev, []

    def getDevice(self):
        return self.dev

    def setDevice(self, d):
        self.log.append(("setDevice", d))
        self.dev = d

    def eventCreateWithFlags(self, flags):
        self.log.append(("eventCreate", flags))
        return 0xE0 + flags

    def eventQuery(self, ev):
        return 600 if ev == 0xE3 else 0          # cudaErrorNotReady for a "blocking" one

    def eventSynchronize(self, ev):
        self.log.append(("eventSynchronize", ev))

    def eventDestroy(self, ev):
        self.log.append(("eventDestroy", ev))

    def streamSynchronize(self, s):
        self.log.append(("streamSynchronize", s))


@pytest.fixture
def rt(monkeypatch):
    r = _Runtime()
    monkeypatch.setattr(_backend, "_cupy", None)
    monkeypatch.setattr(_backend, "_rt", r)
    return r


def test_light_device_switches_and_restores_even_on_error(rt):
    with _backend.OnDevice(0):
        pass
    assert rt.log == []                              # already current: no runtime call
    with pytest.raises(ZeroDivisionError):
        with _backend.OnDevice(2):
            assert rt.dev == 2
            1 / 0
    assert rt.dev == 0 and rt.log == [("setDevice", 2), ("setDevice", 0)]


def test_light_events_create_query_synchronize_and_destroy(rt):
    ev = _backend.Event(block=False, disable_timing=True)
    blocking = _backend.Event(block=True, disable_timing=True)
    try:
        assert isinstance(ev, _backend.LightEvent) and ev.ptr == 0xE2 and ev.done
        assert blocking.ptr == 0xE3 and not blocking.done
        blocking.synchronize()
        p = ev.ptr
        del ev
        assert ("eventCreate", 2) in rt.log and ("eventCreate", 3) in rt.log
        assert ("eventSynchronize", 0xE3) in rt.log and ("eventDestroy", p) in rt.log
    finally:
        # fake handles must never reach the real runtime (a failure's traceback keeps them)
        for e in [v for v in locals().values() if isinstance(v, _backend.LightEvent)]:
            e.ptr = 0


def test_default_stream_until_cupy_is_in_sys_modules(rt, monkeypatch):
    monkeypatch.setattr(_backend, "_DEFAULT", None)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.delenv("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)
    s = _backend.current_stream()
    assert s.ptr == 0 and _backend.stream_getter() is _backend.current_stream
    s.synchronize()
    assert rt.log[-1] == ("streamSynchronize", 0)
    monkeypatch.setattr(_backend, "_DEFAULT", None)
    monkeypatch.setenv("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "1")
    assert _backend.current_stream(0).ptr == 2      # cudaStreamPerThread, as CuPy would answer
    monkeypatch.setattr(_backend, "_DEFAULT", None)
    monkeypatch.setenv("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "not a number")
    assert _backend.current_stream(0).ptr == 0


def test_someone_elses_cupy_import_switches_the_answer_and_runs_the_hooks(rt, monkeypatch):
    """CuPy imported by the user (in sys.modules, not through gparray): the next stream read
    imports it for gparray, runs every registered hook once, and answers CuPy's stream."""
    asked = []
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        get_current_stream=lambda d=-1: asked.append(d) or types.SimpleNamespace(ptr=0x5000)))
    monkeypatch.setattr(_backend, "_hooks", [])
    ran = []
    _backend.when_cupy_imported(lambda cp: ran.append(("first", cp)))
    _backend.when_cupy_imported(lambda cp: ran.append(("second", cp)))
    assert ran == []

    def import_cupy():
        monkeypatch.setattr(_backend, "_cupy", fake)
        _backend._run_hooks(fake)
        return fake

    monkeypatch.setattr(_backend, "_import_cupy", import_cupy)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert _backend.current_stream(1).ptr == 0x5000 and asked == [1]
    assert ran == [("first", fake), ("second", fake)]
    assert _backend.stream_getter() is fake.cuda.get_current_stream
    _backend.when_cupy_imported(lambda cp: ran.append(("late", cp)))   # already imported: at once
    assert ran[-1] == ("late", fake)
    assert _backend.current_stream(1).ptr == 0x5000 and len(ran) == 3   # hooks ran once


def test_device_count_needs_no_cupy(monkeypatch):
    rt = types.SimpleNamespace(getDeviceCount=lambda: 3)
    monkeypatch.setattr(_backend, "_cupy", None)
    monkeypatch.setattr(_backend, "_rt", rt)
    monkeypatch.setattr(_backend, "_device_count", None)
    imported = []
    monkeypatch.setattr(_backend, "_import_cupy", lambda: imported.append(1))
    assert _backend.device_count() == 3
    _backend.require_device("test")
    assert imported == []


def test_driver_is_cupys_once_cupy_is_imported(monkeypatch):
    drv = object()
    monkeypatch.setattr(_backend, "_cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(driver=drv)))
    assert _backend.driver() is drv


def test_module_calls_turn_a_failed_status_into_cupys_driver_error(monkeypatch):
    calls = _backend._ModuleCalls.__new__(_backend._ModuleCalls)   # no libcuda here: fake entry points
    import ctypes

    from cupy_backends.cuda.api import driver

    class DriverError(RuntimeError):        # CuPy's asks libcuda for the status's name
        def __init__(self, status):
            super().__init__(status)
            self.status = status

    monkeypatch.setattr(driver, "CUDADriverError", DriverError)

    calls._vp, calls._byref = ctypes.c_void_p, ctypes.byref

    def load(out, image):
        out._obj.value = 0xA000
        return 0

    calls._load, calls._get = load, lambda out, mod, name: 500    # CUDA_ERROR_NOT_FOUND
    assert calls.moduleLoadData(b"cubin") == 0xA000
    with pytest.raises(DriverError) as err:
        calls.moduleGetFunction(0xA000, "kernel")
    assert err.value.status == 500
