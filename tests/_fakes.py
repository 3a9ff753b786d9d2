"""Test doubles shared by the CPU-tier engine tests."""
import numpy as np

from gparray._engine import _shapes


class _Dev:
    _id = 0


class _Base:
    ptr = 0


class FakeArray:
    """Enough of an Array for the engines: shape, byte strides, dtype, pointer, device."""

    def __init__(self, shape, dtype, strides=None, ptr=1 << 20):
        self._dtype = np.dtype(dtype)
        self._shape = tuple(shape)
        self._strides = tuple(strides) if strides is not None else \
            _shapes.c_strides(self._shape, self._dtype.itemsize)
        self._ptr = ptr
        self._buf, self._offset = _Base(), ptr
        self._device = _Dev()

    size = property(lambda self: _shapes.prod(self._shape))
    ndim = property(lambda self: len(self._shape))

    def _is_c_contig(self):
        return _shapes.is_c_contiguous(self._shape, self._strides, self._dtype.itemsize)

    def __getitem__(self, i):
        return FakeArray(self._shape[1:], self._dtype, self._strides[1:], self._ptr + i * self._strides[0])


def isolate_engines(monkeypatch):
    """Give the engines empty memos for one test (restored afterwards): a CPU-tier double
    must never meet a real bound Kernel, workspace Block or launch description that an
    earlier GPU test left in a memo, nor leave its fakes there for a later test."""
    from gparray._engine import _index, _reduce, _scan

    monkeypatch.setattr(_index, "_launches", {})
    monkeypatch.setattr(_index, "_err_blocks", {})
    monkeypatch.setattr(_index, "_pending", {})
    monkeypatch.setattr(_reduce, "_launches", {})
    monkeypatch.setattr(_scan, "_launches", {})
    monkeypatch.setattr(_scan, "_workspaces", {})


class BindRun:
    """Stand-ins for ``_launch.bind`` / ``_launch.run``: ``run`` checks that the call passes
    Python numbers at the bound kernel's variable positions and each constant run's tail in
    its place, rebuilds the full typed argument tuple and hands it to ``launch(family, expr,
    device_id, grid, args, shared_mem, block)``."""

    def __init__(self, launch):
        self.launch = launch

    def bind(self, family, expr, device_id, args, var):
        var = frozenset(var)
        tails = tuple(("tail", i) for i in range(len(args)) if i not in var and (i == 0 or i - 1 in var))
        assert tails, "bind: nothing left to bind"
        return (family, expr, tuple(args), var), tails

    def run(self, k, device_id, grid, vals, shared_mem=0, block=256):
        family, expr, args, var = k
        full, it = [], iter(vals)
        for i, a in enumerate(args):
            if i in var:
                v = next(it)
                assert type(v) in (int, float), (expr, i, v)
                full.append(type(a)(v))
            else:
                if i == 0 or i - 1 in var:
                    assert next(it) == ("tail", i), (expr, i)
                full.append(a)
        assert next(it, None) is None, (expr, "too many values")
        self.launch(family, expr, device_id, grid, tuple(full), shared_mem, block)
