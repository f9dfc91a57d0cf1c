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


@pytest.mark.parametrize("call, message", [
    (lambda f, i: f("vcg", i, {"A": 1.0}, [float("nan")]), "multipliers must be finite numbers >= 0"),
    (lambda f, i: f("vcg", i, {"A": 1.0}, [-2.0]), "multipliers must be finite numbers >= 0"),
    (lambda f, i: f("vcg", i, {"zz": 2.0}, [1.0]), "unknown bidder"),
    (lambda f, i: f("vcg", i, None, [1.0]), "must be a mapping"),
    (lambda f, i: f("vcg", i, {"A": 1.0}, 2.0), "must be a sequence of multipliers"),
    (lambda f, i: f("vcg", i, {"A": 1.0}, [1.0], bogus=1), "unknown keyword argument"),
])
def test_nash_check_refuses_bad_arguments(call, message) -> None:
    """NaN or negative multipliers, a profile naming no bidder and a stray keyword were
    accepted (the keyword silently ignored)."""
    from gensolver.model import Bid, Instance, Slot
    from gensolver.verify.nash import is_nash_equilibrium

    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),
                                                   Bid("b", "B", 3.0, {"s": {"units": 1.0}})))
    with pytest.raises(ValueError, match=message):
        call(is_nash_equilibrium, inst)


def test_best_response_dynamics_refuses_a_bad_round_count() -> None:
    from gensolver.model import Bid, Instance, Slot
    from gensolver.verify.nash import best_response_dynamics

    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),))
    with pytest.raises(ValueError, match="max_rounds must be a positive integer"):
        best_response_dynamics("vcg", inst, [1.0], max_rounds=-1)
