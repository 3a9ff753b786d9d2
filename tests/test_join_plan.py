"""CPU tier: the join engine (gparray/_engine/_join.py) that runs ``concat`` and ``stack`` as
one launch.

The inputs are NumPy views over one host "heap" (contiguous, sliced, stepped, transposed,
flipped, broadcast, at unaligned offsets), handed to the engine as layouts whose pointers
are their host addresses. A model of gp_join_params / gp_join_table (gparray/_kernels/
join.cu: both block-to-piece searches, the tiles, the units, the row/column stepping) then
runs every block of the planned launch on those host bytes and must

* read only inside each input's own elements, at addresses aligned to the unit it moves;
* write every byte of the pieces' columns exactly once, aligned, inside the output;
* give, with the inputs left to the elementwise copy, np.concatenate / np.stack.

Also: the plain-Python and NumPy table builders agree, the parameter and device tables'
bytes, the launch itself with CUDA stood in for (what is uploaded, from which stream), the
namespace's argument errors, and an NVRTC compile of every registered "join" instance.
"""
import ctypes
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gparray as xp
from gparray._engine import _join
from gparray._kernels import _compile
from gparray._kernels._launcher import _values, layout

from _fakes import FakeArray

BLOCK = _join.BLOCK


# ---------------------------------------------------------------------------- host memory
class Heap:
    """Bump allocator over one 64-byte-aligned host buffer of random bytes."""

    def __init__(self, nbytes=1 << 20, seed=0):
        raw = np.random.default_rng(seed).integers(0, 256, nbytes + 64, dtype=np.uint8)
        off = (-raw.ctypes.data) % 64
        self.buf = raw[off:off + nbytes]
        self.base = self.buf.ctypes.data
        self.top = 0

    def array(self, shape, dtype, skew=0):
        """A C-contiguous array of ``shape`` at a 64-byte boundary plus ``skew`` bytes."""
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) * dt.itemsize
        self.top = -(-self.top // 64) * 64 + skew
        a = np.ndarray(shape, dt, self.buf, self.top)
        self.top += max(n, 1)
        assert self.top <= self.buf.size
        if dt.kind == "b":
            a.view(np.uint8)[...] &= 1
        elif dt.kind in "fc":  # finite values: casts in the mixed-dtype cases stay defined
            a[...] = np.random.default_rng(self.top).integers(-50, 50, shape)
        return a


def fake(a):
    """The engine's view of NumPy array ``a`` (its host address as the pointer)."""
    return FakeArray(a.shape, a.dtype, a.strides, ptr=a.ctypes.data)


def view(a, kind, rng):
    """``a`` (C-contiguous) re-laid as ``kind``: the same shape and values, except
    "broadcast", whose first row repeats."""
    heap_arr = VIEW_HEAP.array
    if kind == "contiguous":
        return a
    if kind == "skewed":  # the same, at an address that is only itemsize-aligned
        b = heap_arr(a.shape, a.dtype, skew=a.dtype.itemsize * int(rng.integers(1, 4)))
    elif kind == "transposed":
        b = heap_arr(a.shape[::-1], a.dtype).T
    elif kind == "flipped":
        b = np.flip(heap_arr(a.shape, a.dtype), axis=int(rng.integers(a.ndim)) if a.ndim else None)
    elif kind == "step":  # every other element along one axis of a twice as long base
        ax = int(rng.integers(a.ndim)) if a.ndim else 0
        if not a.ndim:
            return a
        sh = list(a.shape)
        sh[ax] *= 2
        b = heap_arr(tuple(sh), a.dtype)[tuple(slice(None, None, 2) if d == ax else slice(None)
                                                for d in range(a.ndim))]
    elif kind == "inner_slice":  # a window of a wider base along the last axis
        if not a.ndim:
            return a
        sh = a.shape[:-1] + (a.shape[-1] + 3,)
        b = heap_arr(sh, a.dtype)[..., 1:1 + a.shape[-1]]
    elif kind == "broadcast":  # one row (or element) repeated along axis 0 by stride 0
        if not a.ndim or a.shape[0] == 0:
            return a
        one = heap_arr((1,) + a.shape[1:], a.dtype)
        one[...] = a[:1]
        return np.broadcast_to(one, a.shape)
    else:
        raise AssertionError(kind)
    b[...] = a
    return b


VIEW_HEAP = None
KINDS = ["contiguous", "skewed", "transposed", "flipped", "step", "inner_slice", "broadcast"]


# ---------------------------------------------------------------------------- kernel model
def find_params(starts, n, b):
    """gp_join_params' binary search."""
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if starts[mid] <= b:
            lo = mid
        else:
            hi = mid
    return lo


def find_table(starts, n, b):
    """gp_join_table's parallel search (__syncthreads_count over GP_JOIN_BLOCK candidates)."""
    starts = np.asarray(starts, dtype=np.int64)
    lo, hi = 0, n
    t = np.arange(BLOCK)
    while hi - lo > 1:
        step = (hi - lo + BLOCK - 1) // BLOCK
        c = lo + t * step
        c = c[c < hi]
        k = int(np.count_nonzero(starts[c] <= b))
        assert k >= 1
        lo += (k - 1) * step
        hi = min(lo + step, hi)
    return lo


def run_model(pl, out_base, mem, spans, written):
    """Every block of ``pl`` on host memory ``mem`` (address -> byte via mem.at); ``spans``:
    source address -> (lowest, highest + 1) byte of that input; ``written``: per output byte
    write counts (incremented)."""
    starts = [int(s) for s in pl.starts]
    assert starts[0] == 0 and len(starts) == pl.n + 1 and starts[pl.n] == pl.grid
    assert all(a < b for a, b in zip(starts, starts[1:])), "a piece without tiles"
    thr = np.arange(BLOCK, dtype=np.int64)
    for b in range(pl.grid):
        i = find_params(starts, pl.n, b)
        assert find_table(starts, pl.n, b) == i
        assert starts[i] <= b < starts[i + 1]
        src, sp, col, width, shift = (int(v) for v in pl.pieces[i])
        S, IT = 1 << shift, (_join.ITEMS16 if shift == 4 else _join.ITEMS)
        assert S * BLOCK * IT == _join.tile_bytes(shift)
        assert width % S == 0 and col + width <= pl.pitch
        wu = width // S
        n = pl.rows * wu
        base = (b - starts[i]) * BLOCK * IT + thr
        if pl.rows == 1:
            r, c, qb, rb = np.zeros_like(base), base.copy(), 0, BLOCK
        elif n <= 0xFFFFFFFF:
            ub = base & 0xFFFFFFFF
            r, c = ub // wu, ub % wu
            qb, rb = divmod(BLOCK, wu)
        else:
            r, c = base // wu, base % wu
            qb, rb = divmod(BLOCK, wu)
        lo, hi = spans[src]
        for j in range(IT):
            e = base + j * BLOCK
            m = e < n
            if m.any():
                assert (r[m] == e[m] // wu).all() and (c[m] == e[m] % wu).all()
                sa = src + r[m] * sp + c[m] * S
                da = out_base + r[m] * pl.pitch + col + c[m] * S
                assert (sa % S == 0).all() and (da % S == 0).all()
                assert sa.min() >= lo and sa.max() + S <= hi, "read outside the input"
                for k in range(S):
                    written[da + k - out_base] += 1
                    mem.out[da + k - out_base] = mem.at(sa + k)
            if pl.rows == 1:
                c = c + BLOCK
            else:
                c = c + rb
                r = r + qb
                wrap = c >= wu
                c[wrap] -= wu
                r[wrap] += 1


class Mem:
    def __init__(self, heaps, out):
        self.heaps = heaps
        self.out = out.view(np.uint8).reshape(-1)

    def at(self, addr):
        for h in self.heaps:
            rel = addr - h.base
            if (rel >= 0).all() and (rel < h.buf.size).all():
                return h.buf[rel]
        raise AssertionError("address outside every heap")


def span(a):
    lo, hi = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") else np.byte_bounds(a)
    return lo, hi


def spans_of(arrays):
    """Source address -> the bytes an input there may be read at (views that start at one
    address: the union of their spans)."""
    out = {}
    for a in arrays:
        lo, hi = span(a)
        if a.ctypes.data in out:
            lo, hi = min(lo, out[a.ctypes.data][0]), max(hi, out[a.ctypes.data][1])
        out[a.ctypes.data] = (lo, hi)
    return out


def _slow_copy(out_arr, layout_, src):
    """The elementwise copy of a left-over input, on host memory: ``layout_`` is a view of
    the output (byte offset and strides relative to ``out_arr``)."""
    off = layout_._buf.ptr + layout_._offset - out_arr.ctypes.data
    v = np.ndarray(layout_._shape, layout_._dtype, out_arr, off, layout_._strides)
    v[...] = src


def check_join(arrays, lead, ks, out_shape, odt, expected, builder=None):
    """Plan, model-run and compare: the bytes of the result equal ``expected``'s."""
    out = np.zeros(out_shape, odt)
    assert out.flags.c_contiguous
    fo = fake(out)
    fakes = [fake(a) for a in arrays]
    if builder is None:
        pl = _join.plan(fo, fakes, lead, ks)
    else:
        rows, pitch, sl = _join._geometry(fo, lead)
        n, starts, pieces, slow = builder(fo, fakes, lead, ks, rows, pitch, sl)
        pl = _join.JoinPlan(rows, pitch, n, starts, pieces, int(starts[n]), tuple(slow))
    written = np.zeros(out.nbytes, np.int64)
    mem = Mem([VIEW_HEAP, HEAP], out)
    run_model(pl, fo._ptr, mem, spans_of(arrays), written)
    slow = dict(pl.slow)
    for i, col in pl.slow:
        _slow_copy(out, _join.slow_view(fo, fakes[i], lead, col), arrays[i])
    # every byte of a piece written once, no byte of a left-over input written by the launch
    piece_bytes = int((written > 0).sum())
    assert (written <= 1).all()
    assert piece_bytes == sum(int(p[3]) for p in pl.pieces) * pl.rows
    for i, a in enumerate(arrays):
        if ks[i] and i not in slow:
            assert a.dtype == odt
    np.testing.assert_array_equal(out.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))
    return pl


HEAP = None


@pytest.fixture(autouse=True)
def _heaps():
    global HEAP, VIEW_HEAP
    HEAP, VIEW_HEAP = Heap(seed=1), Heap(seed=2)
    yield
    HEAP = VIEW_HEAP = None


# ---------------------------------------------------------------------------- cases
DTYPES = ["bool", "int8", "uint16", "int32", "float16", "float32", "int64", "float64", "complex64",
          "complex128"]


def _inputs(rng, dtype, shapes, kinds):
    return [view(HEAP.array(s, dtype, skew=np.dtype(dtype).itemsize * int(rng.integers(0, 2))), k, rng)
            for s, k in zip(shapes, kinds)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_every_layout_matches_numpy(dtype, kind, axis):
    rng = np.random.default_rng(hash((dtype, kind, axis)) % 2**32)
    base = [5, 3, 7]
    shapes = []
    for k in (2, 0, 1, 6):
        sh = list(base)
        sh[axis] = k
        shapes.append(tuple(sh))
    kinds = [kind, "contiguous", kind, "skewed"]
    arrays = _inputs(rng, dtype, shapes, kinds)
    ks = [s[axis] for s in shapes]
    out_shape = list(base)
    out_shape[axis] = sum(ks)
    check_join(arrays, axis, ks, tuple(out_shape), np.dtype(dtype), np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_matches_numpy(dtype, axis):
    rng = np.random.default_rng(7)
    shape = (4, 9)
    arrays = _inputs(rng, dtype, [shape] * 5, ["contiguous", "flipped", "skewed", "broadcast", "step"])
    ax = axis % 3
    out_shape = shape[:ax] + (5,) + shape[ax:]
    check_join(arrays, ax, [1] * 5, out_shape, np.dtype(dtype), np.stack(arrays, axis=ax))


@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "complex128"])
def test_concat_axis_none_flattens(dtype):
    rng = np.random.default_rng(3)
    arrays = _inputs(rng, dtype, [(3, 4), (), (0, 2), (5,), (2, 3, 2)],
                     ["transposed", "contiguous", "contiguous", "skewed", "flipped"])
    ks = [a.size for a in arrays]
    check_join(arrays, 0, ks, (sum(ks),), np.dtype(dtype), np.concatenate([a.reshape(-1) for a in arrays]))


def test_mixed_dtypes_leave_the_others_to_the_elementwise_copy():
    rng = np.random.default_rng(4)
    arrays = [HEAP.array((3, 5), "int8"), HEAP.array((2, 5), "int32"), HEAP.array((4, 5), "int16"),
              HEAP.array((1, 5), "int32")]
    odt = np.dtype("int32")
    pl = check_join(arrays, 0, [3, 2, 4, 1], (10, 5), odt, np.concatenate([a.astype(odt) for a in arrays]))
    assert [i for i, _ in pl.slow] == [0, 2] and pl.n == 2
    del rng


def test_units_follow_alignment():
    # float32 rows of 16 bytes at 16-byte boundaries: 16-byte units; a skewed input: 4 bytes
    a = HEAP.array((4, 4), "float32")
    b = HEAP.array((4, 4), "float32", skew=4)
    pl = check_join([a, b], 0, [4, 4], (8, 4), np.dtype("float32"), np.concatenate([a, b]))
    assert [int(p[4]) for p in pl.pieces] == [4, 2]
    # axis 1: row pitch 20 bytes (5 float32): 4-byte units whatever the addresses
    c, d = HEAP.array((3, 2), "float32"), HEAP.array((3, 3), "float32")
    pl = check_join([c, d], 1, [2, 3], (3, 5), np.dtype("float32"), np.concatenate([c, d], axis=1))
    assert [int(p[4]) for p in pl.pieces] == [2, 2]
    # bools of odd widths: bytes
    e, f = HEAP.array((3, 3), "bool"), HEAP.array((3, 2), "bool")
    pl = check_join([e, f], 1, [3, 2], (3, 5), np.dtype("bool"), np.concatenate([e, f], axis=1))
    assert [int(p[4]) for p in pl.pieces] == [0, 0]


def test_sizes_around_a_tile_and_not_a_multiple_of_the_unit():
    for n in (1, 3, 255, 256, 257, 511, 512, 513, 2047, 2048, 2049, 4097):
        a, b = HEAP.array((n,), "float32"), HEAP.array((n + 1,), "float32", skew=4)
        c = HEAP.array((2 * n,), "uint8")
        check_join([a, b], 0, [n, n + 1], (2 * n + 1,), np.dtype("float32"), np.concatenate([a, b]))
        check_join([c, c[1:], c[:n]], 0, [2 * n, 2 * n - 1, n], (5 * n - 1,), np.dtype("uint8"),
                   np.concatenate([c, c[1:], c[:n]]))


def test_rows_wider_and_narrower_than_a_block():
    # the column stepping: rows of 1 unit, of a few, of more than a block's threads
    for w in (1, 3, 255, 256, 257, 700):
        a, b = HEAP.array((7, w), "float64"), HEAP.array((7, 1), "float64", skew=8)
        check_join([a, b], 1, [w, 1], (7, w + 1), np.dtype("float64"), np.concatenate([a, b], axis=1))


def test_empty_inputs_and_empty_output():
    a, e, b = HEAP.array((3, 4), "int16"), HEAP.array((0, 4), "int16"), HEAP.array((2, 4), "int16")
    pl = check_join([e, a, e, b, e], 0, [0, 3, 0, 2, 0], (5, 4), np.dtype("int16"), np.concatenate([e, a, e, b, e]))
    assert pl.n == 2 and pl.slow == ()
    z = HEAP.array((0, 3), "int16")
    pl = check_join([z, z], 1, [3, 3], (0, 6), np.dtype("int16"), np.zeros((0, 6), np.int16))
    assert pl.grid == 0 and pl.n == 0 and pl.slow == ()
    pl = check_join([e, e], 0, [0, 0], (0, 4), np.dtype("int16"), np.zeros((0, 4), np.int16))
    assert pl.grid == 0


def test_one_input():
    a = HEAP.array((6, 5), "complex64")
    pl = check_join([a], 1, [5], (6, 5), np.dtype("complex64"), a)
    assert pl.n == 1 and pl.rows == 6


def test_negative_and_zero_row_steps_stay_in_the_launch():
    a = HEAP.array((6, 8), "float32")
    flipped, bcast = a[::-1], np.broadcast_to(a[:1], (6, 8))
    pl = check_join([flipped, bcast], 1, [8, 8], (6, 16), np.dtype("float32"),
                    np.concatenate([flipped, bcast], axis=1))
    assert pl.n == 2 and pl.slow == ()
    assert [int(p[1]) for p in pl.pieces] == [-32, 0]


@pytest.mark.parametrize("n", [63, 64, 65, 300, 1000])
def test_many_inputs_both_builders_agree(n):
    rng = np.random.default_rng(n)
    shapes = [(int(rng.integers(0, 4)), 3) for _ in range(n)]
    kinds = [KINDS[int(rng.integers(len(KINDS)))] if rng.random() < 0.2 else "contiguous" for _ in range(n)]
    arrays = _inputs(rng, "float32", shapes, kinds)
    ks = [s[0] for s in shapes]
    exp = np.concatenate(arrays)
    for builder in (_join._pieces_py, _join._pieces_np):
        pl = check_join(arrays, 0, ks, exp.shape, np.dtype("float32"), exp, builder)
    fakes = [fake(a) for a in arrays]
    fo = fake(np.zeros(exp.shape, np.float32))
    geo = _join._geometry(fo, 0)
    p1 = _join._pieces_py(fo, fakes, 0, ks, *geo)
    p2 = _join._pieces_np(fo, fakes, 0, ks, *geo)
    assert p1[0] == p2[0] and list(p1[1]) == list(p2[1]) and p1[3] == p2[3]
    assert [tuple(p) for p in p1[2]] == [tuple(int(v) for v in p) for p in p2[2]]
    del pl


@st.composite
def joins(draw):
    nd = draw(st.integers(1, 3))
    base = [draw(st.integers(1, 5)) for _ in range(nd)]
    axis = draw(st.integers(0, nd - 1))
    count = draw(st.integers(1, 6))
    ks = [draw(st.integers(0, 4)) for _ in range(count)]
    kinds = [draw(st.sampled_from(KINDS)) for _ in range(count)]
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    return base, axis, ks, kinds, dtype, seed


@settings(max_examples=150, deadline=None)
@given(joins())
def test_random_concats_match_numpy(case):
    global HEAP, VIEW_HEAP
    HEAP, VIEW_HEAP = Heap(1 << 16, seed=1), Heap(1 << 16, seed=2)
    base, axis, ks, kinds, dtype, seed = case
    rng = np.random.default_rng(seed)
    shapes = [tuple(k if d == axis else s for d, s in enumerate(base)) for k in ks]
    arrays = _inputs(rng, dtype, shapes, kinds)
    exp = np.concatenate(arrays, axis=axis)
    for builder in (_join._pieces_py, _join._pieces_np):
        check_join(arrays, axis, ks, exp.shape, np.dtype(dtype), exp, builder)


def test_src_pitch():
    f = _join.src_pitch
    assert f((3, 4), (16, 4), 1, 4) == 16
    assert f((3, 4), (32, 4), 1, 4) == 32           # sliced rows
    assert f((3, 4), (-16, 4), 1, 4) == -16         # flipped rows
    assert f((3, 4), (0, 4), 1, 4) == 0             # broadcast rows
    assert f((3, 4), (4, 12), 1, 4) is None         # transposed
    assert f((3, 4), (16, -4), 1, 4) is None        # flipped inside the row
    assert f((2, 3, 4), (96, 16, 4), 2, 4) is None  # rows that do not merge
    assert f((2, 3, 4), (48, 16, 4), 2, 4) == 16
    assert f((1, 3, 4), (999, 16, 4), 2, 4) == 16   # size-1 dimensions never matter
    assert f((1, 1, 4), (7, 5, 4), 2, 4) == 16      # one row: its bytes
    assert f((3, 1, 4), (16, 99, 4), 1, 4) == 16


def test_unit_shift():
    assert [_join.unit_shift(g) for g in (0, 1, 2, 3, 4, 8, 12, 16, 32, 48, 1 << 40, -16, -4)] == \
        [4, 0, 1, 0, 2, 3, 2, 4, 4, 4, 4, 4, 2]


def test_grid_beyond_the_limit_leaves_every_input_to_the_elementwise_copy(monkeypatch):
    monkeypatch.setattr(_join, "GRID_LIMIT", 3)
    a = HEAP.array((4096,), "float32")
    out = fake(np.zeros(8192 + 0, np.float32))
    pl = _join.plan(out, [fake(a), fake(a)], 0, [4096, 4096])
    assert pl.grid == 0 and pl.n == 0 and pl.slow == ((0, 0), (1, 4096 * 4))


# ---------------------------------------------------------------------------- tables, launch
def test_param_tables_fit_and_lay_out_as_the_kernel_reads_them():
    for cap in _join.PARAM_CAPS:
        st_, kinds, size, offs = layout(_join._proto(cap))
        assert offs == (0, 8, 16, 24, 32)                    # char*, ll, ll, int, Table<NV>
        assert size == 32 + 8 * (cap + 1 + 5 * cap) and size <= 4096
    a, b = HEAP.array((5,), "int32"), HEAP.array((3,), "int32", skew=4)
    out = fake(np.zeros(8, np.int32))
    pl = _join.plan(out, [fake(a), fake(b)], 0, [5, 3])
    raw = _join.param_table(pl, 4)
    vals = struct.unpack(f"<{5 + 20}q", raw)
    assert list(vals[:3]) == [int(s) for s in pl.starts] and vals[3:5] == (0, 0)
    assert vals[5:15] == tuple(int(v) for p in pl.pieces for v in p) and set(vals[15:]) == {0}
    words = _join.device_table(pl)
    assert words.dtype == np.int64 and list(words) == [int(s) for s in pl.starts] + list(vals[5:15])


def test_param_capacity():
    assert [_join.param_cap(n) for n in (1, 4, 5, 16, 17, 64, 65, 1000)] == [4, 4, 16, 16, 64, 64, None, None]


class _FakeRuntime:
    def __init__(self, uploads):
        self.uploads = uploads

    def memcpyAsync(self, dst, src, nbytes, kind, stream):
        assert kind == 1 and stream == 77
        self.uploads[dst] = ctypes.string_at(src, nbytes)   # the bytes at the time of the call

    def getDevice(self):
        return 0


class _FakeCupy:
    def __init__(self, uploads):
        self.cuda = type("cuda", (), {})()
        self.cuda.runtime = _FakeRuntime(uploads)
        self.cuda.get_current_stream = lambda device_id=-1: type("S", (), {"ptr": 77})()
        self.cuda.runtime.getDevice = lambda: 0


class _Blk:
    def __init__(self, ptr, nbytes, stream):
        self.ptr, self.nbytes, self.stream = ptr, nbytes, stream


@pytest.mark.parametrize("count", [2, 5, 17, 64, 65, 300])
def test_launch_decoded_runs_to_numpy(monkeypatch, count):
    """join() with CUDA stood in for: the launch arguments (the by-value table, or the table
    uploaded before the launch on the launch's stream) decode to the plan, which the model
    runs; the left-over inputs go through the elementwise copy into their views."""
    rng = np.random.default_rng(count)
    shapes = [(2, int(rng.integers(0, 5))) for _ in range(count)]
    kinds = ["transposed" if i % 7 == 3 else "contiguous" for i in range(count)]
    arrays = _inputs(rng, "int16", shapes, kinds)
    ks = [s[1] for s in shapes]
    exp = np.concatenate(arrays, axis=1)
    out = np.zeros(exp.shape, np.int16)
    fo = fake(out)
    launches, uploads, allocs, copies = [], {}, [], []
    monkeypatch.setattr(_join, "_kernels", {})
    monkeypatch.setattr(_join, "kernel", lambda fam, expr, dev, proto: (fam, expr, proto))
    monkeypatch.setattr(_join, "run", lambda k, dev, grid, args, block=256: launches.append((k, grid, args, block)))
    fake_cp = _FakeCupy(uploads)
    monkeypatch.setattr(_join._backend, "cupy", lambda: fake_cp)
    monkeypatch.setattr(_join._backend, "_cupy", fake_cp)       # runtime() / current_stream()
    monkeypatch.setattr(_join._backend, "_device_count", 1)

    def alloc(nbytes, dev, stream=None):
        blk = _Blk(0x10000 * (len(allocs) + 1), nbytes, stream)
        allocs.append(blk)
        return blk
    monkeypatch.setattr(_join._memory, "alloc", alloc)
    monkeypatch.setattr(_join._ew, "copy_into", lambda dst, src: copies.append((dst, src)))
    fakes = [fake(a) for a in arrays]
    _join.join(fo, fakes, 1, ks)
    assert len(launches) == 1
    (fam, expr, _), grid, args, block = launches[0]
    obase, pitch, rows, n, tab = args
    assert fam == "join" and block == BLOCK and obase == fo._ptr and rows == 2
    cap = _join.param_cap(n)
    if cap is not None:
        assert expr == f"gp_join_params<{cap}>" and not uploads
        # the parameter buffer the launcher packs from these values (Python path)
        st_, kinds, size, offs = layout(_join._proto(cap))
        raw = st_.pack(*_values(args, kinds))
        assert len(raw) == size and struct.unpack_from("<Qqqi", raw) == (obase, pitch, rows, n)
        vals = struct.unpack_from(f"<{cap + 1 + 5 * cap}q", raw, offs[4])
        starts, pieces = vals[:n + 1], np.array(vals[cap + 1:cap + 1 + 5 * n]).reshape(n, 5)
    else:
        assert expr == "gp_join_table" and len(allocs) == 1 and allocs[0].stream == 77
        words = np.frombuffer(uploads[tab], np.int64)
        assert tab == allocs[0].ptr and words.size * 8 == allocs[0].nbytes
        starts, pieces = words[:n + 1], words[n + 1:].reshape(n, 5)
    pl = _join.JoinPlan(rows, pitch, n, starts, pieces, grid, ())
    written = np.zeros(out.nbytes, np.int64)
    run_model(pl, fo._ptr, Mem([VIEW_HEAP, HEAP], out), spans_of(arrays), written)
    slow = [i for i, a in enumerate(arrays) if ks[i] and _join.src_pitch(a.shape, a.strides, 1, 2) is None]
    assert slow or count < 7
    assert [fakes.index(src) for _, src in copies] == slow
    for dst, src in copies:
        _slow_copy(out, dst, arrays[fakes.index(src)])
    np.testing.assert_array_equal(out, exp)


def test_nothing_is_launched_for_an_empty_result(monkeypatch):
    monkeypatch.setattr(_join, "run", lambda *a, **k: pytest.fail("launched"))
    monkeypatch.setattr(_join._ew, "copy_into", lambda *a: pytest.fail("copied"))
    z = HEAP.array((0, 3), "int8")
    _join.join(fake(np.zeros((0, 6), np.int8)), [fake(z), fake(z.T.T)], 1, [3, 3])


# ---------------------------------------------------------------------------- namespace
def _arr(shape, dtype="float32"):
    """A gparray Array over no memory (for the checks that come before any allocation)."""
    from gparray._array import Array
    from gparray._core._device import get_device

    dt = np.dtype(dtype)
    st_ = tuple(int(s) * dt.itemsize for s in np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]) if shape else ()
    return Array._new(type("B", (), {"ptr": 0})(), 0, tuple(shape), st_, dt, get_device(0))


def test_namespace_errors():
    with pytest.raises(TypeError, match="^concat: expected a gparray Array"):
        xp.concat([np.zeros(3)])
    with pytest.raises(TypeError, match="^stack: expected a gparray Array"):
        xp.stack([_arr((3,)), np.zeros(3)])
    with pytest.raises(ValueError, match="^concat: need at least one array"):
        xp.concat([])
    with pytest.raises(ValueError, match="^concat: zero-dimensional"):
        xp.concat([_arr(()), _arr(())])
    with pytest.raises(ValueError, match="^concat: shapes .* do not match off axis 1"):
        xp.concat([_arr((2, 3)), _arr((3, 3))], axis=1)
    with pytest.raises(ValueError, match="^concat: shapes .* do not match off axis 1"):
        xp.concat([_arr((2, 3)), _arr((2, 3, 1))], axis=1)
    with pytest.raises(ValueError, match="^concat: shapes"):
        xp.concat([_arr((2,)), _arr((2, 3))], axis=0)
    with pytest.raises(ValueError, match="^stack: all arrays must have the same shape"):
        xp.stack([_arr((2, 3)), _arr((3, 2))])
    with pytest.raises(IndexError, match="^concat: axis 2 is out of bounds"):
        xp.concat([_arr((2, 3))], axis=2)
    with pytest.raises(IndexError, match="^stack: axis -4 is out of bounds"):
        xp.stack([_arr((2, 3))], axis=-4)


@pytest.mark.parametrize("call,lead,ks,shape", [
    (lambda a: xp.concat([a((2, 3)), a((2, 5)), a((2, 0))], axis=1), 1, [3, 5, 0], (2, 8)),
    (lambda a: xp.concat([a((2, 3)), a((4, 3))]), 0, [2, 4], (6, 3)),
    (lambda a: xp.concat([a((2, 3)), a(()), a((4,))], axis=None), 0, [6, 1, 4], (11,)),
    (lambda a: xp.stack([a((2, 3))] * 3, axis=1), 1, [1, 1, 1], (2, 3, 3)),
    (lambda a: xp.stack([a((2, 3))] * 2, axis=-1), 2, [1, 1], (2, 3, 2)),
    (lambda a: xp.stack([a(())] * 4), 0, [1] * 4, (4,)),
])
def test_namespace_hands_the_engine_its_geometry(monkeypatch, call, lead, ks, shape):
    import gparray._api._creation as cr
    from gparray._api import _manipulation as mp

    got = []
    monkeypatch.setattr(cr, "_empty", lambda shape, dtype, dev: FakeArray(shape, dtype))
    monkeypatch.setattr(mp._join, "join", lambda out, arrays, lead_, ks_, addrs=None: got.append((out._shape, lead_, list(ks_))))
    out = call(_arr)
    assert got == [(shape, lead, ks)] and out._shape == shape


def test_namespace_promotes_mixed_dtypes(monkeypatch):
    import gparray._api._creation as cr
    from gparray._api import _manipulation as mp

    monkeypatch.setattr(cr, "_empty", lambda shape, dtype, dev: FakeArray(shape, dtype))
    monkeypatch.setattr(mp._join, "join", lambda *a: None)
    assert xp.concat([_arr((2,), "int8"), _arr((2,), "uint8")])._dtype == np.dtype("int16")
    assert xp.stack([_arr((2,), "float32"), _arr((2,), "int64"), _arr((2,), "float32")])._dtype == np.float64


# ---------------------------------------------------------------------------- compile-all
def test_every_join_instance_compiles_and_warmup_lists_them():
    from gparray import warmup

    ex = _join.instances()
    assert len(ex) == len(set(ex))
    assert set(warmup.instances(include_ops=False)["join"]) == set(ex)
    cubin, mapping = _compile.nvrtc_compile("join", ex, "90")
    assert len(mapping) == len(ex) and all(mapping.values())
    assert cubin[:4] == b"\x7fELF"


def test_kernel_constants_match_the_engine():
    src = _compile.family_source("join")
    assert f"#define GP_JOIN_BLOCK {_join.BLOCK}\n" in src
    assert f"#define GP_JOIN_ITEMS {_join.ITEMS} " in src
    assert f"#define GP_JOIN_ITEMS16 {_join.ITEMS16} " in src
