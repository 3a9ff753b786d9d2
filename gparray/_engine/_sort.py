"""Sort engine ("sort" family, gparray/_kernels/sort.cu): stable LSD radix sorts of keys and
of (key, index) pairs along one axis, on buffers and layouts.

The array is seen as ``rows`` lines of ``L`` elements (the other axes merged). ``plan``
(pure Python, CPU-tested) picks

* ``warp`` (L <= 32): P lanes per row (the power of two >= L), a bitonic network on
  (radix key, index) in registers; rows read and written through their strides;
* ``block`` (L <= 4096): one row per block, ranked in shared memory one 8-bit digit at a
  time (the smallest of the BLOCK_SHAPES that holds the row); rows read and written
  through their strides (more than 4 merged dimensions: one copy of x first);
* ``onesweep`` (longer rows): the device-wide sort. One histogram pass counts every digit
  (key digits, then the digits of the row id when rows > 1: the rows are folded into the
  key as its most significant digits, read from the carried element index), one block
  computes the bucket offsets and the route (a digit that is constant over all N keys is
  a skipped pass: decided on the device, no host synchronization), then one onesweep launch
  per digit. It needs the (rows, L) view contiguous: a non-contiguous x is first copied
  into a pool buffer (axis last), and a result whose axis is not last is written to a
  buffer and copied into ``out``.

Keys keep their exact bits; only digits come from the radix key (gp/sort.cuh: sign flip for
signed integers, the float bit trick with every NaN last and -0.0 equal to 0.0, all bits
inverted for ``descending``), so equal elements keep their input order in both directions.

Temporary memory (from the pool, on the current stream, allocated before the first launch,
so an OutOfMemoryError leaves nothing half done; released on return): onesweep sort of one
row: one key buffer (N keys); of several rows: a key buffer and two index buffers; argsort:
two key buffers and one index buffer (fewer when there are fewer passes), plus the copies
named above and a workspace of 2 * 256 status words per tile and the histograms.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _memory
from . import _shapes
from ._launch import launch, strided_params

FAMILY = "sort"
THREADS = 256                      # GP_SORT_THREADS (histogram and prepare blocks: one per bucket)
OS_THREADS = THREADS               # GP_SORT_OS_THREADS (onesweep blocks: THREADS or more)
ITEMS = 16                         # GP_SORT_ITEMS
WIDE_THREADS = 384                 # GP_SORT_WIDE_THREADS (keys-only onesweeps of 4-byte keys)
WIDE_ITEMS = 18                    # GP_SORT_WIDE_ITEMS
K8_THREADS = 384                   # GP_SORT_K8_THREADS (keys-only onesweeps of 8-byte keys)
K8_ITEMS = 11                      # GP_SORT_K8_ITEMS
WIDE_PAIRS = True                  # GP_SORT_WIDE_PAIRS (pairs with 32-bit values take the wide tile too)
VALUE32_LIMIT = 1 << 32            # device-wide sorts of fewer elements carry 32-bit values between passes
BITS = 8                           # GP_SORT_BITS
RADIX = 1 << BITS                  # GP_SORT_RADIX
MAX_PASSES = 16                    # GP_SORT_MAX_PASSES
ROUTE_INTS = 8                     # GP_SORT_ROUTE
WARP_MAX = 32                      # rows this long or shorter: gp_sort_warp
BLOCK_SHAPES = ((64, 4), (128, 8), (256, 16))   # gp_sort_block (threads, items): rows up to threads * items
BLOCK_MAX = BLOCK_SHAPES[-1][0] * BLOCK_SHAPES[-1][1]
WARP_BLOCK = 256                   # threads per gp_sort_warp block
WORD32_LIMIT = 1 << 30             # look-back status words of 32 bits hold counts below this
HIST_BLOCKS_PER_SM = 4
DEFAULT_SMS = 132

KIND_UNSIGNED, KIND_SIGNED, KIND_FLOAT = 0, 1, 2
BUF_IN, BUF_OUT, BUF_T0, BUF_T1, BUF_NONE = 0, 1, 2, 3, 4
KEYS_FINAL, KEYS_DROP = 0, 1
VALS_NONE, VALS_FINAL, VALS_CARRY = 0, 1, 2

STORAGE = {1: "gp::uint8", 2: "gp::uint16", 4: "gp::uint32", 8: "gp::uint64"}
_WORD = {4: "unsigned int", 8: "unsigned long long"}
_VALUE = {4: "unsigned int", 8: "long long"}   # values between onesweep passes (V)

_ptr = np.uint64
_i32 = np.int32
_i64 = np.int64
_u64 = np.uint64


def key_kind(dtype) -> int:
    """The radix-key mapping of ``dtype`` (gp::sort::KIND_*); ValueError for other kinds."""
    k = np.dtype(dtype).kind
    if k in "bu":
        return KIND_UNSIGNED
    if k == "i":
        return KIND_SIGNED
    if k == "f":
        return KIND_FLOAT
    raise ValueError(f"sort: no radix key for dtype {dtype}")


class SortPlan(NamedTuple):
    """How one sort along an axis runs (element strides; the other axes merged)."""

    strategy: str        # "warp" | "block" | "onesweep"
    rows: int
    L: int
    lines: tuple         # warp/block: (shape, [out strides, in strides]) of the other axes
    s_in: int            # warp/block: element stride of x along the axis
    s_out: int           # warp/block: element stride of the output along the axis
    threads: int         # block, onesweep: threads per block; warp: lanes per row (P)
    items: int           # block, onesweep: items per thread
    grid: int            # warp/block: blocks; onesweep: tiles (blocks per pass)
    copy_in: bool        # x is first copied into a C-contiguous buffer (onesweep: axis last)
    copy_out: bool       # onesweep: the result is copied from a (rows, L) buffer into out
    key_passes: int      # digits of the key
    row_passes: int      # onesweep: digits of the row id
    word: int            # onesweep: bytes per look-back status word
    hist_grid: int       # onesweep: blocks of the histogram pass
    workspace: int       # onesweep: bytes of the histogram/offsets/route/look-back block
    vbytes: int = 4      # onesweep: bytes per value between passes (8 when an index needs 2^32 or more)


def _row_passes(rows: int) -> int:
    return 0 if rows <= 1 else -(-(rows - 1).bit_length() // BITS)


def workspace_layout(passes: int, tiles: int, word: int) -> dict:
    """Byte offsets of the onesweep workspace: histograms (passes x 256 uint64, zeroed by the
    host), offsets (passes x 256 int64), route (16 x 8 int32), two look-back regions of
    tiles x 256 status words; "end" is the size."""
    hist = 0
    offs = passes * RADIX * 8
    route = 2 * passes * RADIX * 8
    look = -(-(route + MAX_PASSES * ROUTE_INTS * 4) // 256) * 256
    return {"hist": hist, "offs": offs, "route": route, "look": look, "end": look + 2 * tiles * RADIX * word}


def _perm_last(seq, axis):
    return tuple(seq[:axis]) + tuple(seq[axis + 1:]) + (seq[axis],)


def onesweep_shape(itemsize: int, pairs: bool, vbytes: int = 4) -> tuple:
    """(threads, keys per thread) of a onesweep tile (gp_sort_onesweep's onesweep_shape):
    4-byte keys alone or (WIDE_PAIRS) with 32-bit values take the wide tile, the others
    8-byte keys alone K8_THREADS x K8_ITEMS, the others OS_THREADS x ITEMS."""
    if itemsize == 4 and (not pairs or (WIDE_PAIRS and vbytes == 4)):
        return WIDE_THREADS, WIDE_ITEMS
    if itemsize == 8 and not pairs:
        return K8_THREADS, K8_ITEMS
    return OS_THREADS, ITEMS


def plan(shape: tuple, strides: tuple, axis: int, itemsize: int, sms: int = DEFAULT_SMS,
         argsort: bool = False) -> SortPlan:
    """Strategy for a sort of an array of ``shape``/element ``strides`` (elements of
    ``itemsize`` bytes) along ``axis`` (non-negative) into a new C-contiguous output;
    ``argsort``: indices are an output (a onesweep then sorts (key, index) pairs, as it
    does for several rows)."""
    L = shape[axis]
    rows = _shapes.prod(shape) // L if L else 0
    out_st = _shapes.c_strides(shape)
    kp = itemsize
    if L <= BLOCK_MAX:
        others = [i for i in range(len(shape)) if i != axis]
        o_shape = tuple(shape[i] for i in others)
        o_out = tuple(out_st[i] for i in others)
        l_shape, l_st = _shapes.merge_dims(o_shape, [o_out, tuple(strides[i] for i in others)])
        copy_in = len(l_shape) > 4
        s_in = strides[axis]
        if copy_in:  # x copied to a C-contiguous buffer first: its lines merge like out's
            l_shape, l_st = _shapes.merge_dims(o_shape, [o_out, o_out])
            s_in = out_st[axis]
        if L <= WARP_MAX:
            p = 1 << max(L - 1, 0).bit_length()
            grid = -(-rows * p // WARP_BLOCK)
            return SortPlan("warp", rows, L, (l_shape, l_st), s_in, out_st[axis], p, 1, grid, copy_in, False,
                            kp, 0, 0, 0, 0)
        t, k = next((t, k) for t, k in BLOCK_SHAPES if t * k >= L)
        return SortPlan("block", rows, L, (l_shape, l_st), s_in, out_st[axis], t, k, rows, copy_in, False,
                        kp, 0, 0, 0, 0)
    n = rows * L
    copy_in = not _shapes.is_c_contiguous(_perm_last(shape, axis), _perm_last(strides, axis), 1)
    copy_out = not _shapes.is_c_contiguous(_perm_last(shape, axis), _perm_last(out_st, axis), 1)
    rp = _row_passes(rows)
    vbytes = 4 if n < VALUE32_LIMIT else 8
    threads, items = onesweep_shape(kp, argsort or rows > 1, vbytes)
    tiles = -(-n // (threads * items))
    word = 4 if n < WORD32_LIMIT else 8
    ws = workspace_layout(kp + rp, tiles, word)["end"]
    hist_grid = max(1, min(tiles, HIST_BLOCKS_PER_SM * sms))
    return SortPlan("onesweep", rows, L, ((), []), 1, 1, threads, items, tiles, copy_in, copy_out, kp, rp, word,
                    hist_grid, ws, vbytes)


def modes(rows: int, argsort: bool, keys: bool = False) -> tuple:
    """(keys mode, values mode) of a device-wide sort (gp::sort::route_build); ``keys``
    with ``argsort``: the sorted keys are written out too."""
    if argsort:
        return (KEYS_FINAL if keys else KEYS_DROP), VALS_FINAL
    return KEYS_FINAL, (VALS_CARRY if rows > 1 else VALS_NONE)


def temporaries(p: SortPlan, itemsize: int, argsort: bool, keys: bool = False) -> dict:
    """Bytes of every temporary buffer of a onesweep plan, by name: "copy_in" (x as a
    (rows, L) C-contiguous buffer), "out" (the result before its copy into out), key
    buffers "k0"/"k1", index buffers "v0"/"v1", "ws" (workspace). ``keys`` with
    ``argsort``: both the indices and the sorted keys are outputs (no "out": the plan
    must not copy out)."""
    n = p.rows * p.L
    P = p.key_passes + p.row_passes
    kmode, vmode = modes(p.rows, argsort, keys)
    t = {}
    if p.copy_in:
        t["copy_in"] = n * itemsize
    if p.copy_out:
        t["out"] = n * (8 if argsort else itemsize)
    if P >= 2:
        t["k0"] = n * itemsize
    if P >= 3 and kmode == KEYS_DROP:
        t["k1"] = n * itemsize
    if vmode != VALS_NONE and P >= 2:
        t["v0"] = n * p.vbytes
    if vmode == VALS_CARRY and P >= 3:
        t["v1"] = n * p.vbytes
    t["ws"] = p.workspace
    return t


def _sm_count(dev: int) -> int:
    from ._reduce import sm_count

    return sm_count(dev)


def _layout(block, shape, dtype, device, strides=None, offset=0):
    return _shapes.Layout(block, tuple(shape), np.dtype(dtype), device, offset, strides)


def _est(x) -> tuple:
    isz = x._dtype.itemsize
    return tuple(s // isz for s in x._strides)


def sort(x, axis: int, out=None, out_index=None, descending: bool = False) -> None:
    """Stable sort of layout ``x`` along ``axis`` (non-negative): the sorted values into
    ``out`` (sort) or their indices along the axis into ``out_index`` (argsort; int64), or
    both when both are given; outputs are C-contiguous of x's shape. Descending: equal elements keep their order,
    NaNs come first."""
    argsort = out_index is not None
    n = x.size
    if n == 0:
        return
    dev = x._device._id
    isz = x._dtype.itemsize
    kind = key_kind(x._dtype)
    flip = _u64((1 << (8 * isz)) - 1 if descending else 0)
    p = plan(x._shape, _est(x), axis, isz, _sm_count(dev), argsort)
    if argsort and out is not None:  # both outputs
        if p.strategy == "onesweep" and not p.copy_out:  # one pairs sort writes both
            src = _copy_in(x, axis, True) if p.copy_in else x
            _onesweep(p, src, out_index, x, axis, True, kind, flip, dev, keys_out=out)
            return
        sort(x, axis, out, None, descending)  # row sorts: one sort each
        sort(x, axis, None, out_index, descending)
        return
    t = STORAGE[isz]
    dst = out_index if argsort else out
    src = x
    if p.copy_in:  # one strided copy into a C-contiguous buffer (onesweep: the axis last)
        src = _copy_in(x, axis, p.strategy == "onesweep")
    if p.strategy != "onesweep":
        kptr = 0 if argsort else out._ptr
        iptr = out_index._ptr if argsort else 0
        prm = strided_params(p.lines[0], p.lines[1], 4)
        arg = "true" if argsort else "false"
        if p.strategy == "warp":
            launch(FAMILY, f"gp_sort_warp<{t}, {arg}>", dev, p.grid,
                   (_ptr(kptr), _ptr(iptr), _ptr(src._ptr), prm, _i64(p.rows), _i64(p.L), _i64(p.s_in),
                    _i64(p.s_out), _i32(p.threads), _i32(kind), flip), block=WARP_BLOCK)
        else:
            launch(FAMILY, f"gp_sort_block<{t}, {arg}, {p.threads}, {p.items}>", dev, p.grid,
                   (_ptr(kptr), _ptr(iptr), _ptr(src._ptr), prm, _i64(p.L), _i64(p.s_in), _i64(p.s_out),
                    _i32(kind), flip), block=p.threads)
        return
    _onesweep(p, src, dst, x, axis, argsort, kind, flip, dev)


def _copy_in(x, axis: int, axis_last: bool):
    from ._elementwise import copy_into

    shape = _perm_last(x._shape, axis) if axis_last else x._shape
    strides = _perm_last(x._strides, axis) if axis_last else x._strides
    buf = _layout(_memory.alloc(x.size * x._dtype.itemsize, x._device._id), shape, x._dtype, x._device)
    copy_into(buf, _shapes.Layout(x._buf, shape, x._dtype, x._device, x._offset, strides))
    return buf


def _onesweep(p: SortPlan, src, dst, x, axis, argsort, kind, flip, dev, keys_out=None):
    from ._scan import _memset0

    n = p.rows * p.L
    isz = x._dtype.itemsize
    P = p.key_passes + p.row_passes
    both = keys_out is not None
    kmode, vmode = modes(p.rows, argsort, both)
    sizes = temporaries(p, isz, argsort, both)
    sizes.pop("copy_in", None)  # (allocated by the caller)
    blocks = {name: _memory.alloc(b, dev) for name, b in sizes.items()}   # everything before any launch
    ws = blocks["ws"].ptr
    lay = workspace_layout(P, p.grid, p.word)
    final = blocks["out"].ptr if p.copy_out else dst._ptr

    def b(name):
        blk = blocks.get(name)
        return 0 if blk is None else blk.ptr

    t = STORAGE[isz]
    _memset0(ws + lay["hist"], P * RADIX * 8, dev)
    seg = p.L if p.rows > 1 else 0
    launch(FAMILY, f"gp_sort_histogram<{t}>", dev, p.hist_grid,
           (_ptr(src._ptr), _i64(n), _ptr(ws + lay["hist"]), _i32(p.key_passes), _i32(p.row_passes), _i64(p.L),
            _i32(kind), flip, _ptr(ws + lay["look"]), _i64(p.grid * RADIX * p.word // 4)), block=THREADS)
    launch(FAMILY, "gp_sort_prepare", dev, 1,
           (_ptr(ws + lay["hist"]), _i64(n), _i32(P), _i32(kmode), _i32(vmode), _ptr(ws + lay["offs"]),
            _ptr(ws + lay["route"])), block=THREADS)
    pairs = vmode != VALS_NONE
    assert (p.threads, p.items) == onesweep_shape(isz, pairs, p.vbytes), "the plan's tile is the kernel's"
    v = _VALUE[p.vbytes] if pairs else _VALUE[4]   # (keys alone: V unused, one instance)
    expr = f"gp_sort_onesweep<{t}, {'true' if pairs else 'false'}, {_WORD[p.word]}, {v}>"
    kout = keys_out._ptr if both else 0 if argsort else final
    vout = final if argsort else 0
    for ps in range(P):
        row_pass = ps >= p.key_passes
        shift = BITS * (ps - p.key_passes if row_pass else ps)
        launch(FAMILY, expr, dev, p.grid,
               (_ptr(src._ptr), _ptr(kout), _ptr(b("k0")), _ptr(b("k1")), _ptr(vout), _ptr(b("v0")), _ptr(b("v1")),
                _ptr(ws + lay["route"]), _ptr(ws + lay["offs"]), _ptr(ws + lay["look"]), _i64(n), _i64(p.grid),
                _i32(ps), _i32(kind), flip, _i32(shift), _i32(int(row_pass)), _i64(seg)), block=p.threads)
    if p.copy_out:
        from ._elementwise import copy_into

        rshape = _perm_last(x._shape, axis)
        dt = dst._dtype
        res = _layout(blocks["out"], rshape, dt, x._device)
        copy_into(_shapes.Layout(dst._buf, rshape, dt, dst._device, dst._offset, _perm_last(dst._strides, axis)), res)


def instances() -> list[str]:
    """Registered "sort" instances: for every key size (1, 2, 4, 8 bytes) the histogram, the
    onesweep pass (keys; pairs with 32- and 64-bit values; 32- and 64-bit status words), the
    block sort of every shape
    and the warp sort (sort and argsort); the prepare kernel."""
    out = ["gp_sort_prepare"]
    for t in STORAGE.values():
        out.append(f"gp_sort_histogram<{t}>")
        for pairs, v in (("false", "unsigned int"), ("true", "unsigned int"), ("true", "long long")):
            for w in _WORD.values():
                out.append(f"gp_sort_onesweep<{t}, {pairs}, {w}, {v}>")
        for arg in ("false", "true"):
            out.append(f"gp_sort_warp<{t}, {arg}>")
            for th, k in BLOCK_SHAPES:
                out.append(f"gp_sort_block<{t}, {arg}, {th}, {k}>")
    return out
