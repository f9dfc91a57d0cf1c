"""VCG: published examples, payments recomputed by brute force, certified intervals."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from gensolver import from_dict
from gensolver.mechanisms import run_mechanism
from gensolver.testing import gpu_round_instances, instances
from gensolver.verify import brute_force

from .helpers import EXACT, clarke_by_brute_force, goods_instance, value_of

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_two_apples_example():
    """Wikipedia, "Vickrey–Clarke–Groves auction", section *Example* (two identical apples).

    Alice wants one apple (5), Bob one apple (2), Carl both apples (6). Efficient: Alice and
    Bob (7 > 6). Alice pays the harm she causes: without her the best is Carl's 6, and the
    others get 2 with her, so 6 - 2 = 4; Bob: without him 6, others get 5, so 1; Carl pays 0.
    """
    inst = from_dict({
        "schema": "gensolver.instance/v1",
        "slots": [{"id": "apples", "capacity": {"units": 2}}],
        "bids": [
            {"id": "a", "bidder": "Alice", "value": 5, "demand": {"apples": {"units": 1}}},
            {"id": "b", "bidder": "Bob", "value": 2, "demand": {"apples": {"units": 1}}},
            {"id": "c", "bidder": "Carl", "value": 6, "demand": {"apples": {"units": 2}}},
        ],
    })
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert set(out.allocation.winners) == {"a", "b"}
    assert out.exact
    # hand computation from the example's definition
    alice = max(2, 6) - 2
    bob = max(5, 6) - 5
    assert out.payments == pytest.approx({"Alice": alice, "Bob": bob, "Carl": 0.0})
    assert out.revenue == pytest.approx(5.0)
    assert out.utilities["Alice"] == pytest.approx(1.0)


def test_two_distinct_goods_with_xor_bidder():
    """Two goods A, B (Nisan et al., *Algorithmic Game Theory*, 2007, ch. 9 setting).

    Bidder 1: XOR {A}: 4, {B}: 3, {A,B}: 7; bidder 2: {A}: 5; bidder 3: {B}: 2.
    Efficient: 2 gets A, 1 gets B (5 + 3 = 8; alternatives: 1 gets AB = 7, 1 A + 3 B = 6,
    2 A + 3 B = 7). p1 = W(-1) - (8 - 3) = 7 - 5 = 2; p2 = W(-2) - (8 - 5) = 7 - 3 = 4
    (without 2: 1 takes AB = 7); p3 = 0.
    """
    inst = goods_instance(
        [("1a", "1", 4, ["A"]), ("1b", "1", 3, ["B"]), ("1ab", "1", 7, ["A", "B"]),
         ("2a", "2", 5, ["A"]), ("3b", "3", 2, ["B"])],
        ["A", "B"],
    )
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert set(out.allocation.winners) == {"1b", "2a"}
    assert out.payments == pytest.approx({"1": 7 - 5, "2": 7 - 3, "3": 0.0})


@SETTINGS
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2))
def test_payments_match_brute_force(inst):
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert out.exact
    w_star, _ = brute_force(inst)
    assert out.allocation.welfare == pytest.approx(w_star, abs=1e-7)
    expected = clarke_by_brute_force(inst, out.allocation.winners)
    for i in inst.bidder_ids:
        assert out.payments[i] == pytest.approx(expected[i], abs=1e-6), i
        lo, hi = out.payment_bounds[i]
        assert lo == pytest.approx(hi, abs=1e-9)


@settings(max_examples=8, deadline=None)
@given(gpu_round_instances())
def test_gpu_round_payments_match_brute_force(inst):
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    expected = clarke_by_brute_force(inst, out.allocation.winners)
    assert dict(out.payments) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("solver", ["greedy", "lp"])
@settings(max_examples=25, deadline=None)
@given(inst=instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2))
def test_intervals_contain_exact_payments_with_inexact_solver(solver, inst):
    out = run_mechanism(inst, mechanism="vcg", method=solver)
    w_star, x_star = brute_force(inst)
    if out.allocation.optimal:
        assert out.allocation.welfare == pytest.approx(w_star, abs=1e-7)
        x_star = out.allocation.winners  # the mechanism's optimal allocation
    exact = clarke_by_brute_force(inst, x_star)
    for i in inst.bidder_ids:
        lo, hi = out.payment_bounds[i]
        assert lo - 1e-7 <= exact[i] <= hi + 1e-7, (i, lo, exact[i], hi, out.message)
        assert 0.0 <= out.payments[i] <= value_of(inst, out.allocation.winners, i) + 1e-9
    if not out.exact:
        assert out.message


def test_intervals_on_instance_where_greedy_is_suboptimal():
    """Greedy takes the big bid (10/sqrt(2) > 6 and > 5) though A + B are worth 11."""
    inst = goods_instance([("x", "X", 6, ["A"]), ("y", "Y", 5, ["B"]), ("z", "Z", 10, ["A", "B"])], ["A", "B"])
    out = run_mechanism(inst, mechanism="vcg", method="greedy")
    assert out.allocation.winners == ("z",)
    assert not out.exact and "not proven optimal" in out.message
    exact = clarke_by_brute_force(inst, ("x", "y"))  # X pays 10 - 5 = 5, Y pays 10 - 6 = 4
    assert exact == pytest.approx({"X": 5.0, "Y": 4.0, "Z": 0.0})
    for i, p in exact.items():
        lo, hi = out.payment_bounds[i]
        assert lo <= p <= hi
    # a degenerate interval would be a false claim of exactness here
    assert out.payment_bounds["X"][1] > out.payment_bounds["X"][0]


def test_time_limited_pivots_give_valid_intervals():
    """A pivot that is not proven optimal widens only that bidder's interval."""
    inst = goods_instance([("x", "X", 6, ["A"]), ("y", "Y", 5, ["B"]), ("z", "Z", 10, ["A", "B"])], ["A", "B"])

    calls = []

    def half_exact(instance, *, time_limit, threads, seed, options):
        # main solve: exact CP-SAT; pivots: only the greedy (not proven optimal)
        from gensolver import solve

        calls.append(instance.n_bids)
        method = "cpsat" if instance.n_bids == 3 else "greedy"
        return solve(instance, method=method)

    out = run_mechanism(inst, mechanism="vcg", method=half_exact)
    assert out.allocation.optimal
    exact = clarke_by_brute_force(inst, out.allocation.winners)
    for i, p in exact.items():
        lo, hi = out.payment_bounds[i]
        assert lo - 1e-9 <= p <= hi + 1e-9
    assert calls == [3, 2, 2]


def test_warm_start_option_and_unknown_option():
    inst = goods_instance([("x", "X", 6, ["A"]), ("y", "Y", 5, ["A"])], ["A"])
    cold = run_mechanism(inst, mechanism="vcg", method="cpsat", options={"warm_start": False})
    warm = run_mechanism(inst, mechanism="vcg", method="cpsat")
    assert cold.payments == warm.payments == {"X": 5.0, "Y": 0.0}
    assert warm.details["warm_start"] and not cold.details["warm_start"]
    with pytest.raises(ValueError, match="valid options"):
        run_mechanism(inst, mechanism="vcg", options={"hint": []})


def test_losers_are_not_resolved():
    inst = goods_instance([("x", "X", 6, ["A"]), ("y", "Y", 5, ["A"]), ("z", "Z", 1, ["A"])], ["A"])
    out = run_mechanism(inst, mechanism="vcg", **EXACT)
    assert set(out.details["pivots"]) == {"X"}
    assert out.payments == {"X": 5.0, "Y": 0.0, "Z": 0.0}
    assert math.isclose(out.revenue, 5.0)


def test_pivots_meeting_the_trivial_bound_are_not_resolved():
    """Everyone wins their best bid: W(-i) = W* - v_i is certified by the trivial bound (every
    other bidder's best bid that fits alone), so no pivot is re-solved, whatever the solver."""
    inst = goods_instance([("a1", "A", 4, ["P"]), ("a2", "A", 3, ["Q"]), ("b1", "B", 6, ["R"]),
                           ("c1", "C", 5, ["S"])], ["P", "Q", "R", "S"])
    calls = []

    def counting(instance, *, time_limit, threads, seed, options):
        from gensolver import solve

        calls.append(instance.n_bids)
        return solve(instance, method="cpsat")

    out = run_mechanism(inst, mechanism="vcg", method=counting)
    expected = clarke_by_brute_force(inst, out.allocation.winners)
    assert dict(out.payments) == pytest.approx(expected) == {"A": 0.0, "B": 0.0, "C": 0.0}
    assert calls == [4] and out.exact
    assert {p["how"] for p in out.details["pivots"].values()} == {"trivial-bound"}
    calls.clear()
    cold = run_mechanism(inst, mechanism="vcg", method=counting, options={"warm_start": False})
    assert cold.payments == out.payments and sorted(calls) == [2, 3, 3, 4]
    # one losing bid with value (D) lifts every pivot's trivial bound: all are re-solved
    calls.clear()
    contested = goods_instance([("a1", "A", 4, ["P"]), ("b1", "B", 6, ["R"]), ("c1", "C", 5, ["S"]),
                                ("d1", "D", 2, ["S"])], ["P", "R", "S"])
    out = run_mechanism(contested, mechanism="vcg", method=counting)
    assert dict(out.payments) == pytest.approx(clarke_by_brute_force(contested, out.allocation.winners))
    assert out.payments["C"] == pytest.approx(2.0) and sorted(calls) == [3, 3, 3, 4]
