"""Shape and dtype planning of the ``linalg`` extension: what every function checks before
any launch and the shapes of its results. Pure Python; tests/test_linalg_plan.py compares
every result shape with numpy.linalg's and every refusal with the spec's rule.

Stacks: every function takes ``(..., M, N)`` arrays; the batch dimensions of two operands
broadcast as in ``matmul``. Dtypes: the factorizations and inverses take real and complex
floating arrays (float32, float64, complex64, complex128; ``TypeError`` otherwise), and
their real outputs (singular values, eigenvalues, determinants' logarithms) have the real
dtype of the same precision.
"""
from __future__ import annotations

from . import _shapes

_REAL_OF = {"complex64": "float32", "complex128": "float64", "float32": "float32", "float64": "float64"}


def float_dtype(name: str, dtype_name: str, kinds: str = "fc") -> str:
    """``dtype_name`` when it is a floating dtype the factorizations take, else TypeError."""
    if dtype_name not in _REAL_OF or (dtype_name.startswith("complex") and "c" not in kinds):
        allowed = "a real or complex floating" if "c" in kinds else "a real floating"
        raise TypeError(f"{name}: expected an array with {allowed} dtype, got {dtype_name}")
    return dtype_name


def real_of(dtype_name: str) -> str:
    """The real dtype of the same precision (float32 for complex64, ...)."""
    return _REAL_OF[dtype_name]


def _matrices(name: str, shape: tuple, square: bool = False) -> tuple:
    """(batch shape, M, N) of a stack of matrices; ValueError below 2 dimensions or, with
    ``square``, for M != N."""
    if len(shape) < 2:
        raise ValueError(f"{name}: expected an array of at least 2 dimensions (a stack of matrices), got shape "
                         f"{tuple(shape)}")
    m, n = shape[-2], shape[-1]
    if square and m != n:
        raise ValueError(f"{name}: last 2 dimensions of the array must be square, got {m} x {n}")
    return tuple(shape[:-2]), m, n


def square(name: str, shape: tuple) -> tuple:
    """Batch shape and size of a stack of square matrices (inv, det, slogdet, cholesky,
    eigh, eigvalsh, matrix_power)."""
    b, m, _ = _matrices(name, shape, square=True)
    return b, m


def qr_shapes(shape: tuple, mode: str = "reduced") -> tuple:
    """(Q shape, R shape) of ``qr(x, mode=...)``: reduced (..., M, K), (..., K, N) with K =
    min(M, N); complete (..., M, M), (..., M, N)."""
    b, m, n = _matrices("qr", shape)
    if mode == "reduced":
        k = min(m, n)
        return b + (m, k), b + (k, n)
    if mode == "complete":
        return b + (m, m), b + (m, n)
    raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")


def svd_shapes(shape: tuple, full_matrices: bool = True) -> tuple:
    """(U, S, Vh) shapes of ``svd``: S (..., K); U (..., M, M) and Vh (..., N, N) with full
    matrices, else (..., M, K) and (..., K, N)."""
    b, m, n = _matrices("svd", shape)
    k = min(m, n)
    if full_matrices:
        return b + (m, m), b + (k,), b + (n, n)
    return b + (m, k), b + (k,), b + (k, n)


def svdvals_shape(shape: tuple) -> tuple:
    b, m, n = _matrices("svdvals", shape)
    return b + (min(m, n),)


def eigh_shapes(shape: tuple) -> tuple:
    """(eigenvalues, eigenvectors) shapes of ``eigh``: (..., M), (..., M, M)."""
    b, m = square("eigh", shape)
    return b + (m,), b + (m, m)


def solve_shapes(shape1: tuple, shape2: tuple) -> tuple:
    """(the broadcast shape of x1, the broadcast shape of x2 = the result's) of ``solve``:
    x1 a stack of square (..., M, M); x2 one vector (M,) when it is 1-D, else a stack
    (..., M, K) whose batch broadcasts against x1's (the spec's rule)."""
    b1, m = square("solve", shape1)
    if len(shape2) == 1:
        if shape2[0] != m:
            raise ValueError(f"solve: x2 of shape {tuple(shape2)} does not match the {m} x {m} matrices of x1")
        return b1 + (m, m), b1 + (m,)
    if len(shape2) < 1:
        raise ValueError("solve: x2 must have at least one dimension")
    b2, m2, k = tuple(shape2[:-2]), shape2[-2], shape2[-1]
    if m2 != m:
        raise ValueError(f"solve: x2 of shape {tuple(shape2)} does not match the {m} x {m} matrices of x1")
    try:
        b = _shapes.broadcast_shapes(b1, b2, name="solve")
    except ValueError:
        raise ValueError(f"solve: the batch dimensions {b1} of x1 and {b2} of x2 do not broadcast") from None
    return b + (m, m), b + (m, k)


def norm_axes(name: str, ndim: int, axis, count: int) -> tuple:
    """``axis`` normalized for a norm over ``count`` axes (vector_norm: None = all, an int
    or a tuple; matrix_norm: always the last two)."""
    if axis is None:
        return tuple(range(ndim))
    axes = _shapes.normalize_axes(axis, ndim, name)
    if count and len(axes) != count:
        raise ValueError(f"{name}: expected {count} axes, got {axis!r}")
    return axes


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """``shape`` with ``axes`` removed (or kept as 1)."""
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def matrix_norm_shape(shape: tuple, keepdims: bool = False, ord="fro") -> tuple:
    """Result shape of ``matrix_norm`` (over the last two axes); ``ord`` one of the spec's."""
    if ord not in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
        raise ValueError(f"matrix_norm: invalid ord {ord!r}")
    _matrices("matrix_norm", shape)
    n = len(shape)
    return reduced_shape(tuple(shape), (n - 2, n - 1), keepdims)


def vector_norm_shape(shape: tuple, axis=None, keepdims: bool = False) -> tuple:
    """Result shape of ``vector_norm`` over ``axis`` (None: every axis, the array flattened)."""
    axes = norm_axes("vector_norm", len(shape), axis, 0)
    return reduced_shape(tuple(shape), axes, keepdims)


def diagonal_shape(shape: tuple, offset: int = 0) -> tuple:
    """Shape of ``diagonal(x, offset=...)`` (and of ``trace``'s operand diagonals): the batch
    and the length of diagonal ``offset`` of each (M, N) matrix."""
    b, m, n = _matrices("diagonal", shape)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"diagonal: offset must be an integer, got {offset!r}")
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    return b + (length,)


def cross_shape(shape1: tuple, shape2: tuple, axis: int = -1) -> tuple:
    """Shape of ``cross(x1, x2, axis=...)``: the operands broadcast; both have 3 elements
    along ``axis`` (negative, counted from the end of the broadcast shape)."""
    try:
        shape = _shapes.broadcast_shapes(tuple(shape1), tuple(shape2), name="cross")
    except ValueError:
        raise ValueError(f"cross: shapes {tuple(shape1)} and {tuple(shape2)} do not broadcast") from None
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"cross: axis must be an integer, got {axis!r}")
    nd = min(len(shape1), len(shape2))
    if not -nd <= axis < 0:
        raise ValueError(f"cross: axis {axis} must be negative and within the smaller operand's "
                         f"{nd} dimensions")
    if shape1[axis] != 3 or shape2[axis] != 3:
        raise ValueError(f"cross: x1 and x2 must have 3 elements along axis {axis}, got "
                         f"{shape1[axis]} and {shape2[axis]}")
    return shape


def outer_shape(shape1: tuple, shape2: tuple) -> tuple:
    if len(shape1) != 1 or len(shape2) != 1:
        raise ValueError(f"outer: both operands must be one-dimensional, got shapes {tuple(shape1)} and "
                         f"{tuple(shape2)}")
    return (shape1[0], shape2[0])


def matrix_power_plan(shape: tuple, n) -> tuple:
    """(square-and-multiply steps, invert first) of ``matrix_power(x, n)``: the bits of |n|
    from the lowest, each a squaring and, where set, a product into the result; n < 0
    inverts x first; n == 0 gives the identity."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power: n must be an integer, got {n!r}")
    square("matrix_power", shape)
    return tuple(int(c) for c in reversed(bin(abs(n))[2:])) if n else (), n < 0
