"""Device probe: time each launch of one sort/argsort/unique (for nsys/ncu), see
tools/device_check.sh for the setup. Usage: python3 tools/sort_probe.py [sort|argsort|unique|int64] [reps]"""
import sys

import cupy as cp

import gparray as xp

what = sys.argv[1] if len(sys.argv) > 1 else "sort"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
n = 1 << 26
if what == "int64":
    a = xp.asarray(cp.random.default_rng(6).integers(-2**62, 2**62, n, dtype=cp.int64))
elif what == "unique":
    a = xp.asarray(cp.random.default_rng(5).integers(0, 1 << 20, 1 << 24, dtype=cp.int32))
else:
    a = xp.asarray(cp.random.default_rng(1).standard_normal(n, dtype=cp.float32))
fn = {"sort": xp.sort, "argsort": xp.argsort, "int64": xp.sort, "unique": xp.unique_values}[what]
for _ in range(reps):
    r = fn(a)
    del r
cp.cuda.Device().synchronize()
