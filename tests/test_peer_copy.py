"""CPU tier: copies between GPUs (``gparray/_engine/_transfer.py``: ``to_device``, ``peer_access``,
the relay of ``gparray/_engine/_staging.py`` through the pinned buffers) on a fake runtime of several
devices with asynchronous in-order streams (tests/_fake_peers.py)."""
import ctypes

import numpy as np
import pytest

from _fake_peers import FakePeers, Layout, install
from gparray._engine import _staging, _transfer
from gparray._core._device import get_device

SMALL = dict(buffer_bytes=16, min_chunk=4, split=4, align=4)


def _bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# --------------------------------------------------------------------------- the relay loop

class Relay:
    """``_staging.relay``'s copier over FakePeers: stream 0 of device ``s_dev`` downloads,
    stream 0 of ``d_dev`` uploads; ``skip``: a step left out on purpose."""

    def __init__(self, gpu, nbuf, s_dev=0, d_dev=1, skip=()):
        self.gpu, self.s_dev, self.d_dev, self.skip = gpu, s_dev, d_dev, set(skip)
        mod = gpu.module()
        with mod.cuda.Device(s_dev):
            self.handoff_ev = [mod.cuda.Event().ptr for _ in range(nbuf)]
        with mod.cuda.Device(d_dev):
            self.last_ev = [mod.cuda.Event().ptr for _ in range(nbuf)]
        self.pending = [None] * nbuf

    def claim(self, b):
        if "claim" not in self.skip and self.pending[b] is not None:
            self.gpu.setDevice(self.s_dev)
            self.gpu.streamWaitEvent(0, self.pending[b])

    def down(self, buf, src, n):
        self.gpu.setDevice(self.s_dev)
        self.gpu.memcpyAsync(buf, src, n, 2, 0)

    def handoff(self, b):
        if "handoff" in self.skip:
            return
        self.gpu.setDevice(self.s_dev)
        self.gpu.eventRecord(self.handoff_ev[b], 0)
        self.gpu.setDevice(self.d_dev)
        self.gpu.streamWaitEvent(0, self.handoff_ev[b])

    def up(self, dst, buf, n):
        self.gpu.setDevice(self.d_dev)
        self.gpu.memcpyAsync(dst, buf, n, 1, 0)

    def record(self, b):
        self.gpu.setDevice(self.d_dev)
        self.gpu.eventRecord(self.last_ev[b], 0)
        self.pending[b] = self.last_ev[b]


SIZES = [0, 1, 3, 4, 5, 15, 16, 17, 63, 64, 65, 200, 1001]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nbytes", SIZES)
def test_relay_copies_every_byte(nbytes, seed):
    gpu = FakePeers(seed=seed, progress=[0.0, 0.3, 0.9][seed % 3])
    data = _bytes(nbytes, seed)
    src, dst = gpu.buffer(nbytes, 0), gpu.buffer(nbytes, 1)
    ctypes.memmove(src, data, nbytes)
    bufs = [gpu.buffer(16, -1) for _ in range(3)]
    nxt = _staging.relay(Relay(gpu, 3), dst, src, nbytes, bufs, start=seed % 3, **SMALL)
    assert nxt == (seed % 3 + len(_staging.plan(nbytes, 3, **SMALL))) % 3
    gpu.drain()
    assert gpu.read(dst, nbytes) == data


def test_relay_never_waits_on_the_host():
    gpu = FakePeers(progress=0.0)
    n = 16 * 7
    src, dst = gpu.buffer(n, 0), gpu.buffer(n, 1)
    _staging.relay(Relay(gpu, 3), dst, src, n, [gpu.buffer(16, -1) for _ in range(3)], **SMALL)
    assert not [e for e in gpu.log if e[0] in ("eventSynchronize", "streamSynchronize")]
    assert sum(len(q) for q in gpu.queues.values()) > 0     # everything still queued


@pytest.mark.parametrize("skip", ["claim", "handoff"])
def test_the_fake_catches_a_relay_that_does_not_wait(skip):
    """Without its stream waits the relay overwrites a buffer before its upload ran, or
    uploads before the download: some seed gives wrong bytes, so the tests above can fail."""
    wrong = 0
    for seed in range(20):
        gpu = FakePeers(seed=seed, progress=0.1)
        n = 16 * 7
        data = _bytes(n, seed)
        src, dst = gpu.buffer(n, 0), gpu.buffer(n, 1)
        ctypes.memmove(src, data, n)
        bufs = [gpu.buffer(16, -1) for _ in range(3)]
        _staging.relay(Relay(gpu, 3, skip=[skip]), dst, src, n, bufs, **SMALL)
        gpu.drain()
        wrong += gpu.read(dst, n) != data
    assert wrong > 0


# --------------------------------------------------------------------------- peer access

def test_peer_access_is_enabled_once_per_pair_both_ways(monkeypatch):
    gpu = FakePeers(ndev=3)
    install(monkeypatch, gpu)
    assert _transfer.peer_access(0, 1) and _transfer.peer_access(1, 0)
    assert _transfer.peer_access(2, 1)
    enables = [e for e in gpu.log if e[0] == "deviceEnablePeerAccess"]
    assert sorted(enables) == [("deviceEnablePeerAccess", 0, 1), ("deviceEnablePeerAccess", 1, 0),
                               ("deviceEnablePeerAccess", 1, 2), ("deviceEnablePeerAccess", 2, 1)]
    assert gpu.enabled == {(0, 1), (1, 0), (1, 2), (2, 1)}
    assert gpu.getDevice() == 0           # the current device is restored


def test_peer_access_already_enabled_elsewhere_counts(monkeypatch):
    gpu = FakePeers()
    install(monkeypatch, gpu)
    gpu.enabled = {(0, 1), (1, 0)}        # CuPy or PyTorch enabled it first
    assert _transfer.peer_access(0, 1)


@pytest.mark.parametrize("status", [217, 711])   # peer access unsupported, too many peers
def test_peer_access_that_fails_falls_back_to_the_relay(monkeypatch, status):
    gpu = FakePeers(enable_status=status)
    install(monkeypatch, gpu)
    assert not _transfer.peer_access(0, 1)
    assert not _transfer.peer_access(1, 0)     # remembered: asked once
    assert len([e for e in gpu.log if e[0] == "deviceEnablePeerAccess"]) == 1


def test_gpus_that_are_not_peers(monkeypatch):
    gpu = FakePeers(peers=False)
    install(monkeypatch, gpu)
    assert not _transfer.peer_access(0, 1)
    assert not [e for e in gpu.log if e[0] == "deviceEnablePeerAccess"]


@pytest.mark.parametrize("mode, peers, want", [
    ("auto", True, True), ("auto", False, False), ("peer", False, True), ("staged", True, False)])
def test_peer_mode_chooses_the_path(monkeypatch, mode, peers, want):
    install(monkeypatch, FakePeers(peers=peers))
    monkeypatch.setattr(_transfer, "_peer_mode", mode)
    assert _transfer._peer_path(0, 1) is want


# --------------------------------------------------------------------------- to_device

@pytest.mark.parametrize("mode", ["auto", "staged"])
@pytest.mark.parametrize("src_dev, dst_dev", [(0, 1), (1, 0)])
@pytest.mark.parametrize("stream", [None, "src", "dst"])
@pytest.mark.parametrize("nbytes", [0, 1, 100, 4 << 20, (9 << 20) + 13])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("reader", ["dst", "stream"])
def test_to_device_moves_the_bytes(monkeypatch, mode, src_dev, dst_dev, stream, nbytes, seed, reader):
    """The result holds x's bytes once the destination's current stream has run, on either
    path, for a copy queued on either device's stream; nothing waits on the host."""
    gpu = FakePeers(seed=seed, progress=[0.0, 0.4, 0.9][seed])
    install(monkeypatch, gpu)
    monkeypatch.setattr(_transfer, "_peer_mode", mode)
    data = np.frombuffer(_bytes(nbytes, seed), np.uint8)
    x = Layout(gpu, data, src_dev)
    st = None if stream is None else (0x5000 + (src_dev if stream == "src" else dst_dev),
                                     src_dev if stream == "src" else dst_dev)
    buf = _transfer.to_device(x, get_device(dst_dev), st)
    if nbytes:
        assert gpu.device_of(buf.ptr) == dst_dev
    assert not [e for e in gpu.log if e[0] in ("eventSynchronize", "streamSynchronize")]
    copies = [e[0] for e in gpu.log if e[0].startswith("memcpy")]
    if nbytes == 0:
        assert copies == []
        return
    if mode == "auto":
        assert copies == ["memcpyPeerAsync"]
    else:
        assert set(copies) == {"memcpyAsync"} and len(copies) >= 2
    # x is freed and its memory rewritten by the next work on its device's current stream
    # (stream-ordered): the copy must have read it before
    gpu._queue((src_dev, gpu.current_handle[src_dev]), ("copy", x._ptr, gpu.buffer(nbytes, src_dev), nbytes))
    # work queued next on the destination's current stream, or on the stream the copy was
    # queued on, sees the result: run up to there
    key = (dst_dev, gpu.current_handle[dst_dev]) if reader == "dst" or st is None else (st[1], st[0])
    gpu._queue(key, ("record", -1))
    gpu._run_until(key, gpu.pushed[key])
    assert gpu.read(buf.ptr, nbytes) == data.tobytes()
    gpu.drain()


def test_to_device_waits_for_the_kernel_that_wrote_x(monkeypatch):
    """x is written by work still queued on its device's current stream: the copy (either
    path) runs after it."""
    for mode in ("auto", "staged"):
        for seed in range(5):
            gpu = FakePeers(seed=seed, progress=0.3)
            install(monkeypatch, gpu)
            monkeypatch.setattr(_transfer, "_peer_mode", mode)
            n = (5 << 20) + 7
            data = _bytes(n, seed)
            x = Layout(gpu, np.zeros(n, np.uint8), 0)
            staged = gpu.buffer(n, 0)
            ctypes.memmove(staged, data, n)
            gpu._queue((0, 0), ("copy", x._ptr, staged, n))     # a kernel writes x
            buf = _transfer.to_device(x, get_device(1), None)
            gpu.drain()
            assert gpu.read(buf.ptr, n) == data, (mode, seed)


def test_relay_busy_pool_falls_back_to_the_peer_copy(monkeypatch):
    gpu = FakePeers()
    install(monkeypatch, gpu)
    monkeypatch.setattr(_transfer, "_peer_mode", "staged")
    pool = _transfer._host.staging(_staging.NBUF, _staging.BUFFER_BYTES)
    assert pool.try_acquire()      # another thread's transfer holds the buffers
    try:
        x = Layout(gpu, np.arange(1000, dtype=np.uint8), 0)
        buf = _transfer.to_device(x, get_device(1), None)
    finally:
        pool.lock.release()
    assert [e[0] for e in gpu.log if e[0].startswith("memcpy")] == ["memcpyPeerAsync"]
    gpu.drain()
    assert gpu.read(buf.ptr, 1000) == np.arange(1000, dtype=np.uint8).tobytes()


def test_a_host_transfer_after_a_relay_waits_for_its_uploads(monkeypatch):
    """The relay leaves each buffer's last upload as the staging pool's pending event, which
    the next staged host transfer waits for before refilling the buffer."""
    gpu = FakePeers(progress=0.0)
    install(monkeypatch, gpu)
    monkeypatch.setattr(_transfer, "_peer_mode", "staged")
    x = Layout(gpu, np.ones(6 << 20, np.uint8), 0)
    _transfer.to_device(x, get_device(1), None)
    pool = _transfer._host.staging(_staging.NBUF, _staging.BUFFER_BYTES)
    for ev in pool.pending:
        assert ev is not None and gpu.ev_dev[ev.ptr] == 1
