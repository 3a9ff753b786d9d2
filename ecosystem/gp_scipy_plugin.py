"""pytest plugin: gparray as an array API backend of SciPy's test suite.

Load it with ``-p gp_scipy_plugin`` (``ecosystem/`` on ``sys.path``), e.g.::

    SCIPY_ARRAY_API=1 GP_ECO_BACKENDS=gparray PYTHONPATH=.:ecosystem \
        python -m pytest -p gp_scipy_plugin --pyargs scipy.special -m array_api_backends

SciPy (1.18) runs a test on array API backends through the ``xp`` fixture of
``scipy/conftest.py``: ``@pytest.fixture(params=xp_available_backends)``, a list of
``pytest.param(module, id=name, marks=pytest.mark.array_api_backends)`` that the conftest
fills at import from the libraries it can import (numpy always; array_api_strict, torch,
cupy, jax.numpy, dask.array when ``SCIPY_ARRAY_API`` is set), then narrows to the JSON list
in ``SCIPY_ARRAY_API`` (what ``spin test -b cupy`` sets: ``'["cupy"]'``; a name it does not
know is an error there). The fixture body skips or xfails by the backend's ``__name__``
through the ``skip_xp_backends`` / ``xfail_xp_backends`` marks, whose names must be in
``xp_known_backends``; ``cpu_only=True`` skips every backend in
``xp_skip_cpu_only_backends`` (CuPy is there), ``eager_only=True`` those in
``xp_skip_eager_only_backends``. It then yields ``array_namespace(xp.empty(0))``, which for
a gparray array is ``gparray`` itself.

The fixture's parameters are fixed when the conftest is imported, so this plugin changes
them where pytest keeps them: in its own ``pytest_generate_tests`` (run before pytest's,
which parametrizes the fixtures), on the ``FixtureDef`` of ``xp`` defined in SciPy's conftest
(recognised by its module globals holding ``xp_available_backends``), once:

* ``gparray`` joins ``xp_known_backends`` and ``xp_skip_cpu_only_backends`` (the same
  treatment as CuPy: a GPU backend without a native SciPy; ``GP_ECO_SCIPY_CPU_ONLY=run``
  leaves it out of the latter, so cpu_only tests run on gparray too);
* the parameters become SciPy's own plus ``pytest.param(gparray, id="gparray",
  marks=array_api_backends)``, narrowed to ``GP_ECO_BACKENDS`` when that is set (so run
  with ``SCIPY_ARRAY_API=1`` and select here: CuPy as ``GP_ECO_BACKENDS=cupy``).

No SciPy file is edited. Without SciPy (or when gparray cannot be imported) it does nothing
to the parameters; ``STATE`` says what happened.
"""
import os
import warnings

import pytest

from gp_eco_common import GPARRAY, choose, selected_backends

os.environ.setdefault("SCIPY_ARRAY_API", "1")

STATE = {"patched": 0, "backends": None, "reason": "no test using the xp fixture collected yet"}
_DONE = set()  # id() of the FixtureDefs already rewritten


def _gparray_param():
    try:
        import gparray
    except ImportError as exc:  # pragma: no cover - gparray is the checkout under test
        warnings.warn(f"gp_scipy_plugin: gparray is not importable ({exc}); not added")
        return None
    return pytest.param(gparray, id=GPARRAY, marks=pytest.mark.array_api_backends)


def _pid(param):
    """A parameter's backend name: its pytest.param id, or the module's name."""
    return getattr(param, "id", None) or getattr(param, "__name__", str(param))


def rewrite_params(params, selection, extra_param):
    """SciPy's ``xp`` parameters plus ``extra_param`` (when not None and not already there),
    narrowed to ``selection`` (None: no narrowing), in ``choose``'s order."""
    by_id = {_pid(p): p for p in params}
    if extra_param is not None:
        by_id.setdefault(_pid(extra_param), extra_param)
    names = choose([_pid(p) for p in params], selection, extra=[_pid(extra_param)] if extra_param is not None else [])
    return tuple(by_id[n] for n in names if n in by_id)


def patch_fixturedef(fixturedef):
    """Rewrite SciPy's ``xp`` FixtureDef in place (once). Returns True when it was SciPy's."""
    if id(fixturedef) in _DONE:
        return True
    g = getattr(fixturedef.func, "__globals__", {})
    if "xp_available_backends" not in g or fixturedef.params is None:
        return False
    extra = _gparray_param()
    if extra is not None:
        g["xp_known_backends"].add(GPARRAY)
        if os.environ.get("GP_ECO_SCIPY_CPU_ONLY", "skip") != "run":
            g["xp_skip_cpu_only_backends"].add(GPARRAY)
    selection = selected_backends()
    new = rewrite_params(list(fixturedef.params), selection, extra)
    if selection is not None:
        absent = [n for n in selection if n not in {_pid(p) for p in new}]
        if absent:
            warnings.warn(f"gp_scipy_plugin: backends {absent} are not available to SciPy's conftest "
                          f"(it has {[_pid(p) for p in fixturedef.params]}); their tests will not run")
    fixturedef.params = new
    _DONE.add(id(fixturedef))
    STATE.update(patched=STATE["patched"] + 1, backends=[_pid(p) for p in new],
                 reason=f"xp fixture parameters: {[_pid(p) for p in new]}")
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    if "xp" not in metafunc.fixturenames:
        return
    for fixturedef in metafunc._arg2fixturedefs.get("xp", ()):
        patch_fixturedef(fixturedef)


def pytest_report_header(config):
    return (f"gp_scipy_plugin: GP_ECO_BACKENDS={os.environ.get('GP_ECO_BACKENDS', '<unset>')} "
            f"SCIPY_ARRAY_API={os.environ.get('SCIPY_ARRAY_API')}")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"gp_scipy_plugin: {STATE['reason']}")
