"""cuFFT on gparray memory: plans, the plan cache, execution of the planner's steps
(gparray/_engine/_fft_plan.py).

Bindings: CuPy's ``cupy.cuda.cufft`` module loads libcufft (``cp.cuda.cufft`` finds it
through cuda-pathfinder) and gives the executions (``execC2C`` ... ``execZ2D``, fast Cython
calls that release the GIL). It does not expose the plan functions a caller needs to
manage work areas and streams itself (``cufftCreate``, ``cufftMakePlanMany64``,
``cufftSetWorkArea``, ``cufftSetStream``, ``cufftDestroy``): those are called through
``ctypes``, looked up through CuPy's extension module itself (``dlsym`` on its handle
searches the libraries it is linked with), so they come from the very libcufft its
executions call; the process's memory map and cuda-pathfinder are the fallbacks.
Nothing here runs at import: the first transform loads everything.

Plans: ``cufftMakePlanMany64`` with the advanced layout of the step (or the basic layout),
auto-allocation off. A plan's work area is taken from the device's pool on the current
stream for each execution and handed back after it (stream-ordered, so the next transform
on that stream reuses the same block), set on the plan only when its address changed; the
plan is bound to the current stream before each execution (again only when it changed).
So cached plans hold no work memory, and one plan serves any stream.

The cache: one LRU per device, bounded by a number of plans (``GPARRAY_FFT_PLAN_CACHE``,
default 256; 0 turns caching off) and optionally by the sum of the plans' work-area sizes
(cuFFT's own estimate of a plan's device footprint), settable through ``gparray.fft``'s
``set_plan_cache_max_size`` / ``set_plan_cache_max_memory``; ``clear_plan_cache`` destroys
the plans. ``PlanCache`` is pure bookkeeping over an injected factory (CPU-tested).
"""
from __future__ import annotations

import ctypes
import os
import threading
from collections import OrderedDict

from .. import _backend, _memory
from ._fft_plan import C2C, C2R, R2C

FORWARD, INVERSE = -1, 1
# cufftType values (cufft.h): single and double precision
_TYPES = {(C2C, False): 0x29, (R2C, False): 0x2A, (C2R, False): 0x2C,
          (C2C, True): 0x69, (R2C, True): 0x6A, (C2R, True): 0x6C}
_EXEC_NAMES = {(C2C, False): "execC2C", (R2C, False): "execR2C", (C2R, False): "execC2R",
               (C2C, True): "execZ2Z", (R2C, True): "execD2Z", (C2R, True): "execZ2D"}
# bytes of one input / output element: (kind, double) -> (in, out)
_ITEMSIZE = {(C2C, False): (8, 8), (R2C, False): (4, 8), (C2R, False): (8, 4),
             (C2C, True): (16, 16), (R2C, True): (8, 16), (C2R, True): (16, 8)}
_RESULT = {1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE",
           4: "CUFFT_INVALID_VALUE", 5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED",
           7: "CUFFT_SETUP_FAILED", 8: "CUFFT_INVALID_SIZE", 9: "CUFFT_UNALIGNED_DATA",
           11: "CUFFT_INVALID_DEVICE", 13: "CUFFT_NO_WORKSPACE", 14: "CUFFT_NOT_IMPLEMENTED",
           16: "CUFFT_NOT_SUPPORTED"}


def _env_int(name, default):
    v = os.environ.get(name, "").strip()
    try:
        return int(v) if v else default
    except ValueError:
        return default


DEFAULT_MAX_SIZE = _env_int("GPARRAY_FFT_PLAN_CACHE", 256)


class CuFFTError(RuntimeError):
    """A cuFFT call failed; ``status`` is its cufftResult."""

    def __init__(self, what: str, status: int):
        super().__init__(f"{what} failed: {_RESULT.get(status, 'cufftResult')} ({status})")
        self.status = status


# ----------------------------------------------------------------------------- the plan cache

class PlanCache:
    """An LRU of plans keyed by anything hashable, bounded by a count (``max_size``; 0:
    nothing is kept) and optionally by the sum of the plans' ``nbytes`` (``max_memory``,
    None: no bound). ``make(key) -> plan`` builds one (the plan has ``nbytes``),
    ``destroy(plan)`` releases one. ``get`` returns (plan, cached): a plan that cannot be
    kept (caching off, or larger than the memory bound alone) is the caller's to destroy
    after use."""

    def __init__(self, make, destroy, max_size: int = DEFAULT_MAX_SIZE, max_memory=None):
        self._make, self._destroy = make, destroy
        self._plans: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.max_size = max(int(max_size), 0)
        self.max_memory = None if max_memory is None else max(int(max_memory), 0)
        self.memory = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._plans)

    def keys(self) -> list:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._plans)

    def get(self, key):
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return plan, True
            self.misses += 1
            plan = self._make(key)
            if self.max_size == 0 or (self.max_memory is not None and plan.nbytes > self.max_memory):
                return plan, False
            self._plans[key] = plan
            self.memory += plan.nbytes
            self._trim(keep=key)
            return plan, True

    def _trim(self, keep=None):
        doomed = []
        while self._plans and (len(self._plans) > self.max_size or
                               (self.max_memory is not None and self.memory > self.max_memory)):
            key = next(iter(self._plans))
            if key == keep:
                break
            plan = self._plans.pop(key)
            self.memory -= plan.nbytes
            self.evictions += 1
            doomed.append(plan)
        for plan in doomed:
            self._destroy(plan)

    def set_limits(self, max_size=None, max_memory=False):
        """New bounds (``max_memory=False``: unchanged); evicts what no longer fits."""
        with self._lock:
            if max_size is not None:
                self.max_size = max(int(max_size), 0)
            if max_memory is not False:
                self.max_memory = None if max_memory is None else max(int(max_memory), 0)
            self._trim()

    def clear(self):
        """Destroy every plan; the counters stay."""
        with self._lock:
            doomed = list(self._plans.values())
            self._plans.clear()
            self.memory = 0
        for plan in doomed:
            self._destroy(plan)

    def info(self) -> dict:
        with self._lock:
            return {"size": len(self._plans), "max_size": self.max_size, "memory": self.memory,
                    "max_memory": self.max_memory, "hits": self.hits, "misses": self.misses,
                    "evictions": self.evictions}


# ----------------------------------------------------------------------------- bindings

class _Lib:
    """libcufft: CuPy's executions, ctypes for the plan functions CuPy does not expose."""

    def __init__(self):
        cp = _backend.cupy()
        mod = cp.cuda.cufft            # loads libcufft (cuda-pathfinder), then the bindings
        self.execs = {k: getattr(mod, name) for k, name in _EXEC_NAMES.items()}
        lib = _library(mod)
        i, ll, vp = ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p
        llp = ctypes.POINTER(ll)

        def fn(name, *argtypes):
            f = getattr(lib, name)
            f.argtypes, f.restype = list(argtypes), ctypes.c_int
            return f
        self.create = fn("cufftCreate", ctypes.POINTER(i))
        self.destroy = fn("cufftDestroy", i)
        self.set_auto_allocation = fn("cufftSetAutoAllocation", i, i)
        self.make_plan_many64 = fn("cufftMakePlanMany64", i, i, llp, llp, ll, ll, llp, ll, ll, i, ll,
                                   ctypes.POINTER(ctypes.c_size_t))
        self.set_stream = fn("cufftSetStream", i, vp)
        self.set_work_area = fn("cufftSetWorkArea", i, vp)
        self.cp = cp


def _library(mod):
    """A ctypes handle whose symbols are those of the libcufft CuPy's bindings call: CuPy's
    extension module (its dependencies are searched too), else the libcufft mapped into the
    process, else the one cuda-pathfinder loads."""
    paths = [getattr(mod, "__file__", None)]
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if os.path.basename(path).startswith("libcufft.so") and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    try:
        from cuda import pathfinder

        paths.append(pathfinder.load_nvidia_dynamic_lib("cufft").abs_path)
    except Exception:
        pass
    paths.append("libcufft.so")
    errors = []
    for path in paths:
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.cufftMakePlanMany64    # noqa: B018  (the symbol must resolve through this handle)
            return lib
        except (OSError, AttributeError) as exc:
            errors.append(f"{path}: {exc}")
    raise RuntimeError("fft: libcufft's plan functions could not be found (" + "; ".join(errors) + ")")


_lib_obj = None
_lib_lock = threading.Lock()


def _lib() -> _Lib:
    global _lib_obj
    if _lib_obj is None:
        with _lib_lock:
            if _lib_obj is None:
                _lib_obj = _Lib()
    return _lib_obj


def _check(status: int, what: str):
    if status:
        raise CuFFTError(what, status)


class Plan:
    """One cuFFT plan (handle) on a device, with the work area size it needs and the
    stream/work area last set on it; ``lock`` orders the set-up and execution of one call."""

    __slots__ = ("handle", "nbytes", "kind", "double", "device", "stream", "work", "lock", "exec")

    def __init__(self, handle, nbytes, kind, double, device, exec_fn):
        self.handle, self.nbytes, self.kind, self.double, self.device = handle, nbytes, kind, double, device
        self.stream = self.work = None
        self.lock = threading.Lock()
        self.exec = exec_fn


def _arr(vals):
    return None if vals is None else (ctypes.c_longlong * len(vals))(*vals)


def make_plan(key) -> Plan:
    """Create the cuFFT plan of a cache key: (device, double, Step.key())."""
    dev, double, (kind, n, inembed, istride, idist, onembed, ostride, odist, batch) = key
    lib = _lib()
    h = ctypes.c_int(0)
    _check(lib.create(ctypes.byref(h)), "cufftCreate")
    handle = h.value
    try:
        _check(lib.set_auto_allocation(handle, 0), "cufftSetAutoAllocation")
        ws = ctypes.c_size_t(0)
        args = (handle, len(n), _arr(n), _arr(inembed), istride, idist, _arr(onembed), ostride, odist,
                _TYPES[(kind, double)], batch, ctypes.byref(ws))
        status = lib.make_plan_many64(*args)
        if status == 2:   # CUFFT_ALLOC_FAILED: give the pool's cached memory back, once
            pool = _memory.pools().get(dev)
            if pool is not None:
                pool.empty_cache()
            status = lib.make_plan_many64(*args)
        _check(status, f"cufftMakePlanMany64 ({kind}, n={n}, batch={batch})")
    except BaseException:
        lib.destroy(handle)
        raise
    return Plan(handle, int(ws.value), kind, double, dev, lib.execs[(kind, double)])


def destroy_plan(plan: Plan):
    """Destroy ``plan`` (after any call holding it has enqueued its work)."""
    with plan.lock:
        h, plan.handle = plan.handle, 0
    if h:
        cp = _lib().cp
        with cp.cuda.Device(plan.device):
            _lib().destroy(h)


_caches: dict = {}          # device -> PlanCache
_caches_lock = threading.Lock()
_settings = {"max_size": DEFAULT_MAX_SIZE, "max_memory": None}   # for caches created later


def cache(dev: int) -> PlanCache:
    """The plan cache of device ``dev`` (created on first use)."""
    c = _caches.get(dev)
    if c is None:
        with _caches_lock:
            c = _caches.get(dev)
            if c is None:
                c = _caches[dev] = PlanCache(make_plan, destroy_plan, _settings["max_size"],
                                             _settings["max_memory"])
    return c


def caches() -> dict:
    """The caches created so far, ``{device: PlanCache}`` (a copy)."""
    return dict(_caches)


def set_default_limits(max_size=None, max_memory=False):
    """Bounds for the caches of devices that have none yet (``max_memory=False``: unchanged)."""
    if max_size is not None:
        _settings["max_size"] = max(int(max_size), 0)
    if max_memory is not False:
        _settings["max_memory"] = max_memory


# ----------------------------------------------------------------------------- execution

_cp = None
_multi = None


def execute(step, double: bool, forward: bool, in_ptr: int, out_ptr: int, dev: int) -> None:
    """Run ``step`` (gparray/_engine/_fft_plan.py) on the current stream of device ``dev``:
    input at ``in_ptr``, output at ``out_ptr`` (equal for an in-place c2c step);
    ``double``: double precision; ``forward``: the direction of a c2c step."""
    global _cp, _multi
    if _cp is None:
        _cp = _backend.cupy()
        _multi = _backend.device_count() > 1
    if _multi and _cp.cuda.runtime.getDevice() != dev:
        with _cp.cuda.Device(dev):
            _execute(step, double, forward, in_ptr, out_ptr, dev)
    else:
        _execute(step, double, forward, in_ptr, out_ptr, dev)


def _execute(step, double, forward, in_ptr, out_ptr, dev):
    c = _caches.get(dev)
    if c is None:
        c = cache(dev)
    plan, cached = c.get((dev, double, step.key()))
    stream = _cp.cuda.get_current_stream().ptr
    work = _memory.alloc(plan.nbytes, dev, stream) if plan.nbytes else None
    kind = step.kind
    isz, osz = _ITEMSIZE[(kind, double)]
    try:
        with plan.lock:
            h = plan.handle
            if not h:    # destroyed by another thread's eviction since the lookup: run once more
                plan, cached = make_plan((dev, double, step.key())), False
                h = plan.handle
            lib = None
            if plan.stream != stream:
                lib = _lib()
                _check(lib.set_stream(h, stream), "cufftSetStream")
                plan.stream = stream
            wptr = work.ptr if work is not None else 0
            if plan.work != wptr:
                lib = lib or _lib()
                _check(lib.set_work_area(h, wptr or None), "cufftSetWorkArea")
                plan.work = wptr
            ex = plan.exec
            if not step.loops:
                if kind == C2C:
                    ex(h, in_ptr, out_ptr, FORWARD if forward else INVERSE)
                else:
                    ex(h, in_ptr, out_ptr)
            else:
                for oi, oo in _loop_offsets(step.loops):
                    if kind == C2C:
                        ex(h, in_ptr + oi * isz, out_ptr + oo * osz, FORWARD if forward else INVERSE)
                    else:
                        ex(h, in_ptr + oi * isz, out_ptr + oo * osz)
    finally:
        if not cached:
            destroy_plan(plan)
        del work   # back to the pool on this stream, after the enqueued calls


def _loop_offsets(loops):
    """(input, output) element offsets of every host-loop iteration."""
    offs = [(0, 0)]
    for count, si, so in loops:
        offs = [(i + k * si, o + k * so) for i, o in offs for k in range(count)]
    return offs


def clear(dev=None):
    """Destroy the cached plans of ``dev`` (every device when None)."""
    for d, c in caches().items():
        if dev is None or d == dev:
            c.clear()


__all__ = ["PlanCache", "Plan", "CuFFTError", "execute", "cache", "caches", "clear", "make_plan",
           "destroy_plan", "set_default_limits", "FORWARD", "INVERSE"]
