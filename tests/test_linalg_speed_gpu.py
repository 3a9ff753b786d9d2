"""GPU tier: the fast paths of the linear algebra (gparray/_array/_matmul.py's per-layout
matmul memo and its ctypes cuBLAS calls, gparray/_kernels/linalg_small.cu's small
inverses, cusolverDnXgesvdp, cholesky on the lower triangle) against NumPy, on the real
libraries: repeated products served from the memo, products on another stream and on
the pool workspace, inverses of every size the kernel takes over layouts with singular
matrices named by stack index, SVDs above GESVDP_MIN (tall, wide, square, values only)."""
import numpy as np
import pytest

import gparray as xp
from gparray._array import _matmul as _la
from gparray._engine import _blas, _solver
from _arrays import host

from test_linalg_gpu import close, hpd, rand, views, wide

pytestmark = pytest.mark.gpu
LA = xp.linalg


# ---------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_repeated_products_come_from_the_memo(dtype):
    cases = [((3, 4), (4, 5)), ((7, 2, 3), (3, 6)), ((64, 64), (64,)), ((5,), (5, 2)), ((2, 1, 4, 3), (3, 3, 2))]
    for s1, s2 in cases:
        a, b = rand(s1, dtype, 2), rand(s2, dtype, 3)
        gb = xp.asarray(b)
        layouts = [xp.asarray(a)]
        if a.ndim >= 2:         # the same values read transposed: another memo entry
            layouts.append(xp.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT)
        for ga in layouts:
            for _ in range(3):
                close(ga @ gb, wide(a) @ wide(b), dtype)
            assert (ga._shape, ga._strides, ga._dtype, gb._shape, gb._strides, gb._dtype) in _la._fast


def test_products_on_another_stream_and_the_pool_workspace():
    import cupy as cp

    a = xp.asarray(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7 - 3)
    want = host(a) @ host(a)
    a @ a
    s0 = cp.cuda.get_current_stream().ptr
    info = _blas.workspace_info(0, s0)
    assert info["products"] == "ctypes", info          # the pool workspace is kept by the products
    assert info["status"] == 0 and info["ptr"] is not None
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        outs = [a @ a for _ in range(5)]                # the memo's entry, on this stream
        assert _blas.workspace_info(0, st.ptr)["status"] == 0
    st.synchronize()
    for r in outs:
        np.testing.assert_array_equal(host(r), want)
    np.testing.assert_array_equal(host(a @ a), want)


# ---------------------------------------------------------------------------- inv (small kernel)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", range(1, _solver.INV_SMALL_MAX + 1))
def test_small_inverses(dtype, n):
    a = (rand((3, 5, n, n), dtype, n) + (n + 2) * np.eye(n)).astype(dtype)
    want = np.linalg.inv(wide(a))
    for name, x in views(a):
        close(LA.inv(x), want, dtype)
    close(LA.inv(xp.asarray(a)[:, 1]), want[:, 1], dtype)                          # batch step
    close(LA.inv(xp.broadcast_to(xp.asarray(a[0, :1]), (4, n, n))), np.broadcast_to(want[0, :1], (4, n, n)), dtype)
    close(LA.inv(xp.asarray(a)[::-1, ::2]), want[::-1, ::2], dtype)                # do not merge: copied
    big = rand((70000, n, n), dtype, 9) + (n + 2) * np.eye(n)                      # several blocks
    close(LA.inv(xp.asarray(big.astype(dtype))), np.linalg.inv(big.astype(dtype).astype(np.float64)), dtype)


def test_small_inverse_singular_matrices():
    a = np.stack([np.eye(3), [[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.zeros((3, 3))]).astype(np.float32)
    with pytest.raises(xp.linalg.LinAlgError, match=r"^inv: Singular matrix \(stack index \(1,\); 2 of 3 matrices\)$"):
        LA.inv(xp.asarray(a))
    with pytest.raises(xp.linalg.LinAlgError):
        LA.inv(xp.asarray(np.array([[1.0, 2.0], [2.0, 4.0]])))
    p = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.float64)
    np.testing.assert_array_equal(host(LA.inv(xp.asarray(p))), p.T)


# ---------------------------------------------------------------------------- svd (gesvdp)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(300, 64), (64, 300), (2, 100, 80), (96, 96)])
def test_polar_svd(dtype, shape):
    assert _solver.gesvdp_info().startswith("gesvdp"), _solver.gesvdp_info()
    a = rand(shape, dtype, 4)
    ws = np.linalg.svd(wide(a), compute_uv=False)
    for name, x in views(a):
        u, s, vh = LA.svd(x, full_matrices=False)
        k = ws.shape[-1]
        assert u.shape == shape[:-1] + (k,) and vh.shape == shape[:-2] + (k, shape[-1]), name
        close(s, ws, dtype, 50)
        hu, hs, hv = host(u), host(s), host(vh)
        close(xp.asarray((hu * hs[..., None, :]) @ hv), a, dtype, 50)
        close(xp.asarray(np.conj(np.swapaxes(hu, -1, -2)) @ hu), np.eye(k), dtype, 50)
        close(xp.asarray(hv @ np.conj(np.swapaxes(hv, -1, -2))), np.eye(k), dtype, 50)
        close(LA.svdvals(x), ws, dtype, 50)
    if shape[-1] == shape[-2]:
        u, s, vh = LA.svd(xp.asarray(a), full_matrices=True)                       # square: gesvdp too
        close(xp.asarray((host(u) * host(s)[..., None, :]) @ host(vh)), a, dtype, 50)


def test_polar_svd_of_the_bench_shape():
    a = np.random.default_rng(5).standard_normal((4096, 256)).astype(np.float32)
    u, s, vh = LA.svd(xp.asarray(a), full_matrices=False)
    ws = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(host(s), ws, rtol=2e-4, atol=2e-4 * ws[0])
    r = (host(u) * host(s)) @ host(vh)
    assert np.abs(r - a).max() <= 1e-3 * ws[0]


# ---------------------------------------------------------------------------- cholesky
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(2, 200, 200), (600, 600)])     # potrfBatched, potrf
def test_cholesky_reads_one_triangle(dtype, upper, shape):
    a = hpd(shape, dtype, 6)
    want = np.linalg.cholesky(wide(a), upper=upper)
    junk = a.copy()
    iu = np.triu_indices(shape[-1], 1)
    if upper:
        junk[..., iu[1], iu[0]] = 99
    else:
        junk[..., iu[0], iu[1]] = 99
    for x in (xp.asarray(a), xp.asarray(junk)):
        close(LA.cholesky(x, upper=upper), want, dtype, 50)
