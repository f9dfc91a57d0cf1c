"""Lavi–Swamy: the lottery checked against an independent LP (SciPy), the feasibility checker
and exact expected utilities over brute-force misreports."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from scipy.optimize import linprog

from gensolver.mechanisms import run_mechanism
from gensolver.mechanisms.common import make_outcome
from gensolver.mechanisms.lavi_swamy import lavi_swamy
from gensolver.testing import gpu_round_instances, instances
from gensolver.verify import (
    TRUTHFUL_FAMILIES,
    check_allocation,
    expected_regret,
    expected_utility,
    lottery,
    max_expected_regret,
    regret,
)

from .helpers import goods_instance

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def independent_lp(instance, exclude=None):
    """The LP relaxation built from the bids' demand dicts (not the solver's matrices) and solved
    by SciPy: ``max v.x`` over the bids that fit alone, capacities and XOR rows, ``x >= 0``."""
    caps = {(s.id, r): c for s in instance.slots for r, c in s.capacity.items()}
    bids = [b for b in instance.bids if b.bidder != exclude
            and all(q <= caps[(s, r)] + 1e-9 for s, res in b.demand.items() for r, q in res.items())]
    rows = list(caps)
    bidders = sorted({b.bidder for b in bids})
    A = np.zeros((len(rows) + len(bidders), len(bids)))
    for j, b in enumerate(bids):
        for s, res in b.demand.items():
            for r, q in res.items():
                A[rows.index((s, r)), j] += q
        A[len(rows) + bidders.index(b.bidder), j] = 1.0
    ub = np.array([caps[k] for k in rows] + [1.0] * len(bidders))
    if not bids:
        return 0.0, {}, (A, ub, [])
    res = linprog(-np.array([b.value for b in bids]), A_ub=A, b_ub=ub, bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun, {b.id: x for b, x in zip(bids, res.x)}, (A, ub, [b.id for b in bids])


def lp_feasible(instance, x: dict[str, float], tol=1e-7) -> bool:
    """``x`` (bid id -> share) satisfies every capacity and XOR row, read from the demand dicts."""
    use: dict[tuple[str, str], float] = {}
    per: dict[str, float] = {}
    caps = {(s.id, r): c for s in instance.slots for r, c in s.capacity.items()}
    index = instance.bid_index
    for bid_id, share in x.items():
        bid = instance.bids[index[bid_id]]
        if share < -tol:
            return False
        per[bid.bidder] = per.get(bid.bidder, 0.0) + share
        for s, res in bid.demand.items():
            for r, q in res.items():
                use[(s, r)] = use.get((s, r), 0.0) + q * share
    return all(v <= caps[k] * (1 + tol) + tol for k, v in use.items()) and all(v <= 1 + tol for v in per.values())


def lottery_mean(out) -> dict[str, float]:
    mean: dict[str, float] = {}
    for p, winners, _ in lottery(out):
        for w in winners:
            mean[w] = mean.get(w, 0.0) + p
    return mean


def check_outcome(inst, out) -> None:
    """Every independent certificate of one outcome."""
    d = out.details
    alpha = d["alpha"]
    assert alpha >= 1.0 and d["alpha_verified"] <= alpha + 1e-12
    lot = lottery(out)
    assert all(p >= 0 for p, _, _ in lot)
    assert math.fsum(p for p, _, _ in lot) == pytest.approx(1.0, abs=1e-12)
    for _, winners, pays in lot:
        assert check_allocation(inst, winners).feasible
        for w in winners:  # ex-post IR for reported values, no negative payment
            bid = inst.bids[inst.bid_index[w]]
            assert -1e-12 <= pays.get(bid.bidder, 0.0) <= bid.value + 1e-9
    # alpha * (mean of the lottery) is an optimal solution of the independently solved LP
    lp_star, _, _ = independent_lp(inst)
    x = {k: alpha * v for k, v in lottery_mean(out).items()}
    assert lp_feasible(inst, x)
    value = sum(inst.bids[inst.bid_index[k]].value * v for k, v in x.items())
    assert value == pytest.approx(lp_star, rel=1e-7, abs=1e-7)
    assert d["lp_welfare"] == pytest.approx(lp_star, rel=1e-7, abs=1e-7)
    # expected welfare = LP* / alpha, as an exact weighted sum over the lottery
    ew = math.fsum(p * inst.welfare_of(w) for p, w, _ in lot)
    assert ew == pytest.approx(lp_star / alpha, rel=1e-7, abs=1e-7)
    assert d["expected_welfare"] == pytest.approx(ew, rel=1e-7, abs=1e-7)
    # expected payments = fractional VCG / alpha, the fractional VCG recomputed by SciPy
    for bidder in inst.bidder_ids:
        v_i = sum(inst.bids[inst.bid_index[k]].value * s for k, s in x.items()
                  if inst.bids[inst.bid_index[k]].bidder == bidder)
        p_frac = 0.0
        if v_i > 1e-9:
            without, _, _ = independent_lp(inst, exclude=bidder)
            p_frac = min(max(without - (lp_star - v_i), 0.0), v_i)
        e_pay = math.fsum(p * pays.get(bidder, 0.0) for p, _, pays in lot)
        assert e_pay == pytest.approx(p_frac / alpha, rel=1e-6, abs=1e-6)
        assert d["expected_payments"][bidder] == pytest.approx(e_pay, rel=1e-9, abs=1e-9)
    # the drawn allocation is one of the lottery's
    assert tuple(sorted(out.allocation.winners)) in {tuple(sorted(w)) for _, w, _ in lot}


def test_single_item_is_vickrey_with_alpha_one():
    inst = goods_instance([("a", "A", 5, ["g"]), ("b", "B", 3, ["g"])], ["g"])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    assert out.details["alpha"] == pytest.approx(1.0)
    assert out.allocation.winners == ("a",)
    assert dict(out.payments) == pytest.approx({"A": 3.0, "B": 0.0})
    assert out.exact
    check_outcome(inst, out)


def test_fractional_optimum_needs_a_lottery():
    """Three goods, three bidders each wanting two of them (an odd cycle): the LP gives each
    bundle 1/2 (welfare 1.5 x 2), any allocation has one winner, so alpha = 1.5 exactly."""
    inst = goods_instance([("ab", "1", 2, ["A", "B"]), ("bc", "2", 2, ["B", "C"]), ("ca", "3", 2, ["C", "A"])],
                          ["A", "B", "C"])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    assert out.details["lp_welfare"] == pytest.approx(3.0)
    assert out.details["alpha"] == pytest.approx(1.5)
    assert out.details["expected_welfare"] == pytest.approx(2.0)
    check_outcome(inst, out)
    assert len(out.allocation.winners) == 1


@SETTINGS
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2))
def test_lottery_certificates_on_random_instances(inst):
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    check_outcome(inst, out)


@SETTINGS
@given(gpu_round_instances(max_gpus=2, max_steps=3, max_bidders=4))
def test_lottery_certificates_on_gpu_rounds_with_the_auto_oracle(inst):
    out = run_mechanism(inst, mechanism="lavi-swamy", method="auto", options={"threads": 1})
    check_outcome(inst, out)
    floor = out.details["alpha_floor"]
    assert floor is None or floor <= out.details["alpha_verified"] + 1e-6


def test_a_fixed_alpha_above_the_verified_ratio_gives_the_empty_allocation_the_rest():
    inst = goods_instance([("ab", "1", 2, ["A", "B"]), ("bc", "2", 2, ["B", "C"]), ("ca", "3", 2, ["C", "A"])],
                          ["A", "B", "C"])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"alpha": 2.0})
    assert out.details["alpha"] == 2.0 and out.details["truthful_in_expectation"]
    assert out.details["decomposition"][-1]["winners"] == []
    assert out.details["decomposition"][-1]["probability"] == pytest.approx(1 - 1.5 / 2.0)
    check_outcome(inst, out)
    low = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"alpha": 1.2})
    assert low.details["alpha"] == pytest.approx(1.5) and not low.details["truthful_in_expectation"]
    assert "verified only" in low.message


def test_seeds_draw_from_the_same_lottery():
    inst = goods_instance([("ab", "1", 2, ["A", "B"]), ("bc", "2", 2, ["B", "C"]), ("ca", "3", 2, ["C", "A"])],
                          ["A", "B", "C"])
    draws = {run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"seed": s}).allocation.winners
             for s in range(12)}
    assert len(draws) >= 2
    again = [run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"seed": 3}).allocation.winners
             for _ in range(2)]
    assert again[0] == again[1]


def _fixed_alpha(inst, method="greedy"):
    return run_mechanism(inst, mechanism="lavi-swamy", method=method).details["alpha_verified"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_slots=2, max_bidders=3, max_bids_per_bidder=2))
def test_no_misreport_raises_expected_utility(inst):
    """Brute force over every truthful-family misreport (scaled values, one bid shaded, dropped
    bids, smaller and larger bundles) of every bidder: expected utilities are exact sums."""
    opts = {"alpha": _fixed_alpha(inst)}
    for bidder in inst.bidder_ids:
        r = expected_regret("lavi-swamy", inst, bidder, families=TRUTHFUL_FAMILIES, method="greedy", options=opts)
        assert r.regret <= 1e-7 * max(1.0, abs(r.truthful_utility)), r


def test_expected_regret_on_a_gpu_round_with_xor_bids():
    inst = goods_instance([("1a", "1", 4, ["A"]), ("1b", "1", 3, ["B"]), ("1ab", "1", 7, ["A", "B"]),
                           ("2a", "2", 5, ["A"]), ("3b", "3", 2, ["B"]), ("4ab", "4", 6.5, ["A", "B"])], ["A", "B"])
    res = max_expected_regret("lavi-swamy", inst, families=TRUTHFUL_FAMILIES, method="greedy",
                              options={"alpha": _fixed_alpha(inst)})
    assert res.regret <= 1e-7
    assert all(r.evaluated > 0 for r in res.per_bidder.values())


def _pay_as_bid_lottery(instance, *, method="greedy", time_limit=None, executor=None, options=None):
    """The Lavi–Swamy lottery with first-price payments: not truthful in expectation."""
    out = lavi_swamy(instance, method=method, time_limit=time_limit, executor=executor, options=options)
    index = instance.bid_index
    lot = []
    for a in out.details["decomposition"]:
        pays = {instance.bids[index[w]].bidder: instance.bids[index[w]].value for w in a["winners"]}
        lot.append({**a, "payments": pays})
    pays = {instance.bids[index[w]].bidder: instance.bids[index[w]].value for w in out.allocation.winners}
    return make_outcome("pay-as-bid-lottery", instance, out.allocation, pays, exact=True,
                        details={**out.details, "decomposition": lot})


def test_the_expected_regret_checker_catches_a_pay_as_bid_lottery():
    inst = goods_instance([("a", "A", 5, ["g"]), ("b", "B", 3, ["g"])], ["g"])
    r = expected_regret(_pay_as_bid_lottery, inst, "A", families=("scale",), method="greedy")
    # truthful: A wins and pays 5 (utility 0); bidding 0.8 x 5 = 4 still wins and pays 4
    assert r.truthful_utility == pytest.approx(0.0)
    assert r.regret == pytest.approx(1.0)


def test_expected_regret_equals_regret_for_a_deterministic_mechanism():
    inst = goods_instance([("1a", "1", 4, ["A"]), ("1ab", "1", 7, ["A", "B"]), ("2a", "2", 5, ["A"]),
                           ("3b", "3", 2, ["B"])], ["A", "B"])
    for bidder in inst.bidder_ids:
        a = expected_regret("pay-as-bid", inst, bidder, method="cpsat")
        b = regret("pay-as-bid", inst, bidder, method="cpsat")
        assert a.regret == pytest.approx(b.regret) and a.truthful_utility == pytest.approx(b.truthful_utility)


def test_expected_utility_refuses_a_lottery_that_is_not_a_distribution():
    inst = goods_instance([("a", "A", 5, ["g"]), ("b", "B", 3, ["g"])], ["g"])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    bad = make_outcome("x", inst, out.allocation, dict(out.payments), exact=True,
                       details={"decomposition": [{"probability": 0.7, "winners": ["a"], "payments": {}}]})
    with pytest.raises(ValueError, match="not a probability distribution"):
        expected_utility(inst, "A", inst, bad)


@pytest.mark.parametrize("kwargs,message", [
    ({"options": {"alpha": 0.5}}, "alpha must be None or a finite number >= 1"),
    ({"options": {"seed": -1}}, "seed must be an integer in"),
    ({"options": {"threads": 0}}, "threads must be None or a positive integer"),
    ({"method": "cpsat"}, "must be one of greedy, auto"),
    ({"options": {"nope": 1}}, "does not take option"),
])
def test_bad_arguments_are_refused(kwargs, message):
    inst = goods_instance([("a", "A", 5, ["g"])], ["g"])
    with pytest.raises(ValueError, match=message):
        run_mechanism(inst, mechanism="lavi-swamy", **kwargs)


def test_budgets_cap_every_payment_of_the_lottery():
    inst = goods_instance([("a", "A", 5, ["g"]), ("b", "B", 3, ["g"])], ["g"], bidders=[{"id": "A", "budget": 1.0}])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    assert out.payments["A"] == pytest.approx(1.0) and out.budget_capped == ("A",)
    assert all(a["payments"].get("A", 0.0) <= 1.0 for a in out.details["decomposition"])


def test_the_lottery_certificates_catch_a_wrong_lottery():
    """check_outcome fails on a lottery whose mean is not alpha^-1 times an LP optimum."""
    inst = goods_instance([("ab", "1", 2, ["A", "B"]), ("bc", "2", 2, ["B", "C"]), ("ca", "3", 2, ["C", "A"])],
                          ["A", "B", "C"])
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    lot = [dict(a) for a in out.details["decomposition"]]
    # move all probability onto the first allocation: still a distribution, still feasible
    lot = [{**lot[0], "probability": 1.0}] + [{**a, "probability": 0.0} for a in lot[1:]]
    bad = make_outcome("lavi-swamy", inst, out.allocation, dict(out.payments), exact=True,
                       details={**out.details, "decomposition": lot})
    with pytest.raises(AssertionError):
        check_outcome(inst, bad)


def test_a_time_limit_that_stops_the_lp_is_reported_inexact():
    from gensolver.mechanisms.fractional import fractional_vcg
    from gensolver.solvers.formulation.problem import from_instance

    inst = goods_instance([("ab", "1", 2, ["A", "B"]), ("bc", "2", 2, ["B", "C"]), ("ca", "3", 2.5, ["C", "A"]),
                           ("a", "4", 1, ["A"])], ["A", "B", "C"])
    P = from_instance(inst)
    stopped = fractional_vcg(P, time_limit=1e-9)
    exact = fractional_vcg(P)
    assert exact.exact and not stopped.exact
    assert stopped.lp.bound >= exact.lp.value - 1e-9  # the certified bound still holds
    for o in range(P.n_owners):
        lo, hi = stopped.bounds[o]
        assert lo - 1e-9 <= exact.payments[o] <= hi + 1e-9
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", time_limit=1e-9,
                        options={"deterministic": False})
    assert not out.exact and "did not converge" in out.message and "wall-clock" in out.message
    # the default work budget never stops the LPs: the same call is exact whatever the load
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", time_limit=1e-9)
    assert out.exact and out.details["budget"] == "work units"


@pytest.mark.parametrize("values,amount", [((5.0,), 2.0), ((0.0, 0.0), 1.0)])
def test_rounds_where_nothing_can_be_allocated_are_exact_and_empty(values, amount):
    """A bid that does not fit alone, or bids worth nothing: the LP is empty, the lottery is the
    empty allocation, and nothing claims to be inexact."""
    inst = goods_instance([(f"b{k}", f"B{k}", v, ["g"]) for k, v in enumerate(values)], ["g"])
    if amount != 1.0:
        from gensolver import from_dict

        inst = from_dict({"schema": "gensolver.instance/v1", "slots": [{"id": "g", "capacity": {"units": 1}}],
                          "bids": [{"id": "b0", "bidder": "B0", "value": values[0], "demand": {"g": {"units": amount}}}]})
    out = run_mechanism(inst, mechanism="lavi-swamy")
    assert out.exact and out.allocation.winners == () and out.revenue == 0.0
    assert lottery(out) == [(1.0, (), {})]


def test_both_payment_rules_charge_the_same_in_expectation():
    inst = goods_instance([("1a", "1", 4, ["A"]), ("1ab", "1", 7, ["A", "B"]), ("2a", "2", 5, ["A"]),
                           ("3b", "3", 2, ["B"]), ("4ab", "4", 6.5, ["A", "B"]), ("5b", "5", 3, ["B"])], ["A", "B"])
    a = run_mechanism(inst, mechanism="lavi-swamy", method="greedy")
    b = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"payment_rule": "win-indicator"})
    check_outcome(inst, a)
    check_outcome(inst, b)
    assert b.details["expected_payments"] == pytest.approx(a.details["expected_payments"])
    with pytest.raises(ValueError, match="payment_rule must be one of"):
        run_mechanism(inst, mechanism="lavi-swamy", options={"payment_rule": "first-price"})
