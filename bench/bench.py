#!/usr/bin/env python3
"""Time gparray, CuPy and PyTorch on the same cases, in one run, on one GPU.

    python3 bench/bench.py [--cases SUBSTR,...] [--libs gparray,cupy,torch] [--quick]
                           [--repeat N] [--warmup N] [--json PATH] [--list] [--no-startup]

    python3 bench/bench.py --cases indexing      # only the indexing rows (group names: --list)
    python3 bench/bench.py --cases sets          # only the set-function rows
    python3 bench/bench.py --cases linalg --no-startup   # only the linear-algebra rows
    python3 bench/bench.py --cases fft           # only the fft rows (cuFFT through each library)
    python3 bench/bench.py --cases runtime --no-startup   # profiling and user-kernel host costs
    python3 bench/bench.py --cases multigpu --no-startup  # two GPUs: to_device, a + b on each

Each case builds its inputs once with CuPy (the same data for every library: PyTorch gets them
through DLPack, gparray through ``xp.asarray``/``xp.from_dlpack``), warms up, then times every
call with CUDA events and keeps the median. Transfers are never timed. GB/s counts each input
read once and each output written once, as in /work/shared/TARGETS.md and its anchors (for
matmul and cholesky, TFLOP/s). The copy ceiling is measured in the same run (device-to-device
memcpy through CuPy, and PyTorch's clone: the faster of the two).

A case whose gparray function does not exist yet (AttributeError, NotImplementedError, or an
IndexError/TypeError saying "not supported yet") is reported as n/a; any other failure is
printed and the run goes on. The table comes last.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(REPO_ROOT, "bench") not in sys.path:
    sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import runtime_rows  # noqa: E402  (bench/runtime_rows.py: the "runtime" group)
import multigpu_rows  # noqa: E402  (bench/multigpu_rows.py: the "multigpu" group, two GPUs)
import bench_core as core  # noqa: E402  (bench/bench_core.py: libraries, timing, rows)
from bench_core import (LIBS, N26, NotAvailable, _cell, _import_errors, _import_libs, _is_missing,  # noqa: E402
    _rng, _short, _wall_ms, convert, finish_row, free_memory, measure_copy_ceiling, module_of,
    native_allocator, randn, run_gpu_case, sync)
from cases_elementwise import colstats_cases, elementwise_cases  # noqa: E402
from cases_indexing import indexing_cases  # noqa: E402
from cases_sorting import sets_cases, sorting_cases  # noqa: E402
from cases_linalg import linalg_cases  # noqa: E402
from cases_fft import _c64, fft_cases  # noqa: E402
from cases_join import join_cases  # noqa: E402

# --------------------------------------------------------------------------- host transfers
# (issue 17 item 3; ``--cases transfers`` runs only these rows)

TRANSFER_N = N26                     # 2^26 float32 = 256 MiB
TRANSFER_ROWS = (
    ("asarray 256 MiB f32 pageable host->device", "h2d_pageable_256M"),
    ("from_dlpack(x, device=cpu) 256 MiB f32 device->pageable", "d2h_pageable_256M"),
    ("asarray 256 MiB f32 pinned host->device", "h2d_pinned_256M"),
    ("to_host(x, out=pinned) 256 MiB f32 device->pinned", "d2h_pinned_256M"),
)


def _pinned_host(n):
    """A pinned NumPy float32 array of ``n`` elements (gparray's pinned_empty when gparray is
    there, else CuPy's pinned memory); every library's pinned rows read or write this one."""
    fn = getattr(getattr(core.xp, "cuda", None), "pinned_empty", None) if core.xp is not None else None
    if callable(fn):
        return fn((n,), core.xp.float32)
    import numpy
    return numpy.frombuffer(core.cp.cuda.alloc_pinned_memory(4 * n), numpy.float32, n)


def _transfer_ops(lib, host, pinned, dev):
    """(h2d_pageable, d2h_pageable, h2d_pinned, d2h_pinned) callables of ``lib``."""
    import numpy
    if lib == "gparray":
        to_host = getattr(core.xp.cuda, "to_host", None)
        if to_host is None:
            raise NotAvailable("gparray.cuda.to_host")
        return (lambda: core.xp.asarray(host), lambda: numpy.from_dlpack(dev, device="cpu"),
                lambda: core.xp.asarray(pinned), lambda: to_host(dev, out=pinned))
    if lib == "cupy":
        return (lambda: core.cp.asarray(host), lambda: dev.get(),
                lambda: core.cp.asarray(pinned), lambda: dev.get(out=pinned))
    th, tp = core.torch.from_numpy(host), core.torch.from_numpy(pinned)
    return (lambda: th.to("cuda"), lambda: dev.cpu().numpy(),
            lambda: tp.to("cuda"), lambda: tp.copy_(dev))


def _pinned_memcpy_ceiling(pinned, warmup, repeat):
    """GB/s of one cudaMemcpyAsync of the whole pinned buffer each way (and a stream
    synchronize), timed like the rows: the transfers' ceiling."""
    nbytes = pinned.nbytes
    d = core.cp.empty(pinned.shape, dtype=core.cp.float32)
    rt, src = core.cp.cuda.runtime, pinned.ctypes.data
    s = core.cp.cuda.get_current_stream()

    def h2d():
        rt.memcpyAsync(d.data.ptr, src, nbytes, rt.memcpyHostToDevice, s.ptr)
        s.synchronize()

    def d2h():
        rt.memcpyAsync(src, d.data.ptr, nbytes, rt.memcpyDeviceToHost, s.ptr)
        s.synchronize()
    with native_allocator("cupy"):
        out = {"h2d": nbytes / _wall_ms(h2d, warmup, repeat)[0] / 1e6,
               "d2h": nbytes / _wall_ms(d2h, warmup, repeat)[0] / 1e6}
    del d
    return out


def transfer_rows(libs, warmup, repeat, log, wanted):
    """The four 256 MiB transfer rows, gparray vs CuPy vs PyTorch: wall-clock per call (with
    the synchronize), GB/s of the 256 MiB moved, and %copy = percent of the pinned
    cudaMemcpy bandwidth of the same direction measured in this run (the ceiling).
    Targets (TARGETS.md): pageable <= 1.0x best; pinned >= 90% of pinned cudaMemcpy."""
    keep = [(name, key) for name, key in TRANSFER_ROWS if wanted(name, key, "transfers")]
    if not keep:
        return []
    import numpy
    host = numpy.random.default_rng(21).standard_normal(TRANSFER_N, dtype=numpy.float32)
    try:
        pinned = _pinned_host(TRANSFER_N)
        pinned[...] = host
        ceil = _pinned_memcpy_ceiling(pinned, warmup, repeat)
    except Exception as exc:
        log(f"[transfers] pinned memory / ceiling failed: {_short(exc)}")
        return []
    log(f"[transfers] pinned cudaMemcpy ceiling: H2D {ceil['h2d']:.1f} GB/s, D2H {ceil['d2h']:.1f} GB/s")
    base = randn(TRANSFER_N, seed=22)
    rows = {key: {"case": name, "key": key, "unit": "ms", "bytes": 4 * TRANSFER_N, "status": {},
                  "times": {}, "all_times": {}, "group": "transfers",
                  "ceiling_GBps": ceil["d2h" if "d2h" in key else "h2d"]}
            for name, key in keep}
    for lib in libs:
        if module_of(lib) is None:
            for row in rows.values():
                row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        dev = None
        try:
            dev = convert(lib, base)
            fns = dict(zip((k for _, k in TRANSFER_ROWS), _transfer_ops(lib, host, pinned, dev)))
        except Exception as exc:
            for row in rows.values():
                row["status"][lib] = f"error: {_short(exc)}"
            continue
        for key, row in rows.items():
            try:
                with native_allocator(lib):
                    ms, times = _wall_ms(fns[key], warmup, repeat)
                row["times"][lib], row["status"][lib] = ms, "ok"
                row["all_times"][lib] = [round(t, 4) for t in times]
            except Exception as exc:
                missing = lib == "gparray" and _is_missing(exc)
                row["status"][lib] = f"n/a ({_short(exc)})" if missing else f"error: {_short(exc)}"
                log(f"[{row['case']}] {lib}: {row['status'][lib]}")
        dev = fns = None
        free_memory()
    out = []
    for key, row in rows.items():
        target = (("pct_copy", 90.0, ">= 90% of pinned cudaMemcpy") if "pinned" in key
                  else ("best", 1.0, "<= 1.0x best"))
        row["target"] = target[2]
        finish_row(row, target, row["ceiling_GBps"])
        row["pct_of_pinned_memcpy"] = {k: 100.0 * v / row["ceiling_GBps"] for k, v in row.get("GBps", {}).items()}
        log(f"[{row['case']}] " + ", ".join(f"{lib} {_cell(row, lib)}" for lib in libs) +
            "  (% of pinned cudaMemcpy: " +
            ", ".join(f"{k} {v:.0f}%" for k, v in row["pct_of_pinned_memcpy"].items()) + ")")
        out.append(row)
    return out


# --------------------------------------------------------------------------- host-side cases

def _host_loop(row, libs, quick, log, prepare):
    """Fill ``row`` with the host microseconds per call of ``prepare(lib)()`` for each library:
    wall-clock over many calls with no sync inside the loop (the median of several rounds,
    after 200 warm-up calls), so the figure is the cost of reaching the GPU from Python (plus
    one closure call, the same for every library: the rows using it are ratios)."""
    n_ops = 2000 if quick else 20000
    rounds = 3 if quick else 7
    for lib in libs:
        if module_of(lib) is None:
            row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        try:
            call = prepare(lib)
            per = []
            with native_allocator(lib):
                for _ in range(200):
                    c = call()
                sync()
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    for _ in range(n_ops):
                        c = call()
                    t1 = time.perf_counter()
                    sync()
                    per.append((t1 - t0) / n_ops * 1e6)
            del c
            row["times"][lib] = statistics.median(per)
            row["status"][lib] = "ok"
        except Exception as exc:
            row["status"][lib] = (f"n/a ({_short(exc)})" if lib == "gparray" and _is_missing(exc)
                                  else f"error: {_short(exc)}")
            log(f"[{row['case']}] {lib}: {row['status'][lib]}")
            try:
                sync()
            except Exception:
                pass
    return row


def host_small_add(libs, quick, log):
    """Host microseconds per ``a + b`` on 1-element float32 arrays (no sync inside the loop)."""
    row = {"case": "a + b 1-element, host time/op", "key": "small_add_us_per_op", "unit": "us",
           "target": "<= 5 us", "status": {}, "times": {}}
    row["_target"] = ("abs", 5.0)
    n_ops = 2000 if quick else 20000
    rounds = 3 if quick else 7
    base = core.cp.ones(1, dtype=core.cp.float32)
    # the loop written out (not _host_loop): the absolute target leaves no room for the
    # extra Python call a closure adds per operation
    for lib in libs:
        if module_of(lib) is None:
            row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        try:
            a = convert(lib, base.copy())
            b = convert(lib, base.copy())
            with native_allocator(lib):
                runtime_rows._add_loop(a, b, 200, 1, sync)      # warm-up
                row["times"][lib] = runtime_rows._add_loop(a, b, n_ops, rounds, sync)
            row["status"][lib] = "ok"
        except Exception as exc:
            row["status"][lib] = (f"n/a ({_short(exc)})" if lib == "gparray" and _is_missing(exc)
                                  else f"error: {_short(exc)}")
            log(f"[{row['case']}] {lib}: {row['status'][lib]}")
    return row


SMALL_N, SMALL_K = 1000, 8   # small indexing: 8 int64 indices into a 1000-element f32 array


def _small_index_get(x, i, v):
    return x[i]


def _small_index_set(x, i, v):
    x[i] = v


def host_small_index(libs, quick, log, setitem=False):
    """Host microseconds per ``x[i]`` (or ``x[i] = v``): x 1000 float32, i 8 int64 on the device,
    v 8 float32 on the device; wall-clock over many calls, no sync inside the loop (as
    ``host_small_add``)."""
    if setitem:
        row = {"case": "x[i] = v, 8 of 1000, host time/op", "key": "small_setitem_us_per_op"}
        op = _small_index_set
    else:
        row = {"case": "x[i], 8 of 1000, host time/op", "key": "small_getitem_us_per_op"}
        op = _small_index_get
    row.update(unit="us", target="<= 1.3x PyTorch", status={}, times={}, group="indexing",
               _target=("torch", 1.3))
    base_x = _rng(8).standard_normal(SMALL_N, dtype=core.cp.float32)
    base_i = _rng(9).integers(0, SMALL_N, SMALL_K, dtype=core.cp.int64)
    base_v = _rng(10).standard_normal(SMALL_K, dtype=core.cp.float32)

    def prepare(lib):
        x, i, v = convert(lib, base_x.copy()), convert(lib, base_i.copy()), convert(lib, base_v.copy())
        return lambda: op(x, i, v)
    return _host_loop(row, libs, quick, log, prepare)


SMALL_FFT = 1024


def host_small_fft(libs, quick, log):
    """Host microseconds per ``fft`` of 1024 complex64 (the plan cached after warm-up; as
    ``host_small_add``)."""
    row = {"case": f"fft {SMALL_FFT} complex64, host time/op", "key": "small_fft_us_per_op", "unit": "us",
           "target": "<= 1.3x PyTorch", "status": {}, "times": {}, "group": "fft", "_target": ("torch", 1.3)}
    base = _c64(SMALL_FFT, seed=12)

    def prepare(lib):
        x, m = convert(lib, base.copy()), module_of(lib)
        return lambda: m.fft.fft(x)
    return _host_loop(row, libs, quick, log, prepare)


def host_small_matmul(libs, quick, log):
    """Host microseconds per ``a @ b`` on 2x2 float32 arrays (the "linalg" group; as
    ``host_small_add``): the cost of reaching cuBLAS from Python, not of the product."""
    row = {"case": "a @ b 2x2 float32, host time/op", "key": "small_matmul_us_per_op", "unit": "us",
           "target": "<= 1.3x PyTorch", "status": {}, "times": {}, "group": "linalg",
           "_target": ("torch", 1.3)}
    base_a = _rng(12).standard_normal((2, 2), dtype=core.cp.float32)
    base_b = _rng(13).standard_normal((2, 2), dtype=core.cp.float32)

    def prepare(lib):
        a, b = convert(lib, base_a.copy()), convert(lib, base_b.copy())
        return lambda: a @ b
    return _host_loop(row, libs, quick, log, prepare)


def _best_of(pair, n, repeat=5):
    """Best-of-``repeat`` seconds per ``pair()`` call, ``n`` calls per round (as gparray's own)."""
    pair()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            pair()
        best = min(best, time.perf_counter() - t0)
    return best / n


def _bench_pool_cupy(n, nbytes):
    pool = core.cp.cuda.MemoryPool()
    return _best_of(lambda: pool.malloc(nbytes), n)  # the pointer is dropped at once: freed


def _bench_pool_torch(n, nbytes):
    alloc, free = core.torch.cuda.caching_allocator_alloc, core.torch.cuda.caching_allocator_delete
    return _best_of(lambda: free(alloc(nbytes)), n)


def _bench_pool_gparray(n, nbytes):
    import importlib
    try:
        mod = importlib.import_module("gparray._memory._bench")
    except ImportError as exc:
        raise NotAvailable(f"gparray._memory._bench: {exc}") from None
    fn = getattr(mod, "bench_alloc_free", None)
    if fn is None:
        raise NotAvailable("gparray._memory._bench.bench_alloc_free is missing")
    try:
        res = fn(n=n, nbytes=nbytes)
    except TypeError:
        res = fn()
    return float(res) * 1e-6  # bench_alloc_free returns microseconds per malloc+free pair


def host_pool(libs, quick, log):
    """Microseconds per malloc+free pair of 4 KiB on a pool cache hit (best of 5 rounds)."""
    row = {"case": "pool malloc+free pair (4 KiB)", "key": "pool_alloc_free_us", "unit": "us",
           "target": "<= 2 us", "status": {}, "times": {}}
    row["_target"] = ("abs", 2.0)
    n = 10000 if quick else 100000
    fns = {"gparray": _bench_pool_gparray, "cupy": _bench_pool_cupy, "torch": _bench_pool_torch}
    for lib in libs:
        if module_of(lib) is None:
            row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        try:
            row["times"][lib] = fns[lib](n, 4096) * 1e6
            row["status"][lib] = "ok"
        except Exception as exc:
            row["status"][lib] = (f"n/a ({_short(exc)})" if lib == "gparray" and _is_missing(exc)
                                  else f"error: {_short(exc)}")
            log(f"[{row['case']}] {lib}: {row['status'][lib]}")
    return row


_CHILD = {
    "gparray": (
        "import time; t0 = time.perf_counter()\n"
        "import gparray as xp\n"
        "t1 = time.perf_counter()\n"
        "{ops}"
        "t2 = time.perf_counter()\n"
        "print('GPBENCH', t1 - t0, t2 - t1)\n"),
    "cupy": (
        "import time; t0 = time.perf_counter()\n"
        "import cupy as cp\n"
        "t1 = time.perf_counter()\n"
        "{ops}"
        "t2 = time.perf_counter()\n"
        "print('GPBENCH', t1 - t0, t2 - t1)\n"),
    "torch": (
        "import time; t0 = time.perf_counter()\n"
        "import torch\n"
        "t1 = time.perf_counter()\n"
        "{ops}"
        "t2 = time.perf_counter()\n"
        "print('GPBENCH', t1 - t0, t2 - t1)\n"),
}
_CHILD_OPS = {
    "gparray": ("a = xp.ones(4); b = a + a\n"
                "s = getattr(getattr(xp, 'cuda', None), 'synchronize', None)\n"
                "if s is not None: s()\n"
                "else:\n    import cupy; cupy.cuda.Device().synchronize()\n"),
    "cupy": "a = cp.ones(4); b = a + a; cp.cuda.Device().synchronize()\n",
    "torch": "a = torch.ones(4, device='cuda'); b = a + a; torch.cuda.synchronize()\n",
}


def _child(lib, cache_dir, with_ops=True):
    """Run a fresh interpreter; return (import s, first ops s, process wall s)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["GPARRAY_CACHE_DIR"] = os.path.join(cache_dir, "gparray")
    env["CUPY_CACHE_DIR"] = os.path.join(cache_dir, "cupy")
    code = _CHILD[lib].format(ops=_CHILD_OPS[lib] if with_ops else "")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("GPBENCH "):
            _, imp, ops = line.split()
            return float(imp), float(ops), wall
    err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"child exited {proc.returncode}: {err[:200]}")


def startup_rows(libs, quick, log):
    """Cold start (empty kernel caches), warm start (same caches again), import alone.

    gparray's bytecode is compiled first, as ``pip install`` leaves an installed package:
    NumPy, CuPy and PyTorch come with theirs, and a source checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module of gparray in every
    child (70-100 ms on the CPU build machine, 14 ms with the bytecode)."""
    import compileall

    compileall.compile_dir(os.path.join(REPO_ROOT, "gparray"), quiet=1)
    cold = {"case": "cold start: import + first ops", "key": "cold_start_s", "unit": "s",
            "target": "<= 1.0 s total", "status": {}, "times": {}, "detail": {}, "_target": ("abs", 1.0)}
    warm = {"case": "warm start: first ops", "key": "warm_start_s", "unit": "s",
            "target": "<= 0.15 s", "status": {}, "times": {}, "detail": {}, "_target": ("abs", 0.15)}
    # gparray imports CuPy at its first operation, CuPy's own first ops come after `import
    # cupy`: the whole new process (import plus first ops) is the like-for-like figure
    warm_total = {"case": "warm start: import + first ops", "key": "warm_total_s", "unit": "s",
                  "target": "", "status": {}, "times": {}, "detail": {}}
    imp = {"case": "import only", "key": "import_s", "unit": "s", "target": "", "status": {},
           "times": {}, "detail": {}}
    reps = 1 if quick else 3
    for lib in libs:
        if lib != "gparray" and module_of(lib) is None:
            for r in (cold, warm, warm_total, imp):
                r["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        try:
            colds, warms = [], []
            for _ in range(reps):
                with tempfile.TemporaryDirectory(prefix="gp-bench-cache-") as d:
                    colds.append(_child(lib, d))
                    for _ in range(reps):
                        warms.append(_child(lib, d))
            c = min(colds, key=lambda t: t[0] + t[1])
            w = sorted(warms, key=lambda t: t[1])[len(warms) // 2]
            cold["times"][lib] = c[0] + c[1]
            cold["detail"][lib] = {"import_s": c[0], "ops_s": c[1], "process_wall_s": c[2]}
            warm["times"][lib] = w[1]
            warm["detail"][lib] = {"import_s": w[0], "ops_s": w[1], "process_wall_s": w[2]}
            wt = sorted(warms, key=lambda t: t[0] + t[1])[len(warms) // 2]
            warm_total["times"][lib] = wt[0] + wt[1]
            warm_total["detail"][lib] = {"import_s": wt[0], "ops_s": wt[1], "process_wall_s": wt[2]}
            cold["status"][lib] = warm["status"][lib] = warm_total["status"][lib] = "ok"
            log(f"[startup] {lib}: cold import {c[0]:.3f} s + ops {c[1]:.3f} s (process {c[2]:.3f} s); "
                f"warm import {w[0]:.3f} s + ops {w[1]:.3f} s (process {w[2]:.3f} s)")
        except Exception as exc:
            cold["status"][lib] = warm["status"][lib] = warm_total["status"][lib] = f"error: {_short(exc)}"
            log(f"[startup] {lib}: ERROR {_short(exc)}")
        try:
            with tempfile.TemporaryDirectory(prefix="gp-bench-cache-") as d:
                runs = [_child(lib, d, with_ops=False) for _ in range(reps)]
            r = sorted(runs, key=lambda t: t[0])[len(runs) // 2]
            imp["times"][lib] = r[0]
            imp["detail"][lib] = {"import_s": r[0], "process_wall_s": r[2]}
            imp["status"][lib] = "ok"
        except Exception as exc:
            imp["status"][lib] = f"error: {_short(exc)}"
            log(f"[import] {lib}: ERROR {_short(exc)}")
    return [cold, warm, warm_total, imp]


# --------------------------------------------------------------------------- report

def print_table(rows, meta):
    head = ("case", "gparray ms", "cupy ms", "torch ms", "vs cupy", "vs torch", "GB/s", "%copy",
            "target", "met")
    lines = []
    for r in rows:
        rc, rt = r.get("ratio_vs_cupy"), r.get("ratio_vs_torch")
        thr = ""
        if r.get("GBps", {}).get("gparray"):
            thr = f"{r['GBps']['gparray']:.0f}"
        elif r.get("TFLOPs", {}).get("gparray"):
            thr = f"{r['TFLOPs']['gparray']:.1f}TF"
        pct = f"{r['pct_copy_bw']:.0f}%" if r.get("pct_copy_bw") else ""
        met = {True: "ok", False: "MISS", None: ""}[r.get("target_met")]
        lines.append((r["case"], _cell(r, "gparray"), _cell(r, "cupy"), _cell(r, "torch"),
                      f"{rc:.2f}x" if rc else "", f"{rt:.2f}x" if rt else "", thr, pct,
                      r.get("target", ""), met))
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    widths[8] = min(widths[8], 30)

    def fmt(cols):
        out = []
        for i, c in enumerate(cols):
            c = str(c)
            if i == 8 and len(c) > widths[8]:
                c = c[: widths[8] - 1] + "~"
            out.append(c.ljust(widths[i]) if i in (0, 8, 9) else c.rjust(widths[i]))
        return " | ".join(out).rstrip()

    print()
    ceil = meta.get("copy", {}).get("ceiling_GBps")
    print(f"bench: {meta.get('gpu', '?')}; median of {meta['repeat']} event-timed runs after "
          f"{meta['warmup']} warm-up; copy ceiling {ceil:.0f} GB/s" if ceil else
          f"bench: {meta.get('gpu', '?')}; median of {meta['repeat']} runs")
    print("ratios are gparray time / anchor time (lower is better); n/a = not in gparray yet")
    print(fmt(head))
    print("-+-".join("-" * w for w in widths))
    for ln in lines:
        print(fmt(ln))
    for r in rows:
        if r.get("note"):
            print(f"{r['case']}: {r['note']}")
        if r.get("one_call_ms"):
            print(f"{r['case']}: one call per event pair: " +
                  ", ".join(f"{k} {v:.4f} ms" for k, v in r["one_call_ms"].items()))
    met = [r.get("target_met") for r in rows]
    print(f"targets met: {sum(1 for m in met if m)}/{sum(1 for m in met if m is not None)} measured, "
          f"{sum(1 for r in rows if r['status'].get('gparray', '').startswith('n/a'))} n/a, "
          f"{sum(1 for r in rows if r['status'].get('gparray', '').startswith('error'))} errors")


def environment():
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(), "host": platform.node()}
    try:
        import numpy
        meta["numpy"] = numpy.__version__
    except Exception:
        pass
    if core.cp is not None:
        meta["cupy"] = core.cp.__version__
        try:
            props = core.cp.cuda.runtime.getDeviceProperties(core.cp.cuda.Device().id)
            name = props["name"]
            meta["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            meta["driver"] = core.cp.cuda.runtime.driverGetVersion()
            meta["runtime"] = core.cp.cuda.runtime.runtimeGetVersion()
        except Exception as exc:
            meta["gpu"] = f"unknown ({_short(exc)})"
    if core.torch is not None:
        meta["torch"] = core.torch.__version__
    if core.xp is not None:
        meta["gparray"] = getattr(core.xp, "__version__", "?")
    meta["tf32"] = {"CUPY_TF32": os.environ.get("CUPY_TF32", ""),
                    "GPARRAY_ALLOW_TF32": os.environ.get("GPARRAY_ALLOW_TF32", ""),
                    "torch.backends.cuda.matmul.allow_tf32":
                        bool(core.torch.backends.cuda.matmul.allow_tf32) if core.torch is not None else None}
    meta["import_errors"] = dict(_import_errors)
    return meta


def gpu_cases():
    """Every GPU case, in the order they run and --list prints them."""
    return elementwise_cases() + colstats_cases() + linalg_cases() + indexing_cases() + sorting_cases() \
        + sets_cases() + fft_cases() + join_cases()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--cases", default="", help="comma-separated substrings; run the cases whose "
                    "name or key contains one (case-insensitive), or a group name: 'indexing' "
                    "runs the advanced-indexing rows, 'sorting' the sort rows, 'sets' the set functions, "
                    "'linalg' the linear algebra, 'fft' the fft rows, 'runtime' the profiling and "
                    "user-kernel host costs, 'multigpu' the two-GPU rows (see --list)")
    ap.add_argument("--libs", default=",".join(LIBS), help="comma-separated subset of "
                    "gparray,cupy,torch (default: all)")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per case (default 20, 5 with --quick)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 3, 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter host loops")
    ap.add_argument("--no-startup", action="store_true", help="skip the cold/warm start subprocesses")
    ap.add_argument("--json", metavar="PATH", help="write every row and the environment as JSON")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    bad = [lib for lib in libs if lib not in LIBS]
    if bad:
        ap.error(f"--libs: unknown {bad}; choose from {LIBS}")
    repeat = args.repeat or (5 if args.quick else 20)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    filters = [s.strip().lower() for s in args.cases.split(",") if s.strip()]

    def wanted(name, key, group=""):
        return not filters or any(f in name.lower() or f in key.lower() or f == group.lower()
                                  for f in filters)

    host_names = [("a + b 1-element, host time/op", "small_add_us_per_op"),
                  ("pool malloc+free pair (4 KiB)", "pool_alloc_free_us"),
                  ("cold start: import + first ops", "cold_start_s"),
                  ("warm start: first ops", "warm_start_s"),
                  ("warm start: import + first ops", "warm_total_s"), ("import only", "import_s")]
    host_index_names = [("x[i], 8 of 1000, host time/op", "small_getitem_us_per_op", "indexing"),
                        ("x[i] = v, 8 of 1000, host time/op", "small_setitem_us_per_op", "indexing")]
    host_linalg_names = [("a @ b 2x2 float32, host time/op", "small_matmul_us_per_op", "linalg")]
    host_fft_name = (f"fft {SMALL_FFT} complex64, host time/op", "small_fft_us_per_op", "fft")
    runtime_names = [(name, key, "runtime") for name, key in runtime_rows.NAMES]
    if args.list:
        for c in gpu_cases():
            grp = f"[{c.group}]" if c.group else ""
            print(f"{c.name:<40} key={c.key:<22} {grp:<11} target: {c.target[2] if c.target else ''}")
        for name, key in host_names:
            print(f"{name:<40} key={key}")
        for name, key, grp in host_index_names + host_linalg_names + [host_fft_name]:
            print(f"{name:<40} key={key:<22} [{grp}]   target: <= 1.3x PyTorch")
        for (name, key, grp), target in zip(runtime_names, runtime_rows.TARGETS):
            print(f"{name:<40} key={key:<22} [{grp}]   target: {target}")
        for name, key, grp, target in multigpu_rows.listing():
            print(f"{name:<40} key={key:<22} [{grp}]  target: {target}")
        print("groups (--cases GROUP runs one): indexing, sorting, sets, linalg, fft, runtime, multigpu")
        return 0

    def log(msg):
        print(msg, flush=True)

    _import_libs(libs)
    if core.cp is None:
        print(f"bench: CuPy is needed to build the inputs and time them: {_import_errors.get('cupy')}")
        return 1
    try:
        ndev = core.cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        ndev = 0
        log(f"bench: {_short(exc)}")
    if ndev == 0:
        print("bench: no CUDA device was found; nothing to time")
        return 1
    for lib, err in _import_errors.items():
        log(f"bench: {lib} unavailable: {err}")

    meta = environment()
    meta.update(repeat=repeat, warmup=warmup, libs=libs,
                note="CuPy is timed with its own memory pool (gparray's allocator hook set aside)")
    log(f"bench: {meta.get('gpu')} | gparray {meta.get('gparray', '-')} | cupy {meta.get('cupy', '-')} | "
        f"torch {meta.get('torch', '-')} | python {meta['python']}")
    meta["copy"] = measure_copy_ceiling(warmup, repeat, log)
    ceiling = meta["copy"].get("ceiling_GBps")
    if ceiling:
        log("bench: copy ceiling " + ", ".join(f"{k} {v:.0f}" for k, v in meta["copy"].items()
                                               if k.endswith("GBps")))

    rows = []
    for case in gpu_cases():
        if not wanted(case.name, case.key, case.group):
            continue
        t0 = time.perf_counter()
        row = run_gpu_case(case, libs, warmup, repeat, log)
        finish_row(row, case.target, ceiling)
        rows.append(row)
        cells = ", ".join(f"{lib} {_cell(row, lib)}" for lib in libs)
        log(f"[{case.name}] {cells}  ({time.perf_counter() - t0:.1f} s)")

    rows += transfer_rows(libs, warmup, repeat, log, wanted)   # finished rows (their own ceiling)
    # two GPUs (finished rows; with one GPU the group says why and gives none)
    rows += multigpu_rows.rows(core, libs, warmup, repeat, log, wanted)

    host_rows = []
    if wanted(*host_names[0]):
        host_rows.append(host_small_add(libs, args.quick, log))
    if wanted(*host_names[1]):
        host_rows.append(host_pool(libs, args.quick, log))
    for (name, key, grp), setitem in zip(host_index_names, (False, True)):
        if wanted(name, key, grp):
            host_rows.append(host_small_index(libs, args.quick, log, setitem=setitem))
    for name, key, grp in host_linalg_names:
        if wanted(name, key, grp):
            host_rows.append(host_small_matmul(libs, args.quick, log))
    if wanted(*host_fft_name):
        host_rows.append(host_small_fft(libs, args.quick, log))
    want_off, want_on = wanted(*runtime_names[0]), wanted(*runtime_names[1])
    if (want_off or want_on) and "gparray" in libs and core.xp is not None:
        # first of the rows that enter a profile: its baseline is taken before any profile
        host_rows += runtime_rows.profiling_rows(core.xp, args.quick, log, sync, want_off, want_on)
    if wanted(*runtime_names[2]):
        host_rows.append(runtime_rows.user_kernel_row(core.xp, core.cp, libs, args.quick, log, sync))
    if not args.no_startup and any(wanted(n, k) for n, k in host_names[2:]):
        host_rows += [r for r in startup_rows(libs, args.quick, log) if wanted(r["case"], r["key"])]
    for row in host_rows:
        finish_row(row, row.pop("_target", None), None)
        rows.append(row)

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1, default=str)
        log(f"bench: wrote {args.json}")
    print_table(rows, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
