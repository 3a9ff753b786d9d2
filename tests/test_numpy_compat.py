"""CPU tier: the NumPy-compatible behaviour SciPy relies on that needs no GPU.

Arrays here are built with the private constructor over no memory (``_bare``): enough for
what touches only shapes, dtypes and the protocol methods. The same behaviour on real
device data is tests/test_numpy_compat_gpu.py."""
import numpy as np
import pytest

import gparray as xp
from gparray._array import Array
from gparray._device import Device
from gparray._engine import _shapes


class _Buf:
    """A device buffer that is never read: an address only."""

    def __init__(self, ptr):
        self.ptr = ptr


_next_ptr = [1 << 20]


def _bare(shape, dtype=xp.float64):
    """An Array of ``shape`` and ``dtype`` over no device memory (never read; each one at an
    address of its own, so no two overlap)."""
    dt = np.dtype(dtype)
    _next_ptr[0] += 1 << 20
    return Array._new(_Buf(_next_ptr[0]), 0, tuple(shape), _shapes.c_strides(tuple(shape), dt.itemsize), dt,
                      Device(0))


# ---------------------------------------------------------------------------------------
# 1. __iter__ raises for a 0-d array at iter(), not at the first next()
# ---------------------------------------------------------------------------------------

def test_iter_of_0d_raises_eagerly():
    x = _bare(())
    with pytest.raises(TypeError, match="^__iter__: iteration over a 0-dimensional array"):
        iter(x)
    assert not np.iterable(x)


def test_iter_of_nd_is_lazy_and_iterable():
    assert np.iterable(_bare((3,)))
    assert list(iter(_bare((0, 4)))) == []     # no element, so nothing is indexed
    it = iter(_bare((2, 5)))
    assert iter(it) is it                     # an iterator, not just an iterable


def test_len_of_0d_raises():
    with pytest.raises(TypeError, match="^__len__: "):
        len(_bare(()))
    assert len(_bare((7, 2))) == 7


# ---------------------------------------------------------------------------------------
# 3. bool + bool is logical_or, bool * bool logical_and (NumPy); bool - bool a TypeError
# ---------------------------------------------------------------------------------------

@pytest.fixture
def logical_calls(monkeypatch):
    """Record the calls that reach logical_or / logical_and's checked path (no kernel runs)."""
    from gparray import _elementwise_funcs as ef

    calls = []
    for name in ("logical_or", "logical_and"):
        op = getattr(ef, name)
        monkeypatch.setattr(op, "_apply", lambda x1, x2, out, _n=name: calls.append((_n, x1, x2, out)) or "r")
    return calls


def test_bool_add_and_multiply_are_logical(logical_calls):
    a, b = _bare((3,), xp.bool), _bare((3,), xp.bool)
    assert xp.add(a, b) == "r" and a + b == "r" and xp.multiply(a, b) == "r" and a * b == "r"
    assert a + True == "r" and False + a == "r" and a * True == "r" and True * a == "r"
    assert [c[0] for c in logical_calls] == ["logical_or"] * 2 + ["logical_and"] * 2 + \
        ["logical_or"] * 2 + ["logical_and"] * 2
    assert logical_calls[0][1:] == (a, b, None)
    assert logical_calls[5][1:] == (False, a, None)        # the reflected operand stays on the left


def test_bool_inplace_add_and_multiply_are_logical(logical_calls):
    a, b = _bare((3,), xp.bool), _bare((3,), xp.bool)
    a += b
    a *= True
    assert [(c[0], c[3]) for c in logical_calls] == [("logical_or", a), ("logical_and", a)]


def test_bool_subtract_and_mixed_operands_are_not_logical(logical_calls):
    a = _bare((3,), xp.bool)
    with pytest.raises(TypeError, match="^subtract: expected an array of numeric dtype, got bool"):
        xp.subtract(a, a)
    with pytest.raises(TypeError, match="^subtract: "):
        a - True
    with pytest.raises(TypeError, match="^add: expected at least one gparray Array"):
        xp.add(True, True)
    with pytest.raises(TypeError, match="^bitwise_left_shift: "):   # other ops keep their category
        a << a
    assert logical_calls == []


# ---------------------------------------------------------------------------------------
# 5. copy.copy, copy.deepcopy and pickle
# ---------------------------------------------------------------------------------------

def test_copy_and_deepcopy_are_device_copies(monkeypatch):
    import copy

    from gparray import _array

    made = []
    monkeypatch.setattr(_array, "_copy", lambda x, dtype=None: made.append(x) or _bare(x.shape, x.dtype))
    x = _bare((2, 3), xp.int16)
    for y in (copy.copy(x), copy.deepcopy(x)):
        assert type(y) is Array and y is not x and (y.shape, y.dtype) == (x.shape, x.dtype)
    assert made == [x, x]
    box = copy.deepcopy([x, x])               # the memo: one copy for one array
    assert box[0] is box[1] and box[0] is not x


@pytest.mark.parametrize("shape, dtype", [((), xp.float64), ((2, 3), xp.complex64), ((4,), xp.bool),
                                          ((0, 2), xp.float16)])
def test_pickle_goes_through_numpy(monkeypatch, shape, dtype):
    import pickle

    from gparray import _array

    host = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)
    monkeypatch.setattr(Array, "_to_numpy", lambda self: host)
    uploads = []
    monkeypatch.setattr(_array, "current_device", lambda: Device(0))
    monkeypatch.setattr(_array, "_from_host", lambda a, dev, dtype=None: uploads.append((a, dev)) or "up")
    data = pickle.dumps(_bare(shape, dtype))
    assert b"Block" not in data and b"_from_pickle" in data
    assert pickle.loads(data) == "up"
    (a, dev), = uploads
    assert dev == Device(0) and a.dtype == dtype and a.shape == shape
    np.testing.assert_array_equal(a, host)


# ---------------------------------------------------------------------------------------
# 6. logspace (an extension): pow(base, linspace(...)), run here on NumPy stand-ins
# ---------------------------------------------------------------------------------------

class _Host(np.ndarray):
    """A NumPy array that answers ``_dtype`` like an Array."""

    _dtype = property(lambda self: self.dtype)


@pytest.fixture
def host_logspace(monkeypatch):
    """gparray.logspace over NumPy: linspace, pow and astype replaced by NumPy's."""
    from gparray import _creation
    from gparray import _elementwise_funcs as ef

    calls = []

    def linspace(start, stop, num, *, endpoint=True, device=None):
        calls.append(("linspace", start, stop, num, endpoint, device))
        return np.linspace(start, stop, num, endpoint=endpoint).view(_Host)

    monkeypatch.setattr(_creation, "linspace", linspace)
    monkeypatch.setattr(ef, "pow", lambda b, y: calls.append(("pow", b)) or np.power(b, y).view(_Host))
    monkeypatch.setattr(_creation, "astype", lambda x, d: np.asarray(x).astype(d).view(_Host))
    return calls


@pytest.mark.parametrize("args, kw", [
    ((0, 3, 4), {}), ((1.5, -2.0, 7), {"endpoint": False}), ((0, 10, 11), {"base": 2}),
    ((0, 2, 5), {"base": 1j}), ((1j, 2, 3), {}), ((0, 3, 4), {"dtype": int}),
    ((0, 1, 5), {"dtype": xp.float32, "base": np.float32(3.0)}), ((2, 3, 0), {}),
    ((0, 3, 4), {"dtype": xp.complex64}), ((np.float32(0.5), np.float32(2.5), 5), {}),
], ids=repr)
def test_logspace_is_numpy_logspace(host_logspace, args, kw):
    got = xp.logspace(*args, **kw)
    want = np.logspace(*args, **{k: (np.dtype(v) if k == "dtype" else v) for k, v in kw.items()})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15)
    lin = host_logspace[0]        # the bounds reach linspace as given (NumPy scalars keep their dtype)
    assert lin == ("linspace", *args[:3], kw.get("endpoint", True), None)
    assert [type(v) for v in lin[1:3]] == [type(v) for v in args[:2]]
    assert type(host_logspace[1][1]) in (int, float, complex)   # NumPy scalars become Python ones


@pytest.mark.parametrize("kw, exc, msg", [
    ({"base": "10"}, TypeError, "^logspace: base must be a number"),
    ({"base": True}, TypeError, "^logspace: base must be a number"),
    ({"dtype": "float64"}, TypeError, "^logspace: expected one of the Array API dtypes"),
    ({"base": _bare((2,))}, ValueError, "^logspace: base must be a number or a 0-d non-bool array"),
    ({"base": _bare((), xp.bool)}, ValueError, "^logspace: base must be a number or a 0-d non-bool array"),
])
def test_logspace_rejects(host_logspace, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        xp.logspace(0, 1, 3, **kw)
    assert host_logspace == []                   # before any work on the device


def test_logspace_is_an_exported_extension():
    assert "logspace" in xp.__all__ and xp.logspace.__doc__.count("an extension") == 1
