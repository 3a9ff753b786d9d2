"""Join engine ("join" family, gparray/_kernels/join.cu): ``concat`` and ``stack`` as one
kernel launch.

The caller (gparray/_api/_manipulation.py) allocates the C-contiguous output and says how the
inputs fill it: ``lead`` leading dimensions are shared by the output and every input (the
output's *rows*: their product), and input i fills ``ks[i]`` consecutive slices of the
output's dimension ``lead`` in every row, in order. Each row of input i is its dimensions
``lead:``, so:

* ``concat(axis=a)``: lead = a, ks = the inputs' extents along a;
* ``stack(axis=a)``: lead = a, ks = 1 each (the output has the new axis at a);
* ``concat(axis=None)``: lead = 0, ks = the inputs' sizes (a 1-D output).

Input i is then one block of ``width_i = ks[i] * slice`` bytes at byte column ``col_i`` of
each output row (``slice``: the bytes of one slice of dimension ``lead``). An input of the
output's dtype whose dimensions ``lead:`` are C-contiguous and whose leading dimensions
merge into one row step (``src_pitch``, any sign, 0 for a broadcast) is a *piece* of the one
launch; every other input (another dtype: concat promotes; a transposed, sliced-inner or
inner-broadcast view) is copied by the elementwise engine into its view of the output (one
launch each: the kernel converts dtypes and walks any strides).

The piece table (``plan``): the first tile of each piece (n + 1 int64 starts, the last the
grid) and per piece five int64 fields: source address, source row step, column, width and
the log2 of the unit it is moved in (the largest power of two up to 16 bytes dividing its
addresses, width and, with several rows, both row steps: 16-byte loads and stores whenever
the layout allows). Up to ``PARAM_CAPS[-1]`` pieces the table travels by value in the
kernel's parameters (``gp_join_params<NV>``: no copy at all); a longer one is copied to a
pool block on the current stream right before the launch (``gp_join_table``): from pageable
host memory, so ``cudaMemcpyAsync`` has staged the bytes when it returns and the host array
may go; the block returns to the pool on the same stream after the launch, so nothing reuses
it before the kernel has run.

Tables of many inputs are built with NumPy (``_pieces_np``), short ones in plain Python
(``_pieces_py``: no NumPy call overhead for the common two- to four-input concat); both give
the same table (tests/test_join_plan.py checks it, and runs the kernel's tiling, search and
copy on host memory against NumPy).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .._core import _backend
from .. import _memory
from .._core import _faults
from .._native import claunch as _claunch
from . import _elementwise as _ew
from . import _shapes
from ._launch import _kernels, copy_span, kernel, run

FAMILY = "join"
BLOCK = 256                 # GP_JOIN_BLOCK
ITEMS = 4                   # GP_JOIN_ITEMS (units per thread of units up to 8 bytes)
ITEMS16 = 2                 # GP_JOIN_ITEMS16 (units per thread of 16-byte units)
PARAM_CAPS = (4, 16, 64)    # gp_join_params<NV> instances: pieces by value
FIELDS = 5                  # int64 fields of a gp::join::Piece
GRID_LIMIT = 2**31 - 1
NUMPY_FROM = 64             # build the table with NumPy from this many inputs on
_H2D = 1


def tile_bytes(shift: int) -> int:
    """Bytes of one piece a block copies when it moves units of 2**shift bytes."""
    return BLOCK * (ITEMS16 if shift == 4 else ITEMS) << shift


def _tile_table():
    return np.array([tile_bytes(s) for s in range(5)], dtype=np.int64)


_TILE_BYTES = _tile_table()   # (tools/tune.py rebuilds it after changing ITEMS / ITEMS16)
# unit_shift by the lowest set bit b of an OR (index min(b - 1, 15); b = 0, index -1: 4)
_SHIFT_OF_LOW = np.array([0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4], dtype=np.int64)


def unit_shift(g: int) -> int:
    """log2 of the largest power of two up to 16 dividing ``g`` (an OR of the byte addresses,
    widths and steps a piece uses; 0 divides by everything)."""
    if g == 0:
        return 4
    return min(4, ((g & -g).bit_length() - 1))


def src_pitch(shape, strides, lead: int, itemsize: int):
    """Bytes between the rows of an input (its dimensions ``:lead``; each row its dimensions
    ``lead:``), or None when a row is not C-contiguous or the leading dimensions do not merge
    into one step. An input of one row returns its row's bytes."""
    acc = itemsize
    for d in range(len(shape) - 1, lead - 1, -1):
        s = shape[d]
        if s != 1:
            if strides[d] != acc:
                return None
            acc *= s
    pitch = nxt = None
    for d in range(lead - 1, -1, -1):
        s = shape[d]
        if s != 1:
            st = strides[d]
            if pitch is None:
                pitch = st
            elif st != nxt:
                return None
            nxt = st * s
    return acc if pitch is None else pitch


class JoinPlan(NamedTuple):
    """One join: the output's rows and row bytes, the piece table, the grid and the inputs
    left to the elementwise engine."""

    rows: int          # rows of the output (the product of its first ``lead`` dimensions)
    pitch: int         # bytes of one output row
    n: int             # pieces in the launch
    starts: object     # n + 1 first tiles (list or int64 ndarray); starts[n] is the grid
    pieces: object     # n x 5 fields: src, src_pitch, col, width, shift (lists or ndarray);
                       # both None when ``raw`` holds them (``decoded``)
    grid: int          # blocks of the launch (0: no launch)
    slow: tuple        # (input index, byte column) of each input copied on its own
    raw: object = None  # (cap, bytes of gp::join::Table<cap>) when built in C, else None


def _geometry(out, lead: int):
    """(rows, output row bytes, bytes of one slice along ``lead``) of the output."""
    shape = out._shape
    isz = out._dtype.itemsize
    rows = _shapes.prod(shape[:lead])
    sl = _shapes.prod(shape[lead + 1:]) * isz
    return rows, shape[lead] * sl, sl


def scan(array_class, arrays, axis, stack: bool):
    """The compiled one-pass check of a concat (``stack`` False) or stack of ``arrays``, all
    instances of ``array_class``:
    None (no C extension, or anything unusual: the caller's Python path then checks, promotes
    and raises), else (dtype, device, axis normalized, the inputs' addresses as int64 bytes,
    -1 where the engine must look at the layout; ks as an int64 array, or None for stack;
    the sum of ks, or the number of inputs for stack). See gparray/_native/_claunch_join.c."""
    if _claunch is None or type(arrays) not in (list, tuple):
        return None
    sc = _claunch.join_scan(array_class, arrays, axis, stack)
    if sc is None or sc[4] is None:
        return sc
    dt, dev, ax, addrs, ks, total = sc
    return dt, dev, ax, addrs, np.frombuffer(ks, dtype=np.int64), total


def plan(out, arrays, lead: int, ks, addrs=None) -> JoinPlan:
    """The launch that writes ``arrays`` into ``out`` (see the module docstring); ``addrs``:
    the inputs' addresses from ``scan`` when the caller has them."""
    rows, pitch, sl = _geometry(out, lead)
    if rows == 0 or pitch == 0:
        return JoinPlan(rows, pitch, 0, [0], [], 0, ())
    if addrs is not None and _claunch is not None:   # every input contiguous: the table in C
        cap = param_cap(len(arrays)) or 0               # (the by-value layout when it fits)
        if type(ks) is not np.ndarray or ks.dtype != np.int64:
            ks = np.asarray(ks, dtype=np.int64)
        t = _claunch.join_table(addrs, ks, out._buf.ptr + out._offset, rows, sl, pitch, _TILE_BYTES, cap)
        if t is not None and t[2] <= GRID_LIMIT:
            raw, n, grid = t
            if cap:     # starts and pieces stay in the bytes (``decoded`` reads them)
                return JoinPlan(rows, pitch, n, None, None, grid, (), (cap, raw))
            w = np.frombuffer(raw, dtype=np.int64)
            return JoinPlan(rows, pitch, n, w[:n + 1], w[n + 1:].reshape(n, FIELDS), grid, ())
    if len(arrays) >= NUMPY_FROM:
        n, starts, pieces, slow = _pieces_np(out, arrays, lead, ks, rows, pitch, sl, addrs)
    else:   # Python ints (``scan`` gives an int64 array): unit_shift uses int.bit_length
        ks = ks.tolist() if isinstance(ks, np.ndarray) else ks
        n, starts, pieces, slow = _pieces_py(out, arrays, lead, ks, rows, pitch, sl)
    grid = int(starts[n])
    if grid > GRID_LIMIT:  # > 2^31 tiles (a TiB): every input on its own
        col, slow = 0, []
        for i, k in enumerate(ks):
            if k:
                slow.append((i, col))
            col += k * sl
        return JoinPlan(rows, pitch, 0, [0], [], 0, tuple(slow))
    return JoinPlan(rows, pitch, n, starts, pieces, grid, tuple(slow))


def _pieces_py(out, arrays, lead, ks, rows, pitch, sl):
    """(n, starts, pieces, slow) in plain Python (few inputs)."""
    odt = out._dtype
    isz = odt.itemsize
    obase = out._buf.ptr + out._offset
    many = rows > 1
    starts, pieces, slow = [0], [], []
    col = tile = 0
    for i, (a, k) in enumerate(zip(arrays, ks)):
        if not k:
            continue
        w = k * sl
        p = None
        if a._dtype == odt:
            p = w if a._is_c_contig() else src_pitch(a._shape, a._strides, lead, isz)
        if p is None:
            slow.append((i, col))
        else:
            src = a._buf.ptr + a._offset
            g = src | (obase + col) | w
            if many:
                g |= p | pitch
            s = unit_shift(g)
            tile += -(-(rows * w) // tile_bytes(s))
            starts.append(tile)
            pieces.append((src, p if many else w, col, w, s))
        col += w
    return len(pieces), starts, pieces, slow


def _addresses(arrays, odt) -> np.ndarray:
    """Each input's address, or -1 where it may not be a C-contiguous array of dtype ``odt``
    (one pass over the flag in which an Array caches its contiguity, True once known; the
    caller checks the -1 ones in full, and layouts without the flag are all -1)."""
    try:
        return np.array([a._buf.ptr + a._offset if a._flags is True and a._dtype is odt else -1
                         for a in arrays], dtype=np.int64)
    except AttributeError:
        return np.full(len(arrays), -1, dtype=np.int64)


def _pieces_np(out, arrays, lead, ks, rows, pitch, sl, addrs=None):
    """(n, starts, pieces, slow) with NumPy (many inputs): the per-input Python work is
    reading each input's address (and, for the unusual ones, its dtype and layout), unless
    ``addrs`` (``scan``'s bytes: every input of the output's dtype) already has them."""
    odt = out._dtype
    isz = odt.itemsize
    k = np.array(ks, dtype=np.int64)
    w = k * sl
    cols = np.cumsum(w)
    cols -= w
    src = _addresses(arrays, odt) if addrs is None else np.frombuffer(addrs, dtype=np.int64).copy()
    p = w                    # source row steps: a C-contiguous input's are its row bytes
    keep = None if k.all() else k > 0
    slow = []
    for i in np.flatnonzero(src < 0).tolist():
        a = arrays[i]
        src[i] = a._buf.ptr + a._offset
        if a._dtype != odt:
            q = None
        elif a._is_c_contig():
            continue
        else:
            q = src_pitch(a._shape, a._strides, lead, isz)
        if q is None:
            if keep is None:
                keep = np.ones(len(ks), dtype=bool)
            keep[i] = False
            if ks[i]:
                slow.append((i, int(cols[i])))
        else:
            if p is w:
                p = w.copy()
            p[i] = q
    if keep is not None:
        src, p, cols, w = src[keep], p[keep], cols[keep], w[keep]
    g = src | (cols + (out._buf.ptr + out._offset)) | w
    if rows > 1:
        g |= p | pitch
    else:
        p = w
    shift = _SHIFT_OF_LOW[np.minimum((g & -g) - 1, 15)]   # (g & -g): g's lowest set bit
    tiles = -((-(rows * w)) // _TILE_BYTES[shift])
    n = len(w)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(tiles, out=starts[1:])
    return n, starts, np.stack([src, p, cols, w, shift], axis=1), slow


# ---------------------------------------------------------------------------- launch
def param_cap(n: int):
    """The NV of the by-value instance for ``n`` pieces, or None (the table goes to device
    memory)."""
    for cap in PARAM_CAPS:
        if n <= cap:
            return cap
    return None


_structs: dict = {}   # NV -> struct.Struct of gp::join::Table<NV>


def _table_struct(cap: int) -> struct.Struct:
    st = _structs.get(cap)
    if st is None:
        st = _structs[cap] = struct.Struct(f"<{cap + 1 + FIELDS * cap}q")
    return st


def decoded(pl: JoinPlan):
    """(starts, pieces) of ``pl``: its fields, or read from its by-value table's bytes."""
    if pl.starts is not None:
        return pl.starts, pl.pieces
    cap, n = pl.raw[0], pl.n
    w = np.frombuffer(pl.raw[1], dtype=np.int64)
    return w[:n + 1], w[cap + 1:cap + 1 + FIELDS * n].reshape(n, FIELDS)


def param_table(pl: JoinPlan, cap: int) -> bytes:
    """The bytes of gp::join::Table<cap> for ``pl`` (unused entries zero)."""
    n = pl.n
    starts, pieces = decoded(pl)
    vals = [int(s) for s in starts] + [0] * (cap - n)
    for pc in pieces:
        vals.extend(int(v) for v in pc)
    vals.extend([0] * (FIELDS * (cap - n)))
    return _table_struct(cap).pack(*vals)


def device_table(pl: JoinPlan) -> np.ndarray:
    """The int64 words gp_join_table reads: the n + 1 starts, then the n pieces."""
    starts, pieces = decoded(pl)
    return np.concatenate([np.asarray(starts, dtype=np.int64), np.asarray(pieces, dtype=np.int64).reshape(-1)])


_P0, _I64, _I32 = np.uint64(0), np.int64(0), np.int32(0)


_EXPRS = {c: f"gp_join_params<{c}>" for c in PARAM_CAPS}


def _params_expr(cap: int) -> str:
    return _EXPRS[cap]


def _proto(cap: int):
    nbytes = _table_struct(cap).size
    return (_P0, _I64, _I64, _I32, np.zeros((), dtype=np.dtype((np.void, nbytes)))[()])


def launch(out, pl: JoinPlan) -> None:
    """The one launch of ``pl``'s pieces into ``out`` (nothing when there are none)."""
    if pl.grid == 0:
        return
    dev = out._device._id
    obase = out._buf.ptr + out._offset
    cap, raw = pl.raw if pl.raw is not None else (param_cap(pl.n), None)
    if cap is not None:
        expr = _params_expr(cap)
        k = _kernels.get((dev, FAMILY, expr))
        if k is None:
            k = kernel(FAMILY, expr, dev, _proto(cap))
        if raw is None:
            raw = param_table(pl, cap)
        run(k, dev, pl.grid, (obase, pl.pitch, pl.rows, pl.n, memoryview(raw)), block=BLOCK)
        return
    tab = device_table(pl)
    k = _kernels.get((dev, FAMILY, "gp_join_table"))
    if k is None:
        k = kernel(FAMILY, "gp_join_table", dev, (_P0, _I64, _I64, _I32, _P0))
    with _backend.on_device(dev):
        s = _backend.current_stream()
        blk = _memory.alloc(tab.nbytes, dev, s.ptr)
        with _faults.checked("concat: piece table upload"):
            # pageable source: staged by the time this returns, so ``tab`` may go
            with copy_span("memcpy HtoD", tab.nbytes, dev, s.ptr):
                _backend.runtime().memcpyAsync(blk.ptr, tab.ctypes.data, tab.nbytes, _H2D, s.ptr)
        run(k, dev, pl.grid, (obase, pl.pitch, pl.rows, pl.n, blk.ptr), block=BLOCK)
    del blk  # back to the pool on the stream the kernel runs on: reused only after it


def slow_view(out, a, lead: int, col: int):
    """The view of ``out`` that input ``a`` fills (its shape; byte column ``col``)."""
    isz = out._dtype.itemsize
    strides = out._strides[:lead] + _shapes.c_strides(a._shape[lead:], isz)
    return _shapes.Layout(out._buf, a._shape, out._dtype, out._device, out._offset + col, strides)


def join(out, arrays, lead: int, ks, addrs=None) -> None:
    """Write ``arrays`` into the C-contiguous ``out`` (see the module docstring): one launch
    for the pieces, one elementwise copy for each other input (``addrs``: see ``plan``)."""
    pl = plan(out, arrays, lead, ks, addrs)
    launch(out, pl)
    for i, col in pl.slow:
        a = arrays[i]
        _ew.copy_into(slow_view(out, a, lead, col), a)


def instances() -> list[str]:
    """Registered "join" instances: the by-value tables of each capacity and the device
    table (the kernel moves raw bytes: one instance serves every dtype)."""
    return [_params_expr(c) for c in PARAM_CAPS] + ["gp_join_table"]
