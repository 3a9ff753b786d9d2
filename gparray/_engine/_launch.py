"""Kernel launch helpers shared by every engine: argument packing and device guards."""
from __future__ import annotations

import contextlib

import numpy as np

from .._core import _backend
from .._kernels._launcher import Kernel
from .._kernels._registry import ctype, get_kernel

BLOCK = 256          # must match GP_BLOCK in include/gp/elementwise.cuh
UNROLL = 1           # GP_UNROLL
STRIDED_ITEMS = 4    # GP_STRIDED_ITEMS
INT32_LIMIT = 2**31 - 1

_param_dtypes: dict[int, np.dtype] = {}


def nd_template(ndim: int) -> int:
    """The ND template argument for a strided kernel of ``ndim`` (merged) dimensions."""
    if ndim <= 4:
        return 4
    if ndim <= 16:
        return 16
    return 64


def strided_params(shape, strides_list, nd: int):
    """Pack (ndim, shape, strides of each operand) into the StridedParams<NARG, ND> struct."""
    narg = len(strides_list)
    size = 1 + nd * (narg + 1)
    dt = _param_dtypes.get(size)
    if dt is None:
        dt = _param_dtypes[size] = np.dtype([("v", np.int64, (size,))])
    rec = np.zeros((), dt)
    v = rec["v"]
    k = len(shape)
    v[0] = k
    v[1:1 + k] = shape
    for j, st in enumerate(strides_list):
        start = 1 + nd * (j + 1)
        v[start:start + k] = st
    return rec[()]


def index_type(n: int, spans) -> str:
    """'int' when every linear index and element offset fits 32 bits, else 'long long'."""
    if n <= INT32_LIMIT and all(-INT32_LIMIT <= lo and hi <= INT32_LIMIT for lo, hi in spans):
        return "int"
    return "long long"


def vec_width(*itemsizes) -> int:
    """Elements per thread access (mirrors gp::vec_width): 16 bytes of the narrowest type,
    at most 64 bytes of the widest."""
    return max(1, min(16 // min(itemsizes), 64 // max(itemsizes)))


def contig_grid(n: int, *itemsizes) -> int:
    """Blocks for a contiguous kernel over ``n`` elements."""
    tile = BLOCK * vec_width(*itemsizes) * UNROLL
    return (n + tile - 1) // tile


def strided_grid(n: int) -> int:
    """Blocks for a strided kernel over ``n`` elements."""
    tile = BLOCK * STRIDED_ITEMS
    return (n + tile - 1) // tile


def scalar_arg(value, dtype):
    """``value`` converted to a NumPy scalar of ``dtype`` (passed to the kernel by value)."""
    return dtype.type(value)


_kernels: dict = {}  # (device_id, family, expr) -> Kernel


def kernel(family: str, expr: str, device_id: int, args) -> Kernel:
    """The launchable Kernel for instance ``expr`` (layout taken from ``args``' types)."""
    key = (device_id, family, expr)
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = Kernel(get_kernel(family, expr, device_id), args, f"{family}: {expr}")
    return k


def bind(family: str, expr: str, device_id: int, args, var, pdl: bool = False):
    """(Kernel, tails) for launches of ``expr`` whose arguments other than those at indexes
    ``var`` are always as in ``args`` (see ``Kernel.bind``; ``pdl``: launched as the
    programmatic dependent of the kernel before it on the stream)."""
    return kernel(family, expr, device_id, args).bind(args, var, pdl)


_cp = None     # set (True) once _init has bound the getters below
_get_device = None
_stream = None
_multi = None  # more than one visible device: check the current device before launching

# Set by gparray.cuda.profile (gparray/cuda/_profile.py) while a profile is active, else None:
# _hook(k, device_id, grid, args, shared_mem, block) makes the launch instead of run(), and
# _copy_hook(what, nbytes, device_id, stream_ptr) gives a context manager around a copy.
_hook = None
_copy_hook = None
_NO_SPAN = contextlib.nullcontext()


def _init():
    """Bind the launch path's device and stream getters (CUDA runtime only: no CuPy import;
    the stream getter becomes CuPy's own once CuPy is imported)."""
    global _cp, _get_device, _stream, _multi
    _backend.require_device("gparray")
    _get_device, _stream = _backend.runtime().getDevice, _backend.stream_getter()
    _multi = _backend.device_count() > 1
    if _cp is None:
        _backend.when_cupy_imported(_use_cupy_stream)
    _cp = True


def _use_cupy_stream(cp):
    global _stream
    _stream = cp.cuda.get_current_stream


def run(k: Kernel, device_id: int, grid: int, args, shared_mem: int = 0, block: int = BLOCK):
    """Launch the resolved Kernel ``k`` (built for ``device_id``) on the current stream;
    ``args`` may be Python ints/floats (and a bound kernel's tail bytes)."""
    if _hook is not None:  # a profile is active (gparray.cuda.profile)
        _hook(k, device_id, grid, args, shared_mem, block)
        return
    if _cp is None:
        _init()
    if _multi and _get_device() != device_id:
        with _backend.OnDevice(device_id):
            k.launch(grid, block, args, shared_mem, _stream().ptr)
    else:
        k.launch(grid, block, args, shared_mem, _stream().ptr)


def run_plain(k: Kernel, device_id: int, grid: int, args, shared_mem: int = 0, block: int = BLOCK):
    """``run`` without the profiling hook (the hook's launch for a thread that records nothing;
    ``run`` repeats these lines rather than calling it: one Python call less per launch)."""
    if _cp is None:
        _init()
    if _multi and _get_device() != device_id:
        with _backend.OnDevice(device_id):
            k.launch(grid, block, args, shared_mem, _stream().ptr)
    else:
        k.launch(grid, block, args, shared_mem, _stream().ptr)


def copy_span(what: str, nbytes: int, device_id: int, stream_ptr: int):
    """A context manager around one copy or memset of ``nbytes`` queued on ``stream_ptr`` of
    the current device ``device_id`` (``what``: "memcpy HtoD", "memcpy DtoH", "memcpy PtoP",
    "memset"): the
    profiler's record of it while a profile is active, else a no-op."""
    h = _copy_hook
    return _NO_SPAN if h is None else h(what, nbytes, device_id, stream_ptr)


def launch(family: str, expr: str, device_id: int, grid: int, args, shared_mem: int = 0, block: int = BLOCK):
    """Launch instance ``expr`` on ``device_id`` on the current stream (``args`` typed as
    NumPy scalars the first time an instance is launched)."""
    k = _kernels.get((device_id, family, expr))
    if k is None:
        k = kernel(family, expr, device_id, args)
    run(k, device_id, grid, args, shared_mem, block)


__all__ = ["BLOCK", "bind", "copy_span", "ctype", "kernel", "launch", "run", "run_plain", "strided_params",
           "index_type", "nd_template", "contig_grid", "strided_grid", "scalar_arg", "vec_width"]
