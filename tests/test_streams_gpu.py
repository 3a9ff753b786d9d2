"""GPU tier: gparray.cuda streams and events, and the stream rules of the pool, to_device
and __dlpack__ (gparray/_engine/_streams.py).

Most tests queue tests/streams_spin.cu's kernel first: it waits 0.3 s on the GPU's timer,
then writes. Work that should be ordered behind it either sees its values or, when the
order is missing, runs first and sees the zeros under them; the streams are created with
``non_blocking=True`` so that no implicit order with the legacy default stream can hide a
missing one. Values are compared with NumPy.

A test that checks with ``query()`` that work is still queued must not let the pool
synchronize the device in between. The pool records events only on streams it knows to be
alive (a live ``gparray.cuda.Stream`` holds them), but a segment of a dead stream (a CuPy
stream of an earlier test) could still cost a synchronize, so such tests first free a block
of the exact size on every stream they allocate on after queuing the spin (``_warm``): the
later allocation is then a cache hit on that stream. (The routing test, which allocates too
many sizes for that, starts from an empty cache instead.)
"""
import gc
import pathlib
import re
import weakref

import numpy as np
import pytest

import gparray as xp
from gparray._core import _backend
from gparray import cuda as gcuda

pytestmark = pytest.mark.gpu

SPIN_NS = 300_000_000          # 0.3 s: far longer than the host takes to queue what follows
N = 1 << 20                    # 8 MiB of float64: large blocks, segments of their own


@pytest.fixture(scope="module")
def spin():
    """spin(y, b, x=None, a=0.0, ns=SPIN_NS, stream=None): y = a * x + b after ``ns``."""
    src = pathlib.Path(__file__).with_name("streams_spin.cu").read_text()
    k = gcuda.compile_kernel(src, "spin_axpb")

    def run(y, b, x=None, a=0.0, ns=SPIN_NS, stream=None):
        k(256, 256, (y if x is None else x, y, y.size, float(a), float(b), int(ns)), stream=stream)
    return run


@pytest.fixture(autouse=True)
def _drain():
    """Start and finish with nothing queued, and with the default stream current."""
    gcuda.synchronize()
    yield
    gcuda.synchronize()
    assert gcuda.current_stream() == gcuda.default_stream()


def ns():
    return gcuda.Stream(non_blocking=True)


def _warm(*streams, n=N):
    """Leave a free block of ``n`` float64 on each stream (allocated together, so that no
    stream's allocation takes another's freed segment): the next allocation of that size
    there is a cache hit, which never synchronizes the device. Also load the kernels of
    ``x + 1.0`` and ``x * 2.0`` on float64 (the ops these tests queue behind a spin):
    loading a kernel module allocates device memory, which can wait for running kernels."""
    blocks = []
    x = xp.zeros(8)
    x + 1.0, x * 2.0
    for s in streams:
        with s:
            blocks.append(xp.empty(n, dtype=xp.float64))
    del blocks


def cupy():
    return _backend.cupy()


def host(x):
    return np.asarray(x)


# ----------------------------------------------------------------------------- the objects

def test_stream_objects():
    s = ns()
    assert s.device == gcuda.current_device() and s.ptr not in (0, 1, 2)
    assert re.fullmatch(rf"<gparray\.cuda\.Stream 0x{s.ptr:x} on cuda:0>", repr(s))
    t = gcuda.Stream.from_external(s.ptr)
    assert t == s and hash(t) == hash(s) and t.ptr == s.ptr and t != ns()
    assert gcuda.Stream.from_external(s) == s                # the CUDA stream protocol
    d = gcuda.default_stream()
    assert d.ptr in (0, 2) and gcuda.current_stream() == d and gcuda.current_stream(0) == d
    assert gcuda.default_stream("cuda:0") == d
    assert gcuda.Stream(priority=-1).priority == -1          # H100/H200: range [-5, 0]
    assert gcuda.Stream(priority=3).priority == 0            # clamped by CUDA
    s.synchronize()
    assert s.query()


def test_query_and_synchronize(spin):
    s = ns()
    with s:
        y = xp.zeros(N)
    spin(y, 3.0, stream=s)                                  # a gparray Stream as stream=
    assert not s.query()
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(host(y), np.full(N, 3.0))


def test_device_synchronize_waits_for_every_stream(spin):
    s = ns()
    with s:
        y = xp.zeros(N)
        spin(y, 2.0)
    xp.Device(0).synchronize()
    assert s.query()


# ----------------------------------------------------------------------------- with stream

def _warm_ops(a, v, idx):
    """Compile and learn (fast paths) every op the routing test runs."""
    for _ in range(3):
        a + 1.0
    xp.sum(a), a @ a, xp.sort(v), xp.cumulative_sum(v), v[idx], xp.fft.fft(v)


def test_with_stream_routes_every_op(spin):
    gc.collect()
    gcuda.empty_cache()       # no segment of a dead stream left to cost a synchronize below
    s = ns()
    m = 256
    a0, v0, idx = xp.zeros((m, m)), xp.zeros(N), xp.asarray([3, 0, N - 1])
    _warm_ops(a0, v0, idx)
    s.wait_stream(gcuda.current_stream())      # idx was made on the default stream
    with s:
        assert cupy().cuda.get_current_stream().ptr == s.ptr
        assert gcuda.current_stream() == s
        a = xp.zeros((m, m))
        v = xp.zeros(N)
        spin(a, 1.0)
        spin(v, 2.0, ns=0)                     # queued behind a's spin on the same stream
        b = [a + 1.0 for _ in range(3)]        # the compiled fast path after the first
        total, prod = xp.sum(a), a @ a
        srt, cum, got, f = xp.sort(v), xp.cumulative_sum(v), v[idx], xp.fft.fft(v)
        assert not s.query(), "the spin kernel did not run on the stream"
        assert all(o._buf.stream == s.ptr for o in b + [total, prod, srt, cum, got, f])
    assert gcuda.current_stream() != s
    s.synchronize()
    np.testing.assert_array_equal(host(b[2]), np.full((m, m), 2.0))
    assert float(total) == m * m
    np.testing.assert_array_equal(host(prod), np.full((m, m), float(m)))   # cuBLAS on s
    np.testing.assert_array_equal(host(srt), np.full(N, 2.0))
    np.testing.assert_array_equal(host(cum), np.arange(1, N + 1) * 2.0)
    np.testing.assert_array_equal(host(got), [2.0, 2.0, 2.0])
    want = np.zeros(N, complex)
    want[0] = 2.0 * N
    np.testing.assert_allclose(host(f), want, atol=1e-6)                  # cuFFT on s


def test_nested_streams_restore():
    a, b = ns(), ns()
    d = gcuda.default_stream()
    with a:
        with b:
            assert gcuda.current_stream() == b
            with d:
                assert gcuda.current_stream() == d and cupy().cuda.get_current_stream().ptr == d.ptr
            assert gcuda.current_stream() == b
        assert gcuda.current_stream() == a
        with a:
            assert gcuda.current_stream() == a
        assert gcuda.current_stream() == a
        x = xp.ones(10)
        assert x._buf.stream == a.ptr
    assert gcuda.current_stream() == d
    with pytest.raises(KeyError):
        with b:
            raise KeyError("body")
    assert gcuda.current_stream() == d


@pytest.mark.skipif(_backend.device_count() < 2, reason="needs two GPUs")
def test_with_stream_of_another_device_switches_device():
    s1 = gcuda.Stream(device=1, non_blocking=True)
    assert gcuda.current_device() == xp.Device(0)
    with s1:
        assert gcuda.current_device() == xp.Device(1)
        assert gcuda.current_stream() == s1 and gcuda.current_stream(0) == gcuda.default_stream(0)
        x = xp.arange(10.0)
        assert x.device == xp.Device(1) and x._buf.stream == s1.ptr
    assert gcuda.current_device() == xp.Device(0)
    np.testing.assert_array_equal(host(x), np.arange(10.0))


# ----------------------------------------------------------------------------- events

def test_event_orders_two_streams(spin):
    a, b, c = ns(), ns(), ns()
    with a:
        y = xp.zeros(N)
    _warm(b, c)                                   # z and w below: cache hits on b and c
    with a:
        spin(y, 3.0)
    e = a.record()
    assert isinstance(e, gcuda.Event) and e.device == xp.Device(0) and not e.query()
    b.wait_event(e)
    c.wait_stream(a)
    with b:
        z = y + 1.0
    with c:
        w = y * 2.0
    assert not b.query() and not c.query()        # both wait for a's spin
    b.synchronize()
    c.synchronize()
    assert e.query()
    np.testing.assert_array_equal(host(z), np.full(N, 4.0))
    np.testing.assert_array_equal(host(w), np.full(N, 6.0))


def test_events_accept_cupy_streams_and_events(spin):
    cp = cupy()
    a, b = cp.cuda.Stream(non_blocking=True), ns()
    with a:                                     # a CuPy stream as gparray's current stream
        y = xp.zeros(N)
    spin(y, 5.0, stream=a)
    e = gcuda.Event(timing=False)
    e.record(a)                                 # a CuPy stream
    b.wait_event(e)
    with b:
        z = y - 1.0
    b.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 4.0))
    ce = cp.cuda.Event()
    ce.record(a)
    b.wait_event(ce)                            # a CuPy event
    b.synchronize()


def test_never_recorded_event_is_complete():
    e = gcuda.Event()
    assert e.query()
    e.synchronize()
    ns().wait_event(e)


def test_event_timing(spin):
    s = ns()
    e0, e1, e2 = gcuda.Event(), gcuda.Event(blocking=True), gcuda.Event()
    with s:
        y = xp.zeros(1024)
        e0.record()
        spin(y, 1.0, ns=50_000_000)
        e1.record()
        spin(y, 1.0, ns=20_000_000)
        e2.record(s)
    t01, t02 = e0.elapsed_time(e1), e0.elapsed_time(e2)
    assert 49.0 <= t01 < 5000.0
    assert t02 >= t01 + 19.0
    assert e1.elapsed_time(e2) == pytest.approx(t02 - t01, abs=0.5)


def test_elapsed_time_errors():
    s = ns()
    on, off, never = gcuda.Event(), gcuda.Event(timing=False), gcuda.Event()
    on.record(s)
    off.record(s)
    with pytest.raises(ValueError, match=r"^Event\.elapsed_time: both events need timing=True"):
        on.elapsed_time(off)
    with pytest.raises(ValueError, match=r"^Event\.elapsed_time: the end event was never recorded"):
        on.elapsed_time(never)
    with pytest.raises(ValueError, match=r"^Event\.elapsed_time: the start event was never recorded"):
        never.elapsed_time(on)


# ----------------------------------------------------------------------------- external streams

def test_external_stream_from_torch(spin):
    torch = pytest.importorskip("torch")
    ts = torch.cuda.Stream()
    s = gcuda.Stream.from_external(ts.cuda_stream)
    assert s.ptr == ts.cuda_stream and s.device == xp.Device(0)
    assert _backend.stream_held(0, ts.cuda_stream), "a live Stream holds its handle"
    with s:
        y = xp.zeros(N)
    _warm(s)                                      # z below: a cache hit on the stream
    with s:
        spin(y, 5.0)
        z = y + 1.0
        assert not ts.query(), "gparray's work is not on the PyTorch stream"
    ts.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 6.0))
    if hasattr(ts, "__cuda_stream__"):
        assert gcuda.Stream.from_external(ts) == s


# ----------------------------------------------------------------------------- the pool

def _block_ptr(x):
    return x._buf.ptr


def test_pool_does_not_give_a_block_written_on_one_stream_to_another(spin):
    """Freed on a while a's kernel still writes it: b may have it only once a is done."""
    a, b = ns(), ns()
    gcuda.empty_cache()
    with a:
        y = xp.zeros(N)
        spin(y, 7.0)                  # writes y 0.3 s from now
        p = _block_ptr(y)
        del y
    with b:
        z = xp.full(N, 1.0)           # the same size, on another stream
        reused, a_done = _block_ptr(z) == p, a.query()
    assert not reused or a_done, "a block went to another stream while a kernel still wrote it"
    a.synchronize()
    b.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 1.0))


def test_pool_does_not_give_a_block_read_on_one_stream_to_another(spin):
    """Freed on a while a's kernel has still to read it: b's writes must come after."""
    a, b = ns(), ns()
    gcuda.empty_cache()
    with a:
        x = xp.full(N, 2.0)
        y = xp.zeros(N)
        spin(y, 1.0, x=x, a=1.0)      # y = x + 1, reading x 0.3 s from now
        p = _block_ptr(x)
        del x
    with b:
        z = xp.full(N, 9.0)
        reused, a_done = _block_ptr(z) == p, a.query()
    assert not reused or a_done
    a.synchronize()
    b.synchronize()
    np.testing.assert_array_equal(host(y), np.full(N, 3.0))
    np.testing.assert_array_equal(host(z), np.full(N, 9.0))


def test_reclaiming_a_live_streams_segment_does_not_synchronize(spin):
    """c takes b's free segment: the pool records its event on b (held by a live Stream)
    instead of synchronizing the device, so a's spin is still running afterwards."""
    a, b, c = ns(), ns(), ns()
    assert all(_backend.stream_held(0, s.ptr) for s in (a, b, c))
    gcuda.empty_cache()                          # nothing cached: c must reclaim b's segment
    with a:
        y = xp.zeros(N)
    with b:
        w = xp.empty(N)
    p = _block_ptr(w)
    del w
    spin(y, 1.0, stream=a)
    with c:
        z = xp.empty(N)
    assert _block_ptr(z) == p, "c did not take b's segment (the case under test did not happen)"
    assert not a.query(), "taking b's segment synchronized the device"
    a.synchronize()
    np.testing.assert_array_equal(host(y), np.full(N, 1.0))


def test_a_dead_streams_memory_waits_for_its_last_kernel(spin):
    """A gparray stream is dropped while its spin still writes x, which was freed on it.
    CUDA may give its handle to a new stream; the pool must not hand x's block to that
    stream as if it were the old one (the same-stream path) before the spin has finished.
    Without the retirement of the dead stream's handle, the new stream gets x's block at
    once and the spin's late writes clobber it."""
    from gparray._memory._pool import no_caching_from_env

    if no_caching_from_env():
        pytest.skip("GPARRAY_NO_CACHING: the pool caches no block to hand to another stream")
    gc.collect()
    gcuda.empty_cache()        # no cached segment of another stream: z's allocation below
    retired = gcuda.memory_stats()["num_streams_retired"]     # never synchronizes
    s1 = ns()
    h = s1.ptr
    with s1:
        x = xp.zeros(N)
    spin(x, 7.0, stream=s1)                      # writes x 0.3 s from now
    p = _block_ptr(x)
    done = gcuda.Event(timing=False)
    done.record(s1)                              # complete once the spin has finished
    del x                                        # freed on s1: cached in s1's arena
    try:
        cs = weakref.ref(s1._cs)
    except TypeError:                            # a CuPy without weak references to streams
        cs = None
    del s1
    gc.collect()
    assert cs is None or cs() is None, "the CuPy stream was not destroyed"
    assert gcuda.memory_stats()["num_streams_retired"] > retired, "s1's handle was not retired"
    assert not _backend.stream_held(0, h)
    keep = []                                    # kept alive: each new stream gets a new handle
    for _ in range(64):
        s2 = ns()
        if s2.ptr == h:
            break
        keep.append(s2)
    else:
        done.synchronize()
        pytest.skip("CUDA did not give the dead stream's handle to any of 64 new streams")
    with s2:
        z = xp.full(N, 1.0)                      # the same size, on the stream with the same handle
        reused, spin_done = _block_ptr(z) == p, done.query()
    if spin_done:
        s2.synchronize()
        pytest.skip("the handle came back only after the dead stream's work had finished")
    assert not reused, "a dead stream's block went to the new stream with its handle while " \
                       "the dead stream's kernel still wrote it"
    done.synchronize()
    s2.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 1.0))


def test_pool_waits_for_the_default_streams_event(spin):
    """Freed on the legacy default stream (the pool records an event there): another
    stream gets other memory while the event is pending."""
    b = ns()
    d = gcuda.default_stream()
    gcuda.empty_cache()
    y = xp.zeros(N)
    spin(y, 7.0)
    p = _block_ptr(y)
    del y
    with b:
        z = xp.full(N, 1.0)
        reused, d_done = _block_ptr(z) == p, d.query()
    assert not reused or d_done
    gcuda.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 1.0))
    w = xp.full(N, 4.0)                          # the pending segment is usable again now
    np.testing.assert_array_equal(host(w), np.full(N, 4.0))


# ----------------------------------------------------------------------------- to_device, DLPack

def test_to_device_same_device_orders_the_stream(spin):
    for arg in (lambda s: s, lambda s: s.ptr):
        s = ns()
        x = xp.zeros(N)
        spin(x, 5.0)                             # on the legacy default stream
        y = x.to_device(x.device, stream=arg(s))
        assert y is x
        with s:
            z = y + 1.0
        s.synchronize()
        np.testing.assert_array_equal(host(z), np.full(N, 6.0))


def test_to_device_stream_errors():
    x = xp.zeros(4)
    with pytest.raises(ValueError, match=r"^to_device: stream=0 is ambiguous"):
        x.to_device(x.device, stream=0)
    with pytest.raises(ValueError, match=r"^to_device: a stream handle is a positive int"):
        x.to_device(x.device, stream=-1)
    with pytest.raises(TypeError, match=r"^to_device: expected a gparray Stream or a CuPy stream"):
        x.to_device(x.device, stream="s")


@pytest.mark.skipif(_backend.device_count() < 2, reason="needs two GPUs")
def test_to_device_peer_copy_on_a_stream(spin):
    d1 = xp.Device(1)
    for s in (gcuda.Stream(device=1, non_blocking=True), ns()):    # a stream of either side
        x = xp.zeros(N)
        spin(x, 5.0)                             # x is written 0.3 s from now
        y = x.to_device(d1, stream=s)
        assert y.device == d1
        w = y * 2.0                              # device 1's current stream waits for the copy
        if s.device == d1:
            with s:
                z = y + 1.0
            s.synchronize()
            np.testing.assert_array_equal(host(z), np.full(N, 6.0))
        np.testing.assert_array_equal(host(w), np.full(N, 10.0))
    x = xp.arange(N, dtype=xp.float64)[::2]      # no stream; a non-contiguous source
    np.testing.assert_array_equal(host(x.to_device(d1)), np.arange(N, dtype=np.float64)[::2])
    with pytest.raises(ValueError, match=r"^to_device: the stream is on cuda:1"):
        xp.zeros(4, device=xp.Device(0)).to_device(xp.Device(0), stream=gcuda.Stream(device=1))


def test_dlpack_consumer_stream_waits(spin):
    a, b = ns(), ns()
    with a:
        x = xp.zeros(N)
        spin(x, 4.0)
        x.__dlpack__(stream=b.ptr)               # b will read x: it waits for a
        x.__dlpack__(stream=b)                   # a gparray Stream too
    with b:
        z = x + 1.0
    b.synchronize()
    np.testing.assert_array_equal(host(z), np.full(N, 5.0))


def test_dlpack_default_consumer_is_the_legacy_stream(spin):
    a = ns()
    with a:
        x = xp.zeros(N)
        spin(x, 4.0)
        x.__dlpack__()                           # None: the legacy default stream waits for a
    z = x + 1.0                                  # on the legacy default stream
    np.testing.assert_array_equal(host(z), np.full(N, 5.0))


def test_dlpack_stream_values():
    x = xp.zeros(4)
    x.__dlpack__(stream=-1)
    x.__dlpack__(stream=1)
    x.__dlpack__(stream=2)
    with pytest.raises(ValueError, match=r"^__dlpack__: stream=0 is ambiguous"):
        x.__dlpack__(stream=0)
    with pytest.raises(TypeError, match=r"^__dlpack__: stream must be an int"):
        x.__dlpack__(stream=1.0)


def test_dlpack_into_torch_on_another_stream(spin):
    torch = pytest.importorskip("torch")
    a = ns()
    ts = torch.cuda.Stream()
    with a:
        x = xp.zeros(N)
        spin(x, 4.0)
        with torch.cuda.stream(ts):
            t = torch.from_dlpack(x)             # torch passes ts: ts waits for a
            t2 = t + 1
    ts.synchronize()
    np.testing.assert_array_equal(t2.cpu().numpy(), np.full(N, 5.0))


# ----------------------------------------------------------------------------- bounds check

def test_stream_synchronize_reports_a_deferred_index_error(monkeypatch):
    from gparray._engine import _index

    monkeypatch.setattr(_index, "MODE", "deferred")
    _index._pending.clear()
    _index._read_record(0, cupy().cuda.get_current_stream().ptr)   # a clean error word
    s = ns()
    with s:
        x = xp.arange(5.0)
        x[xp.asarray([10])]
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 5"):
        s.synchronize()
    s.synchronize()                              # reported once


# ----------------------------------------------------------------------------- the guide's example

def test_guide_example_runs(capsys):
    # the example of docs/guide/streams.md runs as printed
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "streams.md").read_text()
    section = text.split("\n## Queuing work on streams\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/guide/streams.md: Queuing work on streams", "exec"), {})
    out = capsys.readouterr().out.split()
    assert out[0] == "True" and float(out[1]) > 0 and out[2] == "ms"
