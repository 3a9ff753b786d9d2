"""CPU tier: the compiled repeat reductions (gparray/_native/_claunch_reduce.c, RTable) and
their recorder (gparray/_engine/_reduce_fast.py) over fake memory, a fake stream and launch
callables that record what they are given (one test goes through a real Launch and the
stand-in driver, so the packed parameter buffer is checked too).

Each test builds its own RTable; the namespace's tables are untouched."""
import gc
import struct
import weakref
from typing import NamedTuple

import numpy as np
import pytest

from gparray._array import _ops
from gparray._api import _statistical
from gparray._array import Array
from gparray._core._device import Device
from gparray._engine import _launch, _reduce_fast
from gparray._engine._launch import BLOCK
from gparray._kernels import _launcher

_claunch = _launcher._claunch
pytestmark = pytest.mark.skipif(_claunch is None, reason="C extension gparray._native._claunch not built")

STREAM = 0x5000
DEV, OTHER = Device(0), Device(1)
f32, f64 = np.dtype("float32"), np.dtype("float64")
P0 = np.uint64(0)


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


class _Stream:
    ptr = STREAM


class _Pool:
    """malloc(nbytes, stream) -> a block with .ptr; keeps weak references to what it gave."""

    def __init__(self, fail_at=None):
        self.calls, self.blocks, self.next, self.fail_at = [], [], 0x100000, fail_at

    def malloc(self, nbytes, stream):
        if self.fail_at == len(self.calls):
            raise MemoryError("pool: out of memory (test)")
        self.calls.append((nbytes, stream))
        b = _Buf(self.next)
        self.blocks.append(weakref.ref(b))
        self.next += 0x10000
        return b


class _Recorder:
    """A launch callable: records (grid, block, values, shared_mem, stream)."""

    def __init__(self, fail=False):
        self.calls, self.fail = [], fail

    def __call__(self, grid, block, values, smem, stream):
        self.calls.append((grid, block, values, smem, stream))
        if self.fail:
            raise RuntimeError("launch failed (test)")


def _arr(shape, dtype=f32, ptr=0x7000, offset=0, strides=None, device=DEV):
    isz = np.dtype(dtype).itemsize
    if strides is None:
        strides = tuple(np.empty(shape, dtype).strides) if all(shape) else tuple(isz for _ in shape)
    return Array._new(_Buf(ptr), offset, tuple(shape), tuple(strides), np.dtype(dtype), device)


@pytest.fixture
def env():
    log = []
    _claunch.configure(Array, lambda device_id: _Stream())
    _claunch._stub_driver(log)
    yield log
    _claunch._stub_context(None)
    _claunch._stub_driver(None)
    if _ops._configured:
        from gparray._core import _backend

        _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
    else:
        _claunch.configure(None, None)


def _add(t, pool, k1, k2=None, *, shape=(64, 8), axis=1, dtype=f32, aligned=True, ws=0, device=DEV):
    out_shape = (64,) if axis is not None else ()
    return t.add(dtype, shape, axis, device, aligned, dtype.itemsize, out_shape, (4,) if out_shape else (),
                 f32, 4 * (64 if out_shape else 1), k1, 7, (b"\x01\x02",), k2 if k2 is not None else None,
                 3 if k2 is not None else 0, (b"\x09",), BLOCK, ws, pool)


def test_a_recorded_call_is_launched_and_built_like_the_python_path(env):
    t, pool, k1 = _claunch.RTable(), _Pool(), _Recorder()
    assert _add(t, pool, k1) and len(t) == 1
    x = _arr((64, 8), ptr=0x7000, offset=32)
    out = t.serve(x, 1)
    assert type(out) is Array and out._shape == (64,) and out._strides == (4,) and out._dtype == f32
    assert out._device is DEV and out._offset == 0 and out._flags is True and out._buf.ptr == 0x100000
    assert pool.calls == [(256, STREAM)]                       # the result only: no workspace
    assert k1.calls == [(7, BLOCK, (0x100000, 0, 0x7020, b"\x01\x02"), 0, STREAM)]


def test_a_two_pass_plan_takes_a_workspace_and_gives_it_back(env):
    t, pool, k1, k2 = _claunch.RTable(), _Pool(), _Recorder(), _Recorder()
    assert _add(t, pool, k1, k2, ws=4096)
    out = t.serve(_arr((64, 8)), 1)
    assert pool.calls == [(4096, STREAM), (256, STREAM)]       # the workspace first
    assert k1.calls == [(7, BLOCK, (0x110000, 0x100000, 0x7000, b"\x01\x02"), 0, STREAM)]
    assert k2.calls == [(3, BLOCK, (0x110000, 0x100000, b"\x09"), 0, STREAM)]
    gc.collect()
    assert pool.blocks[0]() is None                           # the workspace: released
    assert pool.blocks[1]() is out._buf                        # the result's block: the Array's


def test_repeat_calls_take_back_the_last_calls_result_and_workspace(env):
    """Over a real CachingPool (fake device memory): the workspace a served call gives back
    and the result the caller drops queue their frees; the next call takes both chunks back
    (no pool.malloc at all: the workspace is found behind the result) and the statistics
    stay exact."""
    from test_memory_pool import check_internal, make_pool

    pool, _, _ = make_pool()
    mallocs = []
    real_malloc = pool.malloc

    def malloc(nbytes, stream):
        mallocs.append(nbytes)
        return real_malloc(nbytes, stream)

    pool.malloc = malloc                                  # what the table entry calls
    t, k1, k2 = _claunch.RTable(), _Recorder(), _Recorder()
    assert _add(t, pool, k1, k2, ws=4096)
    x = _arr((64, 8))
    out = t.serve(x, 1)
    assert mallocs == [4096, 256]
    ws_ptr = k1.calls[-1][2][1]
    first = out._buf._chunk
    del out
    assert [n for _, n in pool._deferred] == [4096, 256]  # the workspace's free, then the result's
    out = t.serve(x, 1)
    assert mallocs == [4096, 256] and out._buf._chunk is first
    assert [n for _, n in pool._deferred] == [4096]       # this call's workspace, given back
    assert k1.calls[-1][2][:2] == (first.ptr, ws_ptr) and k2.calls[-1][2][:2] == (first.ptr, ws_ptr)
    # the result still held (as a caller timing call after call keeps the last one): the
    # workspace is still the previous call's, only the result is a malloc
    held = t.serve(x, 1)
    assert mallocs == [4096, 256, 256] and k1.calls[-1][2][1] == ws_ptr
    del held
    s = pool.stats()       # (applies the queued frees)
    assert s["allocated_bytes.current"] == 512 and s["allocation.current"] == 1
    t2 = _claunch.RTable()
    assert _add(t2, pool, k1, k2, ws=8192, shape=(64, 16))   # another workspace size: a malloc
    other = t2.serve(_arr((64, 16)), 1)
    assert mallocs[3:] == [8192, 256] and other._buf._chunk is not first
    del out, other
    assert pool.stats()["allocation.current"] == 0
    check_internal(pool)


@pytest.mark.parametrize("case", ["dtype", "shape", "axis", "axis None", "axis bool", "device", "strided",
                                  "misaligned", "not an array", "other context"])
def test_everything_else_is_not_served(env, case):
    t, pool, k1 = _claunch.RTable(), _Pool(), _Recorder()
    _claunch._stub_context(0xC0)
    assert _add(t, pool, k1)
    x, axis = _arr((64, 8)), 1
    if case == "dtype":
        x = _arr((64, 8), f64)
    elif case == "shape":
        x = _arr((64, 9))
    elif case == "axis":
        axis = 0
    elif case == "axis None":
        axis = None
    elif case == "axis bool":
        axis = True
    elif case == "device":
        x = _arr((64, 8), device=OTHER)
    elif case == "strided":
        x = _arr((64, 8), strides=(4, 256))
    elif case == "misaligned":
        x = _arr((64, 8), offset=4)
    elif case == "not an array":
        x = np.ones((64, 8), np.float32)
    else:
        _claunch._stub_context(0xC1)
    assert t.serve(x, axis) is None
    assert k1.calls == [] and pool.calls == []


def test_keys_are_unique_and_the_table_is_bounded(env):
    t, pool = _claunch.RTable(max_entries=2), _Pool()
    assert _add(t, pool, _Recorder())
    assert not _add(t, pool, _Recorder())                      # the same key again
    assert _add(t, pool, _Recorder(), axis=None)
    assert not _add(t, pool, _Recorder(), shape=(64, 9))       # full
    assert [k[2] for k in t.keys()] == [1, None] and len(t) == 2
    assert t.serve(_arr((64, 8)), None)._shape == ()
    t.clear()
    assert len(t) == 0 and t.serve(_arr((64, 8)), 1) is None


def test_aligned_and_misaligned_inputs_have_entries_of_their_own(env):
    t, pool, k1, k2 = _claunch.RTable(), _Pool(), _Recorder(), _Recorder()
    assert _add(t, pool, k1) and _add(t, pool, k2, aligned=False)
    t.serve(_arr((64, 8), offset=4), 1)
    t.serve(_arr((64, 8), offset=16), 1)
    assert [c[2][2] for c in k2.calls] == [0x7004] and [c[2][2] for c in k1.calls] == [0x7010]
    assert sorted(k[4] for k in t.keys()) == [False, True]


def test_bad_entries_are_refused():
    t, pool = _claunch.RTable(), _Pool()
    with pytest.raises(TypeError):
        _add(t, pool, _Recorder(), axis=(0, 1))
    with pytest.raises(ValueError):
        _add(t, pool, "not callable")
    with pytest.raises(TypeError):
        t.serve(_arr((64, 8)))


@pytest.mark.parametrize("where", ["launch", "pool", "workspace"])
def test_a_failure_raises_and_leaks_nothing(env, where):
    t = _claunch.RTable()
    pool = _Pool(fail_at={"pool": 0, "workspace": 1}.get(where))
    k1, k2 = _Recorder(fail=where == "launch"), _Recorder()
    assert _add(t, pool, k1, k2, ws=1024)
    with pytest.raises(RuntimeError if where == "launch" else MemoryError):
        t.serve(_arr((64, 8)), 1)
    gc.collect()
    assert all(b() is None for b in pool.blocks)               # result and workspace released
    assert k2.calls == []


def test_a_real_launch_packs_the_values_and_the_tail_bytes(env):
    """Through a compiled Launch laid out as the engine binds a reduction's kernel (three
    pointers, then the constant arguments as one bytes field) and the stand-in driver."""
    log = env
    st = struct.Struct("<QQQ8s")
    launch = _claunch.Launch(0xF00D, st.format, st.size, (0, 8, 16, 24))
    tail = struct.pack("<if", 5, 2.0)
    t, pool = _claunch.RTable(), _Pool()
    assert t.add(f32, (64, 8), 1, DEV, True, 4, (64,), (4,), f32, 256, launch, 7, (tail,), None, 0, (), BLOCK, 0,
                 pool)
    out = t.serve(_arr((64, 8), offset=16), 1)
    (func, grid, block, smem, stream, buf), = log
    assert (func, grid, block, smem, stream) == (0xF00D, 7, BLOCK, 0, STREAM)
    assert buf == st.pack(0x100000, 0, 0x7010, tail) and out._buf.ptr == 0x100000


def test_a_programmatic_dependent_launch_goes_through_launch_kernel_ex(env):
    """A Launch made with pdl=1 (the second pass of a split reduction, gparray/_engine/
    _reduce.py) goes through the stand-in's cuLaunchKernelEx with the same grid, block,
    stream and packed buffer as a plain one, and is counted; one without it is not."""
    log = env
    st = struct.Struct("<QQ8s")
    plain = _claunch.Launch(0xF00D, st.format, st.size, (0, 8, 16))
    dep = _claunch.Launch(0xBEEF, st.format, st.size, (0, 8, 16), 1)
    tail = struct.pack("<q", 264)
    n0, on = _claunch.pdl_launches()
    assert on
    plain(7, BLOCK, (0x100000, 0x200000, tail), 0, STREAM)
    assert _claunch.pdl_launches() == (n0, True)
    dep(3, BLOCK, (0x100000, 0x200000, tail), 0, STREAM)
    assert _claunch.pdl_launches() == (n0 + 1, True)
    assert log == [(0xF00D, 7, BLOCK, 0, STREAM, st.pack(0x100000, 0x200000, tail)),
                   (0xBEEF, 3, BLOCK, 0, STREAM, st.pack(0x100000, 0x200000, tail))]
    # a driver that refuses the attribute (CUDA_ERROR_NOT_SUPPORTED): the same launch made
    # plainly, and plain launches from then on
    _claunch._stub_driver(log, 801)
    log.clear()
    dep(3, BLOCK, (0x100000, 0x200000, tail), 0, STREAM)
    assert log == [(0xBEEF, 3, BLOCK, 0, STREAM, st.pack(0x100000, 0x200000, tail))]
    assert _claunch.pdl_launches() == (n0 + 1, False)
    dep(3, BLOCK, (0x100000, 0x200000, tail), 0, STREAM)
    assert len(log) == 2 and _claunch.pdl_launches() == (n0 + 1, False)


class _LP(NamedTuple):
    plan: object
    kern: object
    tail: tuple
    fkern: object
    ftail: tuple
    ws_bytes: int


class _Plan(NamedTuple):
    grid: int
    finish: tuple


class _K(NamedTuple):
    launch: object


def test_learn_records_only_what_can_be_served(env, monkeypatch):
    monkeypatch.setattr(_ops, "_configured", True)   # env's fake streams stay configured
    monkeypatch.setattr(_reduce_fast, "_tables", {})
    monkeypatch.setattr(_reduce_fast._memory, "_pools", {0: _Pool()})
    monkeypatch.setattr(_launch, "_multi", False)
    k1 = _Recorder()
    lp = _LP(_Plan(5, (None, 0)), _K(k1), (b"\x07",), None, (), 0)
    x = _arr((64, 8))
    out = _arr((64,), ptr=0x8000)
    assert not _reduce_fast.learn("sum", x, (0, 1), out, lp)            # axis a tuple
    assert not _reduce_fast.learn("sum", _arr((64, 8), strides=(4, 256)), 1, out, lp)
    assert not _reduce_fast.learn("sum", _arr((0, 8)), 1, out, lp)
    assert not _reduce_fast.learn("sum", x, 1, out, None)
    monkeypatch.setattr(_launch, "_hook", lambda *a: None)              # a profile is active
    assert not _reduce_fast.learn("sum", x, 1, out, lp)
    assert _reduce_fast.serve("sum", x, 1) is None
    monkeypatch.setattr(_launch, "_hook", None)
    assert _reduce_fast.learn("sum", x, 1, out, lp)
    r = _reduce_fast.serve("sum", x, 1)
    assert r._shape == (64,) and k1.calls[-1] == (5, BLOCK, (0x100000, 0, 0x7000, b"\x07"), 0, STREAM)
    assert _reduce_fast.serve("mean", x, 1) is None                    # one table per function
    _reduce_fast.clear()
    assert _reduce_fast.serve("sum", x, 1) is None


def test_learn_configures_the_compiled_path_in_a_process_that_only_reduces(env, monkeypatch):
    """No elementwise call has configured the compiled path (its Array class and stream
    getter): the namespace's _learn configures it before recording, else every serve() finds no Array type and the repeat
    calls of a process that only reduces are never served (seen on the H200: 30 of 30)."""
    monkeypatch.setattr(_reduce_fast, "_tables", {})
    monkeypatch.setattr(_reduce_fast._memory, "_pools", {0: _Pool()})
    monkeypatch.setattr(_launch, "_multi", False)
    _claunch.configure(None, None)
    monkeypatch.setattr(_ops, "_configured", False)
    made = []

    def configure():
        made.append(True)
        _claunch.configure(Array, lambda device_id: _Stream())
        _ops._configured = True

    monkeypatch.setattr(_ops, "_configure", configure)
    k1 = _Recorder()
    lp = _LP(_Plan(5, (None, 0)), _K(k1), (b"\x07",), None, (), 0)
    x = _arr((64, 8))
    _statistical._learn("sum", x, 1, _arr((64,), ptr=0x8000), lp)
    assert made == [True]
    r = _reduce_fast.serve("sum", x, 1)
    assert r is not None and r._shape == (64,) and len(k1.calls) == 1
    _statistical._learn("sum", _arr((32, 8)), 1, _arr((32,), ptr=0x8000), lp)
    assert made == [True] and _reduce_fast.serve("sum", _arr((32, 8)), 1) is not None
