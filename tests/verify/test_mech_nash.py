"""The bidding game: truthful VCG is an equilibrium; pay-as-bid dynamics converge."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from gensolver.testing import instances
from gensolver.verify import best_response_dynamics, brute_force, is_nash_equilibrium
from tests.mechanisms.helpers import EXACT, goods_instance

SPACE = [0.5, 0.7, 0.9, 1.0, 1.2, 1.5]


@settings(max_examples=6, deadline=None)
@given(instances(max_slots=2, max_bidders=3, max_bids_per_bidder=2))
def test_truthful_is_equilibrium_under_vcg(inst):
    check = is_nash_equilibrium("vcg", inst, {b: 1.0 for b in inst.bidder_ids}, SPACE, **EXACT)
    assert check, check.deviations


def test_truthful_is_not_equilibrium_under_pay_as_bid():
    inst = goods_instance([("a", "A", 10, ["g"]), ("b", "B", 4, ["g"])], ["g"])
    check = is_nash_equilibrium("pay-as-bid", inst, {}, SPACE, **EXACT)
    assert not check
    assert [d.bidder for d in check.deviations] == ["A"]
    assert check.deviations[0].to == 0.5 and check.deviations[0].gain == pytest.approx(5.0)


def test_best_response_dynamics_pay_as_bid_llg():
    inst = goods_instance([("l1", "L1", 8, ["A"]), ("l2", "L2", 6, ["B"]), ("g", "G", 10, ["A", "B"])], ["A", "B"])
    grid = [round(0.1 * k, 1) for k in range(3, 11)]
    dyn = best_response_dynamics("pay-as-bid", inst, grid, **EXACT)
    assert dyn.converged and not dyn.cycle
    # the end point is an equilibrium, checked independently
    assert is_nash_equilibrium("pay-as-bid", inst, dyn.profile, grid, **EXACT)
    assert dyn.optimal_welfare == pytest.approx(brute_force(inst)[0])
    assert 0 < dyn.welfare <= dyn.optimal_welfare
    assert dyn.price_of_anarchy == pytest.approx(dyn.optimal_welfare / dyn.welfare)
    assert dyn.history and all(gain > 0 for *_, gain in dyn.history)


@settings(max_examples=5, deadline=None)
@given(instances(max_slots=2, max_bidders=3, max_bids_per_bidder=1, divisible=False))
def test_best_response_dynamics_terminates_and_reports(inst):
    dyn = best_response_dynamics("pay-as-bid", inst, [0.5, 0.75, 1.0], max_rounds=20, **EXACT)
    assert dyn.converged or dyn.cycle or dyn.rounds == 20
    assert dyn.welfare <= dyn.optimal_welfare + 1e-9
    assert dyn.price_of_anarchy >= 1 - 1e-9
    if dyn.converged:
        assert is_nash_equilibrium("pay-as-bid", inst, dyn.profile, [0.5, 0.75, 1.0], **EXACT)
