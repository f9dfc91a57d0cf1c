"""The certificates themselves: each must be able to fail, and brute force must be exact.

A checker that never says "no" would make the conformance suite vacuous, so every kind of
violation is provoked here on purpose.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings

from gensolver.model import Bid, Instance, Slot
from gensolver.verify import BRUTE_FORCE_LIMIT, brute_force, check_allocation
from tests.strategies import multi_resource_instances

SLOTS = (Slot("s0", {"memory": 80.0, "compute": 1.0}), Slot("s1", {"units": 1.0}))
BIDS = (
    Bid("a1", "A", 5.0, {"s0": {"memory": 50.0}}),
    Bid("a2", "A", 3.0, {"s1": {"units": 1.0}}),
    Bid("b", "B", 4.0, {"s0": {"memory": 30.0, "compute": 0.5}}),
    Bid("c", "C", 2.0, {"s0": {"memory": 1.0, "compute": 0.6}, "s1": {"units": 1.0}}),
)
INST = Instance(SLOTS, BIDS)


def test_feasible_allocation_passes() -> None:
    cert = check_allocation(INST, ["a1", "b"], welfare=9.0)
    assert cert.feasible and bool(cert) and cert.violations == ()
    assert cert.welfare == 9.0


def test_empty_allocation_is_feasible() -> None:
    cert = check_allocation(INST, [])
    assert cert.feasible and cert.welfare == 0.0


def test_over_capacity_is_flagged() -> None:
    cert = check_allocation(INST, ["b", "c"])
    assert not cert.feasible and not bool(cert)
    assert any("slot 's0' resource 'compute'" in v and "exceeds capacity 1" in v for v in cert.violations)
    cert = check_allocation(INST, ["a2", "c"])
    assert any("slot 's1' resource 'units'" in v for v in cert.violations)


def test_capacity_tolerance_is_absolute_1e_9() -> None:
    slots = (Slot("s", {"memory": 1.0}),)
    bids = (Bid("x", "X", 1.0, {"s": {"memory": 0.5 + 5e-10}}), Bid("y", "Y", 1.0, {"s": {"memory": 0.5}}))
    assert check_allocation(Instance(slots, bids), ["x", "y"]).feasible
    bids = (Bid("x", "X", 1.0, {"s": {"memory": 0.5 + 2e-9}}), Bid("y", "Y", 1.0, {"s": {"memory": 0.5}}))
    assert not check_allocation(Instance(slots, bids), ["x", "y"]).feasible


def test_xor_violation_is_flagged() -> None:
    cert = check_allocation(INST, ["a1", "a2"])
    assert not cert.feasible
    assert cert.violations == ("bidder 'A' wins both 'a1' and 'a2' (XOR)",)


def test_unknown_bid_is_flagged() -> None:
    cert = check_allocation(INST, ["a1", "zzz"])
    assert not cert.feasible
    assert cert.violations == ("unknown bid 'zzz'",)


def test_duplicate_winner_is_flagged() -> None:
    cert = check_allocation(INST, ["b", "b"])
    assert not cert.feasible
    assert "bid 'b' listed twice" in cert.violations


def test_wrong_claimed_welfare_is_flagged() -> None:
    cert = check_allocation(INST, ["a1", "b"], welfare=9.5)
    assert not cert.feasible
    assert cert.violations == ("claimed welfare 9.5 != recomputed 9.0",)
    assert check_allocation(INST, ["a1", "b"], welfare=9.0 * (1 + 1e-12)).feasible


def test_brute_force_refuses_oversize_instances() -> None:
    slots = (Slot("g", {"units": 1.0}),)
    bids = tuple(Bid(f"b{j}", f"i{j}", 1.0, {"g": {"units": 1.0}}) for j in range(22))  # 2**22 > limit
    with pytest.raises(ValueError, match=rf"brute force would enumerate more than {BRUTE_FORCE_LIMIT} combinations"):
        brute_force(Instance(slots, bids))
    with pytest.raises(ValueError, match=r"more than 10 combinations"):
        brute_force(INST, limit=10)


def test_brute_force_small_known_case() -> None:
    # Options by hand: {a1,b}=9, {a2,b}=7, {a1,c}=7, {b,c} infeasible (compute 1.1) ...
    best, winners = brute_force(INST)
    assert best == 9.0
    assert set(winners) == {"a1", "b"}


@settings(max_examples=40, deadline=None, derandomize=True)
@given(inst=multi_resource_instances())
def test_brute_force_is_the_maximum_over_all_subsets(inst) -> None:
    """Independent re-derivation: enumerate every subset of bids, not bidder choices."""
    best, winners = brute_force(inst)
    assert check_allocation(inst, winners, welfare=best).feasible
    ids = [b.id for b in inst.bids]
    top = 0.0
    for r in range(len(ids) + 1):
        for subset in itertools.combinations(ids, r):
            cert = check_allocation(inst, subset)
            if cert.feasible:
                top = max(top, cert.welfare)
    assert best == pytest.approx(top, abs=1e-9)


def test_check_allocation_takes_an_allocation_and_refuses_bad_arguments() -> None:
    """A NaN tolerance made every capacity comparison pass (an overfull allocation 'fitted');
    a bare string was read as a list of one-letter bid ids."""
    import math

    from gensolver import solve
    from gensolver.model import Bid, Instance, Slot
    from gensolver.verify.properties import in_core, is_envy_free, is_individually_rational

    inst = Instance((Slot("s", {"units": 1.0}),), (Bid("a", "A", 5.0, {"s": {"units": 1.0}}),
                                                   Bid("b", "B", 3.0, {"s": {"units": 1.0}})))
    res = solve(inst, method="greedy")
    assert check_allocation(inst, res).feasible and check_allocation(inst, res.winners).feasible
    assert not check_allocation(inst, ["a", "b"]).feasible
    for bad in (math.nan, -1.0, "1e-9", True):
        with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
            check_allocation(inst, ["a", "b"], tol=bad)
    with pytest.raises(TypeError, match="winners must be an iterable of bid ids"):
        check_allocation(inst, "a")
    with pytest.raises(TypeError, match="instance must be an Instance"):
        check_allocation(None, ["a"])
    from gensolver.mechanisms import run_mechanism

    out = run_mechanism(inst, mechanism="vcg")
    for prop in (is_individually_rational, is_envy_free, in_core):
        with pytest.raises(ValueError, match="tol must be"):
            prop(out, inst, tol=math.nan)
