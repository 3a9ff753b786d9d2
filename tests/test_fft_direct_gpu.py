"""GPU tier: the transforms' direct repeat calls (gparray/fft/_transforms.py ``_direct``,
gparray/_engine/_fft.py ``ready_plan``): a call whose recipe is one cuFFT call into a new
buffer, repeated with its plan ready on the current stream, allocates the result and calls
cuFFT, nothing else. Checked against numpy.fft call after call, over dtypes and layouts,
across streams, threads, a cleared plan cache, and inside a profile (where the general path,
which records the library call, runs instead)."""
import threading

import numpy as np
import pytest

import gparray as xp
import gparray.cuda
from gparray.fft import _transforms as tr

from _linalg_inputs import rand as sample

pytestmark = pytest.mark.gpu


def check(got, want):
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, want.dtype, g.shape, want.shape)
    eps = 1e-5 if want.dtype in (np.complex64, np.float32) else 1e-12
    bound = eps * 16 * max(1.0, float(np.abs(want).max(initial=0)))
    assert float(np.abs(g - want).max(initial=0)) <= bound


def want(name, a, **kw):
    w = getattr(np.fft, name)(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), **kw)
    single = a.dtype in (np.complex64, np.float32)
    return w.astype((np.float32 if single else np.float64) if w.dtype.kind == "f" else
                    (np.complex64 if single else np.complex128))


CASES = [("fft", {}, "c"), ("fft", {"axis": 0}, "c"), ("rfft", {"axis": 0}, "r"), ("fftn", {"axes": (0, 1)}, "c"),
         ("rfftn", {}, "r"), ("ifft", {"norm": "forward"}, "c"), ("fft", {"axis": -1, "n": 24}, "c")]


@pytest.mark.parametrize("name,kw,kind", CASES)
@pytest.mark.parametrize("double", [False, True])
def test_repeat_calls_match_numpy(name, kw, kind, double):
    dt = (np.float64 if double else np.float32) if kind == "r" else (np.complex128 if double else np.complex64)
    a = sample((48, 40), dt, seed=1)
    for layout in ("c", "T", "step"):
        h = {"c": a, "T": a.T, "step": a[::2, ::-1]}[layout]
        x = xp.asarray(a)
        x = {"c": x, "T": x.T, "step": x[::2, ::-1]}[layout]
        w = want(name, np.ascontiguousarray(h), **kw)
        for _ in range(4):       # the first call plans; the others may take the direct path
            check(getattr(xp.fft, name)(x, **kw), w)


def test_the_plain_forward_transform_is_recorded_as_direct():
    x = xp.asarray(sample((64, 32), np.complex64, seed=2))
    for _ in range(3):
        xp.fft.fft(x, axis=0)
    keys = [k for k in tr._direct if k[0] == "fft" and k[1] == (64, 32) and k[5] is None and k[7] == 0]
    assert keys
    from gparray._kernels._launcher import _claunch
    if _claunch is not None:      # the repeat calls run in C (gparray/_native/_claunch_fft.c)
        assert type(tr._direct[keys[0]][-1]) is _claunch.FftCall


def test_streams_cleared_caches_and_profiles():
    import cupy as cp

    a = sample((256, 64), np.complex64, seed=3)
    x, w = xp.asarray(a), want("fft", a, axis=0)
    for _ in range(3):
        check(xp.fft.fft(x, axis=0), w)
    s = cp.cuda.Stream(non_blocking=True)
    for _ in range(3):               # the plan moves to s (the general path), then direct there
        with s:
            y = xp.fft.fft(x, axis=0)
        s.synchronize()
        check(y, w)
    check(xp.fft.fft(x, axis=0), w)   # back on the default stream
    xp.fft.clear_plan_cache()
    for _ in range(2):
        check(xp.fft.fft(x, axis=0), w)
    with gparray.cuda.profile() as prof:
        f = xp.fft.fft(x, axis=0)
    check(f, w)
    assert [r.family for r in prof.records if r.kind == "library"] == ["cufft"]


def test_threads_make_their_own_plans():
    a = sample((128, 33), np.complex64, seed=4)
    x, w = xp.asarray(a), want("fft", a)
    for _ in range(3):
        check(xp.fft.fft(x), w)
    errors = []

    def work():
        try:
            for _ in range(5):
                check(xp.fft.fft(x), w)
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
