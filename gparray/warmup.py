"""Fill the kernel disk cache without a GPU: ``python -m gparray.warmup --arch 90``.

NVRTC needs no device, so a deployment (or a CI job, or this workplace before a device
run) can compile every registered instance once; processes on the GPU machine then load
cubins from ``GPARRAY_CACHE_DIR`` instead of compiling. The cache key includes the NVRTC
version, so warm up with the same NVRTC the GPU machine uses.
"""
from __future__ import annotations

import argparse
import sys
import time

from ._kernels import _compile
from ._kernels import _instances


def instances(include_ops: bool = True) -> dict[str, list[str]]:
    """Every registered instance, by family: the kernels' own (gparray/_kernels/_instances.py),
    the engines' (reduce, scan, search, index, sort, sets, matmul, join, linalg_small) and, when
    ``include_ops``, every instance the elementwise function table declares (``op.instances()``)."""
    from ._array import _elementwise
    from ._engine import _index, _join, _matmul_int, _reduce, _scan, _search, _sets, _solver, _sort

    extra = {"reduce": _reduce.instances(), "scan": _scan.instances(), "search": _search.instances(),
             "index": _index.instances(), "sort": _sort.instances(),
             "sets": _sets.instances(), "matmul": _matmul_int.instances(), "join": _join.instances(),
             _solver.SMALL_FAMILY: _solver.instances()}
    if include_ops:
        extra["elementwise"] = _elementwise.kernel_instances()
    return _instances.instances(extra)


def _batches(items, n):
    for i in range(0, len(items), n):
        yield items[i:i + n]


def warm(arch: str, families=None, batch: int = 200, verbose: bool = True, ops: bool = True) -> int:
    """Compile every registered instance of ``families`` for sm_<arch>; returns the count."""
    total = 0
    t0 = time.time()
    for family, exprs in instances(include_ops=ops).items():
        if families and family not in families:
            continue
        todo = [e for e in exprs if _compile.load_cached(family, e, arch) is None]
        for chunk in _batches(todo, batch):
            cubin, mapping = _compile.nvrtc_compile(family, chunk, arch)
            _compile.store(family, chunk, arch, cubin, mapping)
            total += len(chunk)
            if verbose:
                print(f"warmup: {family}: {total} compiled ({time.time() - t0:.1f} s)", flush=True)
    return total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gparray.warmup", description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="90", help="target compute capability, e.g. 90 (sm_90)")
    p.add_argument("--families", nargs="*", help="kernel families (default: all)")
    p.add_argument("--batch", type=int, default=200, help="instances per NVRTC program")
    p.add_argument("--no-ops", action="store_true", help="skip the elementwise function table's instances")
    args = p.parse_args(argv)
    n = warm(args.arch, args.families, args.batch, ops=not args.no_ops)
    files, size = _compile.cache_size()
    print(f"warmup: {n} instances compiled for sm_{args.arch}; cache {_compile.cache_dir()} "
          f"holds {files} files, {size / 2**20:.1f} MiB (NVRTC {'.'.join(map(str, _compile.nvrtc_version()))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
