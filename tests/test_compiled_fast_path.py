"""CPU tier: the compiled elementwise fast path (gparray/_native/_claunch_ops.c) over fake
memory, a fake stream and a stand-in driver that records launches instead of running them.

Each case builds its own Table and Fast objects, so the ops' real tables are untouched."""
import struct

import numpy as np
import pytest

from gparray._array import _ops
from gparray._array import Array
from gparray._core._device import Device
from gparray._engine._launch import BLOCK
from gparray._kernels import _launcher

_claunch = _launcher._claunch
pytestmark = pytest.mark.skipif(_claunch is None, reason="C extension gparray._native._claunch not built")

STREAM = 0x5000
_current = {"stream": STREAM}
DEV = Device(0)
OTHER = Device(1)
f32, f64, i32, i64, b1 = (np.dtype(t) for t in ("float32", "float64", "int32", "int64", "bool"))


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr


class _Stream:
    def __init__(self):
        self.ptr = _current["stream"]


class _Pool:
    """malloc(nbytes, stream) -> a block with .ptr; remembers what it handed out."""

    def __init__(self, fail=None):
        self.calls = []
        self.next = 0x100000
        self.fail = fail

    def malloc(self, nbytes, stream):
        if self.fail is not None:
            raise self.fail
        self.calls.append((nbytes, stream))
        b = _Buf(self.next)
        self.next += 0x10000
        return b


def _arr(shape, dtype=f32, ptr=0x7000, offset=0, strides=None, device=DEV, flags=None):
    isz = np.dtype(dtype).itemsize
    if strides is None:
        strides = tuple(np.empty(shape, dtype).strides) if all(shape) else tuple(isz for _ in shape)
    a = Array._new(_Buf(ptr), offset, tuple(shape), tuple(strides), np.dtype(dtype), device)
    a._flags = flags
    return a


def _launch_for(proto):
    st, kinds, size, offs = _launcher.layout(proto)
    return _claunch.Launch(0xF00D, st.format, size, offs), st


P0, N0 = np.uint64(0), np.int64(0)
TILE = 1024


@pytest.fixture
def env():
    """Configure the fast path with fake streams and stub the driver; restore both after."""
    log = []
    _claunch.configure(Array, lambda device_id: _Stream())
    _claunch._stub_driver(log)
    seen = {"error": [], "context": []}

    def err(status):
        seen["error"].append(status)
        raise RuntimeError(f"driver status {status}")

    def ctx(status):
        seen["context"].append(status)

    _claunch.set_hooks(err, ctx)
    yield log, seen
    _current["stream"] = STREAM
    _claunch._stub_context(None)
    _claunch._stub_driver(None)
    _claunch.set_hooks(_launcher._driver_error, _launcher._bind_context)
    if _ops._configured:
        from gparray._core import _backend

        _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
    else:
        _claunch.configure(None, None)


def _fallback_recorder():
    calls = []

    def fb(*args, **kwargs):
        calls.append(args + tuple(kwargs.items()))
        return "fallback"

    return fb, calls


def _binary(odt=f32, a=f32, b=f32, pool=None, tile=TILE):
    launch, st = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    pool = pool or _Pool()
    assert t.add(a, b, 0, DEV, a.itemsize, b.itemsize, 0, 0, launch, odt, odt.itemsize, tile, BLOCK, pool)
    return t, st, pool


def test_two_arrays_launch_the_recorded_kernel(env):
    log, _ = env
    t, st, pool = _binary()
    fb, calls = _fallback_recorder()
    op = _claunch.Fast(t, fb, 2)
    x = _arr((3, 700), ptr=0x7000, offset=16)
    y = _arr((3, 700), ptr=0x9000)
    out = op(x, y)
    assert calls == [] and type(out) is Array
    assert out._shape is x._shape and out._strides == (2800, 4) and out._dtype == f32
    assert out._device is DEV and out._offset == 0 and out._flags is True and out._buf.ptr == 0x100000
    assert pool.calls == [(2100 * 4, STREAM)]
    (func, grid, block, smem, stream, buf), = log
    assert (func, grid, block, smem, stream) == (0xF00D, 3, BLOCK, 0, STREAM)  # ceil(2100 / 1024)
    assert buf == st.pack(0x100000, 0x7010, 0x9000, 2100)


def test_output_strides_follow_the_output_itemsize(env):
    log, _ = env
    launch, st = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    pool = _Pool()
    t.add(f64, f64, 0, DEV, 8, 8, 0, 0, launch, b1, 1, TILE, BLOCK, pool)
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    for shape in [(5,), (2, 1, 3), (4, 6)]:
        x = _arr(shape, f64)
        out = op(x, _arr(shape, f64))
        assert out._strides == np.empty(shape, bool).strides and out._dtype == b1
        assert pool.calls[-1][0] == int(np.prod(shape))
    assert len(log) == 3


def test_an_entry_serves_only_calls_made_in_its_context(env):
    """Several GPUs: an entry added while device 0's context was current is not used while
    another device's context is current (that call takes the Python path, which switches
    devices around the launch), and is used again once device 0's context is back."""
    log, _ = env
    _claunch._stub_context(0xC0)        # the context current while the entries are added
    t, _, pool = _binary()
    ut = _claunch.Table()
    ulaunch, _ = _launch_for((P0, P0, N0))
    assert ut.add(f32, None, 0, DEV, 4, 0, 0, 0, ulaunch, f32, 4, TILE, BLOCK, pool)
    fb, calls = _fallback_recorder()
    op, uop = _claunch.Fast(t, fb, 2), _claunch.Fast(ut, fb, 1)
    x, y = _arr((8,)), _arr((8,), ptr=0x9000)
    assert type(op(x, y)) is Array and type(uop(x)) is Array and len(log) == 2
    _claunch._stub_context(0xC1)        # another device is current now
    assert op(x, y) == "fallback" and uop(x) == "fallback"
    assert calls == [(x, y), (x,)] and len(log) == 2
    _claunch._stub_context(0)           # a new host thread: no context bound yet
    assert op(x, y) == "fallback"
    _claunch._stub_context(0xC0)
    assert type(op(x, y)) is Array and len(log) == 3


@pytest.mark.parametrize("case", ["shape", "device", "dtype", "strided", "empty", "subclass-free types", "0-d other"])
def test_everything_else_goes_to_the_fallback(env, case):
    log, _ = env
    t, _, pool = _binary()
    fb, calls = _fallback_recorder()
    op = _claunch.Fast(t, fb, 2)
    x = _arr((4, 4))
    y = {
        "shape": _arr((4, 1)),
        "device": _arr((4, 4), device=OTHER),
        "dtype": _arr((4, 4), i32),
        "strided": _arr((4, 4), strides=(4, 16)),
        "empty": _arr((0, 4)),
        "subclass-free types": np.float32(1.0),
        "0-d other": _arr(()),
    }[case]
    if case == "empty":
        x = _arr((0, 4))
    assert op(x, y) == "fallback"
    assert calls == [(x, y)] and log == [] and pool.calls == []


def test_contiguity_is_computed_and_cached_like_is_c_contig(env):
    t, _, _ = _binary()
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x = _arr((4, 1, 3), strides=(12, 999, 4))  # size-1 dims do not count
    y = _arr((4, 1, 3), strides=(4, 4, 16))    # Fortran order: not C-contiguous
    assert x._flags is None and y._flags is None
    assert op(x, y) == "fallback"
    assert x._flags is True and y._flags is False
    assert x._flags == x._is_c_contig() and (y._flags, y._is_c_contig()) == (False, False)
    z = _arr((4, 1, 3), strides=(12, 0, 4))
    assert type(op(x, z)) is Array and z._flags is True


def _scalar_table(dt, pytype, side, lo, hi, ct=None):
    ct = ct or dt
    launch, st = _launch_for((P0, P0, ct.type(0), N0))
    t = _claunch.Table()
    pool = _Pool()
    t.add(dt, pytype, side, DEV, dt.itemsize, 0, lo, hi, launch, dt, dt.itemsize, TILE, BLOCK, pool)
    return t, st, pool


def test_python_scalars_travel_by_value_on_either_side(env):
    log, _ = env
    t, st, _ = _scalar_table(f32, float, 1, -3.4e38, 3.4e38)
    t2, st2, _ = _scalar_table(i64, int, 2, -(2**63), 2**63 - 1)
    fb, calls = _fallback_recorder()
    right, left = _claunch.Fast(t, fb, 2), _claunch.Fast(t2, fb, 2)
    x = _arr((10,), ptr=0x7000)
    k = _arr((10,), i64, ptr=0x8000)
    assert type(right(x, 0.1)) is Array and type(left(-5, k)) is Array
    assert log[0][5] == st.pack(0x100000, 0x7000, 0.1, 10)
    assert log[1][5] == st2.pack(0x100000, 0x8000, -5, 10)
    # the reflected operator form: __radd__(self, other) computes op(other, self)
    rleft = _claunch.Fast(t2, fb, 2, True)
    assert type(rleft(k, 7)) is Array and log[2][5] == st2.pack(0x110000, 0x8000, 7, 10)
    assert calls == []


@pytest.mark.parametrize("value", [float("nan"), 1e39, -1e39, True, 2**70, 1 + 0j, np.float64(1.0)])
def test_scalars_outside_the_recorded_range_or_type_fall_back(env, value):
    log, _ = env
    t, _, _ = _scalar_table(f32, float, 1, -3.4e38, 3.4e38)
    ti, _, _ = _scalar_table(f32, int, 1, -3.4e38, 3.4e38)
    fb, calls = _fallback_recorder()
    x = _arr((3,))
    for table in (t, ti):
        assert _claunch.Fast(table, fb, 2)(x, value) == "fallback"
    assert log == [] and len(calls) == 2


def test_integer_ranges_bound_python_ints(env):
    log, _ = env
    t, _, _ = _scalar_table(np.dtype("uint8"), int, 1, 0, 255)
    fb, calls = _fallback_recorder()
    op = _claunch.Fast(t, fb, 2)
    x = _arr((3,), np.uint8)
    assert [type(op(x, v)) for v in (0, 255)] == [Array, Array]
    assert [op(x, v) for v in (-1, 256, 2**64)] == ["fallback"] * 3
    # a uint64 range beyond long long still takes everything up to 2**63 - 1
    tu, _, _ = _scalar_table(np.dtype("uint64"), int, 1, 0, 2**64 - 1)
    u = _arr((3,), np.uint64)
    assert type(_claunch.Fast(tu, fb, 2)(u, 2**63 - 1)) is Array
    assert _claunch.Fast(tu, fb, 2)(u, 2**63) == "fallback"


def test_unary_and_method_binding(env):
    log, _ = env
    launch, st = _launch_for((P0, P0, N0))
    t = _claunch.Table()
    pool = _Pool()
    assert t.add(f32, None, 0, DEV, 4, 0, 0, 0, launch, f32, 4, TILE, BLOCK, pool)
    fb, calls = _fallback_recorder()
    neg = _claunch.Fast(t, fb, 1)

    class Holder:  # a Fast on a class binds like a function
        op = neg

    h = Holder()
    assert h.op.__self__ is h and Holder.op is neg
    x = _arr((2, 2), ptr=0xA000)
    assert type(neg(x)) is Array and log[0][5] == st.pack(0x100000, 0xA000, 4)
    assert neg(_arr((2, 2), i32)) == "fallback" and neg(3.0) == "fallback"
    assert neg(x, x) == "fallback" and neg(x=x) == "fallback"  # other arities: the fallback decides
    assert len(calls) == 4 and calls[-1] == (("x", x),)


def test_allocation_and_launch_failures_propagate(env):
    log, seen = env
    t, _, _ = _binary(pool=_Pool(fail=MemoryError("pool: out of memory")))
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x = _arr((8,))
    with pytest.raises(MemoryError, match="out of memory"):
        op(x, x)
    t, _, pool = _binary()
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    _claunch._stub_driver(log, 700)  # an illegal address, say
    with pytest.raises(RuntimeError, match="status 700"):
        op(x, x)
    assert seen["error"] == [700] and log == []
    # a host thread without a context: bind it, then the same launch again
    _claunch._stub_driver(log, 201)
    assert type(op(x, x)) is Array
    assert seen["context"] == [201] and len(log) == 1
    # a driver that rejects the packed buffer: kernelParams from then on
    _claunch._stub_driver(log, 1)
    assert type(op(x, x)) is Array and not _claunch.uses_extra() and log[-1][5] is None


def test_unconfigured_fast_objects_always_fall_back(env):
    t, _, _ = _binary()
    fb, calls = _fallback_recorder()
    op = _claunch.Fast(t, fb, 2)
    _claunch.configure(None, None)
    x = _arr((4,))
    assert op(x, x) == "fallback" and calls == [(x, x)]


def test_table_checks_its_entries():
    launch3, _ = _launch_for((P0, P0, N0))
    launch4, _ = _launch_for((P0, P0, P0, N0))
    bad, _ = _launch_for((P0, np.int32(0), P0, N0))
    t = _claunch.Table()
    m = _Pool()
    assert t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch4, f32, 4, TILE, BLOCK, m)
    assert not t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch4, f32, 4, TILE, BLOCK, m)  # there already
    assert t.add(f32, None, 0, DEV, 4, 0, 0, 0, launch3, f32, 4, TILE, BLOCK, m)
    assert len(t) == 2 and t.keys() == [(f32, f32, 0, DEV), (f32, None, 0, DEV)]
    with pytest.raises(ValueError, match="does not take"):
        t.add(f64, f64, 0, DEV, 8, 8, 0, 0, bad, f64, 8, TILE, BLOCK, m)
    with pytest.raises(ValueError, match="does not take"):
        t.add(f64, None, 0, DEV, 8, 0, 0, 0, launch4, f64, 8, TILE, BLOCK, m)
    with pytest.raises(ValueError, match="float or int"):
        t.add(f64, f64, 1, DEV, 8, 0, 0.0, 1.0, launch4, f64, 8, TILE, BLOCK, m)
    with pytest.raises(ValueError, match="both be floats or both ints"):
        t.add(f64, float, 1, DEV, 8, 0, 0, 1.0, launch4, f64, 8, TILE, BLOCK, m)
    with pytest.raises(ValueError, match="bad side"):
        t.add(f64, float, 3, DEV, 8, 0, 0.0, 1.0, launch4, f64, 8, TILE, BLOCK, m)
    with pytest.raises(TypeError):
        t.add(f64, f64, 0, DEV, 8, 8, 0, 0, "not a launch", f64, 8, TILE, BLOCK, m)
    t.clear()
    assert len(t) == 0 and t.keys() == []
    with pytest.raises(ValueError, match="nin"):
        _claunch.Fast(t, print, 3)
    with pytest.raises(TypeError, match="callable"):
        _claunch.Fast(t, 3, 2)


def test_array_operators_put_the_compiled_path_first():
    from gparray._array import _elementwise as ew
    from gparray._array._operators import OPERATORS, Operators

    for dunder, (fname, reflected) in OPERATORS.items():
        f = getattr(Array, dunder)
        assert f is Operators.__dict__[dunder], dunder     # defined once, in the class body
        if reflected is None:      # in place: Python (writes into the left operand)
            assert not isinstance(f, _claunch.Fast) and f.__name__ == dunder
            continue
        assert isinstance(f, _claunch.Fast), dunder
        assert f.table is getattr(ew, fname)._table and bool(f.reflected) == reflected
        assert f.fallback.__name__ == dunder
    # the fallbacks are the Python methods: with no GPU they raise as before
    x = _arr((2,))
    assert Array.__add__(x, "text") is NotImplemented


def test_scalar_packing_matches_struct_for_every_kernel_scalar_type(env):
    log, _ = env
    for dt, v in [(np.dtype("int8"), -128), (np.dtype("uint16"), 65535), (i32, -(2**31)), (f64, -0.0),
                  (f32, 1 / 3), (np.dtype("float16"), 0.1)]:
        pytype = float if dt.kind == "f" else int
        lo, hi = (-1e300, 1e300) if pytype is float else (-(2**63), 2**63 - 1)
        t, st, _ = _scalar_table(dt, pytype, 1, lo, hi)
        assert type(_claunch.Fast(t, print, 2)(_arr((1,), dt), v)) is Array
        assert log[-1][5] == st.pack(0x100000, 0x7000, v, 1), dt
    assert struct.calcsize("<e") == 2


def test_collected_results_are_handed_out_again_with_exact_statistics(env):
    """Over a real CachingPool (fake device memory): a collected result's Block queues its
    free; the next same request on the same stream takes that chunk back; the statistics
    always equal the live results' sizes."""
    from test_memory_pool import check_internal, make_pool

    log, _ = env
    pool, dev, _ = make_pool()
    launch, st = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch, f32, 4, TILE, BLOCK, pool)
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x = _arr((1000,))
    out = op(x, x)
    first = out._buf._chunk
    del out
    assert len(pool._deferred) == 1                      # queued, not yet applied
    out = op(x, x)
    assert out._buf._chunk is first and pool._deferred == []
    assert out._buf.ptr == first.ptr and log[-1][5][:8] == struct.pack("<Q", first.ptr)
    s = pool.stats()
    assert s["allocated_bytes.current"] == 4096 and s["requested_bytes.current"] == 4000
    assert s["allocation.current"] == 1

    rng = np.random.default_rng(3)
    live = []
    for step in range(400):
        r = rng.random()
        if r < 0.55 or not live:
            _current["stream"] = STREAM if rng.random() < 0.8 else STREAM + 1
            n = int(rng.choice([1, 100, 1000, 1024, 5000]))
            xs = _arr((n,))
            live.append((op(xs, xs), n))
        else:
            live.pop(int(rng.integers(len(live))))
        if step % 25 == 0:
            s = pool.stats()
            sizes = [(n * 4 + 511) // 512 * 512 for _, n in live] + [4096]   # + `out`
            assert s["allocated_bytes.current"] == sum(sizes)
            assert s["requested_bytes.current"] == sum(n * 4 for _, n in live) + 4000
            assert s["allocation.current"] == len(live) + 1
            assert s["allocated_bytes.peak"] >= s["allocated_bytes.current"]
            ptrs = sorted((a._buf.ptr, a._buf.size) for a, _ in live)
            assert all(p + sz <= q for (p, sz), (q, _) in zip(ptrs, ptrs[1:])), "live blocks overlap"
            check_internal(pool)
    assert all(a._buf.stream in (STREAM, STREAM + 1) for a, _ in live)
    del live, out
    assert pool.allocated_bytes == 0 and pool.stats()["allocation.current"] == 0
    check_internal(pool)


def test_a_deferred_free_from_another_stream_or_size_is_not_reused(env):
    from test_memory_pool import make_pool

    pool, _, _ = make_pool()
    launch, _ = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch, f32, 4, TILE, BLOCK, pool)
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x, y = _arr((100,)), _arr((90,))
    out = op(x, x)
    c = out._buf._chunk
    del out
    _current["stream"] = STREAM + 7
    other = op(x, x)                                    # another stream: a fresh chunk
    assert other._buf._chunk is not c and other._buf.stream == STREAM + 7
    _current["stream"] = STREAM
    del other
    sized = op(y, y)                                    # 360 bytes, not 400: Python malloc
    assert sized._buf.nbytes == 360 and pool._deferred == []
    assert pool.stats()["requested_bytes.current"] == 360


def test_a_deferred_free_a_few_frees_back_is_reused_in_place(env):
    """The same request freed behind up to three other frees is taken back (a call that
    also takes a workspace finds its result's chunk behind it); the frees around it stay
    queued in order; one further back is left to the pool (a Python malloc)."""
    from test_memory_pool import check_internal, make_pool

    pool, _, _ = make_pool()
    launch, _ = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch, f32, 4, TILE, BLOCK, pool)
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x = _arr((100,))
    outs = [op(x, x)] + [op(_arr((n,)), _arr((n,))) for n in (90, 80, 70)]
    c = outs[0]._buf._chunk
    for i in range(4):
        outs[i] = None
    assert [n for _, n in pool._deferred] == [400, 360, 320, 280]
    again = op(x, x)
    assert again._buf._chunk is c and [n for _, n in pool._deferred] == [360, 320, 280]
    more = [op(_arr((n,)), _arr((n,))) for n in (60, 50, 40, 30)]   # (Python mallocs: the queue applied)
    del again
    for i in range(4):
        more[i] = None
    assert [n for _, n in pool._deferred] == [400, 240, 200, 160, 120]
    far = op(x, x)                                      # five back: not looked at
    assert pool._deferred == [] and far._buf.nbytes == 400
    del far
    assert pool.stats()["allocation.current"] == 0
    check_internal(pool)


@pytest.mark.parametrize("queued", [False, True])
def test_a_deferred_free_of_a_retired_stream_is_not_reused(env, queued):
    """A new stream given a retired stream's handle (gparray/_memory/_retire.py) must not take
    back the old stream's collected result, whether the retirement was applied at once or
    queued behind the free (the pool's lock was taken)."""
    from test_memory_pool import make_pool

    pool, _, evs = make_pool(sync=False)
    launch, _ = _launch_for((P0, P0, P0, N0))
    t = _claunch.Table()
    t.add(f32, f32, 0, DEV, 4, 4, 0, 0, launch, f32, 4, TILE, BLOCK, pool)
    op = _claunch.Fast(t, _fallback_recorder()[0], 2)
    x = _arr((100,))
    out = op(x, x)
    c = out._buf._chunk
    del out
    assert len(pool._deferred) == 1
    ev = evs.record(STREAM)
    if queued:
        with pool._lock:
            pool.retire_stream(STREAM, ev)
        assert len(pool._deferred) == 2
    else:
        pool.retire_stream(STREAM, ev)
    again = op(x, x)                                    # the new stream with that handle
    assert again._buf._chunk is not c and again._buf.ptr != c.ptr
    s = pool.stats()
    assert s["pending_bytes.current"] == 2 << 20 and s["num_streams_retired"] == 1
    ev.done = True
    del again
    assert pool.stats()["allocation.current"] == 0
