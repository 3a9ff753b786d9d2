"""CPU tier: gparray/_array/_numpy_interop.py — NumPy ufuncs on Arrays dispatch to gparray's
functions, NumPy scalars are operands like Python numbers, format() of 0-d arrays, and the
in-place casting rule, with the namespace functions replaced by recorders (no GPU). The
same on real data: tests/test_numpy_compat_gpu.py."""
import numpy as np
import pytest

import gparray as xp
from gparray._array import _numpy_interop as ni
from test_numpy_compat import _bare


@pytest.fixture
def calls(monkeypatch):
    """gparray.<name>(*args) records (name, args) and returns a marker tuple."""
    log = []
    for name in ("multiply", "log", "atan2", "pow", "abs", "divide", "bitwise_invert", "add", "round"):
        monkeypatch.setattr(xp, name, lambda *a, _n=name: log.append((_n, a)) or ("result", _n))
    return log


@pytest.mark.parametrize("ufunc, name", [(np.multiply, "multiply"), (np.log, "log"), (np.arctan2, "atan2"),
                                         (np.power, "pow"), (np.abs, "abs"), (np.true_divide, "divide"),
                                         (np.invert, "bitwise_invert"), (np.rint, "round")])
def test_ufuncs_map_to_the_gparray_function(calls, ufunc, name):
    x = _bare((3,))
    args = (x,) * ufunc.nin
    assert x.__array_ufunc__(ufunc, "__call__", *args) == ("result", name)
    assert calls == [(name, args)]


def test_numpy_scalars_become_python_numbers(calls):
    x = _bare((3,))
    x.__array_ufunc__(np.multiply, "__call__", np.float32(2.5), x)
    x.__array_ufunc__(np.add, "__call__", x, np.array(7, dtype=np.int16))  # 0-d NumPy array
    (_, (a, b)), (_, (c, d)) = calls
    assert type(a) is float and a == 2.5 and b is x
    assert c is x and type(d) is int and d == 7


@pytest.mark.parametrize("call", [
    lambda x: x.__array_ufunc__(np.add, "reduce", x),               # not a plain call
    lambda x: x.__array_ufunc__(np.fmod, "__call__", x, x),         # no gparray fmod
    lambda x: x.__array_ufunc__(np.add, "__call__", x, np.ones(3)),  # a NumPy array operand
    lambda x: x.__array_ufunc__(np.add, "__call__", x, x, dtype=np.float32),
])
def test_what_is_not_dispatched(calls, call):
    assert call(_bare((3,))) is NotImplemented
    assert calls == []


def test_numpy_operators_and_functions_reach_dispatch(calls):
    """NumPy itself calls __array_ufunc__: a NumPy scalar on the left, numpy.log(x) (a NumPy
    array operand, NumPy's TypeError: tests/test_numpy_compat_gpu.py, its message shows x)."""
    x = _bare((3,))
    assert np.float64(2) * x == ("result", "multiply")
    assert np.log(x) == ("result", "log")
    assert [c[0] for c in calls] == ["multiply", "log"]


def test_operators_take_numpy_scalars(monkeypatch):
    seen = []
    from gparray._array import _elementwise as ew
    # the operators hold their op objects: the call is caught on the op's class
    monkeypatch.setattr(type(ew.multiply), "__call__", lambda op, a, b: seen.append((op.__name__, a, b)) or "r")
    x = _bare((2,))
    assert x * np.int32(3) == "r" and x.__rmul__(np.float32(0.5)) == "r"
    assert seen == [("multiply", x, 3), ("multiply", 0.5, x)] and type(seen[0][2]) is int


def test_format_of_0d_and_nd(monkeypatch):
    monkeypatch.setattr(type(_bare(())), "item", lambda self, *a: 0.123456)
    assert f"{_bare(()):.3g}" == "0.123" and format(_bare(()), "") == "0.123456"
    with pytest.raises(TypeError, match="unsupported format string passed to Array.__format__"):
        f"{_bare((2,)):.3g}"


def test_inplace_dtype_error_carries_the_result_dtype():
    e = ni.InplaceDtypeError("add: ...", np.dtype(np.int64))
    assert isinstance(e, TypeError) and e.result_dtype == np.int64


def test_elementwise_functions_pickle_by_reference():
    """Dask and cubed pickle task graphs naming gparray's functions: each unpickles to the
    very same object (no compiled table state copied)."""
    import copy
    import pickle

    from gparray._array._ops import ClipOp, _TableOp
    ops = [n for n in dir(xp) if isinstance(getattr(xp, n), (_TableOp, ClipOp))]
    assert len(ops) > 50
    for n in ops:
        f = getattr(xp, n)
        assert pickle.loads(pickle.dumps(f)) is f and copy.deepcopy(f) is f
