"""Greedy with critical payments: exact critical values, truthfulness only if single-minded."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from gensolver.mechanisms import critical_value, run_mechanism
from gensolver.testing import single_minded_instances
from gensolver.verify import TRUTHFUL_FAMILIES, Misreport, apply_misreport, max_regret, regret

from .helpers import goods_instance


def _wins(inst, bid_id):
    return bid_id in run_mechanism(inst, mechanism="greedy-critical").allocation.winners


def _with_value(inst, bid_id, value):
    from gensolver.model import Bid

    return inst.replace_bids([Bid(b.id, b.bidder, value if b.id == bid_id else b.value, b.demand) for b in inst.bids])


def test_llg_critical_values_by_hand():
    """LOS key value/sqrt(|S|): G's key is 10/sqrt(2) ~ 7.07, above L2's 6 and below L1's 8.

    L1 wins first; it would lose below G's key (G would then take A and B): critical 10/sqrt(2).
    L2 is accepted after L1, and nothing accepted before it conflicts: critical 0. G loses.
    """
    inst = goods_instance([("l1", "L1", 8, ["A"]), ("l2", "L2", 6, ["B"]), ("g", "G", 10, ["A", "B"])], ["A", "B"])
    out = run_mechanism(inst, mechanism="greedy-critical")
    assert set(out.allocation.winners) == {"l1", "l2"}
    assert out.payments["L1"] == pytest.approx(10 / math.sqrt(2))
    assert out.payments["L2"] == 0.0
    assert out.payments["G"] == 0.0


@settings(max_examples=30, deadline=None)
@given(single_minded_instances(max_slots=3, max_bidders=5))
def test_critical_value_is_the_threshold(inst):
    """Definition check by re-running the allocation just above / below the critical value."""
    out = run_mechanism(inst, mechanism="greedy-critical")
    for w in out.allocation.winners:
        c = critical_value(inst, w)
        assert c <= inst.bids[inst.bid_index[w]].value + 1e-9
        eps = 1e-6 * max(1.0, c)
        assert _wins(_with_value(inst, w, c + eps), w)
        if c > eps:
            assert not _wins(_with_value(inst, w, c - eps), w)


@settings(max_examples=25, deadline=None)
@given(single_minded_instances(max_slots=3, max_bidders=4))
def test_truthful_for_single_minded(inst):
    assert max_regret("greedy-critical", inst, families=TRUTHFUL_FAMILIES).regret <= 1e-6


@settings(max_examples=15, deadline=None)
@given(single_minded_instances(max_slots=3, max_bidders=4, divisible=True))
def test_truthful_for_single_minded_divisible(inst):
    assert max_regret("greedy-critical", inst, families=TRUTHFUL_FAMILIES).regret <= 1e-6


def test_not_truthful_with_xor_bids():
    """Bidder A: XOR {g1}: 10, {g2}: 9; bidder B: {g1}: 8 (all sizes 1, keys = values).

    Truthful: a1 wins; without a1 the first accepted bid is A's own a2 (9), so A pays 9 and
    gets 10 - 9 = 1. Dropping a1: a2 wins, and no bid accepted before it blocks g2, so A pays
    0 and gets 9 (its true value for g2). Gain 8.
    """
    inst = goods_instance([("a1", "A", 10, ["g1"]), ("a2", "A", 9, ["g2"]), ("b", "B", 8, ["g1"])], ["g1", "g2"])
    out = run_mechanism(inst, mechanism="greedy-critical")
    assert out.allocation.winners == ("a1",) or set(out.allocation.winners) == {"a1"}
    assert out.payments["A"] == pytest.approx(9.0)
    drop = Misreport("A", "drop", "drop a1", (inst.bids[1],), ("A",))
    res = regret("greedy-critical", inst, "A", misreports=[drop])
    assert res.truthful_utility == pytest.approx(1.0)
    assert res.best_utility == pytest.approx(9.0)
    assert res.regret == pytest.approx(8.0)
    # the default family finds it too
    assert regret("greedy-critical", inst, "A").regret >= 8.0 - 1e-9
    assert run_mechanism(apply_misreport(inst, drop), mechanism="greedy-critical").payments["A"] == 0.0


def test_alpha_option_and_unknown_option():
    inst = goods_instance([("l1", "L1", 8, ["A"]), ("g", "G", 10, ["A", "B"])], ["A", "B"])
    by_value = run_mechanism(inst, mechanism="greedy-critical", options={"alpha": 0.0})
    assert by_value.allocation.winners == ("g",)
    assert by_value.payments["G"] == pytest.approx(8.0)  # L1's key 8 times size**0
    with pytest.raises(ValueError, match="valid options: \\['alpha'\\]"):
        run_mechanism(inst, mechanism="greedy-critical", options={"beta": 1})
