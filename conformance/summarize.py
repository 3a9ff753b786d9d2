#!/usr/bin/env python3
"""Summarize an array-api-tests JSON report (pytest-json-report) written by conformance/run.sh.

    python3 conformance/summarize.py [conformance-report.json] [--max-failures N] [--messages]

Prints the failing test ids first (with the first line of each failure when --messages is
given), then a compact per-file table of passed/failed/skipped/xfailed counts, last, because
the end of the output is what a device run shows.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

COLUMNS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def _file_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return path.rsplit("/", 1)[-1]


def _message(test: dict) -> str:
    for stage in ("call", "setup", "teardown"):
        info = test.get(stage) or {}
        if info.get("outcome") in ("failed", "error") or (stage == "call" and "crash" in info):
            crash = info.get("crash") or {}
            msg = crash.get("message") or info.get("longrepr") or ""
            msg = " ".join(str(msg).split())
            return msg[:200]
    return ""


def summarize(report: dict, max_failures: int, messages: bool) -> int:
    tests = report.get("tests") or []
    per_file: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad = []
    xpassed = []
    for t in tests:
        outcome = t.get("outcome", "unknown")
        nodeid = t.get("nodeid", "?")
        per_file[_file_of(nodeid)][outcome] += 1
        if outcome in ("failed", "error"):
            bad.append((nodeid, outcome, _message(t)))
        elif outcome == "xpassed":
            xpassed.append(nodeid)

    # collection errors (a test file that does not even import) have no "tests" entries
    for c in report.get("collectors") or []:
        if c.get("outcome") == "failed":
            nodeid = c.get("nodeid", "?")
            per_file[_file_of(nodeid) or nodeid]["error"] += 1
            bad.append((nodeid, "collection error", " ".join(str(c.get("longrepr", "")).split())[:200]))

    if bad:
        print(f"failing tests ({len(bad)}):")
        for nodeid, outcome, msg in bad[:max_failures]:
            line = f"  {outcome.upper():<7} {nodeid}"
            if messages and msg:
                line += f"\n          {msg}"
            print(line)
        if len(bad) > max_failures:
            print(f"  ... and {len(bad) - max_failures} more (see the JSON report)")
        print()

    if xpassed:
        print(f"xfailed tests that now pass ({len(xpassed)}; take their lines out of xfails.txt):")
        for nodeid in xpassed[:max_failures]:
            print(f"  XPASS   {nodeid}")
        if len(xpassed) > max_failures:
            print(f"  ... and {len(xpassed) - max_failures} more")
        print()

    summary = report.get("summary") or {}
    env = report.get("environment") or {}
    dur = report.get("duration")
    head = "conformance"
    if env.get("array_api_tests_module"):
        head += f" of {env['array_api_tests_module']}"
    if dur is not None:
        head += f" ({dur:.0f} s)"
    print(head + ":")
    width = max([len("file")] + [len(f) for f in per_file] + [len("TOTAL")])
    print(f"  {'file':<{width}} " + " ".join(f"{c:>7}" for c in COLUMNS))
    total = collections.Counter()
    for f in sorted(per_file):
        cnt = per_file[f]
        total.update(cnt)
        print(f"  {f:<{width}} " + " ".join(f"{cnt.get(c, 0):>7}" for c in COLUMNS))
    print(f"  {'TOTAL':<{width}} " + " ".join(f"{total.get(c, 0):>7}" for c in COLUMNS))
    if not tests and summary:
        print(f"  summary: {summary}")
    failed = total.get("failed", 0) + total.get("error", 0)
    print(f"  => {'FAIL' if failed or not tests else 'OK'}: {total.get('passed', 0)} passed, "
          f"{failed} failed/errors, {total.get('skipped', 0)} skipped, "
          f"{total.get('xfailed', 0)} xfailed, {total.get('xpassed', 0)} xpassed")
    return 1 if failed or not tests else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", default="conformance-report.json")
    ap.add_argument("--max-failures", type=int, default=60,
                    help="list at most this many failing ids (default 60)")
    ap.add_argument("--messages", action="store_true",
                    help="print the first line of each failure under its id")
    args = ap.parse_args(argv)
    try:
        with open(args.report) as fh:
            report = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"summarize: cannot read the report {args.report}: {exc}")
        return 2
    return summarize(report, args.max_failures, args.messages)


if __name__ == "__main__":
    sys.exit(main())
