"""GPU tier: the three modes of the indexing kernels' bounds check (gparray/_engine/_index.py,
GPARRAY_BOUNDS_CHECK): deferred (default: raised at the next synchronization), sync (raised
at the call) and off. In every mode an out-of-range index never touches memory outside the
array (tests/test_indexing_gpu.py checks the buffers; the sanitize step runs both files)."""
import re

import numpy as np
import pytest

import gparray as xp

pytestmark = pytest.mark.gpu

MSG = "index 10 is out of bounds for axis 0 with size 5"


@pytest.fixture
def mode(monkeypatch):
    """Set the bounds-check mode for one test; the error word starts and ends clean (in
    "off" mode the kernels still record, nobody reads)."""
    import cupy as cp

    from gparray._engine import _index

    def clean():
        cp.cuda.Device().synchronize()
        _index._pending.clear()
        _index._read_record(0, cp.cuda.get_current_stream().ptr)

    def set_mode(m):
        monkeypatch.setattr(_index, "MODE", m)
        clean()
    yield set_mode
    clean()


def test_default_mode_is_deferred():
    from gparray._engine import _index

    assert _index._mode(None) == "deferred"
    assert _index._mode("sync") == "sync" and _index._mode("0") == "off" and _index._mode("off") == "off"


def test_deferred_raises_at_the_next_download(mode):
    mode("deferred")
    x = xp.asarray(np.arange(5.0))
    y = x[xp.asarray([1, 10])]                  # returns at once; the device records index 10
    z = y + 1                                  # still no synchronization
    with pytest.raises(IndexError, match=re.escape(MSG)):
        np.asarray(z)
    # reported once; the array is intact and the next gather works
    np.testing.assert_array_equal(np.asarray(x), np.arange(5.0))
    np.testing.assert_array_equal(np.asarray(x[xp.asarray([4, -5])]), [4.0, 0.0])


def test_deferred_raises_at_synchronize_and_scalar_reads(mode):
    mode("deferred")
    x = xp.asarray(np.arange(5.0))
    x[xp.asarray([10])] = 1.0
    with pytest.raises(IndexError, match=re.escape(MSG)):
        xp.cuda.synchronize()
    np.testing.assert_array_equal(np.asarray(x), np.arange(5.0))
    xp.take(x, xp.asarray([-6]))
    with pytest.raises(IndexError, match=re.escape("index -6 is out of bounds for axis 0 with size 5")):
        float(x[0])


def test_deferred_raises_at_a_mask_count(mode):
    mode("deferred")
    x = xp.asarray(np.arange(5.0))
    x[xp.asarray([10])]
    with pytest.raises(IndexError, match=re.escape(MSG)):
        x[x > 2]                               # the mask's size is read: a synchronization
    np.testing.assert_array_equal(np.asarray(x[x > 2]), [3.0, 4.0])


def test_deferred_in_range_costs_no_error(mode):
    mode("deferred")
    x = xp.asarray(np.arange(5.0))
    for _ in range(3):
        x[xp.asarray([0, 4, -1])] = 2.0
    np.testing.assert_array_equal(np.asarray(x), [2.0, 1.0, 2.0, 3.0, 2.0])
    xp.cuda.synchronize()


def test_deferred_on_another_stream_is_not_lost(mode):
    import cupy as cp

    mode("deferred")
    x = xp.asarray(np.arange(5.0))
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x[xp.asarray([10])]
    np.asarray(x)                              # a download on the default stream: not that stream's check
    with pytest.raises(IndexError, match=re.escape(MSG)):
        xp.cuda.synchronize()                  # the whole device


def test_sync_raises_at_the_call(mode):
    mode("sync")
    x = xp.asarray(np.arange(5.0))
    with pytest.raises(IndexError, match="^__getitem__: " + re.escape(MSG)):
        x[xp.asarray([10])]
    with pytest.raises(IndexError, match="^__setitem__: " + re.escape(MSG)):
        x[xp.asarray([10])] = 0.0
    with pytest.raises(IndexError, match="^take_along_axis: " + re.escape(MSG)):
        xp.take_along_axis(x, xp.asarray([10]), axis=0)
    np.testing.assert_array_equal(np.asarray(x), np.arange(5.0))


def test_off_drops_out_of_range_indices(mode):
    mode("off")
    x = xp.asarray(np.arange(5.0))
    np.testing.assert_array_equal(np.asarray(x[xp.asarray([1, 10, -1])]), [1.0, 0.0, 4.0])
    x[xp.asarray([10, 2])] = 7.0
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 7.0, 3.0, 4.0])
    xp.cuda.synchronize()                      # nothing pending in this mode
