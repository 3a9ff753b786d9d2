"""CPU tier: the debugging modes of issue 11 (GPARRAY_NO_CACHING, GPARRAY_LAUNCH_BLOCKING) and
the error after a kernel fault, over fake allocators and fake launches."""
import pytest

from gparray._core import _faults
from gparray._memory._pool import CachingPool, OutOfMemoryError, no_caching_from_env


class _Dev:
    """Fake raw allocator: distinct addresses, exact sizes, every call recorded."""

    def __init__(self, capacity=1 << 40):
        self.live, self.log, self.next, self.capacity = {}, [], 1 << 20, capacity

    def malloc(self, n):
        if sum(self.live.values()) + n > self.capacity:
            raise MemoryError("fake device full")
        p = self.next
        self.next += 1 << 24
        self.live[p] = n
        self.log.append(("malloc", n))
        return p

    def free(self, p):
        self.log.append(("free", self.live.pop(p)))


def _pool(dev, **kw):
    return CachingPool(dev.malloc, dev.free, synchronize=lambda: dev.log.append(("sync",)),
                       no_caching=True, **kw)


def test_no_caching_gives_every_block_its_own_exact_allocation_freed_at_once():
    dev = _Dev()
    pool = _pool(dev)
    a, b = pool.malloc(1000), pool.malloc(1000)
    assert dev.live == {a.ptr: 1000, b.ptr: 1000} and a.ptr != b.ptr
    assert a.size == 1000   # exact: a checker sees the first byte past the array
    a.free()
    assert dev.log[-2:] == [("sync",), ("free", 1000)]   # synchronized, then freed
    del b
    assert dev.live == {}
    c = pool.malloc(1000)                                 # nothing is handed out again
    assert ("malloc", 1000) == dev.log[-1]
    s = pool.stats()
    assert s["reserved_bytes.current"] == s["allocated_bytes.current"] == 1000
    c.free()
    assert pool.stats()["reserved_bytes.current"] == 0 and pool.empty_cache() == 0


def test_no_caching_queue_is_not_an_exact_list():
    # the compiled Block and fast path hand a deferred chunk back only from an exact list
    pool = _pool(_Dev())
    assert type(pool._deferred) is not list and isinstance(pool._deferred, list)


def test_no_caching_out_of_memory_and_limit():
    dev = _Dev(capacity=4096)
    pool = _pool(dev)
    a = pool.malloc(3000)
    with pytest.raises(OutOfMemoryError) as info:
        pool.malloc(2000)
    assert info.value.requested == 2000 and pool.stats()["num_ooms"] == 1
    a.free()
    pool.malloc(2000).free()
    pool.set_limit(1000)
    with pytest.raises(OutOfMemoryError, match="limit"):
        pool.malloc(1001)


@pytest.mark.parametrize("value,on", [("1", True), ("yes", True), ("0", False), ("", False), ("off", False)])
def test_no_caching_env(monkeypatch, value, on):
    monkeypatch.setenv("GPARRAY_NO_CACHING", value)
    assert no_caching_from_env() is on
    monkeypatch.setenv("GPARRAY_LAUNCH_BLOCKING", value)
    assert _faults.blocking() is on


class _CudaError(Exception):
    def __init__(self, status):
        super().__init__(f"cudaError {status}")
        self.status = status


def test_a_lost_context_becomes_a_kernel_fault_error_that_says_how_to_find_the_kernel():
    with pytest.raises(_faults.KernelFaultError) as info:
        _faults.check(_CudaError(700), "to host")
    msg = str(info.value)
    assert msg.startswith("to host: CUDA reported an illegal memory access (error 700) from an earlier")
    assert "GPARRAY_LAUNCH_BLOCKING=1" in msg and "GPARRAY_NO_CACHING=1" in msg and "restart" in msg
    assert info.value.status == 700
    _faults.check(_CudaError(2), "alloc")          # out of memory: not a fault, the caller re-raises
    _faults.check(ValueError("x"), "alloc")


def test_the_checked_context_turns_only_lost_contexts_into_kernel_faults(monkeypatch):
    with pytest.raises(_faults.KernelFaultError) as info:
        with _faults.checked("to_device"):
            raise _CudaError(716)
    assert str(info.value).startswith("to_device: CUDA reported a misaligned address (error 716)")
    assert isinstance(info.value.__cause__, _CudaError)
    for exc in (_CudaError(2), MemoryError("full"), ValueError("x")):   # others pass unchanged
        with pytest.raises(type(exc)) as other:
            with _faults.checked("alloc"):
                raise exc
        assert other.value is exc
    # the launch form names the calling function, found only when an error is met
    asked = []
    monkeypatch.setattr(_faults, "caller", lambda: asked.append(1) or "gparray.exp")
    with _faults.launch_checked:
        pass
    assert asked == []
    with pytest.raises(_faults.KernelFaultError, match=r"^gparray\.exp: kernel launch: CUDA reported"):
        with _faults.launch_checked:
            raise _CudaError(700)
    assert asked == [1]


def test_checked_launch_names_the_kernel_the_grid_and_the_gparray_function(monkeypatch):
    def bad(grid, block, args, smem, stream):
        raise _CudaError(719)

    run = _faults.checked_launch(bad, "reduce: gp_reduce_inner<R, 32, true, 8, 4, int>")
    monkeypatch.setattr(_faults, "caller", lambda: "gparray.sum")
    with pytest.raises(_faults.KernelFaultError) as info:
        run(7, 256, (), 0, 0)
    msg = str(info.value)
    assert msg.startswith("gparray.sum: kernel reduce: gp_reduce_inner<R, 32, true, 8, 4, int> (grid 7, block 256")
    assert "unspecified launch failure" in msg and info.value.kernel.startswith("reduce:")

    def other(grid, block, args, smem, stream):
        raise _CudaError(1)   # not a fault: passes unchanged
    with pytest.raises(_CudaError):
        _faults.checked_launch(other, "x")(1, 1, (), 0, 0)


def test_caller_is_the_outermost_gparray_frame():
    import gparray._api._statistical as st
    code = compile("def sum(f):\n    return f()\n", "gparray/_api/_statistical.py", "exec")
    ns = {"__name__": "gparray._api._statistical"}
    exec(code, ns)
    assert ns["sum"](_faults.caller) == "gparray.sum"
    assert st.__name__ == "gparray._api._statistical"
    assert _faults.caller() == "gparray"            # no gparray frame above this test
