"""CPU tier: bench/ (which runs only on the GPU machine) checked without a GPU.

* ``bench.py --list`` in a subprocess: it runs, every group it names has rows, the case names
  are unique (the keys too, but for the one key two rows share), and it lists every case.
* every bench module imports, and every ``b.NAME`` multigpu_rows reads exists on bench_core.
* the timing core with a fake event pair: the median, the calls per event pair, the warm-up.
* the row arithmetic (ratios, GB/s, TFLOP/s, %copy, target met) and a row's JSON form.
* every GPU case, the host-per-op rows, the transfer rows and the multigpu rows run end to
  end (inputs, byte counts, each library's op, timing, finishing) with CuPy, PyTorch and
  gparray replaced by ``_Fake``, a stand-in that answers any attribute, call or operator
  with another ``_Fake`` (and timing reads with small numbers): a case that reaches a name
  its module lacks, or a helper that moved away, fails here instead of on the device.
* ``main()`` with the stand-ins: the table and the ``--json`` file's format.
"""
import ast
import importlib
import importlib.util
import json
import pathlib
import re
import statistics
import subprocess
import sys
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
GROUPS = ("indexing", "sorting", "sets", "linalg", "fft", "runtime", "multigpu")
# "vector_norm_axis1": the ungrouped row and the linalg row of vector_norm along axis 1
SHARED_KEYS = {"vector_norm_axis1"}
GPU_ROW_KEYS = {"case", "key", "unit", "target", "status", "times", "all_times", "ratio_vs_cupy",
                "ratio_vs_torch", "target_met"}


def _bench():
    """bench/bench.py as the module ``bench`` (it puts bench/ on sys.path for its own modules)."""
    mod = sys.modules.get("bench")
    if mod is None or getattr(mod, "__file__", None) != str(BENCH / "bench.py"):
        spec = importlib.util.spec_from_file_location("bench", BENCH / "bench.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["bench"] = mod
        spec.loader.exec_module(mod)
    return mod


class _Fake:
    """Any library module, array or object of one: attributes, calls and operators give
    another _Fake; a timing read (``elapsed_time``, ``get_elapsed_time``) gives the next of
    1.0, 2.0, ... 7.0, 1.0, ...; ``getDeviceCount`` gives 2. ``calls`` counts the calls."""

    def __init__(self, path, state=None):
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_state", state if state is not None else {"clock": 0, "calls": 0})

    def _new(self, path):
        return _Fake(path, self._state)

    def __getattr__(self, name):
        if name == "__version__":
            return "fake"
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "ndarray":
            return _Fake
        if name == "getDeviceCount":
            return lambda: 2
        if name in ("elapsed_time", "get_elapsed_time"):
            def elapsed(*args):
                self._state["clock"] += 1
                return float((self._state["clock"] - 1) % 7 + 1)
            return elapsed
        return self._new(f"{self._path}.{name}")

    def __setattr__(self, name, value):
        pass

    def __call__(self, *args, **kw):
        self._state["calls"] += 1
        return self._new(f"{self._path}()")

    def __repr__(self):
        return f"<{self._path}>"

    def __int__(self):
        return 1

    __index__ = __int__

    def __float__(self):
        return 1.0

    def __format__(self, spec):
        return format(1.0, spec) if spec else repr(self)

    def __getitem__(self, key):
        return self._new(f"{self._path}[]")

    def __setitem__(self, key, value):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _fake_op(name):
    def op(self, *other):
        return self._new(f"({self._path} {name})")
    return op


for _name in ("add radd sub rsub mul rmul truediv rtruediv matmul rmatmul gt lt ge le iadd neg eq ne "
              "pow floordiv").split():
    setattr(_Fake, f"__{_name}__", _fake_op(_name))
_Fake.__hash__ = object.__hash__
_Fake.__bool__ = lambda self: True


@pytest.fixture
def fakes(monkeypatch):
    """bench with _Fake standing in for CuPy, PyTorch and gparray (as _import_libs binds them)."""
    bench = _bench()
    core = sys.modules["bench_core"]
    state = {"clock": 0, "calls": 0}
    for name in ("cp", "torch", "xp"):
        monkeypatch.setattr(core, name, _Fake(name, state))
    monkeypatch.setattr("gc.collect", lambda *a: 0)   # free_memory's, between libraries: slow here
    saved = dict(core._import_errors)      # one dict, imported by name into the other modules
    core._import_errors.clear()
    yield bench, core, state
    core._import_errors.clear()
    core._import_errors.update(saved)


# --------------------------------------------------------------------------- --list, imports

def test_list_names_every_group_and_each_case_once():
    proc = subprocess.run([sys.executable, str(BENCH / "bench.py"), "--list"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "groups (--cases GROUP runs one): " + ", ".join(GROUPS)
    rows = lines[:-1]
    for g in GROUPS:
        assert any(f"[{g}]" in ln for ln in rows), g
    names = [ln.split(" key=")[0].rstrip() for ln in rows]
    keys = [re.search(r" key=(\S+)", ln).group(1) for ln in rows]
    assert all(" key=" in ln for ln in rows)
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    assert {k for k in keys if keys.count(k) > 1} <= SHARED_KEYS
    bench = _bench()
    cases = bench.gpu_cases()
    assert [c.name for c in cases] == names[:len(cases)]
    assert [c.key for c in cases] == keys[:len(cases)]
    assert len(cases) > 50


def test_every_bench_module_imports():
    _bench()
    for path in sorted(BENCH.glob("*.py")):
        if path.stem != "bench":
            importlib.import_module(path.stem)


def test_multigpu_rows_finds_what_it_reads_on_bench_core():
    _bench()
    core = sys.modules["bench_core"]
    tree = ast.parse((BENCH / "multigpu_rows.py").read_text())
    used = {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "b"}
    assert {"cp", "time_gpu", "finish_row"} <= used
    assert sorted(u for u in used if not hasattr(core, u)) == []


# --------------------------------------------------------------------------- timing core

class _Event:
    def __init__(self, log):
        self.log = log

    def record(self):
        self.log.append("record")

    def synchronize(self):
        self.log.append("sync")


def test_time_gpu_takes_the_median_per_call(monkeypatch):
    _bench()
    core = sys.modules["bench_core"]
    log, elapsed = [], [8.0, 4.0, 12.0, 40.0, 16.0]
    cuda = types.SimpleNamespace(Event=lambda: _Event(log), get_elapsed_time=lambda s, e: elapsed.pop(0),
                                 Device=lambda: types.SimpleNamespace(synchronize=lambda: log.append("dev")))
    monkeypatch.setattr(core, "cp", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(core, "torch", None)
    monkeypatch.setattr(core, "xp", None)
    calls = []
    ms, times = core.time_gpu("cupy", lambda: calls.append(1), warmup=2, repeat=5, calls=4)
    assert times == [2.0, 1.0, 3.0, 10.0, 4.0] and ms == 3.0
    assert len(calls) == 2 + 5 * 4
    assert log.count("record") == 10 and log.count("sync") == 5 and log[0] == "dev"
    elapsed[:] = [3.0, 1.0, 2.0]
    assert core.time_gpu("cupy", lambda: None, warmup=0, repeat=3) == (2.0, [3.0, 1.0, 2.0])


def test_wall_ms_is_the_median_of_repeat_runs(monkeypatch):
    _bench()
    core = sys.modules["bench_core"]
    ticks = iter([0.0, 0.004, 1.0, 1.001, 2.0, 2.002])
    monkeypatch.setattr(core.time, "perf_counter", lambda: next(ticks))
    monkeypatch.setattr(core, "sync", lambda: None)
    ms, times = core._wall_ms(lambda: None, warmup=1, repeat=3)
    assert ms == pytest.approx(2.0) and times == pytest.approx([4.0, 1.0, 2.0])


# --------------------------------------------------------------------------- row arithmetic

def test_finish_row_ratios_bandwidth_and_targets():
    _bench()
    core = sys.modules["bench_core"]

    def row(**kw):
        r = {"unit": "ms", "times": {"gparray": 2.0, "cupy": 4.0, "torch": 1.0},
             "status": {"gparray": "ok", "cupy": "ok", "torch": "ok"}}
        r.update(kw)
        return r

    r = core.finish_row(row(bytes=6_000_000_000, flops=8e9), ("pct_copy", 70.0), 4000.0)
    assert (r["ratio_vs_cupy"], r["ratio_vs_torch"]) == (0.5, 2.0)
    assert r["GBps"] == {"gparray": 3000.0, "cupy": 1500.0, "torch": 6000.0}
    assert r["pct_copy_bw"] == 75.0 and r["target_met"] is True
    assert r["TFLOPs"] == {"gparray": 4.0, "cupy": 2.0, "torch": 8.0}
    assert core.finish_row(row(), ("best", 1.0), None)["target_met"] is False      # best = torch 1.0
    assert core.finish_row(row(), ("cupy", 0.5), None)["target_met"] is True
    assert core.finish_row(row(), ("pct_copy", 70.0), None)["target_met"] is None  # no bytes
    assert core.finish_row(row(unit="us"), ("abs", 2.0), None)["target_met"] is True
    assert "GBps" not in core.finish_row(row(unit="us", bytes=10), None, 1.0)
    assert core.finish_row(row(ratio=1.1), ("ratio", 1.03), None)["target_met"] is False
    cells = row(status={"gparray": "ok", "cupy": "n/a (x)", "torch": "error: y"})
    assert [core._cell(cells, lib) for lib in core.LIBS] == ["2.000", "n/a", "ERR"]
    assert core._cell({"status": {}}, "cupy") == "-"
    assert [core._fmt_time(v, u) for v, u in ((250.0, "ms"), (1.5, "us"), (0.25, "s"))] == \
        ["250.0", "1.50us", "0.250s"]


# --------------------------------------------------------------------------- end to end on stand-ins

def test_every_gpu_case_runs_on_the_stand_ins(fakes):
    bench, core, state = fakes
    msgs = []
    cases = bench.gpu_cases()
    for case in cases:
        row = core.run_gpu_case(case, list(core.LIBS), 1, 3, msgs.append)
        assert row["status"] == {lib: "ok" for lib in core.LIBS}, (case.key, row["status"], msgs)
        for lib in core.LIBS:
            assert row["times"][lib] == statistics.median(row["all_times"][lib])
        if case.calls > 1:
            assert row["calls"] == case.calls and set(row["one_call_ms"]) == set(core.LIBS)
        core.finish_row(row, case.target, 3000.0)
        expect = GPU_ROW_KEYS | ({"bytes", "GBps", "pct_copy_bw"} if case.nbytes is not None else set()) \
            | ({"flops", "TFLOPs"} if case.flops is not None else set()) \
            | ({"calls", "one_call_ms"} if case.calls > 1 else set())
        assert set(row) == expect, case.key
        assert json.loads(json.dumps(row))["key"] == case.key
    assert msgs == [] and state["calls"] > 10 * len(cases)


def test_run_gpu_case_interleaves_the_libraries_in_rounds(monkeypatch):
    """Every library is warmed up first, then timed in core.ROUNDS rounds, each starting one
    library later; the row's times are the medians over all the rounds; a library failing in
    one round is reported, the others still timed."""
    _bench()
    core = sys.modules["bench_core"]
    order, clock = [], iter(range(1, 1000))
    monkeypatch.setattr(core, "module_of", lambda lib: object())
    monkeypatch.setattr(core, "convert", lambda lib, v: v)
    monkeypatch.setattr(core, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None)))
    monkeypatch.setattr(core, "sync", lambda: None)
    monkeypatch.setattr(core, "free_memory", lambda: None)

    def fake_time(lib, fn, warmup, repeat, calls=1):
        order.append((lib, warmup, repeat, calls))
        if lib == "torch" and len(order) > 6:
            raise RuntimeError("boom")
        ts = [float(next(clock)) for _ in range(repeat)]
        return (statistics.median(ts) if ts else None), ts

    monkeypatch.setattr(core, "time_gpu", fake_time)
    monkeypatch.setattr(core, "ROUNDS", 3)
    libs = ["gparray", "cupy", "torch"]
    case = core.Case("c", "c", lambda: {"a": 1}, {lib: (lambda m, d: None) for lib in libs})
    msgs = []
    row = core.run_gpu_case(case, libs, 2, 7, msgs.append)
    assert order[:3] == [(lib, 2, 0, 1) for lib in libs]                     # warm-ups
    assert [o[0] for o in order[3:]] == ["gparray", "cupy", "torch", "cupy", "torch", "gparray", "gparray", "cupy"]
    assert [o[2] for o in order[3:]] == [3, 3, 3, 2, 2, 2, 2, 2]             # 7 runs over 3 rounds
    assert row["status"]["gparray"] == row["status"]["cupy"] == "ok"
    assert "boom" in row["status"]["torch"] and msgs and "torch" not in row["times"]
    assert len(row["all_times"]["gparray"]) == 7 and row["times"]["gparray"] == statistics.median(
        row["all_times"]["gparray"])


def test_host_transfer_and_multigpu_rows_run_on_the_stand_ins(fakes, monkeypatch):
    bench, core, _ = fakes
    host_rows, transfer_rows, multigpu_rows = (sys.modules[m] for m in ("host_rows", "transfer_rows",
                                                                         "multigpu_rows"))
    libs, msgs = list(core.LIBS), []
    rows = [host_rows.host_small_add(libs, True, msgs.append),
            host_rows.host_small_index(libs, True, msgs.append),
            host_rows.host_small_index(libs, True, msgs.append, setitem=True),
            host_rows.host_small_fft(libs, True, msgs.append),
            host_rows.host_small_matmul(libs, True, msgs.append)]
    for r in rows:
        assert r["status"] == {lib: "ok" for lib in libs} and r["unit"] == "us", r
    monkeypatch.setattr(transfer_rows, "TRANSFER_N", 256)
    rows = transfer_rows.transfer_rows(libs, 1, 2, msgs.append, lambda *a: True)
    assert [r["key"] for r in rows] == [k for _, k in transfer_rows.TRANSFER_ROWS]
    for r in rows:
        ok = {lib: "ok" for lib in libs}
        if r["key"] == "d2h_pageable_256M":   # numpy.from_dlpack of a stand-in: n/a for gparray
            ok["gparray"] = r["status"]["gparray"]
            assert ok["gparray"].startswith("n/a")
        assert r["status"] == ok and r["group"] == "transfers", r
    rows = multigpu_rows.rows(core, libs, 1, 2, msgs.append, lambda *a: True)
    assert [r["key"] for r in rows] == [k for _, k in multigpu_rows.NAMES]
    for r in rows:
        assert all(s == "ok" or s.startswith("n/a (CuPy runs it") for s in r["status"].values()), r


def test_main_writes_the_table_and_the_json(fakes, monkeypatch, tmp_path, capsys):
    bench, core, _ = fakes
    monkeypatch.setattr(bench, "_import_libs", lambda wanted: None)
    out = tmp_path / "bench.json"
    rc = bench.main(["--cases", "sum_all,cumsum,take64M,small_add,to_device_0to1", "--quick", "--repeat",
                     "3", "--no-startup", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    data = json.loads(out.read_text())
    assert set(data) == {"meta", "rows"}
    assert {"date", "python", "repeat", "warmup", "libs", "note", "copy", "import_errors", "tf32"} <= set(data["meta"])
    assert (data["meta"]["repeat"], data["meta"]["warmup"]) == (3, 1)
    keys = [r["key"] for r in data["rows"]]
    assert keys == ["sum_all", "cumsum", "take64M", "to_device_0to1_1GiB", "small_add_us_per_op"]
    for r in data["rows"]:
        assert set(r["status"].values()) == {"ok"}, r
    assert "ratios are gparray time / anchor time" in text and "targets met:" in text
    table = text[text.index("ratios are gparray"):]
    for r in data["rows"]:
        assert r["case"] in table
