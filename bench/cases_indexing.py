"""The advanced-indexing cases of bench/bench.py (the "indexing" group: ``--cases indexing``)."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, N26, N28, _rng, randn, same
from cases_elementwise import _copy


def _setitem(m, d):
    d["a"][d["idx"]] = 1.0


def _mask_bytes(d):
    kept = int((d["a"] > 0).sum())
    return 4 * N28 + N28 + 4 * kept


def _kept_mask_bytes(d):
    """a read, the precomputed bool mask read, the kept elements written."""
    kept = int(d["m"].sum())
    return 4 * N28 + N28 + 4 * kept


def _uniform_mask(frac, seed=11):
    def make():
        u = _rng(seed).random(N28, dtype=core.cp.float32)
        m = u < frac
        del u
        return {"a": randn(N28), "m": m}
    return make


def _take_along_axis(m, d):
    if m is core.torch:
        return core.torch.gather(d["x"], 1, d["i"])
    return m.take_along_axis(d["x"], d["i"], axis=1)


TA_N, TA_K = 8192, 256          # take_along_axis: (8192, 8192) f32, (8192, 256) int64 indices
ROWS_N, ROWS_W, ROWS_K = 1 << 20, 64, 1 << 16   # m[rows]: 2^16 rows of a (2^20, 64) f32


def indexing_cases():
    """Advanced indexing (the "indexing" group: ``--cases indexing``)."""
    f32, i64 = 4, 8
    g = "indexing"
    return [
        # the whole expression, comparison included (bytes as the anchors count them: a, the bool
        # mask, the kept half)
        Case("a[a > 0] (50% kept) 2^28", "mask_select", lambda: {"a": randn(N28)},
             same(lambda m, d: d["a"][d["a"] > 0]),
             nbytes=_mask_bytes, target=("torch", 0.8, "<= 0.8x PyTorch"), group=g),
        Case("a[m] (50% kept, m given) 2^28", "mask_50pct",
             lambda: (lambda a: {"a": a, "m": a > 0})(randn(N28)),
             same(lambda m, d: d["a"][d["m"]]), nbytes=_kept_mask_bytes, group=g),
        Case("a[m] (1% kept, m given) 2^28", "mask_1pct", _uniform_mask(0.01),
             same(lambda m, d: d["a"][d["m"]]), nbytes=_kept_mask_bytes,
             target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("a[m] (99% kept, m given) 2^28", "mask_99pct", _uniform_mask(0.99),
             same(lambda m, d: d["a"][d["m"]]), nbytes=_kept_mask_bytes,
             target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("a[idx] 2^26 random int64 idx", "take64M",
             lambda: {"a": randn(N26), "idx": _rng(3).integers(0, N26, N26, dtype=core.cp.int64)},
             same(lambda m, d: d["a"][d["idx"]]),
             nbytes=(i64 + 2 * f32) * N26, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("a[idx] = 1.0 2^26", "scatter64M",
             lambda: {"a": randn(N26), "idx": _rng(3).integers(0, N26, N26, dtype=core.cp.int64)},
             same(_setitem), nbytes=(i64 + f32) * N26, target=("best", 1.0, "<= 1.0x best"),
             group=g),
        # idx read, a[idx] read, output written
        Case("a[idx] 2^26 idx into 2^28", "take_2e26_of_2e28",
             lambda: {"a": randn(N28), "idx": _rng(3).integers(0, N28, N26, dtype=core.cp.int64)},
             same(lambda m, d: d["a"][d["idx"]]),
             nbytes=(i64 + 2 * f32) * N26, target=("best", 1.0, "<= 1.0x best"), group=g),
        # idx read, a[idx] written
        Case("a[idx] = 1.0 2^26 idx into 2^28", "scatter_2e26_of_2e28",
             lambda: {"a": randn(N28), "idx": _rng(3).integers(0, N28, N26, dtype=core.cp.int64)},
             same(_setitem), nbytes=(i64 + f32) * N26, target=("best", 1.0, "<= 1.0x best"),
             group=g),
        # rows read, rows written, the row indices read
        Case("m[rows] 2^16 rows of (2^20, 64), 10 calls per event pair", "row_gather",
             lambda: {"m": randn(ROWS_N * ROWS_W).reshape(ROWS_N, ROWS_W),
                      "rows": _rng(4).integers(0, ROWS_N, ROWS_K, dtype=core.cp.int64)},
             same(lambda m, d: d["m"][d["rows"]]),
             nbytes=2 * ROWS_K * ROWS_W * f32 + i64 * ROWS_K,
             target=("pct_copy", 85.0, ">= 85% of copy bandwidth"), group=g, calls=10),
        # the same bytes as the row gather moved by a plain copy: what "copy bandwidth" is at
        # this size (no target; the m[rows] row's %copy is against the 2^28 copy ceiling)
        Case("copy 2^22 float32 (the m[rows] bytes), 10 calls per event pair", "copy_16MiB",
             lambda: {"a": randn(ROWS_K * ROWS_W)}, same(_copy), nbytes=2 * ROWS_K * ROWS_W * f32,
             group=g, calls=10),
        # indices read, the picked elements read, output written
        Case("take_along_axis (8192,8192) (8192,256)", "take_along_axis",
             lambda: {"x": randn(TA_N * TA_N).reshape(TA_N, TA_N),
                      "i": _rng(5).integers(0, TA_N, (TA_N, TA_K), dtype=core.cp.int64)},
             same(_take_along_axis), nbytes=(i64 + 2 * f32) * TA_N * TA_K,
             target=("best", 1.0, "<= 1.0x best"), group=g),
    ]
