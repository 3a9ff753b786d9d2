"""Device probe: the GPU time of every kernel one call launches, gparray beside CuPy and
PyTorch, at the GPU's normal clocks (torch.profiler's CUPTI trace sees every kernel of the
process; ncu would lock the clocks to base). Usage, with the setup of tools/device_check.sh:

    python3 tools/kernel_times.py [--each] [case ...]
    cases: sort argsort int64 unique isin inverse colsum colsum64 (sum axis 0 of (2^18, 256))

Prints, per case and library, each kernel's name (shortened), launches per call and mean
microseconds per launch, then the sum per call; --each: every launch of a call on its own
line (the passes of a sort apart)."""
import collections
import sys

import cupy as cp
import torch

import gparray as xp

REPS = 10


def _cases():
    n = 1 << 26
    g = cp.random.default_rng(1)
    f32 = g.standard_normal(n, dtype=cp.float32)
    i64 = g.integers(-2**62, 2**62, n, dtype=cp.int64)
    u = g.integers(0, 1 << 20, 1 << 24, dtype=cp.int32)
    tab = g.integers(0, 1 << 20, 1 << 16, dtype=cp.int32)
    tall = f32.reshape(1 << 18, 256)
    tall64 = g.standard_normal((1 << 18, 256))
    named = (("f32", f32), ("i64", i64), ("u", u), ("tab", tab), ("tall", tall), ("tall64", tall64))
    t = {k: torch.as_tensor(v, device="cuda") for k, v in named}
    x = {k: xp.asarray(v) for k, v in named}
    return {
        "sort": (lambda: xp.sort(x["f32"]), lambda: cp.sort(f32), lambda: torch.sort(t["f32"])),
        "argsort": (lambda: xp.argsort(x["f32"]), lambda: cp.argsort(f32), lambda: torch.argsort(t["f32"], stable=True)),
        "int64": (lambda: xp.sort(x["i64"]), lambda: cp.sort(i64), lambda: torch.sort(t["i64"])),
        "unique": (lambda: xp.unique_values(x["u"]), lambda: cp.unique(u), lambda: torch.unique(t["u"])),
        "inverse": (lambda: xp.unique_inverse(x["u"]), lambda: cp.unique(u, return_inverse=True),
                    lambda: torch.unique(t["u"], return_inverse=True)),
        "isin": (lambda: xp.isin(x["u"], x["tab"]), lambda: cp.isin(u, tab), lambda: torch.isin(t["u"], t["tab"])),
        "colsum": (lambda: xp.sum(x["tall"], axis=0), lambda: tall.sum(axis=0), lambda: t["tall"].sum(dim=0)),
        "colsum64": (lambda: xp.sum(x["tall64"], axis=0), lambda: tall64.sum(axis=0), lambda: t["tall64"].sum(dim=0)),
    }


def _profile(fn, each=False):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
    acc = collections.OrderedDict()
    evs = sorted((ev for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA),
                 key=lambda ev: ev.time_range.start)
    per_call = max(1, len(evs) // REPS)
    for i, ev in enumerate(evs):
        name = ev.name
        if name.startswith("Memcpy") or name.startswith("Memset"):
            name = name.split(" ")[0] + " " + name.split(" ")[1] if " " in name else name
        key = (f"[{i % per_call:2d}] " if each else "") + name[:90]
        c = acc.setdefault(key, [0, 0.0])
        c[0] += 1
        c[1] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
    return acc


def main(argv):
    each = "--each" in argv
    argv = [a for a in argv if a != "--each"]
    cases = _cases()
    for name in argv or ["sort", "argsort", "int64"]:
        for lib, fn in zip(("gparray", "cupy", "torch"), cases[name]):
            acc = _profile(fn, each)
            total = sum(v[1] for v in acc.values()) / REPS
            print(f"== {name} / {lib}: {total:.1f} us per call (kernel sum)")
            for k, (cnt, us) in acc.items():
                print(f"   {cnt / REPS:5.1f} x {us / cnt:9.1f} us  {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
