"""The kernel instances gparray's foundation can launch, by family.

Used by the CPU-tier compile-all test and by ``python -m gparray.warmup``. This layer knows
only its own lists (copies, fills, creation, core comparisons); the layers above pass theirs
in through ``instances(extra)`` (gparray/warmup.py adds the engines' reduce, scan and search
instances and the elementwise function table's). Every dtype of ``CTYPES`` is covered, the
extension dtype float16 included (so ``astype`` between float32 and float16 is in the warm
cache).
"""
from __future__ import annotations

from .._core import _dtypes as _dt
from ._registry import CTYPES

ALL = list(CTYPES)
_ND = (4, 16, 64)
_IDX = ("int", "long long")


def _c(dt) -> str:
    return CTYPES[dt]


def copy_instances(strided: bool = True) -> list[str]:
    """astype/copy: unary identity for every (to, from) dtype pair."""
    out = []
    for to in ALL:
        for frm in ALL:
            head = f"op_identity, {_c(to)}, {_c(to)}, {_c(frm)}"
            out.append(f"gp_unary_contig<{head}>")
            if strided:
                out.append(f"gp_unary_strided<{head}, 4, int>")
    return out


def fill_instances() -> list[str]:
    """fill for every dtype, contiguous and strided."""
    out = []
    for dt in ALL:
        out.append(f"gp_fill_contig<{_c(dt)}>")
        for nd in _ND:
            for idx in _IDX:
                out.append(f"gp_fill_strided<{_c(dt)}, {nd}, {idx}>")
    return out


def creation_instances() -> list[str]:
    """arange, linspace, eye, tril/triu for the dtypes each accepts."""
    out = []
    for dt in ALL:
        if dt.kind in "iu":
            out.append(f"gp_arange<{_c(dt)}, long long>")
        if dt.kind in "iuf":
            out.append(f"gp_arange<{_c(dt)}, double>")
        if dt.kind == "f":
            out.append(f"gp_linspace<{_c(dt)}, double>")
            out.append(f"gp_linspace<{_c(dt)}, float>")
        out.append(f"gp_eye<{_c(dt)}>")
        out.append(f"gp_tri_mask<{_c(dt)}, true>")
        out.append(f"gp_tri_mask<{_c(dt)}, false>")
        if dt.kind in "fc" and dt.itemsize >= 4:   # the dtypes cholesky factors
            out += [f"gp_tri_copy<{_c(dt)}, true>", f"gp_tri_copy<{_c(dt)}, false>"]
    out += ["gp_linspace_complex<float, double>", "gp_linspace_complex<double, double>"]
    return out


def core_elementwise_instances() -> list[str]:
    """Comparisons and logical ops used by every conformance helper, same-dtype operands."""
    out = []
    for dt in ALL:
        c = _c(dt)
        ct = _c(_dt._compute_dtype(dt))   # float16 compares in float (see _ops)
        for op in ("equal", "not_equal"):
            out.append(f"gp_binary_contig<op_{op}, bool, {ct}, {c}, {c}>")
            out.append(f"gp_binary_strided<op_{op}, bool, {ct}, {c}, {c}, 4, int>")
            for sw in ("false", "true"):
                out.append(f"gp_scalar_contig<op_{op}, bool, {ct}, {c}, {sw}>")
        if dt.kind != "c":
            for op in ("less", "less_equal", "greater", "greater_equal"):
                out.append(f"gp_binary_contig<op_{op}, bool, {ct}, {c}, {c}>")
                out.append(f"gp_scalar_contig<op_{op}, bool, {ct}, {c}, false>")
        if dt.kind in "fc":
            for op in ("isnan", "isinf", "isfinite"):
                out.append(f"gp_unary_contig<op_{op}, bool, {ct}, {c}>")
    for op in ("logical_and", "logical_or", "logical_xor"):
        out.append(f"gp_binary_contig<op_{op}, bool, bool, bool, bool>")
    out.append("gp_unary_contig<op_logical_not, bool, bool, bool>")
    return out


def rows_instances() -> list[str]:
    """gp_binary_short_rows (rows.cu), the broadcasts of row statistics over short rows
    (``x - x.max(axis=1, keepdims=True)``, ``x == m``): arithmetic and comparisons of
    float32/float64 operands with int positions. Other combinations compile on first use."""
    out = []
    for dt in (_dt.float32, _dt.float64):
        c = _c(dt)
        for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
            out.append(f"gp_binary_short_rows<op_{op}, {c}, {c}, {c}, {c}, int>")
        for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            out.append(f"gp_binary_short_rows<op_{op}, bool, {c}, {c}, {c}, int>")
    return out


def instances(extra: dict | None = None) -> dict[str, list[str]]:
    """Every foundation instance, by family, plus the lists of ``extra`` (family -> name
    expressions, from the layers above), without repeats."""
    out = {
        "elementwise": copy_instances() + fill_instances() + core_elementwise_instances(),
        "creation": creation_instances(),
        "rows": rows_instances(),
    }
    for family, exprs in (extra or {}).items():
        out[family] = list(dict.fromkeys(out.get(family, []) + list(exprs)))
    return out
