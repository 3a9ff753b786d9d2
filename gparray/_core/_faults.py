"""Kernel faults: the launch-checking mode and the error after a fault.

A kernel that reads or writes outside its memory (or traps) makes every later CUDA call of
the process fail with the same "sticky" error: the process's CUDA context can't be used any
more. The error is reported asynchronously, by whatever CUDA call comes next, so it names
neither the kernel nor the gparray function that launched it.

* ``GPARRAY_LAUNCH_BLOCKING=1`` (read at import): every kernel launch is followed by a
  synchronize of its stream, and a launch whose kernel faulted raises
  :class:`KernelFaultError` naming the kernel family, the template instance, the grid and
  the gparray function that launched it. The compiled elementwise fast path is not used in
  this mode (its launches could not be checked), so every launch goes through here.
* Without it, CUDA errors that gparray sees (launches, allocations, host transfers,
  synchronizations) go through :func:`check` (every call site uses the :class:`checked`
  context manager): a sticky fault becomes a
  :class:`KernelFaultError` whose message says that an earlier kernel faulted, that the
  context is lost, and how to find the kernel.
"""
from __future__ import annotations

import os
import sys

ENV_BLOCKING = "GPARRAY_LAUNCH_BLOCKING"

# CUDA error codes (runtime and driver share them) that mean a kernel faulted and the
# process's context is lost.
STICKY = {
    700: "an illegal memory access",
    710: "a device-side assert",
    714: "a hardware stack error",
    715: "an illegal instruction",
    716: "a misaligned address",
    717: "an invalid address space",
    718: "an invalid program counter",
    719: "an unspecified launch failure",
}

_HOW = ("The process's CUDA context can't be used any more: restart the process. To find the "
        "kernel, rerun with GPARRAY_LAUNCH_BLOCKING=1 (each launch is checked and the error "
        "names the kernel and the gparray function), and under "
        "`compute-sanitizer --tool memcheck` with GPARRAY_NO_CACHING=1 (every out-of-bounds "
        "access is reported with its address and thread).")


class KernelFaultError(RuntimeError):
    """A gparray kernel faulted (or a fault of an earlier one was reported). ``status`` is the
    CUDA error code, ``kernel`` the "family: instance" launched (None when unknown)."""

    def __init__(self, message: str, status: int | None = None, kernel: str | None = None):
        super().__init__(message)
        self.status = status
        self.kernel = kernel


def blocking() -> bool:
    """True when ``GPARRAY_LAUNCH_BLOCKING`` asks for checked launches."""
    return os.environ.get(ENV_BLOCKING, "").strip().lower() not in ("", "0", "false", "no", "off")


BLOCKING = blocking()


def status_of(exc) -> int | None:
    """The CUDA error code carried by a CuPy CUDA error, else None."""
    st = getattr(exc, "status", None)
    return st if isinstance(st, int) else None


def caller() -> str:
    """``gparray.<function>``: the outermost gparray frame of the current call stack (the
    namespace function the user called)."""
    f = sys._getframe(1)
    name = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod == "gparray" or mod.startswith("gparray."):
            name = f"{mod}.{f.f_code.co_name}"
        f = f.f_back
    if name is None:
        return "gparray"
    mod, _, fn = name.rpartition(".")
    public = mod.split(".")
    public = [p for p in public if not p.startswith("_")] or ["gparray"]
    return ".".join(public + [fn])


def check(exc, what: str) -> None:
    """Raise a KernelFaultError for ``exc`` (a CUDA error met while doing ``what``) when it
    reports a lost context; return otherwise, so the caller re-raises ``exc`` itself."""
    st = status_of(exc)
    if st in STICKY:
        raise KernelFaultError(
            f"{what}: CUDA reported {STICKY[st]} (error {st}) from an earlier gparray kernel "
            f"launch ({exc}). {_HOW}", st) from exc


class checked:
    """Context manager around CUDA calls: a CUDA error raised inside that reports a lost
    context (an earlier kernel faulted) leaves as KernelFaultError saying so; every other
    error passes unchanged. ``what`` names the work in the message: a string, or a callable
    returning one (evaluated only when an error is met). One instance may be reused and
    nested: it keeps no state between ``with`` blocks."""

    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, et, exc, tb):
        if exc is not None:
            what = self.what
            check(exc, what if isinstance(what, str) else what())
        return False


def _launch_what() -> str:
    return f"{caller()}: kernel launch"


launch_checked = checked(_launch_what)
"""``with launch_checked:`` around a kernel launch (the message names the calling function)."""


def checked_launch(launch, name: str):
    """``launch`` (a Kernel's launch callable) followed by a synchronize of its stream; a
    fault raises KernelFaultError naming ``name``, the grid and the calling function."""
    from cupy_backends.cuda.api import runtime

    def run(grid, block, args, shared_mem, stream_ptr):
        where = f"kernel {name} (grid {grid}, block {block}, stream {stream_ptr:#x})"
        try:
            launch(grid, block, args, shared_mem, stream_ptr)
            runtime.streamSynchronize(stream_ptr)
        except Exception as exc:
            st = status_of(exc)
            if st in STICKY:
                raise KernelFaultError(
                    f"{caller()}: {where} faulted with {STICKY[st]} (error {st}; "
                    f"GPARRAY_LAUNCH_BLOCKING=1). The process's CUDA context can't be used any "
                    "more: restart the process; `compute-sanitizer --tool memcheck` with "
                    "GPARRAY_NO_CACHING=1 shows the faulting address and thread.", st, name) from exc
            raise

    return run
