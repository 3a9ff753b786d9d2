"""Shared test configuration.

* The ``gpu`` marker skips, with its reason, without a CUDA device. Mark GPU tests with
  ``@pytest.mark.gpu`` (or ``pytestmark = pytest.mark.gpu``); ``requires_gpu`` is the same
  skip as a reusable decorator (``from conftest import requires_gpu``).
* ``gpu_exclusive``: the test needs the whole GPU (it fills the device's memory). Under
  pytest-xdist the workers share one GPU, so every GPU test holds a shared lock on a file and
  an exclusive test holds it alone (new GPU tests wait at a gate while one is waiting).
* Hypothesis runs without its per-example deadline: under ``-n 12`` on a loaded machine a
  CPU-tier example that builds a large array can take more than 200 ms, and how long an
  example takes is not what these tests check (the bench measures time).
"""
import fcntl
import os
import tempfile

import pytest
from hypothesis import settings

from gparray._core import _backend

settings.register_profile("gparray", deadline=None)
settings.load_profile("gparray")

requires_gpu = pytest.mark.skipif(not _backend.has_cuda(), reason="no CUDA device")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu_exclusive: needs the whole GPU (no other test may run on it)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu_exclusive" in item.keywords:
            item.add_marker(pytest.mark.gpu)
    if _backend.has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_LOCK_DIR = os.path.join(tempfile.gettempdir(), f"gparray-tests-{os.getuid()}")


def _open(name):
    os.makedirs(_LOCK_DIR, exist_ok=True)
    return os.open(os.path.join(_LOCK_DIR, name), os.O_RDWR | os.O_CREAT, 0o600)


@pytest.fixture(autouse=True)
def _gpu_share(request):
    """Readers/writer lock over the workers' shared GPU (writer preference through a gate)."""
    if "gpu" not in request.node.keywords:
        yield
        return
    exclusive = "gpu_exclusive" in request.node.keywords
    gate, rw = _open("gate.lock"), _open("rw.lock")
    try:
        if exclusive:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(rw, fcntl.LOCK_EX)
        else:
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(rw, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        fcntl.flock(rw, fcntl.LOCK_UN)
        fcntl.flock(gate, fcntl.LOCK_UN)
        os.close(rw)
        os.close(gate)
