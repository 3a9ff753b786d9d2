"""CPU tier for the elementwise functions: the op table against the spec (names, dtype
categories, result dtypes, docstrings), an NVRTC compile (sm_90) of every kernel instance
the table launches for same-dtype operands, and the functors' semantics on the host: the
gp/functors*.cuh headers compiled with g++ (CUDA qualifiers defined away) and compared
with NumPy 2 / the spec's special cases. NVRTC and g++ need no GPU."""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import gparray as xp
from gparray._core import _dtypes as _dt
from gparray._array import _elementwise as ef
from gparray._array._ops import BinaryOp, ClipOp, UnaryOp, _result
from gparray._kernels import _compile
from gparray._kernels._registry import CTYPES
from tools import spec_facts

# ----------------------------------------------------------------------------- the spec
# Input dtype category of every elementwise function of the 2025.12 spec ("Should have a
# ... data type" in its stub; real-valued = real numeric).
SPEC_CATEGORY = {
    "abs": "numeric", "acos": "floating-point", "acosh": "floating-point", "add": "numeric",
    "asin": "floating-point", "asinh": "floating-point", "atan": "floating-point",
    "atan2": "real floating-point", "atanh": "floating-point", "bitwise_and": "integer or boolean",
    "bitwise_left_shift": "integer", "bitwise_invert": "integer or boolean",
    "bitwise_or": "integer or boolean", "bitwise_right_shift": "integer",
    "bitwise_xor": "integer or boolean", "ceil": "real numeric", "clip": "real numeric",
    "conj": "numeric", "copysign": "real floating-point", "cos": "floating-point",
    "cosh": "floating-point", "divide": "numeric", "equal": "all", "exp": "floating-point",
    "expm1": "floating-point", "floor": "real numeric", "floor_divide": "real numeric",
    "greater": "real numeric", "greater_equal": "real numeric", "hypot": "real floating-point",
    "imag": "complex floating-point", "isfinite": "numeric", "isinf": "numeric", "isnan": "numeric",
    "less": "real numeric", "less_equal": "real numeric", "log": "floating-point",
    "log1p": "floating-point", "log2": "floating-point", "log10": "floating-point",
    "logaddexp": "real floating-point", "logical_and": "boolean", "logical_not": "boolean",
    "logical_or": "boolean", "logical_xor": "boolean", "maximum": "real numeric",
    "minimum": "real numeric", "multiply": "numeric", "negative": "numeric",
    "nextafter": "real floating-point", "not_equal": "all", "positive": "numeric", "pow": "numeric",
    "real": "numeric", "reciprocal": "floating-point", "remainder": "real numeric", "round": "numeric",
    "sign": "numeric", "signbit": "real floating-point", "sin": "floating-point",
    "sinh": "floating-point", "square": "numeric", "sqrt": "floating-point", "subtract": "numeric",
    "tan": "floating-point", "tanh": "floating-point", "trunc": "real numeric",
}
# Where gparray accepts more than the spec asks for (each documented in the docstring).
# The floating-point functions below also take integers and bools and compute them in the
# default floating dtype (float64).
INT_TO_FLOAT = {"sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
                "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"}
INT_TO_FLOAT_BINARY = {"atan2", "hypot", "logaddexp", "copysign"}
EXTENSIONS = {"imag": "numeric", **{n: "all" for n in INT_TO_FLOAT},
              **{n: "real numeric or boolean" for n in INT_TO_FLOAT_BINARY}}
SPEC_ARITY = {name: 2 for name in (
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot",
    "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
    "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract")}

NUMPY_NAMES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
               "atanh": "arctanh", "atan2": "arctan2", "bitwise_left_shift": "left_shift",
               "bitwise_right_shift": "right_shift", "bitwise_invert": "invert", "pow": "power",
               "conj": "conjugate", "abs": "absolute"}

OPS = {name: getattr(ef, name) for name in ef.__all__}


def _np_func(name):
    return getattr(np, NUMPY_NAMES.get(name, name))


def test_names_are_the_spec_functions():
    assert sorted(ef.__all__) == sorted(SPEC_CATEGORY)
    for name in ef.__all__:
        assert getattr(xp, name) is OPS[name], name
        assert name in xp.__all__


def test_category_table_matches_the_spec():
    """SPEC_CATEGORY and SPEC_ARITY are the spec's (tests/spec/facts-2025.12.json, read from
    its signature stubs by tools/spec_facts.py)."""
    spec = spec_facts.load()["elementwise"]
    assert {n: c for n, (c, _) in spec.items()} == SPEC_CATEGORY
    for name, (_, nargs) in spec.items():
        if name != "clip":
            assert nargs == SPEC_ARITY.get(name, 1), name


@pytest.mark.parametrize("name", sorted(SPEC_CATEGORY))
def test_op_category_and_docstring(name):
    op = OPS[name]
    assert op.category == EXTENSIONS.get(name, SPEC_CATEGORY[name])
    assert op.__name__ == name and repr(op) == f"<gparray elementwise function {name}>"
    assert op.__doc__ and op.__doc__.startswith(f"{name}(") and len(op.__doc__) > len(name) + 20
    if name in SPEC_ARITY:
        assert isinstance(op, BinaryOp)
    elif name == "clip":
        assert isinstance(op, ClipOp)
    else:
        assert isinstance(op, UnaryOp)


def _np_result_dtype(name, dt):
    """NumPy 2's result dtype for same-dtype inputs (None where NumPy has no loop)."""
    f = _np_func(name)
    a = np.ones(2, dt)
    try:
        with np.errstate(all="ignore"):
            if name == "clip":
                return np.clip(a, a, a).dtype
            return (f(a, a) if name in SPEC_ARITY else f(a)).dtype
    except TypeError:
        return None


@pytest.mark.parametrize("name", sorted(set(SPEC_CATEGORY) - {"clip"}))
def test_result_dtypes_match_numpy(name):
    op = OPS[name]
    for dt in _dt._dtype_categories[op.category]:
        odt, ct = _result(op.rule, dt, op.functor)
        assert odt in _dt._supported_dtypes and ct in _dt._supported_dtypes
        if dt == np.float16:  # computed in float32; nextafter needs float16's own spacing
            assert ct == (np.float16 if op.functor == "nextafter" else np.float32), (name, ct)
        else:
            assert ct != np.float16, (name, dt, ct)
        expect = _np_result_dtype(name, dt)
        if name == "imag" and dt.kind != "c":
            expect = dt
        if name in INT_TO_FLOAT | INT_TO_FLOAT_BINARY and dt.kind in "biu":
            # the default floating dtype; NumPy's float64 for 32/64-bit integers, float16 or
            # float32 for bool and 8/16-bit ones
            assert expect in ((np.float64,) if dt.itemsize >= 4 else (np.float16, np.float32)), (name, dt, expect)
            expect = np.float64
            assert ct == np.float64 and op.__doc__.count("default floating dtype float64") == 1, (name, ct)
        assert odt == expect, (name, dt, odt, expect)


def test_floating_functions_take_integers_and_bools_in_float64():
    """exp(int64) and friends resolve to a float64 kernel that reads the integers directly
    (InT -> double in registers: no astype copy), and those kernels are registered."""
    exprs = set(ef.kernel_instances())
    for name in sorted(INT_TO_FLOAT | INT_TO_FLOAT_BINARY):
        op = OPS[name]
        for dt in (_dt.bool, _dt.int8, _dt.uint16, _dt.int64, _dt.uint64):
            assert dt in _dt._dtype_categories[op.category], (name, dt)
            assert _result(op.rule, dt, op.functor) == (_dt.float64, _dt.float64)
            c = CTYPES[dt]
            if name in INT_TO_FLOAT:
                assert f"gp_unary_contig<op_{op.functor}, double, double, {c}>" in exprs, (name, dt)
            else:
                assert f"gp_binary_contig<op_{op.functor}, double, double, {c}, {c}>" in exprs, (name, dt)
                assert f"gp_scalar_contig<op_{op.functor}, double, double, {c}, false>" in exprs, (name, dt)
        # the floating dtypes keep their own precision (float16 computed in float32)
        assert _result(op.rule, _dt.float32, op.functor) == (_dt.float32, _dt.float32)
        assert _result(op.rule, _dt.float16, op.functor) == (_dt.float16, _dt.float32)
    # complex stays for the unary ones; the binary ones stay real-only
    assert _result(OPS["exp"].rule, _dt.complex64, "exp") == (_dt.complex64, _dt.complex64)
    for name in INT_TO_FLOAT_BINARY:
        assert _dt.complex128 not in _dt._dtype_categories[OPS[name].category]
    # functions outside the extension still reject integers
    for name in ("reciprocal", "nextafter", "signbit"):
        assert _dt.int64 not in _dt._dtype_categories[OPS[name].category]


def test_spec_result_dtype_rules():
    # ceil/floor/trunc/round of integers keep the dtype; abs/real/imag of complex give the
    # real dtype of the same precision; comparisons and classification give bool
    for name in ("ceil", "floor", "trunc", "round", "sign", "square", "negative", "positive"):
        for dt in _dt._integer_dtypes:
            assert _result(OPS[name].rule, dt)[0] == dt
    for name in ("abs", "real", "imag"):
        assert _result(OPS[name].rule, _dt.complex64)[0] == _dt.float32
        assert _result(OPS[name].rule, _dt.complex128)[0] == _dt.float64
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan",
                 "isinf", "isfinite", "signbit", "logical_and", "logical_or", "logical_xor", "logical_not"):
        for dt in _dt._dtype_categories[OPS[name].category]:
            assert _result(OPS[name].rule, dt)[0] == _dt.bool


def test_kernel_instances_cover_every_function_and_dtype():
    exprs = ef.kernel_instances()
    assert len(exprs) == len(set(exprs))
    for name, op in OPS.items():
        functors = ("maximum", "minimum") if name == "clip" else (op.functor,)
        for functor in functors:
            mine = [e for e in exprs if e.split("<", 1)[1].startswith(f"op_{functor},")]
            ndt = len(_dt._dtype_categories[op.category])
            assert len(mine) == ndt * (2 if isinstance(op, UnaryOp) else 4), (name, functor, len(mine))


# ----------------------------------------------------------------------------- NVRTC compile-all
def _compile_chunk(chunk):
    t0 = time.time()
    cubin, mapping = _compile.nvrtc_compile("elementwise", chunk, "90")
    assert len(mapping) == len(chunk) and all(mapping.values()) and cubin[:4] == b"\x7fELF"
    return time.time() - t0


def test_every_elementwise_instance_compiles_for_sm90():
    """Every function x every dtype of its category x (contig, strided ND=4 int32, scalar on
    either side): ~1500 instances in NVRTC programs of ~150, on every core (about 2 minutes
    on 2 cores)."""
    exprs = ef.kernel_instances()
    chunks = [exprs[i:i + 150] for i in range(0, len(exprs), 150)]
    workers = max(1, min(len(chunks), os.cpu_count() or 1))
    if workers == 1:
        for c in chunks:
            _compile_chunk(c)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        list(pool.map(_compile_chunk, chunks))


# ----------------------------------------------------------------------------- functors on the host
# The functor headers are plain C++17 once CUDA's qualifiers and a few intrinsics are
# defined away, so g++ can build them into a library that ctypes calls with NumPy arrays:
# the semantics (special values, branch cuts, integer corner cases) are checked without a
# GPU. CUDA's libm and glibc differ by an ulp or two, hence the tolerances.
INCLUDE = pathlib.Path(_compile.INCLUDE_DIR)
_HOST_PRELUDE = r"""
#include <math.h>
#include <string.h>
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline int __double2hiint(double d) { long long i; memcpy(&i, &d, 8); return (int)(i >> 32); }
static inline double __hiloint2double(int hi, int lo) {
    unsigned long long i = ((unsigned long long)(unsigned)hi << 32) | (unsigned)lo;
    double d; memcpy(&d, &i, 8); return d;
}
static inline double __dmul_rn(double a, double b) { return a * b; }
#include "gp/types.cuh"
#include "gp/functors.cuh"
#include "gp/functors_int.cuh"
#include "gp/functors_math.cuh"
template <class Op, class TO, class CT, class TA>
static void run_u(const void* a, void* o, long n) {
    Op op;
    for (long i = 0; i < n; ++i) ((TO*)o)[i] = gp::cast<TO>(op(gp::cast<CT>(((const TA*)a)[i])));
}
template <class TO, class TA>
static void run_c(const void* a, void* o, long n) {
    for (long i = 0; i < n; ++i) ((TO*)o)[i] = gp::cast<TO>(((const TA*)a)[i]);
}
template <class Op, class TO, class CT, class TA>
static void run_b(const void* a, const void* b, void* o, long n) {
    Op op;
    for (long i = 0; i < n; ++i)
        ((TO*)o)[i] = gp::cast<TO>(op(gp::cast<CT>(((const TA*)a)[i]), gp::cast<CT>(((const TA*)b)[i])));
}
"""


def _host_source():
    lines = [_HOST_PRELUDE]
    for name, op in OPS.items():
        if isinstance(op, ClipOp):
            continue
        else:
            kind = "u" if isinstance(op, UnaryOp) else "b"
            entries = [(kind, op.functor, _dt._dtype_categories[op.category], op.rule)]
        for kind, functor, dtypes, rule in entries:
            for dt in dtypes:
                odt, ct = _result(rule, dt, functor)
                t = f"op_{functor}, {CTYPES[odt]}, {CTYPES[ct]}, {CTYPES[dt]}"
                if kind == "u":
                    lines.append(f'extern "C" void u_{functor}_{dt.name}(const void* a, void* o, long n) '
                                 f"{{ run_u<{t}>(a, o, n); }}")
                else:
                    lines.append(f'extern "C" void b_{functor}_{dt.name}(const void* a, const void* b, void* o, '
                                 f"long n) {{ run_b<{t}>(a, b, o, n); }}")
    # gp::cast between float16 and every dtype (astype's conversions)
    for other in _dt._supported_dtypes:
        for to, frm in dict.fromkeys(((_dt.float16, other), (other, _dt.float16))):
            lines.append(f'extern "C" void c_{to.name}_{frm.name}(const void* a, void* o, long n) '
                         f"{{ run_c<{CTYPES[to]}, {CTYPES[frm]}>(a, o, n); }}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None or sys.platform != "linux":
        pytest.skip("no C++ compiler to build the functors on the host")
    d = tmp_path_factory.mktemp("functors")
    (d / "functors_host.cpp").write_text(_host_source())
    cmd = [cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
           f"-I{INCLUDE}", str(d / "functors_host.cpp"), "-o", str(d / "functors_host.so")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return _Host(ctypes.CDLL(str(d / "functors_host.so")))


class _Host:
    def __init__(self, lib):
        self.lib = lib

    def cast(self, a, to):
        """``gp::cast`` of every element of NumPy array ``a`` to dtype ``to`` (one side float16)."""
        a = np.ascontiguousarray(a)
        out = np.empty(a.shape, to)
        fn = getattr(self.lib, f"c_{np.dtype(to).name}_{a.dtype.name}")
        fn(ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_long(out.size))
        return out

    def __call__(self, name, *args, functor=None):
        op = OPS[name]
        functor = functor or op.functor
        dt = args[0].dtype
        rule = "promote" if isinstance(op, ClipOp) else op.rule
        odt = _result(rule, dt)[0]
        args = [np.ascontiguousarray(a) for a in np.broadcast_arrays(*args)]
        out = np.empty(args[0].shape, odt)
        if len(args) == 1:
            fn = getattr(self.lib, f"u_{functor}_{dt.name}")
            fn(ctypes.c_void_p(args[0].ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_long(out.size))
        else:
            fn = getattr(self.lib, f"b_{functor}_{dt.name}")
            fn(ctypes.c_void_p(args[0].ctypes.data), ctypes.c_void_p(args[1].ctypes.data),
               ctypes.c_void_p(out.ctypes.data), ctypes.c_long(out.size))
        return out


# ----------------------------------------------------------------------------- reference semantics
# Shared with tests/test_elementwise_gpu.py: input values, the expected result of every
# function (NumPy 2 where gparray follows it, the spec or a more accurate formula where it
# does not) and the comparison (NaN positions and signed zeros exact).
TRANSCENDENTAL = {"exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
                  "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "atan2", "hypot",
                  "logaddexp", "pow"}
# computed in double precision for complex64 (so the reference is complex128 rounded)
COMPLEX_VIA_DOUBLE = TRANSCENDENTAL - {"atan2", "hypot", "logaddexp"} | {"sqrt", "sign"}
COMPLEX_ARITH = {"multiply", "divide", "square", "reciprocal", "abs"}
RTOL = {"float16": 1e-3, "float32": 2e-6, "float64": 1e-13, "complex64": 2e-6, "complex128": 1e-13}


def tolerance(name, dt) -> float:
    """rtol for function ``name`` on inputs of ``dt`` (0: exact, signed zeros included)."""
    dt = np.dtype(dt)
    if dt.kind in "biu" and name in INT_TO_FLOAT | INT_TO_FLOAT_BINARY:
        dt = np.dtype(np.float64)  # computed in the default floating dtype
    if dt.kind not in "fc":
        return 0.0
    if name in TRANSCENDENTAL or (dt.kind == "c" and name in COMPLEX_ARITH | COMPLEX_VIA_DOUBLE):
        return RTOL[dt.name]
    return 0.0


def special_values(dt) -> np.ndarray:
    """NaN, +-inf, +-0, +-1, halves, tiny/huge magnitudes, INT_MIN/INT_MAX, shift widths."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = 8 * dt.itemsize
        vals = {0, 1, 2, 3, 7, 100 % (info.max + 1), info.max, info.max - 1, bits - 1, bits, bits + 1}
        if dt.kind == "i":
            vals |= {-1, -2, -3, -7, info.min, info.min + 1}
        return np.array(sorted(v for v in vals if info.min <= v <= info.max), dtype=dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, 3.0, -3.0, 0.1, 10.0, -7.25, np.pi / 2,
             np.inf, -np.inf, np.nan, float(fi.tiny), float(fi.smallest_subnormal), -float(fi.tiny),
             float(fi.max), -float(fi.max), {2: 1e4, 4: 1e30}.get(dt.itemsize, 1e200),
             {2: -1e-4, 4: -1e-30}.get(dt.itemsize, -1e-200), 1.0 + float(fi.eps), 1.0 - float(fi.eps) / 2]
        return np.array(v, dtype=dt)
    real = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, np.inf, -np.inf, np.nan,
                     1e-30 if dt.itemsize == 8 else 1e-200, 1e30 if dt.itemsize == 8 else 1e200],
                    dtype=np.float32 if dt.itemsize == 8 else np.float64)
    re, im = np.meshgrid(real, real, indexing="ij")
    return complex_from(re.ravel(), im.ravel(), dt)


def complex_from(re, im, dt) -> np.ndarray:
    """Complex array with exactly these parts (``re + 1j * im`` turns inf parts into NaN)."""
    out = np.empty(np.broadcast(re, im).shape, dt)
    out.real, out.imag = re, im
    return out


def random_values(dt, n, rng, scale=10.0) -> np.ndarray:
    """Random finite values of ``dt`` (integers over their whole range, floats log-uniform
    magnitudes with both signs around ``scale``)."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    real = dt if dt.kind == "f" else (np.float32 if dt == np.complex64 else np.float64)

    def one():
        mag = np.exp(rng.uniform(-4, np.log(scale), n))
        return (mag * rng.choice([-1.0, 1.0], n)).astype(real)

    if dt.kind == "f":
        return one()
    return complex_from(one(), one(), dt)


def _ref_pow_int(a, b):
    dt = a.dtype
    bits = 8 * dt.itemsize
    shape = np.broadcast(a, b).shape
    out = np.empty(shape, dt)
    for i, (x, y) in enumerate(zip(np.broadcast_to(a, shape).ravel().tolist(),
                                   np.broadcast_to(b, shape).ravel().tolist())):
        if y < 0:
            r = 1 if x == 1 else ((-1 if y % 2 else 1) if x == -1 else 0)
        else:
            r = pow(x, y, 2 ** bits)
        r %= 2 ** bits
        if dt.kind == "i" and r >= 2 ** (bits - 1):
            r -= 2 ** bits
        out.flat[i] = r
    return out


def _ref_expm1_complex(z):
    """expm1 in extended precision; exp(z) - 1 for non-finite parts; +-0 + +-0j gives
    +0 + +-0j (the spec)."""
    z128 = z.astype(np.complex128)
    x, y = z128.real.astype(np.longdouble), z128.imag.astype(np.longdouble)
    s = np.sin(y / 2)
    re = np.expm1(x) * np.cos(y) - 2 * s * s
    im = np.exp(x) * np.sin(y)
    out = complex_from(re.astype(np.float64), im.astype(np.float64), np.complex128)
    big = ~np.isfinite(z128.real) | ~np.isfinite(z128.imag) | (z128.real > 700)
    e = np.exp(z128[big])
    out[big] = complex_from(e.real - 1, e.imag, np.complex128)
    zero_im = (z128.imag == 0) & ~np.isnan(z128.real)
    out.real[zero_im] = np.expm1(z128.real[zero_im])
    out.imag[zero_im] = z128.imag[zero_im]
    out.real[zero_im & (z128.real == 0)] = 0.0
    return out.astype(z.dtype)


def _ref_log1p_complex(z):
    """log(1 + z): the real part from 2x + x^2 + y^2 summed exactly (fractions), then log1p
    (log|1 + z| from the exact 1 + x where |1 + z|^2 < 1/2, z near -1)."""
    from fractions import Fraction

    z128 = z.astype(np.complex128)
    x, y = z128.real, z128.imag
    with np.errstate(all="ignore"):
        out = complex_from(0.0, np.arctan2(y, 1 + x), np.complex128)
        big = ~np.isfinite(x) | ~np.isfinite(y) | (np.abs(x) > 1e150) | (np.abs(y) > 1e150)
        for i in np.flatnonzero(~big):
            fx, fy = Fraction(float(x.flat[i])), Fraction(float(y.flat[i]))
            m = 2 * fx + fx * fx + fy * fy
            if m < Fraction(-1, 2):  # |1 + z| small: rounding m near -1 would lose it; log|1 + z|
                out.real.flat[i] = np.log(np.hypot(float(1 + fx), float(fy)))
            else:
                out.real.flat[i] = np.log1p(float(m)) / 2
        out[big] = np.log(complex_from(x[big] + 1, y[big], np.complex128))
    return out.astype(z.dtype)


def _ref_complex_quotient(*args):
    """a / b (or 1 / a) for complex as NumPy computes it, except where NumPy's reciprocal
    scale factor overflows for a tiny divisor: there in extended precision."""
    a, b = (np.ones_like(args[0]), args[0]) if len(args) == 1 else args
    a, b = np.broadcast_arrays(a, b)
    out = np.array(np.reciprocal(b) if len(args) == 1 else np.divide(a, b), dtype=a.dtype)
    fix = np.isfinite(a) & np.isfinite(b) & (b != 0) & ~np.isfinite(out)
    out[fix] = (a[fix].astype(np.clongdouble) / b[fix].astype(np.clongdouble)).astype(a.dtype)
    return out


def reference(name, *args):
    """What gparray's ``name`` gives for NumPy inputs ``args`` (of the same dtype)."""
    dt = args[0].dtype
    f = _np_func(name)
    if dt.kind in "biu" and name in INT_TO_FLOAT | INT_TO_FLOAT_BINARY:
        # integers and bools are computed in float64 (NumPy: float16/float32 for small ones)
        return reference(name, *(np.asarray(a).astype(np.float64) for a in args))
    with np.errstate(all="ignore"):
        if name in ("maximum", "minimum", "clip") and dt == np.float16:
            # +0 vs -0 ties give the second operand as for float32/float64 (NumPy's half: the first)
            return reference(name, *(a.astype(np.float32) for a in args)).astype(dt)
        if name == "clip":  # NumPy's clip on large arrays; its zero signs vary with the size
            return np.minimum(np.maximum(args[0], args[1]), args[2]).astype(dt)
        if name == "imag" and dt.kind != "c":
            return np.zeros_like(args[0])
        if name == "pow" and dt.kind in "iu":
            return _ref_pow_int(*args)
        if name == "floor_divide" and dt.kind == "f":  # one infinite operand: x1 / x2 (spec)
            a, b = np.broadcast_arrays(*args)
            return np.where(np.isinf(a) != np.isinf(b), a / b, np.floor_divide(a, b)).astype(dt)
        if name == "nextafter" and dt == np.float16:  # x1 == x2 gives x2 (spec; NumPy's half: x1)
            a, b = np.broadcast_arrays(*args)
            return np.where(a == b, b, np.nextafter(a, b))
        if dt.kind == "c" and name == "expm1":
            return _ref_expm1_complex(args[0])
        if dt.kind == "c" and name == "log1p":
            return _ref_log1p_complex(args[0])
        if dt.kind == "c" and name in ("divide", "reciprocal"):
            return _ref_complex_quotient(*args)
        if dt == np.complex64 and name in COMPLEX_VIA_DOUBLE:
            out = f(*(a.astype(np.complex128) for a in args)).astype(np.complex64)
        elif dt == np.float32 and name == "logaddexp":  # evaluated in double, rounded once
            out = f(*(a.astype(np.float64) for a in args)).astype(np.float32)
        else:
            out = f(*args)
        if dt.kind == "c" and name == "sign":  # spec: a NaN part gives NaN + NaN j
            z = args[0]
            out = np.where(np.isnan(z.real) | np.isnan(z.imag), complex_from(np.nan, np.nan, z.dtype), out)
        if dt.kind == "c" and name in ("tanh", "tan"):
            # spec: tanh(+-inf + yj) = +-1 + 0j with y's sign (C99/glibc: the sign of sin(2y))
            z = args[0]
            re, im = (z.real, z.imag) if name == "tanh" else (z.imag, z.real)
            out = np.array(out)
            hit = np.isinf(re) & np.isfinite(im)
            part = out.imag if name == "tanh" else out.real
            part[hit] = np.copysign(0.0, im[hit])
        return out.astype(_result(OPS[name].rule, dt)[0] if name in OPS and name != "clip" else out.dtype)


def _parts(a):
    a = np.asarray(a)
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)


def mismatches(got, exp, rtol, loose=None, per_part=False):
    """Boolean mask of elements where ``got`` differs from ``exp``: NaN positions and
    infinities exact; finite values exact (rtol == 0, signed zeros included) or within
    rtol of the magnitude of the expected element (complex: of its modulus, or of each part
    with ``per_part``).

    ``loose`` (a mask) marks complex elements where the spec leaves signs unspecified or
    where the rounding of intermediate overflow may differ: there a part whose partner is
    NaN (or a pair of zeros) is compared without its sign, and an expected non-finite
    result only needs a non-finite part."""
    got, exp = np.asarray(got), np.asarray(exp)
    assert got.shape == exp.shape and got.dtype == exp.dtype, (got.shape, exp.shape, got.dtype, exp.dtype)
    if exp.dtype.kind not in "fc":
        return got != exp
    g_parts, e_parts = list(_parts(got)), list(_parts(exp))
    bad = np.zeros(exp.shape, bool)
    if loose is not None and exp.dtype.kind == "c":
        loose = np.broadcast_to(loose, exp.shape)
        e_nonfinite = ~np.isfinite(exp.real) | ~np.isfinite(exp.imag)
        g_nonfinite = ~np.isfinite(got.real) | ~np.isfinite(got.imag)
        free = loose & ((np.isnan(exp.real) | np.isnan(exp.imag)) | ((exp.real == 0) & (exp.imag == 0)))
        g_parts = [np.where(free, np.abs(p), p) for p in g_parts]
        e_parts = [np.where(free, np.abs(p), p) for p in e_parts]
        skip = loose & e_nonfinite & ~free
        # NaN + NaN j expected after an intermediate overflow: any non-finite answer will do
        both_nan = loose & np.isnan(exp.real) & np.isnan(exp.imag) & g_nonfinite
        skip |= both_nan
        bad |= skip & ~g_nonfinite
    else:
        skip = np.zeros(exp.shape, bool)
    with np.errstate(all="ignore"):
        scale = np.abs(exp)
        for g, e in zip(g_parts, e_parts):
            gn, en = np.isnan(g), np.isnan(e)
            bad |= ~skip & (gn != en)
            both = ~gn & ~en & ~skip
            ginf, einf = np.isinf(g), np.isinf(e)
            bad |= both & (ginf | einf) & (g != e)
            fin = both & ~ginf & ~einf
            if rtol == 0:
                bad |= fin & (g != e)
            else:
                tiny = np.finfo(e.dtype).tiny
                ref = np.abs(e) if per_part else np.where(np.isfinite(scale), scale, np.abs(e))
                lim = rtol * ref + 4 * tiny
                bad |= fin & ~(np.abs(g - e) <= lim)
            bad |= fin & (e == 0) & (g == 0) & (np.signbit(g) != np.signbit(e))
    return bad


def loose_mask(name, *args):
    """Where ``mismatches`` should be loose for complex ``name``: any non-finite input (the
    spec leaves signs unspecified there), and for complex arithmetic also huge inputs whose
    products overflow."""
    if args[0].dtype.kind != "c":
        return None
    shape = np.broadcast(*args).shape
    m = np.zeros(shape, bool)
    for a in args:
        m |= ~np.isfinite(a.real) | ~np.isfinite(a.imag)
        if name in COMPLEX_ARITH | {"pow"}:
            big = np.sqrt(np.finfo(a.real.dtype).max) / 4
            m |= (np.abs(a.real) > big) | (np.abs(a.imag) > big)
    return m


def assert_matches(got, exp, rtol, what="", inputs=(), loose=None, per_part=False, limit=12):
    bad = mismatches(got, exp, rtol, loose, per_part)
    if bad.any():
        idx = np.argwhere(bad)[:limit]
        rows = []
        for i in idx:
            i = tuple(int(k) for k in i)
            ins = ", ".join(repr(np.broadcast_to(a, bad.shape)[i]) for a in inputs)
            rows.append(f"  at {i}: inputs ({ins}) got {np.asarray(got)[i]!r} expected {np.asarray(exp)[i]!r}")
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ (rtol={rtol}):\n"
                             + "\n".join(rows))


class Case:
    """One semantic check: ``name(*inputs)`` should give ``expected`` (see ``mismatches``)."""

    def __init__(self, label, name, inputs, expected=None, rtol=None, per_part=False):
        self.label, self.name, self.inputs = label, name, tuple(inputs)
        dt = self.inputs[0].dtype
        self.expected = reference(name, *self.inputs) if expected is None else expected
        self.rtol = tolerance(name, dt) if rtol is None else rtol
        self.loose = loose_mask(name, *self.inputs)
        self.per_part = per_part

    def check(self, got):
        assert_matches(got, self.expected, self.rtol, f"{self.name}({self.inputs[0].dtype.name}) {self.label}",
                       self.inputs, self.loose, self.per_part)


def _on_unit_circle(dt, n, rng, rel):
    theta = rng.uniform(-np.pi, np.pi, n)
    r = 1 + rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(np.log(rel[0]), np.log(rel[1]), n))
    return complex_from(r * np.cos(theta), r * np.sin(theta), dt)


def cases(name, dt, seed=0):
    """The semantic checks of ``name`` on inputs of ``dt``: special values (a full grid of
    pairs for binary functions), random values, and targeted ones (accuracy near |z| = 1
    and for small |z|, integer corner cases)."""
    dt = np.dtype(dt)
    rng = np.random.default_rng([seed, sum(map(ord, name)), dt.num])
    binary = name in SPEC_ARITY
    s = special_values(dt)
    if not binary:
        yield Case("special values", name, (s,))
        yield Case("random values", name, (random_values(dt, 500, rng),))
    else:
        a, b = (v.ravel() for v in np.meshgrid(s, s, indexing="ij"))
        yield Case("special value pairs", name, (a, b))
        yield Case("random values", name, (random_values(dt, 500, rng), random_values(dt, 500, rng)))
    if dt.kind == "c" and name in ("log", "log2", "log10"):
        z = _on_unit_circle(dt, 300, rng, (1e-12, 1e-2) if dt == np.complex128 else (1e-6, 1e-2))
        ref = reference(name, z.astype(np.complex128)).astype(dt)
        yield Case("near |z| = 1 (real part relative)", name, (z,), ref, 64 * np.finfo(z.real.dtype).eps, True)
    if dt.kind == "c" and name in ("log1p", "expm1"):
        tiny = random_values(dt, 300, rng) * (1e-9 if dt == np.complex128 else 1e-4)
        yield Case("small |z| (each part relative)", name, (tiny,), None, 64 * np.finfo(tiny.real.dtype).eps, True)
    if dt.kind == "c" and name == "log1p":
        w = _on_unit_circle(dt, 300, rng, (1e-12, 1e-2) if dt == np.complex128 else (1e-6, 1e-2)) - 1
        yield Case("near |1 + z| = 1 (real part relative)", name, (w.astype(dt),), None,
                   64 * np.finfo(w.real.dtype).eps, True)
        d = 10.0 ** rng.uniform(-12 if dt == np.complex128 else -6, -1, 300)
        v = complex_from(-1.0 + d * rng.choice([-1.0, 1.0], d.size), d * rng.uniform(-1, 1, d.size), dt)
        yield Case("near z = -1 (real part relative)", name, (v,), None, 64 * np.finfo(v.real.dtype).eps, True)
    if dt.kind == "f" and name in ("floor_divide", "remainder"):
        a = random_values(dt, 500, rng, 1e6 if dt.itemsize > 2 else 6e4)
        b = random_values(dt, 500, rng, 10)
        yield Case("large / small", name, (a, b))
    if dt.kind in "iu" and name in ("bitwise_left_shift", "bitwise_right_shift"):
        bits = 8 * dt.itemsize
        counts = np.arange(-3 if dt.kind == "i" else 0, bits + 3).astype(dt)
        vals = np.array(sorted({1, 5, np.iinfo(dt).max} | ({-1, -8, np.iinfo(dt).min} if dt.kind == "i" else set())),
                        dt)
        a, b = (v.ravel() for v in np.meshgrid(vals, counts, indexing="ij"))
        yield Case("every shift count", name, (a, b))


UNARY = sorted(n for n, op in OPS.items() if isinstance(op, UnaryOp))
BINARY = sorted(n for n, op in OPS.items() if isinstance(op, BinaryOp))


def dtypes_of(name):
    return [np.dtype(d) for d in _dt._dtype_categories[OPS[name].category]]


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_host_functor_semantics(host, name):
    for dt in dtypes_of(name):
        for case in cases(name, dt):
            case.check(host(name, *case.inputs))


def test_host_pow_exact_exponents(host):
    # x ** 2, x ** -1 and x ** 0.5 are the correctly rounded x * x, 1 / x and sqrt(x), as
    # NumPy's `**` gives them (CUDA's pow is within 2 ulp only: 85.5 ** 2 came out 7310.250000000001)
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        x = np.concatenate([special_values(dt), random_values(dt, 2000, rng), np.array([85.5], dt)])
        with np.errstate(all="ignore"):
            # IEEE pow(x, 0.5): sqrt(x), but (-0) ** 0.5 = +0 and (-inf) ** 0.5 = +inf (NumPy's
            # float32 power is an ulp off sqrt at times, so it is not the reference here)
            ieee_sqrt = lambda v: np.where(v == 0, dt(0), np.where(v == -np.inf, dt(np.inf), np.sqrt(v)))  # noqa: E731
            for b, want in ((2.0, x * x), (-1.0, np.reciprocal(x)), (0.5, ieee_sqrt(x))):
                got = host("pow", x, np.full_like(x, b))
                np.testing.assert_array_equal(got, want)
                assert np.array_equal(np.signbit(got), np.signbit(want)), (dt, b)
        assert host("pow", np.array([85.5], dt), np.array([2.0], dt))[0] == dt(7310.25)


def test_host_clip_is_minimum_of_maximum(host):
    rng = np.random.default_rng(7)
    for dt in dtypes_of("clip"):
        s = special_values(dt)
        x, lo, hi = (v.ravel() for v in np.meshgrid(s, s[::3], s[::4], indexing="ij"))
        got = host("minimum", host("maximum", x, lo), hi)
        Case("special value triples", "clip", (x, lo, hi)).check(got)
        x, lo, hi = (random_values(dt, 300, rng) for _ in range(3))
        got = host("minimum", host("maximum", x, lo), hi)
        Case("random (min > max included)", "clip", (x, lo, hi)).check(got)


# ----------------------------------------------------------------------------- float16 conversions
# gp::half's host build (the same rounding as the device's cvt instructions, in software)
# against NumPy's astype, bit for bit; NaNs keep their sign (and NumPy's payload bits).
ALL_HALVES = np.arange(2**16, dtype=np.uint16).view(np.float16)


def _half_inputs(dt):
    """Values of ``dt`` that exercise the conversion to float16: every float16 value, the
    midpoints between neighbours (ties to even), overflow to inf, subnormals, NaNs."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = np.concatenate([np.arange(-70000, 70000, 7), [0, 1, -1, 2047, 2049, 4097, 65504, 65519, 65520,
                                                           65535, 65536, -65520, -65519]])
        v = v[(v >= info.min) & (v <= info.max)]
        return np.concatenate([v.astype(dt), np.array([info.min, info.max], dt)])
    finite = ALL_HALVES[np.isfinite(ALL_HALVES)].astype(np.float64)
    finite = np.sort(finite[finite >= 0])
    mid = (finite[:-1] + finite[1:]) / 2                     # exact ties
    near = np.concatenate([mid * (1 + 2.0**-20), mid * (1 - 2.0**-20)])
    big = [65504.0, 65519.99, 65520.0, 65536.0, 1e6, 3.4e38, 2.0**-25, 2.0**-25 * 1.0001, 2.0**-26, 1e-30]
    pos = np.concatenate([finite, mid, near, big, [np.inf, np.nan]])
    real = np.concatenate([pos, -pos]).astype(np.float64)
    if dt.kind == "f":
        return real.astype(dt)
    out = np.empty(real.size, dt)
    out.real, out.imag = real, real[::-1]
    return out


def _same_halves(got, exp):
    g, e = got.view(np.uint16), exp.view(np.uint16)
    nan = np.isnan(exp)
    assert np.array_equal(np.isnan(got), nan)
    bad = np.flatnonzero(~nan & (g != e))
    assert bad.size == 0, [(float(got[i]), float(exp[i])) for i in bad[:8]]
    assert np.array_equal(np.signbit(got[nan]), np.signbit(exp[nan]))


@pytest.mark.parametrize("dt", [np.dtype(d) for d in _dt._supported_dtypes], ids=lambda d: d.name)
def test_host_float16_conversions_match_numpy(host, dt):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = _half_inputs(dt)
        _same_halves(host.cast(x, np.float16), x.astype(np.float16))
        got, exp = host.cast(ALL_HALVES, dt), ALL_HALVES.astype(dt)
    if dt.kind in "iu":
        # in range (truncation); NaN, inf and out-of-range values follow float32's rules
        info = np.iinfo(dt)
        v = ALL_HALVES.astype(np.float64)
        ok = np.isfinite(v) & (v >= info.min) & (v < float(info.max) + 1)
        assert np.array_equal(got[ok], exp[ok])
    elif dt.kind in "fc":
        assert np.array_equal(got, exp, equal_nan=True)
        assert np.array_equal(np.signbit(got.real), np.signbit(exp.real))
    else:
        assert np.array_equal(got, exp)
