"""GPU tier: the runtime examples of the user guide run as printed (docs/guide/devices.md,
user-kernels.md and profiling.md; the streams example runs in tests/test_streams_gpu.py), with
what they print checked where it says something."""
import os
import pathlib

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

GUIDE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide"


def _example(page: str, section: str) -> str:
    """The first python code block of section ``## <section>`` of docs/guide/<page>."""
    text = (GUIDE / page).read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def _run(page: str, section: str) -> dict:
    scope = {}
    exec(compile(_example(page, section), f"docs/guide/{page}: {section}", "exec"), scope)
    return scope


def test_devices_example(capsys):
    scope = _run("devices.md", "Choosing a device")
    out = capsys.readouterr().out
    assert str(scope["last"]) in out and scope["z"].device == scope["devices"][0]
    np.testing.assert_array_equal(np.asarray(scope["z"]), np.arange(10.0))


def test_user_kernels_example():
    scope = _run("user-kernels.md", "Compiling and launching a kernel")
    np.testing.assert_array_equal(np.asarray(scope["y"]), np.full(1000, 2.0, np.float32))
    np.testing.assert_array_equal(np.asarray(scope["w"]), 2.0 * np.arange(20.0)[3::2])


def test_profiling_example(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)               # the example writes profile.json
    scope = _run("profiling.md", "Recording a region")
    out = capsys.readouterr().out
    assert "__add__" in out and "sum" in out and os.path.exists(tmp_path / "profile.json")
    assert scope["prof"].records[0].function == "__add__"
