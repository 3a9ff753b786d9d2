"""CPU tier: gparray.cuda.profile without a GPU.

The report (table, JSON) runs on fabricated records. The hooks run on a fake CUDA (events
that count, a stream handle), fake kernels and gparray-named fake modules (a frame's module
is its globals' ``__name__``; tests/_profile_fakes.py), so attribution, byte estimates (the
C and the Python stack walk), nesting, threads and NVTX are checked here; the compiled
elementwise path's records in tests/test_profile_compiled.py; tests/test_profile_gpu.py runs
the real thing."""
import json
import os
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import gparray as xp
from gparray._engine import _launch
from gparray._engine._shapes import Layout
from gparray.cuda import _profile, _profile_frames, _profile_report, _user_kernels
from gparray.cuda._profile_report import ProfileRecord

from _profile_fakes import (DEV, KNAME, NAMESPACE, FakeKernel, _gp_module, _layout, f32, fake,
                            walker)  # noqa: F401

# ----------------------------------------------------------------------------- report
def _recs():
    return [ProfileRecord("sum", "kernel", "reduce", "gp_reduce<a>", (4, 1, 1), (256, 1, 1), 0, 4000, 0, 7, 1, 0.5),
            ProfileRecord("sum", "kernel", "reduce", "gp_reduce<a>", (4, 1, 1), (256, 1, 1), 0, 4000, 0, 7, 1, 1.5),
            ProfileRecord("matmul", "library", "cublas", "cublasSgemm_v2", None, None, 0, None, 0, 7, 1, 3.0),
            ProfileRecord("asarray", "copy", "transfer", "memcpy HtoD", None, None, 0, 2_000_000, 0, 7, 1, 0.25)]


def test_table_groups_by_function_and_kernel():
    text = _profile_report.table(_recs())
    lines = text.splitlines()
    assert lines[0] == ("gparray profile: 4 records (2 kernel, 1 copy, 1 library), 5.2500 ms GPU time")
    i = lines.index(next(ln for ln in lines if ln.startswith("function")))
    j = lines.index(next(ln for ln in lines if ln.startswith("kernel")))
    funcs = [ln.split() for ln in lines[i + 1:j - 1]]
    # sorted by total GPU time: matmul 3.0, sum 2.0, asarray 0.25
    assert [f[0] for f in funcs] == ["matmul", "sum", "asarray"]
    assert funcs[1] == ["sum", "2", "2.0000", "1.0000", "0.0"]       # 8000 B / 2 ms = 0.004 GB/s
    assert funcs[0][-1] == "-"                                      # no byte count: no GB/s
    assert funcs[2] == ["asarray", "1", "0.2500", "0.2500", "8.0"]   # 2 MB / 0.25 ms
    kernels = lines[j + 1:]
    assert kernels[0].split()[:2] == ["cublas:", "cublasSgemm_v2"]
    assert any(ln.split()[:2] == ["reduce:", "gp_reduce<a>"] and ln.split()[2] == "2" for ln in kernels)
    assert any("transfer: memcpy HtoD" in ln for ln in kernels)


def test_table_sorts_and_cuts_long_names():
    recs = _recs() + [ProfileRecord("f", "kernel", "fam", "k" * 200, time_ms=0.1)] * 3
    by_calls = _profile_report.table(recs, sort="calls").splitlines()
    i = by_calls.index(next(ln for ln in by_calls if ln.startswith("function")))
    assert by_calls[i + 1].split()[:2] == ["f", "3"]
    by_name = _profile_report.table(recs, sort="name").splitlines()
    i = by_name.index(next(ln for ln in by_name if ln.startswith("function")))
    assert [ln.split()[0] for ln in by_name[i + 1:i + 5]] == ["asarray", "f", "matmul", "sum"]
    long = next(ln for ln in by_name if "kkk" in ln)
    assert "..." in long and len(long.split()[1]) < 100


def test_table_of_pending_and_no_records():
    pending = [ProfileRecord("sum", "kernel", "reduce", "r", time_ms=None)]
    text = _profile_report.table(pending)
    assert text.splitlines()[0].endswith("1 not timed yet")
    assert " - " in text
    assert _profile_report.table([]) == "gparray profile: 0 records (0 kernel, 0 copy, 0 library), 0.0000 ms GPU time"


def test_to_json_round_trips(tmp_path):
    recs = _recs()
    path = tmp_path / "prof.json"
    _profile_report.to_json(recs, path)
    with open(path) as fh:
        doc = json.load(fh)
    assert doc["format"] == "gparray-profile" and doc["version"] == 1 and doc["gparray"] == xp.__version__
    assert doc["records"] == [r.as_dict() for r in recs]
    assert doc["records"][0]["grid"] == [4, 1, 1] and doc["records"][2]["grid"] is None
    _profile_report.to_json(recs, str(tmp_path / "p2.json"))


def test_argument_checks(tmp_path):
    with pytest.raises(TypeError, match="^profile: nvtx must be a bool"):
        xp.cuda.profile(nvtx=1)
    with pytest.raises(TypeError, match="^table: sort must be a str"):
        _profile_report.table([], sort=1)
    with pytest.raises(ValueError, match="^table: sort must be one of total, calls, name"):
        xp.cuda.profile().table(sort="time")
    with pytest.raises(TypeError, match="^table: expected ProfileRecord items"):
        _profile_report.table([1])
    with pytest.raises(TypeError, match="^table: records must be an iterable"):
        _profile_report.table(3)
    with pytest.raises(TypeError, match="^to_json: path must be a str or os.PathLike"):
        xp.cuda.profile().to_json(3)
    with pytest.raises(ValueError, match="^summarize: key must be"):
        _profile_report.summarize([], "stream")
    p = xp.cuda.profile()
    with pytest.raises(RuntimeError, match="^profile: exit of a profile that is not active"):
        p.__exit__(None, None, None)


def test_nvtx_without_the_package_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_profile, "_nvtx", None)
    monkeypatch.setitem(sys.modules, "nvtx", None)   # import nvtx raises ImportError
    with pytest.raises(ModuleNotFoundError, match=r"^profile: NVTX ranges need the nvtx package"):
        xp.cuda.profile(nvtx=True)
    with pytest.warns(RuntimeWarning, match="GPARRAY_NVTX=1 is ignored"):
        assert _profile.enable_env_nvtx() is False
    assert _launch._hook is None


def test_import_leaves_cupy_json_and_nvtx_alone():
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "import gparray\n"
            "added = set(sys.modules) - before\n"
            "import json as _j\n"
            "print(_j.dumps(sorted(m for m in added if m.split('.')[0] in ('cupy', 'cupy_backends', 'nvtx', 'json')\n"
            "      or m in ('gparray._engine._solver', 'gparray._engine._fft', 'gparray._engine._geev'))),\n"
            "      'gparray.cuda._profile' in sys.modules, gparray.cuda.profile.__module__)\n")
    env = {k: v for k, v in os.environ.items() if k != "GPARRAY_NVTX"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True", "gparray.cuda._profile"]


def test_env_nvtx_installs_the_hooks_at_import(tmp_path):
    (tmp_path / "nvtx.py").write_text("ranges = []\n"
                                      "def push_range(message=None, domain=None):\n    ranges.append(message)\n"
                                      "def pop_range(domain=None):\n    pass\n")
    code = ("import sys, json\n"
            "import gparray\n"
            "from gparray._engine import _launch\n"
            "from gparray.cuda import _profile\n"
            "print(json.dumps(['nvtx' in sys.modules, _launch._hook is not None, _profile._nvtx_env,\n"
            "                  'cupy' in sys.modules]))\n")
    for value, want in (("1", [True, True, True, False]), ("0", [False, False, False, False])):
        env = dict(os.environ, GPARRAY_NVTX=value,
                   PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout.strip().splitlines()[-1]) == want, value


# ----------------------------------------------------------------------------- hooks on a fake CUDA
def test_the_off_path_makes_no_records(fake, monkeypatch):
    cu, plain = fake
    monkeypatch.setattr(_launch, "_cp", object())   # run() as initialized: one device, a current stream
    monkeypatch.setattr(_launch, "_multi", False)
    monkeypatch.setattr(_launch, "_stream", lambda: types.SimpleNamespace(ptr=0x11))
    p = xp.cuda.profile()   # made, never entered
    k = FakeKernel()
    assert _launch._hook is None
    with _profile.Profile() as other:
        pass
    NAMESPACE["my_function"](k, _layout((10,), 0x1000), None)
    assert p.records == [] and other.records == [] and cu.created == []
    assert k.calls == [(5, _launch.BLOCK, (1, 2, 3), 0, 0x11)] and plain == []   # straight to the kernel
    assert _launch._hook is None


def test_a_launch_is_recorded_with_function_kernel_grid_bytes_and_time(fake, walker):
    cu, plain = fake
    k = FakeKernel()
    x = _layout((10,), 0x1000)
    with xp.cuda.profile() as prof:
        assert _launch._hook is not None and prof.active
        NAMESPACE["my_function"](k, x, None)
        NAMESPACE["copy_thing"](123)
        (r, c) = prof.records
        assert r.time_ms is None
    assert not prof.active and _launch._hook is None
    assert k.calls == [(5, _launch.BLOCK, (1, 2, 3), 0, 0x77)] and plain == []
    assert (r.function, r.kind, r.family, r.name) == ("my_function", "kernel", "elementwise", KNAME.split(": ")[1])
    assert (r.grid, r.block, r.shared_mem, r.device, r.stream) == ((5, 1, 1), (256, 1, 1), 0, 0, 0x77)
    assert r.nbytes == 80 and r.time_ms == 1.0 and r.thread == threading.get_ident()
    assert (c.function, c.kind, c.family, c.name, c.nbytes, c.stream, c.grid) == \
        ("copy_thing", "copy", "transfer", "memcpy HtoD", 123, 0x55, None)
    # one wait per (device, stream): the last end event of each
    assert sorted(cu.synced) == [2, 4]
    assert sorted(cu.released) == [1, 2, 3, 4]
    assert "my_function" in prof.table() and "gp_binary_contig" in prof.table()


def test_a_failed_launch_leaves_no_record_and_gives_its_event_back(fake):
    cu, _ = fake
    k = FakeKernel(fail=RuntimeError("launch failed"))
    with xp.cuda.profile() as prof:
        with pytest.raises(RuntimeError, match="launch failed"):
            NAMESPACE["my_function"](k, _layout((4,), 0x1000), None)
    assert prof.records == [] and cu.released == cu.created == [1]


def test_nested_profiles_both_get_the_inner_records(fake):
    k = FakeKernel()
    x = _layout((4,), 0x1000)
    with xp.cuda.profile() as outer:
        NAMESPACE["my_function"](k, x, None)
        with xp.cuda.profile() as inner:
            NAMESPACE["my_function"](k, x, None)
        assert _launch._hook is not None        # the outer one is still active
        assert inner.records[0].time_ms == 1.0  # timed at the inner exit
        NAMESPACE["my_function"](k, x, None)
    assert len(outer.records) == 3 and len(inner.records) == 1
    assert outer.records[1] is inner.records[0]
    assert all(r.time_ms == 1.0 for r in outer.records)
    with pytest.raises(RuntimeError, match="^profile: this profile is already active"):
        with outer:
            outer.__enter__()


def test_other_threads_are_not_recorded(fake):
    cu, plain = fake
    k = FakeKernel()
    x = _layout((4,), 0x1000)
    with xp.cuda.profile() as prof:
        t = threading.Thread(target=NAMESPACE["my_function"], args=(k, x, None))
        t.start()
        t.join()
        NAMESPACE["my_function"](k, x, None)
    assert len(prof.records) == 1 and len(plain) == 1 and plain[0][0] is k


def test_bytes_count_distinct_memory_once(walker):
    eng = _gp_module("gparray._engine._fake2", """
def launch_here(*arrays, pieces=()):
    return bytes_of(frame())
""", bytes_of=_profile_frames.bytes_of, frame=lambda: sys._getframe(1))
    x = _layout((100,), 0x1000)
    same = _layout((100,), 0x1000)                       # the same memory described twice
    bcast = _layout((50, 100), 0x5000, strides=(0, 4))   # a broadcast row: 400 distinct bytes
    tr = _layout((10, 10), 0x8000, strides=(4, 40))      # a transpose: all 400 bytes
    assert eng["launch_here"](x, same) == 400
    assert eng["launch_here"](x, bcast, tr) == 1200
    assert eng["launch_here"](x, pieces=[_layout((3,), 0x9000), _layout((0,), 0xA000)]) == 412
    assert eng["launch_here"]() is None


def test_bytes_count_the_arrays_passed_to_the_launch(fake, walker):
    eng = _gp_module("gparray._engine._fake3", """
def two_passes(k, x, out, ws_ptr):
    run(k, 0, 8, (np.uint64(out._ptr), ws_ptr, x._ptr, 7))   # the input pass: x and out
    run(k, 0, 1, (out._ptr, ws_ptr))                        # the finishing pass: out only
    run(k, 0, 1, (ws_ptr + 8, 3))                           # no array passed: all of them
""", run=_launch.run, np=np)
    x, out = _layout((1000,), 0x10000), _layout((10,), 0x90000)
    with xp.cuda.profile() as prof:
        eng["two_passes"](FakeKernel(), x, out, 0xA0000)
    assert [r.nbytes for r in prof.records] == [4040, 40, 4040]


class _Released:
    @property
    def ptr(self):
        raise RuntimeError("released")


@pytest.mark.skipif(_profile_frames._cwalk is None, reason="C extension gparray._native._claunch not built")
def test_the_c_walk_is_the_python_walk(monkeypatch):
    eng = _gp_module("gparray._engine._fake4", """
def engine(*arrays, args=None, more=(), m1=(), m2=(), m3=(), m4=(), **kw):
    return walk(frame(), True, args)
""", walk=lambda f, w, a: (_profile_frames.walk(f, w, a), _python_walk(f, w, a)),
                     frame=lambda: sys._getframe(1))
    ns = _gp_module("gparray._fake_ns4", "def op(*a, **kw):\n    return engine(*a, **kw)\n", engine=eng["engine"])
    x = _layout((100,), 0x1000)
    bcast = _layout((50, 100), 0x5000, strides=(0, 4))
    neg = _layout((10,), 0x9000 + 36, strides=(-4,))
    empty = _layout((0, 3), 0xA000)
    released = Layout(_Released(), (4,), f32, DEV, 0, None)
    many = [_layout((2,), 0x100000 + 64 * i) for i in range(300)]
    cases = [((x,), {}), ((x, x, bcast), {}), ((x, neg, empty, released), {}),
             ((x, bcast), {"args": (np.uint64(0x1000), 7, -1, 2**70, np.int64(0x5000))}),
             ((x, bcast), {"args": [0x5000, 3.5]}), ((x,), {"args": (0x77,)}), ((), {}),
             ((x,), {"more": tuple(_layout((1,), 0x20000 + 4 * i) for i in range(64))}),
             ((x,), {"more": tuple(_layout((1,), 0x20000 + 4 * i) for i in range(65))}),
             ((x,), {"more": [bcast, 3, "s"], "args": tuple(range(600))}),
             (tuple(many[:250]), {}), (tuple(many), {"args": (0x100000,)}),
             ((), dict(zip(("more", "m1", "m2", "m3", "m4"), (tuple(many[i:i + 60]) for i in range(0, 300, 60)))))]
    for a, kw in cases:
        (c_name, c_bytes), (py_name, py_bytes) = ns["op"](*a, **kw)
        assert (c_name, c_bytes) == (py_name, py_bytes) == ("op", py_bytes), (a, kw)
    assert ns["op"](x, bcast)[1][1] == 800 and ns["op"]()[1][1] is None
    # beyond what the C walk holds (arrays, arguments): NotImplemented, and walk() walks in Python
    over = _gp_module("gparray._engine._fake5", "def engine(a, b, c, d, e, args):\n    return frame()\n",
                      frame=lambda: sys._getframe(1))
    f = over["engine"](*(tuple(many[i:i + 60]) for i in range(0, 300, 60)), None)
    types_ = _profile_frames._c_types()
    assert _profile_frames._cwalk(f, True, None, _profile_frames._codes, _profile_frames._classify,
                                  types_)[1] is NotImplemented
    assert _profile_frames.walk(f, True, None)[1] == 300 * 8
    f = over["engine"](x, (), (), (), (), tuple(range(600)))
    assert _profile_frames._cwalk(f, True, tuple(range(600)), _profile_frames._codes, _profile_frames._classify,
                                  types_)[1] is NotImplemented


def _python_walk(f, want, args):
    cw = _profile_frames._cwalk
    _profile_frames._cwalk = None
    try:
        return _profile_frames.walk(f, want, args)
    finally:
        _profile_frames._cwalk = cw


def test_function_labels(walker):
    ns = _gp_module("gparray._fake_ops", """
class BinaryOp:
    __name__ = "add"
    def __call__(self, a):
        return who(frame())

class UserKernel:
    def __call__(self):
        return who(frame())

class Array:
    def __add__(self, other):
        return who(frame())

def sum(x):
    return who(frame())
""", who=_profile_frames.function_of, frame=lambda: sys._getframe(1))
    la = _gp_module("gparray.linalg._fake", "def cholesky(x):\n    return who(frame())\n",
                    who=_profile_frames.function_of, frame=lambda: sys._getframe(1))
    assert ns["BinaryOp"]()(1) == "add"
    assert ns["UserKernel"]()() == "UserKernel.__call__"
    assert ns["Array"]().__add__(1) == "__add__"
    assert ns["sum"](1) == "sum"
    assert la["cholesky"](1) == "linalg.cholesky"
    assert _profile_frames.function_of(sys._getframe()) == "?"
    # the outermost gparray frame wins
    outer = _gp_module("gparray._fake_outer", "def mean(x):\n    return inner(x)\n", inner=ns["sum"])
    assert outer["mean"](1) == "mean"


def test_library_wrapper_records_one_entry(fake, walker):
    cu, _ = fake
    inner_calls = []

    def routine(dtype, n, a, dev):
        inner_calls.append(n)
        if n > 0:
            wrapped(dtype, n - 1, a, dev)   # a library call inside: not recorded again
        return "done"

    wrapped = _profile._library(routine, "cusolver", _profile._solver_name("potrf"), _profile._last_dev)
    caller = _gp_module("gparray.linalg._fake_lib", "def cholesky(x):\n    return w('float32', 2, 0, 0)\n",
                        w=wrapped)
    assert wrapped("float32", 0, 0, 0) == "done"   # no profile: passes through
    with xp.cuda.profile() as prof:
        assert caller["cholesky"](_layout((4, 4), 0x1000)) == "done"
    assert inner_calls == [0, 2, 1, 0]
    (r,) = prof.records
    assert (r.function, r.kind, r.family, r.name, r.nbytes, r.time_ms) == \
        ("linalg.cholesky", "library", "cusolver", "potrf<float32>", 64, 1.0)
    assert wrapped.__wrapped__ is routine


def test_library_functions_are_wrapped_only_while_profiling(fake):
    from gparray._engine import _blas

    orig = _blas.launch
    with xp.cuda.profile():
        from gparray._engine import _fft, _geev, _solver
        assert _blas.launch.__wrapped__ is orig
        assert _solver.potrf.__wrapped__ is not None and _fft.execute.__wrapped__ is not None
        assert _geev.geev.__wrapped__ is not None
    assert _blas.launch is orig and not hasattr(_solver.potrf, "__wrapped__")
    assert not hasattr(_fft.execute, "__wrapped__")
    gemm = types.SimpleNamespace(fkey=("S", False), offsets=((0, 0, 0),))
    assert _profile._gemm_name((gemm,), {}) == "cublasSgemm_v2"
    gemm = types.SimpleNamespace(fkey=("D", True), offsets=((0, 0, 0), (8, 8, 8)))
    assert _profile._gemm_name((gemm,), {}) == "cublasDgemmStridedBatched x2"


def test_user_kernel_launches_are_recorded(fake, walker):
    k = FakeKernel("user:mine: scale")
    x = _layout((8,), 0x1000)
    uk = _gp_module("gparray.cuda._user_kernels_fake", """
class UserKernel:
    def __call__(self, k, args):
        launch(k, (2, 1, 1), (32, 1, 1), (1,), 0, 0x66, None)
""", launch=_user_kernels.UserKernel._launch)
    with xp.cuda.profile() as prof:
        uk["UserKernel"]()(k, (x, 3))
    (r,) = prof.records
    assert (r.function, r.family, r.name, r.grid, r.block, r.stream) == \
        ("UserKernel.__call__", "user:mine", "scale", (2, 1, 1), (32, 1, 1), 0x66)
    assert k.calls == [(2, 32, (1,), 0, 0x66)]


def test_nvtx_ranges_pair_up(fake, walker, monkeypatch):
    log = []
    fake_nvtx = types.SimpleNamespace(push_range=lambda message, domain: log.append(("push", message, domain)),
                                      pop_range=lambda domain: log.append(("pop", domain)))
    monkeypatch.setattr(_profile, "_nvtx", fake_nvtx)
    k = FakeKernel()
    with xp.cuda.profile(nvtx=True) as prof:
        NAMESPACE["my_function"](k, _layout((4,), 0x1000), None)
        with pytest.raises(RuntimeError):
            NAMESPACE["my_function"](FakeKernel(fail=RuntimeError("x")), _layout((4,), 0x1000), None)
    assert log == [("push", "my_function: gp_binary_contig", "gparray"), ("pop", "gparray")] * 2
    assert len(prof.records) == 1
    log.clear()
    with xp.cuda.profile():   # nvtx=False: no ranges
        NAMESPACE["my_function"](k, _layout((4,), 0x1000), None)
    assert log == []


def test_env_nvtx_ranges_without_records(fake, monkeypatch):
    log = []
    fake_nvtx = types.SimpleNamespace(push_range=lambda message, domain: log.append(message),
                                      pop_range=lambda domain: None)
    monkeypatch.setattr(_profile, "_nvtx", fake_nvtx)
    monkeypatch.setattr(_profile, "_active", 0)
    try:
        assert _profile.enable_env_nvtx() is True
        NAMESPACE["copy_thing"](8)
        assert log == ["copy_thing: memcpy HtoD"]
    finally:
        _profile._nvtx_env = False
        _profile._deactivate()
