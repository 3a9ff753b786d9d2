"""Finding the CUDA libraries CuPy already loaded into this process (cuBLAS, cuSOLVER,
cuFFT), so gparray's ctypes calls reach the very library CuPy's handles came from."""
from __future__ import annotations

import os

# dlopen flags: only a library already in the process (RTLD_NOLOAD), symbols bound now
NOLOAD = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2)


def mapped(prefix: str, maps: str = "/proc/self/maps") -> list[str]:
    """Paths mapped into this process whose file name starts with ``prefix`` (e.g.
    "libcublas.so"), sorted, each once; [] where ``maps`` can't be read."""
    try:
        with open(maps) as fh:
            paths = {line.rsplit(None, 1)[-1] for line in fh if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith(prefix))
