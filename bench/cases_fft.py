"""The fft cases of bench/bench.py (the "fft" group: ``--cases fft``)."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, N24, randn, same


def _fft(m, d):
    return m.fft.fft(d["a"])


FFT_SIDE = 4096      # the batched / strided-batch rows: (4096, 4096) complex64
FFT_CUBE = 256       # fftn: 256^3 complex64


def _c64(n, seed=1):
    return (randn(n, seed=seed) + 1j * randn(n, seed=seed + 1)).astype(core.cp.complex64)


def _fft_axis(axis):
    def op(m, d):
        if m is core.torch:
            return core.torch.fft.fft(d["m"], dim=axis)
        return m.fft.fft(d["m"], axis=axis)
    return op


def fft_cases():
    """The fft extension on cuFFT (the "fft" group: ``--cases fft``; the host-time row of a
    small transform is ``host_small_fft``). Bytes: the input read and the output written
    once (cuFFT's own passes not counted)."""
    g, c64, f32 = "fft", 8, 4
    n2 = FFT_SIDE * FFT_SIDE
    best = ("best", 1.02, "<= 1.02x best")
    return [
        Case("fft complex64 2^24", "fft16M_c64", lambda: {"a": _c64(N24)}, same(_fft),
             nbytes=2 * c64 * N24, target=("best", 1.02, ">= 0.98x cuFFT (<= 1.02x best)"), group=g),
        Case("rfft float32 2^24", "rfft16M_f32", lambda: {"a": randn(N24)},
             same(lambda m, d: m.fft.rfft(d["a"])), nbytes=f32 * N24 + c64 * (N24 // 2 + 1), target=best,
             group=g),
        Case(f"fft axis 1 ({FFT_SIDE}, {FFT_SIDE}) complex64", "fft_rows_c64",
             lambda: {"m": _c64(n2).reshape(FFT_SIDE, FFT_SIDE)}, same(_fft_axis(1)),
             nbytes=2 * c64 * n2, target=best, group=g),
        Case(f"fft axis 0 ({FFT_SIDE}, {FFT_SIDE}) complex64", "fft_cols_c64",
             lambda: {"m": _c64(n2).reshape(FFT_SIDE, FFT_SIDE)}, same(_fft_axis(0)),
             nbytes=2 * c64 * n2, target=("best", 1.0, "<= 1.0x best (strided batch)"), group=g),
        Case(f"fftn {FFT_CUBE}^3 complex64", "fftn256_c64",
             lambda: {"c": _c64(FFT_CUBE ** 3).reshape((FFT_CUBE,) * 3)}, same(lambda m, d: m.fft.fftn(d["c"])),
             nbytes=2 * c64 * FFT_CUBE ** 3, target=best, group=g),
    ]
