"""Staged transfers: pageable host memory moved through a few pinned buffers, the CPU copy
into (or out of) one buffer overlapping the DMA of another; and copies between two GPUs that
cannot reach each other's memory, relayed through the same buffers (``relay``).

This module is the plan and the loops only, written against a *copier* (``_transfer.py``
passes the CUDA one; the CPU tier a fake that models an asynchronous stream), so the order
of the steps can be tested without a GPU:

* ``copier.host_copy(dst, src, n)``: a CPU memcpy of ``n`` bytes (synchronous);
* ``copier.dma(dst, src, n)``: an asynchronous copy queued on the stream;
* ``copier.record(b)``: mark the work queued so far as the last use of buffer ``b``;
* ``copier.wait(b)``: block until buffer ``b``'s last marked use has finished.

Why it is faster than one ``cudaMemcpyAsync`` from pageable memory: the DMA engine can only
read page-locked memory, so every pageable transfer is a CPU copy plus a DMA. The driver
does the two one after the other for each of its internal staging blocks; here they run at
the same time on different buffers, so a large transfer costs about the slower of the two,
not their sum.

Sizes (decided, not measured; see the comments at the constants): buffers of
``BUFFER_BYTES`` = 8 MiB, ``NBUF`` = 3 of them, chunks of at most one buffer and at least
``MIN_CHUNK`` = 1 MiB, and a transfer of at least ``STAGE_MIN`` bytes is cut into at least
``SPLIT`` chunks so that even a 4 MiB transfer overlaps something.
"""
from __future__ import annotations

from typing import NamedTuple

# Below this many bytes a transfer is one direct cudaMemcpyAsync: staging a few chunks of
# a small transfer saves less (the overlap is at most one chunk's copy) than the
# per-chunk Python and driver calls (~10-20 us each) cost. A constant, not a measurement.
STAGE_MIN = 4 << 20

# Each pinned buffer holds one chunk. 8 MiB: the fixed cost of a chunk (a memmove, a
# cudaMemcpyAsync, an event record and query from Python: ~10-20 us) is under 5% of the
# ~0.3-0.8 ms its CPU copy takes at 10-25 GB/s, while the part that cannot overlap (the first
# chunk's CPU copy before the first DMA, the last DMA after the last CPU copy) stays at
# one chunk: ~3% of a 256 MiB transfer.
BUFFER_BYTES = 8 << 20

# Three buffers: two would do if the CPU copy were always slower than the DMA (the DMA of
# one buffer finishes while the CPU fills the other). On PCIe Gen4 hosts the two run at
# similar speeds (~20-25 GB/s), and a third buffer keeps one DMA queued while the CPU works
# on another, so jitter on either side does not stall the pipeline. 24 MiB of pinned host
# memory in all, allocated once, at the first staged transfer.
NBUF = 3

MIN_CHUNK = 1 << 20   # no chunk smaller than this (except a transfer's last)
SPLIT = 4             # a staged transfer is cut into at least this many chunks
ALIGN = 64 << 10      # chunk sizes are multiples of this (page- and DMA-friendly offsets)


class Chunk(NamedTuple):
    """One piece of a staged transfer: bytes [offset, offset + size) through buffer ``buf``."""

    offset: int
    size: int
    buf: int


def chunk_size(nbytes: int, buffer_bytes: int | None = None, min_chunk: int | None = None,
               split: int | None = None, align: int | None = None) -> int:
    """The size of every chunk but the last of an ``nbytes`` transfer: ``nbytes / split``
    rounded up to ``align``, then clamped to [``min_chunk``, ``buffer_bytes``] (each None:
    the module's constant, read at the call)."""
    buffer_bytes = BUFFER_BYTES if buffer_bytes is None else buffer_bytes
    min_chunk = MIN_CHUNK if min_chunk is None else min_chunk
    split = SPLIT if split is None else split
    align = ALIGN if align is None else align
    if buffer_bytes <= 0 or min_chunk <= 0 or split <= 0 or align <= 0:
        raise ValueError("chunk_size: buffer_bytes, min_chunk, split and align must be positive")
    per = -(-nbytes // split)
    per = -(-per // align) * align
    return min(buffer_bytes, max(min_chunk, per))


def plan(nbytes: int, nbuf: int, start: int = 0, **sizes) -> list:
    """The chunks of an ``nbytes`` transfer through ``nbuf`` buffers, in order: consecutive,
    covering [0, nbytes) exactly, buffers taken in turn from ``start`` (the least recently
    used buffer of the previous transfer). ``sizes``: ``chunk_size``'s keyword arguments."""
    if nbytes < 0:
        raise ValueError(f"plan: nbytes must be >= 0, got {nbytes}")
    if nbuf <= 0:
        raise ValueError(f"plan: nbuf must be positive, got {nbuf}")
    if nbytes == 0:
        return []
    step = chunk_size(nbytes, **sizes)
    return [Chunk(off, min(step, nbytes - off), (start + i) % nbuf)
            for i, off in enumerate(range(0, nbytes, step))]


def upload(copier, dst: int, src: int, nbytes: int, buffers, start: int = 0, **sizes) -> int:
    """Host-to-device: ``nbytes`` from host address ``src`` to device address ``dst``.

    Per chunk: wait until the buffer's previous DMA has read it, CPU-copy the chunk in, queue
    its DMA and mark it. When this returns the source has been read completely (every CPU
    copy is done), so the caller may change it; the last DMAs may still be in flight from the
    pinned buffers (stream-ordered: later work on the stream sees the data). Returns the
    buffer the next transfer should start with."""
    chunks = plan(nbytes, len(buffers), start, **sizes)
    for c in chunks:
        copier.wait(c.buf)
        copier.host_copy(buffers[c.buf], src + c.offset, c.size)
        copier.dma(dst + c.offset, buffers[c.buf], c.size)
        copier.record(c.buf)
    return (start + len(chunks)) % len(buffers)


def download(copier, dst: int, src: int, nbytes: int, buffers, start: int = 0, **sizes) -> int:
    """Device-to-host: ``nbytes`` from device address ``src`` to host address ``dst``.

    The DMAs of the first ``len(buffers)`` chunks are queued at once; then, chunk by chunk,
    wait for its DMA, CPU-copy it out, and queue the DMA of the chunk that reuses the buffer.
    The CPU copy of one chunk runs while the DMAs of the next ones do; a fresh destination
    (``numpy.empty``) takes its first-touch page faults inside those CPU copies, so they
    overlap the DMAs too. Every byte is in ``dst`` when this returns. Returns the buffer the
    next transfer should start with."""
    chunks = plan(nbytes, len(buffers), start, **sizes)
    k = len(buffers)

    def issue(c):
        copier.wait(c.buf)            # a DMA of an earlier transfer may still read it
        copier.dma(buffers[c.buf], src + c.offset, c.size)
        copier.record(c.buf)

    for c in chunks[:k]:
        issue(c)
    for i, c in enumerate(chunks):
        copier.wait(c.buf)
        copier.host_copy(dst + c.offset, buffers[c.buf], c.size)
        if i + k < len(chunks):
            issue(chunks[i + k])
    return (start + len(chunks)) % k


def relay(copier, dst: int, src: int, nbytes: int, buffers, start: int = 0, **sizes) -> int:
    """Device-to-device through the pinned buffers, for two GPUs that cannot reach each
    other's memory: ``nbytes`` from device address ``src`` (the source device) to ``dst``
    (the destination device), queued on a stream of each device, with no host wait.

    The copier here has two streams (S on the source device, D on the destination one):

    * ``copier.claim(b)``: S waits until buffer ``b``'s last marked use has finished
      (a stream wait on its event, not a host wait);
    * ``copier.down(buf, src, n)``: a device-to-host DMA queued on S;
    * ``copier.handoff(b)``: D waits for the work queued so far on S;
    * ``copier.up(dst, buf, n)``: a host-to-device DMA queued on D;
    * ``copier.record(b)``: mark the work queued so far on D as buffer ``b``'s last use.

    Chunk by chunk, so the download of one chunk overlaps the upload of the one before.
    Returns the buffer the next transfer should start with."""
    chunks = plan(nbytes, len(buffers), start, **sizes)
    for c in chunks:
        copier.claim(c.buf)
        copier.down(buffers[c.buf], src + c.offset, c.size)
        copier.handoff(c.buf)
        copier.up(dst + c.offset, buffers[c.buf], c.size)
        copier.record(c.buf)
    return (start + len(chunks)) % len(buffers)
