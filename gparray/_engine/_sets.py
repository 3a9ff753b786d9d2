"""Set engine ("sets" family, gparray/_kernels/sets.cu): the unique pipeline over a sorted
sequence and isin's batched search in a sorted table.

unique (the namespace sorts first: ``sort`` for values and counts, a stable ``argsort`` for
inverse and all):

1. ``unique_count``: per-tile counts of group heads (an element that differs from the one
   before it; NaN differs from everything), their inclusive scan (scan engine), and the
   total read back (the one synchronization: it sizes the outputs). With a permutation the
   same launch gathers the sorted sequence ``src[perm]`` and writes it out.
2. ``unique_write``: values at the heads and, as asked, first-occurrence indices, the
   inverse (scattered through the permutation) and the heads' positions.
3. ``unique_counts``: counts as differences of consecutive head positions.

Dense unique (``unique_values`` and ``unique_inverse`` of integers and bool, no sort): the
input's range (one pass), a bitmap of its values when the range fits ``dense_bits(n)``
(one pass), per-tile popcounts, their scan and the total read back (the one
synchronization; a negative total: the range does not fit, and the namespace sorts
instead), then the values in bit order and, for the inverse, each element's rank from the
words' prefix counts (``dense_count``, ``dense_write``).

Operands are layout objects (``_buf``, ``_offset``, ``_shape``, ``_strides``, ``_dtype``,
``_device``); the namespace layer (gparray/_api/_set_functions.py) allocates every output.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core import _dtypes as _dt
from .. import _memory
from . import _shapes
from ._launch import ctype, index_type, launch, nd_template, strided_params

FAMILY = "sets"
BLOCK = 256                          # GP_SET_BLOCK
TILE = (BLOCK // 32) * 16 * 32       # GP_SET_TILE: elements per unique tile
SAMPLE_BYTES = 16384                 # GP_SET_SAMPLE_BYTES: isin's shared sample table
BLOCKS_PER_SM = 8                    # isin: resident blocks per SM the grid is sized for
BITMAP_MIN_BITS = 1 << 16            # isin's bitmap capacity bounds (bitmap_bits)
BITMAP_MAX_BITS = 1 << 28
DEFAULT_SMS = 132

# what each unique function writes: (IDX, INV, FIRST) template flags
VARIANTS = {
    "unique_values": (False, False, False),
    "unique_counts": (False, False, True),
    "unique_inverse": (False, True, False),
    "unique_all": (True, True, True),
}

_ptr = np.uint64
_i32 = np.int32
_i64 = np.int64


def _addr(x) -> int:
    return 0 if x is None else x._buf.ptr + x._offset


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def tiles(n: int) -> int:
    """Tiles (the length of ``unique_count``'s buffers) for ``n`` sorted elements."""
    return -(-n // TILE)


def unique_count(src, counts, incl, perm=None, sorted_out=None) -> int:
    """Group heads of the sorted sequence (``src`` itself, or ``src[perm]`` when ``perm``, an
    int64 permutation, is given; then written to ``sorted_out``): per-tile counts into
    ``counts``, their inclusive scan into ``incl`` (C-contiguous int64, ``tiles(n)``
    elements) and the number of groups, read back (synchronizes the current stream). All
    operands 1-D C-contiguous, n >= 1."""
    from ._index import read_total
    from ._scan import scan

    n = src._shape[0] if perm is None else perm._shape[0]
    dev = src._device._id
    gather = perm is not None
    t = tiles(n)
    launch(FAMILY, f"gp_unique_count<{ctype(src._dtype)}, {_b(gather)}>", dev, t,
           (_ptr(_addr(counts)), _ptr(_addr(sorted_out)), _ptr(_addr(src)), _ptr(_addr(perm)), _i64(n)))
    scan("sum", counts, 0, incl)
    return read_total(dev, _addr(incl) + (t - 1) * 8)


def unique_write(s, incl, values, perm=None, indices=None, inverse=None, first=None) -> None:
    """Second pass over the sorted ``s`` (n >= 1 elements; ``incl`` from ``unique_count``):
    ``values`` (total elements) gets each group's first element; ``indices`` (total)
    ``perm`` at the heads; ``inverse`` (n, C order) the group id of ``perm``'s every
    element, scattered to ``inverse[perm[e]]``; ``first`` (total + 1) the heads' positions
    and n. The flags follow which outputs are given (see VARIANTS)."""
    n, total = s._shape[0], values._shape[0]
    flags = (indices is not None, inverse is not None, first is not None)
    if (flags[0] or flags[1]) and perm is None:
        raise ValueError("unique_write: indices and inverse need the permutation")
    expr = f"gp_unique_write<{ctype(s._dtype)}, {', '.join(_b(f) for f in flags)}>"
    launch(FAMILY, expr, s._device._id, tiles(n),
           (_ptr(_addr(values)), _ptr(_addr(indices)), _ptr(_addr(inverse)), _ptr(_addr(first)), _ptr(_addr(s)),
            _ptr(_addr(perm)), _ptr(_addr(incl)), _i64(n), _i64(total)))


def unique_counts(counts, first) -> None:
    """counts[g] = first[g + 1] - first[g] (``first`` from ``unique_write``); total >= 1."""
    total = counts._shape[0]
    launch(FAMILY, "gp_unique_counts", counts._device._id, -(-total // BLOCK),
           (_ptr(_addr(counts)), _ptr(_addr(first)), _i64(total)))


# ---------------------------------------------------------------------------- dense unique
DENSE = True                         # False: every unique sorts (tools and A/B timings)
DENSE_MIN_BITS = 1 << 16             # the bitmap of dense unique: at least this many bits,
DENSE_MAX_BITS = 1 << 28             # at most this many (32 MiB), else one bit per element
DENSE_UNROLL = 8                     # GP_DENSE_UNROLL: elements per thread per round


def dense_ok(dtype) -> bool:
    """Whether ``dtype`` may take the dense unique path (integers and bool)."""
    return dtype.kind in "iub"


def dense_bits(n: int) -> int:
    """Capacity in bits of dense unique's bitmap for ``n`` elements: one bit per element
    (so the bitmap work never exceeds the elements' own), at least DENSE_MIN_BITS, at most
    DENSE_MAX_BITS; a multiple of TILE."""
    return -(-min(max(n, DENSE_MIN_BITS), DENSE_MAX_BITS) // TILE) * TILE


def dense_grid(n: int, resident: int) -> int:
    """Blocks of a pass over n elements (DENSE_UNROLL per thread per round): enough for one
    round each, at most ``resident`` (then the blocks take several rounds)."""
    return max(1, min(-(-n // (BLOCK * DENSE_UNROLL)), resident))


class Dense(NamedTuple):
    """The device state of one dense unique between its count and its write."""

    rng: object       # pool Block: {max key, ~min key}
    bits: object      # pool Block: the bitmap (cap bits, cap // TILE tiles)
    cap: int


def dense_count(xf, counts, incl) -> tuple:
    """(total, Dense) for the 1-D C-contiguous integer ``xf`` (n >= 1): its range, the bitmap
    of its values, per-tile counts (``counts``/``incl``: int64[tiles], tiles =
    ``dense_bits(n) // TILE``) and the number of distinct values, read back (synchronizes).
    A total < 0: the range does not fit the bitmap (the caller sorts instead)."""
    from ._index import read_total
    from ._reduce import sm_count
    from ._scan import _memset0, scan

    n, dev, t = xf._shape[0], xf._device._id, ctype(xf._dtype)
    cap = dense_bits(n)
    tiles_ = cap // TILE
    if counts._shape[0] != tiles_ or incl._shape[0] != tiles_:
        raise ValueError(f"dense_count: counts and incl need {tiles_} elements (a gparray bug)")
    resident = sm_count(dev) * BLOCKS_PER_SM
    rng = _memory.alloc(16, dev)
    _memset0(rng.ptr, 16, dev)
    bits = _memory.alloc(cap // 8, dev)
    grid = dense_grid(n, resident)
    launch(FAMILY, f"gp_dense_range<{t}>", dev, grid, (_ptr(rng.ptr), _ptr(_addr(xf)), _i64(n)))
    launch(FAMILY, "gp_dense_clear", dev, max(1, min(-(-cap // (32 * BLOCK)), resident)),
           (_ptr(bits.ptr), _ptr(rng.ptr), _i64(cap)))
    launch(FAMILY, f"gp_dense_mark<{t}>", dev, grid, (_ptr(bits.ptr), _ptr(_addr(xf)), _i64(n), _ptr(rng.ptr),
                                                     _i64(cap)))
    launch(FAMILY, "gp_dense_count", dev, tiles_, (_ptr(_addr(counts)), _ptr(bits.ptr), _ptr(rng.ptr), _i64(cap)))
    scan("sum", counts, 0, incl)
    return read_total(dev, _addr(incl) + (tiles_ - 1) * 8), Dense(rng, bits, cap)


def dense_write(d: Dense, values, incl, xf=None, inverse=None) -> None:
    """After ``dense_count`` (total >= 1): ``values`` (total elements) gets the distinct
    values ascending; with ``inverse`` (int64, n elements in C order) the index into
    ``values`` of each element of ``xf``."""
    from ._reduce import sm_count

    dev, t = values._device._id, ctype(values._dtype)
    wpre = _memory.alloc(d.cap // 8, dev) if inverse is not None else None     # int32 per 32-bit word
    launch(FAMILY, f"gp_dense_write<{t}, {_b(wpre is not None)}>", dev, d.cap // TILE,
           (_ptr(_addr(values)), _ptr(wpre.ptr if wpre else 0), _ptr(d.bits.ptr), _ptr(d.rng.ptr),
            _ptr(_addr(incl)), _i64(d.cap)))
    if inverse is not None:
        n = xf._shape[0]
        launch(FAMILY, f"gp_dense_inverse<{t}>", dev, dense_grid(n, sm_count(dev) * BLOCKS_PER_SM),
               (_ptr(_addr(inverse)), _ptr(_addr(xf)), _i64(n), _ptr(d.bits.ptr), _ptr(wpre.ptr), _ptr(d.rng.ptr),
                _i64(d.cap)))


# ---------------------------------------------------------------------------- isin
class IsinPlan(NamedTuple):
    """How one isin launch runs."""

    contig: bool      # x1 read at its element offsets (C-contiguous)
    shape: tuple      # x1's merged shape and element strides (strided reads)
    strides: tuple
    nd: int
    idx: str          # "int" | "long long"
    stride: int       # table elements per shared sample
    nsamp: int        # samples staged (ceil(n2 / stride))
    grid: int


def samples_max(ct_itemsize: int) -> int:
    """Samples of ``ct_itemsize`` bytes the shared table holds."""
    return SAMPLE_BYTES // ct_itemsize


def isin_plan(shape: tuple, strides: tuple, n2: int, ct_itemsize: int, sms: int = DEFAULT_SMS) -> IsinPlan:
    """Plan for x1 of ``shape``/element ``strides`` against a sorted table of ``n2`` >= 1
    elements compared in a type of ``ct_itemsize`` bytes."""
    n1 = _shapes.prod(shape)
    m_shape, (m_st,) = _shapes.merge_dims(shape, [strides])
    contig = n1 <= 1 or (len(m_shape) == 1 and m_st[0] == 1)
    kmax = samples_max(ct_itemsize)
    stride = max(1, -(-n2 // kmax))
    nsamp = -(-n2 // stride)
    idx = index_type(n1, [_shapes.span_elements(shape, strides)])
    grid = max(1, min(-(-n1 // BLOCK), sms * BLOCKS_PER_SM))
    return IsinPlan(contig, m_shape, m_st, nd_template(len(m_shape)), idx, stride, nsamp, grid)


def isin(x1, s2, out, ct, invert: bool) -> None:
    """out (C-contiguous bool of x1's shape) = whether each element of ``x1`` (any layout) is
    in the ascending 1-D C-contiguous ``s2`` (n2 >= 1; NaNs last), values compared as
    ``ct``; negated when ``invert``."""
    from ._reduce import sm_count

    n1 = out.size
    if n1 == 0:
        return
    isz = x1._dtype.itemsize
    est = tuple(s // isz for s in x1._strides)
    dev = x1._device._id
    n2 = s2._shape[0]
    p = isin_plan(x1._shape, est, n2, ct.itemsize, sm_count(dev))
    expr = (f"gp_isin<{ctype(x1._dtype)}, {ctype(s2._dtype)}, {ctype(ct)}, {_b(invert)}, {_b(p.contig)}, "
            f"{p.nd}, {p.idx}>")
    ix = _i32 if p.idx == "int" else _i64
    bits, cap = None, 0
    if ct.kind in "iu":  # the bitmap, used by the kernels when the table's range fits it
        cap = bitmap_bits(n1)
        bits = _memory.alloc(cap // 8, dev)
        pair = f"<{ctype(s2._dtype)}, {ctype(ct)}>"
        for name, grid in (("gp_isin_bits_clear", min(-(-cap // (32 * BLOCK)), sm_count(dev) * BLOCKS_PER_SM)),
                           ("gp_isin_bits_set", max(1, min(-(-n2 // BLOCK), sm_count(dev) * BLOCKS_PER_SM)))):
            launch(FAMILY, name + pair, dev, grid, (_ptr(bits.ptr), _ptr(_addr(s2)), _i64(n2), _i64(cap)))
    launch(FAMILY, expr, dev, p.grid,
           (_ptr(_addr(out)), _ptr(_addr(x1)), strided_params(p.shape, [p.strides], p.nd), ix(n1),
            _ptr(_addr(s2)), _i64(n2), _i64(p.stride), _i32(p.nsamp), _ptr(bits.ptr if bits else 0), _i64(cap)))


def bitmap_bits(n1: int) -> int:
    """Capacity in bits of isin's bitmap for ``n1`` elements looked up: 4 bits per element
    (so clearing it costs at most an eighth of reading int32 elements), at least 2^16 and
    at most 2^28 (32 MiB); a multiple of 32."""
    return min(max(4 * n1, BITMAP_MIN_BITS), BITMAP_MAX_BITS) // 32 * 32


def instances() -> list[str]:
    """Registered "sets" instances: the unique kernels of every dtype (float16 and complex
    included; the four variants) and isin of same-dtype real operands, both polarities,
    contiguous and strided (ND=4, 32-bit index)."""
    out = ["gp_unique_counts"]
    for dt in _dt._supported_dtypes:
        t = ctype(dt)
        out += [f"gp_unique_count<{t}, false>", f"gp_unique_count<{t}, true>"]
        for flags in VARIANTS.values():
            out.append(f"gp_unique_write<{t}, {', '.join(_b(f) for f in flags)}>")
        if dt.kind != "c":
            c = ctype(_dt._compute_dtype(dt))
            for inv in ("false", "true"):
                out += [f"gp_isin<{t}, {t}, {c}, {inv}, true, 4, int>", f"gp_isin<{t}, {t}, {c}, {inv}, false, 4, int>"]
            if _dt._compute_dtype(dt).kind in "iu":
                out += [f"gp_isin_bits_clear<{t}, {c}>", f"gp_isin_bits_set<{t}, {c}>"]
        if dense_ok(dt):
            out += [f"gp_dense_range<{t}>", f"gp_dense_mark<{t}>", f"gp_dense_write<{t}, false>",
                    f"gp_dense_write<{t}, true>", f"gp_dense_inverse<{t}>"]
    return out + ["gp_dense_clear", "gp_dense_count"]
