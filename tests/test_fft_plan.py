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
import threading

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


def check(kind, x: Mem, axes, sizes, n_last=None, forward=True, direct=True, conj_in=False, conj_out=False,
          basic=False):
    r = fp.plan_transform(kind, x.shape, x.strides, axes, sizes, n_last=n_last, forward=forward, direct=direct,
                          conj_in=conj_in, conj_out=conj_out, basic=basic)
    if basic:
        assert r.is_basic(), r.ops
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


# ----------------------------------------------------------------------------- real transforms' layouts

def _real_offsets(step):
    """The real-side element offsets of a step's host-loop iterations."""
    side = 1 if step.kind == fp.R2C else 2
    offs = [0]
    for g in step.loops:
        offs = [o + k * g[side] for o in offs for k in range(g[0])]
    return offs


def test_rfft_of_a_middle_axis_loops_over_an_even_step():
    # the conformance case: rfft(x, axis=1) of a C-contiguous (2, 2, 2) float array. A loop over
    # the last axis would hand cuFFT a real pointer 1 element past an aligned one (the GPU
    # answered CUFFT_INVALID_VALUE): the last axis is the batch, the loop steps over rows
    x = strided_input((2, 2, 2), 11, kind_complex=False)
    r = check(fp.R2C, x, (1,), (2,))
    (_, step, src, dst, _), = [op for op in r.ops if op[0] == "exec"]
    assert src == 0 and (step.istride, step.idist, step.batch) == (2, 1, 2) and step.loops[0][:2] == (2, 4)


def test_real_steps_with_two_odd_batch_dimensions_copy():
    # (5, 5, 3) viewed with strides (1, 15, 5): rfft along axis 2 has two batch dimensions of
    # odd steps (1 and 15) that do not merge; either one looped would misalign the real side
    x = Mem(np.random.default_rng(3).standard_normal(80), 0, (5, 5, 3), (1, 15, 5))
    assert fp.plan_step(fp.C2C, (2,), x.shape, x.strides, x.shape, x.strides).loops == ((5, 1, 1),)
    r = check(fp.R2C, x, (2,), (3,))
    assert r.ops[0][0] == "load" and r.bufs[0].order[-1] == 2
    assert all(not op[1].loops for op in r.ops if op[0] == "exec")


@pytest.mark.parametrize("out_order", ["input", "batch"])
def test_real_steps_keep_every_real_pointer_aligned(out_order, monkeypatch):
    monkeypatch.setattr(fp, "OUT_ORDER", out_order)
    rng = np.random.default_rng(17)
    for case in range(300):
        nd = int(rng.integers(2, 5))
        shape = tuple(int(v) for v in rng.integers(2, 6, nd))
        kind = (fp.R2C, fp.C2R)[case % 2]
        k = int(rng.integers(1, nd + 1))
        axes = tuple(int(a) for a in rng.permutation(nd)[:k])
        perm = tuple(int(a) for a in rng.permutation(nd))
        x = strided_input(shape, case, kind_complex=kind == fp.C2R, step=int(rng.integers(1, 3)), perm=perm)
        sizes = [shape[a] for a in axes]
        n_last = None
        if kind == fp.C2R:
            n_last = 2 * (sizes[-1] - 1)
        r = fp.plan_transform(kind, x.shape, x.strides, axes, tuple(sizes), n_last=n_last, forward=kind == fp.R2C)
        for op in r.ops:
            if op[0] == "exec" and op[1].kind != fp.C2C:
                assert all(o % 2 == 0 for o in _real_offsets(op[1])), (case, op[1])


@pytest.mark.parametrize("out_order", ["input", "batch"])
def test_basic_recipes_match_numpy(out_order, monkeypatch):
    # the fallback when cuFFT rejects an advanced layout: every call in the basic layout
    monkeypatch.setattr(fp, "OUT_ORDER", out_order)
    rng = np.random.default_rng(99)
    for case in range(200):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 6, nd))
        kind = (fp.C2C, fp.R2C, fp.C2R)[case % 3]
        k = int(rng.integers(1, nd + 1))
        axes = tuple(int(a) for a in rng.permutation(nd)[:k])
        x = strided_input(shape, case, kind_complex=kind != fp.R2C, negative=rng.random() < 0.25,
                          step=int(rng.integers(1, 3)), perm=tuple(int(a) for a in rng.permutation(nd)))
        sizes = [max(1, shape[a] + int(rng.integers(-2, 3))) for a in axes]
        n_last = None
        if kind == fp.C2R:
            n_last = sizes[-1]
            sizes[-1] = n_last // 2 + 1
        forward = bool(rng.integers(0, 2)) if kind == fp.C2C else kind == fp.R2C
        try:
            check(kind, x, axes, tuple(sizes), n_last=n_last, forward=forward, direct=rng.random() < 0.75,
                  basic=True)
        except AssertionError as exc:
            raise AssertionError(f"case {case}: {kind} shape {shape} strides {x.strides} axes {axes}") from exc


def test_fallback_replaces_the_memoized_recipe():
    fp._recipes.clear()
    args = (fp.R2C, (6, 7, 8), (1, 6, 42), (0, 1), (6, 7))
    r = fp.recipe(*args)
    assert r.key is not None and not r.is_basic()
    b = fp.fallback(r)
    assert b.is_basic() and b.key == r.key and fp.recipe(*args) is b
    x = strided_input((6, 7, 8), 5, kind_complex=False, perm=(2, 1, 0))
    got, _ = run_recipe(b, x)
    np.testing.assert_allclose(got, np.fft.rfftn(x.view(), axes=(0, 1)) * SCALE, rtol=1e-10, atol=1e-9)


def test_single_call_recipes_are_marked_for_the_fast_path():
    r = fp.recipe(fp.C2C, (1 << 24,), (1,), (0,), (1 << 24,))
    step, forward = r.single()
    assert step.inembed is None and step.batch == 1 and step.n == (1 << 24,) and forward
    assert r.ops[1:] == (("scale", 1),) and r.bufs[0].c_order()
    padded = fp.recipe(fp.C2C, (100,), (1,), (0,), (128,))
    assert padded.single() is None      # a load first


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


def test_cache_clear_can_keep_one_plan():
    f = Factory()
    c = PlanCache(f.make, f.destroy, max_size=5)
    for k in "abc":
        c.get(k)
    c.clear(keep="b")
    assert c.keys() == ["b"] and c.memory == 100 and sorted(f.destroyed) == ["a", "c"]


# ----------------------------------------------------------------------------- the engine's per-thread caches

class EnginePlan:
    """A stand-in for _fft.Plan: records its executions."""

    def __init__(self, dev, key, nbytes=64):
        self.device, self.key, self.nbytes = dev, key, nbytes
        self.handle, self.stream, self.work = 1, None, None
        self.calls, self.destroyed = [], False

    def exec(self, handle, in_ptr, out_ptr, *direction):
        assert handle and not self.destroyed
        self.calls.append((in_ptr, out_ptr) + direction)


@pytest.fixture
def engine(monkeypatch):
    """gparray._engine._fft with fresh settings and caches, cuFFT and streams faked."""
    import types
    import weakref

    from gparray._engine import _fft

    state = types.SimpleNamespace(made=[], destroyed=[], binds=[], stream=0, contexts=[])

    def make_plan(dev, key):
        p = EnginePlan(dev, key)
        state.made.append(p)
        return p

    def destroy_plan(plan):
        assert not plan.destroyed
        plan.destroyed = True
        state.destroyed.append(plan)

    def bind(plan, stream):
        state.binds.append((plan, stream))
        plan.stream = stream

    monkeypatch.setattr(_fft, "make_plan", make_plan)
    monkeypatch.setattr(_fft, "destroy_plan", destroy_plan)
    monkeypatch.setattr(_fft, "_bind", bind)
    monkeypatch.setattr(_fft, "_bind_context", lambda dev: state.contexts.append((threading.get_ident(), dev)))
    monkeypatch.setattr(_fft, "_cp", object())
    monkeypatch.setattr(_fft, "_multi", False)
    monkeypatch.setattr(_fft, "_stream_of", lambda: types.SimpleNamespace(ptr=state.stream))
    monkeypatch.setattr(_fft, "_local", _fft._Local())
    monkeypatch.setattr(_fft, "_all", weakref.WeakSet())
    monkeypatch.setattr(_fft, "_epoch", [1])
    monkeypatch.setattr(_fft, "_limits", {"max_size": {None: 4}, "max_memory": {None: None}})
    monkeypatch.setattr(_fft, "_cleared", {})
    state.fft = _fft
    state.step = fp.plan_step(fp.C2C, (1,), (4, 8), (8, 1), (4, 8), (8, 1))
    return state


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_engine_hit_path_binds_once_per_stream(engine):
    f, step = engine.fft, engine.step
    f.execute(step, False, True, 100, 200, 0)
    f.execute(step, False, False, 100, 200, 0)
    (plan,) = engine.made
    assert plan.calls == [(100, 200, f.FORWARD), (100, 200, f.INVERSE)]
    assert engine.binds == [(plan, 0)]
    info = f.cache(0).info()
    assert (info["hits"], info["misses"], info["size"]) == (1, 1, 1)
    engine.stream = 7                   # another stream: bound again (a new work area there)
    f.execute(step, True, True, 1, 2, 0)     # double precision: another plan
    f.execute(step, False, True, 1, 2, 0)
    assert engine.binds[1:] == [(engine.made[1], 7), (plan, 7)] and len(engine.made) == 2


def test_engine_host_loops_offset_each_call(engine):
    f = engine.fft
    step = fp.plan_step(fp.C2C, (1,), (2, 64, 8), (512, 8, 1), (2, 64, 8), (512, 8, 1))
    assert step.loops == ((2, 512, 512),)
    f.execute(step, False, True, 1000, 5000, 0)
    assert engine.made[0].calls == [(1000, 5000, -1), (1000 + 512 * 8, 5000 + 512 * 8, -1)]


def test_engine_threads_get_their_own_plans_destroyed_when_they_end(engine):
    import gc

    f, step = engine.fft, engine.step
    f.execute(step, False, True, 1, 2, 0)
    mine = engine.made[0]
    tid = _in_thread(lambda: (f.execute(step, False, True, 1, 2, 0), threading.get_ident())[1])
    assert len(engine.made) == 2 and engine.made[1] is not mine
    # each thread's first transform bound the device's context to it, once
    assert engine.contexts == [(threading.get_ident(), 0), (tid, 0)]
    gc.collect()
    assert engine.destroyed == [engine.made[1]]        # the ended thread's plan
    assert f.cache(0).keys() == [step.plan_key(False)] and not mine.destroyed
    assert f.thread_count(0) == 1


def test_engine_clear_and_bounds_reach_other_threads_at_their_next_transform(engine):
    f, step = engine.fft, engine.step
    ready, cleared, ready2, bounded = (threading.Event() for _ in range(4))
    seen = {}

    def worker():
        f.execute(step, False, True, 1, 2, 0)
        ready.set()
        cleared.wait()
        f.execute(step, False, True, 1, 2, 0)     # its cache applies the clear first
        seen["info"] = f.cache(0).info()
        ready2.set()
        bounded.wait()
        f.execute(step, False, True, 1, 2, 0)     # caching is now off: made and destroyed
        seen["size"] = len(f.cache(0))

    f.execute(step, False, True, 1, 2, 0)
    t = threading.Thread(target=worker)
    t.start()
    ready.wait()
    theirs = engine.made[1]
    f.clear()
    assert engine.made[0].destroyed and not theirs.destroyed     # mine at once, theirs later
    cleared.set()
    ready2.wait()
    assert theirs.destroyed and seen["info"]["size"] == 1 and seen["info"]["misses"] == 2
    f.set_limits(max_size=0)
    assert f.limit("max_size", 0) == 0 and f.limit("max_size", 3) == 0
    bounded.set()
    t.join()
    assert seen["size"] == 0 and engine.made[-1].destroyed
    f.set_limits(3, max_size=9)
    assert (f.limit("max_size", 3), f.limit("max_size", 0)) == (9, 0)
    f.set_limits(max_memory=1000)
    assert f.cache(0).max_memory == 1000 and f.limit("max_size", 3) == 9


def test_engine_uncached_plans_are_destroyed_after_use(engine):
    f, step = engine.fft, engine.step
    f.set_limits(max_size=0)
    f.execute(step, False, True, 1, 2, 0)
    f.execute(step, False, True, 1, 2, 0)
    assert len(engine.made) == 2 and all(p.destroyed for p in engine.made) and len(f.cache(0)) == 0


def test_importing_fft_touches_no_gpu():
    code = ("import sys, gparray, gparray.fft; "
            "print('cupy' in sys.modules, any('cufft' in m for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
