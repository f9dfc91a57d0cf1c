"""The one problem form and its scales (``gensolver.solvers.formulation``), judged independently:
integer rows against the float rows they stand for, scales against the float range, and the
feasibility check against :func:`gensolver.verify.check_allocation`."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver import solve
from gensolver.model import Bid, Instance, Slot
from gensolver.model.validate import InstanceError
from gensolver.solvers import Status, get_method
from gensolver.solvers.formulation import scales
from gensolver.solvers.formulation.problem import from_instance
from gensolver.testing import instances
from gensolver.verify import check_allocation

_coef = st.floats(0.0, 1e6, allow_nan=False).map(lambda v: float(v))


@settings(max_examples=200, deadline=None)
@given(st.lists(_coef, min_size=1, max_size=5), _coef)
def test_integer_rows_are_conservative_or_relaxed_as_asked(coefs, cap):
    """For every subset of the row's columns: whatever fits the conservative integer row fits
    the float row (the capacity rule of :mod:`gensolver.model.tolerances`), and whatever fits the
    float row fits the relaxed integer row (exactly; a row that scales to integers exactly stays
    exact, and admits only the whole units of the tolerance at its scale)."""
    from gensolver.model.tolerances import row_fits

    coefs = np.asarray(coefs)
    ic, icap, exact = scales.integer_row(coefs, cap)
    rc, rcap, _ = scales.integer_row(coefs, cap, relax=True)
    for pick in itertools.product([0, 1], repeat=coefs.size):
        x = np.asarray(pick, dtype=np.int64)
        fits_float = row_fits(coefs[x == 1].tolist(), cap)
        if int(ic @ x) <= icap:
            assert fits_float or exact, (coefs, cap, pick)
        if float(coefs @ x) <= cap:
            assert int(rc @ x) <= rcap, (coefs, cap, pick)


def test_the_row_check_can_fail():
    """The property above catches a row rounded the wrong way (demands down, capacity up)."""
    coefs, cap = np.array([1 / 3, 2 / 3]), 0.999999
    wrong_ic, wrong_icap = np.floor(coefs * 10), int(np.ceil(cap * 10))  # relaxed, used as conservative
    assert int(wrong_ic.sum()) <= wrong_icap and not coefs.sum() <= cap + scales.CAPACITY_TOL


@pytest.mark.parametrize("top", [1e300, 1e308, 1.7976931348623157e308])
def test_value_scales_stay_positive_and_finite_near_the_float_maximum(top):
    """Two values near 1e308 sum beyond the float range: the scales stay finite and positive
    (a scale of 0 divided CP-SAT's rounding error by zero), and scaled values stay integers."""
    values = np.array([top, top, 3.0])
    owners = np.array([0, 1, 2])
    scale = scales.certified_value_scale(values, owners)
    assert 0.0 < scale < math.inf
    assert np.all(np.isfinite(values * scale)) and float(np.sum(values * scale)) <= 2.0**61
    vscale, exact, err = scales.objective_scale(values, owners)
    assert not exact and 0.0 < vscale and math.isfinite(err)
    down = scales.value_downscale(values)
    with np.errstate(over="ignore"):
        overflows = not math.isfinite(float(np.sum(values)))
    assert (down < 1.0) == overflows and math.isfinite(float(np.sum(values * down)))
    assert math.log2(down) == int(math.log2(down))  # a power of two: no digit changes
    assert scales.value_downscale(np.array([1.0, 2.0])) == 1.0
    lift = scales.objective_lift(values)
    assert 1.0 <= float(np.max(values * lift)) < 2.0


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # sums of 1e308 overflow, as expected
@pytest.mark.parametrize("method", ["auto", "cpsat", "greedy", "lp", "scip", "cbc"])
def test_huge_values_give_a_clear_answer_not_a_crash(method):
    """Two bidders worth 1e308 each on separate slots: their welfare overflows, so the instance
    is refused up front naming ``/bids`` (validation), never a crash inside a solver. One bidder
    with two XOR bids of 1e308 and 1.7e308 (their sum overflows inside the solvers' scales and
    LP bounds, the welfare does not) is solved normally."""
    if not get_method(method).available()[0]:
        pytest.skip(method)
    slots = (Slot("a", {"memory": 1.0}), Slot("b", {"memory": 1.0}))
    both = Instance(slots, (Bid("x", "X", 1e308, {"a": {"memory": 1.0}}), Bid("y", "Y", 1e308, {"b": {"memory": 1.0}})))
    with np.errstate(over="ignore"), pytest.raises(InstanceError, match="/bids"):
        solve(both, method=method)
    one = Instance(slots, (Bid("x", "Y", 1e308, {"a": {"memory": 1.0}}), Bid("y", "Y", 1.7e308, {"b": {"memory": 1.0}})))
    res = solve(one, method=method)
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE) and res.winners == ("y",) and res.welfare == 1.7e308


@settings(max_examples=60, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=3), st.integers(0, 2**16))
def test_the_feasibility_check_agrees_with_check_allocation(inst, pick):
    """``MatrixProblem.feasible`` (the matrix check every solver uses) against the independent
    certificate, on random 0/1 vectors."""
    P = from_instance(inst)
    rng = np.random.default_rng(pick)
    x = (rng.random(P.n) < 0.5).astype(np.float64)
    cert = check_allocation(inst, [inst.bids[j].id for j in np.flatnonzero(x)])
    assert P.feasible(x) == cert.feasible
