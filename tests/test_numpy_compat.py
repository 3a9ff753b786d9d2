"""CPU tier: the NumPy-compatible behaviour SciPy relies on that needs no GPU.

Arrays here are built with the private constructor over no memory (``_bare``): enough for
what touches only shapes, dtypes and the protocol methods. The same behaviour on real
device data is tests/test_numpy_compat_gpu.py."""
import numpy as np
import pytest

import gparray as xp
from gparray._array import Array
from gparray._device import Device
from gparray._engine import _shapes


def _bare(shape, dtype=xp.float64):
    """An Array of ``shape`` and ``dtype`` over no device memory (never read)."""
    dt = np.dtype(dtype)
    return Array._new(None, 0, tuple(shape), _shapes.c_strides(tuple(shape), dt.itemsize), dt, Device(0))


# ---------------------------------------------------------------------------------------
# 1. __iter__ raises for a 0-d array at iter(), not at the first next()
# ---------------------------------------------------------------------------------------

def test_iter_of_0d_raises_eagerly():
    x = _bare(())
    with pytest.raises(TypeError, match="^__iter__: iteration over a 0-dimensional array"):
        iter(x)
    assert not np.iterable(x)


def test_iter_of_nd_is_lazy_and_iterable():
    assert np.iterable(_bare((3,)))
    assert list(iter(_bare((0, 4)))) == []     # no element, so nothing is indexed
    it = iter(_bare((2, 5)))
    assert iter(it) is it                     # an iterator, not just an iterable


def test_len_of_0d_raises():
    with pytest.raises(TypeError, match="^__len__: "):
        len(_bare(()))
    assert len(_bare((7, 2))) == 7
