"""CPU tier: what ``import gparray`` and the first kernel lookup do not do (issue 17, start-up).

A new process pays for every module ``import gparray`` executes and for every kernel the first
operations load. These tests fail when that laziness regresses: ``import gparray`` imports no
CuPy, no ``linalg``/``fft`` subpackage and none of the stdlib modules only a kernel lookup or a
cache write needs, while ``xp.linalg``, ``xp.fft`` (PEP 562 ``__getattr__``) and every name
stay there; and loading a cached module of many instances looks up only the one asked for
(``cuModuleGetFunction`` loads a kernel under CUDA's lazy loading).
"""
import json
import subprocess
import sys
import types

import pytest

from gparray._kernels import _compile, _registry

# modules that ``import gparray`` must leave to first use
LAZY = ("cupy", "cupy_backends", "gparray.linalg", "gparray.fft", "gparray._engine._fft",
        "gparray._engine._solver", "gparray._engine._geev", "gparray._engine._linalg_plan")
# stdlib modules gparray itself needs only at a kernel lookup or a cache write (checked only
# when NumPy and the interpreter's start-up did not import them already)
LAZY_STDLIB = ("hashlib", "json", "tempfile")


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_gparray_leaves_heavy_modules_to_first_use():
    res = _run(
        "import sys, json, numpy\n"
        "before = set(sys.modules)\n"
        "import gparray\n"
        "added = sorted(set(sys.modules) - before)\n"
        "print(json.dumps({'added': added, 'before': sorted(before)}))\n")
    added, before = set(res["added"]), set(res["before"])
    for name in LAZY:
        assert name not in added and not any(m.startswith(name + ".") for m in added), name
    for name in LAZY_STDLIB:
        if name not in before:
            assert name not in added, f"import gparray imported {name}"


def test_lazy_subpackages_are_still_there():
    res = _run(
        "import sys, json, gparray as xp\n"
        "lazy = ['gparray.linalg' in sys.modules, 'gparray.fft' in sys.modules]\n"
        "names = [n for n in xp.__all__ if not hasattr(xp, n)]\n"
        "ok = [xp.linalg.__name__, xp.fft.__name__, callable(xp.linalg.solve), callable(xp.fft.rfft),\n"
        "      'linalg' in dir(xp), 'fft' in dir(xp)]\n"
        "from gparray import linalg, fft\n"
        "same = [linalg is xp.linalg, fft is xp.fft, sys.modules['gparray.linalg'] is xp.linalg]\n"
        "try:\n"
        "    xp.no_such_name\n"
        "    err = None\n"
        "except AttributeError as e:\n"
        "    err = str(e)\n"
        "print(json.dumps({'lazy': lazy, 'missing': names, 'ok': ok, 'same': same, 'err': err}))\n")
    assert res["lazy"] == [False, False]
    assert res["missing"] == []
    assert res["ok"] == ["gparray.linalg", "gparray.fft", True, True, True, True]
    assert res["same"] == [True, True, True]
    assert res["err"] == "module 'gparray' has no attribute 'no_such_name'"


def test_no_gpu_error_comes_at_first_use_not_at_import():
    # without a usable CUDA device (CUDA_VISIBLE_DEVICES hides every GPU) the import works and
    # the first operation raises the one clear error
    code = ("import json, gparray as xp\n"
            "from gparray._core._backend import CUDAUnavailableError\n"
            "xp.linalg; xp.fft\n"
            "try:\n"
            "    xp.ones(3)\n"
            "    r = 'no error'\n"
            "except CUDAUnavailableError as e:\n"
            "    r = 'CUDAUnavailableError'\n"
            "print(json.dumps({'r': r}))\n")
    import os
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["r"] == "CUDAUnavailableError"


class _FakeDriver:
    """The driver's module calls: a load, and the lookups (``cuModuleGetFunction``) made."""
    lookups: list = []

    @staticmethod
    def moduleLoadData(cubin):
        return ("module", cubin)

    @staticmethod
    def moduleGetFunction(module, lowered):
        _FakeDriver.lookups.append(lowered)
        return ("function", lowered)


def test_a_cached_module_looks_up_only_the_instances_asked_for(monkeypatch):
    rt = types.SimpleNamespace(getDevice=lambda: 0, setDevice=lambda dev: None)
    fake_cp = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt, driver=_FakeDriver))
    from gparray._core import _backend

    monkeypatch.setattr(_backend, "_cupy", fake_cp)    # _backend.runtime() / driver() answer these
    monkeypatch.setattr(_registry, "_arch_of_device", {99: "90"})
    monkeypatch.setattr(_registry, "_functions", {})
    monkeypatch.setattr(_registry, "_pending", {})
    monkeypatch.setattr(_registry, "_modules", [])
    mapping = {f"k<{i}>": f"_Z1k{i}" for i in range(200)}       # a warm-up module
    loads = []

    def compile_cached(family, exprs, arch):
        loads.append(exprs)
        return b"cubin", dict(mapping)

    monkeypatch.setattr(_compile, "compile_cached", compile_cached)
    _FakeDriver.lookups = []
    assert _registry.get_kernel("fam", "k<7>", 99).ptr == ("function", "_Z1k7")
    assert _FakeDriver.lookups == ["_Z1k7"] and len(loads) == 1
    # another instance of the same module: looked up then, no second module load
    assert _registry.get_kernel("fam", "k<8>", 99).ptr == ("function", "_Z1k8")
    assert _registry.get_kernel("fam", "k<7>", 99).ptr == ("function", "_Z1k7")
    assert _FakeDriver.lookups == ["_Z1k7", "_Z1k8"] and len(loads) == 1 and len(_registry._modules) == 1
    # clear_memo forgets the pending ones too (the next call reloads from the disk cache)
    _registry.clear_memo()
    assert _registry.get_kernel("fam", "k<9>", 99).ptr == ("function", "_Z1k9")
    assert len(loads) == 2


def test_base_key_is_hashed_once_per_family_and_inputs(monkeypatch):
    monkeypatch.setattr(_compile, "_nvrtc_version", (12, 0))
    monkeypatch.setattr(_compile, "_base_keys", {})
    k1 = _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    k2 = _compile.instance_key("elementwise", "gp_fill_contig<double>", "90")
    assert len(_compile._base_keys) == 1 and k1 != k2
    assert k1 == _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    # every input still reaches the key
    monkeypatch.setattr(_compile, "_nvrtc_version", (12, 1))
    assert k1 != _compile.instance_key("elementwise", "gp_fill_contig<float>", "90")
    assert len(_compile._base_keys) == 2


def test_headers_digest_comes_from_its_stamp_until_a_file_changes(monkeypatch, tmp_path):
    """A family's header digest is read from the cache folder's stamp while its .cu file and
    every header it includes keep their size and modification time; a change recomputes it."""
    import os
    import shutil

    kdir = tmp_path / "kernels"
    shutil.copytree(_compile.KERNEL_DIR / "include", kdir / "include")
    shutil.copy(_compile.KERNEL_DIR / "reduce.cu", kdir / "reduce.cu")
    monkeypatch.setenv("GPARRAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_compile, "KERNEL_DIR", kdir)
    monkeypatch.setattr(_compile, "INCLUDE_DIR", kdir / "include")
    monkeypatch.setattr(_compile, "_family_sources", {})
    monkeypatch.setattr(_compile, "_family_digests", {})
    real = _compile.headers_digest("reduce")
    assert list((tmp_path / "cache").glob("headers-reduce-*.stamp"))
    # a new process: the stamp answers, no include tree is parsed
    parsed = []
    orig = _compile.included_headers
    monkeypatch.setattr(_compile, "included_headers", lambda *a, **k: parsed.append(1) or orig(*a, **k))
    monkeypatch.setattr(_compile, "_family_digests", {})
    assert _compile.headers_digest("reduce") == real and parsed == []
    # an included header changes (same size, new time): recomputed, and it differs
    hdr = kdir / "include" / "gp" / "reduce.cuh"
    text = hdr.read_bytes()
    hdr.write_bytes(text.replace(b"//", b"/*", 1) if b"//" in text else text + b" ")
    st = os.stat(hdr)
    os.utime(hdr, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    monkeypatch.setattr(_compile, "_family_digests", {})
    changed = _compile.headers_digest("reduce")
    assert parsed and changed != real
    # a corrupt stamp is recomputed, not trusted
    for f in (tmp_path / "cache").glob("headers-reduce-*.stamp"):
        f.write_text("garbage")
    monkeypatch.setattr(_compile, "_family_digests", {})
    assert _compile.headers_digest("reduce") == changed


def test_nvrtc_version_comes_from_its_stamp_and_compiles_confirm_it(monkeypatch, tmp_path):
    """The NVRTC version and targets are NVRTC's answer once (which writes the stamp); later
    processes read the stamp without loading NVRTC; a compile first confirms the stamp, and
    a stale one is rewritten and reported as changed."""
    from gparray._kernels import _nvrtc_info

    monkeypatch.setenv("GPARRAY_CACHE_DIR", str(tmp_path))
    asked = []
    answer = {"v": ((12, 8), (75, 80, 90))}
    monkeypatch.setattr(_nvrtc_info, "_from_nvrtc", lambda: asked.append(1) or answer["v"])
    _nvrtc_info._reset()
    try:
        assert _nvrtc_info.info() == ((12, 8), (75, 80, 90)) and len(asked) == 1
        assert not _nvrtc_info.trusted_stamp()
        _nvrtc_info._reset()                       # a new process
        assert _nvrtc_info.info() == ((12, 8), (75, 80, 90)) and len(asked) == 1
        assert _nvrtc_info.trusted_stamp()
        assert _nvrtc_info.confirm() == (((12, 8), (75, 80, 90)), False) and len(asked) == 2
        _nvrtc_info._reset()                       # NVRTC upgraded in place: the stamp is stale
        answer["v"] = ((13, 0), (75, 80, 90, 100))
        assert _nvrtc_info.info()[0] == (12, 8)
        assert _nvrtc_info.confirm() == (((13, 0), (75, 80, 90, 100)), True)
        _nvrtc_info._reset()
        assert _nvrtc_info.info() == ((13, 0), (75, 80, 90, 100)) and len(asked) == 3
    finally:
        _nvrtc_info._reset()
