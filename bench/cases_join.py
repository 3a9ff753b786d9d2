"""The concat cases of bench/bench.py (the "join" group: ``--cases join``)."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, N26, randn, same


JOIN_BIG, JOIN_SMALL = (4, N26), (1000, 1000)   # concat rows: 4 x 2^26 and 1000 x 1000 float32


def _concat0(m, d):
    """concat along axis 0 of d["p0"], d["p1"], ... (the list built once per library)."""
    parts = d.get("_parts")
    if parts is None:
        parts = d["_parts"] = [d[f"p{i}"] for i in range(d["count"])]
    if m is core.torch:
        return core.torch.cat(parts, dim=0)
    if m is core.cp:
        return core.cp.concatenate(parts, axis=0)
    return m.concat(parts, axis=0)


def _parts(count, n):
    def make():
        d = {f"p{i}": randn(n, seed=100 + i) for i in range(count)}
        d["count"] = count
        return d
    return make


def join_cases():
    """concat as one launch (the "join" group: ``--cases join``). Bytes: every input read and
    the result written once. The 1000-input row is mostly host time (the kernel moves 8 MB):
    one call between the events, as a program sees it."""
    f32, g = 4, "join"
    (bc, bn), (sc, sn) = JOIN_BIG, JOIN_SMALL
    return [
        Case(f"concat {bc} x 2^26 float32 axis 0", "concat4x64M", _parts(bc, bn), same(_concat0),
             nbytes=2 * f32 * bc * bn, target=("best", 1.0, "<= 1.0x best (copy bandwidth)"), group=g),
        Case(f"concat {sc} x {sn} float32 axis 0", "concat1000x1000", _parts(sc, sn), same(_concat0),
             nbytes=2 * f32 * sc * sn, target=("best", 1.0, "<= 1.0x best (one launch)"), group=g),
    ]
