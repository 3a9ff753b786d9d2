"""CPU tier: launch planning of the index engine (gparray/_engine/_index.py): the widening
of whole rows into wider elements moves exactly the bytes the plain launch moves."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gparray._engine import _index as ix


def _byte_map(shape, strides, vstrides, itemsize, idx_values):
    """{dense byte: source byte} of a gather over ``shape`` (element strides [src, dense,
    index...]; idx_values[k] maps an index-array element offset to its value)."""
    out = {}
    for pos in itertools.product(*(range(e) for e in shape)):
        off = [sum(p * s for p, s in zip(pos, st)) for st in strides]
        so = off[0] + sum(idx_values[k][off[2 + k]] * vstrides[k] for k in range(len(vstrides)))
        for b in range(itemsize):
            out[off[1] * itemsize + b] = so * itemsize + b
    return out


@st.composite
def row_gathers(draw):
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    rows = draw(st.integers(1, 5))
    cols = draw(st.integers(1, 24))
    src_rows = draw(st.integers(1, 6))
    pitch = cols + draw(st.integers(0, 9))          # source row stride (elements)
    values = draw(st.lists(st.integers(0, src_rows - 1), min_size=rows, max_size=rows))
    align = draw(st.sampled_from([1, 2, 4, 8, 16]))
    return itemsize, rows, cols, pitch, values, align


@settings(max_examples=200, deadline=None)
@given(row_gathers())
def test_widened_row_gather_moves_the_same_bytes(case):
    itemsize, rows, cols, pitch, values, align = case
    shape = (rows, cols)
    strides = [(0, 1), (cols, 1), (1, 0)]           # source view, dense output, index array
    vstrides = [pitch]
    plain = _byte_map(shape, strides, vstrides, itemsize, [values])
    w_shape, w_strides, w_vst, w_isz = ix.widen(shape, strides, vstrides, itemsize, align)
    assert w_isz <= max(align, itemsize) and w_isz <= 16
    assert _byte_map(w_shape, w_strides, w_vst, w_isz, [values]) == plain
    if w_isz > itemsize:
        assert (cols * itemsize) % w_isz == 0 and (pitch * itemsize) % w_isz == 0


@pytest.mark.parametrize("strides", [
    [(0, 2), (64, 1), (1, 0)],     # source not contiguous along the row
    [(0, 1), (64, 1), (1, 1)],     # the innermost dimension is indexed
    [(0, 1), (0, 0), (1, 0)],      # broadcast value (scatter)
])
def test_no_widening_when_the_row_is_not_plain(strides):
    assert ix.widen((8, 64), strides, [64], 4, 16)[3] == 4


def test_alignment():
    assert ix.alignment(0x1000, 0x2010) == 16
    assert ix.alignment(0x1004, 0x2010) == 4
    assert ix.alignment(0x1001) == 1


@pytest.mark.parametrize("k,expected", [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (8, 8)])
def test_index_arrays_pad_to_a_compiled_count(k, expected):
    assert ix.padded_k(k) == expected


def test_too_many_index_arrays():
    with pytest.raises(IndexError, match="at most 8 index arrays"):
        ix.padded_k(9)


@pytest.mark.parametrize("dtype,target", [("int8", "int32"), ("uint8", "int32"), ("int16", "int32"),
                                          ("uint16", "int32"), ("uint32", "int64"), ("int32", None),
                                          ("int64", None), ("uint64", None)])
def test_index_dtype_conversions(dtype, target):
    got = ix.index_conversion(np.dtype(dtype))
    assert (got is None and target is None) or got == np.dtype(target)
    assert (ix.index_ctype(np.dtype(dtype)) is None) == (target is not None)


# ----------------------------------------------------------------------------- the error word

class _ErrWordRuntime:
    """Enough of the runtime for ``_read_record``: device memory is host memory; a read of
    ``interleave_at`` runs ``interleave()`` right after its copy (another host thread's read
    of another device's word, landing between this read's copy and its check)."""

    def __init__(self):
        self.cur = 0
        self.interleave_at, self.interleave = None, None

    def getDevice(self):
        return self.cur

    def setDevice(self, dev):
        self.cur = dev

    def memcpyAsync(self, dst, src, n, kind, stream):
        import ctypes

        ctypes.memmove(dst, src, n)
        if src == self.interleave_at:
            self.interleave_at, f = None, self.interleave
            f()

    def memsetAsync(self, ptr, value, n, stream):
        import ctypes

        ctypes.memset(ptr, value, n)


def test_error_words_of_two_devices_read_at_once(monkeypatch):
    """cuda:0's word holds an out-of-range index, cuda:1's none; cuda:1's read (another thread)
    lands between cuda:0's copy and its check: cuda:0's record is still found."""
    import types

    from gparray._core import _backend

    rt = _ErrWordRuntime()

    class Device:
        def __init__(self, dev):
            self.dev, self.prev = dev, []

        def __enter__(self):
            self.prev.append(rt.cur)
            rt.cur = self.dev

        def __exit__(self, *exc):
            rt.cur = self.prev.pop()

    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt, Device=Device))
    monkeypatch.setattr(_backend, "cupy", lambda: cp)
    monkeypatch.setattr(_backend, "_cupy", cp)          # _backend.runtime() answers cp's runtime
    monkeypatch.setattr(_backend, "_device_count", 2)
    words = {0: np.array([1, 0, 10, 5], dtype=np.uint64), 1: np.zeros(4, dtype=np.uint64)}
    blocks = {d: types.SimpleNamespace(ptr=w.ctypes.data) for d, w in words.items()}
    monkeypatch.setattr(ix, "_err_blocks", blocks)
    other = []
    rt.interleave_at, rt.interleave = blocks[0].ptr, lambda: other.append(ix._read_record(1, 0))
    assert ix._read_record(0, 0) == (0, 10, 5)
    assert other == [None] and not words[0].any()      # cuda:0's record reset once read
