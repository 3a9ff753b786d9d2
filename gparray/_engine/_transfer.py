"""Copies between host and device memory, between devices, and into fresh C-contiguous
device memory, on buffers and layouts.

This module sits below the Array layer: it takes layouts (gparray Arrays, or
``gparray._engine._shapes.Layout`` over a raw block) and gives back NumPy arrays or new pool
Blocks holding C-contiguous data; ``gparray/_array/_build.py`` wraps the blocks into Arrays. Every
CUDA call here goes through ``gparray._core._faults.checked``, so a lost context is
reported as a kernel fault.

Host transfers take one of three paths (all on the current stream):

* pinned host memory (``gparray.cuda.pinned_empty``, any ``cudaHostAlloc``/``Register``ed
  or managed memory; ``_memory._host.is_pinned``): one DMA, then a wait for it, so that the
  host array may change (or be read) as soon as the call returns;
* pageable memory of at least ``_staging.STAGE_MIN`` bytes: staged through the pinned
  buffers of ``_memory._host.staging()`` (``gparray/_engine/_staging.py``: CPU copies overlapping the
  DMAs); when another thread is using those buffers, or pinned memory cannot be had, the
  direct path below;
* anything else: one ``cudaMemcpyAsync`` from or to the pageable memory (the driver stages
  it: it returns once the source is read).
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from .._core import _backend
from .. import _memory
from . import _staging, _streams
from . import _elementwise as _ew
from . import _index
from ._launch import copy_span
from ._shapes import Layout
from .._core import _faults
from .._memory import _host

_H2D, _D2H = 1, 2


def stream():
    """CuPy's current stream (CuPy is imported: a device array exists)."""
    return _backend.current_stream()


class on_device:
    """Context manager making ``dev`` current only when it is not already."""

    __slots__ = ("dev", "ctx")

    def __init__(self, dev):
        self.dev = dev
        self.ctx = None

    def __enter__(self):
        if _backend.runtime().getDevice() != self.dev._id:
            self.ctx = _backend.OnDevice(self.dev._id)
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def contiguous(x, dtype=None):
    """A new pool Block on x's device holding the values of layout ``x`` in C order,
    converted to ``dtype`` (default: x's). One elementwise copy kernel (contiguous data:
    16-byte vectors; on the H200 it measured ~2% faster than a device-to-device
    cudaMemcpyAsync, with less host time)."""
    dtype = x._dtype if dtype is None else dtype
    buf = _memory.alloc(x.size * dtype.itemsize, x._device._id)
    _ew.copy_into(Layout(buf, x._shape, dtype, x._device), x)
    return buf


def from_host(a: np.ndarray, dev):
    """A new pool Block on ``dev`` holding the bytes of the C-contiguous NumPy array ``a``
    (queued on the current stream). ``a`` has been read completely when this returns: the
    caller may change it; the copy may still be in flight from gparray's own staging
    buffers, ordered before any later work on the stream."""
    n = a.nbytes
    buf = _memory.alloc(n, dev._id)
    if n:
        src = a.ctypes.data
        with on_device(dev), _faults.checked("asarray"):
            s = stream().ptr
            pinned = _host.is_pinned(a, src)
            with copy_span("memcpy HtoD", n, dev._id, s):
                if pinned:
                    _backend.runtime().memcpyAsync(buf.ptr, src, n, _H2D, s)
                elif n < _staging.STAGE_MIN or not _staged(_H2D, buf.ptr, src, n, dev._id, s):
                    _backend.runtime().memcpyAsync(buf.ptr, src, n, _H2D, s)
            if pinned:
                # one DMA straight from the caller's memory: wait for it, or a change the
                # caller makes after we return could reach the device
                _backend.runtime().streamSynchronize(s)
    return buf


def _check_out(x, out) -> None:
    """``to_host``'s ``out``: a writeable C-contiguous NumPy array of x's shape and dtype."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"to_host: out must be a NumPy array, got {type(out).__name__}")
    if out.dtype != x._dtype:
        raise TypeError(f"to_host: out has dtype {out.dtype}, the array {x._dtype}")
    if out.shape != tuple(x._shape):
        raise ValueError(f"to_host: out has shape {out.shape}, the array {tuple(x._shape)}")
    if not out.flags.c_contiguous:
        raise ValueError("to_host: out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("to_host: out is read-only")


def to_host(x, out: np.ndarray | None = None) -> np.ndarray:
    """Layout ``x`` downloaded into a new C-contiguous NumPy array, or into ``out`` (a
    writeable C-contiguous NumPy array of x's shape and dtype; pinned memory takes one DMA);
    a non-contiguous ``x`` is copied to contiguous device memory first. Synchronizes the
    current stream: the result is complete when this returns.

    A new result is ``numpy.empty`` (pageable, its pages not yet touched): on the staged
    path its first-touch page faults happen in the CPU copies out of the pinned buffers,
    which overlap the DMAs of the next chunks, instead of in front of the transfer."""
    if out is None:
        out = np.empty(x._shape, dtype=x._dtype)
        given = False
    else:
        _check_out(x, out)
        given = True
    n = out.nbytes
    if n == 0:
        return out
    keep = None  # the contiguous copy, alive until the download is done
    if x._is_c_contig():
        ptr = x._ptr
    else:
        keep = contiguous(x)
        ptr = keep.ptr
    dst = out.ctypes.data
    with on_device(x._device):
        with _faults.checked("to host"):
            s = stream()
            with copy_span("memcpy DtoH", n, x._device._id, s.ptr):
                if ((given and _host.is_pinned(out, dst)) or n < _staging.STAGE_MIN
                        or not _staged(_D2H, dst, ptr, n, x._device._id, s.ptr)):
                    _backend.runtime().memcpyAsync(dst, ptr, n, _D2H, s.ptr)
            s.synchronize()
        _index.check_pending(x._device._id, s.ptr)  # an out-of-range index an earlier gather met
    return out


# One thread's memcpy from pageable memory reaches ~8-10 GB/s on the device hosts (and a fresh
# NumPy result takes its first-touch page faults inside it): a chunk's CPU copy is cut into
# HOST_COPY_PARTS pieces run by as many threads (ctypes.memmove releases the GIL), so the
# host side keeps up with the DMA. Pieces are multiples of 64 KiB; below HOST_COPY_SPLIT_MIN
# bytes one thread copies.
HOST_COPY_PARTS = max(1, min(4, (os.cpu_count() or 1) // 2))
HOST_COPY_SPLIT_MIN = 2 << 20
_copy_pool = None
_copy_pool_lock = threading.Lock()


def _parallel_memmove(dst: int, src: int, n: int) -> None:
    """memmove of ``n`` bytes, in HOST_COPY_PARTS threads when it is large; every piece is
    done when this returns (an interrupt waits for the pieces already started)."""
    global _copy_pool
    import concurrent.futures  # here: not on the import path of gparray
    parts = HOST_COPY_PARTS
    if parts <= 1 or n < HOST_COPY_SPLIT_MIN:
        ctypes.memmove(dst, src, n)
        return
    if _copy_pool is None:
        with _copy_pool_lock:
            if _copy_pool is None:
                _copy_pool = concurrent.futures.ThreadPoolExecutor(parts - 1, thread_name_prefix="gparray-copy")
    step = -(-n // parts)
    step = -(-step // (64 << 10)) * (64 << 10)
    pieces = [(off, min(step, n - off)) for off in range(0, n, step)]
    futs = [_copy_pool.submit(ctypes.memmove, dst + off, src + off, k) for off, k in pieces[1:]]
    try:
        off, k = pieces[0]
        ctypes.memmove(dst + off, src + off, k)
    finally:
        concurrent.futures.wait(futs)
    for f in futs:
        f.result()


class _Copier:
    """The CUDA side of ``_staging.upload``/``download``: ``ctypes.memmove`` for the CPU
    copies (glibc's memcpy, the GIL released), ``cudaMemcpyAsync`` on stream ``s`` for the
    DMAs, one reusable event per (device, buffer) of the staging pool."""

    __slots__ = ("pool", "kind", "s", "dev_id", "rt", "event_cls")

    def __init__(self, pool, kind: int, s: int, dev_id: int):
        self.pool, self.kind, self.s, self.dev_id = pool, kind, s, dev_id
        self.rt, self.event_cls = _backend.runtime(), _backend.Event

    def host_copy(self, dst: int, src: int, n: int) -> None:
        _parallel_memmove(dst, src, n)

    def dma(self, dst: int, src: int, n: int) -> None:
        self.rt.memcpyAsync(dst, src, n, self.kind, self.s)

    def record(self, b: int) -> None:
        key = (self.dev_id, b)
        ev = self.pool.events.get(key)
        if ev is None:   # created on the current device, which is dev_id (on_device)
            ev = self.pool.events[key] = self.event_cls(block=False, disable_timing=True)
        self.rt.eventRecord(ev.ptr, self.s)
        self.pool.pending[b] = ev

    def wait(self, b: int) -> None:
        ev = self.pool.pending[b]
        if ev is not None:
            self.rt.eventSynchronize(ev.ptr)
            self.pool.pending[b] = None


def _with_staging(run, drain) -> bool:
    """``pool.next = run(pool, buffer addresses)`` holding the staging pool; False, with
    nothing done, when another thread is using it or pinned memory cannot be had. On an
    error (or a KeyboardInterrupt) ``drain()`` first waits for the streams: a DMA queued but
    not yet marked must not meet the next transfer's use of its buffer."""
    pool = _host.staging(_staging.NBUF, _staging.BUFFER_BYTES)
    if not pool.try_acquire():
        return False
    try:
        bufs = pool.ptrs()
        if bufs is None:
            return False
        try:
            pool.next = run(pool, bufs)
        except BaseException:
            try:
                drain()
            except Exception:
                pass
            raise
        return True
    finally:
        pool.lock.release()


def _staged(kind: int, dst: int, src: int, n: int, dev_id: int, s: int) -> bool:
    """Copy ``n`` bytes through the staging buffers (``kind``: host-to-device or
    device-to-host, on stream ``s`` of the current device ``dev_id``); False, with nothing
    done, when another thread is using them or pinned memory cannot be had."""
    loop = _staging.upload if kind == _H2D else _staging.download

    def run(pool, bufs):
        return loop(_Copier(pool, kind, s, dev_id), dst, src, n, bufs, pool.next, buffer_bytes=pool.buffer_bytes)

    return _with_staging(run, lambda: _backend.runtime().streamSynchronize(s))


# How a copy between two devices goes: "auto" (the default) is a peer copy where the two
# GPUs can reach each other's memory (peer access enabled once per pair), else a relay through
# the pinned staging buffers; "peer" is always cudaMemcpyPeerAsync (the driver stages it
# itself when the GPUs are not peers); "staged" always relays (falling back to the peer copy
# while another thread holds the buffers). Private: the GPU tier and the benchmarks set it
# to run the relay on machines whose GPUs are peers.
_peer_mode = "auto"

_peers: dict = {}              # (low, high) device ordinals -> peer access enabled both ways
_peers_lock = threading.Lock()

# cudaDeviceEnablePeerAccess's "already enabled" (CuPy or PyTorch did it): access is on
_PEER_ALREADY_ENABLED = 704


def peer_access(a: int, b: int) -> bool:
    """Whether GPUs ``a`` and ``b`` can access each other's memory. The first call for a pair
    enables peer access in both directions (``cudaDeviceEnablePeerAccess``: kernels and copy
    engines of either device then reach the other's memory directly, over NVLink or PCIe);
    a pair that cannot, or whose enabling fails, answers False from then on."""
    key = (a, b) if a <= b else (b, a)
    ok = _peers.get(key)
    if ok is None:
        with _peers_lock:
            ok = _peers.get(key)
            if ok is None:
                ok = _peers[key] = _enable_peers(*key)
    return ok


def _enable_peers(a: int, b: int) -> bool:
    if a == b:
        return True
    rt = _backend.runtime()
    if not (rt.deviceCanAccessPeer(a, b) and rt.deviceCanAccessPeer(b, a)):
        return False
    for dev, peer in ((a, b), (b, a)):
        with _backend.on_device(dev):
            try:
                rt.deviceEnablePeerAccess(peer)
            except rt.CUDARuntimeError as exc:   # CuPy has cleared the runtime's last error
                if exc.status != _PEER_ALREADY_ENABLED:
                    return False   # e.g. too many peers: the relay still works
    return True


def _peer_path(src_dev: int, dst_dev: int) -> bool:
    """Whether a copy from ``src_dev`` to ``dst_dev`` is one cudaMemcpyPeerAsync (else the
    relay through the pinned buffers), by ``_peer_mode``."""
    mode = _peer_mode
    if mode == "peer":
        return True
    if mode == "staged":
        return False
    return peer_access(src_dev, dst_dev)


class _Relay:
    """The CUDA side of ``_staging.relay``: stream ``s`` of device ``s_dev`` downloads into
    the pinned buffers, stream ``d`` of device ``d_dev`` uploads out of them; one reusable
    event per (device, buffer) on each side (the destination's is the staging pool's own,
    so a later host transfer waits for the upload that last read the buffer)."""

    __slots__ = ("pool", "rt", "event_cls", "s", "s_dev", "d", "d_dev")

    def __init__(self, pool, s: int, s_dev: int, d: int, d_dev: int):
        self.pool, self.rt, self.event_cls = pool, _backend.runtime(), _backend.Event
        self.s, self.s_dev, self.d, self.d_dev = s, s_dev, d, d_dev

    def _event(self, key):
        ev = self.pool.events.get(key)
        if ev is None:   # created on the current device, the one of the stream it is recorded on
            ev = self.pool.events[key] = self.event_cls(block=False, disable_timing=True)
        return ev

    def claim(self, b: int) -> None:
        ev = self.pool.pending[b]
        if ev is not None:
            with _backend.on_device(self.s_dev):
                self.rt.streamWaitEvent(self.s, ev.ptr)

    def down(self, buf: int, src: int, n: int) -> None:
        with _backend.on_device(self.s_dev):
            self.rt.memcpyAsync(buf, src, n, _D2H, self.s)

    def handoff(self, b: int) -> None:
        with _backend.on_device(self.s_dev):
            ev = self._event(("relay", self.s_dev, b))
            self.rt.eventRecord(ev.ptr, self.s)
        with _backend.on_device(self.d_dev):
            self.rt.streamWaitEvent(self.d, ev.ptr)

    def up(self, dst: int, buf: int, n: int) -> None:
        with _backend.on_device(self.d_dev):
            self.rt.memcpyAsync(dst, buf, n, _H2D, self.d)

    def record(self, b: int) -> None:
        with _backend.on_device(self.d_dev):
            ev = self._event((self.d_dev, b))
            self.rt.eventRecord(ev.ptr, self.d)
        self.pool.pending[b] = ev


def _relayed(dst: int, src: int, n: int, s: int, s_dev: int, d: int, d_dev: int) -> bool:
    """Copy ``n`` bytes from device ``s_dev`` to ``d_dev`` through the staging buffers, on
    stream ``s`` of the source and ``d`` of the destination (``d`` waits for ``s`` chunk by
    chunk); False, with nothing done, when another thread is using the buffers or pinned
    memory cannot be had."""
    def run(pool, bufs):
        return _staging.relay(_Relay(pool, s, s_dev, d, d_dev), dst, src, n, bufs, pool.next,
                              buffer_bytes=pool.buffer_bytes)

    def drain():
        for dev_id, h in ((s_dev, s), (d_dev, d)):
            try:
                with _backend.on_device(dev_id):
                    _backend.runtime().streamSynchronize(h)
            except Exception:
                pass

    return _with_staging(run, drain)


def to_device(x, dev, stream=None):
    """A new pool Block on device ``dev`` (not x's) holding the values of layout ``x`` in C
    order, queued without a host wait: one cudaMemcpyPeerAsync where the two GPUs can reach
    each other's memory (``peer_access``), else relayed through the pinned staging buffers.

    ``stream``: (handle, device ordinal) of the stream the copy is queued on, a stream of
    x's device or of ``dev``; None: the current stream of x's device. The copy waits for
    the work queued so far on the current stream of x's device (which made x) and on the
    stream that owns the new block (its earlier users); afterwards the current streams of
    both devices and the block's stream wait for the copy, so the result may be used, and
    x freed, on them at once. A relay needs a stream on each device: its downloads run on
    ``stream`` when that is x's device's (else on x's device's current stream), its uploads
    on the block's stream."""
    keep = None  # the contiguous copy, alive until the copy is queued (freed stream-ordered)
    if x._is_c_contig():
        src = x._ptr
    else:
        keep = contiguous(x)
        src = keep.ptr
    nbytes = x.size * x._dtype.itemsize
    src_dev, dst_dev = x._device._id, dev._id
    cs, cs_dev = (None, src_dev) if stream is None else stream
    # the block belongs to the copy's stream when that is on dev, else to dev's current one
    buf = _memory.alloc(nbytes, dst_dev, cs if cs_dev == dst_dev else None)
    if nbytes:
        src_cur = _backend.current_stream(src_dev).ptr
        dst_cur = _backend.current_stream(dst_dev).ptr
        if cs is None:
            cs = src_cur
        _streams.order(src_cur, src_dev, (cs, cs_dev))      # x has been written
        _streams.order(buf.stream, dst_dev, (cs, cs_dev))   # the block's earlier users are done
        with _faults.checked("to_device"):
            s = cs if cs_dev == src_dev else src_cur
            if _peer_path(src_dev, dst_dev) or not _relayed(buf.ptr, src, nbytes, s, src_dev,
                                                             buf.stream, dst_dev):
                with _backend.on_device(cs_dev), copy_span("memcpy PtoP", nbytes, cs_dev, cs):
                    _backend.runtime().memcpyPeerAsync(buf.ptr, dst_dev, src, src_dev, nbytes, cs)
            elif cs_dev == src_dev:
                _streams.order(buf.stream, dst_dev, (cs, cs_dev))   # the relay ends on the block's stream
        _streams.order(cs, cs_dev, (src_cur, src_dev), (dst_cur, dst_dev), (buf.stream, dst_dev))
    return buf


def memset0(x, what: str = "zeros") -> None:
    """Zero the bytes of the C-contiguous layout ``x`` (queued on the current stream);
    ``what`` names the calling function in a fault's message."""
    nbytes = x.size * x._dtype.itemsize
    if nbytes:
        with on_device(x._device), _faults.checked(what):
            s = stream().ptr
            with copy_span("memset", nbytes, x._device._id, s):
                _backend.runtime().memsetAsync(x._ptr, 0, nbytes, s)
