"""The "runtime" rows of bench/bench.py (``--cases runtime``): what profiling costs the host
and what a user kernel launch costs against CuPy's ``RawKernel`` (issue 18).

Host time per call: ``time.perf_counter`` around many calls with no synchronization inside
the loop, divided by the count; the median of several rounds, after a warm-up. The loops are
written out (no closure per call) so that a ratio of two of them compares the calls alone.

* profiling off: ``a + b`` on 1-element float32 arrays, first before any
  ``gparray.cuda.profile()`` was entered in the process (the baseline), then after one was
  entered and exited (off). The row's figure is off; its ratio is off / baseline (target
  <= 1.03: the hooks cost nothing once a profile has exited).
* profiling on: the same ``a + b`` inside a profile (one profile per round, entered and
  exited outside the timed loop; every call is recorded with two CUDA events). Ratio: on /
  off (target <= 2).
* user kernel launch: the kernel of bench/add_one.cu on a 1-element array, as
  ``gparray.cuda.compile_kernel`` and as ``cupy.RawKernel`` of the same source, the same
  arguments (the array and ``numpy.int64(1)``), grid 1, block 32.
"""
from __future__ import annotations

import os
import statistics
import time

KERNEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "add_one.cu")
KERNEL_NAME = "gp_bench_add_one"

NAMES = [("profiling off: a + b 1-element, host time/op", "profile_off_us_per_op"),
         ("profiling on: a + b 1-element, host time/op", "profile_on_us_per_op"),
         ("user kernel launch 1-element, host time/launch", "user_kernel_launch_us")]
TARGETS = ["off / baseline <= 1.03", "on / off <= 2.0", "<= 1.0x CuPy RawKernel"]


def _row(i: int) -> dict:
    name, key = NAMES[i]
    return {"case": name, "key": key, "unit": "us", "target": TARGETS[i], "status": {}, "times": {},
            "group": "runtime"}


def _add_loop(a, b, n_ops: int, rounds: int, sync) -> float:
    """Median host microseconds per ``a + b``."""
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n_ops):
            c = a + b
        t1 = time.perf_counter()
        sync()
        per.append((t1 - t0) / n_ops * 1e6)
    del c
    return statistics.median(per)


def _add_loop_profiled(xp, a, b, n_ops: int, rounds: int, sync) -> float:
    """Median host microseconds per ``a + b`` inside a profile (one profile per round)."""
    per = []
    for _ in range(rounds):
        with xp.cuda.profile() as prof:
            t0 = time.perf_counter()
            for _ in range(n_ops):
                c = a + b
            t1 = time.perf_counter()
        if len(prof.records) != n_ops:
            raise RuntimeError(f"profile recorded {len(prof.records)} launches of {n_ops} a + b calls")
        per.append((t1 - t0) / n_ops * 1e6)
        sync()
    del c
    return statistics.median(per)


def profiling_rows(xp, quick: bool, log, sync, want_off: bool = True, want_on: bool = True) -> list:
    """The "profiling off" and "profiling on" rows (gparray only)."""
    from gparray.cuda import _profile

    off_row, on_row = _row(0), _row(1)
    n_ops = 2000 if quick else 20000
    rounds = 3 if quick else 7
    try:
        fresh = _profile._installs == 0
        a = xp.ones(1, dtype=xp.float32)
        b = xp.ones(1, dtype=xp.float32)
        for _ in range(200):
            c = a + b
        sync()
        base = _add_loop(a, b, n_ops, rounds, sync)
        with xp.cuda.profile():
            c = a + b
        del c
        sync()
        off = _add_loop(a, b, n_ops, rounds, sync)
        off_row["times"]["gparray"] = off
        off_row["status"]["gparray"] = "ok"
        off_row["ratio"] = off / base
        off_row["detail"] = {"baseline_us": base, "off_us": off, "baseline_before_any_profile": fresh}
        off_row["_target"] = ("ratio", 1.03)
        off_row["note"] = (f"baseline {base:.2f} us (before any profile{'' if fresh else ': NOT the first'}), "
                           f"off {off:.2f} us, off/baseline {off / base:.3f}")
        if want_on:
            # 2000 calls per profile: after the warm-up round their 4000 events come from the
            # profiler's pool (no cudaEventCreate in the timed loops)
            n_on = 1000 if quick else 2000
            _add_loop_profiled(xp, a, b, n_on, 1, sync)
            on = _add_loop_profiled(xp, a, b, n_on, rounds, sync)
            on_row["times"]["gparray"] = on
            on_row["status"]["gparray"] = "ok"
            on_row["ratio"] = on / off
            on_row["detail"] = {"on_us": on, "off_us": off}
            on_row["_target"] = ("ratio", 2.0)
            on_row["note"] = f"on {on:.2f} us, off {off:.2f} us, on/off {on / off:.2f}"
    except Exception as exc:
        for r in (off_row, on_row):
            if not r["status"]:
                r["status"]["gparray"] = f"error: {type(exc).__name__}: {exc}"[:200]
        log(f"[runtime] profiling rows: {type(exc).__name__}: {exc}")
    return [r for r, want in ((off_row, want_off), (on_row, want_on)) if want]


def _gparray_launches(k, args, n_ops: int, rounds: int, sync) -> float:
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n_ops):
            k(1, 32, args)
        t1 = time.perf_counter()
        sync()
        per.append((t1 - t0) / n_ops * 1e6)
    return statistics.median(per)


def _cupy_launches(rk, args, n_ops: int, rounds: int, sync) -> float:
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n_ops):
            rk((1,), (32,), args)
        t1 = time.perf_counter()
        sync()
        per.append((t1 - t0) / n_ops * 1e6)
    return statistics.median(per)


def user_kernel_row(xp, cp, libs, quick: bool, log, sync) -> dict:
    """Host microseconds per launch of the same 1-element kernel: gparray's compile_kernel
    against CuPy's RawKernel (PyTorch has none: not timed)."""
    import numpy as np

    row = _row(2)
    row["_target"] = ("cupy", 1.0)
    with open(KERNEL_FILE) as fh:
        src = fh.read()
    n_ops = 2000 if quick else 20000
    rounds = 3 if quick else 7
    for lib in libs:
        if lib not in ("gparray", "cupy") or (xp if lib == "gparray" else cp) is None:
            row["status"][lib] = "n/a"
            continue
        try:
            if lib == "gparray":
                k = xp.cuda.compile_kernel(src, KERNEL_NAME)
                args = (xp.zeros(1, dtype=xp.float32), np.int64(1))
                _gparray_launches(k, args, 200, 1, sync)          # warm-up
                row["times"][lib] = _gparray_launches(k, args, n_ops, rounds, sync)
            else:
                rk = cp.RawKernel(src, KERNEL_NAME)
                args = (cp.zeros(1, dtype=cp.float32), np.int64(1))
                _cupy_launches(rk, args, 200, 1, sync)
                row["times"][lib] = _cupy_launches(rk, args, n_ops, rounds, sync)
            row["status"][lib] = "ok"
        except Exception as exc:
            row["status"][lib] = f"error: {type(exc).__name__}: {exc}"[:200]
            log(f"[{row['case']}] {lib}: {row['status'][lib]}")
    return row


__all__ = ["NAMES", "profiling_rows", "user_kernel_row"]
