"""Search engine ("search" family, gparray/_kernels/search.cu): nonzero by count + scan +
compaction, and searchsorted by one binary search per needle."""
from __future__ import annotations

import numpy as np

from .._core import _dtypes as _dt
from . import _shapes
from ._launch import BLOCK, ctype, index_type, launch, nd_template, strided_params

FAMILY = "search"
NZ_TILE = (BLOCK // 32) * 16 * 32   # elements per nonzero block (GP_NZ_TILE)

_ptr = np.uint64
_i64 = np.int64


def nonzero_layout(shape: tuple, strides: tuple):
    """(contig, merged shape, merged strides, nd, idx) for reading ``shape``/element
    ``strides`` in C order."""
    m_shape, (m_st,) = _shapes.merge_dims(shape, [strides])
    contig = len(m_shape) == 1 and m_st[0] == 1
    n = _shapes.prod(shape)
    idx = index_type(n, [_shapes.span_elements(shape, strides)])
    return contig, m_shape, m_st, nd_template(len(m_shape)), idx


def nonzero_tiles(n: int) -> int:
    """Number of tiles (blocks) the nonzero kernels cut ``n`` elements into."""
    return -(-n // NZ_TILE)


def _nonzero_args(x):
    n = x.size
    isz = x._dtype.itemsize
    est = tuple(s // isz for s in x._strides)
    contig, m_shape, m_st, nd, idx = nonzero_layout(x._shape, est)
    layout = strided_params(m_shape, [m_st], nd)
    ix = np.int32 if idx == "int" else _i64
    return n, "true" if contig else "false", nd, idx, layout, ix(n)


def nonzero_count(x, counts, incl) -> None:
    """First pass of nonzero for a non-empty ``x`` (ndim >= 1): ``counts[t]`` = nonzero
    elements of tile t (C order), ``incl`` = their inclusive running sum. ``counts`` and
    ``incl``: C-contiguous int64 of shape (nonzero_tiles(x.size),), allocated by the caller,
    who reads the total (the last element of ``incl``) to size the output."""
    from ._scan import scan

    n, c, nd, idx, layout, nparam = _nonzero_args(x)
    t = ctype(x._dtype)
    launch(FAMILY, f"gp_nonzero_count<{t}, {c}, {nd}, {idx}>", x._device._id, nonzero_tiles(n),
           (_ptr(counts._ptr), _ptr(x._ptr), layout, nparam))
    scan("sum", counts, 0, incl)


def nonzero_write(x, incl, out) -> None:
    """Second pass: ``out`` (C-contiguous int64 of shape (x.ndim, total), total >= 1) gets
    the index of every nonzero element of ``x``, one row per dimension; ``incl`` is the
    running sum from nonzero_count."""
    n, c, nd, idx, layout, nparam = _nonzero_args(x)
    t = ctype(x._dtype)
    nds = nd_template(x.ndim)
    shape_prm = strided_params(x._shape, [_shapes.c_strides(x._shape)], nds)
    launch(FAMILY, f"gp_nonzero_write<{t}, {c}, {nd}, {nds}, {idx}>", x._device._id, nonzero_tiles(n),
           (_ptr(out._ptr), _i64(out._shape[1]), _ptr(incl._ptr), _ptr(x._ptr), layout, shape_prm, nparam))


def searchsorted(x1, x2, out, ct, right: bool, sorter=None) -> None:
    """out[i] = insertion index of x2 (C-contiguous) element i in the 1-D x1 (values
    compared as ``ct``); ``sorter``: int64 1-D array of indices sorting x1."""
    n2 = x2.size
    if n2 == 0:
        return
    s1 = x1._strides[0] // x1._dtype.itemsize if x1.ndim else 0
    expr = (f"gp_searchsorted<{ctype(x1._dtype)}, {ctype(x2._dtype)}, {ctype(ct)}, "
            f"{'true' if right else 'false'}, {'false' if sorter is None else 'true'}>")
    sp = 0 if sorter is None else sorter._ptr
    ss = 0 if sorter is None else sorter._strides[0] // 8
    launch(FAMILY, expr, x1._device._id, -(-n2 // BLOCK),
           (_ptr(out._ptr), _ptr(x1._ptr), _i64(s1), _i64(x1._shape[0]), _ptr(x2._ptr), _i64(n2),
            _ptr(sp), _i64(ss)))


def instances() -> list[str]:
    """Registered "search" instances: nonzero (contiguous, ND=4, every dtype) and
    searchsorted of same-dtype real operands (float16 compared in float), both sides, with
    and without a sorter."""
    out = []
    for dt in _dt._supported_dtypes:
        t = ctype(dt)
        c = ctype(_dt._compute_dtype(dt))
        out += [f"gp_nonzero_count<{t}, true, 4, int>", f"gp_nonzero_write<{t}, true, 4, 4, int>",
                f"gp_nonzero_count<{t}, false, 4, int>", f"gp_nonzero_write<{t}, false, 4, 4, int>"]
        if dt.kind != "c":
            for side in ("false", "true"):
                for srt in ("false", "true"):
                    out.append(f"gp_searchsorted<{t}, {t}, {c}, {side}, {srt}>")
    return out
