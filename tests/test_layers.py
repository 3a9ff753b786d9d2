"""CPU tier: imports go one way (docs/architecture.md, "Layers").

The folder tree is the layer diagram. Every import statement of the package is read with
``ast`` (module level and inside functions, relative and absolute) and resolved to the
gparray module it names; a module may import its own layer and the layers below it, never
one above. The one exception is ``gparray/_array/_build.py``'s ``namespace()``: the public
namespace looked up by name, which is what ``Array.__array_namespace__`` returns. The import
graph, lazy imports included, has no cycle, and nothing sets attributes on Array from outside
its class body."""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "gparray"

# bottom to top; the subpackages and modules directly under gparray/ that are not listed
# here (linalg, fft, cuda, warmup, __init__, __main__) form the top layer
LAYERS = ["_core", "_native", "_memory", "_kernels", "_engine", "_array", "_api"]
TOP = len(LAYERS)
# (importing module, imported module): the upward references there are, each with its reason
ALLOWED_UP = {
    # the public namespace by name, for the NumPy-style methods, NumPy's ufuncs and
    # Array.__array_namespace__
    ("gparray._array._build", "gparray"),
}


def _modules() -> dict:
    """module name -> path, for every .py file of the package (a package is its __init__)."""
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = ["gparray"] + list(p.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _layer(mod: str) -> int:
    parts = mod.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return TOP


def _imports(path: pathlib.Path, mod: str, modules=MODULES) -> list:
    """(line, gparray module) of every import in ``path`` (module ``mod``): ``from X import
    n`` names the module X.n when there is one, else X."""
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                if node.level - 1 > len(parts) - 1:
                    raise AssertionError(f"{path}: relative import beyond the package")
                src = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src for a in node.names]
        else:
            continue
        for t in targets:
            if t != "gparray" and not t.startswith("gparray."):
                continue
            while t not in modules and "." in t:      # a name inside a module: the module
                t = t.rpartition(".")[0]
            found.append((node.lineno, t))
    return found


def _graph(modules=MODULES) -> dict:
    return {m: {t for _, t in _imports(p, m, modules) if t != m} for m, p in modules.items()}


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_every_import_goes_down_or_stays_in_its_layer(mod):
    here = _layer(mod)
    bad = sorted({(line, t) for line, t in _imports(MODULES[mod], mod)
                  if (_layer(t) > here or (t == "gparray" and here < TOP)) and (mod, t) not in ALLOWED_UP})
    assert not bad, (f"{mod} (layer {LAYERS[here] if here < TOP else 'top'}) imports from above "
                     f"(line, module): {bad}; see docs/architecture.md")


def test_the_allowed_upward_references_exist():
    """Each exception is still there (otherwise it goes from the list)."""
    for mod, target in ALLOWED_UP:
        assert target in {t for _, t in _imports(MODULES[mod], mod)}, (mod, target)


def _cycles(graph: dict) -> list:
    """Strongly connected sets of more than one module (a package importing its own
    children is a re-export, not a cycle)."""
    g = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_lazy_imports_included():
    assert _cycles(_graph()) == []


def test_the_native_layer_imports_nothing_of_gparray():
    """The C extension's loader: the layers above hand it what it calls back."""
    for mod in MODULES:
        if mod.startswith("gparray._native"):
            assert [t for _, t in _imports(MODULES[mod], mod) if not t.startswith("gparray._native")] == []


def test_nothing_sets_attributes_on_array():
    """Array's operators and methods are defined in class bodies; no module attaches them."""
    bad = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and node.args:
                target = node.args[0]
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
                if name in ("Array", "ArrayMethods", "Operators", "NumpyInterop"):
                    bad.append((mod, node.lineno))
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "Array":
                        bad.append((mod, node.lineno))
    assert not bad, bad


def test_the_array_class_is_built_from_the_operator_table():
    from gparray._array._object import Array
    from gparray._array._operators import OPERATORS, Operators

    assert Operators in Array.__mro__
    for dunder in OPERATORS:
        assert dunder in Operators.__dict__ and getattr(Array, dunder) is Operators.__dict__[dunder], dunder


def test_the_checker_sees_every_import_form(tmp_path):
    """Relative, absolute and function-local imports resolve to the module they name (so the
    tests above can fail), an upward one is caught and a cycle is found."""
    modules = {"gparray": None, "gparray._core": None, "gparray._core._dtypes": None,
               "gparray._engine": None, "gparray._engine._shapes": None, "gparray._engine._probe": None,
               "gparray._array": None, "gparray._api": None, "gparray._api._creation": None}
    cases = {
        "from .. import _array": "gparray._array",
        "from .._api._creation import _empty": "gparray._api._creation",
        "import gparray._api._creation": "gparray._api._creation",
        "def f():\n    from .._api import _creation": "gparray._api._creation",
        "class C:\n    def f(self):\n        from ..  import _array": "gparray._array",
        "def f():\n    import gparray": "gparray",
        "from gparray import *": "gparray",
        "from . import _shapes": "gparray._engine._shapes",
        "from .. import _core": "gparray._core",
        "from .._core import _dtypes as _dt": "gparray._core._dtypes",
        "from .._core._dtypes import float32": "gparray._core._dtypes",
    }
    f = tmp_path / "_probe.py"
    for src, want in cases.items():
        f.write_text(src + "\n")
        got = {t for _, t in _imports(f, "gparray._engine._probe", modules)}
        assert got == {want}, (src, got)
        assert (_layer(want) > _layer("gparray._engine._probe") or want == "gparray") == \
            (want.split(".")[1:2] in (["_array"], ["_api"]) or want == "gparray"), src
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"p": {"p.x"}, "p.x": {"p"}}) == []
