#!/usr/bin/env python3
"""Side-by-side tables of the ecosystem runs: gparray beside CuPy, per test file.

    python3 ecosystem/summarize.py RESULTS... [--subject gparray] [--reference cupy]
                                   [--md summary.md] [--json summary.json] [--max-list 40]

RESULTS are files, folders or ``.tgz`` archives (what ``ecosystem/run.sh`` leaves in
``$OUT``), holding files named ``<part>.<backend>.<kind>``:

* ``.xml`` (or ``.xml.gz``): pytest's junit XML, the main source;
* ``.json``: a pytest-json-report file, used when there is no XML;
* ``.log`` (or ``.log.gz``): the ``pytest -v`` output, used when there is neither (a run
  killed before pytest wrote its XML): its PASSED/FAILED/... lines;
* ``.rc``: ``rc=<exit status> seconds=<wall> cap=<limit>`` from run.sh (124/137: cut short).

For every part it prints a table per test file (passed / failed / skipped of each backend;
failed counts errors, skipped counts xfails, passed counts xpasses), then the tests whose
outcome differs, matched by node id with the backend's name taken out
(``gp_eco_common.normalize_nodeid``): failing with the subject and passing with the
reference (the candidates for gparray's own failures), failing with both, passing with the
subject only, and present in one run only; last the subject's most frequent failure
messages. ``--json`` writes the counts and those lists.
"""
import argparse
import collections
import gzip
import json
import os
import re
import sys
import tarfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gp_eco_common import normalize_nodeid  # noqa: E402

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
FAILING = ("failed", "error")
_NAME = re.compile(r"^(?P<part>[\w-]+)\.(?P<backend>[\w.-]+?)\.(?P<kind>xml|json|log|rc)(?:\.gz)?$")
_LOG_WORDS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
              "XFAIL": "xfailed", "XPASS": "xpassed"}
_LOG_PLAIN = re.compile(r"^(?P<id>\S.*?::.*?) (?P<out>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_LOG_XDIST = re.compile(r"^\[gw\d+\] \[\s*\d+%\] (?P<out>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?P<id>\S.*?::.*?)\s*$")


# ----------------------------------------------------------------------------- reading
def file_of_classname(classname):
    """``sklearn.utils.tests.test_x.TestCls`` -> ``sklearn/utils/tests/test_x.py`` (the last
    dotted component that looks like a test module ends the file; any leading path up to a
    ``site-packages`` or ``dist-packages`` component is dropped)."""
    parts = [p for p in classname.split(".") if p]
    for site in ("site-packages", "dist-packages"):
        if site in parts:
            parts = parts[len(parts) - parts[::-1].index(site):]
    cut = None
    for i, p in enumerate(parts):
        if p != "tests" and (p.startswith("test_") or p.endswith("_test") or p == "test"):
            cut = i
    if cut is None:
        return "/".join(parts) + ".py", []
    return "/".join(parts[:cut + 1]) + ".py", parts[cut + 1:]


def _strip_site(nodeid):
    """A node id printed relative to the working directory, from the package on."""
    return re.split(r"(?:^|/)(?:site|dist)-packages/", nodeid)[-1]


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def read_junit(data):
    """{nodeid: (outcome, message)} from junit XML bytes."""
    out = {}
    root = ET.fromstring(data)
    for case in root.iter("testcase"):
        fname, classes = file_of_classname(case.get("classname", ""))
        name = case.get("name", "")
        nodeid = "::".join([fname, *classes, name]) if name else fname
        outcome, message = "passed", ""
        children = {child.tag: child for child in case}
        if "failure" in children:
            outcome, node = "failed", children["failure"]
        elif "error" in children:
            outcome, node = "error", children["error"]
        elif "skipped" in children:
            node = children["skipped"]
            outcome = "xfailed" if node.get("type") == "pytest.xfail" else "skipped"
        else:
            node = None
        if node is not None:
            message = _first_line(node.get("message")) or _first_line(node.text)
        out[nodeid] = (outcome, message)
    return out


def read_json_report(data):
    """{nodeid: (outcome, message)} from a pytest-json-report file."""
    out = {}
    for test in json.loads(data).get("tests", []):
        nodeid = _strip_site(test["nodeid"])
        outcome = test.get("outcome", "passed")
        message = ""
        for stage in ("setup", "call", "teardown"):
            crash = (test.get(stage) or {}).get("crash") or {}
            if crash.get("message"):
                message = _first_line(crash["message"])
                break
        if outcome == "error" or outcome not in OUTCOMES:
            outcome = "error"
        out[nodeid] = (outcome, message)
    return out


def read_log(text):
    """{nodeid: (outcome, "")} from ``pytest -v`` output (plain or pytest-xdist lines)."""
    out = {}
    for line in text.splitlines():
        m = _LOG_XDIST.match(line) or _LOG_PLAIN.match(line)
        if m:
            nodeid = _strip_site(m.group("id").strip())
            out[nodeid] = (_LOG_WORDS[m.group("out")], "")
    return out


def _iter_sources(paths):
    """(name, bytes) of every result file under ``paths`` (files, folders, tar archives)."""
    for path in paths:
        if os.path.isdir(path):
            for dirpath, _, files in sorted(os.walk(path)):
                yield from _iter_sources(os.path.join(dirpath, f) for f in sorted(files))
        elif path.endswith((".tgz", ".tar.gz", ".tar")):
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    if member.isfile() and _NAME.match(os.path.basename(member.name)):
                        yield os.path.basename(member.name), tar.extractfile(member).read()
        elif _NAME.match(os.path.basename(path)):
            with open(path, "rb") as f:
                yield os.path.basename(path), f.read()


def load(paths):
    """{(part, backend): run} with run = {"tests": {nodeid: (outcome, msg)}, "source": kind,
    "rc": str or None}. Per (part, backend), XML wins over JSON over the log; shards are
    merged (``merge_shards``)."""
    found = collections.defaultdict(dict)
    for name, data in _iter_sources(paths):
        m = _NAME.match(name)
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        found[(m.group("part"), m.group("backend"))][m.group("kind")] = data
    runs = {}
    for key, kinds in sorted(found.items()):
        run = {"tests": {}, "source": None, "rc": None}
        if "rc" in kinds:
            run["rc"] = kinds["rc"].decode(errors="replace").strip()
        for kind, reader in (("xml", read_junit), ("json", read_json_report), ("log", read_log)):
            if kind in kinds:
                try:
                    data = kinds[kind] if kind != "log" else kinds[kind].decode(errors="replace")
                    run["tests"] = reader(data)
                    run["source"] = kind
                    break
                except (ET.ParseError, ValueError, KeyError) as exc:  # a truncated file: try the next kind
                    run.setdefault("problems", []).append(f"{kind}: {exc}")
        runs[key] = run
    return merge_shards(runs)


def merge_shards(runs):
    """Runs of shards (part ``<name>_<i>of<n>``, run.sh's ``PART=<name>@i/n``) joined into
    one run of ``<name>`` per backend: their tests together, their sources and rc lines
    joined with "; "."""
    merged = {}
    for (part, backend), run in sorted(runs.items()):
        base = re.sub(r"_\d+of\d+$", "", part)
        if (base, backend) not in merged:
            merged[(base, backend)] = {"tests": {}, "source": None, "rc": None, "problems": []}
        into = merged[(base, backend)]
        into["tests"].update(run["tests"])
        for field in ("source", "rc"):
            if run[field]:
                label = run[field] if base == part else f"{part[len(base) + 1:]}: {run[field]}"
                into[field] = f"{into[field]}; {label}" if into[field] else label
        into["problems"] += run.get("problems", [])
    return merged


def exit_status(rc_text):
    """The worst pytest exit status in a ``.rc`` text (shards joined: several), None when
    unknown. 0: all passed, 1: some failed, 2: interrupted, 124/137: cut short by run.sh."""
    codes = [int(c) for c in re.findall(r"rc=(\d+)", rc_text or "")]
    if not codes:
        return None
    return max(codes, key=lambda c: (c not in (0, 1), c))


# ----------------------------------------------------------------------------- counting
def counts(tests):
    c = collections.Counter(outcome for outcome, _ in tests.values())
    return {o: c.get(o, 0) for o in OUTCOMES}


def triple(c):
    """(passed, failed, skipped) as the tables show them."""
    return (c["passed"] + c["xpassed"], c["failed"] + c["error"], c["skipped"] + c["xfailed"])


def per_file(tests):
    files = collections.defaultdict(dict)
    for nodeid, value in tests.items():
        files[nodeid.split("::", 1)[0]][nodeid] = value
    return {f: counts(t) for f, t in sorted(files.items())}


def compare(subject, reference, names):
    """Lists of normalized node ids by how the two runs' outcomes differ."""
    s = {normalize_nodeid(k, names): v for k, v in subject.items()}
    r = {normalize_nodeid(k, names): v for k, v in reference.items()}
    out = {"subject_only_fails": [], "both_fail": [], "reference_only_fails": [],
           "subject_skips_reference_passes": [], "only_in_subject": [], "only_in_reference": []}
    for key in sorted(set(s) | set(r)):
        if key not in r:
            out["only_in_subject"].append(key)
            continue
        if key not in s:
            out["only_in_reference"].append(key)
            continue
        (so, sm), (ro, rm) = s[key], r[key]
        if so in FAILING and ro in FAILING:
            out["both_fail"].append((key, sm, rm))
        elif so in FAILING:
            out["subject_only_fails"].append((key, sm, ro))
        elif ro in FAILING:
            out["reference_only_fails"].append((key, rm, so))
        elif so in ("skipped", "xfailed") and ro in ("passed", "xpassed"):
            out["subject_skips_reference_passes"].append((key, sm))
    return out


def summarize(runs, subject="gparray", reference="cupy"):
    """The JSON-able summary of ``load``'s runs."""
    parts = collections.defaultdict(dict)
    for (part, backend), run in runs.items():
        parts[part][backend] = run
    result = {"subject": subject, "reference": reference, "parts": {}}
    for part, backends in sorted(parts.items()):
        entry = {"backends": {}, "files": {}}
        for backend, run in backends.items():
            entry["backends"][backend] = {"counts": counts(run["tests"]), "source": run["source"],
                                          "rc": run["rc"], "problems": run.get("problems", [])}
            for f, c in per_file(run["tests"]).items():
                entry["files"].setdefault(f, {})[backend] = c
        if subject in backends and reference in backends:
            entry["compare"] = compare(backends[subject]["tests"], backends[reference]["tests"],
                                       [subject, reference])
        if subject in backends:
            msgs = collections.Counter(m or "(no message)" for o, m in backends[subject]["tests"].values()
                                       if o in FAILING)
            entry["top_messages"] = msgs.most_common(25)
        result["parts"][part] = entry
    return result


# ----------------------------------------------------------------------------- markdown
def _order(backends, subject, reference):
    first = [b for b in (subject, reference) if b in backends]
    return first + sorted(b for b in backends if b not in first)


def markdown(summary, max_list=40):
    subject, reference = summary["subject"], summary["reference"]
    lines = []
    for part, entry in summary["parts"].items():
        order = _order(entry["backends"], subject, reference)
        lines.append(f"## {part}")
        lines.append("")
        for b in order:
            info = entry["backends"][b]
            c = info["counts"]
            note = f"; from {info['source']}" + (f"; {info['rc']}" if info["rc"] else "")
            if re.search(r"\blog\b", info["source"] or ""):
                note += " (no XML: the run was cut short, counts are what it printed)"
            elif exit_status(info["rc"]) not in (None, 0, 1):
                note += " (cut short or interrupted: tests after that point are missing)"
            lines.append(f"- **{b}**: " + ", ".join(f"{c[o]} {o}" for o in OUTCOMES if c[o]) + note)
        lines.append("")
        head = "| test file | " + " | ".join(f"{b} passed / failed / skipped" for b in order) + " |"
        lines += [head, "|---|" + "---:|" * len(order)]
        totals = {b: [0, 0, 0] for b in order}
        for f, by_backend in entry["files"].items():
            cells = []
            for b in order:
                if b in by_backend:
                    t = triple(by_backend[b])
                    totals[b] = [x + y for x, y in zip(totals[b], t)]
                    cells.append(" / ".join(map(str, t)))
                else:
                    cells.append("-")
            lines.append(f"| {f} | " + " | ".join(cells) + " |")
        lines.append("| **total** | " + " | ".join("**" + " / ".join(map(str, totals[b])) + "**" for b in order) + " |")
        lines.append("")
        cmp_ = entry.get("compare")
        if cmp_:
            sections = (
                ("subject_only_fails", f"Fail with {subject}, not with {reference}", lambda t: f"{t[0]} — {t[1]} ({reference}: {t[2]})"),
                ("both_fail", f"Fail with both", lambda t: f"{t[0]} — {subject}: {t[1]} | {reference}: {t[2]}"),
                ("reference_only_fails", f"Fail with {reference} only", lambda t: f"{t[0]} — {t[1]} ({subject}: {t[2]})"),
                ("subject_skips_reference_passes", f"Skipped with {subject}, passed with {reference}", lambda t: f"{t[0]} — {t[1]}"),
                ("only_in_subject", f"Only in the {subject} run", str),
                ("only_in_reference", f"Only in the {reference} run", str),
            )
            for key, title, fmt in sections:
                items = cmp_[key]
                if not items:
                    continue
                lines.append(f"### {title}: {len(items)}")
                lines.append("")
                lines += [f"- {fmt(t)}" for t in items[:max_list]]
                if len(items) > max_list:
                    lines.append(f"- ... {len(items) - max_list} more (see the JSON summary)")
                lines.append("")
        if entry.get("top_messages"):
            lines.append(f"### Most frequent {subject} failure messages")
            lines.append("")
            lines += [f"- {n} × {m}" for m, n in entry["top_messages"][:15]]
            lines.append("")
    return "\n".join(lines)


def brief(summary):
    """A few lines per part: each backend's counts and the sizes of the comparison lists."""
    lines = []
    for part, entry in summary["parts"].items():
        for b in _order(entry["backends"], summary["subject"], summary["reference"]):
            info = entry["backends"][b]
            p, f, s = triple(info["counts"])
            cut = "" if exit_status(info["rc"]) in (None, 0, 1) else f" [{info['rc']}]"
            lines.append(f"{part:<22} {b:<16} {p:>6} passed {f:>6} failed {s:>6} skipped  (from {info['source']}){cut}")
        cmp_ = entry.get("compare")
        if cmp_:
            lines.append(f"{'':<22} fail with {summary['subject']} only: {len(cmp_['subject_only_fails'])}, "
                         f"with both: {len(cmp_['both_fail'])}, with {summary['reference']} only: "
                         f"{len(cmp_['reference_only_fails'])}, in one run only: "
                         f"{len(cmp_['only_in_subject'])} / {len(cmp_['only_in_reference'])}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="result files, folders or .tgz archives")
    ap.add_argument("--subject", default="gparray")
    ap.add_argument("--reference", default="cupy")
    ap.add_argument("--md", help="also write the markdown here")
    ap.add_argument("--json", help="write the JSON summary here")
    ap.add_argument("--max-list", type=int, default=40, help="tests listed per section (default 40)")
    ap.add_argument("--brief", action="store_true", help="print only the counts (the files get everything)")
    args = ap.parse_args(argv)
    runs = load(args.results)
    if not runs:
        print("summarize: no <part>.<backend>.{xml,json,log} result files found in", args.results)
        return 1
    summary = summarize(runs, args.subject, args.reference)
    text = markdown(summary, args.max_list)
    print(brief(summary) if args.brief else text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
