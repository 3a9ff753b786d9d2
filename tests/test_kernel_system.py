"""CPU tier: kernel cache keys, atomic cache round trip, and an NVRTC compile (sm_90) of
every registered foundation kernel instance. NVRTC needs no GPU."""
import os

import numpy as np
import pytest

from gparray._kernels import _compile, _instances, _nvrtc_info, _registry


def test_ctypes_cover_every_dtype():
    import gparray._core._dtypes as dt

    # the 13 spec dtypes and the extension dtype float16 (gp::half in include/gp/types.cuh)
    assert set(_registry.CTYPES) == set(dt._supported_dtypes)
    assert _registry.ctype(dt.float16) == "gp::half"


def test_astype_between_float32_and_float16_is_registered():
    exprs = set(_instances.instances()["elementwise"])
    for head in ("op_identity, gp::half, gp::half, float", "op_identity, float, float, gp::half"):
        assert f"gp_unary_contig<{head}>" in exprs and f"gp_unary_strided<{head}, 4, int>" in exprs
    # float16 comparisons compute in float
    assert "gp_binary_contig<op_equal, bool, float, gp::half, gp::half>" in exprs
    assert not [e for e in exprs if e.startswith("gp_binary_contig<op_equal, bool, gp::half")]


def test_keys_change_with_every_input(monkeypatch):
    k = _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    assert k == _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<double>", "90")
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<float>", "80")
    assert k != _compile.instance_key("creation", "gp_fill_contig<float>", "90")
    monkeypatch.setattr(_compile, "__version__", "999")
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "_nvrtc_version", (1, 0))
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "_family_digests", {"elementwise": "different"})
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    monkeypatch.undo()
    monkeypatch.setattr(_compile, "OPTIONS", _compile.OPTIONS + ("-lineinfo",))
    assert k != _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")


def test_family_keys_hash_exactly_their_headers():
    inc = _compile.included_headers(_compile.family_source("elementwise"))
    assert "gp/elementwise.cuh" in inc and "gp/types.cuh" in inc and "gp/indexer.cuh" in inc
    assert not [h for h in _compile.included_headers(_compile.family_source("creation")) if "functors" in h]
    for fam in ("elementwise", "creation", "reduce"):
        assert _compile.headers_digest(fam) != _compile.headers_digest(None)


def test_cache_round_trip_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("GPARRAY_CACHE_DIR", str(tmp_path))
    # what earlier tests left in this process decides whether the stamps get written here:
    # start from a process that knows neither the header digest nor the NVRTC version
    monkeypatch.setattr(_compile, "_family_digests", {})
    monkeypatch.setattr(_compile, "_nvrtc_version", None)
    _nvrtc_info._reset()
    exprs = ["gp_fill_contig<float>", "gp_fill_contig<gp::complex128>"]
    assert _compile.load_cached("elementwise", exprs[0], "90") is None
    cubin, mapping = _compile.compile_cached("elementwise", exprs, "90")
    assert set(mapping) == set(exprs) and cubin[:4] == b"\x7fELF"
    for e in exprs:
        hit = _compile.load_cached("elementwise", e, "90")
        assert hit is not None and hit[0] == cubin and hit[1][e] == mapping[e]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]
    names = sorted(os.listdir(tmp_path))
    stamps = [p for p in names if p.endswith(".stamp")]
    assert len(stamps) == 2 and any(p.startswith("nvrtc-") for p in stamps), names
    assert any(p.startswith("headers-elementwise-") for p in stamps), names
    files, size = _compile.cache_size()
    assert files == 5 and size > len(cubin), names
    # a corrupted module is a miss, not a crash
    mod = [p for p in tmp_path.iterdir() if p.suffix == ".cubin"][0]
    mod.write_bytes(b"garbage")
    assert _compile.load_cached("elementwise", exprs[0], "90") is None
    assert _compile.clear_cache() == 5
    assert _compile.cache_size() == (0, 0)


def test_compile_error_carries_log():
    with pytest.raises(_compile.KernelCompileError, match="NVRTC failed"):
        _compile.nvrtc_compile("elementwise", ["gp_fill_contig<no_such_type>"], "90")


# reduce/scan/search instances are compiled by tests/test_reduction_plans.py, the elementwise
# table's by tests/test_elementwise_tables.py; this covers the foundation's own.
@pytest.mark.parametrize("family", ["creation", "elementwise", "rows"])
def test_every_registered_instance_compiles(family):
    exprs = _instances.instances()[family]
    assert exprs
    for i in range(0, len(exprs), 400):
        chunk = exprs[i:i + 400]
        cubin, mapping = _compile.nvrtc_compile(family, chunk, "90")
        assert len(mapping) == len(chunk) and all(mapping.values())
        assert cubin[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------- parameter packing
class _Fn:
    ptr = 1234


def _struct_rec(n):
    rec = np.zeros((), np.dtype([("v", np.int64, (n,))]))
    rec["v"] = np.arange(1, n + 1)
    return rec[()]


def test_layout_follows_the_cuda_parameter_alignment():
    from gparray._kernels._launcher import layout

    args = (np.uint64(1), np.int32(2), np.float64(3.0), np.int8(4), np.complex128(5 + 6j),
            np.int16(7), _struct_rec(3), np.float32(8.0))
    st, kinds, size, offs = layout(args)
    #       u64  i32  (pad) f64  i8   (pad) c128 i16  (pad) struct f32
    assert offs == (0, 8, 16, 24, 32, 48, 56, 80)
    assert size == 84 and st.size == size
    packed = st.pack(1, 2, 3.0, 4, 5.0, 6.0, 7, _struct_rec(3).tobytes(), 8.0)
    assert np.frombuffer(packed, np.float64, 2, 32).tolist() == [5.0, 6.0]
    assert np.frombuffer(packed, np.int64, 3, 56).tolist() == [1, 2, 3]


@pytest.mark.parametrize("var", [(), (0,), (0, 1), (0, 1, 2, 3), (0, 6), (1, 3), (6,), (0, 1, 2, 3, 6)])
def test_bound_kernel_packs_the_same_bytes(var):
    from gparray._kernels._launcher import Kernel, _values

    args = (np.uint64(11), np.int32(-3), np.float64(2.5), np.int8(9), np.complex128(1 - 2j),
            _struct_rec(5), np.float32(0.25))
    k = Kernel(_Fn(), args)
    b, tails = k.bind(args, var)
    want = k.st.pack(*_values(args, k.kinds))
    # the call: values at `var` (Python numbers) and one bytes field per run of the others
    vals, it, prev = [], iter(tails), None
    for i, a in enumerate(args):
        if i in var:
            vals.append(a.item())
        elif prev is None or prev in var:
            vals.append(next(it))
        prev = i
    assert next(it, None) is None and all(type(v) in (int, float) for v in vals if not isinstance(v, bytes))
    assert b.st.pack(*vals) == want and b.size == k.size and b.plain
    assert not b.pdl and k.bind(args, var, pdl=True)[0].pdl and not k.pdl  # (a second pass's flag)
    for bad in (range(len(args)), (4,), (0, 7)):  # nothing bound; a complex value; no such argument
        with pytest.raises(ValueError, match="Kernel.bind"):
            k.bind(args, bad)


def test_plain_kernels_take_python_numbers_once_built():
    from gparray._kernels._launcher import Kernel

    args = (np.uint64(2**63 + 5), np.uint64(7), np.float32(0.1), np.int64(-(2**40)))
    k = Kernel(_Fn(), args)
    assert k.plain
    assert k.st.pack(*args) == k.st.pack(2**63 + 5, 7, 0.1, -(2**40))


# ---------------------------------------------------------------- the compiled launch path
def _claunch():
    from gparray._kernels import _launcher

    if _launcher._claunch is None:
        if os.environ.get("GPARRAY_REQUIRE_CLAUNCH"):
            pytest.fail("the C extension gparray._native._claunch was not built")
        pytest.skip("C extension gparray._native._claunch not built (or GPARRAY_PY_LAUNCH=1)")
    return _launcher._claunch


def test_compiled_launch_packs_what_struct_packs():
    from gparray._kernels._launcher import Kernel, _values, layout

    c = _claunch()
    args = (np.uint64(2**64 - 1), np.int32(-3), np.float64(2.5), np.int8(-128), np.complex128(1 - 2j),
            np.int16(-7), _struct_rec(5), np.float32(0.1), np.bool_(True), np.float16(-0.0), np.uint8(255),
            np.uint16(65535), np.uint32(2**32 - 1), np.int64(-(2**63)), np.complex64(3 + 4j), np.uint64(7))
    st, kinds, size, offs = layout(args)
    vals = _values(args, kinds)
    lc = c.Launch(1234, st.format, size, offs)
    assert lc.size == size and lc.nvals == len(vals)
    assert lc.pack(vals) == st.pack(*vals)
    # Python numbers, NumPy scalars and bytes-like objects pack alike
    py = [v.item() if isinstance(v, np.generic) else v for v in vals]
    assert lc.pack(py) == st.pack(*vals)
    # a bound kernel: constant runs as bytes fields, the rest plain
    k = Kernel(_Fn(), args[:8])
    b, tails = k.bind(args[:8], (0, 1, 7))
    lb = c.Launch(1234, b.st.format, b.size, b.offs)
    call = (5, -1) + tails + (0.75,)
    assert lb.pack(call) == b.st.pack(*call)


@pytest.mark.parametrize("fmt,val,err", [
    ("<b", 128, OverflowError), ("<B", -1, OverflowError), ("<h", -(2**15) - 1, OverflowError),
    ("<H", 2**16, OverflowError), ("<i", 2**31, OverflowError), ("<I", 2**32, OverflowError),
    ("<q", 2**63, OverflowError), ("<Q", -1, OverflowError), ("<Q", 2**64, OverflowError),
    ("<f", "x", TypeError), ("<q", 1.5, TypeError), ("<4s", b"abc", ValueError),
    ("<e", 1e6, OverflowError),
])
def test_compiled_launch_rejects_what_struct_rejects(fmt, val, err):
    import struct

    c = _claunch()
    size = struct.calcsize(fmt)
    lc = c.Launch(1, fmt, size, (0,))
    with pytest.raises(err):
        lc.pack((val,))
    if not fmt.endswith("s"):  # struct pads short bytes; the launch wants the exact length
        with pytest.raises((struct.error, OverflowError, TypeError)):
            struct.pack(fmt, val)


def test_compiled_launch_checks_its_call():
    c = _claunch()
    lc = c.Launch(1, "<Qq", 16, (0, 8))
    with pytest.raises(TypeError, match="expected 2 values"):
        lc.pack((1,))
    with pytest.raises(TypeError, match="tuple or list"):
        lc.pack(iter((1, 2)))
    with pytest.raises(TypeError, match="5 positional"):
        lc(1, 256, (1, 2))
    with pytest.raises(ValueError, match="unsupported format"):
        c.Launch(1, "<Z", 8, (0,))
    with pytest.raises(ValueError, match="longer than the buffer"):
        c.Launch(1, "<qq", 8, (0,))
