"""CPU tier: the NumPy-compatible behaviour SciPy relies on that needs no GPU.

Arrays here are built with the private constructor over no memory (``_bare``): enough for
what touches only shapes, dtypes and the protocol methods. The same behaviour on real
device data is tests/test_numpy_compat_gpu.py."""
import numpy as np
import pytest

import gparray as xp
from gparray._array import Array
from gparray._core._device import Device
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
    from gparray._array import _elementwise as ef

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


def test_bool_with_numbers_casts_the_bool_operand(monkeypatch):
    """A bool array with a number (NumPy: ``mask * 2.5`` is float64, ``mask + i8`` int8): the
    bool operand is cast to the other's dtype first (the GPU result: tests/test_numpy_compat_gpu.py)."""
    from gparray._array import _ops
    casts = []
    monkeypatch.setattr(_ops, "_copy", lambda x, dt: casts.append(dt) or _bare(x.shape, dt))
    a, i8 = _bare((3,), xp.bool), _bare((3,), xp.int8)
    for other, dt in ((i8, xp.int8), (1, xp.int64), (2.5, xp.float64), (1j, xp.complex128)):
        x1, x2 = _ops._bool_operand_cast("numeric", a, other)
        assert x1.dtype == dt and x2 is other
        x1, x2 = _ops._bool_operand_cast("numeric", other, a)
        assert x1 is other and x2.dtype == dt
    assert _ops._bool_operand_cast("integer", a, 2.5) is None        # float64 not an integer dtype
    assert _ops._bool_operand_cast("integer or boolean", a, 1) is None  # the op takes bools itself
    assert _ops._bool_operand_cast("numeric", a, a) is None
    assert _ops._bool_operand_cast("numeric", i8, 2) is None


# ---------------------------------------------------------------------------------------
# 5. copy.copy, copy.deepcopy and pickle
# ---------------------------------------------------------------------------------------

def test_copy_and_deepcopy_are_device_copies(monkeypatch):
    import copy

    from gparray._array import _object

    made = []
    monkeypatch.setattr(_object, "_copy", lambda x, dtype=None: made.append(x) or _bare(x.shape, x.dtype))
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

    from gparray._array import _build

    host = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)
    monkeypatch.setattr(Array, "_to_numpy", lambda self: host)
    uploads = []
    monkeypatch.setattr(_build, "current_device", lambda: Device(0))
    monkeypatch.setattr(_build, "_from_host", lambda a, dev, dtype=None: uploads.append((a, dev)) or "up")
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
    from gparray._api import _creation
    from gparray._array import _elementwise as ef

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


# ---------------------------------------------------------------------------------------
# 4. NumPy-style methods: each one's call of the namespace (recorded, nothing runs)
# ---------------------------------------------------------------------------------------

class _Ret:
    """What a recorded namespace function returns: its name (equal to R(name))."""

    def __init__(self, name):
        self.name = name
        self.shape = ()

    def __eq__(self, other):
        return type(other) is _Ret and other.name == self.name

    __hash__ = None

    def __repr__(self):
        return f"R({self.name})"


R = _Ret
X = _bare((2, 1, 3))
NS = ("reshape", "squeeze", "permute_dims", "sum", "prod", "mean", "std", "var", "max", "min", "any",
      "all", "argmax", "argmin", "cumulative_sum", "cumulative_prod", "clip", "round", "conj", "nonzero",
      "argsort", "matmul", "tensordot", "multiply", "asarray", "astype", "zeros_like")


@pytest.fixture
def ns_calls(monkeypatch):
    calls = []
    for name in NS:
        monkeypatch.setattr(xp, name, lambda *a, _n=name, **k: calls.append((_n, a, k)) or _Ret(_n))
    return calls


F32, I64 = xp.float32, xp.int64
_Y0, _Y1, _Y3 = _bare(()), _bare((3,)), _bare((4, 3, 5))
METHOD_CASES = [
    (lambda x: x.reshape(3, 2), [("reshape", (X, (3, 2)), {"copy": None})]),
    (lambda x: x.reshape((3, 2)), [("reshape", (X, (3, 2)), {"copy": None})]),
    (lambda x: x.reshape(-1, copy=True), [("reshape", (X, (-1,)), {"copy": True})]),
    (lambda x: x.reshape(np.int64(6)), [("reshape", (X, (6,)), {"copy": None})]),
    (lambda x: x.ravel(), [("reshape", (X, (-1,)), {})]),
    (lambda x: x.flatten(), [("reshape", (X, (-1,)), {"copy": True})]),
    (lambda x: x.squeeze(), [("squeeze", (X,), {"axis": (1,)})]),
    (lambda x: x.squeeze(axis=-2), [("squeeze", (X,), {"axis": -2})]),
    (lambda x: x.transpose(), [("permute_dims", (X, (2, 1, 0)), {})]),
    (lambda x: x.transpose(None), [("permute_dims", (X, (2, 1, 0)), {})]),
    (lambda x: x.transpose(1, 0, 2), [("permute_dims", (X, (1, 0, 2)), {})]),
    (lambda x: x.transpose([2, 0, 1]), [("permute_dims", (X, (2, 0, 1)), {})]),
    (lambda x: x.swapaxes(0, -1), [("permute_dims", (X, (2, 1, 0)), {})]),
    (lambda x: x.sum(), [("sum", (X,), {"axis": None, "dtype": None, "keepdims": False})]),
    (lambda x: x.sum(-1, F32, None, True), [("sum", (X,), {"axis": -1, "dtype": F32, "keepdims": True})]),
    (lambda x: x.prod(axis=0), [("prod", (X,), {"axis": 0, "dtype": None, "keepdims": False})]),
    (lambda x: x.mean(1), [("mean", (X,), {"axis": 1, "keepdims": False})]),
    (lambda x: x.mean(dtype=F32), [("astype", (X, F32), {}), ("mean", (R("astype"),),
                                                              {"axis": None, "keepdims": False})]),
    (lambda x: x.std(ddof=1), [("std", (X,), {"axis": None, "correction": 1, "keepdims": False})]),
    (lambda x: x.var(0, ddof=1, correction=0.5, keepdims=True),
     [("var", (X,), {"axis": 0, "correction": 0.5, "keepdims": True})]),
    (lambda x: x.max(axis=(0, 2), keepdims=True), [("max", (X,), {"axis": (0, 2), "keepdims": True})]),
    (lambda x: x.min(), [("min", (X,), {"axis": None, "keepdims": False})]),
    (lambda x: x.any(0), [("any", (X,), {"axis": 0, "keepdims": False})]),
    (lambda x: x.all(keepdims=True), [("all", (X,), {"axis": None, "keepdims": True})]),
    (lambda x: x.argmax(), [("argmax", (X,), {"axis": None, "keepdims": False})]),
    (lambda x: x.argmin(axis=1, keepdims=True), [("argmin", (X,), {"axis": 1, "keepdims": True})]),
    (lambda x: x.cumsum(), [("reshape", (X, (-1,)), {}),
                            ("cumulative_sum", (R("reshape"),), {"axis": 0, "dtype": None})]),
    (lambda x: x.cumsum(-1, I64), [("cumulative_sum", (X,), {"axis": -1, "dtype": I64})]),
    (lambda x: x.cumprod(), [("reshape", (X, (-1,)), {}),
                             ("cumulative_prod", (R("reshape"),), {"axis": 0, "dtype": None})]),
    (lambda x: x.clip(0, 1), [("clip", (X, 0, 1), {})]),
    (lambda x: x.clip(max=2.5), [("clip", (X, None, 2.5), {})]),
    (lambda x: x.round(), [("round", (X,), {})]),
    (lambda x: x.conj(), [("conj", (X,), {})]),
    (lambda x: x.conjugate(), [("conj", (X,), {})]),
    (lambda x: x.nonzero(), [("nonzero", (X,), {})]),
    (lambda x: x.argsort(), [("argsort", (X,), {"axis": -1})]),
    (lambda x: x.argsort(axis=None, kind="quicksort"),
     [("reshape", (X, (-1,)), {}), ("argsort", (R("reshape"),), {"axis": 0})]),
    (lambda x: x.copy(), [("asarray", (X,), {"copy": True})]),
    (lambda x: x.dot(_Y1), [("matmul", (X, _Y1), {})]),
    (lambda x: x.dot(_Y0), [("multiply", (X, _Y0), {})]),
    (lambda x: x.dot(_Y3), [("tensordot", (X, _Y3), {"axes": ((2,), (1,))})]),
]


@pytest.mark.parametrize("call, expected", METHOD_CASES, ids=range(len(METHOD_CASES)))
def test_methods_delegate_to_the_namespace(ns_calls, call, expected):
    result = call(X)
    assert ns_calls == expected
    assert result == R(expected[-1][0])


@pytest.mark.parametrize("call, expected", [
    (lambda x: np.sum(x), [("sum", (X,), {"axis": None, "dtype": None, "keepdims": False})]),
    (lambda x: np.mean(x, axis=0), [("mean", (X,), {"axis": 0, "keepdims": False})]),
    (lambda x: np.std(x), [("std", (X,), {"axis": None, "correction": 0, "keepdims": False})]),
    (lambda x: np.max(x), [("max", (X,), {"axis": None, "keepdims": False})]),
    (lambda x: np.any(x), [("any", (X,), {"axis": None, "keepdims": False})]),
    (lambda x: np.argmax(x), [("argmax", (X,), {"axis": None, "keepdims": False})]),
    (lambda x: np.prod(x, axis=1), [("prod", (X,), {"axis": 1, "dtype": None, "keepdims": False})]),
    (lambda x: np.reshape(x, (3, 2)), [("reshape", (X, (3, 2)), {"copy": None})]),
    (lambda x: np.transpose(x), [("permute_dims", (X, (2, 1, 0)), {})]),
    (lambda x: np.squeeze(x), [("squeeze", (X,), {"axis": (1,)})]),
    (lambda x: np.round(x), [("round", (X,), {})]),
    (lambda x: np.clip(x, 0, 1), [("clip", (X, 0, 1), {})]),
    (lambda x: np.argsort(x), [("argsort", (X,), {"axis": -1})]),
], ids=range(13))
def test_numpy_functions_reach_the_methods(ns_calls, call, expected):
    # NumPy's functions call the method of a non-ndarray with their own keywords (out=None,
    # ddof=0, kind=None, ...): a TypeError there would make NumPy copy x to the host instead
    assert call(X) == R(expected[-1][0]) and ns_calls == expected


def test_bool_mean_std_var_in_float64(ns_calls):
    b = _bare((4,), xp.bool)
    for method in ("mean", "std", "var"):
        ns_calls.clear()
        getattr(b, method)()
        assert ns_calls[0] == ("astype", (b, xp.float64), {}) and ns_calls[1][0] == method


def test_method_argument_errors(ns_calls):
    with pytest.raises(TypeError, match="^reshape: expected a shape"):
        X.reshape()
    for call, name in [(lambda: X.reshape(6, order="F"), "reshape"), (lambda: X.ravel("K"), "ravel"),
                       (lambda: X.flatten("F"), "flatten"), (lambda: X.copy(order="F"), "copy")]:
        with pytest.raises(ValueError, match=f"^{name}: only order='C'"):
            call()
    with pytest.raises(ValueError, match="^sort: order= needs a structured dtype"):
        X.sort(order="a")
    with pytest.raises(ValueError, match="^item: can only convert an array of size 1"):
        X.item()
    with pytest.raises(IndexError, match="^item: index 6 is out of bounds for size 6"):
        X.item(6)
    with pytest.raises(ValueError, match="^sum: out has shape"):
        X.sum(out=_bare((2,)))                 # the recorded sum returns a 0-d result
    with pytest.raises(TypeError, match="^max: out must be a gparray Array"):
        X.max(out=np.zeros(()))
    assert [c[0] for c in ns_calls] == ["sum"]   # out= is checked before max runs


def test_real_and_imag_are_views():
    c = _bare((2, 3), xp.complex64)
    re, im = c.real, c.imag
    for part, offset in ((re, 0), (im, 4)):
        assert part.dtype == xp.float32 and part.shape == c.shape and part.strides == c.strides
        assert part._buf is c._buf and part._offset == c._offset + offset
    r = _bare((3,), xp.float64)
    assert r.real is not r and r.real._buf is r._buf and r.real.dtype == xp.float64


def test_imag_of_a_real_array_is_zeros(ns_calls):
    r = _bare((3,), xp.int32)
    assert r.imag == R("zeros_like") and ns_calls == [("zeros_like", (r,), {})]


def test_spec_attributes_keep_their_meaning():
    x = _bare((2, 3, 4))
    with pytest.raises(ValueError, match="^Array.T: "):     # the spec's T: 2-d only
        x.T
    assert x.mT.shape == (2, 4, 3) and x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24
    for name in ("to_device", "__array_namespace__", "__dlpack__", "device", "dtype"):
        assert name not in vars(Array.__mro__[1]), name
    assert "__dict__" not in dir(x) and not hasattr(x, "__dict__")    # still slots only
