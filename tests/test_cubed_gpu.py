"""GPU tier: cubed with gparray as its backend array namespace, over arrays several times
larger than the memory cubed allows a task.

cubed (https://github.com/cubed-dev/cubed) runs chunked array computations with bounded
memory: every task reads chunks from Zarr storage, computes with the backend namespace and
writes its chunks back, and a plan whose projected memory per task exceeds the Spec's
``allowed_mem`` is refused before it runs. The backend is named by the environment variable
``CUBED_BACKEND_ARRAY_API_MODULE``, read once when cubed is imported (module
``cubed.backend_array_api``); chunks come from storage as NumPy arrays and go to the backend
through ``xp.asarray``, results go back through ``numpy.asarray`` (a device-to-host copy).

Inputs here are Zarr arrays of 1024 x 1024 float64 (8 MiB) in 128 x 128 chunks, with
``allowed_mem`` 1 MB: each input is 8 times what one task may hold. The tests compute a
chunked mean (over an axis and over everything), a matmul, an elementwise chain and
cubed's nanmean (gparray's ``nansum`` in the chunks), with cubed's threads executor and
with its Dask executor on an in-process ``distributed.LocalCluster`` (threads, no network;
the executor's ``compute_kwargs`` are the cluster's arguments), and compare with NumPy.

Dask serializes the task graph even in-process; cubed holds Python scalars of expressions
(``2.0 * a``) as 0-d backend arrays in that graph, so that case needs gparray Arrays to
pickle (``Array.__reduce__``: a host copy, uploaded again on unpickling); it is skipped,
saying so, on a gparray without it. cubed moves every chunk it writes to storage through
``numpy.asarray``: the tests run under the host conversion mode "allow" whatever
``GPARRAY_HOST_CONVERSION`` says (under "raise" cubed cannot store a chunk).

Skipped, with the reason, when cubed (or ``distributed``, for the Dask tests) is not
installed: ``python3 tools/test_site.py`` installs the carried wheels (.vendor/cubed-wheels).
"""
import importlib.util
import os
import sys

import numpy as np
import pytest

import gparray as xp

BACKEND = "gparray"          # the value of CUBED_BACKEND_ARRAY_API_MODULE
N, CHUNK = 1024, 128         # inputs N x N (and N x N/4) float64 in CHUNK x CHUNK chunks
ALLOWED_MEM = 1_000_000      # bytes a task may use: 1/8 of an 8 MiB input

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("cubed") is None,
                       reason="cubed is not installed (python3 tools/test_site.py installs .vendor/cubed-wheels)"),
]
needs_distributed = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="dask.distributed is not installed (python3 tools/test_site.py installs .vendor/cubed-wheels)")

# ThreadsExecutor() sets these for the whole process; the tests put them back
_EXECUTOR_ENV = ("MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "OMP_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


@pytest.fixture(scope="module")
def cubed():
    """cubed, imported with gparray as its backend (the variable is set while the module's
    tests run)."""
    key = "CUBED_BACKEND_ARRAY_API_MODULE"
    old = os.environ.get(key)
    os.environ[key] = BACKEND
    try:
        import cubed
        import cubed.array_api  # noqa: F401
        from cubed import backend_array_api

        if backend_array_api.namespace is not xp:
            pytest.fail(f"cubed's backend is {backend_array_api.namespace.__name__!r}, not gparray: cubed was "
                        f"imported earlier in this process without {key}={BACKEND}")
        yield cubed
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Zarr arrays on disk and their NumPy values: a, b (N x N), c (N x N/4), n (a with NaNs)."""
    import zarr

    folder = tmp_path_factory.mktemp("cubed-inputs")
    rng = np.random.default_rng(16)
    host = {"a": rng.standard_normal((N, N)), "b": rng.standard_normal((N, N)),
            "c": rng.standard_normal((N, N // 4))}
    n = host["a"].copy()
    n[rng.random(n.shape) < 0.2] = np.nan
    host["n"] = n
    for name, values in host.items():
        z = zarr.create_array(str(folder / f"{name}.zarr"), shape=values.shape, dtype=values.dtype,
                              chunks=(CHUNK, CHUNK))
        z[...] = values
    return folder, host


def workload(cubed, folder, host, spec, scalars: bool):
    """{name: (cubed array, NumPy reference)}."""
    cxp = cubed.array_api
    a, b, c, n = (cubed.from_zarr(str(folder / f"{k}.zarr"), spec=spec) for k in "abcn")
    A, B, C, Nn = host["a"], host["b"], host["c"], host["n"]
    assert A.nbytes >= 8 * spec.allowed_mem and a.chunksize == (CHUNK, CHUNK)
    work = {
        "mean over axis 0": (cxp.mean(a, axis=0), A.mean(axis=0)),
        "mean": (cxp.mean(a), A.mean()),
        "matmul": (cxp.matmul(a, c), A @ C),
        "elementwise chain": (cxp.exp(cxp.sin(a)) + cxp.abs(b) * a - cxp.sqrt(cxp.abs(a) + cxp.abs(b)),
                              np.exp(np.sin(A)) + np.abs(B) * A - np.sqrt(np.abs(A) + np.abs(B))),
        "nanmean over axis 1": (cubed.nanmean(n, axis=1), np.nanmean(Nn, axis=1)),
    }
    if scalars:
        work["chain with Python scalars"] = ((cxp.sin(a) * 2.0 + b) / (1.0 + cxp.abs(b)) - 0.5,
                                             (np.sin(A) * 2.0 + B) / (1.0 + np.abs(B)) - 0.5)
    return work


def run_and_check(cubed, folder, host, work_dir, executor, scalars, **compute_kwargs):
    spec = cubed.Spec(work_dir=str(work_dir), allowed_mem=ALLOWED_MEM, reserved_mem=0)
    work = workload(cubed, folder, host, spec, scalars)
    with xp.cuda.host_conversion("allow"):   # cubed writes chunks through numpy.asarray
        results = cubed.compute(*(arr for arr, _ in work.values()), executor=executor, **compute_kwargs)
    assert len(results) == len(work)
    for (name, (arr, expected)), got in zip(work.items(), results):
        assert isinstance(got, xp.Array), (name, type(got))
        assert got.shape == expected.shape == arr.shape and got.dtype == xp.float64, (name, got.shape, got.dtype)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-10, err_msg=name)
    # the intermediate results went through Zarr storage in the work_dir
    assert any(work_dir.rglob("zarr.json")), sorted(p.name for p in work_dir.rglob("*"))[:20]


@pytest.fixture
def threads_executor(cubed, monkeypatch):
    """cubed's threads executor (4 threads); the environment it changes is restored after."""
    for k in _EXECUTOR_ENV:
        if k in os.environ:
            monkeypatch.setenv(k, os.environ[k])
        else:
            monkeypatch.delenv(k, raising=False)
    from cubed.runtime.executors.local import ThreadsExecutor

    return ThreadsExecutor(max_workers=4)


def test_threads_executor(cubed, inputs, tmp_path, threads_executor):
    folder, host = inputs
    run_and_check(cubed, folder, host, tmp_path / "work", threads_executor, scalars=True)


def _dask_cluster_kwargs():
    # an in-process cluster: worker threads, inproc:// transport, no dashboard
    return dict(processes=False, n_workers=1, threads_per_worker=4, dashboard_address=None)


@needs_distributed
def test_dask_local_cluster_executor(cubed, inputs, tmp_path):
    from cubed.runtime.executors.dask import DaskExecutor

    folder, host = inputs
    run_and_check(cubed, folder, host, tmp_path / "work", DaskExecutor(), scalars=False,
                  compute_kwargs=_dask_cluster_kwargs())


@needs_distributed
@pytest.mark.skipif(not any(k in vars(xp.Array) for k in ("__reduce__", "__reduce_ex__")),
                    reason="gparray Arrays do not pickle yet (Array.__reduce__): Dask pickles the task graph, "
                           "where cubed holds Python scalars as 0-d gparray arrays")
def test_dask_executor_with_python_scalars(cubed, inputs, tmp_path):
    from cubed.runtime.executors.dask import DaskExecutor

    folder, host = inputs
    run_and_check(cubed, folder, host, tmp_path / "work", DaskExecutor(), scalars=True,
                  compute_kwargs=_dask_cluster_kwargs())


def test_a_plan_over_allowed_mem_is_refused(cubed, inputs, tmp_path, threads_executor):
    # the bound is real: with less memory than one task needs, cubed refuses the plan
    folder, host = inputs
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem=200_000, reserved_mem=0)
    a = cubed.from_zarr(str(folder / "a.zarr"), spec=spec)
    with pytest.raises(ValueError, match="exceeds allowed_mem"):
        cubed.array_api.exp(a).compute(executor=threads_executor)
    assert sys.modules["cubed"].backend_array_api.namespace is xp
