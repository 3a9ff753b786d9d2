"""CPU tier: the architecture document names only files and modules that exist (it is the
map of the layer folders; tools/check_doc_paths.py reads every path out of it), and the
README keeps the test command CI runs."""
import pathlib

from tools import check_doc_paths

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_architecture_paths_exist():
    assert check_doc_paths.check(ROOT / "docs" / "architecture.md") == []


def test_readme_names_the_test_command_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pytest" in readme and 'pip install -e ".[cuda13,test]"' in readme
    assert 'pip install -e ".[cuda13,test]"' in ci and "\npytest " in ci
