"""A CPU-tier stand-in for the CUDA runtime of several GPUs, enough for copies between devices
(``gparray/_engine/_transfer.py``: ``to_device``, the relay through the pinned buffers, peer access).

Device memory is host memory (ctypes buffers) tagged with its device, so copies are real
``memmove``s. What is modelled: a current device; in-order streams per (device, handle),
handle 0 being each device's default stream; copies and event records that only queue work;
``streamWaitEvent`` that makes a stream wait (when it runs) for the event's last record as
it was at the call; queues that advance at random moments (before every runtime call, a
seeded random number of steps on random streams) or when the host waits (steps on random
streams that can run, until the awaited work is done). A copy reads its
source when it runs, so a loop that reuses a buffer before its last reader ran, or a stream
that does not wait for the one it should, gets wrong bytes in some orders.

It also checks what CUDA requires: a device-to-host or host-to-device copy and an event
record are queued with the stream's device current, and an event is recorded only on a
stream of the device it was created on.
"""
import collections
import ctypes
import random
import types


class FakeCudaError(Exception):
    def __init__(self, status, msg="fake CUDA error"):
        super().__init__(msg)
        self.status = status


class FakePeers:
    """``ndev`` fake GPUs; ``peers``: whether they can access each other's memory;
    ``progress``: the probability that queued work advances before a runtime call."""

    CUDARuntimeError = FakeCudaError
    hostAllocPortable = 1

    def __init__(self, ndev=2, seed=0, progress=0.5, peers=True, enable_status=None):
        self.ndev, self.peers = ndev, peers
        self.enable_status = enable_status     # a status deviceEnablePeerAccess raises, or None
        self.rng = random.Random(seed)
        self.progress = progress
        self.queues = collections.defaultdict(collections.deque)   # (dev, handle) -> ops
        self.done = collections.defaultdict(int)      # (dev, handle) -> ops executed so far
        self.pushed = collections.defaultdict(int)    # (dev, handle) -> ops queued so far
        self.ev_dev = {}                              # event -> device it was created on
        self.ev_mark = {}                             # event -> ((dev, handle), op count) of its last record
        self.cur = 0
        self.keep, self.owner = [], []                # buffers; (lo, hi, device or -1 for pinned host)
        self.log = []
        self.enabled = set()                          # (device, peer) with peer access enabled
        self.next_event = 1
        self.current_handle = {d: 0 for d in range(ndev)}

    # ------------------------------------------------------------------ memory
    def buffer(self, n, dev):
        """Address of ``n`` fresh bytes on device ``dev`` (-1: pinned host memory)."""
        b = ctypes.create_string_buffer(max(n, 1))
        self.keep.append(b)
        addr = ctypes.addressof(b)
        self.owner.append((addr, addr + max(n, 1), dev))
        return addr

    def device_of(self, ptr):
        for lo, hi, dev in self.owner:
            if lo <= ptr < hi:
                return dev
        raise AssertionError(f"fake: address {ptr:#x} was not allocated")

    @staticmethod
    def read(addr, n):
        return ctypes.string_at(addr, n)

    # ------------------------------------------------------------------ the streams
    def _queue(self, key, op):
        self.queues[key].append(op)
        self.pushed[key] += 1

    def _runnable(self, key):
        q = self.queues[key]
        if not q:
            return False
        op = q[0]
        if op[0] == "wait":
            src, count = op[1], op[2]
            return self.done[src] >= count
        return True

    def _step(self, key):
        op = self.queues[key].popleft()
        self.done[key] += 1
        if op[0] == "copy":
            ctypes.memmove(op[1], op[2], op[3])

    def _advance(self, force=False):
        if not force and self.rng.random() >= self.progress:
            return
        for _ in range(self.rng.randint(1, 8)):
            ready = [k for k in list(self.queues) if self._runnable(k)]
            if not ready:
                return
            self._step(self.rng.choice(ready))

    def drain(self):
        while True:
            ready = [k for k in list(self.queues) if self._runnable(k)]
            if not ready:
                assert not any(self.queues.values()), "fake: streams wait for each other forever"
                return
            self._step(self.rng.choice(ready))

    def _run_until(self, key, count):
        while self.done[key] < count:
            ready = [k for k in list(self.queues) if self._runnable(k)]
            assert ready, "fake: a host wait can never finish"
            self._step(self.rng.choice(ready))

    # ------------------------------------------------------------------ runtime API
    def getDevice(self):
        return self.cur

    def setDevice(self, dev):
        assert 0 <= dev < self.ndev
        self.cur = dev

    def getDeviceCount(self):
        return self.ndev

    def deviceCanAccessPeer(self, dev, peer):
        self.log.append(("deviceCanAccessPeer", dev, peer))
        return 1 if self.peers and dev != peer else 0

    def deviceEnablePeerAccess(self, peer):
        self.log.append(("deviceEnablePeerAccess", self.cur, peer))
        if self.enable_status is not None:
            raise FakeCudaError(self.enable_status)
        if (self.cur, peer) in self.enabled:
            raise FakeCudaError(704, "cudaErrorPeerAccessAlreadyEnabled")
        self.enabled.add((self.cur, peer))

    def memcpyAsync(self, dst, src, n, kind, stream):
        self._advance()
        key = (self.cur, stream)
        self.log.append(("memcpyAsync", kind, self.cur, stream, n))
        if kind == 2:      # device to host
            assert self.device_of(src) == self.cur, "fake: a device-to-host copy queued on another device"
            assert self.device_of(dst) == -1, "fake: the relay's host side must be pinned"
        elif kind == 1:    # host to device
            assert self.device_of(dst) == self.cur, "fake: a host-to-device copy queued on another device"
            assert self.device_of(src) == -1, "fake: the relay's host side must be pinned"
        else:
            raise AssertionError(f"fake: unexpected memcpy kind {kind}")
        self._queue(key, ("copy", dst, src, n))

    def memcpyPeerAsync(self, dst, dst_dev, src, src_dev, n, stream):
        self._advance()
        self.log.append(("memcpyPeerAsync", self.cur, stream, dst_dev, src_dev, n))
        assert self.device_of(dst) == dst_dev and self.device_of(src) == src_dev
        assert self.cur in (src_dev, dst_dev), "fake: a peer copy queued on a third device"
        self._queue((self.cur, stream), ("copy", dst, src, n))

    def eventRecord(self, ev, stream):
        self._advance()
        assert self.ev_dev[ev] == self.cur, "fake: an event recorded on a stream of another device"
        key = (self.cur, stream)
        self._queue(key, ("record", ev))
        self.ev_mark[ev] = (key, self.pushed[key])
        self.log.append(("eventRecord", ev, self.cur, stream))

    def streamWaitEvent(self, stream, ev, flags=0):
        self._advance()
        key = (self.cur, stream)
        self.log.append(("streamWaitEvent", self.cur, stream, ev))
        mark = self.ev_mark.get(ev)
        if mark is not None and mark[0] != key:
            self._queue(key, ("wait", mark[0], mark[1]))

    def eventSynchronize(self, ev):
        self.log.append(("eventSynchronize", ev))
        mark = self.ev_mark.get(ev)
        if mark is not None:
            self._run_until(*mark)

    def streamSynchronize(self, stream):
        self.log.append(("streamSynchronize", self.cur, stream))
        key = (self.cur, stream)
        self._run_until(key, self.pushed[key])

    # ------------------------------------------------------------------ CuPy objects
    def module(self):
        """A stand-in for the ``cupy`` module: ``cuda.runtime`` is this object."""
        gpu = self

        class PinnedMemory:
            def __init__(self, size, flags=0):
                self.ptr = gpu.buffer(size, -1)
                self.size = size

        class Event:
            def __init__(self, block=False, disable_timing=False):
                self.ptr = gpu.next_event
                gpu.next_event += 1
                gpu.ev_dev[self.ptr] = gpu.cur

        class Device:
            def __init__(self, dev):
                self.dev, self.prev = dev, []

            def __enter__(self):
                self.prev.append(gpu.cur)
                gpu.setDevice(self.dev)
                return self

            def __exit__(self, *exc):
                gpu.setDevice(self.prev.pop())

        def get_current_stream(dev=None):
            d = gpu.cur if dev is None else dev
            return types.SimpleNamespace(ptr=gpu.current_handle[d])

        cuda = types.SimpleNamespace(runtime=self, PinnedMemory=PinnedMemory, Event=Event, Device=Device,
                                     get_current_stream=get_current_stream)
        return types.SimpleNamespace(cuda=cuda)


class Block:
    """A pool Block stand-in on a fake device (``stream``: the handle it belongs to)."""

    def __init__(self, gpu, nbytes, dev, stream):
        self.ptr = gpu.buffer(nbytes, dev) if nbytes else 0
        self.nbytes, self.device, self.stream = nbytes, dev, stream


class Dev:
    def __init__(self, i):
        self._id = i


class Layout:
    """Enough of a C-contiguous layout for ``_transfer.to_device``: bytes on a fake device."""

    def __init__(self, gpu, data, dev):
        import numpy as np

        data = np.asarray(data, order="C")
        self._shape, self._dtype = data.shape, data.dtype
        self.size = data.size
        self._buf = Block(gpu, data.nbytes, dev, 0)
        self._ptr = self._buf.ptr
        if data.nbytes:
            ctypes.memmove(self._ptr, data.ctypes.data, data.nbytes)
        self._device = Dev(dev)

    def _is_c_contig(self):
        return True


def install(monkeypatch, gpu):
    """Route gparray's CuPy access, pool allocations, peer-access memo and staging pool to
    ``gpu`` for one test."""
    from gparray._core import _backend
    from gparray._engine import _transfer
    from gparray._memory import _host

    mod = gpu.module()
    monkeypatch.setattr(_backend, "_cupy", mod)
    monkeypatch.setattr(_backend, "cupy", lambda: mod)
    monkeypatch.setattr(_backend, "_device_count", gpu.ndev)

    def alloc(n, dev_id, stream=None):
        return Block(gpu, n, dev_id, gpu.current_handle[dev_id] if stream is None else stream)

    monkeypatch.setattr(_transfer._memory, "alloc", alloc)
    monkeypatch.setattr(_transfer, "_peers", {})
    monkeypatch.setattr(_host, "_pool", None)           # a fresh staging pool over the fake
    monkeypatch.setattr(_host, "_exit_registered", True)
    return mod
