"""CPU tier of the sort engine (gparray/_engine/_sort.py, gparray/_kernels/sort.cu):

* the radix keys and the pass routing of gp/sort.cuh, built with g++ for the host, against a
  NumPy reference of the bit transforms (every dtype; NaN, +-inf, -0.0, float16) and
  against NumPy's stable sort (a stable sort by the radix key is np.sort(kind="stable");
  flipped, it is the spec's stable descending order);
* the planner (strategy thresholds, copies, passes, status words, temporaries);
* the whole engine run on an emulated device: every launch checked against the kernel's C++
  parameter list, then executed by a NumPy model of the kernel (the onesweep pass as the
  stable bucket scatter it computes, following the route table the host library builds),
  and the result compared with NumPy for sort and argsort over layouts and axes;
* an NVRTC compile (sm_90) of every registered instance.
"""
import ctypes
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gparray._engine import _shapes
from gparray._engine import _sort
from gparray._kernels import _compile

INCLUDE = pathlib.Path(_compile.INCLUDE_DIR)
REAL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ---------------------------------------------------------------------------- reference
def radix_u(u: np.ndarray, kind: int) -> np.ndarray:
    """NumPy reference of gp::sort::radix on raw storage bits ``u`` of a key ``kind``."""
    isz = u.dtype.itemsize
    U = UINT[isz]
    sign = U(1 << (8 * isz - 1))
    if kind == _sort.KIND_UNSIGNED:
        return u.copy()
    if kind == _sort.KIND_SIGNED:
        return u ^ sign
    exp = U({2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[isz])
    mag = u & ~sign
    r = np.where((u & sign) != 0, ~u, u | sign).astype(U)
    r[mag == 0] = sign
    r[mag > exp] = U(~U(0))
    return r


def radix_ref(a: np.ndarray) -> np.ndarray:
    """Unsigned keys whose order is the sort order of ``a`` (the reference transform)."""
    a = np.ascontiguousarray(a)
    return radix_u(a.view(UINT[a.dtype.itemsize]), _sort.key_kind(a.dtype))


def stable_desc_argsort(a: np.ndarray) -> np.ndarray:
    """The spec's stable descending argsort (as array-api-strict): equal elements in input
    order, NaNs first."""
    n = a.shape[-1]
    return n - 1 - np.flip(np.argsort(np.flip(a, -1), axis=-1, kind="stable"), -1)


def specials(dtype, n=300, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dt)
        return np.concatenate([edge, rng.integers(info.min, info.max, n, endpoint=True, dtype=dt),
                               rng.integers(0, 3, n).astype(dt)])
    fi = np.finfo(dt)
    neg_nan = np.array([np.nan], dtype=dt).view(UINT[dt.itemsize]) | UINT[dt.itemsize](1 << (8 * dt.itemsize - 1))
    edge = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, fi.max, -fi.max, fi.tiny, -fi.tiny,
                     fi.smallest_subnormal, -fi.smallest_subnormal, 1.0, -1.0], dtype=dt)
    edge = np.concatenate([edge, neg_nan.view(dt)])
    vals = (rng.standard_normal(n) * 4).astype(dt)
    dup = rng.choice(edge, n)
    return np.concatenate([edge, vals, dup, np.round(vals[: n // 2])])


# ---------------------------------------------------------------------------- host library
_HOST = r"""
#include <string.h>
#define __device__
#define __host__
#define __forceinline__ inline
#include "gp/sort.cuh"
template <class U>
static void radix_all(const void* in, void* out, long n, int kind) {
    for (long i = 0; i < n; ++i) ((U*)out)[i] = gp::sort::radix<U>(((const U*)in)[i], kind);
}
extern "C" void radix_1(const void* a, void* o, long n, int k) { radix_all<unsigned char>(a, o, n, k); }
extern "C" void radix_2(const void* a, void* o, long n, int k) { radix_all<unsigned short>(a, o, n, k); }
extern "C" void radix_4(const void* a, void* o, long n, int k) { radix_all<unsigned int>(a, o, n, k); }
extern "C" void radix_8(const void* a, void* o, long n, int k) { radix_all<unsigned long long>(a, o, n, k); }
extern "C" void digit_4(const void* a, unsigned* o, long n, int k, unsigned flip, int shift) {
    for (long i = 0; i < n; ++i) o[i] = gp::sort::digit<unsigned int>(((const unsigned*)a)[i], k, flip, shift);
}
extern "C" void route(const int* constant, int P, int km, int vm, int* r) {
    gp::sort::route_build(constant, P, km, vm, r);
}
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None or sys.platform != "linux":
        pytest.skip("no C++ compiler to build gp/sort.cuh on the host")
    d = tmp_path_factory.mktemp("sort_host")
    (d / "sort_host.cpp").write_text(_HOST)
    r = subprocess.run([cxx, "-std=c++17", "-O1", "-fPIC", "-shared", f"-I{INCLUDE}", str(d / "sort_host.cpp"),
                        "-o", str(d / "sort_host.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return ctypes.CDLL(str(d / "sort_host.so"))


def host_radix(lib, a):
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, UINT[a.dtype.itemsize])
    getattr(lib, f"radix_{a.dtype.itemsize}")(ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                                              ctypes.c_long(a.size), ctypes.c_int(_sort.key_kind(a.dtype)))
    return out


def host_route(lib, constant, km, vm):
    c = np.ascontiguousarray(constant, dtype=np.int32)
    r = np.zeros(_sort.MAX_PASSES * _sort.ROUTE_INTS, np.int32)
    lib.route(ctypes.c_void_p(c.ctypes.data), ctypes.c_int(len(c)), ctypes.c_int(km), ctypes.c_int(vm),
              ctypes.c_void_p(r.ctypes.data))
    return r.reshape(-1, _sort.ROUTE_INTS)[: len(c)]


# ---------------------------------------------------------------------------- keys
def test_header_constants_match_the_engine():
    text = (INCLUDE / "gp" / "sort.cuh").read_text()
    defs = dict(re.findall(r"#define (GP_SORT_\w+) \(?(\w+)", text))
    assert int(defs["GP_SORT_THREADS"]) == _sort.THREADS
    assert int(defs["GP_SORT_ITEMS"]) == _sort.ITEMS
    assert int(defs["GP_SORT_BITS"]) == _sort.BITS and int(defs["GP_SORT_RADIX"]) == _sort.RADIX
    assert int(defs["GP_SORT_MAX_PASSES"]) == _sort.MAX_PASSES and int(defs["GP_SORT_ROUTE"]) == _sort.ROUTE_INTS
    assert _sort.THREADS == _sort.RADIX  # one look-back thread per bucket
    assert defs["GP_SORT_OS_THREADS"] == "GP_SORT_THREADS" and _sort.OS_THREADS == _sort.THREADS
    assert _sort.onesweep_shape(8, True) == (_sort.OS_THREADS, _sort.ITEMS)
    assert int(defs["GP_SORT_K8_THREADS"]) == _sort.K8_THREADS and int(defs["GP_SORT_K8_ITEMS"]) == _sort.K8_ITEMS
    assert _sort.onesweep_shape(8, False) == (_sort.K8_THREADS, _sort.K8_ITEMS)
    assert int(defs["GP_SORT_WIDE_THREADS"]) == _sort.WIDE_THREADS and int(defs["GP_SORT_WIDE_ITEMS"]) == _sort.WIDE_ITEMS
    for name, value in [("KIND_UNSIGNED", 0), ("KIND_SIGNED", 1), ("KIND_FLOAT", 2)]:
        assert re.search(rf"{name} = {value}\b", text) and getattr(_sort, name) == value
    for name in ("BUF_IN", "BUF_OUT", "BUF_T0", "BUF_T1", "BUF_NONE", "KEYS_FINAL", "KEYS_DROP", "VALS_NONE",
                 "VALS_FINAL", "VALS_CARRY"):
        assert re.search(rf"{name} = {getattr(_sort, name)}\b", text), name


@pytest.mark.parametrize("dtype", REAL)
def test_radix_keys_match_the_numpy_reference(host, dtype):
    a = specials(dtype)
    assert np.array_equal(host_radix(host, a), radix_ref(a))


@pytest.mark.parametrize("dtype", REAL)
def test_stable_sort_by_radix_key_is_numpy_stable_sort(dtype):
    a = specials(dtype)
    r = radix_ref(a)
    order = np.argsort(r, kind="stable")
    assert np.array_equal(order, np.argsort(a, kind="stable"))
    flipped = np.argsort(r ^ UINT[a.dtype.itemsize](~UINT[a.dtype.itemsize](0)), kind="stable")
    assert np.array_equal(flipped, stable_desc_argsort(a))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_key_specials(dtype):
    dt = np.dtype(dtype)
    U = UINT[dt.itemsize]
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan, -np.nan], dt)
    r = radix_ref(a)
    assert r[2] == r[3] == U(1 << (8 * dt.itemsize - 1))        # -0.0 and 0.0: one key
    assert r[6] == r[7] == U(~U(0))                              # every NaN: the largest key
    assert list(r[:6]) == sorted(r[:6]) and len(set(r[:6])) == 5 and r[5] < r[6]
    # the kept order of the equal pair: 0.0 and -0.0 as they came
    b = np.array([0.0, -0.0, 0.0, -0.0], dt)
    assert np.array_equal(np.signbit(b[np.argsort(radix_ref(b), kind="stable")]), np.signbit(b))


def test_digits(host):
    a = np.array([0x12345678, 0xFF00AA01], np.uint32)
    out = np.empty(2, np.uint32)
    for shift in (0, 8, 16, 24):
        for flip in (0, 0xFFFFFFFF):
            host.digit_4(ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_long(2),
                         ctypes.c_int(0), ctypes.c_uint(flip), ctypes.c_int(shift))
            assert list(out) == [((int(v) ^ flip) >> shift) & 255 for v in a]


# ---------------------------------------------------------------------------- routes
def simulate_route(route, constant, km, vm, n=40, seed=0):
    """Run the passes of ``route`` as the onesweep kernels do (buffers by id) on random keys
    whose digits are constant where ``constant`` says so; returns (keys out, values out,
    buffers written)."""
    rng = np.random.default_rng(seed)
    P = len(constant)
    digits = rng.integers(0, 4, (P, n))
    for p in range(P):
        if constant[p]:
            digits[p] = rng.integers(0, 4)
    keys = sum(digits[p] * 4 ** p for p in range(P))   # digit p of the key: digits[p]
    bufs = {_sort.BUF_IN: keys.copy(), _sort.BUF_OUT: None, _sort.BUF_T0: None, _sort.BUF_T1: None}
    vbufs = {_sort.BUF_OUT: None, _sort.BUF_T0: None, _sort.BUF_T1: None}
    written = set()
    for p in range(P):
        on, ks, kd, vs, vd = route[p][:5]
        if not on:
            continue
        k = bufs[ks]
        v = np.arange(n) if vs == _sort.BUF_IN else (vbufs[vs] if vs != _sort.BUF_NONE else None)
        assert k is not None and (vm == _sort.VALS_NONE or v is not None)
        assert kd != ks and (vd == _sort.BUF_NONE or vd != vs)
        order = np.argsort((k // 4 ** p) % 4, kind="stable")
        if kd != _sort.BUF_NONE:
            bufs[kd] = k[order]
            written.add(("k", kd))
        if vd != _sort.BUF_NONE:
            vbufs[vd] = v[order]
            written.add(("v", vd))
    return keys, bufs[_sort.BUF_OUT], vbufs[_sort.BUF_OUT], written


@pytest.mark.parametrize("P", [1, 2, 3, 4, 5, 8, 11])
@pytest.mark.parametrize("km,vm", [(_sort.KEYS_FINAL, _sort.VALS_NONE), (_sort.KEYS_FINAL, _sort.VALS_CARRY),
                                   (_sort.KEYS_DROP, _sort.VALS_FINAL)])
def test_routes_land_on_the_outputs(host, P, km, vm):
    rng = np.random.default_rng(P)
    patterns = [np.zeros(P, int), np.ones(P, int)] + [rng.integers(0, 2, P) for _ in range(12)]
    for constant in patterns:
        route = host_route(host, constant, km, vm)
        active = route[:, 0].astype(bool)
        expect = ~constant.astype(bool) if not constant.all() else np.arange(P) == 0
        assert np.array_equal(active, expect)
        assert list(route[active, 5]) == list(range(active.sum())) and set(route[:, 6]) == {active.sum()}
        keys, kout, vout, written = simulate_route(route, constant, km, vm, seed=P)
        order = np.argsort(keys, kind="stable")
        if km == _sort.KEYS_FINAL:
            assert np.array_equal(kout, keys[order])
        else:
            assert ("k", _sort.BUF_OUT) not in written
        if vm == _sort.VALS_FINAL:
            assert np.array_equal(vout, order)
        else:
            assert ("v", _sort.BUF_OUT) not in written
        # temporaries used: what temporaries() allocates
        used = {b for _, b in written} - {_sort.BUF_OUT}
        A = int(active.sum())
        if A < 2:
            assert not used
        assert (_sort.BUF_T1 in used) <= (A >= 3 and (km == _sort.KEYS_DROP or vm == _sort.VALS_CARRY))


# ---------------------------------------------------------------------------- planner
@pytest.mark.parametrize("shape,axis,strategy,extra", [
    ((16,), 0, "warp", dict(threads=16, grid=1)),
    ((1 << 20, 16), 1, "warp", dict(threads=16, grid=(1 << 20) * 16 // 256)),
    ((7, 1), 1, "warp", dict(threads=1, grid=1)),
    ((5, 33), 1, "block", dict(threads=64, items=4, grid=5)),
    ((16384, 1024), 1, "block", dict(threads=128, items=8, grid=16384)),
    ((3, 4096), 1, "block", dict(threads=256, items=16, grid=3)),
    ((4097,), 0, "onesweep", dict(rows=1, grid=1, row_passes=0, threads=384, items=18)),
    ((6913,), 0, "onesweep", dict(rows=1, grid=2, threads=384, items=18)),
    ((1 << 26,), 0, "onesweep", dict(grid=-(-(1 << 26) // 6912), word=4)),
    ((300, 5000), 1, "onesweep", dict(rows=300, row_passes=2, copy_in=False, copy_out=False)),
    ((5000, 3), 0, "onesweep", dict(rows=3, row_passes=1, copy_in=True, copy_out=True)),
])
def test_plan_strategies(shape, axis, strategy, extra):
    p = _sort.plan(shape, _shapes.c_strides(shape), axis, 4)
    assert p.strategy == strategy
    for k, v in extra.items():
        assert getattr(p, k) == v, (k, getattr(p, k), v)
    assert p.key_passes == 4


def test_onesweep_tile_shapes(monkeypatch):
    # 4-byte keys alone or with 32-bit values (fewer than 2^32 elements): the wide tile; 8-byte
    # keys alone: K8_THREADS x K8_ITEMS; 64-bit values, other key sizes and pairs of 8-byte
    # keys (or row sorts of them): OS_THREADS x ITEMS
    wide, narrow, k8 = (_sort.WIDE_THREADS, _sort.WIDE_ITEMS), (_sort.OS_THREADS, _sort.ITEMS), (_sort.K8_THREADS, _sort.K8_ITEMS)
    assert wide == (384, 18) and narrow == (256, 16) and k8 == (384, 11) and _sort.WIDE_PAIRS
    cases = [(4, False, (1 << 20,), wide), (4, True, (1 << 20,), wide), (4, False, (2, 1 << 19), wide),
             (8, False, (1 << 20,), k8), (8, True, (1 << 20,), narrow), (8, False, (2, 1 << 19), narrow),
             (2, False, (1 << 20,), narrow), (1, True, (1 << 20,), narrow)]
    for isz, argsort, shape, want in cases:
        p = _sort.plan(shape, _shapes.c_strides(shape), len(shape) - 1, isz, argsort=argsort)
        assert (p.threads, p.items) == want == _sort.onesweep_shape(isz, argsort or len(shape) > 1)
        assert p.grid == -(-_shapes.prod(shape) // (want[0] * want[1])) and p.vbytes == 4
    # 2^32 elements: indices need 64-bit values between passes, and the pairs the narrow tile
    big = _sort.plan((1 << 32,), (1,), 0, 4, argsort=True)
    assert big.vbytes == 8 and (big.threads, big.items) == narrow
    assert _sort.plan(((1 << 32) - 1,), (1,), 0, 4, argsort=True).vbytes == 4
    assert (_sort.plan((1 << 32,), (1,), 0, 4).threads, _sort.temporaries(big, 4, True)["v0"]) == (384, 8 << 32)
    monkeypatch.setattr(_sort, "WIDE_PAIRS", False)
    assert _sort.onesweep_shape(4, True, 4) == narrow and _sort.onesweep_shape(4, False, 4) == wide


def test_32_bit_values_halve_the_index_temporaries():
    p = _sort.plan((1 << 20,), (1,), 0, 4, argsort=True)
    t = _sort.temporaries(p, 4, True)
    assert p.vbytes == 4 and t["v0"] == 4 << 20 and "v1" not in t      # the output (int64) is the other buffer
    p = _sort.plan((300, 5000), (5000, 1), 1, 8)                       # rows carried as values
    t = _sort.temporaries(p, 8, False)
    assert t["v0"] == t["v1"] == 4 * 300 * 5000


def test_wide_tiles_on_the_emulated_device(emu):
    # 20000 keys: two whole wide tiles and a partial one, sorted alone and as (key, 32-bit
    # index) pairs
    from _fakes import FakeArray

    a = _data("float32", (20000,), 3)
    x = emu.upload(a)
    out = FakeArray(a.shape, "float32", ptr=emu.alloc(a.nbytes).ptr)
    idx = FakeArray(a.shape, "int64", ptr=emu.alloc(a.size * 8).ptr)
    _sort.sort(x, 0, out, None, False)
    _sort.sort(x, 0, None, idx, False)
    assert np.array_equal(emu.download(out).view(np.uint32), np.ascontiguousarray(_expected(a, 0, False, False)).view(np.uint32))
    assert np.array_equal(emu.download(idx), _expected(a, 0, False, True))
    assert emu.shapes == {(384, 18, False), (384, 18, True)} and emu.values == {0, 4}


def test_plan_thresholds_and_words():
    for L in (1, 2, 31, 32):
        assert _sort.plan((9, L), (L, 1), 1, 8).strategy == "warp"
    for L in (33, 256, 257, 1024, 1025, 4096):
        p = _sort.plan((9, L), (L, 1), 1, 8)
        assert p.strategy == "block" and p.threads * p.items >= L
        assert (p.threads * p.items) // 4 < L or p.threads == _sort.BLOCK_SHAPES[0][0]
    assert _sort.plan((4097,), (1,), 0, 2).strategy == "onesweep"
    assert _sort.plan(((1 << 30) - 1,), (1,), 0, 1).word == 4
    assert _sort.plan((1 << 30,), (1,), 0, 1).word == 8
    assert _sort.plan((1, 1 << 30), (1 << 30, 1), 1, 1).row_passes == 0


def test_plan_reads_strided_rows_in_place_and_copies_only_when_needed():
    # transposed / flipped short rows: read through their strides, no copy
    p = _sort.plan((64, 20), (1, -64), 1, 4)
    assert p.strategy == "warp" and not p.copy_in and p.s_in == -64 and p.s_out == 1
    p = _sort.plan((6, 500, 7), (1, 42, 6), 1, 4)
    assert p.strategy == "block" and not p.copy_in and p.s_in == 42 and p.s_out == 7
    # more than four merged dimensions of rows: one copy first
    shape = (2, 3, 2, 3, 2, 40)
    st = tuple(s * 2 for s in _shapes.c_strides(shape))[::-1]
    p = _sort.plan(shape, st, 5, 4)
    assert p.copy_in and len(p.lines[0]) <= 4 and p.s_in == 1
    # device-wide: the (rows, L) view must be contiguous
    assert not _sort.plan((2, 9000), (9000, 1), 1, 4).copy_in
    assert _sort.plan((2, 9000), (1, 2), 1, 4).copy_in
    assert _sort.plan((9000, 2), (2, 1), 0, 4).copy_out


@pytest.mark.parametrize("argsort", [False, True])
@pytest.mark.parametrize("shape,axis", [((1 << 20,), 0), ((64, 5000), 1), ((1 << 16, 5000), 1)])
@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_temporaries_stay_within_two_copies(argsort, shape, axis, itemsize):
    p = _sort.plan(shape, _shapes.c_strides(shape), axis, itemsize)
    t = _sort.temporaries(p, itemsize, argsort)
    n = _shapes.prod(shape)
    data = sum(v for k, v in t.items() if k != "ws")
    assert data <= 2 * n * (itemsize + 8)                      # at most two (key, index) copies
    if not argsort and p.rows == 1:
        assert data <= n * itemsize                            # plain sort: one key buffer
    lay = _sort.workspace_layout(p.key_passes + p.row_passes, p.grid, p.word)
    assert t["ws"] == lay["end"] and lay["look"] % 256 == 0
    assert lay["end"] - lay["look"] == 2 * p.grid * 256 * p.word
    assert t["ws"] <= n * p.word // 4 + 65536                  # 2 x 256 words per 4096-key tile


def test_instance_list():
    ex = _sort.instances()
    assert len(ex) == len(set(ex))
    for t in _sort.STORAGE.values():
        for w in ("unsigned int", "unsigned long long"):
            assert f"gp_sort_onesweep<{t}, false, {w}, unsigned int>" in ex
            for v in ("unsigned int", "long long"):
                assert f"gp_sort_onesweep<{t}, true, {w}, {v}>" in ex
        for th, k in _sort.BLOCK_SHAPES:
            assert f"gp_sort_block<{t}, true, {th}, {k}>" in ex


def test_every_instance_compiles():
    ex = _sort.instances()
    cubin, mapping = _compile.nvrtc_compile("sort", ex, "90")
    assert len(mapping) == len(ex) and all(mapping.values())
    assert cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------- emulated device
# The engine's launches, checked against the kernels' parameter lists, then run by NumPy
# models of the kernels on an emulated device memory (pointers are byte addresses in it).
def _split_args(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _signature(kernel):
    src = _compile.family_source("sort")
    m = re.search(r"(?:template <([^>]*)>\s*)?__global__ void __launch_bounds__\((?:[^()]|\([^()]*\))*\)\s*" + kernel
                  + r"\(([^{]*)\)\s*\{", src)
    assert m, kernel
    tparams = [t.split()[-1] for t in _split_args(m.group(1) or "")]
    return tparams, [" ".join(p.split()[:-1]) for p in _split_args(m.group(2))]


_CT = {"gp::uint8": np.uint8, "gp::uint16": np.uint16, "gp::uint32": np.uint32, "gp::uint64": np.uint64}


def _check_args(expr, args):
    name, _, targs = expr.partition("<")
    targs = _split_args(targs[:-1]) if targs else []
    tparams, params = _signature(name)
    assert len(targs) == len(tparams) and len(args) == len(params), (expr, params, args)
    for ctype, a in zip(params, args):
        ctype = ctype.replace("const ", "").replace("__restrict__", "").strip()
        if ctype.endswith("*"):
            assert type(a) is np.uint64, (expr, ctype, a)
        elif ctype.startswith("gp::StridedParams<"):
            assert isinstance(a, np.void) and a.dtype.itemsize == 8 * (1 + 4 * 3), (expr, ctype)
        else:
            want = {"int": np.int32, "long long": np.int64, "unsigned long long": np.uint64}[ctype]
            assert type(a) is want, (expr, ctype, type(a))
    return dict(zip(tparams, targs))


class _Blk:
    def __init__(self, ptr):
        self.ptr = ptr


class Emu:
    """Device memory (bytes), a bump allocator, and NumPy models of the sort kernels."""

    def __init__(self, size=1 << 27):
        self.mem = np.zeros(size, np.uint8)
        self.top = 1 << 12
        self.launches = []
        self.shapes = set()   # (threads, items, pairs) of the onesweep launches
        self.values = set()   # bytes per value between passes (0: keys alone)

    def alloc(self, nbytes, dev=0, stream=None):
        b = _Blk(self.top)
        self.top += -(-max(nbytes, 1) // 512) * 512
        assert self.top <= len(self.mem), "emulated device memory exhausted"
        return b

    def at(self, ptr, dtype, offsets):
        dt = np.dtype(dtype)
        assert ptr > 0 and ptr % dt.itemsize == 0
        return ptr // dt.itemsize + np.asarray(offsets, dtype=np.int64)

    def get(self, ptr, dtype, offsets):
        return self.mem.view(dtype)[self.at(ptr, dtype, offsets)]

    def put(self, ptr, dtype, offsets, values):
        idx = self.at(ptr, dtype, offsets)
        if len(idx) <= 100000:
            assert len(np.unique(idx)) == len(idx), "two writes to one element"
        self.mem.view(dtype)[idx] = values

    def upload(self, a):
        """FakeArray over a copy of NumPy view ``a`` (its layout kept: base uploaded whole)."""
        from _fakes import FakeArray

        base = a.base if a.base is not None else a
        while base.base is not None:
            base = base.base
        base = np.ascontiguousarray(base)
        blk = self.alloc(base.nbytes)
        self.mem[blk.ptr:blk.ptr + base.nbytes] = base.reshape(-1).view(np.uint8)
        off = a.__array_interface__["data"][0] - base.__array_interface__["data"][0] if a.base is not None else 0
        return FakeArray(a.shape, a.dtype, strides=a.strides, ptr=blk.ptr + off)

    def download(self, x):
        off = _elem_offsets(x._shape, tuple(s // x._dtype.itemsize for s in x._strides))
        return self.get(x._ptr, x._dtype, off).reshape(x._shape)

    def copy_into(self, dst, src):
        isz = dst._dtype.itemsize
        assert dst._dtype == src._dtype and dst._shape == src._shape
        so = _elem_offsets(src._shape, tuple(s // isz for s in src._strides))
        do = _elem_offsets(dst._shape, tuple(s // isz for s in dst._strides))
        self.put(dst._ptr, dst._dtype, do, self.get(src._ptr, src._dtype, so))

    def memset0(self, ptr, n, dev):
        self.mem[ptr:ptr + n] = 0

    # -- kernels
    def launch(self, family, expr, dev, grid, args, shared_mem=0, block=256):
        assert family == "sort" and grid >= 1
        env = _check_args(expr, args)
        self.launches.append(expr)
        name = expr.partition("<")[0]
        a = [int(v) if not isinstance(v, np.void) else v for v in args]
        getattr(self, name[len("gp_sort_"):])(env, grid, block, *a)

    def histogram(self, env, grid, block, keys, n, hist, kp, rp, seg, kind, flip, zero, zero_words):
        U = _CT[env["U"]]
        assert block == _sort.THREADS
        r = radix_u(self.get(keys, U, np.arange(n)), kind) ^ U(flip)
        h = self.get(hist, np.uint64, np.arange((kp + rp) * 256)).reshape(kp + rp, 256)
        assert not h.any(), "histograms not zeroed"
        for p in range(kp):
            h[p] += np.bincount(((r >> U(8 * p)) & U(255)).astype(np.int64), minlength=256).astype(np.uint64)
        rows = np.arange(n) // seg
        for p in range(rp):
            h[kp + p] += np.bincount((rows >> (8 * p)) & 255, minlength=256).astype(np.uint64)
        self.put(hist, np.uint64, np.arange(h.size), h.reshape(-1))
        self.mem[zero:zero + 4 * zero_words] = 0

    def prepare(self, env, grid, block, hist, n, P, km, vm, offs, route):
        h = self.get(hist, np.uint64, np.arange(P * 256)).reshape(P, 256).astype(np.int64)
        assert (h.sum(axis=1) == n).all()
        self.put(offs, np.int64, np.arange(P * 256), (np.cumsum(h, axis=1) - h).reshape(-1))
        r = host_route(self.lib, (h == n).any(axis=1).astype(np.int32), km, vm)
        self.put(route, np.int32, np.arange(r.size), r.reshape(-1))
        self.look_bytes = None

    def onesweep(self, env, grid, block, kin, kout, kt0, kt1, vout, vt0, vt1, route, offs, look, n, tiles, ps,
                 kind, flip, shift, row_pass, seg):
        U, pairs, W = _CT[env["U"]], env["PAIRS"] == "true", env["W"]
        V = {"unsigned int": np.uint32, "long long": np.int64}[env["V"]]   # values between passes
        wsz = 4 if W == "unsigned int" else 8
        threads, items = _sort.onesweep_shape(np.dtype(U).itemsize, pairs, np.dtype(V).itemsize)
        assert grid == tiles == -(-n // (threads * items)) and block == threads
        assert pairs or V is np.uint32, "keys alone: one instance"
        assert V is np.int64 or n < 1 << 32
        self.shapes.add((threads, items, pairs))
        self.values.add(np.dtype(V).itemsize if pairs else 0)
        region = tiles * 256 * wsz
        cur, nxt = look + (ps % 2) * region, look + ((ps + 1) % 2) * region
        assert not self.mem[cur:cur + region].any(), "look-back region not zeroed before its pass"
        self.mem[nxt:nxt + region] = 0
        rt = self.get(route, np.int32, np.arange(8) + 8 * ps)
        if not rt[0]:
            return
        self.mem[cur:cur + region] = 0xAB  # the statuses this pass leaves behind
        keys_at = {_sort.BUF_OUT: kout, _sort.BUF_T0: kt0, _sort.BUF_T1: kt1}
        vals_at = {_sort.BUF_OUT: vout, _sort.BUF_T0: vt0, _sort.BUF_T1: vt1}
        k = self.get(kin if rt[1] == _sort.BUF_IN else keys_at[rt[1]], U, np.arange(n))
        if pairs:
            v = np.arange(n) if rt[3] == _sort.BUF_IN else self.get(vals_at[rt[3]], V, np.arange(n)).astype(np.int64)
        else:
            assert rt[3] == rt[4] == _sort.BUF_NONE and not row_pass
        if row_pass:
            d = ((v // seg) >> shift) & 255
        else:
            d = ((radix_u(k, kind) ^ U(flip)) >> U(shift)).astype(np.int64) & 255
        o = self.get(offs, np.int64, np.arange(256) + 256 * ps)
        order = np.argsort(d, kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n) - o[d[order]]
        pos = o[d] + rank
        if rt[2] != _sort.BUF_NONE:
            self.put(keys_at[rt[2]], U, pos, k)
        if pairs and rt[4] != _sort.BUF_NONE:
            last = rt[5] == rt[6] - 1   # the last active pass writes int64 (the output)
            self.put(vals_at[rt[4]], np.int64 if last else V, pos, v % seg if last and seg > 0 else v)

    def _rows(self, lines, rows):
        v = lines["v"]
        nd = int(v[0])
        shape = [int(e) for e in v[1:1 + nd]]
        assert _shapes.prod(shape) == rows
        offs = []
        for k in range(2):
            st = [int(s) for s in v[1 + 4 * (k + 1):1 + 4 * (k + 1) + nd]]
            offs.append(_elem_offsets(tuple(shape), tuple(st)))
        return offs

    def _segmented(self, U, arg, kout, iout, kin, lines, rows, L, s_in, s_out, kind, flip):
        oo, io = self._rows(lines, rows)
        j = np.arange(L)
        for r in range(rows):
            k = self.get(kin, U, io[r] + j * s_in)
            order = np.argsort(radix_u(k, kind) ^ U(flip), kind="stable")
            if arg:
                self.put(iout, np.int64, oo[r] + j * s_out, order)
            else:
                self.put(kout, U, oo[r] + j * s_out, k[order])

    def block(self, env, grid, block, kout, iout, kin, lines, L, s_in, s_out, kind, flip):
        th, it = int(env["THREADS"]), int(env["ITEMS"])
        assert block == th and L <= th * it
        self._segmented(_CT[env["U"]], env["ARG"] == "true", kout, iout, kin, lines, grid, L, s_in, s_out, kind, flip)

    def warp(self, env, grid, block, kout, iout, kin, lines, rows, L, s_in, s_out, P, kind, flip):
        assert P & (P - 1) == 0 and L <= P <= 32 and grid * block >= rows * P and block == _sort.WARP_BLOCK
        self._segmented(_CT[env["U"]], env["ARG"] == "true", kout, iout, kin, lines, rows, L, s_in, s_out, kind,
                        flip)


def _elem_offsets(shape, strides):
    if not shape:
        return np.zeros(1, np.int64)
    grids = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    return (grids * np.array(strides, np.int64)[:, None]).sum(axis=0)


@pytest.fixture
def emu(host, monkeypatch):
    from _fakes import isolate_engines

    from gparray import _memory
    from gparray._engine import _elementwise, _scan

    isolate_engines(monkeypatch)
    e = Emu()
    e.lib = host
    monkeypatch.setattr(_sort, "launch", e.launch)
    monkeypatch.setattr(_memory, "alloc", e.alloc)
    monkeypatch.setattr(_elementwise, "copy_into", e.copy_into)
    monkeypatch.setattr(_scan, "_memset0", e.memset0)
    monkeypatch.setattr(_sort, "_sm_count", lambda dev: 132)
    return e


def _expected(a, axis, descending, argsort):
    a = np.moveaxis(a, axis, -1)
    idx = stable_desc_argsort(a) if descending else np.argsort(a, axis=-1, kind="stable")
    res = idx if argsort else np.take_along_axis(a, idx, -1)
    return np.moveaxis(res, -1, axis)


def _data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    pool = specials(dtype, 200, seed)
    return rng.choice(pool, _shapes.prod(shape)).reshape(shape)


LAYOUTS = {
    "c": lambda a: a,
    "T": lambda a: np.ascontiguousarray(a.T).T,               # F-order copy: every axis strided
    "flip": lambda a: np.ascontiguousarray(a[::-1])[::-1],   # negative stride on axis 0
}


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((40, 16), 1), ((40, 16), 0), ((3, 100, 5), 1), ((6, 1000), 1),
                                        ((2, 4096), 1), ((9000,), 0), ((3, 5000), 1), ((5000, 3), 0),
                                        ((2, 4500, 2), 1), ((300, 4100), 1)])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("descending", [False, True])
def test_engine_on_the_emulated_device(emu, shape, axis, layout, descending):
    n = _shapes.prod(shape)
    if n > 100000 and layout != "c":
        pytest.skip("the large case runs on the C-contiguous layout only")
    dtypes = ["float32", "int16", "uint8", "float64", "bool", "float16", "int64", "uint32"]
    start = (len(shape) * 3 + shape[axis] + len(layout) + descending) % len(dtypes)
    picked = dtypes if n <= 1000 else (dtypes + dtypes)[start:start + (1 if n > 100000 else 3)]
    for i, dtype in enumerate(picked):
        mark = emu.top
        a = LAYOUTS[layout](_data(dtype, shape, i))
        x = emu.upload(a)
        for argsort in (False, True):
            from _fakes import FakeArray

            out = FakeArray(shape, "int64" if argsort else dtype, ptr=emu.alloc(a.size * 8).ptr)
            _sort.sort(x, axis, None if argsort else out, out if argsort else None, descending)
            got = emu.download(out)
            want = _expected(a, axis, descending, argsort)
            if argsort:
                assert np.array_equal(got, want), (dtype, argsort)
            else:  # exact bits: -0.0 and NaN payloads kept
                U = UINT[a.dtype.itemsize]
                assert np.array_equal(got.view(U), np.ascontiguousarray(want).view(U)), (dtype, argsort)
        emu.top = mark  # (the engine's temporaries are gone with the call)


def test_constant_digits_are_skipped_on_the_emulated_device(emu):
    a = (np.arange(20000, dtype=np.int64) * 7919) % 1000   # digits 2..7 constant
    x = emu.upload(a)
    from _fakes import FakeArray

    out = FakeArray(a.shape, "int64", ptr=emu.alloc(a.nbytes).ptr)
    _sort.sort(x, 0, out, None, False)
    assert np.array_equal(emu.download(out), np.sort(a))
    assert emu.launches.count("gp_sort_onesweep<gp::uint64, false, unsigned int, unsigned int>") == 8   # launched, 6 exit at once
    out2 = FakeArray((9000,), "int64", ptr=emu.alloc(9000 * 8).ptr)
    x2 = emu.upload(np.full(9000, 5, np.int32))                  # every digit constant: one stable copy pass
    _sort.sort(x2, 0, None, out2, True)
    assert np.array_equal(emu.download(out2), np.arange(9000))


@pytest.mark.parametrize("shape,axis", [((9000,), 0), ((40, 16), 1), ((3, 5000), 1), ((5000, 3), 0), ((7,), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_keys_and_indices_in_one_sort_on_the_emulated_device(emu, shape, axis, descending):
    # both outputs given: one pairs sort writes the sorted keys and the indices (onesweep,
    # no copy out), else a sort and an argsort
    from _fakes import FakeArray

    for i, dtype in enumerate(["float32", "int64", "uint8"]):
        a = _data(dtype, shape, i + 7)
        x = emu.upload(a)
        keys = FakeArray(shape, dtype, ptr=emu.alloc(a.size * 8).ptr)
        idx = FakeArray(shape, "int64", ptr=emu.alloc(a.size * 8).ptr)
        emu.launches.clear()
        _sort.sort(x, axis, keys, idx, descending)
        assert np.array_equal(emu.download(idx), _expected(a, axis, descending, True)), dtype
        U = UINT[a.dtype.itemsize]
        want = np.ascontiguousarray(_expected(a, axis, descending, False))
        assert np.array_equal(emu.download(keys).view(U), want.view(U)), dtype
        p = _sort.plan(a.shape, tuple(s // a.itemsize for s in a.strides), axis, a.itemsize)
        if p.strategy == "onesweep" and not p.copy_out:
            assert sum(e.startswith("gp_sort_histogram") for e in emu.launches) == 1


@pytest.mark.parametrize("threads,items", [(384, 18), (512, 12)])
def test_engine_plans_other_onesweep_block_shapes(emu, monkeypatch, threads, items):
    """GP_SORT_OS_THREADS / GP_SORT_ITEMS swept by tools/tune.py: the engine's tiles, grid,
    look-back regions and launch block follow OS_THREADS * ITEMS (the emulated kernels
    check them against _sort.onesweep_shape). (3, 9000) float32 carries 32-bit row values:
    with WIDE_PAIRS off it takes OS_THREADS x ITEMS."""
    monkeypatch.setattr(_sort, "WIDE_PAIRS", False)
    monkeypatch.setattr(_sort, "OS_THREADS", threads)
    monkeypatch.setattr(_sort, "ITEMS", items)
    a = _data("float32", (3, 9000), 5)
    x = emu.upload(a)
    p = _sort.plan(a.shape, tuple(s // 4 for s in a.strides), 1, 4)
    assert p.strategy == "onesweep" and p.threads == threads and p.grid == -(-a.size // (threads * items))
    from _fakes import FakeArray

    out = FakeArray(a.shape, "float32", ptr=emu.alloc(a.size * 4).ptr)
    _sort.sort(x, 1, out, None, False)
    want = np.ascontiguousarray(_expected(a, 1, False, False))
    assert np.array_equal(emu.download(out).view(np.uint32), want.view(np.uint32))   # NaNs, -0.0 in place
