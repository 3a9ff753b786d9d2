"""The host transfer rows of bench/bench.py (``--cases transfers``): 256 MiB each way between
the GPU and pageable or pinned host memory, wall-clock per call, against the pinned
cudaMemcpy bandwidth of the same direction measured in the same run."""
from __future__ import annotations

import bench_core as core
from bench_core import (N26, NotAvailable, _cell, _import_errors, _is_missing, _short, _wall_ms,
    convert, finish_row, free_memory, module_of, native_allocator, randn)


TRANSFER_N = N26                     # 2^26 float32 = 256 MiB
TRANSFER_ROWS = (
    ("asarray 256 MiB f32 pageable host->device", "h2d_pageable_256M"),
    ("from_dlpack(x, device=cpu) 256 MiB f32 device->pageable", "d2h_pageable_256M"),
    ("asarray 256 MiB f32 pinned host->device", "h2d_pinned_256M"),
    ("to_host(x, out=pinned) 256 MiB f32 device->pinned", "d2h_pinned_256M"),
)


def _pinned_host(n):
    """A pinned NumPy float32 array of ``n`` elements (gparray's pinned_empty when gparray is
    there, else CuPy's pinned memory); every library's pinned rows read or write this one."""
    fn = getattr(getattr(core.xp, "cuda", None), "pinned_empty", None) if core.xp is not None else None
    if callable(fn):
        return fn((n,), core.xp.float32)
    import numpy
    return numpy.frombuffer(core.cp.cuda.alloc_pinned_memory(4 * n), numpy.float32, n)


def _transfer_ops(lib, host, pinned, dev):
    """(h2d_pageable, d2h_pageable, h2d_pinned, d2h_pinned) callables of ``lib``."""
    import numpy
    if lib == "gparray":
        to_host = getattr(core.xp.cuda, "to_host", None)
        if to_host is None:
            raise NotAvailable("gparray.cuda.to_host")
        return (lambda: core.xp.asarray(host), lambda: numpy.from_dlpack(dev, device="cpu"),
                lambda: core.xp.asarray(pinned), lambda: to_host(dev, out=pinned))
    if lib == "cupy":
        return (lambda: core.cp.asarray(host), lambda: dev.get(),
                lambda: core.cp.asarray(pinned), lambda: dev.get(out=pinned))
    th, tp = core.torch.from_numpy(host), core.torch.from_numpy(pinned)
    return (lambda: th.to("cuda"), lambda: dev.cpu().numpy(),
            lambda: tp.to("cuda"), lambda: tp.copy_(dev))


def _pinned_memcpy_ceiling(pinned, warmup, repeat):
    """GB/s of one cudaMemcpyAsync of the whole pinned buffer each way (and a stream
    synchronize), timed like the rows: the transfers' ceiling."""
    nbytes = pinned.nbytes
    d = core.cp.empty(pinned.shape, dtype=core.cp.float32)
    rt, src = core.cp.cuda.runtime, pinned.ctypes.data
    s = core.cp.cuda.get_current_stream()

    def h2d():
        rt.memcpyAsync(d.data.ptr, src, nbytes, rt.memcpyHostToDevice, s.ptr)
        s.synchronize()

    def d2h():
        rt.memcpyAsync(src, d.data.ptr, nbytes, rt.memcpyDeviceToHost, s.ptr)
        s.synchronize()
    with native_allocator("cupy"):
        out = {"h2d": nbytes / _wall_ms(h2d, warmup, repeat)[0] / 1e6,
               "d2h": nbytes / _wall_ms(d2h, warmup, repeat)[0] / 1e6}
    del d
    return out


def transfer_rows(libs, warmup, repeat, log, wanted):
    """The four 256 MiB transfer rows, gparray vs CuPy vs PyTorch: wall-clock per call (with
    the synchronize), GB/s of the 256 MiB moved, and %copy = percent of the pinned
    cudaMemcpy bandwidth of the same direction measured in this run (the ceiling).
    Targets (TARGETS.md): pageable <= 1.0x best; pinned >= 90% of pinned cudaMemcpy."""
    keep = [(name, key) for name, key in TRANSFER_ROWS if wanted(name, key, "transfers")]
    if not keep:
        return []
    import numpy
    host = numpy.random.default_rng(21).standard_normal(TRANSFER_N, dtype=numpy.float32)
    try:
        pinned = _pinned_host(TRANSFER_N)
        pinned[...] = host
        ceil = _pinned_memcpy_ceiling(pinned, warmup, repeat)
    except Exception as exc:
        log(f"[transfers] pinned memory / ceiling failed: {_short(exc)}")
        return []
    log(f"[transfers] pinned cudaMemcpy ceiling: H2D {ceil['h2d']:.1f} GB/s, D2H {ceil['d2h']:.1f} GB/s")
    base = randn(TRANSFER_N, seed=22)
    rows = {key: {"case": name, "key": key, "unit": "ms", "bytes": 4 * TRANSFER_N, "status": {},
                  "times": {}, "all_times": {}, "group": "transfers",
                  "ceiling_GBps": ceil["d2h" if "d2h" in key else "h2d"]}
            for name, key in keep}
    for lib in libs:
        if module_of(lib) is None:
            for row in rows.values():
                row["status"][lib] = f"n/a ({_import_errors.get(lib, 'not imported')})"
            continue
        dev = None
        try:
            dev = convert(lib, base)
            fns = dict(zip((k for _, k in TRANSFER_ROWS), _transfer_ops(lib, host, pinned, dev)))
        except Exception as exc:
            for row in rows.values():
                row["status"][lib] = f"error: {_short(exc)}"
            continue
        for key, row in rows.items():
            try:
                with native_allocator(lib):
                    ms, times = _wall_ms(fns[key], warmup, repeat)
                row["times"][lib], row["status"][lib] = ms, "ok"
                row["all_times"][lib] = [round(t, 4) for t in times]
            except Exception as exc:
                missing = lib == "gparray" and _is_missing(exc)
                row["status"][lib] = f"n/a ({_short(exc)})" if missing else f"error: {_short(exc)}"
                log(f"[{row['case']}] {lib}: {row['status'][lib]}")
        dev = fns = None
        free_memory()
    out = []
    for key, row in rows.items():
        target = (("pct_copy", 90.0, ">= 90% of pinned cudaMemcpy") if "pinned" in key
                  else ("best", 1.0, "<= 1.0x best"))
        row["target"] = target[2]
        finish_row(row, target, row["ceiling_GBps"])
        row["pct_of_pinned_memcpy"] = {k: 100.0 * v / row["ceiling_GBps"] for k, v in row.get("GBps", {}).items()}
        log(f"[{row['case']}] " + ", ".join(f"{lib} {_cell(row, lib)}" for lib in libs) +
            "  (% of pinned cudaMemcpy: " +
            ", ".join(f"{k} {v:.0f}%" for k, v in row["pct_of_pinned_memcpy"].items()) + ")")
        out.append(row)
    return out
