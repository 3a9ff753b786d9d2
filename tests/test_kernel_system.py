"""CPU tier: kernel cache keys, atomic cache round trip, and an NVRTC compile (sm_90) of
every registered foundation kernel instance. NVRTC needs no GPU."""
import os

import numpy as np
import pytest

from gparray._kernels import _compile, _instances, _registry


def test_ctypes_cover_every_dtype():
    import gparray._dtypes as dt

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
    exprs = ["gp_fill_contig<float>", "gp_fill_contig<gp::complex128>"]
    assert _compile.load_cached("elementwise", exprs[0], "90") is None
    cubin, mapping = _compile.compile_cached("elementwise", exprs, "90")
    assert set(mapping) == set(exprs) and cubin[:4] == b"\x7fELF"
    for e in exprs:
        hit = _compile.load_cached("elementwise", e, "90")
        assert hit is not None and hit[0] == cubin and hit[1][e] == mapping[e]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]
    files, size = _compile.cache_size()
    assert files == 3 and size > len(cubin)
    # a corrupted module is a miss, not a crash
    mod = [p for p in tmp_path.iterdir() if p.suffix == ".cubin"][0]
    mod.write_bytes(b"garbage")
    assert _compile.load_cached("elementwise", exprs[0], "90") is None
    assert _compile.clear_cache() == 3
    assert _compile.cache_size() == (0, 0)


def test_compile_error_carries_log():
    with pytest.raises(_compile.KernelCompileError, match="NVRTC failed"):
        _compile.nvrtc_compile("elementwise", ["gp_fill_contig<no_such_type>"], "90")


# reduce/scan/search instances are compiled by tests/test_reduction_plans.py, the elementwise
# table's by tests/test_elementwise_tables.py; this covers the foundation's own.
@pytest.mark.parametrize("family", ["creation", "elementwise"])
def test_every_registered_instance_compiles(family):
    exprs = _instances.instances()[family]
    assert exprs
    for i in range(0, len(exprs), 400):
        chunk = exprs[i:i + 400]
        cubin, mapping = _compile.nvrtc_compile(family, chunk, "90")
        assert len(mapping) == len(chunk) and all(mapping.values())
        assert cubin[:4] == b"\x7fELF"
