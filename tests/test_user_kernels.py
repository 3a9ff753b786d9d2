"""CPU tier: user kernels (gparray.cuda.compile_kernel). Argument checking and packing need no
GPU, and NVRTC compiles to cubin without one (``arch="90"``), through gparray's own cache."""
import os
import struct

import numpy as np
import pytest

import gparray.cuda as gcuda
from gparray._array import Array
from gparray._core._device import get_device
from gparray._kernels import _compile
from gparray._kernels._launcher import Kernel, _values, layout
from gparray.cuda import _user_kernels as uk

SRC = r"""
#include "gp/types.cuh"
#include "gp/indexer.cuh"

// y[i] = a * x[i * sx] + gp::cast<float>(n): gparray's types and casts
extern "C" __global__ void scale(const float* x, long long sx, float* y, long long n, float a) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i * sx] + gp::cast<float>(static_cast<gp::int64>(0));
}
"""

TEMPLATE_SRC = r"""
#include "gp/indexer.cuh"
template <class T>
__global__ void axpy(T a, const T* x, T* y, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
template <class T>
__global__ void strided_first(const gp::StridedParams<1, 4> p, T* out) {}
"""


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


def _array(ptr, offset=0, shape=(4,), dtype="float32", device=0):
    dt = np.dtype(dtype)
    return Array._new(_Buf(ptr), offset, shape, (dt.itemsize,) * len(shape), dt, get_device(device))


def _kernel_files(folder):
    """The cached modules and references in ``folder``; not the stamps (the NVRTC version's
    is written there by the first compile of a process that had not read one yet, so whether
    it appears depends on which tests ran before)."""
    return [p for p in folder.iterdir() if p.suffix != ".stamp"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(uk, "_loaded", {})
    return tmp_path


# ------------------------------------------------------------------------------ compiling
def test_a_kernel_using_gparray_headers_compiles(cache):
    k = gcuda.compile_kernel(SRC, "scale", arch="90")
    assert isinstance(k, gcuda.UserKernel) and k.name == "scale"
    cubin, mapping = k.module.compile("90")
    assert cubin[:4] == b"\x7fELF" and mapping == {"scale": "scale"}


def test_a_syntax_error_raises_with_the_nvrtc_log(cache):
    bad = 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name + ; }'
    with pytest.raises(gcuda.UserKernelCompileError) as info:
        gcuda.compile_kernel(bad, "broken", arch="90")
    msg = str(info.value)
    assert msg.startswith("compile_kernel: NVRTC failed")
    assert "undefined_name" in msg and "error" in msg  # NVRTC's log
    assert isinstance(info.value, gcuda.KernelCompileError) and isinstance(info.value, RuntimeError)
    assert not _kernel_files(cache)  # nothing cached


def test_a_missing_kernel_name_raises(cache):
    with pytest.raises(gcuda.UserKernelCompileError, match="no_such_kernel"):
        gcuda.compile_kernel(SRC, "no_such_kernel", arch="90")


def test_the_second_compile_is_a_cache_hit(cache, monkeypatch):
    mod = gcuda.compile_kernel(SRC, "scale", arch="90").module
    assert _compile.load_cached("user:scale", "scale", "90", SRC, ()) is not None
    assert sorted(p.suffix for p in _kernel_files(cache)) == [".cubin", ".ref"]
    first = mod.compile("90")
    calls = []

    def no_nvrtc(*a, **k):
        calls.append(a)
        raise AssertionError("NVRTC called on a cache hit")

    monkeypatch.setattr(_compile, "nvrtc_compile", no_nvrtc)
    again = gcuda.compile_kernel(SRC, "scale", arch="90")
    assert again.module.compile("90") == first and not calls
    # another arch, other options, another source: misses
    for kw in ({"arch": "80"}, {"arch": "90", "options": ("-DSCALE_EXTRA=1",)}):
        with pytest.raises(AssertionError, match="cache hit"):
            gcuda.compile_kernel(SRC, "scale", **kw)
    with pytest.raises(AssertionError, match="cache hit"):
        gcuda.compile_kernel(SRC + "\n// changed", "scale", arch="90")


def test_keys_are_gparray_keys_over_source_options_expressions_headers_arch(monkeypatch):
    mod = uk.UserModule(SRC, "scale", (), ("scale",))
    key = mod.key("90")
    assert key == _compile.module_key("user:scale", ["scale"], "90", SRC, ())
    assert key != uk.UserModule(SRC, "scale", ("-DX=1",), ("scale",)).key("90")
    assert key != uk.UserModule(SRC, "scale", ("--use_fast_math",), ("scale",)).key("90")
    assert uk.UserModule(SRC, "scale", ("-DX=1",), ("scale",)).key("90") != \
        uk.UserModule(SRC, "scale", ("-DX=2",), ("scale",)).key("90")
    assert key != uk.UserModule(SRC + " ", "scale", (), ("scale",)).key("90")
    assert key != uk.UserModule(SRC, "scale", (), ("scale", "other")).key("90")
    assert key != mod.key("80")
    monkeypatch.setattr(_compile, "_nvrtc_version", (1, 0))
    assert key != mod.key("90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "_headers_digest", "another header set")
    assert key != mod.key("90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "__version__", "999")
    assert key != mod.key("90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "OPTIONS", _compile.OPTIONS + ("-lineinfo",))
    assert key != mod.key("90")


def test_options_reach_nvrtc(cache):
    src = 'extern "C" __global__ void k(int* x) {\n#ifndef NEEDED\n#error NEEDED is not defined\n#endif\n}'
    with pytest.raises(gcuda.UserKernelCompileError, match="NEEDED is not defined"):
        gcuda.compile_kernel(src, "k", arch="90")
    gcuda.compile_kernel(src, "k", options=["-DNEEDED=1"], arch="90")


def test_name_expressions_give_a_module(cache):
    mod = gcuda.compile_kernel(TEMPLATE_SRC, "axpy", name_expressions=["axpy<float>", "axpy<double>"], arch="90")
    assert isinstance(mod, gcuda.UserModule)
    kf, kd = mod.get_function("axpy<float>"), mod["axpy<double>"]
    assert isinstance(kf, gcuda.UserKernel) and kf.name == "axpy<float>" and kd.name == "axpy<double>"
    assert mod["axpy<float>"] is kf
    cubin, mapping = mod.compile("90")
    assert set(mapping) == {"axpy<float>", "axpy<double>"} and len(set(mapping.values())) == 2
    with pytest.raises(KeyError, match="UserModule.get_function: 'axpy<int>'"):
        mod.get_function("axpy<int>")
    # both instantiations are one cached module: a second compile is a hit
    assert _compile.load_cached("user:axpy", "axpy<double>", "90", TEMPLATE_SRC, ()) is not None
    # a template of gparray's header types
    mod2 = gcuda.compile_kernel(TEMPLATE_SRC, "sf", name_expressions=("strided_first<gp::complex64>",), arch="90")
    assert mod2.compile("90")[1]["strided_first<gp::complex64>"].startswith("_Z")


def test_a_bad_name_expression_raises_with_the_log(cache):
    with pytest.raises(gcuda.UserKernelCompileError, match="axpy<no_such_type>"):
        gcuda.compile_kernel(TEMPLATE_SRC, "axpy", name_expressions=["axpy<no_such_type>"], arch="90")


@pytest.mark.parametrize("kwargs,err,match", [
    ({"source": 3}, TypeError, "source must be a non-empty str"),
    ({"source": "  "}, TypeError, "source must be a non-empty str"),
    ({"name": None}, TypeError, "name must be a non-empty str"),
    ({"options": "-DX"}, TypeError, "options must be a tuple or list of str"),
    ({"options": (1,)}, TypeError, "options must be a tuple or list of str"),
    ({"options": ("-arch=sm_80",)}, ValueError, "target arch follows"),
    ({"options": ("--gpu-architecture=compute_80",)}, ValueError, "target arch follows"),
    ({"name_expressions": "axpy<float>"}, TypeError, "name_expressions must be a tuple or list"),
    ({"name_expressions": []}, ValueError, "name_expressions is empty"),
    ({"name_expressions": ["axpy<float>", 3]}, TypeError, "each name expression"),
])
def test_compile_kernel_checks_its_arguments(kwargs, err, match):
    args = {"source": SRC, "name": "scale"} | kwargs
    with pytest.raises(err, match="^compile_kernel: .*" + match):
        gcuda.compile_kernel(args.pop("source"), args.pop("name"), **args)


# ------------------------------------------------------------------------ argument checking
def _kernel():
    return uk.UserModule(SRC, "scale", (), ("scale",))["scale"]


@pytest.mark.parametrize("grid,block,err,match", [
    (0, 128, ValueError, r"grid x = 0 is out of range \[1, 2147483647\]"),
    (2**31, 128, ValueError, "grid x = 2147483648 is out of range"),
    ((1, 65536), 128, ValueError, "grid y = 65536"),
    ((1, 1, 0), 128, ValueError, "grid z = 0"),
    ((1, 1, 1, 1), 128, TypeError, "grid must be an int or a tuple of 1 to 3 ints"),
    ((), 128, TypeError, "grid must be"),
    (1.0, 128, TypeError, "grid must be"),
    (True, 128, TypeError, "grid must be"),
    (1, 1025, ValueError, r"block x = 1025 is out of range \[1, 1024\]"),
    (1, (1, 1, 65), ValueError, "block z = 65"),
    (1, (32, 33), ValueError, r"block \(32, 33, 1\) has 1056 threads"),
    (1, "32", TypeError, "block must be"),
])
def test_grid_and_block_are_checked(grid, block, err, match):
    x = _array(4096)
    with pytest.raises(err, match=r"^UserKernel.__call__ \(scale\): " + match):
        _kernel()(grid, block, (x, 1, x, 4, np.float32(2)))


def test_argument_types_are_checked_by_position():
    k, x = _kernel(), _array(4096)
    for i, bad in ((1, "1"), (2, np.zeros(3, np.float32)), (4, object()), (0, None), (3, np.datetime64(1, "s")),
                   (4, np.longdouble(1))):
        args = [x, 1, x, 4, np.float32(2)]
        args[i] = bad
        with pytest.raises(TypeError, match=rf"^UserKernel.__call__ \(scale\): argument {i} has type"):
            k(1, 32, tuple(args))
    with pytest.raises(TypeError, match="args must be a tuple or list"):
        k(1, 32, x)
    with pytest.raises(OverflowError, match="argument 1 = 9223372036854775808 does not fit long long"):
        k(1, 32, (x, 2**63, x, 4, np.float32(2)))
    with pytest.raises(TypeError, match="shared_mem must be an int"):
        k(1, 32, (x, 1, x, 4, np.float32(2)), shared_mem=1.5)
    with pytest.raises(ValueError, match="shared_mem = -1 is out of range"):
        k(1, 32, (x, 1, x, 4, np.float32(2)), shared_mem=-1)
    with pytest.raises(TypeError, match="stream must be a CUDA stream object"):
        k(1, 32, (x, 1, x, 4, np.float32(2)), stream="s")


def test_arrays_on_two_devices_are_refused():
    with pytest.raises(ValueError, match=r"^UserKernel.__call__ \(scale\): argument 2 is on cuda:1, an earlier "
                                         "array on cuda:0"):
        _kernel()(1, 32, (_array(4096), 1, _array(8192, device=1), 4, np.float32(2)))


# ------------------------------------------------------------------------ argument packing
def test_scalars_get_their_documented_c_types():
    vals, types, dev = uk.convert_args((True, 3, 2.5, 1 + 2j, np.float32(1), np.int32(1), np.uint8(1),
                                        np.float16(1), np.bool_(False), np.complex64(1), np.int64(1),
                                        np.uint64(1), np.float64(1), np.int16(1)), "f")
    assert [t.name for t in types] == ["bool", "int64", "float64", "complex128", "float32", "int32", "uint8",
                                       "float16", "bool", "complex64", "int64", "uint64", "float64", "int16"]
    assert dev is None


def _pack(args):
    vals, types, dev = uk.convert_args(args, "f")
    protos = tuple(np.zeros((), t)[()] for t in types)
    st, kinds, size, offs = layout(protos)
    return st.pack(*_values(vals, kinds)), offs, size, dev, vals, protos


def test_a_mix_of_arrays_and_scalars_packs_with_the_cuda_alignment():
    x = _array(0x7000_0000_1000, offset=12, shape=(3, 5), dtype="float64")  # data pointer + offset
    y = _array(0x7000_0000_2000, device=0)
    args = (x, np.int32(-3), 2.5, y, True, np.float32(0.5), 7, np.int8(-1), np.complex64(1 - 2j), np.float16(1.5))
    packed, offs, size, dev, vals, protos = _pack(args)
    #          x   i32 (pad) f64  y   bool (pad) f32  i64  i8 (pad) c64  f16
    assert offs == (0, 8, 16, 24, 32, 36, 40, 48, 56, 64)
    assert size == 66 and dev == 0
    want = (struct.pack("<Q", 0x7000_0000_1000 + 12) + struct.pack("<i", -3) + b"\0" * 4 + struct.pack("<d", 2.5)
            + struct.pack("<Q", 0x7000_0000_2000) + b"\x01" + b"\0" * 3 + struct.pack("<f", 0.5)
            + struct.pack("<q", 7) + struct.pack("<b", -1) + b"\0" * 7 + struct.pack("<ff", 1, -2)
            + struct.pack("<e", 1.5))
    assert packed == want
    # the kernel the launch builds from those types packs the same bytes
    k = Kernel(type("F", (), {"ptr": 1})(), protos)
    assert k.st.pack(*_values(vals, k.kinds)) == want
    # and so does the compiled launch, when built
    from gparray._kernels import _launcher

    if _launcher._claunch is not None:
        lc = _launcher._claunch.Launch(1, k.st.format, k.size, k.offs)
        assert lc.pack(_values(vals, k.kinds)) == want


def test_complex128_and_int64_alignment():
    packed, offs, size, *_ = _pack((np.int8(1), 1 + 1j, _array(64), np.uint16(9)))
    assert offs == (0, 16, 32, 40) and size == 42
    assert np.frombuffer(packed, np.float64, 2, 16).tolist() == [1.0, 1.0]


def test_compile_kernel_is_exported():
    assert {"compile_kernel", "UserKernel", "UserModule", "UserKernelCompileError",
            "KernelCompileError"} <= set(gcuda.__all__)
    assert os.path.basename(uk.__file__) == "_user_kernels.py"


# ------------------------------------------------------------------------ the launch fast path
class _Stream:
    ptr = 0x5000


@pytest.fixture(params=["c", "python"])
def stub_launch(request, monkeypatch):
    """Launches without a GPU: CuPy, the launch module's device state and the module's
    functions stubbed, launches through the compiled launcher's stand-in driver (the Python
    launcher's _launch_kernel when the extension is not built). Yields (log, kernel, runtime
    calls): log gets (function, grid, block, shared_mem, stream, parameter bytes) per launch.
    Params: the compiled fast path of __call__ (_claunch_user.c) configured, or the Python one."""
    import types

    from gparray._core import _backend
    from gparray._engine import _launch
    from gparray._kernels import _launcher

    log, calls = [], []
    runtime = types.SimpleNamespace(getDevice=lambda: calls.append("getDevice") or 0)
    cuda = types.SimpleNamespace(runtime=runtime, get_current_stream=lambda device_id=None: _Stream(),
                                 Device=lambda d: pytest.fail("no device switch expected"))
    monkeypatch.setattr(_backend, "_cupy", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(_backend, "_device_count", 1)
    monkeypatch.setattr(_launch, "_cp", _backend._cupy)
    monkeypatch.setattr(_launch, "_multi", False)
    monkeypatch.setattr(_launch, "_stream", cuda.get_current_stream)
    monkeypatch.setattr(_launch, "_get_device", runtime.getDevice)
    k = _kernel()
    monkeypatch.setattr(k.module, "_functions", lambda dev: {"scale": type("F", (), {"ptr": 0xF00D})()})
    c = _launcher._claunch
    if request.param == "c" and c is None:
        pytest.skip("C extension gparray._native._claunch not built")
    if request.param == "python":
        monkeypatch.setattr(uk, "_claunch", None)   # the checked path does not configure it
        if c is not None:
            c.user_configure(None, None, None)
    if c is not None:
        raw = []
        c._stub_driver(raw)
        log = raw
    else:
        def launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            b = _launcher._tls.b
            log.append((f, gx, bx, smem, stream, b[0].raw[:b[1].value]))
        monkeypatch.setattr(_launcher, "_launch_kernel", launch_kernel)
        monkeypatch.setattr(_launcher, "_new_buffers", _py_buffers)
    try:
        yield log, k, calls
    finally:
        if c is not None:
            c._stub_driver(None)
            c.user_configure(None, None, None)   # the next checked launch configures it again


def _python_calls(fn):
    """Qualified names of the Python functions run during ``fn()``."""
    import sys

    names = []

    def hook(frame, event, arg):
        if event == "call":
            names.append(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return names


def _py_buffers():
    import ctypes

    from gparray._kernels import _launcher

    buf = ctypes.create_string_buffer(4096)
    size = ctypes.c_size_t(0)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(size), 0)
    b = _launcher._tls.b = (buf, size, ctypes.addressof(extra), extra)
    return b


def test_repeated_launches_take_the_fast_path_with_the_same_bytes(stub_launch):
    log, k, calls = stub_launch
    x, y = _array(0x7000_0000_1000, offset=8), _array(0x7000_0000_2000)
    args = (x, 1, y, 4, np.float32(2))
    k(1, 32, args)                           # the checked path: builds the launcher and the plan
    (launcher,) = k._launchers.values()
    assert calls == ["getDevice"] and len(k._plans) == 1
    python = _python_calls(lambda: k(1, 32, args))
    k(1, 32, list(args))
    assert calls == ["getDevice"]            # no cudaGetDevice on the fast path (one device)
    assert ("UserKernel.__call__" in python) == (uk._claunch is None)   # the compiled one: no Python frame
    assert len(log) == 3 and log[1][-1] == log[0][-1] and log[2][-1] == log[0][-1]
    vals, _, _ = uk.convert_args(args, "f")
    assert log[0][-1] == launcher.st.pack(*_values(vals, launcher.kinds))
    # another combination of classes: checked once, then fast
    k(2, 64, (x, np.int64(1), y, 4, np.float32(2)), shared_mem=16)
    assert len(k._plans) == 2 and log[-1][1:4] == (2, 64, 16)


def test_the_fast_path_keeps_every_check(stub_launch):
    log, k, calls = stub_launch
    x, y = _array(4096), _array(8192)
    k(1, 32, (x, 1, y, 4, np.float32(2)))
    where = r"^UserKernel.__call__ \(scale\): "
    with pytest.raises(ValueError, match=where + r"grid x = 0 is out of range"):
        k(0, 32, (x, 1, y, 4, np.float32(2)))
    with pytest.raises(ValueError, match=where + r"block x = 1025 is out of range"):
        k(1, 1025, (x, 1, y, 4, np.float32(2)))
    with pytest.raises(OverflowError, match=where + "argument 1 = 9223372036854775808 does not fit long long"):
        k(1, 32, (x, 2**63, y, 4, np.float32(2)))
    with pytest.raises(ValueError, match=where + "argument 2 is on cuda:1, an earlier array on cuda:0"):
        k(1, 32, (x, 1, _array(8192, device=1), 4, np.float32(2)))
    with pytest.raises(ValueError, match=where + "shared_mem = -1 is out of range"):
        k(1, 32, (x, 1, y, 4, np.float32(2)), shared_mem=-1)
    with pytest.raises(TypeError, match=where + "shared_mem must be an int"):
        k(1, 32, (x, 1, y, 4, np.float32(2)), shared_mem=1.0)
    with pytest.raises(TypeError, match=where + "argument 4 has type"):
        k(1, 32, (x, 1, y, 4, "2"))
    assert len(log) == 1


def test_the_fast_path_calls_the_profiling_hook(stub_launch, monkeypatch):
    log, k, calls = stub_launch
    x, y = _array(4096), _array(8192)
    seen = []
    k(1, 32, (x, 1, y, 4, np.float32(2)))
    monkeypatch.setattr(uk, "_hook", lambda *a: seen.append(a))
    k(3, 64, (x, 1, y, 4, np.float32(2)))
    ((kern, g, b, vals, smem, sptr),) = seen
    assert kern is next(iter(k._launchers.values()))
    assert (g, b, smem, sptr) == ((3, 1, 1), (64, 1, 1), 0, _Stream.ptr)
    assert list(vals) == [4096, 1, 8192, 4, np.float32(2)] and len(log) == 1
