"""``python -m gparray``: environment report and a self-check on every GPU.

Prints the versions of gparray, Python, NumPy, CuPy, the CUDA driver, runtime and NVRTC,
every visible GPU, and the kernel cache folder; then runs a few operations on each GPU and
compares them with NumPy. Exit status 0 when every check passed, 1 otherwise (also when no
CUDA device was found, which is said in exactly one line starting ``no CUDA device was found:``).

Written to survive a half-built gparray: every piece is looked up with getattr and every
failure is reported as one line, never as a traceback.
"""
from __future__ import annotations

import importlib
import os
import platform
import sys


def _err(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _cuda_version(v) -> str:
    try:
        v = int(v)
    except (TypeError, ValueError):
        return str(v)
    if v <= 0:
        return "none"
    return f"{v // 1000}.{(v % 1000) // 10}"


def _fmt_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _row(key: str, value) -> None:
    print(f"  {key:<22} {value}")


def _try(fn, default="unavailable"):
    try:
        return fn()
    except Exception as exc:  # report, never raise
        return f"{default} ({_err(exc)})"


# --------------------------------------------------------------------------- report

def _kernel_cache_dir(xp):
    public = getattr(getattr(xp, "cuda", None), "kernel_cache_dir", None)
    if callable(public):
        try:
            return str(public())
        except Exception:
            pass
    kernels = getattr(xp, "_kernels", None)
    if kernels is None:
        try:
            kernels = importlib.import_module("gparray._kernels")
        except Exception:
            kernels = None
    fn = getattr(kernels, "cache_dir", None)
    if callable(fn):
        try:
            return str(fn())
        except Exception:
            pass
    env = os.environ.get("GPARRAY_CACHE_DIR")
    if env:
        return env
    return os.path.join(os.path.expanduser("~"), ".cache", "gparray", "kernels")


def _dir_size(path: str):
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:
                pass
    return total, files


def _report(xp, backend, cp):
    """Print the environment; return (number of devices, reason when there is none)."""
    print("gparray environment")
    version = getattr(xp, "__version__", None) if xp is not None else None
    if version is None:
        try:
            version = importlib.import_module("gparray._core._version").__version__
        except Exception as exc:
            version = f"unknown ({_err(exc)})"
    _row("gparray", f"{version}  ({os.path.dirname(os.path.abspath(__file__))})")
    api = getattr(xp, "__array_api_version__", None) if xp is not None else None
    if api is not None:
        _row("array API version", api)
    _row("Python", f"{platform.python_version()} ({sys.executable})")
    _row("platform", platform.platform())
    try:
        import numpy
        _row("NumPy", numpy.__version__)
    except Exception as exc:
        _row("NumPy", f"missing ({_err(exc)})")

    reason = None
    if cp is None:
        _row("CuPy", "missing")
    else:
        _row("CuPy", f"{getattr(cp, '__version__', '?')} ({os.path.dirname(cp.__file__)})")
        rt = cp.cuda.runtime
        _row("CUDA driver", _try(lambda: _cuda_version(rt.driverGetVersion())))
        _row("CUDA runtime", _try(lambda: _cuda_version(rt.runtimeGetVersion())))

        def nvrtc_version():
            from cupy_backends.cuda.libs import nvrtc
            major, minor = nvrtc.getVersion()
            return f"{major}.{minor}"
        _row("NVRTC", _try(nvrtc_version))

    count = 0
    if cp is not None:
        try:
            count = int(cp.cuda.runtime.getDeviceCount())
        except Exception as exc:
            reason = _err(exc)
            count = 0
        if count == 0 and reason is None:
            reason = "the CUDA runtime reports 0 devices"
    _row("GPUs", count)
    for i in range(count):
        try:
            props = cp.cuda.runtime.getDeviceProperties(i)
            name = props.get("name", b"?")
            if isinstance(name, bytes):
                name = name.decode(errors="replace")
            cc = f"{props.get('major', '?')}.{props.get('minor', '?')}"
            total = props.get("totalGlobalMem", 0)
            try:
                with cp.cuda.Device(i):
                    free, total2 = cp.cuda.runtime.memGetInfo()
                mem = f"{_fmt_bytes(free)} free of {_fmt_bytes(total2)}"
            except Exception as exc:
                mem = f"{_fmt_bytes(total)} total, free unknown ({_err(exc)})"
            sms = props.get("multiProcessorCount", "?")
            print(f"    [{i}] {name}, compute capability {cc}, {sms} SMs, {mem}")
        except Exception as exc:
            print(f"    [{i}] properties unavailable ({_err(exc)})")

    cache = _kernel_cache_dir(xp)
    if os.path.isdir(cache):
        size, files = _dir_size(cache)
        _row("kernel cache", f"{cache} ({files} files, {_fmt_bytes(size)})")
    else:
        _row("kernel cache", f"{cache} (not created yet)")
    for var in ("GPARRAY_CACHE_DIR", "GPARRAY_MEMORY_LIMIT", "GPARRAY_HOST_CONVERSION", "CUDA_VISIBLE_DEVICES"):
        if os.environ.get(var) is not None:
            _row(var, os.environ[var])
    return count, reason


# --------------------------------------------------------------------------- self-check

def _to_numpy(x, cp):
    import numpy as np
    try:
        out = np.asarray(x)
        if out.dtype != object:
            return out
    except Exception:
        pass
    # fallback through DLPack / CUDA array interface (the check "to numpy" reports the failure)
    return cp.asarray(x).get()


def _checks(xp, np, dev, cp):
    """(name, thunk) pairs; a thunk returns (gparray result, NumPy expectation) or None (n/a)."""
    kw = {"device": dev} if dev is not None else {}
    data_a = [0.5, -1.25, 2.0, 3.5, -0.0, 7.0, 1e-3, -4.5, 10.0, 0.25]
    data_b = [1.0, 2.0, -3.0, 0.5, 4.0, -1.5, 2.5, 8.0, -0.125, 6.0]
    na = np.asarray(data_a, dtype=np.float32)
    nb = np.asarray(data_b, dtype=np.float32)

    def arr(data):
        return xp.asarray(data, dtype=xp.float32, **kw)

    def need(name):
        fn = getattr(xp, name, None)
        if fn is None:
            return None
        return fn

    def c_asarray():
        return arr(data_a), na

    def c_to_numpy():
        x = arr(data_a)
        out = np.asarray(x)  # the check itself: no fallback here
        if out.dtype == object:
            raise TypeError("numpy.asarray(x) gave an object array (no __array__/__dlpack__ path)")
        return out, na

    def c_arange():
        return xp.arange(10, dtype=xp.float32, **kw), np.arange(10, dtype=np.float32)

    def c_add():
        return arr(data_a) + arr(data_b), na + nb

    def c_mul():
        return arr(data_a) * arr(data_b), na * nb

    def c_scalar():
        return arr(data_a) * 2 + 1, na * np.float32(2) + np.float32(1)

    def c_exp():
        fn = need("exp")
        return None if fn is None else (fn(arr(data_a)), np.exp(na))

    def c_sum():
        fn = need("sum")
        return None if fn is None else (fn(arr(data_a)), np.sum(na, dtype=np.float32))

    def c_slice():
        return arr(data_a)[2:9:3], na[2:9:3]

    def c_reverse():
        return arr(data_a)[::-1], na[::-1]

    def c_broadcast():
        fn = need("reshape")
        if fn is None:
            return None
        return fn(arr(data_a), (10, 1)) + arr(data_b[:4]), na.reshape(10, 1) + nb[:4]

    def c_int():
        x = xp.asarray([3, -7, 11], dtype=xp.int64, **kw)
        return x * x - x, np.asarray([3, -7, 11], dtype=np.int64) ** 2 - np.asarray([3, -7, 11])

    def c_device():
        if dev is None or not hasattr(arr(data_a), "device"):
            return None
        got = arr(data_a).device
        if got != dev:
            raise AssertionError(f"x.device is {got!r}, expected {dev!r}")
        return arr(data_a), na

    return [
        ("asarray", c_asarray), ("to numpy (numpy.asarray)", c_to_numpy), ("arange", c_arange),
        ("a + b", c_add), ("a * b", c_mul), ("a * 2 + 1", c_scalar), ("exp", c_exp),
        ("sum", c_sum), ("a[2:9:3]", c_slice), ("a[::-1]", c_reverse),
        ("broadcast (10,1)+(4,)", c_broadcast), ("int64 x*x - x", c_int), ("x.device", c_device),
    ]


def _self_check(xp, cp, count) -> bool:
    import numpy as np
    ok = True
    Device = getattr(xp, "Device", None)
    listed = None
    if Device is None and hasattr(xp, "__array_namespace_info__"):
        try:
            listed = list(xp.__array_namespace_info__().devices())
        except Exception as exc:
            print(f"  FAIL  __array_namespace_info__().devices(): {_err(exc)}")
            ok = False
    for i in range(count):
        dev = None
        ctx = None
        try:
            if Device is not None:
                dev = Device(i)
            elif listed is not None and i < len(listed):
                dev = listed[i]
        except Exception as exc:
            print(f"  FAIL  Device({i}): {_err(exc)}")
            ok = False
            dev = None
        if dev is not None and hasattr(dev, "__enter__"):
            ctx = dev
        if ctx is None:
            ctx = cp.cuda.Device(i)
        print(f"self-check on GPU {i}:")
        try:
            ctx.__enter__()
        except Exception as exc:
            print(f"  FAIL  entering device {i}: {_err(exc)}")
            ok = False
            continue
        # the checks read results with numpy.asarray: the "allow" host conversion mode for
        # them, whatever GPARRAY_HOST_CONVERSION says
        set_mode = getattr(getattr(xp, "cuda", None), "set_host_conversion", None)
        prev_mode = None
        try:
            prev_mode = set_mode("allow") if callable(set_mode) else None
        except Exception as exc:   # an invalid GPARRAY_HOST_CONVERSION
            print(f"  FAIL  host conversion mode: {_err(exc)}")
            ok = False
        try:
            for name, thunk in _checks(xp, np, dev, cp):
                try:
                    res = thunk()
                    if res is None:
                        print(f"  n/a   {name} (not available in this gparray)")
                        continue
                    got, want = res
                    sync = getattr(getattr(xp, "cuda", None), "synchronize", None)
                    if callable(sync):
                        sync()
                    g = _to_numpy(got, cp)
                    want = np.asarray(want)
                    if g.shape != want.shape:
                        raise AssertionError(f"shape {g.shape}, expected {want.shape}")
                    if g.dtype != want.dtype:
                        raise AssertionError(f"dtype {g.dtype}, expected {want.dtype}")
                    np.testing.assert_allclose(g, want, rtol=2e-6, atol=0)
                    print(f"  OK    {name}")
                except Exception as exc:
                    ok = False
                    print(f"  FAIL  {name}: {_err(exc)}")
        finally:
            if prev_mode is not None:
                set_mode(prev_mode)
            try:
                ctx.__exit__(None, None, None)
            except Exception:
                pass
    return ok


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    xp = None
    import_error = None
    try:
        import gparray as xp  # noqa: F811
    except Exception as exc:
        import_error = _err(exc)
    try:
        backend = importlib.import_module("gparray._core._backend")
    except Exception as exc:
        backend = None
        import_error = import_error or _err(exc)

    cp = None
    cupy_error = None
    if backend is not None:
        getter = getattr(backend, "cupy_module", None)
        try:
            cp = getter() if callable(getter) else importlib.import_module("cupy")
        except Exception as exc:
            cupy_error = str(exc) or _err(exc)
    else:
        try:
            cp = importlib.import_module("cupy")
        except Exception as exc:
            cupy_error = f"CuPy could not be imported ({_err(exc)})"

    count, reason = _report(xp, backend, cp)
    if import_error:
        _row("gparray import", f"FAILED ({import_error})")
    if cp is None:
        reason = cupy_error or "CuPy is not available"
    if count == 0:
        print(f"no CUDA device was found: {reason}")
        return 1
    if xp is None or import_error:
        print("self-check: FAIL (gparray does not import)")
        return 1
    print()
    ok = _self_check(xp, cp, count)
    print("self-check:", "OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
