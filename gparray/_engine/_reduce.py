"""Reduction engine: a pure-Python planner picks a strategy from the merged shape, then one
launch of the "reduce" family (gparray/_kernels/reduce.cu), or two when the reduced space is
split across blocks (a second pass combines the partial states).

Planning (``plan``, tested on the CPU tier):

1. The kept axes and the reduced axes are merged separately (``merge_dims``). Reduced axes
   may be reordered first (smallest stride innermost, broadcast axes outermost) unless the
   op is ordered (argmax/argmin need C-order flat indices). The kept axes keep their order:
   output o is the o-th kept position in C order.
2. ``inner`` (a warp or a block per output, threads along the reduced space) when everything
   is reduced, or when the innermost reduced stride is smaller than the innermost kept one
   and the reduced extent fills a warp. ``contig`` when the reduced space is one stride-1
   run: 16-byte vector loads. Too few outputs for the machine: rows are cut into segments
   (``splits``) with a second pass; the whole-array case is one row cut into ~4 blocks/SM.
3. ``outer`` otherwise (threads along the kept dimensions, ``vo`` adjacent outputs per thread
   with vector loads when the kept innermost axis is contiguous): a block is TX x TY
   threads, TY of them along the reduced space (combined in shared memory), and the grid
   is split along the reduced space when the kept space alone cannot fill the machine
   (a kept space one block would span gets WIDE_SPLIT_TX threads across and
   WIDE_SPLIT_BLOCKS_PER_SM blocks: column sums of tall matrices).
4. Split plans write their partial states output-major (``ws[o * splits + s]``); the second
   pass is launched as the first's programmatic dependent (``bind(..., pdl=True)``): its
   blocks are scheduled while the first pass runs and wait for it on the device.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from .._core import _backend
from .._core import _dtypes as _dt
from .. import _memory
from . import _shapes
from ._launch import BLOCK, bind, ctype, index_type, nd_template, run, strided_params

FAMILY = "reduce"

# ---------------------------------------------------------------------------- tunables
INNER_WARP_MAX = 2048      # reduced extents up to this get a warp per output, longer a block ...
WARP_ROWS_PER_SM = 64      # ... unless there are this many outputs per SM (a full SM of
                           # warps) and the op is argmax/argmin (more work per element)
BLOCKS_PER_SM = 4          # split inner reductions aim at <= this many blocks per SM (one wave)
OUTER_BLOCKS_PER_SM = 2    # split outer reductions: the same ...
NARROW_OUTER_BLOCKS_PER_SM = 4  # ... or this many when one block of fewer than
NARROW_TX = 32             # NARROW_TX threads across spans every output (tall, narrow
                           # matrices: on an H100, mean/std/max over axis 0 of (2^22, 16) float32
                           # ran ~10% faster with 4 than with 2; with a warp or more across,
                           # sum over axis 0 of (2^18, 256) float32 took 104.5 us with 2 and
                           # 109.3 us with 4, float64 191.5 against 193.6)
UNROLL_WARP = 8            # vectors in flight per thread: inner, a warp per output
UNROLL_BLOCK = 4           # inner, a block per output
UNROLL_SPLIT = 8           # inner, rows split across blocks (the whole array)
UNROLL_OUTER = 8           # outer
MIN_SEG = 4096             # fewest elements in one segment of a split inner reduction
OUTER_TX_MAX = 128         # most threads of an outer block along the kept dimensions ...
WIDE_SPLIT_TX = 16         # ... or this many (and WIDE_SPLIT_BLOCKS_PER_SM) when one block of
WIDE_SPLIT_BLOCKS_PER_SM = 4  # OUTER_TX_MAX would span every output with a warp or more
                           # across (the split is then the whole grid): sum over axis 0 of
                           # (2^18, 256) float32 on an H200, first pass alone: 16 x 4 per
                           # SM 64.7 us, 64 x 4 67.0, 64 x 2 72-77, 16 x 2 70.9
MIN_ROWS_PER_THREAD = 8    # fewest reduced indices per thread of a split outer reduction
WS_STATE_BYTES = 32        # workspace bytes per partial state (>= sizeof of every acc_t)
DEFAULT_SMS = 132          # H200

ORDERED = frozenset({"argmax", "argmin"})
_ptr = np.uint64
_i32 = np.int32
_i64 = np.int64


class Plan(NamedTuple):
    """How one reduction runs. Shapes/strides are in elements, after merging."""

    strategy: str       # "inner" | "outer"
    group: int          # inner: threads per output (32 or 256); outer: outputs per thread (vo)
    contig: bool        # inner: reduced space is a single stride-1 run
    kept: tuple         # (shape, strides) of the kept dims
    red: tuple          # (shape, strides) of the reduced dims outside the innermost one
    r0: int             # innermost reduced extent
    rs0: int            # innermost reduced stride
    nr: int             # reduced elements per output
    n_out: int
    splits: int         # segments of the reduced space (1: no second pass)
    seg: int            # reduced elements per segment
    ileave: bool        # inner contig with splits: the splits take a row's tiles in turn
    unroll: int         # loads in flight per thread (template U)
    tx_log2: int        # outer: log2(threads along kept dims per block)
    bx: int             # outer: blocks along the kept dims
    grid: int
    finish: tuple       # () or (group, grid, so, ss) of the second pass
    nd: int
    idx: str            # "int" | "long long"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pow2ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _red_order(axes, strides, ordered: bool) -> list:
    if ordered:
        return list(axes)
    # outermost first: broadcast (stride 0) axes, then by decreasing |stride|
    return sorted(axes, key=lambda i: (1, -abs(strides[i])) if strides[i] else (0, 0))


@functools.lru_cache(maxsize=4096)
def plan(shape: tuple, strides: tuple, axes: tuple, itemsize: int, *, ordered: bool = False,
         aligned: bool = True, sms: int = DEFAULT_SMS) -> Plan:
    """The strategy for reducing an array of ``shape``/element ``strides`` over ``axes``.

    ``aligned``: the data pointer is 16-byte aligned (outer vector loads need it; inner ones
    check alignment at run time). ``sms``: multiprocessors of the device.
    """
    ndim = len(shape)
    axes = tuple(sorted(set(axes)))
    kept_axes = [i for i in range(ndim) if i not in axes]
    red_axes = _red_order(axes, strides, ordered)
    k_shape, (k_st,) = _shapes.merge_dims(tuple(shape[i] for i in kept_axes),
                                          [tuple(strides[i] for i in kept_axes)])
    r_shape, (r_st,) = _shapes.merge_dims(tuple(shape[i] for i in red_axes),
                                          [tuple(strides[i] for i in red_axes)])
    n_out = _shapes.prod(k_shape)
    nr = _shapes.prod(r_shape)
    if nr == 0:
        r_shape, r_st = (1,), (0,)
    r0, rs0 = r_shape[-1], r_st[-1]
    red = (r_shape[:-1], r_st[:-1])
    kept = (k_shape, k_st)
    nd = nd_template(max(len(k_shape), len(red[0]), 1))
    span = _shapes.span_elements(shape, strides)
    target = BLOCKS_PER_SM * sms
    ks0 = abs(k_st[-1]) or math.inf
    if n_out == 0:  # nothing to launch
        return Plan("inner", 32, False, kept, red, r0, rs0, nr, 0, 1, nr, False, 1, 0, 0, 0, (), nd, "int")

    if n_out == 1 or (nr >= 32 and 0 < abs(rs0) < ks0):
        contig = len(r_shape) == 1 and rs0 == 1
        group = 32 if (nr <= INNER_WARP_MAX or (ordered and n_out >= WARP_ROWS_PER_SM * sms)) else BLOCK
        splits = 1
        if _cdiv(n_out * group, BLOCK) < target and nr >= 2 * MIN_SEG:
            group = BLOCK
            splits = max(1, min(target // n_out, nr // MIN_SEG))  # floor: one wave
        seg = nr
        if splits > 1:
            seg = _cdiv(_cdiv(nr, splits), 16) * 16
            splits = _cdiv(nr, seg)
        n_tasks = n_out * splits
        grid = _cdiv(n_tasks, BLOCK // group)
        finish = ()
        if splits > 1:
            fg = 32 if splits >= 32 else 1
            finish = (fg, _cdiv(n_out, BLOCK // fg), splits, 1)
        idx = index_type(max(n_out * max(nr, 1), n_tasks, seg * splits), [span])
        unroll = UNROLL_SPLIT if splits > 1 else (UNROLL_WARP if group == 32 else UNROLL_BLOCK)
        return Plan("inner", group, contig, kept, red, r0, rs0, nr, n_out, splits, seg,
                    contig and splits > 1, unroll, 0, 0, grid, finish, nd, idx)

    v = 1 if itemsize >= 16 else min(16 // itemsize, 4)
    vo = 1
    if (v > 1 and aligned and k_st[-1] == 1 and k_shape[-1] % v == 0
            and all(s % v == 0 for s in k_st[:-1] + r_st)):
        vo = v
    groups = n_out // vo
    tx = min(_pow2ceil(groups), OUTER_TX_MAX)
    bx = _cdiv(groups, tx)
    per_sm = OUTER_BLOCKS_PER_SM
    if bx == 1:  # one block would span the kept space: the split is the whole grid
        if tx < NARROW_TX:
            per_sm = NARROW_OUTER_BLOCKS_PER_SM
        elif tx > WIDE_SPLIT_TX:
            tx, per_sm = WIDE_SPLIT_TX, WIDE_SPLIT_BLOCKS_PER_SM
            bx = _cdiv(groups, tx)
    ty = BLOCK // tx
    splits = 1
    target = per_sm * sms
    if bx < target:
        splits = max(1, min(target // bx, nr // (ty * MIN_ROWS_PER_THREAD)))  # floor: one wave
    seg = _cdiv(nr, splits)
    splits = _cdiv(nr, seg) if nr else 1
    fg = 32 if splits >= 32 else 1  # a warp per output combines many splits' states
    finish = (fg, _cdiv(n_out, BLOCK // fg), splits, 1) if splits > 1 else ()  # output-major
    idx = index_type(max(n_out * nr, (bx * tx + 1) * vo, seg * splits), [span])
    return Plan("outer", vo, False, kept, red, r0, rs0, nr, n_out, splits, seg, False, UNROLL_OUTER,
                tx.bit_length() - 1, bx, bx * splits, finish, nd, idx)


# ---------------------------------------------------------------------------- dtypes, reducers
def sum_dtype(dtype):
    """Default result dtype of sum/prod/cumulative_sum/cumulative_prod (spec): signed
    integers and bool -> int64, unsigned -> uint64, floating types unchanged."""
    k = dtype.kind
    if k in "bi":
        return _dt.int64
    if k == "u":
        return _dt.uint64
    return dtype


def float_result(dtype):
    """Result dtype of mean/var/std: floating types unchanged, integers -> float64."""
    return dtype if dtype.kind in "fc" else _dt.float64


def acc_dtype(out_dtype):
    """Accumulator of sum/prod/mean/scans: double for real floats (float16 included),
    complex128 for complex, 64-bit integers (same signedness; bool counts as signed)
    otherwise."""
    k = out_dtype.kind
    if k == "f":
        return _dt.float64
    if k == "c":
        return _dt.complex128
    if k == "u":
        return _dt.uint64
    return _dt.int64


# vector norms (gp::red::op_norm's KIND): the reduction's parameter is p of "norm_p"
NORMS = {"norm0": 0, "norm1": 1, "norm2": 2, "norm_max": 3, "norm_min": 4, "norm_p": 5}


def reducer(op: str, in_dtype, out_dtype) -> str:
    """C++ type of the reducer for ``op`` (see include/gp/reduce.cuh)."""
    ta, to = ctype(in_dtype), ctype(out_dtype)
    if op in NORMS:
        return f"gp::red::op_norm<{ta}, {to}, {NORMS[op]}>"
    if op in ("sum", "prod", "mean"):
        return f"gp::red::op_{op}<{ta}, {to}, {ctype(acc_dtype(out_dtype))}>"
    if op in ("var", "std"):
        return f"gp::red::op_var<{ta}, {to}, {'true' if op == 'std' else 'false'}>"
    if op in ("max", "min", "argmax", "argmin", "count_nonzero", "all", "any"):
        return f"gp::red::op_{op}<{ta}>"
    raise ValueError(f"reduce: unknown reduction {op!r}")


_sms: dict = {}


def sm_count(device_id: int) -> int:
    """Multiprocessors of a device (cached)."""
    n = _sms.get(device_id)
    if n is None:
        n = _sms[device_id] = int(_backend.runtime().deviceGetAttribute(16, device_id))  # cudaDevAttrMultiProcessorCount
    return n


def _packed(p: Plan) -> tuple:
    """Kernel arguments that depend only on the plan (indexers, extents, second pass)."""
    ix = _i32 if p.idx == "int" else _i64
    head = (strided_params(p.kept[0], [p.kept[1]], p.nd), strided_params(p.red[0], [p.red[1]], p.nd),
            ix(p.r0), ix(p.rs0), ix(p.nr), ix(p.seg))
    if p.strategy == "inner":
        tail = (_i32(p.splits), _i32(int(p.ileave)), ix(p.n_out * p.splits))
    else:
        tail = (ix(p.n_out), _i32(p.tx_log2), _i32(p.bx))
    fin = ()
    if p.finish:
        fg, fgrid, so, ss = p.finish
        fin = (_i64(p.n_out), _i32(p.splits), _i64(so), _i64(ss), _i64(p.nr))
    return head, tail, fin


_launches: dict = {}  # (op, dtypes, layout, axes, alignment, param, device) -> _Launch
_LAUNCHES_MAX = 4096
_P0 = _ptr(0)


class _Launch(NamedTuple):
    """Everything of one reduction's launches that does not depend on the data pointers:
    the kernels bound to their constant arguments (``Kernel.bind``) and those bytes."""

    plan: Plan
    kern: object        # bound main kernel: (out, ws, x) + tail
    tail: tuple
    fkern: object       # bound second pass (None without one): (out, ws) + ftail
    ftail: tuple
    ws_bytes: int


def _prepare(op: str, x, axes: tuple, out_dtype, aligned: bool, param: float) -> _Launch:
    isz = x._dtype.itemsize
    est = tuple(s // isz for s in x._strides)
    dev = x._device._id
    p = plan(x._shape, est, tuple(axes), isz, ordered=op in ORDERED, aligned=aligned, sms=sm_count(dev))
    rd = reducer(op, x._dtype, out_dtype)
    head, tail, fin = _packed(p)
    if p.strategy == "inner":
        expr = (f"gp_reduce_inner<{rd}, {p.group}, {'true' if p.contig else 'false'}, {p.unroll}, "
                f"{p.nd}, {p.idx}>")
    else:
        expr = f"gp_reduce_outer<{rd}, {p.group}, {p.unroll}, {p.nd}, {p.idx}>"
    prm = np.float64(param)
    k, ktail = bind(FAMILY, expr, dev, (_P0, _P0, _P0) + head + tail + (prm,), (0, 1, 2))
    fk, ftail = None, ()
    if p.finish:
        # the programmatic dependent of the first pass (see gp_pdl_wait in reduce.cu)
        fk, ftail = bind(FAMILY, f"gp_reduce_finish<{rd}, {p.finish[0]}>", dev, (_P0, _P0) + fin + (prm,), (0, 1),
                         pdl=True)
    ws_bytes = p.splits * p.n_out * WS_STATE_BYTES if p.splits > 1 else 0
    return _Launch(p, k, ktail, fk, ftail, ws_bytes)


def reduce(op: str, x, axes: tuple, out, param: float = 0.0):
    """out (C-contiguous, the kept axes in order) = ``op`` reduced over ``axes`` of ``x``;
    returns the launch description used (None when ``out`` is empty: nothing launched),
    which gparray/_engine/_reduce_fast.py records for the compiled repeat calls.

    An empty reduced space gives each op's empty result (0, 1, NaN, True/False...); the
    callers raise for max/min/argmax/argmin of nothing before coming here. The launch
    description is memoized per (op, dtypes, layout, axes, alignment, param, device).
    """
    if out.size == 0:
        return None
    xp = x._buf.ptr + x._offset
    dev = x._device._id
    key = (op, x._dtype, out._dtype, x._shape, x._strides, axes, xp % 16 == 0, param, dev)
    lp = _launches.get(key)
    if lp is None:
        lp = _prepare(op, x, axes, out._dtype, xp % 16 == 0, param)
        if len(_launches) >= _LAUNCHES_MAX:
            _launches.clear()
        _launches[key] = lp
    op_ = out._buf.ptr + out._offset
    ws = None
    wp = 0
    if lp.ws_bytes:
        # looked up on every call: a module-level copy bound at first use once captured a
        # test double's fake allocator for the rest of the process (illegal address)
        ws = _memory.alloc(lp.ws_bytes, dev)
        wp = ws.ptr
    run(lp.kern, dev, lp.plan.grid, (op_, wp, xp) + lp.tail)
    if lp.fkern is not None:
        run(lp.fkern, dev, lp.plan.finish[1], (op_, wp) + lp.ftail)
    return lp


# ---------------------------------------------------------------------------- instances
def default_reducers() -> list[tuple]:
    """(reducer, input dtype) for every op and input dtype the namespace reduces with its
    default result dtypes."""
    out = []
    for dt in _dt._supported_dtypes:
        kind = dt.kind
        sd = sum_dtype(dt)
        out += [(reducer("sum", dt, sd), dt), (reducer("prod", dt, sd), dt)]
        if kind in "iufc":
            out.append((reducer("mean", dt, float_result(dt)), dt))
        if kind in "iuf":
            out += [(reducer(o, dt, float_result(dt)), dt) for o in ("var", "std")]
        if kind != "c":
            out += [(reducer(o, dt, dt), dt) for o in ("max", "min")]
            out += [(reducer(o, dt, _dt.int64), dt) for o in ("argmax", "argmin")]
        out.append((reducer("count_nonzero", dt, _dt.int64), dt))
        out += [(reducer(o, dt, _dt.bool), dt) for o in ("all", "any")]
    return out


def norm_reducers() -> list[tuple]:
    """(reducer, input dtype) of every vector norm over the floating dtypes the norms take
    (float16 compiles on first use)."""
    out = []
    for dt in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        rt = _dt._complex_to_real.get(dt, dt)
        out += [(reducer(op, dt, rt), dt) for op in NORMS]
    return out


_MAIN_DTYPES = frozenset({"bool", "int32", "int64", "float32", "float64", "complex128"})
# the norms of the main real dtypes whose every variant is registered (the others: the
# whole-array pair)
_MAIN_NORMS = ("op_norm<float, float, 1>", "op_norm<float, float, 2>", "op_norm<double, double, 1>",
               "op_norm<double, double, 2>")


def _variants(rd: str, dt) -> list[str]:
    """Every strategy variant of reducer ``rd`` over input dtype ``dt`` (32-bit index, ND=4)."""
    out = []
    v = 1 if dt.itemsize >= 16 else min(16 // dt.itemsize, 4)
    for g, u in ((32, UNROLL_WARP), (BLOCK, UNROLL_BLOCK), (BLOCK, UNROLL_SPLIT)):
        for c in ("true", "false"):
            e = f"gp_reduce_inner<{rd}, {g}, {c}, {u}, 4, int>"
            if e not in out:
                out.append(e)
    out.append(f"gp_reduce_outer<{rd}, 1, {UNROLL_OUTER}, 4, int>")
    if v > 1:
        out.append(f"gp_reduce_outer<{rd}, {v}, {UNROLL_OUTER}, 4, int>")
    return out + [f"gp_reduce_finish<{rd}, 1>", f"gp_reduce_finish<{rd}, 32>"]


def instances() -> list[str]:
    """Registered "reduce" instances (32-bit index, ND=4): for bool, int32, int64, float32,
    float64 and complex128 inputs every strategy variant (inner warp/block x contig/strided,
    outer scalar/vector, both second passes); for the other dtypes (float16 included) the
    whole-array pair (contiguous block reduction + warp second pass). The vector norms: every
    variant of the 1- and 2-norms of float32 and float64, the whole-array pair of the others.
    Others compile on first use."""
    out = []
    for rd, dt in default_reducers():
        if dt.name not in _MAIN_DTYPES:
            out += [f"gp_reduce_inner<{rd}, {BLOCK}, true, {UNROLL_SPLIT}, 4, int>", f"gp_reduce_finish<{rd}, 32>"]
            continue
        out += _variants(rd, dt)
    for rd, dt in norm_reducers():
        if rd.endswith(_MAIN_NORMS):
            out += _variants(rd, dt)
        else:
            out += [f"gp_reduce_inner<{rd}, {BLOCK}, true, {UNROLL_SPLIT}, 4, int>", f"gp_reduce_finish<{rd}, 32>"]
    return out
