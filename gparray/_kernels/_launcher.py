"""Fast kernel launches.

CuPy's ``Function.__call__`` converts every argument on each call (~5 us per launch). Here
all parameters of a launch are packed with one precompiled ``struct.Struct`` into a
per-thread buffer and handed to ``cuLaunchKernel`` through its ``extra`` argument
(``CU_LAUNCH_PARAM_BUFFER_POINTER`` / ``CU_LAUNCH_PARAM_BUFFER_SIZE``). The layout (offsets
with each parameter's alignment, as the CUDA ABI lays out a kernel's parameters) is derived
once per kernel from the NumPy types of the first call's arguments (pointers as
``numpy.uint64``, sizes as ``numpy.int64`` or ``numpy.int32``, values as NumPy scalars of the
kernel's type, structs as NumPy structured scalars; engines pass zero-valued prototypes of
these). Once a kernel's layout is known, plain layouts take Python ints and floats too,
and ``Kernel.bind`` folds arguments that never change into one bytes field packed once. If
the driver ever rejects the packed buffer, launches pass ``kernelParams`` (one pointer per
argument into the same buffer) instead.

When the optional C extension ``_claunch`` is built (setup.py; it needs a C compiler and
Python's headers, no CUDA toolkit), each Kernel's ``launch`` is a compiled ``Launch`` that
packs the same layout from C into a stack buffer and calls ``cuLaunchKernel`` itself, with
the same fallbacks. ``GPARRAY_PY_LAUNCH=1`` keeps the Python path. ``Kernel.launch3`` takes
(x, y, z) grids and blocks (user kernels, gparray.cuda.compile_kernel) on the Python path.
"""
from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from .._core import _faults
from .._native import claunch

_CODES = {
    np.dtype("bool"): "?", np.dtype("int8"): "b", np.dtype("uint8"): "B",
    np.dtype("int16"): "h", np.dtype("uint16"): "H", np.dtype("int32"): "i",
    np.dtype("uint32"): "I", np.dtype("int64"): "q", np.dtype("uint64"): "Q",
    np.dtype("float16"): "e", np.dtype("float32"): "f", np.dtype("float64"): "d",
}
_PLAIN, _COMPLEX, _BYTES = 0, 1, 2
_BUFSIZE = 4096  # the kernel parameter limit of older drivers; our largest struct is ~2 KiB

_tls = threading.local()
_fast_ok = True


def _driver_error(status: int):
    """Raise CuPy's CUDADriverError for a failed cuLaunchKernel (called by _claunch), or a
    KernelFaultError when the status says an earlier kernel faulted."""
    from cupy_backends.cuda.api import driver

    with _faults.launch_checked:
        raise driver.CUDADriverError(status)


def _bind_context(status: int):
    """Make the current device's primary context current on this host thread (called by
    _claunch when a launch found none)."""
    from .._core._backend import runtime as _rt

    runtime = _rt()
    runtime.setDevice(runtime.getDevice())


_claunch = claunch
if _claunch is not None:
    _claunch.set_hooks(_driver_error, _bind_context)


def layout(args):
    """(struct.Struct, per-argument kinds, byte size, per-argument offsets) of the parameter
    buffer for ``args``."""
    parts = ["<"]
    kinds = []
    offs = []
    off = 0
    for a in args:
        dt = a.dtype
        if dt.kind == "V":
            size, align, code, kind = dt.itemsize, 8, f"{dt.itemsize}s", _BYTES
        elif dt.kind == "c":
            size = dt.itemsize
            align, code, kind = size, ("ff" if size == 8 else "dd"), _COMPLEX
        else:
            size = align = dt.itemsize
            code, kind = _CODES[dt], _PLAIN
        pad = (-off) % align
        if pad:
            parts.append(f"{pad}x")
            off += pad
        parts.append(code)
        kinds.append(kind)
        offs.append(off)
        off += size
    return struct.Struct("".join(parts)), tuple(kinds), off, tuple(offs)


def _new_buffers():
    """This thread's parameter buffer; made at its first launch, which first binds the CUDA
    context to the thread (driver-API launches need one; a new host thread has none until a
    runtime call makes the primary context current)."""
    from .._core._backend import runtime as _rt

    runtime = _rt()
    runtime.setDevice(runtime.getDevice())
    buf = ctypes.create_string_buffer(_BUFSIZE)
    size = ctypes.c_size_t(0)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(size), 0)
    b = _tls.b = (buf, size, ctypes.addressof(extra), extra)
    return b


def _buffers():
    b = getattr(_tls, "b", None)
    return _new_buffers() if b is None else b


def _values(args, kinds):
    vals = []
    for a, k in zip(args, kinds):
        if k == _PLAIN:
            vals.append(a)
        elif k == _COMPLEX:
            vals.append(a.real)
            vals.append(a.imag)
        else:
            vals.append(a.tobytes())
    return vals


class Kernel:
    """A loaded kernel instance with its precomputed parameter layout.

    Once built (from one call's typed arguments), a plain-layout Kernel also takes Python
    ints and floats for its arguments: ``struct`` converts them with the layout's types."""

    __slots__ = ("fn", "ptr", "st", "pack", "plain", "kinds", "size", "offs", "launch", "launch3", "name", "pdl")

    def __init__(self, fn, args=None, name: str = "?"):
        self.fn = fn
        self.ptr = fn.ptr
        self.name = name  # "family: template instance", for error messages
        if args is not None:
            self._set(*layout(args))

    def _set(self, st, kinds, size, offs, pdl=False):
        self.st, self.kinds, self.size, self.offs = st, kinds, size, offs
        self.pdl = pdl
        self.pack = st.pack_into
        self.plain = all(k == _PLAIN for k in kinds)
        if _claunch is None:
            self.launch = self._py_launch
        else:
            c = _claunch.Launch(self.ptr, st.format, size, offs, int(pdl))
            if self.plain:
                self.launch = c
            else:
                def launch(grid, block, args, shared_mem, stream_ptr, c=c, kinds=kinds):
                    c(grid, block, _values(args, kinds), shared_mem, stream_ptr)
                self.launch = launch
        self.launch3 = self._py_launch3  # 3-d grid and block (user kernels): the Python path
        if _faults.BLOCKING:  # GPARRAY_LAUNCH_BLOCKING=1: synchronize and check every launch
            self.launch = _faults.checked_launch(self.launch, self.name)
            self.launch3 = _faults.checked_launch(self.launch3, self.name)

    def bind(self, args, var, pdl=False):
        """(Kernel, tails): this kernel taking the arguments at indexes ``var`` as plain
        values and each run of the others as one bytes field; ``tails`` holds those bytes
        for ``args`` (whose ``var`` entries only give their types). Call it with the values
        and the tails interleaved in parameter order, e.g. ``(out, x) + tails + (ws, epoch)``.
        ``pdl``: the compiled launches ask for programmatic stream serialization (the kernel
        waits for its predecessor with griddepcontrol.wait before touching memory; the
        Python path launches it plainly, which is always correct)."""
        var = frozenset(var)
        n = len(args)
        if len(var) >= n or any(not 0 <= i < n or self.kinds[i] != _PLAIN for i in var):
            raise ValueError(f"Kernel.bind: arguments {sorted(var)} of {n} must be plain scalars, "
                             "with at least one argument left to bind")
        full = self.st.pack(*_values(args, self.kinds))
        fmt, tails, pos, i = ["<"], [], 0, 0
        while i < n:
            start = self.offs[i]
            if i in var:
                end = start + args[i].dtype.itemsize
                code = _CODES[args[i].dtype]
                i += 1
            else:
                j = i
                while j < n and j not in var:
                    j += 1
                end = self.offs[j] if j < n else self.size
                code = f"{end - start}s"
                tails.append(full[start:end])
                i = j
            if start > pos:
                fmt.append(f"{start - pos}x")
            fmt.append(code)
            pos = end
        k = Kernel(self.fn, name=self.name)
        k._set(struct.Struct("".join(fmt)), (_PLAIN,) * (len(var) + len(tails)), self.size, self.offs, pdl)
        return k, tuple(tails)

    def __call__(self, grid: int, block: int, args, shared_mem: int, stream_ptr: int):
        """Launch on ``stream_ptr`` (the compiled path when built, else the Python one)."""
        self.launch(grid, block, args, shared_mem, stream_ptr)

    def _py_launch(self, grid: int, block: int, args, shared_mem: int, stream_ptr: int):
        self._py_launch3((grid, 1, 1), (block, 1, 1), args, shared_mem, stream_ptr)

    def _py_launch3(self, grid: tuple, block: tuple, args, shared_mem: int, stream_ptr: int):
        """Launch with a (x, y, z) grid and block through the Python path."""
        global _fast_ok
        b = getattr(_tls, "b", None)
        if b is None:
            b = _new_buffers()
        if self.plain:
            self.pack(b[0], 0, *args)
        else:
            self.pack(b[0], 0, *_values(args, self.kinds))
        gx, gy, gz = grid
        bx, by, bz = block
        with _faults.launch_checked:
            if _fast_ok:
                b[1].value = self.size
                try:
                    _launch_kernel(self.ptr, gx, gy, gz, bx, by, bz, shared_mem, stream_ptr, 0, b[2])
                    return
                except Exception as exc:  # a driver that rejects the packed buffer: kernelParams
                    if "INVALID_VALUE" not in str(exc):
                        raise
                    _fast_ok = False
            base = ctypes.addressof(b[0])
            params = (ctypes.c_void_p * len(self.offs))(*(base + o for o in self.offs))
            _launch_kernel(self.ptr, gx, gy, gz, bx, by, bz, shared_mem, stream_ptr, ctypes.addressof(params), 0)


def _launch_kernel(*a):
    global _launch_kernel
    from cupy_backends.cuda.api import driver

    _launch_kernel = driver.launchKernel
    return _launch_kernel(*a)
