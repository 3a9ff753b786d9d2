"""Scan engine: cumulative sums/products along one axis ("scan" family, gparray/_kernels/scan.cu).

The input is seen as lines (one per index of the other axes; those axes merged, with the
output's and the input's strides) of L elements. ``plan`` (pure Python, CPU-tested) picks

* ``lines``: one thread per line, sequential; when there are enough lines to fill the GPU
  and they are short, or strided along the axis (then neighbouring threads read
  neighbouring memory, e.g. an axis-0 scan of a C-contiguous matrix);
* ``lookback``: single-pass decoupled look-back over tiles of THREADS * VECS * V elements
  (V = 16 bytes of the wider type, at most 4: 8192 float32, 4096 float64), tiles of one line
  chained through the workspace; ``contig`` lines (stride 1 in and out) use vector loads and
  stores.

Look-back workspace (``workspace_layout``, protocol in gp/scan.cuh): per tile one 16-byte
descriptor {status, value} for accumulators of at most 8 bytes, or a 48-byte record {status,
unused, aggregate, inclusive} for 16-byte (complex) accumulators. Workspaces are persistent:
one per (device, stream, layout) (``_workspaces``, at most ``WS_MAX`` entries, the oldest
dropped first), grown when a launch needs more tiles and zeroed once, when allocated; one
layout per workspace, so a status word is never read from bytes that held a value. Each
launch passes a new epoch (``_epochs``, process-wide, from 1); the kernel treats status words
of any other epoch as "not ready", so nothing is cleared between launches.

Why sharing is safe: launches on one stream run in stream order, so they never touch one
workspace at the same time (the handle of the per-thread default stream names a different
stream in every host thread, so that key also carries the thread). Two host threads on one
stream may enqueue in either order, but epochs are unique and compared for equality only.
A launch holds a reference to its Block until it is enqueued; a replaced (grown) or
dropped workspace goes back to the stream-ordered pool, so later reuse of that memory on the
stream runs after every kernel that used it, and reuse on another stream waits for an event.
"""
from __future__ import annotations

import functools
import itertools
import threading
from typing import NamedTuple

import numpy as np

from .._core import _backend
from . import _shapes
from ._launch import BLOCK, bind, copy_span, index_type, nd_template, run, strided_params
from ._reduce import reducer, sm_count

FAMILY = "scan"
THREADS = 256              # threads per look-back block (GP_SCAN_THREADS in gp/scan.cuh)
WARPS = THREADS // 32
VECS = 8                   # 16-byte vectors per thread per tile (GP_SCAN_VECS)
PREFETCH = None            # one-line contiguous look-back: a block asks L2 for the tile
                           # PREFETCH - 1 tiles ahead of its own (0: off; 1: its own, at entry;
                           # None: one tile per SM ahead, the best of 0, 1, 2, 8, 132, 396 on the
                           # H200: 3.5 TB/s against 3.1 without)
WS_MIN = 65536             # bytes: the smallest look-back workspace allocated
WS_MAX = 16                # persistent workspaces kept (device, stream, layout)
LINES_PER_SM = 256         # thread-per-line needs at least this many lines per SM ...
LINES_MAX_L = 256          # ... and lines this short (or strided along the axis)
DEFAULT_SMS = 132

_ptr = np.uint64
_i32 = np.int32
_i64 = np.int64
_u64 = np.uint64


class ScanPlan(NamedTuple):
    """How one scan runs (element strides, other axes merged)."""

    strategy: str     # "lookback" | "lines"
    contig: bool      # lookback: stride 1 along the axis in and out
    lines: tuple      # (shape, [out strides, in strides]) of the other axes
    n_lines: int
    L: int            # input elements per line
    s_in: int
    s_out: int
    tile: int         # lookback: elements per tile
    tiles_per_line: int
    grid: int
    nd: int
    idx: str


def scan_vec(in_itemsize: int, out_itemsize: int) -> int:
    """Elements per vector access in the look-back kernel (mirrors gp::scan::vec)."""
    w = max(in_itemsize, out_itemsize)
    return min(1 if w >= 16 else 16 // w, 4)


def tile_size(in_itemsize: int, out_itemsize: int) -> int:
    """Elements per look-back tile (mirrors gp::scan::shape::TILE)."""
    return THREADS * VECS * scan_vec(in_itemsize, out_itemsize)


def workspace_layout(n_tiles: int, acc_itemsize: int) -> tuple[bool, int]:
    """(packed, bytes) of the look-back workspace for ``n_tiles`` tiles and accumulators of
    ``acc_itemsize`` bytes (mirrors gp::scan::tile_state): packed 16-byte descriptors, or
    48-byte records for 16-byte accumulators."""
    if acc_itemsize <= 8:
        return True, 16 * n_tiles
    return False, 48 * n_tiles


@functools.lru_cache(maxsize=4096)
def plan(shape: tuple, strides: tuple, axis: int, in_itemsize: int, out_itemsize: int,
         initial: bool = False, sms: int = DEFAULT_SMS) -> ScanPlan:
    """Strategy for a scan of an array of ``shape``/element ``strides`` along ``axis`` into
    a new C-contiguous output (``initial``: one more element per line, the identity)."""
    L = shape[axis]
    out_shape = shape[:axis] + (L + int(initial),) + shape[axis + 1:]
    out_st = _shapes.c_strides(out_shape)
    others = [i for i in range(len(shape)) if i != axis]
    l_shape, l_st = _shapes.merge_dims(tuple(shape[i] for i in others),
                                       [tuple(out_st[i] for i in others), tuple(strides[i] for i in others)])
    n_lines = _shapes.prod(l_shape)
    s_in, s_out = strides[axis], out_st[axis]
    nd = nd_template(len(l_shape))
    spans = [_shapes.span_elements(shape, strides), (0, _shapes.prod(out_shape))]
    many = n_lines >= LINES_PER_SM * sms
    if L == 0 or (many and (L <= LINES_MAX_L or s_in != 1)):
        idx = index_type(_shapes.prod(out_shape) + n_lines, spans)
        return ScanPlan("lines", False, (l_shape, l_st), n_lines, L, s_in, s_out, 0, 0,
                        -(-n_lines // BLOCK), nd, idx)
    tile = tile_size(in_itemsize, out_itemsize)
    tpl = -(-L // tile)
    idx = index_type(max(n_lines * tpl * tile, _shapes.prod(out_shape)) + n_lines, spans)
    return ScanPlan("lookback", s_in == 1 and s_out == 1, (l_shape, l_st), n_lines, L, s_in, s_out,
                    tile, tpl, n_lines * tpl, nd, idx)


def _memset0(ptr: int, nbytes: int, device_id: int) -> None:
    with _backend.on_device(device_id):
        s = _backend.current_stream().ptr
        with copy_span("memset", nbytes, device_id, s):
            _backend.runtime().memsetAsync(ptr, 0, nbytes, s)


def _stream_ptr(device_id: int) -> int:
    """The handle of the current stream of ``device_id`` (the one ``launch`` uses)."""
    return _backend.current_stream(device_id).ptr


_PER_THREAD = 2            # cudaStreamPerThread: a different stream in every host thread

_epochs = itertools.count(1)  # launch epochs: unique, never 0 (0 = a zeroed workspace); < 2**62
_workspaces: dict = {}        # (device, stream, packed[, thread token]) -> (nbytes, Block)
_ws_lock = threading.Lock()
_tls = threading.local()      # .token: this thread's key part for the per-thread stream


def _thread_token():
    t = getattr(_tls, "token", None)
    if t is None:
        t = _tls.token = object()  # kept alive by its keys: never reused by a later thread
    return t


def _workspace(dev: int, packed: bool, nbytes: int):
    """The persistent look-back workspace of ``dev``'s current stream for the ``packed``
    layout, at least ``nbytes`` long: an allocated, once-zeroed Block (the caller keeps the
    reference until its launch is enqueued)."""
    s = _stream_ptr(dev)
    key = (dev, s, packed) if s != _PER_THREAD else (dev, s, packed, _thread_token())
    e = _workspaces.get(key)
    if e is not None and e[0] >= nbytes:
        return e[1]
    from .._memory import alloc

    with _ws_lock:
        e = _workspaces.get(key)
        if e is not None and e[0] >= nbytes:
            return e[1]
        size = max(nbytes, WS_MIN, 2 * e[0] if e is not None else 0)
        ws = alloc(size, dev, s)
        _memset0(ws.ptr, size, dev)       # on this stream, before any launch that uses it
        _workspaces.pop(key, None)         # the old Block (if any) goes back to the pool
        while len(_workspaces) >= WS_MAX:
            _workspaces.pop(next(iter(_workspaces)))
        _workspaces[key] = (size, ws)
        return ws


def release_workspaces() -> None:
    """Drop every persistent look-back workspace (they go back to the pool, stream-ordered)."""
    with _ws_lock:
        _workspaces.clear()


_launches: dict = {}  # (op, dtypes, layout, axis, initial, device) -> (kernel, tails, plan, workspace)
_LAUNCHES_MAX = 4096
_P0 = _ptr(0)


def prefetch_distance(dev: int) -> int:
    """The look-back kernel's ``prefetch`` argument (see PREFETCH)."""
    return sm_count(dev) if PREFETCH is None else PREFETCH


def _prepare(op, x, axis, out_dtype, initial, dev):
    """(bound kernel, its constant tails, plan, (packed, workspace bytes) or None)."""
    isz = x._dtype.itemsize
    est = tuple(s // isz for s in x._strides)
    p = plan(x._shape, est, axis, isz, out_dtype.itemsize, bool(initial), sm_count(dev))
    rd = reducer(op, x._dtype, out_dtype)
    prm = strided_params(p.lines[0], p.lines[1], p.nd)
    ix = _i32 if p.idx == "int" else _i64
    if p.strategy == "lines":
        args = (_P0, _P0, prm, ix(p.n_lines), ix(p.L), ix(p.s_in), ix(p.s_out), _i32(int(initial)))
        return bind(FAMILY, f"gp_scan_lines<{rd}, {p.nd}, {p.idx}>", dev, args, (0, 1)) + (p, None)
    acc = 16 if out_dtype.kind == "c" else 8
    expr = f"gp_scan_lookback<{rd}, {'true' if p.contig else 'false'}, {p.nd}, {p.idx}>"
    args = (_P0, _P0, prm, ix(p.L), ix(p.s_in), ix(p.s_out), _i32(int(initial)), _i64(p.tiles_per_line),
            _i32(prefetch_distance(dev) if p.contig else 0), _P0, _u64(0))
    return bind(FAMILY, expr, dev, args, (0, 1, 9, 10)) + (p, workspace_layout(p.grid, acc))


def scan(op: str, x, axis: int, out, initial: bool = False) -> None:
    """out (new, C-contiguous) = cumulative ``op`` ("sum" | "prod") of ``x`` along ``axis``;
    ``initial``: out has one more element along ``axis``, starting with the identity. The
    launch description is memoized per (op, dtypes, layout, axis, initial, device); the
    look-back takes the stream's persistent workspace and a new epoch."""
    if out.size == 0:
        return
    dev = x._device._id
    key = (op, x._dtype, out._dtype, x._shape, x._strides, axis, bool(initial), dev, PREFETCH)
    d = _launches.get(key)
    if d is None:
        d = _prepare(op, x, axis, out._dtype, initial, dev)
        if len(_launches) >= _LAUNCHES_MAX:
            _launches.clear()
        _launches[key] = d
    k, tails, p, wsl = d
    ptrs = (out._buf.ptr + out._offset, x._buf.ptr + x._offset)
    if wsl is None:
        run(k, dev, p.grid, ptrs + tails)
        return
    ws = _workspace(dev, wsl[0], wsl[1])
    run(k, dev, p.grid, ptrs + tails + (ws.ptr, next(_epochs)), block=THREADS)


def instances() -> list[str]:
    """Registered "scan" instances: cumulative_sum/prod of every dtype (float16 included)
    with its default result dtype, look-back (contig and strided) and thread-per-line, ND=4,
    32-bit index."""
    from .._core import _dtypes as _dt
    from ._reduce import sum_dtype

    out = []
    for dt in _dt._supported_dtypes:
        for op in ("sum", "prod"):
            rd = reducer(op, dt, sum_dtype(dt))
            out += [f"gp_scan_lookback<{rd}, true, 4, int>", f"gp_scan_lookback<{rd}, false, 4, int>",
                    f"gp_scan_lines<{rd}, 4, int>"]
    return out
