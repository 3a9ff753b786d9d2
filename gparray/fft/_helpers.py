"""The helper functions of the ``fft`` extension: sample frequencies (``fftfreq``,
``rfftfreq``, built on the device) and the half-space shifts (``fftshift``, ``ifftshift``,
one ``roll``)."""
from __future__ import annotations


from .._core import _dtypes as _dt
from .._array import Array, _copy, _empty
from .._api._creation import arange
from .._core._device import normalize_device
from .._engine import _elementwise as _ew
from .._engine._shapes import normalize_axis
from .._api._manipulation import roll
from ._transforms import _length


def _window(n, name):
    n = _length(n, name, "n")
    if n < 1:
        raise ValueError(f"{name}: n must be at least 1, got {n}")
    return n


def _spacing(d, name):
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        try:
            d = float(d)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: d must be a real number, got {type(d).__name__}") from None
    if d == 0:
        raise ValueError(f"{name}: d must not be zero")
    return float(d)


def _freq_dtype(dtype, name):
    if dtype is None:
        return _dt._default_float
    dt = _dt._normalize_dtype(dtype, name)
    if dt not in _dt._real_floating_dtypes:
        raise ValueError(f"{name}: dtype must be a real floating-point dtype (float32 or float64), got {dtype!r}")
    return dt


def _freqs(pieces, n, val, dt, dev):
    """out = concat of aranges ``pieces`` ((start, stop), ...) times ``val``, computed in
    float64 (as NumPy: integers times 1/(n*d)) and rounded once to ``dt``."""
    out = _empty((n,), dt, dev)
    pos = 0
    for start, stop in pieces:
        k = stop - start
        if k:
            ramp = arange(start, stop, dtype=_dt.float64, device=dev)
            dst = out._view(out._offset + pos * dt.itemsize, (k,), (dt.itemsize,))
            _ew.scalar("multiply", ramp, val, False, dst, _dt.float64)
        pos += k
    return out


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of a length-``n`` transform with sample spacing ``d``:
    [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d*n), of ``dtype`` (default
    float64) on ``device`` (default: the current device)."""
    n = _window(n, "fftfreq")
    d = _spacing(d, "fftfreq")
    dt = _freq_dtype(dtype, "fftfreq")
    dev = normalize_device(device, "fftfreq")
    half = (n - 1) // 2 + 1
    return _freqs(((0, half), (-(n // 2), 0)), n, 1.0 / (n * d), dt, dev)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of ``rfft``/``irfft`` of length ``n``: [0, 1, ..., n//2] / (d*n)
    (the Nyquist frequency counted positive), of ``dtype`` (default float64) on ``device``."""
    n = _window(n, "rfftfreq")
    d = _spacing(d, "rfftfreq")
    dt = _freq_dtype(dtype, "rfftfreq")
    dev = normalize_device(device, "rfftfreq")
    m = n // 2 + 1
    return _freqs(((0, m),), m, 1.0 / (n * d), dt, dev)


def _shift(x, axes, name, sign):
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (list, tuple, range)):
        axes = tuple(normalize_axis(a, x.ndim, name) for a in axes)
    else:
        axes = (normalize_axis(axes, x.ndim, name),)
    if not axes:
        return _copy(x)
    return roll(x, tuple(sign * (x._shape[a] // 2) for a in axes), axis=axes)


def fftshift(x, /, *, axes=None):
    """``x`` with the zero frequency moved to the centre along ``axes`` (default: all): a
    roll by floor(n/2) per axis (repeated axes roll again, as NumPy)."""
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x, /, *, axes=None):
    """The inverse of ``fftshift``: a roll by -floor(n/2) per axis (differs from
    ``fftshift`` by one element along odd lengths)."""
    return _shift(x, axes, "ifftshift", -1)


__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]
