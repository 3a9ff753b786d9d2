"""What ``gparray.cuda.profile`` reads off the Python stack at each recorded launch: the
gparray function the user called, and an estimate of the bytes the launch moves.

Nothing here runs unless a profile (or ``GPARRAY_NVTX=1``) is active: the functions are
not decorated, the stack is walked at the launch instead (``sys._getframe``), in C when the
extension is built (``_claunch.frame_walk`` in gparray/_native/_claunch_prof.c: the same
walk over the same frames; this module's Python walk is the reference and the fallback).

Function: the outermost frame of the unbroken run of gparray frames that leads to the
launch. A table op object (``add``, ``exp``, ``clip``: ``__call__``/``_call``/``_apply`` of
an object with a ``__name__``) is named after that name; the Array's methods by the method
(``__add__``, ``__getitem__``, ``sum``); other methods by their qualified name
(``UserKernel.__call__``); functions of ``gparray.linalg`` and ``gparray.fft`` get that
prefix (``linalg.cholesky``).

Bytes: the distinct arrays (gparray Arrays and engine Layouts; every one counted once, by
address and extent) among the local variables of the engine frames that made the launch
and of the first gparray frame above them (the namespace function or op that called the
engine), one level into tuples and lists; of those, the ones whose first element's address
is an argument of the launch (all of them when none is). An array counts the bytes its
elements span, at most its element count times the itemsize (a stride-0 broadcast view
counts its distinct bytes). That is exact for an elementwise launch (inputs + output).
Workspace blocks (not arrays) are not counted, and an array read through a pointer table
(concat's inputs) or at an offset is not seen as an argument, so the figure is an estimate.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .._kernels import _launcher

# modules whose frames belong to the launch itself: scanned, and the scan goes on above them
_ENGINE = ("gparray._engine.", "gparray._kernels.", "gparray.cuda._user_kernels", "gparray.cuda._profile")
_OP_METHODS = frozenset({"__call__", "_call", "_apply"})
_ARRAY_CLASSES = frozenset({"Array", "Operators", "ArrayMethods", "NumpyInterop"})
_PREFIXES = (("gparray.linalg", "linalg."), ("gparray.fft", "fft."))
_SEQ_MAX = 64
# launch plumbing: engine frames whose variables are never arrays (the launch values are
# numbers and bytes), walked through without a scan
_PLUMBING = frozenset({("gparray._engine._launch", "run"), ("gparray._engine._launch", "run_plain"),
                       ("gparray._engine._launch", "launch"), ("gparray.cuda._user_kernels", "UserKernel._launch")})


def _module(f) -> str:
    name = f.f_globals.get("__name__")
    return name if isinstance(name, str) else ""


def _is_gparray(mod: str) -> bool:
    return mod == "gparray" or mod.startswith("gparray.")


_OTHER, _GP, _ENG, _PLUMB = 0, 1, 2, 3
_codes: dict = {}     # code object -> _OTHER, _GP, _ENG or _PLUMB (its frames' module, classified once)
_labels: dict = {}    # code object -> its frames' label (codes whose label does not depend on self)
_CODES_MAX = 1 << 16


def _classify(f) -> int:
    """The class of frame ``f``'s code (``_codes`` is the cache; the compiled fast path reads
    it too, see gparray/_native/_claunch_prof.c)."""
    mod = _module(f)
    w = _ENG if mod.startswith(_ENGINE) else _GP if _is_gparray(mod) else _OTHER
    if w == _ENG and (mod, getattr(f.f_code, "co_qualname", f.f_code.co_name)) in _PLUMBING:
        w = _PLUMB
    if len(_codes) >= _CODES_MAX:
        _codes.clear()
        _labels.clear()
    _codes[f.f_code] = w
    return w


def _where(f) -> int:
    w = _codes.get(f.f_code)
    return _classify(f) if w is None else w


def _addresses(args) -> set:
    """The integer arguments of a launch (the pointers among them)."""
    out = set()
    for a in args:
        t = type(a)
        if t is int or t is np.uint64 or t is np.int64:
            out.add(int(a))
    return out


def walk(frame, want_bytes: bool = True, args=None):
    """(function label, estimated bytes or None) of the launch made below ``frame`` with
    arguments ``args`` (None: unknown), in one walk up the stack (see the module docstring);
    in C when the extension is built (``_claunch.frame_walk``, the same walk)."""
    if _cwalk is not None:
        outer, nbytes = _cwalk(frame, want_bytes, args, _codes, _classify, _ctypes or _c_types())
        if nbytes is not NotImplemented:
            return ("?" if outer is None else label(outer)), nbytes
    codes = _codes
    found = [] if want_bytes else None
    scanning = want_bytes
    outer = None
    f = frame
    while f is not None:
        w = codes.get(f.f_code)
        if w is None:
            w = _classify(f)
        if w == _OTHER:
            break
        outer = f
        if scanning and w != _PLUMB:
            _scan(f, found)
            if w == _GP:
                scanning = False   # the namespace function or op above the engines: the last one read
        f = f.f_back
    name = "?" if outer is None else label(outer)
    return name, (_bytes(found, args) if found else None)


def c_label(frame, default: str) -> str:
    """The function of a launch the compiled fast path made when called from ``frame``:
    the label of the outermost gparray frame from ``frame`` up, else ``default`` (the op's
    own name: it was called from user code)."""
    outer = None
    f = frame
    while f is not None:
        w = _codes.get(f.f_code)
        if w is None:
            w = _classify(f)
        if w == _OTHER:
            break
        outer = f
        f = f.f_back
    return default if outer is None else label(outer)


def function_of(frame) -> str:
    """The label of the gparray function that led to ``frame`` ("?" when ``frame`` is not in
    gparray code)."""
    return walk(frame, False)[0]


def label(f) -> str:
    """The function name of gparray frame ``f`` (see the module docstring)."""
    code = f.f_code
    lab = _labels.get(code)
    if lab is not None:
        return lab
    name = code.co_name
    mod = _module(f)
    if name in _OP_METHODS:   # named after its object: not cached per code
        try:
            n = getattr(f.f_locals.get("self"), "__name__", None)
        except Exception:
            n = None
        if isinstance(n, str):
            return _prefixed(mod, n)
    qual = getattr(code, "co_qualname", name)
    cls, dot, _ = qual.rpartition(".")
    if dot and "<" not in cls and cls not in _ARRAY_CLASSES:
        lab = qual
    else:
        lab = _prefixed(mod, name)
    if name not in _OP_METHODS:
        _labels[code] = lab
    return lab


def _prefixed(mod: str, name: str) -> str:
    for pkg, prefix in _PREFIXES:
        if mod == pkg or mod.startswith(pkg + "."):
            return prefix + name
    return name


_types = None   # (Array, Layout): what counts as an array
_ctypes = None  # (Array, Layout, numpy.uint64, numpy.int64), for the C walk
_cwalk = getattr(_launcher._claunch, "frame_walk", None)   # None: the Python walk


def _c_types():
    global _ctypes
    _ctypes = _array_types() + (np.uint64, np.int64)
    return _ctypes


def _array_types():
    global _types
    if _types is None:
        from .._array import Array
        from .._engine._shapes import Layout

        _types = (Array, Layout)
    return _types


_spans: dict = {}   # (shape, byte strides, itemsize) -> (span, bytes)


def _span(key) -> tuple:
    """(span, bytes) of a layout ``key`` = (shape, byte strides, itemsize): the bytes its
    elements span, and those at most its element count times the itemsize."""
    shape, strides, isz = key
    n = prod(shape)
    if n == 0:
        out = (0, 0)
    else:
        span = isz
        for s, st in zip(shape, strides):
            span += (s - 1) * (st if st >= 0 else -st)
        out = (span, min(n * isz, span))
    if len(_spans) < 4096:
        _spans[key] = out
    return out


def _scan(f, found: list) -> None:
    """Append the arrays among frame ``f``'s local variables (one level into tuples and
    lists) to ``found``."""
    arr, lay = _types or _array_types()
    for v in f.f_locals.values():
        t = type(v)
        if t is arr or t is lay:
            found.append(v)
        elif (t is tuple or t is list) and len(v) <= _SEQ_MAX:
            for item in v:
                ti = type(item)
                if ti is arr or ti is lay:
                    found.append(item)


def _bytes(found: list, args):
    """The bytes of the distinct arrays of ``found`` (each counted once by address and
    extent) whose address is an argument of ``args``, or of all of them when none is (or
    ``args`` is None); None when none can be measured."""
    ptrs = _addresses(args) if args else ()
    seen, passed = {}, {}
    for x in found:
        try:
            key = (x._shape, x._strides, x._dtype.itemsize)
            ptr = x._buf.ptr + x._offset
            e = _spans.get(key) or _span(key)
        except Exception:   # a layout over a released or foreign buffer: not counted
            continue
        seen[(ptr, e[0])] = e[1]
        if ptr in ptrs:
            passed[(ptr, e[0])] = e[1]
    if passed:
        return sum(passed.values())
    return sum(seen.values()) if seen else None


def bytes_of(frame, args=None):
    """Estimated bytes moved by the launch made below ``frame`` with arguments ``args``
    (see the module docstring); None when no array was found."""
    return walk(frame, True, args)[1]


__all__ = ["c_label", "function_of", "label", "bytes_of", "walk"]
