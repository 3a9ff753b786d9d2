"""The ``linalg`` extension of the standard (work in progress: ``matmul``, ``tensordot``, ``vecdot``)."""
from .._linear_algebra import matmul, tensordot, vecdot

__all__ = ["matmul", "tensordot", "vecdot"]
