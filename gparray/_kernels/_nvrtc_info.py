"""Which NVRTC this process compiles with, known without loading it when possible.

The kernel cache keys name the NVRTC version, and ``_registry.device_arch`` caps a device's
compute capability at NVRTC's newest target. Asking CuPy's NVRTC bindings loads the library
through ``cupy._environment``, which imports all of CuPy (0.2-0.3 s on the GPU machines,
most of a new process's first operations). So the answer is also written to a small stamp
file in the kernel cache folder, one per Python environment (interpreter, prefix, CUDA_PATH
and library path: what decides which libnvrtc CuPy finds), and a later process that only
loads cached kernels reads the stamp instead.

A stamp can be stale (NVRTC upgraded in place): anything that compiles first calls
:func:`confirm`, which loads NVRTC, rewrites the stamp and says whether the version
changed (the caller then recomputes its keys). A cached module whose load fails while the
stamp was trusted is retried after :func:`confirm` (``_registry._load``).
"""
from __future__ import annotations

import os
import sys

from ._disk import _atomic_write, cache_dir

_info: tuple | None = None      # ((major, minor), (supported archs...))
_confirmed = False              # _info came from NVRTC itself in this process


def _stamp_path():
    import hashlib

    ident = "\0".join((sys.executable, sys.prefix, os.environ.get("CUDA_PATH", ""),
                       os.environ.get("CUDA_HOME", ""), os.environ.get("LD_LIBRARY_PATH", "")))
    return cache_dir() / f"nvrtc-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.stamp"


def _read_stamp():
    try:
        text = _stamp_path().read_text().split()
        version = tuple(int(v) for v in text[0].split("."))
        archs = tuple(int(a) for a in text[1].split(",")) if len(text) > 1 and text[1] != "-" else ()
        if len(version) != 2:
            return None
        return version, archs
    except (OSError, ValueError, IndexError):
        return None


def _write_stamp(info) -> None:
    version, archs = info
    text = f"{version[0]}.{version[1]} {','.join(map(str, archs)) or '-'}\n"
    try:
        _atomic_write(_stamp_path(), text.encode())
    except OSError:
        pass   # a read-only cache folder: every process asks NVRTC


def _from_nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc

        version = tuple(int(v) for v in nvrtc.getVersion())
    except ImportError as exc:   # CuPy's loader of libnvrtc imports CuPy
        from .._core._backend import no_cupy

        raise no_cupy(exc, "gparray: NVRTC could not be loaded, CuPy could not be imported") from None
    try:
        archs = tuple(sorted(int(a) for a in nvrtc.getSupportedArchs()))
    except Exception:
        archs = ()
    return version, archs


def info() -> tuple:
    """((major, minor), supported archs) of the NVRTC this process uses: the stamp's when
    there is one, else NVRTC's own answer (which writes the stamp)."""
    global _info
    if _info is None:
        got = _read_stamp()
        if got is None:
            return confirm()[0]
        _info = got
    return _info


def confirm() -> tuple:
    """Ask NVRTC itself (loads it; imports CuPy); returns (info, changed): ``changed`` when
    the answer differs from what this process used so far (then cached keys must be
    recomputed). Rewrites the stamp when it was missing or stale."""
    global _info, _confirmed
    if _confirmed:
        return _info, False
    real = _from_nvrtc()
    old = _info if _info is not None else _read_stamp()
    changed = _info is not None and real != _info
    if old != real:
        _write_stamp(real)
    _info, _confirmed = real, True
    return real, changed


def trusted_stamp() -> bool:
    """True when this process's answer came from the stamp, not from NVRTC."""
    return _info is not None and not _confirmed


def _reset() -> None:
    """Forget everything (tests)."""
    global _info, _confirmed
    _info, _confirmed = None, False
