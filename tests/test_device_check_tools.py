"""CPU tier: how tools/device_check.sh ends: tools/pack_out.sh (at most 8 files come back
from the device: the rest packed into logs.tgz) and tools/junit_failures.py (the failing
tests' tracebacks); the multigpu step's test selection."""
import ast
import pathlib
import re
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" tests="3">
<testcase classname="tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a" name="test_bad[x]" time="0.1"><failure message="AssertionError: 1 != 2">
tests/test_a.py:7: in test_bad
    assert 1 == 2
E   AssertionError: 1 != 2</failure></testcase>
<testcase classname="tests.test_b" name="test_err" time="0.1"><error message="ValueError: boom">E   ValueError: boom</error></testcase>
</testsuite></testsuites>"""


def test_junit_failures_prints_each_failure_with_its_traceback(tmp_path):
    x = tmp_path / "tests-1.xml"
    x.write_text(JUNIT)
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "junit_failures.py"), str(x)],
                         capture_output=True, text=True, check=True).stdout
    assert "##### failure: tests.test_a::test_bad[x]" in out and "assert 1 == 2" in out
    assert "##### error: tests.test_b::test_err" in out and "ValueError: boom" in out
    assert "test_ok" not in out and out.rstrip().endswith("2 failing tests in 1 file(s)")


def _pack(out, max_files=None):
    args = ["bash", str(ROOT / "tools" / "pack_out.sh"), str(out)] + ([str(max_files)] if max_files else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_pack_out_packs_what_the_device_tool_would_leave_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    names = [f"log{i}.txt" for i in range(11)]
    for n in names:
        (out / n).write_text(n)
    (out / "tests-failures.txt").write_text("the why")
    proc = _pack(out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["logs.tgz", "tests-failures.txt"]
    with tarfile.open(out / "logs.tgz") as t:
        assert sorted(m.name for m in t.getmembers()) == sorted(names)
        assert t.extractfile("log3.txt").read() == b"log3.txt"
    assert "packed into logs.tgz" in proc.stdout


def test_pack_out_leaves_few_files_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for i in range(8):
        (out / f"f{i}.log").write_text("x")
    assert _pack(out).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [f"f{i}.log" for i in range(8)]
    assert _pack(out, 5).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["logs.tgz"]


def test_device_check_ends_with_the_failures_and_the_packing():
    text = (ROOT / "tools" / "device_check.sh").read_text()
    assert "tools/junit_failures.py" in text and "tools/pack_out.sh" in text


def _default(text, name):
    """The default value of ``NAME=${NAME:-"..."}`` in tools/device_check.sh."""
    m = re.search(rf'^{name}=\$\{{{name}:-"?([^"}}]*)"?\}}', text, re.M)
    assert m, name
    return m.group(1)


def test_device_check_multigpu_step_selects_existing_two_device_tests():
    """The multigpu step (two GPUs) is a known step, not a default one, and every term of its
    -k expression still names a test function or module of its files (a rename would
    silently drop the test from the two-GPU run)."""
    text = (ROOT / "tools" / "device_check.sh").read_text()
    assert re.search(r"^\s+multigpu\)\s+run_step multigpu ", text, re.M)
    assert "multigpu" not in _default(text, "STEPS").split()
    files = _default(text, "MULTIGPU_TESTS").split()
    assert "tests/test_multi_gpu_gpu.py" in files
    names = set()
    for f in files:
        path = ROOT / f
        assert path.is_file(), f
        names.add(path.stem)
        names |= {n.name for n in ast.walk(ast.parse(path.read_text()))
                  if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    terms = [t.strip() for t in _default(text, "MULTIGPU_K").split(" or ")]
    assert terms and "test_multi_gpu_gpu" in terms
    missing = [t for t in terms if not any(t in n for n in names)]
    assert not missing, f"MULTIGPU_K terms that name no test: {missing}"


def test_device_check_runs_the_exclusive_tests_apart():
    """The tests step runs the gpu_exclusive tests first in one process, then the rest in
    parallel without them, and both with the same seed: together they are the whole tier."""
    text = (ROOT / "tools" / "device_check.sh").read_text()
    body = text[text.index("step_tests() {"):text.index("step_sanitize() {")]
    first, rest = body.index("-m gpu_exclusive"), body.index('-m "${TESTS_MARK:-not gpu_exclusive}"')
    assert first < rest
    # TESTS_MARK narrows the parallel run (the GPU tier alone); its documented values keep
    # the exclusive tests out of it
    assert '"gpu and not gpu_exclusive"' in text[:text.index("set -o pipefail")]
    assert "-p no:xdist" in body[:rest] and "$XDIST_ARGS" in body[first:]
    assert body.count('--randomly-seed="$seed"') == 2
    assert '--junitxml="$OUT/tests-$seed-exclusive.xml"' in body and '--junitxml="$OUT/tests-$seed.xml"' in body
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert "gpu_exclusive" in conftest
