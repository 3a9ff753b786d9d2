"""Device probe: the GPU time of every kernel one call launches, gparray beside CuPy and
PyTorch, at the GPU's normal clocks (torch.profiler's CUPTI trace sees every kernel of the
process; ncu would lock the clocks to base). Usage, with the setup of tools/device_check.sh:

    python3 tools/kernel_times.py [--each] [case ...]
    cases: sort argsort int64 unique isin inverse colsum colsum64 (sum axis 0 of (2^18, 256))
           norm (vector_norm axis 1 of (8192, 8192) f32) fft (2^24 c64) fft0 (axis 0 of 4096^2 c64)
           fft1k (1024 c64: the host-time row's kernels)
           gemm64 (4096^2 f64 @) solve (4096 f64, one vector) floor (x + 1 on one element: the
           fixed cost of an event-timed call)

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
    cases = {
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
    # the linalg / fft bench rows (arrays made on first use of the case)
    sq = f32[: 1 << 26].reshape(8192, 8192)
    t["sq"], x["sq"] = torch.as_tensor(sq, device="cuda"), xp.asarray(sq)
    cases["norm"] = (lambda: xp.linalg.vector_norm(x["sq"], axis=1), lambda: cp.linalg.norm(sq, axis=1),
                     lambda: torch.linalg.vector_norm(t["sq"], dim=1))
    c1 = (f32[: 1 << 24] + 1j * f32[1 << 24: 1 << 25]).astype(cp.complex64)
    c2 = c1.reshape(4096, 4096)
    t["c1"], x["c1"], t["c2"], x["c2"] = (torch.as_tensor(c1, device="cuda"), xp.asarray(c1),
                                          torch.as_tensor(c2, device="cuda"), xp.asarray(c2))
    cases["fft"] = (lambda: xp.fft.fft(x["c1"]), lambda: cp.fft.fft(c1), lambda: torch.fft.fft(t["c1"]))
    c3 = c1[:1024].copy()
    t["c3"], x["c3"] = torch.as_tensor(c3, device="cuda"), xp.asarray(c3)
    cases["fft1k"] = (lambda: xp.fft.fft(x["c3"]), lambda: cp.fft.fft(c3), lambda: torch.fft.fft(t["c3"]))
    cases["fft0"] = (lambda: xp.fft.fft(x["c2"], axis=0), lambda: cp.fft.fft(c2, axis=0),
                     lambda: torch.fft.fft(t["c2"], dim=0))
    a64 = g.standard_normal((4096, 4096)) + 4096 * cp.eye(4096)
    b64 = g.standard_normal(4096)
    t["a64"], x["a64"], t["b64"], x["b64"] = (torch.as_tensor(a64, device="cuda"), xp.asarray(a64),
                                              torch.as_tensor(b64, device="cuda"), xp.asarray(b64))
    cases["gemm64"] = (lambda: x["a64"] @ x["a64"], lambda: a64 @ a64, lambda: t["a64"] @ t["a64"])
    cases["solve"] = (lambda: xp.linalg.solve(x["a64"], x["b64"]), lambda: cp.linalg.solve(a64, b64),
                      lambda: torch.linalg.solve(t["a64"], t["b64"]))
    # the floor of an event-timed call: one elementwise op on one element (launch and host path)
    one = cp.ones(1, cp.float32)
    t["one"], x["one"] = torch.as_tensor(one, device="cuda"), xp.asarray(one)
    cases["floor"] = (lambda: x["one"] + 1, lambda: one + 1, lambda: t["one"] + 1)
    return cases


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


def _event_us(fn, n=30):
    """Median microseconds of one call between two CUDA events (as bench/bench.py times)."""
    import statistics

    a, b = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(n):
        a.record()
        r = fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
        del r
    return statistics.median(ts)


def main(argv):
    each = "--each" in argv
    argv = [a for a in argv if a != "--each"]
    cases = _cases()
    for name in argv or ["sort", "argsort", "int64"]:
        for lib, fn in zip(("gparray", "cupy", "torch"), cases[name]):
            acc = _profile(fn, each)
            total = sum(v[1] for v in acc.values()) / REPS
            print(f"== {name} / {lib}: {total:.1f} us per call (kernel sum), {_event_us(fn):.1f} us event-timed")
            for k, (cnt, us) in acc.items():
                print(f"   {cnt / REPS:5.1f} x {us / cnt:9.1f} us  {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
