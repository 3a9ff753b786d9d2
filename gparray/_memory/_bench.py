"""Micro-benchmark of the pool's fast path (a cached malloc + free pair)."""
from __future__ import annotations

import time


def time_pairs(malloc, n: int = 100000, repeat: int = 5) -> float:
    """Best-of-``repeat`` microseconds per ``malloc()`` + free pair, ``n`` pairs per round.

    ``malloc`` is a zero-argument callable returning a Block; the Block is dropped at once,
    so ``Block.__del__`` gives it back (the pattern of a temporary array).
    """
    malloc()                                   # warm the cache: later calls are hits
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            malloc()
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def bench_alloc_free(n: int = 100000, nbytes: int = 4096, device_id: int = 0) -> float:
    """Microseconds per ``alloc(nbytes, device_id, stream)`` + free pair on the real pool.

    Uses the current stream's handle explicitly (as gparray's ops do), so it measures the
    pool and Block, not CuPy's stream lookup. Needs a GPU.
    """
    from . import _cupy_backend, alloc, get_pool
    get_pool(device_id)
    stream = _cupy_backend.current_stream_ptr(device_id)
    return time_pairs(lambda: alloc(nbytes, device_id, stream), n)


if __name__ == "__main__":
    print(f"alloc+free: {bench_alloc_free():.3f} us per pair")
