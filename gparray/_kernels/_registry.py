"""Kernel registry: (family, name expression) -> loaded CUDA function, per device.

The fast path is one dict lookup. On a miss the instance comes from the disk cache or is
compiled by NVRTC (``_compile``), the module is loaded into the device's context by
``cuModuleLoadData`` (``Module``, through CuPy's driver bindings without importing CuPy:
a new process's first operations need no ``import cupy``), and every instance of
the module is remembered, so a module compiled for many instances (warm-up) is loaded once.
Only the instance asked for is looked up in it (``cuModuleGetFunction``): under CUDA's lazy
loading (the default since CUDA 12.2) that call is what loads a kernel onto the device, so
looking up all ~200 instances of a warm-up module at the first operation of a family cost
~200 kernel loads in a new process. The others are looked up when first asked for.

Families register the instances they can produce (``register_instances``) so the CPU tier
can compile every one of them with NVRTC, and ``python -m gparray.warmup`` can fill the
disk cache without a GPU.
"""
from __future__ import annotations

import numpy as np

from . import _compile, _nvrtc_info

# C++ spelling of each dtype inside kernels (see include/gp/types.cuh)
CTYPES = {
    np.dtype("bool"): "bool",
    np.dtype("int8"): "gp::int8",
    np.dtype("int16"): "gp::int16",
    np.dtype("int32"): "gp::int32",
    np.dtype("int64"): "gp::int64",
    np.dtype("uint8"): "gp::uint8",
    np.dtype("uint16"): "gp::uint16",
    np.dtype("uint32"): "gp::uint32",
    np.dtype("uint64"): "gp::uint64",
    np.dtype("float32"): "float",
    np.dtype("float64"): "double",
    np.dtype("complex64"): "gp::complex64",
    np.dtype("complex128"): "gp::complex128",
    np.dtype("float16"): "gp::half",     # extension dtype (storage only: computed in float)
}

_functions: dict = {}          # (device_id, family, expr) -> cupy Function
_pending: dict = {}            # (device_id, family, expr) -> (loaded Module, lowered name), not looked up yet
_modules: list = []            # keep loaded modules alive
_arch_of_device: dict = {}
_instances: dict[str, set] = {}  # family -> registered name expressions


def ctype(dtype) -> str:
    """C++ type name used in name expressions for a NumPy dtype."""
    return CTYPES[dtype]


def register_instances(family: str, exprs) -> None:
    """Declare instances a family can produce (for the compile-all test and warm-up)."""
    _instances.setdefault(family, set()).update(exprs)


def registered_instances() -> dict[str, list[str]]:
    """Every registered instance, by family (call ``load_all_tables()`` first)."""
    return {f: sorted(s) for f, s in _instances.items()}


def device_arch(device_id: int) -> str:
    """Target arch string ("90") for a device: its compute capability, capped at NVRTC's newest."""
    arch = _arch_of_device.get(device_id)
    if arch is None:
        from .._core._backend import require_device, runtime

        require_device("gparray")
        rt = runtime()
        # cudaDevAttrComputeCapabilityMajor / Minor
        cc = 10 * int(rt.deviceGetAttribute(75, device_id)) + int(rt.deviceGetAttribute(76, device_id))
        supported = _nvrtc_info.info()[1]   # (the stamp's answer when there is one: no NVRTC load)
        if supported and cc not in supported:
            cc = max([a for a in supported if a <= cc] or [min(supported)])
        arch = _arch_of_device[device_id] = str(cc)
    return arch


class in_context:
    """``with in_context(device_id):`` around a module load (``cuModuleLoadData``) or a function
    lookup (``cuModuleGetFunction``, which loads the kernel under lazy loading): driver calls
    that act in the current context, so the device's context must be current. It calls
    ``setDevice(device_id)`` even when that already is the thread's current device: a host
    thread has no current context until a runtime call binds the primary one, and a new
    thread's first gparray work can be a kernel load (its driver call then fails with
    CUDA_ERROR_INVALID_CONTEXT). The thread's current device is restored on exit."""

    __slots__ = ("dev", "rt", "prev")

    def __init__(self, device_id: int):
        from .._core._backend import runtime

        self.dev, self.rt = device_id, runtime()

    def __enter__(self):
        self.prev = self.rt.getDevice()
        self.rt.setDevice(self.dev)
        return self

    def __exit__(self, *exc):
        if self.prev != self.dev:
            self.rt.setDevice(self.prev)
        return False


def get_kernel(family: str, expr: str, device_id: int):
    """The loaded function for instance ``expr`` of ``family`` on ``device_id``."""
    fn = _functions.get((device_id, family, expr))
    if fn is not None:
        return fn
    key = (device_id, family, expr)
    loaded = _pending.pop(key, None)
    if loaded is not None:
        mod, lowered = loaded
        with in_context(device_id):   # the module's device, whichever device the caller has current
            fn = _functions[key] = mod.get_function(lowered)
        return fn
    return _load(family, expr, device_id)


class Function:
    """A loaded kernel: ``ptr`` is its CUfunction (what the launchers need)."""

    __slots__ = ("ptr", "name")

    def __init__(self, ptr: int, name: str):
        self.ptr, self.name = ptr, name


class Module:
    """A module loaded by ``cuModuleLoadData`` (CuPy's driver bindings; no CuPy import), kept
    loaded for the life of the process (``_modules``)."""

    __slots__ = ("handle",)

    def __init__(self, cubin: bytes):
        from .._core._backend import driver

        self.handle = driver().moduleLoadData(cubin)

    def get_function(self, name: str) -> Function:
        """``cuModuleGetFunction`` (under lazy loading it loads the kernel)."""
        from .._core._backend import driver

        return Function(driver().moduleGetFunction(self.handle, name), name)


def _load(family: str, expr: str, device_id: int):
    arch = device_arch(device_id)
    cubin, mapping = _compile.compile_cached(family, [expr], arch)
    with in_context(device_id):
        try:
            mod = Module(cubin)
        except Exception:
            # keyed by a stale NVRTC stamp (a newer NVRTC's cubin the driver rejects): ask
            # NVRTC itself, then load (or compile) under the real key
            if not _nvrtc_info.trusted_stamp():
                raise
            _compile.confirm_nvrtc()
            _arch_of_device.clear()
            cubin, mapping = _compile.compile_cached(family, [expr], device_arch(device_id))
            mod = Module(cubin)
        fn = mod.get_function(mapping[expr])
    _modules.append(mod)
    for e, lowered in mapping.items():
        if e != expr and (device_id, family, e) not in _functions:
            _pending[(device_id, family, e)] = (mod, lowered)
    _functions[(device_id, family, expr)] = fn
    return fn


def clear_memo() -> None:
    """Forget loaded functions (the next call reloads from the disk cache)."""
    _functions.clear()
    _pending.clear()
