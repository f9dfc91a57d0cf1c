"""VCG pivots on the anytime engine (:mod:`gensolver.mechanisms.pivots`): each pivot's welfare
against brute force or an independent solver on the instance without the bidder."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver import solve
from gensolver.mechanisms.pivots import PivotResult, SolutionPool, lp_state, pivot_solve
from gensolver.solvers.anytime import exact_restricted
from gensolver.solvers.formulation.problem import from_instance
from gensolver.solvers.heuristics import first_fit_matrix
from gensolver.testing import instances
from gensolver.verify import brute_force


@settings(max_examples=40, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=2), st.booleans())
def test_vcg_pivots_equal_brute_force(inst, shared_pool):
    """Each pivot's welfare without one winner equals brute force on the reduced instance,
    also when the pivots share a solution pool (each pivot adds its answer to it)."""

    opt, winners = brute_force(inst)
    P = from_instance(inst)
    x = np.zeros(P.n)
    for w in winners:
        x[inst.bid_index[w]] = 1.0
    lp = lp_state(P)
    pool = SolutionPool(P, x) if shared_pool else None
    for i, name in enumerate(inst.bidder_ids):
        if not any(inst.bids[inst.bid_index[w]].bidder == name for w in winners):
            continue
        expected, _ = brute_force(inst.without_bidder(name))
        res = pivot_solve(P, i, x, lp, upper=opt, pool=pool)
        assert res.exact
        assert res.welfare == pytest.approx(expected, rel=1e-9, abs=1e-9)
        assert res.bound >= expected - 1e-9


def test_pivot_reduced_cost_fixing_uses_the_dual_objective():
    """Regression: fixing with a bound tighter than the duals' own objective drops the optimum.

    B0 {s0, s1} = 1, B1 {s0} = 2, B2 {s1} = 0.5. Without B1 the optimum is B0 alone (1), which
    the warm start {B2} (0.5) does not reach; the LP duals price B0 at -1.5.
    """
    from gensolver.model import SCHEMA, from_dict

    inst = from_dict({"schema": SCHEMA,
                      "slots": [{"id": "s0", "capacity": {"units": 1}}, {"id": "s1", "capacity": {"units": 1}}],
                      "bids": [{"id": "a", "bidder": "B0", "value": 1.0, "demand": {"s0": {"units": 1}, "s1": {"units": 1}}},
                               {"id": "b", "bidder": "B1", "value": 2.0, "demand": {"s0": {"units": 1}}},
                               {"id": "c", "bidder": "B2", "value": 0.5, "demand": {"s1": {"units": 1}}}]})
    P = from_instance(inst)
    res = pivot_solve(P, 1, np.array([0.0, 1.0, 1.0]), lp_state(P), upper=2.5)
    assert res.welfare == pytest.approx(brute_force(inst.without_bidder("B1"))[0]) == pytest.approx(1.0)


def test_solution_pool_offers_only_solutions_without_the_owner():
    """best_without never returns a solution that gives the excluded owner a column."""

    from gensolver.instances.gpu import gpu_round

    inst = gpu_round(n_gpus=2, steps=4, n_tasks=6, seed=5).expand()
    P = from_instance(inst)
    rng = np.random.default_rng(0)

    sols = [first_fit_matrix(P, rng.permutation(P.n)) for _ in range(10)]
    pool = SolutionPool(P, sols[0], size=5)
    for x in sols[1:]:
        pool.add(x)
    for owner in range(P.n_owners):
        best = pool.best_without(owner, P.values)
        allowed = [x for x in sols if not np.any(x[P.owner == owner] > 0.5)]
        if best is None:
            # the pool keeps the 5 best only; nothing kept may be free of this owner
            continue
        assert not np.any(best[P.owner == owner] > 0.5)
        assert any(np.array_equal(best, x) for x in allowed)


def test_vcg_pivots_with_settled_owners_match_an_independent_solver(monkeypatch):
    """Pivots that make settled owners win give the same optimum
    as the plain CP-SAT backend (``method="cpsat"``, its own model) on the instance without
    the bidder, and the must-win path is really taken.

    CATS instances of 150 bids: their pivots need MIPs (a 15 % LP gap), so the settled-pivot
    constraints of :func:`pivot_solve` decide them.
    """
    from gensolver.instances.cats import arbitrary

    calls = []
    real = exact_restricted.solve_restricted_cpsat

    def counting(*args, **kwargs):
        res = real(*args, **kwargs)
        if kwargs.get("must_win") is not None and len(kwargs["must_win"]):
            calls.append(res.infeasible)
        return res

    monkeypatch.setattr(exact_restricted, "solve_restricted_cpsat", counting)
    checked = 0
    for seed in range(4):
        inst = arbitrary(40, 150, seed=seed)
        main = solve(inst, method="cpsat")
        assert main.optimal
        P = from_instance(inst)
        x = np.zeros(P.n)
        for w in main.winners:
            x[inst.bid_index[w]] = 1.0
        lp = lp_state(P)
        pool = SolutionPool(P, x)
        value = {inst.bids[inst.bid_index[w]].bidder: inst.bids[inst.bid_index[w]].value for w in main.winners}
        for name in sorted(value, key=lambda b: -value[b]):
            expected = solve(inst.without_bidder(name), method="cpsat")
            assert expected.optimal
            res = pivot_solve(P, inst.bidder_ids.index(name), x, lp, upper=main.welfare, pool=pool)
            assert res.exact
            assert res.welfare == pytest.approx(expected.welfare, rel=1e-9, abs=1e-9), (seed, name)
            checked += 1
    assert checked >= 20
    assert len(calls) >= 5, "too few pivots used the must-win constraints"


def test_every_pivot_path_returns_one_frozen_picklable_record():
    """The fast path (:func:`pivot_solve`), a re-solve by another method
    (:func:`~gensolver.mechanisms.vcg.pivot_welfare`) and VCG's details all carry the one
    :class:`PivotResult`: each equals its own pickled copy, is frozen, agrees with brute force
    on the instance without the bidder, and its JSON form has the keys of
    ``Outcome.details["pivots"]``."""
    import dataclasses
    import pickle

    from gensolver.mechanisms import run_mechanism
    from gensolver.mechanisms.vcg import pivot_welfare
    from gensolver.solvers import Status

    from .helpers import goods_instance

    # B's pivot needs a solve: without B, A's {P, Q} (7) beats C's {Q} alone
    inst = goods_instance([("a", "A", 7, ["P", "Q"]), ("b", "B", 5, ["P"]), ("c", "C", 4, ["Q"])], ["P", "Q"])
    expected = brute_force(inst.without_bidder("B"))[0]
    P = from_instance(inst)
    x = np.zeros(P.n)
    x[[inst.bid_index["b"], inst.bid_index["c"]]] = 1.0
    fast = pivot_solve(P, inst.bidder_ids.index("B"), x, lp_state(P), upper=9.0)
    plain = pivot_welfare(inst.without_bidder("B"), method="cpsat", time_limit=None, threads=1, hint=None)
    assert type(fast) is type(plain) is PivotResult
    for r in (fast, plain):
        assert r.status is Status.OPTIMAL and r.exact and r.welfare == pytest.approx(expected) == 7.0
        assert pickle.loads(pickle.dumps(r)) == r
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.welfare = 0.0  # type: ignore[misc]
    assert plain.winners == ("a",) and fast.how in ("trivial-bound", "dual-bound", "reduced-cost-fixing")
    for method in ("auto", "cpsat"):
        out = run_mechanism(inst, mechanism="vcg", method=method, options={"threads": 1})
        for bidder, doc in out.details["pivots"].items():
            assert list(doc) == list(fast.to_dict()) == ["status", "welfare", "bound", "seconds", "how", "limit", "work"]
            assert doc["welfare"] == pytest.approx(brute_force(inst.without_bidder(bidder))[0])
            # the fast path names its step; a re-solve passes on its method's message
            assert doc["status"] == "optimal" and isinstance(doc["how"], str) and (doc["how"] or method != "auto")
