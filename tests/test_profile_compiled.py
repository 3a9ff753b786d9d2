"""CPU tier: gparray.cuda.profile and the compiled elementwise fast path, which records its
own launches while a profile is active on the calling thread (gparray/_native/_claunch_prof.c):
real Fast objects over the stand-in driver, the fake CUDA of tests/_profile_fakes.py."""
import threading
import types

import numpy as np
import pytest

import gparray as xp
from gparray._array import _ops
from gparray._array import Array
from gparray._engine import _launch
from gparray._kernels import _launcher
from gparray.cuda import _profile
from gparray.cuda._profile_report import ProfileRecord

from _profile_fakes import (DEV, KNAME, NAMESPACE, FakeKernel, _Buf, _gp_module, _layout, f32, fake)
                            # noqa: F401

_claunch = _launcher._claunch
needs_claunch = pytest.mark.skipif(_claunch is None, reason="C extension gparray._native._claunch not built")


class _Stream:
    ptr = 0x5000


class _Pool:
    def malloc(self, nbytes, stream):
        return _Buf(0x100000)


@pytest.fixture
def compiled(fake, monkeypatch):
    """The compiled fast path configured with fake streams over the stub driver: (log, fake
    CUDA, make_op(name=KNAME, label="__add__") -> (Fast, fallback calls)). Restored after."""
    cu, _ = fake
    log = []
    was = _ops._configured   # a GPU session's worker may have configured the real path
    monkeypatch.setattr(_ops, "_configured", True)
    _claunch.configure(Array, lambda dev: _Stream())
    _claunch._stub_driver(log)
    # one CUDA context for every thread: on a GPU machine the real cuCtxGetCurrent answers
    # NULL in a new host thread, and the table's entries are kept per context
    _claunch._stub_context(0xC0)

    def err(status):
        raise RuntimeError(f"driver status {status}")

    _claunch.set_hooks(err, lambda status: None)

    def make_op(name=KNAME, label="__add__"):
        st, kinds, size, offs = _launcher.layout((np.uint64(0),) * 3 + (np.int64(0),))
        t = _claunch.Table()
        t.add(f32, f32, 0, DEV, 4, 4, 0, 0, _claunch.Launch(0xF00D, st.format, size, offs), f32, 4, 1024,
              _launch.BLOCK, _Pool(), name)
        fallback = []
        return _claunch.Fast(t, lambda *a: fallback.append(a) or "python", 2, label=label), fallback

    try:
        yield log, cu, make_op
    finally:
        _claunch._stub_context(None)
        _claunch._stub_driver(None)
        _claunch.set_hooks(_launcher._driver_error, _launcher._bind_context)
        if was:
            from gparray._core import _backend

            _claunch.configure(Array, _backend.cupy().cuda.get_current_stream)
        else:
            _claunch.configure(None, None)
        assert _claunch.profile_threads() == 0


def _arr(ptr, n=8):
    return Array._new(_Buf(ptr), 0, (n,), (4,), f32, DEV)


@needs_claunch
def test_the_compiled_path_records_while_profiling(compiled):
    log, cu, make_op = compiled
    op, fallback = make_op()
    x, y = _arr(0x7000), _arr(0x8000)
    assert type(op(x, y)) is Array and len(log) == 1 and cu.created == []     # no profile: no events
    with xp.cuda.profile() as prof:
        assert _claunch.profile_threads() == 1
        assert type(op(x, y)) is Array and type(op(x, x)) is Array           # served in C
        assert len(log) == 3 and fallback == [] and _ops._configured is True
        (r, r2) = prof.records
        assert r.time_ms is None and type(r) is ProfileRecord
    assert _claunch.profile_threads() == 0
    assert (r.function, r.kind, r.family, r.name) == ("__add__", "kernel", "elementwise", KNAME.split(": ")[1])
    assert (r.grid, r.block, r.shared_mem, r.device, r.stream) == ((1, 1, 1), (256, 1, 1), 0, 0, 0x5000)
    assert r.nbytes == 3 * 32 and r2.nbytes == 2 * 32      # x seen twice counts once
    assert r.time_ms == 1.0 and r.thread == threading.get_ident()
    assert sorted(cu.released) == [1, 2, 3, 4] and sorted(cu.synced) == [4]
    assert "__add__" in prof.table()
    assert type(op(x, y)) is Array and len(prof.records) == 2   # compiled, unrecorded, after the exit


@needs_claunch
def test_the_compiled_path_names_the_outermost_gparray_function(compiled):
    log, cu, make_op = compiled
    op, fallback = make_op(label="add")
    ns = _gp_module("gparray._fake_math", "def mean_of(x, y):\n    return op(x, y)\n", op=op)
    x, y = _arr(0x7000), _arr(0x8000)
    with xp.cuda.profile() as prof:
        op(x, y)
        ns["mean_of"](x, y)
    assert [r.function for r in prof.records] == ["add", "mean_of"] and fallback == []


@needs_claunch
def test_the_compiled_path_shares_records_with_nested_profiles_and_python_launches(compiled):
    log, cu, make_op = compiled
    op, _ = make_op()
    x, y = _arr(0x7000), _arr(0x8000)
    k = FakeKernel()
    with xp.cuda.profile() as outer:
        op(x, y)
        with xp.cuda.profile() as inner:
            NAMESPACE["my_function"](k, _layout((10,), 0x1000), None)
            op(x, y)
        op(x, y)
    assert [r.function for r in outer.records] == ["__add__", "my_function", "__add__", "__add__"]
    assert outer.records[1:3] == inner.records and all(r.time_ms == 1.0 for r in outer.records)


@needs_claunch
def test_the_compiled_path_leaves_nvtx_nameless_entries_and_failures_to_python(compiled, monkeypatch):
    log, cu, make_op = compiled
    x, y = _arr(0x7000), _arr(0x8000)
    monkeypatch.setattr(_profile, "_nvtx", types.SimpleNamespace(push_range=lambda message, domain: None,
                                                                 pop_range=lambda domain: None))
    op, fallback = make_op()
    with xp.cuda.profile(nvtx=True):        # NVTX ranges: the Python path
        assert op(x, y) == "python"
        with xp.cuda.profile():             # still wanted by the outer profile
            assert op(x, y) == "python"
    assert len(fallback) == 2 and len(log) == 0
    nameless, fallback = make_op(name=None)
    with xp.cuda.profile() as prof:
        assert nameless(x, y) == "python" and op(x, y) is not None
        _claunch._stub_driver(log, 700)     # the next launch fails: no record, its events back
        with pytest.raises(RuntimeError, match="driver status 700"):
            op(x, y)
        _claunch._stub_driver(log)
    assert len(prof.records) == 1 and len(fallback) == 1
    assert sorted(cu.released) == sorted(cu.created) and len(cu.created) == 4


@needs_claunch
def test_the_compiled_path_serves_other_threads_unrecorded(compiled):
    log, cu, make_op = compiled
    op, fallback = make_op()
    x, y = _arr(0x7000), _arr(0x8000)
    out = []
    with xp.cuda.profile() as prof:
        t = threading.Thread(target=lambda: out.append(op(x, y)))
        t.start()
        t.join()
    assert type(out[0]) is Array and len(log) == 1 and prof.records == [] and fallback == []


def test_env_nvtx_turns_the_compiled_path_off_until_the_last_exit(fake, monkeypatch):
    calls = []
    monkeypatch.setattr(_profile, "_bypass_fast_path", lambda: calls.append("off") or "was")
    monkeypatch.setattr(_profile, "_restore_fast_path", lambda was: calls.append(("on", was)))
    monkeypatch.setattr(_profile, "_nvtx", types.SimpleNamespace(push_range=lambda message, domain: None,
                                                                 pop_range=lambda domain: None))
    monkeypatch.setattr(_profile, "_active", 0)
    with xp.cuda.profile():
        assert calls == []                  # a profile leaves the compiled path on
    assert calls == []
    try:
        assert _profile.enable_env_nvtx() is True
        assert calls == ["off"]
    finally:
        _profile._nvtx_env = False
        _profile._deactivate()
    assert calls == ["off", ("on", "was")]
