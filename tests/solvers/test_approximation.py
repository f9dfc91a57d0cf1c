"""Documented guarantees of the approximate methods, checked against brute force.

- ``greedy`` (LOS): welfare >= OPT / sqrt(m) for single-minded bidders on ``m`` single-unit
  goods (Lehmann, O'Callaghan & Shoham 2002, Thm. 1).
- ``lp`` and ``auto``: never worse than ``greedy`` (their docstrings say so).
- ``lp``: the certified dual bound is never below the optimum, on any instance shape.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver import solve
from gensolver.solvers.approximation.lp import dual_bound
from gensolver.verify import brute_force, check_allocation
from tests.strategies import multi_resource_instances, single_minded_instances, single_unit_instances

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


@SETTINGS
@given(inst=single_minded_instances())
def test_los_greedy_guarantee_single_minded(inst) -> None:
    res = solve(inst, method="greedy")
    assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
    opt, _ = brute_force(inst)
    m = inst.n_slots
    assert res.welfare >= opt / math.sqrt(m) - 1e-9
    assert res.welfare <= opt + 1e-9


@SETTINGS
@given(inst=st.one_of(single_unit_instances(), multi_resource_instances()))
def test_lp_and_auto_never_worse_than_greedy(inst) -> None:
    greedy = solve(inst, method="greedy").welfare
    for method in ("lp", "auto"):
        res = solve(inst, method=method, threads=1)
        assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
        assert res.welfare >= greedy - 1e-9, method


@SETTINGS
@given(inst=st.one_of(single_unit_instances(), multi_resource_instances()))
def test_lp_bound_never_below_optimum(inst) -> None:
    res = solve(inst, method="lp")
    opt, _ = brute_force(inst)
    assert res.bound is not None
    assert res.bound >= opt - 1e-7 * max(1.0, opt)


@SETTINGS
@given(inst=multi_resource_instances(), data=st.data())
def test_dual_bound_valid_for_any_duals(inst, data) -> None:
    """Weak duality holds for *any* non-negative duals, not only the LP's (repair step)."""
    opt, _ = brute_force(inst)
    duals = st.floats(min_value=-5.0, max_value=50.0, allow_nan=False)
    y_cap = data.draw(st.lists(duals, min_size=len(inst.capacity), max_size=len(inst.capacity)))
    y_xor = data.draw(st.lists(duals, min_size=inst.n_bidders, max_size=inst.n_bidders))
    assert dual_bound(inst, y_cap, y_xor) >= opt - 1e-7 * max(1.0, opt)


def test_greedy_guarantee_is_tight_enough_to_matter() -> None:
    """A sanity check of the strategy: greedy is not always optimal on these instances.

    Otherwise the guarantee test above could not fail for a wrong ranking rule.
    """
    from gensolver.model import Bid, Instance, Slot

    # LOS ranks the big bid first (10 / sqrt(3) > 5.5 / 1), blocking three bids worth 16.5.
    slots = tuple(Slot(f"g{k}", {"units": 1.0}) for k in range(3))
    bids = (Bid("big", "A", 10.0, {f"g{k}": {"units": 1.0} for k in range(3)}),
            Bid("s0", "B", 5.5, {"g0": {"units": 1.0}}),
            Bid("s1", "C", 5.5, {"g1": {"units": 1.0}}),
            Bid("s2", "D", 5.5, {"g2": {"units": 1.0}}))
    inst = Instance(slots, bids)
    opt, _ = brute_force(inst)
    assert opt == pytest.approx(16.5)
    res = solve(inst, method="greedy")
    assert res.winners == ("big",)
    assert opt / math.sqrt(3) - 1e-9 <= res.welfare < opt
