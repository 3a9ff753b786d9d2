"""The "multigpu" rows of bench/bench.py (``--cases multigpu``): data moved between two GPUs,
and the same op on either (issue 19, "Several GPUs"). They need two visible CUDA devices;
with fewer the group prints why and gives no rows.

* ``x.to_device(1)`` of 1 GiB float32, and the way back: gparray's ``to_device``; CuPy's
  ``ndarray.copy()`` under ``cupy.cuda.Device(dst)`` (what CuPy does for an array of another
  device: one peer copy, queued on the destination's current stream); PyTorch's
  ``t.to("cuda:1")`` (queued on the source's current stream, both devices' streams joined);
  and the ceiling measured in the same run: one raw ``cudaMemcpyPeerAsync`` into a buffer
  allocated once. Peer access is enabled both ways first where the GPUs allow it (CuPy does
  so at its first peer copy anyway), so every library copies under the same setting.
  Every copy is timed alike, with bench_core's ``time_gpu`` (CUDA events) on the source
  device's current stream; inside the timed call the destination's current stream first
  waits for the source's and at the end the source's waits for the destination's, so the
  copy lies between the events whichever stream the library queued it on (two event
  records and two waits per call, the same for every library). GB/s: the bytes moved, once;
  %copy: percent of the cudaMemcpyPeerAsync GB/s (target >= 90%). Each library's result is
  compared with the raw copy once, outside the timing.
* the same move with gparray's staged path forced (``gparray._engine._transfer._peer_mode =
  "staged"``, when gparray has it): what GPUs that cannot reach each other get.
* ``a + b`` on 2^28 float32 on device 0 and on device 1, each with that device current and
  timed with its events; the device-1 row's ratio is gparray's device 1 / device 0 time
  (target <= 1.03). A third row runs device 1's ``a + b`` while device 0 is current (the
  library switches devices itself; events on device 1). CuPy is n/a there: it launches on
  the current device and reads the operands over peer access, off device 1's stream.
"""
from __future__ import annotations

import contextlib

GROUP = "multigpu"
MOVE_N = 1 << 28            # 1 GiB of float32
ADD_N = 1 << 28

NAMES = [("x.to_device(1) 1 GiB f32", "to_device_0to1_1GiB"),
         ("x.to_device(0) 1 GiB f32, from cuda:1", "to_device_1to0_1GiB"),
         ("x.to_device(1) 1 GiB f32, staged (forced)", "to_device_staged_1GiB"),
         ("a + b 2^28 f32 on cuda:0", "add_cuda0"),
         ("a + b 2^28 f32 on cuda:1", "add_cuda1"),
         ("a + b 2^28 f32 on cuda:1, cuda:0 current", "add_cuda1_from0")]
TARGETS = [(("pct_copy", 90.0), ">= 90% of cudaMemcpyPeer"), (("pct_copy", 90.0), ">= 90% of cudaMemcpyPeer"),
           (None, "(path without peer access)"), (None, ""), (("ratio", 1.03), "cuda:1/cuda:0 <= 1.03"),
           (None, "(ratio: its time / cuda:0's)")]


def listing() -> list:
    """(name, key, group, target text) of every row, for ``bench.py --list``."""
    return [(n, k, GROUP, t[1]) for (n, k), t in zip(NAMES, TARGETS)]


@contextlib.contextmanager
def _on(b, dev: int):
    """Device ``dev`` current for CuPy (and gparray, which follows it) and PyTorch."""
    with b.cp.cuda.Device(dev):
        if b.torch is not None:
            with b.torch.cuda.device(dev):
                yield
        else:
            yield


def _row(i: int, nbytes: int) -> dict:
    name, key = NAMES[i]
    return {"case": name, "key": key, "unit": "ms", "bytes": nbytes, "target": TARGETS[i][1], "status": {},
            "times": {}, "all_times": {}, "group": GROUP}


def _enable_peer(cp, log) -> dict:
    """cudaDeviceEnablePeerAccess both ways where the GPUs allow it; {(i, j): can access}."""
    rt = cp.cuda.runtime
    can = {}
    for i, j in ((0, 1), (1, 0)):
        can[(i, j)] = bool(rt.deviceCanAccessPeer(i, j))
        if can[(i, j)]:
            with cp.cuda.Device(i):
                try:
                    rt.deviceEnablePeerAccess(j)
                except rt.CUDARuntimeError as exc:
                    if getattr(exc, "status", None) != 704:      # cudaErrorPeerAccessAlreadyEnabled
                        log(f"[multigpu] enabling peer access {i}->{j}: {exc}")
    return can


class _Join:
    """The two orders around a timed copy: the destination's current stream waits for the
    source's (where the start event is), and at the end the source's waits for the
    destination's (where the end event goes). One reusable event per device; the stream
    handles are ``lib``'s current streams (PyTorch's may differ from CuPy's)."""

    def __init__(self, b, lib: str, src: int, dst: int):
        cp = b.cp
        self.cp, self.rt = cp, cp.cuda.runtime
        self.side = {}
        for d in (src, dst):
            with cp.cuda.Device(d):
                ev = cp.cuda.Event(block=False, disable_timing=True)
            h = b.torch.cuda.current_stream(d).cuda_stream if lib == "torch" else cp.cuda.get_current_stream(d).ptr
            self.side[d] = (ev, int(h))
        self.src, self.dst = src, dst

    def _order(self, producer: int, waiter: int) -> None:
        ev, hp = self.side[producer]
        hw = self.side[waiter][1]
        with self.cp.cuda.Device(producer):      # handle 0: the legacy stream of the current device
            self.rt.eventRecord(ev.ptr, hp)
        with self.cp.cuda.Device(waiter):
            self.rt.streamWaitEvent(hw, ev.ptr)

    def wrap(self, op):
        def fn():
            self._order(self.src, self.dst)
            y = op()
            self._order(self.dst, self.src)
            return y
        return fn


def _same(b, ref, y, dst: int) -> bool:
    """``y`` (any library's array on ``dst``) equals CuPy array ``ref`` there, bit for bit."""
    cp = b.cp
    with cp.cuda.Device(dst):
        v = y if isinstance(y, cp.ndarray) else cp.from_dlpack(y)
        ok = v.shape == ref.shape and bool(cp.array_equal(v.view(cp.int32), ref.view(cp.int32)))
        cp.cuda.Device(dst).synchronize()
    return ok


def _move_ops(b, lib: str, base, src: int, dst: int):
    """``lib``'s move of CuPy array ``base`` (on ``src``) to ``dst``, as a callable."""
    cp = b.cp
    if lib == "gparray":
        x = b.convert("gparray", base)
        return lambda: x.to_device(dst)
    if lib == "cupy":
        def cupy_move():
            with cp.cuda.Device(dst):
                return base.copy()
        return cupy_move
    t = b.convert("torch", base)
    return lambda: t.to(f"cuda:{dst}")


def _free(b, *devs) -> None:
    for d in devs:
        with _on(b, d):
            b.free_memory()


def _time_move(b, lib, op, src, dst, warmup, repeat):
    """bench_core.time_gpu of ``op`` between events of ``src``, with the destination joined."""
    with _on(b, src), b.native_allocator(lib):
        return b.time_gpu(lib, _Join(b, lib, src, dst).wrap(op), warmup, repeat)


def _move_rows(b, want, libs, warmup, repeat, log, peer) -> list:
    cp = b.cp
    rt = cp.cuda.runtime
    nbytes = 4 * MOVE_N
    out = []
    staged_ok = False
    if 2 in want and b.xp is not None:
        from gparray._engine import _transfer
        staged_ok = hasattr(_transfer, "_peer_mode")
    for i, (src, dst) in ((0, (0, 1)), (1, (1, 0))):
        if i not in want and not (i == 0 and 2 in want):
            continue
        with _on(b, src):
            base = b.randn(MOVE_N, seed=31 + src)
        with _on(b, dst), b.native_allocator("cupy"):
            ref = cp.empty(MOVE_N, dtype=cp.float32)

        def peer_copy():
            rt.memcpyPeerAsync(ref.data.ptr, dst, base.data.ptr, src, nbytes, cp.cuda.get_current_stream(src).ptr)
        try:
            peer_ms, _ = _time_move(b, "cupy", peer_copy, src, dst, warmup, repeat)
        except Exception as exc:
            log(f"[multigpu] cudaMemcpyPeerAsync {src}->{dst} failed: {b._short(exc)}")
            return out
        ceiling = nbytes / peer_ms / 1e6
        log(f"[multigpu] cudaMemcpyPeerAsync {src}->{dst}: {peer_ms:.3f} ms, {ceiling:.1f} GB/s "
            f"(peer access {peer[(src, dst)]})")
        todo = [(i, libs)] if i in want else []
        if i == 0 and 2 in want:
            todo.append((2, ["gparray"]))
        for r, row_libs in todo:
            row = _row(r, nbytes)
            row.update(ceiling_GBps=ceiling, memcpy_peer_ms=peer_ms, peer_access=peer[(src, dst)])
            row["note"] = (f"cudaMemcpyPeerAsync {src}->{dst} {peer_ms:.3f} ms = {ceiling:.1f} GB/s (the 100%); "
                           f"peer access {'on' if peer[(src, dst)] else 'not possible'}")
            for lib in row_libs:
                if b.module_of(lib) is None:
                    row["status"][lib] = f"n/a ({b._import_errors.get(lib, 'not imported')})"
                    continue
                if r == 2 and not staged_ok:
                    row["status"][lib] = "n/a (gparray._engine._transfer has no _peer_mode)"
                    continue
                _time_lib(b, row, lib, base, ref, src, dst, warmup, repeat, log, staged=(r == 2))
                _free(b, src, dst)
            b.finish_row(row, TARGETS[r][0], ceiling)
            row["pct_of_memcpy_peer"] = {k: 100.0 * v / ceiling for k, v in row.get("GBps", {}).items()}
            log(f"[{row['case']}] " + ", ".join(f"{lib} {b._cell(row, lib)}" for lib in row_libs) + "  (% of peer: " +
                ", ".join(f"{k} {v:.0f}%" for k, v in row["pct_of_memcpy_peer"].items()) + ")")
            out.append(row)
        base = ref = None
        _free(b, src, dst)
    out.sort(key=lambda r: [k for _, k in NAMES].index(r["key"]))
    return out


def _time_lib(b, row, lib, base, ref, src, dst, warmup, repeat, log, staged=False) -> None:
    """Time ``lib``'s move into ``row`` (after one checked call); errors go to the row."""
    mode = None
    if staged:
        from gparray._engine import _transfer
        mode, _transfer._peer_mode = _transfer._peer_mode, "staged"
    try:
        op = _move_ops(b, lib, base, src, dst)
        with _on(b, src), b.native_allocator(lib):
            y = op()
        if not _same(b, ref, y, dst):
            raise AssertionError(f"the copy on cuda:{dst} differs from cudaMemcpyPeerAsync's")
        del y
        ms, times = _time_move(b, lib, op, src, dst, warmup, repeat)
        row["times"][lib], row["status"][lib] = ms, "ok"
        row["all_times"][lib] = [round(t, 5) for t in times]
    except Exception as exc:
        missing = lib == "gparray" and b._is_missing(exc)
        row["status"][lib] = f"n/a ({b._short(exc)})" if missing else f"error: {b._short(exc)}"
        log(f"[{row['case']}] {lib}: {row['status'][lib]}")
    finally:
        if staged:
            from gparray._engine import _transfer
            _transfer._peer_mode = mode


def _add_rows(b, want, libs, warmup, repeat, log) -> list:
    if 4 in want or 5 in want:
        want = want | {3}                 # the device-0 time both ratios divide by
    data = {}
    for d in (0, 1):
        if d == 1 or 3 in want:
            with _on(b, d):
                data[d] = {"a": b.randn(ADD_N, seed=41), "b": b.randn(ADD_N, seed=42)}
    rows = {}
    for r, dev, cur in ((3, 0, 0), (4, 1, 1), (5, 1, 0)):
        if r not in want:
            continue
        row = _row(r, 3 * 4 * ADD_N)
        for lib in libs:
            if b.module_of(lib) is None:
                row["status"][lib] = f"n/a ({b._import_errors.get(lib, 'not imported')})"
                continue
            if r == 5 and lib == "cupy":
                row["status"][lib] = "n/a (CuPy runs it on the current device, over peer access)"
                continue
            try:
                conv = {k: b.convert(lib, v) for k, v in data[dev].items()}
                x, y = conv["a"], conv["b"]
                if cur == dev:
                    op = (lambda: x + y)
                else:
                    def op():
                        with _on(b, cur):
                            return x + y
                with _on(b, dev), b.native_allocator(lib):
                    ms, times = b.time_gpu(lib, op, warmup, repeat)
                row["times"][lib], row["status"][lib] = ms, "ok"
                row["all_times"][lib] = [round(t, 5) for t in times]
            except Exception as exc:
                row["status"][lib] = f"error: {b._short(exc)}"
                log(f"[{row['case']}] {lib}: {row['status'][lib]}")
            finally:
                conv = x = y = op = None
                _free(b, 0, 1)
        rows[r] = row
    base = rows.get(3, {}).get("times", {}).get("gparray")
    for r in (4, 5):
        if r in rows and base and rows[r]["times"].get("gparray"):
            rows[r]["ratio"] = rows[r]["times"]["gparray"] / base
            rows[r]["note"] = (f"gparray {rows[r]['times']['gparray']:.3f} ms on cuda:1 vs {base:.3f} ms on cuda:0: "
                               f"{rows[r]['ratio']:.3f}x")
    data = None
    _free(b, 0, 1)
    out = []
    for r, row in sorted(rows.items()):
        if r in want:
            b.finish_row(row, TARGETS[r][0], None)
            log(f"[{row['case']}] " + ", ".join(f"{lib} {b._cell(row, lib)}" for lib in libs) +
                (f"  (cuda:1/cuda:0 {row['ratio']:.3f})" if row.get("ratio") else ""))
            out.append(row)
    return out


def rows(b, libs, warmup, repeat, log, wanted) -> list:
    """The finished rows of the group that ``wanted(name, key, group)`` selects; ``b``: the
    bench_core module (its libraries, timing and row helpers)."""
    want = {i for i, (name, key) in enumerate(NAMES) if wanted(name, key, GROUP)}
    if not want:
        return []
    cp = b.cp
    try:
        ndev = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        ndev = 0
        log(f"[multigpu] {b._short(exc)}")
    if ndev < 2:
        log(f"[multigpu] skipped: these rows need two CUDA devices ({ndev} visible)")
        return []
    names = []
    for d in (0, 1):
        name = cp.cuda.runtime.getDeviceProperties(d)["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    peer = _enable_peer(cp, log)
    log(f"[multigpu] cuda:0 {names[0]}, cuda:1 {names[1]}; can access peer: 0->1 {peer[(0, 1)]}, "
        f"1->0 {peer[(1, 0)]}")
    out = []
    if want & {0, 1, 2}:
        out += _move_rows(b, want, libs, warmup, repeat, log, peer)
    if want & {3, 4, 5}:
        out += _add_rows(b, want, libs, warmup, repeat, log)
    return out


__all__ = ["GROUP", "NAMES", "TARGETS", "listing", "rows"]
