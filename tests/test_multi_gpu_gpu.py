"""GPU tier, two devices (issue 19 "Several GPUs", item 4): creation and ops on device 1
against NumPy while device 0 is current, moves between the GPUs (both ways, every dtype,
non-contiguous sources, the peer and the staged path, stream order without a synchronize),
DLPack with CuPy and PyTorch on device 1, mixed-device errors, the pools' statistics per
device, a stream of device 1 used from another host thread, ``__array_namespace_info__``.

Every test starts and must end with device 0 current (the ``_device0`` fixture fails a test
that leaves another device current, and puts device 0 back for the next one). Ordering
tests queue tests/streams_spin.cu's kernel first (it writes its output 0.3 s later): a move
or a read that is not ordered after it sees the zeros under it, or whatever an earlier user
of the (LIFO-cached) pool block left there; so each spin writes a value no earlier test
wrote (``_fresh_value``), and the count reads run a decoy first whose counts differ. The
whole module skips with its reason on a machine with fewer than two CUDA devices.
"""
import contextlib
import gc
import itertools
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import types

import numpy as np
import pytest

import gparray as xp
from _arrays import assert_same, host, sample
from gparray._core import _backend
from gparray._engine import _transfer
from gparray import cuda as gcuda

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_backend.device_count() < 2, reason="needs two CUDA devices")]

ROOT = str(pathlib.Path(__file__).resolve().parent.parent)
SPIN_SRC = pathlib.Path(__file__).with_name("streams_spin.cu")
SPIN_NS = 300_000_000          # 0.3 s
N = 1 << 20                    # 8 MiB of float64
D0, D1 = xp.Device(0), xp.Device(1)
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]


def _rt():
    return _backend.cupy().cuda.runtime


_VALUES = itertools.count()


def _fresh_value() -> float:
    """A value for a spin to write that no earlier ordering test wrote, nor any of the values
    derived from it (2v, 3v, v + 1): 2^20 + 2k, even, so that a read not ordered after the
    copy cannot find it by chance in a pool block another run left (the pool's bins hand
    back the most recently freed block of a size first)."""
    return float((1 << 20) + 2 * next(_VALUES))


@pytest.fixture(autouse=True)
def _device0():
    """Start with device 0 current and nothing queued; fail a test that leaves another
    device current (after putting device 0 back, so the next test is not hurt)."""
    rt = _rt()
    assert rt.getDevice() == 0, "an earlier test left another device current"
    yield
    dev = rt.getDevice()
    if dev != 0:
        rt.setDevice(0)
        pytest.fail(f"the test left cuda:{dev} current")
    for d in (0, 1):
        gcuda.synchronize(d)
    assert rt.getDevice() == 0


@pytest.fixture(scope="module")
def spin():
    """spin(y, b, x=None, a=0.0): y = a * x + b, 0.3 s after it was queued (float64, on the
    current stream of y's device)."""
    k = gcuda.compile_kernel(SPIN_SRC.read_text(), "spin_axpb")

    def run(y, b, x=None, a=0.0, stream=None):
        k(256, 256, (y if x is None else x, y, y.size, float(a), float(b), SPIN_NS), stream=stream)
    return run


@pytest.fixture(params=["auto", "peer", "staged"])
def peer_mode(request, monkeypatch):
    """The path of moves between GPUs: gparray's choice, or forced through
    ``gparray._engine._transfer._peer_mode``: "peer" (always cudaMemcpyPeerAsync) or "staged" (the
    relay through the pinned staging buffers, as for GPUs that are not peers)."""
    mode = request.param
    if mode != "auto":
        if not hasattr(_transfer, "_peer_mode"):
            pytest.skip("gparray._engine._transfer has no _peer_mode (the forced peer/staged paths of issue 19)")
        monkeypatch.setattr(_transfer, "_peer_mode", mode)
    return mode


def _warm(*devs, n=N):
    """Load the kernels the ordering tests queue behind a spin (a kernel load can wait for
    running kernels and so hide a missing order) and leave a free float64 block of ``n`` on
    the current stream of each device (the next allocation of that size is a cache hit)."""
    for d in devs:
        t = xp.zeros(n, dtype=xp.float64, device=d)
        (t * 2.0, t + 1.0, xp.full(n, -1.0, device=d))
        for e in devs:
            if e != d:
                t.to_device(e)
    gc.collect()


# ----------------------------------------------------------------------------- creation

def _creations(x1):
    """name -> (gparray call taking device=..., NumPy result); ``x1``: an array on device 1."""
    a = sample("float32", (3, 4), seed=3)
    return {
        "asarray_numpy": (lambda **kw: xp.asarray(a, **kw), a),
        "asarray_list": (lambda **kw: xp.asarray([[1, 2], [3, 4]], **kw), np.array([[1, 2], [3, 4]])),
        "asarray_scalar": (lambda **kw: xp.asarray(2.5, **kw), np.asarray(2.5)),
        "zeros": (lambda **kw: xp.zeros((3, 5), dtype=xp.int32, **kw), np.zeros((3, 5), np.int32)),
        "ones": (lambda **kw: xp.ones((4,), dtype=xp.complex64, **kw), np.ones(4, np.complex64)),
        "full": (lambda **kw: xp.full((2, 3), 7, dtype=xp.int16, **kw), np.full((2, 3), 7, np.int16)),
        "arange": (lambda **kw: xp.arange(2, 40, 3, **kw), np.arange(2, 40, 3)),
        "arange_float": (lambda **kw: xp.arange(0.5, 3.0, 0.25, **kw), np.arange(0.5, 3.0, 0.25)),
        "linspace": (lambda **kw: xp.linspace(0.0, 4.0, 9, **kw), np.linspace(0.0, 4.0, 9)),
        "eye": (lambda **kw: xp.eye(4, 5, k=1, dtype=xp.float32, **kw), np.eye(4, 5, k=1, dtype=np.float32)),
        "zeros_like_dev": (lambda **kw: xp.zeros_like(x1, **kw), np.zeros((2, 3), np.float64)),
        "full_like_dev": (lambda **kw: xp.full_like(x1, -2.0, **kw), np.full((2, 3), -2.0)),
    }


@pytest.mark.parametrize("how", ["Device", "str", "int", "context"])
def test_creation_on_device1(how):
    x1 = xp.asarray(np.arange(6.0).reshape(2, 3), device=D1)
    assert x1.device == D1
    kw = {"Device": {"device": D1}, "str": {"device": "cuda:1"}, "int": {"device": 1}, "context": {}}[how]
    rt = _rt()
    for name, (make, want) in _creations(x1).items():
        if how == "context":
            with xp.cuda.Device(1):
                assert rt.getDevice() == 1
                got = make()
        else:
            got = make(**kw)
        assert rt.getDevice() == 0, name
        assert got.device == D1, name
        assert_same(got, want, name)
    with (xp.cuda.Device(1) if how == "context" else contextlib.nullcontext()):
        e = xp.empty((5, 0, 2), dtype=xp.uint16, **kw)
        e2 = xp.empty((7,), dtype=xp.float64, **kw)
    assert e.shape == (5, 0, 2) and e.dtype == xp.uint16 and e.device == D1
    assert e2.shape == (7,) and e2.device == D1


def test_like_functions_and_triangles_keep_device1():
    a = sample("float64", (4, 5), seed=4)
    x1 = xp.asarray(a, device=D1)
    for name, got, want in [
        ("empty_like", xp.empty_like(x1), None), ("zeros_like", xp.zeros_like(x1), np.zeros_like(a)),
        ("ones_like", xp.ones_like(x1, dtype=xp.int8), np.ones_like(a, dtype=np.int8)),
        ("full_like", xp.full_like(x1, 3.5), np.full_like(a, 3.5)),
        ("tril", xp.tril(x1, k=-1), np.tril(a, k=-1)), ("triu", xp.triu(x1, k=1), np.triu(a, k=1)),
        ("tril_strided", xp.tril(x1.T[::-1]), np.tril(a.T[::-1])),
    ]:
        assert got.device == D1, name
        if want is None:
            assert got.shape == a.shape and got.dtype == xp.float64
        else:
            assert_same(got, want, name)
    u, v = np.arange(3.0), np.arange(4.0) - 7.5
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(xp.asarray(u, device=D1), xp.asarray(v, device=D1), indexing=indexing)
        want = np.meshgrid(u, v, indexing=indexing)
        for g, w in zip(got, want):
            assert g.device == D1
            assert_same(g, w, indexing)
    assert xp.zeros_like(x1, device=D0).device == D0           # device= still wins
    assert _rt().getDevice() == 0


# ----------------------------------------------------------------------------- ops on device 1

_R = np.random.default_rng(19)
_SPD = _R.standard_normal((16, 16))
DATA = {
    "a": sample("int32", (64, 48), seed=1).astype(np.float64),   # small integers: sums are exact
    "b": sample("int32", (64, 48), seed=2).astype(np.float64),
    "r": _R.standard_normal((64, 48)),                              # distinct: sorts are unique
    "i": _R.permutation(64)[:20].astype(np.int64),                  # distinct: scatters are exact
    "z": _R.integers(-30, 30, 500).astype(np.int32),
    "s": _SPD @ _SPD.T + 16 * np.eye(16),
    "v": _R.standard_normal((16, 3)),
}


def _scatter(m, d):
    c = m.asarray(d["a"], copy=True)
    c[d["i"]] = d["b"][:20]
    return c


def _mask_set(m, d):
    c = m.asarray(d["a"], copy=True)
    c[c > 0] = 0.5
    return c


# name -> (op on the module m and the inputs d, check): "exact", "set" (same values in any
# order) or the rtol of a library result (cuBLAS/cuSOLVER/cuFFT rounding)
OPS = {
    "add": (lambda m, d: d["a"] + d["b"], "exact"),
    "strided": (lambda m, d: d["a"][::2, ::-3] * d["b"][1::2, ::3], "exact"),
    "transposed": (lambda m, d: d["a"][:48].T + d["a"][:48], "exact"),
    "broadcast": (lambda m, d: d["a"][:, :1] - d["b"][:1, :], "exact"),
    "scalar": (lambda m, d: d["a"] * 2.5 + 1, "exact"),
    "sum_all": (lambda m, d: m.sum(d["a"]), "exact"),
    "sum_axis0": (lambda m, d: m.sum(d["a"], axis=0), "exact"),
    "sum_axis1": (lambda m, d: m.sum(d["a"][:, ::2], axis=1), "exact"),
    "argmax": (lambda m, d: m.argmax(d["r"], axis=1), "exact"),
    "cumulative_sum": (lambda m, d: m.cumulative_sum(d["a"], axis=1), "exact"),
    "sort": (lambda m, d: m.sort(d["r"], axis=-1), "exact"),
    "argsort": (lambda m, d: m.argsort(d["r"], axis=0, stable=True), "exact"),
    "unique_values": (lambda m, d: m.unique_values(d["z"]), "set"),
    "nonzero": (lambda m, d: m.nonzero(d["a"] > 0), "exact"),
    "mask": (lambda m, d: d["a"][d["a"] > 0], "exact"),
    "mask_set": (_mask_set, "exact"),
    "gather": (lambda m, d: d["a"][d["i"]], "exact"),
    "gather2": (lambda m, d: d["a"][d["i"], d["i"] % 48], "exact"),
    "take": (lambda m, d: m.take(d["a"], d["i"], axis=0), "exact"),
    "scatter": (_scatter, "exact"),
    "concat0": (lambda m, d: m.concat([d["a"], d["b"]], axis=0), "exact"),
    "concat1": (lambda m, d: m.concat([d["a"], d["b"][:, ::-1]], axis=1), "exact"),
    "matmul": (lambda m, d: d["a"] @ d["b"].T, "exact"),              # integer-valued: exact
    "where": (lambda m, d: m.where(d["a"] > 0, d["a"], d["b"]), "exact"),
    "solve": (lambda m, d: m.linalg.solve(d["s"], d["v"]), 1e-10),
    "cholesky": (lambda m, d: m.linalg.cholesky(d["s"]), 1e-12),
    "fft": (lambda m, d: m.fft.fft(d["r"], axis=-1), 1e-12),
}


@pytest.mark.parametrize("ctx", ["current0", "inside_Device1"])
@pytest.mark.parametrize("name", list(OPS))
def test_op_on_device1(name, ctx):
    op, check = OPS[name]
    d1 = {k: xp.asarray(v, device=D1) for k, v in DATA.items()}
    rt = _rt()
    if ctx == "inside_Device1":
        with xp.cuda.Device(1):
            got = op(xp, d1)
            assert rt.getDevice() == 1
    else:
        got = op(xp, d1)
    assert rt.getDevice() == 0
    want = op(np, DATA)
    gots, wants = ((list(v) if isinstance(v, tuple) else [v]) for v in (got, want))
    assert len(gots) == len(wants), (name, len(gots), len(wants))
    for g, w in zip(gots, wants):
        assert g.device == D1, name
        if check == "exact":
            assert_same(g, w, name)
        elif check == "set":
            assert_same(np.sort(host(g)), np.sort(np.asarray(w)), name)
        else:
            assert host(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(host(g), w, rtol=check, atol=check, err_msg=name)
    assert rt.getDevice() == 0
    if name == "sum_all":
        assert float(got) == float(want) and rt.getDevice() == 0


def test_count_reads_wait_for_device1_work():
    """Ops whose output size is read back from the device (boolean masks, unique, nonzero)
    on device 1 while device 0 is current: the read must wait for device 1's queued work.
    The input is written by a spin kernel 0.3 s after it was queued. Before each measured
    call a decoy (every element 1.0: other counts) runs to the end, so the pool blocks the
    measured call gets back (the most recently freed of their size) hold the decoy's counts,
    not the right ones: a read that does not wait sees a wrong count. Run in a child
    process: a count read too early sizes the output wrongly, and the kernel that fills it
    could write out of bounds (and so hurt later tests)."""
    script = textwrap.dedent(r"""
        import json, sys
        import gparray as xp, gparray.cuda as gcuda
        k = gcuda.compile_kernel(open(sys.argv[1]).read(), "spin_axpb")
        n = 1 << 20
        src = xp.arange(n, dtype=xp.float64, device=1)
        ops = {"nonzero": lambda y: xp.nonzero(y)[0].shape[0],
               "mask": lambda y: y[y > 0.5].shape[0],
               "unique_values": lambda y: xp.unique_values(y).shape[0],
               "unique_counts": lambda y: xp.unique_counts(y).values.shape[0]}
        def fresh(ns, a=1.0, b=0.0):
            y = xp.zeros(n, dtype=xp.float64, device=1)      # a * arange(n) + b from ns on
            k(256, 256, (src, y, n, a, b, ns))
            return y
        out = {}
        for name, op in ops.items():
            op(fresh(0)); gcuda.synchronize(1)               # kernels loaded, blocks cached
            for ctx in ("current0", "inside_Device1"):
                # the decoy: y = 1.0 everywhere, finished before the measured call
                out[name + ":decoy:" + ctx] = int(op(fresh(0, a=0.0, b=1.0)))
                gcuda.synchronize(1)
                if ctx == "current0":
                    got = op(fresh(300_000_000))
                else:
                    with xp.cuda.Device(1):
                        got = op(fresh(300_000_000))
                out[name + ":" + ctx] = int(got)
                gcuda.synchronize(1)
        print("RESULT " + json.dumps(out))
    """)
    env = dict(os.environ, GPARRAY_HOST_CONVERSION="allow")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, "-c", script, str(SPIN_SRC)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    got = json.loads(line[len("RESULT "):])
    decoys = {k: v for k, v in got.items() if ":decoy:" in k}
    want_decoy = {"nonzero": N, "mask": N, "unique_values": 1, "unique_counts": 1}
    assert decoys == {k: want_decoy[k.split(":")[0]] for k in decoys} and len(decoys) == 8, decoys
    got = {k: v for k, v in got.items() if k not in decoys}
    want = {"nonzero": N - 1, "mask": N - 1, "unique_values": N, "unique_counts": N}
    wrong = {k: v for k, v in got.items() if v != want[k.split(":")[0]]}
    assert not wrong and len(got) == 8, f"counts read before device 1's work was done: {wrong} (want {want})"


# ----------------------------------------------------------------------------- moves

def _sources(dtype, seed):
    """name -> (NumPy base array, view applied to both libraries)."""
    return {
        "contiguous": (sample(dtype, (5, 6), seed=seed, specials=True), lambda a: a),
        "negative_step": (sample(dtype, (5, 6), seed=seed + 1, specials=True), lambda a: a[::-2, ::-1]),
        "transposed": (sample(dtype, (5, 6), seed=seed + 2, specials=True), lambda a: a.T),
        "offset_slice": (sample(dtype, (5, 6), seed=seed + 3), lambda a: a[1:, 2:5]),
        "0-d": (sample(dtype, (), seed=seed + 4), lambda a: a),
        "empty": (sample(dtype, (0, 3), seed=seed + 5), lambda a: a),
    }


@pytest.mark.parametrize("src,dst", [(0, 1), (1, 0)])
@pytest.mark.parametrize("dtype", ALL)
def test_moves_every_dtype_and_layout(dtype, src, dst, peer_mode):
    for kind, (a, view) in _sources(dtype, seed=len(dtype)).items():
        want = view(a)
        for how in ("to_device", "asarray"):
            base = xp.asarray(a, device=src)
            x = view(base)
            z = x.to_device(xp.Device(dst)) if how == "to_device" else xp.asarray(x, device=dst)
            del x, base                                 # the source may go at once
            junk = xp.ones(a.shape, dtype=getattr(xp, dtype), device=src)   # reuses its memory
            assert z.device == xp.Device(dst), (kind, how)
            assert_same(z, want, (kind, how))
            del junk
    assert _rt().getDevice() == 0


def test_moves_to_the_same_device_and_by_name():
    x1 = xp.asarray(np.arange(4.0), device=1)
    assert x1.to_device(D1) is x1 and x1.to_device("cuda:1") is x1 and xp.asarray(x1, device=1) is x1
    for target in ("cuda:0", 0, D0):
        assert_same(x1.to_device(target), np.arange(4.0))
    y = xp.asarray(x1, device=0, dtype=xp.float32)           # a move and a cast
    assert y.device == D0 and y.dtype == xp.float32
    assert_same(y, np.arange(4.0, dtype=np.float32))
    with pytest.raises(ValueError):
        xp.asarray(x1, device=0, copy=False)
    assert x1.__dlpack_device__() == (2, 1)


@pytest.mark.parametrize("src,dst", [(0, 1), (1, 0)])
def test_large_moves(src, dst, peer_mode):
    """Sizes past 16 MiB (several staging chunks on the staged path), contiguous and not."""
    a = sample("float32", ((40 << 20) // 4 + 123,), seed=5)
    x = xp.asarray(a, device=src)
    with gcuda.profile() as prof:                              # which path the move took
        z = x.to_device(dst)
    peer = any(r.name == "memcpy PtoP" for r in prof.records)
    if peer_mode != "auto":
        assert peer == (peer_mode == "peer"), [r.name for r in prof.records]
    elif hasattr(_transfer, "peer_access"):
        assert peer == _transfer.peer_access(src, dst)
    assert_same(z, a)
    m = sample("float64", (3072, 2048), seed=6)                # 48 MiB
    xm = xp.asarray(m, device=src)
    assert_same(xm[::-1, ::2].to_device(dst), m[::-1, ::2])    # 24 MiB, not contiguous
    assert_same(xp.asarray(xm.T, device=dst), m.T)
    c = sample("complex64", (1 << 22,), seed=7)                # 32 MiB, every third moved
    assert_same(xp.asarray(c, device=src)[::-3].to_device(dst), c[::-3])


@pytest.mark.parametrize("src,dst", [(0, 1), (1, 0)])
def test_move_is_ordered_without_a_synchronize(spin, src, dst, peer_mode):
    """The copy waits for the kernel that writes the source, the source can be freed and
    its memory reused at once, and the destination's current stream waits for the copy."""
    _warm(src, dst)
    v = _fresh_value()
    x = xp.zeros(N, dtype=xp.float64, device=src)
    spin(x, v)                                     # x = v from 0.3 s on
    z = x.to_device(dst)
    del x
    junk = xp.full(N, -1.0, device=src)            # most likely x's block, on the same stream
    w = z * 2.0                                    # the destination's current stream
    assert_same(w, np.full(N, 2 * v))
    assert_same(z, np.full(N, v))
    assert_same(junk, np.full(N, -1.0))
    a = sample("float64", (N,), seed=8)            # a kernel just queued, no spin
    y = xp.asarray(a, device=src) * 2.0
    z = y.to_device(dst)
    del y
    assert_same(z, a * 2.0)


@pytest.mark.parametrize("src,dst", [(0, 1), (1, 0)])
def test_move_on_a_stream_of_either_device(spin, src, dst, peer_mode):
    _warm(src, dst)
    for s_dev in (src, dst):
        s = gcuda.Stream(device=s_dev, non_blocking=True)
        v = _fresh_value()
        x = xp.zeros(N, dtype=xp.float64, device=src)
        spin(x, v)
        z = x.to_device(dst, stream=s)
        del x
        junk = xp.full(N, -1.0, device=src)
        assert z.device == xp.Device(dst)
        if s_dev == dst:
            with s:
                u = z + 1.0
            s.synchronize()
            assert_same(u, np.full(N, v + 1.0))
        assert_same(z * 3.0, np.full(N, 3 * v))    # the destination's current stream
        assert_same(junk, np.full(N, -1.0))
        cs = _backend.cupy().cuda.Stream(non_blocking=True) if s_dev == 0 else None
        if cs is not None:                         # a CuPy stream (of device 0) is accepted too
            y = xp.asarray(np.arange(10.0), device=src)
            assert_same(y.to_device(dst, stream=cs), np.arange(10.0))
    assert _rt().getDevice() == 0


# ----------------------------------------------------------------------------- DLPack

def test_from_dlpack_of_a_cupy_array_on_device1():
    cp = _backend.cupy()
    with cp.cuda.Device(1):
        c = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    for g in (xp.from_dlpack(c), xp.asarray(c)):
        assert g.device == D1 and g.__dlpack_device__() == (2, 1)
        assert g._ptr == c.data.ptr                          # zero-copy
    v = xp.from_dlpack(c[:, ::2])
    assert v.device == D1 and v._ptr == c.data.ptr and v.shape == (3, 2)
    with cp.cuda.Device(1):
        c[1, 2] = -5.0                                       # written through CuPy
        cp.cuda.Device(1).synchronize()
    assert host(g)[1, 2] == -5.0 and host(v)[1, 1] == -5.0   # read through gparray
    assert _rt().getDevice() == 0


def test_dlpack_with_torch_on_device1():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("PyTorch does not see two CUDA devices")
    t = torch.arange(12, dtype=torch.float64, device="cuda:1").reshape(3, 4)
    g = xp.from_dlpack(t)
    assert g.device == D1 and g.__dlpack_device__() == (2, 1) and g._ptr == t.data_ptr()
    t.mul_(2.0)
    torch.cuda.synchronize(1)
    assert_same(g, np.arange(12.0).reshape(3, 4) * 2.0)
    assert_same(xp.from_dlpack(t.T[::2]), (np.arange(12.0).reshape(3, 4) * 2.0).T[::2])
    x1 = xp.asarray(DATA["r"], device=D1) * 2.0              # queued just before the export
    t1 = torch.from_dlpack(x1)
    assert t1.device == torch.device("cuda", 1) and t1.data_ptr() == x1._ptr
    np.testing.assert_array_equal(t1.cpu().numpy(), DATA["r"] * 2.0)
    assert _rt().getDevice() == 0


# ----------------------------------------------------------------------------- mixed devices

def _setitem(t):
    t.a0[t.i0] = t.a1[:2]


def _iadd(t):
    b = xp.ones((4, 4), device=D0)
    b += t.a1


MIXED = {"add": lambda t: t.a0 + t.a1, "iadd": _iadd, "matmul": lambda t: t.a0 @ t.a1,
         "concat": lambda t: xp.concat([t.a0, t.a1]), "stack": lambda t: xp.stack([t.a0, t.a1]),
         "where": lambda t: xp.where(t.m0, t.a0, t.a1), "getitem": lambda t: t.a0[t.i1], "setitem": _setitem,
         "meshgrid": lambda t: xp.meshgrid(t.a0[0], t.a1[0])}


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_device_errors_name_both_devices(name):
    t = types.SimpleNamespace(a0=xp.ones((4, 4), device=D0), a1=xp.ones((4, 4), device=D1),
                              m0=xp.ones((4, 4), dtype=xp.bool, device=D0),
                              i0=xp.asarray([0, 2], device=D0), i1=xp.asarray([0, 2], device=D1))
    with pytest.raises(ValueError) as info:
        MIXED[name](t)
    msg = str(info.value)
    assert "cuda:0" in msg and "cuda:1" in msg, msg
    assert _rt().getDevice() == 0


# ----------------------------------------------------------------------------- pools

def test_pool_statistics_are_per_device():
    gc.collect()
    n = (64 << 20) + 4096                              # an odd size: a segment of its own
    s0, s1 = gcuda.memory_stats(0), gcuda.memory_stats(D1)
    x = xp.empty((n,), dtype=xp.uint8, device=D1)
    y = xp.ones((1 << 20,), dtype=xp.float32, device="cuda:1")
    t0, t1 = gcuda.memory_stats("cuda:0"), gcuda.memory_stats(1)
    assert t1["allocated_bytes.current"] - s1["allocated_bytes.current"] >= n + (4 << 20)
    assert t1["allocation.current"] >= s1["allocation.current"] + 2
    assert t1["reserved_bytes.current"] >= n and gcuda.max_memory_allocated(1) >= n
    for key in ("allocated_bytes.current", "reserved_bytes.current", "allocation.current", "num_device_malloc"):
        assert t0[key] == s0[key], key                 # device 0's pool saw nothing
    with xp.cuda.Device(1):                            # device=None: the current device
        assert gcuda.memory_allocated() == gcuda.memory_allocated(1)
    assert gcuda.memory_allocated() == gcuda.memory_allocated(0)
    del x, y
    gc.collect()
    r0, r1 = gcuda.memory_reserved(0), gcuda.memory_reserved(1)
    assert gcuda.memory_allocated(1) == s1["allocated_bytes.current"]
    gcuda.empty_cache(1)
    assert gcuda.memory_reserved(1) <= r1 - n          # the freed segment went back to the device
    assert gcuda.memory_reserved(0) == r0
    assert _rt().getDevice() == 0


# ----------------------------------------------------------------------------- threads

def _in_thread(fn, timeout=120):
    """Run ``fn`` in a new host thread (its CUDA device: 0) and return its result."""
    box = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as exc:       # re-raised in the test's thread
            box["error"] = exc
    th = threading.Thread(target=body)
    th.start()
    th.join(timeout)
    assert not th.is_alive(), "the thread did not finish"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_stream_of_device1_used_from_a_thread_on_device0():
    s = gcuda.Stream(device=1, non_blocking=True)
    a1, b1 = xp.asarray(DATA["a"], device=D1), xp.asarray(DATA["b"], device=D1)
    s.wait_stream(gcuda.current_stream(1))             # a1, b1: made on device 1's current stream
    rt = _rt()

    def work():
        seen = {"before": rt.getDevice()}
        with s:
            seen["inside"] = rt.getDevice()
            seen["current"] = gcuda.current_stream() == s and gcuda.current_stream(0) == gcuda.default_stream(0)
            c = a1 + b1 * 2.0
            t = xp.sum(c, axis=0)
            srt = xp.sort(a1, axis=1)
            seen["on_s"] = c._buf.stream == s.ptr and t._buf.stream == s.ptr
        seen["after"] = rt.getDevice()
        s.synchronize()
        seen["c"], seen["t"], seen["srt"] = host(c), host(t), host(srt)
        seen["end"] = rt.getDevice()
        return seen
    seen = _in_thread(work)
    assert seen["before"] == 0 and seen["inside"] == 1 and seen["after"] == 0 and seen["end"] == 0
    assert seen["current"] and seen["on_s"]
    a, b = DATA["a"], DATA["b"]
    assert_same(seen["c"], a + b * 2.0)
    assert_same(seen["t"], np.sum(a + b * 2.0, axis=0))
    assert_same(seen["srt"], np.sort(a, axis=1))
    assert rt.getDevice() == 0


def test_device_contexts_of_two_threads_do_not_mix():
    """``with gparray.cuda.Device(i)`` in two threads at once, exited in the order they were
    entered: each thread gets its own previous device back."""
    rt = _rt()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def thread_a():                      # 0 -> 1 -> 0
        try:
            with xp.cuda.Device(1):
                seen["a_inside"] = rt.getDevice()
                a_in.set()
                b_in.wait(30)
            seen["a_after"] = rt.getDevice()
        finally:
            a_in.set()
            a_out.set()

    def thread_b():                      # 1 -> 0 -> 1
        try:
            rt.setDevice(1)
            a_in.wait(30)
            with xp.cuda.Device(0):
                seen["b_inside"] = rt.getDevice()
                b_in.set()
                a_out.wait(30)
            seen["b_after"] = rt.getDevice()
        finally:
            b_in.set()
    threads = [threading.Thread(target=f) for f in (thread_a, thread_b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert seen == {"a_inside": 1, "b_inside": 0, "a_after": 0, "b_after": 1}
    assert rt.getDevice() == 0


def test_runtime_calls_on_device1_keep_a_threads_current_device():
    """Calls naming device 1 from a fresh thread (no FFT plan cache, no handles there yet)
    leave the thread's current device at 0."""
    rt = _rt()
    r1 = xp.asarray(DATA["r"], device=D1)

    def work():
        out = {}
        for name, call in [("fft plan cache info", lambda: xp.fft.get_plan_cache_info(device=1)),
                           ("fft", lambda: xp.fft.fft(r1)), ("matmul", lambda: r1 @ r1.T),
                           ("cholesky", lambda: xp.linalg.cholesky(xp.asarray(DATA["s"], device=D1))),
                           ("synchronize", lambda: D1.synchronize()),
                           ("Stream", lambda: gcuda.Stream(device=1)),
                           ("memory_stats", lambda: gcuda.memory_stats(1))]:
            call()
            out[name] = rt.getDevice()
            rt.setDevice(0)                    # each call judged on its own
        return out
    out = _in_thread(work)
    assert out == dict.fromkeys(out, 0) and len(out) == 7, out
    assert rt.getDevice() == 0


# ----------------------------------------------------------------------------- inspection

def test_namespace_info_lists_both_devices():
    info = xp.__array_namespace_info__()
    devs = info.devices()
    assert isinstance(devs, tuple) and len(devs) == _backend.device_count() >= 2
    assert devs[0] == D0 and devs[1] == D1 and str(devs[1]) == "cuda:1"
    assert info.default_device() == D0
    with xp.cuda.Device(devs[1].id):
        assert info.default_device() == D1
        assert xp.zeros(3).device == D1
    assert info.default_device() == D0
    assert info.default_dtypes(device=devs[1]) == info.default_dtypes()
    assert info.dtypes(device="cuda:1") == info.dtypes()
    with pytest.raises(ValueError, match="cuda:"):
        xp.zeros(3, device=_backend.device_count())
