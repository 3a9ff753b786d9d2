"""The caching pool's data structures (pure Python; Block in C when the extension is built).

:class:`Block` is the public handle of an allocation; ``_Segment`` (one raw device
allocation), ``_Chunk`` (a piece of a segment, in its doubly linked list) and ``_Arena`` (the
free chunks of one (stream, kind)) are the pool's internal nodes. The C extension
(``gparray/_native/_claunch_block.c``) reads these attribute names: a Block's ``_chunk`` and
``_pool``, a chunk's ``ptr``, ``size`` and ``arena``, an arena's ``stream``. Also here: the
size classes and the chunk states.
"""
from __future__ import annotations


from .._native import claunch

__all__ = ["Block", "PyBlock", "ROUND", "SMALL_REQUEST", "SMALL_SEGMENT", "LARGE_ROUND"]

ROUND = 512                    # every block size is a multiple of this
SMALL_REQUEST = 1 << 20        # requests up to this size are "small"
SMALL_SEGMENT = 2 << 20        # small requests are carved from segments of this size
LARGE_ROUND = 2 << 20          # large segments are rounded up to a multiple of this

# Block states (ints: cheap to compare on the fast path).
_FREE, _ALLOC, _PENDING, _DEAD = 0, 1, 2, 3
_STATE_NAMES = {_FREE: "free", _ALLOC: "allocated", _PENDING: "pending"}


class Block:
    """A piece of device memory handed out by a pool.

    Attributes: ``ptr`` (device address, 0 for an empty block), ``size`` (bytes reserved for
    it: the request rounded up to 512), ``nbytes`` (bytes requested), ``device_id`` and
    ``stream`` (the stream it was allocated on). The memory goes back to its pool when the
    Block is garbage collected or on :meth:`free` (idempotent). Using ``ptr`` after that is a
    use-after-free: the pool may hand the memory out again.
    """

    __slots__ = ("ptr", "size", "nbytes", "device_id", "stream", "_chunk", "_pool")

    def free(self) -> None:
        """Give the memory back to the pool now (later calls do nothing)."""
        c = self._chunk
        if c is not None:
            self._chunk = None
            self._pool._release(c, self.nbytes)

    __del__ = free

    @property
    def freed(self) -> bool:
        """True once the block has been given back (always False for an empty block)."""
        return self._chunk is None and self.ptr != 0

    def __repr__(self):
        state = "freed" if self.freed else "live"
        return (f"<gparray Block ptr=0x{self.ptr:x} size={self.size} nbytes={self.nbytes} "
                f"device={self.device_id} stream={self.stream} {state}>")


def _py_block(ptr, size, nbytes, device_id, stream, chunk, pool) -> Block:
    b = _new_block(PyBlock)
    b.ptr = ptr
    b.size = size
    b.nbytes = nbytes
    b.device_id = device_id
    b.stream = stream
    b._chunk = chunk
    b._pool = pool
    return b


_new_block = Block.__new__
PyBlock = Block
# the same Block in C when the extension is built: one constructor call instead of seven
# attribute stores, and no Python frame when it is freed
Block = claunch.Block if claunch is not None else PyBlock
_make_block = Block if Block is not PyBlock else _py_block


def _empty_block(nbytes: int, device_id: int, stream) -> Block:
    """A Block that owns nothing (ptr 0), for zero-byte requests."""
    return _make_block(0, 0, nbytes, device_id, stream, None, None)


class _Segment:
    """One raw device allocation; its blocks form a doubly linked list from ``head``."""

    __slots__ = ("ptr", "size", "small", "stream", "arena", "head", "dirty")

    def __init__(self, ptr, size, small, stream, arena):
        self.ptr = ptr
        self.size = size
        self.small = small
        self.stream = stream      # owner stream; None while idle
        self.arena = arena        # owning _Arena; None while pending or idle
        self.head = None
        self.dirty = False        # True iff listed in arena.dirty (may have mergeable blocks)


class _Chunk:
    """A block inside a segment (internal node; the public handle is Block)."""

    __slots__ = ("ptr", "size", "seg", "prev", "next", "state", "arena")

    def __init__(self, ptr, size, seg, prev, nxt, state, arena):
        self.ptr = ptr
        self.size = size
        self.seg = seg
        self.prev = prev
        self.next = nxt
        self.state = state
        self.arena = arena


class _Arena:
    """Free blocks of one (stream, kind): exact-size bins plus the sorted bin sizes."""

    __slots__ = ("stream", "small", "bins", "sizes", "dirty", "retired")

    def __init__(self, stream, small):
        self.stream = stream
        self.small = small
        self.bins = {}     # size -> list of free _Chunk (may be empty; pruned lazily)
        self.sizes = []    # sorted keys of bins
        self.dirty = []    # segments with frees since their last coalescing
        self.retired = None  # a retired stream's arena: its _retire.Retired record


class _Retirement:
    """A retirement queued on the deferred list (``retire_stream`` found the lock taken);
    ``keep`` (the stream object) stays alive until the pool applies it."""

    __slots__ = ("stream", "event", "keep")

    def __init__(self, stream, event, keep):
        self.stream = stream
        self.event = event
        self.keep = keep
