"""cuFFT on gparray memory: plans, the plan caches, execution of the planner's steps
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
auto-allocation off. A plan keeps its work area (a block of the device's pool) and the
stream it is bound to; both are set on the handle once, when the plan is first used on a
stream. When a plan is used on another stream, its work area goes back to the pool on the
old stream (stream-ordered: after the calls queued there) and a new one is taken on the new
stream, so no two streams ever share a work area. A repeated call on one stream is thus one
cache lookup and the cuFFT execution: no allocation, no ``cufftSet*`` call. A plan that is
not kept (caching off, or larger than the memory bound) gets its work area for the one call.

Threads: a thread's first transform on a device binds the device's primary context to the
thread (cuFFT needs one current and does not bind it: in a new thread its executions fail
with CUFFT_EXEC_FAILED). cuFFT plans must not be used by two host threads (cuFFT's
documented thread safety covers different plans only), so each thread has its own caches,
one LRU per device, bounded by a number of plans (``GPARRAY_FFT_PLAN_CACHE``, default 256;
0 turns caching off) and optionally by the sum of the plans' work-area sizes (memory the
cached plans hold), settable through ``gparray.fft``'s ``set_plan_cache_max_size`` /
``set_plan_cache_max_memory``: the bounds are per thread and device. A change of the
bounds and ``clear_plan_cache`` apply to the calling thread's caches at once and to other
threads' caches at their next transform (a cache is only ever touched by its own thread; a
thread's plans are destroyed when it ends).
``PlanCache`` is pure bookkeeping over an injected factory (CPU-tested).

Rejected layouts: cuFFT may refuse an advanced layout (CUFFT_INVALID_VALUE, _SIZE, ...);
``rejected(exc)`` says whether a failure is of that kind, and the transforms then plan the
same transform again in basic layouts (``_fft_plan.fallback``: copies with the transformed
axes innermost) and run that instead.
"""
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections import OrderedDict

from .._core import _backend
from .. import _memory
from .._kernels import _registry
from .._native import claunch as _claunch
from . import _launch, _loaded_libs
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
# The answers of cuFFT to a layout it does not take (at plan creation or at execution).
REJECTIONS = frozenset({4, 8, 9, 14, 16})


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


def rejected(exc) -> bool:
    """Whether ``exc`` is cuFFT refusing a layout: a CuFFTError (ours, or CuPy's from an
    execution) whose status is in REJECTIONS."""
    if type(exc).__name__ != "CuFFTError":
        return False
    status = getattr(exc, "status", None)
    if status is None:
        status = getattr(exc, "result", None)     # CuPy's CuFFTError
    return status in REJECTIONS


# ----------------------------------------------------------------------------- the plan cache

class PlanCache:
    """An LRU of plans keyed by anything hashable, bounded by a count (``max_size``; 0:
    nothing is kept) and optionally by the sum of the plans' ``nbytes`` (``max_memory``,
    None: no bound). ``make(key) -> plan`` builds one (the plan has ``nbytes``),
    ``destroy(plan)`` releases one. ``get`` returns (plan, cached): a plan that cannot be
    kept (caching off, or larger than the memory bound alone) is the caller's to destroy
    after use. A cache belongs to one thread (no locking). ``epoch`` and ``cleared`` are
    the engine's bookkeeping of the settings it last applied."""

    def __init__(self, make, destroy, max_size: int = DEFAULT_MAX_SIZE, max_memory=None):
        self._make, self._destroy = make, destroy
        self._plans: OrderedDict = OrderedDict()
        self.max_size = max(int(max_size), 0)
        self.max_memory = None if max_memory is None else max(int(max_memory), 0)
        self.memory = 0
        self.hits = self.misses = self.evictions = 0
        self.epoch = self.cleared = 0
        self.device = None

    def __len__(self) -> int:
        return len(self._plans)

    def keys(self) -> list:
        """The keys, least recently used first."""
        return list(self._plans)

    def get(self, key):
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
        if max_size is not None:
            self.max_size = max(int(max_size), 0)
        if max_memory is not False:
            self.max_memory = None if max_memory is None else max(int(max_memory), 0)
        self._trim()

    def clear(self, keep=None):
        """Destroy every plan (but the one under key ``keep``); the counters stay."""
        kept = self._plans.pop(keep, None) if keep is not None else None
        doomed = list(self._plans.values())
        self._plans.clear()
        self.memory = 0
        if kept is not None:
            self._plans[keep] = kept
            self.memory = kept.nbytes
        for plan in doomed:
            self._destroy(plan)

    def info(self) -> dict:
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
        # the executions' addresses, for the compiled repeat calls (direct_call)
        self.exec_addrs = {k: ctypes.cast(getattr(lib, "cufftE" + name[1:]), vp).value
                           for k, name in _EXEC_NAMES.items()}


def _library(mod):
    """A ctypes handle whose symbols are those of the libcufft CuPy's bindings call: CuPy's
    extension module (its dependencies are searched too), else the libcufft mapped into the
    process, else the one cuda-pathfinder loads."""
    paths = [getattr(mod, "__file__", None)] + _loaded_libs.mapped("libcufft.so")
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
    """One cuFFT plan (handle) on a device: the work area size it needs (``nbytes``), and
    what is set on the handle: the stream it is bound to and the pool block of its work area
    (allocated on that stream; None before the first use or when ``nbytes`` is 0)."""

    __slots__ = ("handle", "nbytes", "kind", "double", "device", "stream", "work", "exec")

    def __init__(self, handle, nbytes, kind, double, device, exec_fn):
        self.handle, self.nbytes, self.kind, self.double, self.device = handle, nbytes, kind, double, device
        self.stream = self.work = None
        self.exec = exec_fn


def _arr(vals):
    return None if vals is None else (ctypes.c_longlong * len(vals))(*vals)


def make_plan(dev: int, key) -> Plan:
    """Create the cuFFT plan of a cache key, (double, Step.key()), on device ``dev`` (the
    current device)."""
    double, (kind, n, inembed, istride, idist, onembed, ostride, odist, batch) = key
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
        _check(status, f"cufftMakePlanMany64 ({kind}, n={n}, inembed={inembed}, istride={istride}, "
                       f"idist={idist}, onembed={onembed}, ostride={ostride}, odist={odist}, batch={batch})")
    except BaseException:
        lib.destroy(handle)
        raise
    return Plan(handle, int(ws.value), kind, double, dev, lib.execs[(kind, double)])


def destroy_plan(plan: Plan):
    """Destroy ``plan`` (after its calls are queued) and give its work area back to the pool
    (on the stream it was used on, so after those calls)."""
    h, plan.handle = plan.handle, 0
    plan.work = None
    if h:
        cp = _lib().cp
        with cp.cuda.Device(plan.device):
            _lib().destroy(h)


def _bind(plan: Plan, stream: int):
    """Set ``stream`` on ``plan`` and give it a work area allocated on that stream (the old
    one goes back to the pool on the old stream)."""
    lib = _lib()
    plan.stream = None        # until both are set (a failure leaves the plan to be bound again)
    if plan.nbytes:
        plan.work = None
        work = _memory.alloc(plan.nbytes, plan.device, stream)
        _check(lib.set_work_area(plan.handle, work.ptr), "cufftSetWorkArea")
        plan.work = work
    _check(lib.set_stream(plan.handle, stream), "cufftSetStream")
    plan.stream = stream


# ----------------------------------------------------------------------------- the caches

class _Local(threading.local):
    def __init__(self):
        self.caches = {}          # device -> this thread's PlanCache


_local = _Local()
_all = weakref.WeakSet()          # every thread's caches (for get_plan_cache_info's "threads")
_state_lock = threading.Lock()
# The settings, applied by each cache at its next use once ``_epoch`` moved: the bounds per
# device (None: the default for devices without their own), and how many times the caches
# of a device (None: of every device) were asked to clear.
_epoch = [1]
_limits = {"max_size": {None: DEFAULT_MAX_SIZE}, "max_memory": {None: None}}
_cleared: dict = {}


def limit(name: str, dev: int):
    """The bound ``name`` ("max_size" or "max_memory") of the caches of device ``dev``."""
    d = _limits[name]
    return d.get(dev, d[None])


def _cleared_count(dev) -> int:
    return _cleared.get(None, 0) + _cleared.get(dev, 0)


def _sync(c: PlanCache, dev: int):
    epoch = _epoch[0]            # read first: a change made meanwhile moves it again
    n = _cleared_count(dev)
    if n != c.cleared:
        c.clear()
        c.cleared = n
    c.set_limits(max_size=limit("max_size", dev), max_memory=limit("max_memory", dev))
    c.epoch = epoch


def _destroy_all(plans):
    """A finalizer: destroy the plans of a cache whose thread has ended."""
    try:
        for plan in list(plans.values()):
            destroy_plan(plan)
        plans.clear()
    except Exception:    # pragma: no cover - interpreter shutdown
        pass


def _bind_context(dev: int):
    """Make device ``dev``'s primary context current on this host thread. A new thread has
    none until some runtime call binds it, and cuFFT does not bind it itself: its plans are
    made, but every execution answers CUFFT_EXEC_FAILED (plain CuPy FFTs in a new thread
    fail the same way). The thread's current device is restored (a query of the cache of
    another device must not change it); dev's context stays initialized for the thread, and
    its plans are made and executed with dev current (``Device(dev)`` guards)."""
    with _registry.in_context(dev):
        pass


def cache(dev: int) -> PlanCache:
    """This thread's plan cache of device ``dev`` (created on first use, which also binds
    the device's context to the thread; up to date with the settings)."""
    caches = _local.caches
    c = caches.get(dev)
    if c is None:
        _bind_context(dev)
        c = PlanCache(lambda key: make_plan(dev, key), lambda plan: destroy_plan(plan), limit("max_size", dev),
                      limit("max_memory", dev))
        c.device = dev
        c.cleared = _cleared_count(dev)
        caches[dev] = c
        with _state_lock:
            _all.add(c)
        weakref.finalize(c, _destroy_all, c._plans).atexit = False
    if c.epoch != _epoch[0]:
        _sync(c, dev)
    return c


def caches() -> dict:
    """This thread's caches created so far, ``{device: PlanCache}`` (a copy)."""
    return dict(_local.caches)


def thread_count(dev: int) -> int:
    """How many live threads have a plan cache on device ``dev``."""
    with _state_lock:
        return sum(1 for c in _all if c.device == dev)


def _changed():
    """Move the epoch and bring this thread's caches up to date at once."""
    _epoch[0] += 1
    for dev, c in list(_local.caches.items()):
        _sync(c, dev)


def set_limits(dev=None, max_size=None, max_memory=False):
    """New bounds for the caches of device ``dev`` (None: of every device, also those
    whose caches are created later), for every thread; ``max_size=None`` /
    ``max_memory=False``: unchanged (``max_memory=None``: no memory bound)."""
    new = {}
    if max_size is not None:
        new["max_size"] = max(int(max_size), 0)
    if max_memory is not False:
        new["max_memory"] = None if max_memory is None else max(int(max_memory), 0)
    with _state_lock:
        for name, v in new.items():
            if dev is None:
                _limits[name] = {None: v}
            else:
                _limits[name] = {**_limits[name], dev: v}
        _changed()


def clear(dev=None):
    """Destroy the cached plans of device ``dev`` (every device when None): this thread's
    at once, other threads' at their next transform."""
    with _state_lock:
        _cleared[dev] = _cleared.get(dev, 0) + 1
        _changed()


# ----------------------------------------------------------------------------- execution

_cp = None
_multi = None
_stream_of = None


def _init():
    global _cp, _multi, _stream_of
    cp = _backend.cupy()
    _multi = _backend.device_count() > 1
    _stream_of = cp.cuda.get_current_stream
    _cp = cp


def execute(step, double: bool, forward: bool, in_ptr: int, out_ptr: int, dev: int) -> None:
    """Run ``step`` (gparray/_engine/_fft_plan.py) on the current stream of device ``dev``:
    input at ``in_ptr``, output at ``out_ptr`` (equal for an in-place c2c step);
    ``double``: double precision; ``forward``: the direction of a c2c step."""
    if _cp is None:
        _init()
    if _multi and _cp.cuda.runtime.getDevice() != dev:
        with _cp.cuda.Device(dev):
            _execute(step, double, forward, in_ptr, out_ptr, dev)
        return
    c = _local.caches.get(dev)
    if c is None or c.epoch != _epoch[0]:
        c = cache(dev)
    key = step.plan_key(double)
    plan = c._plans.get(key)
    if plan is None or plan.stream != _stream_of().ptr:     # a miss, or a new stream
        _execute(step, double, forward, in_ptr, out_ptr, dev)
        return
    c._plans.move_to_end(key)      # PlanCache.get's hit, inline
    c.hits += 1
    if step.loops:
        _run_loops(plan, step, double, forward, in_ptr, out_ptr)
    elif step.kind == C2C:
        plan.exec(plan.handle, in_ptr, out_ptr, FORWARD if forward else INVERSE)
    else:
        plan.exec(plan.handle, in_ptr, out_ptr)


def ready_plan(step, double: bool, dev: int):
    """The plan of ``step`` that ``execute`` would run now without any other work: cached on
    this thread for device ``dev`` (the current device), bound to the current stream, one
    cuFFT call (no host loop); the hit is counted and the plan made most recently used, as
    ``execute`` does. None otherwise (several devices, a profile active, a miss, another
    stream): the caller then takes ``execute``. The transforms' repeat calls use it to call
    ``plan.exec`` themselves."""
    if _multi or _cp is None or _launch._hook is not None or step.loops:
        return None
    c = _local.caches.get(dev)
    if c is None or c.epoch != _epoch[0]:
        return None
    key = step.plan_key(double)
    plan = c._plans.get(key)
    if plan is None or plan.stream != _stream_of().ptr:
        return None
    c._plans.move_to_end(key)
    c.hits += 1
    return plan


def direct_call(step, double: bool, forward: bool, nbytes: int, shape: tuple, strides: tuple, contig: bool,
                dtype, device):
    """The compiled form of a repeat call that is ``step``'s one execution into a new array
    of ``shape``/``strides`` (bytes; ``contig``: C order) and ``nbytes`` on ``device``
    (gparray/_native/_claunch_fft.c: FftCall, called with the input and the handle of the
    plan ``ready_plan`` gives), or None: no compiled extension, no pool on the device, a
    host loop of executions, or libcufft not loadable. The compiled path must be configured
    (the namespace's job) before the call is made, else FftCall answers None."""
    call_type = getattr(_claunch, "FftCall", None)
    pool = _memory._pools.get(device._id)
    if call_type is None or pool is None or step.loops or nbytes <= 0:
        return None
    try:
        addr = _lib().exec_addrs[(step.kind, double)]
    except Exception:
        return None
    direction = (FORWARD if forward else INVERSE) if step.kind == C2C else 0
    return call_type(addr, direction, nbytes, shape, strides, contig, dtype, device, pool)


def _execute(step, double, forward, in_ptr, out_ptr, dev):
    """``execute`` on the current device ``dev``, through the cache's general path."""
    c = cache(dev)
    key = step.plan_key(double)
    plan, cached = c.get(key)
    try:
        stream = _stream_of().ptr
        if plan.stream != stream:
            try:
                _bind(plan, stream)
            except _memory.OutOfMemoryError:
                # the work areas this thread's other plans of the device hold: give them
                # back, then once more
                c.clear(keep=key)
                _bind(plan, stream)
        if step.loops:
            _run_loops(plan, step, double, forward, in_ptr, out_ptr)
        elif step.kind == C2C:
            plan.exec(plan.handle, in_ptr, out_ptr, FORWARD if forward else INVERSE)
        else:
            plan.exec(plan.handle, in_ptr, out_ptr)
    finally:
        if not cached:
            destroy_plan(plan)


def _run_loops(plan, step, double, forward, in_ptr, out_ptr):
    isz, osz = _ITEMSIZE[(step.kind, double)]
    ex, h = plan.exec, plan.handle
    for oi, oo in _loop_offsets(step.loops):
        if step.kind == C2C:
            ex(h, in_ptr + oi * isz, out_ptr + oo * osz, FORWARD if forward else INVERSE)
        else:
            ex(h, in_ptr + oi * isz, out_ptr + oo * osz)


def _loop_offsets(loops):
    """(input, output) element offsets of every host-loop iteration."""
    offs = [(0, 0)]
    for count, si, so in loops:
        offs = [(i + k * si, o + k * so) for i, o in offs for k in range(count)]
    return offs


__all__ = ["PlanCache", "Plan", "CuFFTError", "REJECTIONS", "rejected", "execute", "cache", "caches", "clear",
           "set_limits", "limit", "thread_count", "make_plan", "destroy_plan", "direct_call", "FORWARD", "INVERSE"]
