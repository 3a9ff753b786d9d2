"""CPU tier of reductions, scans and searching: the strategy chosen for each shape/axis case,
a line-by-line emulation of the kernels' loops (every plan must visit exactly the elements
NumPy reduces, each once, in the right order for ordered ops and scans), dtype rules, and
an NVRTC compile (sm_90) of every instance the reduce, scan and search families register.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gparray._core import _dtypes as _dt
from gparray._engine import _reduce, _scan, _search, _shapes
from gparray._engine._launch import BLOCK
from gparray._kernels import _compile

SMS = 132


# ---------------------------------------------------------------------------- strategy table
def _plan(shape, axes, itemsize=4, strides=None, ordered=False, aligned=True):
    if strides is None:
        strides = _shapes.c_strides(shape)
    return _reduce.plan(tuple(shape), tuple(strides), tuple(axes), itemsize, ordered=ordered,
                        aligned=aligned, sms=SMS)


def test_whole_array_is_one_contiguous_row_cut_into_blocks():
    p = _plan((2**28,), (0,))
    assert (p.strategy, p.group, p.contig, p.n_out) == ("inner", 256, True, 1)
    assert p.splits == _reduce.BLOCKS_PER_SM * SMS and p.grid == p.splits
    assert p.seg * p.splits >= 2**28 and p.seg % 16 == 0
    assert p.ileave  # the splits sweep the array together, tile by tile
    assert p.finish == (32, 1, p.splits, 1)
    assert p.idx == "int"
    # the same for any C-contiguous shape reduced over every axis
    q = _plan((2**14, 2**14), (0, 1))
    assert (q.strategy, q.contig, q.splits, q.seg) == ("inner", True, p.splits, p.seg)


def test_small_whole_array_is_not_split():
    p = _plan((1000,), (0,))
    assert (p.strategy, p.group, p.contig, p.splits, p.finish, p.grid) == ("inner", 32, True, 1, (), 1)


def test_many_long_rows():
    # a block per row for sums; argmax (more work per element) gets a warp per row once the
    # rows fill every SM with warps (no block barrier)
    p = _plan((16384, 16384), (1,))
    assert (p.strategy, p.group, p.contig, p.splits, p.grid) == ("inner", 256, True, 1, 16384)
    q = _plan((16384, 16384), (1,), ordered=True)
    assert (q.strategy, q.group, q.contig, q.splits, q.grid) == ("inner", 32, True, 1, 16384 // 8)


def test_fewer_long_rows_get_a_block_each():
    p = _plan((4000, 16384), (1,))
    assert (p.strategy, p.group, p.contig, p.splits, p.grid) == ("inner", 256, True, 1, 4000)


def test_short_rows_get_a_warp_each():
    p = _plan((100000, 1000), (1,))
    assert (p.strategy, p.group, p.contig, p.splits) == ("inner", 32, True, 1)
    assert p.grid == math.ceil(100000 / 8)


def test_few_long_rows_are_split_with_a_second_pass():
    p = _plan((8, 100000), (1,))
    assert (p.strategy, p.group, p.contig) == ("inner", 256, True)
    assert p.splits == 24 and p.seg * p.splits >= 100000 and p.grid <= 4 * SMS
    assert p.finish[0] == 1 and p.finish[2:] == (p.splits, 1)


def test_columns_of_a_square_matrix_vectorize_and_split():
    p = _plan((16384, 16384), (0,))
    assert (p.strategy, p.group) == ("outer", 4)
    assert (1 << p.tx_log2, p.bx) == (_reduce.OUTER_TX_MAX, 16384 // 4 // _reduce.OUTER_TX_MAX)
    assert p.bx * p.splits <= _reduce.OUTER_BLOCKS_PER_SM * SMS < p.bx * (p.splits + 1)  # one wave
    assert p.grid == p.bx * p.splits and p.unroll == _reduce.UNROLL_OUTER
    assert p.finish == (1, 64, p.splits, 1)  # states output-major: ws[o * splits + s]


def test_columns_without_alignment_or_divisibility_are_scalar():
    assert _plan((4096, 4096), (0,), aligned=False).group == 1
    assert _plan((4096, 4098), (0,)).group == 1
    assert _plan((4096, 4096), (0,), itemsize=16).group == 1
    assert _plan((4096, 4096), (0,), itemsize=8).group == 2


def test_tall_narrow_columns_use_many_threads_along_the_reduced_axis():
    p = _plan((100000, 8), (0,))
    assert (p.strategy, p.group, 1 << p.tx_log2, p.bx) == ("outer", 4, 2, 1)
    assert p.splits == 97 and p.grid == 97
    assert p.finish == (32, 1, 97, 1)  # a warp per output combines the 97 splits' states


def test_one_block_wide_outer_reductions_split_into_more_blocks():
    p = _plan((1 << 22, 16), (0,))
    assert (p.strategy, p.group, p.bx) == ("outer", 4, 1)
    assert p.splits == _reduce.NARROW_OUTER_BLOCKS_PER_SM * SMS and p.finish[0] == 32
    w = _plan((1 << 18, 256), (0,))  # one block would span it with a warp or more across:
    assert (w.bx, 1 << w.tx_log2) == (4, _reduce.WIDE_SPLIT_TX)  # 16 threads across, 4 blocks
    assert w.grid == w.bx * w.splits == _reduce.WIDE_SPLIT_BLOCKS_PER_SM * SMS  # one full wave
    d = _plan((1 << 18, 256), (0,), itemsize=8)  # float64: 2 outputs a thread, 8 blocks across
    assert (d.group, d.bx, 1 << d.tx_log2, d.grid) == (2, 8, 16, _reduce.WIDE_SPLIT_BLOCKS_PER_SM * SMS)
    q = _plan((1 << 16, 4096), (0,))  # many blocks across the kept space: the usual count
    assert q.bx > 1 and q.bx * q.splits <= _reduce.OUTER_BLOCKS_PER_SM * SMS


def test_tiny_rows_use_a_thread_per_output():
    p = _plan((100000, 7), (1,))
    assert (p.strategy, p.group, p.splits) == ("outer", 1, 1)


def test_transposed_input_picks_by_strides():
    # x = m.T for a C-contiguous (N, M) m: shape (M, N), strides (1, M)
    assert _plan((300, 500), (1,), strides=(1, 300)).strategy == "outer"
    assert _plan((300, 500), (0,), strides=(1, 300)).strategy == "inner"
    # unordered whole reductions reorder axes: a transposed array is one contiguous run
    p = _plan((300, 500), (0, 1), strides=(1, 300))
    assert (p.strategy, p.contig) == ("inner", True)
    # argmax needs C-order flat indices: no reordering, strided inner loop
    q = _plan((300, 500), (0, 1), strides=(1, 300), ordered=True)
    assert (q.strategy, q.contig, q.r0, q.rs0) == ("inner", False, 500, 300)


def test_broadcast_axes_go_outermost():
    p = _plan((1000, 4096), (0, 1), strides=(0, 1))
    assert (p.r0, p.rs0, p.red) == (4096, 1, ((1000,), (0,)))
    # kept broadcast axis: rows read by groups, never threads along a stride-0 axis
    assert _plan((1000, 4096), (1,), strides=(0, 1)).strategy == "inner"


def test_axis_tuples_and_middle_axes():
    p = _plan((8, 64, 32), (0, 2))  # warps read the 32-element runs of the last axis
    assert (p.strategy, p.group, p.contig, p.kept) == ("inner", 32, False, ((64,), (32,)))
    assert (p.r0, p.rs0, p.red) == (32, 1, ((8,), (2048,)))
    assert _plan((8, 64, 32), (0, 1)).strategy == "outer"
    q = _plan((8, 64, 32), (1, 2))
    assert (q.strategy, q.contig, q.nr) == ("inner", True, 2048)


def test_empty_and_zero_d_plans():
    p = _plan((5, 0), (1,))
    assert p.nr == 0 and p.n_out == 5 and p.splits == 1
    q = _plan((), ())
    assert q.n_out == 1 and q.nr == 1
    r = _plan((4, 5), ())
    assert r.nr == 1 and r.n_out == 20


def test_64_bit_index_for_huge_arrays():
    assert _plan((2**31 + 64,), (0,)).idx == "long long"
    assert _plan((2**16, 2**16), (0,)).idx == "long long"


# ---------------------------------------------------------------------------- kernel emulation
def _offsets(shape, strides, i):
    """gp::strided_offsets for one operand."""
    off = 0
    for ext, st in zip(reversed(shape), reversed(strides)):
        q, r = divmod(i, ext)
        off += r * st
        i = q
    return off


class _Cursor:
    def __init__(self, red, r0, rs0):
        self.red, self.r0, self.rs0 = red, r0, rs0

    def seek(self, j):
        self.q, self.i = divmod(j, self.r0)
        self.qoff = _offsets(*self.red, self.q)

    def offset(self):
        return self.qoff + self.i * self.rs0

    def advance(self, step):
        self.i += step
        if self.i >= self.r0:
            dq = self.i // self.r0
            self.q += dq
            self.i -= dq * self.r0
            self.qoff = _offsets(*self.red, self.q)



def emulate_reduce(p, itemsize, ptr_elems=0):
    """{output: [(element offset, reduced index j), ...]} as the kernels visit them, plus the
    set of (output, split) partial states written (checked for completeness)."""
    U = p.unroll
    visits = {}
    partials = set()
    if p.strategy == "inner":
        gpb = BLOCK // p.group
        n_tasks = p.n_out * p.splits
        assert p.grid == -(-n_tasks // gpb)
        v = 1 if itemsize >= 16 else 16 // itemsize
        for task in range(p.grid * gpb):
            if task >= n_tasks:
                assert p.group < BLOCK
                continue
            o, s = divmod(task, p.splits)
            koff = _offsets(*p.kept, o)
            j0 = s * p.seg
            j1 = p.nr if p.nr - j0 < p.seg else j0 + p.seg
            seen = visits.setdefault(o, [])
            for lane in range(p.group):
                if p.contig:
                    if p.ileave:
                        j0, j1 = 0, p.nr
                    owner = not p.ileave or s == 0
                    n = j1 - j0
                    head = (v - (ptr_elems + koff + j0) % v) % v
                    head = min(head, n)
                    if owner and lane < head:
                        seen.append((koff + j0 + lane, j0 + lane))
                    jb = j0 + head
                    n -= head
                    nv = n // v

                    def vec(kk):
                        assert (ptr_elems + koff + jb + kk * v) % v == 0  # aligned vector
                        seen.extend((koff + jb + kk * v + e, jb + kk * v + e) for e in range(v))

                    step = p.group * U * (p.splits if p.ileave else 1)
                    full = nv - nv % (p.group * U)
                    k = lane + (s * p.group * U if p.ileave else 0)
                    while k < full:
                        for u in range(U):
                            vec(k + u * p.group)
                        k += step
                    if owner:
                        k = full + lane
                        while k < nv:
                            vec(k)
                            k += p.group
                        t = nv * v + lane
                        while t < n:
                            seen.append((koff + jb + t, jb + t))
                            t += p.group
                else:
                    c = _Cursor(p.red, p.r0, p.rs0)
                    j = j0 + lane
                    if j < j1:
                        c.seek(j)
                    while j < j1:
                        for u in range(U):
                            if j + u * p.group < j1:
                                seen.append((koff + c.offset(), j + u * p.group))
                                c.advance(p.group)
                        j += p.group * U
            if p.splits > 1:
                assert (o, s) not in partials
                partials.add((o, s))
    else:
        tx, vo = 1 << p.tx_log2, p.group
        ty = BLOCK // tx
        assert p.grid == p.bx * p.splits
        for blk in range(p.grid):
            s, b = divmod(blk, p.bx)
            for thr in range(BLOCK):
                txi, tyi = thr & (tx - 1), thr >> p.tx_log2
                o = (b * tx + txi) * vo
                if o >= p.n_out:
                    continue
                koff = _offsets(*p.kept, o)
                j0 = s * p.seg
                j1 = p.nr if p.nr - j0 < p.seg else j0 + p.seg
                c = _Cursor(p.red, p.r0, p.rs0)
                j = j0 + tyi
                if j < j1:
                    c.seek(j)

                def load(jj):
                    off = koff + c.offset()
                    assert (ptr_elems + off) % vo == 0  # aligned vector of vo outputs
                    for e in range(vo):
                        visits.setdefault(o + e, []).append((off + e, jj))
                    c.advance(ty)

                while j + (U - 1) * ty < j1:
                    for u in range(U):
                        load(j + u * ty)
                    j += U * ty
                while j < j1:
                    load(j)
                    j += ty
                if tyi == 0 and p.splits > 1:
                    for e in range(vo):
                        assert (o + e, s) not in partials
                        partials.add((o + e, s))
    if p.splits > 1:
        assert partials == {(o, s) for o in range(p.n_out) for s in range(p.splits)}
        # both first passes store state (o, s) at ws[o * splits + s]; the second pass reads
        # ws[o * so + s * ss]
        fg, fgrid, so, ss = p.finish
        assert {o * so + s * ss for o, s in partials} == {o * p.splits + s for o, s in partials}
        assert fgrid * (BLOCK // fg) >= p.n_out
    return visits


def _check_plan(shape, strides, axes, itemsize=4, ordered=False, ptr_elems=0):
    aligned = ptr_elems * itemsize % 16 == 0
    p = _reduce.plan(tuple(shape), tuple(strides), tuple(axes), itemsize, ordered=ordered,
                     aligned=aligned, sms=SMS)
    visits = emulate_reduce(p, itemsize, ptr_elems)
    # reference: element offsets of each output's reduced elements, in C order
    kept = [i for i in range(len(shape)) if i not in axes]
    red = sorted(axes)
    offs = np.zeros(shape, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        offs += (np.arange(n) * s).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
    n_out = _shapes.prod(shape[i] for i in kept)
    if n_out == 0:
        assert p.grid == 0
        return p
    ref = np.transpose(offs, kept + red).reshape(n_out, -1)
    assert p.n_out == n_out
    for o in range(n_out):
        got = visits.get(o, [])
        assert sorted(off for off, _ in got) == sorted(ref[o].tolist()), (o, p)
        if ordered:  # reduced index j is the C-order position within the reduced axes
            assert sorted(got, key=lambda t: t[1]) == [(int(off), j) for j, off in enumerate(ref[o])]
        else:
            assert sorted(j for _, j in got) == list(range(len(got)))
    return p


CASES = [
    ((37,), (0,)), ((5000,), (0,)), ((3, 4), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)),
    ((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)), ((6, 70), (1,)), ((70, 6), (0,)), ((9000, 3), (0,)),
    ((3, 9000), (1,)), ((2, 40000), (1,)), ((40000,), (0,)), ((64, 64), (0,)), ((4, 1, 5), (0, 1)),
    ((5, 0), (1,)), ((0, 5), (1,)), ((), ()), ((4, 5), ()), ((1, 1), (0,)), ((2, 2, 2, 2, 2, 3), (1, 3, 5)),
]


@pytest.mark.parametrize("shape,axes", CASES, ids=[f"{s}-{a}" for s, a in CASES])
@pytest.mark.parametrize("ordered", [False, True])
def test_emulated_plans_visit_every_element_once_c_layout(shape, axes, ordered):
    _check_plan(shape, _shapes.c_strides(shape), axes, ordered=ordered)


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("ptr_elems", [0, 1, 3])
def test_emulated_plans_with_misaligned_data(itemsize, ptr_elems):
    for shape, axes in [((5000,), (0,)), ((9, 130), (1,)), ((130, 8), (0,)), ((2, 20000), (1,)),
                        ((20000, 4), (0,))]:
        _check_plan(shape, _shapes.c_strides(shape), axes, itemsize=itemsize, ptr_elems=ptr_elems)


def test_emulated_plans_of_views():
    _check_plan((30, 20), (1, 30), (0,))           # transposed
    _check_plan((30, 20), (1, 30), (1,))
    _check_plan((30, 20), (1, 30), (0, 1), ordered=True)
    _check_plan((10, 9), (-9, 1), (0,))            # flipped rows
    _check_plan((10, 9), (9, -1), (1,), ordered=True)
    _check_plan((12, 7), (14, 2), (0, 1))          # every other column
    _check_plan((50, 40), (0, 1), (0,))            # broadcast rows
    _check_plan((50, 40), (0, 1), (0, 1))
    _check_plan((3, 5, 7), (1, 21, 3), (0, 2), ordered=True)


@pytest.mark.parametrize("ordered", [False, True])
def test_emulated_split_outer_plans(ordered):
    """Split outer reductions (one block wide, WIDE/NARROW counts), the cursor wrapping through
    reduced dimensions that do not merge (every other plane) and strided columns."""
    for shape, strides, axes in [((100, 41, 8), (2 * 41 * 8, 8, 1), (0, 1)), ((5000, 8), (8, 1), (0,)),
                                 ((4099, 64), (64, 1), (0,)), ((3000, 12), (24, 2), (0,))]:
        p = _check_plan(shape, strides, axes, ordered=ordered)
        assert p.strategy == "outer" and p.splits > 1 and p.bx * p.splits == p.grid, (shape, p)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4).flatmap(
    lambda shape: st.tuples(st.just(tuple(shape)),
                            st.permutations(range(len(shape))),
                            st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)),
                            st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)),
                            st.booleans())))
def test_emulated_plans_hypothesis(args):
    shape, perm, red_mask, flip, ordered = args
    base = _shapes.c_strides(tuple(shape[i] for i in perm))
    strides = [0] * len(shape)
    for k, i in enumerate(perm):
        strides[i] = base[k] * (-1 if flip[i] else 1)
    axes = tuple(i for i, r in enumerate(red_mask) if r)
    _check_plan(shape, tuple(strides), axes, ordered=ordered)


# ---------------------------------------------------------------------------- scan plans
def _scan_plan(shape, axis, strides=None, initial=False, isz=4, osz=4):
    if strides is None:
        strides = _shapes.c_strides(shape)
    return _scan.plan(tuple(shape), tuple(strides), axis, isz, osz, initial, SMS)


def test_scan_strategies():
    p = _scan_plan((2**28,), 0)
    assert (p.strategy, p.contig, p.tile, p.tiles_per_line, p.grid) == ("lookback", True, 8192, 32768, 32768)
    assert _scan_plan((2**20,), 0, isz=8, osz=8).tile == 4096
    assert _scan_plan((2**20,), 0, isz=1, osz=8).tile == 4096        # bool -> int64
    assert _scan_plan((2**20,), 0, isz=16, osz=16).tile == 2048
    assert _scan_plan((100000, 10), 1).strategy == "lines"             # many short lines
    assert _scan_plan((1000, 100000), 0).strategy == "lines"           # axis 0: coalesced across lines
    assert _scan_plan((1000, 10000), 0).contig is False                # too few lines: strided look-back
    q = _scan_plan((100, 100000), 1)
    assert (q.strategy, q.contig, q.tiles_per_line) == ("lookback", True, 13)
    r = _scan_plan((100000, 8), 0)                                     # few long strided lines
    assert (r.strategy, r.contig, r.s_in) == ("lookback", False, 8)
    assert _scan_plan((4, 0), 1, initial=True).strategy == "lines"     # only the initial values
    # stride 1 both sides; the kernel checks each line's alignment (L + 1 long out lines)
    assert _scan_plan((4, 3000), 1, initial=True).contig is True


def emulate_scan(p, shape, strides, axis, initial):
    """Output offset -> (input offset of the line start, input stride, elements combined)
    as the kernels write it (the look-back chain supplies the elements of earlier tiles)."""
    got = {}
    if p.strategy == "lines":
        for t in range(p.grid * BLOCK):
            if t >= p.n_lines:
                continue
            oo = _offsets(p.lines[0], p.lines[1][0], t)
            io = _offsets(p.lines[0], p.lines[1][1], t)
            if initial:
                got[oo] = (io, p.s_in, 0)
                oo += p.s_out
            for i in range(p.L):
                got[oo + i * p.s_out] = (io, p.s_in, i + 1)
        return got
    v = p.tile // (_scan.WARPS * _scan.VECS * 32)
    wseg = _scan.VECS * 32 * v
    for tile in range(p.grid):
        line, tl = divmod(tile, p.tiles_per_line)
        oo = _offsets(p.lines[0], p.lines[1][0], line)
        io = _offsets(p.lines[0], p.lines[1][1], line)
        o_line = oo + (p.s_out if initial else 0)
        for thr in range(BLOCK):
            lane, w = thr & 31, thr >> 5
            e0 = tl * p.tile + w * wseg + lane * v
            for k in range(_scan.VECS):
                for q in range(v):
                    e = e0 + k * 32 * v + q
                    if e < p.L:
                        assert o_line + e * p.s_out not in got
                        got[o_line + e * p.s_out] = (io, p.s_in, e + 1)
        if initial and tl == 0:
            got[oo] = (io, p.s_in, 0)
    return got


@pytest.mark.parametrize("shape,axis,strides", [
    ((10,), 0, None), ((5000,), 0, None), ((9000,), 0, (-1,)), ((3, 5000), 1, None), ((5000, 3), 0, None),
    ((200000, 2), 1, None), ((2, 3, 4), 1, None), ((4, 6), 0, (1, 4)), ((7, 0), 1, None), ((0, 7), 1, None),
])
@pytest.mark.parametrize("initial", [False, True])
def test_emulated_scans_follow_each_line(shape, axis, strides, initial):
    strides = _shapes.c_strides(shape) if strides is None else strides
    p = _scan_plan(shape, axis, strides, initial)
    got = emulate_scan(p, shape, strides, axis, initial)
    out_shape = list(shape)
    out_shape[axis] += int(initial)
    out_st = _shapes.c_strides(tuple(out_shape))
    expect = {}
    for idx in np.ndindex(*out_shape):
        ooff = sum(i * s for i, s in zip(idx, out_st))
        base = sum(i * s for d, (i, s) in enumerate(zip(idx, strides)) if d != axis)
        expect[ooff] = (base, strides[axis], idx[axis] + 1 - int(initial))
    assert got == expect


def _lookback_tile_values(vals, v, prefix):
    """gp_scan_lookback's arithmetic for one tile (sum): vector totals; per warp, the totals
    in sequence order (round k, lane l: position 32 k + l) go through the shared slots, lane
    j scans positions j * VECS ... j * VECS + VECS - 1 serially, one warp scan of the lane
    totals; a block scan of the warp totals; outputs rescanned from the raw elements with the
    prefixes. Returns (outputs, tile aggregate)."""
    K, W = _scan.VECS, _scan.WARPS
    x = vals.reshape(W, K, 32, v)                                     # (warp, round, lane, q)
    totals = x.sum(axis=3)                                            # vector totals
    slot = lambda p: p ^ ((p >> 5) & 15)                              # gp::scan::shape::slot
    pre = np.zeros((W, K, 32), vals.dtype)
    warp_tot = np.zeros(W, vals.dtype)
    for w in range(W):
        sv = np.zeros(32 * K, vals.dtype)
        for k in range(K):
            for lane in range(32):
                sv[slot(32 * k + lane)] = totals[w, k, lane]
        run = np.array([[sv[slot(j * K + i)] for i in range(K)] for j in range(32)])  # (lane j, K)
        excl_in = np.concatenate([np.zeros((32, 1), vals.dtype), np.cumsum(run, axis=1)[:, :-1]], axis=1)
        lane_tot = run.sum(axis=1)
        inc = np.cumsum(lane_tot)                                     # warp inclusive scan
        exc = np.concatenate([[0], inc[:-1]])                         # shfl_up, lane 0 = id
        for j in range(32):
            for i in range(K):
                sv[slot(j * K + i)] = exc[j] + excl_in[j, i]
        warp_tot[w] = inc[31]                                         # lane 31 -> s_warp
        for k in range(K):
            for lane in range(32):
                pre[w, k, lane] = sv[slot(32 * k + lane)]
    wexc = np.concatenate([[0], np.cumsum(warp_tot)[:-1]])
    out = prefix + wexc[:, None, None, None] + pre[..., None] + np.cumsum(x, axis=3)
    assert out.size == _scan.tile_size(16 // v, 16 // v) == W * K * 32 * v
    return out.reshape(-1), warp_tot.sum()


@pytest.mark.parametrize("v", [1, 2, 4])
def test_scan_tile_arithmetic(v):
    tile = _scan.WARPS * _scan.VECS * 32 * v
    a = np.random.default_rng(v).integers(-50, 50, 3 * tile)
    prefix, outs = 0, []
    for t in range(3):  # tiles chained through their aggregates (what the look-back sums)
        o, agg = _lookback_tile_values(a[t * tile:(t + 1) * tile], v, prefix)
        outs.append(o)
        prefix += agg
    np.testing.assert_array_equal(np.concatenate(outs), np.cumsum(a))


# ---------------------------------------------------------------------------- nonzero layout
def test_nonzero_layouts():
    assert _search.nonzero_layout((4, 5), (5, 1))[0] is True
    c, shape, strides, nd, idx = _search.nonzero_layout((4, 5), (1, 4))
    assert (c, shape, strides, nd, idx) == (False, (4, 5), (1, 4), 4, "int")
    assert _search.nonzero_layout((4, 5), (10, 2))[0] is False


# ---------------------------------------------------------------------------- dtype rules
def test_sum_and_float_result_dtypes():
    for dt in _dt._all_dtypes:
        sd = _reduce.sum_dtype(dt)
        if dt.kind in "bi":
            assert sd == _dt.int64
        elif dt.kind == "u":
            assert sd == _dt.uint64
        else:
            assert sd == dt
        assert _reduce.float_result(dt) == (dt if dt.kind in "fc" else _dt.float64)
    assert _reduce.acc_dtype(_dt.float32) == _dt.float64
    # float16 (extension): results stay float16, accumulated in double like NumPy's float32
    assert _reduce.sum_dtype(_dt.float16) == _reduce.float_result(_dt.float16) == _dt.float16
    assert _reduce.acc_dtype(_dt.float16) == _dt.float64
    assert _reduce.reducer("sum", _dt.float16, _dt.float16) == "gp::red::op_sum<gp::half, gp::half, double>"
    assert _reduce.acc_dtype(_dt.complex64) == _dt.complex128
    assert _reduce.acc_dtype(_dt.uint8) == _dt.uint64
    assert _reduce.acc_dtype(_dt.bool) == _dt.int64


def test_reducer_spellings():
    assert _reduce.reducer("sum", _dt.float32, _dt.float32) == "gp::red::op_sum<float, float, double>"
    assert _reduce.reducer("std", _dt.float64, _dt.float64) == "gp::red::op_var<double, double, true>"
    assert _reduce.reducer("argmax", _dt.int8, _dt.int64) == "gp::red::op_argmax<gp::int8>"
    with pytest.raises(ValueError):
        _reduce.reducer("median", _dt.float32, _dt.float32)


# ---------------------------------------------------------------------------- NVRTC compile-all
def _families():
    return {"reduce": _reduce.instances(), "scan": _scan.instances(), "search": _search.instances()}


def _chunks():
    out = []
    for fam, exprs in _families().items():
        for i in range(0, len(exprs), 100):
            out.append((fam, i))
    return out


def test_instance_lists_are_unique():
    for fam, exprs in _families().items():
        assert len(exprs) == len(set(exprs)), fam


@pytest.mark.parametrize("family,start", _chunks(), ids=[f"{f}-{i}" for f, i in _chunks()])
def test_every_instance_compiles(family, start):
    chunk = _families()[family][start:start + 100]
    cubin, mapping = _compile.nvrtc_compile(family, chunk, "90")
    assert len(mapping) == len(chunk) and all(mapping.values())
    assert cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------- launch arguments
# The engines' argument tuples against the kernels' C++ parameter lists (parsed from the .cu
# sources): count, order and NumPy scalar type of every argument, struct sizes of indexers.
import re  # noqa: E402

import gparray._memory as _memory  # noqa: E402
from _fakes import BindRun, FakeArray, isolate_engines  # noqa: E402


def _split_args(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _signature(family, kernel):
    src = _compile.family_source(family)
    m = re.search(r"template <([^>]*(?:<[^>]*>[^>]*)*)>\s*__global__ void __launch_bounds__\([^)]*\)\s*"
                  + kernel + r"\(([^{]*)\)\s*\{", src)
    assert m, kernel
    tparams = [t.split()[-1] for t in _split_args(m.group(1))]
    params = [" ".join(p.split()[:-1]) for p in _split_args(m.group(2))]
    return tparams, params


def _check_args(family, expr, args):
    name, targs = expr.split("<", 1)
    targs = _split_args(targs[:-1])
    tparams, params = _signature(family, name)
    assert len(targs) == len(tparams), (expr, tparams)
    env = dict(zip(tparams, targs))
    assert len(args) == len(params), (expr, params, args)
    for ctype, a in zip(params, args):
        ctype = ctype.replace("const ", "").replace("__restrict__", "").strip()
        if ctype.endswith("*"):
            assert type(a) is np.uint64, (expr, ctype, a)
        elif ctype.startswith("gp::StridedParams<"):
            narg, nd = _split_args(ctype[len("gp::StridedParams<"):-1])
            nd = int(env.get(nd, nd))
            assert isinstance(a, np.void) and a.dtype.itemsize == 8 * (1 + nd * (int(narg) + 1)), (expr, ctype)
            assert int(a["v"][0]) <= nd
        else:
            ctype = env.get(ctype, ctype)
            want = {"int": np.int32, "long long": np.int64, "unsigned long long": np.uint64,
                    "double": np.float64}[ctype]
            assert type(a) is want, (expr, ctype, type(a))


_Fake = FakeArray


class _Block:
    ptr = 1 << 30


@pytest.fixture
def launches(monkeypatch):
    got = []

    def fake_launch(family, expr, device_id, grid, args, shared_mem=0, block=256):
        assert grid >= 1
        got.append((family, expr, args))

    def fake_bind(family, expr, device_id, args, var, pdl=False):
        got.append((family, expr, args))
        assert tuple(var) == tuple(range(len(var)))  # the pointers lead
        # the second pass, and only it, is launched as the first pass's programmatic dependent
        assert pdl == expr.startswith("gp_reduce_finish<"), (expr, pdl)
        return (expr, len(var)), (b"tail",)

    def fake_run(k, device_id, grid, args, shared_mem=0, block=256):
        expr, nvar = k
        assert grid >= 1 and len(args) == nvar + 1 and args[-1] == b"tail", (expr, args)
        assert all(type(a) is int for a in args[:-1]), (expr, args)
        runs.append(expr)

    runs = []
    isolate_engines(monkeypatch)
    monkeypatch.setattr(_search, "launch", fake_launch)
    br = BindRun(fake_launch)
    monkeypatch.setattr(_scan, "bind", br.bind)
    monkeypatch.setattr(_scan, "run", br.run)
    monkeypatch.setattr(_reduce, "bind", fake_bind)
    monkeypatch.setattr(_reduce, "run", fake_run)
    monkeypatch.setattr(_memory, "alloc", lambda nbytes, dev, stream=None: _Block())
    monkeypatch.setattr(_reduce, "sm_count", lambda dev: SMS)
    monkeypatch.setattr(_scan, "sm_count", lambda dev: SMS)
    monkeypatch.setattr(_scan, "_memset0", lambda ptr, n, dev: None)
    monkeypatch.setattr(_scan, "_stream_ptr", lambda dev: 0)
    return got


@pytest.mark.parametrize("shape,axes", [((2**20,), (0,)), ((8, 100000), (1,)), ((100000, 8), (0,)),
                                        ((300, 70), (1,)), ((3, 4), (0,)), ((2**16, 2**16), (1,)),
                                        ((5, 0), (1,)), ((7, 9, 11), (0, 2))])
@pytest.mark.parametrize("op", ["sum", "var", "argmax", "all"])
def test_reduce_launch_arguments_match_the_kernels(launches, shape, axes, op):
    x = _Fake(shape, "float32")
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    out = _Fake(kept, "int64" if op == "argmax" else ("bool" if op == "all" else "float32"))
    _reduce.reduce(op, x, axes, out, 1.0)
    p = _reduce.plan(shape, _shapes.c_strides(shape), axes, 4, ordered=op == "argmax", sms=SMS)
    assert len(launches) == (2 if p.finish else 1)
    _reduce.reduce(op, x, axes, out, 1.0)  # memoized: the same bound kernels, nothing rebuilt
    assert len(launches) == (2 if p.finish else 1)
    for family, expr, args in launches:
        assert family == "reduce"
        _check_args(family, expr, args)


@pytest.mark.parametrize("shape,axis,initial", [((2**20,), 0, False), ((3, 5000), 1, True),
                                                ((100000, 10), 1, False), ((5000, 3), 0, True),
                                                ((4, 0), 1, True), ((2**16, 2**16), 1, False)])
def test_scan_launch_arguments_match_the_kernels(launches, shape, axis, initial):
    x = _Fake(shape, "int32")
    oshape = list(shape)
    oshape[axis] += int(initial)
    _scan.scan("sum", x, axis, _Fake(oshape, "int64"), initial)
    assert len(launches) == 1
    _check_args(*launches[0])


def test_search_launch_arguments_match_the_kernels(launches):
    x = _Fake((70, 300), "float64", strides=(8, 560))
    tiles = _search.nonzero_tiles(x.size)
    assert tiles == -(-21000 // _search.NZ_TILE)
    counts, incl = _Fake((tiles,), "int64", ptr=1 << 21), _Fake((tiles,), "int64", ptr=1 << 22)
    _search.nonzero_count(x, counts, incl)
    assert [f for f, _, _ in launches] == ["search", "scan"]
    _search.nonzero_write(x, incl, _Fake((2, 5), "int64", ptr=1 << 23))
    assert [f for f, _, _ in launches] == ["search", "scan", "search"]
    count_args, write_args = launches[0][2], launches[2][2]
    assert (int(count_args[0]), int(count_args[1])) == (1 << 21, 1 << 20)      # counts, x
    assert (int(write_args[0]), int(write_args[1]), int(write_args[2])) == (1 << 23, 5, 1 << 22)  # out, total, incl
    for launch in launches:
        _check_args(*launch)
    launches.clear()
    x1, x2, out = _Fake((50,), "float32"), _Fake((4, 5), "float64"), _Fake((4, 5), "int64")
    _search.searchsorted(x1, x2, out, np.dtype("float64"), True, _Fake((50,), "int64"))
    _search.searchsorted(x1, x2, out, np.dtype("float64"), False, None)
    for launch in launches:
        _check_args(*launch)


# ---------------------------------------------------------------------------- reducers on the host
# include/gp/reduce.cuh is plain C++17 once CUDA's qualifiers are defined away: g++ builds the
# reducers into a library; a host driver cuts the input into `parts` partitions (some empty),
# folds each with the kernels' chunk/fold calls, merges the partial states in a tree and
# finalizes, so every reducer's semantics (NaN, ties, empty states, wrapping, Welford/Chan)
# is checked against NumPy under arbitrary partitionings without a GPU.
import ctypes  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

_HOST_PRELUDE = r"""
#include <math.h>
#include <string.h>
#define __device__
#define __host__
#define __forceinline__ inline
#define __align__(n) alignas(n)
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline int __shfl_down_sync(unsigned, int v, int) { return v; }
static inline int __shfl_up_sync(unsigned, int v, int) { return v; }
static inline int __shfl_sync(unsigned, int v, int) { return v; }
static inline void __syncthreads() {}
static struct { unsigned x; } threadIdx;
#include "gp/types.cuh"
#include "gp/reduce.cuh"
using namespace gp::red;

// the state of [lo, hi) through the thread-loop interface, as the kernels use it: runs of
// 4 x 4 (tchunk_uv), then of 4 (tchunk), then single elements (tfold)
template <class R>
static typename R::acc_t part(const R& r, const typename R::in_t* a, long lo, long hi) {
    typename R::thread_t t = r.tstart();
    long j = lo;
    for (; j + 16 <= (lo + hi) / 2; j += 16) {
        typename R::in_t v[16];
        for (int k = 0; k < 16; ++k) v[k] = a[j + k];
        t = r.template tchunk_uv<4, 4>(t, v, j, 4);
    }
    for (; j + 4 <= hi; j += 4) {
        typename R::in_t v[4] = {a[j], a[j + 1], a[j + 2], a[j + 3]};
        t = r.template tchunk<4>(t, v, j, 1);
    }
    for (; j < hi; ++j) t = r.tfold(t, a[j], j);
    return r.tfinish(t);
}

template <class R>
static void run(const void* a, long n, long parts, double param, void* out) {
    R r(param);
    typedef typename R::acc_t A;
    A* st = new A[parts > 0 ? parts : 1];
    long per = parts > 0 ? (n + parts - 1) / parts : n;
    for (long p = 0; p < parts; ++p) {
        long lo = p * per < n ? p * per : n, hi = lo + per < n ? lo + per : n;
        st[p] = part(r, (const typename R::in_t*)a, lo, hi);
    }
    for (long w = 1; w < parts; w *= 2)            // pairwise merge in index order
        for (long p = 0; p + w < parts; p += 2 * w) st[p] = r.combine(st[p], st[p + w]);
    *(typename R::out_t*)out = r.finalize(parts > 0 ? st[0] : r.identity(), n);
    delete[] st;
}
"""

_HOST_OPS = {  # name -> (reducer template, input dtypes)
    "sum": ("op_sum<{t}, {o}, {c}>", ["bool", "int8", "int32", "int64", "uint8", "uint64", "float16",
                                      "float32", "float64", "complex64", "complex128"]),
    "prod": ("op_prod<{t}, {o}, {c}>", ["int8", "int64", "uint64", "float16", "float32", "float64",
                                        "complex128"]),
    "mean": ("op_mean<{t}, {o}, {c}>", ["int32", "float16", "float32", "float64", "complex64"]),
    "max": ("op_max<{t}>", ["bool", "int8", "uint32", "int64", "float16", "float32", "float64"]),
    "min": ("op_min<{t}>", ["bool", "int8", "uint32", "int64", "float16", "float32", "float64"]),
    "argmax": ("op_argmax<{t}>", ["bool", "int16", "uint64", "float16", "float32", "float64"]),
    "argmin": ("op_argmin<{t}>", ["bool", "int16", "uint64", "float16", "float32", "float64"]),
    "var": ("op_var<{t}, {o}, false>", ["int32", "float16", "float32", "float64"]),
    "std": ("op_var<{t}, {o}, true>", ["float16", "float32", "float64"]),
    "count_nonzero": ("op_count_nonzero<{t}>", ["bool", "int8", "float16", "float64", "complex64"]),
    "all": ("op_all<{t}>", ["bool", "int32", "float16", "float32", "complex128"]),
    "any": ("op_any<{t}>", ["bool", "int32", "float16", "float32", "complex128"]),
}
# results rounded to float16 (accumulated in double) agree to its precision
_RTOL16 = 1e-3


def _host_out_dtype(name, dt):
    dt = np.dtype(dt)
    if name in ("sum", "prod"):
        return _reduce.sum_dtype(dt)
    if name in ("mean", "var", "std"):
        return _reduce.float_result(dt)
    if name in ("argmax", "argmin", "count_nonzero"):
        return np.dtype("int64")
    if name in ("all", "any"):
        return np.dtype("bool")
    return dt


@pytest.fixture(scope="module")
def reducers(tmp_path_factory):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None or sys.platform != "linux":
        pytest.skip("no C++ compiler to build the reducers on the host")
    from gparray._kernels._registry import CTYPES

    lines = [_HOST_PRELUDE]
    for name, (tmpl, dts) in _HOST_OPS.items():
        for dt in dts:
            dt = np.dtype(dt)
            o = _host_out_dtype(name, dt)
            rd = tmpl.format(t=CTYPES[dt], o=CTYPES[o], c=CTYPES[_reduce.acc_dtype(o)])
            lines.append(f'extern "C" void r_{name}_{dt.name}(const void* a, long n, long parts, double p, '
                         f"void* out) {{ run<{rd}>(a, n, parts, p, out); }}")
    d = tmp_path_factory.mktemp("reducers")
    (d / "reducers_host.cpp").write_text("\n".join(lines) + "\n")
    cmd = [cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
           f"-I{_compile.INCLUDE_DIR}", str(d / "reducers_host.cpp"), "-o", str(d / "reducers_host.so")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    lib = ctypes.CDLL(str(d / "reducers_host.so"))

    def call(name, a, parts, param=0.0):
        a = np.ascontiguousarray(a)
        out = np.zeros((), _host_out_dtype(name, a.dtype))
        getattr(lib, f"r_{name}_{a.dtype.name}")(ctypes.c_void_p(a.ctypes.data), ctypes.c_long(a.size),
                                                  ctypes.c_long(parts), ctypes.c_double(param),
                                                  ctypes.c_void_p(out.ctypes.data))
        return out[()]
    return call


PARTS = [1, 2, 3, 7, 64, 1000]


def _data(dt, n, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0, 100, n).astype(dt)
    a = rng.standard_normal(n) * 10
    if dt.kind == "c":
        a = a + 1j * rng.standard_normal(n)
    return a.astype(dt)


@pytest.mark.parametrize("name", sorted(_HOST_OPS))
@pytest.mark.parametrize("n", [0, 1, 5, 37, 1000])
def test_host_reducers_match_numpy(reducers, name, n):
    for dt in _HOST_OPS[name][1]:
        a = _data(dt, n, seed=n)
        if n and dt not in ("bool",):
            a[::5] = 0
        for parts in PARTS:
            if name in ("max", "min", "argmax", "argmin") and n == 0:
                continue
            got = reducers(name, a, parts)
            if name in ("sum", "prod"):
                o = _host_out_dtype(name, dt)
                if o.kind in "fc":
                    ref = getattr(np, name)(a.astype(_reduce.acc_dtype(o)))
                    atol = 8 * np.finfo(np.float32).eps * np.sum(np.abs(a)) if (o == "float32" and name == "sum") else 1e-300
                    rtol = _RTOL16 if o == "float16" else 1e-6 if o in ("float32", "complex64") else 1e-12
                    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
                else:
                    assert got == getattr(np, name)(a, dtype=o), (dt, parts)
            elif name == "mean":
                ref = np.mean(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)) if n else np.nan
                if n:  # float32 chunks add in float32: a few roundings of the magnitudes
                    atol = 8 * np.finfo(np.float32).eps * np.mean(np.abs(a)) if a.dtype == np.float32 else 0
                    np.testing.assert_allclose(got, ref, rtol=_RTOL16 if dt == "float16" else 1e-6, atol=atol)
                else:
                    assert np.isnan(got)
            elif name in ("var", "std"):
                ref = np.var(a.astype(np.float64)) if n else np.nan
                ref = np.sqrt(ref) if name == "std" else ref
                if n:
                    np.testing.assert_allclose(got, ref, rtol=_RTOL16 if dt == "float16" else 1e-6, atol=1e-12)
                else:
                    assert np.isnan(got)
            elif name == "count_nonzero":
                assert got == np.count_nonzero(a)
            else:
                ref = getattr(np, name)(a)
                assert got == ref, (name, dt, parts, got, ref)


@pytest.mark.parametrize("parts", PARTS)
def test_host_nan_ties_and_wrapping(reducers, parts):
    f = np.array([1.0, 3.0, np.nan, 3.0, -np.inf, np.nan, 3.0] * 5)
    assert np.isnan(reducers("max", f, parts)) and np.isnan(reducers("min", f, parts))
    assert np.isnan(reducers("sum", f, parts)) and np.isnan(reducers("var", f, parts))
    assert reducers("argmax", f, parts) == 2 and reducers("argmin", f, parts) == 2
    t = np.array([5.0, 1.0, 5.0, 1.0, 5.0] * 9)
    assert reducers("argmax", t, parts) == 0 and reducers("argmin", t, parts) == 1
    s = np.array([-np.inf] * 10 + [np.inf] * 3)
    assert reducers("argmax", s, parts) == 10 and reducers("argmin", s, parts) == 0
    assert reducers("max", s.astype(np.float32), parts) == np.inf
    h = f.astype(np.float16)   # float16: limits and NaN tests through gp::half
    assert np.isnan(reducers("max", h, parts)) and np.isnan(reducers("min", h, parts))
    assert reducers("argmax", h, parts) == 2 and reducers("argmin", h, parts) == 2
    assert reducers("max", s.astype(np.float16), parts) == np.inf
    assert reducers("min", s.astype(np.float16), parts) == -np.inf
    assert reducers("argmax", t.astype(np.float16), parts) == 0
    w = np.array([2**62] * 9, dtype=np.int64)
    assert reducers("sum", w, parts) == np.sum(w) and reducers("prod", w, parts) == np.prod(w)
    u = np.array([2**63 + 5] * 7, dtype=np.uint64)
    assert reducers("sum", u, parts) == np.sum(u) and reducers("prod", u, parts) == np.prod(u)
    b = np.array([True, False] * 20)
    assert reducers("argmax", b, parts) == 0 and reducers("argmin", b, parts) == 1
    assert reducers("sum", b, parts) == 20


@pytest.mark.parametrize("parts", PARTS)
def test_host_variance_of_data_with_a_large_mean(reducers, parts):
    rng = np.random.default_rng(3)
    a = 1e8 + rng.standard_normal(100000)
    ref = np.var(a)
    assert abs(reducers("var", a, parts) / ref - 1) < 1e-8
    f = (1e4 + rng.standard_normal(100000)).astype(np.float32)
    ref = np.var(f.astype(np.float64))
    assert abs(reducers("var", f, parts) / ref - 1) < 1e-6
    assert np.isnan(reducers("var", a[:3], parts, 3.0)) and np.isnan(reducers("std", a[:3], parts, 5.0))
    np.testing.assert_allclose(reducers("var", a[:10], parts, 1.5), np.var(a[:10]) * 10 / 8.5, rtol=1e-8)


# ---------------------------------------------------------------------------- regression: workspace allocator
class _PtrBlock:
    def __init__(self, ptr):
        self.ptr = ptr


def test_split_workspace_comes_from_the_allocator_of_the_moment(monkeypatch):
    """Regression (issue 11, the illegal address in the GPU tier): reduce() bound the pool's
    ``alloc`` into a module global at its first split reduction. When that first one ran
    under this file's test doubles (``_memory.alloc`` patched to a fake Block at 1 << 30),
    every later split reduction of the process wrote its partial states to 0x40000000+."""
    isolate_engines(monkeypatch)
    seen = []
    monkeypatch.setattr(_reduce, "bind", lambda family, expr, dev, args, var, pdl=False: ((expr, len(var)), (b"t",)))
    monkeypatch.setattr(_reduce, "run", lambda k, dev, grid, args, *rest, **kw: seen.append(args[1]))
    monkeypatch.setattr(_reduce, "sm_count", lambda dev: SMS)
    x, out = _Fake((100000, 8), "float32"), _Fake((8,), "float32")
    assert _reduce.plan((100000, 8), (8, 1), (0,), 4, sms=SMS).splits > 1   # needs a workspace
    for ptr in (1 << 30, 1 << 31, 1 << 32):
        monkeypatch.setattr(_memory, "alloc", lambda nbytes, dev, stream=None, p=ptr: _PtrBlock(p))
        _reduce.reduce("sum", x, (0,), out)
        assert seen[-2] == ptr, "the workspace must come from the allocator in place at the call"
