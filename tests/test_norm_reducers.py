"""CPU tier: the vector-norm reducer of the reduction engine, ``gp::red::op_norm``
(include/gp/reduce.cuh), built for the host with g++ (the harness of
tests/test_reduction_plans.py: inputs cut into partitions folded with the kernels'
chunk/fold calls, states merged in a tree) against numpy.linalg.vector_norm for every kind
(count of nonzeros, sum |x|, 2-norm, max |x|, min |x|, p-norms) over float16, float32,
float64, complex64 and complex128: NaN/inf, empty inputs, and overflow and underflow where
NumPy's happen. Also the reducers' spellings and their registered instances.
"""
import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gparray._core import _dtypes as _dt
from gparray._engine import _reduce
from gparray._kernels import _compile

INF = float("inf")
KINDS = {"norm0": 0, "norm1": 1, "norm2": 2, "norm_max": 3, "norm_min": 4, "norm_p": 5}
DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]


def _real(dt):
    dt = np.dtype(dt)
    return np.dtype({"c": {8: "float32", 16: "float64"}}.get(dt.kind, {}).get(dt.itemsize, dt.name))


def test_norm_ops_are_the_kernel_kinds():
    assert _reduce.NORMS == KINDS


def test_norm_reducer_spellings_and_registration():
    assert _reduce.reducer("norm2", _dt.float32, _dt.float32) == "gp::red::op_norm<float, float, 2>"
    assert _reduce.reducer("norm_p", _dt.complex64, _dt.float32) == "gp::red::op_norm<gp::complex64, float, 5>"
    assert _reduce.reducer("norm_min", _dt.float16, _dt.float16) == "gp::red::op_norm<gp::half, gp::half, 4>"
    inst = _reduce.instances()
    assert len(inst) == len(set(inst))
    # every strategy of the 2-norm of float32 rows (the bench case: vector_norm(x, axis=1))
    rd = "gp::red::op_norm<float, float, 2>"
    assert f"gp_reduce_inner<{rd}, 256, true, 4, 4, int>" in inst
    assert f"gp_reduce_inner<{rd}, 32, true, 8, 4, int>" in inst
    assert f"gp_reduce_outer<{rd}, 4, 8, 4, int>" in inst
    for rd, dt in _reduce.norm_reducers():
        assert f"gp_reduce_inner<{rd}, 256, true, 8, 4, int>" in inst and f"gp_reduce_finish<{rd}, 32>" in inst


# ---------------------------------------------------------------------------- host reducers
from test_reduction_plans import _HOST_PRELUDE  # noqa: E402  (the shared host harness)

P_VALUES = [3.0, 0.5, -1.0, -2.5]


@pytest.fixture(scope="module")
def norms(tmp_path_factory):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None or sys.platform != "linux":
        pytest.skip("no C++ compiler to build the reducers on the host")
    from gparray._kernels._registry import CTYPES

    lines = [_HOST_PRELUDE]
    for dt in DTYPES:
        for op, kind in KINDS.items():
            rd = f"op_norm<{CTYPES[np.dtype(dt)]}, {CTYPES[_real(dt)]}, {kind}>"
            lines.append(f'extern "C" void r_{op}_{dt}(const void* a, long n, long parts, double p, '
                         f"void* out) {{ run<{rd}>(a, n, parts, p, out); }}")
    d = tmp_path_factory.mktemp("norms")
    (d / "norms_host.cpp").write_text("\n".join(lines) + "\n")
    cmd = [cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
           f"-I{_compile.INCLUDE_DIR}", str(d / "norms_host.cpp"), "-o", str(d / "norms_host.so")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    lib = ctypes.CDLL(str(d / "norms_host.so"))

    def call(op, a, parts, p=0.0):
        a = np.ascontiguousarray(a)
        out = np.zeros((), _real(a.dtype))
        getattr(lib, f"r_{op}_{a.dtype.name}")(ctypes.c_void_p(a.ctypes.data), ctypes.c_long(a.size),
                                                ctypes.c_long(parts), ctypes.c_double(p),
                                                ctypes.c_void_p(out.ctypes.data))
        return out[()]
    return call


PARTS = [1, 2, 3, 7, 64, 1000]


def _ords():
    return [("norm2", 2, 0.0), ("norm1", 1, 0.0), ("norm0", 0, 0.0), ("norm_max", INF, 0.0),
            ("norm_min", -INF, 0.0)] + [("norm_p", p, p) for p in P_VALUES]


def _sample(dt, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n) * 10
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal(n) * 10
    a = a.astype(dt)
    if n:
        a[::7] = 0
    return a


def _rtol(dt):
    return {"float16": 5e-3, "float32": 1e-5, "complex64": 1e-5}.get(np.dtype(dt).name, 1e-12)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 5, 37, 1000])
def test_host_norms_match_numpy(norms, dt, n):
    a = _sample(dt, n, seed=n)
    for op, ord_, p in _ords():
        if op == "norm_min" and n == 0:
            continue   # the namespace raises before reducing
        with np.errstate(all="ignore"):
            ref = np.linalg.vector_norm(a, ord=ord_)
        for parts in PARTS:
            got = norms(op, a, parts, p)
            assert got.dtype == _real(dt)
            assert got.dtype == ref.dtype, (op, dt)
            if op in ("norm0", "norm_max", "norm_min"):
                assert got == ref, (op, dt, parts, got, ref)   # exact: counts, and |x| of one element
            else:
                np.testing.assert_allclose(got, ref, rtol=_rtol(dt), err_msg=str((op, ord_, dt, parts)))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("parts", [1, 3, 64])
def test_host_norms_nan_inf_and_zeros(norms, dt, parts):
    a = _sample(dt, 40, seed=1)
    with_nan = a.copy()
    with_nan[13] = np.nan
    with_inf = a.copy()
    with_inf[21] = -np.inf if np.dtype(dt).kind == "f" else complex(3, -np.inf)
    zeros = np.zeros(40, dt)
    for op, ord_, p in _ords():
        for arr in (with_nan, with_inf, zeros):
            with np.errstate(all="ignore"):
                ref = np.linalg.vector_norm(arr, ord=ord_)
            got = norms(op, arr, parts, p)
            if np.isnan(ref) or np.isinf(ref) or ref == 0:
                assert got == ref or (np.isnan(got) and np.isnan(ref)), (op, ord_, dt, got, ref)
            else:
                np.testing.assert_allclose(got, ref, rtol=_rtol(dt), err_msg=str((op, ord_, dt)))


@pytest.mark.parametrize("parts", [1, 2, 64])
@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_host_norms_overflow_and_underflow_where_numpy_does(norms, parts):
    big32 = np.full(64, 1e19, np.float32)         # squares fit float32, their sum does not
    assert norms("norm2", big32, parts) == np.linalg.vector_norm(big32) == np.float32(np.inf)
    huge32 = np.full(64, 3e19, np.float32)        # every square overflows
    assert norms("norm2", huge32, parts) == np.inf
    np.testing.assert_allclose(norms("norm1", huge32, parts), np.linalg.vector_norm(huge32, ord=1), rtol=1e-6)
    tiny32 = np.full(64, 1e-30, np.float32)       # squares underflow to 0 in float32
    assert norms("norm2", tiny32, parts) == np.linalg.vector_norm(tiny32) == 0
    assert norms("norm_p", tiny32, parts, 3.0) == np.linalg.vector_norm(tiny32, ord=3) == 0
    np.testing.assert_allclose(norms("norm1", tiny32, parts), np.linalg.vector_norm(tiny32, ord=1), rtol=1e-6)
    c = np.full(16, 1e19 + 1e19j, np.complex64)
    assert norms("norm2", c, parts) == np.linalg.vector_norm(c) == np.inf
    np.testing.assert_allclose(norms("norm1", c, parts), np.linalg.vector_norm(c, ord=1), rtol=1e-6)
    # float64 data whose squares overflow: inf as NumPy (no scaling)
    big64 = np.full(8, 1e160)
    assert norms("norm2", big64, parts) == np.linalg.vector_norm(big64) == np.inf
    np.testing.assert_allclose(norms("norm2", np.full(8, 1e150), parts), np.linalg.vector_norm(np.full(8, 1e150)),
                               rtol=1e-12)


@pytest.mark.parametrize("parts", [1, 3, 64])
def test_host_norms_of_nothing(norms, parts):
    for dt in DTYPES:
        e = np.zeros(0, dt)
        for op, ord_, p in _ords():
            if op == "norm_min":
                continue
            with np.errstate(all="ignore"):
                ref = np.linalg.vector_norm(e, ord=ord_)
            assert norms(op, e, parts, p) == ref, (op, ord_, dt)   # 0, inf for negative p
