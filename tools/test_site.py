"""Make the carried wheels of the optional test libraries importable: every module of
WANTED that this Python lacks (or has older than its minimum) is installed from a wheel in
.vendor/ or .vendor/cubed-wheels/ with ``pip install --no-index --no-deps --target SITE``.

    python3 tools/test_site.py [--site /tmp/gp-test-site] [--wheels DIR ...] [--dry-run]
    export PYTHONPATH=/tmp/gp-test-site:$PYTHONPATH

It prints one line per module (present, installing WHEEL, or no wheel) and exits 0 unless
pip fails; modules without a wheel are left out (their tests skip with the reason).
tools/device_check.sh runs it before its tests step. The GPU tests that need these
libraries (tests/test_array_api_extra_gpu.py, tests/test_xarray_gpu.py,
tests/test_cubed_gpu.py) skip, naming the library, where it is missing.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_SITE = "/tmp/gp-test-site"
DEFAULT_WHEELS = (ROOT / ".vendor", ROOT / ".vendor" / "cubed-wheels")

# (import name, distribution name, minimum version or None). Only what is missing (or too
# old) is installed, with --no-deps: this list is the whole dependency closure.
WANTED = [
    # test plugins of tools/device_check.sh
    ("pytest_randomly", "pytest-randomly", None),
    ("pytest_timeout", "pytest-timeout", None),
    # array-api-extra (tests/test_array_api_extra_gpu.py) and the array-api-compat it needs
    ("array_api_extra", "array-api-extra", None),
    ("array_api_compat", "array-api-compat", "1.15"),
    # cubed (tests/test_cubed_gpu.py) and its dependencies
    ("cubed", "cubed", None),
    ("zarr", "zarr", "3.0"),
    ("numcodecs", "numcodecs", "0.16.6"),
    ("msgspec", "msgspec", "0.19"),
    ("google_crc32c", "google-crc32c", "1.5"),
    ("donfig", "donfig", "0.8"),
    ("yaml", "pyyaml", None),
    ("aiostream", "aiostream", None),
    ("tenacity", "tenacity", None),
    ("toolz", "toolz", None),
    ("tlz", "toolz", None),
    ("cloudpickle", "cloudpickle", "3.0"),
    ("networkx", "networkx", "3.3"),
    ("psutil", "psutil", None),
    ("mypy_extensions", "mypy-extensions", None),
    ("ndindex", "ndindex", None),
    ("typing_extensions", "typing-extensions", "4.14"),
    ("packaging", "packaging", "22.0"),
    # cubed's Dask executor: dask.distributed and its dependencies
    ("dask", "dask", None),
    ("distributed", "distributed", None),
    ("fsspec", "fsspec", None),
    ("partd", "partd", None),
    ("locket", "locket", None),
    ("click", "click", "8.1"),
    ("jinja2", "jinja2", None),
    ("markupsafe", "markupsafe", None),
    ("msgpack", "msgpack", None),
    ("sortedcontainers", "sortedcontainers", None),
    ("tblib", "tblib", None),
    ("tornado", "tornado", "6.2"),
    ("zict", "zict", "3.0"),
    ("urllib3", "urllib3", None),
]
# installed together when any of them is: distributed requires its own release of dask
TOGETHER = [{"dask", "distributed"}]


def norm(name: str) -> str:
    """A distribution name as wheel file names spell it (PEP 503 normalized, "_")."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _version_tuple(v: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


def wheel_fits(filename: str, py: tuple = sys.version_info[:2]) -> bool:
    """Whether a wheel's tags can install on CPython ``py`` on x86-64 Linux: py3/py2.py3
    none-any, cpXY for this version, or cpXY-abi3 for an older or equal one."""
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return False
    pytags, abis, plats = parts[-3].split("."), parts[-2].split("."), parts[-1].split(".")
    if not any(p == "any" or (p.startswith("manylinux") and p.endswith("x86_64")) for p in plats):
        return False
    here = f"cp{py[0]}{py[1]}"
    for t in pytags:
        if t in ("py3", f"py{py[0]}{py[1]}") and "none" in abis:
            return True
        if t == here and (here in abis or "abi3" in abis or "none" in abis):
            return True
        m = re.fullmatch(r"cp3(\d+)", t)
        if m and "abi3" in abis and py[0] == 3 and int(m.group(1)) <= py[1]:
            return True
    return False


def find_wheel(dist: str, dirs, py: tuple = sys.version_info[:2]):
    """The newest fitting wheel of ``dist`` in ``dirs`` (a path), or None."""
    best = None
    for d in dirs:
        d = pathlib.Path(d)
        if not d.is_dir():
            continue
        for f in d.glob("*.whl"):
            name, _, rest = f.name.partition("-")
            if norm(name) != norm(dist) or not wheel_fits(f.name, py):
                continue
            ver = _version_tuple(rest.split("-")[0])
            if best is None or ver > best[0]:
                best = (ver, f)
    return None if best is None else best[1]


def present(module: str, dist: str, minimum) -> bool:
    """``module`` importable here (not imported) and ``dist`` at least ``minimum``."""
    try:
        if importlib.util.find_spec(module) is None:
            return False
    except (ImportError, ValueError):
        return False
    if minimum is None:
        return True
    try:
        return _version_tuple(importlib.metadata.version(dist)) >= _version_tuple(minimum)
    except importlib.metadata.PackageNotFoundError:
        return True   # importable without metadata (vendored, a source tree): take it


def plan(is_present, wheels_for, wanted=WANTED, together=TOGETHER):
    """(to install: [(dist, wheel)], report lines). ``is_present(module, dist, minimum)``
    and ``wheels_for(dist)`` (a path or None) are the two questions asked of the machine."""
    missing = {dist for mod, dist, mn in wanted if not is_present(mod, dist, mn)}
    for group in together:
        if missing & group:
            missing |= group
    lines, chosen = [], {}
    for mod, dist, mn in wanted:
        if dist not in missing:
            lines.append(f"   {mod:<18} present")
            continue
        if dist in chosen:
            continue
        whl = wheels_for(dist)
        if whl is None:
            lines.append(f"   {mod:<18} missing, no wheel for {dist}: left out")
        else:
            chosen[dist] = whl
            lines.append(f"   {mod:<18} installing {pathlib.Path(whl).name}")
    return list(chosen.items()), lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", default=DEFAULT_SITE, help=f"target folder (default {DEFAULT_SITE})")
    ap.add_argument("--wheels", nargs="*", default=[str(d) for d in DEFAULT_WHEELS],
                    help="folders holding the wheels (default .vendor and .vendor/cubed-wheels)")
    ap.add_argument("--dry-run", action="store_true", help="report only")
    args = ap.parse_args(argv)
    site = pathlib.Path(args.site)
    # a module installed by an earlier run counts as present only with the site on sys.path
    if site.is_dir() and str(site) not in sys.path:
        sys.path.insert(0, str(site))
        importlib.invalidate_caches()
    todo, lines = plan(present, lambda dist: find_wheel(dist, args.wheels))
    print(f"== test site {site}: {len(todo)} wheel(s) to install")
    print("\n".join(lines))
    if not todo or args.dry_run:
        return 0
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--disable-pip-version-check", "--upgrade", "--target", str(site)] + [str(w) for _, w in todo]
    rc = subprocess.run(cmd).returncode
    print(f"== test site: pip exit {rc}" + ("" if rc == 0 else " (the tests that need these libraries will skip)"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
