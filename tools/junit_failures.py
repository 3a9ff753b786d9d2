"""Print the failures and errors of pytest junit XML files with the end of each traceback
(tools/device_check.sh writes them to $OUT/tests-failures.txt: the device tool brings back
only a few files, and the -rfE lines of the log name a failure without its why).

    python3 tools/junit_failures.py tests-1.xml [tests-2.xml ...] [--chars 2500]
"""
from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET


def failures(path: str, chars: int):
    """(test id, kind, message, the last ``chars`` of the traceback) of each failing test."""
    for tc in ET.parse(path).iter("testcase"):
        for kind in ("failure", "error"):
            e = tc.find(kind)
            if e is not None:
                yield (f"{tc.get('classname')}::{tc.get('name')}", kind, e.get("message") or "",
                       (e.text or "")[-chars:])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xml", nargs="+")
    ap.add_argument("--chars", type=int, default=2500, help="traceback characters kept per test")
    a = ap.parse_args(argv)
    n = 0
    for path in a.xml:
        for name, kind, msg, tb in failures(path, a.chars):
            n += 1
            print(f"##### {kind}: {name} ({path})\n{msg[:300]}\n{tb}\n")
    print(f"{n} failing tests in {len(a.xml)} file(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
