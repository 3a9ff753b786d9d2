"""The linear-algebra cases of bench/bench.py (the "linalg" group: ``--cases linalg``)."""
from __future__ import annotations

import bench_core as core
from bench_core import Case, NotAvailable, _rng, randn, same


def _spd(n):
    r = _rng(7).standard_normal((n, n), dtype=core.cp.float64)
    a = r @ r.T
    a += n * core.cp.eye(n, dtype=core.cp.float64)
    return a


def _linalg(name):
    """``<lib>.linalg.<name>``; a library without it is reported as missing (n/a), not as an
    error (several of gparray's linalg functions are still being written)."""
    def get(m):
        fn = getattr(getattr(m, "linalg", None), name, None)
        if fn is None:
            raise NotAvailable(f"missing: {m.__name__}.linalg.{name}")
        return fn
    return get


def _la_op(name, **kw):
    """The same linalg call in every library: ``<lib>.linalg.<name>(d["a"], [d["b"]], **kw)``
    (torch's keyword spellings: dim for axis)."""
    get = _linalg(name)

    def f(m, d):
        args = (d["a"], d["b"]) if "b" in d else (d["a"],)
        kws = dict(kw)
        if m is core.torch and "axis" in kws:
            kws["dim"] = kws.pop("axis")
        if m is core.cp and name == "vector_norm":       # CuPy has no vector_norm: norm is the 2-norm
            return core.cp.linalg.norm(*args, **kws)
        return get(m)(*args, **kws)
    return f


def _matmul_ab(m, d):
    return d["a"] @ d["b"]


def _gram(m, d):
    return d["x"].T @ d["x"]


def _general(n, seed=8, dtype="float64"):
    """A well-conditioned general (n, n) matrix: standard normal plus n on the diagonal."""
    a = _rng(seed).standard_normal((n, n), dtype=getattr(core.cp, dtype))
    a += n * core.cp.eye(n, dtype=a.dtype)
    return a


def _symmetric(n, seed=9):
    r = _rng(seed).standard_normal((n, n), dtype=core.cp.float64)
    return (r + r.T) / 2


def _small_inverses(batch, n, seed=10):
    """``batch`` well-conditioned (n, n) float32 matrices."""
    a = _rng(seed).standard_normal((batch, n, n), dtype=core.cp.float32)
    a += n * core.cp.eye(n, dtype=core.cp.float32)
    return a


LA_N = 4096
GRAM = (1 << 18, 128)                  # X.T @ X: X (2^18, 128) float64
BATCHED = (4096, 64, 64)               # batched a @ b float32
NORM_N = 8192                          # vector_norm axis 1 of (8192, 8192) float32


def linalg_cases():
    """Linear algebra (the "linalg" group: ``--cases linalg``): cuBLAS and cuSOLVER behind
    each library. Products and factorizations in TFLOP/s (nominal flop counts), the norm in
    GB/s against the copy ceiling. float32 is full precision everywhere: PyTorch with
    ``allow_tf32 = False`` (set at import), CuPy without ``CUPY_TF32``, gparray without
    ``GPARRAY_ALLOW_TF32`` (both recorded in the run's environment)."""
    g = "linalg"
    n = LA_N
    solve_flops = 2 * n**3 / 3 + 2 * n**2
    bm, bk = BATCHED[0], BATCHED[1]
    return [
        Case("matmul 8192^2", "matmul8192",
             lambda: {"a": randn(8192 * 8192).reshape(8192, 8192),
                      "b": randn(8192 * 8192, seed=2).reshape(8192, 8192)},
             same(lambda m, d: m.matmul(d["a"], d["b"])), flops=2 * 8192**3,
             target=("best", 1 / 0.98, ">= 0.98x cuBLAS throughput"), group=g),
        Case("a @ b 4096^2 float64", "matmul4096_f64",
             lambda: {"a": randn(n * n, "float64").reshape(n, n), "b": randn(n * n, "float64", seed=2).reshape(n, n)},
             same(_matmul_ab), flops=2 * n**3, target=("best", 1.02, "<= 1.02x best"), group=g),
        Case("a @ b batched (4096, 64, 64) float32", "matmul_batched_4096x64",
             lambda: {"a": randn(bm * bk * bk).reshape(BATCHED), "b": randn(bm * bk * bk, seed=2).reshape(BATCHED)},
             same(_matmul_ab), flops=2 * bm * bk**3, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("X.T @ X, X (2^18, 128) float64", "gram_2e18x128_f64",
             lambda: {"x": randn(GRAM[0] * GRAM[1], "float64").reshape(GRAM)},
             same(_gram), flops=2 * GRAM[0] * GRAM[1] ** 2, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("cholesky 4096 f64", "cholesky4096_f64", lambda: {"a": _spd(4096)}, same(_la_op("cholesky")),
             flops=4096**3 / 3, target=("torch", 1.0, "<= 1.0x PyTorch"), group=g),
        Case("solve 4096 float64, x2 (4096,)", "solve4096_f64_vec",
             lambda: {"a": _general(n), "b": randn(n, "float64", seed=3)},
             same(_la_op("solve")), flops=solve_flops, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("solve 4096 float64, x2 (4096, 1)", "solve4096_f64_col",
             lambda: {"a": _general(n), "b": randn(n, "float64", seed=3).reshape(n, 1)},
             same(_la_op("solve")), flops=solve_flops, target=("best", 1.0, "<= 1.0x best"), group=g),
        # the matrices read, the inverses written
        Case("inv (65536, 4, 4) float32", "inv_65536x4x4_f32", lambda: {"a": _small_inverses(65536, 4)},
             same(_la_op("inv")), nbytes=2 * 4 * 65536 * 16, target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("svd (4096, 256) float32, full_matrices=False", "svd4096x256_f32",
             lambda: {"a": randn(4096 * 256, seed=4).reshape(4096, 256)},
             same(_la_op("svd", full_matrices=False)), target=("best", 1.0, "<= 1.0x best"), group=g),
        Case("eigh 2048 float64", "eigh2048_f64", lambda: {"a": _symmetric(2048)}, same(_la_op("eigh")),
             target=("best", 1.0, "<= 1.0x best"), group=g),
        # x read, the 8192 norms written
        Case("vector_norm axis=1 (8192, 8192) float32", "vector_norm_axis1",
             lambda: {"a": randn(NORM_N * NORM_N, seed=5).reshape(NORM_N, NORM_N)},
             same(_la_op("vector_norm", axis=1)), nbytes=4 * (NORM_N * NORM_N + NORM_N),
             target=("pct_copy", 90.0, ">= 90% of copy bandwidth"), group=g),
    ]
