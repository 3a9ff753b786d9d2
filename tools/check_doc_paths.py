#!/usr/bin/env python3
"""Check that the repository paths a Markdown document names exist.

    python3 tools/check_doc_paths.py [FILE.md ...]      # default: docs/architecture.md

What it checks, in every line of each document:

* every ``gparray/...`` path (a file, a folder, or a module written without ``.py``; a
  ``*`` is a glob that must match something);
* every path written relative to the package, in backticks, that starts with one of its
  folders (``_engine/_launch.py``, ``_native/_claunch_reduce.c``, ``cuda/_user_kernels``;
  a trailing ``.name`` after a module must be defined in it);
* every ``tests/``, ``tools/``, ``bench/``, ``docs/`` or ``conformance/`` path;
* every dotted ``gparray._x._y`` module name (the longest prefix that is a module; the rest
  is an attribute of it, not checked);
* every bare file name in backticks (``_transfer.py``, ``_claunch_join.c``, ``sort.cu``):
  some file of that name exists in the repository.

Prints one line per path that does not exist and exits 1 if there is one.
"""
from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "gparray"
PKG_DIRS = sorted(p.name for p in PKG.iterdir() if p.is_dir() and not p.name.startswith("__"))
TOP_DIRS = ("tests", "tools", "bench", "docs", "conformance", "ecosystem")
SUFFIXES = (".py", ".c", ".h", ".cu", ".cuh", ".md", ".sh", ".toml", ".txt", ".json")

SLASH = re.compile(r"(?<![\w./-])((?:gparray|" + "|".join(TOP_DIRS) + r")/[\w./*-]*)")
RELATIVE = re.compile(r"`((?:" + "|".join(map(re.escape, PKG_DIRS)) + r")/[\w./*-]*)")
DOTTED = re.compile(r"(?<![\w./])(gparray(?:\.\w+)+)")
BARE = re.compile(r"`([\w*-]+(?:" + "|".join(map(re.escape, SUFFIXES)) + r"))\b")

_names: set | None = None


def _file_names() -> set:
    global _names
    if _names is None:
        _names = {p.name for p in ROOT.rglob("*") if ".git" not in p.parts and ".venv" not in p.parts}
    return _names


def _exists(rel: str) -> bool:
    """``rel`` (relative to the repository root) is a file or folder, a module without its
    ``.py``, a glob with a match, or a module followed by ``.attribute``."""
    rel = rel.rstrip(".,;:)")
    if rel.endswith(SUFFIXES):
        return any(ROOT.glob(rel)) if "*" in rel else (ROOT / rel).exists()
    if "*" in rel:
        return any(ROOT.glob(rel))
    p = ROOT / rel
    if p.exists() or p.with_name(p.name + ".py").exists():
        return True
    head, dot, attr = rel.rpartition(".")          # `_engine/_launch.run`: a module's attribute
    if dot and "/" in head:
        q = ROOT / head
        src = q / "__init__.py" if q.is_dir() else q.with_name(q.name + ".py")
        return src.exists() and attr in _defined(src)
    return False


def _defined(path: pathlib.Path) -> set:
    """The names module ``path`` defines or imports at its top level (``from .m import *``
    followed into ``m``)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.names[0].name == "*" and node.level:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            m = base.joinpath(*(node.module or "").split("."))
            src = m / "__init__.py" if (m / "__init__.py").exists() else m.with_suffix(".py")
            if src.exists():
                names |= _defined(src)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _module_exists(dotted: str) -> bool:
    """The longest prefix of ``dotted`` that is a module; the next name, if any, must be
    defined in it (a submodule, a function, a class, a global); the rest is not checked."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        p = ROOT.joinpath(*parts[:n])
        src = p / "__init__.py" if (p / "__init__.py").exists() else p.with_suffix(".py")
        if src.exists():
            return n == len(parts) or parts[n] in _defined(src)
        if n == len(parts) and p.with_suffix(".c").exists():    # a C extension, by its main source
            return True
    return False


def check(doc: pathlib.Path) -> list:
    missing = []
    for lineno, line in enumerate(doc.read_text().splitlines(), 1):
        for m in SLASH.finditer(line):
            if not _exists(m.group(1)):
                missing.append((lineno, m.group(1)))
        for m in RELATIVE.finditer(line):
            if not _exists("gparray/" + m.group(1)):
                missing.append((lineno, m.group(1)))
        for m in DOTTED.finditer(line):
            if not _module_exists(m.group(1)):
                missing.append((lineno, m.group(1)))
        for m in BARE.finditer(line):
            name = m.group(1)
            ok = any(ROOT.glob("**/" + name)) if "*" in name else name in _file_names()
            if not ok:
                missing.append((lineno, name))
    return missing


def _shown(doc: pathlib.Path) -> str:
    try:
        return str(doc.resolve().relative_to(ROOT))
    except ValueError:
        return str(doc)


def main(argv: list) -> int:
    docs = [pathlib.Path(a) for a in argv] or [ROOT / "docs" / "architecture.md"]
    bad = 0
    for doc in docs:
        found = check(doc)
        for lineno, path in found:
            print(f"{_shown(doc)}:{lineno}: missing {path}")
        print(f"{_shown(doc)}: {_count(doc)} path references checked, {len(found)} missing")
        bad += len(found)
    return 1 if bad else 0


def _count(doc: pathlib.Path) -> int:
    text = doc.read_text()
    return sum(len(r.findall(text)) for r in (SLASH, RELATIVE, DOTTED, BARE))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
