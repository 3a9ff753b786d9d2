"""The records of ``gparray.cuda.profile`` and their reports: ``ProfileRecord``, the summary
table and the JSON file. Pure Python (no CUDA): the CPU tier checks the formatting on
fabricated records."""
from __future__ import annotations

import os

KINDS = ("kernel", "copy", "library")
SORTS = ("total", "calls", "name")
_NAME_WIDTH = 72   # kernel names longer than this are cut in the table (records keep them whole)


class ProfileRecord:
    """One kernel launch, copy (memcpy or memset) or library call that gparray made while a
    profile was active.

    ``function``: the gparray function the user called (the outermost gparray frame on the
    stack: ``"sum"``, ``"matmul"``, ``"asarray"``, ``"__add__"``, ``"linalg.cholesky"``, ...);
    ``kind``: ``"kernel"``, ``"copy"`` or ``"library"``; ``family``: the kernel family
    (``"elementwise"``, ``"reduce"``, ..., ``"user:<module name>"``), ``"transfer"`` for copies
    or the library (``"cublas"``, ``"cusolver"``, ``"cufft"``); ``name``: the kernel's template
    instance expression (``gp_binary_contig<op_add, float, float, float, float>``), the copy
    (``"memcpy HtoD"``, ``"memcpy DtoH"``, ``"memcpy PtoP"``, ``"memset"``) or the library
    routine; ``grid`` and ``block``: (x, y, z) of a kernel launch, None otherwise; ``shared_mem``: dynamic shared
    memory bytes; ``nbytes``: bytes moved (exact for copies; an estimate for kernels and
    library calls, see docs/guide/profiling.md; None when unknown); ``device``,
    ``stream`` (the handle), ``thread`` (``threading.get_ident()``); ``time_ms``: GPU time
    between CUDA events recorded just before and after it on its stream (None until the
    profile has exited)."""

    __slots__ = ("function", "kind", "family", "name", "grid", "block", "shared_mem", "nbytes", "device",
                 "stream", "thread", "time_ms", "_ev")

    def __init__(self, function: str, kind: str, family: str, name: str, grid=None, block=None,
                 shared_mem: int = 0, nbytes=None, device: int = 0, stream: int = 0, thread: int = 0,
                 time_ms=None):
        self.function, self.kind, self.family, self.name = function, kind, family, name
        self.grid, self.block, self.shared_mem, self.nbytes = grid, block, shared_mem, nbytes
        self.device, self.stream, self.thread, self.time_ms = device, stream, thread, time_ms
        self._ev = None  # (start event, end event) until the profile reads them

    @property
    def kernel(self) -> str:
        """``"family: name"``, the key of the table's per-kernel section."""
        return f"{self.family}: {self.name}"

    def as_dict(self) -> dict:
        """The record as a dict of JSON types (grid and block as lists)."""
        return {"function": self.function, "kind": self.kind, "family": self.family, "name": self.name,
                "grid": None if self.grid is None else list(self.grid),
                "block": None if self.block is None else list(self.block),
                "shared_mem": self.shared_mem, "nbytes": self.nbytes, "device": self.device,
                "stream": self.stream, "thread": self.thread, "time_ms": self.time_ms}

    def __repr__(self):
        t = "pending" if self.time_ms is None else f"{self.time_ms:.4f} ms"
        return f"<ProfileRecord {self.function}: {self.kernel} ({self.kind}, {t})>"


def _check_records(records, where: str) -> list:
    if isinstance(records, (str, bytes)) or not hasattr(records, "__iter__"):
        raise TypeError(f"{where}: records must be an iterable of ProfileRecord, got {type(records).__name__}")
    out = list(records)
    for r in out:
        if not isinstance(r, ProfileRecord):
            raise TypeError(f"{where}: expected ProfileRecord items, got {type(r).__name__}")
    return out


def summarize(records, key: str) -> list:
    """[(group, calls, total ms, mean ms, GB/s or None)] of ``records`` grouped by
    ``key`` ("function" or "kernel"), unsorted. Times count the records whose GPU time is
    known; GB/s is the bytes of the timed records with a byte count over their time."""
    if key not in ("function", "kernel"):
        raise ValueError(f"summarize: key must be 'function' or 'kernel', got {key!r}")
    groups: dict = {}
    for r in _check_records(records, "summarize"):
        g = groups.setdefault(getattr(r, key), [0, 0.0, 0, 0, 0.0])  # calls, ms, timed, bytes, ms with bytes
        g[0] += 1
        if r.time_ms is not None:
            g[1] += r.time_ms
            g[2] += 1
            if r.nbytes is not None:
                g[3] += r.nbytes
                g[4] += r.time_ms
    out = []
    for name, (calls, ms, timed, nbytes, bms) in groups.items():
        mean = ms / timed if timed else None
        gbps = nbytes / (bms * 1e6) if bms > 0 else None
        out.append((name, calls, ms if timed else None, mean, gbps))
    return out


def _sorted(rows, sort: str):
    if sort == "calls":
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    if sort == "name":
        return sorted(rows, key=lambda r: r[0])
    return sorted(rows, key=lambda r: (-(r[2] or 0.0), r[0]))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _num(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _section(title: str, rows) -> list:
    names = [_cut(r[0], _NAME_WIDTH) for r in rows]
    w = max([len(title)] + [len(n) + 2 for n in names])
    lines = [f"{title:<{w}}  {'calls':>7}  {'total ms':>10}  {'mean ms':>10}  {'GB/s':>8}"]
    for n, (_, calls, total, mean, gbps) in zip(names, rows):
        lines.append(f"{'  ' + n:<{w}}  {calls:>7}  {_num(total, '.4f'):>10}  {_num(mean, '.4f'):>10}  "
                     f"{_num(gbps, '.1f'):>8}")
    return lines


def table(records, sort: str = "total") -> str:
    """The summary of ``records``: a header line (records, total GPU time, counts per kind),
    then one section per function and one per kernel (``family: name``; library routines and
    copies included), each row with calls, total and mean GPU time in ms and GB/s (bytes over
    GPU time, "-" when unknown). ``sort``: "total" (GPU time, descending; the default),
    "calls" (descending) or "name"."""
    if not isinstance(sort, str):
        raise TypeError(f"table: sort must be a str, got {type(sort).__name__}")
    if sort not in SORTS:
        raise ValueError(f"table: sort must be one of {', '.join(SORTS)}, got {sort!r}")
    recs = _check_records(records, "table")
    total = sum(r.time_ms for r in recs if r.time_ms is not None)
    pending = sum(1 for r in recs if r.time_ms is None)
    counts = ", ".join(f"{sum(1 for r in recs if r.kind == k)} {k}" for k in KINDS)
    head = f"gparray profile: {len(recs)} records ({counts}), {total:.4f} ms GPU time"
    if pending:
        head += f"; {pending} not timed yet"
    lines = [head]
    if recs:
        lines += [""] + _section("function", _sorted(summarize(recs, "function"), sort))
        lines += [""] + _section("kernel", _sorted(summarize(recs, "kernel"), sort))
    return "\n".join(lines)


def to_json(records, path) -> None:
    """Write ``records`` to the file ``path`` (str or os.PathLike) as JSON:
    ``{"format": "gparray-profile", "version": 1, "gparray": <version>, "records": [...]}``
    with each record's ``as_dict()``."""
    import json

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_json: path must be a str or os.PathLike, got {type(path).__name__}")
    from .._core._version import __version__

    doc = {"format": "gparray-profile", "version": 1, "gparray": __version__,
           "records": [r.as_dict() for r in _check_records(records, "to_json")]}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


__all__ = ["ProfileRecord", "summarize", "table", "to_json", "KINDS", "SORTS"]
