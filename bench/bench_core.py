"""The measuring core of bench/bench.py: the libraries (CuPy, PyTorch, gparray: imported by
``_import_libs`` at run time, so the other bench modules read them as ``core.cp``,
``core.torch``, ``core.xp``), the inputs, ``Case``, the timing (CUDA events: ``time_gpu``;
wall clock: ``_wall_ms``), one GPU case run into a row (``run_gpu_case``), the copy
ceiling, and the arithmetic that finishes a row (ratios, GB/s, TFLOP/s, %copy, target met)
and formats its cells.

bench/multigpu_rows.py receives this module as ``b`` (its libraries and helpers).
"""
from __future__ import annotations

import contextlib
import functools
import os
import statistics
import sys
import time
import traceback


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBS = ("gparray", "cupy", "torch")

N28 = 1 << 28
N26 = 1 << 26
N24 = 1 << 24
M = 16384

# --------------------------------------------------------------------------- libraries

cp = None
torch = None
xp = None
_import_errors: dict[str, str] = {}


def _short(exc: BaseException, limit: int = 160) -> str:
    msg = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _import_libs(wanted):
    global cp, torch, xp
    try:
        import cupy
        cp = cupy
    except Exception as exc:
        _import_errors["cupy"] = _short(exc)
    if "torch" in wanted:
        try:
            import torch as _torch
            if not _torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            # float32 products in full float32, as CuPy and gparray compute them by default
            _torch.backends.cuda.matmul.allow_tf32 = False
            _torch.backends.cudnn.allow_tf32 = False
            _torch.set_float32_matmul_precision("highest")
            torch = _torch
        except Exception as exc:
            _import_errors["torch"] = _short(exc)
    if "gparray" in wanted:
        if REPO_ROOT not in sys.path:
            sys.path.insert(0, REPO_ROOT)
        try:
            import gparray
            xp = gparray
        except Exception as exc:
            _import_errors["gparray"] = _short(exc)


def sync():
    """Wait for all device work (gparray's synchronize when it exists)."""
    fn = getattr(getattr(xp, "cuda", None), "synchronize", None) if xp is not None else None
    if callable(fn):
        fn()
    elif cp is not None:
        cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()


def free_memory():
    """Hand cached blocks back between cases so one case's inputs do not crowd the next."""
    import gc
    gc.collect()
    if xp is not None:
        for owner in (getattr(xp, "cuda", None), getattr(getattr(xp, "cuda", None), "memory", None)):
            fn = getattr(owner, "empty_cache", None)
            if callable(fn):
                try:
                    fn()
                except Exception:
                    pass
                break
    if cp is not None:
        try:
            cp.get_default_memory_pool().free_all_blocks()
        except Exception:
            pass
    if torch is not None:
        torch.cuda.empty_cache()


@contextlib.contextmanager
def native_allocator(lib):
    """Time CuPy with CuPy's own memory pool.

    Once gparray has made its pool it routes CuPy's allocations through a Python hook
    (``cupy.cuda.set_allocator``); left in place, that would slow the CuPy anchor down.
    """
    if lib != "cupy" or cp is None:
        yield
        return
    prev = cp.cuda.get_allocator()
    cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)
    try:
        yield
    finally:
        cp.cuda.set_allocator(prev)


class NotAvailable(Exception):
    """The library lacks the function (reported as n/a, not as an error)."""


# --------------------------------------------------------------------------- inputs

def _rng(seed=1234):
    return cp.random.default_rng(seed)


def randn(n, dtype="float32", seed=1):
    return _rng(seed).standard_normal(n, dtype=getattr(cp, dtype))


def convert(lib, value):
    """A CuPy array as ``lib``'s array (zero-copy where the library allows); others unchanged."""
    if cp is None or not isinstance(value, cp.ndarray):
        return value
    if lib == "cupy":
        return value
    if lib == "torch":
        return torch.from_dlpack(value)
    errors = []
    for name in ("asarray", "from_dlpack"):
        fn = getattr(xp, name, None)
        if fn is None:
            continue
        try:
            return fn(value)
        except Exception as exc:
            errors.append(f"xp.{name}: {_short(exc, 100)}")
    raise NotAvailable("cannot take a CuPy array: " + ("; ".join(errors) or "no asarray/from_dlpack"))


def module_of(lib):
    return {"gparray": xp, "cupy": cp, "torch": torch}[lib]


# --------------------------------------------------------------------------- cases

class Case:
    """One benchmark: inputs (CuPy arrays), one callable per library, bytes or flops, target.

    ``ops[lib](m, d)`` gets the library's module and the inputs converted for it.
    ``target`` is (anchor, factor, text): anchor "torch"/"cupy"/"best" means gparray's time
    must be <= factor x that anchor's; "abs" means <= factor in the case's unit.
    ``calls``: calls of the op between one pair of events (the time is divided by it). 1 for
    every row but the few small ones whose target is a bandwidth: there the host time of one
    call (about 10 us in every library) would hide the kernel, so back-to-back calls measure
    the throughput a loop sees; the row says so and the one-call time is printed beside it.
    """

    kind = "gpu"

    def __init__(self, name, key, make, ops, nbytes=None, flops=None, target=None, unit="ms",
                 group="", calls=1):
        self.name, self.key, self.make, self.ops = name, key, make, ops
        self.calls = calls
        self.nbytes, self.flops, self.target, self.unit = nbytes, flops, target, unit
        self.group = group


def same(fn):
    return {lib: fn for lib in LIBS}


# --------------------------------------------------------------------------- timing

def _events(lib):
    if lib == "torch":
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    return cp.cuda.Event(), cp.cuda.Event()


def _elapsed_ms(lib, start, end):
    if lib == "torch":
        return start.elapsed_time(end)
    return cp.cuda.get_elapsed_time(start, end)


def time_gpu(lib, fn, warmup, repeat, calls=1):
    """Median milliseconds of ``fn()`` between two CUDA events, after ``warmup`` calls;
    ``calls`` > 1: that many calls back to back between the events, the time divided by it."""
    for _ in range(warmup):
        out = fn()
        del out
    sync()
    start, end = _events(lib)
    times = []
    out = None
    for _ in range(repeat):
        start.record()
        res = fn()
        for _ in range(calls - 1):
            res = fn()
        end.record()
        end.synchronize()
        times.append(_elapsed_ms(lib, start, end) / calls)
        out = res  # the previous result is freed after its timing, not inside the next one
    del out
    sync()
    return (statistics.median(times) if times else None), times


def _is_missing(exc) -> bool:
    if isinstance(exc, (AttributeError, NotImplementedError, NotAvailable)):
        return True
    # gparray's "not supported yet" errors (e.g. integer/boolean array indices before they exist)
    msg = str(exc).lower()
    return isinstance(exc, (IndexError, TypeError, ValueError)) and (
        "not supported yet" in msg or "not implemented" in msg)


# timed runs of a case are split into this many rounds, every library timed in each. 10
# (2 runs a round at the default 20): with 4 rounds of 5 a slow stretch of the GPU's clocks
# (H200, fft of 2^24: 0.28 -> 0.35 ms for about ten runs) fell on one library's block of 5
# runs and moved its median by 7%; shorter rounds spread such a stretch over all three.
ROUNDS = 10


def _case_failed(row, case, lib, exc, log):
    """Record ``lib``'s failure on ``case`` (gparray's missing functions as n/a)."""
    if lib == "gparray" and _is_missing(exc):
        row["status"][lib] = f"n/a ({_short(exc)})"
        log(f"[{case.name}] gparray: n/a ({_short(exc)})")
    else:
        row["status"][lib] = f"error: {_short(exc)}"
        log(f"[{case.name}] {lib}: ERROR {_short(exc)}")
        if os.environ.get("GPARRAY_BENCH_TRACEBACK"):
            traceback.print_exc()
    try:
        sync()
    except Exception:
        pass


def run_gpu_case(case, libs, warmup, repeat, log):
    row = {"case": case.name, "key": case.key, "unit": "ms", "target": case.target[2] if case.target else "",
           "status": {}, "times": {}, "all_times": {}}
    try:
        data = case.make()
        sync()
    except Exception as exc:
        log(f"[{case.name}] inputs failed: {_short(exc)}")
        for lib in libs:
            row["status"][lib] = f"error: inputs: {_short(exc)}"
        return row
    try:
        if callable(case.nbytes):
            row["bytes"] = int(case.nbytes(data))
        elif case.nbytes is not None:
            row["bytes"] = int(case.nbytes)
        if case.flops is not None:
            row["flops"] = float(case.flops)
    except Exception as exc:
        log(f"[{case.name}] byte count failed: {_short(exc)}")

    # every library's inputs and warm-up first, then the timed runs in ROUNDS rounds, each
    # taking every library in turn (starting one library later each round): a GPU whose
    # clocks drift (power, temperature) over a case no longer favours whichever library runs
    # first, which a compute-bound case (a float64 product) showed as a few percent
    ready = []
    for lib in libs:
        if module_of(lib) is None:
            row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        try:
            conv = {k: convert(lib, v) for k, v in data.items()}
            if lib == "torch":
                torch.cuda.synchronize()
            m, op = module_of(lib), case.ops[lib]
            fn = functools.partial(op, m, conv)
            with native_allocator(lib):
                time_gpu(lib, fn, warmup, 0)
            ready.append((lib, fn))
        except Exception as exc:
            _case_failed(row, case, lib, exc, log)
    for calls in ((1, case.calls) if case.calls > 1 else (1,)):
        times = {lib: [] for lib, _ in ready}
        for r in range(min(ROUNDS, max(repeat, 1))):
            n = repeat // ROUNDS + (1 if r < repeat % ROUNDS else 0)
            for lib, fn in ready[r % len(ready):] + ready[:r % len(ready)] if ready else ():
                if lib not in times or not n:
                    continue
                try:
                    with native_allocator(lib):
                        times[lib] += time_gpu(lib, fn, 1, n, calls)[1]
                except Exception as exc:
                    _case_failed(row, case, lib, exc, log)
                    del times[lib]
        for lib, ts in times.items():
            if calls > 1:
                row["calls"] = calls
            elif case.calls > 1:
                row.setdefault("one_call_ms", {})[lib] = statistics.median(ts)
                continue
            row["times"][lib] = statistics.median(ts)
            row["all_times"][lib] = [round(t, 5) for t in ts]
            row["status"][lib] = "ok"
    ready = None
    del data
    free_memory()
    return row


def measure_copy_ceiling(warmup, repeat, log):
    """GB/s of a device-to-device copy of 2^28 float32 (bytes read + written)."""
    out = {}
    nbytes = 4 * N28
    try:
        a = randn(N28)
        b = cp.empty_like(a)

        def memcpy():
            b.data.copy_from_device_async(a.data, nbytes)
        with native_allocator("cupy"):
            ms, _ = time_gpu("cupy", memcpy, warmup, repeat)
            out["cupy_memcpy_ms"] = ms
            out["cupy_memcpy_GBps"] = 2 * nbytes / ms / 1e6
            ms, _ = time_gpu("cupy", lambda: a.copy(), warmup, repeat)
            out["cupy_copy_ms"] = ms
            out["cupy_copy_GBps"] = 2 * nbytes / ms / 1e6
        if torch is not None:
            t = torch.from_dlpack(a)
            ms, _ = time_gpu("torch", lambda: t.clone(), warmup, repeat)
            out["torch_clone_ms"] = ms
            out["torch_clone_GBps"] = 2 * nbytes / ms / 1e6
            del t
        a = b = None
    except Exception as exc:
        log(f"[copy ceiling] ERROR {_short(exc)}")
    free_memory()
    bws = [v for k, v in out.items() if k.endswith("GBps")]
    out["ceiling_GBps"] = max(bws) if bws else None
    return out


def _wall_ms(fn, warmup, repeat):
    """Median wall-clock milliseconds of ``fn()`` followed by a device synchronize (a
    transfer that returns before its DMA is done, as CuPy's asarray, pays for the DMA)."""
    for _ in range(warmup):
        out = fn()
        del out
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        del out
    return statistics.median(times), times


# --------------------------------------------------------------------------- rows

def _target_met(row, case_target):
    gp = row["times"].get("gparray")
    if gp is None or not case_target:
        return None
    anchor, factor = case_target[0], case_target[1]
    if anchor == "abs":
        return gp <= factor
    if anchor == "ratio":   # a ratio of two gparray figures the row computed itself
        return None if row.get("ratio") is None else row["ratio"] <= factor
    if anchor == "pct_copy":
        pct = row.get("pct_copy_bw")
        return None if pct is None else pct >= factor
    if anchor == "best":
        refs = [row["times"][k] for k in ("cupy", "torch") if k in row["times"]]
        ref = min(refs) if refs else None
    else:
        ref = row["times"].get(anchor)
    if ref is None:
        return None
    return gp <= factor * ref


def finish_row(row, case_target, ceiling):
    t = row["times"]
    gp = t.get("gparray")
    row["ratio_vs_cupy"] = gp / t["cupy"] if gp and t.get("cupy") else None
    row["ratio_vs_torch"] = gp / t["torch"] if gp and t.get("torch") else None
    if row["unit"] == "ms":
        if row.get("bytes"):
            row["GBps"] = {k: row["bytes"] / v / 1e6 for k, v in t.items() if v}
            if ceiling and gp:
                row["pct_copy_bw"] = 100.0 * row["GBps"]["gparray"] / ceiling
        if row.get("flops"):
            row["TFLOPs"] = {k: row["flops"] / v / 1e9 for k, v in t.items() if v}
    row["target_met"] = _target_met(row, case_target)
    return row


def _fmt_time(v, unit):
    if v is None:
        return None
    if unit == "ms":
        return f"{v:.3f}" if v < 100 else f"{v:.1f}"
    if unit == "us":
        return f"{v:.2f}us"
    return f"{v:.3f}s"


def _cell(row, lib):
    st = row["status"].get(lib)
    if st is None:
        return "-"
    if st == "ok":
        return _fmt_time(row["times"][lib], row["unit"])
    if st.startswith("n/a"):
        return "n/a"
    return "ERR"
