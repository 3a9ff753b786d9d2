"""Device objects: ``Device(0)`` prints as ``cuda:0``; ``device=`` accepts a Device or "cuda:N"."""
from __future__ import annotations

import threading

from . import _backend


class Device:
    """A CUDA device, compared and hashed by its ordinal."""

    __slots__ = ("_id",)

    def __init__(self, ordinal: int = 0):
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
            raise ValueError(f"Device: expected a non-negative int ordinal, got {ordinal!r}")
        self._id = ordinal

    @property
    def id(self) -> int:
        return self._id

    def __eq__(self, other):
        if isinstance(other, Device):
            return self._id == other._id
        if isinstance(other, str):
            try:
                return self._id == _parse(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(("gparray.Device", self._id))

    def __repr__(self):
        return f"cuda:{self._id}"

    __str__ = __repr__

    def __enter__(self):
        _backend.require_device("gparray.Device")
        dev = _backend.OnDevice(self._id)
        dev.__enter__()
        _ctx_stack().append(dev)
        return self

    def __exit__(self, *exc):
        dev = _ctx_stack().pop()
        dev.__exit__(*exc)

    def synchronize(self) -> None:
        """Wait until every kernel queued on this device, on any stream, has finished;
        raises the IndexError of an out-of-range index an earlier gather or scatter met
        (see GPARRAY_BOUNDS_CHECK)."""
        dev = normalize_device(self, "synchronize")
        from . import _faults

        with _backend.on_device(dev._id):
            with _faults.checked("synchronize"):
                _backend.runtime().deviceSynchronize()
            after_synchronize(dev._id, None)


def same_device(name: str, *arrays, what: str = "operands") -> Device:
    """The device every one of ``arrays`` is on (gparray Arrays, read through ``_device``;
    None entries, e.g. absent optional operands, are skipped); ValueError
    ``"<name>: <what> are on different devices (cuda:0, cuda:1)"`` naming the first array's
    device and the first that differs. The one check of mixed-device operands: it reads
    only Python attributes (no CUDA call), so every function runs it before it allocates,
    copies or launches anything. Arrays never move between devices implicitly: the caller
    moves one first (``to_device``, ``asarray(x, device=...)``)."""
    dev = None
    for a in arrays:
        if a is None:
            continue
        d = a._device
        if dev is None:
            dev = d
        elif d is not dev and d != dev:
            raise ValueError(f"{name}: {what} are on different devices ({dev}, {d})")
    return dev


_ctx = threading.local()


def _ctx_stack() -> list:
    """This thread's CuPy Device objects of the ``with Device(i):`` blocks it is inside,
    innermost last (per thread: each thread has its own current device, and a block's exit
    must restore the device of that thread's own block)."""
    s = getattr(_ctx, "stack", None)
    if s is None:
        s = _ctx.stack = []
    return s

# Checks run where gparray has just synchronized with a stream, or with a whole device
# (stream None), on that device: ``check(device_id, stream_ptr)``. The index engine adds
# the deferred bounds check when it is imported (a layer above cannot be imported here).
sync_checks: list = []


def after_synchronize(device_id: int, stream_ptr) -> None:
    """Run the ``sync_checks`` after a synchronize of ``stream_ptr`` (None: the device)."""
    for check in sync_checks:
        check(device_id, stream_ptr)
_cache: dict[int, Device] = {}


def _parse(s: str) -> int:
    s = s.strip().lower()
    if s in ("cuda", "gpu"):
        return 0
    for prefix in ("cuda:", "gpu:"):
        if s.startswith(prefix) and s[len(prefix):].isdigit():
            return int(s[len(prefix):])
    raise ValueError(f"device: expected a gparray.Device or 'cuda:N', got {s!r}")


def get_device(ordinal: int) -> Device:
    """The interned Device object for ``ordinal``."""
    d = _cache.get(ordinal)
    if d is None:
        d = _cache[ordinal] = Device(ordinal)
    return d


def current_device(name: str = "gparray") -> Device:
    """The device CuPy considers current (cuda:0 unless a Device context is active); without
    a GPU, the error names ``name`` (the function that needed one)."""
    _backend.require_device(name)
    return get_device(_backend.runtime().getDevice())


def normalize_device(device, name: str = "device") -> Device:
    """Turn ``device=`` (None, Device, "cuda:N", int) into a Device; ValueError otherwise."""
    if device is None:
        return current_device(name)
    if isinstance(device, Device):
        dev = get_device(device._id)   # the interned object: arrays compare devices by identity first
    elif isinstance(device, str):
        if device.strip().lower() == "cpu":
            raise ValueError(f"{name}: gparray arrays live on CUDA devices, not 'cpu'")
        try:
            dev = get_device(_parse(device))
        except ValueError:
            raise ValueError(f"{name}: expected a gparray.Device or 'cuda:N', got {device!r}") from None
    elif isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        dev = get_device(device)
    else:
        raise ValueError(f"{name}: expected a gparray.Device or 'cuda:N', got {device!r}")
    n = _backend.device_count()
    if dev._id >= n:
        if n == 0:
            _backend.require_device(name)
        raise ValueError(f"{name}: {dev} does not exist ({n} CUDA device(s) visible)")
    return dev
