"""The facts of the Array API standard (2025.12) that the CPU tier checks gparray's tables
against, read from a checkout of the spec and kept in ``tests/spec/facts-2025.12.json``:

- the type promotion tables of ``type_promotion.rst`` ({"row,col": result} per table);
- every elementwise function's input dtype category and number of positional arguments,
  from the signature stubs' docstrings ("Should have a real-valued data type", ...).

    python3 tools/spec_facts.py [SPEC_DIR]      (default .vendor/array-api-tests/array-api)

rewrites the JSON file; tests/test_spec_facts.py regenerates it in memory from the checkout,
where there is one, and fails when the committed file differs.
"""
from __future__ import annotations

import ast
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPEC_DIR = ROOT / ".vendor" / "array-api-tests" / "array-api"
FACTS = ROOT / "tests" / "spec" / "facts-2025.12.json"
RST = pathlib.Path("spec", "2025.12", "API_specification", "type_promotion.rst")
STUBS = pathlib.Path("src", "array_api_stubs", "_2025_12", "elementwise_functions.py")

# the stubs' phrases -> gparray's category names
PHRASES = {"numeric": "numeric", "floating-point": "floating-point", "real-valued": "real numeric",
           "real-valued floating-point": "real floating-point", "integer": "integer",
           "integer or boolean": "integer or boolean", "boolean": "boolean",
           "complex floating-point": "complex floating-point"}


def promotion_tables(text: str) -> list[dict]:
    """The grid tables of type_promotion.rst, each as {"row,col": result}."""
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append([c.strip().strip("*").strip() for c in line.strip("|").split("|")])
        elif line.startswith("+"):
            continue
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    out = []
    for rows in tables:
        header = rows[0][1:]
        out.append({f"{row[0]},{col}": res for row in rows[1:] for col, res in zip(header, row[1:])})
    return out


def elementwise(text: str) -> dict:
    """{function: [input dtype category, positional arguments]} of the elementwise stubs."""
    seen = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        doc = ast.get_docstring(node)
        cats = {PHRASES[p] for p in re.findall(r"(?:Should|Must) have an? ([a-z -]+?) data type", doc)}
        if "May have any data type" in doc:
            cats.add("all")
        if len(cats) != 1:
            raise ValueError(f"spec_facts: {node.name}: expected one input category, found {sorted(cats)}")
        seen[node.name] = [cats.pop(), len(node.args.posonlyargs)]
    return seen


def facts(spec_dir: pathlib.Path) -> dict:
    return {"promotion_tables": promotion_tables((spec_dir / RST).read_text()),
            "elementwise": elementwise((spec_dir / STUBS).read_text())}


def load() -> dict:
    """The committed facts."""
    return json.loads(FACTS.read_text())


def main(argv) -> int:
    spec_dir = pathlib.Path(argv[1]) if len(argv) > 1 else SPEC_DIR
    FACTS.write_text(json.dumps(facts(spec_dir), indent=1, sort_keys=True) + "\n")
    print(f"spec_facts: wrote {FACTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
