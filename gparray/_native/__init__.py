"""The optional C extension ``_claunch``: kernel launches from packed parameter buffers, the
compiled repeat paths (elementwise, reductions, joins, gemm, fft, user kernels), the pool's
Block, and the profiler's frame walk; one source file per thing it serves (``_claunch.c``:
launches and the module; ``_claunch_stubs.c``: the stand-in driver of the CPU tests).

``claunch`` is the loaded module, or None when it was not built or ``GPARRAY_PY_LAUNCH=1``
asks for the Python paths. The extension imports nothing of gparray: the layers above hand
it what it calls back (the launcher's error hooks, the Array class and the stream getter)
when they load.
"""
import os


def _load():
    if os.environ.get("GPARRAY_PY_LAUNCH", "") not in ("", "0"):
        return None
    try:
        from . import _claunch
    except ImportError:
        return None
    return _claunch


claunch = _load()
