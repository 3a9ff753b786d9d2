"""CPU tier: imports go one way (docs/architecture.md, "Layers").

Every import statement of gparray/_engine/ and gparray/_kernels/ is read with ``ast``
(module level and inside functions, relative and absolute): none may name the Array layer,
the transfer layer or a namespace module, and the kernels may not import the engines. The
transfer layer (gparray/_transfer.py, gparray/_dlpack.py, gparray/_staging.py) may not
import the Array layer or anything above it, and the Array layer (gparray/_array.py and
the NumPy-style methods Array inherits, gparray/_array_methods.py) imports no namespace
module (gparray._creation included) while it is being imported."""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "gparray"

# The layers, bottom to top (the numbers of the diagram in docs/architecture.md). Each set
# names top-level modules/packages of gparray.
# 1. foundation: dtypes, devices, streams, CuPy access, the pool, the kernel sources/compiler/launcher;
#    they import only each other (and gparray/_kernels/ never the engines)
FOUNDATION = {"_dtypes", "_memory", "_backend", "_device", "_version", "_constants", "_kernels",
              "_host_conversion", "_streams"}
# 2. engines: take and return buffers and layouts (may import the foundation and each other)
ENGINES = {"_engine"}
# 3. transfers and DLPack export on layouts (import engines; imported by the Array layer)
TRANSFER = {"_transfer", "_dlpack", "_staging"}
# 4. the Array layer: Array and the Array-building helpers (_empty, _copy, _from_host, ...),
#    and the NumPy-style methods Array inherits
ARRAY = {"_array", "_array_methods", "_numpy_interop"}
# 5 and 6. everything else is above: the namespace modules (_creation, _ops,
#    _elementwise_funcs, _statistical, _searching, _manipulation, _indexing, ...),
#    gparray/__init__, linalg, fft, cuda, warmup -- computed from the package by
#    _top_level_modules(), so a new module is covered without editing this file.
BELOW_ENGINES_OK = FOUNDATION | ENGINES


def _top_level_modules() -> set:
    names = {p.stem for p in PKG.glob("*.py")} | {p.name for p in PKG.iterdir()
                                                   if p.is_dir() and (p / "__init__.py").exists()}
    return names - {"__init__", "__main__"}


def _imported(path: pathlib.Path, pkg_parts=None) -> list:
    """(line, gparray top-level module or "" for the package itself) of every import in
    ``path``, a module of package ``pkg_parts`` (default: found from its place under PKG)."""
    if pkg_parts is None:
        pkg_parts = ["gparray"] + list(path.relative_to(PKG).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[:len(pkg_parts) - (node.level - 1)]
                if node.level - 1 > len(pkg_parts) - 1:
                    raise AssertionError(f"{path}: relative import beyond the package")
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # "from .. import _array" names the submodule _array; "from gparray import *" the package
            targets = [mod if a.name == "*" else f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            parts = t.split(".")
            if parts[0] != "gparray":
                continue
            found.append((node.lineno, parts[1] if len(parts) > 1 else ""))
    return found


def _low_layer_files():
    for sub in ("_engine", "_kernels"):
        yield from sorted((PKG / sub).glob("*.py"))


def test_the_namespace_set_is_computed_from_the_package():
    above = _top_level_modules() - BELOW_ENGINES_OK
    # the Array layer, the transfer layer and the namespace modules are all forbidden
    assert ARRAY | TRANSFER | {"_creation", "_ops", "_elementwise_funcs", "_statistical", "_searching",
                               "_manipulation", "_indexing", "_utility", "_info",
                               "_data_type_functions", "cuda", "warmup"} <= above
    assert not above & FOUNDATION


@pytest.mark.parametrize("path", list(_low_layer_files()), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_engines_and_kernels_import_only_lower_layers(path):
    modules = _top_level_modules()
    # the kernels sit below the engines: they may not import them either
    allowed = FOUNDATION if path.parent.name == "_kernels" else BELOW_ENGINES_OK
    bad = sorted({(line, m) for line, m in _imported(path)
                  if m == "" or (m in modules and m not in allowed)})
    assert not bad, (f"{path.relative_to(PKG.parent)} imports from a layer above it "
                     f"(line, module): {bad}; see docs/architecture.md")


def _module_level_imports(tree):
    """Import nodes executed while the module is imported (not inside a def or class body's
    methods): the module body, including if/try blocks."""
    out = []

    def visit(stmts):
        for node in stmts:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.append(node)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
    visit(tree.body)
    return out


def _import_time_violations(tree, allowed) -> list:
    """(line, module) of the gparray modules outside ``allowed`` that a module (parsed as
    ``tree``, directly inside gparray/) imports while it is being imported."""
    modules = _top_level_modules()
    bad = []
    for node in _module_level_imports(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gparray."):
            names = [node.module.split(".")[1]]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names if a.name.startswith("gparray.")]
        else:
            continue
        bad += [(node.lineno, n.split(".")[0]) for n in names
                if n.split(".")[0] in modules and n.split(".")[0] not in allowed]
    return bad


@pytest.mark.parametrize("name", sorted(ARRAY))
def test_array_layer_does_not_import_namespace_modules_at_import_time(name):
    path = PKG / f"{name}.py"
    bad = _import_time_violations(ast.parse(path.read_text(), str(path)), BELOW_ENGINES_OK | TRANSFER | ARRAY)
    assert not bad, f"gparray/{name}.py imports layers above it at import time: {bad}"


def test_the_import_time_checker_sees_module_level_imports_only():
    allowed = BELOW_ENGINES_OK | TRANSFER
    for src in ("from ._creation import _empty", "from . import _elementwise_funcs as _ew",
                "try:\n    from ._creation import _copy\nexcept ImportError:\n    pass",
                "import gparray._creation"):
        assert _import_time_violations(ast.parse(src), allowed), src
    for src in ("def f():\n    from ._creation import _copy", "from . import _transfer, _dlpack",
                "from ._engine import _shapes"):
        assert not _import_time_violations(ast.parse(src), allowed), src


def test_transfer_layer_does_not_import_the_array_layer_or_above():
    modules = _top_level_modules()
    allowed = BELOW_ENGINES_OK | TRANSFER
    for name in sorted(TRANSFER):
        path = PKG / f"{name}.py"
        bad = sorted({(line, m) for line, m in _imported(path) if m == "" or (m in modules and m not in allowed)})
        assert not bad, f"gparray/{name}.py imports the Array layer or above: {bad}"


def test_the_checker_sees_every_import_form(tmp_path):
    """The parser catches relative, absolute and function-local imports of a namespace
    module in an engine (so the tests above can fail), and lets lower layers through."""
    cases = {
        "from .. import _array": "_array",
        "from .._creation import _empty": "_creation",
        "import gparray._ops": "_ops",
        "from gparray import _elementwise_funcs as ef": "_elementwise_funcs",
        "def f():\n    from .._statistical import sum": "_statistical",
        "class C:\n    def f(self):\n        from .. import _dlpack": "_dlpack",
        "def f():\n    import gparray": "",
        "from gparray import *": "",
        "from . import _shapes": "_engine",
        "from .. import _dtypes as _dt": "_dtypes",
    }
    f = tmp_path / "_probe.py"
    for src, want in cases.items():
        f.write_text(src + "\n")
        got = {m for _, m in _imported(f, ["gparray", "_engine"])}
        assert got == {want}, (src, got)
