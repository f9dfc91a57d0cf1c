"""Warm starts (``IncrementalSolver``, ``options={"warm_start": ...}``) against independent certificates.

Feasibility by :func:`gensolver.verify.check_allocation`, bounds and optima by
:func:`gensolver.verify.brute_force`; never by re-running the engine.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver import check_allocation, solve
from gensolver.model import Instance
from gensolver.solvers.anytime import IncrementalSolver
from gensolver.testing import instances
from gensolver.verify import brute_force


def _next_round(inst: Instance, drop: set[str], scale: float) -> Instance:
    """The next round: bidders in ``drop`` leave; every other bid's value is scaled by ``scale``
    for half the bidders (a changed bid keeps its id)."""
    bidders = sorted({b.bidder for b in inst.bids})
    changed = set(bidders[::2])
    bids = tuple(dataclasses.replace(b, value=b.value * scale) if b.bidder in changed else b
                 for b in inst.bids if b.bidder not in drop)
    return dataclasses.replace(inst, bids=bids, bidders=tuple(bd for bd in inst.bidders if bd.id not in drop))


@settings(max_examples=25, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=3), st.data())
def test_warm_answer_is_feasible_bounded_and_never_worse_than_a_feasible_hint(inst, data):
    opt, best = brute_force(inst)
    # a hint: any subset of bid ids (feasible or not), plus ids that are not in this round
    ids = [b.id for b in inst.bids]
    hint = data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    hint += ["gone-1", "gone-2"]
    budget = data.draw(st.sampled_from([None, 0.02]))
    res = solve(inst, method="auto", time_limit=budget, options={"warm_start": hint})
    cert = check_allocation(inst, res.winners, welfare=res.welfare)
    assert cert.feasible, cert.violations
    assert res.bound is not None and res.bound >= opt - 1e-9
    if check_allocation(inst, [h for h in hint if h in set(ids)]).feasible:
        hint_w = sum(b.value for b in inst.bids if b.id in set(hint))
        assert res.welfare >= hint_w - 1e-9
    # the optimum as a hint is kept even when the budget is too short to find it
    res = solve(inst, method="auto", time_limit=0.01, options={"warm_start": list(best), "deterministic": True})
    assert res.welfare == pytest.approx(opt, rel=1e-9, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(instances(max_slots=3, max_bidders=5, max_bids_per_bidder=3),
       st.floats(0.5, 2.0), st.sampled_from([None, 0.05]))
def test_incremental_rounds_never_return_a_removed_bid(inst, scale, budget):
    inc = IncrementalSolver(time_limit=budget)
    first = inc.solve(inst)
    assert check_allocation(inst, first.winners, welfare=first.welfare).feasible
    # the bidders that won leave: the kept state names only bids that are gone
    gone = {b.bidder for b in inst.bids if b.id in set(first.winners)}
    nxt = _next_round(inst, gone, scale)
    removed = {b.id for b in inst.bids} - {b.id for b in nxt.bids}
    assert set(inc.winners) <= removed
    second = inc.solve(nxt)
    assert not set(second.winners) & removed
    cert = check_allocation(nxt, second.winners, welfare=second.welfare)
    assert cert.feasible, cert.violations
    opt, _ = brute_force(nxt)
    assert second.bound is not None and second.bound >= opt - 1e-9
    if budget is None:
        assert second.optimal and second.welfare == pytest.approx(opt, rel=1e-9, abs=1e-9)


def test_a_stale_hint_is_repaired_and_the_checker_rejects_it_unrepaired():
    """A hint that no longer fits (a changed demand) is repaired; the checker flags the hint
    itself, so it can fail."""
    from gensolver.model import Bid, Slot

    slots = (Slot("s", {"mem": 10.0}),)
    inst = Instance(slots, (Bid("a", "A", 6.0, {"s": {"mem": 6.0}}), Bid("b", "B", 5.0, {"s": {"mem": 6.0}}),
                            Bid("c", "C", 1.0, {"s": {"mem": 4.0}})))
    stale = ["a", "b"]  # both fitted last round; now they do not
    assert not check_allocation(inst, stale).feasible
    res = solve(inst, method="auto", time_limit=0.01, options={"warm_start": stale, "deterministic": True})
    assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
    assert res.welfare == pytest.approx(brute_force(inst)[0])
    assert not check_allocation(inst, ["a", "gone"]).feasible  # an unknown (removed) id is a violation


def test_first_round_is_a_cold_solve_and_bad_warm_starts_are_named():
    from gensolver.instances.gpu import gpu_round

    inst = gpu_round(n_gpus=2, steps=4, n_tasks=6, seed=3).expand()
    opts = {"deterministic": True}
    cold = solve(inst, method="auto", time_limit=0.5, options=opts)
    inc = IncrementalSolver(time_limit=0.5, options=opts)
    assert inc.solve(inst).winners == cold.winners
    with pytest.raises(ValueError, match="warm_start"):
        solve(inst, method="auto", options={"warm_start": 5})
    with pytest.raises(ValueError, match="warm_start"):
        IncrementalSolver(options={"warm_start": []})


def test_a_better_hint_than_the_budget_allows_is_kept():
    """On a round where a tiny budget leaves ``auto`` below a longer run's answer, that answer
    as a hint is kept whole (so the hint, not the search, decides the result)."""
    from gensolver.instances.gpu import gpu_round

    inst = gpu_round(n_gpus=4, steps=8, n_tasks=20, seed=2, memory_levels=3, max_duration=3).expand()
    det = {"deterministic": True}
    long = solve(inst, method="auto", time_limit=3.0, options=det)
    assert check_allocation(inst, long.winners, welfare=long.welfare).feasible
    short = solve(inst, method="auto", time_limit=0.001, options=det)
    assert short.welfare < long.welfare - 1e-6  # the precondition that makes this test bite
    warm = solve(inst, method="auto", time_limit=0.001, options={**det, "warm_start": long})
    assert check_allocation(inst, warm.winners, welfare=warm.welfare).feasible
    assert warm.welfare >= long.welfare - 1e-9
    assert warm.bound is not None and warm.bound >= long.welfare - 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_a_focused_neighbourhood_frees_the_winners_on_its_start_row(seed):
    """``start_row`` (a warm start's changed rows) decides where the neighbourhood grows: every
    winner using that row is freed first."""
    import numpy as np

    from gensolver.instances.gpu import gpu_round
    from gensolver.solvers.anytime.lns import row_neighbourhood
    from gensolver.solvers.formulation.problem import from_round
    from gensolver.solvers.heuristics import first_fit_matrix, los_order

    P, _ = from_round(gpu_round(n_gpus=4, n_tasks=24, steps=10, seed=seed))
    x = first_fit_matrix(P, los_order(P, 0.5, P.normalised_size()))
    rng = np.random.default_rng(seed)
    used = np.flatnonzero(P.A[:, np.flatnonzero(x)].sum(axis=1).A1 > 0)
    row = int(used[-1])
    on_row = np.flatnonzero((x > 0.5) & (P.A[[row], :].toarray().ravel() > 0))
    _cols, _residual, fixed = row_neighbourhood(P, x, rng, on_row.size, 500, -P.values, start_row=row)
    assert np.all(fixed[on_row] == 0)
    assert np.all(fixed <= x)
