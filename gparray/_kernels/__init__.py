"""gparray's kernel system: CUDA sources (``*.cu``, ``include/gp/*.cuh``), NVRTC compile with
a disk cache (``_compile``), and the per-device registry (``_registry``)."""
from ._compile import KernelCompileError, cache_dir, cache_size, clear_cache
from ._registry import ctype, get_kernel, register_instances, registered_instances

__all__ = ["KernelCompileError", "cache_dir", "cache_size", "clear_cache", "ctype",
           "get_kernel", "register_instances", "registered_instances"]
