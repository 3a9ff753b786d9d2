"""CPU tier: tests/spec/facts-2025.12.json is what tools/spec_facts.py reads from the spec.

The tables of gparray's CPU tier (promotion, elementwise categories) are checked against the
committed facts in every run; this test regenerates them from a checkout of the spec where
one is present (.vendor/array-api-tests/array-api, the conformance suite's submodule, which
the GPU machine carries) and fails when the committed file differs."""
import pytest

from tools import spec_facts


def test_the_facts_parser_reads_tables_and_stubs():
    rst = ("+----+----+----+\n|    | i1 | i2 |\n+====+====+====+\n| **i1** | i1 | i2 |\n"
           "+----+----+----+\n| **i2** | i2 | i2 |\n+----+----+----+\n\ntext\n")
    assert spec_facts.promotion_tables(rst) == [{"i1,i1": "i1", "i1,i2": "i2", "i2,i1": "i2", "i2,i2": "i2"}]
    stub = ('def f(x, /):\n    """x: Should have a real-valued data type."""\n\n'
            'def g(x1, x2, /):\n    """x1: May have any data type."""\n')
    assert spec_facts.elementwise(stub) == {"f": ["real numeric", 1], "g": ["all", 2]}
    with pytest.raises(ValueError, match="expected one input category"):
        spec_facts.elementwise('def h(x, /):\n    """no category"""\n')


def test_committed_facts_cover_the_spec():
    f = spec_facts.load()
    assert len(f["promotion_tables"]) == 4 and len(f["elementwise"]) == 67


@pytest.mark.skipif(not (spec_facts.SPEC_DIR / spec_facts.RST).exists(),
                    reason="no spec checkout in .vendor/array-api-tests/array-api (conformance/README.md)")
def test_committed_facts_match_the_spec_checkout():
    assert spec_facts.facts(spec_facts.SPEC_DIR) == spec_facts.load()
