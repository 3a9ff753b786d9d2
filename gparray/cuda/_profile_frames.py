"""What ``gparray.cuda.profile`` reads off the Python stack at each recorded launch: the
gparray function the user called, and an estimate of the bytes the launch moves.

Nothing here runs unless a profile (or ``GPARRAY_NVTX=1``) is active: the functions are
not decorated, the stack is walked at the launch instead (``sys._getframe``).

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

# modules whose frames belong to the launch itself: scanned, and the scan goes on above them
_ENGINE = ("gparray._engine.", "gparray._kernels.", "gparray._transfer", "gparray._staging",
           "gparray.cuda._user_kernels", "gparray.cuda._profile")
_OP_METHODS = frozenset({"__call__", "_call", "_apply"})
_ARRAY_CLASSES = frozenset({"Array", "ArrayMethods", "NumpyInterop"})
_PREFIXES = (("gparray.linalg", "linalg."), ("gparray.fft", "fft."))
_SEQ_MAX = 64


def _module(f) -> str:
    name = f.f_globals.get("__name__")
    return name if isinstance(name, str) else ""


def _is_gparray(mod: str) -> bool:
    return mod == "gparray" or mod.startswith("gparray.")


_OTHER, _GP, _ENG = 0, 1, 2
_codes: dict = {}     # code object -> _OTHER, _GP or _ENG (its frames' module, classified once)
_CODES_MAX = 1 << 16


def _where(f) -> int:
    code = f.f_code
    w = _codes.get(code)
    if w is None:
        mod = _module(f)
        w = _ENG if mod.startswith(_ENGINE) else _GP if _is_gparray(mod) else _OTHER
        if len(_codes) >= _CODES_MAX:
            _codes.clear()
        _codes[code] = w
    return w


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
    arguments ``args`` (None: unknown), in one walk up the stack (see the module docstring)."""
    if want_bytes:
        if _types is None:
            _array_types()
        seen: dict = {}
        done: set = set()
    scanning = want_bytes
    outer = None
    f = frame
    while f is not None:
        w = _where(f)
        if w == _OTHER:
            break
        outer = f
        if scanning:
            _scan(f, seen, done)
            if w == _GP:
                scanning = False   # the namespace function or op above the engines: the last one read
        f = f.f_back
    name = "?" if outer is None else label(outer)
    if not want_bytes or not seen:
        return name, None
    if args:
        ptrs = _addresses(args)
        passed = [v for k, v in seen.items() if k[0] in ptrs]
        if passed:
            return name, sum(passed)
    return name, sum(seen.values())


def function_of(frame) -> str:
    """The label of the gparray function that led to ``frame`` ("?" when ``frame`` is not in
    gparray code)."""
    return walk(frame, False)[0]


def label(f) -> str:
    """The function name of gparray frame ``f`` (see the module docstring)."""
    code = f.f_code
    name = code.co_name
    mod = _module(f)
    if name in _OP_METHODS:
        try:
            n = getattr(f.f_locals.get("self"), "__name__", None)
        except Exception:
            n = None
        if isinstance(n, str):
            return _prefixed(mod, n)
    qual = getattr(code, "co_qualname", name)
    cls, dot, _ = qual.rpartition(".")
    if dot and "<" not in cls and cls not in _ARRAY_CLASSES:
        return qual
    return _prefixed(mod, name)


def _prefixed(mod: str, name: str) -> str:
    for pkg, prefix in _PREFIXES:
        if mod == pkg or mod.startswith(pkg + "."):
            return prefix + name
    return name


_types = None   # (Array, Layout): what counts as an array


def _array_types():
    global _types
    if _types is None:
        from .._array import Array
        from .._engine._shapes import Layout

        _types = (Array, Layout)
    return _types


def _extent(x):
    """((address, span), bytes) of an Array or Layout ``x``."""
    try:
        shape, strides, isz = x._shape, x._strides, x._dtype.itemsize
        ptr = x._buf.ptr + x._offset
        n = prod(shape)
        if n == 0:
            return (ptr, 0), 0
        span = isz
        for s, st in zip(shape, strides):
            span += (s - 1) * (st if st >= 0 else -st)
        return (ptr, span), min(n * isz, span)
    except Exception:   # a layout over a released or foreign buffer: not counted
        return None


def _scan(f, seen: dict, done: set) -> None:
    arr, lay = _types
    for v in f.f_locals.values():
        t = type(v)
        if t is arr or t is lay:
            items = (v,)
        elif (t is tuple or t is list) and len(v) <= _SEQ_MAX:
            items = v
        else:
            continue
        for item in items:
            ti = type(item)
            if (ti is arr or ti is lay) and id(item) not in done:
                done.add(id(item))
                e = _extent(item)
                if e is not None:
                    seen[e[0]] = e[1]


def bytes_of(frame, args=None):
    """Estimated bytes moved by the launch made below ``frame`` with arguments ``args``
    (see the module docstring); None when no array was found."""
    return walk(frame, True, args)[1]


__all__ = ["function_of", "label", "bytes_of", "walk"]
