"""CPU tier: the set engine (gparray/_engine/_sets.py, kernels in gparray/_kernels/sets.cu).

* a NumPy model of the unique kernels' arithmetic (tiles, warps, rounds of 32 lanes, the
  head ballots and popcounts, the scan of tile counts, first positions and counts), checked
  against ``np.unique(..., equal_nan=False)`` on inputs with duplicates, NaNs, signed zeros
  and sizes around the tile boundary;
* a NumPy model of gp_isin's two-level search (shared samples, then the window between two
  samples) against ``np.isin`` for table sizes around every sample-count boundary;
* isin plans (sample stride, sample count, grid, contiguous/strided reads);
* the engines' launch arguments against the kernels' parameter lists;
* an NVRTC compile of every registered "sets" instance (no GPU needed);
* the namespace's argument errors that come before any device work; result field names.
"""
import re

import numpy as np
import pytest

import gparray as xp
from gparray._core import _dtypes as _dt
from gparray._api import _set_functions as _sf
from gparray._engine import _sets
from gparray._kernels import _compile

from _fakes import FakeArray, isolate_engines
from test_reduction_plans import _check_args, _split_args

LANES, ROUNDS, WARPS = 32, 16, _sets.BLOCK // 32


# ---------------------------------------------------------------------------- unique, modelled
def _heads(s):
    """head[e]: e == 0 or not s[e] == s[e - 1] (NumPy ==: NaN unequal, -0.0 == 0.0)."""
    h = np.ones(s.size, bool)
    h[1:] = ~(s[1:] == s[:-1])
    return h


def _model_unique(x):
    """The kernels' arithmetic in NumPy: (values, indices, inverse, counts) of flat ``x``."""
    perm = np.argsort(x, kind="stable")
    s = x[perm]
    n = s.size
    t = _sets.tiles(n)
    head = np.zeros(t * _sets.TILE, bool)
    head[:n] = _heads(s)
    counts = head.reshape(t, _sets.TILE).sum(1)              # gp_unique_count
    incl = np.cumsum(counts)                                   # scan engine
    total = int(incl[-1])
    values = np.empty(total, s.dtype)
    indices = np.empty(total, np.int64)
    inverse = np.empty(n, np.int64)
    first = np.empty(total + 1, np.int64)
    lanes = np.arange(LANES)
    upto = (1 << (lanes + 1)) - 1                              # 0xffffffff >> (31 - lane)
    for b in range(t):                                         # gp_unique_write
        pos_w = []
        pos = incl[b - 1] if b else 0
        masks = {}
        for w in range(WARPS):
            pos_w.append(pos)
            base = b * _sets.TILE + w * ROUNDS * LANES
            for k in range(ROUNDS):
                e = base + k * LANES + lanes
                m = int(np.sum(head[e].astype(np.int64) << lanes))  # ballot
                masks[w, k] = m
                pos += bin(m).count("1")
        for w in range(WARPS):
            pos = pos_w[w]
            base = b * _sets.TILE + w * ROUNDS * LANES
            for k in range(ROUNDS):
                m = masks[w, k]
                for lane in range(LANES):
                    e = base + k * LANES + lane
                    if e >= n:
                        continue
                    g = pos + bin(m & int(upto[lane])).count("1") - 1
                    if (m >> lane) & 1:
                        values[g], indices[g], first[g] = s[e], perm[e], e
                    inverse[perm[e]] = g
                    if e == n - 1:
                        first[total] = n
                pos += bin(m).count("1")
    return values, indices, inverse, np.diff(first)         # gp_unique_counts


def _samples(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "int":
        return rng.integers(-5, 6, n).astype(np.int16)
    if kind == "wide":
        return rng.integers(0, 2 * n + 1, n).astype(np.int64)
    a = rng.integers(-3, 4, n).astype(np.float64)
    a[rng.random(n) < 0.1] = np.nan
    a[rng.random(n) < 0.1] = -0.0
    a[rng.random(n) < 0.05] = np.inf
    a[rng.random(n) < 0.05] = -np.inf
    return a


@pytest.mark.parametrize("n", [1, 2, 31, 33, 4095, 4096, 4097, 9000])
@pytest.mark.parametrize("kind", ["int", "wide", "float"])
def test_unique_model_matches_numpy(kind, n):
    x = _samples(kind, n, n)
    v, i, inv, c = _model_unique(x)
    ev, ei, einv, ec = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(inv, einv.reshape(-1))
    np.testing.assert_array_equal(c, ec)
    assert np.isnan(v).sum() == np.isnan(x).sum() if kind == "float" else True
    if kind == "float":
        assert np.all(c[np.isnan(v)] == 1)


def test_unique_model_all_equal_and_signed_zeros():
    x = np.array([0.0, -0.0, 0.0, -0.0])
    v, i, inv, c = _model_unique(x)
    assert v.tolist() == [0.0] and not np.signbit(v[0]) and i.tolist() == [0] and c.tolist() == [4]
    v, i, inv, c = _model_unique(x[1:])
    assert np.signbit(v[0]) and i.tolist() == [0] and inv.tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------- isin, modelled
def _less(a, b):
    """gp::sets::less: ascending with NaNs last."""
    return a < b or (b != b and a == a)


def _model_isin_one(v, s2, stride, nsamp):
    smp = s2[::stride]
    assert smp.size == nsamp
    lo, hi = 0, nsamp
    while lo < hi:
        mid = (lo + hi) >> 1
        if _less(smp[mid], v):
            lo = mid + 1
        else:
            hi = mid
    found = lo < nsamp and smp[lo] == v
    if not found and lo > 0 and stride > 1:
        a = (lo - 1) * stride + 1
        b0 = min(lo * stride, s2.size)
        b = b0
        while a < b:
            mid = a + ((b - a) >> 1)
            if _less(s2[mid], v):
                a = mid + 1
            else:
                b = mid
        found = a < b0 and s2[a] == v
    return found


@pytest.mark.parametrize("n2", [1, 2, 7, 2047, 2048, 2049, 4096, 4097, 10000])
def test_isin_model_matches_numpy(n2):
    rng = np.random.default_rng(n2)
    s2 = np.sort(rng.integers(0, 3 * n2, n2).astype(np.float64))
    s2[rng.random(n2) < 0.02] = np.nan
    s2 = np.sort(s2)
    p = _sets.isin_plan((300,), (1,), n2, 8)
    x1 = np.concatenate([rng.integers(-2, 3 * n2 + 2, 290).astype(np.float64), s2[:5], [np.nan, -0.0, 0.0, np.inf]])
    x1 = x1[:300]
    got = np.array([_model_isin_one(v, s2, p.stride, p.nsamp) for v in x1])
    np.testing.assert_array_equal(got, np.isin(x1, s2))
    assert not got[np.isnan(x1)].any()


# ---------------------------------------------------------------------------- isin plans
@pytest.mark.parametrize("n2,isz,stride,nsamp", [(1, 4, 1, 1), (4096, 4, 1, 4096), (4097, 4, 2, 2049),
                                                 (65536, 4, 16, 4096), (65536, 8, 32, 2048), (65536, 1, 4, 16384),
                                                 (10**6, 8, 489, 2045)])
def test_isin_plan_samples(n2, isz, stride, nsamp):
    p = _sets.isin_plan((1000,), (1,), n2, isz)
    assert (p.stride, p.nsamp) == (stride, nsamp)
    assert p.nsamp <= _sets.samples_max(isz) and (p.nsamp - 1) * p.stride < n2 <= p.nsamp * p.stride


def test_isin_plan_layouts():
    assert _sets.isin_plan((4, 5), (5, 1), 10, 4).contig
    assert _sets.isin_plan((), (), 10, 4).contig
    p = _sets.isin_plan((4, 5), (1, 4), 10, 4)
    assert not p.contig and p.nd == 4 and p.idx == "int"
    p = _sets.isin_plan((2**24,), (1,), 10, 4, sms=132)
    assert p.grid == 132 * _sets.BLOCKS_PER_SM
    assert _sets.isin_plan((3,), (1,), 10, 4).grid == 1
    assert _sets.isin_plan((2**31 + 1,), (1,), 10, 4).idx == "long long"


# ---------------------------------------------------------------------------- launch arguments
@pytest.fixture
def launches(monkeypatch):
    got = []

    def fake_launch(family, expr, device_id, grid, args, shared_mem=0, block=256):
        assert grid >= 1
        got.append((family, expr, grid, args))

    isolate_engines(monkeypatch)
    monkeypatch.setattr(_sets, "launch", fake_launch)
    monkeypatch.setattr(_sets._memory, "alloc", lambda nbytes, dev=0, stream=None: type("B", (), {"ptr": 1 << 25})())
    from gparray._engine import _reduce

    monkeypatch.setattr(_reduce, "sm_count", lambda dev: 132)
    return got


def _check(family, expr, args):
    if "<" in expr:
        _check_args(family, expr, args)
        return
    src = _compile.family_source(family)
    m = re.search(r"__global__ void __launch_bounds__\([^)]*\)\s*" + expr + r"\(([^{]*)\)\s*\{", src)
    params = _split_args(m.group(1))
    assert len(params) == len(args)
    for p, a in zip(params, args):
        assert type(a) is (np.uint64 if "*" in p else np.int64), (p, a)


def test_unique_launch_arguments_match_the_kernels(launches):
    n = 10000
    s, perm = FakeArray((n,), "float32"), FakeArray((n,), "int64", ptr=1 << 22)
    values = FakeArray((7,), "float32", ptr=1 << 23)
    idx, inv, first = FakeArray((7,), "int64"), FakeArray((100, 100), "int64"), FakeArray((8,), "int64")
    incl = FakeArray((_sets.tiles(n),), "int64", ptr=1 << 24)
    _sets.unique_write(s, incl, values)
    _sets.unique_write(s, incl, values, perm, idx, inv, first)
    _sets.unique_write(s, incl, values, perm, None, inv, None)
    _sets.unique_write(s, incl, values, None, None, None, first)
    _sets.unique_counts(FakeArray((7,), "int64"), first)
    with pytest.raises(ValueError, match="^unique_write: "):
        _sets.unique_write(s, incl, values, None, None, inv, None)
    exprs = [e for _, e, _, _ in launches]
    assert exprs == ["gp_unique_write<float, false, false, false>", "gp_unique_write<float, true, true, true>",
                     "gp_unique_write<float, false, true, false>", "gp_unique_write<float, false, false, true>",
                     "gp_unique_counts"]
    assert all(g == _sets.tiles(n) for _, _, g, _ in launches[:4])
    assert int(launches[0][3][2]) == 0 and int(launches[1][3][5]) == 1 << 22    # no inverse; perm
    for fam, expr, _, args in launches:
        _check(fam, expr, args)
    assert set(exprs) <= set(_sets.instances())


@pytest.mark.parametrize("shape,strides", [((1000,), None), ((30, 40), (4, 160)), ((), None)])
@pytest.mark.parametrize("dt1,dt2", [("int32", "int32"), ("int8", "int64"), ("float16", "float16")])
def test_isin_launch_arguments_match_the_kernels(launches, shape, strides, dt1, dt2):
    x1 = FakeArray(shape, dt1, strides=None if strides is None else tuple(s // 4 * np.dtype(dt1).itemsize
                                                                            for s in strides))
    s2 = FakeArray((5000,), dt2, ptr=1 << 22)
    out = FakeArray(shape, "bool", ptr=1 << 23)
    ct = _dt._compute_dtype(np.dtype(dt2))
    _sets.isin(x1, s2, out, ct, True)
    *bitmap, (fam, expr, grid, args) = launches
    _check(fam, expr, args)
    assert int(args[0]) == 1 << 23 and int(args[4]) == 1 << 22 and int(args[5]) == 5000
    if dt1 == dt2 and (strides is None):
        assert expr in _sets.instances()
    if ct.kind in "iu":  # the bitmap: cleared, then set, then passed to the lookup
        assert [e.partition("<")[0] for _, e, _, _ in bitmap] == ["gp_isin_bits_clear", "gp_isin_bits_set"]
        cap = _sets.bitmap_bits(out.size)
        for f, e, g, a in bitmap:
            _check(f, e, a)
            assert e in _sets.instances() and int(a[1]) == 1 << 22 and int(a[3]) == cap
            assert int(a[0]) == int(args[8]) != 0
        assert int(args[9]) == cap and cap % 32 == 0
    else:
        assert not bitmap and int(args[8]) == 0


def _model_bitmap_isin(x1, s2, cap_bits):
    """NumPy model of gp_isin_bits_clear/_set and gp_isin's bitmap lookup (None: the range
    does not fit and the kernels search instead)."""
    u = np.uint64
    with np.errstate(over="ignore"):
        lo = s2[0].astype(np.int64).view(u) if s2.dtype.kind == "i" else u(s2[0])
        span = (s2[-1].astype(np.int64).view(u) if s2.dtype.kind == "i" else u(s2[-1])) - lo
        if span >= u(cap_bits):
            return None
        nb = span + u(1)
        words = np.full(int((nb + u(31)) >> u(5)), 0xDEADBEEF, np.uint32)  # stale memory
        words[:] = 0
        d = (s2.astype(np.int64).view(u) if s2.dtype.kind == "i" else s2.astype(u)) - lo
        np.bitwise_or.at(words, (d >> u(5)).astype(np.int64), (u(1) << (d & u(31))).astype(np.uint32))
        v = (x1.astype(np.int64).view(u) if x1.dtype.kind == "i" else x1.astype(u)) - lo
        inside = v < nb
        vi = np.where(inside, v, 0)
        return inside & ((words[(vi >> u(5)).astype(np.int64)] >> (vi & u(31)).astype(np.uint32)) & 1).astype(bool)


@pytest.mark.parametrize("dtype,lo,hi", [("int32", 0, 1 << 20), ("int64", -2**40, -2**40 + 5000), ("int8", -128, 127),
                                         ("uint64", 2**64 - 3000, 2**64 - 1), ("uint8", 0, 255),
                                         ("int64", -2**62, 2**62)])
def test_isin_bitmap_model_matches_numpy(dtype, lo, hi):
    rng = np.random.default_rng(4)
    dt = np.dtype(dtype)
    span = hi - lo
    s2 = np.sort((lo + rng.integers(0, span, 300, endpoint=True, dtype=np.uint64 if lo > 2**62 else np.int64)
                  ).astype(dt) if span < 2**62 else rng.integers(lo, hi, 300, dtype=dt))
    s2 = np.sort(np.concatenate([s2, np.array([lo, hi], dt)]))
    x1 = np.concatenate([rng.choice(s2, 500), np.array([lo, hi], dt),
                         np.iinfo(dt).min + rng.integers(0, 50, 100).astype(dt)])
    cap = _sets.bitmap_bits(x1.size)
    got = _model_bitmap_isin(x1, s2, cap)
    if span >= cap:
        assert got is None
    else:
        np.testing.assert_array_equal(got, np.isin(x1, s2))


def test_bitmap_capacity():
    assert _sets.bitmap_bits(1) == 1 << 16
    assert _sets.bitmap_bits(2**24) == 2**26
    assert _sets.bitmap_bits(2**40) == 1 << 28
    assert _sets.bitmap_bits(100_003) % 32 == 0


# ---------------------------------------------------------------------------- dense unique
def _popc(w):
    w = w.astype(np.uint64)
    return np.array([bin(int(v)).count("1") for v in w.ravel()], np.int64).reshape(w.shape)


def _model_dense(x):
    """NumPy model of gp_dense_range/_clear/_mark/_count, the scan, gp_dense_write (with the
    word prefixes) and gp_dense_inverse: (values, inverse), or None when the range does not
    fit (the count kernel's negative total)."""
    u = np.uint64
    n = x.size
    if x.dtype.kind == "i":
        keys = x.astype(np.int64).view(u) ^ u(1 << 63)
    else:
        keys = x.astype(u)
    cap = _sets.dense_bits(n)
    hi, lo = keys.max(), keys.min()                          # rng = {hi, ~lo}
    tiles = cap // _sets.TILE
    if hi - lo >= u(cap):
        counts = np.zeros(tiles, np.int64)
        counts[0] = -(1 << 62)
        assert np.cumsum(counts)[-1] < 0
        return None
    nb = int(hi - lo) + 1
    words = np.zeros(-(-nb // 32), np.uint32)
    d = keys - lo
    np.bitwise_or.at(words, (d >> u(5)).astype(np.int64), (u(1) << (d & u(31))).astype(np.uint32))
    padded = np.zeros(tiles * (_sets.TILE // 32), np.uint32)  # words past the range read as 0
    padded[:words.size] = words
    pop = _popc(padded)
    counts = pop.reshape(tiles, -1).sum(1)                   # gp_dense_count
    incl = np.cumsum(counts)
    total = int(incl[-1])
    wpre = np.concatenate([[0], np.cumsum(pop)[:-1]])        # gp_dense_write: pos before each word
    tile_start = np.concatenate([[0], incl[:-1]])
    assert np.array_equal(wpre[::_sets.TILE // 32], tile_start)
    values = np.empty(total, x.dtype)
    for wi in np.flatnonzero(padded):
        for lane in range(32):
            if (int(padded[wi]) >> lane) & 1:
                k = int(lo) + int(wi) * 32 + lane
                g = int(wpre[wi]) + bin(int(padded[wi]) & ((1 << lane) - 1)).count("1")
                values[g] = (np.array(k ^ (1 << 63), np.uint64).view(np.int64).astype(x.dtype)
                             if x.dtype.kind == "i" else np.array(k, np.uint64).astype(x.dtype))
    wi = (d >> u(5)).astype(np.int64)
    below = ((u(1) << (d & u(31))) - u(1)).astype(np.uint32)
    inverse = wpre[wi] + _popc(padded[wi] & below)           # gp_dense_inverse
    return values, inverse


@pytest.mark.parametrize("dtype,lo,span", [("int32", 0, 1000), ("int64", -2**63, 5000), ("int64", 2**63 - 300, 299),
                                           ("uint64", 2**64 - 9000, 8999), ("int8", -128, 255), ("bool", 0, 1),
                                           ("uint16", 0, 65535), ("int32", -5, 2**20), ("int16", -3, 0)])
@pytest.mark.parametrize("n", [1, 31, 4097])
def test_dense_unique_model_matches_numpy(dtype, lo, span, n):
    dt = np.dtype(dtype)
    offs = np.random.default_rng(n).integers(0, span, n, endpoint=True)
    x = np.array([lo + int(o) for o in offs], dtype=dt) if dt.kind != "b" else offs.astype(bool)
    if n > 2 and dt.kind != "b":
        x[0], x[1] = lo, lo + span
    got = _model_dense(x)
    if int(x.max()) - int(x.min()) >= _sets.dense_bits(n):
        assert got is None
        return
    ev, einv = np.unique(x, return_inverse=True)
    np.testing.assert_array_equal(got[0], ev)
    np.testing.assert_array_equal(got[1], einv.reshape(-1))


def test_dense_constants_and_grid():
    src = _compile.family_source("sets")
    assert f"#define GP_DENSE_UNROLL {_sets.DENSE_UNROLL} " in src
    assert _sets.dense_grid(1, 1056) == 1 and _sets.dense_grid(_sets.BLOCK * _sets.DENSE_UNROLL + 1, 1056) == 2
    assert _sets.dense_grid(1 << 30, 1056) == 1056


def test_dense_capacity():
    assert _sets.dense_bits(1) == 1 << 16 and _sets.dense_bits(2**24) == 2**24
    assert _sets.dense_bits(2**40) == 1 << 28 and _sets.dense_bits(70001) % _sets.TILE == 0
    assert _sets.dense_bits(70001) >= 70001
    assert all(_sets.dense_ok(np.dtype(d)) for d in ("bool", "int8", "uint64"))
    assert not any(_sets.dense_ok(np.dtype(d)) for d in ("float16", "float64", "complex64"))


def test_dense_launch_arguments_match_the_kernels(launches, monkeypatch):
    from gparray._engine import _index, _scan

    zeroed = []
    monkeypatch.setattr(_index, "read_total", lambda dev, addr: 17)
    monkeypatch.setattr(_scan, "scan", lambda *a, **k: None)
    monkeypatch.setattr(_scan, "_memset0", lambda ptr, nbytes, dev: zeroed.append((ptr, nbytes)))
    n = 100000
    xf = FakeArray((n,), "int16")
    t = _sets.dense_bits(n) // _sets.TILE
    counts, incl = FakeArray((t,), "int64", ptr=1 << 22), FakeArray((t,), "int64", ptr=1 << 23)
    total, st = _sets.dense_count(xf, counts, incl)
    assert total == 17 and st.cap == _sets.dense_bits(n) and st.cap // _sets.TILE == t
    assert zeroed == [(1 << 25, 16)]                        # rng, before the range kernel
    values, inverse = FakeArray((17,), "int16", ptr=1 << 24), FakeArray((400, 250), "int64", ptr=1 << 26)
    _sets.dense_write(st, values, incl)
    _sets.dense_write(st, values, incl, xf, inverse)
    exprs = [e for _, e, _, _ in launches]
    assert exprs == ["gp_dense_range<gp::int16>", "gp_dense_clear", "gp_dense_mark<gp::int16>", "gp_dense_count",
                     "gp_dense_write<gp::int16, false>", "gp_dense_write<gp::int16, true>", "gp_dense_inverse<gp::int16>"]
    for fam, expr, grid, args in launches:
        _check(fam, expr, args)
        assert expr in _sets.instances()
    grids = {e: g for _, e, g, _ in launches}
    assert grids["gp_dense_count"] == grids["gp_dense_write<gp::int16, true>"] == t
    assert int(launches[3][3][0]) == 1 << 22 and int(launches[5][3][4]) == 1 << 23
    with pytest.raises(ValueError, match="^dense_count: "):
        _sets.dense_count(xf, FakeArray((t + 1,), "int64"), incl)


# ---------------------------------------------------------------------------- compile-all
def _chunks():
    ex = _sets.instances()
    return [i for i in range(0, len(ex), 100)]


def test_instance_list_is_unique_and_covers_every_dtype():
    ex = _sets.instances()
    assert len(ex) == len(set(ex))
    for dt in _dt._supported_dtypes:
        assert f"gp_unique_count<{_sets.ctype(dt)}, true>" in ex


@pytest.mark.parametrize("start", _chunks())
def test_every_sets_instance_compiles(start):
    chunk = _sets.instances()[start:start + 100]
    cubin, mapping = _compile.nvrtc_compile("sets", chunk, "90")
    assert len(mapping) == len(chunk) and all(mapping.values())
    assert cubin[:4] == b"\x7fELF"


def test_warmup_lists_the_sets_family():
    from gparray import warmup

    assert set(warmup.instances(include_ops=False)["sets"]) == set(_sets.instances())


# ---------------------------------------------------------------------------- namespace
def test_result_types_have_the_spec_field_names():
    assert _sf.UniqueAllResult._fields == ("values", "indices", "inverse_indices", "counts")
    assert _sf.UniqueCountsResult._fields == ("values", "counts")
    assert _sf.UniqueInverseResult._fields == ("values", "inverse_indices")
    for name in ("isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"):
        assert name in xp.__all__ and getattr(xp, name) is getattr(_sf, name)


@pytest.mark.parametrize("fn", [xp.unique_values, xp.unique_counts, xp.unique_inverse, xp.unique_all])
def test_unique_rejects_non_arrays(fn):
    with pytest.raises(TypeError, match=f"^{fn.__name__}: expected a gparray Array"):
        fn(np.arange(3))


def test_isin_argument_errors():
    with pytest.raises(TypeError, match="^isin: at least one of x1 and x2 must be an Array"):
        xp.isin(1, 2)
    with pytest.raises(TypeError, match="^isin: x1 and x2 must be Arrays or Python scalars"):
        xp.isin(np.arange(3), 2)
    with pytest.raises(TypeError, match="^isin: x1 and x2 must be Arrays or Python scalars"):
        xp.isin(1, [1, 2])
