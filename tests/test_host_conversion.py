"""CPU tier: the host conversion policy of issue 16 (gparray/_core/_host_conversion.py): mode
parsing, GPARRAY_HOST_CONVERSION read at first use, set_host_conversion and the
host_conversion context manager, and what Array.__array__ does in each mode, on an Array
whose device-to-host copy is replaced by a NumPy array (no GPU; the GPU tier is
tests/test_host_conversion_gpu.py)."""
import operator
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gparray as xp
from gparray._core import _host_conversion as hc
from gparray._array import Array
from gparray._core._device import Device


@pytest.fixture(autouse=True)
def _restore_mode():
    """Every test leaves the process's mode (and whether the variable was read) as it was."""
    saved = hc._mode
    yield
    hc._mode = saved


@pytest.fixture
def fresh(monkeypatch):
    """The mode forgotten, GPARRAY_HOST_CONVERSION unset: the next use reads the variable."""
    monkeypatch.delenv(hc.ENV, raising=False)
    hc._reset()
    return monkeypatch


# ---------------------------------------------------------------------------- names
def test_public_names():
    assert xp.HostConversionWarning is xp.cuda.HostConversionWarning is hc.HostConversionWarning
    assert issubclass(xp.HostConversionWarning, UserWarning)
    assert "HostConversionWarning" in xp.__all__
    for name in ("HostConversionWarning", "get_host_conversion", "host_conversion", "set_host_conversion"):
        assert name in xp.cuda.__all__ and getattr(xp.cuda, name) is getattr(hc, name)


# ---------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("text,mode", [("allow", "allow"), ("warn", "warn"), ("raise", "raise"),
                                       (" RAISE ", "raise"), ("Warn\n", "warn")])
def test_parse_valid(text, mode):
    assert hc.parse(text) == mode


@pytest.mark.parametrize("bad", ["", "error", "rasie", "allowed", "0", None, 1, True, ["raise"]])
def test_parse_invalid_names_the_valid_modes(bad):
    with pytest.raises(ValueError) as info:
        hc.parse(bad, "set_host_conversion")
    msg = str(info.value)
    assert msg.startswith("set_host_conversion: invalid host conversion mode")
    assert repr(bad) in msg
    assert "'allow', 'warn', 'raise'" in msg


def test_default_is_allow(fresh):
    assert xp.cuda.get_host_conversion() == "allow"
    fresh.setenv(hc.ENV, "   ")
    hc._reset()
    assert xp.cuda.get_host_conversion() == "allow"


@pytest.mark.parametrize("value,mode", [("warn", "warn"), ("raise", "raise"), ("Allow", "allow")])
def test_environment_variable(fresh, value, mode):
    fresh.setenv(hc.ENV, value)
    assert xp.cuda.get_host_conversion() == mode


def test_environment_is_read_at_first_use_only(fresh):
    fresh.setenv(hc.ENV, "raise")
    assert hc._mode is None                      # nothing read yet
    assert xp.cuda.get_host_conversion() == "raise"
    fresh.setenv(hc.ENV, "warn")                 # read once: later changes are ignored
    assert xp.cuda.get_host_conversion() == "raise"


def test_invalid_environment_variable_fails_at_first_use_naming_it(fresh):
    fresh.setenv(hc.ENV, "strict")
    with pytest.raises(ValueError, match=r"^environment variable GPARRAY_HOST_CONVERSION: invalid host "
                                         r"conversion mode 'strict'; expected one of 'allow', 'warn', 'raise'$"):
        xp.cuda.get_host_conversion()
    with pytest.raises(ValueError, match="GPARRAY_HOST_CONVERSION"):
        hc.check(_Fake())


def test_set_host_conversion_over_an_invalid_variable_raises_too(fresh):
    # the previous mode cannot be given: the error names the variable instead of hiding it
    fresh.setenv(hc.ENV, "strict")
    with pytest.raises(ValueError, match="GPARRAY_HOST_CONVERSION"):
        xp.cuda.set_host_conversion("warn")


def test_import_does_not_read_the_variable():
    """A bad value does not break ``import gparray``; the first use reports it."""
    code = ("import gparray, gparray._core._host_conversion as h\n"
            "assert h._mode is None\n"
            "try:\n    gparray.cuda.get_host_conversion()\nexcept ValueError as e:\n    print('ValueError', e)\n")
    env = dict(os.environ, GPARRAY_HOST_CONVERSION="bogus")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ValueError environment variable GPARRAY_HOST_CONVERSION: invalid host "
                                 "conversion mode 'bogus'"), out.stdout


# ---------------------------------------------------------------------------- set / context manager
def test_set_returns_the_previous_mode(fresh):
    assert xp.cuda.set_host_conversion("raise") == "allow"
    assert xp.cuda.get_host_conversion() == "raise"
    assert xp.cuda.set_host_conversion(" warn ") == "raise"
    assert xp.cuda.set_host_conversion("allow") == "warn"
    assert xp.cuda.get_host_conversion() == "allow"


def test_set_invalid_leaves_the_mode(fresh):
    xp.cuda.set_host_conversion("warn")
    with pytest.raises(ValueError, match=r"^set_host_conversion: invalid host conversion mode 'never'; "
                                         r"expected one of 'allow', 'warn', 'raise'$"):
        xp.cuda.set_host_conversion("never")
    assert xp.cuda.get_host_conversion() == "warn"


def test_set_overrides_the_variable(fresh):
    fresh.setenv(hc.ENV, "raise")
    assert xp.cuda.set_host_conversion("allow") == "raise"
    assert xp.cuda.get_host_conversion() == "allow"


def test_context_manager_sets_and_restores(fresh):
    xp.cuda.set_host_conversion("warn")
    with xp.cuda.host_conversion("raise") as mode:
        assert mode == "raise" and xp.cuda.get_host_conversion() == "raise"
        with xp.cuda.host_conversion("allow"):
            assert xp.cuda.get_host_conversion() == "allow"
        assert xp.cuda.get_host_conversion() == "raise"
    assert xp.cuda.get_host_conversion() == "warn"


def test_context_manager_restores_after_an_exception(fresh):
    with pytest.raises(KeyError):
        with xp.cuda.host_conversion("raise"):
            raise KeyError("x")
    assert xp.cuda.get_host_conversion() == "allow"


def test_context_manager_checks_the_mode_when_made(fresh):
    with pytest.raises(ValueError, match=r"^host_conversion: invalid host conversion mode 'loud'; "
                                         r"expected one of 'allow', 'warn', 'raise'$"):
        xp.cuda.host_conversion("loud")
    assert xp.cuda.get_host_conversion() == "allow"
    assert repr(xp.cuda.host_conversion("WARN")) == "host_conversion('warn')"


def test_context_manager_reads_the_variable_for_the_mode_to_restore(fresh):
    fresh.setenv(hc.ENV, "warn")
    with xp.cuda.host_conversion("raise"):
        assert xp.cuda.get_host_conversion() == "raise"
    assert xp.cuda.get_host_conversion() == "warn"


# ---------------------------------------------------------------------------- check and messages
class _Fake:
    shape = (200000, 100)
    dtype = np.dtype("float32")
    device = Device(0)
    nbytes = 200000 * 100 * 4


def test_describe():
    assert hc.describe(_Fake()) == "shape (200000, 100), float32, cuda:0, 76.3 MiB"

    class Small(_Fake):
        shape, nbytes = (3,), 24

    assert hc.describe(Small()) == "shape (3,), float32, cuda:0, 24 bytes"


def test_check_allow_is_silent(fresh):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hc.check(_Fake()) is None


def test_check_warn(fresh):
    xp.cuda.set_host_conversion("warn")
    with pytest.warns(xp.HostConversionWarning) as rec:
        hc.check(_Fake())
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert msg.startswith("implicit conversion of a gparray Array (shape (200000, 100), float32, cuda:0, "
                          "76.3 MiB) to a NumPy array: a device-to-host copy")
    for hint in ('numpy.from_dlpack(x, device="cpu")', "gparray.cuda.set_host_conversion('allow')",
                 "GPARRAY_HOST_CONVERSION=allow", "category=gparray.HostConversionWarning"):
        assert hint in msg, hint


def test_check_raise(fresh):
    xp.cuda.set_host_conversion("raise")
    with pytest.raises(TypeError) as info:
        hc.check(_Fake())
    msg = str(info.value)
    assert msg.startswith("Implicit conversion to a NumPy array is not allowed (a gparray Array: "
                          "shape (200000, 100), float32, cuda:0, 76.3 MiB; host conversion mode 'raise'). ")
    for hint in ('numpy.from_dlpack(x, device="cpu")', "gparray.cuda.set_host_conversion('allow')",
                 "GPARRAY_HOST_CONVERSION=allow"):
        assert hint in msg, hint


def test_check_reads_the_variable_at_first_use(fresh):
    fresh.setenv(hc.ENV, "raise")
    with pytest.raises(TypeError, match="^Implicit conversion to a NumPy array is not allowed"):
        hc.check(_Fake())
    assert hc._mode == "raise"


# ---------------------------------------------------------------------------- Array.__array__
@pytest.fixture
def host_array(monkeypatch, fresh):
    """A 2 x 3 float32 Array whose device-to-host copy is a NumPy array (no GPU): the real
    __array__, __float__, __repr__... around it."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    copies = []

    def fake_to_numpy(self):
        copies.append(self.shape)
        return np.arange(self.size).astype(self.dtype).reshape(self.shape)

    monkeypatch.setattr(Array, "_to_numpy", fake_to_numpy)
    x = Array._new(None, 0, (2, 3), (12, 4), np.dtype("float32"), Device(0))
    one = Array._new(None, 0, (), (), np.dtype("int64"), Device(0))
    return x, one, values, copies


def test_array_allow(host_array):
    x, _, values, copies = host_array
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(x), values)
        assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert copies == [(2, 3), (2, 3)]


def test_array_warn_points_at_the_caller(host_array):
    x, _, values, _ = host_array
    xp.cuda.set_host_conversion("warn")
    with pytest.warns(xp.HostConversionWarning, match=r"shape \(2, 3\), float32, cuda:0, 24 bytes") as rec:
        got = np.asarray(x)
    np.testing.assert_array_equal(got, values)        # the copy still happens
    assert len(rec) == 1 and rec[0].filename == __file__   # attributed to the numpy.asarray call


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda a: np.asarray(a, copy=True),
                                     lambda a: np.asarray(a, dtype=np.float64), np.ascontiguousarray],
                         ids=["asarray", "array", "asarray-copy", "asarray-dtype", "ascontiguousarray"])
def test_array_raise(host_array, convert):
    x, _, _, copies = host_array
    with xp.cuda.host_conversion("raise"):
        with pytest.raises(TypeError, match="^Implicit conversion to a NumPy array is not allowed"):
            convert(x)
    assert copies == []                                # refused before any transfer
    np.testing.assert_array_equal(convert(x), np.arange(6).reshape(2, 3))   # allowed again


def test_array_copy_false_is_still_a_value_error(host_array):
    x = host_array[0]
    for mode in hc.MODES:
        with xp.cuda.host_conversion(mode):
            with pytest.raises(ValueError, match="copy=False cannot be honoured"):
                np.asarray(x, copy=False)


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_explicit_paths_are_outside_the_policy(host_array, mode):
    x, one, _, copies = host_array
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with xp.cuda.host_conversion(mode):
            r = repr(x)
            assert r.startswith("Array([[0., 1., 2.],") and r.endswith("dtype=float32, device=cuda:0)")
            assert str(x).startswith("[[0. 1. 2.]")
            assert int(one) == 0 and float(one) == 0.0 and bool(one) is False and complex(one) == 0j
            assert operator.index(one) == 0
    assert len(copies) == 7
