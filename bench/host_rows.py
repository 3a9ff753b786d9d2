"""The host-side rows of bench/bench.py: host time per call of small operations (``a + b``,
``x[i]``, ``x[i] = v``, ``fft``, ``a @ b`` on tiny arrays), the pool's malloc+free pair, and
cold and warm start (fresh interpreters, empty then filled kernel caches)."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import bench_core as core
import runtime_rows
from bench_core import (NotAvailable, REPO_ROOT, _import_errors, _is_missing, _rng, _short,
    convert, module_of, native_allocator, sync)
from cases_fft import _c64


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
            _failed(row, lib, exc, log)
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
            _failed(row, lib, exc, log)
    return row


def _failed(row, lib, exc, log):
    """Record why ``lib`` has no figure in ``row``: n/a for a gparray feature that is
    missing, else the error; logged."""
    row["status"][lib] = (f"n/a ({_short(exc)})" if lib == "gparray" and _is_missing(exc)
                          else f"error: {_short(exc)}")
    log(f"[{row['case']}] {lib}: {row['status'][lib]}")


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
    """Best-of-``repeat`` seconds per ``pair()`` call, ``n`` calls per round: the same loop
    as gparray's own row (gparray._memory._bench.time_pairs, microseconds)."""
    from gparray._memory._bench import time_pairs

    return time_pairs(pair, n, repeat) / 1e6


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
            _failed(row, lib, exc, log)
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
