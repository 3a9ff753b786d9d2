"""The ``linalg`` extension of the standard (work in progress: ``matmul``, ``tensordot``, ``vecdot``)."""
from .._linear_algebra import matmul, tensordot, vecdot
from ._elementary import cross, diagonal, matrix_transpose, outer, trace
from ._norms import matrix_norm, vector_norm

__all__ = ["matmul", "tensordot", "vecdot"]
__all__ += ["cross", "diagonal", "matrix_transpose", "outer", "trace"]
__all__ += ["matrix_norm", "vector_norm"]
