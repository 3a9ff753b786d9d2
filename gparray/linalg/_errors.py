"""``LinAlgError`` and the one place where the solvers' statuses (one per matrix, or a
kernel's summary of its stack) become it."""
from __future__ import annotations

import numpy as np


class LinAlgError(np.linalg.LinAlgError):
    """A matrix the factorization cannot handle: singular (``inv``, ``solve``), not
    positive definite (``cholesky``), or an iteration that did not converge (``eigh``,
    ``svd``). A ``ValueError`` and a ``numpy.linalg.LinAlgError``, so code written for
    NumPy catches it. The message names the function and, for a stack, the index of the
    first failing matrix; it keeps NumPy's wording ("Singular matrix", "Matrix is not
    positive definite", ...)."""


def check_info(name: str, info: np.ndarray, batch: tuple, what: str) -> None:
    """Raise LinAlgError ``"{name}: {what} (stack index ...)"`` when a status in ``info``
    (host int32 values, one per matrix of the stack ``batch``) is positive; a negative one
    is an argument cuSOLVER rejected, a gparray bug (RuntimeError)."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size == 0:
        return
    first = int(bad[0])
    if flat[first] < 0:
        raise RuntimeError(f"{name}: cuSOLVER rejected argument {-int(flat[first])} (a gparray bug)")
    _raise(name, what, batch, first, int(bad.size), int(flat.size))


def check_status(name: str, status: np.ndarray, batch: tuple, count: int, what: str) -> None:
    """The same LinAlgError from a kernel's two-word summary of its stack of ``count``
    matrices (gparray/_kernels/linalg_small.cu): ``status[1]`` failing matrices, the first
    at ``count - status[0]``."""
    nbad = int(status[1])
    if nbad == 0:
        return
    first = count - int(status[0])
    if not 0 <= first < count:
        raise RuntimeError(f"{name}: status {[int(v) for v in status]} names no matrix of {count} (a gparray bug)")
    _raise(name, what, batch, first, nbad, count)


def _raise(name: str, what: str, batch: tuple, first: int, nbad: int, total: int):
    where = ""
    if batch:
        idx = tuple(int(i) for i in np.unravel_index(first, batch))
        more = f"; {nbad} of {total} matrices" if nbad > 1 else ""
        where = f" (stack index {idx}{more})"
    raise LinAlgError(f"{name}: {what}{where}")
