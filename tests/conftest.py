"""Shared test configuration: the ``gpu`` marker skips, with its reason, without a CUDA device.

Mark GPU tests with ``@pytest.mark.gpu`` (or ``pytestmark = pytest.mark.gpu``); they are
skipped with "no CUDA device" when ``gparray._backend.has_cuda()`` is False. ``requires_gpu``
is the same skip as a reusable decorator (``from conftest import requires_gpu``).
"""
import pytest

from gparray import _backend

requires_gpu = pytest.mark.skipif(not _backend.has_cuda(), reason="no CUDA device")


def pytest_collection_modifyitems(config, items):
    if _backend.has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
