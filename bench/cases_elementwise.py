"""The elementwise and reduction cases of bench/bench.py (the rows with no group) and the
column statistics of tall, narrow matrices."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, M, N28, randn, same


def _cumsum(m, d):
    if m is core.cp:
        return core.cp.cumsum(d["a"])
    if m is core.torch:
        return core.torch.cumsum(d["a"], 0)
    return core.xp.cumulative_sum(d["a"])


def _astype16(m, d):
    if m is core.cp:
        return d["a"].astype(core.cp.float16)
    if m is core.torch:
        return d["a"].to(core.torch.float16)
    return core.xp.astype(d["a"], core.xp.float16)


def _copy(m, d):
    if m is core.cp:
        return d["a"].copy()
    if m is core.torch:
        return d["a"].clone()
    return core.xp.asarray(d["a"], copy=True)


def _var(m, d):
    if m is core.torch:
        return core.torch.var(d["a"], correction=0)
    return m.var(d["a"])


def _argmax1(m, d):
    if m is core.torch:
        return core.torch.argmax(d["m"], dim=1)
    return m.argmax(d["m"], axis=1)


def _sum_axis(axis):
    def f(m, d):
        if m is core.torch:
            return core.torch.sum(d["m"], dim=axis)
        return m.sum(d["m"], axis=axis)
    return f


def _vector_norm1(m, d):
    if m is core.torch:
        return core.torch.linalg.vector_norm(d["m"], dim=1)
    if m is core.cp:
        return core.cp.linalg.norm(d["m"], axis=1)
    return m.linalg.vector_norm(d["m"], axis=1)


def _transpose_add(m, d):
    if m is core.xp:
        mt = getattr(d["m"], "mT", None)
        if mt is None:
            mt = d["m"].T
        return mt + d["m"]
    return d["m"].T + d["m"]


SR, SC = 200_000, 100   # rows, columns of the short-rows cases


def elementwise_cases():
    """Elementwise functions, copies, reductions and scans over whole arrays (no group: every
    row is run by default and picked by name or key)."""
    f32 = 4
    return [
        Case("copy 2^28", "copy", lambda: {"a": randn(N28)}, same(_copy),
             nbytes=2 * f32 * N28, target=("torch", 1.03, "<= 1.03x PyTorch")),
        Case("add 2^28", "add", lambda: {"a": randn(N28), "b": randn(N28, seed=2)},
             same(lambda m, d: d["a"] + d["b"]),
             nbytes=3 * f32 * N28, target=("torch", 1.03, "<= 1.03x PyTorch (>= 4.1 TB/s)")),
        Case("exp 2^28", "exp", lambda: {"a": randn(N28)}, same(lambda m, d: m.exp(d["a"])),
             nbytes=2 * f32 * N28, target=("torch", 1.03, "<= 1.03x PyTorch")),
        Case("astype f32->f16 2^28", "astype_f16", lambda: {"a": randn(N28)}, same(_astype16),
             nbytes=(f32 + 2) * N28, target=("torch", 1.03, "<= 1.03x PyTorch")),
        # bytes as the anchors count them: the bool condition is one more input
        Case("where(a>0, a, b) 2^28", "where", lambda: {"a": randn(N28), "b": randn(N28, seed=2)},
             same(lambda m, d: m.where(d["a"] > 0, d["a"], d["b"])),
             nbytes=(3 * f32 + 1) * N28, target=("torch", 1.0, "<= 1.0x PyTorch")),
        Case("col (16384,1) + row (1,16384)", "add_bcast",
             lambda: {"c": randn(M).reshape(M, 1), "r": randn(M, seed=2).reshape(1, M)},
             same(lambda m, d: d["c"] + d["r"]),
             nbytes=f32 * (2 * M + M * M), target=("torch", 0.7, "<= 0.7x PyTorch")),
        # a row statistic broadcast over short rows (SciPy's logsumexp, softmax): gp_binary_short_rows
        Case("x - col, (200000, 100) float32", "sub_short_rows",
             lambda: {"x": randn(SR * SC).reshape(SR, SC), "c": randn(SR, seed=2).reshape(SR, 1)},
             same(lambda m, d: d["x"] - d["c"]),
             nbytes=f32 * (2 * SR * SC + SR), target=("best", 1.0, "<= 1.0x best")),
        Case("x == col, (200000, 100) float32", "eq_short_rows",
             lambda: {"x": randn(SR * SC).reshape(SR, SC), "c": randn(SR, seed=2).reshape(SR, 1)},
             same(lambda m, d: d["x"] == d["c"]),
             nbytes=(f32 + 1) * SR * SC + f32 * SR, target=("best", 1.0, "<= 1.0x best")),
        # logical bytes (the elements the views hold), as the anchors count them
        Case("a[::2] + b[::2] 2^28", "add_strided",
             lambda: {"a": randn(N28), "b": randn(N28, seed=2)},
             same(lambda m, d: d["a"][::2] + d["b"][::2]),
             nbytes=3 * f32 * (N28 // 2), target=("best", 1.0, "<= 1.0x best")),
        Case("m.T + m 16384^2", "add_transposed", lambda: {"m": randn(M * M).reshape(M, M)},
             same(_transpose_add), nbytes=3 * f32 * M * M,
             target=("best", 0.6, "<= 0.6x best (tiled)")),
        Case("sum all 2^28", "sum_all", lambda: {"a": randn(N28)}, same(lambda m, d: m.sum(d["a"])),
             nbytes=f32 * N28, target=("best", 1.03, "<= 1.03x best")),
        Case("sum axis=1 16384^2", "sum_axis1", lambda: {"m": randn(M * M).reshape(M, M)},
             same(_sum_axis(1)), nbytes=f32 * (M * M + M), target=("best", 1.03, "<= 1.03x best")),
        Case("sum axis=0 16384^2", "sum_axis0", lambda: {"m": randn(M * M).reshape(M, M)},
             same(_sum_axis(0)), nbytes=f32 * (M * M + M), target=("best", 1.03, "<= 1.03x best")),
        Case("argmax axis=1 16384^2", "argmax_axis1", lambda: {"m": randn(M * M).reshape(M, M)},
             same(_argmax1), nbytes=f32 * M * M + 8 * M, target=("best", 0.9, "<= 0.9x best")),
        Case("vector_norm axis=1 8192^2", "vector_norm_axis1", lambda: {"m": randn(8192 * 8192).reshape(8192, 8192)},
             same(_vector_norm1), nbytes=f32 * (8192 * 8192 + 8192),
             target=("pct_copy", 90.0, ">= 90% of copy bandwidth (one pass)")),
        Case("var all 2^28", "var_all", lambda: {"a": randn(N28)}, same(_var),
             nbytes=f32 * N28, target=("torch", 0.85, "<= 0.85x PyTorch (one pass)")),
        Case("cumulative_sum 2^28", "cumsum", lambda: {"a": randn(N28)}, same(_cumsum),
             nbytes=2 * f32 * N28, target=("torch", 0.75, "<= 0.75x PyTorch (single-pass scan)")),
    ]


# column statistics of tall, narrow matrices (what StandardScaler does): issue 17, item 1
TALL = 1 << 22


def _col(fname, key="m"):
    """``fname`` over axis 0 of d[key]: std/var with correction 0 in every library."""
    def f(m, d):
        x = d[key]
        if m is core.torch:
            if fname in ("std", "var"):
                return getattr(core.torch, fname)(x, dim=0, correction=0)
            return getattr(core.torch, fname)(x, dim=0)
        return getattr(m, fname)(x, axis=0)
    return f


def colstats_cases():
    f32, f64 = 4, 8
    g = "column statistics (axis 0 of tall matrices)"
    best = ("best", 1.0, "<= 1.0x best")
    return [
        Case("mean axis=0 (2^22, 16) float32", "colmean_f32", lambda: {"m": randn(TALL * 16).reshape(TALL, 16)},
             same(_col("mean")), nbytes=f32 * TALL * 16, target=best, group=g),
        Case("std axis=0 (2^22, 16) float32", "colstd_f32", lambda: {"m": randn(TALL * 16).reshape(TALL, 16)},
             same(_col("std")), nbytes=f32 * TALL * 16, target=best, group=g),
        Case("sum axis=0 (2^18, 256) float32", "colsum256_f32",
             lambda: {"m": randn((1 << 18) * 256).reshape(1 << 18, 256)}, same(_col("sum")),
             nbytes=f32 * (1 << 18) * 256, target=("pct_copy", 85.0, ">= 85% of copy bandwidth, <= 1.0x best"),
             group=g),
        Case("sum axis=0 (2^18, 256) float64", "colsum256_f64",
             lambda: {"m": randn((1 << 18) * 256, "float64").reshape(1 << 18, 256)}, same(_col("sum")),
             nbytes=f64 * (1 << 18) * 256, target=("pct_copy", 85.0, ">= 85% of copy bandwidth, <= 1.0x best"),
             group=g),
        Case("argmax axis=0 (2^22, 8) float32", "colargmax_f32", lambda: {"m": randn(TALL * 8).reshape(TALL, 8)},
             same(_col("argmax")), nbytes=f32 * TALL * 8, target=best, group=g),
    ]
