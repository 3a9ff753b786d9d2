"""GPU tier: the compiled repeat reductions (gparray/_native/_claunch_reduce.c) give what the
Python path gives (NumPy's answers), call after call: the first call of a key takes the Python
path, the second records it, later ones are served in C. One-pass and two-pass plans (a
workspace and a finishing kernel), aligned and misaligned inputs, inputs that are not served
(strided), another stream, the pool's bookkeeping after many served calls."""
import numpy as np
import pytest

import gparray as xp
import gparray.cuda
from gparray._engine import _reduce_fast
from gparray._kernels import _launcher

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_launcher._claunch is None, reason="C extension gparray._native._claunch not built")]

rng = np.random.default_rng(11)


def _data(dtype, shape):
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(shape).astype(dtype)
        return a
    return rng.integers(-50, 50, shape).astype(dtype)


def _close(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    if np.dtype(want.dtype).kind == "f":
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max(initial=1.0)))
    else:
        np.testing.assert_array_equal(got, want)


SHAPES = [((4096, 64), 0), ((4096, 64), 1), ((64, 4096), 1), ((1 << 16, 8), 0), ((257, 33), None), ((1000,), 0),
          ((3, 5, 7), 1), ((2, 1 << 15), -1)]
OPS = [("sum", xp.sum, np.sum), ("mean", xp.mean, np.mean), ("max", xp.max, np.max), ("min", xp.min, np.min),
       ("prod", xp.prod, None)]


@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("name,fn,ref", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_repeat_calls_match_numpy(shape, axis, name, fn, ref, dtype):
    if name == "prod":
        a = rng.choice([1, -1], size=shape).astype(dtype)
        ref = np.prod
    else:
        a = _data(dtype, shape)
    if name == "mean" and dtype == "int32":
        want = np.mean(a, axis=axis)
    elif name in ("sum", "prod") and dtype == "int32":
        want = ref(a, axis=axis, dtype=np.int64)
    else:
        want = ref(a, axis=axis)
    x = xp.asarray(a)
    for _ in range(4):   # Python path, recorded, then served
        _close(fn(x, axis=axis), np.asarray(want), dtype)


@pytest.mark.parametrize("shape,axis", [((8192, 256), 1), ((256, 8192), 0), ((1 << 16, 16), 1), ((777,), 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_vector_norm_repeat_calls(shape, axis, dtype):
    a = _data("float32", shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _data("float32", shape)
        a = a.astype(dtype)
    want = np.linalg.norm(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), axis=axis)
    want = want.astype(np.float32 if dtype in ("float32", "complex64") else np.float64)
    x = xp.asarray(a)
    for _ in range(4):
        _close(xp.linalg.vector_norm(x, axis=axis), want, want.dtype)


def test_misaligned_strided_and_other_keys_take_their_own_paths():
    a = _data("float32", (513, 40))
    big = xp.asarray(np.concatenate([np.zeros(1, np.float32), a.ravel()]))
    x = xp.reshape(big[1:], (513, 40))        # 4 bytes past a 16-byte boundary
    y = xp.asarray(a)
    s = xp.asarray(np.asfortranarray(a))      # (not C-contiguous: never served)
    for _ in range(3):
        for arr in (x, y, s):
            _close(xp.sum(arr, axis=0), np.sum(a, axis=0), "float32")
            _close(xp.sum(arr, axis=1), np.sum(a, axis=1), "float32")
    keys = _reduce_fast._tables["sum"].keys()
    aligned = {(k[1], k[2], k[4]) for k in keys}
    assert ((513, 40), 0, True) in aligned and ((513, 40), 0, False) in aligned


def _settled_allocated():
    """Allocated bytes once every queued free has completed: empty_cache synchronizes and
    drains the frees still waiting on their streams (under compute-sanitizer, with caching
    off, 50 served calls' workspaces were still waiting after a plain synchronize)."""
    gparray.cuda.empty_cache()
    return gparray.cuda.memory_stats()["allocated_bytes.current"]


def test_served_calls_follow_the_current_stream_and_keep_the_pool_even():
    a = _data("float32", (4096, 64))
    x = xp.asarray(a)
    for _ in range(3):
        xp.sum(x, axis=0)
    before = _settled_allocated()
    s = gparray.cuda.Stream()
    with s:
        outs = [xp.sum(x, axis=0) for _ in range(50)]
    s.synchronize()
    for o in outs:
        _close(o, np.sum(a, axis=0), "float32")
    del outs, o
    after = _settled_allocated()
    if after != before:     # what is left: collectable cycles, or arrays still referenced
        import gc
        gc.collect()
        after2 = _settled_allocated()
        live = [a for a in gc.get_objects() if type(a) is xp.Array and a.shape == (64,)]
        st = gparray.cuda.memory_stats()
        refs = [_who(r) for r in gc.get_referrers(live[0])][:6] if live else []
        raise AssertionError(f"allocated {after - before} bytes more ({after2 - before} after gc.collect); "
                             f"allocations {st['allocation.current']}, live (64,) arrays {len(live)} held by {refs}")


def _who(r):
    """A referrer, described for the failure message: a frame by its code's place, a list or
    dict by its size and what holds it (seen only under compute-sanitizer with caching off:
    arrays held by a list and frames)."""
    import gc

    if type(r).__name__ == "frame":
        return f"frame {r.f_code.co_name} {r.f_code.co_filename.rsplit('/', 1)[-1]}:{r.f_lineno}"
    if isinstance(r, (list, dict)):
        owners = [type(o).__name__ for o in gc.get_referrers(r)][:4]
        return f"{type(r).__name__}[{len(r)}] in {owners}"
    return type(r).__name__


def test_repeat_calls_are_served_before_any_elementwise_call(monkeypatch):
    """A process that only reduces (the compiled elementwise path never configured): after
    the first calls have been recorded, no call goes through the Python path's launch."""
    from gparray._array import _ops
    from gparray._engine import _reduce

    monkeypatch.setattr(_reduce_fast, "_tables", {})
    monkeypatch.setattr(_ops, "_configured", False)
    _launcher._claunch.configure(None, None)
    python_path = []
    orig = _reduce.reduce

    def counting(*args, **kw):
        python_path.append(args[0])
        return orig(*args, **kw)

    monkeypatch.setattr(_reduce, "reduce", counting)
    a = _data("float32", (333, 77))
    x = xp.asarray(a)
    try:
        for i in range(8):
            if i == 3:
                recorded = len(python_path)
            _close(xp.sum(x, axis=0), np.sum(a, axis=0), "float32")
            _close(xp.linalg.vector_norm(x, axis=1), np.linalg.norm(a, axis=1).astype(np.float32), "float32")
        assert 0 < recorded == len(python_path)
    finally:
        _ops._configure()   # whatever this worker had, the configured path is what it gets


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("shape", [(20000, 256), (4099, 200), (1 << 15, 96)])
def test_one_block_wide_splits_with_a_dependent_second_pass(shape, dtype):
    """Column reductions of tall matrices one block would span (16 threads across, blocks along
    the columns, splits along the rows, output-major partial states) whose second pass is the
    first's programmatic dependent: every statistic matches NumPy call after call (the Python
    path, the recording, the served calls), also with the previous result held and with other
    work queued behind each call on the stream."""
    from gparray._engine import _reduce

    itemsize = np.dtype(dtype).itemsize
    p = _reduce.plan(shape, (shape[1], 1), (0,), itemsize, sms=_reduce.sm_count(0))
    assert p.strategy == "outer" and p.splits > 1 and 1 << p.tx_log2 == _reduce.WIDE_SPLIT_TX, p
    a = _data(dtype, shape)
    x = xp.asarray(a)
    n0 = _launcher._claunch.pdl_launches()[0]
    held = []
    for fn, ref in ((xp.sum, np.sum), (xp.max, np.max), (xp.argmax, np.argmax), (xp.mean, np.mean)):
        for _ in range(4):
            got = fn(x, axis=0)
            held.append(got)
            y = x[:2] + 1  # more work on the stream right behind the second pass
            want = ref(a, axis=0)
            if ref is np.mean and np.dtype(dtype).kind != "f":
                want = want.astype(np.float64)
            if ref is np.sum and np.dtype(dtype).kind == "i":
                want = want.astype(np.int64)
            _close(got, want, want.dtype)
            np.testing.assert_array_equal(np.asarray(y), a[:2] + 1)
    on = _launcher._claunch.pdl_launches()
    if on[1]:  # the driver takes programmatic dependent launches: every second pass was one
        assert on[0] - n0 >= 16
