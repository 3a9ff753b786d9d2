"""Reduction engine (first strategy: one block per output element over N-d indexers)."""
from __future__ import annotations

import numpy as np

from . import _shapes
from ._launch import ctype, index_type, launch, nd_template, strided_params

FAMILY = "reduce"


def reduce(op: str, x, axes: tuple, out, ct) -> None:
    """out (C-contiguous, shape of the kept axes) = reduction ``op`` of ``x`` over ``axes``."""
    n_out = out.size
    if n_out == 0:
        return
    isz = x._dtype.itemsize
    est = tuple(s // isz for s in x._strides)
    kept = [i for i in range(x.ndim) if i not in axes]
    outer_shape = tuple(x._shape[i] for i in kept)
    inner_shape = tuple(x._shape[i] for i in axes)
    o_shape, o_st = _shapes.merge_dims(outer_shape, [tuple(est[i] for i in kept)])
    i_shape, i_st = _shapes.merge_dims(inner_shape, [tuple(est[i] for i in axes)])
    n_inner = _shapes.prod(inner_shape)
    nd = nd_template(max(len(o_shape), len(i_shape)))
    span = _shapes.span_elements(x._shape, est)
    idx = index_type(max(n_out, n_inner), [span])
    expr = f"gp_reduce_simple<op_{op}, {ctype(out._dtype)}, {ctype(ct)}, {ctype(x._dtype)}, {nd}, {idx}>"
    nparam = np.int32(n_inner) if idx == "int" else np.int64(n_inner)
    launch(FAMILY, expr, x._device._id, n_out,
           (np.uint64(out._ptr), np.uint64(x._ptr), strided_params(o_shape, o_st, nd),
            strided_params(i_shape, i_st, nd), nparam))
