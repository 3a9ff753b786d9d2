#!/usr/bin/env python3
"""Sweeps of kernel tunables on the device, against PyTorch in the same run.

    python3 tools/tune.py [--groups elementwise,rows,reduce] [--json PATH] [--repeat N]

Not the benchmark of record (bench/bench.py is): this script rebuilds kernels with other
compile-time constants (GP_UNROLL, GP_BLOCK, GP_ROWS_U, GP_SCAN_VECS, GP_SORT_*,
GP_JOIN_ITEMS/ITEMS16) and patches the
planners' module constants, times each variant with CUDA events (median), and prints one
line per (case, variant) with the ratio to PyTorch's time. Results inform the defaults in
include/gp/*.cuh and gparray/_engine/*.py.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

N = 1 << 28
M = 16384
results: list[dict] = []


def timeit(fn, warmup=3, repeat=20):
    import cupy as cp
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(times)


def torch_time(fn, repeat):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def report(group, case, variant, ms, ref_ms, nbytes):
    row = {"group": group, "case": case, "variant": variant, "ms": ms, "torch_ms": ref_ms,
           "ratio": ms / ref_ms if ref_ms else None, "GBps": nbytes / ms / 1e6 if nbytes else None}
    results.append(row)
    print(f"{group:12s} {case:22s} {variant:60s} {ms:8.4f} ms  torch {ref_ms:8.4f}  "
          f"ratio {row['ratio']:.3f}  {row['GBps'] or 0:7.0f} GB/s", flush=True)


def build(family, exprs, extra):
    """Compile ``exprs`` of ``family`` with extra NVRTC options; {expr: cupy Function}."""
    import cupy as cp
    from gparray._kernels import _compile, _registry
    old = _compile.OPTIONS
    _compile.OPTIONS = old + tuple(extra)
    try:
        cubin, mapping = _compile.nvrtc_compile(family, exprs, _registry.device_arch(0))
    finally:
        _compile.OPTIONS = old
    mod = cp.cuda.function.Module()
    mod.load(cubin)
    build.keep.append(mod)
    return {e: mod.get_function(mapping[e]) for e in exprs}


build.keep = []


def group_elementwise(repeat):
    import cupy as cp
    import torch
    a = cp.random.default_rng(1).standard_normal(N, dtype=cp.float32)
    b = cp.random.default_rng(2).standard_normal(N, dtype=cp.float32)
    out = cp.empty_like(a)
    c = cp.empty(N, dtype=cp.bool_)
    ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
    refs = {"copy": torch_time(lambda: ta.clone(), repeat), "add": torch_time(lambda: ta + tb, repeat),
            "exp": torch_time(lambda: torch.exp(ta), repeat),
            "where": torch_time(lambda: torch.where(ta > 0, ta, tb), repeat)}
    exprs = {"copy": "gp_unary_contig<op_identity, float, float, float>",
             "add": "gp_binary_contig<op_add, float, float, float, float>",
             "exp": "gp_unary_contig<op_exp, float, float, float>",
             "gt": "gp_scalar_contig<op_greater, bool, float, float, false>",
             "where": "gp_where_contig<float, float, float>"}
    n64 = np.int64(N)
    for unroll, block in itertools.product((1, 2), (128, 256)):
        fns = build("elementwise", list(exprs.values()), [f"-DGP_UNROLL={unroll}", f"-DGP_BLOCK={block}"])
        f = {k: fns[e] for k, e in exprs.items()}
        grid = ((N + block * 4 * unroll - 1) // (block * 4 * unroll),)
        blk = (block,)
        calls = {
            "copy": lambda: f["copy"](grid, blk, (out, a, n64)),
            "add": lambda: f["add"](grid, blk, (out, a, b, n64)),
            "exp": lambda: f["exp"](grid, blk, (out, a, n64)),
            "where": lambda: (f["gt"](grid, blk, (c, a, np.float32(0), n64)),
                              f["where"](grid, blk, (out, c, a, b, n64))),
        }
        nbytes = {"copy": 8 * N, "add": 12 * N, "exp": 8 * N, "where": 18 * N}
        for k, fn in calls.items():
            report("elementwise", k, f"unroll={unroll} block={block}", timeit(fn, repeat=repeat), refs[k], nbytes[k])
    import gparray as xp
    xa, xb = xp.from_dlpack(a), xp.from_dlpack(b)
    lib = {"copy": (lambda: xp.asarray(xa, copy=True)), "add": (lambda: xa + xb), "exp": (lambda: xp.exp(xa)),
           "where": (lambda: xp.where(xa > 0, xa, xb))}
    for k, fn in lib.items():
        report("elementwise", k, "library (defaults)", timeit(fn, repeat=repeat), refs[k], 0)
    report("elementwise", "a[::2]+b[::2]", "library (defaults)", timeit(lambda: xa[::2] + xb[::2], repeat=repeat),
           torch_time(lambda: ta[::2] + tb[::2], repeat), 0)
    report("elementwise", "a>0", "library (defaults)", timeit(lambda: xa > 0, repeat=repeat),
           torch_time(lambda: ta > 0, repeat), 0)
    report("elementwise", "where(c,a,b)", "library (defaults)", timeit(lambda: xp.where(xp.from_dlpack(c), xa, xb),
           repeat=repeat), torch_time(lambda: torch.where(torch.from_dlpack(c), ta, tb), repeat), 0)
    ref = torch.exp(ta)
    f = build("elementwise", [exprs["exp"]], [])[exprs["exp"]]
    f(((N + 2047) // 2048,), (256,), (out, a, n64))
    print("exp max |diff| vs torch:", float(cp.abs(out - cp.from_dlpack(ref)).max()))


def group_rows(repeat):
    import cupy as cp
    import torch
    col = cp.random.default_rng(3).standard_normal((M, 1), dtype=cp.float32)
    row = cp.random.default_rng(4).standard_normal((1, M), dtype=cp.float32)
    a = cp.random.default_rng(1).standard_normal(N, dtype=cp.float32)
    b = cp.random.default_rng(2).standard_normal(N, dtype=cp.float32)
    tcol, trow, ta, tb = (torch.from_dlpack(x) for x in (col, row, a, b))
    ref_outer = torch_time(lambda: tcol + trow, repeat)
    ref_slice = torch_time(lambda: ta[::2] + tb[::2], repeat)
    out2 = cp.empty((M, M), cp.float32)
    out1 = cp.empty(N // 2, cp.float32)
    expr = "gp_binary_rows<op_add, float, float, float, float>"
    i64 = np.int64
    for u in (1, 2, 4):
        fn = build("elementwise", [expr], [f"-DGP_ROWS_U={u}"])[expr]
        tc = 256 * 4 * u
        chunks = (M + tc - 1) // tc
        for rpb in (1, 4, 8, 16, 32, 64):
            grid = (((M + rpb - 1) // rpb) * chunks,)
            args = (out2, col, row, i64(M), i64(M), i64(1), i64(0), i64(0), i64(1), np.int32(rpb))
            report("rows", "col+row", f"U={u} rpb={rpb}", timeit(lambda: fn(grid, (256,), args), repeat=repeat),
                   ref_outer, 4 * M * M + 8 * M)
        if u == 2:
            assert bool(cp.all(out2 == col + row)), "rows kernel: wrong col+row"
        C = N // 2
        grid = ((C + tc - 1) // tc,)
        args = (out1, a, b, i64(1), i64(C), i64(0), i64(2), i64(0), i64(2), np.int32(1))
        report("rows", "a[::2]+b[::2]", f"U={u}", timeit(lambda: fn(grid, (256,), args), repeat=repeat),
               ref_slice, 4 * N + 4 * N + 2 * N)
        if u == 2:
            assert bool(cp.all(out1 == a[::2] + b[::2])), "rows kernel: wrong slices"


def group_reduce(repeat):
    """Reductions per variant of the reduce engine's planning constants, against PyTorch in
    the same run; TUNE_REDUCE_CASES ("case;case") keeps only the variants of those cases."""
    import cupy as cp
    import torch
    import gparray as xp
    from gparray._engine import _reduce
    a_cp = cp.random.default_rng(1).standard_normal(N, dtype=cp.float32)
    m_cp = a_cp.reshape(M, M)
    ta, tm = torch.from_dlpack(a_cp), torch.from_dlpack(m_cp)
    a, m = xp.from_dlpack(a_cp), xp.from_dlpack(m_cp)
    t2_cp = a_cp[:1 << 26].reshape(1 << 18, 256)                  # bench row: tall and narrow
    t8_cp = cp.random.default_rng(3).standard_normal((1 << 18, 256))
    t2, t8, tt2, tt8 = xp.from_dlpack(t2_cp), xp.from_dlpack(t8_cp), torch.from_dlpack(t2_cp), torch.from_dlpack(t8_cp)
    cases = {
        "sum all": (lambda: xp.sum(a), lambda: torch.sum(ta), 4 * N),
        "sum axis=1": (lambda: xp.sum(m, axis=1), lambda: torch.sum(tm, dim=1), 4 * N),
        "sum axis=0": (lambda: xp.sum(m, axis=0), lambda: torch.sum(tm, dim=0), 4 * N),
        "sum axis=0 (2^18,256)": (lambda: xp.sum(t2, axis=0), lambda: torch.sum(tt2, dim=0), 4 * (1 << 26)),
        "sum axis=0 (2^18,256) f64": (lambda: xp.sum(t8, axis=0), lambda: torch.sum(tt8, dim=0), 8 * (1 << 26)),
        "argmax axis=1": (lambda: xp.argmax(m, axis=1), lambda: torch.argmax(tm, dim=1), 4 * N),
        "var all": (lambda: xp.var(a), lambda: torch.var(ta, correction=0), 4 * N),
    }
    refs = {k: torch_time(t, repeat) for k, (_, t, _) in cases.items()}
    names = ("BLOCKS_PER_SM", "OUTER_BLOCKS_PER_SM", "WARP_ROWS_PER_SM", "OUTER_TX_MAX", "UNROLL_WARP",
             "UNROLL_BLOCK", "UNROLL_SPLIT", "UNROLL_OUTER")
    defaults = {k: getattr(_reduce, k) for k in names}
    variants = [(tuple(cases), {})]
    for u in (2, 4, 8, 16):
        for bps in (3, 4, 6):
            variants.append((("sum all", "var all"), {"UNROLL_SPLIT": u, "BLOCKS_PER_SM": bps}))
        variants.append((("sum axis=1", "argmax axis=1"), {"UNROLL_WARP": u}))
        variants.append((("sum axis=1", "argmax axis=1"), {"UNROLL_BLOCK": u, "WARP_ROWS_PER_SM": 1 << 40}))
        for txm in (64, 128, 256):
            for bps in (1, 2, 3):
                variants.append((("sum axis=0", "sum axis=0 (2^18,256)", "sum axis=0 (2^18,256) f64"),
                                 {"UNROLL_OUTER": u, "OUTER_TX_MAX": txm, "OUTER_BLOCKS_PER_SM": bps}))
    only = [c for c in os.environ.get("TUNE_REDUCE_CASES", "").split(";") if c]   # e.g. "sum axis=0 (2^18,256)"
    if only:
        variants = [(tuple(k for k in keys if k in only), st) for keys, st in variants]
        variants = [(keys, st) for keys, st in variants if keys]
    for keys, settings in variants:
        for k, v in defaults.items():
            setattr(_reduce, k, settings.get(k, v))
        _reduce.plan.cache_clear()
        _reduce._launches.clear()
        variant = " ".join(f"{k}={v}" for k, v in settings.items()) or "defaults"
        for k in keys:
            g, t, nb = cases[k]
            got = cp.from_dlpack(g())
            want = cp.from_dlpack(t())
            if k.startswith("argmax"):
                ok = bool(cp.all(got == want))
            else:
                ok = bool(cp.allclose(got.astype(cp.float64), want.astype(cp.float64), rtol=1e-4, atol=1e-3))
            if not ok:
                print(f"MISMATCH {k} {variant}", flush=True)
            report("reduce", k, variant, timeit(g, repeat=repeat), refs[k], nb)
    for k, v in defaults.items():
        setattr(_reduce, k, v)
    _reduce.plan.cache_clear()
    _reduce._launches.clear()


SCAN_VECS = (8,)  # GP_SCAN_VECS values to sweep (each compiles the scan kernels again)


def group_scan(repeat):
    import cupy as cp
    import torch
    import gparray as xp
    from gparray._engine import _launch, _scan
    from gparray._kernels import _compile, _registry
    a_cp = cp.random.default_rng(1).standard_normal(N, dtype=cp.float32)
    ta, a = torch.from_dlpack(a_cp), xp.from_dlpack(a_cp)
    i_cp = cp.random.default_rng(2).integers(-100, 100, N // 4, dtype=cp.int32)
    ti, i = torch.from_dlpack(i_cp), xp.from_dlpack(i_cp)
    ref = torch_time(lambda: torch.cumsum(ta, 0), repeat)
    refi = torch_time(lambda: torch.cumsum(ti, 0), repeat)
    want = torch.cumsum(ta.double(), 0)
    base_opts, d_vecs, d_pf = _compile.OPTIONS, _scan.VECS, _scan.PREFETCH
    for vecs in SCAN_VECS:
        _compile.OPTIONS = base_opts + (f"-DGP_SCAN_VECS={vecs}",)
        _scan.VECS = vecs
        _scan.plan.cache_clear()
        _registry.clear_memo()
        _launch._kernels.clear()
        for pf in (0, 1, 64, 132, 264, None):
            _scan.PREFETCH = pf
            _scan._launches.clear()
            got = torch.from_dlpack(xp.cumulative_sum(a)).double()
            err = float(((got - want).abs() / (1 + want.abs())).max())
            if err > 1e-3:
                print(f"MISMATCH cumsum vecs={vecs} prefetch={pf} err={err}", flush=True)
            gi = torch.from_dlpack(xp.cumulative_sum(i))
            if not bool((gi == torch.cumsum(ti, 0)).all()):
                print(f"MISMATCH cumsum int32 vecs={vecs} prefetch={pf}", flush=True)
            report("scan", "cumsum f32 2^28", f"vecs={vecs} prefetch={pf}",
                   timeit(lambda: xp.cumulative_sum(a), repeat=repeat), ref, 8 * N)
            report("scan", "cumsum i32 2^26", f"vecs={vecs} prefetch={pf}",
                   timeit(lambda: xp.cumulative_sum(i), repeat=repeat), refi, 12 * (N // 4))
    _compile.OPTIONS, _scan.VECS, _scan.PREFETCH = base_opts, d_vecs, d_pf
    _scan.plan.cache_clear()
    _scan._launches.clear()
    _registry.clear_memo()
    _launch._kernels.clear()


# compile-time constants of the sort family swept by --groups sort: (name, value) pairs; the
# environment variable TUNE_SORT overrides the list ("ITEMS=16,HIST_SPREAD=4;ITEMS=12")
SORT_VARIANTS = [dict(HIST_ITEMS=h, HIST_SPREAD=sp) for h in (8, 16) for sp in (1, 2, 4, 8)]


def _sort_variants():
    env = os.environ.get("TUNE_SORT")
    if not env:
        return SORT_VARIANTS
    return [dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in v.split(",") if kv) for v in env.split(";")]


def group_sort(repeat):
    """The onesweep sort of 2^26 float32 (keys), its argsort (pairs), the sort of 2^24 int32
    in [0, 2^20) and of 2^26 int64 (full range: 8 digit passes; sort and argsort) per
    variant of the sort family's compile-time constants, against CuPy's sort / argsort (CUB)
    in the same run ("torch" column): GP_SORT_ITEMS, GP_SORT_OS_THREADS (pairs of 8-byte
    keys, 64-bit values); GP_SORT_K8_THREADS, GP_SORT_K8_ITEMS, GP_SORT_K8_MIN_BLOCKS (8-byte
    keys alone); GP_SORT_WIDE_THREADS, GP_SORT_WIDE_ITEMS (4-byte keys alone or, with
    GP_SORT_WIDE_PAIRS=1, with 32-bit values); GP_SORT_MIN_BLOCKS, GP_SORT_HIST_ITEMS,
    GP_SORT_HIST_SPREAD, and the switches of include/gp/sort_switches.cuh."""
    import cupy as cp
    import gparray as xp
    from gparray._engine import _launch, _sort
    from gparray._kernels import _compile, _registry
    n = 1 << 26
    a_cp = cp.random.default_rng(1).standard_normal(n, dtype=cp.float32)
    u_cp = cp.random.default_rng(2).integers(0, 1 << 20, 1 << 24, dtype=cp.int32)
    i_cp = cp.random.default_rng(3).integers(-(1 << 63), (1 << 63) - 1, n, dtype=cp.int64)
    a, u, i64 = xp.from_dlpack(a_cp), xp.from_dlpack(u_cp), xp.from_dlpack(i_cp)
    want, want_u, want_i = cp.sort(a_cp), cp.sort(u_cp), cp.sort(i_cp)
    ref = timeit(lambda: cp.sort(a_cp), repeat=repeat)
    ref_arg = timeit(lambda: cp.argsort(a_cp), repeat=repeat)
    ref_u = timeit(lambda: cp.sort(u_cp), repeat=repeat)
    ref_i = timeit(lambda: cp.sort(i_cp), repeat=repeat)
    ref_ai = timeit(lambda: cp.argsort(i_cp), repeat=repeat)
    base_opts, d_items, d_threads = _compile.OPTIONS, _sort.ITEMS, _sort.OS_THREADS
    d_wide = _sort.WIDE_THREADS, _sort.WIDE_ITEMS, _sort.WIDE_PAIRS
    d_k8 = _sort.K8_THREADS, _sort.K8_ITEMS
    for v in _sort_variants():
        tag = " ".join(f"{k.lower()}={x}" for k, x in v.items())
        _compile.OPTIONS = base_opts + tuple(f"-DGP_SORT_{k}={x}" for k, x in v.items())
        items, threads = v.get("ITEMS", d_items), v.get("OS_THREADS", d_threads)
        _sort.ITEMS, _sort.OS_THREADS = items, threads
        _sort.WIDE_THREADS, _sort.WIDE_ITEMS = v.get("WIDE_THREADS", d_wide[0]), v.get("WIDE_ITEMS", d_wide[1])
        _sort.WIDE_PAIRS = bool(v.get("WIDE_PAIRS", d_wide[2]))
        _sort.K8_THREADS, _sort.K8_ITEMS = v.get("K8_THREADS", d_k8[0]), v.get("K8_ITEMS", d_k8[1])
        _registry.clear_memo()
        _launch._kernels.clear()
        cases = (("sort f32 2^26", lambda: xp.sort(a), lambda r: (cp.from_dlpack(r) == want).all(), ref, 8 * n),
                 ("argsort f32 2^26", lambda: xp.argsort(a), lambda r: (a_cp[cp.from_dlpack(r)] == want).all(),
                  ref_arg, 12 * n),
                 ("sort i32 2^24 <2^20", lambda: xp.sort(u), lambda r: (cp.from_dlpack(r) == want_u).all(), ref_u,
                  8 * (n >> 2)),
                 ("sort i64 2^26", lambda: xp.sort(i64), lambda r: (cp.from_dlpack(r) == want_i).all(), ref_i,
                  16 * n),
                 ("argsort i64 2^26", lambda: xp.argsort(i64), lambda r: (i_cp[cp.from_dlpack(r)] == want_i).all(),
                  ref_ai, 24 * n))
        for case, fn, ok, ref_ms, nbytes in cases:  # each on its own: a variant may not build for pairs
            try:
                if not bool(ok(fn())):
                    print(f"MISMATCH {case} {tag}", flush=True)
                report("sort", case, f"{tag} (vs CuPy)", timeit(fn, repeat=repeat), ref_ms, nbytes)
            except Exception as exc:
                print(f"variant {tag} {case} failed: {str(exc)[:160]}", flush=True)
    _compile.OPTIONS = base_opts
    _sort.ITEMS, _sort.OS_THREADS = d_items, d_threads
    _sort.WIDE_THREADS, _sort.WIDE_ITEMS, _sort.WIDE_PAIRS = d_wide
    _sort.K8_THREADS, _sort.K8_ITEMS = d_k8
    _registry.clear_memo()
    _launch._kernels.clear()


# (GP_JOIN_ITEMS, GP_JOIN_ITEMS16) pairs swept by --groups join; TUNE_JOIN overrides them
# ("4,2;4,4;8,8")
JOIN_VARIANTS = [(4, 2), (4, 4), (4, 8), (8, 4)]


def group_join(repeat):
    """concat of four 2^26 float32 (16-byte units) and of 1000 x 1000 float32 per variant of
    the join family's units per thread (GP_JOIN_ITEMS, GP_JOIN_ITEMS16: the engine's ITEMS /
    ITEMS16 patched to match), against torch.cat in the same run."""
    import cupy as cp
    import torch
    import gparray as xp
    from gparray._engine import _join, _launch
    from gparray._kernels import _compile, _registry
    env = os.environ.get("TUNE_JOIN")
    variants = ([tuple(int(v) for v in p.split(",")) for p in env.split(";")] if env else JOIN_VARIANTS)
    big = [cp.random.default_rng(i).standard_normal(1 << 26, dtype=cp.float32) for i in range(4)]
    small = [cp.random.default_rng(10 + i).standard_normal(1000, dtype=cp.float32) for i in range(1000)]
    gb, gs = [xp.from_dlpack(a) for a in big], [xp.from_dlpack(a) for a in small]
    tb, ts = [torch.from_dlpack(a) for a in big], [torch.from_dlpack(a) for a in small]
    cases = (("concat 4x2^26 f32", lambda: xp.concat(gb), cp.concatenate(big), torch_time(lambda: torch.cat(tb), repeat),
              2 * 4 * 4 * (1 << 26)),
             ("concat 1000x1000 f32", lambda: xp.concat(gs), cp.concatenate(small),
              torch_time(lambda: torch.cat(ts), repeat), 2 * 4 * 1000 * 1000))
    base_opts, d = _compile.OPTIONS, (_join.ITEMS, _join.ITEMS16)
    for items, items16 in variants:
        _compile.OPTIONS = base_opts + (f"-DGP_JOIN_ITEMS={items}", f"-DGP_JOIN_ITEMS16={items16}")
        _join.ITEMS, _join.ITEMS16 = items, items16
        _join._TILE_BYTES = _join._tile_table()
        _registry.clear_memo()
        _launch._kernels.clear()
        for case, fn, want, ref, nbytes in cases:
            try:
                if not bool((cp.from_dlpack(fn()) == want).all()):
                    print(f"MISMATCH {case} items={items} items16={items16}", flush=True)
                report("join", case, f"items={items} items16={items16}", timeit(fn, repeat=repeat), ref, nbytes)
            except Exception as exc:
                print(f"variant items={items} items16={items16} {case} failed: {str(exc)[:160]}", flush=True)
    _compile.OPTIONS = base_opts
    _join.ITEMS, _join.ITEMS16 = d
    _join._TILE_BYTES = _join._tile_table()
    _registry.clear_memo()
    _launch._kernels.clear()


def group_host(repeat):
    """Host time per call on small inputs (GPU work negligible), and the big cases timed one
    call per event pair (as bench/) versus 10 calls back to back between two events."""
    import time
    import cupy as cp
    import torch
    import gparray as xp
    n = 4096
    a_cp = cp.random.default_rng(1).standard_normal(n, dtype=cp.float32)
    b_cp = cp.random.default_rng(2).standard_normal(n, dtype=cp.float32)
    m_cp = a_cp.reshape(64, 64)
    a, b, m = xp.from_dlpack(a_cp), xp.from_dlpack(b_cp), xp.from_dlpack(m_cp)
    ta, tb, tm = (torch.from_dlpack(x) for x in (a_cp, b_cp, m_cp))
    ops = {
        "a + b": (lambda: a + b, lambda: ta + tb),
        "a > 0": (lambda: a > 0, lambda: ta > 0),
        "exp(a)": (lambda: xp.exp(a), lambda: torch.exp(ta)),
        "where(a>0,a,b)": (lambda: xp.where(a > 0, a, b), lambda: torch.where(ta > 0, ta, tb)),
        "a[::2] + b[::2]": (lambda: a[::2] + b[::2], lambda: ta[::2] + tb[::2]),
        "astype f16": (lambda: xp.astype(a, xp.float16), lambda: ta.to(torch.float16)),
        "sum(a)": (lambda: xp.sum(a), lambda: torch.sum(ta)),
        "sum(m, axis=1)": (lambda: xp.sum(m, axis=1), lambda: torch.sum(tm, dim=1)),
        "sum(m, axis=0)": (lambda: xp.sum(m, axis=0), lambda: torch.sum(tm, dim=0)),
        "argmax(m, axis=1)": (lambda: xp.argmax(m, axis=1), lambda: torch.argmax(tm, dim=1)),
        "var(a)": (lambda: xp.var(a), lambda: torch.var(ta, correction=0)),
        "cumsum(a)": (lambda: xp.cumulative_sum(a), lambda: torch.cumsum(ta, 0)),
    }

    def host_us(fn, k=2000):
        for _ in range(50):
            fn()
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        for _ in range(k):
            fn()
        dt = (time.perf_counter() - t) / k * 1e6
        cp.cuda.Device().synchronize()
        return dt
    for name, (g, t) in ops.items():
        hg, ht = host_us(g), host_us(t)
        print(f"host         {name:22s} gparray {hg:6.1f} us  torch {ht:6.1f} us", flush=True)
        results.append({"group": "host", "case": name, "gparray_us": hg, "torch_us": ht})

    def b2b(fn, k=10):
        for _ in range(3):
            fn()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(repeat):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            for _ in range(k):
                fn()
            e.record()
            e.synchronize()
            times.append(cp.cuda.get_elapsed_time(s, e) / k)
        return statistics.median(times)
    A_cp = cp.random.default_rng(1).standard_normal(N, dtype=cp.float32)
    B_cp = cp.random.default_rng(2).standard_normal(N, dtype=cp.float32)
    M_cp = A_cp.reshape(M, M)
    A, B, MM = xp.from_dlpack(A_cp), xp.from_dlpack(B_cp), xp.from_dlpack(M_cp)
    TA, TB, TM = (torch.from_dlpack(x) for x in (A_cp, B_cp, M_cp))
    big = {
        "sum all": (lambda: xp.sum(A), lambda: torch.sum(TA)),
        "sum axis=1": (lambda: xp.sum(MM, axis=1), lambda: torch.sum(TM, dim=1)),
        "sum axis=0": (lambda: xp.sum(MM, axis=0), lambda: torch.sum(TM, dim=0)),
        "a > 0": (lambda: A > 0, lambda: TA > 0),
        "a[::2] + b[::2]": (lambda: A[::2] + B[::2], lambda: TA[::2] + TB[::2]),
        "cumsum": (lambda: xp.cumulative_sum(A), lambda: torch.cumsum(TA, 0)),
        "astype f16": (lambda: xp.astype(A, xp.float16), lambda: TA.to(torch.float16)),
    }
    for name, (g, t) in big.items():
        r = {"group": "b2b", "case": name, "gparray_single": timeit(g, repeat=repeat), "gparray_b2b": b2b(g),
             "torch_single": torch_time(t, repeat), "torch_b2b": b2b(t)}
        results.append(r)
        print(f"b2b          {name:22s} gparray single {r['gparray_single']:.4f} b2b {r['gparray_b2b']:.4f} | "
              f"torch single {r['torch_single']:.4f} b2b {r['torch_b2b']:.4f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="elementwise,rows,reduce,scan")
    ap.add_argument("--json", default=None)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    for g in args.groups.split(","):
        try:
            globals()[f"group_{g}"](args.repeat)
        except Exception as exc:  # keep the other groups going
            import traceback
            traceback.print_exc()
            print(f"group {g} failed: {exc}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    # best variant per case
    best = {}
    for r in results:
        if "ms" not in r:
            continue
        key = (r["group"], r["case"])
        if key not in best or r["ms"] < best[key]["ms"]:
            best[key] = r
    print("\nbest per case:")
    for (g, c), r in best.items():
        print(f"  {g:12s} {c:22s} {r['variant']:34s} ratio {r['ratio']:.3f} ({r['ms']:.4f} ms)")


if __name__ == "__main__":
    main()
