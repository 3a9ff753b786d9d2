"""CPU tier: operands on different devices are a ValueError naming the function and both
devices, raised before any allocation, CuPy call or kernel launch (issue 19, item 1).

The arrays are fakes (``Array._new`` over an object with a ``ptr``) on cuda:1 and cuda:2
(never cuda:0: the compiled fast paths serve only combinations they recorded, on the device
they ran on, so they can launch nothing for these). Every way to the GPU -- the CuPy module,
the pool's ``alloc``, the launch entry points of ``gparray/_engine/_launch.py`` and the
transfers -- is replaced, wherever a gparray module bound it, by a function raising
``ReachedCUDA`` (an AssertionError), and ``device_count`` says 4. Each case then runs twice:
with mixed devices it must raise the device ValueError, and with every array on cuda:1 it
must get past the checks and reach the GPU (``ReachedCUDA``), or finish where it needs none
(``broadcast_arrays``): proof that the case is otherwise valid, so the ValueError comes from
the device check and from nothing else. Nothing here can reach a GPU, so the file runs on
the GPU machine too.
"""
import operator
import sys

import numpy as np
import pytest

import gparray as xp
from gparray._core import _backend
from gparray._array import _elementwise
from gparray import _memory
from gparray._engine import _transfer
from gparray._array import Array
from gparray._core._device import Device, get_device, same_device
from gparray._engine import _launch
from gparray._array._ops import BinaryOp

from _fakes import isolate_engines

D1, D2 = "cuda:1", "cuda:2"


class ReachedCUDA(AssertionError):
    pass


def _boom(*args, **kwargs):
    raise ReachedCUDA("reached CUDA before the device check")


class _Buf:
    """Stands for device memory: an address and nothing behind it."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


_next_ptr = [1 << 32]


def fake(shape=(4,), dtype="float64", device=1):
    """An Array over no memory on cuda:``device`` (its own 1 MiB-aligned fake address, so no
    two fakes overlap)."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    strides = []
    s = dt.itemsize
    for n in reversed(shape):
        strides.insert(0, s)
        s *= max(n, 1)
    _next_ptr[0] += 1 << 20
    return Array._new(_Buf(_next_ptr[0]), 0, shape, tuple(strides), dt, get_device(device))


def _gparray_modules():
    return [m for name, m in list(sys.modules.items())
            if m is not None and (name == "gparray" or name.startswith("gparray."))]


@pytest.fixture
def no_cuda(monkeypatch):
    """Every way to the GPU raises ReachedCUDA, wherever a gparray module bound it; four
    devices are visible."""
    import gparray.fft  # noqa: F401  (bind the lazy subpackages first, so they are patched too)
    import gparray.linalg  # noqa: F401

    isolate_engines(monkeypatch)
    targets = [_backend.cupy, _backend.cupy_module, _backend.require_device, _backend.on_device,
               _backend._import_cupy, _backend.runtime, _backend.driver, _backend.current_stream,
               _backend.OnDevice, _backend.Event, _memory.alloc, _launch.run, _launch.run_plain, _launch.launch,
               _launch.kernel, _launch.bind, _launch.copy_span, _transfer.to_host, _transfer.from_host,
               _transfer.memset0, _transfer.to_device]
    ids = {id(t) for t in targets}
    count = _backend.device_count
    for mod in _gparray_modules():
        for attr, v in list(vars(mod).items()):
            if id(v) in ids:
                monkeypatch.setattr(mod, attr, _boom)
            elif v is count:
                monkeypatch.setattr(mod, attr, lambda: 4)
    monkeypatch.setattr(_backend, "_cupy", None)


# ---------------------------------------------------------------------------- the cases
# name -> (function name the message starts with, call(d) where d is the device of the
# second operand: 2 for the mismatch, 1 for the control; what the control does: "cuda" or "ok")
CASES = {}


def case(key, name=None, control="cuda"):
    def deco(f):
        CASES[key] = (name or key, f, control)
        return f
    return deco


def _dtype_for(op):
    from gparray._core import _dtypes as _dt

    cat = _dt._dtype_categories[op.category]
    return next(d for d in ("float64", "int64", "bool") if np.dtype(d) in cat)


# every binary elementwise function (through BinaryOp), both operands arrays
BINARY = sorted(n for n in _elementwise.__all__ if isinstance(getattr(xp, n), BinaryOp))
for _n in BINARY:
    def _f(d, _n=_n):
        dt = _dtype_for(getattr(xp, _n))
        return getattr(xp, _n)(fake((4,), dt), fake((4,), dt, d))
    CASES[_n] = (_n, _f, "cuda")
    # a broadcast pair and a scalar-shaped operand take the general path, not the fast one
    CASES[_n + "-broadcast"] = (_n, lambda d, _n=_n: getattr(xp, _n)(
        fake((3, 4), _dtype_for(getattr(xp, _n))), fake((4,), _dtype_for(getattr(xp, _n)), d)), "cuda")

# the operators: plain, reflected and in place (the name is the function's)
OPERATORS = {
    "add": ("add", "float64"), "sub": ("subtract", "float64"), "mul": ("multiply", "float64"),
    "truediv": ("divide", "float64"), "floordiv": ("floor_divide", "float64"),
    "mod": ("remainder", "float64"), "pow": ("pow", "float64"), "and_": ("bitwise_and", "int64"),
    "or_": ("bitwise_or", "int64"), "xor": ("bitwise_xor", "int64"),
    "lshift": ("bitwise_left_shift", "int64"), "rshift": ("bitwise_right_shift", "int64"),
    "eq": ("equal", "float64"), "ne": ("not_equal", "float64"), "lt": ("less", "float64"),
    "le": ("less_equal", "float64"), "gt": ("greater", "float64"), "ge": ("greater_equal", "float64"),
    "matmul": ("matmul", "float64"),
}
for _op, (_name, _dt) in OPERATORS.items():
    _shape = (3, 3) if _op == "matmul" else (4,)
    CASES[f"operator.{_op}"] = (_name, lambda d, _op=_op, _dt=_dt, _s=_shape: getattr(operator, _op)(
        fake(_s, _dt), fake(_s, _dt, d)), "cuda")
    dunder = "__" + _op.rstrip("_") + "__"
    if _op not in ("eq", "ne", "lt", "le", "gt", "ge"):
        rdunder = "__r" + _op.rstrip("_") + "__"
        CASES[f"Array.{rdunder}"] = (_name, lambda d, _r=rdunder, _dt=_dt, _s=_shape: getattr(
            fake(_s, _dt), _r)(fake(_s, _dt, d)), "cuda")
        iop = "i" + _op.rstrip("_")
        CASES[f"operator.{iop}"] = (_name, lambda d, _i=iop, _dt=_dt, _s=_shape: getattr(operator, _i)(
            fake(_s, _dt), fake(_s, _dt, d)), "cuda")


@case("multiply-bool-float", "multiply")   # a bool array with a float one: the bool one is cast first
def _(d):
    return xp.multiply(fake((4,), "bool"), fake((4,), "float64", d))


@case("add-bools", "add")      # two bools: served by logical_or, named add
def _(d):
    return xp.add(fake((4,), "bool"), fake((4,), "bool", d))


@case("clip-min", "clip")
def _(d):
    return xp.clip(fake(), fake((4,), "float64", d))


@case("clip-max", "clip")
def _(d):
    return xp.clip(fake(), 0.0, fake((4,), "float64", d))


@case("clip-both", "clip")
def _(d):
    return xp.clip(fake(), fake(), fake((4,), "float64", d))


@case("where-x1", "where")
def _(d):
    return xp.where(fake((4,), "bool"), fake((4,), "float64", d), fake())


@case("where-x2", "where")
def _(d):
    return xp.where(fake((4,), "bool"), fake(), fake((4,), "float64", d))


@case("where-scalar", "where")
def _(d):
    return xp.where(fake((4,), "bool"), 1.5, fake((4,), "float64", d))


@case("where-cond-fast", "where")   # one shape, contiguous: the fast path's shape
def _(d):
    return xp.where(fake((4,), "bool", d), fake(), fake())


@case("concat")
def _(d):
    return xp.concat([fake(), fake(), fake((4,), "float64", d)])


@case("concat-axis-none", "concat")
def _(d):
    return xp.concat([fake((2, 2)), fake((3,), "float64", d)], axis=None)


@case("concat-dtypes", "concat")   # mixed dtypes: the Python path
def _(d):
    return xp.concat([fake((4,), "float32"), fake((4,), "float64", d)])


@case("stack")
def _(d):
    return xp.stack([fake(), fake((4,), "float64", d)], axis=1)


@case("meshgrid")
def _(d):
    return xp.meshgrid(fake((3,)), fake((4,), "float64", d))


@case("broadcast_arrays", control="ok")
def _(d):
    return xp.broadcast_arrays(fake((3, 1)), fake((4,), "float64", d))


@case("matmul")
def _(d):
    return xp.matmul(fake((3, 4)), fake((4, 2), "float64", d))


@case("matmul-int", "matmul")
def _(d):
    return xp.matmul(fake((3, 4), "int64"), fake((4, 2), "int64", d))


@case("tensordot")
def _(d):
    return xp.tensordot(fake((3, 4)), fake((4, 2), "float64", d), axes=1)


@case("vecdot")
def _(d):
    return xp.vecdot(fake((3, 4)), fake((4,), "float64", d))


@case("linalg.matmul", "matmul")
def _(d):
    return xp.linalg.matmul(fake((3, 4)), fake((4, 2), "float64", d))


@case("linalg.tensordot", "tensordot")
def _(d):
    return xp.linalg.tensordot(fake((3, 4)), fake((4, 2), "float64", d), axes=1)


@case("linalg.vecdot", "vecdot")
def _(d):
    return xp.linalg.vecdot(fake((3, 4)), fake((3, 4), "float64", d))


@case("linalg.solve", "solve")
def _(d):
    return xp.linalg.solve(fake((3, 3)), fake((3,), "float64", d))


@case("linalg.cross", "cross")
def _(d):
    return xp.linalg.cross(fake((2, 3)), fake((3,), "float64", d))


@case("linalg.outer", "outer")
def _(d):
    return xp.linalg.outer(fake((3,)), fake((4,), "float64", d))


@case("linalg.pinv", "pinv")
def _(d):
    return xp.linalg.pinv(fake((3, 3)), rtol=fake((), "float64", d))


@case("linalg.matrix_rank", "matrix_rank")
def _(d):
    return xp.linalg.matrix_rank(fake((3, 3)), rtol=fake((), "float64", d))


@case("searchsorted-x2", "searchsorted")
def _(d):
    return xp.searchsorted(fake((8,)), fake((4,), "float64", d))


@case("searchsorted-sorter", "searchsorted")
def _(d):
    return xp.searchsorted(fake((8,)), fake((4,)), sorter=fake((8,), "int64", d))


@case("searchsorted-scalar-sorter", "searchsorted")   # x2 a scalar: no copy of it first
def _(d):
    return xp.searchsorted(fake((8,)), 1.5, sorter=fake((8,), "int32", d))


@case("isin")
def _(d):
    return xp.isin(fake((4,), "int64"), fake((6,), "int64", d))


@case("take")
def _(d):
    return xp.take(fake((8,)), fake((3,), "int64", d))


@case("take-int32", "take")    # an index dtype the kernel converts first
def _(d):
    return xp.take(fake((8,)), fake((3,), "int32", d))


@case("take_along_axis")
def _(d):
    return xp.take_along_axis(fake((2, 8)), fake((2, 3), "int64", d), axis=1)


@case("repeat")
def _(d):
    return xp.repeat(fake((3,)), fake((3,), "int64", d))


@case("diff-prepend", "diff")
def _(d):
    return xp.diff(fake((4,)), prepend=fake((1,), "float64", d))


@case("diff-append", "diff")
def _(d):
    return xp.diff(fake((4,)), append=fake((1,), "float64", d))


@case("full_like")
def _(d):
    return xp.full_like(fake((4,)), fake((), "float64", d))


@case("linspace")
def _(d):
    return xp.linspace(fake(()), fake((), "float64", d), 5)


@case("logspace")
def _(d):
    return xp.logspace(0.0, fake(()), 5, base=fake((), "float64", d))


@case("getitem-int", "__getitem__")
def _(d):
    return fake((8,))[fake((3,), "int64", d)]


@case("getitem-tuple", "__getitem__")
def _(d):
    return fake((4, 8))[1:, fake((3,), "int64", d)]


@case("getitem-mask", "__getitem__")
def _(d):
    return fake((8,))[fake((8,), "bool", d)]


@case("getitem-0d", "__getitem__")    # a 0-d index would be read as an int: not before the check
def _(d):
    return fake((8,))[fake((), "int64", d), ...]


@case("setitem-value", "__setitem__")
def _(d):
    fake((8,))[...] = fake((8,), "float64", d)


@case("setitem-index", "__setitem__")
def _(d):
    fake((8,))[fake((3,), "int64", d)] = 1.0


@case("setitem-index-value", "__setitem__")
def _(d):
    fake((8,))[fake((3,), "int64")] = fake((3,), "float64", d)


@case("setitem-mask", "__setitem__")
def _(d):
    fake((8,))[fake((8,), "bool", d)] = 0.0


@case("Array.dot", "dot")
def _(d):
    return fake((3, 4)).dot(fake((4, 2), "float64", d))


@case("Array.clip", "clip")
def _(d):
    return fake((4,)).clip(fake((4,), "float64", d))


@case("Array.sum-out", "sum")
def _(d):
    return fake((4,)).sum(out=fake((), "float64", d))


@case("Array.mean-out", "mean")
def _(d):
    return fake((4,), "bool").mean(out=fake((), "float64", d))


@case("Array.round-out", "round")
def _(d):
    return fake((4,)).round(2, out=fake((4,), "float64", d))


@case("numpy-ufunc-out", "add")
def _(d):
    return np.add(fake((4,)), fake((4,)), out=(fake((4,), "float64", d),))


@case("numpy-ufunc", "add")
def _(d):
    return np.add(fake((4,)), fake((4,), "float64", d))


# ---------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("key", sorted(CASES))
def test_mixed_devices_raise_before_any_device_work(no_cuda, key):
    name, call, _ = CASES[key]
    with pytest.raises(ValueError) as e:
        call(2)
    msg = str(e.value)
    assert msg.startswith(f"{name}: "), msg
    assert D1 in msg and D2 in msg and "different devices" in msg, msg


@pytest.mark.parametrize("key", sorted(CASES))
def test_one_device_gets_past_the_check(no_cuda, key):
    """The control: the same call on one device is valid up to the GPU (the patching
    works, and the mismatch above is the only thing wrong with its operands)."""
    _, call, control = CASES[key]
    if control == "ok":
        call(1)
        return
    with pytest.raises(ReachedCUDA):
        call(1)


def test_every_binary_function_and_operator_is_covered():
    assert len(BINARY) >= 28 and {"add", "atan2", "copysign", "hypot", "nextafter", "logaddexp",
                                   "bitwise_left_shift", "logical_xor", "maximum"} <= set(BINARY)
    ops = {v[0] for k, v in CASES.items() if k.startswith("operator.")}
    assert ops == {n for n, _ in OPERATORS.values()}


def test_broadcast_arrays_on_one_device_are_views(no_cuda):
    a, b = xp.broadcast_arrays(fake((3, 1)), fake((4,)))
    assert a.shape == b.shape == (3, 4) and a.strides[1] == 0 and b.strides[0] == 0


def test_moves_are_not_mismatches(no_cuda):
    """asarray(x, device=d) and astype(..., device=d) move x (a peer copy: the GPU), they
    do not refuse it; device= of a *_like function places the result."""
    with pytest.raises(ReachedCUDA):
        xp.asarray(fake(), device=D2)
    with pytest.raises(ReachedCUDA):
        xp.astype(fake(), xp.float32, device=D2)
    with pytest.raises(ReachedCUDA):
        xp.zeros_like(fake(), device=D2)


def test_same_device_helper():
    d1, d2 = get_device(1), get_device(2)

    class A:
        def __init__(self, dev):
            self._device = dev

    assert same_device("f", A(d1), None, A(Device(1))) is d1     # equal, not identical: one device
    assert same_device("f") is None and same_device("f", None) is None
    with pytest.raises(ValueError, match=r"^f: operands are on different devices \(cuda:1, cuda:2\)$"):
        same_device("f", A(d1), A(d1), A(d2))
    with pytest.raises(ValueError, match=r"^g: x and y are on different devices \(cuda:2, cuda:1\)$"):
        same_device("g", A(d2), A(d1), what="x and y")
