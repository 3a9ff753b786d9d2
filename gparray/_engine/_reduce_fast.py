"""Repeat reductions served in C (gparray/_native/_claunch_reduce.c: RTable).

A call of ``sum``/``prod``/``max``/``min``/``mean`` (no ``dtype``, no ``keepdims``, ``axis``
None or an int) or of ``linalg.vector_norm`` (``ord=2``, no ``keepdims``) whose checks and
launch plan the Python path has already made once is recorded here, after its launches, in
the function's table: the input's dtype, shape, axis, device and address alignment, the
result's layout, the bound kernels with their grids and constant argument bytes, the
workspace size. Later calls with the same key on a C-contiguous input are served by
``serve(name, x, axis)`` without the Python path (None: not served; the caller goes on).

Recorded only where the compiled launcher is built, for a non-empty C-contiguous input on
the current device, while no profile is active; a served call returns a new Array from the
device's pool exactly as the Python path builds it. The compiled path must know the Array
class and the stream getter (gparray/_array/_ops.py's ``_configure``): the namespace's callers
(gparray/_api/_statistical.py, ``_learn``) make sure of it before recording, else every serve()
finds no Array type and returns None.
"""
from __future__ import annotations

from .. import _memory
from .._native import claunch as _claunch
from . import _launch
from ._launch import BLOCK

_tables: dict = {}   # name -> RTable
_ENABLED = _claunch is not None and hasattr(_claunch, "RTable")


def table(name: str):
    """The RTable of reduction ``name`` (created on first use); None without the C path."""
    if not _ENABLED:
        return None
    t = _tables.get(name)
    if t is None:
        t = _tables[name] = _claunch.RTable()
    return t


def serve(name: str, x, axis):
    """The recorded reduction ``name`` of ``x`` over ``axis`` computed in C, or None."""
    t = _tables.get(name)
    if t is None or _launch._hook is not None:
        return None
    return t.serve(x, axis)


def learn(name: str, x, axis, out, lp) -> bool:
    """Record that ``lp`` (the launch description ``_reduce.reduce`` just used for ``x``
    over ``axis`` into the new array ``out``) serves later calls of ``name`` with this key.
    False (nothing recorded) when the key cannot be served in C."""
    if (lp is None or not _ENABLED or _launch._hook is not None or not (axis is None or type(axis) is int)
            or not x.size or not x._is_c_contig() or out._offset != 0):
        return False
    d = x._device._id
    if _launch._multi and _launch._get_device() != d:
        return False
    pool = _memory._pools.get(d)
    if pool is None:
        return False
    fk = lp.fkern
    xp = x._buf.ptr + x._offset
    return table(name).add(x._dtype, x._shape, axis, x._device, xp % 16 == 0, x._dtype.itemsize, out._shape,
                           out._strides, out._dtype, out.size * out._dtype.itemsize, lp.kern.launch, lp.plan.grid,
                           tuple(lp.tail), None if fk is None else fk.launch,
                           0 if fk is None else lp.plan.finish[1], tuple(lp.ftail), BLOCK, int(lp.ws_bytes), pool)


def clear() -> None:
    """Forget every recorded call (kernels reloaded, a device reset)."""
    for t in _tables.values():
        t.clear()
