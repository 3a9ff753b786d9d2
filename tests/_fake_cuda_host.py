"""A CPU-tier stand-in for the parts of CuPy that host transfers use.

"Device" memory is host memory (ctypes buffers), so copies are real ``memmove``s; what is
modelled is the asynchrony: ``memcpyAsync`` and ``eventRecord`` only queue work on one
in-order stream, and the queue advances at random moments (before every runtime call, by
a seeded random amount) or when the host waits (``eventSynchronize`` up to the event's last
record, ``streamSynchronize``). A DMA therefore reads its source when it runs, not when it
was queued: code that refills a staging buffer before its DMA ran, or reads a result before
waiting, gets wrong bytes in some orders and is caught by comparing data.
"""
import collections
import ctypes
import random
import threading
import types


class FakeCudaError(Exception):
    def __init__(self, status, msg="fake CUDA error"):
        super().__init__(msg)
        self.status = status


class FakeGPU:
    """One in-order stream over real host memory; ``progress``: the probability that the
    queue advances (by a random number of operations) before a runtime call (0: the GPU
    runs only when the host waits)."""

    CUDARuntimeError = FakeCudaError
    hostAllocPortable = 1
    memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice, memoryTypeManaged = 0, 1, 2, 3

    def __init__(self, seed=0, progress=0.5):
        self.rng = random.Random(seed)
        self.progress = progress
        self.queue = collections.deque()
        self.seq = 0
        self.ev_latest, self.ev_done = {}, {}
        self.keep = []
        self.kinds = []            # (start, end, memory type) of the memory we handed out
        self.log = []              # ("memcpyAsync", dst, src, n, kind), ("streamSynchronize",), ...
        self.next_event = 1
        self.fail_alloc = False
        self.lock = threading.RLock()

    # ------------------------------------------------------------------ memory
    def buffer(self, n, kind=0):
        """Address of ``n`` fresh bytes (``kind``: the memory type the driver reports)."""
        b = ctypes.create_string_buffer(max(n, 1))
        self.keep.append(b)
        addr = ctypes.addressof(b)
        if kind:
            self.kinds.append((addr, addr + max(n, 1), kind))
        return addr

    @staticmethod
    def read(addr, n):
        return ctypes.string_at(addr, n)

    # ------------------------------------------------------------------ the stream
    def _step(self):
        op = self.queue.popleft()
        if op[0] == "copy":
            ctypes.memmove(op[1], op[2], op[3])
        else:
            self.ev_done[op[1]] = op[2]

    def _advance(self):
        if self.queue and self.rng.random() < self.progress:
            for _ in range(self.rng.randint(1, len(self.queue))):
                self._step()

    def drain(self):
        with self.lock:
            while self.queue:
                self._step()

    def kernel_write(self, dst, src, n):
        """Queue device work (as a kernel would) that copies ``n`` bytes."""
        with self.lock:
            self.queue.append(("copy", dst, src, n))

    # ------------------------------------------------------------------ runtime API
    def _type(self, ptr):
        for lo, hi, kind in self.kinds:
            if lo <= ptr < hi:
                return kind
        return 0

    def memcpyAsync(self, dst, src, n, kind, stream):
        """As CUDA: from pageable host memory the source is read (into the driver's staging)
        before the call returns; to pageable host memory the call returns once the copy is
        done; with pinned memory on the host side the copy only runs when the stream
        reaches it."""
        with self.lock:
            self._advance()
            self.log.append(("memcpyAsync", dst, src, n, kind))
            if kind == 1 and self._type(src) == 0:
                staged = ctypes.create_string_buffer(ctypes.string_at(src, n), n)
                self.keep.append(staged)
                self.queue.append(("copy", dst, ctypes.addressof(staged), n))
            elif kind == 2 and self._type(dst) == 0:
                self.queue.append(("copy", dst, src, n))
                self.drain()
            else:
                self.queue.append(("copy", dst, src, n))

    def eventRecord(self, ev, stream):
        with self.lock:
            self._advance()
            self.seq += 1
            self.ev_latest[ev] = self.seq
            self.queue.append(("event", ev, self.seq))

    def eventSynchronize(self, ev):
        with self.lock:
            self.log.append(("eventSynchronize", ev))
            while self.ev_done.get(ev, 0) < self.ev_latest.get(ev, 0):
                self._step()

    def streamSynchronize(self, stream):
        with self.lock:
            self.log.append(("streamSynchronize",))
            while self.queue:
                self._step()

    def getDevice(self):
        return 0

    def pointerGetMemoryType(self, ptr):
        with self.lock:
            self.log.append(("pointerGetMemoryType", ptr))
            return self._type(ptr)

    # ------------------------------------------------------------------ CuPy objects
    def module(self):
        """A stand-in for the ``cupy`` module: ``cuda.runtime`` is this object."""
        gpu = self

        class PinnedMemory:
            def __init__(self, size, flags=0):
                if gpu.fail_alloc:
                    raise FakeCudaError(2, "cudaErrorMemoryAllocation")
                gpu.log.append(("hostAlloc", size, flags))
                self.ptr = gpu.buffer(size, kind=1)
                self.size = size

        class Event:
            def __init__(self, block=False, disable_timing=False):
                self.ptr = gpu.next_event
                gpu.next_event += 1

        class Stream:
            ptr = 0

            def synchronize(self):
                gpu.streamSynchronize(0)

        cuda = types.SimpleNamespace(runtime=self, PinnedMemory=PinnedMemory, Event=Event,
                                     get_current_stream=lambda *a: Stream())
        return types.SimpleNamespace(cuda=cuda)


class Dev:
    _id = 0


class DeviceBuffer:
    """A pool Block stand-in: ``ptr`` to ``nbytes`` of fake device memory."""

    def __init__(self, gpu, nbytes):
        self.ptr = gpu.buffer(nbytes, kind=2) if nbytes else 0
        self.nbytes = nbytes


class DeviceLayout:
    """Enough of a layout for ``_transfer.to_host``: C-contiguous bytes on the fake GPU."""

    def __init__(self, gpu, data):
        import numpy as np

        data = np.asarray(data, order="C")   # (ascontiguousarray makes 0-d arrays 1-d)
        self._shape, self._dtype = data.shape, data.dtype
        self._buf = DeviceBuffer(gpu, data.nbytes)
        self._ptr = self._buf.ptr
        if data.nbytes:
            ctypes.memmove(self._ptr, data.ctypes.data, data.nbytes)
        self._device = Dev()

    def _is_c_contig(self):
        return True


def install(monkeypatch, gpu):
    """Route gparray's CuPy access, pool allocations and staging pool to ``gpu`` for one test."""
    from gparray._core import _backend
    from gparray._engine import _transfer
    from gparray._engine import _index
    from gparray._memory import _host

    mod = gpu.module()
    monkeypatch.setattr(_backend, "_cupy", mod)
    monkeypatch.setattr(_backend, "cupy", lambda: mod)
    monkeypatch.setattr(_transfer._memory, "alloc", lambda n, dev_id, stream=None: DeviceBuffer(gpu, n))
    monkeypatch.setattr(_index, "_pending", {})
    monkeypatch.setattr(_host, "_pool", None)           # a fresh staging pool over the fake
    monkeypatch.setattr(_host, "_exit_registered", True)  # no atexit hook for a fake pool
    return mod
