"""CPU tier: the public namespace (import without a GPU, names vs the spec, clear errors)."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import gparray as xp
from gparray._core import _backend

SPEC_NAMES = pathlib.Path(__file__).resolve().parent / "spec" / "names-2025.12.txt"


def test_import_does_not_import_cupy():
    code = "import sys, gparray; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dtypes_are_numpy_dtypes():
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64", "complex64", "complex128"):
        assert getattr(xp, name) == np.dtype(name)


def test_float16_is_an_extension_dtype():
    assert xp.float16 == np.dtype("float16") and "float16" in xp.__all__
    info = xp.__array_namespace_info__()
    assert "float16" not in info.dtypes() and "float16" not in info.dtypes(kind="real floating")
    assert xp.isdtype(xp.float16, "real floating") and xp.finfo(xp.float16).eps == 2.0**-10
    assert xp.result_type(xp.float16, xp.float32) == xp.float32
    assert xp.result_type(xp.int8, xp.float16) == xp.float16
    assert xp.can_cast(xp.float16, xp.float32) and not xp.can_cast(xp.float32, xp.float16)


def test_version_and_constants():
    assert xp.__array_api_version__ == "2025.12"
    assert xp.newaxis is None and xp.inf == float("inf") and xp.e == np.e and xp.pi == np.pi
    assert xp.nan != xp.nan


def test_all_names_exist():
    for name in xp.__all__:
        assert hasattr(xp, name), name


def test_foundation_names_present():
    names = {line.split()[1] for line in SPEC_NAMES.read_text().splitlines()
             if line and not line.startswith("#") and line.split()[0] == "ns"}
    foundation = {"arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
                  "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
                  "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"}
    assert foundation <= names
    for n in foundation:
        assert callable(getattr(xp, n))


def test_array_constructor_is_private():
    with pytest.raises(TypeError, match="^Array: use gparray.asarray"):
        xp.Array()


def test_device_objects():
    d0, d0b, d1 = xp.Device(0), xp.Device(0), xp.Device(1)
    assert d0 == d0b and hash(d0) == hash(d0b) and d0 != d1
    assert repr(d1) == "cuda:1" and d0 == "cuda:0"
    with pytest.raises(ValueError, match="^Device: "):
        xp.Device(-1)


def test_the_no_device_error_says_why_and_what_to_run(monkeypatch):
    """Runs everywhere: the runtime's device count is replaced by one that fails as a
    machine without a driver does."""
    class Runtime:
        def getDeviceCount(self):
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    monkeypatch.setattr(_backend, "_device_count", None)
    monkeypatch.setattr(_backend, "_count_error", None)
    monkeypatch.setattr(_backend, "runtime", lambda: Runtime())
    with pytest.raises(_backend.CUDAUnavailableError) as info:
        _backend.require_device("ones")
    msg = str(info.value)
    assert msg.startswith("ones: no CUDA device was found (RuntimeError: cudaErrorNoDevice:"), msg
    assert "python -m gparray" in msg
    for call, name in [(lambda: xp.ones(3), "ones"), (lambda: xp.asarray([1.0, 2.0]), "asarray"),
                       (lambda: xp.arange(4), "arange"), (lambda: xp.zeros((2, 2)), "zeros")]:
        with pytest.raises(_backend.CUDAUnavailableError, match=f"^{name}: no CUDA device was found"):
            call()


@pytest.mark.skipif(_backend.has_cuda(), reason="checks the no-GPU error on a machine without one")
def test_no_gpu_gives_one_clear_error():
    with pytest.raises(_backend.CUDAUnavailableError, match="no CUDA device|CuPy could not"):
        xp.ones(3)
    with pytest.raises(xp.cuda.CUDAUnavailableError):
        xp.asarray([1, 2])


def test_info_without_device():
    info = xp.__array_namespace_info__()
    assert info.default_dtypes() == {"real floating": xp.float64, "complex floating": xp.complex128,
                                     "integral": xp.int64, "indexing": xp.int64}
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                  "uint64", "float32", "float64", "complex64", "complex128"}
    assert isinstance(info.capabilities(), dict)
    assert len(info.devices()) == _backend.device_count()
