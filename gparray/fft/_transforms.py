"""The ten transforms of the ``fft`` extension on cuFFT (gparray/_engine/_fft_plan.py plans
them, gparray/_engine/_fft.py runs the cuFFT calls).

Dtypes: complex64 and complex128 are transformed in their own precision; real input to the
complex transforms (fft, ifft, fftn, ifftn, irfft, irfftn, hfft) is promoted to the complex
dtype of its precision (float32 -> complex64, float64 -> complex128, float16 -> complex64);
integer and boolean input (which the standard leaves open) is computed in the default
floating dtype (float64, so complex128 results), as NumPy does. rfft, rfftn and ihfft take
real input only (complex input is a TypeError; NumPy would drop the imaginary part).
The results match ``numpy.fft`` for every ``norm``, including ``hfft`` = ``irfft(conj(x))``
and ``ihfft`` = ``conj(rfft(x))`` with the opposite normalization.

Lengths: ``n``/``s`` longer than the input zero-pad it (one fill of the padding and one copy
into a new buffer), shorter ones truncate it (a view: nothing is copied); ``s[i] == -1``
means the input's length. Repeated axes are a ValueError (the standard leaves them
implementation-defined). Results may be non-C-contiguous: a transform's output is written
with the transformed axes innermost, as PyTorch does (``fft(x, axis=0)`` of a C-contiguous
matrix is a transposed view: cuFFT writes each transformed column contiguously, which is
faster), the other axes in the input's order; ``GPARRAY_FFT_OUT_ORDER=input`` lays it out
in the input's order instead (gparray/_engine/_fft_plan.py). When cuFFT rejects a layout the
planner chose, the transform is planned again with copies into cuFFT's basic layout.

A repeated call (same function, input layout, dtype and arguments) skips the checks and the
planning: its checked form is memoized.
"""
from __future__ import annotations

import math
import operator

from .._core import _dtypes as _dt
from .._array import _ops
from .._array import Array, _empty
from .._engine import _elementwise as _ew
from .._engine import _fft
from .._engine import _fft_plan as _fp
from .._engine._shapes import c_strides, normalize_axis

_NORMS = ("backward", "ortho", "forward")


def _check_array(x, name):
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")


def _check_norm(norm, name):
    if norm not in _NORMS:
        raise ValueError(f'{name}: norm must be "backward", "ortho" or "forward", got {norm!r}')


def _complex_dtype(dt):
    """The complex compute dtype for input dtype ``dt`` of a complex transform."""
    if dt.kind == "c":
        return dt
    if dt.kind == "f":
        return _dt._real_to_complex[dt]
    return _dt._default_complex


def _real_dtype(dt, name):
    """The real compute dtype for input dtype ``dt`` of a real-input transform."""
    if dt.kind == "c":
        raise TypeError(f"{name}: expected a real-valued floating-point input, got {dt.name} "
                        f"(complex input goes to fft/fftn)")
    if dt.kind == "f":
        return _dt._compute.get(dt, dt)
    return _dt._default_float


def _length(v, name, what):
    """``v`` as a Python int (operator.index; bool refused): TypeError naming ``what``."""
    if isinstance(v, bool):
        raise TypeError(f"{name}: {what} must be an integer, got bool")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {type(v).__name__}") from None
    return v


def _check_points(v, name, what):
    if v < 1:
        raise ValueError(f"{name}: invalid number of data points ({v}) for {what}; expected at least 1")


def _scale(norm, n, inverse):
    """The normalization factor of a transform of ``n`` points in the given direction."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "backward") == inverse:
        return 1.0 / n
    return 1.0


def _axes_and_sizes(x, s, axes, name, inverse_real):
    """NumPy's rules for (s, axes) of the n-dimensional transforms: (axes, lengths)."""
    nd = x.ndim
    if axes is None:
        if s is None:
            axes = tuple(range(nd))
        else:
            s = tuple(s)
            if len(s) > nd:
                raise ValueError(f"{name}: s has {len(s)} entries for an array of {nd} dimensions")
            axes = tuple(range(nd - len(s), nd))
    else:
        if isinstance(axes, int) or hasattr(axes, "__index__"):
            axes = (axes,)
        axes = tuple(normalize_axis(a, nd, name) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axes {axes} repeat an axis")
    if s is None:
        sizes = [x._shape[a] for a in axes]
        if inverse_real and axes:
            sizes[-1] = 2 * (x._shape[axes[-1]] - 1)
    else:
        s = tuple(s)
        if len(s) != len(axes):
            raise ValueError(f"{name}: s and axes have different lengths ({len(s)} and {len(axes)})")
        sizes = []
        for v, a in zip(s, axes):
            v = _length(v, name, "each entry of s")
            sizes.append(x._shape[a] if v == -1 else v)
    for v, a in zip(sizes, axes):
        _check_points(v, name, f"axis {a}")
    return axes, tuple(sizes)


def _spec(x, kind, axes, sizes, cdt, rdt, scale, n_last=None, forward=True, conj_in=False, conj_out=False):
    """What a call needs once its arguments are checked: (recipe or None when the result is
    empty, complex dtype, real dtype, scale, result shape, result dtype)."""
    isz = x._dtype.itemsize
    st = x._strides
    strides = tuple(v // isz for v in st)
    divisible = all(v % isz == 0 for v in st)
    if kind == _fp.R2C:
        direct = divisible and x._dtype == rdt and x._ptr % (2 * rdt.itemsize) == 0
    else:
        direct = divisible and x._dtype == cdt
    out_shape = list(x._shape)
    for a, v in zip(axes, sizes):
        out_shape[a] = v
    if kind == _fp.R2C:
        out_shape[axes[-1]] = sizes[-1] // 2 + 1
    elif kind == _fp.C2R:
        out_shape[axes[-1]] = n_last
    out_dt = rdt if kind == _fp.C2R else cdt
    r = None
    if 0 not in out_shape:
        r = _fp.recipe(kind, x._shape, strides, axes, sizes, n_last, forward, direct, conj_in, conj_out)
    return (r, cdt, rdt, scale, tuple(out_shape), out_dt)


# Checked calls: (function, layout, dtype, alignment, arguments) -> _spec's answer. A repeated
# call skips the argument checks and the planning.
_specs: dict = {}
_SPECS_MAX = 4096
# Direct calls: the checked calls whose recipe is one cuFFT call into a new buffer and nothing
# else (no normalization, no conjugation), once it has run -> (step, double, forward, memory
# shape, shape, strides or None when C-contiguous, dtype, compiled call or None). A repeat
# call with the plan ready on the current stream (_fft.ready_plan) allocates the result and
# calls cuFFT, nothing more: in C where the extension is built (_fft.direct_call: about half
# the host time of the same steps in Python on the H200), else here.
_direct: dict = {}


def _run_spec(key, x, sp):
    if key is not None:
        if len(_specs) >= _SPECS_MAX:
            _specs.clear()
            _direct.clear()
        _specs[key] = sp
    out = _run(x, sp, key)
    if key is not None:
        d = _direct_entry(_specs.get(key, sp), x)   # (the recipe _run ended with: a fallback is no direct call)
        if d is not None:
            _direct[key] = d
    return out


def _direct_entry(sp, x):
    """The direct form of checked call ``sp`` on ``x``'s device (see _direct), or None."""
    r, cdt, rdt, scale = sp[0], sp[1], sp[2], sp[3]
    if r is None:
        return None
    single = r.single()
    if single is None or any(op[0] != "scale" for op in r.ops[1:]) or (len(r.ops) > 1 and scale != 1.0):
        return None
    spec = r.bufs[0]
    dt = cdt if spec.complex else rdt
    mem_shape, strides = spec.layout(dt.itemsize)
    step, double, forward = single[0], cdt.itemsize == 16, single[1]
    contig = spec.c_order()
    return (step, double, forward, mem_shape, spec.shape, None if contig else strides, dt,
            _compiled(step, double, forward, mem_shape, spec.shape, strides, contig, dt, x._device))


def _compiled(step, double, forward, mem_shape, shape, strides, contig, dt, dev):
    """The compiled direct call (gparray/_native/_claunch_fft.c), configuring the compiled
    path first when nothing has yet (its results are Arrays, its stream the current one), or
    None."""
    if contig:
        shape, strides = mem_shape, c_strides(mem_shape, dt.itemsize)
    call = _fft.direct_call(step, double, forward, math.prod(mem_shape) * dt.itemsize, tuple(shape),
                            tuple(strides), contig, dt, dev)
    return call if call is not None and _ops._ensure_configured() else None


def _memo_call(key, x, sp):
    """A repeat call: its direct form when it has one and the plan is ready, else _run."""
    d = _direct.get(key)
    if d is not None:
        try:
            out = _run_direct(d, x)
        except Exception as exc:
            if not _fft.rejected(exc):
                raise
            _direct.pop(key, None)    # cuFFT refused the layout after all: _run falls back
            out = None
        if out is not None:
            return out
    return _run(x, sp, key)


def _run_direct(d, x):
    """Direct call ``d`` on ``x`` (the same layout as when it was recorded), or None when its
    plan is not ready (the caller takes _run)."""
    step, double, forward, mem_shape, shape, strides, dt, call = d
    dev = x._device
    plan = _fft.ready_plan(step, double, dev._id)
    if plan is None:
        return None
    if call is not None:
        out = call(x, plan.handle)
        if out is not None:
            if out.__class__ is int:       # cuFFT's status (the result block is back in the pool)
                raise _fft.CuFFTError("cufftExec", out)
            return out
    out = _empty(mem_shape, dt, dev)
    if strides is not None:
        out = Array._new(out._buf, out._offset, shape, strides, dt, dev)
    if step.kind == _fp.C2C:
        plan.exec(plan.handle, x._ptr, out._ptr, _fft.FORWARD if forward else _fft.INVERSE)
    else:
        plan.exec(plan.handle, x._ptr, out._ptr)
    return out


def _run(x, sp, key=None):
    r = sp[0]
    if r is None:
        return _empty(sp[4], sp[5], x._device)
    try:
        return _execute(r, x, sp[1], sp[2], sp[3])
    except Exception as exc:
        if not _fft.rejected(exc) or r.key is None or r.is_basic():
            raise
    # cuFFT refused one of the recipe's advanced layouts: the same transform in basic
    # layouts (the input is untouched; the buffers written so far are dropped)
    r = _fp.fallback(r)
    if key is not None and key in _specs:
        _specs[key] = (r,) + sp[1:]
        _direct.pop(key, None)
    return _execute(r, x, sp[1], sp[2], sp[3])


def _lookup(name, x, a, b, norm):
    """(key, checked call's spec or None); the key is None when the call cannot be memoized
    (not an Array, unhashable arguments)."""
    if type(x) is not Array:
        return None, None
    key = (name, x._shape, x._strides, x._dtype, x._ptr & 15, a, type(a), b, type(b), norm)
    try:
        return key, _specs.get(key)
    except TypeError:
        return None, None


def _execute(r, x, cdt, rdt, scale):
    """Run recipe ``r`` on input ``x``: allocate its buffers, then its operations in order."""
    dev = x._device
    single = r.single()
    if single is not None:      # the common case: one cuFFT call into a new buffer
        spec = r.bufs[0]
        dt = cdt if spec.complex else rdt
        mem_shape, strides = spec.layout(dt.itemsize)
        out = _empty(mem_shape, dt, dev)
        if not spec.c_order():
            out = Array._new(out._buf, out._offset, spec.shape, strides, dt, dev)
        _fft.execute(single[0], cdt.itemsize == 16, single[1], x._ptr, out._ptr, dev._id)
        for op in r.ops[1:]:
            if op[0] == "scale":
                if scale != 1.0:
                    _ew.scalar("multiply", out, scale, False, out, dt)
            else:
                _ew.unary("conj", out, out, dt)
        return out
    views = [x if r.view == x._shape else x._view(x._offset, r.view, x._strides)]
    for spec in r.bufs:
        dt = cdt if spec.complex else rdt
        mem_shape, strides = spec.layout(dt.itemsize)
        base = _empty(mem_shape, dt, dev)
        views.append(Array._new(base._buf, base._offset, spec.shape, strides, dt, dev))
    double = cdt.itemsize == 16
    for op in r.ops:
        tag = op[0]
        if tag == "exec":
            _, step, src, dst, forward = op
            _fft.execute(step, double, forward, views[src]._ptr, views[dst]._ptr, dev._id)
        elif tag == "load":
            _load(views[op[1]], views[0], op[2], scale if op[3] else 1.0)
        elif tag == "copy":
            _copy_scaled(views[op[1]], views[op[2]], scale if op[3] else 1.0)
        elif tag == "real":
            dst, src = views[op[1]], views[op[2]]
            _ew.unary("real", src, dst, src._dtype)
            if op[3] and scale != 1.0:
                _ew.scalar("multiply", dst, scale, False, dst, dst._dtype)
        elif tag == "scale":
            if scale != 1.0:
                buf = views[op[1]]
                _ew.scalar("multiply", buf, scale, False, buf, buf._dtype)
        elif tag == "conj":
            buf = views[op[1]]
            _ew.unary("conj", buf, buf, buf._dtype)
        else:  # pragma: no cover - the planner emits only the tags above
            raise AssertionError(f"fft: unknown recipe operation {tag!r}")
    return views[r.out]


def _copy_scaled(dst, src, scale):
    """dst[...] = src * scale, converted to dst's dtype in one pass."""
    if scale != 1.0:
        _ew.scalar("multiply", src, scale, False, dst, dst._dtype)
    else:
        _ew.copy_into(dst, src)


def _load(dst, src, conj, scale):
    """Copy ``src`` into the leading corner of ``dst`` (conjugated or scaled on the way)
    and zero the rest of ``dst`` (the padding: one slab per padded axis)."""
    strides = dst._strides
    for a, (m, e) in enumerate(zip(src._shape, dst._shape)):
        if e > m:
            shape = dst._shape[:a] + (e - m,) + dst._shape[a + 1:]
            _ew.fill(dst._view(dst._offset + m * strides[a], shape, strides), 0)
    corner = dst if src._shape == dst._shape else dst._view(dst._offset, src._shape, strides)
    if conj:
        _ew.unary("conj", src, corner, corner._dtype)
    else:
        _copy_scaled(corner, src, scale)


def _one(name, x, n, axis, norm, kind, forward=True, hermitian=False):
    """The one-dimensional transforms (fft, ifft, rfft, irfft, hfft, ihfft)."""
    key, sp = _lookup(name, x, n, axis, norm)
    if sp is not None:
        return _memo_call(key, x, sp)
    _check_array(x, name)
    _check_norm(norm, name)
    ax = normalize_axis(axis, x.ndim, name) if x.ndim else _no_axis(name, axis)
    m = x._shape[ax]
    if kind == _fp.C2R:
        n = 2 * (m - 1) if n is None else _length(n, name, "n")
        _check_points(n, name, "n")
        sizes, n_last = (n // 2 + 1,), n
    else:
        n = m if n is None else _length(n, name, "n")
        _check_points(n, name, "n")
        sizes, n_last = (n,), None
    if kind == _fp.R2C:
        rdt = _real_dtype(x._dtype, name)
        cdt = _dt._real_to_complex[rdt]
    else:
        cdt = _complex_dtype(x._dtype)
        rdt = _dt._complex_to_real[cdt]
    inverse = kind == _fp.C2R or (kind == _fp.C2C and not forward)
    if hermitian:
        inverse = not inverse
    sp = _spec(x, kind, (ax,), sizes, cdt, rdt, _scale(norm, n, inverse), n_last=n_last, forward=forward,
               conj_in=hermitian and kind == _fp.C2R, conj_out=hermitian and kind == _fp.R2C)
    return _run_spec(key, x, sp)


def _no_axis(name, axis):
    raise ValueError(f"{name}: axis {axis} is out of bounds for a 0-dimensional array "
                     f"(the input needs at least one dimension)")


def _nd(name, x, s, axes, norm, kind, forward=True):
    """The n-dimensional transforms (fftn, ifftn, rfftn, irfftn)."""
    try:
        s_key = None if s is None else tuple(s)
        axes_key = None if axes is None else (axes if isinstance(axes, int) else tuple(axes))
    except TypeError:
        key, sp = None, None
    else:
        key, sp = _lookup(name, x, s_key, axes_key, norm)
    if sp is not None:
        return _memo_call(key, x, sp)
    _check_array(x, name)
    _check_norm(norm, name)
    axes, sizes = _axes_and_sizes(x, s, axes, name, kind == _fp.C2R)
    if kind != _fp.C2C and not axes:
        raise ValueError(f"{name}: expected at least one axis to transform")
    if kind == _fp.R2C:
        rdt = _real_dtype(x._dtype, name)
        cdt = _dt._real_to_complex[rdt]
    else:
        cdt = _complex_dtype(x._dtype)
        rdt = _dt._complex_to_real[cdt]
    n_last = None
    total = math.prod(sizes)
    if kind == _fp.C2R:
        n_last = sizes[-1]
        sizes = sizes[:-1] + (n_last // 2 + 1,)
    inverse = kind == _fp.C2R or (kind == _fp.C2C and not forward)
    sp = _spec(x, kind, axes, sizes, cdt, rdt, _scale(norm, total, inverse), n_last=n_last, forward=forward)
    return _run_spec(key, x, sp)


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional discrete Fourier transform of ``x`` along ``axis``, over ``n`` points
    (zero-padded or truncated). Complex result of ``x``'s precision (real and integer input
    promoted, see the module docstring)."""
    return _one("fft", x, n, axis, norm, _fp.C2C, forward=True)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional inverse discrete Fourier transform (``norm="backward"``: scaled by 1/n)."""
    return _one("ifft", x, n, axis, norm, _fp.C2C, forward=False)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    """N-dimensional discrete Fourier transform over ``axes`` (default: all) with lengths
    ``s`` (-1: the input's length). Up to three axes run as one cuFFT call; more run as a
    sequence of calls."""
    return _nd("fftn", x, s, axes, norm, _fp.C2C, forward=True)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    """N-dimensional inverse discrete Fourier transform (``norm="backward"``: scaled by 1/prod(s))."""
    return _nd("ifftn", x, s, axes, norm, _fp.C2C, forward=False)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional transform of real input: the n//2 + 1 non-negative frequencies
    (complex64 for float32 input, complex128 for float64)."""
    return _one("rfft", x, n, axis, norm, _fp.R2C)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """Inverse of ``rfft``: a real result of length ``n`` (default 2*(m - 1)) along ``axis``
    from the n//2 + 1 input frequencies (the imaginary parts of the zero and Nyquist
    frequencies are ignored, as in NumPy)."""
    return _one("irfft", x, n, axis, norm, _fp.C2R)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    """N-dimensional transform of real input: the last axis of ``axes`` keeps s[-1]//2 + 1
    frequencies. The real-to-complex call covers up to three axes at once."""
    return _nd("rfftn", x, s, axes, norm, _fp.R2C)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    """Inverse of ``rfftn``: a real result with lengths ``s`` (default: the input's, and
    2*(m - 1) along the last axis). The complex transforms of the other axes run first, then
    the complex-to-real one (NumPy's order, so any input gives NumPy's result)."""
    return _nd("irfftn", x, s, axes, norm, _fp.C2R, forward=False)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """Transform of a Hermitian-symmetric signal given by its first half: a real result of
    length ``n`` (default 2*(m - 1)); NumPy's ``irfft(conj(x), n)`` with the opposite
    normalization (``norm="backward"``: not scaled)."""
    return _one("hfft", x, n, axis, norm, _fp.C2R, hermitian=True)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """Inverse of ``hfft`` for real input: the n//2 + 1 values ``conj(rfft(x))`` with the
    opposite normalization (``norm="backward"``: scaled by 1/n)."""
    return _one("ihfft", x, n, axis, norm, _fp.R2C, hermitian=True)


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft"]
