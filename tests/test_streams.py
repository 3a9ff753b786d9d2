"""CPU tier: gparray.cuda streams and events without a GPU (gparray/_engine/_streams.py).

Argument checking happens before the device is touched (TypeError for a wrong type,
ValueError for a wrong value, messages naming the function); anything that needs the GPU
raises CUDAUnavailableError at its first use, never at import or construction of an Event.
The ``with`` bookkeeping, equality, the DLPack consumer-stream rules and the stream
ordering helper are checked on fakes. tests/test_streams_gpu.py has the GPU tier.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

import gparray as xp
from gparray._core import _backend, _device
from gparray._engine import _dlpack, _streams
from gparray import cuda as gcuda

no_gpu = pytest.mark.skipif(_backend.has_cuda(), reason="checks the error raised without a GPU")


# ----------------------------------------------------------------------------- names, import

def test_public_names():
    for name in ("Stream", "Event", "current_stream", "default_stream"):
        assert name in gcuda.__all__ and hasattr(gcuda, name), name
    assert gcuda.Stream.__module__ == "gparray.cuda" and gcuda.Event.__module__ == "gparray.cuda"
    assert callable(xp.Device.synchronize)


def test_import_and_event_construction_leave_cupy_alone():
    out = subprocess.run(
        [sys.executable, "-c",
         "import sys, json, gparray\n"
         "e = gparray.cuda.Event(timing=False, blocking=True)\n"
         "r = repr(e)\n"
         "print(json.dumps({'cupy': 'cupy' in sys.modules, 'repr': r}))\n"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"cupy": False, "repr": "<gparray.cuda.Event timing=False not recorded>"}


# ----------------------------------------------------------------------------- Stream arguments

@pytest.mark.parametrize("kw, exc, words", [
    ({"non_blocking": 1}, TypeError, "non_blocking must be a bool"),
    ({"non_blocking": None}, TypeError, "non_blocking must be a bool"),
    ({"priority": 1.5}, TypeError, "priority must be an int"),
    ({"priority": True}, TypeError, "priority must be an int"),
    ({"priority": "0"}, TypeError, "priority must be an int"),
    ({"priority": 2**40}, ValueError, "int32"),
    ({"device": 1.0}, TypeError, "device must be"),
    ({"device": True}, TypeError, "device must be"),
    ({"device": "cuda:x"}, ValueError, "cuda:N"),
    ({"device": "cpu"}, ValueError, "not 'cpu'"),
    ({"device": -1}, ValueError, "got -1"),
])
def test_stream_argument_errors(kw, exc, words):
    with pytest.raises(exc, match=r"^Stream: ") as info:
        gcuda.Stream(**kw)
    assert words in str(info.value)


def test_numpy_integer_priority_is_an_int():
    assert _streams._int(np.int32(-1)) == -1 and _streams._int(True) is None and _streams._int(1.0) is None


@no_gpu
@pytest.mark.parametrize("call", [
    lambda: gcuda.Stream(),
    lambda: gcuda.Stream("cuda:0", non_blocking=True, priority=-1),
    lambda: gcuda.Stream.from_external(12345),
    lambda: gcuda.current_stream(),
    lambda: gcuda.default_stream(),
    lambda: xp.Device(0).synchronize(),
    lambda: gcuda.synchronize(),
])
def test_without_a_gpu_the_first_use_raises_cuda_unavailable(call):
    with pytest.raises(gcuda.CUDAUnavailableError):
        call()


@no_gpu
def test_the_unavailable_error_names_the_function():
    for name, call in (("Stream", lambda: gcuda.Stream()),
                       ("current_stream", lambda: gcuda.current_stream()),
                       ("default_stream", lambda: gcuda.default_stream()),
                       ("Stream.from_external", lambda: gcuda.Stream.from_external(7)),
                       ("Event.query", lambda: gcuda.Event().query()),
                       ("Event.record", lambda: gcuda.Event().record())):
        with pytest.raises(gcuda.CUDAUnavailableError, match=rf"^{name}: "):
            call()


class _Proto:
    def __init__(self, result):
        self.result = result

    def __cuda_stream__(self):
        return self.result


@pytest.mark.parametrize("ptr, exc, words", [
    ("0x10", TypeError, "expected a stream handle"),
    (1.0, TypeError, "expected a stream handle"),
    (True, TypeError, "expected a stream handle"),
    (None, TypeError, "expected a stream handle"),
    (-1, ValueError, "int >= 0"),
    (2**64, ValueError, "int >= 0"),
    (_Proto((0, "x")), TypeError, "__cuda_stream__() must return"),
    (_Proto([0, 5]), TypeError, "__cuda_stream__() must return"),
    (_Proto((1, 5)), ValueError, "unsupported __cuda_stream__ version"),
])
def test_from_external_argument_errors(ptr, exc, words):
    with pytest.raises(exc, match=r"^Stream\.from_external: ") as info:
        gcuda.Stream.from_external(ptr)
    assert words in str(info.value)


def test_from_external_device_errors_come_before_the_gpu():
    with pytest.raises(TypeError, match=r"^Stream\.from_external: device must be"):
        gcuda.Stream.from_external(5, device=0.0)
    with pytest.raises(ValueError, match=r"^Stream\.from_external: "):
        gcuda.Stream.from_external(5, device="gpu:one")


# ----------------------------------------------------------------------------- Event arguments

@pytest.mark.parametrize("kw, exc, words", [
    ({"timing": 1}, TypeError, "timing must be a bool"),
    ({"blocking": "yes"}, TypeError, "blocking must be a bool"),
    ({"interprocess": None}, TypeError, "interprocess must be a bool"),
    ({"interprocess": True}, ValueError, "pass timing=False"),
])
def test_event_argument_errors(kw, exc, words):
    with pytest.raises(exc, match=r"^Event: ") as info:
        gcuda.Event(**kw)
    assert words in str(info.value)


def test_event_without_a_record():
    e = gcuda.Event(timing=False, interprocess=True)
    assert e.device is None and e.timing is False
    assert repr(e) == "<gparray.cuda.Event timing=False not recorded>"


def test_event_type_errors_come_before_the_gpu():
    with pytest.raises(TypeError, match=r"^Event\.elapsed_time: end must be a gparray Event"):
        gcuda.Event().elapsed_time(1.0)
    with pytest.raises(TypeError, match=r"^Event\.record: expected a gparray Stream or a CuPy stream"):
        gcuda.Event().record("stream")
    with pytest.raises(TypeError, match=r"^Event\.record: "):
        gcuda.Event().record(12345)       # a raw handle names no device: not accepted here


@no_gpu
def test_event_elapsed_time_without_a_gpu():
    for start, end in ((gcuda.Event(), gcuda.Event()),
                       (gcuda.Event(timing=False), gcuda.Event())):   # checked at first use too
        with pytest.raises(gcuda.CUDAUnavailableError, match=r"^Event\.elapsed_time: "):
            start.elapsed_time(end)
    with pytest.raises(gcuda.CUDAUnavailableError, match=r"^Event\.synchronize: "):
        gcuda.Event().synchronize()


# ----------------------------------------------------------------------------- identity, with

class _FakeCupyStream:
    """What a Stream wraps: ``ptr``, ``device_id`` and the context protocol (logged)."""

    def __init__(self, ptr, log=None, device_id=0):
        self.ptr = ptr
        self.device_id = device_id
        self.log = log

    def __enter__(self):
        self.log.append(("stream in", self.ptr))
        return self

    def __exit__(self, *exc):
        self.log.append(("stream out", self.ptr))


def _wrap(ptr, dev=0, log=None):
    return _streams.Stream._wrap(_FakeCupyStream(ptr, log, dev), _device.get_device(dev))


def test_equality_hash_and_repr():
    a, b = _wrap(0x1000), _wrap(0x1000)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != _wrap(0x2000) and a != _wrap(0x1000, dev=1)
    assert _wrap(0) == _wrap(1) and hash(_wrap(0)) == hash(_wrap(1))   # both: legacy default
    assert (a == 0x1000) is False and a.__eq__("x") is NotImplemented
    assert repr(a) == "<gparray.cuda.Stream 0x1000 on cuda:0>"
    assert repr(_wrap(1, dev=1)) == "<gparray.cuda.Stream legacy default stream on cuda:1>"
    assert repr(_wrap(2)) == "<gparray.cuda.Stream per-thread default stream on cuda:0>"
    assert a.ptr == 0x1000 and a.device == xp.Device(0) and a.__cuda_stream__() == (0, 0x1000)


class _DevCtx:
    def __init__(self, log, dev):
        self.log, self.dev = log, dev

    def __enter__(self):
        self.log.append(("device in", self.dev))

    def __exit__(self, *exc):
        self.log.append(("device out", self.dev))


def test_with_blocks_nest_device_outside_stream(monkeypatch):
    log = []
    monkeypatch.setattr(_streams._backend, "on_device", lambda d: _DevCtx(log, d))
    a, b = _wrap(0xA0, 0, log), _wrap(0xB0, 1, log)
    with a as got:
        assert got is a
        with b:
            log.append("body")
        with a:
            pass
    assert log == [("device in", 0), ("stream in", 0xA0),
                   ("device in", 1), ("stream in", 0xB0), "body", ("stream out", 0xB0), ("device out", 1),
                   ("device in", 0), ("stream in", 0xA0), ("stream out", 0xA0), ("device out", 0),
                   ("stream out", 0xA0), ("device out", 0)]
    assert _streams._tls.entered == []


def test_with_restores_the_device_when_the_stream_refuses(monkeypatch):
    log = []
    monkeypatch.setattr(_streams._backend, "on_device", lambda d: _DevCtx(log, d))

    class Refuses(_FakeCupyStream):
        def __enter__(self):
            raise RuntimeError("wrong device")

    s = _streams.Stream._wrap(Refuses(5, log), _device.get_device(0))
    with pytest.raises(RuntimeError):
        with s:
            pass
    assert log == [("device in", 0), ("device out", 0)]
    assert not getattr(_streams._tls, "entered", [])


def test_with_exits_in_order_when_the_body_raises(monkeypatch):
    log = []
    monkeypatch.setattr(_streams._backend, "on_device", lambda d: _DevCtx(log, d))
    with pytest.raises(KeyError):
        with _wrap(0xC0, 0, log):
            raise KeyError("x")
    assert log == [("device in", 0), ("stream in", 0xC0), ("stream out", 0xC0), ("device out", 0)]


# ----------------------------------------------------------------------------- stream arguments

def test_handle_of_and_stream_arg():
    s = _wrap(0x5000, dev=1)
    assert _streams.handle_of(s, "f") == (0x5000, 1)
    assert _streams.handle_of(_FakeCupyStream(0x6000, device_id=2), "f") == (0x6000, 2)
    dev = _device.get_device(3)
    assert _streams.stream_arg(7, "f", dev) == (7, 3)
    assert _streams.stream_arg(np.int64(1), "f", dev) == (1, 3)
    assert _streams.stream_arg(s, "f", dev) == (0x5000, 1)
    with pytest.raises(ValueError, match=r"^to_device: stream=0 is ambiguous"):
        _streams.stream_arg(0, "to_device", dev)
    with pytest.raises(ValueError, match=r"^to_device: a stream handle is a positive int"):
        _streams.stream_arg(-1, "to_device", dev)
    for bad in ("s", 1.5, True, object()):
        with pytest.raises(TypeError, match=r"^to_device: expected a gparray Stream or a CuPy stream"):
            _streams.stream_arg(bad, "to_device", dev)


def test_order_skips_a_stream_waiting_for_itself(monkeypatch):
    def no_gpu():
        raise AssertionError("order() touched CuPy for a stream waiting for itself")

    monkeypatch.setattr(_streams._backend, "cupy", no_gpu)
    _streams.order(0x10, 0, (0x10, 0))
    _streams.order(0, 1, (1, 1))                  # 0 and 1: the legacy default stream
    _streams.order(0x10, 0)
    assert _streams.same_stream(0, 1) and not _streams.same_stream(0, 2)


class _FakeRuntime:
    def __init__(self, log):
        self.log = log

    def eventRecord(self, ev, stream):
        self.log.append(("record", ev, stream))

    def streamWaitEvent(self, stream, ev):
        self.log.append(("wait", stream, ev))


class _FakeCupy:
    def __init__(self, log):
        rt = _FakeRuntime(log)
        n = iter(range(100, 200))

        class Event:
            def __init__(self, block, disable_timing):
                assert (block, disable_timing) == (False, True)
                self.ptr = next(n)

        class cuda:
            runtime = rt

        cuda.Event = Event
        self.cuda = cuda


def test_order_records_one_event_for_all_waiters(monkeypatch):
    log = []
    monkeypatch.setattr(_streams._backend, "cupy", lambda: _FakeCupy(log))
    monkeypatch.setattr(_streams._backend, "on_device", lambda d: _DevCtx(log, d))
    _streams.order(0x10, 0, (0x20, 0), (0x10, 0), (0x30, 1), (0x20, 0))
    assert log == [("device in", 0), ("record", 100, 0x10), ("device out", 0),
                   ("device in", 0), ("wait", 0x20, 100), ("device out", 0),
                   ("device in", 1), ("wait", 0x30, 100), ("device out", 1)]


# ----------------------------------------------------------------------------- DLPack streams

def test_dlpack_consumer_stream_rules():
    assert _dlpack.consumer_stream(None) == (1, None)     # the standard: legacy default stream
    assert _dlpack.consumer_stream(-1) is None             # no synchronization
    assert _dlpack.consumer_stream(1) == (1, None)
    assert _dlpack.consumer_stream(2) == (2, None)
    assert _dlpack.consumer_stream(np.int64(0x7F00)) == (0x7F00, None)
    assert _dlpack.consumer_stream(_wrap(0x9000, dev=1)) == (0x9000, 1)
    with pytest.raises(ValueError, match=r"^__dlpack__: stream=0 is ambiguous for CUDA"):
        _dlpack.consumer_stream(0)
    with pytest.raises(ValueError, match=r"^__dlpack__: stream must be -1 or a positive"):
        _dlpack.consumer_stream(-2)
    for bad in ("1", 1.0, True, object()):
        with pytest.raises(TypeError, match=r"^__dlpack__: stream must be an int"):
            _dlpack.consumer_stream(bad)


# ----------------------------------------------------------------------------- synchronize hooks

def test_synchronize_runs_the_deferred_bounds_check():
    from gparray._engine import _index

    assert _index.check_pending in _device.sync_checks
    seen = []
    _device.sync_checks.append(lambda dev, s: seen.append((dev, s)))
    try:
        _device.after_synchronize(0, None)
        _device.after_synchronize(1, 0x42)
    finally:
        _device.sync_checks.pop()
    assert seen == [(0, None), (1, 0x42)]


def test_info_lists_every_device():
    devices = xp.__array_namespace_info__().devices()
    assert devices == tuple(xp.Device(i) for i in range(_backend.device_count()))
