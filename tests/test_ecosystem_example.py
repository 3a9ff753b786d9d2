"""CPU tier: ecosystem/example.py (the worked example of docs/guide/ecosystem.md) without a GPU.

Its data, timing, comparison and table pieces run on NumPy here; the whole script runs on the
NumPy backend when scikit-learn and SciPy are installed (skipped, with the reason, when they
are not). The gparray and CuPy columns run on the GPU machine (see ecosystem/README.md)."""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "ecosystem" / "example.py"


def _load():
    spec = importlib.util.spec_from_file_location("gp_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ex = _load()


def have(name):
    try:
        __import__(name)
        return True
    except Exception:  # noqa: BLE001 - a broken install counts as missing
        return False


def test_importing_the_script_imports_neither_library_nor_sets_scipy_array_api():
    code = (f"import importlib.util, os, sys\n"
            f"spec = importlib.util.spec_from_file_location('m', {str(SCRIPT)!r})\n"
            f"m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            f"print(sorted(k for k in ('sklearn', 'scipy', 'cupy') if k in sys.modules), "
            f"os.environ.get('SCIPY_ARRAY_API'))\n")
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] None"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_make_data(dtype):
    d = ex.make_data(400, 12, dtype)
    assert d["X"].shape == (400, 12) and d["X_test"].shape == (100, 12)
    assert d["X"].dtype == d["y"].dtype == d["X_test"].dtype == np.dtype(dtype)
    assert d["X"].flags.c_contiguous and d["X_test"].flags.c_contiguous
    assert d["y"].shape == (400,) and d["y_test"].shape == (100,)
    assert d["y_class"].dtype == np.int64 and set(np.unique(d["y_class"])) == {0, 1}
    assert abs(d["y_class"].mean() - 0.5) < 0.01                      # split at the median
    again = ex.make_data(400, 12, dtype)
    for k in d:
        np.testing.assert_array_equal(d[k], again[k])                  # deterministic
    assert set(ex.INPUTS) < set(d) and "y_test" not in ex.INPUTS
    # low rank plus noise: 10 factors carry most of the standardized variance
    z = (d["X"] - d["X"].mean(0)) / d["X"].std(0)
    s = np.linalg.svd(z.astype(np.float64), compute_uv=False) ** 2
    assert s[:10].sum() / s.sum() > 0.8


def test_numpy_backend_and_unknown_backend():
    b = ex.load_backend("numpy")
    a = np.arange(3.0)
    assert b.put(a) is not None and b.sync() is None
    np.testing.assert_array_equal(b.to_numpy(b.put(a)), a)
    with pytest.raises(ValueError, match="unknown backend 'torch'; expected one of numpy, gparray, cupy"):
        ex.load_backend("torch")


def test_gparray_backend_without_a_gpu_gives_the_reason():
    from gparray._core import _backend

    if _backend.has_cuda():
        pytest.skip("checks the no-GPU path")
    with pytest.raises(RuntimeError, match="^gparray: no CUDA device$"):
        ex.load_backend("gparray")


def test_time_runs_warms_up_then_times_each_run_to_the_end_of_sync():
    events = []
    ticks = iter(range(0, 1000, 10))

    def clock():
        events.append("clock")
        return next(ticks)

    def fn():
        events.append("fn")
        return len(events)

    r = ex.time_runs(fn, lambda: events.append("sync"), 3, clock=clock)
    # warm-up, then three runs, each clock - fn - sync - clock
    assert events == ["clock", "fn", "sync", "clock"] * 4
    assert r["first"] == 10 and r["times"] == [10, 10, 10] and r["median"] == 10
    assert r["result"] == len(events) - 2


def test_time_runs_median():
    ticks = iter([0, 5, 0, 3, 0, 100, 0, 1])   # warm-up 5, then runs of 3, 100, 1

    r = ex.time_runs(lambda: None, lambda: None, 3, clock=lambda: next(ticks))
    assert r["first"] == 5 and r["times"] == [3, 100, 1] and r["median"] == 3


def test_count_host_conversions(monkeypatch):
    """gparray's implicit conversions of one run, counted under the "warn" mode whatever the
    mode is, which is restored; an Array whose host copy is a NumPy array (no GPU)."""
    import gparray
    from gparray._array import Array
    from gparray._core._device import Device

    monkeypatch.setattr(Array, "_to_numpy", lambda self: np.zeros(self.shape, self.dtype))
    x = Array._new(None, 0, (2, 3), (12, 4), np.dtype("float32"), Device(0))
    gp = ex.Backend("gparray", gparray, None, lambda: None, None)

    def fn():
        np.asarray(x)
        np.asarray(x, dtype=np.float64)
        float(Array._new(None, 0, (), (), np.dtype("float32"), Device(0)))   # explicit: not counted
        warnings.warn("something else", UserWarning)

    with gparray.cuda.host_conversion("raise"):
        assert ex.count_host_conversions(gp, fn) == 2
        assert gparray.cuda.get_host_conversion() == "raise"
    assert ex.count_host_conversions(ex.load_backend("numpy"), fn) is None


def _outputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"prediction": rng.standard_normal(50).astype(np.float32),
            "explained_variance_ratio": np.linspace(0.3, 0.01, 20).astype(np.float32),
            "proba": rng.uniform(0, 1, 50), "logsumexp": rng.uniform(100, 200, 50).astype(np.float32),
            "zscore": rng.standard_normal((50, 4)).astype(np.float32)}


def test_check_accepts_close_and_rejects_wrong_results():
    ref = _outputs()
    near = {k: (v * (1 + 1e-6)).astype(v.dtype) for k, v in ref.items()}
    diffs = ex.check(near, ref, "float32")
    assert set(diffs) == set(ref) and all(0 <= v < 1e-3 for v in diffs.values())
    for key in ref:
        bad = dict(near)
        bad[key] = ref[key] + np.float32(0.05) * (np.abs(ref[key]).max() + 1)
        with pytest.raises(AssertionError, match=key):
            ex.check(bad, ref, "float32")
    wrong_shape = dict(near, zscore=ref["zscore"][:10])
    with pytest.raises(AssertionError, match=r"zscore: shape \(10, 4\), NumPy's \(50, 4\)"):
        ex.check(wrong_shape, ref, "float32")


def test_tolerances_cover_every_output_of_every_dtype():
    assert set(ex.TOLERANCES) == {"float32", "float64"}
    assert set(ex.TOLERANCES["float32"]) == set(ex.TOLERANCES["float64"]) == set(_outputs())
    for key, (rtol, atol) in ex.TOLERANCES["float64"].items():
        assert (rtol, atol) <= tuple(ex.TOLERANCES["float32"][key]), key


def test_markdown_table():
    results = {
        "pipeline-ridge": {"numpy": {"median": 0.5}, "gparray": {"median": 0.05, "host_copies": 0},
                           "cupy": {"median": 0.1}},
        "pipeline-logistic": {"numpy": {"median": 0.8}, "gparray": {"error": "TypeError: x", "host_copies": 3},
                              "cupy": {"median": 0.2}},
        "logsumexp": {"numpy": {"median": 0.1}, "gparray": {"median": 0.002, "host_copies": 0},
                      "cupy": {"median": 0.004, "error": "AssertionError: logsumexp"}},
        "zscore": {"numpy": {"median": 0.08}},
    }
    table = ex.markdown_table(results, ["numpy", "gparray", "cupy"]).splitlines()
    assert table[0] == ("| piece | numpy ms | gparray ms | cupy ms | gparray / numpy | gparray / cupy "
                        "| gparray implicit host conversions |")
    assert table[1] == "|" + "---|" * 7
    assert table[2] == "| StandardScaler → PCA(20) → Ridge: fit + predict | 500.0 | 50.0 | 100.0 | 0.10x | 0.50x | 0 |"
    assert table[3] == ("| StandardScaler → PCA(20) → LogisticRegression: fit + predict_proba | 800.0 | failed "
                        "| 200.0 |  |  | 3 |")
    assert table[4] == "| scipy.special.logsumexp(X, axis=1) | 100.0 | 2.0 | failed | 0.02x |  | 0 |"
    assert table[5] == "| scipy.stats.zscore(X, axis=0) | 80.0 |  |  |  |  |  |"
    only_numpy = ex.markdown_table(results, ["numpy"]).splitlines()
    assert only_numpy[0] == "| piece | numpy ms |" and only_numpy[2].endswith("| 500.0 |")


def test_parse_args():
    a = ex.parse_args([])
    assert (a.n, a.d, a.dtype, a.repeat) == (200_000, 100, "float32", 5)
    assert a.backends == ["numpy", "gparray", "cupy"] and a.cases == [c[0] for c in ex.CASES]
    assert a.required is False            # the default list: a backend that cannot run is left out
    a = ex.parse_args(["--backends", "gparray", "--cases", "zscore,logsumexp"])
    assert a.backends == ["numpy", "gparray"] and a.cases == ["zscore", "logsumexp"]   # numpy: the reference
    assert a.required is True
    for bad in (["--backends", "torch"], ["--cases", "kmeans"], ["--repeat", "0"]):
        with pytest.raises(SystemExit):
            ex.parse_args(bad)


@pytest.mark.skipif(not (have("sklearn") and have("scipy")),
                    reason="needs scikit-learn and SciPy (installed on the GPU machine)")
def test_the_script_runs_on_numpy(tmp_path):
    """The whole example on the NumPy backend (small): every piece runs, the summary lines and
    the table come out, and the JSON holds the times. In a subprocess: the script sets
    SCIPY_ARRAY_API and scikit-learn's config."""
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(SCRIPT), "--n", "3000", "--d", "30", "--repeat", "2",
                          "--backends", "numpy", "--json", str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "SCIPY_ARRAY_API=1" in out.stdout
    r2 = re.search(r"^\[pipeline-ridge\] R\^2 on 750 test rows (\S+); PCA keeps (\S+) of the variance$",
                   out.stdout, re.M)
    acc = re.search(r"^\[pipeline-logistic\] test accuracy (\S+)$", out.stdout, re.M)
    assert r2 and acc, out.stdout
    assert float(r2.group(1)) > 0.8 and float(r2.group(2)) > 0.9 and float(acc.group(1)) > 0.8
    assert "[zscore] columns' mean within" in out.stdout
    res = json.loads((tmp_path / "r.json").read_text())
    assert res["n"] == 3000 and res["dtype"] == "float32"
    for name, *_ in ex.CASES:
        r = res["results"][name]["numpy"]
        assert len(r["times"]) == 2 and r["median"] > 0 and "error" not in r
    table = (tmp_path / "r.md").read_text().splitlines()
    assert table[0] == "| piece | numpy ms |" and len(table) == 2 + len(ex.CASES)
    assert table[-1] in out.stdout


@pytest.mark.skipif(not (have("sklearn") and have("scipy")),
                    reason="needs scikit-learn and SciPy (installed on the GPU machine)")
def test_a_wrong_backend_result_fails_the_run(tmp_path):
    """The check can fail: a 'cupy' backend whose zscore is off by a little makes the script
    report the piece failed and exit 1 (a fake CuPy module over NumPy, in a subprocess)."""
    fake = tmp_path / "cupy"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import numpy as _np\n__version__ = 'fake'\n"
        "class ndarray(_np.ndarray):\n    def get(self):\n        return _np.asarray(self) * (1 + 1e-2)\n"
        "def asarray(a):\n    return _np.asarray(a).view(ndarray)\n"
        "class _Dev:\n    def synchronize(self):\n        pass\n"
        "class cuda:\n    Device = _Dev\n"
        "    class runtime:\n        @staticmethod\n        def getDeviceCount():\n            return 1\n")
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(SCRIPT), "--n", "2000", "--d", "20", "--repeat", "1",
                          "--backends", "numpy,cupy", "--cases", "zscore", "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "[zscore] cupy: FAILED AssertionError" in out.stdout
    res = json.loads((tmp_path / "r.json").read_text())
    assert res["results"]["zscore"]["cupy"]["error"].startswith("AssertionError")
    assert "| scipy.stats.zscore(X, axis=0) |" in out.stdout and "| failed |" in out.stdout


@pytest.mark.skipif(not (have("sklearn") and have("scipy")),
                    reason="needs scikit-learn and SciPy (installed on the GPU machine)")
def test_a_named_backend_that_cannot_run_fails_the_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    (tmp_path / "cupy.py").write_text("raise ImportError('no cupy here')\n")
    args = [sys.executable, str(SCRIPT), "--n", "500", "--d", "10", "--repeat", "1", "--cases", "zscore"]
    named = subprocess.run(args + ["--backends", "numpy,cupy"], capture_output=True, text=True, env=env, timeout=600)
    assert named.returncode == 1 and "backend cupy: not run (ImportError: no cupy here)" in named.stdout
    default = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert default.returncode == 0, default.stdout[-2000:] + default.stderr[-2000:]
    assert "backend cupy: not run (ImportError: no cupy here)" in default.stdout
