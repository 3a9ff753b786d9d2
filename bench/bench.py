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
read once and each output written once (for matmul and cholesky, TFLOP/s), as the tables of
docs/performance.md do, which also hold the targets and the ratios. The copy ceiling is
measured in the same run (device-to-device memcpy through CuPy, and PyTorch's clone: the
faster of the two).

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
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(REPO_ROOT, "bench") not in sys.path:
    sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import runtime_rows  # noqa: E402  (bench/runtime_rows.py: the "runtime" group)
import multigpu_rows  # noqa: E402  (bench/multigpu_rows.py: the "multigpu" group, two GPUs)
import bench_core as core  # noqa: E402  (bench/bench_core.py: libraries, timing, rows)
from bench_core import (LIBS, _cell, _import_errors, _import_libs, _short, finish_row,  # noqa: E402
    measure_copy_ceiling, run_gpu_case, sync)
from cases_elementwise import colstats_cases, elementwise_cases  # noqa: E402
from cases_indexing import indexing_cases  # noqa: E402
from cases_sorting import sets_cases, sorting_cases  # noqa: E402
from cases_linalg import linalg_cases  # noqa: E402
from cases_fft import fft_cases  # noqa: E402
from cases_join import join_cases  # noqa: E402
from transfer_rows import transfer_rows  # noqa: E402
from host_rows import (SMALL_FFT, host_pool, host_small_add, host_small_fft, host_small_index,  # noqa: E402
    host_small_matmul, startup_rows)

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
