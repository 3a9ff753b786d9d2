"""The ``linalg`` extension of the standard: its 23 functions, ``eig`` and ``eigvals`` (added
in 2025.12) and ``LinAlgError``.

Products (``matmul``, ``tensordot``, ``vecdot``) run on cuBLAS or gparray's integer kernel
(gparray/_api/_linear_algebra.py); factorizations and solvers on cuSOLVER
(gparray/_engine/_solver.py, ``_decompositions.py``, ``_solvers.py``); norms on the reduction
engine (``_norms.py``); general eigenproblems on cuSOLVER's Xgeev (gparray/_engine/_geev.py,
``_eig.py``); ``diagonal`` is a view and ``trace``, ``cross``, ``outer`` compose the
elementwise and reduction functions (``_elementary.py``)."""
from .._api._linear_algebra import matmul, tensordot, vecdot
from ._decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from ._eig import eig, eigvals
from ._elementary import cross, diagonal, matrix_transpose, outer, trace
from ._errors import LinAlgError
from ._norms import matrix_norm, vector_norm
from ._solvers import det, inv, matrix_power, matrix_rank, pinv, slogdet, solve

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
           "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm", "LinAlgError"]
