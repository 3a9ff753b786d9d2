"""The library calls ``gparray.cuda.profile`` records: which engine functions call cuBLAS,
cuSOLVER and cuFFT, and how a record names the routine and finds its device and stream from
the call's arguments (the recording wrapper itself is ``_profile._library``)."""
from __future__ import annotations


def _last_dev(a, kw):
    return kw["dev"] if "dev" in kw else a[-1]


def _gemm_name(a, kw):
    c = a[0] if a else kw.get("c")
    pre, batched = getattr(c, "fkey", ("?", False))
    calls = len(getattr(c, "offsets", ()) or ())
    name = f"cublas{pre}gemm{'StridedBatched' if batched else '_v2'}"
    return name if calls <= 1 else f"{name} x{calls}"


def _solver_name(fname):
    def name_of(a, kw):
        dt = a[0] if a else kw.get("dtype")
        return f"{fname}<{dt}>" if isinstance(dt, str) else fname
    return name_of


def _fft_name(a, kw):
    from .._engine import _fft

    step, double = a[0], a[1]
    ex = _fft._EXEC_NAMES.get((step.kind, bool(double)), "exec")
    name = "cufft" + ex[0].upper() + ex[1:]     # cufftExecC2C, ...
    return name + " (host loop)" if getattr(step, "loops", None) else name


_SOLVER_ROUTINES = ("potrf", "getrf", "getrs", "inv", "geqrf", "orgqr", "syevd", "gesvd", "gesvdp",
                    "gesvdj_batched")


def wrappers(library):
    """[(module name, attribute, wrapper factory)] of the library calls recorded, the
    wrappers made by ``library(orig, family, name_of, dev_of, stream_of=None)``."""
    out = [("gparray._engine._blas", "launch",
            lambda f: library(f, "cublas", _gemm_name, lambda a, kw: a[4] if len(a) > 4 else kw["dev"],
                              lambda a, kw: a[5] if len(a) > 5 else kw["stream_ptr"]))]
    out += [("gparray._engine._solver", r, (lambda r: lambda f: library(f, "cusolver", _solver_name(r), _last_dev))(r))
            for r in _SOLVER_ROUTINES]
    out.append(("gparray._engine._geev", "geev", lambda f: library(f, "cusolver", _solver_name("geev"), _last_dev)))
    out.append(("gparray._engine._fft", "execute", lambda f: library(f, "cufft", _fft_name, _last_dev)))
    return out


__all__ = ["wrappers"]
