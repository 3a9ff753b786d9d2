"""gparray.cuda: the CUDA runtime side of gparray (devices, streams and events, synchronization, memory pool
statistics and limits, kernel cache control, the host conversion policy, pinned host
memory and downloads into it, user kernels, profiling).

``profile()`` records the kernel launches, copies and library calls gparray makes, with
their gparray function, kernel, grid/block, bytes and GPU time (``_profile.py``; the module
imports no CuPy until a profile is entered). ``GPARRAY_NVTX=1`` (read here, at import)
opens an NVTX range around each of them for the whole process (needs the nvtx package)."""
from __future__ import annotations

from .._core._backend import CUDAUnavailableError, device_count, has_cuda
from .._core._device import Device, current_device
from .._core._host_conversion import (HostConversionWarning, get_host_conversion, host_conversion,
                                      set_host_conversion)
from .._kernels import _compile as _kc
from .._kernels._compile import KernelCompileError
from .._core._faults import KernelFaultError
from .._engine._streams import Event, Stream, current_stream, default_stream
from ._memory_api import *  # noqa: F401,F403  (memory_stats, empty_cache, OutOfMemoryError, ...)
from ._memory_api import __all__ as _memory_all
from ._host_api import pinned_empty, to_host
from ._user_kernels import UserKernel, UserKernelCompileError, UserModule, compile_kernel
from ._profile import Profile, ProfileRecord, profile
from . import _profile

if _profile.env_nvtx_requested():
    _profile.enable_env_nvtx()


def synchronize(device=None) -> None:
    """Wait until every kernel queued on ``device`` (default: current), on any stream, has
    finished; raises the IndexError of an out-of-range index an earlier gather or scatter
    met (see GPARRAY_BOUNDS_CHECK). The same as ``Device.synchronize()``."""
    from .._core._device import normalize_device

    normalize_device(device, "synchronize").synchronize()


def clear_kernel_cache(memory: bool = True) -> int:
    """Delete the on-disk kernel cache (and forget loaded kernels); returns files removed."""
    if memory:
        from .._kernels import _registry
        from . import _user_kernels

        _registry.clear_memo()
        _user_kernels.clear_memo()
    return _kc.clear_cache()


def kernel_cache_dir() -> str:
    """The kernel cache folder (``GPARRAY_CACHE_DIR`` or ``~/.cache/gparray/kernels``)."""
    return str(_kc.cache_dir())


def kernel_cache_info() -> dict:
    """{'dir', 'files', 'bytes'} of the on-disk kernel cache."""
    files, total = _kc.cache_size()
    return {"dir": str(_kc.cache_dir()), "files": files, "bytes": total}


__all__ = ["CUDAUnavailableError", "Device", "Event", "KernelCompileError", "KernelFaultError", "Profile",
           "ProfileRecord", "Stream", "UserKernel", "UserKernelCompileError", "UserModule", "clear_kernel_cache",
           "compile_kernel", "current_device", "current_stream", "default_stream", "device_count", "has_cuda",
           "kernel_cache_dir", "kernel_cache_info", "pinned_empty", "profile", "synchronize", "to_host",
           "HostConversionWarning", "get_host_conversion", "host_conversion", "set_host_conversion"] + list(_memory_all)
