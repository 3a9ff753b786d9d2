"""The FFT planner: which cuFFT calls, on which layouts, compute a transform (pure Python;
``tests/test_fft_plan.py`` runs every plan through a NumPy model of cuFFT's data layout).

cuFFT's "advanced data layout" (``cufftMakePlanMany``) reads signal ``b`` of a batch, at
multi-index ``(x0, .., x{r-1})`` of a rank-r transform, at element

    b * idist + istride * (((x0 * inembed[1]) + x1) * inembed[2] + x2)

(``inembed[0]`` is never used), and writes the output the same way with ``onembed``,
``ostride``, ``odist``. So one call transforms any up-to-3 axes whose strides nest (each
one a whole multiple of the next, at least its extent apart: a sliced, stepped or
transposed view of a larger array) and batches over the other axes when they merge into one
dimension of constant distance on both sides. A transform along axis 0 of a C-contiguous
matrix is one call (istride = row length, idist = 1), not a transpose copy.

``plan_step`` answers that question for one call (a ``Step``, or None when the layout does
not fit). ``plan_transform`` plans a whole transform as a ``Recipe``: the buffers to
allocate and the operations to run:

* ``("load", dst, conj, scale)``: the (truncated) input copied into buffer ``dst`` (its
  leading corner; the zero padding around it filled), converted to its dtype, conjugated
  or scaled by the normalization on the way;
* ``("copy", dst, src, scale)``: a relayout of an intermediate (when a step's layout does
  not fit: the axes to transform are moved innermost, the batch outermost);
* ``("exec", step, src, dst, forward)``: one cuFFT call (host loops over the batch
  dimensions that do not merge, when there are few);
* ``("real", dst, src, scale)``: the real part (a complex-to-real transform of length 1);
* ``("scale", buf)`` / ``("conj", buf)``: the normalization (when no copy took it) and
  ``ihfft``'s conjugate, in place.

Real-to-complex and complex-to-real calls: cuFFT refuses (CUFFT_INVALID_VALUE, at execution)
a real-side pointer not aligned as a complex element, so their host loops step the real side
by an even number of elements only (``plan_step``). ``basic=True`` plans use cuFFT's basic
layout only (``fallback``: what runs when cuFFT rejects an advanced layout anyway).

Buffer 0 is the input itself (a view truncated to the requested lengths); the others are
dense buffers laid out in a given order of the axes (``Buf``). The normalization is folded
into the first copy that a recipe makes anyway and is otherwise one in-place pass on the
result. Complex-to-complex steps after the first run in place on their own buffer. A
complex-to-real transform always copies its input first (cuFFT overwrites the input of
C2R), runs the complex transforms of the other axes first and the C2R one last, along one
axis (so a non-Hermitian input gives NumPy's result, as ``irfftn`` = ``ifft`` on the other
axes, then ``irfft``). Strides here are in elements.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

C2C, R2C, C2R = "c2c", "r2c", "c2r"
MAX_RANK = 3              # cuFFT transforms at most 3 axes in one plan
MAX_LOOPS = 8             # host loops over unmergeable batch dimensions: always fine up to this
MAX_LOOPS_LARGE = 64      # ... and up to this when each call moves at least LARGE_CALL elements
LARGE_CALL = 1 << 18
# The layout of a transform's new output: "batch" (default): the transformed axes innermost,
# each signal written contiguously, as PyTorch does (a transform along axis 0 of a
# C-contiguous matrix reads columns and writes rows: the result is a transposed view; on an
# H100 that is ~3% faster for (4096, 4096) complex64 than writing columns); "input": the
# input's order of the axes (a C-contiguous input gives a C-contiguous result). The two
# differ only when the transformed axes are not already innermost. GPARRAY_FFT_OUT_ORDER,
# read at import.
OUT_ORDER = os.environ.get("GPARRAY_FFT_OUT_ORDER", "batch").strip().lower()


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


@dataclass(frozen=True)
class Step:
    """One cuFFT call: ``kind`` (c2c, r2c, c2r) over array ``axes`` (cuFFT's order, the
    innermost last) of logical lengths ``n``; ``inembed``/``onembed`` None means cuFFT's
    basic (contiguous) layout, which then also fixes the strides and distances given here;
    ``batch`` signals; ``loops``: ((count, input step, output step), ...) host loops around
    the call, in elements."""

    kind: str
    axes: tuple
    n: tuple
    inembed: tuple | None
    istride: int
    idist: int
    onembed: tuple | None
    ostride: int
    odist: int
    batch: int
    loops: tuple = ()

    def key(self) -> tuple:
        """What a cuFFT plan depends on (the loops and the axes' names are not part of it)."""
        k = self.__dict__.get("_key")
        if k is None:
            k = (self.kind, self.n, self.inembed, self.istride, self.idist, self.onembed, self.ostride,
                 self.odist, self.batch)
            object.__setattr__(self, "_key", k)
        return k

    def plan_key(self, double: bool) -> tuple:
        """The plan cache's key of this call in single or double precision: (double, key())."""
        k = self.__dict__.get("_plan_keys")
        if k is None:
            k = ((False, self.key()), (True, self.key()))
            object.__setattr__(self, "_plan_keys", k)
        return k[double]


@dataclass(frozen=True)
class Buf:
    """A dense buffer: complex or real elements, the logical ``shape`` (array axes), and
    ``order``: the axes from the outermost to the innermost in memory."""

    complex: bool
    shape: tuple
    order: tuple

    def strides(self) -> tuple:
        return dense_strides(self.shape, self.order)

    def c_order(self) -> bool:
        """Laid out in the axes' own order (a C-contiguous array of ``shape``; memoized)."""
        v = self.__dict__.get("_c_order")
        if v is None:
            v = self.order == tuple(range(len(self.order)))
            object.__setattr__(self, "_c_order", v)
        return v

    def layout(self, itemsize: int) -> tuple:
        """(shape in memory order, byte strides of the logical axes) for elements of
        ``itemsize`` bytes (memoized)."""
        cache = self.__dict__.get("_layouts")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_layouts", cache)
        v = cache.get(itemsize)
        if v is None:
            v = cache[itemsize] = (tuple(self.shape[a] for a in self.order),
                                   tuple(st * itemsize for st in self.strides()))
        return v


@dataclass(frozen=True)
class Recipe:
    """A planned transform: ``view`` the input's shape after truncation (same strides and
    start as the input), ``bufs`` the buffers 1, 2, ... (buffer 0 is the view), ``ops`` as
    in the module docstring, ``out`` the buffer holding the result; ``key``: ``recipe``'s
    arguments (to plan the same transform again in basic layouts, ``fallback``)."""

    view: tuple
    bufs: tuple
    ops: tuple
    out: int
    key: tuple = None

    def is_basic(self) -> bool:
        """Every cuFFT call in cuFFT's basic layout, without host loops."""
        return all(op[1].inembed is None and not op[1].loops for op in self.ops if op[0] == "exec")

    def single(self):
        """(step, forward) when the recipe is one cuFFT call from the input into buffer 1,
        then at most the in-place normalization and conjugation of buffer 1; else None
        (memoized: the transforms' fast path)."""
        v = self.__dict__.get("_single", False)
        if v is False:
            ops = self.ops
            v = None
            if (len(self.bufs) == 1 and ops and ops[0][0] == "exec" and ops[0][2] == 0 and ops[0][3] == 1
                    and all(op[0] in ("scale", "conj") for op in ops[1:])):
                v = (ops[0][1], ops[0][4])
            object.__setattr__(self, "_single", v)
        return v


def dense_strides(shape, order) -> tuple:
    """Strides of a dense buffer of ``shape`` laid out in ``order`` (outermost first)."""
    st = [0] * len(shape)
    acc = 1
    for a in reversed(order):
        st[a] = acc
        acc *= max(shape[a], 1)
    return tuple(st)


def like_order(shape, strides) -> tuple:
    """The axes from the outermost to the innermost as a layout holds them (|stride|
    descending, ties in axis order): a new buffer in this order mirrors the input's."""
    return tuple(sorted(range(len(shape)), key=lambda a: (-abs(strides[a]), a)))


def batch_major(shape, strides, group) -> tuple:
    """An order with the other axes outermost (as ``like_order``) and ``group`` innermost,
    in its own order: every step over ``group`` fits a dense buffer of this order."""
    g = set(group)
    return tuple(a for a in like_order(shape, strides) if a not in g) + tuple(group)


def _embed(axes, shape, strides):
    """(embed, stride) of signal ``axes`` (cuFFT order) in a layout, or None when their
    strides do not nest (not positive, not whole multiples, or closer than the extents)."""
    inner = strides[axes[-1]]
    if inner <= 0:
        return None
    embed = [shape[axes[0]]]
    for j in range(1, len(axes)):
        s_out, s_in = strides[axes[j - 1]], strides[axes[j]]
        if s_in <= 0 or s_out <= 0 or s_out % s_in or s_out // s_in < shape[axes[j]]:
            return None
        embed.append(s_out // s_in)
    return tuple(embed), inner


def _batch_groups(axes, in_shape, in_strides, out_strides):
    """The batch dimensions (the axes not transformed, extent > 1) merged where both sides
    allow: [(extent, input distance, output distance)], outermost first; None when a
    stride is not positive."""
    ax = set(axes)
    dims = [a for a in range(len(in_shape)) if a not in ax and in_shape[a] != 1]
    for a in dims:
        if in_strides[a] <= 0 or out_strides[a] <= 0:
            return None
    dims.sort(key=lambda a: (-in_strides[a], -out_strides[a], a))
    groups = []
    for a in dims:
        e, i, o = in_shape[a], in_strides[a], out_strides[a]
        if groups and groups[-1][1] == i * e and groups[-1][2] == o * e:
            groups[-1] = (groups[-1][0] * e, i, o)
        else:
            groups.append((e, i, o))
    return groups


def loops_ok(count: int, per_call: int) -> bool:
    """Whether ``count`` host-looped cuFFT calls of ``per_call`` elements each beat one
    relayout copy (few calls, or a few more when each is large)."""
    return count <= MAX_LOOPS or (count <= MAX_LOOPS_LARGE and per_call >= LARGE_CALL)


# The side of a real transform whose elements are real: the index of its distance in a batch
# group (extent, input distance, output distance).
_REAL_SIDE = {R2C: 1, C2R: 2}


def plan_step(kind, axes, in_shape, in_strides, out_shape, out_strides, basic=False):
    """The cuFFT call transforming ``axes`` (cuFFT order: for r2c/c2r the halved axis
    last) from the input layout to the output layout, or None when the layouts do not fit
    (then the caller copies the input into a ``batch_major`` buffer first). The shapes
    differ only along the halved axis (r2c: output n//2+1; c2r: input n//2+1).

    Real-to-complex and complex-to-real calls: cuFFT wants every real-side pointer it is
    given aligned as a complex element (it answers CUFFT_INVALID_VALUE at execution
    otherwise), so a host loop over a batch dimension must step the real side by an even
    number of elements (the caller makes the first pointer aligned); the batch distance and
    the strides may be anything. ``basic``: only cuFFT's basic layout (dense signals, one
    batch dimension of distance the signal size, no host loops) fits."""
    axes = tuple(axes)
    if not axes or len(axes) > MAX_RANK:
        return None
    n = tuple((out_shape if kind == C2R else in_shape)[a] for a in axes)
    ie = _embed(axes, in_shape, in_strides)
    oe = _embed(axes, out_shape, out_strides)
    if ie is None or oe is None:
        return None
    groups = _batch_groups(axes, in_shape, in_strides, out_strides)
    if groups is None:
        return None
    loops = ()
    if groups:
        real = _REAL_SIDE.get(kind)
        for i in sorted(range(len(groups)), key=lambda j: (-groups[j][0], j)):   # the largest first
            loops = tuple(g for j, g in enumerate(groups) if j != i)
            if real is None or all(g[real] % 2 == 0 for g in loops):
                break
        else:
            return None     # a real-side pointer would be misaligned whatever the batch
        batch, idist, odist = groups[i]
        if loops and (basic or not loops_ok(_prod(g[0] for g in loops), batch * _prod(n))):
            return None
    else:
        batch = 1
    in_ext = tuple(in_shape[a] for a in axes)
    out_ext = tuple(out_shape[a] for a in axes)
    isz, osz = _prod(in_ext), _prod(out_ext)
    if batch == 1:  # the distances are not used: canonical values, for the plan cache's keys
        idist, odist = isz * ie[1], osz * oe[1]
    if (ie[1] == 1 and ie[0][1:] == in_ext[1:] and idist == isz
            and oe[1] == 1 and oe[0][1:] == out_ext[1:] and odist == osz):
        return Step(kind, axes, n, None, 1, isz, None, 1, osz, batch, loops)
    if basic:
        return None
    return Step(kind, axes, n, ie[0], ie[1], idist, oe[0], oe[1], odist, batch, loops)


def output_order(shape, strides, group) -> tuple:
    """The memory order of a new output buffer for a call over ``group`` (see OUT_ORDER)."""
    if OUT_ORDER == "batch":
        return batch_major(shape, strides, group)
    return like_order(shape, strides)


def pick_group(remaining, shape, strides, limit=MAX_RANK):
    """Up to ``limit`` of the ``remaining`` axes to transform in one call: the innermost
    ones (smallest strides) whose strides nest, in cuFFT order; None when even the
    innermost axis alone does not (a zero or negative stride)."""
    cands = sorted(remaining, key=lambda a: (-abs(strides[a]), a))
    for k in range(min(limit, len(cands)), 0, -1):
        g = cands[len(cands) - k:]
        if _embed(g, shape, strides) is not None:
            return g
    return None


class _Builder:
    """The state of ``plan_transform``: buffers, operations, the current layout."""

    def __init__(self, view, view_strides, conj_in, basic=False):
        self.bufs, self.ops = [], []
        self.basic = basic
        self.cur, self.shape, self.strides = 0, view, view_strides
        self.owned = False
        self.scale_pending = True
        self.conj_in = conj_in

    def new(self, complex_, shape, order) -> int:
        self.bufs.append(Buf(complex_, tuple(shape), tuple(order)))
        return len(self.bufs)

    def _take_scale(self) -> bool:
        s, self.scale_pending = self.scale_pending, False
        return s

    def move(self, idx):
        b = self.bufs[idx - 1]
        self.cur, self.shape, self.strides, self.owned = idx, b.shape, b.strides(), True

    def load(self, complex_, shape, order):
        """Copy the input (truncated, zero padded to ``shape``) into a new buffer."""
        idx = self.new(complex_, shape, order)
        scale = False if self.conj_in else self._take_scale()
        self.ops.append(("load", idx, self.conj_in, scale))
        self.conj_in = False
        self.move(idx)

    def relayout(self, complex_, group):
        """Copy the current data into a buffer with ``group`` innermost (a load when the
        current data is still the input)."""
        order = batch_major(self.shape, self.strides, group)
        if not self.owned:
            self.load(complex_, self.shape, order)
            return
        idx = self.new(complex_, self.shape, order)
        self.ops.append(("copy", idx, self.cur, self._take_scale()))
        self.move(idx)

    def exec_(self, step, dst, forward):
        self.ops.append(("exec", step, self.cur, dst, forward))
        self.move(dst)


def _c2c(b: _Builder, axes, forward):
    remaining = [a for a in axes if b.shape[a] > 1]
    while remaining:
        group = pick_group(remaining, b.shape, b.strides)
        step = None
        if group is not None:
            if b.owned:
                out_strides = b.strides
            else:
                out_order = output_order(b.shape, b.strides, group)
                out_strides = dense_strides(b.shape, out_order)
            step = plan_step(C2C, group, b.shape, b.strides, b.shape, out_strides, basic=b.basic)
        if step is None:
            if group is None:
                group = sorted(remaining, key=lambda a: (-abs(b.strides[a]), a))[-1:]
            b.relayout(True, group)
            step = plan_step(C2C, group, b.shape, b.strides, b.shape, b.strides, basic=b.basic)
        if b.owned:
            dst = b.cur
        else:
            dst = b.new(True, b.shape, out_order)
        b.exec_(step, dst, forward)
        done = set(group)
        remaining = [a for a in remaining if a not in done]


def _halved_group(b: _Builder, others, last):
    """The axes of the first r2c call: ``last`` innermost and up to two of ``others``
    whose strides nest outside it."""
    s_last = abs(b.strides[last])
    cands = sorted((a for a in others if abs(b.strides[a]) > s_last), key=lambda a: (-abs(b.strides[a]), a))
    for k in range(min(MAX_RANK - 1, len(cands)), -1, -1):
        g = cands[len(cands) - k:] + [last]
        if _embed(g, b.shape, b.strides) is not None:
            return g
    return None


def _r2c(b: _Builder, axes, out_last):
    last = axes[-1]
    others = [a for a in axes[:-1] if b.shape[a] > 1]
    group = _halved_group(b, others, last)
    step = None
    if group is not None:
        out_shape = b.shape[:last] + (out_last,) + b.shape[last + 1:]
        out_order = output_order(b.shape, b.strides, group)
        step = plan_step(R2C, group, b.shape, b.strides, out_shape, dense_strides(out_shape, out_order),
                         basic=b.basic)
    if step is None:
        group = group or [last]
        b.relayout(False, group)
        out_shape = b.shape[:last] + (out_last,) + b.shape[last + 1:]
        out_order = output_order(b.shape, b.strides, group)
        step = plan_step(R2C, group, b.shape, b.strides, out_shape, dense_strides(out_shape, out_order),
                         basic=b.basic)
    dst = b.new(True, out_shape, out_order)
    b.exec_(step, dst, True)
    done = set(group)
    _c2c(b, [a for a in others if a not in done], True)


def _c2r(b: _Builder, axes, n_last):
    last = axes[-1]
    _c2c(b, axes[:-1], False)
    out_shape = b.shape[:last] + (n_last,) + b.shape[last + 1:]
    if n_last == 1:   # a length-1 C2R is the real part of the one input element
        dst = b.new(False, out_shape, like_order(b.shape, b.strides))
        b.ops.append(("real", dst, b.cur, b._take_scale()))
        b.move(dst)
        return
    out_order = output_order(b.shape, b.strides, [last])
    step = plan_step(C2R, [last], b.shape, b.strides, out_shape, dense_strides(out_shape, out_order),
                     basic=b.basic)
    if step is None:
        b.relayout(True, [last])
        out_order = output_order(b.shape, b.strides, [last])
        step = plan_step(C2R, [last], b.shape, b.strides, out_shape, dense_strides(out_shape, out_order),
                         basic=b.basic)
    dst = b.new(False, out_shape, out_order)
    b.exec_(step, dst, False)


def _load_order(kind, cooked, shape, strides, axes, basic=False):
    """The order of the buffer a transform's input is loaded into: like the input's, unless
    the first call would not fit it; then with that call's axes innermost."""
    order = like_order(shape, strides)
    bs = dense_strides(cooked, order)
    if kind == C2C:
        remaining = [a for a in axes if cooked[a] > 1]
        if not remaining:
            return order
        group = pick_group(remaining, cooked, bs)
        if plan_step(C2C, group, cooked, bs, cooked, bs, basic) is not None:
            return order
        return batch_major(cooked, bs, group)
    last = axes[-1]
    b = _Builder(cooked, bs, False, basic)
    group = _halved_group(b, [a for a in axes[:-1] if cooked[a] > 1], last)
    out_shape = cooked[:last] + (cooked[last] // 2 + 1,) + cooked[last + 1:]
    if group is not None and plan_step(R2C, group, cooked, bs, out_shape,
                                       dense_strides(out_shape, output_order(cooked, bs, group)), basic) is not None:
        return order
    return batch_major(cooked, bs, group or [last])


def plan_transform(kind, shape, strides, axes, sizes, *, n_last=None, forward=True, direct=True,
                   conj_in=False, conj_out=False, basic=False) -> Recipe:
    """Plan a transform of the input (``shape``, element ``strides``: any signs) over
    ``axes`` (unique, non-negative; r2c/c2r: the halved axis last).

    ``sizes``: the input's length along each axis after truncation or zero padding (c2r:
    ``n_last // 2 + 1`` along the halved axis); ``n_last``: c2r's output length along it;
    ``forward``: the direction of the complex-to-complex transforms (r2c is always
    forward, c2r always inverse); ``direct``: the input has the compute dtype (and, for
    r2c, the alignment cuFFT needs), so a call may read it in place; ``conj_in``: the input
    is conjugated when copied (``hfft``); ``conj_out``: the result is conjugated (``ihfft``);
    ``basic``: every cuFFT call in cuFFT's basic layout (the fallback when cuFFT rejects an
    advanced one: the data is copied with each call's axes innermost where needed).
    """
    shape, strides, axes = tuple(shape), tuple(strides), tuple(axes)
    view, cooked = list(shape), list(shape)
    for a, s in zip(axes, sizes):
        view[a], cooked[a] = min(shape[a], s), s
    view, cooked = tuple(view), tuple(cooked)
    b = _Builder(view, strides, conj_in, basic)
    pad = view != cooked
    if kind == C2C:
        if pad or not direct or conj_in:
            b.load(True, cooked, _load_order(C2C, cooked, shape, strides, axes, basic))
        _c2c(b, axes, forward)
    elif kind == R2C:
        last = axes[-1]
        if cooked[last] == 1:     # a length-1 R2C is the input as complex numbers
            b.load(True, cooked, like_order(shape, strides))
            _c2c(b, axes[:-1], True)
        else:
            if pad or not direct:
                b.load(False, cooked, _load_order(R2C, cooked, shape, strides, axes, basic))
            _r2c(b, axes, cooked[last] // 2 + 1)
    elif kind == C2R:
        last = axes[-1]
        order = tuple(a for a in like_order(shape, strides) if a != last) + (last,)
        b.load(True, cooked, order)   # C2R overwrites its input: always a copy of our own
        _c2r(b, axes, n_last)
    else:
        raise ValueError(f"plan_transform: unknown kind {kind!r}")
    if b.cur == 0:    # nothing to transform (lengths 1 or no axes): the result is a copy
        b.load(True, cooked, like_order(shape, strides))
    if b.scale_pending:
        b.ops.append(("scale", b.cur))
    if conj_out:
        b.ops.append(("conj", b.cur))
    return Recipe(view, tuple(b.bufs), tuple(b.ops), b.cur)


_recipes: dict = {}
_RECIPES_MAX = 4096


def recipe(kind, shape, strides, axes, sizes, n_last=None, forward=True, direct=True, conj_in=False,
           conj_out=False) -> Recipe:
    """``plan_transform``, memoized on its arguments (all hashable tuples and flags)."""
    key = (kind, shape, strides, axes, sizes, n_last, forward, direct, conj_in, conj_out)
    r = _recipes.get(key)
    if r is None:
        if len(_recipes) >= _RECIPES_MAX:
            _recipes.clear()
        r = plan_transform(kind, shape, strides, axes, sizes, n_last=n_last, forward=forward, direct=direct,
                           conj_in=conj_in, conj_out=conj_out)
        r = _recipes[key] = Recipe(r.view, r.bufs, r.ops, r.out, key)
    return r


def fallback(r: Recipe) -> Recipe:
    """The same transform as ``r`` (made by ``recipe``) with every cuFFT call in cuFFT's
    basic layout; it replaces ``r`` in the memo, so later calls plan no rejected layout."""
    kind, shape, strides, axes, sizes, n_last, forward, direct, conj_in, conj_out = r.key
    b = plan_transform(kind, shape, strides, axes, sizes, n_last=n_last, forward=forward, direct=direct,
                       conj_in=conj_in, conj_out=conj_out, basic=True)
    b = Recipe(b.view, b.bufs, b.ops, b.out, r.key)
    _recipes[r.key] = b
    return b


__all__ = ["C2C", "R2C", "C2R", "Step", "Buf", "Recipe", "plan_step", "plan_transform", "recipe", "fallback",
           "pick_group",
           "like_order", "batch_major", "output_order", "dense_strides", "loops_ok"]
