"""Timings behind the linalg speed choices (run on the GPU machine, from the repo root):

    python3 tools/la_probe.py [--quick]

Prints, in milliseconds of CUDA-event time around one call (median of several), each
choice the linalg code offers next to PyTorch's time for the same call: the cuSOLVER
64-bit API against the legacy calls (cholesky, solve, eigh), the QR path of a tall SVD
with gesvdj or gesvd for R against gesvd on the whole matrix, batched small inverses;
and the host microseconds per 2x2 ``a @ b`` (wall clock, no sync inside the loop)."""
import statistics
import sys
import time

import cupy as cp
import numpy as np

import gparray as xp
from gparray._engine import _blas, _solver
from gparray.linalg import _decompositions as dec

QUICK = "--quick" in sys.argv
REPS = 3 if QUICK else 7

try:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
except Exception:           # noqa: BLE001 - PyTorch is only a reference
    torch = None


def event_ms(fn, reps=REPS):
    fn()
    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(out)


def torch_ms(fn, reps=REPS):
    if torch is None:
        return float("nan")
    fn()
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


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
    rng = np.random.default_rng(0)
    print("x64:", _solver.x64_info())
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
    # ------------------------------------------------------------------ cuSOLVER 64-bit vs legacy
    n = 4096
    r = rng.standard_normal((n, n))
    spd = xp.asarray(r @ r.T / n + np.eye(n))
    gen = xp.asarray(r + n * np.eye(n))
    rhs = xp.asarray(rng.standard_normal(n))
    sym = rng.standard_normal((2048, 2048))
    sym = xp.asarray((sym + sym.T) / 2)
    cases = [("cholesky 4096 f64", lambda: xp.linalg.cholesky(spd), lambda t: torch.linalg.cholesky(t), spd),
             ("solve 4096 f64, (4096,)", lambda: xp.linalg.solve(gen, rhs),
              lambda t: torch.linalg.solve(t, trhs), gen),
             ("eigh 2048 f64", lambda: xp.linalg.eigh(sym), lambda t: torch.linalg.eigh(t), sym)]
    trhs = tt(rhs)
    for name, fn, tfn, arg in cases:
        targ = tt(arg)
        times = {}
        for flag in (True, False):
            _solver.USE_64 = flag
            times["x64" if flag else "legacy"] = event_ms(fn)
        _solver.USE_64 = True
        times["torch"] = torch_ms(lambda: tfn(targ)) if torch is not None else float("nan")
        row(name, **times)
    # ------------------------------------------------------------------ tall SVD
    a = xp.asarray(rng.standard_normal((4096, 256)).astype(np.float32))
    ta = tt(a)
    times = {}
    for label, ratio, svd_r in (("qr+gesvdj", 2, "gesvdj"), ("qr+gesvd", 2, "gesvd"), ("gesvd", 0, "gesvd")):
        dec.QR_RATIO, dec.SVD_R = ratio, svd_r
        times[label] = event_ms(lambda: xp.linalg.svd(a, full_matrices=False), reps=3)
    dec.QR_RATIO, dec.SVD_R = 2, "gesvdj"
    times["torch"] = torch_ms(lambda: torch.linalg.svd(ta, full_matrices=False), reps=3)
    row("svd (4096,256) f32 reduced", **times)
    row("svdvals (4096,256) f32", gparray=event_ms(lambda: xp.linalg.svdvals(a), reps=3),
        torch=torch_ms(lambda: torch.linalg.svdvals(ta), reps=3))
    # ------------------------------------------------------------------ small inverses
    s = rng.standard_normal((65536, 4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    gs, ts = xp.asarray(s), tt(s)
    cs = cp.asarray(s)
    row("inv (65536,4,4) f32", gparray=event_ms(lambda: xp.linalg.inv(gs)), cupy=event_ms(lambda: cp.linalg.inv(cs)),
        torch=torch_ms(lambda: torch.linalg.inv(ts)))


if __name__ == "__main__":
    main()
