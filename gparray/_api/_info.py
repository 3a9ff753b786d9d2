"""Inspection (spec section "Inspection"): ``__array_namespace_info__``."""
from __future__ import annotations

from .._core import _backend
from .._core import _dtypes as _dt
from .._core._device import current_device, get_device, normalize_device


class Info:
    """Namespace-level facts: capabilities, default device, default dtypes, devices, dtypes."""

    __module__ = "gparray"

    def capabilities(self) -> dict:
        """What optional behaviour gparray supports."""
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
        }

    def default_device(self):
        """The device arrays are created on when ``device=None`` (the current CUDA device)."""
        return current_device()

    def devices(self) -> tuple:
        """Every visible CUDA device (a tuple, as the 2025.12 spec asks)."""
        return tuple(get_device(i) for i in range(_backend.device_count()))

    def default_dtypes(self, *, device=None) -> dict:
        """Default dtypes: float64, complex128, int64, int64 (indexing)."""
        if device is not None:
            normalize_device(device, "default_dtypes")
        return _dt._default_dtypes()

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The spec's dtypes by name, optionally filtered by ``kind`` (as in isdtype). The
        extension dtype float16 is supported but not listed (it is not a spec dtype)."""
        if device is not None:
            normalize_device(device, "dtypes")
        return _dt._dtypes_of_kind(kind, "dtypes")


def __array_namespace_info__() -> Info:
    """Inspection namespace of gparray."""
    return Info()
