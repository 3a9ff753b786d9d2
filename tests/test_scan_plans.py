"""CPU tier of the scan engine's look-back: tile shape and workspace layout against the
kernel header, the planner's tile/grid/index choices, the launch (block size, the persistent
per-stream workspace zeroed once, unique epochs), and a model of the decoupled look-back
protocol (tile = blockIdx, epoch-tagged descriptors over a workspace full of stale ones) run
under random interleavings of blocks dispatched in blockIdx order (every tile must get its
line's exclusive prefix, none may wait forever).
"""
import gc
import itertools
import re
import threading
import weakref

import numpy as np
import pytest

import gparray._memory as _memory
from gparray._engine import _scan, _shapes
from _fakes import BindRun, FakeArray, isolate_engines
from gparray._kernels import _compile

SMS = 132


def _plan(shape, axis, isz=4, osz=4, strides=None, initial=False):
    if strides is None:
        strides = _shapes.c_strides(shape)
    return _scan.plan(tuple(shape), tuple(strides), axis, isz, osz, initial, SMS)


# ---------------------------------------------------------------------------- kernel mirror
def _lookback_body():
    src = _compile.family_source("scan")
    start = src.index("gp_scan_lookback(")
    return src[start:src.index("\n}\n", start)]


def test_tile_constants_match_the_header():
    text = (_compile.INCLUDE_DIR / "gp" / "scan.cuh").read_text()
    defs = dict(re.findall(r"^#define (GP_SCAN_\w+) (\d+)", text, re.MULTILINE))
    assert int(defs["GP_SCAN_THREADS"]) == _scan.THREADS
    assert int(defs["GP_SCAN_VECS"]) == _scan.VECS
    assert "GP_SCAN_HEAD" not in defs                                   # no tile counter
    assert _scan.VECS & (_scan.VECS - 1) == 0 and _scan.THREADS % 32 == 0
    src = _compile.family_source("scan")
    assert "__launch_bounds__(GP_SCAN_THREADS," in src


def test_workspace_record_matches_the_header():
    text = (_compile.INCLUDE_DIR / "gp" / "scan.cuh").read_text()
    words = int(re.search(r"static constexpr int REC = (\d+);", text).group(1))
    assert _scan.workspace_layout(1, 16) == (False, 8 * words)
    assert re.search(r"st_relaxed_v2\(d \+ 2 \* t,", text)             # packed: 16 bytes per tile


def test_lookback_kernel_takes_tile_from_blockidx_and_an_epoch():
    body = _lookback_body()
    assert "atomicAdd" not in body
    assert "int prefetch, unsigned char* __restrict__ ws,\n                 unsigned long long epoch)" in body
    assert "blockIdx.x" in body
    # the loads are issued before the block's first barrier
    assert body.index("x[k] = ") < body.index("__syncthreads()")


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
    # 8-byte accumulators: one 16-byte descriptor {status, value} per tile
    assert _scan.workspace_layout(32768, 8) == (True, 16 * 32768)
    assert _scan.workspace_layout(1, 4) == (True, 16)
    # 16-byte accumulators: a 48-byte record {status, unused, aggregate, inclusive} per tile,
    # at 48 t whatever the grid, so status words stay at the same bytes from launch to launch
    assert _scan.workspace_layout(5, 16) == (False, 5 * 48)
    for n in range(1, 40):
        assert _scan.workspace_layout(n, 16)[1] == 48 * n and _scan.workspace_layout(n, 8)[1] == 16 * n


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
_Fake = FakeArray


class _Block:
    """A fake pool Block: a distinct pointer per allocation."""

    def __init__(self, ptr, nbytes, stream):
        self.ptr, self.nbytes, self.stream = ptr, nbytes, stream


class _Host:
    """Fake device side: the current stream, allocations, memsets and launches, in order."""

    def __init__(self):
        self.stream = 0
        self.log = []                       # ("alloc", ptr, nbytes, stream) | ("memset", ptr, nbytes)
        self.launches = []                  # (expr, grid, args, block)
        self.blocks = []                    # weak references to every Block handed out
        self._next = 1 << 30
        self._lock = threading.Lock()

    def alloc(self, nbytes, dev, stream=None):
        with self._lock:
            b = _Block(self._next, nbytes, self.stream if stream is None else stream)
            self._next += -(-nbytes // 512) * 512 + 512
            self.log.append(("alloc", b.ptr, nbytes, b.stream))
            self.blocks.append(weakref.ref(b))
        return b

    def memset(self, ptr, nbytes, dev):
        with self._lock:
            self.log.append(("memset", ptr, nbytes))

    def launch(self, family, expr, device_id, grid, args, shared_mem=0, block=256):
        with self._lock:
            self.launches.append((expr, grid, args, block))
            self.log.append(("launch", expr, int(args[-2]) if expr.startswith("gp_scan_lookback") else None))

    def allocs(self):
        return [e for e in self.log if e[0] == "alloc"]


@pytest.fixture
def host(monkeypatch):
    h = _Host()
    br = BindRun(h.launch)
    monkeypatch.setattr(_scan, "bind", br.bind)
    monkeypatch.setattr(_scan, "run", br.run)
    monkeypatch.setattr(_memory, "alloc", h.alloc)
    monkeypatch.setattr(_scan, "sm_count", lambda dev: SMS)
    monkeypatch.setattr(_scan, "_memset0", h.memset)
    monkeypatch.setattr(_scan, "_stream_ptr", lambda dev: h.stream)
    isolate_engines(monkeypatch)
    monkeypatch.setattr(_scan, "_epochs", itertools.count(1))
    return h


def _sum(shape, dtype="float32", out_dtype=None, axis=-1, **kw):
    out_dtype = out_dtype or dtype
    x = _Fake(shape, dtype, **kw)
    _scan.scan("sum", x, axis % len(shape), _Fake(shape, out_dtype))
    return x


@pytest.mark.parametrize("dtype,out_dtype,acc", [("float32", "float32", 8), ("int32", "int64", 8),
                                                  ("complex64", "complex64", 16),
                                                  ("complex128", "complex128", 16)])
def test_lookback_launch(host, dtype, out_dtype, acc):
    x = _sum((3, 100_000), dtype, out_dtype, axis=1)
    (expr, grid, args, block), = host.launches
    p = _scan.plan((3, 100_000), (100_000, 1), 1, x._dtype.itemsize, np.dtype(out_dtype).itemsize, False, SMS)
    assert expr.startswith("gp_scan_lookback<") and block == _scan.THREADS and grid == p.grid
    packed, need = _scan.workspace_layout(p.grid, acc)
    assert packed == (acc == 8)
    (_, ptr, nbytes, stream), = host.allocs()
    assert nbytes == max(need, _scan.WS_MIN) and stream == 0
    # zeroed once, whole, before the launch that uses it; then the workspace and the epoch
    assert host.log == [("alloc", ptr, nbytes, 0), ("memset", ptr, nbytes), ("launch", expr, ptr)]
    assert type(args[-2]) is np.uint64 and int(args[-2]) == ptr
    assert type(args[-1]) is np.uint64 and int(args[-1]) == 1
    assert len(args) == 2 + 7 + 2                                       # out, a, 7 scalars, ws, epoch
    assert int(args[-3]) == _scan.prefetch_distance(0) == SMS           # contiguous: one tile per SM ahead


def test_strided_lookback_takes_the_same_arguments(host):
    _sum((9000,), strides=(-4,), ptr=(1 << 20) + 4 * 8999)
    _sum((9000,))
    (e1, _, a1, _), (e2, _, a2, _) = host.launches
    assert "false" in e1 and "true" in e2 and len(a1) == len(a2)
    assert int(a1[-2]) == int(a2[-2]) and (int(a1[-1]), int(a2[-1])) == (1, 2)
    assert int(a1[-3]) == 0 and int(a2[-3]) == SMS                      # no prefetch when strided


def test_lines_launch_needs_no_workspace(host):
    _sum((100000, 10), axis=1)
    (expr, grid, args, block), = host.launches
    assert expr.startswith("gp_scan_lines<") and not host.log[:-1] and not _scan._workspaces
    assert next(_scan._epochs) == 1                                     # no epoch consumed


def test_epochs_unique_and_workspace_persistent(host):
    # the same scan again and again: one allocation, zeroed once, epochs 1, 2, 3, ...
    for _ in range(5):
        _sum((2**20,))
    (_, ws, nbytes, _), = host.allocs()
    assert [int(a[-1]) for _, _, a, _ in host.launches] == [1, 2, 3, 4, 5]
    assert {int(a[-2]) for _, _, a, _ in host.launches} == {ws}
    assert [e for e in host.log if e[0] == "memset"] == [("memset", ws, nbytes)]
    # a scan needing more tiles than the workspace holds: a bigger one (at least doubled),
    # zeroed before its launch; the old Block is dropped (back to the stream-ordered pool)
    need = _scan.workspace_layout(_plan((2**32 // 8,), 0).grid, 8)[1]
    assert need > nbytes
    _sum((2**32 // 8,))
    a = host.allocs()
    assert len(a) == 2 and a[1][2] == max(need, 2 * nbytes)
    big = a[1][1]
    assert host.log[-2:] == [("memset", big, a[1][2]), ("launch", host.launches[-1][0], big)]
    gc.collect()
    assert host.blocks[0]() is None and host.blocks[1]() is not None
    # smaller scans reuse the big workspace (stale descriptors of the big one stay there)
    _sum((1000,))
    _sum((5, 70_000), axis=1)
    assert len(host.allocs()) == 2 and {int(a[-2]) for _, _, a, _ in host.launches[-2:]} == {big}
    # 16-byte accumulators: a workspace of their own (never the packed layout's bytes)
    _sum((2**20,), "complex128")
    assert len(host.allocs()) == 3 and int(host.launches[-1][2][-2]) != big
    _sum((2**20,), "float64")
    assert int(host.launches[-1][2][-2]) == big
    epochs = [int(a[-1]) for _, _, a, _ in host.launches]
    assert epochs == list(range(1, len(epochs) + 1))


def test_one_workspace_per_stream(host):
    _sum((2**20,))
    host.stream = 0x7F00
    _sum((2**20,))
    host.stream = 0
    _sum((2**20,))
    ws = [int(a[-2]) for _, _, a, _ in host.launches]
    assert ws[0] == ws[2] != ws[1]
    assert [e[3] for e in host.allocs()] == [0, 0x7F00]                 # allocated on its stream
    assert set(_scan._workspaces) == {(0, 0, True), (0, 0x7F00, True)}


def test_workspace_dict_is_bounded(host):
    for s in range(100, 100 + 3 * _scan.WS_MAX):
        host.stream = s
        _sum((5000,))
    assert len(_scan._workspaces) == _scan.WS_MAX
    assert {k[1] for k in _scan._workspaces} == set(range(100 + 2 * _scan.WS_MAX, 100 + 3 * _scan.WS_MAX))
    gc.collect()
    assert sum(r() is not None for r in host.blocks) == _scan.WS_MAX  # the dropped ones are freed


def test_per_thread_default_stream_is_per_thread(host):
    # handle 2 (cudaStreamPerThread) is another stream in every host thread: never share
    host.stream = _scan._PER_THREAD

    def work():
        _sum((2**20,))
        _sum((2**20,))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    _sum((2**20,))
    _sum((2**20,))
    ws = [int(a[-2]) for _, _, a, _ in host.launches]
    assert ws[0] == ws[1] and ws[2] == ws[3] and ws[0] != ws[2]        # reused inside a thread only
    assert len(host.allocs()) == 2


def test_threads_on_one_stream_get_unique_epochs(host):
    n_threads, n_calls = 8, 200
    barrier = threading.Barrier(n_threads)

    def work(i):
        barrier.wait()
        for j in range(n_calls):
            _sum(((1 + (i + j) % 3) * 2**20,))                          # some scans grow the workspace

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    epochs = [int(a[-1]) for _, _, a, _ in host.launches]
    assert len(epochs) == len(set(epochs)) == n_threads * n_calls and min(epochs) >= 1
    # every launch's workspace was zeroed before it (in log order) and is big enough
    zeroed = {}
    for e in host.log:
        if e[0] == "memset":
            zeroed[e[1]] = e[2]
        elif e[0] == "launch":
            assert e[2] in zeroed
    for expr, grid, args, _ in host.launches:
        assert zeroed[int(args[-2])] >= _scan.workspace_layout(grid, 8)[1]
    assert len(host.allocs()) <= 3                                      # grown, never per call


# ---------------------------------------------------------------------------- look-back model
class _Deadlock(AssertionError):
    pass


def _lookback_model(tiles_per_line, n_lines, seed, resident=6, packed=True, order="blockidx",
                    check_epoch=True):
    """The protocol of gp::scan::lookback / gp_scan_lookback, one step per memory access.

    Tile = blockIdx. The workspace starts full of stale state: status words of other epochs
    (0 = freshly zeroed, earlier ones, and later ones: a launch enqueued later by another
    host thread may have run first) with random flags and values. Blocks are dispatched in
    blockIdx order (``order="reverse"``: the opposite, a negative control) into a window of at
    most ``resident`` blocks; a new one may enter only when there is room, i.e. after one
    finished, and then only maybe (dispatch delays). Resident blocks are interleaved at random.
    ``packed``: 16-byte descriptors (status word, value) written and read whole; else status
    words plus aggregate/inclusive value arrays, value stored before status, and a reader
    reads the value the status names after polling (release/acquire: sequentially consistent
    here). Returns {tile: exclusive prefix}, the values and the final status words; raises
    _Deadlock when no block can make progress."""
    rng = np.random.default_rng(seed)
    n = tiles_per_line * n_lines
    vals = rng.integers(-1000, 1000, n)
    E = int(rng.integers(2, 40))                                        # this launch's epoch

    def stale():
        e = int(rng.choice([0, int(rng.integers(1, E)), int(rng.integers(E + 1, E + 1000))]))
        return 0 if e == 0 else (e << 2) | int(rng.integers(0, 4)), int(rng.integers(-10**6, 10**6))

    init = [stale() for _ in range(n)]
    word = [w for w, _ in init]                                         # status words
    value = [v for _, v in init]                                        # packed: the value beside the word
    agg = [int(rng.integers(-10**6, 10**6)) for _ in range(n)]          # non-packed value arrays (stale)
    inc = [int(rng.integers(-10**6, 10**6)) for _ in range(n)]
    result = {}
    progress = [0]

    def status(w):
        if not check_epoch:
            return w & 3 if w & 3 in (1, 2) else 0
        return w & 3 if w >> 2 == E else 0

    def publish(t, s, v):                                               # generator: its stores
        if packed:
            word[t], value[t] = (E << 2) | s, v                         # one 16-byte store
        else:
            (inc if s == 2 else agg)[t] = v                             # value first ...
            progress[0] += 1
            yield
            word[t] = (E << 2) | s                                      # ... then the status (release)
        progress[0] += 1
        yield

    def block(t):
        tl = t % tiles_per_line
        a = int(vals[t])
        yield                                                           # loads, the block's own scan
        yield from publish(t, 1 if tl > 0 else 2, a)                    # aggregate (inclusive for a line's first)
        prefix = 0
        if tl > 0:
            first, top = t - tl, t - 1
            while True:
                while True:
                    seen = []
                    for lane in range(32):                              # the lanes' loads land at different times
                        i = top - lane
                        if i < first:
                            seen.append((2, 0))
                        elif packed:
                            seen.append((status(word[i]), value[i]))
                        else:
                            seen.append((status(word[i]), None))
                        yield
                    inc_m = sum(1 << j for j, (s, _) in enumerate(seen) if s == 2)
                    invalid = sum(1 << j for j, (s, _) in enumerate(seen) if s == 0)
                    before = ((inc_m & -inc_m) - 1) if inc_m else 0xFFFFFFFF
                    if not invalid & before:
                        break
                use = (((inc_m & -inc_m) << 1) - 1) & 0xFFFFFFFF if inc_m else 0xFFFFFFFF
                for j, (s, v) in enumerate(seen):
                    if use >> j & 1:
                        i = top - j
                        if v is None:                                   # after the fence: the named value
                            v = (inc if s == 2 else agg)[i] if i >= first else 0
                            yield
                        prefix += v
                if inc_m:
                    break
                top -= 32
            yield from publish(t, 2, prefix + a)
        result[t] = prefix

    order_ = list(range(n)) if order == "blockidx" else list(range(n))[::-1]
    running, nxt, idle = [], 0, 0
    limit = 4000 * resident + 10000
    while len(result) < n:
        if nxt < n and len(running) < resident and (not running or rng.random() < 0.3):
            g = block(order_[nxt])
            nxt += 1
            next(g)
            running.append(g)
            idle = 0
            continue
        g = running[rng.integers(len(running))]
        before_p = progress[0]
        try:
            next(g)
        except StopIteration:
            running.remove(g)
            progress[0] += 1
        idle = 0 if progress[0] != before_p else idle + 1
        if idle > limit:
            raise _Deadlock(f"no progress: {len(running)} resident blocks all waiting")
    return result, vals, word, E


def _exclusive(vals, tiles_per_line, n_lines):
    out = {}
    for line in range(n_lines):
        v = vals[line * tiles_per_line:(line + 1) * tiles_per_line]
        excl = np.concatenate([[0], np.cumsum(v)[:-1]])
        for tl in range(tiles_per_line):
            out[line * tiles_per_line + tl] = int(excl[tl])
    return out


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "records"])
@pytest.mark.parametrize("tiles_per_line,n_lines", [(1, 5), (7, 3), (40, 2), (100, 1), (33, 4)])
@pytest.mark.parametrize("seed", range(3))
def test_lookback_protocol_under_random_interleavings(tiles_per_line, n_lines, seed, packed):
    resident = [1, 2, 7, 30][(seed + tiles_per_line) % 4]
    got, vals, word, E = _lookback_model(tiles_per_line, n_lines, seed, resident=resident, packed=packed)
    assert got == _exclusive(vals, tiles_per_line, n_lines)
    assert all(w == (E << 2) | 2 for w in word)                         # every tile ends inclusive, this epoch


def test_lookback_model_catches_out_of_order_dispatch():
    # negative control: blocks dispatched from the last tile down, fewer resident than the
    # line's tiles: the resident ones wait on tiles that never start
    with pytest.raises(_Deadlock):
        _lookback_model(40, 1, 0, resident=8, order="reverse")
    # all resident at once: any order completes
    got, vals, _, _ = _lookback_model(40, 1, 0, resident=40, order="reverse")
    assert got == _exclusive(vals, 40, 1)


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "records"])
def test_lookback_model_needs_the_epoch_check(packed):
    # negative control: a reader that trusts stale flags takes garbage for predecessors' values
    wrong = 0
    for seed in range(3):
        got, vals, _, _ = _lookback_model(100, 2, seed, resident=30, packed=packed, check_epoch=False)
        wrong += got != _exclusive(vals, 100, 2)
    assert wrong == 3
