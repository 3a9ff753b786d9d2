"""GPU tier: the compiled elementwise fast path gives what the Python path gives (NumPy's
answers), on the current stream, with the pool's bookkeeping intact, from any host thread."""
import operator
import threading

import numpy as np
import pytest

import gparray as xp
from gparray._kernels import _launcher

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_launcher._claunch is None, reason="C extension gparray._native._claunch not built")]

rng = np.random.default_rng(7)


def _data(dtype, shape=(33, 17)):
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(shape).astype(dtype)
        a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        return a
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


CASES = [
    # (label, gparray call, NumPy call, dtypes)
    ("a + b", operator.add, operator.add, ("float32", "float64", "int32", "uint8", "int64")),
    ("a - b", operator.sub, operator.sub, ("float32", "int16")),
    ("a * b", operator.mul, operator.mul, ("float64", "int64")),
    ("a / b", operator.truediv, operator.truediv, ("float32", "float64")),
    ("a < b", operator.lt, operator.lt, ("float32", "int32")),
    ("a == b", operator.eq, operator.eq, ("float64", "bool")),
    ("a & b", operator.and_, operator.and_, ("int32", "bool")),
    ("xp.maximum", xp.maximum, np.maximum, ("float32",)),
    ("a + 1.5", lambda a, b: a + 1.5, lambda a, b: a + np.asarray(1.5, a.dtype), ("float32", "float64")),
    ("3 - a", lambda a, b: 3 - a, lambda a, b: np.asarray(3, a.dtype) - a, ("int32", "float32", "uint8")),
    ("a > 0", lambda a, b: a > 0, lambda a, b: a > 0, ("float32", "int64")),
    ("2.0 * a", lambda a, b: 2.0 * a, lambda a, b: np.asarray(2.0, a.dtype) * a, ("float64",)),
    ("-a", lambda a, b: -a, lambda a, b: -a, ("float32", "int8")),
    ("abs(a)", lambda a, b: abs(a), lambda a, b: abs(a), ("float64", "int32")),
    ("~a", lambda a, b: ~a, lambda a, b: ~a, ("int16", "bool")),
    ("xp.exp", lambda a, b: xp.exp(a), lambda a, b: np.exp(a), ("float32",)),
]


@pytest.mark.parametrize("label,f,g,dtypes", CASES, ids=[c[0] for c in CASES])
def test_repeat_calls_match_numpy_and_are_served_in_c(label, f, g, dtypes):
    for dt in dtypes:
        na, nb = _data(dt), _data(dt)
        a, b = xp.asarray(na), xp.asarray(nb)
        with np.errstate(all="ignore"):
            want = g(na, nb)
            first = _host(f(a, b))
        for _ in range(2):  # the first call learns (Python path); later ones run in C
            out = f(a, b)
            got = _host(out)
            assert got.dtype == want.dtype and got.shape == want.shape, (label, dt)
            np.testing.assert_array_equal(got, first, err_msg=f"{label} {dt}: C path vs Python path")
            assert out._flags is True and out._strides == np.empty(want.shape, want.dtype).strides
        # the same kernel either way; NumPy's libm may differ by an ulp for exp
        np.testing.assert_allclose(first, want, rtol=4e-7 if dt == "float32" else 0, atol=0, equal_nan=True)


def _host(x):
    return np.asarray(x)


def test_operators_learn_their_combinations():
    a = xp.asarray(np.arange(10, dtype=np.float32))
    for _ in range(2):
        a * a, a * 2.0, 2.0 * a, -a
    keys = xp.multiply._table.keys()
    assert (a.dtype, a.dtype, 0, a.device) in keys
    assert (a.dtype, float, 1, a.device) in keys and (a.dtype, float, 2, a.device) in keys
    assert (a.dtype, None, 0, a.device) in xp.negative._table.keys()


def test_views_and_strided_operands_take_the_python_path_and_stay_right():
    na = _data("float32", (40, 30))
    a = xp.asarray(na)
    for _ in range(2):
        np.testing.assert_array_equal(_host(a[::2] + a[1::2]), na[::2] + na[1::2])
        np.testing.assert_array_equal(_host(a.T + a.T), na.T + na.T)
        np.testing.assert_array_equal(_host(a[3:7] * 2.0), na[3:7] * np.float32(2.0))  # contiguous view, offset
        np.testing.assert_array_equal(_host(a[:, :1] - a[:, 1:2]), na[:, :1] - na[:, 1:2])


def test_results_use_the_current_stream_and_the_pool_balances():
    import cupy as cp

    from gparray import _memory

    a = xp.asarray(np.ones(1000, np.float32))
    a + a
    cp.cuda.Device().synchronize()  # a is read below on a non-blocking stream: its upload is done
    pool = _memory.get_pool(a.device._id)
    base = pool.allocated_bytes
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        outs = [a + a for _ in range(5)] + [a * 3.0 for _ in range(5)]
        s.synchronize()
    assert all(o._buf.stream == s.ptr for o in outs)
    # 4000-byte results: 4096-byte blocks (GPARRAY_NO_CACHING: exactly 4000 bytes each)
    assert all(o._buf.size in (4000, 4096) for o in outs)
    assert pool.allocated_bytes == base + sum(o._buf.size for o in outs)
    np.testing.assert_array_equal(_host(outs[0]), np.full(1000, 2, np.float32))
    np.testing.assert_array_equal(_host(outs[-1]), np.full(1000, 3, np.float32))
    del outs
    s.synchronize()
    assert pool.allocated_bytes == base


def test_new_host_threads_launch_through_the_compiled_path():
    a = xp.asarray(np.arange(256, dtype=np.float64))
    a + a  # learnt in this thread
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(_host(a + a))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == [] and len(results) == 9
    for r in results:
        np.testing.assert_array_equal(r, 2 * np.arange(256, dtype=np.float64))
