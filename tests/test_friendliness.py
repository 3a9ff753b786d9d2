"""CPU tier: friendlier argument handling that needs no GPU to check (the device work is
stubbed): linspace's 0-d Array bounds, NumPy's wording and class for axis errors from the
namespace functions. The GPU tier checks the values (tests/test_friendliness_gpu.py)."""
import numpy as np
import pytest

import gparray as xp
from gparray._api import _creation
from gparray._array import Array
from gparray._core._device import Device
from gparray._engine._shapes import AxisError


class _Buf:
    """Stands for device memory: a fake address and the value a download gives."""

    def __init__(self, value):
        self.ptr = 0x10000
        self.value = value


def _fake(shape, dtype="float64", value=None):
    """An Array over no real memory; ``value`` is what a download of it gives."""
    dt = np.dtype(dtype)
    return Array._new(_Buf(value), 0, tuple(shape), tuple(8 for _ in shape), dt, Device(0))


@pytest.fixture
def stub_device(monkeypatch):
    """linspace without a GPU: downloads return the fake's value, launches are recorded."""
    launches = []
    monkeypatch.setattr(_creation, "_to_host", lambda x: np.asarray(x._buf.value, dtype=x._dtype))
    monkeypatch.setattr(_creation, "normalize_device", lambda device, name: device or Device(0))
    monkeypatch.setattr(_creation, "_empty", lambda shape, dtype, dev: _fake(shape, dtype))
    monkeypatch.setattr(_creation, "launch", lambda family, expr, dev, grid, args: launches.append((expr, args)))
    return launches


def test_linspace_takes_0d_arrays_as_numbers(stub_device):
    out = xp.linspace(_fake((), "float32", 1.5), _fake((), "int64", 4), 6)
    assert out.shape == (6,) and out.dtype == xp.float64      # the default, as for Python numbers
    (expr, args), = stub_device
    assert expr == "gp_linspace<double, double>"
    assert (float(args[1]), float(args[2]), float(args[3])) == (1.5, 4.0, 0.5)   # start, stop, step
    stub_device.clear()
    out = xp.linspace(0, _fake((), "complex128", 2 + 2j), 3, endpoint=False)
    (expr, args), = stub_device
    assert out.dtype == xp.complex128 and expr == "gp_linspace_complex<double, double>"
    assert (float(args[3]), float(args[4])) == (2.0, 2.0)


def test_linspace_computes_in_numpys_type(stub_device):
    """float32 bounds: the step is rounded in float32 and the kernel computes in float (as
    NumPy's linspace); a Python float bound is weak; an int64 bound makes it double."""
    out = xp.linspace(_fake((), "float32", 0.1), _fake((), "float32", 0.7), 4)
    (expr, args), = stub_device
    assert out.dtype == xp.float64 and expr == "gp_linspace<double, float>"
    lo, hi = np.float32(0.1), np.float32(0.7)
    assert args[1] == lo and args[2] == hi and type(args[3]) is np.float32
    assert args[3] == (hi - lo) / np.float32(3) and args[3] != np.float32((0.7 - 0.1) / 3)
    stub_device.clear()
    xp.linspace(_fake((), "float32", 0.1), 2.0, 4, dtype=xp.float32)
    assert stub_device[0][0] == "gp_linspace<float, float>"
    stub_device.clear()
    xp.linspace(np.float32(0.1), np.int64(2), 4, dtype=xp.float32)
    assert stub_device[0][0] == "gp_linspace<float, double>"


def test_linspace_keeps_its_checks(stub_device):
    with pytest.raises(ValueError, match=r"^linspace: start and stop must be numbers or 0-d arrays, got an "
                                         r"array of shape \(2,\)"):
        xp.linspace(_fake((2,), value=[0.0, 1.0]), 1, 5)
    with pytest.raises(TypeError, match="^linspace: start and stop must be numbers, got a bool array"):
        xp.linspace(0, _fake((), "bool", True), 5)
    with pytest.raises(TypeError, match="^linspace: start and stop must be numbers or 0-d arrays, got str"):
        xp.linspace("0", 1, 5)
    with pytest.raises(TypeError, match="^linspace: dtype must be a floating-point dtype"):
        xp.linspace(_fake((), value=0.0), 1, 5, dtype=xp.int32)
    with pytest.raises(ValueError, match="^linspace: num must be non-negative"):
        xp.linspace(_fake((), value=0.0), 1, -1)
    assert stub_device == []


@pytest.mark.parametrize("call", [
    lambda x: xp.sum(x, axis=10), lambda x: xp.mean(x, axis=(0, 10)), lambda x: xp.argmax(x, axis=10),
    lambda x: xp.cumulative_sum(x, axis=10), lambda x: xp.diff(x, axis=10), lambda x: xp.count_nonzero(x, axis=10)],
    ids=["sum", "mean", "argmax", "cumulative_sum", "diff", "count_nonzero"])
def test_axis_errors_read_like_numpys(call):
    x = _fake((4,))
    with pytest.raises(AxisError, match=r"^[a-z_]+: axis 10 is out of bounds for array of dimension 1$") as info:
        call(x)
    assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)


@pytest.mark.parametrize("obj, dtype", [
    ([np.int32(1), np.int32(2)], np.int32),          # SciPy: xp.asarray([np.int32(status) ...])
    ([np.float32(1.5), np.float32(2.0)], np.float32),
    ([[np.int16(1)], [np.int16(2)]], np.int16),
    ([np.arange(3, dtype=np.uint8)], np.uint8),
    ([np.int32(1), 5], np.int64),                     # NumPy's promotion of the mix
    ([np.float16(1.0)], np.float16),
    ([1, 2], np.int64), ([1.5, 2], np.float64), ([True, False], np.bool_), ([1j], np.complex128),
])
def test_nested_sequences_keep_numpy_dtypes(obj, dtype):
    """A sequence holding NumPy scalars or arrays gets NumPy's dtype (as NumPy, CuPy and
    PyTorch give); one of Python numbers only gets the default dtypes."""
    assert _creation._nested_to_numpy(obj, None, "asarray").dtype == np.dtype(dtype)
