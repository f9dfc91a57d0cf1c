"""The anytime engine behind ``auto``: certificates for its bounds, restricted MIPs and compact path.

Every expected value comes from an independent certificate: brute-force enumeration
(:func:`gensolver.verify.brute_force`), the feasibility checker, or SciPy's LP on the full
relaxation — never from the engine itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from gensolver import check_allocation, solve
from gensolver.model import GpuRound, GpuSpec, Task
from gensolver.solvers.anytime import column_generation as cg_module
from gensolver.solvers.anytime import exact_restricted, restricted_mip
from gensolver.solvers.anytime.column_generation import column_generation
from gensolver.solvers.anytime.exact_restricted import portfolio_exact, solve_exact_restricted
from gensolver.solvers.anytime.lns import merge_moves, row_neighbourhood
from gensolver.solvers.anytime.restricted_mip import solve_restricted, solve_restricted_cpsat, solve_restricted_highs
from gensolver.solvers.auto import solve_round
from gensolver.solvers.formulation import scales
from gensolver.solvers.formulation.bounds import lagrangian_bound
from gensolver.solvers.formulation.problem import MatrixProblem, fit_mask, from_instance, from_round
from gensolver.solvers.heuristics import first_fit_matrix, los_order, upgrade_swaps
from gensolver.testing import instances
from gensolver.verify import brute_force


def _full_lp(inst) -> float:
    A = sp.vstack([inst.capacity_matrix, inst.xor_matrix])
    b = np.concatenate([inst.capacity, np.ones(inst.n_bidders)])
    res = linprog(-inst.values, A_ub=A, b_ub=b, bounds=(0, 1), method="highs")
    assert res.status == 0
    return -res.fun


@settings(max_examples=25, deadline=None)
@given(instances(max_slots=4, max_bidders=5, max_bids_per_bidder=3), st.booleans())
def test_column_generation_bound_is_the_lp_optimum(inst, scipy_master):
    """Column generation converges to the full LP's value; every Lagrangian bound is >= it.

    Also with the SciPy master that replaces highspy where it is missing (re-solved from
    scratch each round): the same LP optimum through a different code path.
    """

    P = from_instance(inst)
    lp_full = _full_lp(inst)
    if scipy_master:
        real = cg_module._new_master
        cg_module._new_master = lambda P, cols, vertex_duals=False: cg_module._ScipyMaster(P, cols)
    try:
        state = column_generation(P, init_cols=np.array([0]), deadline=None)
    finally:
        if scipy_master:
            cg_module._new_master = real
    assert state.converged
    assert state.bound == pytest.approx(lp_full, rel=1e-6, abs=1e-6)
    for y in (np.zeros(P.cap.size), np.ones(P.cap.size), state.y):
        assert lagrangian_bound(P, y)[0] >= lp_full - 1e-7
    assert state.bound >= brute_force(inst)[0] - 1e-9


@settings(max_examples=30, deadline=None)
@given(instances(max_slots=3, max_bidders=4, max_bids_per_bidder=3), st.sampled_from([None, 0.05]))
def test_auto_answer_and_bound_against_brute_force(inst, time_limit):
    opt, _ = brute_force(inst)
    res = solve(inst, method="auto", time_limit=time_limit)
    cert = check_allocation(inst, res.winners, welfare=res.welfare)
    assert cert.feasible, cert.violations
    assert res.bound is not None and res.bound >= opt - 1e-9
    if time_limit is None:
        assert res.optimal and res.welfare == pytest.approx(opt, rel=1e-9, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(instances(max_slots=3, max_bidders=5, max_bids_per_bidder=3), st.sampled_from([0.001, 5.0]))
def test_portfolio_answer_and_bound_against_brute_force(inst, time_limit):
    """CP-SAT beside SCIP: a feasible answer, a bound no lower than the brute-force optimum
    (also when both are cut off almost at once), and the optimum when either proves it."""
    opt, _ = brute_force(inst)
    P = from_instance(inst)
    res = portfolio_exact(P, np.arange(P.n), time_limit=time_limit, hint=None, threads=2, seed=0)
    if res is None:  # CP-SAT declined: capacities that do not scale to integers
        return
    winners = [P.column_id(j) for j in np.flatnonzero(res.x > 0.5)]
    cert = check_allocation(inst, winners)
    assert cert.feasible, cert.violations
    if res.bound is not None:
        assert res.bound >= opt - 1e-7
    if res.optimal:
        assert float(P.values @ res.x) == pytest.approx(opt, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("solo_s", [1.0, 0.001])
def test_auto_runs_cpsat_then_the_portfolio_on_a_restricted_mip(monkeypatch, solo_s):
    """On a CATS round small enough for one restricted MIP, ``auto`` under a time limit runs
    CP-SAT alone for a short slice, then (if that did not prove it) CP-SAT beside SCIP; either
    way its answer and bound bracket the optimum that an unlimited exact solve proves. With
    one thread there is no pair."""
    from gensolver.instances.cats import arbitrary
    from gensolver.solvers.anytime import driver

    monkeypatch.setattr(driver, "PORTFOLIO_SOLO_S", solo_s)
    monkeypatch.setattr(driver, "PORTFOLIO_SOLO_SHARE", 0.0)
    inst = arbitrary(30, 150, seed=3)
    exact = solve(inst, method="cpsat")
    assert exact.optimal
    res = solve(inst, method="auto", time_limit=2.0, threads=2)
    cert = check_allocation(inst, res.winners, welfare=res.welfare)
    assert cert.feasible, cert.violations
    assert res.bound is not None and res.bound >= exact.welfare - 1e-6 * max(1.0, exact.welfare)
    assert res.welfare <= exact.welfare + 1e-6 * max(1.0, exact.welfare)
    restricted = [s for s in res.details["stages"] if s["stage"] == "exact-restricted"]
    assert restricted
    # proved by CP-SAT alone in a second (this round takes well under one); cut off after a
    # millisecond, the pair finishes the job
    assert restricted[0]["portfolio"] is (solo_s < 0.01)
    assert res.optimal
    one = solve(inst, method="auto", time_limit=2.0, threads=1)
    assert not any(s.get("portfolio") for s in one.details["stages"])


def _tiny_round(seed: int) -> GpuRound:
    rng = np.random.default_rng(seed)
    gpus = (GpuSpec("g0", 16.0, 1.0, "n0"), GpuSpec("g1", 24.0, 1.0, "n0"))
    tasks = []
    for k in range(4):
        pref = float(rng.choice([6, 8, 12, 16]))
        tasks.append(Task(f"t{k}", pref, pref * float(rng.choice([0.5, 1.0])), int(rng.integers(1, 3)),
                          float(rng.integers(5, 30)), urgency=float(rng.uniform(0, 1)),
                          elasticity=float(rng.choice([0.0, 0.5, 1.0])), compute=float(rng.choice([0.5, 1.0])),
                          release=int(rng.integers(0, 2)), gpus=int(rng.choice([1, 1, 2]))))
    return GpuRound(gpus, tuple(tasks), 3, memory_levels=2)


@pytest.mark.parametrize("seed", range(6))
def test_compact_path_matches_the_expansion(seed):
    """The vectorised matrix of a GpuRound is the expansion's, and the compact solve is optimal for it."""
    rnd = _tiny_round(seed)
    inst = rnd.expand()
    P, _ = from_round(rnd)
    ids = [P.column_id(j) for j in range(P.n)]
    assert ids == [b.id for b in inst.bids]
    assert np.allclose(P.values, inst.values)
    assert (abs(P.A - inst.capacity_matrix.tocsc()) > 1e-12).nnz == 0
    opt, _ = brute_force(inst)
    res = solve_round(rnd)
    cert = check_allocation(inst, res.winners, welfare=res.welfare)
    assert cert.feasible, cert.violations
    assert res.optimal and res.welfare == pytest.approx(opt, rel=1e-9, abs=1e-9)


def _naive_first_fit(inst, order, start=None):
    """Reference first fit, one bid at a time over the instance's own dicts (no matrices)."""
    residual = {(s.id, r): c for s in inst.slots for r, c in s.capacity.items()}
    taken: set[str] = set()
    chosen = []
    for j in (np.flatnonzero(start > 0.5).tolist() if start is not None else []):
        b = inst.bids[j]
        taken.add(b.bidder)
        chosen.append(j)
        for slot, res in b.demand.items():
            for r, q in res.items():
                residual[(slot, r)] -= q
    for j in order:
        b = inst.bids[j]
        if b.value <= 0 or b.bidder in taken:
            continue
        need = [((slot, r), q) for slot, res in b.demand.items() for r, q in res.items()]
        if all(q <= residual[k] + 1e-9 for k, q in need):
            for k, q in need:
                residual[k] -= q
            taken.add(b.bidder)
            chosen.append(j)
    return sorted(chosen)


@settings(max_examples=60, deadline=None)
@given(instances(max_slots=4, max_bidders=6, max_bids_per_bidder=4), st.randoms(use_true_random=False),
       st.booleans())
def test_chunked_first_fit_equals_sequential_first_fit(inst, rnd, with_start):
    """The chunked, pre-filtered first fit accepts exactly what a plain sequential pass does."""

    P = from_instance(inst)
    order = list(range(P.n))
    rnd.shuffle(order)
    start = None
    if with_start and P.n:
        # a feasible start: the first fit of a random prefix
        start = np.zeros(P.n)
        start[_naive_first_fit(inst, order[: max(1, P.n // 3)])] = 1.0
    x = first_fit_matrix(P, np.array(order, dtype=np.int64), start=start)
    assert np.flatnonzero(x > 0.5).tolist() == _naive_first_fit(inst, order, start)


def test_chunked_first_fit_on_a_large_round_equals_sequential():
    """Many chunks (thousands of columns): same answer as the plain loop."""
    from gensolver.instances.gpu import gpu_round

    inst = gpu_round(n_gpus=4, steps=8, n_tasks=30, seed=3).expand()
    P = from_instance(inst)
    order = los_order(P, 0.5, P.normalised_size())
    assert P.n > 1000
    x = first_fit_matrix(P, order)
    assert np.flatnonzero(x > 0.5).tolist() == _naive_first_fit(inst, order.tolist())


@settings(max_examples=30, deadline=None)
@given(instances(max_slots=3, max_bidders=5, max_bids_per_bidder=3), st.randoms(use_true_random=False))
def test_highs_restricted_mip_matches_brute_force_and_scip(inst, rnd):
    """HiGHS restricted MIP: over all columns it reaches brute force's optimum; over a random
    subset with one column fixed (the LNS form) it matches SCIP on the same sub-problem."""

    P = from_instance(inst)
    opt, _ = brute_force(inst)

    order = np.arange(P.n)
    rnd.shuffle(order)
    start = first_fit_matrix(P, order)  # a feasible, usually suboptimal hint
    for hint in (None, start):
        full = solve_restricted_highs(P, np.arange(P.n), time_limit=None, hint=hint)
        assert full.optimal
        assert float(P.values @ full.x) == pytest.approx(opt, rel=1e-9, abs=1e-9)
        assert full.bound >= opt - 1e-7
    # LNS form: fix one column that fits alone, free a random subset of the other owners
    fits = [j for j in range(P.n) if np.all(P.A[:, j].toarray().ravel() <= P.cap + 1e-9)]
    if not fits:
        return
    j0 = rnd.choice(fits)
    fixed = np.zeros(P.n)
    fixed[j0] = 1.0
    residual = P.cap - P.A @ fixed
    cols = np.array([j for j in range(P.n) if P.owner[j] != P.owner[j0] and rnd.random() < 0.7], dtype=np.int64)
    a = solve_restricted_highs(P, cols, time_limit=None, hint=None, cap=residual, fixed=fixed)
    b = solve_restricted(P, cols, time_limit=None, hint=None, cap=residual, fixed=fixed)
    assert a.optimal and b.optimal
    assert float(P.values @ a.x) == pytest.approx(float(P.values @ b.x), rel=1e-9, abs=1e-9)
    assert a.x[j0] == 1.0
    assert np.all(P.A @ a.x <= P.cap + 1e-7)


def test_highs_restricted_mip_does_not_return_the_start_as_optimal():
    """Regression (found by the VCG regret property test): HiGHS 1.16, given a MIP start that
    its presolve beats, reported "optimal" with the optimal value but handed the start back."""
    from gensolver.model import SCHEMA, from_dict

    inst = from_dict({"schema": SCHEMA,
                      "slots": [{"id": "s0", "capacity": {"units": 2}}, {"id": "s1", "capacity": {"units": 1}},
                                {"id": "s2", "capacity": {"units": 1}}],
                      "bids": [{"id": "b0_0", "bidder": "B0", "value": 67.0, "demand": {"s0": {"units": 1}}},
                               {"id": "b0_1", "bidder": "B0", "value": 72.27039510598661,
                                "demand": {"s1": {"units": 1}, "s2": {"units": 1}}},
                               {"id": "b1_0", "bidder": "B1", "value": 74.0, "demand": {"s0": {"units": 2}, "s1": {"units": 1}}},
                               {"id": "b1_1", "bidder": "B1", "value": 7.0, "demand": {"s0": {"units": 1}}},
                               {"id": "b2_0", "bidder": "B2", "value": 1.0, "demand": {"s0": {"units": 1}}}]})
    P = from_instance(inst)
    opt, _ = brute_force(inst)
    res = solve_restricted_highs(P, np.arange(P.n), time_limit=None, hint=np.array([1.0, 0.0, 0.0, 1.0, 0.0]))
    assert res.optimal
    assert float(P.values @ res.x) == pytest.approx(opt)
    assert solve(inst, method="auto").welfare == pytest.approx(opt)


@settings(max_examples=60, deadline=None)
@given(instances(max_slots=4, max_bidders=6, max_bids_per_bidder=4), st.randoms(use_true_random=False))
def test_upgrade_swaps_keeps_feasibility_and_never_loses_value(inst, rnd):
    """Swapping winners to better bundles of their own keeps every capacity (checked by the
    independent checker) and XOR constraint, and never lowers the welfare."""

    P = from_instance(inst)
    order = list(range(P.n))
    rnd.shuffle(order)
    x0 = first_fit_matrix(P, np.array(order, dtype=np.int64))
    x1 = upgrade_swaps(P, x0)
    winners = [inst.bids[j].id for j in np.flatnonzero(x1 > 0.5)]
    cert = check_allocation(inst, winners, welfare=float(P.values @ x1))
    assert cert.feasible, cert.violations
    assert float(P.values @ x1) >= float(P.values @ x0) - 1e-12


def test_upgrade_swaps_moves_a_winner_to_its_better_bundle():
    """One slot of 2 units; A holds its 1-unit bid (value 1) while its 2-unit bid (value 3) fits."""
    from gensolver.model import SCHEMA, from_dict

    inst = from_dict({"schema": SCHEMA, "slots": [{"id": "s", "capacity": {"units": 2}}],
                      "bids": [{"id": "a1", "bidder": "A", "value": 1.0, "demand": {"s": {"units": 1}}},
                               {"id": "a2", "bidder": "A", "value": 3.0, "demand": {"s": {"units": 2}}}]})
    P = from_instance(inst)
    assert upgrade_swaps(P, np.array([1.0, 0.0])).tolist() == [0.0, 1.0]


def test_deterministic_budget_gives_the_same_answer_on_every_run():
    """``deterministic=True``: the same winners and bound on every run, on an idle or a loaded CPU.

    The budget binds (the search stops unproved, its last stage cut by the budget), so any stage
    still decided on the wall clock would show up as a different answer under load.
    """
    import subprocess
    import sys

    from gensolver.instances.gpu import gpu_round

    inst = gpu_round(n_gpus=4, n_tasks=30, steps=12, seed=5).expand()

    def run():
        res = solve(inst, method="auto", time_limit=0.5, threads=2, seed=3, options={"deterministic": True})
        cert = check_allocation(inst, res.winners, welfare=res.welfare)
        assert cert.feasible, cert.violations
        return res

    first = run()
    stages = first.details["stages"]
    assert not first.optimal  # the budget cut the search short
    assert stages[-1]["stage"] in ("exact-restricted", "lns")  # ... in a search stage, not before it
    # the work charged stays near the budget (one stage may overshoot by its last step)
    assert 0.5 - 0.1 <= stages[-1]["work"] <= 0.5 * 1.5  # LNS stops with under 0.1 left
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = run()
    finally:
        hog.kill()
        hog.wait()
    again = run()
    for other in (loaded, again):
        assert other.winners == first.winners
        assert other.welfare == first.welfare and other.bound == first.bound
        assert [s["stage"] for s in other.details["stages"]] == [s["stage"] for s in stages]


def test_deterministic_option_is_validated_and_leaves_unlimited_runs_unchanged():
    from gensolver.instances.cats import arbitrary

    inst = arbitrary(20, 60, seed=4)
    plain = solve(inst, method="auto")
    det = solve(inst, method="auto", options={"deterministic": True})
    assert plain.optimal and det.optimal and det.winners == plain.winners
    with pytest.raises(ValueError, match="deterministc"):
        solve(inst, method="auto", options={"deterministc": True})


@pytest.mark.parametrize("seed", range(4))
def test_compact_matrix_is_the_same_for_any_chunk_size(seed):
    """from_round writes the CSC arrays chunk by chunk; chunk boundaries must not show."""
    rnd = _tiny_round(seed)
    ref = rnd.expand().capacity_matrix.tocsc()
    for chunk in (1, 2, 7, 1 << 20):
        P, _ = from_round(rnd, chunk_cells=chunk)
        assert P.A.has_sorted_indices
        assert (abs(P.A - ref) > 1e-12).nnz == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(1, 8), st.integers(1, 400), st.integers(0, 2**31 - 1))
def test_chunked_fit_mask_and_sizes_equal_per_column_loops(n, rows, chunk, seed):
    """The chunked vectorised helpers against plain per-column loops (any chunk size)."""

    rng = np.random.default_rng(seed)
    A = sp.random(rows, n, density=0.4, random_state=seed, format="csc")
    cap = np.where(rng.random(rows) < 0.15, 0.0, rng.uniform(0, 1, rows))
    residual = rng.uniform(0, 1, rows)
    P = MatrixProblem(rng.random(n), A, cap, rng.integers(0, 3, n), 3, str)
    dense = A.toarray()
    fits = np.all(dense <= residual[:, None], axis=0)
    cols = rng.permutation(n)[: max(1, n // 2)]
    assert np.array_equal(fit_mask(A, None, residual, chunk), fits)
    assert np.array_equal(fit_mask(A, cols, residual, chunk), fits[cols])
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.array([sum(a / c if c > 0 else np.inf for a, c in zip(dense[:, j], cap) if a != 0)
                        for j in range(n)])
    got = P.normalised_size(chunk)
    assert np.array_equal(np.isinf(got), np.isinf(ref))
    assert np.allclose(got[~np.isinf(ref)], ref[~np.isinf(ref)])


def test_must_win_constraints_report_infeasibility():
    """An owner without a column among the candidates, or two must-win owners whose only
    columns conflict: the restricted problem is infeasible (reported as optimal, x = 0)."""
    from gensolver.model import Bid, Instance, Slot

    slots = (Slot("g", {"units": 1.0}),)
    bids = (Bid("a", "A", 3.0, {"g": {"units": 1.0}}), Bid("b", "B", 2.0, {"g": {"units": 1.0}}),
            Bid("c", "C", 1.0, {}))
    P = from_instance(Instance(slots, bids))
    both = solve_restricted_cpsat(P, np.arange(3), time_limit=None, hint=None, exact=True, must_win=np.array([0, 1]))
    assert both.infeasible and both.optimal and not both.x.any()
    missing = solve_restricted_cpsat(P, np.array([0, 2]), time_limit=None, hint=None, exact=True,
                                     must_win=np.array([1]))
    assert missing.infeasible
    one = solve_restricted_cpsat(P, np.arange(3), time_limit=None, hint=None, exact=True, must_win=np.array([1]))
    assert not one.infeasible and one.optimal and one.x[1] == 1.0 and one.x[0] == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_row_neighbourhood_frees_enough_winners_and_keeps_the_rest_fixed(seed):
    """An LNS neighbourhood frees at least ``free_target`` winners (all are reachable through
    their rows), keeps every other winner fixed, and offers the freed columns again."""
    from gensolver.instances.gpu import gpu_round

    P, _ = from_round(gpu_round(n_gpus=4, n_tasks=24, steps=10, seed=seed))
    x = first_fit_matrix(P, los_order(P, 0.5, P.normalised_size()))
    n_win = int(x.sum())
    rng = np.random.default_rng(seed)
    for target in (1, 3, n_win // 2, n_win):
        cols, residual, fixed = row_neighbourhood(P, x, rng, target, 500, -P.values)
        freed = np.flatnonzero((x > 0.5) & (fixed < 0.5))
        assert freed.size >= min(target, n_win)
        assert np.all(fixed <= x)  # only winners of x are kept, none added
        assert np.isin(freed, cols).all()
        assert np.allclose(residual, P.cap - P.A @ fixed)
        assert np.all(residual >= -1e-9)


def _independent_feasible(A: np.ndarray, cap: np.ndarray, owner: np.ndarray, x: np.ndarray) -> bool:
    """Feasibility by plain loops over a dense matrix (not MatrixProblem.feasible)."""
    if not np.all((x == 0) | (x == 1)):
        return False
    for r in range(A.shape[0]):
        if sum(A[r, j] * x[j] for j in range(x.size)) > cap[r] + 1e-9:
            return False
    return all(sum(x[j] for j in range(x.size) if owner[j] == o) <= 1 for o in set(owner.tolist()))


def _tiny(A_dense: list[list[float]], cap: list[float], owner: list[int], values: list[float]) -> MatrixProblem:
    return MatrixProblem(np.array(values, float), sp.csc_matrix(np.array(A_dense, float)), np.array(cap, float),
                         np.array(owner), max(owner) + 1, str)


def test_merge_moves_adds_disjoint_moves_and_refuses_conflicting_ones():
    """Two neighbourhoods improved different rows: both moves are kept. A move that gives an
    owner a second column (or reuses capacity the other move took) is left out, and the best
    single answer stands; the naive sum of those moves is infeasible (the check can fail)."""
    #            c0  c1  c2  c3  c4
    A = [[1, 1, 0, 0, 0],    # row 0
         [0, 0, 1, 1, 1]]    # row 1
    P = _tiny(A, [1, 1], [0, 1, 2, 3, 1], [1, 2, 1, 3, 5])
    x = np.array([1, 0, 1, 0, 0.0])                      # welfare 2
    move_row0 = np.array([0, 1, 1, 0, 0.0])              # c0 -> c1: +1
    move_row1 = np.array([1, 0, 0, 1, 0.0])              # c2 -> c3: +2
    merged = merge_moves(P, x, [move_row0, move_row1])
    assert merged.tolist() == [0, 1, 0, 1, 0]             # both: welfare 5
    assert _independent_feasible(np.array(A, float), P.cap, P.owner, merged)
    owner1_twice = np.array([1, 0, 0, 0, 1.0])           # c2 -> c4 (owner 1): +4
    naive = x + (move_row0 - x) + (owner1_twice - x)
    assert not _independent_feasible(np.array(A, float), P.cap, P.owner, naive)
    merged = merge_moves(P, x, [move_row0, owner1_twice])
    assert merged.tolist() == owner1_twice.tolist()       # the better single move only
    assert merge_moves(P, x, [x.copy(), x.copy()]).tolist() == x.tolist()  # no gain: x itself


@pytest.mark.parametrize("seed", range(6))
def test_merge_moves_of_random_neighbourhoods_is_feasible_and_at_least_the_best(seed):
    """Random LNS-like candidates (winners freed, then first fit in a random order) on a GPU
    round: the merge passes an independent feasibility check and is worth at least the best."""
    from gensolver.instances.gpu import gpu_round

    P, _ = from_round(gpu_round(n_gpus=3, n_tasks=12, steps=6, seed=seed))
    rng = np.random.default_rng(seed)
    x = first_fit_matrix(P, los_order(P, 1.0, P.normalised_size()))
    cands = []
    for _ in range(3):
        start = x.copy()
        start[rng.choice(np.flatnonzero(x), size=max(1, int(x.sum()) // 3), replace=False)] = 0
        cands.append(first_fit_matrix(P, rng.permutation(P.n), start=start))
    merged = merge_moves(P, x, cands)
    assert _independent_feasible(P.A.toarray(), P.cap, P.owner, merged)
    assert P.values @ merged >= max(P.values @ c for c in cands + [x]) - 1e-9


def test_must_win_infeasibility_is_no_proof_with_rounded_capacities():
    """Heuristic mode rounds demands up (conservatively): a must-win problem it finds
    infeasible may be feasible, so it must not be reported as optimal or infeasible."""
    from gensolver.model import Bid, Instance, Slot

    # 3 x 1/3 fits 1.0 (the capacity rule of model.tolerances), but not once each demand is
    # rounded up to whole units of the integer row: each rounding adds almost one unit, and the
    # row's slack is one unit
    slots = (Slot("g", {"units": 1.0}),)
    bids = (*(Bid(x, x.upper(), 1.0, {"g": {"units": 1 / 3}}) for x in "abc"),
            Bid("d", "D", 1.0, {"g": {"units": 0.5}}))  # makes the row bind
    inst = Instance(slots, bids)
    assert check_allocation(inst, ("a", "b", "c")).feasible  # a, b and c fit together
    P = from_instance(inst)
    res = solve_restricted_cpsat(P, np.arange(4), time_limit=1.0, hint=None, must_win=np.array([0, 1, 2]))
    assert not res.infeasible and not res.optimal


def _milp_with_must_win(P, cols, must):
    """Independent reference: SciPy's MILP (HiGHS) on the restricted problem with one
    ``sum of the owner's columns >= 1`` row per must-win owner."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    A = P.A[:, cols].tocsr()
    owners = P.owner[cols]
    xor = sp.csr_matrix((np.ones(cols.size), (owners, np.arange(cols.size))), shape=(P.n_owners, cols.size))
    lower = np.zeros(P.n_owners)
    lower[must] = 1.0
    res = milp(-P.values[cols], integrality=np.ones(cols.size), bounds=Bounds(0, 1),
               constraints=[LinearConstraint(A, -np.inf, P.cap), LinearConstraint(xor, lower, 1.0)])
    assert res.success
    return -res.fun


def test_must_win_solves_put_the_clauses_in_the_lp():
    """CATS matching pivots with every other main winner made to win: CP-SAT must prove them
    within a small deterministic budget (with the must-win clauses left out of its LP it
    needed over 2 units on each, and over 10 s per pivot inside VCG), and its optimum must
    equal SciPy's MILP with must-win rows."""
    from gensolver.instances import cats

    inst = cats.matching(60, 300, seed=11)
    P = from_instance(inst)
    main = solve(inst, method="cpsat", threads=1)  # not "highs": refused once PuLP has loaded highspy in this worker
    win_owners = P.owner[[inst.bid_index[w] for w in main.winners]]
    for k in win_owners[:3]:
        Pk = MatrixProblem(np.where(P.owner == k, 0.0, P.values), P.A, P.cap, P.owner, P.n_owners, P.column_id)
        cols = np.flatnonzero(P.owner != k)
        must = np.array(sorted(set(win_owners.tolist()) - {int(k)}))
        res = solve_restricted_cpsat(Pk, cols, time_limit=1.0, hint=None, threads=1, exact=True,
                                     deterministic=True, must_win=must)
        assert res.optimal and not res.infeasible
        assert float(Pk.values @ res.x) == pytest.approx(_milp_with_must_win(Pk, cols, must), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(instances(max_slots=3, max_bidders=5, max_bids_per_bidder=2),
       st.lists(st.floats(0.01, 100.0, allow_nan=False), min_size=10, max_size=10))
def test_floating_point_values_are_proven_by_cpsat_within_the_mip_gap(inst, noise):
    """Values that no power of ten makes integral (as in GPU rounds) are rounded finely with a
    certified error: the exact restricted MIP is then proven by CP-SAT alone (before, exact
    mode refused such values and left the proof to HiGHS), and its optimum is brute force's;
    likewise for the ``cpsat`` method."""
    from gensolver.model import Bid, Instance

    bids = tuple(Bid(b.id, b.bidder, b.value + noise[k % len(noise)] / 7.0, b.demand)
                 for k, b in enumerate(inst.bids))
    inst = Instance(inst.slots, bids)
    P = from_instance(inst)
    res = solve_restricted_cpsat(P, np.arange(P.n), time_limit=None, hint=None, threads=1, exact=True)
    assert res is not None and res.optimal and res.rounded_optimal
    assert check_allocation(inst, [inst.bids[j].id for j in np.flatnonzero(res.x)]).feasible
    opt, _ = brute_force(inst)
    assert float(P.values @ res.x) == pytest.approx(opt, rel=1e-9, abs=1e-9)
    assert res.bound >= opt - 1e-9 and res.bound - opt <= 1e-9 * max(1.0, opt)
    # the cpsat method rounds the same way (before, a scale of ~1e7 / max value left such
    # answers "feasible" with a gap of about 1e-7)
    # and the race of CP-SAT and HiGHS that the exact stage runs for such values

    raced = solve_exact_restricted(P, np.arange(P.n), time_limit=None, hint=None, threads=2)
    assert raced.optimal and float(P.values @ raced.x) == pytest.approx(opt, rel=1e-9, abs=1e-9)
    raw = solve(inst, method="cpsat", threads=1)
    assert raw.status.value == "optimal" and raw.welfare == pytest.approx(opt, rel=1e-9, abs=1e-9)
    assert raw.bound >= opt - 1e-9


def test_coarse_rounding_is_not_called_optimal(monkeypatch):
    """The certificate is checked, not assumed: with values rounded to whole units, CP-SAT's
    rounded optimum is no proof (the widened bound is far off), and the exact restricted MIP
    falls back to HiGHS, which proves the true optimum."""
    from gensolver.model import Bid, Instance, Slot

    slots = (Slot("g", {"units": 1.0}),)
    # no power of ten up to 1e6 makes these integral
    bids = (Bid("a", "A", 1.4 + 1e-7 / 3, {"g": {"units": 1.0}}), Bid("b", "B", 1.45 + 1e-7 / 3, {"g": {"units": 1.0}}))
    P = from_instance(Instance(slots, bids))

    monkeypatch.setattr(scales, "certified_value_scale", lambda vals, owners: 1.0)
    res = solve_restricted_cpsat(P, np.arange(2), time_limit=None, hint=None, threads=1, exact=True)
    assert res.rounded_optimal and not res.optimal  # 1.4 and 1.45 both round to 1
    assert res.bound >= 1.45
    proven = solve_exact_restricted(P, np.arange(2), time_limit=None, hint=None, threads=1)
    assert proven.optimal and float(P.values @ proven.x) == pytest.approx(1.45 + 1e-7 / 3, rel=1e-12)


def test_cpsat_proves_an_empty_answer_with_floating_point_values():
    """Nothing fits: the optimum is 0 and CP-SAT's widened bound is a rounding error (about
    2e-11 here), which the certificate accepts with its absolute floor; a purely relative
    gap would leave the empty answer "feasible" with a gap of 100 %."""
    from gensolver.model import Bid, Instance, Slot

    slots = (Slot("s", {"units": 1.0}),)
    bids = tuple(Bid(f"b{i}", f"B{i}", 1000.0 + i / 3.0, {"s": {"units": 2.0}}) for i in range(20))
    res = solve(Instance(slots, bids), method="cpsat", threads=1)
    assert res.status.value == "optimal" and res.winners == () and res.welfare == 0.0
    assert 0.0 <= res.bound <= 1e-9


@pytest.mark.parametrize("slow", ["solve_restricted_highs", "solve_restricted_cpsat"])
def test_the_exact_race_stops_the_slower_solver(monkeypatch, slow):
    """Without a time limit, floating-point problems go to CP-SAT and HiGHS side by side: the
    first proof is returned (here brute force's optimum) and the other solver is told to stop.
    The slower side is a stand-in that runs until stopped (for 60 s at most), so that the stop
    is what ends it."""
    import threading

    from gensolver.model import Bid, Instance, Slot

    slots = (Slot("g0", {"memory": 80.0, "compute": 1.0}), Slot("g1", {"memory": 80.0, "compute": 1.0}))
    bids = tuple(Bid(f"b{i}", f"B{i // 2}", 10.0 + i / 3.0, {f"g{i % 2}": {"memory": 30.0 + 10 * (i % 3), "compute": 0.5}})
                 for i in range(8))
    inst = Instance(slots, bids)
    P = from_instance(inst)
    stopped = threading.Event()
    entered: list[bool] = []

    def until_stopped(P, cols, *, race=None, **kwargs):
        entered.append(race is not None and race.enter(stopped.set))
        if entered[-1]:
            stopped.wait(60)
        return restricted_mip.SubResult(np.zeros(P.n), False, None, 0.0)

    monkeypatch.setattr(exact_restricted, "solve_restricted_highs" if slow == "solve_restricted_highs" else
                        "solve_restricted_cpsat", until_stopped)
    res = solve_exact_restricted(P, np.arange(P.n), time_limit=None, hint=None, threads=2)
    assert res.optimal
    assert float(P.values @ res.x) == pytest.approx(brute_force(inst)[0], rel=1e-9)
    # it was either stopped while running or, when the winner was done before it started,
    # told not to start at all
    assert entered == [True] and stopped.is_set() or entered == [False], "the slower solver was not stopped"


def test_tiny_capacities_do_not_let_a_backend_tolerance_prove_a_wrong_answer():
    """Found by fuzzing: with a memory capacity of 1.2e-6, HiGHS's absolute tolerance (1e-6)
    let bid b1 (20 % over it) "fit"; the restricted MIP called that infeasible point optimal,
    and ``auto`` reported a worse allocation as optimal. Rows are now lifted to size 1 and a
    backend's point is checked before its optimality is believed."""
    from gensolver.model import Bid, Instance, Slot

    slots = (Slot("s0", {"memory": 0.9759448701003268}), Slot("s1", {"memory": 52.49083851125539}),
             Slot("s2", {"memory": 1.2116205788809173e-06}))
    bids = (
        Bid("b0", "p1", 429581749.73381776, {"s2": {"memory": 3.634861736642752e-07}}),
        Bid("b1", "p1", 668629794.897647, {"s2": {"memory": 1.4539446946571007e-06}}),
        Bid("b2", "p1", 462581218.5102735, {"s2": {"memory": 3.634861736642752e-07}, "s1": {"memory": 15.747251553376616},
                                           "s0": {"memory": 0.6831614090702287}}),
        Bid("b3", "p2", 621797357.6875893, {"s1": {"memory": 0.0}}),
        Bid("b4", "p1", 146253677.3237537, {"s1": {"memory": 0.0}}),
        Bid("b5", "p1", 303716532.7670384, {"s2": {"memory": 1.2116205788809173e-06}}),
        Bid("b6", "p1", 439871331.1201896, {"s0": {"memory": 0.29278346103009806}}),
    )
    inst = Instance(slots, bids)
    opt, _ = brute_force(inst)
    res = solve(inst, method="auto")
    assert check_allocation(inst, res.winners, welfare=res.welfare).feasible
    assert res.status.value == "optimal" and res.welfare == pytest.approx(opt, rel=1e-12)
    P = from_instance(inst)
    for restricted in (solve_restricted_highs, solve_restricted):
        sub = restricted(P, np.array([0, 1, 2, 3, 6]), time_limit=None, hint=None)
        if sub.optimal:  # a proof must come with a point that fits
            assert check_allocation(inst, [bids[j].id for j in np.flatnonzero(sub.x)]).feasible
            assert float(P.values @ sub.x) == pytest.approx(opt, rel=1e-12)
