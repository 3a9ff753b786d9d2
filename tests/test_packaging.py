"""CPU tier: what an install needs is in the package description. Every kernel source is
package data (the kernels compile from them at run time), every C source of the extension
is built and shipped in the sdist, and the license the metadata names is the file shipped."""
import ast
import fnmatch
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_kernel_source_is_package_data():
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["gparray"]
    sources = [p.relative_to(ROOT / "gparray").as_posix() for p in (ROOT / "gparray" / "_kernels").rglob("*")
               if p.suffix in (".cu", ".cuh")]
    assert sources
    missing = [s for s in sources if not any(fnmatch.fnmatch(s, g) for g in globs)]
    assert not missing, f"kernel sources an install would not carry: {missing}"


def _setup_sources():
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "sources":
            return {ast.literal_eval(e) for e in node.value.elts}
    raise AssertionError("setup.py names no extension sources")


def test_every_c_source_is_built_and_in_the_sdist():
    c_files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gparray" / "_native").glob("*.c")}
    assert c_files and _setup_sources() == c_files
    manifest = [line.split()[1] for line in (ROOT / "MANIFEST.in").read_text().splitlines()
                if line.startswith("include ")]
    native = c_files | {p.relative_to(ROOT).as_posix() for p in (ROOT / "gparray" / "_native").glob("*.h")}
    assert all(any(fnmatch.fnmatch(f, g) for g in manifest) for f in native), manifest


def test_the_license_is_shipped_and_named():
    assert PYPROJECT["project"]["license"] == "BSD-3-Clause"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
