"""gparray: the Python Array API standard (2025.12) on NVIDIA GPUs.

``import gparray as xp`` never touches the GPU; the first operation does. The ``linalg`` and
``fft`` extensions are imported at their first use (``xp.linalg``: PEP 562 ``__getattr__``
below), not by ``import gparray`` (tests/test_startup.py).
"""
from ._core._version import __version__

__array_api_version__ = "2025.12"

from ._api._creation import (arange, asarray, astype, empty, empty_like, eye, from_dlpack, full,
                             full_like, linspace, logspace, meshgrid, ones, ones_like, tril, triu,
                             zeros, zeros_like)
from ._api._data_type_functions import can_cast, finfo, iinfo, isdtype, result_type
from ._api._elementwise_functions import *  # noqa: F401,F403
from ._api._elementwise_functions import __all__ as _elementwise_all
from ._api._indexing_functions import take, take_along_axis
from ._api._info import __array_namespace_info__
from ._api._linear_algebra import matmul, tensordot, vecdot
from ._api._manipulation import (broadcast_arrays, broadcast_shapes, broadcast_to, concat,
                                 expand_dims, flip, matrix_transpose, moveaxis, permute_dims,
                                 repeat, reshape, roll, squeeze, stack, tile, unstack)
from ._api._nan_functions import nanmax, nanmean, nanmin, nanprod, nanstd, nansum, nanvar
from ._api._searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where
from ._api._set_functions import isin, unique_all, unique_counts, unique_inverse, unique_values
from ._api._sorting import argsort, sort
from ._api._statistical import (cumulative_prod, cumulative_sum, max, mean, min, prod, std, sum,
                                var)
from ._api._utility import all, any, diff
from ._array import Array
from ._core._constants import e, inf, nan, newaxis, pi
from ._core._device import Device
from ._core._dtypes import (bool, complex64, complex128, float16, float32, float64, int8, int16,
                            int32, int64, uint8, uint16, uint32, uint64)
from ._core._host_conversion import HostConversionWarning
from . import cuda

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "Array", "Device", "cuda",
    "HostConversionWarning",  # extension: numpy.asarray(x) under gparray.cuda.set_host_conversion("warn")
    "e", "inf", "nan", "newaxis", "pi",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
    "float16",  # extension dtype (not in __array_namespace_info__().dtypes())
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    "logspace",  # extension function (NumPy's and CuPy's; not in the standard)
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
    "matrix_transpose", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile",
    "unstack",
    "all", "any", "diff", "where",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted",
    "argsort", "sort",
    "matmul", "tensordot", "vecdot", "linalg", "fft",
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "take", "take_along_axis",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    # extension: NaN-skipping reductions (NumPy's names; xarray and cubed look them up)
    "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar",
] + list(_elementwise_all)

_LAZY_SUBMODULES = ("fft", "linalg")


def __getattr__(name):
    # PEP 562: xp.linalg and xp.fft import their subpackage at first use (importing it also
    # binds it here, so this runs once per name)
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
