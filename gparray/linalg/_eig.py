"""General (non-Hermitian) eigenproblems of ``gparray.linalg``: ``eig`` and ``eigvals``
(new in the 2025.12 standard), on cuSOLVER's ``cusolverDnXgeev``
(gparray/_engine/_geev.py).

Both take a stack (..., M, M) of float32, float64, complex64 or complex128 matrices
(TypeError for other dtypes, ValueError when not square) and return complex results of the
input's precision (float32 -> complex64, float64 -> complex128), whatever the eigenvalues
turn out to be. The input is copied once as ``x.mT`` (C-contiguous: column-major ``x``),
which the routine destroys; the eigenvectors come back column-major, so the C-order
buffer holds V^T and the result is its ``.mT`` view (the eigenvectors are its columns).

Real input runs in real arithmetic: cuSOLVER (as LAPACK's sgeev/dgeev) returns the vectors
of a complex-conjugate eigenvalue pair packed in two real columns, v_j = VR[:, j] +
i VR[:, j+1] and v_{j+1} = conj(v_j), with the positive imaginary part first; ``_unpack``
turns that into complex vectors with a few elementwise passes (``where`` on the sign of the
eigenvalues' imaginary parts). Complex input gives complex vectors directly.

Reading the routines' status back (LinAlgError "Eigenvalues did not converge" naming the
first failing matrix of a stack) synchronizes the stream.

The algorithm is ``_eig(o, x, vectors)`` with ``o`` the array operations: gparray/linalg/
_xp.py plus ``parts`` (``_OPS`` here) on the GPU; the CPU tier passes a NumPy twin and a
LAPACK model of the binding (tests/test_linalg_eig_model.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._engine import _geev
from .._engine import _linalg_plan as _lp
from .._engine import _shapes
from . import _xp
from ._decompositions import _input
from ._errors import check_info

_I32 = np.dtype("int32")


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class _Ops:
    """gparray/linalg/_xp.py and ``parts``: the real and imaginary parts of a complex array
    as writable real views of its memory (strides unchanged, in bytes)."""

    def __getattr__(self, name):
        return getattr(_xp, name)

    @staticmethod
    def parts(c):
        r = np.dtype(_lp.real_of(c.dtype.name))
        return (c._view(c._offset, c._shape, c._strides, r),
                c._view(c._offset + r.itemsize, c._shape, c._strides, r))


_OPS = _Ops()


def eig(x, /):
    """Eigenvalues and right eigenvectors of the square matrices of ``x`` (..., M, M),
    real or complex floating: ``EigResult(eigenvalues, eigenvectors)``, eigenvalues
    (..., M) and eigenvectors (..., M, M), both complex of x's precision, x @ v = v * w
    for the columns v of ``eigenvectors``; each has unit 2-norm (largest component real),
    as numpy.linalg.eig's. The order of the eigenvalues is unspecified (for real x, those
    of a complex-conjugate pair are adjacent). cuSOLVER's Xgeev (QR iteration, part of it
    on the host), one call per matrix of a stack. Raises LinAlgError ("Eigenvalues did
    not converge"); reading the status back synchronizes the stream."""
    return _eig(_OPS, x, True)


def eigvals(x, /):
    """Eigenvalues (..., M), complex of x's precision, of the square matrices of ``x``
    (..., M, M); as ``eig`` without the eigenvectors."""
    return _eig(_OPS, x, False)


def _eig(o, x, vectors):
    name = "eig" if vectors else "eigvals"
    dt, _ = _input(o, x, name)
    cdt = np.dtype(_geev.COMPLEX[dt.name])
    b, n = _lp.square(name, x.shape)
    count = _shapes.prod(b)
    w = o.empty(b + (n,), cdt, x)
    if count == 0 or n == 0:
        return EigResult(w, o.empty(x.shape, cdt, x)) if vectors else w
    a = o.contig(x.mT, dt)                # column-major x, destroyed by the routine
    info = o.empty(b, _I32, x)
    vr = o.empty(x.shape, dt, x) if vectors else None   # C order: VR^T
    keep = _geev.geev(dt.name, n, o.ptr(a), count, o.ptr(w), o.ptr(vr) if vectors else 0, o.ptr(info), o.dev(x))
    if vectors and dt.kind == "f":
        vr = _unpack(o, w, vr, cdt)       # queued before the status read below
    check_info(name, o.host(info), b, "Eigenvalues did not converge")
    del keep                              # the host workspace outlives the routines
    return EigResult(w, vr.mT) if vectors else w


def _unpack(o, w, r, cdt):
    """Complex eigenvectors from LAPACK's real packing. ``r`` (..., n, n) C order holds
    VR^T: row j is VR[:, j]. Returns (..., n, n) complex, row j the vector of w[..., j]:
    r[j] for a real w_j; r[j] + i r[j+1] when Im w_j > 0; r[j-1] - i r[j] when Im w_j < 0
    (the second of a pair)."""
    n = r.shape[-1]
    e = o.empty(r.shape, cdt, r)
    er, ei = o.parts(e)
    wi = o.parts(w)[1]
    pos = o.expand_dims(wi > 0, axis=-1)   # (..., n, 1): broadcast along each row
    neg = o.expand_dims(wi < 0, axis=-1)
    er[...] = r
    ei[...] = o.where(neg, -r, 0.0)
    if n > 1:
        # neg never at row 0 nor pos at row n-1: the pairs lie inside the matrix
        er[..., 1:, :] = o.where(neg[..., 1:, :], r[..., :-1, :], r[..., 1:, :])
        ei[..., :-1, :] = o.where(pos[..., :-1, :], r[..., 1:, :], ei[..., :-1, :])
    return e


__all__ = ["eig", "eigvals", "EigResult"]
