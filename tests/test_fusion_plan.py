"""CPU tier: fused elementwise trees (gparray/_engine/_fusion.py) are named by structure and
dtypes only, number their leaves by first appearance, pack their scalars as the kernel reads
them, and compile with NVRTC for sm_90 (gparray/_kernels/fused.cu); a one-node tree uses the
functor, result and compute types of the unfused launch of the same operation."""
import numpy as np
import pytest

from gparray._array import _elementwise as ew
from gparray._array._ops import _result
from gparray._engine import _fusion as fu
from gparray._engine._fusion import Binary, Input, Scalar, Unary
from gparray._kernels import _compile

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
I32, B, C64 = np.dtype("int32"), np.dtype("bool"), np.dtype("complex64")


def node(name, *args):
    """The tree node of elementwise function ``name`` on ``args`` (leaves or nodes), with the
    result and compute dtypes its op rule gives (as the unfused launch computes them)."""
    op = getattr(ew, name)
    dts = [a.dtype if isinstance(a, (Input, Scalar)) else a.out for a in args]
    dt = dts[0] if len(dts) == 1 else np.promote_types(*dts)
    out, ct = _result(op.rule, dt, op.functor)
    return (Unary if len(args) == 1 else Binary)(op.functor, out, ct, *args)


def gaussian(dtype):
    """exp(-0.5 * ((x - m) / s) ** 2) / (s * sqrt(2 * pi)) with x an array, m and s scalars."""
    x, m, s, h, c = Input(dtype), Scalar(dtype), Scalar(dtype), Scalar(dtype), Scalar(dtype)
    z = node("divide", node("subtract", x, m), s)
    return node("divide", node("exp", node("multiply", h, node("square", z))), node("multiply", s, c))


def test_leaves_are_numbered_by_first_appearance_and_once():
    a, b, k = Input(F32), Input(F32), Scalar(F32)
    t = node("add", node("multiply", b, k), node("subtract", a, b))
    inputs, scalars = fu.leaves(t)
    assert inputs == [b, a] and scalars == [k]
    name = fu.instance(t)
    assert name.startswith("gp_fused_contig<float, gp::fuse::Bin<op_add, float, float, ") and name.endswith(", 2, 1>")
    assert "gp::fuse::In<0, float>, gp::fuse::Sc<0, float>" in name    # b first, then the scalar
    assert "gp::fuse::In<1, float>, gp::fuse::In<0, float>" in name    # a - b


def test_the_name_holds_structure_and_dtypes_only():
    # the same expression over other buffers and values: one kernel
    assert fu.instance(gaussian(F32)) == fu.instance(gaussian(F32))
    # another dtype or another structure: another kernel
    assert fu.instance(gaussian(F32)) != fu.instance(gaussian(F64))
    a, b = Input(F32), Input(F32)
    assert fu.instance(node("add", a, b)) != fu.instance(node("add", a, a))
    assert fu.instance(node("add", a, a)).endswith(", 1, 0>")            # one operand used twice: one input


def test_a_one_node_tree_is_the_unfused_launch():
    a, b = Input(I32), Input(F32)
    t = node("add", a, b)
    out, ct = _result(ew.add.rule, np.promote_types(I32, F32), "add")
    assert (t.out, t.ct) == (out, ct) == (F64, F64)
    assert fu.instance(t) == ("gp_fused_contig<double, gp::fuse::Bin<op_add, double, double, "
                              "gp::fuse::In<0, gp::int32>, gp::fuse::In<1, float>>, 2, 0>")
    assert node("less", Input(F16), Input(F16)).out == B


def test_limits_and_errors():
    with pytest.raises(ValueError, match="at least one array input"):
        fu.instance(node("negative", Scalar(F32)))
    with pytest.raises(ValueError, match="layout class"):
        fu.instance(node("negative", Input(F32)), layout="strided")
    t = Input(F32)
    for _ in range(fu.MAX_INPUTS):
        t = node("add", t, Input(F32))
    with pytest.raises(ValueError, match="at most 16 arrays"):
        fu.instance(t)
    with pytest.raises(TypeError, match="expected a tree node"):
        fu.leaves(node("negative", Input(F32)).__class__("negative", F32, F32, 3.0))


def test_scalars_are_packed_as_their_leaf_dtype_in_16_byte_slots():
    s = [Scalar(F32), Scalar(np.dtype("int64")), Scalar(C64), Scalar(F16)]
    data = fu.scalar_bytes([1.5, -(2 ** 40), 1 - 2j, 0.1], s)
    assert len(data) == 64
    assert np.frombuffer(data[0:4], F32)[0] == np.float32(1.5)
    assert np.frombuffer(data[16:24], np.int64)[0] == -(2 ** 40)
    assert np.frombuffer(data[32:40], C64)[0] == np.complex64(1 - 2j)
    assert np.frombuffer(data[48:50], F16)[0] == np.float16(0.1) and data[50:64] == bytes(14)
    with pytest.raises(ValueError, match="2 scalar slots, got 1"):
        fu.scalar_bytes([1.0], s[:2])


def test_fused_trees_compile_for_sm90():
    """NVRTC accepts the trees of the program-level cases (no GPU needed)."""
    a, b = Input(F32), Input(F32)
    x16 = Input(F16)
    i, j = Input(I32), Input(I32)
    z, w = Input(C64), Input(C64)
    trees = [
        gaussian(F32), gaussian(F64),
        node("square", node("subtract", a, b)),                                    # the body of sum((a - b)**2)
        node("add", node("multiply", i, j), node("bitwise_left_shift", i, Scalar(I32))),   # integers wrap
        node("sqrt", node("add", node("multiply", x16, x16), Scalar(F16))),        # float16 in float32
        node("multiply", node("conj", z), node("exp", w)),                         # complex
        node("logical_and", node("less", a, Scalar(F32)), node("isfinite", b)),    # to bool
    ]
    exprs = [fu.instance(t) for t in trees]
    cubin, mapping = _compile.nvrtc_compile("fused", exprs, "90")
    assert cubin[:4] == b"\x7fELF" and len(mapping) == len(exprs) and all(mapping.values())
