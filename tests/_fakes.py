"""Test doubles shared by the CPU-tier engine tests."""


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
