"""GPU tier: gparray.cuda.profile on real launches, copies and library calls."""
import json
import os
import sys
import threading

import numpy as np
import pytest

import gparray as xp
from gparray._array import _ops
from gparray._kernels import _launcher

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 1 << 16
M = 64


def _of(prof, function):
    return [r for r in prof.records if r.function == function]


def _work(x, a, b, host):
    y = x + 1
    s = xp.sum(x)
    m = xp.matmul(a, b)
    z = xp.asarray(host)
    srt = xp.sort(x)
    return y, s, m, z, srt


def _inputs():
    rng = np.random.default_rng(0)
    hx = rng.standard_normal(N).astype(np.float32)
    x = xp.asarray(hx)
    a = xp.asarray(rng.standard_normal((M, M)).astype(np.float32))
    b = xp.asarray(rng.standard_normal((M, M)).astype(np.float32))
    host = rng.standard_normal(N).astype(np.float32)
    _work(x, a, b, host)   # compiled and memoized before the profile
    xp.cuda.synchronize()
    return hx, x, a, b, host


def test_records_name_the_functions_kernels_bytes_and_times():
    hx, x, a, b, host = _inputs()
    with xp.cuda.profile() as prof:
        y, s, m, z, srt = _work(x, a, b, host)
    recs = prof.records
    assert recs and {"__add__", "sum", "matmul", "asarray", "sort"} <= {r.function for r in recs}
    assert all(r.function != "?" for r in recs), [r for r in recs if r.function == "?"]
    for r in recs:
        assert isinstance(r.time_ms, float) and r.time_ms >= 0.0, r
        assert r.thread == threading.get_ident() and r.device == 0
        if r.kind == "kernel":
            assert len(r.grid) == 3 and min(r.grid) >= 1 and len(r.block) == 3 and min(r.block) >= 1, r
    (add,) = _of(prof, "__add__")
    assert (add.kind, add.family) == ("kernel", "elementwise") and add.name.startswith("gp_scalar_contig<op_add")
    assert add.nbytes == 2 * N * 4 and add.time_ms > 0      # x read, the result written
    assert add.grid[0] * add.block[0] * 4 >= N // 4          # enough threads for N elements (vectorized)
    (mm,) = _of(prof, "matmul")
    assert (mm.kind, mm.family) == ("library", "cublas") and mm.name.startswith("cublasSgemm")
    assert mm.nbytes == 3 * M * M * 4 and mm.time_ms > 0 and mm.grid is None
    (up,) = _of(prof, "asarray")
    assert (up.kind, up.family, up.name, up.nbytes) == ("copy", "transfer", "memcpy HtoD", host.nbytes)
    assert up.time_ms > 0
    sums = [r for r in _of(prof, "sum") if r.kind == "kernel"]
    assert any(r.family == "reduce" for r in sums) and sum(r.time_ms for r in sums) > 0
    assert all(r.nbytes is not None and 0 < r.nbytes <= N * 4 + 64 for r in sums)
    sorts = [r for r in _of(prof, "sort") if r.kind == "kernel"]
    assert any(r.family == "sort" for r in sorts) and sum(r.time_ms for r in sorts) > 0
    # the work itself is unchanged
    np.testing.assert_array_equal(np.asarray(y), hx + 1)
    np.testing.assert_array_equal(np.asarray(srt), np.sort(hx))
    np.testing.assert_array_equal(np.asarray(z), host)
    text = prof.table()
    for name in ("__add__", "sum", "matmul", "asarray", "sort", "cublasSgemm", "memcpy HtoD", "gp_scalar_contig"):
        assert name in text, (name, text)


def test_to_json_round_trips(tmp_path):
    _, x, a, b, host = _inputs()
    with xp.cuda.profile() as prof:
        _work(x, a, b, host)
    path = tmp_path / "profile.json"
    prof.to_json(path)
    with open(path) as fh:
        doc = json.load(fh)
    assert doc["records"] == [r.as_dict() for r in prof.records]
    assert {r["function"] for r in doc["records"]} >= {"__add__", "sum", "matmul", "asarray", "sort"}


def _python_calls(fn):
    """Qualified names of the Python functions run during ``fn()``."""
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


@pytest.mark.skipif(_launcher._claunch is None, reason="C extension gparray._native._claunch not built")
def test_the_compiled_path_records_while_profiling():
    a = xp.ones(1000, dtype=xp.float32)
    b = xp.full(1000, 2.0, dtype=xp.float32)
    for _ in range(3):
        c = a + b   # checked, then learnt by the compiled path
    assert _ops._configured
    assert "Array.__add__" not in _python_calls(lambda: a + b)     # served in C
    with xp.cuda.profile() as prof:
        for _ in range(5):
            c = a + b
        assert "Array.__add__" not in _python_calls(lambda: a + b)  # still served in C, and recorded
    adds = _of(prof, "__add__")
    assert len(adds) == 6 and all(r.name.startswith("gp_binary_contig<op_add") for r in adds)
    assert all(r.family == "elementwise" and r.kind == "kernel" and r.nbytes == 3 * 1000 * 4 for r in adds)
    assert all(isinstance(r.time_ms, float) and r.time_ms > 0 for r in adds)
    assert all(r.grid[0] >= 1 and r.grid[1:] == (1, 1) and r.block == (256, 1, 1) for r in adds)
    c = a + b
    assert len(prof.records) == 6                                  # nothing recorded after the exit
    with xp.cuda.profile() as again:
        c = a + b
    assert len(again.records) == 1
    np.testing.assert_array_equal(np.asarray(c), np.full(1000, 3.0, np.float32))


def test_nested_profiles_and_other_threads():
    x = xp.ones(N, dtype=xp.float32)
    x * 2
    out = {}

    def other():
        out["y"] = x * 3   # another thread: not in this thread's profiles
        xp.cuda.synchronize()

    with xp.cuda.profile() as outer:
        x * 2
        with xp.cuda.profile() as inner:
            x - 1
            t = threading.Thread(target=other)
            t.start()
            t.join()
        x * 2
    assert [r.function for r in inner.records] == ["__sub__"]
    assert [r.function for r in outer.records] == ["__mul__", "__sub__", "__mul__"]
    assert outer.records[1] is inner.records[0]
    assert all(r.time_ms is not None for r in outer.records)
    np.testing.assert_array_equal(np.asarray(out["y"]), np.full(N, 3.0, np.float32))


def test_user_kernels_fft_and_linalg_are_recorded():
    with open(os.path.join(ROOT, "bench", "add_one.cu")) as fh:
        k = xp.cuda.compile_kernel(fh.read(), "gp_bench_add_one")
    v = xp.zeros(1024, dtype=xp.float32)
    c = xp.asarray(np.exp(1j * np.arange(4096)).astype(np.complex64))
    spd = xp.asarray(np.eye(8) * 4.0 + 1.0)
    k(4, 256, (v, np.int64(1024)))
    xp.fft.fft(c)
    xp.linalg.cholesky(spd)
    with xp.cuda.profile() as prof:
        k(4, 256, (v, np.int64(1024)))
        f = xp.fft.fft(c)
        xp.linalg.cholesky(spd)
    (uk,) = _of(prof, "UserKernel.__call__")
    assert (uk.kind, uk.family, uk.name, uk.grid, uk.block, uk.nbytes) == \
        ("kernel", "user:gp_bench_add_one", "gp_bench_add_one", (4, 1, 1), (256, 1, 1), 4096)
    ffts = [r for r in _of(prof, "fft.fft") if r.kind == "library"]
    assert len(ffts) == 1 and ffts[0].family == "cufft" and ffts[0].name.startswith("cufftExec")
    chol = [r for r in _of(prof, "linalg.cholesky") if r.kind == "library"]
    assert chol and chol[0].family == "cusolver" and chol[0].name == "potrf<float64>"
    np.testing.assert_allclose(np.asarray(f), np.fft.fft(np.asarray(c)), rtol=1e-3, atol=1e-2)
    np.testing.assert_array_equal(np.asarray(v), np.full(1024, 2.0, np.float32))  # two launches


def test_nvtx_ranges_when_the_package_is_there():
    pytest.importorskip("nvtx")
    x = xp.ones(16, dtype=xp.float32)
    with xp.cuda.profile(nvtx=True) as prof:
        x + 1
    assert len(prof.records) == 1 and prof.records[0].function == "__add__"
