"""The ``linalg`` extension of the standard (work in progress: ``matmul``, ``tensordot``, ``vecdot``)."""
from .._linear_algebra import matmul, tensordot, vecdot
from ._decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from ._errors import LinAlgError
from ._solvers import det, inv, matrix_power, matrix_rank, pinv, slogdet, solve

__all__ = ["matmul", "tensordot", "vecdot",
           "cholesky", "det", "eigh", "eigvalsh", "inv", "LinAlgError", "matrix_power", "matrix_rank", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals"]
