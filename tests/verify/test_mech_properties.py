"""Envy-freeness and individual rationality checks (each can fail)."""

from __future__ import annotations

import dataclasses

from gensolver.mechanisms import run_mechanism
from gensolver.verify import is_envy_free, is_individually_rational
from tests.mechanisms.helpers import EXACT, goods_instance


def test_second_price_is_envy_free_and_free_goods_are_not():
    """One good: A 10, B 6. VCG is the second-price auction: A pays 6, B's utility for A's
    bundle at A's price is 6 - 6 = 0, no envy. Giving the good to A for free makes B envy."""
    inst = goods_instance([("a", "A", 10, ["g"]), ("b", "B", 6, ["g"])], ["g"])
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert out.payments["A"] == 6.0
    assert is_envy_free(out, inst)
    free = dataclasses.replace(out, payments={"A": 0.0, "B": 0.0})
    check = is_envy_free(free, inst)
    assert not check and "'B' envies 'A'" in check.violations[0]


def test_ir_violation_reported():
    inst = goods_instance([("a", "A", 10, ["g"])], ["g"])
    out = run_mechanism(inst, mechanism="pay-as-bid", **EXACT)
    assert is_individually_rational(out, inst)
    bad = dataclasses.replace(out, payments={"A": 12.0})
    check = is_individually_rational(bad, inst)
    assert not check and "utility" in check.violations[0]
