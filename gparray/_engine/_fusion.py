"""Fused elementwise trees: the planner half of kernel fusion (gparray/_kernels/fused.cu,
include/gp/fusion.cuh).

A tree is made of ``Input`` leaves (an array operand, by position), ``Scalar`` leaves (a
Python scalar, by position, held in the tree's compute type) and ``Unary``/``Binary``
nodes, each carrying what its unfused launch would use: the functor, the result dtype and
the compute dtype (the Array layer's op rules decide those; this module only encodes them).
``instance(tree)`` is the kernel's name expression: the tree's structure and dtypes and the
layout class, never sizes or scalar values, so one compiled kernel serves every call of the
same expression shape. Leaves are numbered by first appearance in a left-to-right walk, so
the name does not depend on which buffers or values a call brings; an operand used twice is
one input (the caller passes the same ``Input`` object).

Not wired into the operations yet: nothing records trees or launches them (the recording of
pending nodes and their materialization, described in docs/architecture.md, build on this).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels._registry import ctype

MAX_INPUTS = 16       # array operands of one fused kernel (the parameter block stays small)
MAX_SCALARS = 16


@dataclass(frozen=True, eq=False)
class Input:
    """An array operand of element type ``dtype`` (identity matters: one object, one input)."""
    dtype: np.dtype


@dataclass(frozen=True, eq=False)
class Scalar:
    """A Python scalar operand, held as ``dtype`` (its value travels in the parameters)."""
    dtype: np.dtype


@dataclass(frozen=True)
class Unary:
    functor: str
    out: np.dtype
    ct: np.dtype
    a: object


@dataclass(frozen=True)
class Binary:
    functor: str
    out: np.dtype
    ct: np.dtype
    a: object
    b: object


def _dtype_of(node) -> np.dtype:
    return node.dtype if isinstance(node, (Input, Scalar)) else node.out


def leaves(tree) -> tuple[list, list]:
    """(inputs, scalars) of ``tree`` in first-appearance order, each once."""
    inputs, scalars, seen = [], [], set()

    def walk(n):
        if isinstance(n, (Input, Scalar)):
            if id(n) not in seen:
                seen.add(id(n))
                (inputs if isinstance(n, Input) else scalars).append(n)
        elif isinstance(n, Unary):
            walk(n.a)
        elif isinstance(n, Binary):
            walk(n.a)
            walk(n.b)
        else:
            raise TypeError(f"fusion: expected a tree node, got {type(n).__name__}")

    walk(tree)
    return inputs, scalars


def expression(tree, inputs=None, scalars=None) -> str:
    """The C++ type of ``tree`` (gp::fuse::In / Sc / Un / Bin)."""
    if inputs is None:
        inputs, scalars = leaves(tree)
    slot_in = {id(n): i for i, n in enumerate(inputs)}
    slot_sc = {id(n): i for i, n in enumerate(scalars)}

    def enc(n) -> str:
        if isinstance(n, Input):
            return f"gp::fuse::In<{slot_in[id(n)]}, {ctype(n.dtype)}>"
        if isinstance(n, Scalar):
            return f"gp::fuse::Sc<{slot_sc[id(n)]}, {ctype(n.dtype)}>"
        head = f"op_{n.functor}, {ctype(n.out)}, {ctype(n.ct)}"
        if isinstance(n, Unary):
            return f"gp::fuse::Un<{head}, {enc(n.a)}>"
        return f"gp::fuse::Bin<{head}, {enc(n.a)}, {enc(n.b)}>"

    return enc(tree)


def instance(tree, layout: str = "contig") -> str:
    """The name expression of the fused kernel computing ``tree`` for ``layout`` (the layout
    class: "contig", every operand C-contiguous and of the output's shape)."""
    if layout != "contig":
        raise ValueError(f"fusion: unknown layout class {layout!r}; expected 'contig'")
    inputs, scalars = leaves(tree)
    if not inputs:
        raise ValueError("fusion: a tree needs at least one array input")
    if len(inputs) > MAX_INPUTS or len(scalars) > MAX_SCALARS:
        raise ValueError(f"fusion: a tree takes at most {MAX_INPUTS} arrays and {MAX_SCALARS} scalars, "
                         f"got {len(inputs)} and {len(scalars)}")
    out = ctype(_dtype_of(tree))
    return f"gp_fused_contig<{out}, {expression(tree, inputs, scalars)}, {len(inputs)}, {len(scalars)}>"


def scalar_bytes(values, scalars) -> bytes:
    """The scalar slots of the parameters: each value as its leaf's dtype, 16 bytes a slot
    (the layout of gp::fuse::Slot)."""
    if len(values) != len(scalars):
        raise ValueError(f"fusion: {len(scalars)} scalar slots, got {len(values)} values")
    out = bytearray()
    for v, leaf in zip(values, scalars):
        b = np.asarray(v, dtype=leaf.dtype).tobytes()
        out += b + bytes(16 - len(b))
    return bytes(out)
