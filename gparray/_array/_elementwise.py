"""Elementwise functions (spec section "Element-wise Functions").

One entry per function: an op object built from its table entry (name, input dtype
category, functor in gparray/_kernels/include/gp/functors*.cuh, result rule) with its
docstring. The op factory lives in ``_ops.py``. The op objects live in the Array layer because
Array's operators are built from them (``_operators.py``); the namespace re-exports them
(gparray/_api/_elementwise_functions.py).

Semantics follow the Array API 2025.12 special cases and, where the spec leaves a choice,
NumPy 2: integer arithmetic wraps; integer floor_divide/remainder by zero give 0; shifts by
counts outside [0, bits) give 0 (or -1 for right shifts of negatives); ceil/floor/trunc/
round of integers return them unchanged; complex functions follow C99 Annex G (branch cuts
included). Python scalars are accepted on either side of every binary function.
"""
from __future__ import annotations

from ._ops import BOOL, FLOAT, LOGICAL, PROMOTE, REAL, BinaryOp, ClipOp, UnaryOp

# ----------------------------------------------------------------------------- arithmetic
add = BinaryOp("add", "numeric", "add", PROMOTE,
               "add(x1, x2, /): x1 + x2 elementwise; integers wrap on overflow.\n\n"
               "Two boolean operands (an extension, as in NumPy, CuPy and PyTorch) give their "
               "logical OR, a bool array.")
subtract = BinaryOp("subtract", "numeric", "subtract", PROMOTE,
                    "subtract(x1, x2, /): x1 - x2 elementwise; integers wrap on overflow.")
multiply = BinaryOp("multiply", "numeric", "multiply", PROMOTE,
                    "multiply(x1, x2, /): x1 * x2 elementwise; integers wrap on overflow.\n\n"
                    "Two boolean operands (an extension, as in NumPy, CuPy and PyTorch) give their "
                    "logical AND, a bool array.")
divide = BinaryOp("divide", "numeric", "divide", FLOAT,
                  "divide(x1, x2, /): true division x1 / x2; integer inputs give float64.")
floor_divide = BinaryOp("floor_divide", "real numeric", "floor_divide", PROMOTE,
                        "floor_divide(x1, x2, /): x1 // x2 rounded toward -infinity (Python's rule).\n\n"
                        "Integers: division by 0 gives 0, INT_MIN // -1 wraps to INT_MIN. Floats: "
                        "NumPy's divmod definition (x // 0 is +-inf or NaN), except that one infinite "
                        "operand gives floor(x1 / x2) as the spec prefers (inf // 2 is inf, "
                        "1 // -inf is -0, where NumPy gives NaN and -1).")
remainder = BinaryOp("remainder", "real numeric", "remainder", PROMOTE,
                     "remainder(x1, x2, /): x1 % x2 with the sign of x2 (Python's rule).\n\n"
                     "Integers: remainder by 0 gives 0. Floats: NumPy's divmod definition.")
pow = BinaryOp("pow", "numeric", "pow", PROMOTE,  # noqa: A001  (the spec's name)
               "pow(x1, x2, /): x1 raised to x2 elementwise.\n\n"
               "Integers wrap on overflow; a negative Python int exponent for an integer array "
               "raises ValueError (like NumPy), negative exponents inside integer arrays give "
               "the truncated 1 / x1**|x2| (1, -1 or 0). Complex: exp(x2 * log(x1)), with small "
               "integer exponents done by repeated multiplication.")
negative = UnaryOp("negative", "numeric", "negative", PROMOTE,
                   "negative(x, /): -x elementwise; -INT_MIN wraps to INT_MIN.")
positive = UnaryOp("positive", "numeric", "positive", PROMOTE, "positive(x, /): +x elementwise (a copy).")
abs = UnaryOp("abs", "numeric", "abs", REAL,  # noqa: A001  (the spec's name)
              "abs(x, /): absolute value; complex gives hypot(real, imag) in the real dtype of "
              "the same precision; abs(INT_MIN) wraps to INT_MIN.")
square = UnaryOp("square", "numeric", "square", PROMOTE, "square(x, /): x * x elementwise.")
sign = UnaryOp("sign", "numeric", "sign", PROMOTE,
               "sign(x, /): -1, 0 or +1 for real x (NaN stays NaN); x / abs(x) for complex x "
               "(0 for 0, NaN + NaN j when a part is NaN).")
reciprocal = UnaryOp("reciprocal", "floating-point", "reciprocal", PROMOTE, "reciprocal(x, /): 1 / x elementwise.")
sqrt = UnaryOp("sqrt", "all", "sqrt", FLOAT,
               "sqrt(x, /): principal square root (complex: branch cut along the negative real axis).")

# ----------------------------------------------------------------------------- exponential, logarithm
exp = UnaryOp("exp", "all", "exp", FLOAT, "exp(x, /): e raised to x elementwise.")
expm1 = UnaryOp("expm1", "all", "expm1", FLOAT,
                "expm1(x, /): exp(x) - 1, accurate for small |x|.")
log = UnaryOp("log", "all", "log", FLOAT,
              "log(x, /): natural logarithm (complex: principal value, branch cut along the "
              "negative real axis).")
log1p = UnaryOp("log1p", "all", "log1p", FLOAT,
                "log1p(x, /): log(1 + x), accurate for small |x| (complex too).")
log2 = UnaryOp("log2", "all", "log2", FLOAT, "log2(x, /): base-2 logarithm.")
log10 = UnaryOp("log10", "all", "log10", FLOAT, "log10(x, /): base-10 logarithm.")
logaddexp = BinaryOp("logaddexp", "real numeric or boolean", "logaddexp", FLOAT,
                     "logaddexp(x1, x2, /): log(exp(x1) + exp(x2)) without overflow.")

# ----------------------------------------------------------------------------- trigonometric, hyperbolic
sin = UnaryOp("sin", "all", "sin", FLOAT, "sin(x, /): sine (radians).")
cos = UnaryOp("cos", "all", "cos", FLOAT, "cos(x, /): cosine (radians).")
tan = UnaryOp("tan", "all", "tan", FLOAT, "tan(x, /): tangent (radians).")
asin = UnaryOp("asin", "all", "asin", FLOAT,
               "asin(x, /): inverse sine (complex: branch cuts outside [-1, 1] on the real axis).")
acos = UnaryOp("acos", "all", "acos", FLOAT,
               "acos(x, /): inverse cosine (complex: branch cuts outside [-1, 1] on the real axis).")
atan = UnaryOp("atan", "all", "atan", FLOAT,
               "atan(x, /): inverse tangent (complex: branch cuts outside [-1j, 1j] on the "
               "imaginary axis).")
atan2 = BinaryOp("atan2", "real numeric or boolean", "atan2", FLOAT,
                 "atan2(x1, x2, /): angle of the point (x2, x1), in [-pi, pi], signed zeros respected.")
sinh = UnaryOp("sinh", "all", "sinh", FLOAT, "sinh(x, /): hyperbolic sine.")
cosh = UnaryOp("cosh", "all", "cosh", FLOAT, "cosh(x, /): hyperbolic cosine.")
tanh = UnaryOp("tanh", "all", "tanh", FLOAT, "tanh(x, /): hyperbolic tangent.")
asinh = UnaryOp("asinh", "all", "asinh", FLOAT,
                "asinh(x, /): inverse hyperbolic sine (complex: branch cuts outside [-1j, 1j]).")
acosh = UnaryOp("acosh", "all", "acosh", FLOAT,
                "acosh(x, /): inverse hyperbolic cosine (complex: branch cut below 1 on the real axis).")
atanh = UnaryOp("atanh", "all", "atanh", FLOAT,
                "atanh(x, /): inverse hyperbolic tangent (complex: branch cuts outside [-1, 1]).")
hypot = BinaryOp("hypot", "real numeric or boolean", "hypot", FLOAT,
                 "hypot(x1, x2, /): sqrt(x1**2 + x2**2) without undue overflow or underflow.")

# ----------------------------------------------------------------------------- rounding
ceil = UnaryOp("ceil", "real numeric", "ceil", PROMOTE,
               "ceil(x, /): smallest integer-valued number >= x; integers are returned unchanged.")
floor = UnaryOp("floor", "real numeric", "floor", PROMOTE,
                "floor(x, /): largest integer-valued number <= x; integers are returned unchanged.")
trunc = UnaryOp("trunc", "real numeric", "trunc", PROMOTE,
                "trunc(x, /): x rounded toward zero; integers are returned unchanged.")
round = UnaryOp("round", "numeric", "round", PROMOTE,  # noqa: A001  (the spec's name)
                "round(x, /): nearest integer-valued number, ties to even; complex rounds both "
                "parts; integers are returned unchanged.")

# ----------------------------------------------------------------------------- floating-point bits
copysign = BinaryOp("copysign", "real numeric or boolean", "copysign", FLOAT,
                    "copysign(x1, x2, /): magnitude of x1 with the sign bit of x2.")
nextafter = BinaryOp("nextafter", "real floating-point", "nextafter", PROMOTE,
                     "nextafter(x1, x2, /): next representable value after x1 toward x2.")
signbit = UnaryOp("signbit", "real floating-point", "signbit", BOOL,
                  "signbit(x, /): True where the sign bit is set (-0.0 and negative NaNs included).")

# ----------------------------------------------------------------------------- complex parts
real = UnaryOp("real", "numeric", "real", REAL,
               "real(x, /): real part; complex gives the real dtype of the same precision, real "
               "input a copy.")
imag = UnaryOp("imag", "numeric", "imag", REAL,
               "imag(x, /): imaginary part; complex gives the real dtype of the same precision "
               "(real input, an extension like NumPy's: zeros of its dtype).")
conj = UnaryOp("conj", "numeric", "conj", PROMOTE, "conj(x, /): complex conjugate (real input: a copy).")

# ----------------------------------------------------------------------------- comparison
equal = BinaryOp("equal", "all", "equal", BOOL, "equal(x1, x2, /): x1 == x2 elementwise.")
not_equal = BinaryOp("not_equal", "all", "not_equal", BOOL, "not_equal(x1, x2, /): x1 != x2 elementwise.")
less = BinaryOp("less", "real numeric", "less", BOOL, "less(x1, x2, /): x1 < x2 elementwise.")
less_equal = BinaryOp("less_equal", "real numeric", "less_equal", BOOL,
                      "less_equal(x1, x2, /): x1 <= x2 elementwise.")
greater = BinaryOp("greater", "real numeric", "greater", BOOL, "greater(x1, x2, /): x1 > x2 elementwise.")
greater_equal = BinaryOp("greater_equal", "real numeric", "greater_equal", BOOL,
                         "greater_equal(x1, x2, /): x1 >= x2 elementwise.")
maximum = BinaryOp("maximum", "real numeric", "maximum", PROMOTE,
                   "maximum(x1, x2, /): larger of x1 and x2; NaN in either gives NaN.")
minimum = BinaryOp("minimum", "real numeric", "minimum", PROMOTE,
                   "minimum(x1, x2, /): smaller of x1 and x2; NaN in either gives NaN.")
clip = ClipOp("clip", "real numeric",
              "clip(x, /, min=None, max=None): x clamped to [min, max] (min and max: None, Python "
              "int/float or Array, broadcast with x).\n\n"
              "The result has x's dtype; a NaN in x, min or max gives NaN; where min > max the "
              "result is max (NumPy's). Python int bounds outside an integer x's range are "
              "clamped to it; a float bound for an integer x raises TypeError.")

# ----------------------------------------------------------------------------- logical
logical_and = BinaryOp("logical_and", "boolean", "logical_and", LOGICAL, "logical_and(x1, x2, /): elementwise AND.")
logical_or = BinaryOp("logical_or", "boolean", "logical_or", LOGICAL, "logical_or(x1, x2, /): elementwise OR.")
logical_xor = BinaryOp("logical_xor", "boolean", "logical_xor", LOGICAL, "logical_xor(x1, x2, /): elementwise XOR.")
logical_not = UnaryOp("logical_not", "boolean", "logical_not", LOGICAL, "logical_not(x, /): elementwise NOT.")

# Two boolean operands of add and multiply (bool arrays, or one with a Python bool; also
# through +, * and their in-place forms): NumPy's logical OR and AND. subtract keeps
# rejecting them, as NumPy does.
add.on_bools(logical_or)
multiply.on_bools(logical_and)

# ----------------------------------------------------------------------------- classification
isnan = UnaryOp("isnan", "numeric", "isnan", BOOL,
                "isnan(x, /): True where x is NaN (complex: either part); False for integers.")
isinf = UnaryOp("isinf", "numeric", "isinf", BOOL,
                "isinf(x, /): True where x is +-infinity (complex: either part); False for integers.")
isfinite = UnaryOp("isfinite", "numeric", "isfinite", BOOL,
                   "isfinite(x, /): True where x is neither NaN nor infinite; True for integers.")

# ----------------------------------------------------------------------------- bitwise
bitwise_and = BinaryOp("bitwise_and", "integer or boolean", "bitwise_and", PROMOTE, "bitwise_and(x1, x2, /): x1 & x2.")
bitwise_or = BinaryOp("bitwise_or", "integer or boolean", "bitwise_or", PROMOTE, "bitwise_or(x1, x2, /): x1 | x2.")
bitwise_xor = BinaryOp("bitwise_xor", "integer or boolean", "bitwise_xor", PROMOTE, "bitwise_xor(x1, x2, /): x1 ^ x2.")
bitwise_invert = UnaryOp("bitwise_invert", "integer or boolean", "bitwise_invert", PROMOTE,
                         "bitwise_invert(x, /): ~x (logical NOT for bool).")
bitwise_left_shift = BinaryOp("bitwise_left_shift", "integer", "bitwise_left_shift", PROMOTE,
                              "bitwise_left_shift(x1, x2, /): x1 << x2; counts outside [0, bits) give 0.")
bitwise_right_shift = BinaryOp("bitwise_right_shift", "integer", "bitwise_right_shift", PROMOTE,
                               "bitwise_right_shift(x1, x2, /): x1 >> x2 (arithmetic for signed x1); "
                               "counts outside [0, bits) give 0, or -1 for negative x1.")

# Integer and boolean inputs of the floating-point functions: an extension (the spec asks for
# floating-point inputs) that NumPy, CuPy and PyTorch have. The kernels convert the integers
# to double in registers (no copy).
_INTEGER_INPUTS = ("\n\nInteger and boolean inputs (an extension: the spec asks for floating-point "
                   "ones) are computed in, and give, the default floating dtype float64, as PyTorch "
                   "does with its default; NumPy agrees for 32- and 64-bit integers and gives "
                   "float16/float32 for bool and 8/16-bit ones.")
for _op in (sqrt, exp, expm1, log, log1p, log2, log10, logaddexp, sin, cos, tan, asin, acos, atan, atan2,
            sinh, cosh, tanh, asinh, acosh, atanh, hypot, copysign):
    _op.__doc__ += _INTEGER_INPUTS
del _op

__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
    "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
    "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc",
]


def kernel_instances() -> list[str]:
    """Every elementwise kernel instance the functions above launch for same-dtype operands
    (for the compile-all test and ``python -m gparray.warmup``)."""
    out = []
    for name in __all__:
        out += globals()[name].instances()
    return list(dict.fromkeys(out))
