"""User kernels: ``gparray.cuda.compile_kernel`` (CUDA C++ given as a string).

The source goes through gparray's own NVRTC path and disk cache (``gparray/_kernels/_compile``):
the same options, gparray's headers on the include path (``#include "gp/types.cuh"``), cache
keys over the source, the extra options, the name expressions, every packaged header, the
target arch, the NVRTC version and gparray's version. Launches use the launcher of gparray's
own kernels (``gparray/_kernels/_launcher.Kernel``): one parameter buffer laid out with the
CUDA parameter alignment rules, packed and handed to ``cuLaunchKernel``.

Arguments and the C type each one is passed as:

* a gparray Array: a pointer to its element [0, ..., 0] (data pointer + offset; strides are
  the kernel's business: pass them as ints);
* ``bool`` -> ``bool``, ``int`` -> ``long long``, ``float`` -> ``double``, ``complex`` ->
  ``gp::complex128``;
* a NumPy scalar: its own type (``np.float32`` -> ``float``, ``np.int32`` -> ``int``,
  ``np.uint8`` -> ``unsigned char``, ``np.float16`` -> ``gp::half``, ``np.complex64`` ->
  ``gp::complex64``, ...).
"""
from __future__ import annotations

import numpy as np

from .._core import _backend
from .._array import Array
from .._engine import _launch
from .._kernels import _compile, _registry
from .._kernels._compile import KernelCompileError
from .._kernels._launcher import _CODES, Kernel, _claunch
from .._engine._streams import Stream

_INT64 = (-(2**63), 2**63 - 1)
_UINT64 = np.dtype(np.uint64)
_PY_TYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
             complex: np.dtype(np.complex128)}
_SCALAR_DTYPES = frozenset(_CODES) | {np.dtype(np.complex64), np.dtype(np.complex128)}
_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gpu-architecture")
_GRID_MAX = (2**31 - 1, 65535, 65535)
_BLOCK_MAX = (1024, 1024, 64)
_PLANS_MAX = 64   # argument class combinations remembered per kernel for the fast path

_loaded: dict = {}  # (module key, device id) -> {name expression: CuPy Function} (the in-memory cache)
# Set by gparray.cuda.profile while a profile is active, else None:
# _hook(kernel, grid, block, values, shared_mem, stream_ptr) makes the launch.
_hook = None


class UserKernelCompileError(KernelCompileError):
    """NVRTC rejected a user kernel's source (``compile_kernel``); the message carries its log."""


def clear_memo() -> None:
    """Forget loaded user modules (the next launch reads the disk cache or compiles)."""
    _loaded.clear()


def _check_str(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"compile_kernel: {what} must be a non-empty str, got {type(value).__name__}")
    return value


def compile_kernel(source: str, name: str, *, options=(), name_expressions=None, arch=None):
    """Compile CUDA C++ ``source`` with gparray's NVRTC path and kernel cache.

    Without ``name_expressions``, returns the ``UserKernel`` for the ``__global__`` function
    ``name`` (``extern "C"`` or not). With them (template instantiations such as
    ``"axpy<float>"``), returns a ``UserModule`` whose ``get_function(expr)`` (or ``[expr]``)
    gives each instantiation's kernel; ``name`` then names the module in messages.

    ``options``: extra NVRTC options after gparray's own (``--std=c++17 -default-device
    --minimal -I<gparray headers> -arch=sm_XX``); the arch always follows the device.
    ``arch`` (e.g. ``"90"``): compile for that arch now (a machine without a GPU can check a
    kernel or fill the cache); by default the kernel is compiled now for the current device
    when there is one, and for another device at its first launch there. NVRTC's rejection
    raises ``UserKernelCompileError`` (a ``KernelCompileError``) carrying NVRTC's log.
    """
    _check_str(source, "source")
    _check_str(name, "name")
    if isinstance(options, str) or not isinstance(options, (tuple, list)) or \
            not all(isinstance(o, str) for o in options):
        raise TypeError("compile_kernel: options must be a tuple or list of str")
    options = tuple(options)
    for o in options:
        if o.split("=")[0] in _ARCH_OPTIONS:
            raise ValueError(f"compile_kernel: option {o!r}: the target arch follows the launch's device "
                             "(use arch= to compile for another one)")
    if name_expressions is None:
        exprs = (name,)
    else:
        if isinstance(name_expressions, str) or not isinstance(name_expressions, (tuple, list)):
            raise TypeError("compile_kernel: name_expressions must be a tuple or list of str")
        exprs = tuple(dict.fromkeys(_check_str(e, "each name expression") for e in name_expressions))
        if not exprs:
            raise ValueError("compile_kernel: name_expressions is empty")
    mod = UserModule(source, name, options, exprs)
    if arch is not None:
        mod.compile(str(arch))
    elif _backend.has_cuda():
        mod._functions(_backend.runtime().getDevice())
    return mod[name] if name_expressions is None else mod


class UserModule:
    """Compiled user source: one kernel per name expression (``get_function(expr)`` or
    ``module[expr]``), loaded per device at its first use there."""

    def __init__(self, source: str, name: str, options: tuple, exprs: tuple):
        self.source, self.name, self.options, self.name_expressions = source, name, options, exprs
        self._family = f"user:{name}"
        self._kernels = {e: UserKernel(self, e) for e in exprs}

    def __repr__(self):
        return f"<gparray UserModule {self.name!r}: {', '.join(self.name_expressions)}>"

    def get_function(self, expr: str) -> "UserKernel":
        """The kernel of name expression ``expr`` (one of ``name_expressions``)."""
        k = self._kernels.get(expr)
        if k is None:
            raise KeyError(f"UserModule.get_function: {expr!r} is not one of this module's name expressions "
                           f"{list(self.name_expressions)}")
        return k

    __getitem__ = get_function

    def key(self, arch: str) -> str:
        """The disk cache's module key for ``arch`` (gparray's own key function)."""
        return _compile.module_key(self._family, list(self.name_expressions), arch, self.source, self.options)

    def compile(self, arch: str) -> tuple[bytes, dict]:
        """(cubin, {name expression: lowered name}) for sm_<arch>, from the disk cache or NVRTC."""
        return _compile.compile_cached(self._family, list(self.name_expressions), arch, self.source,
                                       self.options, caller="compile_kernel", error=UserKernelCompileError)

    def _functions(self, dev: int) -> dict:
        """{name expression: loaded Function (``_registry.Function``)} on device ``dev``."""
        arch = _registry.device_arch(dev)
        key = (self.key(arch), dev)
        fns = _loaded.get(key)
        if fns is None:
            cubin, mapping = self.compile(arch)
            with _registry.in_context(dev):   # load and look up with dev's context current
                m = _registry.Module(cubin)
                fns = {e: m.get_function(mapping[e]) for e in self.name_expressions}
            fns[None] = m  # keeps the module loaded
            _loaded[key] = fns
        return fns


def _dims(value, what: str, where: str, limits) -> tuple:
    """(x, y, z) of a grid or block given as an int or a tuple/list of 1 to 3 ints."""
    if type(value) is int and 1 <= value <= limits[0]:   # the common case, checked in full
        return (value, 1, 1)
    items = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(items, (tuple, list)) or not 1 <= len(items) <= 3 or \
            not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items):
        raise TypeError(f"{where}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    dims = tuple(int(v) for v in items) + (1,) * (3 - len(items))
    for v, hi, axis in zip(dims, limits, "xyz"):
        if not 1 <= v <= hi:
            raise ValueError(f"{where}: {what} {axis} = {v} is out of range [1, {hi}]")
    if what == "block" and dims[0] * dims[1] * dims[2] > 1024:
        raise ValueError(f"{where}: block {dims} has {dims[0] * dims[1] * dims[2]} threads (at most 1024)")
    return dims


def convert_args(args, where: str):
    """(values, types, device id or None): each argument as the launcher packs it (an Array as
    its device address), the NumPy dtypes of the C parameters, and the arrays' device."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"{where}: args must be a tuple or list, got {type(args).__name__}")
    vals, types, dev = [], [], None
    for i, a in enumerate(args):
        if isinstance(a, Array):
            d = a._device._id
            if dev is None:
                dev = d
            elif d != dev:
                raise ValueError(f"{where}: argument {i} is on cuda:{d}, an earlier array on cuda:{dev}")
            vals.append(a._buf.ptr + a._offset)
            types.append(_UINT64)
            continue
        t = type(a)
        dt = _PY_TYPES.get(t)
        if dt is not None:
            if t is int and not _INT64[0] <= a <= _INT64[1]:
                raise OverflowError(f"{where}: argument {i} = {a} does not fit long long "
                                    "(pass a NumPy scalar such as np.uint64)")
        elif isinstance(a, np.generic) and a.dtype in _SCALAR_DTYPES:
            dt = a.dtype
        else:
            raise TypeError(f"{where}: argument {i} has type {t.__name__}; expected a gparray Array, "
                            "a bool, int, float or complex, or a NumPy scalar of a numeric type")
        vals.append(a)
        types.append(dt)
    return tuple(vals), tuple(types), dev


def _stream_of(stream, where: str):
    """(stream handle, its device id or None) of ``stream=`` (a gparray Stream, a CuPy stream
    or anything with an int ``ptr``, or a raw handle as an int)."""
    if isinstance(stream, Stream):
        return stream.ptr, stream.device.id
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream), None
    ptr = getattr(stream, "ptr", None)
    if not isinstance(ptr, int):
        raise TypeError(f"{where}: stream must be a CUDA stream object (with an int .ptr) or a handle, "
                        f"got {type(stream).__name__}")
    dev = getattr(stream, "device_id", None)
    return ptr, (dev if isinstance(dev, int) and dev >= 0 else None)


def _fast_values(plan, args):
    """(launch values, device id) of ``args`` for the fast path of ``UserKernel.__call__``,
    given their plan (positions of the arrays, positions of the Python ints, {device id:
    launcher}); None when the checked path must take them (arrays on two devices, an int
    beyond long long, arrays on a device other than the current one)."""
    vals = list(args)
    dev = None
    for i in plan[0]:
        a = args[i]
        d = a._device._id
        if dev is None:
            dev = d
        elif d != dev:
            return None
        vals[i] = a._buf.ptr + a._offset
    for i in plan[1]:
        if not _INT64[0] <= args[i] <= _INT64[1]:
            return None
    if _launch._multi:
        cur = _launch._get_device()
        if dev is None:
            dev = cur
        elif cur != dev:
            return None
    elif dev is None:
        dev = 0   # the one visible device
    return vals, dev


class UserKernel:
    """One compiled user kernel: ``k(grid, block, args, shared_mem=0, stream=None)``."""

    def __init__(self, module: UserModule, expr: str):
        self.module, self.name = module, expr
        self._where = f"UserKernel.__call__ ({expr})"   # error messages start with it
        self._launchers: dict = {}  # (device, parameter types) -> _launcher.Kernel
        self._plans: dict = {}      # argument classes -> the fast path's plan (see _fast_values)

    def __repr__(self):
        return f"<gparray UserKernel {self.name!r}>"

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        """Launch on the arrays' device (the current one when no array is passed), on
        ``stream`` (default: that device's current stream)."""
        # the fast path: int grid and block in range (_GRID_MAX[0], _BLOCK_MAX[0]), the current
        # stream, arguments of classes seen before (their plan), a launcher built for them, the
        # arrays on the current device; anything else (and every error) takes the checked path
        if type(grid) is int and type(block) is int and stream is None and type(shared_mem) is int and \
                0 < grid <= 2147483647 and 0 < block <= 1024 and 0 <= shared_mem < 4294967296 and \
                (type(args) is tuple or type(args) is list):
            plan = self._plans.get(tuple(map(type, args)))
            if plan is not None:
                arrays, ints, kernels = plan
                k = None
                if not ints and not _launch._multi:   # one visible device, device 0
                    vals = list(args)
                    for i in arrays:
                        a = args[i]
                        if a._device._id:
                            break
                        vals[i] = a._buf.ptr + a._offset
                    else:
                        k = kernels.get(0)
                else:
                    vd = _fast_values(plan, args)
                    if vd is not None:
                        vals, k = vd[0], kernels.get(vd[1])
                if k is not None:
                    sptr = _launch._stream().ptr
                    if _hook is not None:
                        _hook(k, (grid, 1, 1), (block, 1, 1), vals, shared_mem, sptr)
                    else:
                        k.launch(grid, block, vals, shared_mem, sptr)
                    return
        where = self._where
        g = _dims(grid, "grid", where, _GRID_MAX)
        b = _dims(block, "block", where, _BLOCK_MAX)
        if type(shared_mem) is not int and (not isinstance(shared_mem, (int, np.integer))
                                            or isinstance(shared_mem, bool)):
            raise TypeError(f"{where}: shared_mem must be an int, got {type(shared_mem).__name__}")
        if not 0 <= shared_mem < 2**32:
            raise ValueError(f"{where}: shared_mem = {shared_mem} is out of range")
        vals, types, dev = convert_args(args, where)
        sptr, sdev = (None, None) if stream is None else _stream_of(stream, where)
        _backend.require_device(where)
        cp = _backend.cupy()
        if _launch._cp is None:
            _launch._init()   # the fast paths read its device count and current stream
        if _claunch is not None and not _launch._multi:
            _claunch.user_configure(Array, _launch._stream, globals())   # the compiled fast path
        cur = cp.cuda.runtime.getDevice()
        if dev is None:
            dev = cur if sdev is None else sdev
        elif sdev is not None and sdev != dev:
            raise ValueError(f"{where}: the arrays are on cuda:{dev}, the stream on cuda:{sdev}")
        k = self._launchers.get((dev, types))
        if k is None:
            fn = self.module._functions(dev)[self.name]
            protos = tuple(np.zeros((), t)[()] for t in types)
            k = self._launchers[(dev, types)] = Kernel(fn, protos, f"{self.module._family}: {self.name}")
        classes = tuple(map(type, args))
        plan = self._plans.get(classes)
        if plan is None and len(self._plans) < _PLANS_MAX:
            plan = self._plans[classes] = (tuple(i for i, a in enumerate(args) if isinstance(a, Array)),
                                           tuple(i for i, a in enumerate(args) if type(a) is int), {})
        if plan is not None:
            plan[2][dev] = k
        if cur != dev:
            with cp.cuda.Device(dev):
                self._launch(k, g, b, vals, int(shared_mem), sptr, cp)
        else:
            self._launch(k, g, b, vals, int(shared_mem), sptr, cp)

    @staticmethod
    def _launch(k, g, b, vals, smem, sptr, cp):
        if sptr is None:
            sptr = cp.cuda.get_current_stream().ptr
        if _hook is not None:
            _hook(k, g, b, vals, smem, sptr)
        elif g[1] == g[2] == b[1] == b[2] == 1:
            k.launch(g[0], b[0], vals, smem, sptr)
        else:
            k.launch3(g, b, vals, smem, sptr)


if _claunch is not None:
    # the compiled fast path (gparray/_native/_claunch_user.c): the same fast path as the
    # Python one in __call__, in C; anything it does not serve calls the Python __call__
    UserKernel.__call__ = _claunch.UserCall(UserKernel.__call__)

