"""GPU tier: the host conversion policy of issue 16 on real arrays. ``numpy.asarray(x)`` copies
under "allow", warns and copies under "warn", raises TypeError under "raise"; the explicit
copies (numpy.from_dlpack(x, device="cpu"), scalar conversions, printing, and gparray's own
uses of host values: 0-d index arrays, lists of arrays in asarray) work in every mode; the
environment variable is obeyed by a fresh process."""
import operator
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import gparray as xp
from gparray._core import _host_conversion as hc

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _restore_mode():
    saved = hc._mode
    yield
    hc._mode = saved


def _explicit(x):
    """The explicit host copy the messages recommend."""
    return np.from_dlpack(x, device="cpu")


def _sample():
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    return xp.asarray(a), a


def test_allow_copies_silently():
    x, a = _sample()
    with xp.cuda.host_conversion("allow"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = np.asarray(x)
            np.testing.assert_array_equal(got, a)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(np.asarray(x.T, dtype=np.float64), a.T.astype(np.float64))
            np.testing.assert_array_equal(np.array(x[1]), a[1])


def test_warn_warns_then_copies():
    x, a = _sample()
    with xp.cuda.host_conversion("warn"):
        with pytest.warns(xp.HostConversionWarning) as rec:
            got = np.asarray(x[:, 1:])
        np.testing.assert_array_equal(got, a[:, 1:])
        assert len(rec) == 1 and rec[0].filename == __file__
        msg = str(rec[0].message)
        assert f"(shape (3, 3), float32, {x.device}, 36 bytes)" in msg
        assert 'numpy.from_dlpack(x, device="cpu")' in msg and "set_host_conversion('allow')" in msg
        with pytest.warns(xp.HostConversionWarning, match=r"shape \(3, 4\), float32"):
            got64 = np.asarray(x, dtype=np.float64)
        np.testing.assert_array_equal(got64, a.astype(np.float64))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", xp.HostConversionWarning)   # the documented silencer
            np.testing.assert_array_equal(np.asarray(x), a)


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda v: np.asarray(v, copy=True),
                                     lambda v: np.asarray(v, dtype=np.float64), np.ascontiguousarray,
                                     lambda v: np.stack([v, v])],
                         ids=["asarray", "array", "asarray-copy", "asarray-dtype", "ascontiguousarray", "stack"])
def test_raise_refuses(convert):
    x, a = _sample()
    with xp.cuda.host_conversion("raise"):
        with pytest.raises(TypeError, match=r"^Implicit conversion to a NumPy array is not allowed \(a gparray "
                                            rf"Array: shape \(3, 4\), float32, {x.device}, 48 bytes;"):
            convert(x)
        x += 1          # the array is untouched and usable
    np.testing.assert_array_equal(np.asarray(x), a + 1)   # allowed again after the block


def test_copy_false_is_a_value_error_in_every_mode():
    x, _ = _sample()
    for mode in hc.MODES:
        with xp.cuda.host_conversion(mode):
            with pytest.raises(ValueError, match="copy=False cannot be honoured"):
                np.asarray(x, copy=False)


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_explicit_paths_work_in_every_mode(mode):
    x, a = _sample()
    i = xp.asarray(2)
    f = xp.asarray(2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no HostConversionWarning either
        with xp.cuda.host_conversion(mode):
            np.testing.assert_array_equal(_explicit(x), a)
            np.testing.assert_array_equal(_explicit(x.mT[::2]), a.T[::2])
            assert float(f) == 2.5 and int(i) == 2 and bool(i) is True and complex(f) == 2.5 + 0j
            assert operator.index(i) == 2 and [0, 1, 2, 3][i] == 2
            assert repr(x).startswith("Array([[-5.5, -4.5,") and "dtype=float32" in repr(x)
            assert str(x[0]).startswith("[-5.5 -4.5")
            # gparray's own reads of host values: a 0-d index, a list holding arrays
            np.testing.assert_array_equal(_explicit(x[i]), a[2])
            np.testing.assert_array_equal(_explicit(xp.asarray([x[0, 0], f])), np.array([-5.5, 2.5]))
            assert float(xp.sum(x)) == float(a.sum())
            np.testing.assert_array_equal(_explicit(xp.repeat(x[0], xp.asarray([1, 0, 2, 1]))),
                                          np.repeat(a[0], [1, 0, 2, 1]))   # counts read by gparray
            xp.cuda.synchronize()


def test_modes_switch_on_a_live_array():
    x, a = _sample()
    prev = xp.cuda.set_host_conversion("raise")
    try:
        with pytest.raises(TypeError):
            np.asarray(x)
        assert xp.cuda.set_host_conversion("warn") == "raise"
        with pytest.warns(xp.HostConversionWarning):
            np.testing.assert_array_equal(np.asarray(x), a)
        assert xp.cuda.set_host_conversion("allow") == "warn"
        np.testing.assert_array_equal(np.asarray(x), a)
    finally:
        xp.cuda.set_host_conversion(prev)


_SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    import gparray as xp
    x = xp.ones((2, 2), dtype=xp.float32)
    print("mode", xp.cuda.get_host_conversion())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            a = np.asarray(x)
            print("copied", a.sum(), "warnings", sum(issubclass(c.category, xp.HostConversionWarning) for c in w))
        except TypeError as e:
            print("TypeError", str(e).split(" (")[0])
    print("explicit", np.from_dlpack(x, device="cpu").sum())
""")


@pytest.mark.parametrize("value,expected", [
    (None, ["mode allow", "copied 4.0 warnings 0"]),
    ("allow", ["mode allow", "copied 4.0 warnings 0"]),
    ("warn", ["mode warn", "copied 4.0 warnings 1"]),
    ("raise", ["mode raise", "TypeError Implicit conversion to a NumPy array is not allowed"]),
])
def test_environment_variable_in_a_fresh_process(value, expected):
    env = dict(os.environ)
    env.pop(hc.ENV, None)
    if value is not None:
        env[hc.ENV] = value
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == expected + ["explicit 4.0"], out.stdout + out.stderr[-2000:]


def test_self_check_runs_under_any_mode():
    """``python -m gparray`` compares through numpy.asarray: it runs its checks under "allow"
    and reports the variable."""
    env = dict(os.environ, GPARRAY_HOST_CONVERSION="raise")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-m", "gparray"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "GPARRAY_HOST_CONVERSION raise" in " ".join(out.stdout.split())
    assert "OK    to numpy (numpy.asarray)" in out.stdout and "FAIL" not in out.stdout
