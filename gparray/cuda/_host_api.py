"""Public host-memory API (re-exported by ``gparray.cuda``): pinned NumPy arrays and
downloads into a given NumPy array."""
from __future__ import annotations

import numpy as np

from .._core import _backend
from .._engine import _transfer
from .._array import Array
from .._api._creation import _normalize_shape
from .._core._dtypes import _default_float, _normalize_dtype
from .._memory import _host

__all__ = ["pinned_empty", "to_host"]


def pinned_empty(shape, dtype=None) -> np.ndarray:
    """An uninitialized C-contiguous NumPy array of ``shape`` and ``dtype`` (default float64)
    in pinned (page-locked) host memory.

    Transfers to and from pinned memory are one DMA at the bus's full speed:
    ``gparray.asarray(p)`` and ``gparray.cuda.to_host(x, out=p)`` skip the staging that
    pageable NumPy arrays go through. Both wait for the DMA before returning, so ``p`` may
    be changed or read at once. The memory is allocated with ``cudaHostAlloc`` (portable:
    usable with every GPU) and freed when the array and every view of it are gone (the
    allocation is their base object). Pinned memory is taken from the operating system's
    page-locked budget and is slow to allocate: make such buffers once and reuse them.

    Raises MemoryError when the memory cannot be pinned, CUDAUnavailableError without a
    CUDA device.
    """
    shape = _normalize_shape(shape, "pinned_empty")
    dt = _normalize_dtype(dtype, "pinned_empty") or _default_float
    _backend.require_device("pinned_empty")
    return _host.pinned_empty(shape, dt)


def to_host(x, *, out=None) -> np.ndarray:
    """Copy gparray Array ``x`` to the host: a new NumPy array, or ``out`` filled and
    returned.

    ``out``: a writeable C-contiguous NumPy array of x's shape and dtype; when it is pinned
    (:func:`pinned_empty`, or any page-locked memory) the copy is one DMA. Waits for the
    copy (and the work queued before it on the current stream); an explicit transfer, so
    outside the host conversion policy, as ``numpy.from_dlpack(x, device="cpu")``, which
    gives the same new array.
    """
    if not isinstance(x, Array):
        raise TypeError(f"to_host: expected a gparray Array, got {type(x).__name__}")
    return _transfer.to_host(x, out)
