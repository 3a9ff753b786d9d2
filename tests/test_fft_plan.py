"""CPU tier: the FFT planner (gparray/_engine/_fft_plan.py) and the plan cache's bookkeeping
(gparray/_engine/_fft.py's PlanCache on a fake factory).

Every recipe is run through a NumPy model of what the GPU does: buffers are flat arrays
(the allocated ones start as NaN, so reading memory nobody wrote shows), inputs are strided
views into a larger flat array (steps, negative strides, permuted axes), and each cuFFT
call reads and writes through cuFFT's advanced-layout addressing
(b * dist + stride * ((x0 * embed[1] + x1) * embed[2] + x2), every host loop) and checks it
stays inside its buffer; a complex-to-real call destroys its input, as cuFFT's may. The
result must equal numpy.fft's, with the normalization applied exactly once."""
import itertools
import math
import subprocess
import sys

import numpy as np
import pytest

from gparray._engine import _fft_plan as fp
from gparray._engine._fft import PlanCache
from _fft_model import Mem, run_step

SCALE = 0.375


# ----------------------------------------------------------------------------- the model

def strided_input(shape, seed, kind_complex=True, negative=False, step=1, perm=None):
    """A view with the given logical ``shape`` into a larger flat array: every axis stepped
    by ``step``, the axes laid out in ``perm`` order, optionally reversed (negative strides)."""
    rng = np.random.default_rng(seed)
    nd = len(shape)
    perm = tuple(range(nd)) if perm is None else perm
    big = [max(e, 1) * step for e in shape]
    mem_shape = [big[a] for a in perm]
    size = math.prod(mem_shape) + 3
    flat = rng.standard_normal(size)
    if kind_complex:
        flat = flat + 1j * rng.standard_normal(size)
    base_strides = fp.dense_strides([big[a] for a in range(nd)], perm)
    strides = [s * step for s in base_strides]
    offset = 3
    if negative:
        for a in range(nd):
            if shape[a] > 1 and a % 2 == 0:
                offset += (shape[a] - 1) * strides[a]
                strides[a] = -strides[a]
    return Mem(flat, offset, shape, strides)


def run_recipe(r, x: Mem, scale=SCALE):
    """Execute recipe ``r`` on input ``x`` in the model; the result as a NumPy array."""
    mems = [Mem(x.flat, x.offset, r.view, x.strides)]
    for spec in r.bufs:
        dt = np.complex128 if spec.complex else np.float64
        flat = np.full(math.prod(max(e, 1) for e in spec.shape), np.nan, dtype=dt)
        mems.append(Mem(flat, 0, spec.shape, spec.strides()))
    for op in r.ops:
        tag = op[0]
        if tag == "load":
            dst, src = mems[op[1]], mems[0]
            v = dst.view()
            v[...] = 0
            corner = dst.view(src.shape)
            data = src.view()
            if op[2]:
                data = np.conj(data)
            if op[3]:
                data = data * scale
            corner[...] = data if np.iscomplexobj(v) else data.real
        elif tag == "copy":
            mems[op[1]].view()[...] = mems[op[2]].view() * (scale if op[3] else 1)
        elif tag == "exec":
            _, step, s, d, forward = op
            run_step(step, mems[s], mems[d], forward)
        elif tag == "real":
            mems[op[1]].view()[...] = mems[op[2]].view().real * (scale if op[3] else 1)
        elif tag == "scale":
            v = mems[op[1]].view()
            v[...] = v * scale
        elif tag == "conj":
            v = mems[op[1]].view()
            v[...] = np.conj(v)
        else:
            raise AssertionError(tag)
    return mems[r.out].view().copy(), mems[r.out]


def expected(kind, x, axes, sizes, n_last, forward, conj_in, conj_out):
    if kind == fp.C2C:
        y = np.fft.fftn(x, s=sizes, axes=axes) if forward else np.fft.ifftn(x, s=sizes, axes=axes) * math.prod(sizes)
    elif kind == fp.R2C:
        y = np.fft.rfftn(x.real, s=sizes, axes=axes)
    else:
        s = tuple(sizes[:-1]) + (n_last,)
        src = np.conj(x) if conj_in else x
        y = np.fft.irfftn(src, s=s, axes=axes) * math.prod(s)
    if conj_out:
        y = np.conj(y)
    return y * SCALE


def check(kind, x: Mem, axes, sizes, n_last=None, forward=True, direct=True, conj_in=False, conj_out=False):
    r = fp.plan_transform(kind, x.shape, x.strides, axes, sizes, n_last=n_last, forward=forward, direct=direct,
                          conj_in=conj_in, conj_out=conj_out)
    got, _ = run_recipe(r, x)
    want = expected(kind, x.view().copy(), axes, sizes, n_last, forward, conj_in, conj_out)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * max(1.0, float(np.abs(want).max(initial=0))))
    return r


# ----------------------------------------------------------------------------- plan_step

def test_axis_1_of_a_c_contiguous_matrix_is_one_basic_call():
    s = fp.plan_step(fp.C2C, (1,), (4096, 4096), (4096, 1), (4096, 4096), (4096, 1))
    assert (s.inembed, s.onembed, s.n, s.batch, s.loops) == (None, None, (4096,), 4096, ())


def test_axis_0_of_a_c_contiguous_matrix_is_one_strided_call():
    s = fp.plan_step(fp.C2C, (0,), (4096, 4096), (4096, 1), (4096, 4096), (4096, 1))
    assert s == fp.Step(fp.C2C, (0,), (4096,), (4096,), 4096, 1, (4096,), 4096, 1, 4096, ())
    r = fp.plan_transform(fp.C2C, (4096, 4096), (4096, 1), (0,), (4096,))
    assert [op[0] for op in r.ops] == ["exec", "scale"]
    assert r.bufs[0].order == ((0, 1) if fp.OUT_ORDER == "input" else (1, 0))


def test_three_axes_of_a_cube_are_one_basic_call():
    r = fp.plan_transform(fp.C2C, (256,) * 3, (65536, 256, 1), (0, 1, 2), (256,) * 3)
    (tag, step, src, dst, fwd), = [op for op in r.ops if op[0] == "exec"]
    assert step.n == (256, 256, 256) and step.inembed is None and step.batch == 1 and (src, dst) == (0, 1)


def test_rfft_of_a_long_vector_is_one_basic_call():
    r = fp.plan_transform(fp.R2C, (1 << 24,), (1,), (0,), (1 << 24,))
    (_, step, *_), = [op for op in r.ops if op[0] == "exec"]
    assert step.kind == fp.R2C and step.inembed is None and step.n == (1 << 24,)
    assert r.bufs == (fp.Buf(True, ((1 << 23) + 1,), (0,)),)


def test_non_nesting_or_negative_strides_do_not_fit():
    assert fp.plan_step(fp.C2C, (0,), (8,), (-1,), (8,), (1,)) is None
    assert fp.plan_step(fp.C2C, (0, 1), (4, 4), (1, 4), (4, 4), (4, 1)) is None    # cuFFT order: outer first
    assert fp.plan_step(fp.C2C, (1, 0), (4, 4), (1, 4), (4, 4), (1, 4)) is not None
    assert fp.plan_step(fp.C2C, (0,), (4, 3), (4, 0), (4, 3), (3, 1)) is None      # broadcast batch


def test_a_stepped_view_is_an_embedding():
    # x[::2, 1:5] of a (10, 8) C-contiguous array: rows 16 apart, columns 1 apart
    s = fp.plan_step(fp.C2C, (0, 1), (5, 4), (16, 1), (5, 4), (4, 1))
    assert (s.inembed, s.istride, s.onembed) == ((5, 16), 1, None) or (s.inembed, s.istride) == ((5, 16), 1)
    assert s.onembed == (5, 4) and s.ostride == 1


def test_middle_axis_loops_when_few_and_copies_when_many():
    few = fp.plan_transform(fp.C2C, (2, 64, 8), (512, 8, 1), (1,), (64,))
    assert [op[0] for op in few.ops] == ["exec", "scale"]
    assert few.ops[0][1].loops == ((2, 512, 512),) and few.ops[0][1].batch == 8
    many = fp.plan_transform(fp.C2C, (100, 16, 30), (480, 30, 1), (1,), (16,))
    assert [op[0] for op in many.ops] == ["load", "exec"]
    assert many.bufs[0].order == (0, 2, 1)      # the transformed axis moved innermost


def test_a_load_lays_the_first_call_out_and_later_relayouts_copy():
    x = strided_input((100, 16, 30), 9)
    r = check(fp.C2C, x, (1,), (20,))     # padded: loaded with the middle axis innermost
    assert [op[0] for op in r.ops] == ["load", "exec"] and r.bufs[0].order == (0, 2, 1)
    # c2r: loaded with the halved axis innermost; the middle axis' c2c call needs a relayout
    r = check(fp.C2R, x, (1, 2), (16, 16), n_last=30, forward=False)
    tags = [op[0] for op in r.ops]
    assert tags[:3] == ["load", "copy", "exec"] and r.bufs[1].order == (0, 2, 1)
    assert r.ops[0][3] and not any(op[0] == "copy" and op[3] for op in r.ops)  # the scale: once


def test_more_than_three_axes_is_a_sequence_of_calls():
    x = strided_input((3, 4, 5, 2), 1)
    r = check(fp.C2C, x, (0, 1, 2, 3), (3, 4, 5, 2))
    steps = [op[1] for op in r.ops if op[0] == "exec"]
    assert [len(s.n) for s in steps] == [3, 1] and r.ops[1][2] == r.ops[1][3]   # the second in place
    assert len(r.bufs) == 1


def test_keys_depend_on_layout_not_on_axis_names():
    a = fp.plan_step(fp.C2C, (1,), (4, 8), (8, 1), (4, 8), (8, 1))
    b = fp.plan_step(fp.C2C, (2,), (1, 4, 8), (32, 8, 1), (1, 4, 8), (32, 8, 1))
    assert a.key() == b.key() and hash(a.key()) == hash(b.key())
    c = fp.plan_step(fp.C2C, (1,), (5, 8), (8, 1), (5, 8), (8, 1))
    assert c.key() != a.key()


def test_recipes_are_memoized():
    fp._recipes.clear()
    r1 = fp.recipe(fp.C2C, (4, 6), (6, 1), (1,), (6,))
    r2 = fp.recipe(fp.C2C, (4, 6), (6, 1), (1,), (6,))
    assert r1 is r2 and len(fp._recipes) == 1


# ----------------------------------------------------------------------------- whole recipes

@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("layout", ["c", "perm", "step", "neg"])
def test_c2c_one_axis_every_layout(forward, layout):
    shape = (3, 5, 4)
    for axis, n in itertools.product(range(3), (1, 3, 4, 7)):
        kw = {"c": {}, "perm": {"perm": (2, 0, 1)}, "step": {"step": 2}, "neg": {"negative": True}}[layout]
        x = strided_input(shape, axis * 10 + n, **kw)
        check(fp.C2C, x, (axis,), (n,), forward=forward)


def test_scale_is_applied_once_and_folded_into_a_copy():
    x = strided_input((4, 6), 2)
    r = check(fp.C2C, x, (1,), (9,))       # padding: the load carries the scale
    assert r.ops[0] == ("load", 1, False, True) and not any(op[0] == "scale" for op in r.ops)
    r = check(fp.C2C, x, (1,), (6,))       # no copy: one in-place pass at the end
    assert r.ops[-1] == ("scale", r.out)


def test_c2r_copies_its_input_and_never_touches_it():
    x = strided_input((4, 5), 3)
    before = x.flat.copy()
    r = check(fp.C2R, x, (0, 1), (4, 5), n_last=8, forward=False)
    assert r.ops[0][0] == "load"
    np.testing.assert_array_equal(x.flat, before)


def test_hermitian_variants():
    x = strided_input((6, 5), 4)
    r = check(fp.C2R, x, (1,), (4,), n_last=7, forward=False, conj_in=True)
    assert r.ops[0] == ("load", 1, True, False)
    xr = strided_input((6, 5), 5, kind_complex=False)
    r = check(fp.R2C, xr, (0,), (6,), conj_out=True)
    assert r.ops[-1] == ("conj", r.out)


def test_length_one_special_cases():
    x = strided_input((3, 4), 6, kind_complex=False)
    check(fp.R2C, x, (0, 1), (3, 1))             # r2c of length 1: the complex input
    z = strided_input((3, 4), 7)
    r = check(fp.C2R, z, (0, 1), (3, 1), n_last=1, forward=False)
    assert any(op[0] == "real" for op in r.ops)
    check(fp.C2C, z, (0, 1), (1, 1))             # nothing to transform: a copy
    check(fp.C2C, z, (), ())


@pytest.mark.parametrize("out_order", ["input", "batch"])
def test_random_recipes_match_numpy(out_order, monkeypatch):
    monkeypatch.setattr(fp, "OUT_ORDER", out_order)
    rng = np.random.default_rng(2025)
    for case in range(400):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 6, nd))
        kind = (fp.C2C, fp.R2C, fp.C2R)[case % 3]
        k = int(rng.integers(1, nd + 1))
        axes = tuple(int(a) for a in rng.permutation(nd)[:k])
        perm = tuple(int(a) for a in rng.permutation(nd))
        step = int(rng.integers(1, 3))
        x = strided_input(shape, case, kind_complex=kind != fp.R2C, negative=rng.random() < 0.25,
                          step=step, perm=perm)
        sizes = [max(1, shape[a] + int(rng.integers(-2, 3))) for a in axes]
        n_last = None
        if kind == fp.C2R:
            n_last = sizes[-1]
            sizes[-1] = n_last // 2 + 1
        direct = rng.random() < 0.75
        forward = bool(rng.integers(0, 2)) if kind == fp.C2C else kind == fp.R2C
        try:
            check(kind, x, axes, tuple(sizes), n_last=n_last, forward=forward, direct=direct)
        except AssertionError as exc:
            raise AssertionError(f"case {case}: {kind} shape {shape} strides {x.strides} axes {axes} "
                                 f"sizes {sizes} n_last {n_last} direct {direct}") from exc


def test_results_are_dense_and_laid_out_like_the_input():
    x = strided_input((4, 6), 8, perm=(1, 0))      # a transposed input
    r = fp.plan_transform(fp.C2C, x.shape, x.strides, (0,), (4,))
    assert r.bufs[r.out - 1].order == (1, 0)


# ----------------------------------------------------------------------------- the plan cache

class FakePlan:
    def __init__(self, key, nbytes):
        self.key, self.nbytes, self.destroyed = key, nbytes, False


class Factory:
    def __init__(self, sizes=None):
        self.made, self.destroyed, self.sizes = [], [], sizes or {}

    def make(self, key):
        p = FakePlan(key, self.sizes.get(key, 100))
        self.made.append(key)
        return p

    def destroy(self, plan):
        assert not plan.destroyed
        plan.destroyed = True
        self.destroyed.append(plan.key)


def test_cache_hits_misses_and_lru_eviction_by_count():
    f = Factory()
    c = PlanCache(f.make, f.destroy, max_size=2)
    a, cached = c.get("a")
    assert cached and c.get("a") == (a, True)
    c.get("b")
    c.get("a")          # a is now the most recent
    c.get("c")          # evicts b
    assert c.keys() == ["a", "c"] and f.destroyed == ["b"]
    info = c.info()
    assert (info["hits"], info["misses"], info["evictions"], info["size"], info["memory"]) == (2, 3, 1, 2, 200)


def test_cache_memory_bound_and_oversized_plans():
    f = Factory({"big": 1000, "a": 300, "b": 300, "c": 300})
    c = PlanCache(f.make, f.destroy, max_size=10, max_memory=700)
    c.get("a"), c.get("b")
    c.get("c")          # 900 > 700: a goes
    assert c.keys() == ["b", "c"] and c.memory == 600
    plan, cached = c.get("big")      # alone over the bound: handed out, not kept
    assert not cached and "big" not in c.keys() and not plan.destroyed
    c.set_limits(max_memory=None)
    c.get("big")
    assert c.keys() == ["b", "c", "big"]
    c.set_limits(max_size=1)
    assert c.keys() == ["big"] and sorted(f.destroyed) == ["a", "b", "c"]


def test_cache_size_zero_keeps_nothing_and_clear_destroys_everything():
    f = Factory()
    c = PlanCache(f.make, f.destroy, max_size=0)
    _, cached = c.get("a")
    assert not cached and len(c) == 0
    c.set_limits(max_size=5)
    for k in "abc":
        c.get(k)
    c.clear()
    assert len(c) == 0 and c.memory == 0 and sorted(f.destroyed) == ["a", "b", "c"]


def test_importing_fft_touches_no_gpu():
    code = ("import sys, gparray, gparray.fft; "
            "print('cupy' in sys.modules, any('cufft' in m for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
