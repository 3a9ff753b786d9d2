"""cuSOLVER's general (non-Hermitian) eigensolver on gparray memory: ``cusolverDnXgeev``
(the 64-bit generic API) through CuPy's binding, behind ``gparray.linalg.eig``/``eigvals``.

Like gparray/_engine/_solver.py (whose plumbing it shares: the cusolverDn handle per
device and thread bound to the current stream, the device guard, pool workspaces), it takes
raw device pointers to C-contiguous stacks the caller allocated and works in LAPACK's
column-major terms: the caller hands over a copy of ``x.mT`` (column-major ``x``), which
the routine destroys.

* Only right eigenvectors (cuSOLVER computes no left ones: ``jobvl`` is NOVECTOR).
* Eigenvalues ``W`` are always complex (dataTypeW complex of A's precision). For real A the
  computation runs in real arithmetic and VR is real, LAPACK's packing: a real eigenvalue's
  vector is one column; a complex-conjugate pair (positive imaginary part first) w_j,
  w_{j+1} = conj(w_j) shares the columns j, j+1: v_j = VR[:, j] + i VR[:, j+1] and
  v_{j+1} = conj(v_j). The caller unpacks (gparray/linalg/_eig.py). For complex A, VR is
  complex: column j is v_j. The vectors have unit 2-norm, largest component real.
  This is the combination CuPy's own ``cupy.linalg.eig`` passes (A, VL, VR and the
  compute type of A's dtype, W complex).
* A device workspace (gparray's pool) and a host workspace (a NumPy buffer) whose sizes
  ``xgeev_bufferSize`` gives; one call per matrix of a stack (there is no batched geev).
* ``info``: int32[count]; > 0 when the QR iteration did not converge. Nothing here reads
  it back: the caller does once (that read synchronizes). ``geev`` returns the host
  workspace; the caller keeps it alive until that read.
"""
from __future__ import annotations

import numpy as np

from .._core import _backend
from .._core import _faults
from . import _solver

# cudaDataType_t (library_types.h; tests/test_linalg_eig_model.py compares them with
# cupy.cuda.runtime's CUDA_R_32F, CUDA_R_64F, CUDA_C_32F, CUDA_C_64F)
CUDA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}
COMPLEX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}


def _host_alloc(nbytes: int) -> np.ndarray:
    """The host workspace (tests replace it to register the buffer with their memory model)."""
    return np.empty(max(int(nbytes), 1), np.uint8)


def geev(dtype: str, n: int, a: int, count: int, w: int, vr: int, info: int, dev: int):
    """Eigenvalues and (when ``vr`` is not 0) right eigenvectors of the ``count`` general
    column-major n x n matrices of ``dtype`` at ``a`` (contiguous, lda = n; destroyed).

    ``w``: complex[count, n] of ``dtype``'s precision, the eigenvalues (unordered; for real
    input conjugate pairs are adjacent, positive imaginary part first). ``vr``: dtype[count,
    n, n], the column-major eigenvector matrices (ldvr = n; real input: LAPACK's packed
    pairs, see the module docstring), or 0 for eigenvalues only. ``info``: int32[count].
    Returns the host workspace, which must stay alive until ``info`` has been read back."""
    if count == 0 or n == 0:
        return None
    dt, ct = np.dtype(dtype), np.dtype(COMPLEX[dtype])
    ta, tw = CUDA_TYPE[dtype], CUDA_TYPE[ct.name]
    isz, csz = dt.itemsize, ct.itemsize
    step = n * n * isz
    with _backend.on_device(dev), _faults.checked("eig"):
        cs, _ = _solver._libs()
        h, _b = _solver._handles(dev)
        if vr:
            jobvr, v0, vstep = _solver.EIG_VECTOR, vr, step
        else:
            # not referenced with NOVECTOR; still a valid n x n buffer, as CuPy passes
            scratch = _solver._alloc(step, dev)
            jobvr, v0, vstep = _solver.EIG_NOVECTOR, scratch.ptr, 0
        jobvl = _solver.EIG_NOVECTOR          # VL not referenced: aliases VR, as in CuPy
        params = cs.createParams()
        try:
            dbytes, hbytes = cs.xgeev_bufferSize(h, params, jobvl, jobvr, n, ta, a, n, tw, w, ta, v0, n, ta, v0, n,
                                                 ta)
            dwork = _solver._alloc(max(int(dbytes), 1), dev)
            hwork = _host_alloc(hbytes)
            for i in range(count):
                v = v0 + i * vstep
                cs.xgeev(h, params, jobvl, jobvr, n, ta, a + i * step, n, tw, w + i * n * csz, ta, v, n, ta, v, n,
                         ta, dwork.ptr, int(dbytes), hwork.ctypes.data, int(hbytes), info + 4 * i)
        finally:
            cs.destroyParams(params)
    return hwork


__all__ = ["geev", "CUDA_TYPE", "COMPLEX"]
