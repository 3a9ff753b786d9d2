"""CPU tier: how gparray's cuBLAS handles are bound to streams and to pool workspaces
(gparray/_engine/_blas.py), on a fake cuBLAS binding and a fake pool: setStream and
cublasSetWorkspace_v2 only when the stream or the workspace generation changes (setStream
resets cuBLAS to its own workspace, so the pool's is set again after every setStream), or
after the handle was handed to CuPy's bindings (``shared_handle``); one workspace Block per
(thread, device, stream), release and eviction make every handle re-bind, a pool that
cannot give the workspace leaves cuBLAS's own; without a loaded libcublas the ctypes
lookup reports why and products go on without it (CuPy's bindings)."""
import threading

import pytest

from gparray import _memory
from gparray._engine import _blas


class FakeCublas:
    def __init__(self):
        self.calls = []
        self.n = 0
        self.streams = {}

    def create(self):
        self.n += 1
        return 1000 + self.n

    def setMathMode(self, h, mode):
        self.calls.append(("math", h, mode))

    def setStream(self, h, s):
        self.calls.append(("stream", h, s))
        self.streams[h] = s

    def getStream(self, h):
        return self.streams.get(h, 0)

    def getVersion(self, h):
        return 130100


class FakeBlock:
    def __init__(self, ptr, size):
        self.ptr, self.size = ptr, size


@pytest.fixture
def fake(monkeypatch):
    cb = FakeCublas()
    allocs = []

    def alloc(nbytes, dev, stream=None):
        if getattr(alloc, "oom", False):
            raise _memory.OutOfMemoryError("fake: out of memory")
        b = FakeBlock(0x10000000 + 0x4000000 * len(allocs), nbytes)
        allocs.append((b, dev, stream))
        return b

    def setter(h, ptr, nbytes):
        cb.calls.append(("ws", h, ptr, nbytes))
        return 0

    def handle(dev):  # _blas.handle without CuPy: one fake handle per (thread, device)
        hs = _blas._local.__dict__.setdefault("handles", {})
        if dev not in hs:
            hs[dev] = cb.create()
        return hs[dev]

    monkeypatch.setattr(_blas, "_cublas", lambda: cb)
    monkeypatch.setattr(_blas, "handle", handle)
    monkeypatch.setattr(_blas, "_local", threading.local())
    monkeypatch.setattr(_blas, "_workspaces", {})
    monkeypatch.setattr(_blas, "_generation", 0)
    monkeypatch.setattr(_blas, "_setter", setter)
    monkeypatch.setattr(_blas, "_lib", None)
    monkeypatch.setattr(_blas, "_fns", {})
    monkeypatch.setattr(_memory, "alloc", alloc)
    cb.allocs, cb.alloc = allocs, alloc
    return cb


def _calls(cb):
    out = [c for c in cb.calls if c[0] != "math"]
    cb.calls.clear()
    return out


def test_bind_sets_stream_and_pool_workspace_only_when_they_change(fake):
    ws = _blas.WORKSPACE_BYTES
    h = _blas.bind(0, 7)
    (b1, dev, st), = fake.allocs
    assert (dev, st, b1.size) == (0, 7, ws)
    assert _calls(fake) == [("stream", h, 7), ("ws", h, b1.ptr, ws)]
    assert _blas.bind(0, 7) == h and _calls(fake) == []            # same stream: nothing
    _blas.bind(0, 9)                                                # another stream: its own block
    b2 = fake.allocs[-1][0]
    assert _calls(fake) == [("stream", h, 9), ("ws", h, b2.ptr, ws)]
    _blas.bind(0, 7)                                                # back: setStream reset it, set again
    assert _calls(fake) == [("stream", h, 7), ("ws", h, b1.ptr, ws)] and len(fake.allocs) == 2
    info = _blas.workspace_info(0, 7)
    assert info["ptr"] == b1.ptr and info["bytes"] == ws and info["status"] == 0
    assert _blas.workspace_info(0, 12345)["ptr"] is None


def test_a_handle_shared_with_cupys_bindings_is_bound_again(fake):
    h = _blas.bind(0, 7)
    b1 = fake.allocs[-1][0]
    assert _blas.shared_handle(0) == h      # e.g. the solver's batched LU through CuPy's bindings,
    fake.setStream(h, 7)                    # which set the stream (and so reset the workspace)
    _calls(fake)
    assert _blas.bind(0, 7) == h
    assert _calls(fake) == [("stream", h, 7), ("ws", h, b1.ptr, _blas.WORKSPACE_BYTES)]
    assert _blas.bind(0, 7) == h and _calls(fake) == []
    assert _blas.shared_handle(1) != h and _calls(fake) == []    # another device: a handle, no binding


def test_each_thread_and_device_has_its_own_handle_and_workspace(fake):
    h0 = _blas.bind(0, 0)
    h1 = _blas.bind(1, 0)
    got = []
    t = threading.Thread(target=lambda: got.append(_blas.bind(0, 0)))
    t.start()
    t.join()
    assert len({h0, h1, got[0]}) == 3 and len(fake.allocs) == 3
    assert [d for _, d, _ in fake.allocs] == [0, 1, 0]


def test_release_makes_every_handle_rebind_with_a_new_block(fake):
    h = _blas.bind(0, 7)
    first = fake.allocs[-1][0]
    _calls(fake)
    _blas.release_workspaces()
    assert _blas._workspaces == {}
    _blas.bind(0, 7)
    second = fake.allocs[-1][0]
    assert second is not first
    assert _calls(fake) == [("stream", h, 7), ("ws", h, second.ptr, _blas.WORKSPACE_BYTES)]


def test_eviction_of_the_oldest_workspace_rebinds_handles(fake, monkeypatch):
    monkeypatch.setattr(_blas, "WS_MAX", 2)
    h = _blas.bind(0, 1)
    _blas.bind(0, 2)
    _blas.bind(0, 3)                        # drops (0, 1)'s block
    assert len(_blas._workspaces) == 2 and _blas._generation == 1
    _calls(fake)
    _blas.bind(0, 3)                        # generation changed: bound again, same block
    b3 = fake.allocs[-1][0]
    assert _calls(fake) == [("stream", h, 3), ("ws", h, b3.ptr, _blas.WORKSPACE_BYTES)]


def test_out_of_memory_keeps_cublas_own_workspace(fake):
    fake.alloc.oom = True
    h = _blas.bind(0, 5)
    assert _calls(fake) == [("stream", h, 5)]
    assert _blas.workspace_info(0, 5)["ptr"] is None


def test_setter_lookup(fake, monkeypatch):
    monkeypatch.setattr(_blas, "_setter", None)
    monkeypatch.setattr(_blas, "_setter_note", "")
    fn = _blas._find_setter(1001)          # only CuPy's getVersion (faked: 13.1) sees the handle
    if fn is None:   # no libcublas.so.13 in this process (a CPU machine): nothing to call
        assert _blas._setter is False and "major version 13" in _blas._setter_note
        assert _blas._lib is False and _blas.workspace_info(0, 0)["products"] == "cupy"
    else:            # CuPy loaded it: the function of that very library
        assert fn.__name__ == "cublasSetWorkspace_v2" and "libcublas" in _blas._setter_note
        assert _blas.workspace_info(0, 0)["products"] == "ctypes"
    assert _blas._find_setter(1001) is fn   # looked up once
    monkeypatch.setattr(_blas, "_setter", None)
    monkeypatch.setattr(_blas, "WORKSPACE_BYTES", 0)
    assert _blas._find_setter(1001) is None and "disabled" in _blas._setter_note


def test_workspace_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPARRAY_CUBLAS_WORKSPACE", str(4 << 20))
    assert _blas._workspace_bytes() == 4 << 20
    monkeypatch.setenv("GPARRAY_CUBLAS_WORKSPACE", "0")
    assert _blas._workspace_bytes() == 0
    monkeypatch.setenv("GPARRAY_CUBLAS_WORKSPACE", "lots")
    assert _blas._workspace_bytes() == 32 << 20
    monkeypatch.delenv("GPARRAY_CUBLAS_WORKSPACE")
    assert _blas._workspace_bytes() == 32 << 20
