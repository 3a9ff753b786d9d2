"""The elementwise op factory: ``UnaryOp``, ``BinaryOp`` and ``ClipOp`` objects built from one
table entry each (see ``_array/_elementwise.py``). They normalize operands (Python scalars are
weak and travel to the kernel by value), check dtype categories, promote with the explicit
table, broadcast, allocate the output (``_array._empty``) and call the elementwise engine
once (clip: twice, in place). The compiled fast path is configured here, with the Array
class, before its first combination is learnt.

float16 (an extension dtype) is computed in float32: the kernels load float16, convert,
apply the functor in float and round the result to float16 on store, as NumPy and CuPy do
(exact for +, -, *, /, sqrt: float32 has more than twice float16's precision). A weak
Python scalar is rounded to float16 first, as NumPy does. ``nextafter`` is the exception
that needs float16's own spacing: it takes float16 operands as they are."""
from __future__ import annotations

import warnings

from .._core import _backend
from .._core import _dtypes as _dt
from . import _build
from ._build import _copy, _empty
from .._core._device import same_device
from .._engine import _elementwise as _ew
from .._engine._shapes import broadcast_shapes
from ._numpy_interop import InplaceDtypeError
from .._native import claunch as _claunch
from .._kernels._registry import ctype

_PY_SCALARS = (bool, int, float, complex)
_FLOAT_MAX = {_dt.float32: 3.4028234663852886e38, _dt.float64: 1.7976931348623157e308}

# result rules: how the output dtype follows from the promoted input dtype
PROMOTE = "promote"      # output = promoted dtype (add, multiply, ...)
BOOL = "bool"            # output bool, compute in the promoted dtype (equal, isnan, ...)
LOGICAL = "logical"      # output bool, compute in bool (logical_and, ...)
FLOAT = "float"          # integer and bool inputs give the default float (divide, exp, atan2...)
REAL = "real"            # complex inputs give their real dtype (abs, real, imag)


# Functors with a gp::half overload that take float16 operands as they are (not in float32).
_HALF_NATIVE = frozenset({"nextafter"})


def _result(rule: str, dt, functor: str = ""):
    """(output dtype, compute dtype) for promoted input dtype ``dt`` under ``rule``; the
    compute dtype of float16 is float32 unless ``functor`` takes float16 as it is."""
    odt, ct = _rule_result(rule, dt)
    if ct in _dt._compute and functor not in _HALF_NATIVE:
        ct = _dt._compute_dtype(ct)
    return odt, ct


def _rule_result(rule: str, dt):
    if rule == PROMOTE:
        return dt, dt
    if rule == BOOL:
        return _dt.bool, dt
    if rule == LOGICAL:
        return _dt.bool, _dt.bool
    if rule == FLOAT:
        if dt.kind in "fc":
            return dt, dt
        return _dt._default_float, _dt._default_float
    if rule == REAL:
        if dt.kind == "c":
            r = _dt._complex_to_real[dt]
            return r, dt
        return dt, dt
    raise ValueError(rule)


def _check_category(name, category, dt):
    if dt not in _dt._dtype_categories[category]:
        raise TypeError(f"{name}: expected an array of {category} dtype, got {dt.name}")


_configured = False


def _configure() -> None:
    """Tell the compiled fast path (when built) which class its results are and where the
    current stream comes from; once, before the first combination is learnt (a kernel has
    run by then), and again with CuPy's getter when CuPy is imported."""
    global _configured
    _claunch.configure(_build.Array, _backend.stream_getter())
    if not _configured:
        _backend.when_cupy_imported(_reconfigure)
    _configured = True


def _ensure_configured() -> bool:
    """Configure the compiled paths when nothing has yet (a caller about to record a call
    they serve: a repeat reduction, an fft direct call); False when there is no compiled
    path to configure."""
    if not _configured:
        try:
            _configure()
        except Exception:
            return False
    return True


def _reconfigure(cp) -> None:
    """CuPy was imported: the compiled path reads CuPy's current stream directly."""
    if _configured:
        _claunch.configure(_build.Array, cp.cuda.get_current_stream)


# Comparisons of an integer array with a Python int outside its dtype's range have the
# same answer everywhere (NumPy 2 gives the mathematically right one): result of
# ``array OP scalar`` when the scalar lies above (+1) or below (-1) the range.
_OUT_OF_RANGE = {
    "equal": lambda side: False,
    "not_equal": lambda side: True,
    "less": lambda side: side > 0,
    "less_equal": lambda side: side > 0,
    "greater": lambda side: side < 0,
    "greater_equal": lambda side: side < 0,
}
_MIRROR = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
           "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}


def _int_out_of_range(dt, sc) -> int:
    """+1 / -1 when Python int ``sc`` lies above / below integer dtype ``dt``'s range, else 0."""
    if dt.kind not in "iu" or isinstance(sc, bool) or not isinstance(sc, int):
        return 0
    lo, hi = _dt._int_bounds[dt]
    return 1 if sc > hi else (-1 if sc < lo else 0)


def _expr_heads(functor, odt, ct, in_dts):
    return f"op_{functor}, {ctype(odt)}, {ctype(ct)}, " + ", ".join(ctype(d) for d in in_dts)


def _namespace_function(name: str):
    """``gparray.<name>`` (what a pickled elementwise function unpickles to)."""
    return getattr(_build.namespace(), name)


class _TableOp:
    """Shared part of the table's op objects: name, dtype category, functor, result rule,
    docstring, and the per-dtype contiguous launch plans filled after a first checked call."""

    _nin = 1

    def __init__(self, name: str, category: str, functor: str, rule: str = PROMOTE, doc: str = ""):
        self._fast = {}
        self._sfast = {}
        # the compiled fast path (when built): operand combinations learnt after a checked
        # call are served in C; everything else goes to _call
        self._table = _claunch.Table() if _claunch is not None else None
        self._c = _claunch.Fast(self._table, self._call, self._nin, label=name) if _claunch is not None \
            else self._call
        self.__name__ = self.__qualname__ = name
        self.category = category
        self.functor = functor
        self.rule = rule
        self.__doc__ = doc

    def __repr__(self):
        return f"<gparray elementwise function {self.__name__}>"

    def __reduce__(self):
        """Pickled by reference, as functions are (Dask and cubed ship task graphs that name
        gparray's functions to their workers): unpickling looks ``gparray.<name>`` up."""
        return _namespace_function, (self.__name__,)


class UnaryOp(_TableOp):
    """An elementwise function of one array (one table entry)."""

    def __call__(self, x, /):
        return self._c(x)

    def _call(self, x, /):
        if type(x) is _build.Array:
            plan = self._fast.get(x._dtype)
            if plan is not None and x._is_c_contig():
                out = _empty(x._shape, plan[0], x._device)
                _ew.contig(plan, out, x)
                if self._table is not None:
                    if not _configured:
                        _configure()
                    _ew.learn(self._table, plan, x)
                return out
        return self._apply(x, None)

    def _apply(self, x, out):
        name = self.__name__
        if not isinstance(x, _build.Array):
            raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
        dt = x._dtype
        _check_category(name, self.category, dt)
        odt, ct = _result(self.rule, dt, self.functor)
        if dt not in self._fast:
            self._fast[dt] = _ew.contig_plan("unary", self.functor, odt, ct, (dt,))
        if out is None:
            out = _empty(x._shape, odt, x._device)
        _ew.unary(self.functor, x, out, ct)
        return out

    def instances(self) -> list[str]:
        """Name expressions of the kernels this op launches for one input dtype of its
        category (contiguous and 4-d strided with 32-bit indices)."""
        out = []
        for dt in _dt._dtype_categories[self.category]:
            odt, ct = _result(self.rule, dt, self.functor)
            head = _expr_heads(self.functor, odt, ct, (dt,))
            out += [f"gp_unary_contig<{head}>", f"gp_unary_strided<{head}, 4, int>"]
        return out


def _both_bool(x1, x2) -> bool:
    """Two boolean operands, one of them an array: bool arrays, or a bool array and a
    Python bool."""
    b1 = isinstance(x1, bool) or (isinstance(x1, _build.Array) and x1._dtype.kind == "b")
    b2 = isinstance(x2, bool) or (isinstance(x2, _build.Array) and x2._dtype.kind == "b")
    return b1 and b2 and (isinstance(x1, _build.Array) or isinstance(x2, _build.Array))


def _bool_operand_cast(category: str, x1, x2):
    """NumPy's promotion of a bool array with a number where this op takes no bools
    (``mask * 2.5``, ``mask + x``): the bool array becomes the other operand's dtype (an
    array's, or the default dtype of a Python int/float/complex). None when it doesn't apply."""
    if _dt.bool in _dt._dtype_categories[category]:
        return None
    b1 = isinstance(x1, _build.Array) and x1._dtype.kind == "b"
    b2 = isinstance(x2, _build.Array) and x2._dtype.kind == "b"
    if b1 == b2:
        return None
    arr, other = (x1, x2) if b1 else (x2, x1)
    # an array's dtype, or a Python number's default dtype (a Python bool: None, not numeric)
    dt = other._dtype if isinstance(other, _build.Array) else \
        _dt._as_dtype(type(other)) if type(other) in (int, float, complex) else None
    if dt is None or dt not in _dt._dtype_categories[category]:
        return None
    arr = _copy(arr, dt)
    return (arr, x2) if b1 else (x1, arr)


class BinaryOp(_TableOp):
    """An elementwise function of two operands (arrays or Python scalars; one table entry)."""

    _nin = 2
    _bool_op = None     # the op that serves two boolean operands instead (see on_bools)

    def on_bools(self, op: "BinaryOp") -> "BinaryOp":
        """Serve two boolean operands (bool arrays, or a bool array and a Python bool) with
        ``op`` (a boolean function) where this op's category would reject them: NumPy's
        ``bool + bool`` is logical_or and ``bool * bool`` logical_and. Returns self."""
        self._bool_op = op
        return self

    def __call__(self, x1, x2, /):
        return self._c(x1, x2)

    def _call(self, x1, x2, /):
        t1, t2 = type(x1), type(x2)
        if t1 is _build.Array:
            # fast paths: two arrays of one shape on one device, dtypes seen before (C-contiguous:
            # the plan's kernel; else the general engine); or a C-contiguous array and a Python
            # float/int within the range the plan recorded (the checks of _apply passed once
            # for this dtype and type)
            if t2 is _build.Array:
                if x1._shape == x2._shape and x1._device is x2._device:
                    plan = self._fast.get((x1._dtype, x2._dtype))
                    if plan is not None:
                        out = _empty(x1._shape, plan[0], x1._device)
                        if x1._is_c_contig() and x2._is_c_contig():
                            _ew.contig(plan, out, x1, (x2._buf.ptr + x2._offset,))
                            if self._table is not None:
                                if not _configured:
                                    _configure()
                                _ew.learn(self._table, plan, x1, x2._dtype, 0, bisz=x2._dtype.itemsize)
                            return out
                        # any layout, same shape
                        _ew.binary(self.functor, x1, x2, out, plan[4])
                        return out
            elif t2 is float or t2 is int:
                sp = self._sfast.get((x1._dtype, t2, False))
                if sp is not None and sp[4] <= x2 <= sp[5] and x1._is_c_contig():
                    out = _empty(x1._shape, sp[0], x1._device)
                    _ew.contig(sp, out, x1, (x2,))
                    if self._table is not None:
                        if not _configured:
                            _configure()
                        _ew.learn(self._table, sp, x1, t2, 1, sp[4], sp[5])
                    return out
        elif t2 is _build.Array and (t1 is float or t1 is int):
            sp = self._sfast.get((x2._dtype, t1, True))
            if sp is not None and sp[4] <= x1 <= sp[5] and x2._is_c_contig():
                out = _empty(x2._shape, sp[0], x2._device)
                _ew.contig(sp, out, x2, (x1,))
                if self._table is not None:
                    if not _configured:
                        _configure()
                    _ew.learn(self._table, sp, x2, t1, 2, sp[4], sp[5])
                return out
        return self._apply(x1, x2, None)

    def _record_scalar_plan(self, arr, sc, swap, dt, odt, ct):
        """Remember the contiguous scalar launch for (arr dtype, scalar type, side) when the
        scalar passes to the kernel unchanged (ct is the promoted dtype: no float16
        rounding) and the checks of _apply depend only on the scalar's range."""
        t = type(sc)
        if t not in (float, int) or ct != dt or dt != arr._dtype or self.functor == "pow":
            return
        if dt.kind in "iu":
            lo, hi = _dt._int_bounds[dt]
        elif dt in _FLOAT_MAX:
            lo, hi = -_FLOAT_MAX[dt], _FLOAT_MAX[dt]
        else:
            return
        self._sfast[(arr._dtype, t, swap)] = _ew.scalar_plan(self.functor, odt, ct, arr._dtype, swap) + (lo, hi)

    def _apply(self, x1, x2, out):
        name = self.__name__
        if isinstance(x1, _build.Array) and isinstance(x2, _build.Array) and x1._device is not x2._device:
            # first: before the boolean operand cast below copies an operand, and before
            # on_bools hands the call to an op of another name
            same_device(name, x1, x2)
        if self._bool_op is not None and _both_bool(x1, x2):
            return self._bool_op._apply(x1, x2, out)
        mixed = _bool_operand_cast(self.category, x1, x2)
        if mixed is not None:
            x1, x2 = mixed
        a1, a2 = isinstance(x1, _build.Array), isinstance(x2, _build.Array)
        if a1 and a2:
            _check_category(name, self.category, x1._dtype)
            _check_category(name, self.category, x2._dtype)
            dt = _dt.promote_types(x1._dtype, x2._dtype)
            if dt not in _dt._dtype_categories[self.category]:
                raise TypeError(f"{name}: {x1._dtype.name} and {x2._dtype.name} promote to {dt.name}, "
                                f"which is not of {self.category} dtype")
            odt, ct = _result(self.rule, dt, self.functor)
            key = (x1._dtype, x2._dtype)
            if key not in self._fast:
                self._fast[key] = _ew.contig_plan("binary", self.functor, odt, ct, key) + (ct,)
            shape = x1._shape if x1._shape == x2._shape else broadcast_shapes(x1._shape, x2._shape, name=name)
            out = self._out(out, shape, odt, x1._device, (x1, x2))
            _ew.binary(self.functor, x1, x2, out, ct)
            return out
        if a1 or a2:
            arr, sc = (x1, x2) if a1 else (x2, x1)
            if not isinstance(sc, _PY_SCALARS):
                raise TypeError(f"{name}: expected a gparray Array or a Python scalar, got {type(sc).__name__}")
            _check_category(name, self.category, arr._dtype)
            dt = _dt._scalar_result_type(arr._dtype, sc, name)
            _check_category(name, self.category, dt)
            side = _int_out_of_range(dt, sc) if name in _OUT_OF_RANGE else 0
            if side:
                fname = name if a1 else _MIRROR[name]
                out = self._out(out, arr._shape, _dt.bool, arr._device, (arr,))
                _ew.fill(out, _OUT_OF_RANGE[fname](side))
                return out
            _dt._check_scalar_fits(dt, sc, name)
            if (self.functor == "pow" and a1 and dt.kind in "iu" and isinstance(sc, int)
                    and not isinstance(sc, bool) and sc < 0):
                raise ValueError(f"{name}: integers to negative integer powers are not allowed "
                                 f"(got exponent {sc} for an array of dtype {dt.name})")
            odt, ct = _result(self.rule, dt, self.functor)
            if out is None:
                self._record_scalar_plan(arr, sc, not a1, dt, odt, ct)
            out = self._out(out, arr._shape, odt, arr._device, (arr,))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                _ew.scalar(self.functor, arr, _round_scalar(sc, dt, ct), not a1, out, ct)
            return out
        raise TypeError(f"{name}: expected at least one gparray Array operand, got "
                        f"{type(x1).__name__} and {type(x2).__name__}")

    def _out(self, out, shape, odt, device, inputs):
        if out is None:
            return _empty(shape, odt, device)
        # in-place: the result must keep the left operand's dtype and shape
        if odt != out._dtype:
            raise InplaceDtypeError(f"{self.__name__}: in-place result dtype {odt.name} differs from the "
                                    f"array's dtype {out._dtype.name}", odt)
        if shape != out._shape:
            raise ValueError(f"{self.__name__}: in-place result shape {shape} differs from the "
                             f"array's shape {out._shape}")
        return out

    def instances(self) -> list[str]:
        """Name expressions of the kernels this op launches for two operands of one dtype of
        its category: contiguous, 4-d strided (32-bit indices) and scalar on either side."""
        return _binary_instances(self.functor, self.rule, _dt._dtype_categories[self.category])


def _round_scalar(sc, dt, ct):
    """A weak Python scalar for dtype ``dt`` computed in ``ct``: rounded to ``dt`` first when
    the two differ (float16 computed in float32), so ``x16 + 0.1`` adds float16(0.1) as in
    NumPy; unchanged otherwise."""
    return dt.type(sc) if ct is not dt and dt in _dt._compute else sc


def _binary_instances(functor, rule, dtypes) -> list[str]:
    out = []
    for dt in dtypes:
        odt, ct = _result(rule, dt, functor)
        head = _expr_heads(functor, odt, ct, (dt, dt))
        tail = _expr_heads(functor, odt, ct, (dt,))
        out += [f"gp_binary_contig<{head}>", f"gp_binary_strided<{head}, 4, int>",
                f"gp_scalar_contig<{tail}, false>", f"gp_scalar_contig<{tail}, true>"]
    return out


class ClipOp:
    """``clip(x, /, min=None, max=None)``: ``minimum(maximum(x, min), max)`` in x's dtype.

    The result has the broadcast shape of x and the array bounds. It is two elementwise
    passes into one output (the second in place), computed in the promoted dtype of x and
    each bound. Python int bounds outside an integer x's range are clamped to it; NaN
    bounds give NaN and min > max gives max (like NumPy)."""

    def __init__(self, name: str, category: str, doc: str = ""):
        self.__name__ = self.__qualname__ = name
        self.category = category
        self.__doc__ = doc

    def __repr__(self):
        return f"<gparray elementwise function {self.__name__}>"

    def __reduce__(self):
        """Pickled by reference (see _TableOp.__reduce__)."""
        return _namespace_function, (self.__name__,)

    def _bound(self, x, b, argname):
        """(kind, value, compute dtype) for a bound: kind None, "scalar" or "array"."""
        name = self.__name__
        dt = x._dtype
        if b is None:
            return None, None, None
        if isinstance(b, _build.Array):
            same_device(name, x, b, what=f"x and {argname}")
            _check_category(name, self.category, b._dtype)
            if dt.kind in "iu" and b._dtype.kind == "f":
                raise TypeError(f"{name}: {argname} must have an integer dtype when x has one "
                                f"(got {b._dtype.name} for x of {dt.name})")
            ct = _dt.promote_types(dt, b._dtype)
            return "array", b, _dt._compute_dtype(ct)
        if isinstance(b, complex) or not isinstance(b, _PY_SCALARS):
            raise TypeError(f"{name}: expected {argname} to be None, a Python int or float, or an "
                            f"Array, got {type(b).__name__}")
        if dt.kind in "iu":
            if isinstance(b, float):
                raise TypeError(f"{name}: a Python float {argname} needs a floating-point x, got x "
                                f"of dtype {dt.name}")
            lo, hi = _dt._int_bounds[dt]
            b = min(max(int(b), lo), hi)
        else:
            _dt._check_scalar_fits(dt, b, name)
            ct = _dt._compute_dtype(dt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return "scalar", _round_scalar(b, dt, ct), ct
        return "scalar", b, dt

    def __call__(self, x, /, min=None, max=None):  # noqa: A002  (the spec's parameter names)
        name = self.__name__
        if not isinstance(x, _build.Array):
            raise TypeError(f"{name}: expected a gparray Array, got {type(x).__name__}")
        _check_category(name, self.category, x._dtype)
        bounds = [(self._bound(x, min, "min"), "maximum"), (self._bound(x, max, "max"), "minimum")]
        shape = x._shape
        for (kind, b, _), _f in bounds:
            if kind == "array" and b._shape != shape:
                shape = broadcast_shapes(shape, b._shape, name=name)
        out = _empty(shape, x._dtype, x._device)
        src = x
        for (kind, b, ct), functor in bounds:
            if kind == "array":
                _ew.binary(functor, src, b, out, ct)
            elif kind == "scalar":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    _ew.scalar(functor, src, b, False, out, ct)
            else:
                continue
            src = out
        if src is x:
            _ew.copy_into(out, x)
        return out

    def instances(self) -> list[str]:
        """Kernels for same-dtype bounds, arrays or scalars."""
        out = []
        for functor in ("maximum", "minimum"):
            out += [e for e in _binary_instances(functor, PROMOTE, _dt._dtype_categories[self.category])
                    if not e.endswith(", true>")]
        return out
