"""CPU tier of the scan engine's look-back: tile shape and workspace layout against the
kernel header, the planner's tile/grid/index choices, the launch (block size, workspace
zeroing, prefetch flag), and a model of the decoupled look-back protocol run under random
interleavings of blocks (every tile must get its line's exclusive prefix, none may wait
forever).
"""
import re

import numpy as np
import pytest

import gparray._memory as _memory
from gparray._engine import _scan, _shapes
from gparray._kernels import _compile

SMS = 132


def _plan(shape, axis, isz=4, osz=4, strides=None, initial=False):
    if strides is None:
        strides = _shapes.c_strides(shape)
    return _scan.plan(tuple(shape), tuple(strides), axis, isz, osz, initial, SMS)


# ---------------------------------------------------------------------------- kernel mirror
def test_tile_constants_match_the_header():
    text = (_compile.INCLUDE_DIR / "gp" / "scan.cuh").read_text()
    defs = dict(re.findall(r"^#define (GP_SCAN_\w+) (\d+)", text, re.MULTILINE))
    assert int(defs["GP_SCAN_THREADS"]) == _scan.THREADS
    assert int(defs["GP_SCAN_VECS"]) == _scan.VECS
    assert int(defs["GP_SCAN_HEAD"]) == _scan.HEAD
    assert _scan.VECS & (_scan.VECS - 1) == 0 and _scan.THREADS % 32 == 0
    assert _scan.HEAD % 16 == 0
    src = _compile.family_source("scan")
    assert "__launch_bounds__(GP_SCAN_THREADS," in src


@pytest.mark.parametrize("isz,osz,tile", [
    (4, 4, 8192),      # float32 -> float32 (double accumulator): 4 per vector
    (8, 8, 4096),      # float64, int64
    (4, 8, 4096),      # int32 -> int64
    (1, 8, 4096),      # bool / int8 -> int64
    (1, 1, 8192),      # int8 -> int8 (dtype=): at most 4 per vector
    (8, 8, 4096),      # complex64 (16-byte accumulator)
    (16, 16, 2048),    # complex128
])
def test_tile_sizes(isz, osz, tile):
    assert _scan.tile_size(isz, osz) == tile
    assert tile == _scan.THREADS * _scan.VECS * _scan.scan_vec(isz, osz)


def test_workspace_layout():
    # 8-byte accumulators: one 16-byte descriptor per tile, all zeroed
    assert _scan.workspace_layout(32768, 8) == (128 + 16 * 32768, 128 + 16 * 32768)
    # 16-byte accumulators: status words (padded to 16 bytes) zeroed, values not
    assert _scan.workspace_layout(5, 16) == (128 + 32 + 5 * 32, 128 + 32)
    assert _scan.workspace_layout(4, 16) == (128 + 16 + 4 * 32, 128 + 16)
    for n in range(1, 40):
        total, zero = _scan.workspace_layout(n, 16)
        assert (zero - 128) % 16 == 0 and zero - 128 >= 4 * n and total - zero == 32 * n


# ---------------------------------------------------------------------------- planner
def test_one_long_line():
    p = _plan((2**28,), 0)
    assert (p.strategy, p.contig, p.tile, p.tiles_per_line, p.grid, p.idx) == \
        ("lookback", True, 8192, 2**15, 2**15, "int")
    q = _plan((2**24 + 17,), 0)
    assert (q.tiles_per_line, q.grid) == (2049, 2049)                   # a partial last tile
    assert _plan((2**31 + 5,), 0).idx == "long long"
    assert _plan((2**28,), 0, initial=True).contig is True              # out lines L + 1 long


def test_several_lines_never_share_a_tile():
    p = _plan((3, 3_000_001), 1, isz=4, osz=8)                          # int32 -> int64
    assert (p.strategy, p.contig, p.tile, p.n_lines) == ("lookback", True, 4096, 3)
    assert p.tiles_per_line == -(-3_000_001 // 4096) == 733 and p.grid == 3 * 733
    q = _plan((5, 1_000_003), 1, isz=8, osz=8, initial=True)            # float64, initial
    assert (q.tile, q.tiles_per_line, q.grid, q.s_out) == (4096, 245, 5 * 245, 1)
    assert q.lines[1] == [(1_000_004,), (1_000_003,)]                   # out, in line strides
    r = _plan((2**20 + 5,), 0, isz=16, osz=16)                          # complex128
    assert (r.tile, r.grid) == (2048, 513)


def test_strided_and_reversed_lines_use_the_guarded_path():
    p = _plan((9000,), 0, strides=(-1,))
    assert (p.strategy, p.contig, p.s_in) == ("lookback", False, -1)
    q = _plan((100000, 8), 0)
    assert (q.strategy, q.contig, q.n_lines, q.tiles_per_line) == ("lookback", False, 8, 13)


# ---------------------------------------------------------------------------- launch
class _Dev:
    _id = 0


class _Fake:
    def __init__(self, shape, dtype, strides=None, ptr=1 << 20):
        self._dtype = np.dtype(dtype)
        self._shape = tuple(shape)
        self._strides = tuple(strides) if strides is not None else \
            _shapes.c_strides(self._shape, self._dtype.itemsize)
        self._ptr = ptr
        self._device = _Dev()

    size = property(lambda self: _shapes.prod(self._shape))


class _Block:
    ptr = 1 << 30


@pytest.fixture
def launched(monkeypatch):
    got = {"launch": [], "alloc": [], "memset": []}

    def fake_launch(family, expr, device_id, grid, args, shared_mem=0, block=256):
        got["launch"].append((expr, grid, args, block))

    def fake_alloc(nbytes, dev, stream=None):
        got["alloc"].append(nbytes)
        return _Block()

    monkeypatch.setattr(_scan, "launch", fake_launch)
    monkeypatch.setattr(_memory, "alloc", fake_alloc)
    monkeypatch.setattr(_scan, "sm_count", lambda dev: SMS)
    monkeypatch.setattr(_scan, "_memset0", lambda ptr, n, dev: got["memset"].append((ptr, n)))
    return got


@pytest.mark.parametrize("dtype,out_dtype,acc", [("float32", "float32", 8), ("int32", "int64", 8),
                                                  ("complex64", "complex64", 16),
                                                  ("complex128", "complex128", 16)])
def test_lookback_launch(launched, dtype, out_dtype, acc):
    x = _Fake((3, 100_000), dtype)
    _scan.scan("sum", x, 1, _Fake((3, 100_000), out_dtype))
    (expr, grid, args, block), = launched["launch"]
    p = _scan.plan((3, 100_000), (100_000, 1), 1, x._dtype.itemsize, np.dtype(out_dtype).itemsize, False, SMS)
    assert expr.startswith("gp_scan_lookback<") and block == _scan.THREADS and grid == p.grid
    total, zero = _scan.workspace_layout(p.grid, acc)
    assert launched["alloc"] == [total] and launched["memset"] == [(_Block.ptr, zero)]
    assert args[-1] == _Block.ptr and int(args[-2]) == 1                # workspace, prefetch (contig)


def test_strided_lookback_does_not_prefetch(launched):
    x = _Fake((9000,), "float32", strides=(-4,), ptr=(1 << 20) + 4 * 8999)
    _scan.scan("sum", x, 0, _Fake((9000,), "float32"))
    (expr, grid, args, block), = launched["launch"]
    assert "false" in expr and int(args[-2]) == 0


def test_lines_launch_needs_no_workspace(launched):
    _scan.scan("sum", _Fake((100000, 10), "float32"), 1, _Fake((100000, 10), "float32"))
    (expr, grid, args, block), = launched["launch"]
    assert expr.startswith("gp_scan_lines<") and not launched["alloc"] and not launched["memset"]


# ---------------------------------------------------------------------------- look-back model
def _lookback_model(tiles_per_line, n_lines, seed, resident=6):
    """The protocol of gp::scan::lookback / gp_scan_lookback, one step per memory access,
    blocks interleaved at random (at most `resident` at once; a block takes its tile id from
    the counter when it starts). Descriptors are (status, value) pairs written and read
    whole, as the 16-byte accesses are. Returns {tile: exclusive prefix} and the values."""
    rng = np.random.default_rng(seed)
    n = tiles_per_line * n_lines
    vals = rng.integers(-1000, 1000, n)
    desc = [(0, 0)] * n
    counter = [0]
    result = {}

    def block():
        t = counter[0]                          # atomicAdd (the block's first step)
        counter[0] += 1
        tl = t % tiles_per_line
        agg = int(vals[t])
        yield
        desc[t] = (1 if tl > 0 else 2, agg)     # aggregate (inclusive for a line's first tile)
        yield
        prefix = 0
        if tl > 0:
            first, top = t - tl, t - 1
            while True:
                while True:
                    seen = []
                    for lane in range(32):      # the lanes' loads land at different times
                        i = top - lane
                        seen.append(desc[i] if i >= first else (2, 0))
                        yield
                    inc = sum(1 << j for j, (s, _) in enumerate(seen) if s == 2)
                    invalid = sum(1 << j for j, (s, _) in enumerate(seen) if s == 0)
                    before = ((inc & -inc) - 1) if inc else 0xFFFFFFFF
                    if not invalid & before:
                        break
                use = (((inc & -inc) << 1) - 1) & 0xFFFFFFFF if inc else 0xFFFFFFFF
                prefix += sum(v for j, (_, v) in enumerate(seen) if use >> j & 1)
                if inc:
                    break
                top -= 32
            desc[t] = (2, prefix + agg)
            yield
        result[t] = prefix

    running, started, steps = [], 0, 0
    while len(result) < n:
        if started < n and (len(running) < resident and (not running or rng.random() < 0.3)):
            g = block()
            next(g)
            running.append(g)
            started += 1
            continue
        g = running[rng.integers(len(running))]
        try:
            next(g)
        except StopIteration:
            running.remove(g)
        steps += 1
        assert steps < 10**7, "look-back made no progress"
    return result, vals


@pytest.mark.parametrize("tiles_per_line,n_lines", [(1, 5), (7, 3), (40, 2), (100, 1), (33, 4)])
@pytest.mark.parametrize("seed", range(3))
def test_lookback_protocol_under_random_interleavings(tiles_per_line, n_lines, seed):
    got, vals = _lookback_model(tiles_per_line, n_lines, seed, resident=2 + seed * 5)
    for line in range(n_lines):
        v = vals[line * tiles_per_line:(line + 1) * tiles_per_line]
        excl = np.concatenate([[0], np.cumsum(v)[:-1]])
        for tl in range(tiles_per_line):
            assert got[line * tiles_per_line + tl] == excl[tl]
