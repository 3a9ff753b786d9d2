"""NVRTC compilation of kernel families with an on-disk cubin cache.

A *family* is one ``.cu`` file in this folder; an *instance* is a C++ template
instantiation of one of its kernels, named by an NVRTC name expression such as
``gp_binary_contig<op_add, float, float, float, float>``. Compilation goes through
NVRTC (CuPy's bindings), never through a GPU, so the cache can be filled on a machine
without one (``python -m gparray.warmup``).

Cache layout (folder from ``GPARRAY_CACHE_DIR``, default ``~/.cache/gparray/kernels``):
``<module-key>.cubin`` holds a JSON header (name expression -> lowered name) and the cubin;
``<instance-key>.ref`` names the module that contains an instance. Keys are SHA-256 over
the family source, the packaged headers it includes, the options, the target arch, the NVRTC
version and gparray's version, so any change to one of them is a miss. User kernels
(``gparray.cuda.compile_kernel``) take the same path with their own source text (hashed
with every packaged header) and their extra options. Writes are atomic
(temporary file + ``os.replace``).
"""
from __future__ import annotations

import os
import pathlib
import re

# hashlib, json and tempfile are imported where they are used (the first kernel lookup, a
# cache write): ``import gparray`` does not need them (tests/test_startup.py)

from .._core._version import __version__
from ._disk import _atomic_write, cache_dir

KERNEL_DIR = pathlib.Path(__file__).resolve().parent
INCLUDE_DIR = KERNEL_DIR / "include"
OPTIONS = ("--std=c++17", "-default-device", "--minimal")
# GPARRAY_NVRTC_LINEINFO=1 (read at import): kernels carry source line information, so a
# profiler (ncu's source counters) or compute-sanitizer names the .cu line; part of the cache key.
if os.environ.get("GPARRAY_NVRTC_LINEINFO", "0") not in ("", "0"):
    OPTIONS += ("-lineinfo",)

_headers_digest: str | None = None
_family_sources: dict[str, str] = {}
_nvrtc_version: tuple | None = None


class KernelCompileError(RuntimeError):
    """NVRTC rejected a kernel instance; the message carries NVRTC's log."""


def family_source(family: str) -> str:
    """The text of ``<family>.cu``."""
    src = _family_sources.get(family)
    if src is None:
        path = KERNEL_DIR / f"{family}.cu"
        if not path.is_file():
            raise KeyError(f"get_kernel: no kernel family {family!r} ({path} is missing)")
        src = _family_sources[family] = path.read_text()
    return src


_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
_family_digests: dict[str, str] = {}


def included_headers(text: str, seen: set | None = None, base: pathlib.Path | None = None) -> list:
    """Packaged headers ``text`` includes, transitively: quoted includes resolved next to the
    including header first, then under include/; returned relative to include/."""
    seen = set() if seen is None else seen
    out = []
    for name in _INCLUDE_RE.findall(text):
        path = None
        for root in ((base,) if base is not None else ()) + (INCLUDE_DIR,):
            if (root / name).is_file():
                path = (root / name).resolve()
                break
        if path is None:
            continue
        rel = str(path.relative_to(INCLUDE_DIR))
        if rel in seen:
            continue
        seen.add(rel)
        out.append(rel)
        out += included_headers(path.read_text(), seen, path.parent)
    return out


def headers_digest(family: str | None = None) -> str:
    """SHA-256 over the packaged headers a family includes (all headers when ``family`` is None),
    names and contents; computed once per family and process."""
    global _headers_digest
    if family is not None:
        d = _family_digests.get(family)
        if d is None:
            d = _family_digests[family] = _stamped_digest(family)
        return d
    if _headers_digest is None:
        _headers_digest = _digest(sorted(str(p.relative_to(INCLUDE_DIR)) for p in INCLUDE_DIR.rglob("*.cuh")))
    return _headers_digest


def _stamp_file(family: str) -> pathlib.Path:
    import hashlib

    where = hashlib.sha256(f"{KERNEL_DIR}\0{__version__}".encode()).hexdigest()[:16]
    return cache_dir() / f"headers-{family}-{where}.stamp"


def _stamped_digest(family: str) -> str:
    """``headers_digest(family)`` without reading the headers when they have not changed: the
    kernel cache folder keeps, per family (and per gparray folder and version), the digest
    with the size and modification time of the family's .cu file and of every header it
    includes; when all of them still match, the digest is the stamp's (a new process's
    first kernel load of a family skips parsing and hashing its include tree). Any change,
    or a missing or unreadable stamp, recomputes it and writes a new stamp."""
    stamp = _stamp_file(family)
    try:
        lines = stamp.read_text().splitlines()
        digest, files = lines[0], lines[1:]
        for line in files:
            name, mtime, size = line.rsplit(" ", 2)
            st = os.stat(KERNEL_DIR / name)
            if st.st_mtime_ns != int(mtime) or st.st_size != int(size):
                raise ValueError(name)
        if len(digest) == 64 and files:
            return digest
    except (OSError, ValueError, IndexError):
        pass
    names = sorted(included_headers(family_source(family)))
    digest = _digest(names)
    rows = [digest]
    try:
        for name in [f"{family}.cu"] + [f"include/{n}" for n in names]:
            st = os.stat(KERNEL_DIR / name)
            rows.append(f"{name} {st.st_mtime_ns} {st.st_size}")
        _atomic_write(stamp, ("\n".join(rows) + "\n").encode())
    except OSError:
        pass    # a read-only cache folder: the digest is computed in every process
    return digest


def _digest(names) -> str:
    import hashlib

    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update(b"\0")
        h.update((INCLUDE_DIR / name).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def nvrtc_version() -> tuple:
    """(major, minor) of the NVRTC library CuPy loads; read from the cache folder's stamp when
    there is one, so that loading cached kernels does not load NVRTC (``_nvrtc_info``)."""
    global _nvrtc_version
    if _nvrtc_version is None:
        from . import _nvrtc_info

        _nvrtc_version = _nvrtc_info.info()[0]
    return _nvrtc_version


def confirm_nvrtc() -> bool:
    """Before compiling: make sure the keys use the NVRTC actually loaded (the stamp may be
    stale). True when the version changed (keys computed so far are forgotten)."""
    global _nvrtc_version
    from . import _nvrtc_info

    if not _nvrtc_info.trusted_stamp():
        return False
    real, changed = _nvrtc_info.confirm()
    if changed and _nvrtc_version is not None and _nvrtc_version != real[0]:
        _nvrtc_version = real[0]
        _base_keys.clear()
        return True
    return False


def options_for(arch: str) -> tuple:
    """Full NVRTC option tuple for target ``arch`` (e.g. "90" -> sm_90 cubin)."""
    return OPTIONS + (f"-I{INCLUDE_DIR}", f"-arch=sm_{arch}")


_base_keys: dict = {}   # every input of a base key -> its hash state (copied per instance)


def _base_key(family: str, arch: str, source: str | None = None, options: tuple = ()):
    """The sha256 state over everything but the instance, hashed once per set of inputs (a
    family's source is not re-hashed for every instance looked up). ``source`` is None for a
    family (its .cu file and the headers it includes); a user kernel's source
    (gparray.cuda.compile_kernel) hashes with every packaged header and its extra NVRTC
    ``options``."""
    if source is None:
        text, headers = family_source(family), headers_digest(family)
    else:
        text, headers = source, headers_digest(None)
    parts = (family, text, headers, " ".join(OPTIONS + tuple(options)), arch,
             ".".join(map(str, nvrtc_version())), __version__)
    h = _base_keys.get(parts)
    if h is None:
        import hashlib

        h = hashlib.sha256()
        for part in parts:
            h.update(part.encode())
            h.update(b"\0")
        _base_keys[parts] = h
    return h.copy()


def instance_key(family: str, expr: str, arch: str, source: str | None = None, options: tuple = ()) -> str:
    """Cache key of one instance."""
    h = _base_key(family, arch, source, options)
    h.update(expr.encode())
    return h.hexdigest()


def module_key(family: str, exprs: list[str], arch: str, source: str | None = None, options: tuple = ()) -> str:
    """Cache key of a module compiled from several instances."""
    h = _base_key(family, arch, source, options)
    for e in sorted(exprs):
        h.update(e.encode())
        h.update(b"\0")
    return h.hexdigest()


def nvrtc_compile(family: str, exprs: list[str], arch: str, source: str | None = None, options: tuple = (),
                  caller: str = "get_kernel", error: type = None) -> tuple[bytes, dict]:
    """Compile ``exprs`` of ``family`` (or of ``source``, a user kernel's text, with its extra
    ``options``) to one sm_<arch> cubin; returns (cubin, lowered names). NVRTC's rejection
    raises ``error`` (default KernelCompileError), its message starting with ``caller``."""
    from cupy_backends.cuda.libs import nvrtc

    src = family_source(family) if source is None else source
    prog = nvrtc.createProgram(src, f"{family}.cu", (), ())
    try:
        for e in exprs:
            nvrtc.addNameExpression(prog, e)
        opts = options_for(arch) + tuple(options)
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise (error or KernelCompileError)(
                f"{caller}: NVRTC failed to compile {family}.cu for sm_{arch} "
                f"({len(exprs)} instance(s), first {exprs[0]!r}; {exc}):\n{log}") from None
        mapping = {e: nvrtc.getLoweredName(prog, e) for e in exprs}
        return nvrtc.getCUBIN(prog), mapping
    finally:
        nvrtc.destroyProgram(prog)


def _pack(cubin: bytes, mapping: dict) -> bytes:
    import json

    head = json.dumps(mapping, sort_keys=True).encode()
    return len(head).to_bytes(8, "little") + head + cubin


def _unpack(data: bytes) -> tuple[bytes, dict]:
    import json

    n = int.from_bytes(data[:8], "little")
    mapping = json.loads(data[8:8 + n].decode())
    return data[8 + n:], mapping


def store(family: str, exprs: list[str], arch: str, cubin: bytes, mapping: dict,
          source: str | None = None, options: tuple = ()) -> str:
    """Write a compiled module and one reference per instance; returns the module key."""
    d = cache_dir()
    mkey = module_key(family, exprs, arch, source, options)
    try:
        _atomic_write(d / f"{mkey}.cubin", _pack(cubin, mapping))
        for e in exprs:
            _atomic_write(d / f"{instance_key(family, e, arch, source, options)}.ref", mkey.encode())
    except OSError:
        pass  # a read-only or full cache folder only costs recompiles
    return mkey


def load_cached(family: str, expr: str, arch: str, source: str | None = None,
                options: tuple = ()) -> tuple[bytes, dict] | None:
    """(cubin, mapping) of the cached module holding ``expr``, or None on a miss."""
    d = cache_dir()
    try:
        mkey = (d / f"{instance_key(family, expr, arch, source, options)}.ref").read_text().strip()
        data = (d / f"{mkey}.cubin").read_bytes()
        cubin, mapping = _unpack(data)
    except (OSError, ValueError):
        return None
    if expr not in mapping:
        return None
    return cubin, mapping


def compile_cached(family: str, exprs: list[str], arch: str, source: str | None = None, options: tuple = (),
                   caller: str = "get_kernel", error: type = None) -> tuple[bytes, dict]:
    """Compile (or read from the cache) a module holding every instance in ``exprs``."""
    if len(exprs) == 1 or source is not None:
        hit = load_cached(family, exprs[0], arch, source, options)
        if hit is not None and all(e in hit[1] for e in exprs):
            return hit
        if confirm_nvrtc():   # the stamp named another NVRTC: look again under the real one
            hit = load_cached(family, exprs[0], arch, source, options)
            if hit is not None and all(e in hit[1] for e in exprs):
                return hit
    else:
        confirm_nvrtc()
    cubin, mapping = nvrtc_compile(family, exprs, arch, source, options, caller, error)
    store(family, exprs, arch, cubin, mapping, source, options)
    return cubin, mapping


def clear_cache() -> int:
    """Delete every cached kernel file and stamp (the NVRTC version stamp, the header digest
    stamps: both are rebuilt on demand); returns the number of files removed."""
    d = cache_dir()
    n = 0
    if d.is_dir():
        for p in d.iterdir():
            if p.suffix in (".cubin", ".ref", ".stamp") or p.name.startswith(".tmp-"):
                try:
                    p.unlink()
                    n += 1
                except OSError:
                    pass
    return n


def cache_size() -> tuple[int, int]:
    """(number of files, total bytes) in the cache folder."""
    d = cache_dir()
    files = total = 0
    if d.is_dir():
        for p in d.iterdir():
            if p.is_file():
                files += 1
                total += p.stat().st_size
    return files, total
