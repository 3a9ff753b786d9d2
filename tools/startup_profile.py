"""Where the first operations' time goes (run in a fresh process on the GPU machine)."""
import time

t0 = time.perf_counter()
import gparray as xp  # noqa: E402

t1 = time.perf_counter()
from gparray import _backend  # noqa: E402

_backend.cupy()
t2 = time.perf_counter()
a = xp.ones(4)
t3 = time.perf_counter()
b = a + a
t4 = time.perf_counter()
xp.cuda.synchronize()
t5 = time.perf_counter()
print(f"import gparray {t1 - t0:.3f}s | import cupy + device query {t2 - t1:.3f}s | ones {t3 - t2:.3f}s | "
      f"a+a {t4 - t3:.3f}s | sync {t5 - t4:.3f}s | total {t5 - t0:.3f}s")
