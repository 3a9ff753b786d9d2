"""The host conversion policy: what ``numpy.asarray(x)`` does with a gparray Array.

NumPy converts a foreign object through its ``__array__`` method: ``numpy.asarray(x)``,
``numpy.array(x)``, any NumPy function handed a gparray Array, and every library that calls
them on its inputs. For a gparray Array that is a device-to-host copy and a stream
synchronization, invisible in the code that causes it. CuPy (``TypeError: Implicit conversion
to a NumPy array is not allowed``) and PyTorch (CUDA tensors) refuse that conversion; gparray
makes it a choice, one process-wide mode:

* ``allow`` (the default): copy, silently;
* ``warn``: copy, after a ``HostConversionWarning`` (a ``UserWarning``) naming the array's
  shape, dtype and device and how to silence it;
* ``raise``: ``TypeError``, as CuPy.

The mode comes from the environment variable ``GPARRAY_HOST_CONVERSION``, read at the first
conversion (or the first ``get``/``set``), not at import; ``gparray.cuda.set_host_conversion``
and the context manager ``gparray.cuda.host_conversion`` change it at run time. An invalid
mode is a ``ValueError`` naming the valid ones (for the variable: at that first use).

Only ``Array.__array__`` consults the policy. Explicit copies work in every mode:
``numpy.from_dlpack(x, device="cpu")`` (``__dlpack__`` with a CPU ``dl_device``), the scalar
conversions ``float(x)``, ``int(x)``, ``bool(x)``, ``complex(x)``, ``operator.index(x)``,
the NumPy-style ``x.item()`` and ``x.tolist()``, pickling, and printing (``repr``, ``str``).
``numpy.asarray(x, copy=True)`` is not among them: ``numpy.array(x)`` passes the same
``copy=True`` to ``__array__``, so the two cannot be told apart. NumPy functions that call
the array's own method when it has one (``numpy.sum(x)``, ``numpy.mean``, ``numpy.reshape``,
``numpy.round``, ...: gparray/_array/_methods.py) stay on the device and convert nothing.

Bottom layer (gparray/_core/, docs/architecture.md): imports nothing from gparray; the Array layer calls
``check`` and ``gparray.cuda`` re-exports the public names.
"""
from __future__ import annotations

import os
import warnings

ENV = "GPARRAY_HOST_CONVERSION"
MODES = ("allow", "warn", "raise")
DEFAULT = "allow"

_EXPLICIT = 'numpy.from_dlpack(x, device="cpu")'


class HostConversionWarning(UserWarning):
    """An implicit device-to-host copy of a gparray Array (``numpy.asarray(x)`` and the like)
    under the host conversion mode "warn" (``gparray.cuda.set_host_conversion``)."""


_mode: str | None = None   # None until the environment has been read


def parse(mode, source: str = "host conversion mode") -> str:
    """``mode`` ("allow", "warn" or "raise"; case and surrounding blanks ignored) as one of
    MODES; ValueError naming the valid modes otherwise."""
    if isinstance(mode, str):
        m = mode.strip().lower()
        if m in MODES:
            return m
    raise ValueError(f"{source}: invalid host conversion mode {mode!r}; "
                     f"expected one of {', '.join(repr(m) for m in MODES)}")


def _from_env() -> str:
    global _mode
    value = os.environ.get(ENV, "")
    m = DEFAULT if not value.strip() else parse(value, f"environment variable {ENV}")
    _mode = m
    return m


def _reset() -> None:
    """Forget the mode, so the next use reads GPARRAY_HOST_CONVERSION again (for tests)."""
    global _mode
    _mode = None


def get_host_conversion() -> str:
    """The host conversion mode now: "allow", "warn" or "raise" (see
    :func:`set_host_conversion`)."""
    m = _mode
    return m if m is not None else _from_env()


def set_host_conversion(mode) -> str:
    """Set what ``numpy.asarray(x)`` (``Array.__array__``) does with a gparray Array, for the
    whole process; returns the previous mode.

    ``mode``: "allow" (copy device to host, silently), "warn" (copy after a
    ``gparray.HostConversionWarning``) or "raise" (``TypeError``, as CuPy); ValueError for
    anything else. The initial mode is the environment variable ``GPARRAY_HOST_CONVERSION``
    (read at first use), "allow" when it is unset. Explicit copies are allowed in every mode:
    ``numpy.from_dlpack(x, device="cpu")``, ``float(x)``/``int(x)``/``bool(x)``/
    ``complex(x)``/``operator.index(x)`` and ``repr``/``str``.
    """
    new = parse(mode, "set_host_conversion")
    global _mode
    prev = get_host_conversion()
    _mode = new
    return prev


class host_conversion:
    """Context manager: the host conversion mode inside the ``with`` block, restored on exit
    (``with gparray.cuda.host_conversion("raise"): ...``). The mode is checked when the
    object is made (ValueError), and is process-wide while the block runs (every thread)."""

    __slots__ = ("mode", "_prev")

    def __init__(self, mode):
        self.mode = parse(mode, "host_conversion")
        self._prev = None

    def __enter__(self):
        self._prev = set_host_conversion(self.mode)
        return self.mode

    def __exit__(self, *exc):
        set_host_conversion(self._prev)
        return False

    def __repr__(self):
        return f"host_conversion({self.mode!r})"


def describe(x) -> str:
    """"shape (3, 4), float32, cuda:0, 48 bytes" of an array-like ``x`` (its shape, dtype,
    device and nbytes attributes)."""
    nbytes = getattr(x, "nbytes", None)
    size = ""
    if isinstance(nbytes, int):
        size = f", {nbytes} bytes" if nbytes < 1 << 20 else f", {nbytes / (1 << 20):.1f} MiB"
    return f"shape {tuple(x.shape)}, {x.dtype}, {x.device}{size}"


def raise_message(x) -> str:
    return (f"Implicit conversion to a NumPy array is not allowed (a gparray Array: {describe(x)}; "
            f"host conversion mode 'raise'). Copy it to the host explicitly with {_EXPLICIT}, "
            f"or allow implicit copies with gparray.cuda.set_host_conversion('allow') or {ENV}=allow.")


def warn_message(x) -> str:
    return (f"implicit conversion of a gparray Array ({describe(x)}) to a NumPy array: a "
            f"device-to-host copy and a synchronization. Copy explicitly with {_EXPLICIT}; "
            f"silence this with gparray.cuda.set_host_conversion('allow'), {ENV}=allow, or "
            f"warnings.filterwarnings('ignore', category=gparray.HostConversionWarning).")


def check(x) -> None:
    """Apply the mode to an implicit conversion of ``x`` (called by ``Array.__array__`` before
    it copies): nothing under "allow", a HostConversionWarning under "warn" (attributed to the
    code that called numpy), TypeError under "raise"."""
    m = _mode
    if m is None:
        m = _from_env()
    if m == "allow":
        return
    if m == "raise":
        raise TypeError(raise_message(x))
    # stacklevel 3: check <- Array.__array__ <- (NumPy, in C) the caller of numpy.asarray
    warnings.warn(warn_message(x), HostConversionWarning, stacklevel=3)


__all__ = ["HostConversionWarning", "get_host_conversion", "host_conversion", "set_host_conversion"]
