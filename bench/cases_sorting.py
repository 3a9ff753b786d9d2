"""The sort and set-function cases of bench/bench.py (the "sorting" and "sets" groups)."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, N24, N26, _rng, randn, same


def _sort_torch(t, d):
    return t.sort(d["a"]).values


def _sort_axis1(m, d):
    if m is core.torch:
        return core.torch.sort(d["m"], dim=1).values
    return m.sort(d["m"], axis=1)


SORT_ROWS = ((16384, 1024), (1 << 20, 16))   # sort along axis 1: medium rows, many short rows


def sorting_cases():
    """sort and argsort (the "sorting" group: ``--cases sorting``). Bytes: the input read
    and the output written once (argsort: the int64 indices), not the traffic of the passes."""
    f32, i64 = 4, 8
    g = "sorting"
    (r1, c1), (r2, c2) = SORT_ROWS
    return [
        Case("sort 2^26 float32", "sort64M", lambda: {"a": randn(N26)},
             {"gparray": lambda m, d: core.xp.sort(d["a"]), "cupy": lambda m, d: core.cp.sort(d["a"]),
              "torch": lambda m, d: _sort_torch(core.torch, d)},
             nbytes=2 * f32 * N26, target=("cupy", 1.0, "<= 1.0x CuPy"), group=g),
        Case("argsort 2^26 float32", "argsort64M", lambda: {"a": randn(N26)},
             same(lambda m, d: m.argsort(d["a"])),
             nbytes=(f32 + i64) * N26, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("sort 2^26 int64 (full range)", "sort64M_i64",
             lambda: {"a": _rng(6).integers(-2**62, 2**62, N26, dtype=core.cp.int64)},
             {"gparray": lambda m, d: core.xp.sort(d["a"]), "cupy": lambda m, d: core.cp.sort(d["a"]),
              "torch": lambda m, d: _sort_torch(core.torch, d)},
             nbytes=2 * i64 * N26, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case(f"sort axis 1 ({r1}, {c1}) float32", "sort_rows1024",
             lambda: {"m": randn(r1 * c1).reshape(r1, c1)}, same(_sort_axis1),
             nbytes=2 * f32 * r1 * c1, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case(f"sort axis 1 (2^20, {c2}) float32", "sort_rows16",
             lambda: {"m": randn(r2 * c2).reshape(r2, c2)}, same(_sort_axis1),
             nbytes=2 * f32 * r2 * c2, target=("best", 0.5, "<= 0.5x best (many short rows)"), group=g),
    ]


def _unique(m, d):
    if m is core.cp:
        return core.cp.unique(d["a"])
    if m is core.torch:
        return core.torch.unique(d["a"])
    return core.xp.unique_values(d["a"])


def _unique_inverse(m, d):
    if m is core.cp:
        return core.cp.unique(d["a"], return_inverse=True)
    if m is core.torch:
        return core.torch.unique(d["a"], return_inverse=True)
    return core.xp.unique_inverse(d["a"])


def _isin(m, d):
    if m is core.cp:
        return core.cp.isin(d["a"], d["t"])
    if m is core.torch:
        return core.torch.isin(d["a"], d["t"])
    return core.xp.isin(d["a"], d["t"])


def _unique_bytes(d):
    """a read, the unique values written (the sort's own traffic not counted)."""
    return 4 * N24 + 4 * int(core.cp.unique(d["a"]).size)


def _unique_inverse_bytes(d):
    """a read, the unique values and the int64 inverse written."""
    return (4 + 8) * N24 + 4 * int(core.cp.unique(d["a"]).size)


def _ints(n, hi, seed):
    return lambda: {"a": _rng(seed).integers(0, hi, n, dtype=core.cp.int32)}


def sets_cases():
    """Set functions (the "sets" group: ``--cases sets``)."""
    g = "sets"
    return [
        Case("unique_values int32 2^24 in [0, 2^20)", "unique16M", _ints(N24, 2**20, 5), same(_unique),
             nbytes=_unique_bytes, target=("torch", 1.0, "<= 1.0x PyTorch"), group=g),
        Case("unique_inverse int32 2^24 in [0, 2^20)", "unique_inverse16M", _ints(N24, 2**20, 6),
             same(_unique_inverse), nbytes=_unique_inverse_bytes, target=("best", 1.0, "<= 1.0x best"), group=g),
        # a read, the bool result written, the table read once
        Case("isin int32 2^24 against 2^16 values", "isin16M",
             lambda: {"a": _rng(7).integers(0, 2**20, N24, dtype=core.cp.int32),
                      "t": _rng(8).integers(0, 2**20, 2**16, dtype=core.cp.int32)},
             same(_isin), nbytes=(4 + 1) * N24 + 4 * 2**16, target=("best", 1.0, "<= 1.0x best"), group=g),
    ]
