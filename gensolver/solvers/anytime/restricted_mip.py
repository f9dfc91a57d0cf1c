"""Restricted MIPs: the welfare problem over a subset of columns, on CP-SAT, HiGHS or SCIP.

A restricted MIP fixes every column outside ``cols`` to 0. With residual capacities ``cap``
and a 0/1 vector ``fixed`` of columns kept at 1 it is an LNS neighbourhood; with ``must_win``
owners it is a VCG pivot with settled owners. Each backend builds its model from the
:class:`~gensolver.solvers.formulation.problem.MatrixProblem` and returns a
:class:`SubResult` over all columns; a point a floating-point backend calls optimal is checked
against the format's tolerance before the claim is passed on.

References
----------
Danna, Rothberg & Le Pape, "Exploring relaxation induced neighborhoods to improve MIP
solutions", Math. Prog. 102, 2005 (RINS-style restricted MIPs).
Perron & Didier, "CP-SAT", OR-Tools (Google), https://developers.google.com/optimization.
Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10 (2018).
Achterberg, "SCIP: solving constraint integer programs", Math. Prog. Comp. 1 (2009).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from ..exact.common import new_highs, quiet_native_output
from ..formulation.problem import MatrixProblem, xor_groups
from ..formulation.scales import (
    CAPACITY_TOL,
    DEFAULT_MIP_GAP,
    integer_row,
    objective_lift,
    objective_scale,
    row_lifts,
    within_mip_gap,
)
from .budget import cpsat_work_factor

__all__ = ["SubResult", "Race", "solve_restricted", "solve_restricted_highs", "solve_restricted_cpsat"]

#: HiGHS instances share one global scheduler: one MIP run at a time
HIGHS_LOCK = threading.Lock()


def _must_win_groups(P: MatrixProblem, cols: np.ndarray, must_win: np.ndarray | None) -> list[np.ndarray] | None:
    """Positions (into ``cols``) of each owner in ``must_win``; ``None`` when one has no column
    there (the restricted problem is then infeasible)."""
    if must_win is None or len(must_win) == 0:
        return []
    owners = P.owner[cols]
    out = []
    for o in np.unique(np.asarray(must_win, dtype=np.int64)).tolist():
        pos = np.flatnonzero(owners == o)
        if pos.size == 0:
            return None
        out.append(pos)
    return out



@dataclass(frozen=True)
class SubResult:
    x: np.ndarray  # over all columns
    optimal: bool
    bound: float | None
    seconds: float
    rounded_optimal: bool = False  # CP-SAT solved the problem with rounded values to optimality
    work: float = 0.0  # work units spent (from CP-SAT's deterministic time; see WorkClock)
    infeasible: bool = False  # must-win constraints cannot all hold (then optimal, x all 0)


def solve_restricted(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                     threads: int | None = None, cap: np.ndarray | None = None,
                     fixed: np.ndarray | None = None, race: Race | None = None) -> SubResult:
    """Exact MIP (SCIP) over the columns ``cols``; other columns fixed to 0.

    With ``cap`` (residual capacities) and ``fixed`` (0/1 vector of columns fixed to 1, whose
    owners must not appear in ``cols``), the sub-problem is the LNS neighbourhood; the returned
    ``x`` includes the fixed columns. ``race``: a :class:`Race` that can interrupt the solve.
    """
    cap_v = P.cap if cap is None else cap
    from ortools.linear_solver import pywraplp

    t0 = time.perf_counter()
    cols = np.asarray(cols, dtype=np.int64)
    with quiet_native_output():
        solver = pywraplp.Solver.CreateSolver("SCIP")
    inf = solver.infinity()
    x = [solver.BoolVar("") for _ in range(cols.size)]
    Ac = P.A[:, cols].tocsr()
    lift = row_lifts(Ac, cap_v)  # tiny rows scaled up: SCIP's tolerance is absolute
    for r in np.flatnonzero(np.diff(Ac.indptr)):
        lo, hi = Ac.indptr[r], Ac.indptr[r + 1]
        coefs = Ac.data[lo:hi]
        if coefs.sum() <= cap_v[r] + CAPACITY_TOL:
            continue  # cannot bind
        ct = solver.RowConstraint(-inf, float(cap_v[r] * lift[r]), "")
        for j, a in zip(Ac.indices[lo:hi].tolist(), (coefs * lift[r]).tolist()):
            ct.SetCoefficient(x[j], a)
    owners = P.owner[cols]
    for group in xor_groups(owners):
        ct = solver.RowConstraint(-inf, 1.0, "")
        for j in group:
            ct.SetCoefficient(x[j], 1.0)
    obj = solver.Objective()
    lift_obj = objective_lift(P.values[cols])  # tiny values scaled up (absolute gap tolerances)
    for j, v in enumerate((P.values[cols] * lift_obj).tolist()):
        obj.SetCoefficient(x[j], v)
    obj.SetMaximization()
    if hint is not None:
        solver.SetHint(x, (hint[cols] > 0.5).astype(float).tolist())
    if time_limit is not None:
        solver.SetTimeLimit(max(1, int(time_limit * 1000)))
    if threads:
        solver.SetNumThreads(int(threads))
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, DEFAULT_MIP_GAP)
    with quiet_native_output():
        if race is None or race.enter(solver.InterruptSolve):
            status = solver.Solve(params)
        else:
            status = pywraplp.Solver.NOT_SOLVED
    full = np.zeros(P.n) if fixed is None else (fixed > 0.5).astype(np.float64)
    optimal = status == pywraplp.Solver.OPTIMAL
    bound = None
    if status in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        xs = np.fromiter((v.solution_value() for v in x), dtype=np.float64, count=len(x))
        full[cols[xs > 0.5]] = 1.0
        bound = float(solver.Objective().BestBound()) / lift_obj
        if fixed is not None:
            bound += float(P.values @ full) - float(P.values[cols] @ (xs > 0.5))
        # the backend's feasibility tolerance is not the format's: its point is checked here
        optimal = optimal and P.feasible(full)
    return SubResult(full, optimal, bound, time.perf_counter() - t0)


def solve_restricted_highs(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                           threads: int | None = None, cap: np.ndarray | None = None,
                           fixed: np.ndarray | None = None, race: Race | None = None) -> SubResult:
    """Exact MIP over the columns ``cols`` with HiGHS (``highspy``), built from arrays in one call.

    Same contract as :func:`solve_restricted`: original (floating-point) data, so its
    optimality and bound are proofs; ``cap``/``fixed`` give the LNS form.
    """
    import highspy

    t0 = time.perf_counter()
    cap_v = P.cap if cap is None else cap
    cols = np.asarray(cols, dtype=np.int64)
    if cols.size == 0:  # nothing free: the fixed part is the answer
        full = np.zeros(P.n) if fixed is None else (fixed > 0.5).astype(np.float64)
        return SubResult(full, True, float(P.values @ full), time.perf_counter() - t0)
    Ac = P.A[:, cols].tocsr()
    can_bind = np.flatnonzero(np.asarray(Ac.sum(axis=1)).ravel() > cap_v + CAPACITY_TOL)
    owners = P.owner[cols]
    groups = xor_groups(owners)
    gi = np.repeat(np.arange(len(groups)), [len(g) for g in groups]) if groups else np.zeros(0, np.int64)
    gj = np.fromiter((j for g in groups for j in g), dtype=np.int64, count=int(gi.size))
    Xg = sp.csr_matrix((np.ones(gi.size), (gi, gj)), shape=(len(groups), cols.size))
    lift = row_lifts(Ac[can_bind], cap_v[can_bind])  # tiny rows scaled up (HiGHS's tolerance is absolute)
    M = sp.vstack([sp.diags(lift) @ Ac[can_bind], Xg], format="csc")
    M.sort_indices()
    n_rows = M.shape[0]
    h = new_highs()
    h.setOptionValue("mip_rel_gap", DEFAULT_MIP_GAP)
    h.setOptionValue("mip_abs_gap", DEFAULT_MIP_GAP)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(1e-3, float(time_limit)))
    # ``threads`` is not passed on: HiGHS fixes its thread pool at the first run in the
    # process and fails every later run that asks for a different size
    lp = highspy.HighsLp()
    lp.num_col_ = int(cols.size)
    lp.num_row_ = int(n_rows)
    lift_obj = objective_lift(P.values[cols])  # tiny values scaled up (HiGHS's gaps are absolute too)
    lp.col_cost_ = (P.values[cols] * lift_obj).astype(np.float64)
    lp.col_lower_ = np.zeros(cols.size)
    lp.col_upper_ = np.ones(cols.size)
    lp.row_lower_ = np.full(n_rows, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.maximum(cap_v[can_bind], 0.0) * lift, np.ones(len(groups))]).astype(np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = M.indptr.astype(np.int32)
    lp.a_matrix_.index_ = M.indices.astype(np.int32)
    lp.a_matrix_.value_ = M.data.astype(np.float64)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * int(cols.size)
    h.passModel(lp)
    # ``hint`` is deliberately not passed on (``setSolution``): HiGHS 1.16 can report
    # "optimal" with the optimal objective value yet hand back the user's start as the solution
    # when presolve solves the model (found by the VCG regret property test)
    with HIGHS_LOCK:  # HiGHS instances share one global scheduler: one MIP run at a time
        # (a highspy without cancelSolve cannot be stopped: the race then waits for it)
        if race is None or race.enter(getattr(h, "cancelSolve", lambda: None)):
            h.run()
    status = h.getModelStatus()
    full = np.zeros(P.n) if fixed is None else (fixed > 0.5).astype(np.float64)
    info = h.getInfo()
    optimal = status == highspy.HighsModelStatus.kOptimal
    bound = None
    if info.primal_solution_status == 2:  # a feasible point is available
        xs = np.asarray(h.getSolution().col_value) > 0.5
        reported = float(info.objective_function_value) / lift_obj
        if abs(float(P.values[cols] @ xs) - reported) > 1e-6 * max(1.0, abs(reported)):
            optimal = False  # the point handed back is not the one HiGHS's status describes
        full[cols[xs]] = 1.0
        bound = float(info.mip_dual_bound) / lift_obj
        if not np.isfinite(bound):
            bound = None
        elif fixed is not None:
            bound += float(P.values @ full) - float(P.values[cols] @ xs)
        # the backend's feasibility tolerance is not the format's: its point is checked here
        optimal = optimal and P.feasible(full)
    else:
        optimal = False
    return SubResult(full, optimal, bound, time.perf_counter() - t0)



def solve_restricted_cpsat(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                           threads: int | None = None, cap: np.ndarray | None = None,
                           fixed: np.ndarray | None = None, seed: int = 0,
                           exact: bool = False,
                           deterministic: bool = False, must_win: np.ndarray | None = None,
                           race: Race | None = None) -> SubResult | None:
    """The restricted MIP with CP-SAT.

    Heuristic mode (default, for LNS): capacities scaled to integers (conservatively when not
    exact), values rounded at 1e-6 of the largest; the bound is not used.
    ``exact=True``: only when every capacity row scales to integers exactly
    (:func:`~gensolver.solvers.exact.cpsat.integer_scale`), else ``None`` is returned. Values
    that scale exactly make CP-SAT's optimality and bound proofs for the original problem.
    Values that do not (floating-point valuations) are rounded at the finest scale that keeps
    every objective value below ``2**53``
    (:func:`~gensolver.solvers.exact.cpsat.objective_scale`); the bound is widened by the
    largest total rounding error (half a unit per possible winner), so it stays valid, and
    optimality is claimed when that widened bound is within the MIP backends' gap of the
    solution's true value (:func:`~gensolver.solvers.formulation.scales.within_mip_gap`).
    ``rounded_optimal`` says CP-SAT solved the rounded problem to optimality.
    ``deterministic=True``: ``time_limit`` is CP-SAT's deterministic time (several workers
    then interleave their search deterministically), so the answer is the same on every run;
    exactly scalable values are never rounded.
    ``must_win``: owners that must each win one column (VCG pivots, see :func:`pivot_solve`);
    when that is proven impossible the result is ``optimal`` with ``infeasible=True`` and
    ``x`` all 0 (in heuristic mode, whose capacities are rounded up, infeasibility proves
    nothing and the result is simply not optimal).
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    cap_v = P.cap if cap is None else cap
    cols = np.asarray(cols, dtype=np.int64)
    must = _must_win_groups(P, cols, must_win)
    if must is None:
        return SubResult(np.zeros(P.n), True, None, time.perf_counter() - t0, infeasible=True)
    owners = P.owner[cols]
    vals = P.values[cols]
    slack = 0.0
    vmax = float(np.abs(vals).max()) if vals.size else 0.0
    if exact:
        vscale, _, err = objective_scale(vals, owners)
        slack = float(np.unique(owners).size) * err  # at most one winning column per owner
    else:
        vscale = 1e6 / vmax if vmax > 0 else 1.0
    m = cp_model.CpModel()
    x = [m.new_bool_var("") for _ in range(cols.size)]
    Ac = P.A[:, cols].tocsr()
    for r in np.flatnonzero(np.diff(Ac.indptr)):
        lo, hi = Ac.indptr[r], Ac.indptr[r + 1]
        coefs = Ac.data[lo:hi]
        c = max(0.0, float(cap_v[r]))
        if coefs.sum() <= c + CAPACITY_TOL:
            continue
        ic, icap, ok = integer_row(coefs, c)  # exact, or rounded conservatively
        if exact and not ok:
            return None
        m.add(cp_model.LinearExpr.WeightedSum([x[j] for j in Ac.indices[lo:hi].tolist()], ic.tolist()) <= icap)
    for group in xor_groups(owners):
        m.add_at_most_one([x[j] for j in group])
    for pos in must:
        m.add_bool_or([x[j] for j in pos.tolist()])
    ivals = np.round(vals * vscale).astype(np.int64)
    objective = cp_model.LinearExpr.WeightedSum(x, ivals.tolist())
    m.maximize(objective)
    if hint is not None:
        for var, h in zip(x, (hint[cols] > 0.5).tolist()):
            m.add_hint(var, int(h))
    solver = _cpsat_solver(time_limit, threads=threads, exact=exact, deterministic=deterministic, seed=seed,
                           must_win=bool(must))
    status = solver.Solve(m) if race is None or race.enter(solver.StopSearch) else cp_model.UNKNOWN
    work = float(solver.deterministic_time) * cpsat_work_factor(solver.parameters.num_workers)
    full = np.zeros(P.n) if fixed is None else (fixed > 0.5).astype(np.float64)
    bound = None
    if status == cp_model.INFEASIBLE and must:  # without must-win constraints x = 0 is feasible
        # a proof only when the capacities scaled exactly (heuristic mode rounds them up)
        return SubResult(np.zeros(P.n), exact, None, time.perf_counter() - t0, infeasible=exact, work=work)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        xs = np.fromiter((solver.BooleanValue(v) for v in x), dtype=bool, count=len(x))
        full[cols[xs]] = 1.0
        if exact:
            bound = float(solver.BestObjectiveBound()) / vscale + slack
            if fixed is not None:
                bound += float(P.values @ full) - float(vals @ xs)
    optimal = status == cp_model.OPTIMAL and (slack == 0.0 or (
        bound is not None and within_mip_gap(bound, float(P.values @ full))))
    return SubResult(full, optimal, bound, time.perf_counter() - t0, status == cp_model.OPTIMAL, work)


def _cpsat_solver(time_limit: float | None, *, threads: int | None, exact: bool, deterministic: bool, seed: int,
                  must_win: bool) -> Any:
    """A CP-SAT solver with the parameters of :func:`solve_restricted_cpsat`: its workers, its
    (wall-clock or deterministic) time limit, its seed, and the LP level must-win clauses need."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = int(threads) if threads else (max(1, min(8, os.cpu_count() or 1)) if exact else 1)
    if time_limit is not None:
        if deterministic:  # CP-SAT's deterministic time adds up over its workers
            solver.parameters.max_deterministic_time = (float(time_limit)
                                                        / cpsat_work_factor(solver.parameters.num_workers))
            if solver.parameters.num_workers > 1:
                solver.parameters.interleave_search = True  # deterministic for a worker count
        else:
            solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.random_seed = int(seed)
    if must_win:
        # must-win clauses enter CP-SAT's LP only at linearization level 2 (its "max_lp"
        # worker); without them in the LP, proving that owners cannot all win is a
        # pigeonhole-like search (CATS matching pivots: over 10 s instead of 15 ms)
        solver.parameters.linearization_level = 2
        if solver.parameters.num_workers > 1:
            solver.parameters.subsolvers.extend(["max_lp", "default_lp"])
    return solver


class Race:
    """Two solvers on one problem: the first to finish with a proof stops the other.

    Each solver calls :meth:`enter` with its stop function just before it runs; once the race
    is over, :meth:`stop` calls every registered stop function. A stop sent in the instant
    before a solver really starts can be lost, so the winner's side repeats it until the
    other has returned (see :func:`~.exact_restricted.race_exact`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: list[Callable[[], Any]] = []
        self.over = False

    def enter(self, stop: Callable[[], Any]) -> bool:
        """Register ``stop``; ``False`` when the race is already over (then do not run)."""
        with self._lock:
            if self.over:
                return False
            self._stops.append(stop)
            return True

    def stop(self) -> None:
        with self._lock:
            self.over = True
            stops = list(self._stops)
        for f in stops:
            f()
