"""CUDA streams and events: ``gparray.cuda.Stream``, ``Event``, ``current_stream`` and
``default_stream`` (re-exported by ``gparray/cuda/__init__.py``).

Every gparray launch, allocation, copy and library call (cuBLAS, cuSOLVER, cuFFT) goes to
CuPy's current stream of the device it runs on (``cupy.cuda.get_current_stream(device)``,
read at every call, by the compiled fast path too). A :class:`Stream` therefore wraps a CuPy
stream object, and ``with stream:`` makes its device current and pushes it on CuPy's stream
stack; both are restored on exit, so blocks nest.

Lifetimes: every Stream notes its (device, handle) in ``_backend``'s registry of held
streams while it exists, so the pool may record events on that stream (it is alive). A
stream gparray created is destroyed (by CuPy) when the last Stream over it goes; just before
that, while it is still alive, :func:`_retire` records an event on it and the device's pool
retires its handle (``gparray/_memory/_retire.py``), since CUDA may give the handle to a new
stream.

This module sits in the engine layer (it imports only ``_core`` and ``_memory``), so the
transfers and the Array layer can take a Stream as ``stream=``. CuPy is imported inside
functions only: ``import gparray`` never touches the GPU.
"""
from __future__ import annotations

import operator
import sys
import threading
import warnings
import weakref

from .._core import _backend
from .. import _memory
from .._core._device import Device, after_synchronize, get_device, normalize_device

__all__ = ["Event", "Stream", "current_stream", "default_stream", "handle_of", "order",
           "same_stream", "stream_arg"]

_LEGACY, _PER_THREAD = 1, 2      # cudaStreamLegacy, cudaStreamPerThread (0 also means legacy)
_NOT_READY = 600                 # cudaErrorNotReady

_tls = threading.local()         # .entered: the device contexts of this thread's ``with`` blocks


def _faults():
    from .._core import _faults

    return _faults


def _cupy(name: str):
    """CuPy; CUDAUnavailableError naming ``name`` without a usable GPU."""
    _backend.require_device(name)
    return _backend.cupy()


def _device_of(device, name: str) -> Device:
    """``device=`` (None: the current device, a gparray Device, "cuda:N", an int ordinal) as
    a Device: TypeError for another type, ValueError for a bad value, CUDAUnavailableError
    naming ``name`` without a usable GPU."""
    if device is not None and (isinstance(device, bool) or not isinstance(device, (Device, str, int))):
        raise TypeError(f"{name}: device must be a gparray Device, 'cuda:N' or an int ordinal, "
                        f"got {type(device).__name__}")
    if device is None:
        _backend.require_device(name)
    return normalize_device(device, name)


def _int(value):
    """``value`` as a Python int when it is an integer (not a bool), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _flag(value, what: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: {what} must be a bool, got {type(value).__name__}")
    return value


def _legacy(ptr: int) -> int:
    """Stream handles 0 and 1 both name the legacy default stream: one key for both."""
    return 0 if ptr == _LEGACY else ptr


def same_stream(ptr_a: int, ptr_b: int) -> bool:
    """True when two raw handles name the same stream (0 and 1: the legacy default one)."""
    return _legacy(ptr_a) == _legacy(ptr_b)


def _status(rt, st: int, what: str) -> bool:
    """A cudaStreamQuery/cudaEventQuery status as done (True) / not yet (False); an error
    status is raised (a lost context as KernelFaultError)."""
    if st == 0:
        return True
    if st == _NOT_READY:
        return False
    err = rt.CUDARuntimeError(st)
    _faults().check(err, what)
    raise err


def _foreign(cp, ptr: int, dev_id: int):
    """A CuPy stream object over a handle gparray does not own (never destroyed by it)."""
    from cupy.cuda import stream as cstream

    base = getattr(cstream, "_BaseStream", None)
    if base is not None:
        return base(ptr, dev_id)
    with warnings.catch_warnings():      # older CuPy: ExternalStream (deprecated in CuPy 14)
        warnings.simplefilter("ignore", DeprecationWarning)
        return cp.cuda.ExternalStream(ptr, dev_id)


class _Owned:
    """The life of a stream gparray created: every Stream over its handle holds this token
    (in ``_owner``); when the last one goes, :func:`_retire` runs with the CuPy stream still
    alive, then lets it go."""

    __slots__ = ("__weakref__",)


_owned = weakref.WeakValueDictionary()   # (device ordinal, handle) -> _Owned


def _own(cs, dev_id: int) -> _Owned:
    """The token of new gparray-owned CuPy stream ``cs``; its finalizer retires the handle."""
    token = _Owned()
    weakref.finalize(token, _retire, cs, dev_id).atexit = False
    _owned[(dev_id, int(cs.ptr))] = token
    return token


def _retire(cs, dev_id: int) -> None:
    """Finalizer of a gparray-owned stream (``cs`` is alive while it runs): the device's pool
    retires its handle. Never raises: at interpreter shutdown, or with CUDA already torn
    down, there is nothing left to protect."""
    try:
        if sys.is_finalizing():
            return
        _memory.retire_stream(dev_id, cs)
    except Exception:
        pass


def _track(s: "Stream") -> None:
    """Hold ``s``'s (device, handle) in the registry of live streams while ``s`` exists."""
    dev_id, ptr = s._device.id, int(s._cs.ptr)
    _backend.hold_stream(dev_id, ptr)
    weakref.finalize(s, _backend.release_stream, dev_id, ptr).atexit = False


class Stream:
    """A CUDA stream of one device.

    ``Stream(device=None, non_blocking=False, priority=0)`` creates a new stream on
    ``device`` (a gparray Device, "cuda:N", an int ordinal; default: the current device),
    destroyed when the object is garbage collected. ``non_blocking=True`` makes a stream
    that does not wait for the legacy default stream (nor it for this one). ``priority``:
    lower numbers run first; CUDA clamps it to the device's range (``[-5, 0]`` on recent
    GPUs; 0 is the default priority).

    ``with stream:`` makes every gparray operation in the block run on this stream (its
    device becomes current for the block when it is not; both are restored at exit, so
    blocks nest). Operations on arrays of another device keep that device's current
    stream. Streams compare and hash by (device, handle); handles 0 and 1 both name the
    legacy default stream.

    Memory follows streams: an array is owned by the stream it was allocated on, and the
    pool reuses its memory on that stream as soon as it is freed. An array used on another
    stream must not be freed before that stream's work is ordered before later work of its
    own stream (``own.wait_event(other.record())``, or a synchronize). When a stream
    gparray created is destroyed, the pool retires its handle first, so a later stream that
    CUDA gives the same handle never reuses memory the old stream's last kernels may use.
    """

    __module__ = "gparray.cuda"
    __slots__ = ("_cs", "_device", "_owner", "__weakref__")

    def __init__(self, device=None, non_blocking=False, priority=0):
        _flag(non_blocking, "non_blocking", "Stream")
        prio = _int(priority)
        if prio is None:
            raise TypeError(f"Stream: priority must be an int, got {type(priority).__name__}")
        if not -2**31 <= prio < 2**31:
            raise ValueError(f"Stream: priority {prio} is out of the int32 range")
        dev = _device_of(device, "Stream")
        cp = _cupy("Stream")
        with _backend.on_device(dev.id), _faults().checked("Stream"):
            cs = cp.cuda.Stream(non_blocking=non_blocking, priority=prio)
        self._cs = cs
        self._device = dev
        self._owner = _own(cs, dev.id)
        _track(self)

    @classmethod
    def _wrap(cls, cs, dev: Device, owner=None) -> "Stream":
        """A Stream over CuPy stream ``cs`` of ``dev``; ``owner`` is kept alive with it, and
        so is the token of the gparray-owned stream with that handle, if there is one (the
        stream then lives, and is retired, only after this Stream too has gone)."""
        s = cls.__new__(cls)
        s._cs = cs
        s._device = dev
        token = _owned.get((dev.id, int(cs.ptr)))
        s._owner = owner if token is None else (token if owner is None else (owner, token))
        _track(s)
        return s

    @classmethod
    def from_external(cls, ptr, device=None) -> "Stream":
        """A Stream over a stream that gparray does not own: a raw handle (an int, e.g.
        ``torch.cuda.Stream().cuda_stream`` or a CuPy stream's ``ptr``; 0 or 1 the legacy
        default stream, 2 the per-thread default stream) or an object with
        ``__cuda_stream__`` (kept alive by the Stream). ``device``: the device the stream
        belongs to (default: the current one). The stream is never destroyed by gparray:
        it must outlive the returned Stream (while that exists, the memory pool may record
        events on the stream), and it is not retired when the Stream goes."""
        owner = None
        handle = _int(ptr)
        if handle is None and hasattr(ptr, "__cuda_stream__"):
            proto = ptr.__cuda_stream__()
            if not (isinstance(proto, tuple) and len(proto) == 2 and _int(proto[1]) is not None):
                raise TypeError("Stream.from_external: __cuda_stream__() must return (version, handle), "
                                f"got {proto!r}")
            if proto[0] != 0:
                raise ValueError(f"Stream.from_external: unsupported __cuda_stream__ version {proto[0]!r}")
            owner, handle = ptr, _int(proto[1])
        elif handle is None:
            raise TypeError("Stream.from_external: expected a stream handle (int) or an object with "
                            f"__cuda_stream__, got {type(ptr).__name__}")
        if not 0 <= handle < 2**64:
            raise ValueError(f"Stream.from_external: a stream handle is an address (int >= 0), got {handle}")
        dev = _device_of(device, "Stream.from_external")
        cp = _cupy("Stream.from_external")
        return cls._wrap(_foreign(cp, handle, dev.id), dev, owner)

    # ------------------------------------------------------------------ properties
    @property
    def ptr(self) -> int:
        """The raw ``cudaStream_t`` handle (0: the legacy default stream)."""
        return int(self._cs.ptr)

    @property
    def device(self) -> Device:
        """The device the stream belongs to."""
        return self._device

    @property
    def priority(self) -> int:
        """The stream's priority as CUDA keeps it (after clamping to the device's range)."""
        cp = _backend.cupy()
        with _backend.on_device(self._device.id), _faults().checked("Stream.priority"):
            return int(cp.cuda.runtime.streamGetPriority(self.ptr))

    def __cuda_stream__(self):
        """The CUDA stream protocol: (0, handle)."""
        return (0, self.ptr)

    # ------------------------------------------------------------------ context
    def __enter__(self):
        ctx = _backend.on_device(self._device.id)
        ctx.__enter__()
        try:
            self._cs.__enter__()
        except BaseException:
            ctx.__exit__(None, None, None)
            raise
        stack = getattr(_tls, "entered", None)
        if stack is None:
            stack = _tls.entered = []
        stack.append(ctx)
        return self

    def __exit__(self, *exc):
        ctx = _tls.entered.pop()
        try:
            self._cs.__exit__(*exc)
        finally:
            ctx.__exit__(*exc)
        return False

    # ------------------------------------------------------------------ work
    def synchronize(self) -> None:
        """Wait until every kernel queued on this stream has finished; raises the IndexError
        of an out-of-range index an earlier gather or scatter on it met (see
        GPARRAY_BOUNDS_CHECK)."""
        cp = _backend.cupy()
        ptr = self.ptr
        with _backend.on_device(self._device.id):
            with _faults().checked("Stream.synchronize"):
                cp.cuda.runtime.streamSynchronize(ptr)
            after_synchronize(self._device.id, ptr)

    def query(self) -> bool:
        """True when all work queued on this stream has finished (never waits)."""
        cp = _backend.cupy()
        rt = cp.cuda.runtime
        with _backend.on_device(self._device.id):
            return _status(rt, rt.streamQuery(self.ptr), "Stream.query")

    def wait_event(self, event) -> None:
        """Make work queued on this stream after this call wait until ``event`` (a gparray
        Event or a CuPy event) has completed; the host does not wait. An Event that was
        never recorded is already complete."""
        if isinstance(event, Event):
            if event._ev is None:
                return
            evp = int(event._ev.ptr)
        else:
            evp = _int(getattr(event, "ptr", None))
            if evp is None:
                raise TypeError("Stream.wait_event: expected a gparray Event or a CuPy event, "
                                f"got {type(event).__name__}")
        cp = _backend.cupy()
        with _backend.on_device(self._device.id), _faults().checked("Stream.wait_event"):
            cp.cuda.runtime.streamWaitEvent(self.ptr, evp)

    def wait_stream(self, stream) -> None:
        """Make work queued on this stream after this call wait for the work queued on
        ``stream`` (a gparray or CuPy stream) so far: one event, no host wait."""
        ptr, dev = handle_of(stream, "Stream.wait_stream")
        order(ptr, dev, (self.ptr, self._device.id))

    def record(self, event=None) -> "Event":
        """Record ``event`` (default: a new ``Event()``) on this stream and return it: it
        completes when the work queued here so far has finished."""
        if event is None:
            event = Event()
        elif not isinstance(event, Event):
            raise TypeError(f"Stream.record: expected a gparray Event or None, got {type(event).__name__}")
        event.record(self)
        return event

    # ------------------------------------------------------------------ identity
    def _key(self):
        return (self._device.id, _legacy(self.ptr))

    def __eq__(self, other):
        if isinstance(other, Stream):
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self):
        return hash(("gparray.Stream",) + self._key())

    def __repr__(self):
        ptr = self.ptr
        if _legacy(ptr) == 0:
            what = "legacy default stream"
        elif ptr == _PER_THREAD:
            what = "per-thread default stream"
        else:
            what = f"0x{ptr:x}"
        return f"<gparray.cuda.Stream {what} on {self._device}>"


def handle_of(stream, name: str, device=None):
    """(raw handle, device ordinal) of ``stream``: a gparray Stream, a CuPy stream (a stream
    object with int ``ptr`` and ``device_id``; -1 means the current device), or None for the
    current stream of ``device`` (default: the current device). TypeError otherwise."""
    if isinstance(stream, Stream):
        return stream.ptr, stream._device.id
    if stream is None:
        dev = _device_of(device, name).id
        return int(_cupy(name).cuda.get_current_stream(dev).ptr), dev
    ptr = _int(getattr(stream, "ptr", None))
    dev = _int(getattr(stream, "device_id", None))
    if ptr is None or dev is None:
        raise TypeError(f"{name}: expected a gparray Stream or a CuPy stream, got {type(stream).__name__}")
    if dev < 0:
        dev = _cupy(name).cuda.runtime.getDevice()
    return ptr, dev


def stream_arg(stream, name: str, device):
    """(raw handle, device ordinal) of a ``stream=`` argument naming a stream to queue work
    on: a gparray Stream, a CuPy stream, or an int handle of a stream of ``device`` (a
    gparray Device; 1: the legacy default stream, 2: the per-thread default stream; 0 is
    ambiguous and -1 names no stream: ValueError). TypeError for anything else."""
    handle = _int(stream)
    if handle is None:
        return handle_of(stream, name)
    if handle == 0:
        raise ValueError(f"{name}: stream=0 is ambiguous; pass 1 (the legacy default stream), 2 (the "
                         "per-thread default stream) or a stream handle")
    if handle < 1:
        raise ValueError(f"{name}: a stream handle is a positive int, got {handle}")
    return handle, device.id


def order(producer: int, producer_dev: int, *waiters) -> None:
    """Make work queued after this call on each waiter, a (handle, device ordinal) pair, wait
    for the work queued so far on stream ``producer`` of device ``producer_dev``: one event
    recorded on the producer, waited for by each waiter that is not the producer itself.
    The host does not wait."""
    todo = {}
    for w, d in waiters:
        if not (d == producer_dev and same_stream(w, producer)):
            todo.setdefault((d, _legacy(w)), (w, d))
    if not todo:
        return
    cp = _backend.cupy()
    rt = cp.cuda.runtime
    with _faults().checked("stream ordering"):
        with _backend.on_device(producer_dev):
            ev = cp.cuda.Event(block=False, disable_timing=True)
            rt.eventRecord(ev.ptr, producer)
        for w, d in todo.values():
            with _backend.on_device(d):
                rt.streamWaitEvent(w, ev.ptr)


def current_stream(device=None) -> Stream:
    """The stream gparray operations on ``device`` (default: the current device) run on now."""
    dev = _device_of(device, "current_stream")
    cp = _cupy("current_stream")
    return Stream._wrap(cp.cuda.get_current_stream(dev.id), dev)


def default_stream(device=None) -> Stream:
    """The default stream of ``device`` (default: the current device): the legacy default
    stream, or the per-thread default stream when CuPy was started with
    CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1. It is current wherever no ``with`` block chose
    another."""
    dev = _device_of(device, "default_stream")
    cp = _cupy("default_stream")
    try:
        from cupy_backends.cuda import stream as bstream
        per_thread = bstream.get_default_stream_ptr() == cp.cuda.runtime.streamPerThread
    except (ImportError, AttributeError):
        per_thread = False
    return Stream._wrap(cp.cuda.Stream.ptds if per_thread else cp.cuda.Stream.null, dev)


class Event:
    """A CUDA event: a marker in a stream's queue, for ordering streams and timing.

    ``Event(timing=True, blocking=False, interprocess=False)``: ``timing=False`` makes a
    lighter event for synchronization only (no :meth:`elapsed_time`); ``blocking=True``
    makes :meth:`synchronize` sleep instead of spinning; ``interprocess=True`` (needs
    ``timing=False``) an event that can be shared with other processes. The CUDA event is
    created at the first :meth:`record`, on that stream's device; an event never recorded
    counts as complete.
    """

    __module__ = "gparray.cuda"
    __slots__ = ("_ev", "_device", "_timing", "_blocking", "_interprocess")

    def __init__(self, timing=True, blocking=False, interprocess=False):
        self._timing = _flag(timing, "timing", "Event")
        self._blocking = _flag(blocking, "blocking", "Event")
        self._interprocess = _flag(interprocess, "interprocess", "Event")
        if interprocess and timing:
            raise ValueError("Event: an interprocess event cannot record timing; pass timing=False")
        self._ev = None
        self._device = None

    @property
    def device(self) -> Device | None:
        """The device of the stream the event was first recorded on (None before that)."""
        return self._device

    @property
    def timing(self) -> bool:
        """Whether the event records time (for :meth:`elapsed_time`)."""
        return self._timing

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (a gparray Stream or a CuPy stream; default: the
        current stream of the current device): it completes when the work queued there
        so far has finished. Recording again moves the marker."""
        ptr, dev = handle_of(stream, "Event.record")
        cp = _backend.cupy()
        if self._ev is None:
            with _backend.on_device(dev), _faults().checked("Event.record"):
                self._ev = cp.cuda.Event(block=self._blocking, disable_timing=not self._timing,
                                         interprocess=self._interprocess)
            self._device = get_device(dev)
        elif self._device.id != dev:
            raise ValueError(f"Event.record: the event belongs to {self._device}, the stream to cuda:{dev}")
        with _backend.on_device(dev), _faults().checked("Event.record"):
            cp.cuda.runtime.eventRecord(self._ev.ptr, ptr)

    def query(self) -> bool:
        """True when the work before the last record has finished (never waits)."""
        cp = _cupy("Event.query")
        if self._ev is None:
            return True
        rt = cp.cuda.runtime
        with _backend.on_device(self._device.id):
            return _status(rt, rt.eventQuery(self._ev.ptr), "Event.query")

    def synchronize(self) -> None:
        """Wait until the work before the last record has finished."""
        cp = _cupy("Event.synchronize")
        if self._ev is None:
            return
        with _backend.on_device(self._device.id), _faults().checked("Event.synchronize"):
            cp.cuda.runtime.eventSynchronize(self._ev.ptr)

    def elapsed_time(self, end) -> float:
        """Milliseconds from this event to ``end`` (both recorded, with timing); waits for
        both to complete. ValueError when an event records no timing, was never recorded,
        or the two are on different devices."""
        if not isinstance(end, Event):
            raise TypeError(f"Event.elapsed_time: end must be a gparray Event, got {type(end).__name__}")
        cp = _cupy("Event.elapsed_time")
        if not (self._timing and end._timing):
            raise ValueError("Event.elapsed_time: both events need timing=True")
        if self._ev is None or end._ev is None:
            which = "start" if self._ev is None else "end"
            raise ValueError(f"Event.elapsed_time: the {which} event was never recorded")
        if self._device != end._device:
            raise ValueError(f"Event.elapsed_time: the events are on {self._device} and {end._device}")
        end.synchronize()
        self.synchronize()
        with _backend.on_device(self._device.id), _faults().checked("Event.elapsed_time"):
            return float(cp.cuda.runtime.eventElapsedTime(self._ev.ptr, end._ev.ptr))

    def __repr__(self):
        where = f"recorded on {self._device}" if self._ev is not None else "not recorded"
        return f"<gparray.cuda.Event timing={self._timing} {where}>"
