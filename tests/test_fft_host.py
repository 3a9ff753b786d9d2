"""CPU tier: the ``fft`` namespace end to end on host memory. gparray Arrays are built over
NumPy-owned host buffers; the three things below the namespace that need a GPU are replaced
for the test: the allocator (``_empty``: host buffers filled with NaN bytes), the
elementwise engine (fill, copy, multiply by a scalar, conj, real, as NumPy does them) and
cuFFT (``_fft.execute``: tests/_fft_model.py's model of its advanced layout). What is left
is the namespace's own logic: argument rules, dtypes, n/s padding and truncation, the
normalization of every norm, hfft/ihfft, the recipes' buffers and views; the results are
compared with numpy.fft. The argument errors are checked here too (they come before any
device work)."""
import math
import types

import numpy as np
import pytest

import gparray.fft._transforms as tr
from _fft_model import Mem, run_step
from gparray._array import Array
from gparray._core._device import get_device
from gparray._engine import _fft, _shapes
from gparray._engine import _fft_plan as fp

DEV = get_device(0)


class HostBlock:
    """A host buffer standing in for a pool Block (``ptr`` 512-byte aligned)."""

    def __init__(self, nbytes):
        self.raw = np.full(nbytes + 1024, 0xFF, dtype=np.uint8)    # NaN bytes for floats
        self.skew = (-self.raw.ctypes.data) % 512
        self.ptr = self.raw.ctypes.data + self.skew
        self.size = nbytes


class HostMemory:
    def __init__(self):
        self.blocks = []

    def block(self, nbytes):
        b = HostBlock(nbytes)
        self.blocks.append(b)
        return b

    def find(self, ptr):
        for b in self.blocks:
            if b.ptr <= ptr <= b.ptr + b.size:
                return b
        raise AssertionError(f"pointer {ptr:#x} is in no host block")

    def ndview(self, ptr, shape, bstrides, dtype):
        b = self.find(ptr)
        return np.ndarray(shape, dtype, buffer=b.raw, offset=b.skew + (ptr - b.ptr), strides=bstrides)

    def view(self, a):
        return self.ndview(a._ptr, a._shape, a._strides, a._dtype)

    def empty(self, shape, dtype, dev):
        blk = self.block(max(math.prod(shape), 1) * dtype.itemsize)
        return Array._new(blk, 0, tuple(shape), _shapes.c_strides(shape, dtype.itemsize), dtype, dev)

    def array(self, a, layout="c"):
        """A gparray Array over host memory with ``a``'s values, in ``layout``: c, T (the
        axes reversed in memory), step (every other element of a larger array), neg
        (reversed along axis 0)."""
        a = np.asarray(a)
        if layout == "T":
            base = np.ascontiguousarray(np.transpose(a))
            view_perm = tuple(reversed(range(a.ndim)))
            blk = self.block(base.nbytes)
            self.ndview(blk.ptr, base.shape, base.strides, base.dtype)[...] = base
            strides = tuple(base.strides[i] for i in view_perm)
            return Array._new(blk, 0, a.shape, strides, a.dtype, DEV)
        if layout == "step":
            big = np.zeros(tuple(2 * e for e in a.shape), a.dtype)
            big[tuple(slice(None, None, 2) for _ in a.shape)] = a
            blk = self.block(big.nbytes)
            self.ndview(blk.ptr, big.shape, big.strides, big.dtype)[...] = big
            return Array._new(blk, 0, a.shape, tuple(2 * s for s in big.strides), a.dtype, DEV)
        if layout == "neg":
            base = np.ascontiguousarray(a[::-1])
            blk = self.block(base.nbytes)
            self.ndview(blk.ptr, base.shape, base.strides, base.dtype)[...] = base
            off = (a.shape[0] - 1) * base.strides[0]
            return Array._new(blk, off, a.shape, (-base.strides[0],) + base.strides[1:], a.dtype, DEV)
        base = np.array(a, order="C")       # (ascontiguousarray would make 0-d arrays 1-d)
        blk = self.block(max(base.nbytes, 1))
        self.ndview(blk.ptr, base.shape, base.strides, base.dtype)[...] = base
        return Array._new(blk, 0, a.shape, base.strides, a.dtype, DEV)


def fake_fft(execute, ready=True):
    """The engine as the namespace sees it, over a fake ``execute``: ``ready_plan`` (the
    transforms' repeat calls) hands out a plan whose ``exec`` runs that same ``execute``
    (``ready=False``: never ready, so every call takes the general path); ``readies`` counts
    the plans handed out."""
    ns = types.SimpleNamespace(execute=execute, rejected=_fft.rejected, FORWARD=_fft.FORWARD,
                               INVERSE=_fft.INVERSE, CuFFTError=_fft.CuFFTError, readies=[],
                               direct_call=lambda *a: None)   # (the compiled call: tests/test_fft_compiled.py)

    def ready_plan(step, double, dev):
        if not ready or step.loops:
            return None

        def run(handle, in_ptr, out_ptr, direction=None):
            assert handle == 7
            ns.execute(step, double, direction != _fft.INVERSE, in_ptr, out_ptr, dev)

        ns.readies.append(step)
        return types.SimpleNamespace(handle=7, exec=run)

    ns.ready_plan = ready_plan
    return ns


@pytest.fixture
def mem(monkeypatch):
    m = HostMemory()

    def fill(dst, value):
        m.view(dst)[...] = value

    def copy_into(dst, src):
        m.view(dst)[...] = m.view(src).astype(dst._dtype)

    def scalar(op, a, value, swap, out, ct):
        assert op == "multiply" and not swap
        m.view(out)[...] = (m.view(a).astype(ct) * ct.type(value)).astype(out._dtype)

    def unary(op, x, out, ct):
        v = m.view(x).astype(ct)
        if op == "conj":
            m.view(out)[...] = np.conj(v)
        elif op == "real":
            m.view(out)[...] = v.real
        else:
            raise AssertionError(op)

    calls = []

    def execute(step, double, forward, in_ptr, out_ptr, dev):
        assert dev == 0
        c, r = (np.complex128, np.float64) if double else (np.complex64, np.float32)
        idt = r if step.kind == fp.R2C else c
        odt = r if step.kind == fp.C2R else c
        if step.kind == fp.R2C:
            assert in_ptr % (2 * np.dtype(idt).itemsize) == 0, "cuFFT wants R2C input aligned as complex"
        if step.kind == fp.C2R:
            assert out_ptr % (2 * np.dtype(odt).itemsize) == 0, "cuFFT wants C2R output aligned as complex"
        mems = []
        for ptr, dt in ((in_ptr, idt), (out_ptr, odt)):
            b = m.find(ptr)
            isz = np.dtype(dt).itemsize
            flat = np.ndarray(((b.size + 512) // isz,), dt, buffer=b.raw, offset=b.skew)
            assert (ptr - b.ptr) % isz == 0
            mems.append(Mem(flat, (ptr - b.ptr) // isz, (), ()))
        run_step(step, mems[0], mems[1], forward)
        calls.append(step)

    monkeypatch.setattr(tr, "_empty", m.empty)
    monkeypatch.setattr(tr, "_ew", types.SimpleNamespace(fill=fill, copy_into=copy_into, scalar=scalar,
                                                         unary=unary))
    monkeypatch.setattr(tr, "_fft", fake_fft(execute))
    m.calls = calls
    return m


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        return rng.integers(-5, 6, shape).astype(dt)
    a = rng.standard_normal(shape)
    if dt.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dt)


def tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def compare(mem, got, want, dtype):
    g = mem.view(got).copy()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert g.shape == want.shape, (g.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(g, want, rtol=tol(dtype), atol=tol(dtype) * scale)


NORMS = ["backward", "ortho", "forward"]
ONE_D = [("fft", "c"), ("ifft", "c"), ("rfft", "r"), ("irfft", "c"), ("hfft", "c"), ("ihfft", "r")]


def _expected_dtype(name, dtype):
    dt = np.dtype(dtype)
    real = {"c8": np.float32, "c16": np.float64}
    if name in ("irfft", "hfft", "irfftn"):
        c = np.complex64 if dt in (np.float32, np.complex64) else np.complex128
        return np.dtype(real["c8" if c == np.complex64 else "c16"])
    return np.dtype(np.complex64 if dt in (np.float32, np.complex64) else np.complex128)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,kind", ONE_D)
def test_one_dimensional_transforms_match_numpy(mem, name, kind, norm):
    dtypes = ["float32", "float64"] if kind == "r" else ["complex64", "complex128", "float64"]
    for dtype in dtypes:
        for shape, axis in (((16,), -1), ((7, 6), 0), ((5, 9), 1), ((3, 4, 5), 1), ((3, 4, 5), -3)):
            a = sample(shape, dtype, seed=len(shape))
            m = a.shape[axis]
            ns = [None, m + 3, max(m - 2, 1)] if name not in ("irfft", "hfft") else [None, 2 * m - 1, 4]
            for n in ns:
                for layout in ("c", "T", "step", "neg"):
                    x = mem.array(a, layout)
                    got = getattr(tr, name)(x, n=n, axis=axis, norm=norm)
                    want = getattr(np.fft, name)(a, n=n, axis=axis, norm=norm)
                    want = want.astype(_expected_dtype(name, dtype))
                    compare(mem, got, want, dtype)
                    assert mem.view(x).tolist() == a.tolist(), "the input was modified"


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_n_dimensional_transforms_match_numpy(mem, name, norm):
    real_in = name == "rfftn"
    for dtype in (["float32", "float64"] if real_in else ["complex64", "complex128"]):
        a = sample((4, 5, 6, 3), dtype, seed=3)
        cases = [(None, None), (None, (0, 2)), ((3, 8), (2, 0)), ((4, 4, 7), (-1, 1, 2)),
                 ((2, 5, 6, 4), (0, 1, 2, 3)), ((-1, 3), (1, 3))]
        for s, axes in cases:
            if s is not None and name == "irfftn" and s[-1] == -1:
                continue
            for layout in ("c", "T", "neg"):
                x = mem.array(a, layout)
                got = getattr(tr, name)(x, s=s, axes=axes, norm=norm)
                want = getattr(np.fft, name)(a, s=s, axes=axes, norm=norm)
                compare(mem, got, want.astype(_expected_dtype(name, dtype)), dtype)


def test_integer_and_real_inputs_are_promoted(mem):
    a = sample((6, 4), "int32")
    got = tr.fft(mem.array(a), axis=0)
    assert got.dtype == np.complex128
    compare(mem, got, np.fft.fft(a, axis=0), "complex128")
    got = tr.rfft(mem.array(a.astype(np.int64)))
    compare(mem, got, np.fft.rfft(a), "complex128")
    got = tr.ifft(mem.array(sample((5,), "float32")))
    assert got.dtype == np.complex64
    b = sample((4,), "bool")
    compare(mem, tr.fftn(mem.array(b)), np.fft.fftn(b.astype(np.float64)), "complex128")


def test_axes_that_need_no_transform_give_a_copy(mem):
    a = sample((3, 1), "complex64")
    x = mem.array(a)
    got = tr.fftn(x, axes=(1,))
    assert got._buf is not x._buf
    compare(mem, got, np.fft.fftn(a, axes=(1,)).astype(np.complex64), "complex64")
    got = tr.fftn(x, axes=())
    compare(mem, got, a, "complex64")
    z = mem.array(np.array(2 + 1j, np.complex128))
    compare(mem, tr.fftn(z), np.array(2 + 1j), "complex128")


def test_empty_batches_and_padding_from_empty(mem):
    a = np.zeros((0, 4), np.complex64)
    got = tr.fft(mem.array(a))
    assert got.shape == (0, 4) and got.dtype == np.complex64
    b = np.zeros((3, 0), np.complex128)
    compare(mem, tr.fft(mem.array(b), n=5), np.fft.fft(b, n=5), "complex128")


def test_plans_run_without_relayout_for_the_bench_layouts(mem):
    a = sample((64, 32), "complex64")
    mem.calls.clear()
    compare(mem, tr.fft(mem.array(a), axis=0), np.fft.fft(a, axis=0).astype(np.complex64), "complex64")
    (step,) = mem.calls
    assert step.istride == 32 and step.idist == 1 and step.batch == 32


class CuPyCuFFTError(RuntimeError):
    """Like cupy.cuda.cufft.CuFFTError: the status in ``result``."""

    def __init__(self, result):
        super().__init__(f"cufft {result}")
        self.result = result


CuPyCuFFTError.__name__ = "CuFFTError"


ALL = ("c", "T", "step")


@pytest.mark.parametrize("name,kw,direct", [
    ("fft", {}, ALL), ("fft", {"axis": 0}, ALL), ("rfft", {"axis": 0}, ALL), ("fftn", {"axes": (0, 1)}, ALL),
    ("rfftn", {}, ("c", "step")),          # (transposed: the real input is first copied into place)
    ("ifft", {"norm": "forward"}, ALL),
    ("irfft", {"norm": "forward"}, ()),    # (C2R overwrites its input: a copy comes first)
    ("ifft", {}, ()), ("fft", {"norm": "ortho"}, ()),      # (a normalization follows)
    ("hfft", {}, ()), ("ihfft", {}, ()),   # (a conjugation)
    ("fft", {"n": 13}, ())])               # (zero padding)
def test_repeat_calls_run_cufft_directly_when_nothing_else_runs(mem, name, kw, direct):
    """A repeat call whose recipe is one cuFFT call into a new buffer and nothing else (no
    normalization, no conjugation, no copy) takes the direct path: the plan from ready_plan,
    the result allocated, plan.exec; the others keep the general path. Both give numpy.fft's
    answer, call after call, in every layout."""
    src = sample((6, 10), "float32" if name in ("rfft", "rfftn", "ihfft") else "complex64", seed=3)
    want = getattr(np.fft, name)(src, **kw).astype(_expected_dtype(name, src.dtype))
    for layout in ("c", "T", "step"):
        x = mem.array(src, layout)
        tr._fft.readies.clear()
        for _ in range(3):
            compare(mem, getattr(tr, name)(x, **kw), want, src.dtype)
        if layout in direct:
            assert len(tr._fft.readies) >= 2, (name, kw, layout)     # (the first call may be general)
        else:
            assert tr._fft.readies == [], (name, kw, layout)


def test_direct_calls_fall_back_when_the_plan_is_not_ready(mem, monkeypatch):
    """ready_plan answering None (another stream, a cleared cache, a profile) sends the call
    to the general path, which runs it the same way."""
    src = sample((8, 6), "complex64", seed=5)
    x = mem.array(src, "c")
    compare(mem, tr.fft(x, axis=0), np.fft.fft(src, axis=0), src.dtype)
    ran = len(mem.calls)
    monkeypatch.setattr(tr._fft, "ready_plan", lambda *a: None)
    compare(mem, tr.fft(x, axis=0), np.fft.fft(src, axis=0), src.dtype)
    assert len(mem.calls) == ran + 1 and tr._fft.readies == []


def test_rejected_layouts_fall_back_to_basic_ones(mem, monkeypatch):
    inner = tr._fft.execute
    rejected = []

    def execute(step, *args):
        if step.inembed is not None or step.loops:     # a cuFFT that takes basic layouts only
            rejected.append(step)
            raise CuPyCuFFTError(4)
        inner(step, *args)
    monkeypatch.setattr(tr, "_fft", fake_fft(execute))
    a = sample((4, 5, 6), "float32", seed=4)
    total = 0
    for name, kw in (("rfftn", {"axes": (0, 1)}), ("rfft", {"axis": 0}), ("fft", {"axis": 1}),
                     ("irfftn", {"axes": (2, 0)}), ("fftn", {"axes": (0, 2)})):
        src = a if name.startswith("r") else a.astype(np.complex64)
        for layout in ("c", "T", "step"):
            rejected.clear()
            for _ in range(2):      # the second call: the memoized basic recipe, nothing rejected
                got = getattr(tr, name)(mem.array(src, layout), **kw)
                want = getattr(np.fft, name)(src, **kw)
                compare(mem, got, want.astype(_expected_dtype(name, src.dtype)), src.dtype)
            assert len(rejected) <= 1, (name, layout)
            total += len(rejected)
    assert total >= 5
    other = CuPyCuFFTError(6)      # an execution failure that is not a layout's: raised as is
    monkeypatch.setattr(tr, "_fft", fake_fft(lambda *a: (_ for _ in ()).throw(other)))
    with pytest.raises(RuntimeError, match="cufft 6"):
        tr.fft(mem.array(sample((8,), "complex64")))


@pytest.mark.parametrize("call,exc,match", [
    (lambda x: tr.rfft(x), TypeError, "^rfft: expected a real-valued"),
    (lambda x: tr.fft(x, n=0), ValueError, "^fft: invalid number of data points"),
    (lambda x: tr.fft(x, n=2.0), TypeError, "^fft: n must be an integer"),
    (lambda x: tr.fft(x, axis=2), ValueError, "^fft: axis 2 is out of bounds"),
    (lambda x: tr.fft(x, norm="ortho2"), ValueError, "^fft: norm must be"),
    (lambda x: tr.fftn(x, axes=(0, 0)), ValueError, "^fftn: axes .* repeat"),
    (lambda x: tr.fftn(x, s=(2,), axes=(0, 1)), ValueError, "^fftn: s and axes have different lengths"),
    (lambda x: tr.ifftn(x, s=(0, 2), axes=(0, 1)), ValueError, "^ifftn: invalid number of data points"),
    (lambda x: tr.irfftn(x, axes=()), ValueError, "^irfftn: expected at least one axis"),
    (lambda x: tr.ihfft(x), TypeError, "^ihfft: expected a real-valued"),
    (lambda x: tr.fft([1, 2]), TypeError, "^fft: expected a gparray Array"),
])
def test_argument_errors(mem, call, exc, match):
    x = mem.array(sample((3, 4), "complex64"))
    with pytest.raises(exc, match=match):
        call(x)


def test_irfft_of_a_single_point_needs_n(mem):
    x = mem.array(sample((1,), "complex64"))
    with pytest.raises(ValueError, match="^irfft: invalid number of data points \\(0\\)"):
        tr.irfft(x)
    compare(mem, tr.irfft(x, n=1), np.fft.irfft(mem.view(x), n=1).astype(np.float32), "complex64")


def test_random_calls_match_numpy(mem):
    rng = np.random.default_rng(7)
    names = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn"]
    for case in range(300):
        name = names[case % len(names)]
        nd = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(2, 6, nd))
        real_in = name in ("rfft", "ihfft", "rfftn")
        dtype = ("float32", "float64")[case % 2] if real_in else ("complex64", "complex128")[case % 2]
        a = sample(shape, dtype, seed=case)
        layout = ("c", "T", "step", "neg")[int(rng.integers(0, 4))]
        norm = NORMS[int(rng.integers(0, 3))]
        if name.endswith("n"):
            k = int(rng.integers(1, nd + 1))
            axes = tuple(int(v) - (nd if rng.random() < 0.3 else 0) for v in rng.permutation(nd)[:k])
            s = None if rng.random() < 0.3 else tuple(int(v) for v in rng.integers(1, 8, k))
            kw = {"s": s, "axes": axes, "norm": norm}
        else:
            axis = int(rng.integers(-nd, nd))
            n = None if rng.random() < 0.3 else int(rng.integers(1, 9))
            kw = {"n": n, "axis": axis, "norm": norm}
        got = getattr(tr, name)(mem.array(a, layout), **kw)
        want = getattr(np.fft, name)(a, **kw).astype(_expected_dtype(name, dtype))
        try:
            compare(mem, got, want, dtype)
        except AssertionError as exc:
            raise AssertionError(f"case {case}: {name}{shape} {dtype} {layout} {kw}") from exc
