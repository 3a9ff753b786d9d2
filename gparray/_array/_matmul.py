"""``matmul``, the product behind ``@``: cuBLAS through the matmul planner, which turns
transposed and column-sliced views into op flags and broadcast batch dimensions into
strided-batched calls (gparray/_engine/_matmul_plan.py, gparray/_engine/_blas.py); integer
and boolean products on gparray's own kernels (gparray/_engine/_matmul_int.py). It sits in
the Array layer because Array's operators are built from it; the namespace re-exports it
(gparray/_api/_linear_algebra.py)."""
from __future__ import annotations

from .._core import _backend
from .._core import _dtypes as _dt
from .._core._device import same_device
from .._engine import _blas, _matmul_int, _transfer
from .._engine import _matmul_plan as _mp
from . import _build
from ._build import _copy, _empty


def _elem_strides(x):
    isz = x._dtype.itemsize
    return tuple(s // isz for s in x._strides)


# The common case served from a memo: float operands of the product's dtype whose layouts
# cuBLAS reads in place. Keyed by everything the plan and its cuBLAS call depend on: both
# operands' shapes, byte strides and dtypes (the plan is the same on every device).
_fast: dict = {}        # (shape1, strides1, dtype1, shape2, strides2, dtype2) -> (shape, dtype, GemmCall)
FAST_MAX = 1024         # entries kept (the memo is cleared when full)
_one_device = None      # exactly one visible device: no device check before the call


def matmul(x1, x2, /):
    """The matrix product of ``x1`` and ``x2`` (NumPy's ``matmul`` rules: 1-D operands are
    promoted to a row or a column and that dimension is dropped; batch dimensions
    broadcast; 0-d operands are a ValueError). Floating and complex dtypes run on cuBLAS in
    full precision (float16: computed in float32, rounded once); integer dtypes are exact in
    the result dtype with wraparound and booleans are OR of ANDs, on gparray's own kernel,
    which reads any layout in place (gparray/_engine/_matmul_int.py)."""
    if isinstance(x1, _build.Array) and isinstance(x2, _build.Array):
        dev, d2 = x1._device, x2._device
        if dev is d2 or dev._id == d2._id:
            f = _fast.get((x1._shape, x1._strides, x1._dtype, x2._shape, x2._strides, x2._dtype))
            if f is not None and (_one_device or _current_device() == dev._id):
                out = _empty(f[0], f[1], dev)
                _blas.launch(f[2], x1._ptr, x2._ptr, out._ptr, dev._id, out._buf.stream)
                return out
    return _matmul(x1, x2)


def _current_device() -> int:
    return _backend.cupy().cuda.runtime.getDevice()


def _matmul(x1, x2):
    global _one_device
    name = "matmul"
    _operands(x1, x2, name)
    ct = _dt.promote_types(x1._dtype, x2._dtype)
    dev = x1._device
    key = (x1._shape, x1._strides, x1._dtype, x2._shape, x2._strides, x2._dtype)
    p = _mp.plan(x1._shape, _elem_strides(x1), x2._shape, _elem_strides(x2), ct.kind, name)
    if p.kind == "empty":
        return _empty(p.shape, ct, dev)
    if p.kind == "zeros":
        out = _empty(p.shape, ct, dev)
        _transfer.memset0(out)
        return out
    if p.kind == "int":
        x1 = x1 if x1._dtype == ct else _copy(x1, ct)
        x2 = x2 if x2._dtype == ct else _copy(x2, ct)
        out = _empty(p.shape, ct, dev)
        _matmul_int.matmul(x1, x2, out)
        return out
    rt = ct
    if ct == _dt.float16:       # no half-precision BLAS path: float32 products, rounded once
        ct = _dt.float32
    changed = False
    if x1._dtype != ct or (p.a is not None and p.a.copy):
        x1, changed = _copy(x1, ct), True
    if x2._dtype != ct or (p.b is not None and p.b.copy):
        x2, changed = _copy(x2, ct), True
    if changed:  # plan again on the C-contiguous copies that will be read
        p = _mp.plan(x1._shape, _elem_strides(x1), x2._shape, _elem_strides(x2), ct.kind, name)
    call = _blas.prepare(p, ct)
    out = _empty(p.shape, ct, dev)
    cp = _backend.cupy()
    if _one_device is None:
        _one_device = _backend.device_count() == 1
    if cp.cuda.runtime.getDevice() == dev._id:
        _blas.launch(call, x1._ptr, x2._ptr, out._ptr, dev._id, out._buf.stream)
    else:
        with cp.cuda.Device(dev._id):
            _blas.launch(call, x1._ptr, x2._ptr, out._ptr, dev._id, cp.cuda.get_current_stream().ptr)
    if not changed and rt == ct:
        if len(_fast) >= FAST_MAX:
            _fast.clear()
        _fast[key] = (p.shape, ct, call)
    return out if rt == ct else _copy(out, rt)


def _matmul_shape(x1, x2, name: str = "matmul") -> tuple:
    """The shape of ``x1 @ x2`` (the planner's checks and errors, no device work)."""
    return _mp.plan(x1._shape, _elem_strides(x1), x2._shape, _elem_strides(x2), "f", name).shape


def _operands(x1, x2, name):
    if not isinstance(x1, _build.Array) or not isinstance(x2, _build.Array):
        raise TypeError(f"{name}: both operands must be gparray Arrays, got {type(x1).__name__} and "
                        f"{type(x2).__name__}")
    same_device(name, x1, x2)
