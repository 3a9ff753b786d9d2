"""What the ecosystem plugins share: which namespaces to run, and test sharding.

``GP_ECO_BACKENDS`` names the namespaces, separated by commas or spaces, e.g. ``gparray`` or
``cupy`` (``ecosystem/run.sh`` sets exactly one per pytest run, so every count is one
library's). Unset or empty: the library's own list with gparray added.

Loaded as a pytest plugin (``-p gp_eco_common``), ``GP_ECO_SHARD=i/n`` keeps the i-th of n
shards of the collected tests (by a hash of the node id with the backend name taken out, so
the gparray and the CuPy run of one shard hold the same tests). ``summarize.py`` uses
``normalize_nodeid`` to pair the two runs' tests.
"""
import os
import re
import zlib

GPARRAY = "gparray"


def selected_backends():
    """The names in ``GP_ECO_BACKENDS`` in order (duplicates dropped), or None when unset."""
    raw = os.environ.get("GP_ECO_BACKENDS", "")
    names = []
    for name in re.split(r"[,\s]+", raw.strip()):
        if name and name not in names:
            names.append(name)
    return names or None


def choose(available, selection, extra=(GPARRAY,)):
    """The backend names to run, in order: ``available`` (the library's own) plus ``extra``,
    narrowed to ``selection`` when one is given; a selected name the library does not know
    is appended (run.sh checks beforehand that it imports)."""
    names = list(available)
    names += [n for n in extra if n not in names]
    if selection is None:
        return names
    return [n for n in names if n in selection] + [n for n in selection if n not in names]


def normalize_nodeid(nodeid, backends):
    """``nodeid`` with every name in ``backends`` standing alone (not part of a longer
    identifier or dotted name) replaced by ``{xp}``: the same test under gparray and under
    CuPy gets the same key (``test_x[gparray-None-None]``, ``...array_namespace=cupy,...``,
    ``[numpy to gparray]``)."""
    for name in backends:
        nodeid = re.sub(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", "{xp}", nodeid)
    return nodeid


def shard_of(nodeid, backends, count):
    """0-based shard of a test: a hash of its backend-neutral node id, so that a gparray run
    and a CuPy run of the same shard hold the same tests."""
    return zlib.crc32(normalize_nodeid(nodeid, backends).encode()) % count


def parse_shard(text):
    """``"i/n"`` (1 <= i <= n) -> (i - 1, n); empty -> None."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"GP_ECO_SHARD must look like 1/4 (i of n, 1 <= i <= n); got {text!r}")
    return int(m.group(1)) - 1, int(m.group(2))


# --- as a pytest plugin (-p gp_eco_common): GP_ECO_SHARD=i/n keeps one shard of the tests
def pytest_collection_modifyitems(config, items):
    shard = parse_shard(os.environ.get("GP_ECO_SHARD", ""))
    if shard is None:
        return
    index, count = shard
    backends = (selected_backends() or []) + [GPARRAY, "cupy"]
    keep, drop = [], []
    for item in items:
        (keep if shard_of(item.nodeid, backends, count) == index else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
