"""CPU tier: tools/test_site.py, which installs the carried wheels of the optional test
libraries (array-api-extra, cubed, dask.distributed...) that the machine lacks: which wheel
fits which Python, what a plan installs (only the missing, dask and distributed together),
and a dry run on this machine."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gp_test_site", ROOT / "tools" / "test_site.py")
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)


@pytest.mark.parametrize("name, py, fits", [
    ("cubed-0.28.0-py3-none-any.whl", (3, 12), True),
    ("locket-1.0.0-py2.py3-none-any.whl", (3, 11), True),
    ("msgpack-1.2.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", (3, 12), True),
    ("msgpack-1.2.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", (3, 11), False),
    ("msgpack-1.2.4-cp312-cp312-macosx_11_0_arm64.whl", (3, 12), False),
    ("msgpack-1.2.4-cp312-cp312-manylinux2014_aarch64.whl", (3, 12), False),
    ("tornado-6.6.1-cp311-abi3-manylinux1_x86_64.manylinux_2_28_x86_64.whl", (3, 12), True),
    ("tornado-6.6.1-cp311-abi3-manylinux1_x86_64.manylinux_2_28_x86_64.whl", (3, 10), False),
    ("psutil-7.2.2-cp36-abi3-manylinux2010_x86_64.manylinux_2_12_x86_64.whl", (3, 12), True),
    ("notawheel.whl", (3, 12), False),
])
def test_wheel_fits(name, py, fits):
    assert ts.wheel_fits(name, py) is fits


def test_find_wheel_takes_the_newest_fitting_one(tmp_path):
    for n in ("PyYAML-6.0.1-cp312-cp312-manylinux_2_17_x86_64.whl", "pyyaml-6.0.4-cp312-cp312-manylinux_2_17_x86_64.whl",
              "pyyaml-7.0.0-cp313-cp313-manylinux_2_17_x86_64.whl", "pyyaml_env-9.0-py3-none-any.whl"):
        (tmp_path / n).write_bytes(b"")
    assert ts.find_wheel("pyyaml", [tmp_path], (3, 12)).name == "pyyaml-6.0.4-cp312-cp312-manylinux_2_17_x86_64.whl"
    assert ts.find_wheel("PyYAML", [tmp_path, tmp_path / "absent"], (3, 12)) is not None
    assert ts.find_wheel("pyyaml", [tmp_path], (3, 11)) is None
    assert ts.find_wheel("zict", [tmp_path], (3, 12)) is None


def test_plan_installs_only_what_is_missing_and_dask_with_distributed():
    wanted = [("cubed", "cubed", None), ("zarr", "zarr", "3.0"), ("dask", "dask", None),
              ("distributed", "distributed", None), ("toolz", "toolz", None), ("tlz", "toolz", None),
              ("nowheel", "nowheel", None)]
    have = {"zarr", "dask", "tlz"}
    todo, lines = ts.plan(lambda mod, dist, mn: mod in have,
                          lambda dist: None if dist == "nowheel" else f"/w/{dist}-1.0-py3-none-any.whl",
                          wanted=wanted, together=[{"dask", "distributed"}])
    assert [d for d, _ in todo] == ["cubed", "dask", "distributed", "toolz"]
    text = "\n".join(lines)
    assert "zarr               present" in text and "nowheel" in text and "left out" in text
    assert text.count("toolz-1.0") == 1   # one wheel for two modules of one distribution
    # nothing missing: nothing to install
    todo, _ = ts.plan(lambda *a: True, lambda dist: "x", wanted=wanted)
    assert todo == []


def test_every_wanted_module_names_a_distribution_once():
    mods = [m for m, _, _ in ts.WANTED]
    assert len(mods) == len(set(mods))
    assert {"array_api_extra", "array_api_compat", "cubed", "zarr", "dask", "distributed"} <= set(mods)
    for group in ts.TOGETHER:
        assert group <= {d for _, d, _ in ts.WANTED}


def test_dry_run_here(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "test_site.py"), "--site", str(tmp_path / "site"),
                           "--wheels", str(tmp_path), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"== test site {tmp_path / 'site'}: 0 wheel(s) to install")
    assert "numpy" not in proc.stdout and "pytest_timeout" in proc.stdout
    assert not (tmp_path / "site").exists()
