"""Lazy access to CuPy and the CUDA runtime.

Importing gparray never imports CuPy or touches a GPU. The first operation that needs the
device calls :func:`runtime` (or :func:`require_device`); on a machine without CUDA that
raises one clear :class:`CUDAUnavailableError`.

Two levels, so that a new process's first operations do not pay for ``import cupy``
(0.2-0.3 s on the GPU machines, most of a warm start):

* :func:`runtime` is ``cupy_backends.cuda.api.runtime``, CuPy's Cython bindings of the CUDA
  runtime (``cupy.cuda.runtime`` re-exports exactly this module), imported without the rest
  of CuPy (~10 ms). Allocation, copies, events, device switches and synchronization, the
  kernel loads (:func:`driver`) and the launches need nothing else.
* :func:`cupy` imports CuPy itself, for what only CuPy has: cuBLAS/cuSOLVER/cuFFT, its
  ndarray (DLPack, ``__cuda_array_interface__``), its Stream objects.

The current stream is CuPy's (``cupy.cuda.get_current_stream``: ``with cupy.cuda.Stream():``
and gparray's own streams set it). Until CuPy is imported nothing can have made another
stream current, so :func:`current_stream` answers the default stream (the per-thread one
when ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM`` is set, as CuPy would) without importing it;
once ``cupy`` is in ``sys.modules``, whoever imported it, the answer is CuPy's again.
Modules that keep a stream getter or hook CuPy register with :func:`when_cupy_imported`.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading

_cupy = None
_rt = None
_error: Exception | None = None
_device_count: int | None = None
_count_error: str | None = None   # why the runtime answered no device (its error), if it raised
_hooks: list = []                 # when_cupy_imported callbacks not run yet
_hooks_lock = threading.Lock()


class CUDAUnavailableError(RuntimeError):
    """No usable CUDA device (or no CuPy) on this machine."""


def no_cupy(exc, what: str = "gparray: CuPy could not be imported") -> CUDAUnavailableError:
    """The error of a missing or broken CuPy (``exc``: what importing it raised)."""
    return CUDAUnavailableError(f"{what} ({exc}); install gparray[cuda13] or gparray[cuda12]")


def _import_cupy():
    global _cupy, _error
    if _cupy is not None:
        return _cupy
    if _error is not None:
        raise CUDAUnavailableError(str(_error))
    try:
        import cupy  # noqa: F401  (heavy import, deferred to first use)
    except Exception as exc:  # ImportError or a broken CUDA install
        _error = no_cupy(exc)
        raise _error from None
    _cupy = cupy
    _run_hooks(cupy)
    return cupy


def _run_hooks(cp) -> None:
    while True:
        with _hooks_lock:
            if not _hooks:
                return
            fn = _hooks.pop(0)
        fn(cp)


def when_cupy_imported(fn) -> None:
    """Call ``fn(cupy)`` once CuPy is imported (now, when it already is)."""
    with _hooks_lock:
        if _cupy is None:
            _hooks.append(fn)
            return
    fn(_cupy)


def runtime():
    """CuPy's CUDA runtime bindings (``cupy_backends.cuda.api.runtime``, the module
    ``cupy.cuda.runtime`` re-exports), imported without importing CuPy; no device check."""
    if _cupy is not None:
        return _cupy.cuda.runtime
    global _rt, _error
    if _rt is None:
        if _error is not None:
            raise CUDAUnavailableError(str(_error))
        try:
            from cupy_backends.cuda.api import runtime as rt
        except Exception as exc:
            _error = no_cupy(exc)
            raise _error from None
        _rt = rt
    return _rt


class _ModuleCalls:
    """``cuModuleLoadData`` and ``cuModuleGetFunction`` called on libcuda through ctypes, with
    the signatures of CuPy's driver bindings. CuPy's own (``cupy_backends.cuda.api.driver``)
    import all of CuPy at their first call (seen on the H200 machines: 0.2 s inside the
    first kernel load), so a new process's first kernel load uses these; the library is the
    one the runtime has already loaded."""

    def __init__(self):
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        vp = ctypes.c_void_p
        self._load, self._get = lib.cuModuleLoadData, lib.cuModuleGetFunction
        self._load.argtypes, self._load.restype = [ctypes.POINTER(vp), ctypes.c_char_p], ctypes.c_int
        self._get.argtypes, self._get.restype = [ctypes.POINTER(vp), vp, ctypes.c_char_p], ctypes.c_int
        self._vp, self._byref = vp, ctypes.byref

    @staticmethod
    def _check(status: int) -> None:
        if status:
            from cupy_backends.cuda.api import driver as drv
            raise drv.CUDADriverError(status)

    def moduleLoadData(self, image: bytes) -> int:
        h = self._vp()
        self._check(self._load(self._byref(h), image))
        return int(h.value or 0)

    def moduleGetFunction(self, module: int, name: str) -> int:
        f = self._vp()
        self._check(self._get(self._byref(f), self._vp(module), name.encode()))
        return int(f.value or 0)


_module_calls = None


def driver():
    """The driver's module calls (``moduleLoadData``, ``moduleGetFunction``): CuPy's
    ``cupy.cuda.driver`` once CuPy is imported, else :class:`_ModuleCalls` (no CuPy import)."""
    global _module_calls
    if _cupy is not None:
        return _cupy.cuda.driver
    runtime()
    if _module_calls is None:
        _module_calls = _ModuleCalls()
    return _module_calls


class DefaultStream:
    """The stream CuPy calls current where no stream context is active: the legacy default
    stream (handle 0), or the per-thread default stream (handle 2) under
    ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM``; the subset of ``cupy.cuda.Stream`` gparray uses."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def synchronize(self) -> None:
        """Wait for the work queued on the stream (of the current device)."""
        runtime().streamSynchronize(self.ptr)

    def __repr__(self):
        return f"<gparray default stream {self.ptr}>"


def _default_stream() -> DefaultStream:
    ptds = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0")
    try:
        on = int(ptds) != 0
    except ValueError:
        on = False
    return DefaultStream(2 if on else 0)


_DEFAULT = None


def current_stream(device_id: int = -1):
    """CuPy's current stream of ``device_id`` (-1: the current device); the default stream
    without importing CuPy while nothing has imported it (nothing can have changed it)."""
    cp = _cupy
    if cp is None:
        if "cupy" not in sys.modules:
            global _DEFAULT
            d = _DEFAULT
            if d is None:
                d = _DEFAULT = _default_stream()
            return d
        cp = _import_cupy()   # the user's CuPy may have a stream current: read it from now on
    return cp.cuda.get_current_stream(device_id)


def stream_getter():
    """The fastest function answering :func:`current_stream` now: CuPy's own once it is
    imported (register a :func:`when_cupy_imported` hook to switch to it later)."""
    return _cupy.cuda.get_current_stream if _cupy is not None else current_stream


def Event(block: bool = False, disable_timing: bool = True):
    """A CUDA event: CuPy's ``cupy.cuda.Event`` once CuPy is imported, else a
    :class:`LightEvent` (the same subset: ``ptr``, ``done``, ``synchronize``)."""
    if _cupy is not None:
        return _cupy.cuda.Event(block=block, disable_timing=disable_timing)
    return LightEvent(block, disable_timing)


def OnDevice(device_id: int):
    """``with OnDevice(d):`` makes device ``d`` current and restores the previous one:
    ``cupy.cuda.Device(d)`` once CuPy is imported, else a :class:`LightDevice`."""
    if _cupy is not None:
        return _cupy.cuda.Device(device_id)
    return LightDevice(device_id)


class LightEvent:
    """A CUDA event made through :func:`runtime` (the subset of ``cupy.cuda.Event`` gparray
    uses: ``ptr``, ``done``, ``synchronize``), destroyed with the object."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, block: bool = False, disable_timing: bool = True):
        self.ptr = 0
        self.ptr = runtime().eventCreateWithFlags((1 if block else 0) | (2 if disable_timing else 0))

    @property
    def done(self) -> bool:
        """True when the work recorded before the event has finished."""
        return runtime().eventQuery(self.ptr) == 0

    def synchronize(self) -> None:
        runtime().eventSynchronize(self.ptr)

    def __del__(self, _sys=sys):
        p, self.ptr = self.ptr, 0
        if p and not _sys.is_finalizing():
            try:
                runtime().eventDestroy(p)
            except Exception:
                pass


class LightDevice:
    """``with LightDevice(d):`` makes device ``d`` current and restores the previous one (what
    ``with cupy.cuda.Device(d):`` does), through :func:`runtime`."""

    __slots__ = ("dev", "prev")

    def __init__(self, device_id: int):
        self.dev = device_id

    def __enter__(self):
        rt = runtime()
        self.prev = rt.getDevice()
        if self.prev != self.dev:
            rt.setDevice(self.dev)
        return self

    def __exit__(self, *exc):
        if self.prev != self.dev:
            runtime().setDevice(self.prev)
        return False


def cupy():
    """The CuPy module, imported on first call; raises CUDAUnavailableError without a GPU."""
    cp = _import_cupy()
    if device_count() == 0:
        raise CUDAUnavailableError(no_device_message("gparray"))
    return cp


def on_device(device_id: int):
    """A context making device ``device_id`` current (nothing to do when it already is)."""
    require_device("gparray")
    if runtime().getDevice() == device_id:
        return contextlib.nullcontext()
    return OnDevice(device_id)


def cupy_module():
    """The CuPy module without requiring a device (NVRTC compiles need no GPU)."""
    return _import_cupy()


def device_count() -> int:
    """Number of visible CUDA devices; 0 when CuPy or the driver is missing."""
    global _device_count
    if _device_count is None:
        global _count_error
        try:
            _device_count = int(runtime().getDeviceCount())
        except Exception as exc:
            _device_count = 0
            _count_error = f"{type(exc).__name__}: {exc}"
    return _device_count


def no_device_message(name: str) -> str:
    """The error text of a first use without a GPU: the function, why, and what to run."""
    why = f" ({_count_error})" if _count_error else ""
    return (f"{name}: no CUDA device was found{why}; gparray needs an NVIDIA GPU and its driver "
            "(`python -m gparray` reports what it sees)")


def has_cuda() -> bool:
    """True when gparray can run here: at least one CUDA device, and CuPy importable (its
    NVRTC, cuBLAS, cuSOLVER and cuFFT bindings; this imports it). The first operations
    themselves check only for a device (:func:`require_device`) and import no CuPy."""
    if device_count() == 0:
        return False
    try:
        _import_cupy()
    except CUDAUnavailableError:
        return False
    return True


def require_device(name: str = "gparray"):
    """Raise CUDAUnavailableError naming ``name`` when no CUDA device is visible (checked
    through the runtime bindings: CuPy is not imported here)."""
    if device_count() == 0:
        if _error is not None:
            raise CUDAUnavailableError(f"{name}: {_error}")
        raise CUDAUnavailableError(no_device_message(name))


# ----------------------------------------------------------------------------- live streams

_held: dict = {}                  # (device ordinal, raw stream handle) -> gparray Streams holding it
_held_lock = threading.Lock()     # its critical sections allocate no container: no GC runs inside


def hold_stream(device_id: int, handle: int) -> None:
    """Note one more gparray Stream holding raw stream ``handle`` of ``device_id``: the
    stream is alive at least until the matching :func:`release_stream`."""
    key = (device_id, handle)
    with _held_lock:
        _held[key] = _held.get(key, 0) + 1


def release_stream(device_id: int, handle: int) -> None:
    """Undo one :func:`hold_stream` (the finalizer of a gparray Stream calls it)."""
    key = (device_id, handle)
    with _held_lock:
        n = _held.get(key, 0) - 1
        if n > 0:
            _held[key] = n
        else:
            _held.pop(key, None)


def stream_held(device_id: int, handle: int) -> bool:
    """True while a gparray Stream holds raw stream ``handle`` of ``device_id``, which is then
    known to be alive (so an event may be recorded on it)."""
    return (device_id, handle) in _held
