"""CPU tier: the compiled direct fft calls (gparray/_native/_claunch_fft.c, FftCall) and
their use by the namespace's repeat calls (gparray/fft/_transforms.py ``_run_direct``).

cuFFT's executions are stood in for by C callbacks of their signatures (ctypes), so the
compiled call makes a real C call through the address it was given; memory is a real
CachingPool over fake device memory (the call's own bookkeeping) or host buffers (the
namespace end to end, results compared with numpy.fft over tests/_fft_model.py's model of
cuFFT's layouts)."""
import ctypes
import gc

import numpy as np
import pytest

import gparray.fft._transforms as tr
from gparray._array import _ops
from gparray._array import Array
from gparray._core._device import get_device
from gparray._engine import _fft
from gparray._kernels import _launcher

from test_fft_host import ALL, HostMemory, _expected_dtype, compare, fake_fft, mem, sample  # noqa: F401

_claunch = _launcher._claunch
pytestmark = pytest.mark.skipif(_claunch is None, reason="C extension gparray._native._claunch not built")

STREAM = 0x5000
DEV = get_device(0)
C64 = np.dtype("complex64")
C2C_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
REAL_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _Stream:
    ptr = STREAM


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


@pytest.fixture
def configured():
    _claunch.configure(Array, lambda device_id: _Stream())
    yield
    if _ops._configured:
        from gparray._core import _backend

        _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
    else:
        _claunch.configure(None, None)


class Exec:
    """A stand-in cuFFT execution: records (handle, in, out[, direction]), answers ``status``."""

    def __init__(self, c2c=True, status=0):
        self.calls, self.status = [], status
        if c2c:
            self.fn = C2C_T(lambda h, i, o, d: self._rec(h, i, o, d))
        else:
            self.fn = REAL_T(lambda h, i, o: self._rec(h, i, o))
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value

    def _rec(self, *args):
        self.calls.append(args)
        return self.status


def _pool():
    from test_memory_pool import make_pool

    return make_pool()[0]


def _x(shape=(4, 8), ptr=0x7000, offset=16):
    strides = tuple(np.empty(shape, C64).strides)
    return Array._new(_Buf(ptr), offset, shape, strides, C64, DEV)


def test_a_call_makes_the_execution_into_a_new_pool_block(configured):
    pool, ex = _pool(), Exec()
    call = _claunch.FftCall(ex.addr, -1, 256, (4, 8), (64, 8), True, C64, DEV, pool)
    out = call(_x(), 7)
    assert type(out) is Array and out._shape == (4, 8) and out._strides == (64, 8)
    assert out._dtype is C64 and out._device is DEV and out._offset == 0 and out._flags is True
    assert out._buf.nbytes == 256 and out._buf.stream == STREAM
    assert ex.calls == [(7, 0x7010, out._buf.ptr, -1)]
    assert pool.stats()["allocated_bytes.current"] == 512        # (256 rounded up to 512)
    del out
    gc.collect()
    again = call(_x(), 7)                                         # the last free, taken back
    assert ex.calls[-1] == (7, 0x7010, again._buf.ptr, -1) and len(ex.calls) == 2


def test_a_strided_result_is_not_marked_contiguous(configured):
    """fft(x, axis=0) of a C-ordered matrix writes each transformed column contiguously:
    the result is a transposed layout whose contiguity the Array works out itself."""
    pool, ex = _pool(), Exec()
    call = _claunch.FftCall(ex.addr, 1, 256, (4, 8), (8, 32), False, C64, DEV, pool)
    out = call(_x(), 3)
    assert out._strides == (8, 32) and out._flags is None and not out._is_c_contig()
    assert ex.calls == [(3, 0x7010, out._buf.ptr, 1)]


def test_real_transforms_pass_no_direction(configured):
    pool, ex = _pool(), Exec(c2c=False)
    call = _claunch.FftCall(ex.addr, 0, 128, (4, 4), (32, 8), True, C64, DEV, pool)
    out = call(_x(), 9)
    assert ex.calls == [(9, 0x7010, out._buf.ptr)]


def test_a_failed_execution_answers_its_status_and_keeps_the_pool_even(configured):
    pool, ex = _pool(), Exec(status=6)
    call = _claunch.FftCall(ex.addr, -1, 256, (4, 8), (64, 8), True, C64, DEV, pool)
    assert call(_x(), 7) == 6 and len(ex.calls) == 1
    gc.collect()
    pool.stats()          # (applies the queued frees)
    assert pool.stats()["allocated_bytes.current"] == 0


def test_unconfigured_answers_none_and_bad_calls_raise():
    ex = Exec()
    pool = _pool()
    _claunch.configure(None, None)
    try:
        call = _claunch.FftCall(ex.addr, -1, 256, (4, 8), (64, 8), True, C64, DEV, pool)
        assert call(_x(), 7) is None and ex.calls == []
    finally:
        if _ops._configured:
            from gparray._core import _backend

            _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
    _claunch.configure(Array, lambda device_id: _Stream())
    try:
        with pytest.raises(TypeError):
            call(np.zeros(3), 7)
        with pytest.raises(ValueError, match="handle"):
            call(_x(), 0)
        with pytest.raises(TypeError):
            call(_x())
        assert ex.calls == []
    finally:
        _claunch.configure(None, None)
        if _ops._configured:
            from gparray._core import _backend

            _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
    for bad in ((ex.addr, 2, 256, (4,), (8,), True, C64, DEV, pool),      # direction
                (ex.addr, 0, 0, (4,), (8,), True, C64, DEV, pool),        # no bytes
                (0, 0, 256, (4,), (8,), True, C64, DEV, pool),            # no function
                (ex.addr, 0, 256, (4, 4), (8,), True, C64, DEV, pool)):   # strides' length
        with pytest.raises(ValueError):
            _claunch.FftCall(*bad)


def test_the_engine_builds_the_call_only_with_a_pool_and_one_execution(monkeypatch):
    ex, rex = Exec(), Exec(c2c=False)
    step = tr._fp.recipe(tr._fp.C2C, (4, 8), (8, 1), (1,), (8,), None, True, True, False, False).single()[0]
    monkeypatch.setattr(_fft, "_lib", lambda: type("L", (), {"exec_addrs": {(tr._fp.C2C, False): ex.addr,
                                                                            (tr._fp.R2C, False): rex.addr}})())
    args = (256, (4, 8), (64, 8), True, C64, DEV)
    monkeypatch.setattr(_fft._memory, "_pools", {})
    assert _fft.direct_call(step, False, True, *args) is None           # no pool on the device
    monkeypatch.setattr(_fft._memory, "_pools", {0: _pool()})
    assert type(_fft.direct_call(step, False, True, *args)) is _claunch.FftCall
    assert _fft.direct_call(step, False, True, 0, (0, 8), (64, 8), True, C64, DEV) is None   # nothing to write


# ---------------------------------------------------------------------------- end to end
@pytest.fixture
def compiled(mem, monkeypatch, configured):
    """The namespace over host memory (tests/test_fft_host.py) with the compiled direct
    calls on: results from a pool of host blocks, cuFFT's executions by C callbacks that run
    the model on the step the fake ready_plan handed out last."""
    fake = tr._fft
    runs = []
    monkeypatch.setattr(tr, "_specs", {})      # (calls recorded by other tests, without a compiled call)
    monkeypatch.setattr(tr, "_direct", {})

    class HostPool:
        def malloc(self, nbytes, stream):
            assert stream == STREAM
            return mem.block(nbytes)

    def run(forward, in_ptr, out_ptr):
        runs.append(fake.readies[-1])
        fake.execute(fake.readies[-1], False, forward, in_ptr, out_ptr, 0)
        return 0

    c2c = C2C_T(lambda h, i, o, d: run(d == _fft.FORWARD, i, o))
    real = REAL_T(lambda h, i, o: run(True, i, o))
    addrs = {True: ctypes.cast(c2c, ctypes.c_void_p).value, False: ctypes.cast(real, ctypes.c_void_p).value}
    pool = HostPool()

    def direct_call(step, double, forward, nbytes, shape, strides, contig, dtype, device):
        assert not double
        direction = (_fft.FORWARD if forward else _fft.INVERSE) if step.kind == tr._fp.C2C else 0
        return _claunch.FftCall(addrs[step.kind == tr._fp.C2C], direction, nbytes, shape, strides, contig,
                                dtype, device, pool)

    fake.direct_call = direct_call
    monkeypatch.setattr(tr._ops, "_configure", lambda: None)    # (configured above, with the test's stream)
    mem.runs, mem.keep = runs, (c2c, real)
    return mem


@pytest.mark.parametrize("name,kw,direct", [
    ("fft", {}, ALL), ("fft", {"axis": 0}, ALL), ("rfft", {"axis": 0}, ALL), ("fftn", {"axes": (0, 1)}, ALL),
    ("ifft", {"norm": "forward"}, ALL), ("rfftn", {}, ("c", "step")), ("ifft", {}, ())])
def test_repeat_calls_through_the_compiled_call_match_numpy(compiled, name, kw, direct):
    src = sample((6, 10), "float32" if name in ("rfft", "rfftn") else "complex64", seed=7)
    want = getattr(np.fft, name)(src, **kw).astype(_expected_dtype(name, src.dtype))
    for layout in ("c", "T", "step"):
        x = compiled.array(src, layout)
        compiled.runs.clear()
        outs = [getattr(tr, name)(x, **kw) for _ in range(3)]
        for out in outs:
            compare(compiled, out, want, src.dtype)
        assert len({o._buf.ptr for o in outs}) == 3           # each its own result
        if layout in direct:
            assert len(compiled.runs) >= 2, (name, kw, layout)  # the repeats: in C
        else:
            assert compiled.runs == [], (name, kw, layout)
