"""pytest plugin: gparray as an array namespace of scikit-learn's array-API tests.

Load it with ``-p gp_sklearn_plugin`` (``ecosystem/`` on ``sys.path``), e.g.::

    SCIPY_ARRAY_API=1 GP_ECO_BACKENDS=gparray PYTHONPATH=.:ecosystem \
        python -m pytest -p gp_sklearn_plugin --pyargs sklearn -k array_api

scikit-learn (1.9) parametrizes its array-API tests at import time of the test modules with
the generators of ``sklearn.utils._array_api``:

* ``yield_namespaces()``: the namespace names (numpy, array_api_strict, cupy, torch, dpnp);
* ``yield_namespace_device_dtype_combinations()``: (name, device, dtype) triples; it calls
  ``yield_namespaces`` through the module's globals, and any name it has no special case
  for gives ``(name, None, None)`` (CuPy's case too);
* ``yield_mixed_namespace_input_permutations()``: pairs of (namespace, device) for the
  mixed-input checks (X on one, y/sample_weight on the other).

A test then calls ``sklearn.utils._testing._array_api_for_tests(name, device, dtype)``, which
imports the module by that name, makes ``xp.asarray(1)`` and takes its namespace through
the array-api-compat copy vendored in ``sklearn.externals``; for gparray that namespace is
``gparray`` itself (``Array.__array_namespace__``), and the device is None (the default).
So a new name is enough; no scikit-learn file is edited. This plugin replaces the first and
third generators in ``sklearn.utils._array_api`` (and in any already imported module that
took them by name) when it is imported, i.e. before any test module is collected:

* the namespaces are scikit-learn's own plus ``gparray``, narrowed to ``GP_ECO_BACKENDS``
  (comma or space separated) when that is set;
* the mixed permutations are, for every selected non-NumPy namespace B: B to numpy, numpy
  to B, and array_api_strict (device1) to B; scikit-learn's own pairs only when
  ``GP_ECO_BACKENDS`` is unset.

It also sets ``SCIPY_ARRAY_API=1`` when unset (scikit-learn skips every array-API test
without it, and SciPy reads it once, at import). Without scikit-learn it does nothing;
``STATE`` says what happened.
"""
import os
import sys

from gp_eco_common import GPARRAY, choose, selected_backends

STATE = {"installed": False, "absent": False, "tried": False, "reason": "not tried"}
_ORIGINAL = {}


def _namespace_names(include_numpy_namespaces, orig, numpy_names):
    names = choose(orig(include_numpy_namespaces=include_numpy_namespaces), selected_backends())
    if not include_numpy_namespaces:
        names = [n for n in names if n not in numpy_names]
    return names


def _rebind(replacements):
    """Swap each key function for its value in ``sklearn.utils._array_api`` and in every loaded
    sklearn module that imported it by name (matched by identity)."""
    by_id = {id(old): (old, new) for old, new in replacements.items()}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "sklearn" or name.startswith("sklearn.")):
            continue
        for attr, value in list(vars(mod).items()):
            hit = by_id.get(id(value))
            if hit is not None and hit[0] is value:
                setattr(mod, attr, hit[1])


def install():
    """Patch scikit-learn's generators (once). Returns True when they are patched."""
    if STATE["tried"]:
        return STATE["installed"]
    STATE["tried"] = True
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    try:
        import sklearn.utils._array_api as aa
    except ImportError as exc:
        STATE.update(absent=True, reason=f"scikit-learn is not importable: {exc}")
        return False
    orig_ns = aa.yield_namespaces
    orig_mixed = aa.yield_mixed_namespace_input_permutations
    numpy_names = set(getattr(aa, "_NUMPY_NAMESPACE_NAMES", {"numpy"}))
    pair = aa.NamespaceAndDevice

    def yield_namespaces(include_numpy_namespaces=True):
        yield from _namespace_names(include_numpy_namespaces, orig_ns, numpy_names)

    def yield_mixed_namespace_input_permutations():
        selection = selected_backends()
        if selection is None:
            yield from orig_mixed()
        for name in choose([], selection) if selection is not None else [GPARRAY]:
            if name in numpy_names:
                continue
            yield pair(name, None), pair("numpy", None), f"{name} to numpy"
            yield pair("numpy", None), pair(name, None), f"numpy to {name}"
            if name != "array_api_strict":
                yield pair("array_api_strict", "device1"), pair(name, None), f"array_api_strict to {name}"

    yield_namespaces.__doc__ = orig_ns.__doc__
    yield_mixed_namespace_input_permutations.__doc__ = orig_mixed.__doc__
    _ORIGINAL.update(yield_namespaces=orig_ns, yield_mixed_namespace_input_permutations=orig_mixed)
    _rebind({orig_ns: yield_namespaces, orig_mixed: yield_mixed_namespace_input_permutations})
    combos = list(aa.yield_namespace_device_dtype_combinations())
    wanted = _namespace_names(True, orig_ns, numpy_names)
    missing = [n for n in wanted if n not in {c[0] for c in combos}]
    if missing:  # scikit-learn stopped going through yield_namespaces: say so loudly
        STATE["reason"] = (f"yield_namespace_device_dtype_combinations() lacks {missing} after "
                           "patching yield_namespaces; update ecosystem/gp_sklearn_plugin.py")
        return False
    STATE.update(installed=True, reason=f"namespaces {wanted}")
    return True


def uninstall():
    """Undo ``install`` (for tests)."""
    if not STATE["installed"]:
        return
    import sklearn.utils._array_api as aa

    _rebind({aa.yield_namespaces: _ORIGINAL["yield_namespaces"],
             aa.yield_mixed_namespace_input_permutations: _ORIGINAL["yield_mixed_namespace_input_permutations"]})
    STATE.update(installed=False, tried=False, reason="uninstalled")


def pytest_configure(config):
    if not install() and not STATE["absent"]:
        import pytest

        raise pytest.UsageError(f"gp_sklearn_plugin: {STATE['reason']}")


def pytest_report_header(config):
    return f"gp_sklearn_plugin: {'active' if STATE['installed'] else 'INACTIVE'} ({STATE['reason']})"


install()
