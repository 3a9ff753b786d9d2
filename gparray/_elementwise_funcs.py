"""Elementwise functions (spec section "Element-wise Functions").

One line per function: an op object built from its table entry (name, input dtype
category, functor in gparray/_kernels/include/gp/functors*.cuh, result rule) with its
docstring. The op factory lives in ``_ops.py``.
"""
from __future__ import annotations

from ._ops import BOOL, FLOAT, LOGICAL, PROMOTE, BinaryOp, UnaryOp

# ----------------------------------------------------------------------------- arithmetic
add = BinaryOp("add", "numeric", "add", PROMOTE, "add(x1, x2, /): elementwise x1 + x2.")
subtract = BinaryOp("subtract", "numeric", "subtract", PROMOTE, "subtract(x1, x2, /): elementwise x1 - x2.")
multiply = BinaryOp("multiply", "numeric", "multiply", PROMOTE, "multiply(x1, x2, /): elementwise x1 * x2.")
divide = BinaryOp("divide", "numeric", "divide", FLOAT, "divide(x1, x2, /): elementwise true division x1 / x2.")
negative = UnaryOp("negative", "numeric", "negative", PROMOTE, "negative(x, /): elementwise -x.")
positive = UnaryOp("positive", "numeric", "positive", PROMOTE, "positive(x, /): elementwise +x (a copy).")

# ----------------------------------------------------------------------------- comparison
equal = BinaryOp("equal", "all", "equal", BOOL, "equal(x1, x2, /): elementwise x1 == x2.")
not_equal = BinaryOp("not_equal", "all", "not_equal", BOOL, "not_equal(x1, x2, /): elementwise x1 != x2.")
less = BinaryOp("less", "real numeric", "less", BOOL, "less(x1, x2, /): elementwise x1 < x2.")
less_equal = BinaryOp("less_equal", "real numeric", "less_equal", BOOL, "less_equal(x1, x2, /): elementwise x1 <= x2.")
greater = BinaryOp("greater", "real numeric", "greater", BOOL, "greater(x1, x2, /): elementwise x1 > x2.")
greater_equal = BinaryOp("greater_equal", "real numeric", "greater_equal", BOOL,
                         "greater_equal(x1, x2, /): elementwise x1 >= x2.")

# ----------------------------------------------------------------------------- logical
logical_and = BinaryOp("logical_and", "boolean", "logical_and", LOGICAL, "logical_and(x1, x2, /): elementwise AND.")
logical_or = BinaryOp("logical_or", "boolean", "logical_or", LOGICAL, "logical_or(x1, x2, /): elementwise OR.")
logical_xor = BinaryOp("logical_xor", "boolean", "logical_xor", LOGICAL, "logical_xor(x1, x2, /): elementwise XOR.")
logical_not = UnaryOp("logical_not", "boolean", "logical_not", LOGICAL, "logical_not(x, /): elementwise NOT.")

# ----------------------------------------------------------------------------- classification
isnan = UnaryOp("isnan", "numeric", "isnan", BOOL, "isnan(x, /): True where x is NaN.")
isinf = UnaryOp("isinf", "numeric", "isinf", BOOL, "isinf(x, /): True where x is +-infinity.")
isfinite = UnaryOp("isfinite", "numeric", "isfinite", BOOL, "isfinite(x, /): True where x is finite.")

# ----------------------------------------------------------------------------- bitwise
bitwise_and = BinaryOp("bitwise_and", "integer or boolean", "bitwise_and", PROMOTE, "bitwise_and(x1, x2, /): x1 & x2.")
bitwise_or = BinaryOp("bitwise_or", "integer or boolean", "bitwise_or", PROMOTE, "bitwise_or(x1, x2, /): x1 | x2.")
bitwise_xor = BinaryOp("bitwise_xor", "integer or boolean", "bitwise_xor", PROMOTE, "bitwise_xor(x1, x2, /): x1 ^ x2.")
bitwise_invert = UnaryOp("bitwise_invert", "integer or boolean", "bitwise_invert", PROMOTE, "bitwise_invert(x, /): ~x.")

__all__ = ["add", "subtract", "multiply", "divide", "negative", "positive", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "isnan", "isinf", "isfinite", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_invert"]
