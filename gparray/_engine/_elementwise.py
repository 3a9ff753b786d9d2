"""Elementwise engine: choose the contig or strided variant, launch.

Every elementwise function, astype, copies and fills end here. Operands and outputs are
layouts (gparray Arrays or ``_shapes.Layout``: buffer, offset, shape, byte strides, dtype,
device); the caller allocates the output. Python scalars travel by value, converted to the
compute type. Inputs are never copied: broadcasting is stride 0, mixed dtypes are
converted inside the kernel.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import _memory
from .._native import claunch as _claunch
from . import _launch, _shapes
from ._launch import (BLOCK, UNROLL, _kernels, bind, contig_grid, ctype, index_type, kernel, launch, nd_template,
                      run, scalar_arg, strided_grid, strided_params, vec_width)

FAMILY = "elementwise"
_ptr = np.uint64
_i64 = np.int64


# ----------------------------------------------------------------------------- fast paths
# A contiguous plan fixes everything but the operands: (output dtype, name expression,
# elements per block, prototype arguments). Ops build one per dtype combination after their
# checks passed once; launches then pass Python ints (pointers, size) and the Python scalar.
_P0 = _ptr(0)


def contig_plan(kind: str, functor: str, odt, ct, in_dts, tail: str = "", value=()):
    """(odt, expr, tile, proto) for gp_<kind>_contig of ``functor`` on inputs ``in_dts``
    (``tail``: further template arguments; ``value``: the prototype of a by-value operand)."""
    head = f"op_{functor}, {ctype(odt)}, {ctype(ct)}, " + ", ".join(ctype(d) for d in in_dts) + tail
    tile = BLOCK * vec_width(odt.itemsize, *(d.itemsize for d in in_dts)) * UNROLL
    proto = (_P0,) * (1 + len(in_dts)) + value + (_i64(0),)
    return (odt, f"gp_{kind}_contig<{head}>", tile, proto)


def scalar_plan(functor: str, odt, ct, adt, swap: bool) -> tuple:
    """(odt, expr, tile, proto) for gp_scalar_contig of ``functor`` (the scalar as ``ct``)."""
    return contig_plan("scalar", functor, odt, ct, (adt,), ", true" if swap else ", false", (ct.type(0),))


def contig(plan, out, x, mid=()) -> None:
    """out = the plan's contiguous kernel over (x, *mid): ``out`` and ``x`` C-contiguous of
    one shape on one device; ``mid``: the other operands' addresses or the Python scalar."""
    n = prod(out._shape)
    if n:
        expr, tile, proto = plan[1], plan[2], plan[3]
        d = out._device._id
        k = _kernels.get((d, FAMILY, expr))
        if k is None:
            k = kernel(FAMILY, expr, d, proto)
        run(k, d, (n + tile - 1) // tile, (out._buf.ptr + out._offset, x._buf.ptr + x._offset) + mid + (n,))


def learn(table, plan, x, b=None, side: int = 0, lo=0, hi=0, bisz: int = 0) -> bool:
    """Record in ``table`` (an op's compiled Table) that ``plan``'s contiguous kernel, just
    launched on x's device, serves calls with these operand types from now on: array x of its
    dtype and ``b`` (None: unary; a dtype: a second array of x's shape; float or int: a
    Python scalar in [lo, hi] on the right (side 1) or the left (side 2)). Only when the
    kernel launches through the compiled path and x's device is the current one: the entry
    keeps the CUDA context current now, and serves only calls made while it is current (with
    several GPUs, a call on x's device made while another is current takes the Python path,
    which switches devices around the launch). The caller (gparray/_array/_ops.py) has configured
    the compiled path with the Array class first."""
    d = x._device._id
    k = _kernels.get((d, FAMILY, plan[1]))
    if k is None or not isinstance(k.launch, _claunch.Launch) or (_launch._multi and _launch._get_device() != d):
        return False
    odt = plan[0]
    return table.add(x._dtype, b, side, x._device, x._dtype.itemsize, bisz, lo, hi, k.launch, odt, odt.itemsize,
                     plan[2], BLOCK, _memory._pools[d], k.name)


_copy_plans: dict = {}   # (source dtype, destination dtype) -> contig plan of op_identity
_where_plans: dict = {}  # (x1 dtype, x2 dtype, output dtype) -> contig plan of gp_where_contig


def where_contig(cond, a, b, out) -> None:
    """out = cond ? a : b for C-contiguous same-shape bool ``cond``, ``a``, ``b`` and ``out``
    on one device (``out``'s dtype: their promoted dtype)."""
    odt = out._dtype
    key = (a._dtype, b._dtype, odt)
    plan = _where_plans.get(key)
    if plan is None:
        tile = BLOCK * vec_width(odt.itemsize, a._dtype.itemsize, b._dtype.itemsize) * UNROLL
        plan = _where_plans[key] = (odt, f"gp_where_contig<{ctype(odt)}, {ctype(a._dtype)}, {ctype(b._dtype)}>",
                                    tile, (_P0, _P0, _P0, _P0, _i64(0)))
    contig(plan, out, cond, (a._buf.ptr + a._offset, b._buf.ptr + b._offset))


def _estrides(x, shape):
    """Element strides of Array ``x`` broadcast to ``shape``."""
    isz = x._dtype.itemsize
    st = tuple(s // isz for s in x._strides)
    if x._shape == shape:
        return st
    return _shapes.broadcast_strides(x._shape, st, shape)


def _plan(out, operands):
    """(merged shape, [strides of out and each operand]) for a strided launch."""
    shape = out._shape
    strides = [_estrides(out, shape)] + [_estrides(x, shape) for x in operands]
    return _shapes.merge_dims(shape, strides)


def _merged_or_flat(out, operands):
    """None when ``out`` and every operand can be walked as one flat contiguous run (the
    contig kernels apply); otherwise the merged (shape, strides) for the other forms."""
    if _all_contig(out, operands):
        return None
    merged = _plan(out, operands)
    if len(merged[0]) == 1 and all(st == (1,) for st in merged[1]):
        return None
    return merged


def _all_contig(out, operands) -> bool:
    if not out._is_c_contig():
        return False
    for x in operands:
        if x._shape != out._shape or not x._is_c_contig():
            return False
    return True


def _strided(kind: str, head: str, out, operands, extra_args, merged):
    shape, strides = merged
    n = out.size
    nd = nd_template(len(shape))
    spans = [_shapes.span_elements(shape, st) for st in strides]
    idx = index_type(n, spans)
    expr = f"gp_{kind}_strided<{head}, {nd}, {idx}>"
    prm = strided_params(shape, strides, nd)
    nparam = np.int32(n) if idx == "int" else _i64(n)
    ptrs = [_ptr(out._ptr)] + [_ptr(x._ptr) for x in operands]
    launch(FAMILY, expr, out._device._id, strided_grid(n), (*ptrs, *extra_args, prm, nparam))


def unary(op: str, x, out, ct) -> None:
    """out[...] = op(x) with compute type ``ct``; ``x`` broadcasts to ``out``."""
    n = out.size
    if n == 0:
        return
    head = f"op_{op}, {ctype(out._dtype)}, {ctype(ct)}, {ctype(x._dtype)}"
    merged = _merged_or_flat(out, (x,))
    if merged is None:
        launch(FAMILY, f"gp_unary_contig<{head}>", out._device._id,
               contig_grid(n, out._dtype.itemsize, x._dtype.itemsize),
               (_ptr(out._ptr), _ptr(x._ptr), _i64(n)))
        return
    _strided("unary", head, out, (x,), (), merged)


_binary_launches: dict = {}  # (op, dtypes, layouts, device) -> (bound kernel, tail, grid, swap)
_LAUNCHES_MAX = 4096


def binary(op: str, a, b, out, ct) -> None:
    """out[...] = op(a, b) with compute type ``ct``; ``a`` and ``b`` broadcast to ``out``.
    The launch description (variant, grid, layout arguments) is memoized per layout."""
    n = out.size
    if n == 0:
        return
    dev = out._device._id
    key = (op, ct, out._dtype, a._dtype, b._dtype, out._shape, out._strides, a._shape, a._strides,
           b._shape, b._strides, dev)
    d = _binary_launches.get(key)
    if d is None:
        family, expr, grid, swap, extra = _binary_desc(op, a, b, out, ct)
        d = bind(family, expr, dev, (_P0, _P0, _P0) + extra, (0, 1, 2)) + (grid, swap)
        if len(_binary_launches) >= _LAUNCHES_MAX:
            _binary_launches.clear()
        _binary_launches[key] = d
    k, tail, grid, swap = d
    x, y = (b, a) if swap else (a, b)
    run(k, dev, grid, (out._buf.ptr + out._offset, x._buf.ptr + x._offset, y._buf.ptr + y._offset) + tail)


def _binary_desc(op, a, b, out, ct) -> tuple:
    """(family, expr, grid, swap operands, extra arguments) of the launch for binary()."""
    n = out.size
    head = f"op_{op}, {ctype(out._dtype)}, {ctype(ct)}, {ctype(a._dtype)}, {ctype(b._dtype)}"
    merged = _merged_or_flat(out, (a, b))
    if merged is None:
        return (FAMILY, f"gp_binary_contig<{head}>",
                contig_grid(n, out._dtype.itemsize, a._dtype.itemsize, b._dtype.itemsize), False, (_i64(n),))
    d = _binary_2d(op, a, b, out, ct, head, merged)
    if d is not None:
        return d
    shape, strides = merged
    nd = nd_template(len(shape))
    spans = [_shapes.span_elements(shape, st) for st in strides]
    idx = index_type(n, spans)
    prm = strided_params(shape, strides, nd)
    nparam = np.int32(n) if idx == "int" else _i64(n)
    return (FAMILY, f"gp_binary_strided<{head}, {nd}, {idx}>", strided_grid(n), False, (prm, nparam))


_TILE = 32
_GRID_LIMIT = 2**31 - 1
ROWS_U = 2              # GP_ROWS_U: column vectors per thread in gp_binary_rows
ROWS_MAX = 16           # most rows one gp_binary_rows block walks down
ROWS_MIN_BLOCKS = 4096  # rows per block grow only while the grid keeps this many blocks
ROWS_FAMILY = "rows"    # gp_binary_short_rows (rows.cu): rows shorter than a gp_binary_rows chunk
SHORT_U = 2             # GP_SHORT_U: runs of outputs per thread in gp_binary_short_rows


def short_run(itemsize: int) -> int:
    """Outputs per run of a gp_binary_short_rows thread (gp::short_run in rows.cu)."""
    return 1 if itemsize >= 16 else (2 if itemsize == 8 else 4)


def _binary_2d(op, a, b, out, ct, head, merged):
    """The 2-d forms when the merged problem is a contiguous (R, C) output: ``tiled`` when
    one operand runs down the columns (a transposed view), else ``rows`` (broadcasts and
    sliced operands without per-element div/mod), or ``short_rows`` when several rows fit in
    one ``rows`` chunk (one division per run of outputs). None: not applicable."""
    shape, (so, sa, sb) = merged
    if len(shape) == 1:
        if so != (1,):
            return None
        R, C = 1, shape[0]
        sa, sb = (0, sa[0]), (0, sb[0])
    elif len(shape) == 2:
        R, C = shape
        if so != (C, 1):
            return None
    else:
        return None
    if R >= _TILE and C >= _TILE:
        t_first = None
        if sa[0] == 1 and abs(sa[1]) > 1 and sb[1] in (0, 1):
            t_first, t, nn, st1, n0, n1 = True, a, b, sa[1], sb[0], sb[1]
        elif sb[0] == 1 and abs(sb[1]) > 1 and sa[1] in (0, 1):
            t_first, t, nn, st1, n0, n1 = False, b, a, sb[1], sa[0], sa[1]
        if t_first is not None:
            tiles = ((R + _TILE - 1) // _TILE) * ((C + _TILE - 1) // _TILE)
            if tiles <= _GRID_LIMIT:
                expr = (f"gp_binary_tiled<op_{op}, {ctype(out._dtype)}, {ctype(ct)}, {ctype(t._dtype)}, "
                        f"{ctype(nn._dtype)}, {'true' if t_first else 'false'}>")
                return (FAMILY, expr, tiles, not t_first, (_i64(R), _i64(C), _i64(st1), _i64(n0), _i64(n1)))
    tc = BLOCK * vec_width(out._dtype.itemsize) * ROWS_U
    if R > 1 and C < tc:
        # a rows chunk would leave most of its threads idle: walk the flat output instead
        n = R * C
        per_block = BLOCK * short_run(out._dtype.itemsize) * SHORT_U
        grid = (n + per_block - 1) // per_block
        if grid <= _GRID_LIMIT:
            idx = index_type(n + per_block, ())   # a run's first position reaches n + per_block - 1
            cast = np.int32 if idx == "int" else _i64
            return (ROWS_FAMILY, f"gp_binary_short_rows<{head}, {idx}>", grid, False,
                    (cast(n), cast(C), _i64(sa[0]), _i64(sa[1]), _i64(sb[0]), _i64(sb[1])))
    chunks = (C + tc - 1) // tc
    rpb = max(1, min(ROWS_MAX, (R * chunks) // ROWS_MIN_BLOCKS))
    grid = ((R + rpb - 1) // rpb) * chunks
    if grid > _GRID_LIMIT:
        return None
    return (FAMILY, f"gp_binary_rows<{head}>", grid, False,
            (_i64(R), _i64(C), _i64(sa[0]), _i64(sa[1]), _i64(sb[0]), _i64(sb[1]), np.int32(rpb)))


def scalar(op: str, a, value, swap: bool, out, ct) -> None:
    """out[...] = op(a, value) (or op(value, a) when ``swap``); ``value`` travels by value as ``ct``."""
    n = out.size
    if n == 0:
        return
    sw = "true" if swap else "false"
    s = scalar_arg(value, ct)
    tail = f"op_{op}, {ctype(out._dtype)}, {ctype(ct)}, {ctype(a._dtype)}, {sw}"
    merged = _merged_or_flat(out, (a,))
    if merged is None:
        launch(FAMILY, f"gp_scalar_contig<{tail}>", out._device._id,
               contig_grid(n, out._dtype.itemsize, a._dtype.itemsize),
               (_ptr(out._ptr), _ptr(a._ptr), s, _i64(n)))
        return
    _strided("scalar", tail, out, (a,), (s,), merged)


def copy_into(dst, src) -> None:
    """dst[...] = src, converting dtype in the kernel; ``src`` broadcasts to ``dst`` (any
    layouts; C-contiguous ones of one shape take a memoized contiguous plan)."""
    if src._shape == dst._shape and dst._is_c_contig() and src._is_c_contig():
        key = (src._dtype, dst._dtype)
        plan = _copy_plans.get(key)
        if plan is None:
            plan = _copy_plans[key] = contig_plan("unary", "identity", dst._dtype, dst._dtype, (src._dtype,))
        contig(plan, dst, src)
        return
    unary("identity", src, dst, dst._dtype)


def fill(dst, value) -> None:
    """dst[...] = value (already valid for dst's dtype)."""
    n = dst.size
    if n == 0:
        return
    t = ctype(dst._dtype)
    v = scalar_arg(value, dst._dtype)
    merged = _merged_or_flat(dst, ())
    if merged is None:
        launch(FAMILY, f"gp_fill_contig<{t}>", dst._device._id, contig_grid(n, dst._dtype.itemsize),
               (_ptr(dst._ptr), v, _i64(n)))
        return
    _strided("fill", t, dst, (), (v,), merged)


def where(cond, a, b, out) -> None:
    """out[...] = cond ? a : b (cond bool; all three broadcast to ``out``)."""
    n = out.size
    if n == 0:
        return
    head = f"{ctype(out._dtype)}, {ctype(a._dtype)}, {ctype(b._dtype)}"
    ops = (cond, a, b)
    merged = _merged_or_flat(out, ops)
    if merged is None:
        launch(FAMILY, f"gp_where_contig<{head}>", out._device._id,
               contig_grid(n, out._dtype.itemsize, a._dtype.itemsize, b._dtype.itemsize),
               (_ptr(out._ptr), _ptr(cond._ptr), _ptr(a._ptr), _ptr(b._ptr), _i64(n)))
        return
    _strided("where", head, out, ops, (), merged)
