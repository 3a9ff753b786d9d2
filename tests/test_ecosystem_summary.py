"""ecosystem/summarize.py and the id helpers of ecosystem/gp_eco_common.py, on small
fabricated junit XML, pytest -v logs and pytest-json-report files (CPU tier)."""
import gzip
import io
import json
import pathlib
import sys
import tarfile

import pytest

ECO = pathlib.Path(__file__).resolve().parent.parent / "ecosystem"
sys.path.insert(0, str(ECO))

import gp_eco_common as common  # noqa: E402
import summarize  # noqa: E402


def junit(cases):
    """A junit XML document (pytest's xunit2 layout) from (classname, name, outcome, message)."""
    body = []
    for classname, name, outcome, message in cases:
        inner = {
            "passed": "",
            "failed": f'<failure message="{message}">Traceback\nE   {message}</failure>',
            "error": f'<error message="{message}">setup broke</error>',
            "skipped": f'<skipped type="pytest.skip" message="{message}">skip</skipped>',
            "xfailed": f'<skipped type="pytest.xfail" message="{message}" />',
        }[outcome]
        body.append(f'<testcase classname="{classname}" name="{name}" time="0.01">{inner}</testcase>')
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
            f'failures="0" skipped="0" tests="{len(cases)}">' + "".join(body) + "</testsuite></testsuites>").encode()


SK = "sklearn.utils.tests.test_array_api"
SP = "scipy.special.tests.test_logsumexp.TestLogSumExp"


def sklearn_cases(xp, outcomes):
    names = ["test_a[{xp}-None-None]", "test_b[{xp}-None-None]", "test_c[{xp}-None-None]",
             "test_d[{xp}-None-None]", "test_e[{xp}-None-None]", "test_mixed[numpy to {xp}]"]
    return [(SK, n.format(xp=xp), o, f"{o} msg {i}") for i, (n, o) in enumerate(zip(names, outcomes))]


GP = ["passed", "failed", "failed", "passed", "skipped", "error"]
CP = ["passed", "passed", "failed", "failed", "passed", "passed"]


@pytest.fixture
def results(tmp_path):
    (tmp_path / "sklearn.gparray.xml").write_bytes(junit(sklearn_cases("gparray", GP)))
    (tmp_path / "sklearn.cupy.xml").write_bytes(junit(sklearn_cases("cupy", CP)))
    (tmp_path / "sklearn.gparray.rc").write_text("rc=1 seconds=10 cap=200\n")
    (tmp_path / "scipy-special.gparray.xml").write_bytes(junit([
        (SP, "test_basic[gparray]", "passed", ""), (SP, "test_only_here[gparray]", "xfailed", "known")]))
    (tmp_path / "scipy-special.cupy.xml").write_bytes(junit([(SP, "test_basic[cupy]", "passed", "")]))
    return tmp_path


def test_file_of_classname():
    f = summarize.file_of_classname
    assert f(SK) == ("sklearn/utils/tests/test_array_api.py", [])
    assert f(SP) == ("scipy/special/tests/test_logsumexp.py", ["TestLogSumExp"])
    assert f("......opt.venv.lib.python3.12.site-packages.sklearn.tests.test_common")[0] == "sklearn/tests/test_common.py"
    assert f("usr.lib.python3.dist-packages.scipy.fft.tests.test_basic.TestFFT")[0] == "scipy/fft/tests/test_basic.py"


def test_normalize_nodeid_takes_out_backend_names():
    n = lambda s: common.normalize_nodeid(s, ["gparray", "cupy"])  # noqa: E731
    assert n("f.py::t[gparray-None-None]") == n("f.py::t[cupy-None-None]") == "f.py::t[{xp}-None-None]"
    assert n("f.py::t[E()-check(array_namespace=gparray,device_name=None)]").endswith("array_namespace={xp},device_name=None)]")
    assert n("f.py::t[NamespaceAndDevice(xp='cupy', device=None)]") == "f.py::t[NamespaceAndDevice(xp='{xp}', device=None)]"
    assert n("f.py::t[m-numpy to gparray]") == "f.py::t[m-numpy to {xp}]"
    # a longer identifier or a dotted module path keeps its name
    assert n("f.py::t[cupyx]") == "f.py::t[cupyx]"
    assert n("f.py::t[sklearn.externals.array_api_compat.cupy]") == "f.py::t[sklearn.externals.array_api_compat.cupy]"


def test_shards_pair_the_backends_and_cover_everything():
    assert common.parse_shard("") is None
    assert common.parse_shard("2/3") == (1, 3)
    for bad in ("0/3", "4/3", "x", "1-3"):
        with pytest.raises(ValueError):
            common.parse_shard(bad)
    ids = [f"f.py::t{i}[{{xp}}-None]" for i in range(200)]
    for i in ids:
        assert (common.shard_of(i.format(xp="gparray"), ["gparray", "cupy"], 3)
                == common.shard_of(i.format(xp="cupy"), ["gparray", "cupy"], 3))
    assert {common.shard_of(i, [], 3) for i in ids} == {0, 1, 2}


def test_read_junit_outcomes_and_messages():
    tests = summarize.read_junit(junit(sklearn_cases("gparray", GP)))
    assert tests["sklearn/utils/tests/test_array_api.py::test_b[gparray-None-None]"] == ("failed", "failed msg 1")
    assert tests["sklearn/utils/tests/test_array_api.py::test_mixed[numpy to gparray]"] == ("error", "error msg 5")
    assert summarize.counts(tests) == {"passed": 2, "failed": 2, "error": 1, "skipped": 1, "xfailed": 0, "xpassed": 0}
    assert summarize.triple(summarize.counts(tests)) == (2, 3, 1)


def test_read_log_plain_and_xdist_lines():
    log = "\n".join([
        "../venv/lib/python3.12/site-packages/sklearn/a/tests/test_x.py::test_p[gparray-None-None] PASSED [ 10%]",
        "sklearn/a/tests/test_x.py::test_s[gparray] SKIPPED (no float64) [ 20%]",
        "[gw3] [ 30%] FAILED ../v/site-packages/sklearn/a/tests/test_x.py::test_m[accuracy_score-numpy to gparray] ",
        "[gw0] [ 40%] XFAIL sklearn/a/tests/test_x.py::TestK::test_k[gparray]",
        "FAILED sklearn/a/tests/test_x.py::test_m - AssertionError",  # the -rfE summary: not a result line
        "collected 4 items",
    ])
    tests = summarize.read_log(log)
    assert tests == {
        "sklearn/a/tests/test_x.py::test_p[gparray-None-None]": ("passed", ""),
        "sklearn/a/tests/test_x.py::test_s[gparray]": ("skipped", ""),
        "sklearn/a/tests/test_x.py::test_m[accuracy_score-numpy to gparray]": ("failed", ""),
        "sklearn/a/tests/test_x.py::TestK::test_k[gparray]": ("xfailed", ""),
    }


def test_read_json_report():
    data = json.dumps({"tests": [
        {"nodeid": "../v/site-packages/scipy/fft/tests/test_basic.py::test_a[gparray]", "outcome": "passed"},
        {"nodeid": "scipy/fft/tests/test_basic.py::test_b[gparray]", "outcome": "failed",
         "call": {"crash": {"message": "TypeError: boom\nmore"}}},
    ]})
    assert summarize.read_json_report(data) == {
        "scipy/fft/tests/test_basic.py::test_a[gparray]": ("passed", ""),
        "scipy/fft/tests/test_basic.py::test_b[gparray]": ("failed", "TypeError: boom"),
    }


def test_compare_sorts_the_differences(results):
    runs = summarize.load([str(results)])
    assert set(runs) == {("sklearn", "gparray"), ("sklearn", "cupy"), ("scipy-special", "gparray"),
                         ("scipy-special", "cupy")}
    s = summarize.summarize(runs)
    cmp_ = s["parts"]["sklearn"]["compare"]
    key = "sklearn/utils/tests/test_array_api.py::{}"
    assert [t[0] for t in cmp_["subject_only_fails"]] == [key.format("test_b[{xp}-None-None]"),
                                                          key.format("test_mixed[numpy to {xp}]")]
    assert cmp_["subject_only_fails"][0][1:] == ("failed msg 1", "passed")
    assert [t[0] for t in cmp_["both_fail"]] == [key.format("test_c[{xp}-None-None]")]
    assert [t[0] for t in cmp_["reference_only_fails"]] == [key.format("test_d[{xp}-None-None]")]
    assert [t[0] for t in cmp_["subject_skips_reference_passes"]] == [key.format("test_e[{xp}-None-None]")]
    sp = s["parts"]["scipy-special"]["compare"]
    assert sp["only_in_subject"] == ["scipy/special/tests/test_logsumexp.py::TestLogSumExp::test_only_here[{xp}]"]
    assert s["parts"]["sklearn"]["backends"]["gparray"]["rc"] == "rc=1 seconds=10 cap=200"
    assert dict(s["parts"]["sklearn"]["top_messages"]) == {"failed msg 1": 1, "failed msg 2": 1, "error msg 5": 1}


def test_markdown_table_and_main(results, tmp_path, capsys):
    md, js = tmp_path / "s.md", tmp_path / "s.json"
    assert summarize.main([str(results), "--md", str(md), "--json", str(js)]) == 0
    text = md.read_text()
    assert "| test file | gparray passed / failed / skipped | cupy passed / failed / skipped |" in text
    assert "| sklearn/utils/tests/test_array_api.py | 2 / 3 / 1 | 4 / 2 / 0 |" in text
    assert "| **total** | **2 / 3 / 1** | **4 / 2 / 0** |" in text
    assert "### Fail with gparray, not with cupy: 2" in text
    assert "| scipy/special/tests/test_logsumexp.py | 1 / 0 / 1 | 1 / 0 / 0 |" in text
    assert json.loads(js.read_text())["parts"]["sklearn"]["backends"]["cupy"]["counts"]["passed"] == 4
    capsys.readouterr()
    assert summarize.main([str(results), "--brief"]) == 0
    out = capsys.readouterr().out
    assert "fail with gparray only: 2, with both: 1, with cupy only: 1" in out
    assert "| test file |" not in out


def test_xml_wins_and_log_is_the_fallback(tmp_path):
    log = "sklearn/utils/tests/test_array_api.py::test_a[gparray-None-None] PASSED [ 50%]\n"
    (tmp_path / "p.gparray.log").write_text(log + "sklearn/utils/tests/test_array_api.py::test_z[gparray] FAILED\n")
    (tmp_path / "p.gparray.xml").write_bytes(junit([(SK, "test_a[gparray-None-None]", "passed", "")]))
    assert summarize.load([str(tmp_path)])[("p", "gparray")]["source"] == "xml"
    # a truncated XML (the run was killed while writing it): the log is read instead
    (tmp_path / "p.gparray.xml").write_bytes(junit([(SK, "test_a[gparray-None-None]", "passed", "")])[:60])
    run = summarize.load([str(tmp_path)])[("p", "gparray")]
    assert run["source"] == "log" and len(run["tests"]) == 2 and run["problems"]
    # no XML at all, log gzipped, 124 in the .rc: the markdown says the counts are partial
    (tmp_path / "p.gparray.xml").unlink()
    (tmp_path / "p.gparray.log").unlink()
    (tmp_path / "p.gparray.log.gz").write_bytes(gzip.compress(log.encode()))
    (tmp_path / "p.gparray.rc").write_text("rc=124 seconds=300 cap=300")
    s = summarize.summarize(summarize.load([str(tmp_path)]))
    assert s["parts"]["p"]["backends"]["gparray"]["counts"]["passed"] == 1
    assert "no XML: the run was cut short" in summarize.markdown(s)
    assert "[rc=124 seconds=300 cap=300]" in summarize.brief(s)


def test_reads_run_sh_archives(results, tmp_path):
    archive = tmp_path / "eco-results.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for p in sorted(results.iterdir()):
            tar.add(p, arcname=f"./{p.name}")
        info = tarfile.TarInfo("./probe.gparray.txt")  # not a result file: ignored
        tar.addfile(info, io.BytesIO(b""))
    assert summarize.load([str(archive)]).keys() == summarize.load([str(results)]).keys()


def test_no_results_is_an_error(tmp_path, capsys):
    assert summarize.main([str(tmp_path)]) == 1
    assert "no <part>.<backend>" in capsys.readouterr().out


def test_shards_are_merged_into_their_part(tmp_path):
    (tmp_path / "scipy-fft_1of2.gparray.xml").write_bytes(junit([(SP, "test_a[gparray]", "passed", "")]))
    (tmp_path / "scipy-fft_2of2.gparray.xml").write_bytes(junit([(SP, "test_b[gparray]", "failed", "boom")]))
    (tmp_path / "scipy-fft_1of2.gparray.rc").write_text("rc=0 seconds=5 cap=100")
    (tmp_path / "scipy-fft_2of2.gparray.rc").write_text("rc=124 seconds=100 cap=100")
    runs = summarize.load([str(tmp_path)])
    assert list(runs) == [("scipy-fft", "gparray")]
    run = runs[("scipy-fft", "gparray")]
    assert len(run["tests"]) == 2 and run["source"] == "1of2: xml; 2of2: xml"
    assert run["rc"] == "1of2: rc=0 seconds=5 cap=100; 2of2: rc=124 seconds=100 cap=100"
    assert summarize.exit_status(run["rc"]) == 124
    assert summarize.exit_status("rc=0 x; rc=1 y") == 1 and summarize.exit_status(None) is None
    assert "cut short or interrupted" in summarize.markdown(summarize.summarize(runs))
