"""CPU tier: the copy plans of roll, tile and repeat, and the manipulation functions run over
host memory.

The plans (``roll_plan``, ``tile_layout``, ``repeat_layout``) are pure and are checked by
applying them with NumPy slicing / ``as_strided`` to index arrays. The end-to-end tests run
the real gparray functions on Arrays whose buffers are host NumPy bytes, with the strided
copy (``_ew.copy_into``) and the allocation (``_creation._empty``) replaced by NumPy doubles
for the test: every view, offset and stride the functions build is then checked against
NumPy on the CPU. Nothing here reaches an engine or a kernel.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.lib.stride_tricks import as_strided

import gparray as xp
from gparray._api import _creation, _manipulation
from gparray._array import Array
from gparray._core._device import Device
from gparray._engine import _elementwise as _ew
from gparray._api._manipulation import repeat_layout, roll_plan, tile_layout

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


# ------------------------------------------------------------------------ pure plans
def apply_roll_plan(a, shifts, max_axes=3):
    src = a
    for p in roll_plan(a.shape, shifts, max_axes):
        out = np.full(a.shape, -1, dtype=a.dtype)
        for piece in p:
            dst_key = tuple(slice(d, d + n) for d, _, n in piece)
            src_key = tuple(slice(s, s + n) for _, s, n in piece)
            out[dst_key] = src[src_key]
        src = out
    return src


@settings(max_examples=300, deadline=None)
@given(shapes, st.data(), st.integers(1, 4))
def test_roll_plan_matches_numpy(shape, data, max_axes):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    axes = data.draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), max_size=5)) if shape else []
    shifts = {}
    for ax in axes:
        shifts[ax] = shifts.get(ax, 0) + data.draw(st.integers(-10, 10))
    expected = np.roll(a, tuple(shifts.values()), axis=tuple(shifts)) if shifts else a
    got = apply_roll_plan(a, shifts, max_axes)
    np.testing.assert_array_equal(got, expected)
    passes = roll_plan(shape, shifts, max_axes)
    assert len(passes) >= 1
    for p in passes:
        assert len(p) <= 2 ** max_axes
        # the pieces of a pass cover the output exactly once
        if a.size:
            count = np.zeros(shape, dtype=int)
            for piece in p:
                count[tuple(slice(d, d + n) for d, _, n in piece)] += 1
            assert (count == 1).all()


def test_roll_plan_pieces():
    assert roll_plan((5,), {0: 2}) == [[((2, 0, 3),), ((0, 3, 2),)]]
    assert roll_plan((5,), {0: 5}) == [[((0, 0, 5),)]]            # whole turns: one copy
    assert roll_plan((5,), {0: -1}) == [[((4, 0, 1),), ((0, 1, 4),)]]
    assert roll_plan((2, 0), {0: 1}) == [[]]                      # empty: nothing to copy
    assert roll_plan((), {}) == [[()]]                            # 0-d: one copy
    four = roll_plan((2, 2, 2, 2), {0: 1, 1: 1, 2: 1, 3: 1})
    assert [len(p) for p in four] == [8, 2]                       # three axes per pass


@settings(max_examples=300, deadline=None)
@given(shapes, st.lists(st.integers(0, 3), max_size=5), st.sampled_from([1, 2, 8]), st.booleans())
def test_tile_layout_matches_numpy(shape, reps, itemsize, transpose):
    a = np.arange(int(np.prod(shape)), dtype=f"u{itemsize}").reshape(shape)
    if transpose:
        a = a.T
    vshape, vstrides, out_shape = tile_layout(a.shape, a.strides, tuple(reps))
    expected = np.tile(a, tuple(reps))
    assert out_shape == expected.shape
    if a.size == 0:  # as_strided needs no data; the shapes must still match
        assert int(np.prod(vshape)) == expected.size
        return
    view = as_strided(a, vshape, vstrides)
    np.testing.assert_array_equal(np.ascontiguousarray(view).reshape(out_shape), expected)


def test_tile_layout_examples():
    assert tile_layout((3,), (8,), (2,)) == ((2, 3), (0, 8), (6,))
    assert tile_layout((3,), (8,), (2, 2)) == ((2, 1, 2, 3), (0, 0, 0, 8), (2, 6))
    assert tile_layout((2, 3), (24, 8), ()) == ((1, 2, 1, 3), (0, 24, 0, 8), (2, 3))
    assert tile_layout((), (), ()) == ((), (), ())


@settings(max_examples=300, deadline=None)
@given(nonempty, st.data(), st.integers(0, 4), st.booleans())
def test_repeat_layout_matches_numpy(shape, data, r, flipped):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    if flipped:
        a = a[::-1]
    axis = data.draw(st.integers(0, len(shape) - 1))
    vshape, vstrides, out_shape = repeat_layout(a.shape, a.strides, axis, r)
    expected = np.repeat(a, r, axis=axis)
    assert out_shape == expected.shape
    view = as_strided(a, vshape, vstrides)
    np.testing.assert_array_equal(np.ascontiguousarray(view).reshape(out_shape), expected)


# ------------------------------------------------------------- functions on host memory
class _HostBuf:
    """A host byte buffer standing in for a device block (ptr 0: offsets are addresses)."""

    ptr = 0

    def __init__(self, nbytes):
        self.mem = np.zeros(max(nbytes, 1), np.uint8)


def on_host(a, device=0):
    """A gparray Array over a host copy of NumPy array ``a``."""
    a = np.array(a, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    buf = _HostBuf(a.nbytes)
    buf.mem[:a.nbytes] = a.reshape(-1).view(np.uint8)
    return Array._new(buf, 0, a.shape, a.strides, a.dtype, Device(device))


def same(got, expected, err_msg=""):
    """Equal values, shape and dtype."""
    np.testing.assert_array_equal(got, expected, err_msg=err_msg, strict=True)


def host(x):
    return np.ndarray(x._shape, x._dtype, buffer=x._buf.mem, offset=x._offset, strides=x._strides)


@pytest.fixture
def host_memory(monkeypatch):
    """Allocation and the strided copy on host memory; counts the copies."""
    copies = []

    def empty(shape, dtype, dev):
        buf = _HostBuf(int(np.prod(shape)) * dtype.itemsize)
        return Array._new(buf, 0, shape, _manipulation._shapes.c_strides(shape, dtype.itemsize), dtype, dev)

    def copy_into(dst, src):
        assert dst._buf is not src._buf  # never a copy within one buffer
        copies.append(dst._shape)
        if dst.size:
            host(dst)[...] = host(src)

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was reached")

    monkeypatch.setattr(_creation, "_empty", empty)
    monkeypatch.setattr(_creation, "_copy", no_engine)
    monkeypatch.setattr(_ew, "copy_into", copy_into)
    return copies


def sources(a):
    """(name, gparray view, NumPy equivalent) over several layouts of ``a`` (2-D or more)."""
    x = on_host(a)
    yield "contiguous", x, a
    yield "step", x[::2], a[::2]
    yield "transposed", xp.permute_dims(x, tuple(reversed(range(a.ndim)))), a.T
    yield "flipped", xp.flip(x, axis=0), a[::-1]
    yield "broadcast", xp.broadcast_to(x[:1], a.shape), np.broadcast_to(a[:1], a.shape)


ROLLS = [(1, 0), (-1, 1), (7, -1), ((1, 2), (0, 1)), (3, (0, 1)), ((1, -2), (1, 1)),
         (0, 0), (-13, 0)]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float16", "complex128"])
def test_roll_on_host(host_memory, dtype):
    a = (np.arange(60).reshape(4, 5, 3) % 7).astype(dtype)
    for name, x, ref in sources(a):
        for shift, axis in ROLLS:
            got = host(xp.roll(x, shift, axis=axis))
            same(got, np.roll(ref, shift, axis=axis), err_msg=f"{name} {shift} {axis}")
            assert got.flags.c_contiguous and got.dtype == a.dtype
    # axis=None rolls the flattened array (contiguous source: the flat view needs no copy)
    x = on_host(a)
    for shift in (0, 5, -61, (2, 3)):
        same(host(xp.roll(x, shift)), np.roll(a, shift))
    zero_d = host(xp.roll(on_host(np.array(4)), 3))
    assert zero_d.shape == () and zero_d == 4
    same(host(xp.roll(on_host(np.zeros((0, 3))), 2, axis=1)), np.zeros((0, 3)))


def test_roll_copies_at_most_two_pieces_per_axis(host_memory):
    x = on_host(np.arange(24).reshape(2, 3, 4))
    xp.roll(x, 1, axis=2)
    assert len(host_memory) == 2
    host_memory.clear()
    xp.roll(x, (1, 1), axis=(0, 2))
    assert len(host_memory) == 4
    host_memory.clear()
    xp.roll(x, 3, axis=1)   # a whole turn: one plain copy
    assert len(host_memory) == 1


@pytest.mark.parametrize("reps", [2, (2,), (2, 3), (1, 1), (3, 1, 2), (0,), (2, 0), (), (1, 2, 1, 2)])
def test_tile_on_host(host_memory, reps):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for name, x, ref in sources(a):
        host_memory.clear()
        got = host(xp.tile(x, reps))
        same(got, np.tile(ref, reps), err_msg=name)
        assert len(host_memory) == 1 and got.flags.c_contiguous
    same(host(xp.tile(on_host(np.array(7, np.int8)), (2, 3))),
         np.tile(np.array(7, np.int8), (2, 3)))
    same(host(xp.tile(on_host(np.zeros((0, 2))), reps)),
         np.tile(np.zeros((0, 2)), reps))
    assert host(xp.tile(on_host(np.arange(3)), [2, 2])).shape == (2, 6)


@pytest.mark.parametrize("r", [0, 1, 3])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_repeat_int_on_host(host_memory, r, axis):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    for name, x, ref in sources(a):
        host_memory.clear()
        got = host(xp.repeat(x, r, axis=axis))
        same(got, np.repeat(ref, r, axis=axis), err_msg=name)
        assert len(host_memory) == 1 and got.flags.c_contiguous
    x = on_host(a)
    same(host(xp.repeat(x, r)), np.repeat(a, r))
    same(host(xp.repeat(on_host(np.array(5.0)), r)), np.repeat(np.array(5.0), r))
    for zero_d_axis in (0, -1):  # a 0-d x counts as 1-D (NumPy)
        same(host(xp.repeat(on_host(np.array(5.0)), r, axis=zero_d_axis)),
             np.repeat(np.array(5.0), r, axis=zero_d_axis))


def test_moveaxis_and_permute_dims_accept_lists():
    a = np.empty((2, 3, 4, 5))
    x = on_host(a)
    for src, dst in [([0, 2], (-2, -1)), ((0, 2), [-2, -1]), ([1], [0]), (1, 3), ([], [])]:
        assert xp.moveaxis(x, src, dst).shape == np.moveaxis(a, src, dst).shape
        assert xp.moveaxis(x, src, dst)._strides == np.moveaxis(a, src, dst).strides
    for axes in ([3, 1, 0, 2], (0, 1, 2, 3), range(3, -1, -1)):
        assert xp.permute_dims(x, axes)._strides == np.transpose(a, tuple(axes)).strides
    assert xp.permute_dims(on_host(np.empty(3)), 0).shape == (3,)
    assert xp.expand_dims(x, axis=[0, -1]).shape == (1, 2, 3, 4, 5, 1)


# ---------------------------------------------------------------------------- errors
def test_argument_errors():
    x = on_host(np.arange(6).reshape(2, 3))
    for f, args in [(xp.roll, (1,)), (xp.tile, ((2,),)), (xp.repeat, (2,)), (xp.moveaxis, (0, 1)),
                    (xp.permute_dims, ((0,),))]:
        with pytest.raises(TypeError, match=f"^{f.__name__}: expected a gparray Array"):
            f(np.arange(3), *args)
    with pytest.raises(ValueError, match="^moveaxis: source and destination"):
        xp.moveaxis(x, [0, 1], [0])
    with pytest.raises(ValueError, match="^moveaxis: repeated axis"):
        xp.moveaxis(x, [0, 0], [0, 1])
    with pytest.raises(IndexError, match="^moveaxis: axis 2 is out of bounds"):
        xp.moveaxis(x, [2], [0])
    with pytest.raises(TypeError, match="^moveaxis: source must be an int"):
        xp.moveaxis(x, [0.5], [0])
    with pytest.raises(ValueError, match="^permute_dims: "):
        xp.permute_dims(x, [0])
    with pytest.raises(IndexError, match="^expand_dims: axis 3 is out of bounds"):
        xp.expand_dims(x, axis=3)
    with pytest.raises(IndexError, match="^expand_dims: axis -4 is out of bounds"):
        xp.expand_dims(x, axis=-4)
    with pytest.raises(ValueError, match="^expand_dims: repeated axis"):
        xp.expand_dims(x, axis=(0, -4))
    with pytest.raises(ValueError, match="^roll: shift"):
        xp.roll(x, (1, 2, 3), axis=(0, 1))
    with pytest.raises(IndexError, match="^roll: axis 2 is out of bounds"):
        xp.roll(x, 1, axis=2)
    with pytest.raises(IndexError, match="^roll: axis 0 is out of bounds"):
        xp.roll(on_host(np.array(1)), 1, axis=0)
    with pytest.raises(TypeError, match="^roll: shift must be an int"):
        xp.roll(x, 1.5)
    with pytest.raises(ValueError, match="^tile: repetitions must be non-negative"):
        xp.tile(x, (2, -1))
    with pytest.raises(TypeError, match="^tile: repetitions must be an int"):
        xp.tile(x, (2.0,))
    with pytest.raises(ValueError, match="^repeat: repeats must be non-negative"):
        xp.repeat(x, -1)
    with pytest.raises(TypeError, match="^repeat: repeats must be an int or an integer Array"):
        xp.repeat(x, 2.0)
    with pytest.raises(TypeError, match="^repeat: repeats must be an int or an integer Array"):
        xp.repeat(x, [1, 2])
    with pytest.raises(TypeError, match="^repeat: repeats must have an integer dtype"):
        xp.repeat(x, on_host(np.array([1.0, 2.0, 1.0])), axis=1)
    with pytest.raises(TypeError, match="^repeat: repeats must have an integer dtype"):
        xp.repeat(x, on_host(np.array([True, False, True])), axis=1)
    with pytest.raises(ValueError, match="^repeat: x and repeats are on different devices"):
        xp.repeat(x, on_host(np.array([1, 2, 1]), device=1), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats of shape"):
        xp.repeat(x, on_host(np.array([1, 2])), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats of shape"):
        xp.repeat(x, on_host(np.ones((1, 3), np.int64)), axis=1)
    with pytest.raises(ValueError, match="^repeat: repeats of shape"):
        xp.repeat(x, on_host(np.ones(3, np.int64)))       # axis=None: 6 elements
    with pytest.raises(IndexError, match="^repeat: axis 2 is out of bounds"):
        xp.repeat(x, 2, axis=2)
    with pytest.raises(IndexError, match="^repeat: axis 1 is out of bounds"):
        xp.repeat(on_host(np.array(1)), 2, axis=1)


def test_new_functions_are_documented_and_exported():
    for name in ("roll", "tile", "repeat", "moveaxis", "permute_dims", "expand_dims"):
        f = getattr(xp, name)
        assert f is getattr(_manipulation, name) and f.__doc__
