"""CPU tier: the compiled one-pass check of concat/stack (gparray/_native/_claunch_join.c,
``_join.scan``) against the Python path it stands in for.

Arrays here are real gparray Arrays over fake blocks (a pointer, no memory). For random
lists (shapes that join or not, one dtype or several, one device or two, contiguous or
transposed inputs, every axis in and out of range, None) the scan must either decline
(None: the Python path then checks, promotes, raises) or return exactly what the Python
path computes: the dtype, device, normalized axis, the extents ``ks`` and the addresses
``_join._addresses`` reads. It must accept every regular case, and the namespace must
give the same output geometry with and without it.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gparray as xp
from gparray._api import _manipulation as mp
from gparray._array import Array
from gparray._core._device import Device, get_device
from gparray._engine import _join, _shapes
from gparray._kernels._launcher import _claunch

pytestmark = pytest.mark.skipif(_claunch is None, reason="the C extension is not built")


class _Blk:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


def _arr(shape, dtype="float32", device=0, transpose=False, ptr=0x7F0000000000, offset=0):
    dt = np.dtype(dtype)
    shape = tuple(shape)
    strides = _shapes.c_strides(shape, dt.itemsize)
    if transpose and len(shape) >= 2:
        shape, strides = shape[::-1], strides[::-1]
    dev = get_device(device) if device is not None else Device(0)  # None: equal, not identical
    return Array._new(_Blk(ptr), offset, shape, strides, dt, dev)


def _python_reference(arrays, axis, stack):
    """What the Python path computes, or None where it would raise or promote."""
    try:
        arrays, dtype = mp._join_checks(arrays, "stack" if stack else "concat")
    except (TypeError, ValueError):
        return None
    if any(a._dtype is not arrays[0]._dtype for a in arrays):
        return None
    if any(a._device is not arrays[0]._device for a in arrays):
        return None
    shapes = [a._shape for a in arrays]
    if axis is None:
        if stack:
            return None
        return dtype, 0, [int(np.prod(s, dtype=np.int64)) for s in shapes]
    if not isinstance(axis, int) or isinstance(axis, bool):
        return None
    nd = len(shapes[0])
    ndim = nd + 1 if stack else nd
    if (nd == 0 and not stack) or not -ndim <= axis < ndim:
        return None
    ax = axis % ndim
    if stack:
        return (dtype, ax, None) if len(set(shapes)) == 1 else None
    if len({len(s) for s in shapes}) > 1 or len({s[:ax] + s[ax + 1:] for s in shapes}) > 1:
        return None
    return dtype, ax, [s[ax] for s in shapes]


@st.composite
def join_inputs(draw):
    n = draw(st.integers(1, 70))
    nd = draw(st.integers(0, 3))
    base = draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd))
    vary = draw(st.integers(-1, max(nd - 1, -1)))    # the one dimension that may differ
    odd = draw(st.sampled_from([None, "dtype", "device", "ndim", "extent", "type", "transpose"]))
    where = draw(st.integers(0, n - 1))
    arrays = []
    for i in range(n):
        shape = list(base)
        if vary >= 0:
            shape[vary] = draw(st.integers(0, 4))
        kw = {"ptr": 0x7F0000000000 + 4096 * i, "offset": 4 * draw(st.integers(0, 3))}
        if i == where:
            if odd == "dtype":
                kw["dtype"] = "int64"
            elif odd == "device":
                kw["device"] = None
            elif odd == "ndim":
                shape = shape + [1]
            elif odd == "extent" and nd:
                shape[(vary + 1) % nd] += 1
            elif odd == "transpose":
                kw["transpose"] = True
        a = _arr(shape, **kw)
        if draw(st.booleans()):
            a._is_c_contig()                       # the flag some inputs have cached
        arrays.append(np.zeros(3) if (i == where and odd == "type") else a)
    axis = draw(st.one_of(st.none(), st.integers(-5, 4), st.just(True)))
    return arrays, axis, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(join_inputs())
def test_scan_matches_the_python_path(case):
    arrays, axis, stack, as_tuple = case
    seq = tuple(arrays) if as_tuple else arrays
    got = _join.scan(Array, seq, axis, stack)
    ref = _python_reference(list(arrays), axis, stack)
    if ref is None:
        assert got is None
        return
    assert got is not None, "a regular join must take the compiled pass"
    dtype, device, ax, addrs, ks, total = got
    assert (dtype, ax) == ref[:2]
    if stack:
        assert ks is None and ref[2] is None and total == len(arrays)
    else:
        assert ks.dtype == np.int64 and ks.tolist() == ref[2] and total == sum(ref[2])
    assert device is arrays[0]._device
    want = _join._addresses(arrays, dtype)
    assert np.frombuffer(addrs, dtype=np.int64).tolist() == want.tolist()


def test_scan_declines_other_sequences_and_needs_a_slotted_class():
    a = [_arr((2, 3)), _arr((4, 3))]
    assert _join.scan(Array, a, 0, False) is not None
    assert _join.scan(Array, iter(a), 0, False) is None
    assert _join.scan(Array, [], 0, False) is None
    assert _join.scan(Array, a, np.int64(0), False) is None   # the Python path normalizes it
    assert _join.scan(Array, [object.__new__(Array)], 0, False) is None  # slots never set

    class Other:
        __slots__ = ("_buf",)

    with pytest.raises(AttributeError):
        _join.scan(Other, a, 0, False)
    with pytest.raises(TypeError, match="^join_scan: expected the Array class"):
        _claunch.join_scan(3, a, 0, False)
    assert _join.scan(Array, a, 0, False) is not None   # back to Array's offsets


@pytest.mark.parametrize("use_scan", [True, False])
@pytest.mark.parametrize("call,lead,ks,shape", [
    (lambda: xp.concat([_arr((2, 3)), _arr((2, 5)), _arr((2, 0))], axis=1), 1, [3, 5, 0], (2, 8)),
    (lambda: xp.concat([_arr((2, 3)), _arr((4, 3))], axis=-2), 0, [2, 4], (6, 3)),
    (lambda: xp.concat([_arr((2, 3)), _arr(()), _arr((4,))], axis=None), 0, [6, 1, 4], (11,)),
    (lambda: xp.concat([_arr((1, 2))] * 100, axis=0), 0, [1] * 100, (100, 2)),
    (lambda: xp.stack([_arr((2, 3))] * 3, axis=1), 1, [1, 1, 1], (2, 3, 3)),
    (lambda: xp.stack([_arr((2, 3))] * 2, axis=-1), 2, [1, 1], (2, 3, 2)),
    (lambda: xp.stack([_arr(())] * 4), 0, [1] * 4, (4,)),
])
def test_namespace_geometry_with_and_without_the_scan(monkeypatch, use_scan, call, lead, ks, shape):
    import gparray._api._creation as cr
    from _fakes import FakeArray

    got = []
    monkeypatch.setattr(cr, "_empty", lambda shape, dtype, dev: FakeArray(shape, dtype))
    monkeypatch.setattr(mp._join, "join", lambda out, arrays, lead_, ks_, addrs=None:
                        got.append((out._shape, lead_, list(ks_), addrs is not None)))
    if not use_scan:
        monkeypatch.setattr(mp._join, "_claunch", None)
    out = call()
    assert got == [(shape, lead, ks, use_scan)] and out._shape == shape


def test_namespace_errors_are_the_python_paths():
    with pytest.raises(ValueError, match="^concat: shapes .* do not match off axis 1"):
        xp.concat([_arr((2, 3)), _arr((3, 3))], axis=1)
    with pytest.raises(ValueError, match="^concat: zero-dimensional"):
        xp.concat([_arr(()), _arr(())])
    with pytest.raises(IndexError, match="^stack: axis -4 is out of bounds"):
        xp.stack([_arr((2, 3))], axis=-4)
    with pytest.raises(TypeError, match="^concat: expected a gparray Array"):
        xp.concat([_arr((2,)), np.zeros(2)])
    with pytest.raises(ValueError, match="^stack: all arrays must have the same shape"):
        xp.stack([_arr((2, 3)), _arr((3, 2))])


@settings(max_examples=300)
@given(st.one_of(st.integers(1, 70), st.integers(64, 300)), st.integers(1, 3), st.sampled_from([1, 2, 4, 8]),
       st.integers(0, 15), st.data())
def test_table_in_c_matches_the_numpy_build(n, rows, isz, skew, data):
    """The plan from the scan's bytes (join_table, in C: the launch's by-value table up to 64
    inputs, the device table beyond) is the plan from Python lists, and from 64 inputs
    _pieces_np's table byte for byte, for contiguous
    inputs: any extents (zeros included), alignments, one row or several."""
    dt = {1: "uint8", 2: "int16", 4: "float32", 8: "float64"}[isz]
    ks = data.draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    inner = data.draw(st.integers(1, 5))
    arrays, ptr = [], 0x7F0000000000 + skew * isz
    for k in ks:
        arrays.append(_arr((rows, k, inner), dtype=dt, ptr=ptr))
        ptr += max(rows * k * inner * isz, 1) + data.draw(st.sampled_from([0, isz, 16, 64]))
    for a in arrays:
        a._is_c_contig()
    total = sum(ks)
    out = _arr((rows, total, inner), dtype=dt, ptr=0x7E0000000000 + isz * data.draw(st.integers(0, 3)))
    sc = _join.scan(Array, arrays, 1, False)
    assert sc is not None and sc[5] == total
    lead = 1
    rows_, pitch, sl = _join._geometry(out, lead)
    c = _join.plan(out, arrays, lead, sc[4], sc[3])
    ref = _join.plan(out, arrays, lead, list(ks))
    assert (c.n, c.grid, c.slow) == (ref.n, ref.grid, ref.slow)
    assert _join.device_table(c).tobytes() == _join.device_table(ref).tobytes()
    for cap in _join.PARAM_CAPS:
        if c.n <= cap:
            assert _join.param_table(c, cap) == _join.param_table(ref, cap)
            break
    if c.raw is not None:   # the by-value table built in C, sized for every input (zeros too)
        assert c.raw[0] == _join.param_cap(n) and c.raw[1] == _join.param_table(ref, c.raw[0])
    elif c.n:                # (an empty output has no table at all)
        assert _join.param_cap(n) is None
    if n < _join.NUMPY_FROM:
        return
    assert _claunch.join_table(sc[3], sc[4], out._buf.ptr, rows_, sl, pitch, _join._TILE_BYTES) is not None
    py = _join.JoinPlan(rows_, pitch, *_join_np(out, arrays, lead, ks, rows_, pitch, sl))
    assert (c.n, c.grid, c.slow) == (py.n, py.grid, ())
    starts, pieces = _join.decoded(c)
    assert np.asarray(starts).tolist() == np.asarray(py.starts).tolist()
    assert np.asarray(pieces).reshape(-1).tolist() == np.asarray(py.pieces).reshape(-1).tolist()
    assert _join.device_table(c).tobytes() == _join.device_table(py).tobytes()


def _join_np(out, arrays, lead, ks, rows, pitch, sl):
    n, starts, pieces, slow = _join._pieces_np(out, arrays, lead, ks, rows, pitch, sl)
    return n, starts, pieces, int(starts[n]), tuple(slow)


def test_table_in_c_declines_unknown_layouts():
    a = [_arr((4,), ptr=0x7F0000000000 + 64 * i) for i in range(70)]
    for x in a:
        x._is_c_contig()
    a[5] = _arr((2, 2), transpose=True)[0]   # a view: contiguity not known
    addrs = _join._addresses(a, a[0]._dtype).tobytes()
    ks = np.full(70, 4, dtype=np.int64)
    assert _claunch.join_table(addrs, ks, 0x7E0000000000, 1, 4, 4 * 280, _join._TILE_BYTES) is None
    with pytest.raises(ValueError, match="^join_table: inconsistent"):
        _claunch.join_table(addrs, ks[:3], 0x7E0000000000, 1, 4, 4 * 280, _join._TILE_BYTES)
