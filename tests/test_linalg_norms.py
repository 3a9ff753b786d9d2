"""CPU tier: the pure pieces of linalg's norms and diagonal (the reducer itself:
tests/test_norm_reducers.py; everything on a GPU: tests/test_linalg_norms_gpu.py).

* ``vector_norm``'s ord -> reduction mapping and the real result dtypes.
* ``diagonal``'s view layout against NumPy's diagonal views of the same buffers.
"""
import numpy as np
import pytest

import gparray as xp
from gparray._core import _dtypes as _dt
from gparray.linalg import _elementary, _norms

INF = float("inf")


# ---------------------------------------------------------------------------- ord mapping
def test_vector_norm_ord_mapping():
    assert _norms.vector_norm_op(2) == ("norm2", 0.0)
    assert _norms.vector_norm_op(2.0) == ("norm2", 0.0)
    assert _norms.vector_norm_op(np.float64(2)) == ("norm2", 0.0)
    assert _norms.vector_norm_op(1) == ("norm1", 0.0)
    assert _norms.vector_norm_op(0) == ("norm0", 0.0)
    assert _norms.vector_norm_op(INF) == ("norm_max", 0.0)
    assert _norms.vector_norm_op(xp.inf) == ("norm_max", 0.0)
    assert _norms.vector_norm_op(-INF) == ("norm_min", 0.0)
    for p in (3, -1, -2, 0.5, -0.5, 1.5, 10):
        assert _norms.vector_norm_op(p) == ("norm_p", float(p))
    with pytest.raises(ValueError, match="^vector_norm: "):
        _norms.vector_norm_op("fro")
    with pytest.raises(ValueError, match="^vector_norm: "):
        _norms.vector_norm_op(float("nan"))
    for bad in (None, True, 1j, [2]):
        with pytest.raises(TypeError, match="^vector_norm: "):
            _norms.vector_norm_op(bad)


def test_real_dtypes():
    assert _norms.real_dtype(_dt.complex64) == _dt.float32
    assert _norms.real_dtype(_dt.complex128) == _dt.float64
    assert _norms.real_dtype(_dt.float32) == _dt.float32
    assert _norms.real_dtype(_dt.float16) == _dt.float16


# ---------------------------------------------------------------------------- diagonal views
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 1, 4, 3), (0, 3), (3, 0), (2, 0, 0)])
@pytest.mark.parametrize("order", ["C", "F", "T", "step"])
def test_diagonal_layout_matches_numpy_views(shape, order):
    base = np.arange(int(np.prod(shape)) * 4 + 7, dtype=np.float64)
    if order == "step":   # every other element, columns reversed
        full = base[: int(np.prod(shape)) * 2].reshape(shape[:-1] + (shape[-1] * 2,))[..., ::-2]
    elif order == "T":
        full = base[: int(np.prod(shape))].reshape(shape[:-2] + (shape[-1], shape[-2])).swapaxes(-1, -2)
    else:
        full = np.ndarray(shape, np.float64, base, 0, order=order) if order == "F" else \
            base[: int(np.prod(shape))].reshape(shape)
    assert full.shape == shape
    origin = full.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    for offset in range(-max(shape[-2:]) - 1, max(shape[-2:]) + 2):
        start, dshape, dstrides = _elementary.diagonal_layout(full.shape, full.strides, offset)
        ref = np.diagonal(full, offset=offset, axis1=-2, axis2=-1)
        assert dshape == ref.shape, (offset, dshape, ref.shape)
        if ref.size:
            got = np.lib.stride_tricks.as_strided(base[(origin + start) // 8:], dshape, dstrides)
            np.testing.assert_array_equal(got, ref)
