"""CPU tier: integer and boolean matmul (gparray/_engine/_matmul_int.py, kernels in
gparray/_kernels/matmul.cu) without a GPU.

* A NumPy model of both kernels (``gp_matmul_int``: the grid-stride loop over tiles, the
  tile/batch decomposition of the work index, the 16-deep k slices, unsigned accumulation
  and the truncating store; ``gp_matmul_int_dot``: one output per work item) executes the
  engine's launches on host buffers that stand in for device memory, reading the operands
  exactly as the kernels do (element offsets from the pointers, the batch strides, the row
  and column strides). ``xp.matmul`` itself runs on that model (its allocations and casts
  patched onto host buffers), against numpy.matmul: every integer dtype with values that
  wrap, bool, mixed promotion, transposed / stepped / flipped / broadcast operands, 1-D
  operands, sizes just over a tile, a grid smaller than the work.
* The launch arguments against the kernels' parameter lists; an NVRTC compile of every
  registered "matmul" instance (and of ND = 16 / 64, compiled on first use).
* matmul's and ``@=``'s errors that come before any device work.
"""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gparray as xp
from gparray import _array
from gparray._array import _matmul as _la
from gparray._array import Array
from gparray._core._device import Device
from gparray._engine import _matmul_int as mi
from gparray._engine import _matmul_plan as mp
from gparray._kernels import _compile
from gparray._kernels._registry import CTYPES

from _fakes import FakeArray
from test_matmul_plan import problems
from test_reduction_plans import _check_args

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


# ---------------------------------------------------------------------------- host memory
class _Buf:
    stream = 0      # the stream a pool Block was allocated on (the default stream here)

    def __init__(self, ptr):
        self.ptr = ptr


class Mem:
    """Host buffers at fake device addresses (each 4 KiB apart, 512-byte aligned)."""

    def __init__(self):
        self.bufs = {}
        self.next = 1 << 32

    def new(self, nbytes):
        ptr = self.next
        self.next += -(-max(nbytes, 1) // 512) * 512 + 4096
        self.bufs[ptr] = np.zeros(max(nbytes, 1), np.uint8)
        return ptr

    def find(self, addr):
        for base, buf in self.bufs.items():
            if base <= addr < base + buf.size:
                return base, buf
        raise AssertionError(f"address {addr:#x} is in no buffer")

    def gather(self, addr, dtype, offsets):
        """Elements of ``dtype`` at ``addr`` + offsets (elements); each must lie in the buffer."""
        dtype = np.dtype(dtype)
        base, buf = self.find(addr)
        assert (addr - base) % dtype.itemsize == 0
        flat = buf[: buf.size // dtype.itemsize * dtype.itemsize].view(dtype)
        idx = (addr - base) // dtype.itemsize + np.asarray(offsets, np.int64)
        assert idx.size == 0 or (idx.min() >= 0 and idx.max() < flat.size), "read outside the operand's buffer"
        return flat[idx]

    def scatter(self, addr, dtype, offsets, values):
        dtype = np.dtype(dtype)
        base, buf = self.find(addr)
        flat = buf[: buf.size // dtype.itemsize * dtype.itemsize].view(dtype)
        idx = (addr - base) // dtype.itemsize + np.asarray(offsets, np.int64)
        assert idx.min() >= 0 and idx.max() < flat.size, "write outside the result"
        flat[idx] = values

    def array(self, v):
        """An Array over a copy of the bytes NumPy view ``v`` spans, with ``v``'s layout."""
        data = v.__array_interface__["data"][0]
        lo = hi = 0
        if v.size:
            lo = sum(min(0, (n - 1) * s) for n, s in zip(v.shape, v.strides))
            hi = sum(max(0, (n - 1) * s) for n, s in zip(v.shape, v.strides)) + v.itemsize
        raw = ctypes.string_at(data + lo, hi - lo) if v.size else b""
        ptr = self.new(len(raw))
        self.bufs[ptr][: len(raw)] = np.frombuffer(raw, np.uint8)
        return Array._new(_Buf(ptr), -lo, v.shape, v.strides, v.dtype, Device(0))

    def empty(self, shape, dtype, dev=None):
        dtype = np.dtype(dtype)
        n = int(np.prod(shape)) * dtype.itemsize
        ptr = self.new(n)
        return Array._new(_Buf(ptr), 0, tuple(shape), tuple(np.empty(shape, dtype).strides), dtype, Device(0))

    def host(self, x):
        """An Array's values as a NumPy array."""
        isz = x._dtype.itemsize
        idx = np.zeros(x._shape, np.int64)
        for d, (n, s) in enumerate(zip(x._shape, x._strides)):
            sh = [1] * len(x._shape)
            sh[d] = n
            idx = idx + (np.arange(n) * (s // isz)).reshape(sh)
        return self.gather(x._ptr, x._dtype, idx.reshape(-1)).reshape(x._shape)


# ---------------------------------------------------------------------------- kernel model
def _acc_dtype(dt):
    return np.dtype(np.uint64 if dt.itemsize == 8 else np.uint32)


def _load(vals, dt):
    if dt == np.bool_:
        return vals.astype(np.uint32)
    return vals.astype(_acc_dtype(dt))          # C conversion: negative values sign-extend


def _store(acc, dt):
    if dt == np.bool_:
        return acc != 0
    w = np.dtype(f"uint{8 * dt.itemsize}")
    return acc.astype(w).view(dt)               # the low bits, as the result type


def _mac_block(acc, a, b, dt):
    if dt == np.bool_:
        return acc | ((a @ b) != 0).astype(np.uint32)
    with np.errstate(over="ignore"):
        return acc + a @ b                      # unsigned: wraps


def _batch_offsets(prm, bi):
    v = prm["v"]
    nd = int(v[0])
    ND = (len(v) - 1) // 3
    shape = [int(x) for x in v[1:1 + nd]]
    sa = [int(x) for x in v[1 + ND:1 + ND + nd]]
    sb = [int(x) for x in v[1 + 2 * ND:1 + 2 * ND + nd]]
    oa = ob = 0
    for d in range(nd - 1, -1, -1):
        bi, i = divmod(bi, shape[d])
        oa += i * sa[d]
        ob += i * sb[d]
    return oa, ob


def run_launch(mem, expr, grid, args, dt, written):
    """Execute one launch of ``expr`` the way the kernel does."""
    c, a, b, prm, m, n, k, sa0, sa1, sb0, sb1 = (int(x) if i != 3 else x for i, x in enumerate(args[:11]))
    if expr.startswith("gp_matmul_int_dot<"):
        (total,) = (int(x) for x in args[11:])
        for blk in range(grid):
            for o in range(blk, total, grid):
                bi, rem = divmod(o, m * n)
                i, j = divmod(rem, n)
                oa, ob = _batch_offsets(prm, bi)
                ks = np.arange(k)
                av = _load(mem.gather(a, dt, oa + i * sa0 + ks * sa1), dt)
                bv = _load(mem.gather(b, dt, ob + j * sb1 + ks * sb0), dt)
                s = _mac_block(np.zeros((1, 1), _acc_dtype(dt) if dt != np.bool_ else np.uint32),
                               av[None, :], bv[:, None], dt)
                mem.scatter(c, dt, [o], _store(s, dt).reshape(-1))
                written[o] += 1
        return
    tiles_m, tiles_n, total = (int(x) for x in args[11:])
    for blk in range(grid):
        for t in range(blk, total, grid):
            r, tn = divmod(t, tiles_n)
            bi, tm = divmod(r, tiles_m)
            oa, ob = _batch_offsets(prm, bi)
            rows = np.arange(tm * mi.BM, min(m, tm * mi.BM + mi.BM))
            cols = np.arange(tn * mi.BN, min(n, tn * mi.BN + mi.BN))
            acc = np.zeros((rows.size, cols.size), np.uint32 if dt == np.bool_ else _acc_dtype(dt))
            for k0 in range(0, k, mi.BK):
                ks = np.arange(k0, min(k, k0 + mi.BK))
                at = _load(mem.gather(a, dt, oa + rows[:, None] * sa0 + ks[None, :] * sa1), dt)
                bt = _load(mem.gather(b, dt, ob + ks[:, None] * sb0 + cols[None, :] * sb1), dt)
                acc = _mac_block(acc, at, bt, dt)
            offs = bi * m * n + rows[:, None] * n + cols[None, :]
            mem.scatter(c, dt, offs.reshape(-1), _store(acc, dt).reshape(-1))
            np.add.at(written, offs.reshape(-1), 1)


@pytest.fixture
def device(monkeypatch):
    """xp.matmul on host memory: allocations, casting copies, zero fills and the kernels'
    launches (through the model) on ``Mem`` buffers; records every launch."""
    mem = Mem()
    mem.launches = []

    def fake_copy(x, dtype=None):
        out = mem.empty(x._shape, dtype or x._dtype)
        vals = mem.host(x).astype(out._dtype)
        if vals.size:
            mem.scatter(out._ptr, out._dtype, np.arange(vals.size), vals.reshape(-1))
        return out

    def fake_memset0(x):
        if x.size:
            mem.scatter(x._ptr, x._dtype, np.arange(x.size), np.zeros(x.size, x._dtype))

    def fake_launch(family, expr, device_id, grid, args, shared_mem=0, block=256):
        assert family == "matmul" and block == mi.THREADS and shared_mem == 0 and grid >= 1
        _check_args(family, expr, args)
        dt = np.dtype(mem.dtype_of[expr.split("<")[1].split(",")[0]])
        total = int(args[-1])
        mem.launches.append((expr, grid, args))
        c = int(args[0])
        out_elems = mem.find(c)[1].size // dt.itemsize
        written = np.zeros(out_elems, np.int64)
        run_launch(mem, expr, grid, args, dt, written)
        mem.written = written
        assert grid <= max(total, 1)

    mem.dtype_of = {v: k for k, v in CTYPES.items()}
    monkeypatch.setattr(_la, "_empty", mem.empty)
    monkeypatch.setattr(_la, "_copy", fake_copy)
    monkeypatch.setattr(_la._transfer, "memset0", fake_memset0)
    monkeypatch.setattr(mi, "launch", fake_launch)
    return mem


def _check(mem, x1, x2, max_grid=None, monkeypatch=None):
    g1, g2 = mem.array(x1), mem.array(x2)
    want = np.matmul(x1, x2)
    got = xp.matmul(g1, g2)
    assert got._shape == want.shape and got._dtype == want.dtype
    np.testing.assert_array_equal(mem.host(got), want)
    if mem.launches and want.size and (x1.shape[-1] if x1.ndim else 0):
        assert (mem.written[: want.size] == 1).all(), "every output written exactly once"
    return got


def _wrap_values(shape, dtype, seed):
    """Values near the extremes of ``dtype`` (so the products and sums wrap around)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.3
    info = np.iinfo(dt)
    big = rng.integers(info.max - 3, info.max, shape, endpoint=True, dtype=dt)
    small = rng.integers(max(info.min, -4), 5, shape, dtype=dt)
    low = rng.integers(info.min, info.min + 4, shape, endpoint=True, dtype=dt)
    pick = rng.integers(0, 3, shape)
    return np.where(pick == 0, big, np.where(pick == 1, small, low)).astype(dt)


# ---------------------------------------------------------------------------- tests
@pytest.mark.parametrize("dtype", INTS + ["bool"])
def test_wraparound_matches_numpy(device, dtype):
    a, b = _wrap_values((5, 64), dtype, 1), _wrap_values((64, 7), dtype, 2)
    _check(device, a, b)
    (expr, grid, args), = device.launches
    assert expr == mi.kernel_name("tiled", np.dtype(dtype), 4)


def test_int8_sums_wrap_like_numpy(device):
    a = np.full((3, 64), 127, np.int8)
    b = np.full((64, 2), -127, np.int8)
    got = _check(device, a, b)
    exact = np.array(127 * -127 * 64, np.int64)               # -1032256 = 0x...F03FC0 -> 0xC0
    assert device.host(got)[0, 0] == exact.astype(np.int8) == -64


@pytest.mark.parametrize("d1,d2", [("int8", "uint8"), ("bool", "int8"), ("uint16", "int32"), ("uint8", "uint64"),
                                   ("bool", "bool"), ("int16", "uint32")])
def test_mixed_dtypes_promote(device, d1, d2):
    a, b = _wrap_values((4, 9), d1, 3), _wrap_values((9, 3), d2, 4)
    got = _check(device, a, b)
    assert got._dtype == np.result_type(a, b)


@pytest.mark.parametrize("s1,s2", [((65, 17), (17, 64)), ((64, 16), (16, 65)), ((2, 65, 33), (33, 129)),
                                   ((1, 17), (17, 1)), ((70, 3), (3,)), ((3,), (3, 70)), ((300,), (300,)),
                                   ((2, 3, 300), (300, 4)), ((4, 1, 1, 300), (3, 300, 1)), ((5, 300), (300,))])
def test_tile_edges_vectors_and_dot(device, s1, s2):
    a, b = _wrap_values(s1, "int32", 5), _wrap_values(s2, "int32", 6)
    _check(device, a, b)
    variant = device.launches[-1][0].split("<")[0]
    m = 1 if len(s1) == 1 else s1[-2]
    n = 1 if len(s2) == 1 else s2[-1]
    k = s1[-1]
    want = "gp_matmul_int_dot" if m * n <= mi.DOT_MAX_OUTPUTS and k >= mi.DOT_MIN_K else "gp_matmul_int"
    assert variant == want


def test_grid_smaller_than_the_work(device, monkeypatch):
    monkeypatch.setattr(mi, "MAX_GRID", 3)
    a, b = _wrap_values((3, 130, 20), "uint16", 7), _wrap_values((20, 70), "uint16", 8)
    _check(device, a, b)
    (expr, grid, args), = device.launches
    assert grid == 3 and int(args[-1]) == 3 * 3 * 2
    a, b = _wrap_values((7, 2, 400), "int64", 9), _wrap_values((7, 400, 2), "int64", 10)
    _check(device, a, b)
    assert device.launches[-1][1] == 3 and device.launches[-1][0].startswith("gp_matmul_int_dot<")


def _layouts(a):
    out = [a]
    if a.ndim >= 2:
        t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        out.append(np.swapaxes(t, -1, -2))
        big = np.concatenate([a, a], axis=-1)
        out.append(big[..., : a.shape[-1]])
        tall = np.repeat(np.repeat(a, 2, axis=-1), 2, axis=-2)
        out.append(tall[..., ::2, ::2])
    out.append(np.flip(np.flip(a, axis=-1).copy(), axis=-1))
    return out


@pytest.mark.parametrize("dtype", ["int8", "uint64", "bool"])
def test_layouts_are_read_in_place(device, dtype):
    a, b = _wrap_values((2, 5, 70), dtype, 11), _wrap_values((70, 66), dtype, 12)
    for x1 in _layouts(a):
        for x2 in _layouts(b):
            n_before = len(device.bufs)
            _check(device, x1, x2)
            # only the two operands and the result: no copy of a layout
            assert len(device.bufs) == n_before + 3


def test_broadcast_batches_are_stride_zero(device):
    a = _wrap_values((5, 1, 2, 3), "int16", 13)
    b = _wrap_values((1, 7, 3, 4), "int16", 14)
    _check(device, a, b)
    one = _wrap_values((1, 3, 4), "int32", 15)
    _check(device, _wrap_values((6, 2, 3), "int32", 16), np.broadcast_to(one, (6, 3, 4)))
    _, _, args = device.launches[-1]
    v = args[3]["v"]
    assert int(v[0]) == 1 and int(v[1 + 2 * 4]) == 0        # B's batch stride 0


def _retype(v, dt):
    """View ``v`` (of a float64 owner) with the same layout over the owner converted to ``dt``."""
    base = v
    while base.base is not None:
        base = base.base
    assert base.flags.c_contiguous
    flat = base.reshape(-1)
    conv = (flat != 0) if dt == np.bool_ else flat.astype(np.int64).astype(dt)
    off = (v.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // v.itemsize
    out = np.lib.stride_tricks.as_strided(conv[off:], shape=v.shape,
                                          strides=tuple(s // v.itemsize * dt.itemsize for s in v.strides))
    np.testing.assert_array_equal(out, (v != 0) if dt == np.bool_ else v.astype(np.int64).astype(dt))
    return out


@settings(max_examples=300, deadline=None)
@given(problems(), st.sampled_from(INTS + ["bool"]))
def test_random_layouts_compute_numpy_matmul(case, dtype):
    mem = Mem()
    x1, x2 = case
    dt = np.dtype(dtype)
    x1, x2 = _retype(x1, dt), _retype(x2, dt)
    isz = dt.itemsize
    e1 = tuple(s // isz for s in x1.strides)
    e2 = tuple(s // isz for s in x2.strides)
    p = mp.plan(x1.shape, e1, x2.shape, e2, dt.kind)
    want = np.matmul(x1, x2)
    if p.kind != "int":
        assert p.kind in ("empty", "zeros") and (want.size == 0 or not want.any())
        return
    lp = mi.launch_plan(x1.shape, e1, x2.shape, e2, max_grid=5)
    g1, g2 = mem.array(x1), mem.array(x2)
    out = mem.empty(want.shape, dt)
    written = np.zeros(max(want.size, 1), np.int64)
    got = []

    def launch(family, expr, dev, grid, args, shared=0, block=256):
        got.append(expr)
        run_launch(mem, expr, grid, args, dt, written)

    orig = mi.launch
    mi.launch = launch
    try:
        mi.matmul(g1, g2, out)
    finally:
        mi.launch = orig
    assert got == [mi.kernel_name(lp.variant, dt, lp.nd)]
    assert (written == 1).all()
    np.testing.assert_array_equal(mem.host(out), want)


def test_launch_plan_fields():
    # (8, m, k) @ (k, n): one merged batch dim, B broadcast
    p = mi.launch_plan((8, 100, 20), (2000, 20, 1), (20, 70), (70, 1))
    assert p.variant == "tiled" and (p.m, p.n, p.k) == (100, 70, 20)
    assert p.a_strides == (20, 1) and p.b_strides == (70, 1)
    assert p.batch_shape == (8,) and p.batch_strides == ((2000,), (0,)) and p.count == 8
    assert (p.tiles_m, p.tiles_n, p.total, p.grid, p.nd) == (2, 2, 32, 32, 4)
    # vectors: a row of stride 0 in its added dimension, a column likewise
    p = mi.launch_plan((5,), (3,), (5,), (-1,))
    assert p.a_strides == (0, 3) and p.b_strides == (-1, 0) and p.batch_shape == (1,)
    assert p.variant == "tiled" and p.total == 1
    p = mi.launch_plan((1000,), (1,), (1000,), (1,))
    assert p.variant == "dot" and p.total == 1
    # batch dims that do not merge stay separate; many of them: ND 16
    p = mi.launch_plan((5, 1, 2, 3), (6, 6, 3, 1), (1, 7, 3, 4), (84, 12, 4, 1))
    assert p.batch_shape == (5, 7) and p.batch_strides == ((6, 0), (0, 12))
    shape = (2,) * 6 + (3, 3)
    st1 = tuple(np.empty(shape, np.int8).strides)
    st2 = (0,) * 6 + (3, 1)
    p = mi.launch_plan(shape, st1, (1,) * 6 + (3, 3), st2)
    assert p.batch_shape == (64,) and p.nd == 4            # merged into one dimension
    st1 = tuple(s * (1 + (i % 2)) for i, s in enumerate(st1[:6])) + st1[6:]
    p = mi.launch_plan(shape, st1, (1,) * 6 + (3, 3), st2)
    assert len(p.batch_shape) > 4 and p.nd == 16


def test_launch_arguments_match_the_kernels(monkeypatch):
    got = []
    monkeypatch.setattr(mi, "launch", lambda *a: got.append(a))
    for dt in mi.DTYPES:
        for s1, s2 in (((3, 70, 20), (20, 5)), ((600,), (600,))):
            x1 = FakeArray(s1, dt, ptr=1 << 20)
            x2 = FakeArray(s2, dt, ptr=1 << 24)
            shape = mp.plan(s1, tuple(s // dt.itemsize for s in x1._strides), s2,
                            tuple(s // dt.itemsize for s in x2._strides), "i").shape
            out = FakeArray(shape, dt, ptr=1 << 28)
            mi.matmul(x1, x2, out)
    for family, expr, dev, grid, args, shared, block in got:
        assert family == mi.FAMILY and block == mi.THREADS
        _check_args(family, expr, args)
        assert expr in mi.instances()
        assert int(args[0]) == 1 << 28 and int(args[1]) == 1 << 20 and int(args[2]) == 1 << 24


def test_instances_cover_bool_and_every_integer_dtype():
    ex = mi.instances()
    assert len(ex) == len(set(ex)) == 18
    for dt in ("bool", "gp::int8", "gp::uint64"):
        assert f"gp_matmul_int<{dt}, 4>" in ex and f"gp_matmul_int_dot<{dt}, 4>" in ex


def test_every_matmul_instance_compiles():
    ex = mi.instances() + ["gp_matmul_int<gp::int32, 16>", "gp_matmul_int_dot<gp::uint8, 64>"]
    cubin, mapping = _compile.nvrtc_compile("matmul", ex, "90")
    assert len(mapping) == len(ex) and all(mapping.values())
    assert cubin[:4] == b"\x7fELF"


def test_warmup_lists_the_matmul_family():
    from gparray import warmup

    assert set(warmup.instances(include_ops=False)["matmul"]) == set(mi.instances())


# ---------------------------------------------------------------------------- namespace errors
def _fake(shape, dtype="int32"):
    dt = np.dtype(dtype)
    st = tuple(np.empty(shape, dt).strides) if all(shape) else tuple(dt.itemsize for _ in shape)
    return Array._new(_Buf(1 << 20), 0, tuple(shape), st, dt, Device(0))


def test_zero_d_operands_raise_numpys_error():
    for s1, s2 in (((), (3,)), ((3,), ()), ((), ())):
        with pytest.raises(ValueError) as got:
            xp.matmul(_fake(s1), _fake(s2))
        with pytest.raises(ValueError) as want:
            np.matmul(np.ones(s1, np.int32), np.ones(s2, np.int32))
        assert str(got.value) == str(want.value)


def test_python_scalars_and_foreign_operands_are_rejected():
    x = _fake((2, 2))
    with pytest.raises(TypeError, match="^matmul: both operands must be gparray Arrays"):
        xp.matmul(x, 2)
    with pytest.raises(TypeError, match="^matmul: both operands must be gparray Arrays"):
        xp.matmul(2.0, x)
    for bad in (2, 2.5, True, [[1, 0], [0, 1]]):
        with pytest.raises(TypeError):
            x @ bad
        with pytest.raises(TypeError):
            bad @ x
        with pytest.raises(TypeError):
            y = x
            y @= bad
    assert x.__matmul__(3) is NotImplemented and x.__rmatmul__(3) is NotImplemented


def test_imatmul_checks_dtype_and_shape_before_any_work(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("no device work expected")

    monkeypatch.setattr(_la, "_empty", boom)
    x = _fake((3, 3), "int16")
    with pytest.raises(ValueError, match=r"^__imatmul__: in-place result shape \(3, 2\) differs"):
        x @= _fake((3, 2), "int16")
    with pytest.raises(TypeError, match="^__imatmul__: in-place result dtype int32 differs"):
        x @= _fake((3, 3), "int32")
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        x @= _fake((2, 3), "int16")
    v = _fake((3,), "int16")
    with pytest.raises(ValueError, match=r"in-place result shape \(\) differs"):
        v @= _fake((3,), "int16")


def test_rmatmul_is_matmul_with_swapped_operands(device):
    a, b = _wrap_values((3, 4), "int8", 17), _wrap_values((4, 2), "int8", 18)
    g1, g2 = device.array(a), device.array(b)
    np.testing.assert_array_equal(device.host(g2.__rmatmul__(g1)), a @ b)
    np.testing.assert_array_equal(device.host(g1 @ g2), a @ b)


def test_empty_and_k_zero(device):
    for s1, s2, dt in (((0, 3), (3, 4), "int8"), ((2, 0), (0, 4), "int64"), ((0,), (0,), "bool"),
                       ((2, 0, 3), (3, 1), "uint16"), ((2, 0), (0, 3), "bool")):
        a, b = np.ones(s1, dt), np.ones(s2, dt)
        _check(device, a, b)
    assert device.launches == []


def test_float16_runs_in_float32_and_is_rounded_once(monkeypatch):
    calls = []

    class _CP:
        class cuda:
            class Device:
                def __init__(self, i):
                    pass

                def __enter__(self):
                    return self

                def __exit__(self, *a):
                    return False

            @staticmethod
            def get_current_stream():
                class S:
                    ptr = 0
                return S()

            class runtime:
                @staticmethod
                def getDevice():
                    return 0

    mem = Mem()
    monkeypatch.setattr(_la, "_empty", mem.empty)
    copies = []

    def fake_copy(x, dtype=None):
        copies.append((x._dtype, np.dtype(dtype)))
        return mem.empty(x._shape, dtype or x._dtype)

    monkeypatch.setattr(_la, "_copy", fake_copy)
    monkeypatch.setattr(_la._blas, "launch", lambda c, *a: calls.append(c.fkey))
    monkeypatch.setattr(_la, "_fast", {})
    from gparray._core import _backend

    monkeypatch.setattr(_backend, "cupy", lambda: _CP)
    monkeypatch.setattr(_backend, "device_count", lambda: 1)
    for _ in range(2):      # float16 is never served from the memo
        r = xp.matmul(_fake((3, 4), "float16"), _fake((4, 2), "float16"))
    assert calls == [("S", False)] * 2 and r._dtype == np.float16 and _la._fast == {}
    assert copies == ([(np.float16, np.float32)] * 2 + [(np.float32, np.float16)]) * 2
