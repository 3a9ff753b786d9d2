"""The pytest plugins of ecosystem/ (CPU tier, except the last test).

Without scikit-learn or SciPy the plugins load and do nothing. With them installed in the
interpreter running these tests, their parametrization gains a gparray entry: checked by
collection only (no array is made), in subprocesses, since the plugins patch the libraries
for the whole process. Skipped, with the reason, when the library is missing.
"""
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import requires_gpu

ROOT = pathlib.Path(__file__).resolve().parent.parent
ECO = ROOT / "ecosystem"


def have(name):
    try:
        __import__(name)
        return True
    except Exception:  # noqa: BLE001 - a broken install counts as missing
        return False


def run(args, env=None, cwd=None, timeout=300):
    """``args`` under this interpreter with ecosystem/ and the repo on sys.path."""
    full_env = dict(os.environ)
    for key in ("GP_ECO_BACKENDS", "GP_ECO_SHARD", "GP_ECO_SCIPY_CPU_ONLY"):
        full_env.pop(key, None)
    full_env["PYTHONPATH"] = os.pathsep.join([str(ECO), str(ROOT), full_env.get("PYTHONPATH", "")])
    full_env["SCIPY_ARRAY_API"] = "1"
    # SciPy's conftest imports JAX when installed: keep it off the GPU the other tests share
    full_env.update(JAX_PLATFORMS="cpu", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    full_env.update(env or {})
    return subprocess.run([sys.executable, *args], env=full_env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def collect(tmp_path, plugin, targets, select, env=None, extra=()):
    """Node ids that ``pytest --collect-only`` finds with ``plugin`` loaded."""
    sitepkg = pathlib.Path(__import__(targets[0].split(".")[0]).__file__).parent.parent
    proc = run(["-m", "pytest", "-c", str(ECO / "pytest.ini"), "--rootdir", str(sitepkg),
                "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "gp_eco_common", "-p", plugin,
                *extra, "--pyargs", *targets, *select, "--collect-only", "-q"], env=env, cwd=tmp_path)
    ids = [line for line in proc.stdout.splitlines() if re.match(r"^[A-Za-z_].*\.py::", line)]
    assert proc.returncode == 0 and ids, proc.stdout[-3000:] + proc.stderr[-3000:]
    return ids, proc.stdout


def test_plugins_load_and_stay_inert_without_the_libraries(tmp_path):
    # a plugin loaded first hides scikit-learn and SciPy, as on a machine without them
    (tmp_path / "gp_hide_libs.py").write_text("import sys\nsys.modules['sklearn'] = None\nsys.modules['scipy'] = None\n")
    (tmp_path / "test_trivial.py").write_text("def test_one():\n    assert True\n")
    proc = run(["-m", "pytest", "-c", str(ECO / "pytest.ini"), "--rootdir", str(tmp_path), "-p", "no:cacheprovider",
                "-p", "gp_hide_libs", "-p", "gp_eco_common", "-p", "gp_sklearn_plugin", "-p", "gp_scipy_plugin",
                "test_trivial.py"], env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ECO), str(ROOT)])},
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert "gp_sklearn_plugin: INACTIVE (scikit-learn is not importable" in proc.stdout
    code = textwrap.dedent("""
        import sys
        sys.modules['sklearn'] = None
        import gp_sklearn_plugin as p
        assert p.STATE['absent'] and not p.STATE['installed'] and not p.install(), p.STATE
        print('ok')
    """)
    proc = run(["-c", code])
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


needs_sklearn = pytest.mark.skipif(not have("sklearn"), reason="scikit-learn is not installed")
needs_scipy = pytest.mark.skipif(not have("scipy"), reason="SciPy is not installed")


@needs_sklearn
def test_sklearn_generators_yield_gparray():
    code = textwrap.dedent("""
        import gp_sklearn_plugin as p
        import sklearn.utils._array_api as aa
        import sklearn.utils.estimator_checks as ec
        assert p.STATE['installed'], p.STATE
        combos = list(aa.yield_namespace_device_dtype_combinations())
        print('COMBOS', combos)
        print('NOTNUMPY', list(aa.yield_namespaces(include_numpy_namespaces=False)))
        print('MIXED', [m[2] for m in ec.yield_mixed_namespace_input_permutations()])
        p.uninstall()
        print('AFTER', list(aa.yield_namespaces()))
    """)
    proc = run(["-c", code])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "('gparray', None, None)" in out and "('numpy', None, None)" in out
    assert "'gparray to numpy', 'numpy to gparray', 'array_api_strict to gparray'" in out
    assert "gparray" not in out.split("AFTER", 1)[1]
    proc = run(["-c", code], env={"GP_ECO_BACKENDS": "gparray"})
    assert proc.returncode == 0, proc.stderr
    assert "COMBOS [('gparray', None, None)]" in proc.stdout
    assert "NOTNUMPY ['gparray']" in proc.stdout
    assert "MIXED ['gparray to numpy', 'numpy to gparray', 'array_api_strict to gparray']" in proc.stdout
    proc = run(["-c", code], env={"GP_ECO_BACKENDS": "cupy"})
    assert "COMBOS [('cupy', None, None)]" in proc.stdout, proc.stderr


@needs_sklearn
def test_sklearn_collection_has_gparray_tests(tmp_path):
    ids, out = collect(tmp_path, "gp_sklearn_plugin", ["sklearn.utils.tests.test_array_api"], ["-k", "array_api"],
                       env={"GP_ECO_BACKENDS": "gparray"})
    with_gp = [i for i in ids if "gparray" in i]
    assert len(with_gp) > 50, out[-2000:]
    # the generated (namespace, device, dtype) entries are gparray's alone (a few tests list
    # namespaces of their own, e.g. test_supported_float_types: those stay as they are)
    others = r"(numpy-None-None|cupy-None-None|array_api_strict-CPU_DEVICE-float64|torch-cpu-float64)\]"
    assert not any(re.search(others, i) for i in ids)


@needs_scipy
@pytest.mark.parametrize("cpu_only", ["skip", "run"])
def test_scipy_xp_fixture_has_gparray(tmp_path, cpu_only):
    (tmp_path / "gp_show_sets.py").write_text(textwrap.dedent("""
        import sys
        def pytest_collection_finish(session):
            # SciPy's conftest module only: lazy namespaces (torch.ops) answer every getattr
            for name, m in list(sys.modules.items()):
                if name.endswith('conftest') and isinstance(getattr(m, 'xp_known_backends', None), set):
                    print('KNOWN', sorted(m.xp_known_backends), 'CPUONLY', sorted(m.xp_skip_cpu_only_backends))
    """))
    env = {"GP_ECO_BACKENDS": "gparray", "GP_ECO_SCIPY_CPU_ONLY": cpu_only,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ECO), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    ids, out = collect(tmp_path, "gp_scipy_plugin", ["scipy.special.tests.test_logsumexp"],
                       ["-m", "array_api_backends"], env=env, extra=["-p", "gp_show_sets"])
    assert len(ids) > 20 and all("gparray" in i for i in ids), ids[:5]
    known = re.search(r"KNOWN (\[.*?\]) CPUONLY (\[.*?\])", out)
    assert known and "'gparray'" in known.group(1), out[-2000:]
    assert ("'gparray'" in known.group(2)) == (cpu_only == "skip")
    assert "xp fixture parameters: ['gparray']" in out


@needs_scipy
def test_scipy_selection_and_default(tmp_path):
    ids, _ = collect(tmp_path, "gp_scipy_plugin", ["scipy.special.tests.test_logsumexp"], ["-m", "array_api_backends"],
                     env={"GP_ECO_BACKENDS": "numpy"})
    assert all("[numpy" in i or "-numpy" in i for i in ids) and not any("gparray" in i for i in ids)
    ids, _ = collect(tmp_path, "gp_scipy_plugin", ["scipy.special.tests.test_logsumexp"], ["-m", "array_api_backends"])
    names = {m.group(1) for i in ids for m in [re.search(r"\[(numpy|gparray|array_api_strict)\]", i)] if m}
    assert {"numpy", "gparray"} <= names


@needs_sklearn
def test_shard_plugin_splits_the_collection(tmp_path):
    args = ("gp_sklearn_plugin", ["sklearn.utils.tests.test_array_api"], ["-k", "array_api"])
    whole, _ = collect(tmp_path, *args, env={"GP_ECO_BACKENDS": "gparray"})
    parts = [collect(tmp_path, *args, env={"GP_ECO_BACKENDS": "gparray", "GP_ECO_SHARD": f"{i}/2"})[0] for i in (1, 2)]
    assert sorted(parts[0] + parts[1]) == sorted(whole) and parts[0] and parts[1]


@requires_gpu
@pytest.mark.gpu
@needs_sklearn
def test_sklearn_test_runs_on_gparray(tmp_path):
    """One of scikit-learn's array-API tests runs (passes or fails) with gparray: it is not
    skipped as 'gparray is not installed' or for want of SCIPY_ARRAY_API."""
    sitepkg = pathlib.Path(__import__("sklearn").__file__).parent.parent
    proc = run(["-m", "pytest", "-c", str(ECO / "pytest.ini"), "--rootdir", str(sitepkg), "-p", "no:cacheprovider",
                "-p", "no:randomly", "-p", "gp_sklearn_plugin", "--pyargs", "sklearn.utils.tests.test_array_api",
                "-k", "test_add_to_diagonal", "-rA"], env={"GP_ECO_BACKENDS": "gparray"}, cwd=tmp_path)
    assert re.search(r"(PASSED|FAILED) .*test_add_to_diagonal\[gparray-None-None\]", proc.stdout), proc.stdout[-3000:]
