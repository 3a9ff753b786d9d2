"""The ``linalg`` extension of the standard (work in progress: ``matmul`` only)."""
from .._linear_algebra import matmul

__all__ = ["matmul"]
