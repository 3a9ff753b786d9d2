"""CPU tier: index plans against NumPy's view semantics (shape, strides, offset)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gparray._engine._index_plan import PlanKind, plan, setitem_plan


@st.composite
def arrays_and_keys(draw):
    shape = draw(st.lists(st.integers(0, 6), min_size=0, max_size=4).map(tuple))
    a = np.empty(shape, dtype=np.float32)
    if a.ndim >= 2 and draw(st.booleans()):
        a = a.swapaxes(0, 1)
    n_idx = draw(st.integers(0, a.ndim))
    entries = []
    for ax in range(n_idx):
        n = a.shape[ax]
        choices = [st.builds(slice, st.none() | st.integers(-8, 8), st.none() | st.integers(-8, 8),
                             st.none() | st.integers(-3, 3).filter(lambda s: s != 0))]
        if n > 0:
            choices.append(st.integers(-n, n - 1))
        entries.append(draw(st.one_of(*choices)))
    # sprinkle None and one Ellipsis
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    key = tuple(entries)
    if len(key) == 1 and draw(st.booleans()):
        key = key[0]
    return a, key


@settings(max_examples=400)
@given(arrays_and_keys())
def test_view_plan_matches_numpy(case):
    a, key = case
    try:
        r = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            plan(a.shape, a.strides, key)
        return
    if not isinstance(r, np.ndarray):  # NumPy returns a scalar for all-int keys: ask for the 0-d view
        r = a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
    p = plan(a.shape, a.strides, key)
    assert p.kind is PlanKind.VIEW
    assert p.shape == r.shape
    if r.size > 0:
        off = r.__array_interface__["data"][0] - a.__array_interface__["data"][0]
        assert p.offset == off
        for ext, s1, s2 in zip(r.shape, p.strides, r.strides):
            if ext > 1:
                assert s1 == s2


@pytest.mark.parametrize("key", [5, -6, (0, 0, 0), (Ellipsis, Ellipsis), 1.5, "a", (slice(None, None, 0),)])
def test_bad_keys_raise_index_error(key):
    a = np.empty((5, 2))
    with pytest.raises(IndexError, match="^__getitem__: "):
        plan(a.shape, a.strides, key)
    with pytest.raises((IndexError, ValueError)):  # NumPy: ValueError for a zero step
        a[key]


def test_out_of_bounds_names_axis():
    with pytest.raises(IndexError, match="axis 1 with size 2"):
        plan((5, 2), (16, 8), (0, 2))


def test_bool_scalar_keys_match_numpy():
    a = np.empty((3, 2))
    for key in (True, False, (Ellipsis, True), (0, False)):
        assert plan(a.shape, a.strides, key).shape == a[key].shape


def test_setitem_kinds():
    # index arrays and values are recognised by dtype/shape/ndim: NumPy arrays stand in here
    v = np.zeros(2, dtype=np.float32)
    assert setitem_plan((4,), (4,), slice(1, 3), 1.0).kind is PlanKind.FILL
    assert setitem_plan((4,), (4,), slice(1, 3), v).kind is PlanKind.COPY
    idx = np.array([0, 2])
    assert plan((4,), (4,), idx).kind is PlanKind.GATHER
    assert setitem_plan((4,), (4,), idx, 1.0).kind is PlanKind.SCATTER
    mask = np.array([True, False, True, True])
    assert plan((4,), (4,), mask).kind is PlanKind.MASK
    assert setitem_plan((4,), (4,), mask, 1.0).kind is PlanKind.SCATTER
