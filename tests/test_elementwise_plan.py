"""CPU tier: which kernel form the elementwise engine picks for a binary op over a 2-d
output (gparray/_engine/_elementwise.py, ``_binary_desc``), and the launch it describes:
contiguous, tiled (a transposed operand), rows (long rows, broadcasts), short rows (rows
shorter than a rows chunk: rows.cu) and strided. Arrays here are layouts over fake buffers:
nothing is launched."""
import numpy as np
import pytest

from gparray._array import Array
from gparray._core._device import Device
from gparray._engine import _elementwise as ew
from gparray._engine._launch import BLOCK

DEV = Device(0)


class _Buf:
    ptr = 0x10000


def arr(shape, dtype="float32", strides=None, offset=0):
    dt = np.dtype(dtype)
    if strides is None:   # C order
        strides, acc = [], 1
        for e in reversed(shape):
            strides.insert(0, acc)
            acc *= max(e, 1)
    return Array._new(_Buf(), offset * dt.itemsize, tuple(shape), tuple(s * dt.itemsize for s in strides), dt, DEV)


def desc(a, b, out, op="subtract"):
    ct = np.result_type(a._dtype, b._dtype)
    return ew._binary_desc(op, a, b, out, ct)


def test_a_column_broadcast_over_short_rows_takes_short_rows():
    # x - x.max(axis=1, keepdims=True) on (200000, 100) float32
    R, C = 200_000, 100
    family, expr, grid, swap, extra = desc(arr((R, C)), arr((R, 1), strides=(1, 0)), arr((R, C)))
    assert family == ew.ROWS_FAMILY
    assert expr == "gp_binary_short_rows<op_subtract, float, float, float, float, int>"
    per_block = BLOCK * ew.short_run(4) * ew.SHORT_U
    assert grid == -(-R * C // per_block) and (grid - 1) * per_block < R * C <= grid * per_block
    assert not swap
    n, c, sa0, sa1, sb0, sb1 = (int(v) for v in extra)
    assert (n, c, sa0, sa1, sb0, sb1) == (R * C, C, C, 1, 1, 0)
    assert extra[0].dtype == np.int32 and extra[1].dtype == np.int32


def test_comparisons_into_bool_take_short_rows_below_their_wider_chunk():
    # bool outputs have a 16-wide rows vector: a chunk is 8192 columns
    family, expr, *_ = desc(arr((1000, 5000)), arr((1000, 1), strides=(1, 0)), arr((1000, 5000), "bool"), "equal")
    assert family == ew.ROWS_FAMILY and expr.startswith("gp_binary_short_rows<op_equal, bool, float, float, float")
    family, expr, *_ = desc(arr((10, 9000)), arr((10, 1), strides=(1, 0)), arr((10, 9000), "bool"), "equal")
    assert family == ew.FAMILY and expr.startswith("gp_binary_rows<")


@pytest.mark.parametrize("cols,form", [(2047, "gp_binary_short_rows"), (2048, "gp_binary_rows"),
                                       (4096, "gp_binary_rows")])
def test_the_switch_is_one_rows_chunk(cols, form):
    tc = BLOCK * ew.vec_width(4) * ew.ROWS_U
    assert tc == 2048
    _, expr, *_ = desc(arr((64, cols)), arr((1, cols), strides=(0, 1)), arr((64, cols)), "add")
    assert expr.startswith(form + "<")


def test_negative_and_sliced_strides_travel_as_element_strides():
    base = arr((300, 60))
    rev = Array._new(_Buf(), 59 * 4, (300, 30), (240, -8), np.dtype("float32"), DEV)   # base[:, ::-2]
    _, expr, _, _, extra = desc(rev, arr((300, 1), strides=(1, 0)), arr((300, 30)), "multiply")
    assert expr.startswith("gp_binary_short_rows<")
    assert [int(v) for v in extra[2:]] == [60, -2, 1, 0]
    assert base.size == 18000


def test_one_row_and_transposed_operands_keep_their_forms():
    # a single row: the rows form (R = 1 has no rows to pack)
    _, expr, *_ = desc(arr((5,), strides=(2,)), arr((5,)), arr((5,)), "add")
    assert expr.startswith("gp_binary_rows<")
    # an operand running down the columns: tiled
    t = arr((64, 100), strides=(1, 64))
    _, expr, *_ = desc(t, arr((64, 100)), arr((64, 100)), "add")
    assert expr.startswith("gp_binary_tiled<")


def test_contiguous_operands_stay_contiguous():
    fam, expr, *_ = desc(arr((300, 100)), arr((300, 100)), arr((300, 100)), "add")
    assert fam == ew.FAMILY and expr.startswith("gp_binary_contig<")


def test_positions_past_int_take_long_long():
    R, C = 2**22, 600      # 2.5e9 outputs
    _, expr, grid, _, extra = desc(arr((R, C), "int8"), arr((R, 1), "int8", strides=(1, 0)), arr((R, C), "int8"))
    assert expr.endswith(", long long>") and extra[0].dtype == np.int64 and int(extra[0]) == R * C
    assert grid * BLOCK * ew.short_run(1) * ew.SHORT_U >= R * C
