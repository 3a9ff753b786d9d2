"""Memory limits and the out-of-memory error of the caching pool (pure Python).

:func:`parse_memory_limit` reads ``GPARRAY_MEMORY_LIMIT``-style strings, :func:`resolve_limit`
every form ``set_memory_limit`` accepts; :class:`OutOfMemoryError` is what the pool raises
when memory cannot be had, and ``_fmt_bytes`` writes the byte counts of its messages.
"""
from __future__ import annotations

import re

__all__ = ["ENV_LIMIT", "OutOfMemoryError", "parse_memory_limit", "resolve_limit"]

ENV_LIMIT = "GPARRAY_MEMORY_LIMIT"


class OutOfMemoryError(MemoryError):
    """The pool could not get enough device memory (or the memory limit forbids it).

    Raised after the pool has returned every unused cached segment to the device, run
    ``gc.collect()`` and retried once. ``requested`` is the size asked for (bytes) and
    ``stats`` the pool statistics (:meth:`CachingPool.stats`) at the time of the failure.
    """

    def __init__(self, message: str, requested: int = 0, stats: dict | None = None):
        super().__init__(message)
        self.requested = requested
        self.stats = dict(stats or {})


def _fmt_bytes(n) -> str:
    """Human-readable byte count: '4.00 MiB (4194304 bytes)'."""
    if n is None:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit} ({n} bytes)"
    return f"{n} bytes"


_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}
_LIMIT_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*|%)\s*$")


def parse_memory_limit(text: str, total_memory: int | None = None,
                       name: str = ENV_LIMIT) -> int | None:
    """Parse a memory limit string into bytes (None = no limit).

    Accepts plain bytes ("1000"), SI units ("8GB" = 8e9, "500MB", "1kB"), IEC units
    ("512MiB", "8GiB"; "8G" and "512M" mean the same), and a percentage of the device's
    total memory ("80%", needs ``total_memory``). "", "0", "none" and "unlimited" mean no
    limit. Raises ValueError naming ``name`` (GPARRAY_MEMORY_LIMIT) for anything else.
    """
    s = str(text).strip()
    if s.lower() in ("", "0", "none", "unlimited", "off"):
        return None
    m = _LIMIT_RE.match(s)
    if m is None:
        raise ValueError(f"{name}: cannot parse memory limit {text!r}; expected bytes "
                         "('1000'), a size ('8GB', '512MiB') or a percentage ('80%')")
    value, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        if not 0 < value <= 100:
            raise ValueError(f"{name}: a percentage limit must be in (0, 100], got {text!r}")
        if total_memory is None:
            raise ValueError(f"{name}: {text!r} is a percentage but the device's total "
                             "memory is unknown")
        return max(int(total_memory * value / 100), 1)
    if unit not in _UNITS:
        raise ValueError(f"{name}: unknown unit {m.group(2)!r} in {text!r}; use B, KB, MB, "
                         "GB, TB, KiB, MiB, GiB, TiB or %")
    nbytes = int(value * _UNITS[unit])
    return nbytes or None


def resolve_limit(limit, total_memory: int | None, name: str = "set_memory_limit"):
    """Turn a limit argument into bytes or None (no limit).

    ``limit`` may be None or 0 (no limit), an int number of bytes, a float in (0, 1]
    (fraction of ``total_memory``) or a string understood by :func:`parse_memory_limit`.
    """
    if limit is None:
        return None
    if isinstance(limit, bool):
        raise TypeError(f"{name}: expected bytes (int), a fraction (float) or None, got {limit!r}")
    if isinstance(limit, str):
        return parse_memory_limit(limit, total_memory, name)
    if isinstance(limit, float):
        if limit == 0:
            return None
        if not 0 < limit <= 1:
            raise ValueError(f"{name}: a fractional limit must be in (0, 1], got {limit!r}")
        if total_memory is None:
            raise ValueError(f"{name}: a fractional limit needs the device's total memory, "
                             "which is unknown")
        return max(int(total_memory * limit), 1)
    try:
        n = int(limit.__index__())
    except AttributeError:
        raise TypeError(f"{name}: expected bytes (int), a fraction (float) or None, "
                        f"got {type(limit).__name__}") from None
    if n < 0:
        raise ValueError(f"{name}: the limit must be >= 0 bytes, got {n}")
    return n or None
