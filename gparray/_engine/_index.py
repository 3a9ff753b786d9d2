"""Index engine ("index" family, gparray/_kernels/index.cu): the execution of GATHER,
SCATTER and MASK plans (gparray/_engine/_index_plan.py) on buffers and layouts.

Operands are layout objects (``_buf``, ``_offset``, ``_shape``, ``_strides``, ``_dtype``,
``_device``); the namespace layer (gparray/_array/_indexing.py) allocates outputs and builds Arrays.

Bounds: index values are checked on the device. An out-of-range index never addresses
memory (the gather writes 0, the scatter skips it); the kernel records the first one (axis,
value, size) in a per-device error word, and the host turns it into NumPy's
``IndexError: index 10 is out of bounds for axis 0 with size 5``. When the host reads the
word is ``GPARRAY_BOUNDS_CHECK`` (read at import; ``MODE``):

* ``deferred`` (default): at the next point where gparray synchronizes with that stream
  anyway (a device-to-host read: ``int(x)``, ``np.asarray(x)``, printing, the size of a
  mask or ``nonzero``; ``gparray.cuda.synchronize()``), so indexing itself never waits for
  the GPU;
* ``sync``: right after each gather or scatter (one synchronization per call, as NumPy
  raises at the call);
* ``off``: never (out-of-range indices are dropped silently: the gather writes 0).
"""
from __future__ import annotations

import atexit
import os

import numpy as np

from .._core import _backend, _device
from .. import _memory
from . import _shapes
from ._launch import BLOCK, bind, copy_span, index_type, launch, nd_template, run, strided_params

FAMILY = "index"
ITEMS = 4                       # GP_IX_ITEMS
TILE = BLOCK * ITEMS
CP_TILE = (BLOCK // 32) * 16 * 32   # GP_CP_TILE (== the search family's GP_NZ_TILE)
PAD_EXTENT = 1 << 62            # extent of a padding slot
MAX_ARRAYS = 8                  # index arrays one launch takes (K is padded to 1, 2, 4 or 8)


def _mode(value) -> str:
    v = (value or "deferred").strip().lower()
    if v in ("0", "off", "false", "no", "none"):
        return "off"
    if v in ("sync", "1", "true", "yes", "on"):
        return "sync"
    return "deferred"


MODE = _mode(os.environ.get("GPARRAY_BOUNDS_CHECK"))

_STORAGE = {1: "gp::uint8", 2: "gp::uint16", 4: "gp::uint32", 8: "gp::uint64", 16: "gp::ix::b16"}
_INDEX_TYPES = {np.dtype("int32"): "gp::int32", np.dtype("int64"): "gp::int64", np.dtype("uint64"): "gp::uint64"}
_ptr = np.uint64
_i64 = np.int64
_P0 = _ptr(0)


def index_ctype(dtype):
    """The kernel's index type for an index array of ``dtype``, or None when it must be
    converted first (to int32 for narrower integers, int64 for uint32)."""
    return _INDEX_TYPES.get(dtype)


def index_conversion(dtype):
    """The dtype an index array of ``dtype`` is converted to before a launch (None: none)."""
    if dtype in _INDEX_TYPES:
        return None
    return np.dtype("int64") if dtype.itemsize >= 4 else np.dtype("int32")


def padded_k(k: int) -> int:
    """The K template argument for ``k`` index arrays."""
    for p in (1, 2, 4, 8):
        if k <= p:
            return p
    raise IndexError(f"__getitem__: at most {MAX_ARRAYS} index arrays per key are supported, got {k}")


_geom_dtypes: dict = {}


def _geom_struct(exts, vstrides, axes, kp: int):
    """The IndexGeom<K> struct: K extents, K view strides, K axes (for the error record). A
    padding slot reads the first index array again, with view stride 0 and an extent no
    index value reaches, so it never reports (the first array's own slot checks its
    values)."""
    dt = _geom_dtypes.get(kp)
    if dt is None:
        dt = _geom_dtypes[kp] = np.dtype([("v", np.int64, (3 * kp,))])
    rec = np.zeros((), dt)
    v = rec["v"]
    k = len(exts)
    v[:k] = exts
    v[k:kp] = PAD_EXTENT
    v[kp:kp + k] = vstrides
    v[2 * kp:2 * kp + k] = axes
    v[2 * kp + k:] = -1
    return rec[()]


# ---------------------------------------------------------------------------- error word
_err_blocks: dict = {}   # device id -> Block of 4 uint64 (flag, axis, value, size), zeroed
atexit.register(lambda: _err_blocks.clear())  # back to the pool while CuPy is still there
_pending: dict = {}      # device id -> {stream address: True} of launches not checked yet


def _err_word(dev: int):
    blk = _err_blocks.get(dev)
    if blk is None:
        blk = _memory.alloc(32, dev)
        with _backend.on_device(dev):
            _backend.runtime().memsetAsync(blk.ptr, 0, 32, _backend.current_stream().ptr)
        # two threads' first gathers on dev: one word for both (launches keep its address,
        # and the loser's block goes back to the pool)
        blk = _err_blocks.setdefault(dev, blk)
    return blk


def _read_record(dev: int, stream_ptr: int):
    """(axis, value, size) of the recorded out-of-range index, or None; the record is reset.
    The read is queued on ``stream_ptr``, a stream of ``dev`` (it waits for that stream's
    earlier launches)."""
    blk = _err_blocks.get(dev)
    if blk is None:
        return None
    host = np.zeros(4, dtype=np.uint64)   # this call's own: threads reading other devices' words at once
    with _backend.on_device(dev):   # (handle 0 names the current device's legacy stream)
        # into pageable host memory: returns once the copy (and so the launches before it) is done
        with copy_span("memcpy DtoH", 32, dev, stream_ptr):
            _backend.runtime().memcpyAsync(host.ctypes.data, blk.ptr, 32, 2, stream_ptr)
        if not host[0]:
            return None
        rec = tuple(int(v) for v in host[1:].view(np.int64))
        _backend.runtime().memsetAsync(blk.ptr, 0, 32, stream_ptr)
    return rec


def _message(rec) -> str:
    axis, value, size = rec
    return f"index {value} is out of bounds for axis {axis} with size {size}"


def after_launch(dev: int, name: str) -> None:
    """What follows every gather/scatter launch: in ``sync`` mode the read of the error word
    (IndexError named after ``name``), in ``deferred`` mode a note that the current stream
    has a launch to check at its next synchronization."""
    if MODE == "deferred":
        _pending.setdefault(dev, {})[_backend.current_stream(dev).ptr] = True
    elif MODE == "sync":
        s = _backend.current_stream(dev).ptr
        p = _pending.get(dev)
        if p:
            p.pop(s, None)
        rec = _read_record(dev, s)
        if rec is not None:
            raise IndexError(f"{name}: {_message(rec)}")


def check_pending(dev: int, stream_ptr=None) -> None:
    """Called where gparray has just synchronized with stream ``stream_ptr`` of ``dev`` (None:
    with the whole device): if gather/scatter launches ran there since the last check, read
    the error word and raise the IndexError of the first out-of-range index they met."""
    p = _pending.get(dev)
    if not p:
        return
    if stream_ptr is None:
        p.clear()
        rec = _read_record(dev, _backend.current_stream(dev).ptr)
    elif p.pop(stream_ptr, None):   # (another thread synchronizing this stream may pop it first)
        rec = _read_record(dev, stream_ptr)
    else:
        return
    if rec is not None:
        raise IndexError(f"indexing: {_message(rec)} (met by an earlier gather or scatter on cuda:{dev}, "
                         "reported at this synchronization; GPARRAY_BOUNDS_CHECK=sync reports it at the call)")


# Device.synchronize and Stream.synchronize (foundation layer) run it after they wait
_device.sync_checks.append(check_pending)


# ---------------------------------------------------------------------------- gather / scatter
_launches: dict = {}
_LAUNCHES_MAX = 4096


def widen(shape, strides, vstrides, itemsize: int, align: int):
    """Move whole rows in wider elements: when the innermost (merged) dimension is contiguous
    in the source view and the dense side, is not indexed (index strides 0) and its length,
    the outer strides and the view strides of the indexed axes are multiples of f = w /
    itemsize, the launch moves elements of w bytes (w <= 16 and <= ``align``, the alignment
    of both addresses) over a shape whose last extent is divided by f (a row gather of 64
    float32 moves 16 b16 per row). Returns (shape, strides, vstrides, itemsize), unchanged
    when no width applies."""
    if not shape or strides[0][-1] != 1 or strides[1][-1] != 1 or any(st[-1] != 0 for st in strides[2:]):
        return shape, strides, vstrides, itemsize
    for w in (16, 8, 4, 2):
        if w <= itemsize or w > align:
            continue
        f = w // itemsize
        if shape[-1] % f or any(x % f for st in strides[:2] for x in st[:-1]) or any(v % f for v in vstrides):
            continue
        shape = tuple(shape[:-1]) + (shape[-1] // f,)
        strides = [tuple(x // f for x in st[:-1]) + (1,) for st in strides[:2]] + list(strides[2:])
        return shape, strides, [v // f for v in vstrides], w
    return shape, strides, vstrides, itemsize


def alignment(*ptrs) -> int:
    """The largest power of two (at most 16) dividing every address."""
    a = 16
    for p in ptrs:
        while p % a:
            a //= 2
    return a


def prepare(dense_strides, src_strides, index_strides, exts, vstrides, axes, shape, itemsize, it, scatter, dev,
            align: int = 1):
    """The launch of one gather (dense[i] = src[...]) or scatter (src[...] = dense[i]) over
    the C-order positions of non-empty ``shape``: a bound kernel, its constant tail and grid
    (memoized per layout). Element strides over ``shape``: ``dense_strides`` of the dense
    side (the gather's C-contiguous output, the scatter's broadcast value),
    ``src_strides`` of the indexed array's basic view (0 on the index dims),
    ``index_strides`` of each index array (of dtype ``it``, see ``index_ctype``); ``exts``
    and ``vstrides``: extent and view stride (elements) of the axis each array indexes,
    ``axes``: that axis' number in the indexed array (for the error message); ``align``: the
    alignment of the dense and source addresses (``alignment``)."""
    strides = [tuple(src_strides), tuple(dense_strides)] + [tuple(st) for st in index_strides]
    key = (tuple(shape), tuple(strides), tuple(exts), tuple(vstrides), tuple(axes), itemsize, it, scatter, dev, align)
    d = _launches.get(key)
    if d is None:
        kp = padded_k(len(index_strides))
        m_shape, m_strides = _shapes.merge_dims(shape, strides)
        m_shape, m_strides, vst, isz = widen(m_shape, list(m_strides), list(vstrides), itemsize, align)
        m_strides = list(m_strides) + [tuple(0 for _ in m_shape)] * (kp - len(index_strides))
        n = _shapes.prod(m_shape)
        nd = nd_template(len(m_shape))
        idx = index_type(n, [_shapes.span_elements(m_shape, st) for st in m_strides])
        expr = (f"gp_index_{'scatter' if scatter else 'gather'}<{_STORAGE[isz]}, {_INDEX_TYPES[it]}, {kp}, "
                f"{nd}, {idx}>")
        ix = np.int32 if idx == "int" else _i64
        err = _err_word(dev)
        proto = (_P0,) * 10 + (_geom_struct(exts, vst, axes, kp), strided_params(m_shape, m_strides, nd), ix(n),
                               _ptr(err.ptr))
        d = bind(FAMILY, expr, dev, proto, range(10)) + (-(-n // TILE),)
        if len(_launches) >= _LAUNCHES_MAX:
            _launches.clear()
        _launches[key] = d
    return d


def launch_prepared(d, dev: int, dense_ptr: int, src_ptr: int, ptrs, name: str) -> None:
    """Run launch ``d`` (``prepare``) with these addresses (``ptrs``: of the index arrays),
    then ``after_launch`` (the bounds check of ``MODE``)."""
    k, tail, grid = d
    if len(ptrs) < 8:
        ptrs = tuple(ptrs) + (ptrs[0],) * (8 - len(ptrs))
    run(k, dev, grid, (dense_ptr, src_ptr, *ptrs) + tail)
    after_launch(dev, name)


def index_copy(dense_ptr, dense_strides, src_ptr, src_strides, indices, shape, itemsize, dev, scatter, name):
    """``prepare`` + ``launch_prepared`` for ``indices`` = one (layout object, element strides
    over ``shape``, extent, view stride in elements, axis) per index array. Nothing happens
    for an empty ``shape``."""
    if _shapes.prod(shape) == 0:
        return
    d = prepare(dense_strides, src_strides, [t[1] for t in indices], [t[2] for t in indices],
                [t[3] for t in indices], [t[4] for t in indices], shape, itemsize, indices[0][0]._dtype, scatter,
                dev, alignment(dense_ptr, src_ptr))
    launch_prepared(d, dev, dense_ptr, src_ptr, [t[0]._buf.ptr + t[0]._offset for t in indices], name)


# ---------------------------------------------------------------------------- masks
def mask_tiles(n: int) -> int:
    """Number of mask tiles (the length of ``mask_count``'s buffers) for ``n`` elements."""
    return -(-n // CP_TILE)


def mask_count(mask, dev: int, counts_buf, incl_buf) -> int:
    """Per-tile counts of the True elements of boolean ``mask`` into ``counts_buf``, their
    inclusive scan into ``incl_buf`` (both C-contiguous int64 layouts of ``mask_tiles(n)``
    elements) and the total (one device read: it decides the output's shape)."""
    from ._scan import scan

    n = mask.size
    contig, m_shape, m_st, nd, idx = _mask_layout(mask)
    layout = strided_params(m_shape, [m_st], nd)
    ix = np.int32 if idx == "int" else _i64
    n_tiles = -(-n // CP_TILE)
    launch("search", f"gp_nonzero_count<bool, {'true' if contig else 'false'}, {nd}, {idx}>", dev, n_tiles,
           (_ptr(counts_buf._buf.ptr + counts_buf._offset), _ptr(mask._buf.ptr + mask._offset), layout, ix(n)))
    scan("sum", counts_buf, 0, incl_buf)
    return read_total(dev, incl_buf._buf.ptr + incl_buf._offset + (n_tiles - 1) * 8)


def read_total(dev: int, addr: int) -> int:
    """The int64 at device address ``addr`` (the last element of an inclusive scan of counts),
    read back on ``dev``'s current stream, the one that ran the counts and the scan, which it
    synchronizes (then the deferred bounds check of that stream runs: ``check_pending``)."""
    host = np.zeros(1, dtype=np.int64)
    with _backend.on_device(dev):
        s = _backend.current_stream()
        with copy_span("memcpy DtoH", 8, dev, s.ptr):
            _backend.runtime().memcpyAsync(host.ctypes.data, addr, 8, 2, s.ptr)
        s.synchronize()
        check_pending(dev, s.ptr)
    return int(host[0])


def _mask_layout(mask):
    isz = mask._dtype.itemsize
    est = tuple(s // isz for s in mask._strides)
    m_shape, (m_st,) = _shapes.merge_dims(mask._shape, [est])
    contig = len(m_shape) == 1 and m_st[0] == 1
    n = _shapes.prod(mask._shape)
    idx = index_type(n, [_shapes.span_elements(mask._shape, est)])
    return contig, m_shape, m_st, nd_template(len(m_shape)), idx


def mask_compact(out_ptr: int, x, mask, incl, dev: int) -> None:
    """out[p] = x[e] for the p-th True element e of ``mask`` (C order; mask and x of one
    shape, any layouts), positions from ``incl`` (``mask_count``)."""
    n = mask.size
    mis = mask._dtype.itemsize
    xis = x._dtype.itemsize
    mst = tuple(s // mis for s in mask._strides)
    xst = tuple(s // xis for s in x._strides)
    m_shape, (a, b) = _shapes.merge_dims(mask._shape, [mst, xst])
    contig = len(m_shape) == 1 and a == (1,) and b == (1,)
    nd = nd_template(len(m_shape))
    idx = index_type(n, [_shapes.span_elements(m_shape, a), _shapes.span_elements(m_shape, b)])
    ix = np.int32 if idx == "int" else _i64
    prm = strided_params(m_shape, [a, b], nd)
    expr = f"gp_index_compact<{_STORAGE[xis]}, {'true' if contig else 'false'}, {nd}, {idx}>"
    launch(FAMILY, expr, dev, -(-n // CP_TILE),
           (_ptr(out_ptr), _ptr(incl._buf.ptr + incl._offset), _ptr(mask._buf.ptr + mask._offset),
            _ptr(x._buf.ptr + x._offset), prm, ix(n)))


def instances() -> list[str]:
    """Registered "index" instances: gather and scatter of every element size with int64 and
    int32 indices, one and two index arrays, ND=4, both index widths; compaction of every
    element size (contiguous and strided)."""
    out = []
    for s in _STORAGE.values():
        for it in ("gp::int64", "gp::int32"):
            for k in (1, 2):
                for idx in ("int", "long long"):
                    out += [f"gp_index_gather<{s}, {it}, {k}, 4, {idx}>", f"gp_index_scatter<{s}, {it}, {k}, 4, {idx}>"]
        out += [f"gp_index_compact<{s}, true, 4, int>", f"gp_index_compact<{s}, false, 4, int>"]
    return out
