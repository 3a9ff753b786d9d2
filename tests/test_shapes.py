"""CPU tier: broadcasting, contiguity, dimension merging and axis normalization."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gparray._engine import _shapes

shapes = st.lists(st.integers(0, 5), min_size=0, max_size=5).map(tuple)


@given(st.lists(shapes, min_size=1, max_size=4))
def test_broadcast_shapes_matches_numpy(shape_list):
    try:
        expected = np.broadcast_shapes(*shape_list)
    except ValueError:
        with pytest.raises(ValueError, match="^bs: shapes"):
            _shapes.broadcast_shapes(*shape_list, name="bs")
        return
    assert _shapes.broadcast_shapes(*shape_list) == expected


@given(shapes, shapes)
def test_broadcast_strides_match_numpy(shape, extra):
    target = tuple(extra) + tuple(shape)
    a = np.empty(shape, dtype=np.int16)
    try:
        view = np.broadcast_to(a, target)
    except ValueError:
        return
    got = _shapes.broadcast_strides(a.shape, a.strides, target)
    # NumPy may keep any stride for extent-1 dims; compare on dims with extent > 1
    for ext, g, e in zip(target, got, view.strides):
        if ext > 1:
            assert g == e


@given(shapes, st.sampled_from([1, 2, 4, 8, 16]))
def test_c_strides_and_contiguity(shape, itemsize):
    a = np.empty(shape, dtype=f"V{itemsize}")
    assert _shapes.c_strides(shape, itemsize) == a.strides or a.size == 0
    assert _shapes.is_c_contiguous(shape, a.strides, itemsize)


@st.composite
def strided_views(draw):
    shape = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple))
    bshape = tuple(s * 2 for s in shape[:-1]) + (shape[-1] * 4,)
    base = np.zeros(bshape, dtype=np.int64)
    key = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1]))) for _ in shape[:-1]) + \
        (slice(None, None, draw(st.sampled_from([1, 2, -1, 4]))),)
    view = base[key]
    if draw(st.booleans()) and view.ndim >= 2:
        view = view.swapaxes(0, -1)
    return view


@settings(max_examples=200)
@given(strided_views())
def test_merge_dims_preserves_element_order(view):
    itemsize = view.itemsize
    out = np.empty(view.shape, dtype=view.dtype)
    strides = [tuple(s // itemsize for s in out.strides), tuple(s // itemsize for s in view.strides)]
    mshape, mstrides = _shapes.merge_dims(view.shape, strides)
    assert int(np.prod(mshape)) == view.size
    assert len(mshape) <= max(1, sum(1 for s in view.shape if s != 1))
    # walk the merged space in C order and compare the input offsets with NumPy's order
    flat_offsets = []
    for idx in np.ndindex(*mshape):
        flat_offsets.append(sum(i * s for i, s in zip(idx, mstrides[1])))
    order = []
    for idx in np.ndindex(*view.shape):
        order.append(sum(i * s for i, s in zip(idx, view.strides)) // itemsize)
    assert flat_offsets == order


def test_merge_dims_examples():
    assert _shapes.merge_dims((2, 3, 4), [(12, 4, 1), (12, 4, 1)]) == ((24,), [(1,), (1,)])
    assert _shapes.merge_dims((2, 1, 4), [(4, 4, 1), (0, 0, 1)]) == ((2, 4), [(4, 1), (0, 1)])
    assert _shapes.merge_dims((1, 1), [(1, 1)]) == ((1,), [(0,)])


def test_normalize_axes():
    assert _shapes.normalize_axes(None, 3, "f") == (0, 1, 2)
    assert _shapes.normalize_axes((-1, 0), 3, "f") == (0, 2)
    with pytest.raises(IndexError, match="^f: axis 3"):
        _shapes.normalize_axis(3, 3, "f")


@pytest.mark.parametrize("axis,ndim", [(10, 1), (-2, 1), (3, 3), (-4, 3), (0, 0)])
def test_axis_errors_use_numpy_wording_and_are_value_and_index_errors(axis, ndim):
    with pytest.raises(_shapes.AxisError) as info:
        _shapes.normalize_axis(axis, ndim, "sum")
    assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)
    # the wording NumPy's AxisError uses, which downstream tests match with a regex
    assert str(info.value) == f"sum: axis {axis} is out of bounds for array of dimension {ndim}"
    assert re.search(f"axis {axis} is out of bounds for array of dimension {ndim}", str(info.value))
    with pytest.raises(ValueError, match=f"^cumulative_sum: axis {axis} is out of bounds for array of dimension"):
        _shapes.normalize_axes((0, axis) if ndim > 1 else axis, ndim, "cumulative_sum")
    with pytest.raises(ValueError, match="^f: repeated"):
        _shapes.normalize_axes((1, -2), 3, "f")


@given(strided_views())
def test_span_elements(view):
    lo, hi = _shapes.span_elements(view.shape, tuple(s // view.itemsize for s in view.strides))
    offs = [sum(i * s for i, s in zip(idx, view.strides)) // view.itemsize for idx in np.ndindex(*view.shape)]
    assert lo == min(offs) and hi == max(offs)
