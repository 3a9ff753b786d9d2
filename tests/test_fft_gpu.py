"""GPU tier: the ``fft`` extension on cuFFT against numpy.fft (computed in double precision
on the same values). Tolerances scale with log2(n) and the result's largest magnitude:
1e-5 for single precision, 1e-12 for double. Covered: complex64/complex128 and promoted
real and integer inputs; odd, even, prime and power-of-two lengths; zero padding and
truncation; every norm; non-contiguous inputs (steps, negative strides, transposes, column
slices); axes in any order and negative; more than three axes; round trips; the length-1
and empty cases the standard allows; the helpers; the plan cache, work areas and streams."""
import math
import threading

import numpy as np
import pytest

import gparray as xp
from gparray._engine import _fft

pytestmark = pytest.mark.gpu

NORMS = ["backward", "ortho", "forward"]
SINGLE = (np.float32, np.complex64)


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        return rng.integers(-5, 6, shape).astype(dt)
    a = rng.standard_normal(shape)
    if dt.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dt)


def ref(name, a, **kw):
    """numpy.fft in double precision."""
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    return getattr(np.fft, name)(a, **kw)


def check(got, want, dtype, points):
    """``got`` (a gparray Array) matches ``want`` (cast to the expected dtype ``dtype``)."""
    g = np.asarray(got)
    dt = np.dtype(dtype)
    assert g.dtype == dt, (g.dtype, dt)
    assert g.shape == want.shape, (g.shape, want.shape)
    eps = 1e-5 if dt in SINGLE else 1e-12
    bound = eps * max(1.0, math.log2(max(points, 2))) * max(1.0, float(np.abs(want).max(initial=0)))
    err = float(np.abs(g - want).max(initial=0))
    assert err <= bound, f"max error {err:.3g} > {bound:.3g}"


def cdt(dtype):
    return np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128


def rdt(dtype):
    return np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64


def layouts(a):
    """(name, NumPy view, gparray view) with the same values in several layouts."""
    out = [("c", a, xp.asarray(a))]
    big = np.repeat(a, 2, axis=-1)
    out.append(("step", big[..., ::2], xp.asarray(big)[..., ::2]))
    f = np.flip(a, axis=0).copy()
    out.append(("neg", np.flip(f, axis=0), xp.flip(xp.asarray(f), axis=0)))
    if a.ndim >= 2:
        t = np.ascontiguousarray(np.swapaxes(a, 0, -1))
        out.append(("T", np.swapaxes(t, 0, -1), xp.permute_dims(xp.asarray(t), _swap(a.ndim))))
        wide = np.concatenate([a, a], axis=-1)
        out.append(("cols", wide[..., : a.shape[-1]], xp.asarray(wide)[..., : a.shape[-1]]))
    return out


def _swap(nd):
    p = list(range(nd))
    p[0], p[-1] = p[-1], p[0]
    return tuple(p)


# ----------------------------------------------------------------------------- 1-D transforms

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 257, 1024, 3 * 5 * 7 * 11])
@pytest.mark.parametrize("norm", NORMS)
def test_fft_ifft_lengths(dtype, n, norm):
    a = sample((3, n), dtype, seed=n)
    x = xp.asarray(a)
    check(xp.fft.fft(x, norm=norm), ref("fft", a, norm=norm).astype(dtype), dtype, n)
    check(xp.fft.ifft(x, norm=norm), ref("ifft", a, norm=norm).astype(dtype), dtype, n)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_fft_every_axis_and_layout(dtype, axis):
    a = sample((6, 5, 7), dtype, seed=1)
    for name, na, ga in layouts(a):
        for n in (None, 4, 11):
            want = ref("fft", na, n=n, axis=axis).astype(dtype)
            check(xp.fft.fft(ga, n=n, axis=axis), want, dtype, n or na.shape[axis])


@pytest.mark.parametrize("name", ["rfft", "ihfft"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS)
def test_real_input_transforms(name, dtype, norm):
    a = sample((4, 30), dtype, seed=2)
    for lname, na, ga in layouts(a):
        for axis in (0, -1):
            for n in (None, 7, 8, 45):
                want = ref(name, na, n=n, axis=axis, norm=norm).astype(cdt(dtype))
                check(getattr(xp.fft, name)(ga, n=n, axis=axis, norm=norm), want, cdt(dtype), n or 30)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_transforms_of_every_axis_of_small_arrays(dtype):
    # rfft(x, axis=1) of a (2, 2, 2) float32 array once handed cuFFT a real pointer one element
    # past an aligned one (a host loop over the last axis): CUFFT_INVALID_VALUE
    for shape in ((2, 2, 2), (3, 2, 5), (2, 3, 2, 3)):
        a = sample(shape, dtype, seed=len(shape))
        for lname, na, ga in layouts(a):
            for axis in range(len(shape)):
                for name in ("rfft", "ihfft"):
                    for norm in NORMS:
                        want = ref(name, na, axis=axis, norm=norm).astype(cdt(dtype))
                        check(getattr(xp.fft, name)(ga, axis=axis, norm=norm), want, cdt(dtype), shape[axis])
                c = sample(want.shape, cdt(dtype), seed=5)
                for name in ("irfft", "hfft"):
                    w = ref(name, c, axis=axis).astype(dtype)
                    check(getattr(xp.fft, name)(xp.asarray(c), axis=axis), w, dtype, shape[axis])
                    ct = np.ascontiguousarray(np.swapaxes(c, 0, -1))
                    gt = xp.permute_dims(xp.asarray(ct), _swap(c.ndim))
                    check(getattr(xp.fft, name)(gt, axis=axis), w, dtype, shape[axis])


def test_basic_layout_fallback_recipes():
    # what runs when cuFFT rejects an advanced layout: the same transforms in basic layouts
    import gparray.fft._transforms as tr
    from gparray._engine import _fft_plan as fp

    a = sample((6, 7, 8), "float32", seed=30)
    for lname, na, ga in layouts(a):
        for kind, axes, sizes, n_last in ((fp.R2C, (0, 1), (6, 7), None), (fp.R2C, (2, 0), (8, 6), None),
                                          (fp.C2C, (1,), (7,), None), (fp.C2R, (0, 2), (6, 8), 14)):
            x = ga if kind == fp.R2C else xp.asarray(na.astype(np.complex64))
            st = tuple(v // x.dtype.itemsize for v in x._strides)
            direct = kind != fp.R2C or x._ptr % 8 == 0
            r = fp.plan_transform(kind, x.shape, st, axes, sizes, n_last=n_last, forward=kind != fp.C2R,
                                  direct=direct, basic=True)
            assert r.is_basic()
            got = tr._execute(r, x, xp.complex64, xp.float32, 1.0)
            src = np.asarray(x)
            if kind == fp.R2C:
                want = np.fft.rfftn(src.astype(np.float64), axes=axes)
            elif kind == fp.C2C:
                want = np.fft.fftn(src.astype(np.complex128), axes=axes)
            else:
                s_ = tuple(sizes[:-1]) + (n_last,)
                want = np.fft.irfftn(src.astype(np.complex128), s=s_, axes=axes) * math.prod(s_)
            dt = np.float32 if kind == fp.C2R else np.complex64
            check(got, want.astype(dt), dt, 336)


@pytest.mark.parametrize("name", ["irfft", "hfft"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("norm", NORMS)
def test_complex_to_real_transforms(name, dtype, norm):
    a = sample((5, 9), dtype, seed=3)
    for lname, na, ga in layouts(a):
        before = np.asarray(ga).copy()
        for axis in (0, 1, -1):
            for n in (None, 1, 2, 9, 16, 17, 31):
                want = ref(name, na, n=n, axis=axis, norm=norm).astype(rdt(dtype))
                check(getattr(xp.fft, name)(ga, n=n, axis=axis, norm=norm), want, rdt(dtype), n or 16)
        np.testing.assert_array_equal(np.asarray(ga), before)    # cuFFT's C2R never sees the input


def test_promoted_inputs():
    for dtype, out in (("float32", np.complex64), ("float64", np.complex128), ("int32", np.complex128),
                       ("int64", np.complex128), ("bool", np.complex128), ("uint8", np.complex128)):
        a = sample((4, 6), dtype, seed=4)
        check(xp.fft.fft(xp.asarray(a), axis=0), ref("fft", a.astype(np.float64), axis=0).astype(out), out, 4)
        check(xp.fft.ifftn(xp.asarray(a)), ref("ifftn", a.astype(np.float64)).astype(out), out, 24)
    a = sample((8,), "int16", seed=5)
    check(xp.fft.rfft(xp.asarray(a)), ref("rfft", a.astype(np.float64)).astype(np.complex128), np.complex128, 8)
    with pytest.raises(TypeError, match="^rfft: expected a real-valued"):
        xp.fft.rfft(xp.asarray(sample((4,), "complex64")))


# ----------------------------------------------------------------------------- n-D transforms

@pytest.mark.parametrize("name", ["fftn", "ifftn"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("norm", NORMS)
def test_fftn_axes_and_sizes(name, dtype, norm):
    a = sample((6, 5, 4, 3), dtype, seed=6)
    cases = [(None, None), (None, (0, 2)), (None, (2, 0)), ((3, 8), (-1, 1)), ((7, 4, 5), (0, 1, 2)),
             ((2, 6, 4, 5), (3, 2, 1, 0)), ((-1, 2), (1, 3)), (None, (1,)), (None, (-4, -2, -1))]
    for s, axes in cases:
        for lname, na, ga in layouts(a)[:4]:
            want = ref(name, na, s=s, axes=axes, norm=norm).astype(dtype)
            pts = math.prod(want.shape[ax] for ax in (axes or range(4)))
            check(getattr(xp.fft, name)(ga, s=s, axes=axes, norm=norm), want, dtype, pts)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS)
def test_rfftn_irfftn(dtype, norm):
    a = sample((6, 7, 8), dtype, seed=7)
    for s, axes in [(None, None), (None, (0, 1)), (None, (2, 0)), ((4, 9), (1, 2)), ((5, 6, 7), (0, 1, 2)),
                    (None, (1,))]:
        for lname, na, ga in layouts(a)[:4]:
            want = ref("rfftn", na, s=s, axes=axes, norm=norm).astype(cdt(dtype))
            got = xp.fft.rfftn(ga, s=s, axes=axes, norm=norm)
            check(got, want, cdt(dtype), 336)
            # irfftn of a full spectrum and of an arbitrary (non-Hermitian) complex input
            c = sample(want.shape, cdt(dtype), seed=8)
            for inp_np, inp in ((want, got), (c, xp.asarray(c))):
                w = ref("irfftn", inp_np, s=s, axes=axes, norm=norm).astype(dtype)
                check(xp.fft.irfftn(inp, s=s, axes=axes, norm=norm), w, dtype, 336)


def test_round_trips():
    for dtype in ("complex64", "complex128"):
        a = sample((16, 9), dtype, seed=9)
        x = xp.asarray(a)
        for norm in NORMS:
            check(xp.fft.ifft(xp.fft.fft(x, norm=norm), norm=norm), a, dtype, 9)
            check(xp.fft.ifftn(xp.fft.fftn(x, norm=norm), norm=norm), a, dtype, 144)
    for dtype in ("float32", "float64"):
        a = sample((8, 11), dtype, seed=10)
        x = xp.asarray(a)
        for norm in NORMS:
            check(xp.fft.irfft(xp.fft.rfft(x, norm=norm), n=11, norm=norm), a, dtype, 11)
            check(xp.fft.irfftn(xp.fft.rfftn(x, norm=norm), s=(8, 11), norm=norm), a, dtype, 88)
            check(xp.fft.hfft(xp.fft.ihfft(x, norm=norm), n=11, norm=norm), a, dtype, 11)


def test_layout_paths_host_loops_and_relayouts():
    # a middle axis: host loops over a short outer axis; a transpose copy when there are many
    for shape in ((3, 64, 40), (200, 16, 30)):
        a = sample(shape, "complex64", seed=11)
        check(xp.fft.fft(xp.asarray(a), axis=1), ref("fft", a, axis=1).astype(np.complex64), np.complex64, shape[1])
        check(xp.fft.ifft(xp.asarray(a), n=20, axis=1), ref("ifft", a, n=20, axis=1).astype(np.complex64),
              np.complex64, 20)
    # axis 0 of a matrix: one strided call; a 5-d fftn: a sequence of calls
    a = sample((256, 128), "complex128", seed=12)
    check(xp.fft.fft(xp.asarray(a), axis=0), ref("fft", a, axis=0), np.complex128, 256)
    b = sample((3, 4, 5, 2, 3), "complex128", seed=13)
    check(xp.fft.fftn(xp.asarray(b)), ref("fftn", b), np.complex128, 360)


def test_large_transforms():
    a = sample((1 << 20,), "complex64", seed=14)
    check(xp.fft.fft(xp.asarray(a)), ref("fft", a).astype(np.complex64), np.complex64, 1 << 20)
    r = sample((1 << 20) + 2, "float32", seed=15)
    check(xp.fft.rfft(xp.asarray(r)), ref("rfft", r).astype(np.complex64), np.complex64, 1 << 20)
    c = sample((64, 64, 64), "complex64", seed=16)
    check(xp.fft.fftn(xp.asarray(c)), ref("fftn", c).astype(np.complex64), np.complex64, 1 << 18)


def test_misaligned_real_input_is_copied():
    r = sample((33,), "float32", seed=17)
    x = xp.asarray(r)[1:]            # 4 bytes past an 8-byte boundary
    check(xp.fft.rfft(x), ref("rfft", r[1:]).astype(np.complex64), np.complex64, 32)


def test_length_one_and_empty():
    a = sample((4, 1), "complex64", seed=18)
    x = xp.asarray(a)
    check(xp.fft.fft(x), a, np.complex64, 1)
    check(xp.fft.fftn(x, axes=()), a, np.complex64, 1)
    check(xp.fft.rfft(xp.asarray(a.real.copy())), a.real.astype(np.complex64), np.complex64, 1)
    check(xp.fft.irfft(x, n=1), a.real.astype(np.float32), np.float32, 1)
    e = xp.asarray(np.zeros((0, 8), np.complex128))
    for f in (xp.fft.fft, xp.fft.ifft, xp.fft.hfft, xp.fft.irfft):
        out = f(e)
        assert out.shape[0] == 0
    assert xp.fft.rfft(xp.asarray(np.zeros((3, 0, 5), np.float64))).shape == (3, 0, 3)
    z = xp.asarray(np.zeros((2, 0), np.complex64))
    check(xp.fft.fft(z, n=4), np.zeros((2, 4), np.complex64), np.complex64, 4)
    with pytest.raises(ValueError, match="^fft: invalid number of data points"):
        xp.fft.fft(z)


# ----------------------------------------------------------------------------- helpers

@pytest.mark.parametrize("n", [1, 2, 7, 8, 101])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_fftfreq_rfftfreq(n, d):
    for dtype in (None, xp.float32, xp.float64):
        f = xp.fft.fftfreq(n, d=d, dtype=dtype)
        r = xp.fft.rfftfreq(n, d=d, dtype=dtype, device=xp.Device(0))
        want_dt = np.float64 if dtype is None else dtype
        assert f.dtype == want_dt and r.dtype == want_dt and f.device == xp.Device(0)
        np.testing.assert_array_equal(np.asarray(f), np.fft.fftfreq(n, d).astype(want_dt))
        np.testing.assert_array_equal(np.asarray(r), np.fft.rfftfreq(n, d).astype(want_dt))
    with pytest.raises(ValueError, match="^fftfreq: dtype must be a real floating-point dtype"):
        xp.fft.fftfreq(n, dtype=xp.complex64)


@pytest.mark.parametrize("fn", ["fftshift", "ifftshift"])
def test_shifts(fn):
    for shape in ((7,), (4, 5), (3, 4, 6)):
        a = sample(shape, "float32", seed=19)
        for axes in (None, 0, -1, (0,), tuple(range(len(shape)))[::-1]):
            got = getattr(xp.fft, fn)(xp.asarray(a), axes=axes)
            np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, fn)(a, axes=axes))
    c = sample((5, 6), "complex128", seed=20)
    np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(xp.asarray(c)[::-1, ::2])),
                                  np.fft.fftshift(c[::-1, ::2]))


# ----------------------------------------------------------------------------- plans, streams

def test_plan_cache_hits_limits_and_clear():
    old_size, old_mem = xp.fft.get_plan_cache_max_size(), xp.fft.get_plan_cache_max_memory()
    try:
        xp.fft.clear_plan_cache()
        a = xp.asarray(sample((8, 96), "complex64", seed=21))
        xp.fft.fft(a)
        info = xp.fft.get_plan_cache_info()
        xp.fft.fft(a)
        again = xp.fft.get_plan_cache_info()
        assert again["size"] == info["size"] >= 1 and again["hits"] == info["hits"] + 1
        xp.fft.set_plan_cache_max_size(0)
        assert xp.fft.get_plan_cache_info()["size"] == 0
        check(xp.fft.fft(a), ref("fft", np.asarray(a)).astype(np.complex64), np.complex64, 96)   # uncached
        assert xp.fft.get_plan_cache_info()["size"] == 0
        xp.fft.set_plan_cache_max_size(2)
        for n in (10, 11, 12):
            xp.fft.fft(a, n=n)
        assert xp.fft.get_plan_cache_info()["size"] == 2
        xp.fft.set_plan_cache_max_memory(0)
        b = xp.asarray(sample((3000017,), "complex64", seed=22))       # a prime: Bluestein, a work area
        check(xp.fft.fft(b), ref("fft", np.asarray(b)).astype(np.complex64), np.complex64, 3000017)
        assert xp.fft.get_plan_cache_info()["memory"] == 0
        xp.fft.clear_plan_cache(device=xp.Device(0))
        assert xp.fft.get_plan_cache_info()["size"] == 0
    finally:
        xp.fft.set_plan_cache_max_size(old_size)
        xp.fft.set_plan_cache_max_memory(old_mem)


def test_plans_follow_the_current_stream():
    import cupy as cp

    a = sample((1 << 16,), "complex64", seed=23)
    x = xp.asarray(a)
    want = ref("fft", a).astype(np.complex64)
    xp.cuda.synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        y = xp.fft.fft(x)
        z = xp.fft.fft(x, n=(1 << 16) - 1)      # another plan, on the same stream
    s.synchronize()
    check(y, want, np.complex64, 1 << 16)
    check(z, ref("fft", a, n=(1 << 16) - 1).astype(np.complex64), np.complex64, 1 << 16)
    plan = _fft.cache(0)._plans[_plan_key(x.shape[0])]
    assert plan.stream == s.ptr
    check(xp.fft.fft(x), want, np.complex64, 1 << 16)              # back on the default stream
    assert plan.stream == cp.cuda.get_current_stream().ptr
    # a prime length (Bluestein) needs a work area: the plan keeps it, allocated on its stream
    p = 1000003
    b = sample((p,), "complex64", seed=25)
    with s:
        got = xp.fft.fft(xp.asarray(b))
    s.synchronize()
    check(got, ref("fft", b).astype(np.complex64), np.complex64, p)
    plan = _fft.cache(0)._plans[_plan_key(p)]
    assert plan.nbytes > 0 and plan.work is not None and plan.work.stream == s.ptr
    check(xp.fft.fft(xp.asarray(b)), ref("fft", b).astype(np.complex64), np.complex64, p)
    assert plan.work.stream == cp.cuda.get_current_stream().ptr and plan.stream == plan.work.stream


def _plan_key(n):
    from gparray._engine import _fft_plan as fp

    r = fp.recipe(fp.C2C, (n,), (1,), (0,), (n,), None, True, True, False, False)
    return next(op[1] for op in r.ops if op[0] == "exec").plan_key(False)


def test_threads_transform_concurrently_with_their_own_plans():
    import cupy as cp

    a = sample((64, 256), "complex128", seed=24)
    want = ref("fft", a)
    x = xp.asarray(a)
    b = sample((5, 1000), "complex64", seed=26)       # another plan: axis 0, a strided batch
    want_b = ref("fft", b, axis=0).astype(np.complex64)
    y = xp.asarray(b)
    errors, handles = [], []
    done = threading.Barrier(6)

    def work(k):
        try:
            stream = cp.cuda.Stream(non_blocking=True) if k % 2 else None
            for _ in range(20):
                if stream is None:
                    check(xp.fft.fft(x), want, np.complex128, 256)
                    check(xp.fft.fft(y, axis=0), want_b, np.complex64, 5)
                else:
                    with stream:
                        got, got_b = xp.fft.fft(x), xp.fft.fft(y, axis=0)
                    stream.synchronize()
                    check(got, want, np.complex128, 256)
                    check(got_b, want_b, np.complex64, 5)
            handles.extend(p.handle for p in _fft.cache(0)._plans.values())
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.wait(timeout=120)     # (a thread's plans are destroyed when it ends: handles reused)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(set(handles)) == len(handles) >= 12       # no plan used by two threads
    assert xp.fft.get_plan_cache_info()["threads"] >= 1
