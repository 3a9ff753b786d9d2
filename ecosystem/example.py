#!/usr/bin/env python3
"""A worked example: scikit-learn and SciPy on gparray arrays, checked against NumPy and timed
against the same code on NumPy and on CuPy.

    python3 ecosystem/example.py                       # 200k x 100 float32, every backend found
    python3 ecosystem/example.py --n 20000 --dtype float64 --backends numpy,gparray
    python3 ecosystem/example.py --json out.json --md out.md

The example is four pieces of ordinary user code, run unchanged on each backend's arrays:

* ``pipeline-ridge``: ``make_pipeline(StandardScaler(), PCA(20), Ridge(solver="svd"))``, fit
  on the training rows, then ``predict`` on the test rows, under
  ``sklearn.config_context(array_api_dispatch=True)``;
* ``pipeline-logistic``: the same with ``LogisticRegression()`` (lbfgs) on a binary target,
  then ``predict_proba``;
* ``logsumexp``: ``scipy.special.logsumexp(X, axis=1)`` and ``zscore``:
  ``scipy.stats.zscore(X, axis=0)``, with ``SCIPY_ARRAY_API=1`` (set here before SciPy is
  imported, unless the environment already sets it).

For every backend (``numpy``, ``gparray``, ``cupy``; one that cannot be imported or has no
GPU is reported and left out) each piece runs once as warm-up (its time is kept as "first",
which includes gparray's kernel compilation when the kernel cache is cold), then ``--repeat``
times; a run is timed by the wall clock from the call to the end of a device synchronization
(end-to-end user code: host work, launches, and transfers the libraries make on their own).
The table gives the median. The results of the last run are copied to the host explicitly
(``numpy.from_dlpack(x, device="cpu")`` for gparray, ``.get()`` for CuPy: nothing that the
host conversion policy refuses) and compared with NumPy's (``numpy.testing.assert_allclose``
with tolerances of the dtype).

For gparray it also counts the implicit host conversions of one more run of each piece:
``numpy.asarray(x)`` on a gparray Array inside scikit-learn or SciPy, counted as
``gparray.HostConversionWarning`` under ``gparray.cuda.host_conversion("warn")``: what a
``GPARRAY_HOST_CONVERSION=raise`` policy would refuse there. The timed runs use the mode of
the environment (``allow`` by default); under ``raise`` a piece that converts fails, and is
reported so.

Exit status 0 when every piece ran on every backend run and matched NumPy (and every backend
named by ``--backends`` could run), else 1.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

BACKENDS = ("numpy", "gparray", "cupy")
N_COMPONENTS = 20


# ---------------------------------------------------------------------------- data
def make_data(n: int, d: int, dtype="float32", n_test: int | None = None, seed: int = 0) -> dict:
    """NumPy data of the example: ``X`` (n, d) with a low-rank structure (10 latent factors,
    noise, features of different offsets and scales), a regression target ``y``, its binary
    version ``y_class`` (above the median: int64), ``X_test`` (n_test rows, default n // 4)
    and their target ``y_test`` (for the summary only: not an input, see INPUTS)."""
    if n_test is None:
        n_test = max(n // 4, 1)
    rng = np.random.default_rng(seed)
    k = min(10, d)
    rows = n + n_test
    z = rng.standard_normal((rows, k))
    w = rng.standard_normal((k, d))
    x = (z @ w + 0.5 * rng.standard_normal((rows, d)) + rng.uniform(-5, 5, d)) * rng.uniform(0.5, 20, d)
    beta = rng.standard_normal(d) / d
    y = x @ beta + rng.standard_normal(rows)
    x = x.astype(dtype)
    y = y.astype(dtype)
    y_train = y[:n]
    return {"X": np.ascontiguousarray(x[:n]), "y": y_train,
            "y_class": (y_train > np.median(y_train)).astype(np.int64),
            "X_test": np.ascontiguousarray(x[n:]), "y_test": y[n:]}


INPUTS = ("X", "y", "y_class", "X_test")   # what each backend gets (uploaded before timing)


# ---------------------------------------------------------------------------- backends
class Backend:
    """One array library: ``put`` (a NumPy array onto it), ``sync`` (wait for its device),
    ``to_numpy`` (an explicit copy of one of its arrays to the host)."""

    def __init__(self, name, xp, put, sync, to_numpy, version=""):
        self.name, self.xp, self.put, self.sync, self.to_numpy, self.version = name, xp, put, sync, to_numpy, version

    def __repr__(self):
        return f"Backend({self.name})"


def load_backend(name: str) -> Backend:
    """The backend ``name``; ImportError or RuntimeError (with the reason) when it cannot run
    here (not installed, no GPU)."""
    if name == "numpy":
        return Backend("numpy", np, np.asarray, lambda: None, np.asarray, np.__version__)
    if name == "gparray":
        import gparray

        if not gparray.cuda.has_cuda():
            raise RuntimeError("gparray: no CUDA device")

        def to_numpy(a):
            if isinstance(a, gparray.Array):
                return np.from_dlpack(a, device="cpu")   # explicit device-to-host copy
            return np.asarray(a)

        def put(a):
            return gparray.asarray(a)

        return Backend("gparray", gparray, put, gparray.cuda.synchronize, to_numpy, gparray.__version__)
    if name == "cupy":
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("cupy: no CUDA device")

        def to_numpy(a):
            return a.get() if isinstance(a, cupy.ndarray) else np.asarray(a)

        def sync():
            cupy.cuda.Device().synchronize()

        return Backend("cupy", cupy, cupy.asarray, sync, to_numpy, cupy.__version__)
    raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}")


# ---------------------------------------------------------------------------- the example
def _libs():
    """scikit-learn and SciPy, imported with SciPy's array API support on (SCIPY_ARRAY_API=1
    must be set before SciPy or scikit-learn is imported)."""
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    import scipy.special
    import scipy.stats
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {"sklearn": sklearn, "scipy.special": scipy.special, "scipy.stats": scipy.stats, "PCA": PCA,
            "Ridge": Ridge, "LogisticRegression": LogisticRegression, "make_pipeline": make_pipeline,
            "StandardScaler": StandardScaler}


def pipeline_ridge(data, libs):
    """StandardScaler -> PCA -> Ridge: fit, then predict on the test rows."""
    model = libs["make_pipeline"](libs["StandardScaler"](), libs["PCA"](n_components=N_COMPONENTS),
                                  libs["Ridge"](alpha=1.0, solver="svd"))
    with libs["sklearn"].config_context(array_api_dispatch=True):
        model.fit(data["X"], data["y"])
        pred = model.predict(data["X_test"])
    return {"prediction": pred, "explained_variance_ratio": model[1].explained_variance_ratio_}


def pipeline_logistic(data, libs):
    """StandardScaler -> PCA -> LogisticRegression (lbfgs): fit, then predict_proba."""
    model = libs["make_pipeline"](libs["StandardScaler"](), libs["PCA"](n_components=N_COMPONENTS),
                                  libs["LogisticRegression"](C=1.0, tol=1e-6, max_iter=1000))
    with libs["sklearn"].config_context(array_api_dispatch=True):
        model.fit(data["X"], data["y_class"])
        proba = model.predict_proba(data["X_test"])
    return {"proba": proba[:, 1]}


def special_logsumexp(data, libs):
    """scipy.special.logsumexp(X, axis=1)."""
    return {"logsumexp": libs["scipy.special"].logsumexp(data["X"], axis=1)}


def stats_zscore(data, libs):
    """scipy.stats.zscore(X, axis=0)."""
    return {"zscore": libs["scipy.stats"].zscore(data["X"], axis=0)}


# name, what the table calls it, function
CASES = (
    ("pipeline-ridge", "StandardScaler → PCA(20) → Ridge: fit + predict", pipeline_ridge),
    ("pipeline-logistic", "StandardScaler → PCA(20) → LogisticRegression: fit + predict_proba",
     pipeline_logistic),
    ("logsumexp", "scipy.special.logsumexp(X, axis=1)", special_logsumexp),
    ("zscore", "scipy.stats.zscore(X, axis=0)", stats_zscore),
)

# (rtol, atol as a fraction of the reference's largest magnitude) per output and dtype: the
# backends sum in other orders, and lbfgs stops at a slightly different point
TOLERANCES = {
    "float32": {"prediction": (1e-4, 1e-4), "explained_variance_ratio": (1e-3, 1e-4), "proba": (0, 5e-3),
                "logsumexp": (1e-5, 1e-6), "zscore": (1e-4, 1e-4)},
    "float64": {"prediction": (1e-8, 1e-9), "explained_variance_ratio": (1e-8, 1e-9), "proba": (0, 1e-4),
                "logsumexp": (1e-12, 1e-13), "zscore": (1e-9, 1e-10)},
}


def check(outputs: dict, reference: dict, dtype: str) -> dict:
    """Compare one backend's outputs (NumPy arrays) with NumPy's: AssertionError when one is
    not close; else {output: largest absolute difference}."""
    tol = TOLERANCES[str(np.dtype(dtype))]
    diffs = {}
    for key, ref in reference.items():
        got = np.asarray(outputs[key])
        ref = np.asarray(ref)
        assert got.shape == ref.shape, f"{key}: shape {got.shape}, NumPy's {ref.shape}"
        rtol, atol = tol[key]
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * scale, err_msg=key)
        diffs[key] = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    return diffs


def summary(name: str, out: dict, data: dict) -> str:
    """One line about NumPy's result of a piece (what the example computes)."""
    if name == "pipeline-ridge":
        y_test = data["y_test"]
        r2 = 1 - np.sum((out["prediction"] - y_test) ** 2) / np.sum((y_test - y_test.mean()) ** 2)
        return (f"R^2 on {len(y_test)} test rows {r2:.4f}; PCA keeps "
                f"{float(np.sum(out['explained_variance_ratio'])):.4f} of the variance")
    if name == "pipeline-logistic":
        y_test = data["y_test"]
        acc = np.mean((out["proba"] > 0.5) == (y_test > np.median(data["y"])))
        return f"test accuracy {acc:.4f}"
    if name == "logsumexp":
        return f"logsumexp of the first rows {np.array2string(out['logsumexp'][:3], precision=4)}"
    if name == "zscore":
        z = out["zscore"].astype(np.float64)
        return (f"columns' mean within {np.max(np.abs(z.mean(axis=0))):.1e} of 0, "
                f"std within {np.max(np.abs(z.std(axis=0) - 1)):.1e} of 1")
    return ""


# ---------------------------------------------------------------------------- timing
def time_runs(fn, sync, repeat: int, clock=time.perf_counter) -> dict:
    """Warm-up call (timed as "first"), then ``repeat`` timed calls, each up to the end of
    ``sync()``: {"first": s, "times": [s, ...], "median": s, "result": the last result}."""
    t0 = clock()
    result = fn()
    sync()
    first = clock() - t0
    times = []
    for _ in range(repeat):
        t0 = clock()
        result = fn()
        sync()
        times.append(clock() - t0)
    return {"first": first, "times": times, "median": statistics.median(times) if times else first,
            "result": result}


def count_host_conversions(backend: Backend, fn) -> int | None:
    """Implicit host conversions (HostConversionWarning under the "warn" mode) of one run of
    ``fn`` on gparray; None for the other backends."""
    if backend.name != "gparray":
        return None
    gp = backend.xp
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gp.HostConversionWarning)
        with gp.cuda.host_conversion("warn"):
            fn()
            backend.sync()
    return sum(1 for w in caught if issubclass(w.category, gp.HostConversionWarning))


# ---------------------------------------------------------------------------- report
def _ms(s):
    return "" if s is None else f"{s * 1e3:.1f}"


def markdown_table(results: dict, backends: list, cases=CASES) -> str:
    """The Markdown table: per piece, the median ms of each backend, gparray's ratio to NumPy
    and CuPy (gparray time / other time: lower is better), and gparray's implicit host
    conversions per call. ``results[case][backend]`` is a dict with "median" (seconds) or
    "error"; a backend not run is left out."""
    head = ["piece"] + [f"{b} ms" for b in backends]
    ratios = [b for b in ("numpy", "cupy") if b in backends and "gparray" in backends]
    head += [f"gparray / {b}" for b in ratios]
    if "gparray" in backends:
        head.append("gparray implicit host conversions")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, label, _fn in cases:
        row = results.get(name, {})
        cells = [label]
        for b in backends:
            r = row.get(b, {})
            cells.append("failed" if "error" in r else _ms(r.get("median")))
        for b in ratios:
            g, o = row.get("gparray", {}), row.get(b, {})
            good = g.get("median") and o.get("median") and "error" not in g and "error" not in o
            cells.append(f"{g['median'] / o['median']:.2f}x" if good else "")
        if "gparray" in backends:
            n = row.get("gparray", {}).get("host_copies")
            cells.append("" if n is None else str(n))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- main
def _first_line(exc) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200_000, help="training rows (default 200000)")
    p.add_argument("--d", type=int, default=100, help="features (default 100)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--repeat", type=int, default=5, help="timed runs after the warm-up (default 5)")
    p.add_argument("--backends", default=None,
                   help="comma-separated, from numpy, gparray, cupy (default: all three, each one that "
                        "cannot run here left out; named ones must run; numpy always runs: the reference)")
    p.add_argument("--cases", default=",".join(c[0] for c in CASES), help="comma-separated pieces")
    p.add_argument("--json", help="write every time and difference here")
    p.add_argument("--md", help="write the Markdown table here")
    args = p.parse_args(argv)
    args.required = args.backends is not None
    args.backends = [b.strip() for b in (args.backends or ",".join(BACKENDS)).split(",") if b.strip()]
    for b in args.backends:
        if b not in BACKENDS:
            p.error(f"unknown backend {b!r}; expected one of {', '.join(BACKENDS)}")
    if "numpy" not in args.backends:
        args.backends.insert(0, "numpy")
    known = {c[0] for c in CASES}
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in args.cases:
        if c not in known:
            p.error(f"unknown piece {c!r}; expected some of {', '.join(sorted(known))}")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    libs = _libs()
    host = make_data(args.n, args.d, args.dtype)
    cases = [c for c in CASES if c[0] in args.cases]

    print(f"example: {args.n} x {args.d} {args.dtype} ({len(host['X_test'])} test rows), {args.repeat} timed runs "
          f"after a warm-up; SCIPY_ARRAY_API={os.environ.get('SCIPY_ARRAY_API')}; "
          f"GPARRAY_HOST_CONVERSION={os.environ.get('GPARRAY_HOST_CONVERSION', '(unset)')}")
    print(f"numpy {np.__version__}, scikit-learn {libs['sklearn'].__version__}, "
          f"scipy {sys.modules['scipy'].__version__}, python {sys.version.split()[0]}")

    backends, skipped = [], {}
    ok = True
    for name in args.backends:
        try:
            backends.append(load_backend(name))
        except Exception as exc:  # noqa: BLE001 - reported, the backend is left out
            skipped[name] = f"{type(exc).__name__}: {exc}"
            print(f"backend {name}: not run ({skipped[name]})")
            ok = ok and not args.required
    for b in backends:
        print(f"backend {b.name} {b.version}")

    results = {c[0]: {} for c in cases}
    reference = {}
    for b in backends:
        data = {k: b.put(host[k]) for k in INPUTS}
        b.sync()
        for name, _label, fn in cases:
            r = results[name].setdefault(b.name, {})
            try:
                t = time_runs(lambda: fn(data, libs), b.sync, args.repeat)
                out = {k: b.to_numpy(v) for k, v in t.pop("result").items()}
                r.update(t)
                if b.name == "numpy":
                    reference[name] = out
                    print(f"[{name}] {summary(name, out, host)}")
                elif name not in reference:
                    raise RuntimeError("NumPy's run failed: nothing to compare with")
                else:
                    r["max_abs_diff"] = check(out, reference[name], args.dtype)
                    print(f"[{name}] {b.name}: matches NumPy (largest differences "
                          f"{', '.join(f'{k} {v:.2e}' for k, v in r['max_abs_diff'].items())})")
            except Exception as exc:  # noqa: BLE001 - reported; the exit status says it
                ok = False
                r["error"] = _first_line(exc)
                print(f"[{name}] {b.name}: FAILED {r['error']}")
                traceback.print_exc(file=sys.stderr)
            else:
                print(f"[{name}] {b.name}: median {_ms(r['median'])} ms of {args.repeat} "
                      f"(first {_ms(r['first'])} ms)")
            try:   # also after a failure: a "raise" mode fails where the count is not 0
                r["host_copies"] = count_host_conversions(b, lambda: fn(data, libs))
            except Exception as exc:  # noqa: BLE001
                r["host_copies_error"] = _first_line(exc)
            if r.get("host_copies") is not None:
                print(f"[{name}] {b.name}: implicit host conversions per call: {r['host_copies']}")
        del data

    names = [b.name for b in backends]
    table = markdown_table(results, names, cases)
    print()
    print(f"{args.n} x {args.d} {args.dtype}, median of {args.repeat} runs after a warm-up, wall clock with "
          "device synchronization (ms); ratios: gparray time / other time (lower is better)")
    print()
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "d": args.d, "dtype": args.dtype, "repeat": args.repeat,
                       "versions": {b.name: b.version for b in backends}, "skipped": skipped,
                       "results": results}, f, indent=1, default=float)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
