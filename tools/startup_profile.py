"""Where a new process's start-up goes: ``import gparray`` and its first operations.

Run it in a fresh process on the GPU machine, with the kernel cache filled (run it twice: the
first run may compile):

    python tools/startup_profile.py            # one line of phases, then the kernel loads
    python tools/startup_profile.py --cprofile # also cProfile of the first operations (host)

The first operations are the issue's sequence: ``x = xp.asarray(numpy array)``, ``x + 1``,
``xp.sum(x)``, then a synchronize. The kernel lines say, per kernel the first operations
loaded, how long the cache key and disk read took (``compile_cached``: a miss compiles), and
how long the whole load took (``cuModuleLoadData`` plus the one ``cuModuleGetFunction``).
Without a GPU it prints the import part and stops at the first operation's error.
"""
import compileall
import os
import subprocess
import sys
import time

if "--child" not in sys.argv:
    # time a fresh interpreter with gparray's bytecode compiled, as an installed package has
    # it (PYTHONDONTWRITEBYTECODE=1 would have every module compiled at each import)
    compileall.compile_dir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gparray"), quiet=1)
    sys.exit(subprocess.call([sys.executable, os.path.abspath(__file__), "--child"] + sys.argv[1:]))

t0 = time.perf_counter()
import gparray as xp  # noqa: E402

t1 = time.perf_counter()
n_modules = len([m for m in sys.modules if m.startswith("gparray")])

import numpy as np  # noqa: E402

from gparray._core import _backend  # noqa: E402
from gparray._kernels import _compile, _registry  # noqa: E402

loads = []          # (family, expr, seconds in compile_cached, seconds in the whole load)
_cc, _ld = _compile.compile_cached, _registry._load


def _timed_cc(family, exprs, arch):
    t = time.perf_counter()
    try:
        return _cc(family, exprs, arch)
    finally:
        loads.append([family, exprs[0], time.perf_counter() - t, None])


def _timed_load(family, expr, device_id):
    t = time.perf_counter()
    try:
        return _ld(family, expr, device_id)
    finally:
        if loads and loads[-1][1] == expr:
            loads[-1][3] = time.perf_counter() - t


_compile.compile_cached = _timed_cc
_registry._load = _timed_load

print(f"import gparray {t1 - t0:.3f}s ({xp.__file__}: {n_modules} gparray modules; linalg/fft imported: "
      f"{'gparray.linalg' in sys.modules}/{'gparray.fft' in sys.modules}); "
      f"CUDA_MODULE_LOADING={os.environ.get('CUDA_MODULE_LOADING', '(unset: LAZY since CUDA 12.2)')}")
try:
    _backend.require_device("startup_profile")   # the runtime bindings and the device count
except _backend.CUDAUnavailableError as exc:
    print(f"no GPU: {exc}")
    sys.exit(0)
t2 = time.perf_counter()
_compile.nvrtc_version()   # from the cache folder's NVRTC stamp when there is one (no NVRTC load)
t3 = time.perf_counter()
host = np.arange(1000, dtype=np.float32)


def first_ops():
    s = [time.perf_counter()]
    x = xp.asarray(host)
    s.append(time.perf_counter())
    y = x + 1
    s.append(time.perf_counter())
    z = xp.sum(y)
    s.append(time.perf_counter())
    xp.cuda.synchronize()
    s.append(time.perf_counter())
    return z, s


if "--cprofile" in sys.argv:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    z, s = prof.runcall(first_ops)
else:
    z, s = first_ops()
t4 = time.perf_counter()
print(f"runtime bindings + device query {t2 - t1:.3f}s | NVRTC version {t3 - t2:.3f}s | asarray {s[1] - s[0]:.3f}s | "
      f"x+1 {s[2] - s[1]:.3f}s | sum {s[3] - s[2]:.3f}s | sync {s[4] - s[3]:.3f}s | total {t4 - t0:.3f}s | "
      f"CuPy imported: {'cupy' in sys.modules}")
assert float(z) == float(host.sum() + host.size)
for family, expr, t_cache, t_load in loads:
    t_load = "?" if t_load is None else f"{t_load * 1e3:.2f} ms"
    print(f"  kernel {family}: {expr}: key + cache read {t_cache * 1e3:.2f} ms, load {t_load}")
print(f"  cuModuleGetFunction calls: {len(_registry._functions)}; instances of loaded modules "
      f"not looked up: {len(_registry._pending)}")
if "--cprofile" in sys.argv:
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
