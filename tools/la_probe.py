"""Timings behind the linalg speed choices (run on the GPU machine, from the repo root):

    python3 tools/la_probe.py [--quick]

Prints, in milliseconds of CUDA-event time around one call (median of several), each
choice the linalg code offers next to PyTorch's (and for inv CuPy's) time for the same
call: the products, cholesky, solve and eigh, the SVD by gesvdp against gesvd
(GESVDP_MIN), small inverses on gparray's kernel against cuBLAS' batched LU
(INV_SMALL_MAX); and the host microseconds per 2x2 ``a @ b`` (wall clock, no sync inside
the loop)."""
import os
import statistics
import sys
import time

import cupy as cp
import numpy as np

import gparray as xp
from gparray._engine import _blas, _solver

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune import timeit, torch_time  # noqa: E402 (tools/tune.py: the shared event timing)

QUICK = "--quick" in sys.argv
REPS = 3 if QUICK else 7

try:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
except Exception:           # noqa: BLE001 - PyTorch is only a reference
    torch = None


def event_ms(fn, reps=REPS):
    """Median CUDA-event milliseconds of ``fn`` (tools/tune.py's timing, two warm-up calls)."""
    return timeit(fn, warmup=2, repeat=reps)


def torch_ms(fn, reps=REPS):
    """The same with PyTorch's events; NaN without PyTorch."""
    return float("nan") if torch is None else torch_time(fn, reps)


def host_us(fn, n=2000 if QUICK else 20000):
    for _ in range(200):
        fn()
    cp.cuda.Device().synchronize()
    per = []
    for _ in range(3 if QUICK else 5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t) / n * 1e6)
        cp.cuda.Device().synchronize()
    return statistics.median(per)


def row(name, **times):
    print(f"{name:44s} " + "  ".join(f"{k}={v:8.3f}" for k, v in times.items()), flush=True)


def tt(a):
    return torch.as_tensor(cp.asarray(np.asarray(a)), device="cuda") if torch is not None else None


def main():
    if torch is None:
        raise SystemExit("la_probe: PyTorch is the reference and could not be imported")
    rng = np.random.default_rng(0)
    print("svd:", _solver.gesvdp_info())
    # ------------------------------------------------------------------ products
    a2 = xp.asarray(rng.standard_normal((2, 2)).astype(np.float32))
    a2 @ a2
    print("cuBLAS:", _blas.workspace_info(0, cp.cuda.get_current_stream().ptr))
    t2 = tt(a2)
    row("a @ b 2x2 f32 host us/op", gparray=host_us(lambda: a2 @ a2),
        torch=host_us(lambda: t2 @ t2) if torch is not None else float("nan"))
    for name, shape, dt in (("batched (4096,64,64) f32", (4096, 64, 64), np.float32),
                            ("4096^2 f64", (4096, 4096), np.float64)):
        x = xp.asarray(rng.standard_normal(shape).astype(dt))
        t = tt(x)
        row(f"a @ b {name}", gparray=event_ms(lambda: x @ x), torch=torch_ms(lambda: t @ t))
    g = xp.asarray(rng.standard_normal((1 << 18, 128)))
    tg = tt(g)
    row("X.T @ X (2^18,128) f64", gparray=event_ms(lambda: g.T @ g), torch=torch_ms(lambda: tg.T @ tg))
    # ------------------------------------------------------------------ factorizations
    n = 4096
    r = rng.standard_normal((n, n))
    spd = xp.asarray(r @ r.T / n + np.eye(n))
    gen = xp.asarray(r + n * np.eye(n))
    rhs = xp.asarray(rng.standard_normal(n))
    sym = rng.standard_normal((2048, 2048))
    sym = xp.asarray((sym + sym.T) / 2)
    trhs = tt(rhs)
    for name, fn, tfn, arg in (("cholesky 4096 f64", lambda: xp.linalg.cholesky(spd), torch.linalg.cholesky, spd),
                               ("cholesky upper 4096 f64", lambda: xp.linalg.cholesky(spd, upper=True),
                                lambda t: torch.linalg.cholesky(t, upper=True), spd),
                               ("solve 4096 f64, (4096,)", lambda: xp.linalg.solve(gen, rhs),
                                lambda t: torch.linalg.solve(t, trhs), gen),
                               ("eigh 2048 f64", lambda: xp.linalg.eigh(sym), torch.linalg.eigh, sym)):
        targ = tt(arg)
        row(name, gparray=event_ms(fn), torch=torch_ms(lambda: tfn(targ)))
    # ------------------------------------------------------------------ SVD
    for shape, dt in (((4096, 256), np.float32), ((256, 4096), np.float32), ((1024, 1024), np.float64)):
        a = xp.asarray(rng.standard_normal(shape).astype(dt))
        ta = tt(a)
        times = {}
        for label, lo in (("gesvdp", 64), ("gesvd", 1 << 30)):
            _solver.GESVDP_MIN = lo
            times[label] = event_ms(lambda: xp.linalg.svd(a, full_matrices=False), reps=3)
            times[label + "_vals"] = event_ms(lambda: xp.linalg.svdvals(a), reps=3)
        _solver.GESVDP_MIN = 64
        times["torch"] = torch_ms(lambda: torch.linalg.svd(ta, full_matrices=False), reps=3)
        times["torch_vals"] = torch_ms(lambda: torch.linalg.svdvals(ta), reps=3)
        row(f"svd {shape} {np.dtype(dt).name} reduced", **times)
    # ------------------------------------------------------------------ small inverses
    s = rng.standard_normal((65536, 4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    gs, ts = xp.asarray(s), tt(s)
    cs = cp.asarray(s)
    times = {"kernel": event_ms(lambda: xp.linalg.inv(gs))}
    _solver.INV_SMALL_MAX = 0
    times["cublas"] = event_ms(lambda: xp.linalg.inv(gs))
    _solver.INV_SMALL_MAX = 8
    row("inv (65536,4,4) f32", **times, cupy=event_ms(lambda: cp.linalg.inv(cs)),
        torch=torch_ms(lambda: torch.linalg.inv(ts)))


if __name__ == "__main__":
    main()
