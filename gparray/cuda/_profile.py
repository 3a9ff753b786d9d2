"""``gparray.cuda.profile()``: records of the kernel launches, copies and library calls gparray
makes, timed with CUDA events, and NVTX ranges around them.

Where the hooks sit (each None or unchanged while nothing is profiled, so the launch path
costs one global test; docs/architecture.md, "Profiling"):

* ``gparray/_engine/_launch.py``: ``run`` (every launch of gparray's own kernels) calls
  ``_launch._hook`` when it is set; ``copy_span`` (around each memcpy and memset gparray
  queues: ``gparray/_engine/_transfer.py`` and the engines' small reads) returns
  ``_launch._copy_hook``'s context manager when it is set.
* ``gparray/cuda/_user_kernels.py``: ``UserKernel`` launches call ``_user_kernels._hook``.
* Library calls: the engine functions that call cuBLAS, cuSOLVER and cuFFT (``_blas.launch``,
  the ``_solver`` routines, ``_geev.geev``, ``_fft.execute``) are replaced by recording
  wrappers on their modules while a profile is active (their callers look them up there).
* The compiled elementwise fast path (``gparray/_native/_claunch_ops.c``) makes its launches
  in C and records them itself while the calling thread has a profiling state
  (``_claunch.set_profile``, set by ``_sync_thread``; ``gparray/_native/_claunch_prof.c``).
  A thread whose profiles want NVTX ranges gets the state False: its calls take the Python
  path through ``run``. ``GPARRAY_NVTX=1`` configures the compiled path off process-wide.

The first profile entered in the process installs all of this and the last one to exit
removes it (a count under a lock). Records are per thread: a profile records the work of
the thread that entered it (other threads' launches pass through the hooks unrecorded).
Each launch appends one tuple to the thread's sink, cheap to make; the sink becomes
``ProfileRecord`` objects when a profile's records are read or it exits (``_materialize``).
Profiles nest: every profile active on the thread gets each record (the same object).
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings

from .._core import _backend
from .._engine import _launch
from .._core import _faults
from .._kernels import _launcher
from . import _profile_frames as _frames
from . import _profile_libs as _libs
from . import _user_kernels
# (the CPU tier reads these here)
from ._profile_libs import _gemm_name, _last_dev, _solver_name  # noqa: F401
from ._profile_report import ProfileRecord
from ._profile_report import table as _table
from ._profile_report import to_json as _to_json

NVTX_DOMAIN = "gparray"
ENV_NVTX = "GPARRAY_NVTX"
EVENT_POOL_MAX = 4096     # CUDA events kept for reuse per device after a profile exits

_local = threading.local()   # this thread's .stack (active profiles, innermost last), .sink (their pending
                             # records, see _materialize), .nv (one wants NVTX ranges), .lib (in a library call)
_lock = threading.Lock()
_active = 0                  # profiles active in the process (+1 for GPARRAY_NVTX=1)
_saved = None                # what the installation replaced
_installs = 0                # installations so far in the process (the bench's baseline checks it)
_nvtx_env = False            # GPARRAY_NVTX=1: NVTX ranges on every thread, without records
_nvtx = None                 # the nvtx module, imported when asked for


class _Cuda:
    """The CUDA calls of the profiler, through CuPy's runtime bindings (the CPU tier replaces
    the module's ``_cuda`` with a fake). Events are pooled per device."""

    def __init__(self):
        self.free: dict = {}   # device id -> [event handle]

    @staticmethod
    def rt():
        return _backend.cupy().cuda.runtime

    def device(self) -> int:
        return self.rt().getDevice()

    def on_device(self, dev: int):
        """A context making ``dev`` current; None when one device is visible (nothing to do)."""
        if _launch._cp is None:
            _launch._init()
        return _backend.on_device(dev) if _launch._multi else None

    def stream(self) -> int:
        """The current stream of the current device."""
        if _launch._cp is None:
            _launch._init()
        return _launch._stream().ptr

    def event(self, dev: int) -> int:
        """A timing event of the current device ``dev``."""
        try:
            return self.free[dev].pop()
        except (KeyError, IndexError):
            return self.rt().eventCreate()

    def record(self, ev: int, stream: int) -> None:
        """Record ``ev`` on ``stream``; the first call puts CuPy's binding in its place on
        this object (later calls run no Python frame)."""
        f = self.record = self.rt().eventRecord
        f(ev, stream)

    def recorder(self):
        """What records an event for the compiled fast path: CuPy's binding once a device is
        usable (else this object's ``record``, which finds out)."""
        return self.rt().eventRecord if _backend.device_count() > 0 else self.record

    def synchronize(self, ev: int) -> None:
        self.rt().eventSynchronize(ev)

    def elapsed(self, ev0: int, ev1: int) -> float:
        return self.rt().eventElapsedTime(ev0, ev1)

    def release(self, dev: int, ev: int) -> None:
        pool = self.free.setdefault(dev, [])
        if len(pool) < EVENT_POOL_MAX:
            pool.append(ev)
        else:
            self.rt().eventDestroy(ev)


_cuda = _Cuda()


def _short(name: str) -> str:
    """A kernel's template name without its arguments (NVTX messages)."""
    return name.partition("<")[0]


def _import_nvtx(where: str):
    global _nvtx
    if _nvtx is None:
        try:
            import nvtx
        except ImportError:
            raise ModuleNotFoundError(f"{where}: NVTX ranges need the nvtx package (pip install nvtx)") from None
        _nvtx = nvtx
    return _nvtx


# ----------------------------------------------------------------------------- records
# A launch, copy or library call is appended to its thread's sink (``_local.sink``, shared by
# the thread's active profiles) as a tuple, made into a ProfileRecord when a profile reads its
# records or exits (``_materialize``):
#   (function, kind, family, name, grid, block, shared_mem, nbytes, device, stream, ev0, ev1)
#   from the Python path, and from the compiled fast path (gparray/_native/_claunch_prof.c)
#   (function, "family: name", grid x, block x, nbytes, device, stream, ev0, ev1).
_kernel_names: dict = {}   # "family: name" -> (family, name)


def _split(kname: str, default_family: str):
    """(family, name) of a Kernel's name ``"family: name"``."""
    fn = _kernel_names.get(kname)
    if fn is None:
        family, sep, name = kname.partition(": ")
        fn = (family, name) if sep else (default_family, kname)
        if len(_kernel_names) < 4096:
            _kernel_names[kname] = fn
    return fn


def _materialize(sink: list, start: int, thread: int) -> list:
    """Make the entries of ``sink`` from ``start`` on ProfileRecords (in place: every profile
    of the thread shares them); returns them."""
    for i in range(start, len(sink)):
        t = sink[i]
        if type(t) is tuple:
            if len(t) == 9:   # the compiled fast path
                function, kname, g, b, nbytes, dev, s, ev0, ev1 = t
                family, name = _split(kname, "kernel")
                r = ProfileRecord(function, "kernel", family, name, (g, 1, 1), (b, 1, 1), 0, nbytes, dev, s, thread)
            else:
                r = ProfileRecord(*t[:10], thread)
                ev0, ev1 = t[10], t[11]
            r._ev = (ev0, ev1)
            sink[i] = r
    return sink[start:]


def _run_recorded(sink, kind, family, name, grid, block, smem, dev, s, frame, args, launch, *largs):
    """``launch(*largs)`` between two events on stream ``s`` (a record in ``sink``; None: no
    profile on this thread, NVTX only), inside an NVTX range when one is wanted."""
    function, nbytes = _frames.walk(frame, sink is not None, args)
    nv = _nvtx_env or getattr(_local, "nv", False)
    if nv:
        _nvtx.push_range(f"{function}: {_short(name)}", domain=NVTX_DOMAIN)
    try:
        if sink is None:
            launch(*largs)
            return
        ev0 = _cuda.event(dev)
        try:
            _cuda.record(ev0, s)
            launch(*largs)
        except BaseException:
            _cuda.release(dev, ev0)
            raise
        ev1 = _cuda.event(dev)
        _cuda.record(ev1, s)
        sink.append((function, kind, family, name, grid, block, smem, nbytes, dev, s, ev0, ev1))
    finally:
        if nv:
            _nvtx.pop_range(domain=NVTX_DOMAIN)


class _Span:
    """Context manager around one copy or library call: NVTX range, start and end events on
    its stream, and at the end its entry in the thread's sink."""

    __slots__ = ("sink", "kind", "family", "name", "dev", "s", "nbytes", "frame", "args", "function", "nv",
                 "ev0")

    def __init__(self, sink, kind, family, name, dev, s, nbytes, frame, args=None):
        self.sink, self.kind, self.family, self.name = sink, kind, family, name
        self.dev, self.s, self.nbytes, self.frame, self.args, self.ev0 = dev, s, nbytes, frame, args, None

    def __enter__(self):
        f = self.frame if self.frame is not None else sys._getframe(1)
        self.frame = None
        sink = self.sink
        self.nv = _nvtx_env or getattr(_local, "nv", False)
        self.function, nbytes = _frames.walk(f, sink is not None and self.nbytes is None, self.args)
        self.args = None
        if self.nbytes is None:
            self.nbytes = nbytes
        if self.nv:
            _nvtx.push_range(f"{self.function}: {_short(self.name)}", domain=NVTX_DOMAIN)
        if sink is not None:
            ev0 = _cuda.event(self.dev)
            try:
                _cuda.record(ev0, self.s)
            except BaseException:
                _cuda.release(self.dev, ev0)
                if self.nv:
                    _nvtx.pop_range(domain=NVTX_DOMAIN)
                raise
            self.ev0 = ev0
        return self

    def __exit__(self, et, exc, tb):
        try:
            ev0 = self.ev0
            if ev0 is not None:
                self.ev0 = None
                if et is not None:
                    _cuda.release(self.dev, ev0)
                    return False
                ev1 = _cuda.event(self.dev)
                _cuda.record(ev1, self.s)
                self.sink.append((self.function, self.kind, self.family, self.name, None, None, 0, self.nbytes,
                                  self.dev, self.s, ev0, ev1))
        finally:
            if self.nv:
                _nvtx.pop_range(domain=NVTX_DOMAIN)
        return False


# ----------------------------------------------------------------------------- the hooks
def _kernel_hook(k, device_id, grid, args, shared_mem, block):
    """``_launch._hook``: a launch of gparray's own kernels (see ``_launch.run``)."""
    sink = getattr(_local, "sink", None)
    if sink is None and not _nvtx_env:
        _launch.run_plain(k, device_id, grid, args, shared_mem, block)
        return
    family, name = _split(k.name, "kernel")
    ctx = _cuda.on_device(device_id)
    if ctx is None:
        s = _cuda.stream()
        _run_recorded(sink, "kernel", family, name, (grid, 1, 1), (block, 1, 1), shared_mem, device_id, s,
                      sys._getframe(1), args, k.launch, grid, block, args, shared_mem, s)
    else:
        with ctx:
            s = _cuda.stream()
            _run_recorded(sink, "kernel", family, name, (grid, 1, 1), (block, 1, 1), shared_mem, device_id, s,
                          sys._getframe(1), args, k.launch, grid, block, args, shared_mem, s)


def _user_hook(k, g, b, vals, smem, sptr):
    """``_user_kernels._hook``: a user kernel's launch (its device is the current one)."""
    sink = getattr(_local, "sink", None)
    if sink is None and not _nvtx_env:
        _user_launch(k, g, b, vals, smem, sptr)
        return
    family, name = _split(k.name, "user")
    _run_recorded(sink, "kernel", family, name, g, b, smem, _cuda.device(), sptr, sys._getframe(1), vals,
                  _user_launch, k, g, b, vals, smem, sptr)


def _user_launch(k, g, b, vals, smem, sptr):
    if g[1] == g[2] == b[1] == b[2] == 1:
        k.launch(g[0], b[0], vals, smem, sptr)
    else:
        k.launch3(g, b, vals, smem, sptr)


def _copy_hook(what, nbytes, device_id, stream_ptr):
    """``_launch._copy_hook``: the span of one copy or memset (see ``_launch.copy_span``)."""
    sink = getattr(_local, "sink", None)
    if sink is None and not _nvtx_env:
        return _launch._NO_SPAN
    return _Span(sink, "copy", "transfer", what, device_id, stream_ptr, nbytes, None)


def _library(orig, family: str, name_of, dev_of, stream_of=None):
    """A recording wrapper of engine function ``orig`` that calls a library: one record per
    call (library calls made inside it are not recorded again; gparray kernels are)."""

    def wrapper(*a, **kw):
        sink = getattr(_local, "sink", None)
        if (sink is None and not _nvtx_env) or getattr(_local, "lib", False):
            return orig(*a, **kw)
        dev = dev_of(a, kw)
        with _on_device(dev):
            s = _cuda.stream() if stream_of is None else stream_of(a, kw)
            span = _Span(sink, "library", family, name_of(a, kw), dev, s, None, sys._getframe(1), a)
            span.__enter__()
        _local.lib = True
        ok = False
        try:
            out = orig(*a, **kw)
            ok = True
            return out
        finally:
            _local.lib = False
            with _on_device(dev):
                span.__exit__(None if ok else Exception, None, None)

    wrapper.__wrapped__ = orig
    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


def _on_device(dev):
    ctx = _cuda.on_device(dev)
    return _launch._NO_SPAN if ctx is None else ctx


def _wrappers():
    """[(module name, attribute, wrapper factory)] of the library calls recorded."""
    return _libs.wrappers(_library)


# ----------------------------------------------------------------------------- installation
def _bypass_fast_path():
    """Configure the compiled elementwise path off; returns what ``_restore_fast_path``
    needs (None: no compiled path)."""
    from .._native import claunch as _claunch

    if _claunch is None:
        return None
    from .._array import _ops

    was = _ops._configured
    _ops._configured = True   # a combination learnt meanwhile must not configure it on again
    _claunch.configure(None, None)
    return was


def _restore_fast_path(was) -> None:
    if was is None:
        return
    from .._array import _ops

    if was:
        _ops._configure()
    else:
        _ops._configured = False   # the next learnt combination configures it, as before


_NOT_BYPASSED = object()


def _install() -> dict:
    global _installs
    _installs += 1
    saved = {"fast": _NOT_BYPASSED, "libs": []}
    try:
        for modname, attr, make in _wrappers():
            mod = importlib.import_module(modname)
            orig = getattr(mod, attr)
            w = make(orig)
            setattr(mod, attr, w)
            saved["libs"].append((mod, attr, orig, w))
    except BaseException:
        _uninstall(saved)
        raise
    _launch._copy_hook = _copy_hook
    _user_kernels._hook = _user_hook
    _launch._hook = _kernel_hook
    return saved


def _uninstall(saved: dict) -> None:
    _launch._hook = None
    _launch._copy_hook = None
    _user_kernels._hook = None
    for mod, attr, orig, w in saved["libs"]:
        if getattr(mod, attr, None) is w:   # not replaced by someone else meanwhile
            setattr(mod, attr, orig)
    if saved["fast"] is not _NOT_BYPASSED:
        _restore_fast_path(saved["fast"])


def _activate(bypass: bool = False) -> None:
    """Count one more active profile (the first installs the hooks); ``bypass``: configure
    the compiled elementwise path off until the last one exits (``GPARRAY_NVTX=1``)."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = _install()
        if bypass and _saved["fast"] is _NOT_BYPASSED:
            _saved["fast"] = _bypass_fast_path()
        _active += 1


def _deactivate() -> None:
    global _active, _saved
    with _lock:
        _active -= 1
        if _active == 0:
            saved, _saved = _saved, None
            _uninstall(saved)


def enable_env_nvtx() -> bool:
    """``GPARRAY_NVTX=1`` (read when ``gparray.cuda`` is imported): NVTX ranges around every
    launch, copy and library call of every thread, for the rest of the process (the compiled
    elementwise path stays off). Without the nvtx package: a RuntimeWarning and False."""
    global _nvtx_env
    if _nvtx_env:
        return True
    try:
        _import_nvtx(ENV_NVTX)
    except ModuleNotFoundError as exc:
        warnings.warn(f"{exc}; {ENV_NVTX}=1 is ignored", RuntimeWarning, stacklevel=2)
        return False
    _activate(bypass=True)
    _nvtx_env = True
    return True


def env_nvtx_requested() -> bool:
    """True when ``GPARRAY_NVTX`` asks for NVTX ranges."""
    return os.environ.get(ENV_NVTX, "").strip().lower() not in ("", "0", "false", "no", "off")


def _sync_thread(stack: list) -> None:
    """After this thread's stack of active profiles changed: its NVTX flag, and the compiled
    fast path's profiling state of the thread (gparray/_native/_claunch_prof.c): none
    without a profile, the Python path where NVTX ranges are wanted, else recording into
    the thread's sink with the profiler's events."""
    nv = any(p.nvtx for p in stack)
    _local.nv = nv
    c = _launcher._claunch
    if c is None:
        return
    if not stack:
        c.set_profile(None)
    elif nv or _nvtx_env:
        c.set_profile(False)
    else:
        free = getattr(_cuda, "free", None)
        recorder = getattr(_cuda, "recorder", None)
        c.set_profile((_local.sink, free if isinstance(free, dict) else {}, _cuda.event, _cuda.release,
                       _cuda.record if recorder is None else recorder(), _frames._codes, _frames.c_label))


# ----------------------------------------------------------------------------- reading events
def _resolve(records) -> None:
    """Set ``time_ms`` of the records not timed yet: one wait for the last end event of each
    (device, stream), then the elapsed time of each pair; the events go back to the pool."""
    pending = [r for r in records if r._ev is not None]
    if not pending:
        return
    last = {}
    for r in pending:
        last[(r.device, r.stream)] = r._ev[1]
    with _faults.checked("profile"):
        for (dev, _), ev in last.items():
            with _on_device(dev):
                _cuda.synchronize(ev)
        for r in pending:
            ev0, ev1 = r._ev
            with _on_device(r.device):
                r.time_ms = _cuda.elapsed(ev0, ev1)
            r._ev = None
            _cuda.release(r.device, ev0)
            _cuda.release(r.device, ev1)


# ----------------------------------------------------------------------------- the public API
class Profile:
    """A profile of the gparray work of one thread: ``with gparray.cuda.profile() as prof:``.

    While active, every kernel launch (gparray's kernels and user kernels), copy (memcpy and
    memset) and library call (cuBLAS, cuSOLVER, cuFFT) that gparray makes on this thread is
    recorded (``ProfileRecord``) with CUDA events around it on its stream; at exit the device
    work is waited for once and the GPU times are read. ``records``, ``table()`` and
    ``to_json(path)`` report them. A profile may be entered again after it exits (the records
    add up); profiles nest (each gets every record)."""

    def __init__(self, *, nvtx: bool = False):
        if not isinstance(nvtx, bool):
            raise TypeError(f"profile: nvtx must be a bool, got {type(nvtx).__name__}")
        if nvtx:
            _import_nvtx("profile")
        self.nvtx = nvtx
        self._records: list = []   # the records of the past activations
        self._stack = None   # the entering thread's list of active profiles, while active
        self._sink = None    # while active: the thread's sink; this activation's entries from _start
        self._start = 0
        self._thread = 0

    @property
    def active(self) -> bool:
        """True between ``__enter__`` and ``__exit__``."""
        return self._stack is not None

    @property
    def records(self) -> list:
        """The ``ProfileRecord`` list, in launch order (``time_ms`` None until the exit)."""
        if self._sink is None:
            return list(self._records)
        return self._records + _materialize(self._sink, self._start, self._thread)

    def __enter__(self):
        if self._stack is not None:
            raise RuntimeError("profile: this profile is already active (nest a new profile() instead)")
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        _activate()
        if not stack:
            _local.sink = []
        self._sink = _local.sink
        self._start, self._thread = len(self._sink), threading.get_ident()
        stack.append(self)
        self._stack = stack
        try:
            _sync_thread(stack)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, et, exc, tb):
        stack, self._stack = self._stack, None
        if stack is None:
            raise RuntimeError("profile: exit of a profile that is not active")
        sink, self._sink = self._sink, None
        if self in stack:
            stack.remove(self)
        self._records += _materialize(sink, self._start, self._thread)
        if not stack:
            _local.sink = None
        try:
            _sync_thread(stack)
        finally:
            _deactivate()
        try:
            _resolve(self._records)
        except Exception:
            if et is None:
                raise
        return False

    def table(self, sort: str = "total") -> str:
        """The summary as a string: per function and per kernel, calls, total and mean GPU
        time (ms) and GB/s; ``sort``: "total" (default), "calls" or "name"."""
        return _table(self.records, sort)

    def to_json(self, path) -> None:
        """Write the records to ``path`` as JSON (see ``ProfileRecord.as_dict``)."""
        _to_json(self.records, path)

    def __repr__(self):
        state = "active" if self.active else "inactive"
        n = len(self._records) + (0 if self._sink is None else len(self._sink) - self._start)
        return f"<gparray.cuda.Profile {state}, {n} records>"


def profile(*, nvtx: bool = False) -> Profile:
    """A context manager recording the kernel launches, copies and library calls gparray
    makes on this thread, each with its gparray function, kernel, grid/block, bytes and GPU
    time (CUDA events, read once at exit): ``with gparray.cuda.profile() as prof: ...``, then
    ``prof.records``, ``prof.table()``, ``prof.to_json(path)``. ``nvtx=True`` also opens an
    NVTX range around each (needs the nvtx package). See docs/guide/profiling.md."""
    return Profile(nvtx=nvtx)


__all__ = ["Profile", "ProfileRecord", "profile", "enable_env_nvtx", "env_nvtx_requested"]
