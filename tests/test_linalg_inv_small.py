"""CPU tier: ``inv`` of small real matrices on gparray's kernel (gparray/_kernels/
linalg_small.cu, launched by gparray/_engine/_solver.py ``inv_small``). The kernel's
algorithm (LAPACK's getf2, trti2 and getri, loop for loop as the CUDA source writes them)
runs in NumPy on the launch's arguments, reading the input through the strides it is
given from registered host memory (tests/_fake_solver.py): results against
numpy.linalg.inv for every size up to INV_SMALL_MAX over layouts (C order, transposed,
stepped, broadcast, batch dimensions that do not merge), singular matrices named by their
stack index, which stacks are read in place, and an NVRTC compile of every instance."""
import ctypes

import types

import numpy as np
import pytest

from gparray._engine import _solver
from gparray._kernels import _compile
from gparray.linalg import _solvers as sol
from gparray.linalg._errors import LinAlgError

from test_linalg_solver_model import mem, o, rand  # noqa: F401

SFMIN = {"float": np.finfo(np.float32).tiny, "double": np.finfo(np.float64).tiny}


def kernel_model(mem, T, N, args, grid, block):
    """gp_inv_small<T, N> on host memory, as the CUDA source computes it."""
    out, x, status, count, sb, s0, s1 = (int(v) for v in args)
    dt = np.dtype(np.float32 if T == "float" else np.float64)
    isz = dt.itemsize
    assert block == _solver.INV_SMALL_THREADS and grid * block >= count > (grid - 1) * block
    st = mem.vec(status, 2, np.uint64, "inv_small status")
    assert list(st) == [0, 0]                                  # zeroed by the caller
    for b in range(count):
        base = x + b * sb * isz
        offs = [(i * s0 + j * s1) for i in range(N) for j in range(N)]
        mem.check(base + min(offs) * isz, (max(offs) - min(offs) + 1) * isz, "inv_small x")
        a = np.array([[np.frombuffer(ctypes.string_at(base + (i * s0 + j * s1) * isz, isz), dt)[0]
                       for j in range(N)] for i in range(N)], dt)
        piv, bad = [0] * N, 0
        for j in range(N):                                     # getf2
            p, pv = j, a[j, j]
            m = abs(pv)
            for i in range(j + 1, N):
                if abs(a[i, j]) > m:
                    m, p, pv = abs(a[i, j]), i, a[i, j]
            piv[j] = p
            if pv != 0:
                if p != j:
                    a[[j, p]] = a[[p, j]]
                if abs(pv) >= SFMIN[T]:
                    a[j + 1:, j] *= dt.type(1) / pv
                else:
                    a[j + 1:, j] /= pv
            elif bad == 0:
                bad = j + 1
            for i in range(j + 1, N):
                for k in range(j + 1, N):
                    a[i, k] -= a[i, j] * a[j, k]
        if bad:                                                # atomicMax, atomicAdd
            st[0] = max(int(st[0]), count - b)
            st[1] += 1
            continue
        for j in range(N):                                     # trti2
            a[j, j] = dt.type(1) / a[j, j]
            ajj = -a[j, j]
            for i in range(j):
                t = a[i, i] * a[i, j]
                for k in range(i + 1, j):
                    t += a[i, k] * a[k, j]
                a[i, j] = t
            for i in range(j):
                a[i, j] *= ajj
        for j in range(N - 1, -1, -1):                         # getri
            w = a[:, j].copy()
            a[j + 1:, j] = 0
            for i in range(N):
                t = a[i, j]
                for k in range(j + 1, N):
                    t -= a[i, k] * w[k]
                a[i, j] = t
        for j in range(N - 2, -1, -1):
            p = piv[j]
            if p != j:
                a[:, [j, p]] = a[:, [p, j]]
        mem.cm(out + b * N * N * isz, N, N, N, dt, "inv_small out")[...] = a.T     # C order


@pytest.fixture
def small(mem, monkeypatch):
    launches = []
    kernels = {}

    def kernel(family, expr, dev, proto):
        """The first launch of an instance types its arguments: 3 pointers, 4 int64."""
        assert family == "linalg_small" and dev == 0
        assert expr in _solver.instances(), expr
        assert [type(v) for v in proto] == [np.uint64] * 3 + [np.int64] * 4
        k = kernels[(dev, family, expr)] = ("kernel", expr)
        return k

    def run(k, dev, grid, args, shared_mem=0, block=256):
        assert k[0] == "kernel" and dev == 0 and shared_mem == 0 and len(args) == 7
        assert all(isinstance(v, (int, np.integer)) for v in args)
        expr = k[1]
        T, N = expr[len("gp_inv_small<"):-1].split(", ")
        launches.append((expr, args))
        kernel_model(mem, T, int(N), args, grid, block)

    monkeypatch.setattr(_solver, "_launch", types.SimpleNamespace(_kernels=kernels, kernel=kernel, run=run))
    monkeypatch.setattr(_solver, "inv_small_ok", lambda dt, n: 0 < n <= _solver.INV_SMALL_MAX
                        and dt in ("float32", "float64"))
    return launches


def _layouts(a):
    t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    big = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
    out = [("c", a, True), ("T", np.swapaxes(t, -1, -2), True), ("steps", big[..., ::2, ::2], True)]
    if a.ndim >= 3:
        wide = np.concatenate([a, a], axis=0)
        out.append(("batch step", wide[::2], a.ndim == 3))
        out.append(("broadcast", np.broadcast_to(a[:1], a.shape), a.ndim == 3))
    if a.ndim >= 4:
        unmerged = np.concatenate([a, a], axis=-3)[..., :a.shape[-3], :, :]     # batch strides (2 B s, s)
        out.append(("unmerged", unmerged, a.shape[-3] == 1 or a.shape[-4] == 1))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", range(1, _solver.INV_SMALL_MAX + 1))
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_inverses_match_numpy(o, mem, small, dtype, n, batch):
    a = (rand(batch + (n, n), dtype, n) + n * np.eye(n)).astype(dtype)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for name, x, in_place in _layouts(a):
        small.clear()
        root = x
        while root.base is not None:
            root = root.base
        mem.register(root)                              # the bytes the view spans
        got = sol._inv(o, x)
        assert got.shape == x.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, np.linalg.inv(x), rtol=tol, atol=tol, err_msg=name)
        (expr, args), = small
        assert expr == f"gp_inv_small<{'float' if dtype == 'float32' else 'double'}, {n}>"
        assert (int(args[1]) == x.ctypes.data) == in_place, name


def test_singular_matrices_are_named_like_numpy(o, mem, small):
    a = mem.register(np.stack([np.eye(3), [[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.eye(3), np.zeros((3, 3))]))
    with pytest.raises(LinAlgError) as e:
        sol._inv(o, a)
    with pytest.raises(np.linalg.LinAlgError) as want:
        np.linalg.inv(a)
    assert "Singular matrix" in str(e.value) and "Singular matrix" in str(want.value)
    st = [int(v) for v in mem.vec(int(small[-1][1][2]), 2, np.uint64)]
    assert st == [4 - 1, 2]                    # matrices 1 and 3: the first is 4 - 3, two of them
    assert "stack index (1,); 2 of 4 matrices" in str(e.value)
    for m in ([[0.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0]]):
        with pytest.raises(LinAlgError):
            sol._inv(o, mem.register(np.array(m, np.float32)))
    # exactly invertible matrices that need row interchanges
    p = mem.register(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.float32))
    np.testing.assert_array_equal(sol._inv(o, p), p.T)


def test_complex_and_larger_matrices_keep_the_library_path(o, mem, small):
    for a in ((rand((2, 4, 4), "complex64", 1) + 4 * np.eye(4)).astype("complex64"),
              (rand((2, 9, 9), "float32", 2) + 9 * np.eye(9)).astype("float32")):
        np.testing.assert_allclose(sol._inv(o, mem.register(a)), np.linalg.inv(a), rtol=1e-4, atol=1e-4)
    assert small == []


def test_batch_stride():
    assert sol._batch_stride((2, 3, 4, 4), (96, 32, 8, 2)) == 32
    assert sol._batch_stride((2, 3, 4, 4), (200, 32, 8, 2)) is None
    assert sol._batch_stride((2, 1, 4, 4), (32, 999, 8, 2)) == 32
    assert sol._batch_stride((4, 4), (8, 2)) == 0 and sol._batch_stride((1, 1, 4, 4), (5, 7, 8, 2)) == 0
    assert sol._batch_stride((3, 4, 4), (0, 8, 2)) == 0 and sol._batch_stride((3, 4, 4), (-32, 8, 2)) == -32


def test_every_instance_compiles_and_warmup_lists_them():
    from gparray import warmup

    ex = _solver.instances()
    assert len(ex) == 2 * _solver.INV_SMALL_MAX + 1 and ex[-1] == "gp_lu_perm"   # (and solve's permutation)
    cubin, mapping = _compile.nvrtc_compile("linalg_small", ex, "90")
    assert len(mapping) == len(ex) and all(mapping.values()) and cubin[:4] == b"\x7fELF"
    assert set(warmup.instances(include_ops=False)["linalg_small"]) == set(ex)


def test_check_status_reads_the_kernels_summary():
    from gparray.linalg._errors import check_status

    check_status("inv", np.array([0, 0], np.uint64), (5,), 5, "Singular matrix")      # none
    with pytest.raises(LinAlgError, match=r"^inv: Singular matrix \(stack index \(0, 2\)\)$"):
        check_status("inv", np.array([6 - 2, 1], np.uint64), (2, 3), 6, "Singular matrix")
    with pytest.raises(LinAlgError, match=r"stack index \(1, 0\); 3 of 6 matrices"):
        check_status("inv", np.array([6 - 3, 3], np.uint64), (2, 3), 6, "Singular matrix")
    with pytest.raises(LinAlgError, match=r"^inv: Singular matrix$"):
        check_status("inv", np.array([1, 1], np.uint64), (), 1, "Singular matrix")
    with pytest.raises(RuntimeError, match="names no matrix"):
        check_status("inv", np.array([9, 1], np.uint64), (5,), 5, "Singular matrix")
