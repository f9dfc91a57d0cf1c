"""The exact backends called directly (:mod:`gensolver.solvers.exact.cpsat`,
:mod:`gensolver.solvers.exact.ortools_linear`, :mod:`gensolver.solvers.exact.pulp_backend`),
not through ``solve``: on random XOR rounds with fractional demands each one's answer is
feasible (the independent certificate) and worth brute force's optimum, and a claimed optimum
is one."""

from __future__ import annotations

import random

import pytest

from gensolver import Status, from_dict
from gensolver.solvers import get_method
from gensolver.solvers.exact.cpsat import solve_cpsat
from gensolver.solvers.exact.ortools_linear import solve_cbc, solve_highs, solve_scip
from gensolver.solvers.exact.pulp_backend import solve_pulp_cbc, solve_pulp_highs
from gensolver.verify import brute_force, check_allocation

BACKENDS = {"cpsat": solve_cpsat, "scip": solve_scip, "highs": solve_highs, "cbc": solve_cbc,
            "pulp-cbc": solve_pulp_cbc, "pulp-highs": solve_pulp_highs}


def _round(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    slots = [{"id": f"s{k}", "capacity": {"mem": rng.choice([1.0, 1.5, 2.0, 0.75])}} for k in range(3)]
    bids = []
    for b in range(rng.randint(3, 6)):
        for j in range(rng.randint(1, 2)):  # XOR bids of one bidder
            picked = rng.sample([s["id"] for s in slots], rng.randint(1, 2))
            bids.append({"id": f"b{b}.{j}", "bidder": f"B{b}", "value": round(rng.uniform(1, 10), 3),
                         "demand": {s: {"mem": rng.choice([0.25, 0.5, 0.75, 1.0])} for s in picked}})
    return from_dict({"schema": "gensolver.instance/v1", "slots": slots, "bids": bids})


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_each_backend_finds_brute_forces_optimum(name: str) -> None:
    ok, why = get_method(name).available()
    if not ok:
        pytest.skip(why)
    for seed in range(6):
        inst = _round(seed)
        best, _ = brute_force(inst)
        alloc = BACKENDS[name](inst, threads=1)
        assert check_allocation(inst, alloc.winners, welfare=alloc.welfare).feasible, (name, seed)
        assert alloc.status is Status.OPTIMAL, (name, seed, alloc.message)
        assert alloc.welfare == pytest.approx(best, abs=1e-6), (name, seed)
        assert alloc.bound is None or alloc.bound >= best - 1e-6, (name, seed)


def test_the_certificate_refuses_an_overfull_answer() -> None:
    """The check above can fail: every bid of a round at once does not fit."""
    inst = _round(0)
    every = [b.id for b in inst.bids]
    assert not check_allocation(inst, every).feasible


@pytest.mark.parametrize("name", ["cbc", "scip"])
def test_an_infeasible_answer_cut_short_by_the_time_limit_is_the_empty_allocation(name, monkeypatch) -> None:
    # CBC through OR-Tools answers INFEASIBLE when a tight time limit on a loaded core stops it
    # before any solution; winner determination is never infeasible (no bid won fits), so a
    # time-limited run says "feasible" with the empty allocation. Without a limit the answer
    # stays a failure. The backend's answer is forced here, so no machine speed is involved.
    ok, why = get_method(name).available()
    if not ok:
        pytest.skip(why)
    from ortools.linear_solver import pywraplp

    monkeypatch.setattr(pywraplp.Solver, "Solve", lambda self, *a: pywraplp.Solver.INFEASIBLE)
    inst = _round(0)
    cut = BACKENDS[name](inst, threads=1, time_limit=0.01)
    assert cut.status is Status.FEASIBLE and cut.winners == () and cut.welfare == 0.0, cut.message
    assert "time limit" in cut.message
    assert BACKENDS[name](inst, threads=1).status is Status.INFEASIBLE


@pytest.mark.parametrize("name", ["pulp-cbc", "pulp-highs"])
def test_a_time_limited_infeasible_through_pulp_is_the_empty_allocation(name, monkeypatch) -> None:
    # The same rule through PuLP: its solve is forced to report an infeasible solution status,
    # as CBC's solution file does when the limit stops it before any solution.
    ok, why = get_method(name).available()
    if not ok:
        pytest.skip(why)
    import pulp

    def infeasible(self, solver=None, **kw):  # type: ignore[no-untyped-def]
        self.status, self.sol_status = pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible
        return self.status

    monkeypatch.setattr(pulp.LpProblem, "solve", infeasible)
    inst = _round(0)
    cut = BACKENDS[name](inst, threads=1, time_limit=0.01)
    assert cut.status is Status.FEASIBLE and cut.winners == () and cut.welfare == 0.0, cut.message
    assert "time limit" in cut.message
    assert BACKENDS[name](inst, threads=1).status is Status.INFEASIBLE
