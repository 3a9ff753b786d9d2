"""Where the fixed cost of one event-timed call goes (run on the GPU machine).

    python3 tools/single_call_latency.py            # the rows below
    python3 tools/single_call_latency.py --shapes   # sum(axis=1) of 2^26 float32 in five shapes

Each row times a call the way bench/bench.py does (a CUDA event, the call, an event,
synchronize; median of 40) and the same call ten times back to back between the two events
(the time per call is then the GPU's own: the host work of one call overlaps the kernel of
the one before). The difference is what a single call pays before and after its kernels.
Two more columns split that difference: ``queued`` times one call whose start event and
kernels were enqueued behind a ~60 us spin kernel (``torch.cuda._sleep`` on the same null
stream), so the host work and the launch are over before the GPU reaches the first event:
what remains is the GPU's time for one call coming from a busy queue; ``host`` is the wall
time of the call itself in the single-call loop (after a synchronize).
Rows: gparray's 2-norm and column sum of an (8192, 8192) float32 array through the compiled
repeat path (gparray/_native/_claunch_reduce.c) and, last, through the Python path; the
same in CuPy and PyTorch; `x + 1` and the same reductions on tiny inputs (a launch's own fixed
cost, the kernel's work negligible); an elementwise op and a device-to-device
copy that move as many bytes as the reductions read. ``--shapes``: the same 268 MB reduced
along its rows in shapes from 512 to 131072 rows (one block per row up to the grid the GPU
holds at once, then more waves), to see whether the single call's extra time follows the
number of blocks, the kernel, or neither.
"""
import statistics
import time

import cupy as cp
import numpy as np
import torch

import gparray as xp
from gparray._engine import _reduce_fast


SPIN_CYCLES = 120_000      # ~60 us at the H200's 1.98 GHz


def event_us(fn, n=40, calls=1, queued=False, host=None):
    """Median microseconds per call of ``calls`` calls of ``fn`` between two CUDA events;
    ``queued``: a spin kernel first, so the events and the call wait in the queue; ``host``:
    a list that receives the median wall microseconds of the calls themselves."""
    a, b = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    ts, hs = [], []
    for _ in range(n):
        if queued:
            torch.cuda._sleep(SPIN_CYCLES)
        a.record()
        t0 = time.perf_counter()
        r = fn()
        for _ in range(calls - 1):
            r = fn()
        hs.append((time.perf_counter() - t0) * 1e6 / calls)
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / calls)
        del r
    if host is not None:
        host.append(statistics.median(hs))
    return statistics.median(ts)


def row(name, fn):
    host = []
    single = event_us(fn, host=host)
    print(f"{name:38s} single {single:7.1f}  x10 {event_us(fn, 20, 10):7.1f}  queued "
          f"{event_us(fn, queued=True):7.1f}  host {host[0]:6.1f} us", flush=True)


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
