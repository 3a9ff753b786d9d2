"""Where the fixed cost of one event-timed call goes (run on the GPU machine).

    python3 tools/single_call_latency.py            # the rows below
    python3 tools/single_call_latency.py --shapes   # sum(axis=1) of 2^26 float32 in five shapes

Each row times a call the way bench/bench.py does (a CUDA event, the call, an event,
synchronize; median of 40) and the same call ten times back to back between the two events
(the time per call is then the GPU's own: the host work of one call overlaps the kernel of
the one before). The difference is what a single call pays before and after its kernels.
Rows: gparray's 2-norm and column sum of an (8192, 8192) float32 array through the compiled
repeat path (gparray/_kernels/_claunch_reduce.c) and, last, through the Python path; the
same in CuPy and PyTorch; `x + 1` and the same reductions on tiny inputs (a launch's own fixed
cost, the kernel's work negligible); an elementwise op and a device-to-device
copy that move as many bytes as the reductions read. ``--shapes``: the same 268 MB reduced
along its rows in shapes from 512 to 131072 rows (one block per row up to the grid the GPU
holds at once, then more waves), to see whether the single call's extra time follows the
number of blocks, the kernel, or neither.
"""
import statistics

import cupy as cp
import numpy as np
import torch

import gparray as xp
from gparray._engine import _reduce_fast


def event_us(fn, n=40, calls=1):
    """Median microseconds per call of ``calls`` calls of ``fn`` between two CUDA events."""
    a, b = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(n):
        a.record()
        r = fn()
        for _ in range(calls - 1):
            r = fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / calls)
        del r
    return statistics.median(ts)


def row(name, fn):
    print(f"{name:42s} single {event_us(fn):8.1f} us   x10 {event_us(fn, 20, 10):8.1f} us/call", flush=True)


def shapes():
    from gparray import sum as gsum
    for rows in (512, 2048, 8192, 32768, 131072):
        h = np.random.default_rng(0).standard_normal((rows, (1 << 26) // rows)).astype(np.float32)
        X = xp.asarray(h)
        row(f"gp sum axis1 {h.shape}", lambda: gsum(X, axis=1))
        row(f"gp vector_norm axis1 {h.shape}", lambda: xp.linalg.vector_norm(X, axis=1))
        del X


def main():
    n = 8192
    h = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    X, C, T = xp.asarray(h), cp.asarray(h), torch.as_tensor(h, device="cuda")
    one, c1, t1 = xp.asarray(np.ones(1, np.float32)), cp.ones(1, cp.float32), torch.ones(1, device="cuda")
    flat, cflat, tflat = xp.reshape(X, (-1,)), C.ravel(), T.ravel()
    half = cp.empty(n * n // 2, cp.float32)
    row("gp norm axis1 (served)", lambda: xp.linalg.vector_norm(X, axis=1))
    row("gp sum axis0 (served)", lambda: xp.sum(X, axis=0))
    row("cupy norm axis1", lambda: cp.linalg.norm(C, axis=1))
    row("torch norm axis1", lambda: torch.linalg.vector_norm(T, dim=1))
    tiny = xp.asarray(np.ones((8, 8), np.float32))
    row("gp x+1 one", lambda: one + 1)
    row("gp norm axis1 (8, 8)", lambda: xp.linalg.vector_norm(tiny, axis=1))
    row("gp sum axis0 (8, 8)", lambda: xp.sum(tiny, axis=0))
    row("cupy x+1 one", lambda: c1 + 1)
    row("torch x+1 one", lambda: t1 + 1)
    row("gp flat*2 (268MB in, 268MB out)", lambda: flat * 2)
    row("torch flat*2", lambda: tflat * 2)
    row("cupy memcpy 134MB (268MB moved)", lambda: half.data.copy_from_device_async(cflat.data, half.nbytes))
    row("torch sum all 268MB", lambda: torch.sum(T))
    row("gp sum all 268MB", lambda: xp.sum(X))
    _reduce_fast._tables.clear()
    _reduce_fast._ENABLED = False       # from here on: the Python path
    row("gp norm axis1 (python path)", lambda: xp.linalg.vector_norm(X, axis=1))
    row("gp sum axis0 (python path)", lambda: xp.sum(X, axis=0))


if __name__ == "__main__":
    import sys

    shapes() if "--shapes" in sys.argv[1:] else main()
