"""GPU tier stress: hypothesis draws random sequences of steps (creation, views, elementwise
ops, reductions, scans, frees, empty_cache) over every dtype; each step is checked against
NumPy doing the same on the host mirror of each live array. At the end of every example all
arrays are dropped and the device pool must hold no more than at its start: allocated and
active bytes, and reserved bytes after empty_cache (the scan engine's persistent look-back
workspaces are released before both measurements).

Integers stay small (overflow is guarded, except unsigned subtraction, which wraps the same
way in both); floats are compared with ulp-scaled bounds (elementwise) or rtol * the sum of
magnitudes (reductions, scans); everything else exactly, dtype and shape included. A failing
example lists its labelled draws (step, array, axis, ...) and notes.
"""
import gc
import math
import os
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import gparray as xp
import gparray.cuda  # binds gparray: gparray.cuda.memory_stats / empty_cache
from gparray._engine import _scan

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
BIG = [(4097,), (8193,), (70000,), (3, 4097)]   # just over a tile (4096 / 8192 elements)
MAX_LIVE = 6            # live arrays kept (the oldest is dropped first)
MAX_ELEMS = 300_000     # steps whose result would be larger are skipped
MAX_STEPS = 30
# A fixed count bounds the run (H200: 200 examples took 33 s alone, more than 60 s beside 11
# other workers). No wall-clock guard: an example that returns early without drawing, because
# a clock ran out, is data generation that depends on external state, which Hypothesis
# reports as FlakyStrategyDefinition (seen with seed 8111). GPARRAY_STRESS_EXAMPLES for longer runs.
EXAMPLES = int(os.environ.get("GPARRAY_STRESS_EXAMPLES", "100"))
SLOW_STEP_S = 2.0       # a step longer than this is reported on stderr (its name, the live arrays)
FLOAT_MAX = 1e15        # float results larger than this (or not finite) are checked, not kept
RTOL = {"float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12}
STEPS = ["create", "view", "elementwise", "reduce", "scan", "drop", "empty_cache", "verify"]
_state = {"failed": False}


def sum_dtype(dt):
    """Default result dtype of sum / cumulative_sum (spec)."""
    k = np.dtype(dt).kind
    return "int64" if k in "bi" else "uint64" if k == "u" else np.dtype(dt).name


def hi(a):
    return np.asarray(a).astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def eps(dt):
    return float(np.finfo(np.dtype(dt)).eps)


def magnitude(a):
    return float(np.max(np.abs(hi(a)))) if a.size else 0.0


def bshape(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def check(got, ref, dtype, bound=None):
    """Host copy of ``got`` after asserting its dtype, shape and values against ``ref``:
    exactly, or |got - ref| <= bound for the real and the imaginary parts."""
    g = np.asarray(got)
    ref = np.asarray(ref)
    assert g.dtype == np.dtype(dtype), (g.dtype, dtype)
    assert g.shape == ref.shape, (g.shape, ref.shape)
    if bound is None:
        assert ref.dtype == g.dtype, (ref.dtype, g.dtype)   # a mistake in the mirror
        np.testing.assert_array_equal(g, ref)
        return g
    gh, b = hi(g), np.broadcast_to(np.asarray(bound, np.float64), ref.shape)
    for part in (np.real, np.imag) if gh.dtype.kind == "c" else (np.asarray,):
        err = np.abs(part(gh) - part(ref))
        assert np.all(err <= b), f"error {err.max()} over bound {b.flat[np.argmax(err - b)]}"
    return g


def values(dt, shape, seed):
    rng = np.random.default_rng(seed)
    k = np.dtype(dt).kind
    if k == "b":
        return rng.random(shape) < 0.5
    if k in "iu":
        return rng.integers(0 if k == "u" else -50, 51, shape).astype(dt)
    v = rng.standard_normal(shape) * 10
    if k == "c":
        v = v + 1j * rng.standard_normal(shape) * 10
    if seed % 3 == 0:
        v = np.round(v)                      # ties for max/min/argmax
    return np.where(rng.random(shape) < 0.2, 0, v).astype(dt)


class Run:
    """One example: live (Array, NumPy mirror) pairs and the steps on them."""

    def __init__(self, data):
        self.data, self.live = data, []

    def draw(self, strategy, label):
        return self.data.draw(strategy, label=label)

    def pick(self, label="array", pred=None):
        idx = [i for i, (_, m) in enumerate(self.live) if pred is None or pred(m)]
        return self.live[self.draw(st.sampled_from(idx), label)] if idx else None

    def keep(self, x, m):
        if m.dtype.kind in "fc" and m.size and not (np.all(np.isfinite(m)) and magnitude(m) <= FLOAT_MAX):
            return
        if len(self.live) >= MAX_LIVE:
            del self.live[0]                 # frees it (unless a view of it is alive)
        self.live.append((x, m))

    def shape(self):
        if self.draw(st.integers(0, 9), "big?") == 9:
            return self.draw(st.sampled_from(BIG), "shape")
        return tuple(self.draw(st.lists(st.integers(0, 40), max_size=3), "shape"))

    def axis(self, nd, tuples=True):
        if nd == 0:
            return self.draw(st.sampled_from([None, ()] if tuples else [None]), "axis")
        form = self.draw(st.sampled_from(["none", "int", "tuple"][:3 if tuples else 2]), "axis form")
        if form == "none":
            return None
        if form == "int":
            return self.draw(st.integers(-nd, nd - 1), "axis")
        axes = self.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd), "axes")
        return tuple(a - nd if i % 2 else a for i, a in enumerate(axes))

    def key(self, shape):
        nd = len(shape)
        if nd == 0:
            return ...
        n_keys = self.draw(st.integers(1, nd), "key length")
        ell = n_keys < nd and self.draw(st.booleans(), "ellipsis")
        key = []
        for n in shape[nd - n_keys:] if ell else shape[:n_keys]:
            if n and self.draw(st.integers(0, 4), "int index?") == 0:
                key.append(self.draw(st.integers(-n, n - 1), "index"))
                continue
            end = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            key.append(slice(self.draw(end, "start"), self.draw(end, "stop"),
                             self.draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]), "step")))
        return (Ellipsis, *key) if ell else tuple(key)

    # ------------------------------------------------------------------ steps
    def create(self):
        dt = self.draw(st.sampled_from(DTYPES), "dtype")
        how = self.draw(st.sampled_from(["asarray", "zeros", "ones", "full", "arange"]), "how")
        k, D = np.dtype(dt).kind, getattr(xp, dt)
        if how == "arange" and k in "bc":
            how = "asarray"
        if how == "arange":
            start = self.draw(st.integers(0 if k == "u" else -20, 20), "start")
            step = self.draw(st.sampled_from([1, 2, 3, -1, -2, -3]), "step")
            n = self.draw(st.sampled_from([0, 1, 5, 40, 4097, 70000]), "n")
            if k in "iu":                    # every value must fit the dtype
                info = np.iinfo(dt)
                n = min(n, (info.max - start) // step + 1 if step > 0 else (start - info.min) // -step + 1)
            stop = start + n * step
            note(f"arange({start}, {stop}, {step}, dtype={dt})")
            x, ref = xp.arange(start, stop, step, dtype=D), np.arange(start, stop, step).astype(dt)
        else:
            shape = self.shape()
            note(f"{how}({shape}, dtype={dt})")
            if how == "asarray":
                a = values(dt, shape, self.draw(st.integers(0, 2**32 - 1), "seed"))
                ref = a[::-1] if a.ndim and self.draw(st.booleans(), "reversed source") else a
                x = xp.asarray(ref)
            elif how == "full":
                i = self.draw(st.integers(0 if k == "u" else -50, 50), "fill")
                v = bool(i % 2) if k == "b" else i if k in "iu" else \
                    i / 4 if k == "f" else complex(i / 4, -i / 8)
                x, ref = xp.full(shape, v, dtype=D), np.full(shape, v, dtype=dt)
            else:
                x, ref = getattr(xp, how)(shape, dtype=D), getattr(np, how)(shape, dtype=dt)
        self.keep(x, check(x, ref, dt))

    def view(self):
        x, m = self.pick()
        nd = m.ndim
        how = self.draw(st.sampled_from(["slice", "flip", "permute", "mT", "broadcast", "expand"]), "view")
        if (how == "mT" and nd < 2) or (how in ("broadcast", "expand") and nd >= 4):
            how = "slice"
        if how == "slice":
            key = self.key(m.shape)
            note(f"{m.dtype}{m.shape}[{key}]")
            got, ref = x[key], m[key]
        elif how == "flip":
            ax = self.axis(nd)
            got, ref = xp.flip(x, axis=ax), np.flip(m, axis=ax)
        elif how == "permute":
            p = tuple(self.draw(st.permutations(range(nd)), "perm"))
            got, ref = xp.permute_dims(x, p), np.transpose(m, p)
        elif how == "mT":
            got, ref = xp.matrix_transpose(x), np.swapaxes(m, -1, -2)
        elif how == "expand":
            ax = self.draw(st.integers(-nd - 1, nd), "axis")
            got, ref = xp.expand_dims(x, axis=ax), np.expand_dims(m, ax)
        else:
            lead = self.draw(st.lists(st.integers(0, 4), max_size=4 - nd), "new leading dims")
            shape = tuple(lead) + tuple(self.draw(st.integers(0, 5), "extent") if s == 1 else s
                                        for s in m.shape)
            if math.prod(shape) > MAX_ELEMS:
                return
            got, ref = xp.broadcast_to(x, shape), np.broadcast_to(m, shape)
        self.keep(got, check(got, ref, m.dtype))

    def elementwise(self):
        ops = ["add", "subtract", "multiply", "abs", "negative", "where", "astype"]
        op = self.draw(st.sampled_from(ops), "op")
        x, m = self.pick()
        dt, k = m.dtype.name, m.dtype.kind
        if k == "b" and op in ("add", "subtract", "multiply", "abs", "negative"):
            op = "where"
        note(f"{op} on {dt}{m.shape}")
        if op in ("add", "subtract", "multiply", "where"):   # same dtype, broadcastable shapes
            y, n = self.pick("second", lambda a: a.dtype == m.dtype and bshape(m.shape, a.shape) is not None)
            out = bshape(m.shape, n.shape)
            if math.prod(out) > MAX_ELEMS:
                return
        if op in ("add", "subtract", "multiply"):
            if k in "iu":
                ma, mb = magnitude(m), magnitude(n)
                wide = ma * mb if op == "multiply" else ma + mb
                if wide > np.iinfo(dt).max / 2 and not (op == "subtract" and k == "u"):
                    return                   # would overflow (unsigned subtraction wraps in both)
            got = getattr(xp, op)(x, y)
            if k in "iu":
                with np.errstate(all="ignore"):
                    return self.keep(got, check(got, getattr(np, op)(m, n), dt))
            mh, nh = hi(m), hi(n)
            scale = np.abs(mh) * np.abs(nh) if op == "multiply" else np.abs(mh) + np.abs(nh)
            self.keep(got, check(got, getattr(np, op)(mh, nh), dt, 4 * eps(dt) * scale))
        elif op == "abs":
            got = xp.abs(x)
            if k in "fc":
                ref = np.abs(hi(m))
                self.keep(got, check(got, ref, np.finfo(m.dtype).dtype, 4 * eps(dt) * ref))
            else:
                self.keep(got, check(got, np.abs(m), dt))
        elif op == "negative":
            got = xp.negative(x)
            with np.errstate(all="ignore"):
                self.keep(got, check(got, np.negative(m), dt))
        elif op == "where":
            c, cm = self.pick("condition", lambda a: bshape(out, a.shape) is not None)
            if math.prod(bshape(out, cm.shape)) > MAX_ELEMS:
                return
            cond = c if cm.dtype == np.bool_ else xp.astype(c, xp.bool)
            cb = check(cond, cm != 0, "bool")
            got = xp.where(cond, x, y)
            self.keep(got, check(got, np.where(cb, m, n), dt))
        else:
            to = self.draw(st.sampled_from(DTYPES), "to")
            tk = np.dtype(to).kind
            src = m.real if k == "c" and tk in "iuf" else m      # complex -> real keeps the real part
            if k in "biu" and tk in "fc" and magnitude(m) > 2**24:
                return                       # not exact in float32
            if k in "fc" and tk in "iu" and src.size:
                t = np.trunc(src.astype(np.float64))
                if t.min() < np.iinfo(to).min or t.max() > np.iinfo(to).max:
                    return                   # out of range: undefined in C
            note(f"astype {dt} -> {to}")
            got = xp.astype(x, getattr(xp, to))
            self.keep(got, check(got, m != 0 if tk == "b" else src.astype(to), to))

    def reduce(self):
        ops = ["sum", "max", "min", "mean", "argmax", "any", "count_nonzero"]
        op = self.draw(st.sampled_from(ops), "reduction")
        x, m = self.pick()
        dt, k, nd = m.dtype.name, m.dtype.kind, m.ndim
        if (k == "c" and op in ("max", "min", "argmax")) or (k in "biu" and op == "mean"):
            op = "sum"
        axis = self.axis(nd, tuples=op != "argmax")
        kd = self.draw(st.booleans(), "keepdims")
        axes = tuple(range(nd)) if axis is None else (axis % nd,) if isinstance(axis, int) else \
            tuple(a % nd for a in axis)
        cnt = math.prod(m.shape[i] for i in axes)
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(m.shape)) if kd else \
            tuple(s for i, s in enumerate(m.shape) if i not in axes)
        kw = dict(axis=axis, keepdims=kd)
        f = getattr(xp, op)
        note(f"{op}({dt}{m.shape}, axis={axis}, keepdims={kd})")
        if op in ("max", "min", "argmax") and cnt == 0:
            if op == "argmax" or math.prod(out_shape):
                with pytest.raises(ValueError):
                    f(x, **kw)
            else:                            # nothing to reduce into: an empty result
                check(f(x, **kw), np.zeros(out_shape, dt), dt)
            return
        if op == "mean" and cnt == 0:
            return                           # NaN
        got = f(x, **kw)
        if op == "mean" or (op == "sum" and k in "fc"):
            mh, g = hi(m), getattr(np, op)
            return self.keep(got, check(got, g(mh, **kw), dt, RTOL[dt] * g(np.abs(mh), **kw)))
        if op == "sum":
            ref, rdt = np.sum(m, dtype=sum_dtype(dt), **kw), sum_dtype(dt)
        elif op in ("max", "min"):
            ref, rdt = getattr(np, op)(m, **kw), dt
        elif op == "argmax":
            ref, rdt = np.asarray(np.argmax(m, **kw), np.int64), "int64"
        elif op == "any":
            ref, rdt = np.any(m, **kw), "bool"
        else:
            ref, rdt = np.asarray(np.count_nonzero(m, **kw), np.int64), "int64"
        self.keep(got, check(got, ref, rdt))

    def scan(self):
        pair = self.pick(pred=lambda a: a.ndim >= 1)
        if pair is None:
            return
        x, m = pair
        nd, dt = m.ndim, m.dtype.name
        axis = self.draw(st.sampled_from([None, 0, -1]) if nd == 1 else st.integers(-nd, nd - 1), "axis")
        inc = self.draw(st.booleans(), "include_initial")
        ax = 0 if axis is None else axis % nd
        note(f"cumulative_sum({dt}{m.shape}, axis={axis}, include_initial={inc})")
        got = xp.cumulative_sum(x, axis=axis, include_initial=inc)
        if m.dtype.kind in "fc":
            mh = hi(m)
            ref, bound = np.cumsum(mh, axis=ax), RTOL[dt] * np.cumsum(np.abs(mh), axis=ax)
        else:
            ref, bound = np.cumsum(m, axis=ax, dtype=sum_dtype(dt)), None
        if inc:
            zs = ref.shape[:ax] + (1,) + ref.shape[ax + 1:]
            ref = np.concatenate([np.zeros(zs, ref.dtype), ref], axis=ax)
            bound = None if bound is None else np.concatenate([np.zeros(zs), bound], axis=ax)
        self.keep(got, check(got, ref, sum_dtype(dt), bound))

    def drop(self):
        del self.live[self.draw(st.integers(0, len(self.live) - 1), "drop")]

    def empty_cache(self):
        gparray.cuda.empty_cache()

    def verify(self):
        """Every live array still holds its values (frees and reuse corrupted nothing)."""
        for x, m in self.live:
            check(x, m, m.dtype)

    def step(self):
        name = self.draw(st.sampled_from(STEPS), "step")
        t0 = time.monotonic()
        getattr(self, name if self.live or name == "empty_cache" else "create")()
        dt = time.monotonic() - t0
        if dt > SLOW_STEP_S:   # (seen with pytest -s: where a long run went)
            print(f"stress: step {name} took {dt:.1f} s (live: {[(m.dtype.name, m.shape) for _, m in self.live]})",
                  file=sys.stderr, flush=True)


def _settled_stats():
    gc.collect()
    _scan.release_workspaces()
    gparray.cuda.empty_cache()           # synchronizes: pending frees complete
    return gparray.cuda.memory_stats()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_step_sequences_match_numpy_and_free_everything(data):
    t_example = time.monotonic()
    base = _settled_stats()
    run = Run(data)
    try:
        for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
            run.step()
        run.verify()
    except Exception:
        # a real failure (not Hypothesis's StopTest, a BaseException raised through a draw
        # when an example overruns its buffer, which is no failure of ours)
        _state["failed"] = True              # while shrinking, arrays may outlive an example
        raise
    run.live.clear()
    del run
    end = _settled_stats()
    keys = ("allocated_bytes.current", "active_bytes.current", "reserved_bytes.current")
    msg = {k: (base[k], end[k]) for k in keys}
    grown = end["allocated_bytes.current"] - base["allocated_bytes.current"]
    assert (grown <= 0 if _state["failed"] else grown == 0), msg
    assert end["active_bytes.current"] <= base["active_bytes.current"], msg
    assert end["reserved_bytes.current"] <= base["reserved_bytes.current"], msg
    if time.monotonic() - t_example > 5 * SLOW_STEP_S:
        print(f"stress: an example took {time.monotonic() - t_example:.1f} s", file=sys.stderr, flush=True)
