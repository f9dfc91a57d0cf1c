"""The anytime engine: greedy incumbents, a column-generation LP bound, reduced-cost fixing and
large-neighbourhood search with restricted MIPs (and fast VCG pivots on top of them).

Stages (each yields a better incumbent or a tighter proven bound; all work on a
:class:`~.problem.MatrixProblem`):

1. **Greedy incumbents** from a few LOS orderings (``value / size**alpha``).
2. **LP bound by column generation.** The restricted master LP (HiGHS) over a working set of
   columns gives row duals ``y >= 0`` and XOR duals ``u``; pricing computes every column's
   reduced cost ``rc = v - A^T y - u_owner`` with one sparse product and adds the best
   column of each bidder with ``rc > 0``. At every iteration the Lagrangian bound
   ``L(y) = cap.y + sum_i max(0, max_{j in i} (v_j - A_j.y))`` is a valid upper bound; at
   convergence it equals the LP optimum. Only the working set enters an LP, so rounds with
   hundreds of thousands of bundles are bounded in seconds.
3. **LP-guided rounding** (first fit in order of LP value).
4. **Reduced-cost fixing + LNS.** With ``B = cap.y + sum(u) + sum(max(rc, 0))`` (the dual
   objective), every feasible ``x`` satisfies ``v.x <= B + sum_j min(rc_j, 0) x_j``; so a
   solution better than the incumbent ``W`` uses only columns with ``rc_j >= -(B - W)``.
   When few columns are eligible, one exact restricted MIP over all of them (CP-SAT when the
   data scale to integers exactly, else CP-SAT on rounded values checked by HiGHS) certifies
   ``OPT <= max(W, B_R)`` with its bound ``B_R``; without a time limit this proves
   optimality.
5. **Large-neighbourhood search.** Grown from a random row, a neighbourhood frees the
   incumbent's winners on a connected set of rows; every other winner stays fixed, and a
   sub-MIP (CP-SAT by default, SCIP optionally) re-optimises the free bidders' columns that fit
   the residual capacity, warm-started from the incumbent. Neighbourhoods grow when solved to
   optimality without gain and shrink when the sub-MIP times out.

Budgets are kept by a :class:`WorkClock`: wall-clock seconds by default, or, in deterministic
mode, work units charged by every stage (CP-SAT's deterministic time for the MIPs, calibrated
estimates per non-zero for the greedy, pricing and interior-point iterations), so that every
decision taken on the budget is the same on every run.

References
----------
Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (greedy).
Desrosiers & Lübbecke, "A primer in column generation", in *Column Generation*, Springer 2005.
Gondzio, González-Brevis & Munari, "New developments in the primal-dual column generation
technique", European J. Oper. Res. 224(1), 2013 (interior-point masters).
Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, Wiley 1988 (reduced-cost fixing).
Shaw, "Using constraint programming and local search methods to solve vehicle routing
problems", CP 1998 (large neighbourhood search).
Danna, Rothberg & Le Pape, "Exploring relaxation induced neighborhoods to improve MIP
solutions", Math. Prog. 102, 2005 (RINS-style restricted MIPs).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..exact.common import (LARGE_ROW, new_highs, objective_lift, power_of_two_scales, quiet_native_output,
                            within_mip_gap)
from ..result import CAPACITY_TOL
from .problem import MatrixProblem, column_ranges

logger = logging.getLogger(__name__)

__all__ = ["AnytimeResult", "anytime_solve", "first_fit_matrix", "lagrangian_bound", "column_generation", "LpState",
           "PivotResult", "pivot_solve", "lp_state", "SolutionPool"]


_HIGHS_LOCK = threading.Lock()

# Work units of deterministic mode, calibrated on a 2-core reference machine so that one unit is
# about one second there (CP-SAT's own "deterministic time" is on the same footing)
_WORK_PER_NNZ_GREEDY = 1e-7  # one first-fit ordering, per non-zero of A
_WORK_PER_NNZ_PRICING = 3e-8  # one pricing round, per non-zero of A
_WORK_PER_NNZ_IPM = 1.5e-7  # one interior-point iteration, per non-zero of the master
_WORK_PER_CPSAT_DET = 2.5  # per unit of CP-SAT deterministic time of one worker (model building included)
_WORK_PER_CPSAT_DET_INTERLEAVED = 1.25  # the same per worker when several interleave their search


def _cpsat_work_factor(workers: int) -> float:
    """Work units per unit of CP-SAT deterministic time (which adds up over the workers)."""
    return _WORK_PER_CPSAT_DET if workers <= 1 else _WORK_PER_CPSAT_DET_INTERLEAVED / workers


class WorkClock:
    """The budget of one anytime run: wall-clock seconds, or charged work units.

    In wall mode ``now()`` is the time since the start. In deterministic mode it is the work
    charged so far: CP-SAT's deterministic time for its solves and calibrated estimates
    (``_WORK_PER_*``) for the engine's own stages, so every decision taken on the clock is the
    same on every run, however loaded the machine.
    """

    def __init__(self, limit: float | None, deterministic: bool = False) -> None:
        self.limit, self.det = limit, bool(deterministic)
        self.t0 = time.perf_counter()
        self.used = 0.0

    def now(self) -> float:
        return self.used if self.det else time.perf_counter() - self.t0

    def left(self, until: float | None = None) -> float | None:
        """What is left before ``until`` (default: the end of the budget); ``None``: no limit."""
        end = self.limit if until is None else until
        return None if end is None else end - self.now()

    def charge(self, units: float) -> None:
        if self.det:
            self.used += max(0.0, float(units))


# ----------------------------------------------------------------------------- greedy
def _fit_mask(A: sp.csc_matrix, cols: np.ndarray | None, residual: np.ndarray, chunk_nnz: int = 1 << 20) -> np.ndarray:
    """Which of ``cols`` (``None``: every column) fit ``residual`` on their own (vectorised
    over their non-zeros; ``residual`` includes any tolerance).

    Works through the columns in chunks of about ``chunk_nnz`` non-zeros, so the temporaries
    stay a few MB even on matrices of millions of non-zeros.
    """
    if cols is None:
        ok = np.ones(A.shape[1], dtype=bool)
        for a, b in column_ranges(A.indptr, chunk_nnz):
            lo, hi = A.indptr[a], A.indptr[b]
            bad = A.data[lo:hi] > residual[A.indices[lo:hi]]
            if bad.any():
                ok[a + np.repeat(np.arange(b - a), np.diff(A.indptr[a:b + 1]))[bad]] = False
        return ok
    cols = np.asarray(cols, dtype=np.int64)
    ok = np.ones(cols.size, dtype=bool)
    per_col = max(1, A.nnz // max(1, A.shape[1]))
    step = max(1, chunk_nnz // per_col)
    for s0 in range(0, cols.size, step):
        sub = A[:, cols[s0:s0 + step]]
        bad = sub.data > residual[sub.indices]
        if bad.any():
            ok[s0 + np.repeat(np.arange(sub.shape[1]), np.diff(sub.indptr))[bad]] = False
    return ok


def first_fit_matrix(P: MatrixProblem, order: np.ndarray, *, start: np.ndarray | None = None) -> np.ndarray:
    """Accept columns in ``order`` while they fit (XOR and capacity); returns a 0/1 vector.

    Residual capacities only shrink, so a column that does not fit now never will, and an
    owner that has won stays out. The order is therefore processed in chunks: before each
    chunk, one vectorised pass drops every later column of a winning owner or that no longer
    fits alone, and only the survivors are checked one by one. The result is exactly the
    sequential first fit's, at a fraction of the Python work on large problems.
    """
    A = P.A
    residual = P.cap + CAPACITY_TOL
    won = np.zeros(P.n_owners, dtype=bool)
    x = np.zeros(P.n)
    owner = P.owner
    if start is not None:
        for j in np.flatnonzero(start > 0.5):
            x[j] = 1.0
            won[owner[j]] = True
            lo, hi = A.indptr[j], A.indptr[j + 1]
            residual[A.indices[lo:hi]] -= A.data[lo:hi]
    rest = np.asarray(order, dtype=np.int64)
    rest = rest[P.values[rest] > 0]
    chunk = 256
    while rest.size:
        rest = rest[~won[owner[rest]]]
        if rest.size == 0:
            break
        rest = rest[_fit_mask(A, rest, residual)]
        head, rest = rest[:chunk], rest[chunk:]
        if head.size == 0:
            break
        sub = A[:, head]
        ip = sub.indptr.tolist()
        idx_l = sub.indices.tolist()
        dat_l = sub.data.tolist()
        res_l = residual.tolist()
        won_l = won.tolist()
        for k, (j, o) in enumerate(zip(head.tolist(), owner[head].tolist())):
            if won_l[o]:
                continue
            lo, hi = ip[k], ip[k + 1]
            if any(dat_l[t] > res_l[idx_l[t]] for t in range(lo, hi)):
                continue
            for t in range(lo, hi):
                res_l[idx_l[t]] -= dat_l[t]
            won_l[o] = True
            x[j] = 1.0
        residual = np.asarray(res_l)
        won = np.asarray(won_l, dtype=bool)
        chunk = min(4 * chunk, 65_536)
    return x


def upgrade_swaps(P: MatrixProblem, x: np.ndarray, *, max_passes: int = 3) -> np.ndarray:
    """Local search: replace each winner's column by its owner's best column that fits.

    For every winning column ``j`` (owner ``o``) the capacity ``j`` holds is released and the
    most valuable column of ``o`` that fits what is then free replaces ``j`` when it is worth
    more (a bigger memory level or an earlier start once a competitor is gone). Feasibility is
    kept at every step; passes repeat until nothing improves (at most ``max_passes``).
    """
    x = (x > 0.5).astype(np.float64)
    A = P.A
    residual = P.cap + CAPACITY_TOL - A @ x
    by_owner = np.argsort(P.owner, kind="stable")
    starts = np.searchsorted(P.owner[by_owner], np.arange(P.n_owners + 1))
    for _ in range(max_passes):
        improved = False
        for j in np.flatnonzero(x).tolist():
            o = int(P.owner[j])
            own = by_owner[starts[o]:starts[o + 1]]
            better = own[P.values[own] > P.values[j] + 1e-12]
            if better.size == 0:
                continue
            lo, hi = A.indptr[j], A.indptr[j + 1]
            free = residual.copy()
            free[A.indices[lo:hi]] += A.data[lo:hi]
            ok = better[_fit_mask(A, better, free)]
            if ok.size == 0:
                continue
            k = int(ok[np.argmax(P.values[ok])])
            x[j], x[k] = 0.0, 1.0
            lo2, hi2 = A.indptr[k], A.indptr[k + 1]
            free[A.indices[lo2:hi2]] -= A.data[lo2:hi2]
            residual = free
            improved = True
        if not improved:
            break
    return x


def los_order(P: MatrixProblem, alpha: float, size: np.ndarray) -> np.ndarray:
    """Columns by descending ``value / size**alpha`` (ties: value, then index)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(size > 0, P.values / np.power(np.where(size > 0, size, 1.0), alpha), np.inf)
    return np.lexsort((-P.values, -key))


def owner_best_alone(P: MatrixProblem) -> np.ndarray:
    """Per owner, the value of its best column that fits alone (0 if none)."""
    fits = _fit_mask(P.A, None, P.cap + CAPACITY_TOL)
    best = np.zeros(P.n_owners)
    np.maximum.at(best, P.owner, np.where(fits, P.values, 0.0))
    return best


def trivial_bound_matrix(P: MatrixProblem) -> float:
    """Sum over owners of the best column that fits alone."""
    return float(owner_best_alone(P).sum())


# ----------------------------------------------------------------------------- LP bound
def lagrangian_bound(P: MatrixProblem, y: np.ndarray) -> tuple[float, np.ndarray]:
    """``L(y)`` and the reduced values ``v - A^T y`` for row prices ``y >= 0``."""
    y = np.maximum(y, 0.0)
    d = P.values - P.A.T @ y
    best = np.zeros(P.n_owners)
    np.maximum.at(best, P.owner, d)
    return float(P.cap @ y + best.sum()), d


@dataclass
class LpState:
    """Column-generation state: duals, bounds, the working set and the master's primal."""

    y: np.ndarray
    u: np.ndarray
    bound: float  # best Lagrangian bound seen
    dual_objective: float  # B for reduced-cost fixing (with the final y, u)
    rc: np.ndarray  # reduced costs of all columns w.r.t. (y, u)
    cols: np.ndarray  # the columns of the last solved master (``x_cols`` is over these)
    x_cols: np.ndarray | None
    lp_value: float | None
    converged: bool
    iterations: int
    seconds: float


def _master(P: MatrixProblem, cols: np.ndarray, time_limit: float | None) -> tuple[Any, np.ndarray | None, np.ndarray | None]:
    """One restricted master LP solved from scratch with SciPy's HiGHS (fallback path)."""
    Ac = P.A[:, cols]
    owners = P.owner[cols]
    Xc = sp.csr_matrix((np.ones(cols.size), (owners, np.arange(cols.size))), shape=(P.n_owners, cols.size))
    A = sp.vstack([Ac.tocsr(), Xc], format="csr")
    b = np.concatenate([P.cap, np.ones(P.n_owners)])
    opts: dict[str, Any] = {}
    if time_limit is not None:
        opts["time_limit"] = max(1e-3, float(time_limit))
    res = linprog(-P.values[cols], A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs", options=opts)
    if res.status != 0 or res.x is None:
        return res, None, None
    duals = -np.asarray(res.ineqlin.marginals)
    return res, np.asarray(res.x), duals


class _ScipyMaster:
    """Restricted master re-solved from scratch each time (used when highspy is missing)."""

    def __init__(self, P: MatrixProblem, cols: np.ndarray) -> None:
        self.P, self.cols = P, np.asarray(cols, dtype=np.int64)

    def add(self, new: np.ndarray) -> None:
        self.cols = np.concatenate([self.cols, np.asarray(new, dtype=np.int64)])

    def work(self) -> float:
        """Work units of the last solve (an estimate: this fallback reports no iterations)."""
        return 20 * _WORK_PER_NNZ_IPM * (self.P.A[:, self.cols].nnz + self.cols.size)

    def solve(self, time_limit: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
        res, xc, duals = _master(self.P, self.cols, time_limit)
        if duals is None or xc is None:
            return None
        return float(-res.fun), xc, duals


class _HighsMaster:
    """Restricted master kept in one ``highspy.Highs`` object; new columns are appended with
    ``addCols`` (no rebuild of the model) and the LP is re-solved by interior point."""

    def __init__(self, P: MatrixProblem, cols: np.ndarray, vertex_duals: bool = False) -> None:
        import highspy

        self._hs = highspy
        self.P = P
        self.cols = np.zeros(0, dtype=np.int64)
        R = P.cap.size
        h = new_highs()
        # interior point without crossover: on these degenerate masters it is several times
        # faster than simplex re-optimisation, and its central duals price better columns
        # (primal-dual column generation, Gondzio et al. 2013); any y >= 0 gives a valid bound
        h.setOptionValue("solver", "ipm")
        # crossover on request: vertex duals give an exact dual objective (VCG pivots compare
        # it with incumbents to the last digit); interior duals lose ~1e-5 in sum(max(rc, 0))
        h.setOptionValue("run_crossover", "on" if vertex_duals else "off")
        # no "threads" option: HiGHS fixes its thread pool at the first run in the process
        lp = highspy.HighsLp()
        lp.num_col_ = 0
        lp.num_row_ = R + P.n_owners
        lp.row_lower_ = np.full(R + P.n_owners, -highspy.kHighsInf)
        lp.row_upper_ = np.concatenate([P.cap, np.ones(P.n_owners)]).astype(np.float64)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.zeros(1, dtype=np.int32)
        h.passModel(lp)
        self.h = h
        self.nnz = 0
        self.add(cols)

    def add(self, new: np.ndarray) -> None:
        new = np.asarray(new, dtype=np.int64)
        if new.size == 0:
            return
        P = self.P
        Ac = P.A[:, new].tocsc()
        X = sp.csc_matrix((np.ones(new.size), (P.owner[new], np.arange(new.size))), shape=(P.n_owners, new.size))
        M = sp.vstack([Ac, X], format="csc")
        M.sort_indices()
        # no column upper bound (x <= 1 follows from the XOR row): a bound's dual would not be
        # seen by the row duals that price columns
        self.h.addCols(int(new.size), P.values[new].astype(np.float64), np.zeros(new.size),
                       np.full(new.size, self._hs.kHighsInf),
                       int(M.nnz), M.indptr[:-1].astype(np.int32), M.indices.astype(np.int32),
                       M.data.astype(np.float64))
        self.cols = np.concatenate([self.cols, new])
        self.nnz += int(M.nnz)

    def work(self) -> float:
        """Work units of the last solve: interior-point iterations x non-zeros of the master."""
        # HiGHS reports the iterations of the last run; at least one is charged per call
        its = max(1, int(self.h.getInfo().ipm_iteration_count))
        return _WORK_PER_NNZ_IPM * its * self.nnz

    def solve(self, time_limit: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
        h = self.h
        # HiGHS measures time_limit on the object's cumulative run clock
        limit = self._hs.kHighsInf if time_limit is None else h.getRunTime() + max(1e-3, float(time_limit))
        h.setOptionValue("time_limit", float(limit))
        h.run()
        if h.getModelStatus() != self._hs.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        return (float(h.getInfo().objective_function_value), np.asarray(sol.col_value, dtype=np.float64),
                np.asarray(sol.row_dual, dtype=np.float64))


def _new_master(P: MatrixProblem, cols: np.ndarray, vertex_duals: bool = False) -> "_HighsMaster | _ScipyMaster":
    try:
        return _HighsMaster(P, cols, vertex_duals)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        return _ScipyMaster(P, cols)


def column_generation(P: MatrixProblem, *, init_cols: np.ndarray, deadline: float | None,
                      max_iterations: int = 500, per_owner: int = 3, rel_tol: float = 0.0,
                      vertex_duals: bool = False, clock: WorkClock | None = None,
                      until: float | None = None) -> LpState:
    """Column generation for the LP relaxation (see module docstring).

    The restricted master stays in one HiGHS object (:class:`_HighsMaster`) and is
    re-optimised from its previous basis after each pricing round; every round adds the best
    ``per_owner`` columns with positive reduced cost of each owner. With ``rel_tol > 0`` it
    stops once the best Lagrangian bound is within ``rel_tol`` (relative) of the master's
    value: the bound is then that close to the LP optimum, and the last duals still serve
    reduced-cost fixing (with their own dual objective).
    ``deadline`` is a ``time.perf_counter()`` value; with a ``clock`` the run stops at its
    ``until`` instead (in deterministic mode each round is charged to the clock and the master
    LPs run without a time limit, so the rounds are the same on every run).
    """
    t0 = time.perf_counter()
    if clock is None:
        clock = WorkClock(None if deadline is None else deadline - t0)
        until = None if deadline is None else clock.limit
    R = P.cap.size
    master = _new_master(P, np.unique(init_cols), vertex_duals)
    master_cols = master.cols
    best_bound = np.inf
    y = np.zeros(R)
    u = np.zeros(P.n_owners)
    x_cols = None
    lp_value = None
    converged = False
    in_set = np.zeros(P.n, dtype=bool)
    in_set[master.cols] = True
    it = 0
    for it in range(1, max_iterations + 1):
        remaining = clock.left(until)
        if remaining is not None and remaining <= 0:
            break
        out = master.solve(None if clock.det else remaining)
        clock.charge(_WORK_PER_NNZ_PRICING * P.A.nnz + master.work())
        if out is None:
            break
        lp_value, x_cols, duals = out
        master_cols = master.cols.copy()
        y, u = np.maximum(duals[:R], 0.0), np.maximum(duals[R:], 0.0)
        L, d = lagrangian_bound(P, y)
        best_bound = min(best_bound, L)
        rc = d - u[P.owner]
        cand = np.flatnonzero((rc > 1e-7) & ~in_set)
        if cand.size == 0:
            converged = True
            break
        if best_bound - lp_value <= rel_tol * max(1.0, abs(best_bound)):
            # the Lagrangian bound is as good as the LP optimum up to rel_tol
            converged = best_bound - lp_value <= 1e-9 * max(1.0, abs(best_bound))
            break
        # best `per_owner` new columns of each owner
        order = np.lexsort((-rc[cand], P.owner[cand]))
        cand = cand[order]
        owners = P.owner[cand]
        first = np.ones(cand.size, dtype=bool)
        rank = np.zeros(cand.size, dtype=np.int64)
        if cand.size > 1:
            first[1:] = owners[1:] != owners[:-1]
            grp_start = np.flatnonzero(first)
            grp_id = np.cumsum(first) - 1
            rank = np.arange(cand.size) - grp_start[grp_id]
        new = cand[rank < per_owner]
        in_set[new] = True
        master.add(new)
    d = P.values - P.A.T @ y
    rc = d - u[P.owner]
    dual_obj = float(P.cap @ y + u.sum() + np.maximum(rc, 0.0).sum())
    return LpState(y, u, float(min(best_bound, dual_obj)), dual_obj, rc, master_cols, x_cols, lp_value, converged, it,
                   time.perf_counter() - t0)


# ----------------------------------------------------------------------------- restricted MIP
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


def _xor_groups(owners: np.ndarray) -> list[list[int]]:
    """Positions (into ``owners``) of every owner that appears at least twice."""
    order = np.argsort(owners, kind="stable")
    so = owners[order]
    cuts = np.flatnonzero(np.r_[True, so[1:] != so[:-1], True])
    return [order[a:b].tolist() for a, b in zip(cuts[:-1], cuts[1:]) if b - a > 1]


def _row_lifts(Ac: sp.csr_matrix, cap: np.ndarray) -> np.ndarray:
    """Per-row power-of-two scale of ``Ac x <= cap`` for the floating-point backends: rows whose
    entries are all below 1 are lifted into ``[1, 2)`` (:func:`~gensolver.solvers.exact.common.row_lift`),
    so the absolute feasibility tolerance is relative to them, and rows reaching
    :data:`~gensolver.solvers.exact.common.LARGE_ROW` (bytes) are brought down to ``[1, 2)``,
    where SCIP and CBC stay accurate; the caller checks the answer against the true rows."""
    top = np.abs(np.asarray(cap, dtype=np.float64)).copy()
    if Ac.nnz:
        top = np.maximum(top, abs(Ac).max(axis=1).toarray().ravel())
    return power_of_two_scales(top, above=LARGE_ROW)


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
                     fixed: np.ndarray | None = None) -> SubResult:
    """Exact MIP (SCIP) over the columns ``cols``; other columns fixed to 0.

    With ``cap`` (residual capacities) and ``fixed`` (0/1 vector of columns fixed to 1, whose
    owners must not appear in ``cols``), the sub-problem is the LNS neighbourhood; the returned
    ``x`` includes the fixed columns.
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
    lift = _row_lifts(Ac, cap_v)  # tiny rows scaled up: SCIP's tolerance is absolute
    for r in np.flatnonzero(np.diff(Ac.indptr)):
        lo, hi = Ac.indptr[r], Ac.indptr[r + 1]
        coefs = Ac.data[lo:hi]
        if coefs.sum() <= cap_v[r] + CAPACITY_TOL:
            continue  # cannot bind
        ct = solver.RowConstraint(-inf, float(cap_v[r] * lift[r]), "")
        for j, a in zip(Ac.indices[lo:hi].tolist(), (coefs * lift[r]).tolist()):
            ct.SetCoefficient(x[j], a)
    owners = P.owner[cols]
    for group in _xor_groups(owners):
        ct = solver.RowConstraint(-inf, 1.0, "")
        for j in group:
            ct.SetCoefficient(x[j], 1.0)
    obj = solver.Objective()
    lift = objective_lift(P.values[cols])  # tiny values scaled up (absolute gap tolerances)
    for j, v in enumerate((P.values[cols] * lift).tolist()):
        obj.SetCoefficient(x[j], v)
    obj.SetMaximization()
    if hint is not None:
        solver.SetHint(x, (hint[cols] > 0.5).astype(float).tolist())
    if time_limit is not None:
        solver.SetTimeLimit(max(1, int(time_limit * 1000)))
    if threads:
        solver.SetNumThreads(int(threads))
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, 1e-9)
    with quiet_native_output():
        status = solver.Solve(params)
    full = np.zeros(P.n) if fixed is None else (fixed > 0.5).astype(np.float64)
    optimal = status == pywraplp.Solver.OPTIMAL
    bound = None
    if status in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        xs = np.fromiter((v.solution_value() for v in x), dtype=np.float64, count=len(x))
        full[cols[xs > 0.5]] = 1.0
        bound = float(solver.Objective().BestBound()) / lift
        if fixed is not None:
            bound += float(P.values @ full) - float(P.values[cols] @ (xs > 0.5))
        # the backend's feasibility tolerance is not the format's: its point is checked here
        optimal = optimal and _feasible(P, full)
    return SubResult(full, optimal, bound, time.perf_counter() - t0)


def solve_restricted_highs(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                           threads: int | None = None, cap: np.ndarray | None = None,
                           fixed: np.ndarray | None = None, race: "_Race | None" = None) -> SubResult:
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
    groups = _xor_groups(owners)
    gi = np.repeat(np.arange(len(groups)), [len(g) for g in groups]) if groups else np.zeros(0, np.int64)
    gj = np.fromiter((j for g in groups for j in g), dtype=np.int64, count=int(gi.size))
    Xg = sp.csr_matrix((np.ones(gi.size), (gi, gj)), shape=(len(groups), cols.size))
    lift = _row_lifts(Ac[can_bind], cap_v[can_bind])  # tiny rows scaled up (HiGHS's tolerance is absolute)
    M = sp.vstack([sp.diags(lift) @ Ac[can_bind], Xg], format="csc")
    M.sort_indices()
    n_rows = M.shape[0]
    h = new_highs()
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
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
    with _HIGHS_LOCK:  # HiGHS instances share one global scheduler: one MIP run at a time
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
        optimal = optimal and _feasible(P, full)
    else:
        optimal = False
    return SubResult(full, optimal, bound, time.perf_counter() - t0)


def row_neighbourhood(P: MatrixProblem, x: np.ndarray, rng: np.random.Generator,
                      free_target: int, max_cols: int, score: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An LNS neighbourhood grown from a random row: ``(cols, residual_cap, fixed_x)``.

    Starting from a random row, winners touching the current rows are freed and their rows
    added (breadth first) until ``free_target`` winners are free. Every other winner stays
    fixed; the candidate columns are those of owners without a fixed winner that fit the
    residual capacity on their own, best ``max_cols`` by ``score`` (freed winners always in).
    """
    winners = np.flatnonzero(x > 0.5)
    # rows -> the winners on them: the rows of the winners' columns only (not of all of A)
    Aw = P.A[:, winners].tocsr()
    used_rows = np.flatnonzero(np.diff(Aw.indptr)) if winners.size else np.arange(P.cap.size)
    start = int(rng.choice(used_rows)) if used_rows.size else int(rng.integers(P.cap.size))
    freed: set[int] = set()
    seen_rows = {start}
    frontier = [start]
    while frontier and len(freed) < free_target:
        r = frontier.pop(0)
        for j in winners[Aw.indices[Aw.indptr[r]:Aw.indptr[r + 1]]].tolist():
            if j in freed:
                continue
            freed.add(j)
            for rr in P.A.indices[P.A.indptr[j]:P.A.indptr[j + 1]].tolist():
                if rr not in seen_rows:
                    seen_rows.add(rr)
                    frontier.append(rr)
        if not frontier and len(freed) < free_target:  # jump to another random row
            rest = np.setdiff1d(used_rows, np.fromiter(seen_rows, dtype=np.int64))
            if rest.size:
                r2 = int(rng.choice(rest))
                seen_rows.add(r2)
                frontier.append(r2)
    fixed = x.copy()
    freed_arr = np.fromiter(freed, dtype=np.int64, count=len(freed))
    fixed[freed_arr] = 0.0
    residual = P.cap - P.A @ fixed
    owner_fixed = np.zeros(P.n_owners, dtype=bool)
    owner_fixed[P.owner[fixed > 0.5]] = True
    # columns that fit the residual capacity on their own
    fits = _fit_mask(P.A, None, residual + CAPACITY_TOL)
    cand = np.flatnonzero(fits & ~owner_fixed[P.owner] & (P.values > 0))
    if cand.size > max_cols:
        cand = cand[np.argsort(-score[cand], kind="stable")[:max_cols]]
    cols = np.union1d(cand, freed_arr)
    return cols, residual, fixed


def solve_restricted_cpsat(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                           threads: int | None = None, cap: np.ndarray | None = None,
                           fixed: np.ndarray | None = None, seed: int = 0,
                           exact: bool = False,
                           deterministic: bool = False, must_win: np.ndarray | None = None,
                           race: "_Race | None" = None) -> SubResult | None:
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
    solution's true value (:func:`~gensolver.solvers.exact.common.within_mip_gap`). ``rounded_optimal`` says CP-SAT solved the rounded problem to optimality.
    ``deterministic=True``: ``time_limit`` is CP-SAT's deterministic time (several workers
    then interleave their search deterministically), so the answer is the same on every run;
    exactly scalable values are never rounded.
    ``must_win``: owners that must each win one column (VCG pivots, see :func:`pivot_solve`);
    when that is proven impossible the result is ``optimal`` with ``infeasible=True`` and
    ``x`` all 0 (in heuristic mode, whose capacities are rounded up, infeasibility proves
    nothing and the result is simply not optimal).
    """
    from ortools.sat.python import cp_model

    from ..exact.cpsat import integer_scale, objective_scale

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
    x = [m.NewBoolVar("") for _ in range(cols.size)]
    Ac = P.A[:, cols].tocsr()
    for r in np.flatnonzero(np.diff(Ac.indptr)):
        lo, hi = Ac.indptr[r], Ac.indptr[r + 1]
        coefs = Ac.data[lo:hi]
        c = max(0.0, float(cap_v[r]))
        if coefs.sum() <= c + CAPACITY_TOL:
            continue
        scale, ok = integer_scale(np.append(coefs, c), 6)
        if exact and not ok:
            return None
        ic = np.ceil(coefs * scale - 1e-9).astype(np.int64)
        icap = int(np.floor(c * scale + 1e-6))
        m.Add(cp_model.LinearExpr.WeightedSum([x[j] for j in Ac.indices[lo:hi].tolist()], ic.tolist()) <= icap)
    for group in _xor_groups(owners):
        m.AddAtMostOne([x[j] for j in group])
    for pos in must:
        m.AddBoolOr([x[j] for j in pos.tolist()])
    ivals = np.round(vals * vscale).astype(np.int64)
    objective = cp_model.LinearExpr.WeightedSum(x, ivals.tolist())
    m.Maximize(objective)
    if hint is not None:
        for var, h in zip(x, (hint[cols] > 0.5).tolist()):
            m.AddHint(var, int(h))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = int(threads) if threads else (max(1, min(8, os.cpu_count() or 1)) if exact else 1)
    if time_limit is not None:
        if deterministic:  # CP-SAT's deterministic time adds up over its workers
            solver.parameters.max_deterministic_time = (float(time_limit)
                                                        / _cpsat_work_factor(solver.parameters.num_workers))
            if solver.parameters.num_workers > 1:
                solver.parameters.interleave_search = True  # deterministic for a worker count
        else:
            solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.random_seed = int(seed)
    if must:
        # must-win clauses enter CP-SAT's LP only at linearization level 2 (its "max_lp"
        # worker); without them in the LP, proving that owners cannot all win is a
        # pigeonhole-like search (CATS matching pivots: over 10 s instead of 15 ms)
        solver.parameters.linearization_level = 2
        if solver.parameters.num_workers > 1:
            solver.parameters.subsolvers.extend(["max_lp", "default_lp"])
    status = solver.Solve(m) if race is None or race.enter(solver.StopSearch) else cp_model.UNKNOWN
    work = float(solver.deterministic_time) * _cpsat_work_factor(solver.parameters.num_workers)
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


class _Race:
    """Two solvers on one problem: the first to finish with a proof stops the other.

    Each solver calls :meth:`enter` with its stop function just before it runs; once the race
    is over, :meth:`stop` calls every registered stop function. A stop sent in the instant
    before a solver really starts can be lost, so the winner's side repeats it until the
    other has returned (see :func:`_race_exact`).
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


def _values_scale_exactly(P: MatrixProblem, cols: np.ndarray) -> bool:
    from ..exact.cpsat import objective_scale

    cols = np.asarray(cols, dtype=np.int64)
    return objective_scale(P.values[cols], P.owner[cols])[1]


def _race_exact(P: MatrixProblem, cols: np.ndarray, *, hint: np.ndarray | None, threads: int | None,
                seed: int) -> SubResult | None:
    """CP-SAT and HiGHS side by side on the same restricted MIP, without a time limit; the
    first proof wins and the other solver is stopped. Neither dominates: on one GPU round
    CP-SAT proved the WDP in 8 s and HiGHS in 11 s, while on a core separation problem of the
    same round HiGHS took 5 s and CP-SAT 75 s. Returns ``None`` when neither is installed."""
    from concurrent.futures import FIRST_COMPLETED, wait

    race = _Race()
    workers = max(1, (int(threads) if threads else (os.cpu_count() or 2)) - 1)
    results: list[SubResult] = []
    with ThreadPoolExecutor(2) as ex:
        pending = {
            ex.submit(solve_restricted_cpsat, P, cols, time_limit=None, hint=hint, threads=workers, seed=seed,
                      exact=True, race=race),
            ex.submit(solve_restricted_highs, P, cols, time_limit=None, hint=hint, threads=1, race=race),
        }
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    r = f.result()
                except ImportError:  # pragma: no cover - one backend missing: the other decides
                    r = None
                if r is not None:
                    results.append(r)
            if any(r.optimal for r in results):
                while pending:  # stop the other, again until it has returned
                    race.stop()
                    _, pending = wait(pending, timeout=0.05)
    if not results:
        return None
    proven = [r for r in results if r.optimal]
    if proven:
        return proven[0]
    best = max(results, key=lambda r: float(P.values @ r.x))
    bounds = [r.bound for r in results if r.bound is not None]
    return SubResult(best.x, False, min(bounds) if bounds else None, max(r.seconds for r in results),
                     any(r.rounded_optimal for r in results), sum(r.work for r in results))


def solve_exact_restricted(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None, hint: np.ndarray | None,
                           threads: int | None = None, seed: int = 0, deterministic: bool = False,
                           must_win: np.ndarray | None = None) -> SubResult:
    """Exact restricted MIP: CP-SAT when the capacities scale to integers exactly, else HiGHS.

    Values that do not scale exactly (floating-point valuations) are rounded finely enough that
    CP-SAT's optimum, with its bound widened by the rounding error, is certified within the
    backends' ``1e-9`` gap (see :func:`solve_restricted_cpsat`). In the rare case that the
    certificate falls short, HiGHS proves (or improves on) the rounded optimum for the original
    values in the time left (SCIP when highspy is missing). Such problems without a time limit
    or must-win rows, given two threads or more, go to CP-SAT and HiGHS side by side instead
    (:func:`_race_exact`).
    ``deterministic=True`` with a time limit: CP-SAT on deterministic time, and no HiGHS proof
    after a rounded solve (HiGHS has only a wall-clock limit); the widened bound stands.
    ``must_win`` (see :func:`solve_restricted_cpsat`) constrains CP-SAT's exact mode only;
    HiGHS and the heuristic fallback solve the restricted problem without it, a superset, so
    their answers and proofs remain valid (as HiGHS rows the constraints made GPU pivots ten
    times slower).
    """
    res = None
    if (time_limit is None and not deterministic and (must_win is None or not len(must_win))
            and (threads or os.cpu_count() or 1) >= 2 and not _values_scale_exactly(P, cols)):
        # a proof of a floating-point problem is wanted, and both backends can give one for
        # the same problem: race them. (With integral values CP-SAT on all workers is faster:
        # CATS 100x500 main solves 8.0 / 9.6 / 16.0 s against 16.4 / 15.0 / 15.4 raced.)
        raced = _race_exact(P, cols, hint=hint, threads=threads, seed=seed)
        if raced is not None:
            return raced
    try:
        res = solve_restricted_cpsat(P, cols, time_limit=time_limit, hint=hint, threads=threads, seed=seed, exact=True,
                                     deterministic=deterministic, must_win=must_win)
    except ImportError:  # pragma: no cover - OR-Tools missing is handled by the caller
        res = None
    if res is not None and res.rounded_optimal and not res.optimal and not (deterministic and time_limit is not None):
        # CP-SAT solved the rounded problem but the rounding error is not certified small
        # enough; HiGHS proves (or improves on) it for the original values in the time left
        # (its hint is not used, see solve_restricted_highs)
        left = None if time_limit is None else time_limit - res.seconds
        if left is None or left > 0.05:
            try:
                # the proof is of the restricted problem without must-win rows (a superset, so
                # still a proof; as HiGHS rows they made GPU pivots ten times slower)
                h = solve_restricted_highs(P, cols, time_limit=left, hint=res.x, threads=threads)
            except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
                return res
            x = h.x if float(P.values @ h.x) > float(P.values @ res.x) else res.x
            bounds = [b for b in (res.bound, h.bound) if b is not None]
            return SubResult(x, h.optimal, min(bounds) if bounds else None, res.seconds + h.seconds,
                             res.rounded_optimal, res.work)
    if res is not None:
        return res
    if deterministic and time_limit is not None:
        # capacities that do not scale exactly, under a budget: HiGHS would stop on the wall
        # clock, so CP-SAT searches with conservatively scaled capacities (no bound claimed)
        return solve_restricted_cpsat(P, cols, time_limit=time_limit, hint=hint, threads=threads, seed=seed,
                                      deterministic=True)
    try:  # floating-point data: HiGHS (several times faster than SCIP here), else SCIP
        return solve_restricted_highs(P, cols, time_limit=time_limit, hint=hint, threads=threads)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        return solve_restricted(P, cols, time_limit=time_limit, hint=hint, threads=threads)


def _feasible(P: MatrixProblem, x: np.ndarray) -> bool:
    if np.any(P.A @ x > P.cap + CAPACITY_TOL):
        return False
    per_owner = np.bincount(P.owner, weights=x, minlength=P.n_owners)
    return bool(np.all(per_owner <= 1.5))


# ----------------------------------------------------------------------------- driver
@dataclass(frozen=True)
class AnytimeResult:
    """Best allocation (0/1 over columns), its welfare, a proven bound, and a log of stages."""

    x: np.ndarray
    welfare: float
    bound: float
    proven: bool
    stages: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def anytime_solve(P: MatrixProblem, *, time_limit: float | None, seed: int = 0, threads: int | None = None,
                  lp_share: float = 0.35, k0: int | None = None, full_lp_nnz: int = 20_000,
                  sub_solver: str = "cpsat", exact_share: float = 0.5, deterministic: bool = False) -> AnytimeResult:
    """Run the four stages within ``time_limit`` seconds (``None``: until proven optimal).

    ``deterministic=True``: ``time_limit`` is a budget of work units (about a second each on a
    2-core reference machine; see :class:`WorkClock`) instead of wall-clock seconds, and the
    answer is the same on every run for a seed and a thread count. The wall time then varies
    with the machine; restricted MIPs run on CP-SAT's deterministic time, and a rounded CP-SAT
    solve is not re-proven by HiGHS (which only has a wall-clock limit).
    """
    t0 = time.perf_counter()
    clock = WorkClock(time_limit, deterministic and time_limit is not None)
    det = clock.det
    rng = np.random.default_rng(seed)
    log: list[dict[str, Any]] = []

    def note(stage: str, **kw: Any) -> None:
        entry = {"stage": stage, "t": round(time.perf_counter() - t0, 4), **kw}
        if det:
            entry["work"] = round(clock.now(), 4)
        log.append(entry)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("auto: %s", " ".join(f"{k}={v}" for k, v in entry.items()))

    def left() -> float | None:
        return clock.left()

    values = P.values
    size = P.normalised_size()
    best_x = np.zeros(P.n)
    W = 0.0
    orderings = 0
    for alpha in (0.5, 1.0, 0.0):
        x = first_fit_matrix(P, los_order(P, alpha, size))
        clock.charge(_WORK_PER_NNZ_GREEDY * P.A.nnz)
        orderings += 1
        w = float(values @ x)
        if w > W:
            best_x, W = x, w
        if time_limit is not None and clock.now() > 0.05 * time_limit:
            break  # on huge rounds one ordering is all a short budget affords
    note("greedy", welfare=W, orderings=orderings)
    B = trivial_bound_matrix(P)
    note("trivial-bound", bound=B)
    if W >= B - 1e-9 * max(1.0, B):
        return AnytimeResult(best_x, W, B, True, tuple(log))

    # initial working set: incumbent + the best three columns of each owner by density
    dens_order = los_order(P, 0.5, size)
    own = P.owner[dens_order]
    grp_order = np.lexsort((np.arange(P.n), own))  # by owner, then density rank
    so = own[grp_order]
    starts = np.r_[0, np.flatnonzero(so[1:] != so[:-1]) + 1]
    lens = np.diff(np.r_[starts, so.size])
    ranks = np.empty(P.n, dtype=np.int64)
    ranks[grp_order] = np.arange(P.n) - np.repeat(starts, lens)
    first_k = np.zeros(P.n, dtype=bool)
    first_k[dens_order[ranks < 3]] = True
    init = np.union1d(np.flatnonzero(first_k), np.flatnonzero(best_x))
    if P.A.nnz <= full_lp_nnz:  # small enough: one LP over every column beats pricing rounds
        init = np.arange(P.n)
    # the LP's share is of the time left after the greedy stage
    lp_until = None if time_limit is None else clock.now() + lp_share * max(0.0, left())
    lp = column_generation(P, init_cols=init, deadline=None, clock=clock, until=lp_until, rel_tol=1e-4)
    B = min(B, lp.bound)
    note("lp-bound", bound=lp.bound, lp_value=lp.lp_value, converged=lp.converged, iterations=lp.iterations,
         working_set=int(lp.cols.size), seconds=round(lp.seconds, 3))
    if lp.x_cols is not None:
        prio = np.zeros(P.n)
        prio[lp.cols] = lp.x_cols
        x = first_fit_matrix(P, np.lexsort((-lp.rc, -np.round(prio, 9))))
        clock.charge(_WORK_PER_NNZ_GREEDY * P.A.nnz)
        w = float(values @ x)
        if w > W:
            best_x, W = x, w
        note("lp-rounding", welfare=w)
    try:
        import ortools  # noqa: F401
    except ImportError:
        note("lns-skipped", reason="OR-Tools not installed")
        return AnytimeResult(best_x, W, B, W >= B - 1e-9 * max(1.0, B), tuple(log))

    K = k0 or max(1000, 3 * (P.cap.size + P.n_owners))  # LNS sub-MIP size
    # up to a few thousand columns the MIP solver searches the whole problem better than LNS
    K_exact = k0 or max(K, 3000)
    proven = W >= B - 1e-9 * max(1.0, B)
    settled = False
    # 4a. reduced-cost fixing: if few columns can beat the incumbent, one exact restricted MIP
    eligible = np.flatnonzero(lp.rc >= -(lp.dual_objective - W) - 1e-9)
    note("rc-fixing", eligible=int(eligible.size), columns=P.n)
    if not proven and eligible.size <= K_exact:
        remaining = left()
        if remaining is None or remaining > 0.2:
            W_sel = W
            cols = np.union1d(eligible, np.flatnonzero(best_x > 0.5))
            # with a time limit, a share of it; the rest goes to LNS if this does not finish.
            # When fixing removed (almost) nothing, the restricted MIP is the whole problem and
            # LNS would only repeat the search the MIP solver does internally: all the time.
            whole = cols.size >= 0.9 * P.n
            share = None if remaining is None else (remaining if whole else exact_share * remaining)
            sub = solve_exact_restricted(P, cols, time_limit=share, hint=best_x, threads=threads, seed=seed,
                                         deterministic=det)
            clock.charge(sub.work)
            w = float(values @ sub.x)
            if w > W + 1e-12 and _feasible(P, sub.x):
                best_x, W = sub.x, w
            if sub.bound is not None:
                B = min(B, max(W_sel, sub.bound))
            proven = sub.optimal or W >= B - 1e-9 * max(1.0, B)
            # every column that could improve was in, and CP-SAT solved it to optimality with
            # finely rounded values: no search can gain more than the rounding, so stop (the
            # widened bound stands; HiGHS's proof, if any, already ran)
            settled = sub.rounded_optimal
            note("exact-restricted", columns=int(cols.size), optimal=sub.optimal, welfare=W, bound=B,
                 seconds=round(sub.seconds, 3))
    # 4b. LNS over row neighbourhoods, warm-started, with adaptive size
    score = lp.rc
    n_win = max(1, int(np.count_nonzero(best_x)))
    free_target = max(4, n_win // 4)
    it = 0
    no_gain = 0
    # independent neighbourhoods of the same incumbent solved side by side, one solver thread
    # each, on all CPUs (``threads`` caps them); the best answer is kept
    n_par = max(1, min(int(threads) if threads else (os.cpu_count() or 1), 8))
    sub_threads = 1 if n_par > 1 else threads
    lns_pool = ThreadPoolExecutor(n_par) if n_par > 1 and time_limit is not None else None
    if lns_pool is None:
        n_par = 1
    while not proven and not settled:
        remaining = left()
        if remaining is None:
            # without a time limit: prove optimality with the full restricted MIP
            W_sel = W
            eligible = np.flatnonzero(lp.rc >= -(lp.dual_objective - W) - 1e-9)
            cols = np.union1d(eligible, np.flatnonzero(best_x > 0.5))
            sub = solve_exact_restricted(P, cols, time_limit=None, hint=best_x, threads=threads, seed=seed)
            w = float(values @ sub.x)
            if w > W + 1e-12 and _feasible(P, sub.x):
                best_x, W = sub.x, w
            if sub.bound is not None:
                B = min(B, max(W_sel, sub.bound))
            proven = sub.optimal
            note("exact-restricted", columns=int(cols.size), optimal=sub.optimal, welfare=W, bound=B)
            break
        if remaining < 0.1:
            break
        it += 1
        # short slices: a sub-MIP that times out shrinks the next neighbourhood, and a long
        # timeout wastes the budget (16x24x150 at 30 s, four seeds: mean welfare 10,326 with
        # a 1 s cap against 10,256 with 3 s)
        slice_s = min(remaining, max(0.5, min(1.0, remaining / 4)))
        hoods = [row_neighbourhood(P, best_x, rng, free_target, K, score) for _ in range(n_par)]

        def run(k: int, hood: tuple[np.ndarray, np.ndarray, np.ndarray], x_inc: np.ndarray = best_x) -> SubResult:
            cols, residual, fixed = hood
            if sub_solver == "cpsat" or det:  # SCIP stops on the wall clock only
                return solve_restricted_cpsat(P, cols, time_limit=slice_s, hint=x_inc, threads=sub_threads,
                                              cap=residual, fixed=fixed, seed=seed + n_par * it + k,
                                              deterministic=det)
            return solve_restricted(P, cols, time_limit=slice_s, hint=x_inc, threads=sub_threads, cap=residual,
                                    fixed=fixed)

        if lns_pool is None:
            subs = [run(0, hoods[0])]
        else:
            subs = [f.result() for f in [lns_pool.submit(run, k, h) for k, h in enumerate(hoods)]]
        # neighbourhoods ran side by side: the clock advances by the longest
        clock.charge(max(0.01, max(r.work for r in subs) + 1e-8 * P.A.nnz * len(subs)))
        best_k = max(range(len(subs)), key=lambda k: float(values @ subs[k].x))
        sub = subs[best_k]
        w = float(values @ sub.x)
        gained = w > W + 1e-9 * max(1.0, W) and _feasible(P, sub.x)
        if gained:
            best_x, W = sub.x, w
            no_gain = 0
        else:
            no_gain += 1
        # adapt: solved fast to optimality -> bigger neighbourhoods; timed out -> smaller
        all_optimal = all(r.optimal for r in subs)
        if all_optimal and not gained:
            free_target = min(free_target + max(1, free_target // 3), int(np.count_nonzero(best_x)) or 1)
        elif not all_optimal:
            free_target = max(3, int(free_target * 0.7))
        if it <= 50 or gained:
            note("lns", iteration=it, columns=int(hoods[best_k][0].size), free=free_target, optimal=all_optimal,
                 welfare=W, seconds=round(max(r.seconds for r in subs), 3), parallel=len(subs))
        proven = W >= B - 1e-9 * max(1.0, B)
    if lns_pool is not None:
        lns_pool.shutdown()
    B = max(B, W)
    return AnytimeResult(best_x, W, B, bool(proven), tuple(log))


# ----------------------------------------------------------------------------- VCG pivots
@dataclass(frozen=True)
class PivotResult:
    """Optimal welfare without one owner (``exact``), or an interval ``[welfare, bound]``."""

    welfare: float
    bound: float
    exact: bool
    seconds: float
    method: str


def lp_state(P: MatrixProblem, *, time_limit: float | None = None) -> LpState:
    """The LP relaxation of ``P`` (all columns when small, column generation otherwise)."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    init = np.arange(P.n) if P.A.nnz <= 400_000 else np.flatnonzero(P.values > 0)[: 20 * P.n_owners]
    return column_generation(P, init_cols=init, deadline=deadline, vertex_duals=True)


class SolutionPool:
    """Feasible 0/1 solutions and settled pivot bounds shared by the pivots of one VCG run
    (thread-safe).

    A solution found for the pivot without owner ``k`` that does not use owner ``i`` is
    feasible for the pivot without ``i`` too, so every pivot starts from the best pooled
    solution it may use. Each finished pivot also leaves its proven upper bound on
    ``W(-k)`` (see :meth:`settled_bounds` and :func:`pivot_solve`).
    """

    def __init__(self, P: MatrixProblem, first: np.ndarray, size: int = 64) -> None:
        self.P, self.size = P, size
        self._lock = threading.Lock()
        self._sols: list[tuple[float, np.ndarray, np.ndarray]] = []
        self._pivot_ub: dict[int, float] = {}
        self.add(first)

    def settle(self, owner: int, bound: float) -> None:
        """Record a proven upper bound on the optimum without ``owner``."""
        with self._lock:
            self._pivot_ub[owner] = min(bound, self._pivot_ub.get(owner, np.inf))

    def settled_bounds(self, exclude: int) -> dict[int, float]:
        """Proven upper bounds on the optimum without each settled owner (not ``exclude``)."""
        with self._lock:
            return {o: b for o, b in self._pivot_ub.items() if o != exclude}

    def add(self, x: np.ndarray) -> None:
        """Keep ``x`` (0/1 over columns) if it is new; the ``size`` best are kept."""
        w = float(self.P.values @ x)
        owners = np.zeros(self.P.n_owners, dtype=bool)
        owners[self.P.owner[x > 0.5]] = True
        with self._lock:
            if any(abs(w - w2) <= 1e-12 and np.array_equal(x, x2) for w2, x2, _ in self._sols):
                return
            self._sols.append((w, x.copy(), owners))
            self._sols.sort(key=lambda t: -t[0])
            del self._sols[self.size:]

    def solutions(self) -> list[np.ndarray]:
        """The pooled solutions, best first."""
        with self._lock:
            return [x for _, x, _ in self._sols]

    def best_without(self, owner: int, values: np.ndarray) -> np.ndarray | None:
        """The pooled solution of highest ``values`` that gives ``owner`` nothing."""
        with self._lock:
            cands = [x for _, x, used in self._sols if not used[owner]]
        if not cands:
            return None
        return max(cands, key=lambda x: float(values @ x))


def pivot_solve(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: "LpState | Callable[[], LpState]", *, upper: float,
                time_limit: float | None = None, threads: int | None = None, max_restricted: int = 20_000,
                seed: int = 0, pool: SolutionPool | None = None, best_alone: np.ndarray | None = None) -> PivotResult:
    """``max welfare`` with every column of ``owner`` removed, warm-started from ``x_star``.

    0. When ``x_star`` without the owner's column already meets the trivial bound below (as
       when everyone won their best bid), that is the answer, before any search; with
       ``best_alone`` (:func:`owner_best_alone` of ``P``, computed once per VCG run) this
       check costs one dot product.
    1. Incumbent: ``x_star`` without the owner's column, extended first-fit (LOS order); with
       a ``pool``, also the best pooled solution without the owner, extended likewise (the
       pivot's own answer is added to the pool for the others); when the trivial bound is not
       met, improved by :func:`upgrade_swaps` and extended again.
    2. Bounds without solving anything: each other owner's best column alone (trivial), and
       — computed once for all pivots, only when needed — the main LP's duals ``(y, u)`` stay dual feasible when
       columns are removed, so ``cap.y + sum_{k != owner} u_k + sum_{j not of owner}
       max(rc_j, 0)`` bounds the pivot problem; ``upper`` (a bound of the full problem) too.
    3. If the incumbent meets the bound, done. Otherwise reduced-cost fixing leaves the columns
       with ``rc_j >= -(B - W)``; one exact restricted MIP over them settles the pivot. With a
       ``pool``, every owner ``i`` whose own pivot is already settled with ``W(-i) <= W``
       must win in it: an allocation without ``owner`` that leaves ``i`` out is feasible for
       ``i``'s pivot, so it is worth at most ``W(-i) <= W`` and cannot improve on the
       incumbent. The later pivots of a VCG run therefore search ever smaller problems.
       (Speculative extra solves with more owners made to win, for thresholds above ``W``,
       were measured and dropped: no faster on CATS, 2.5 times slower on GPU rounds.)
    4. If too many columns survive, the anytime solver runs on the pivot problem.
    """
    r = _pivot_solve(P, owner, x_star, lp, upper=upper, time_limit=time_limit, threads=threads,
                     max_restricted=max_restricted, seed=seed, pool=pool, best_alone=best_alone)
    if pool is not None:
        pool.settle(owner, r.bound)
    return r


def _pivot_solve(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: "LpState | Callable[[], LpState]", *, upper: float,
                time_limit: float | None = None, threads: int | None = None, max_restricted: int = 20_000,
                seed: int = 0, pool: SolutionPool | None = None,
                best_alone: np.ndarray | None = None) -> PivotResult:
    t0 = time.perf_counter()
    mine = P.owner == owner
    vals = np.where(mine, 0.0, P.values)
    Pi = MatrixProblem(vals, P.A, P.cap, P.owner, P.n_owners, P.column_id)
    start = np.where(mine, 0.0, x_star)
    # the cheapest bound first: each other owner's best column alone (from ``best_alone``,
    # computed once per VCG run, when given); x_star minus the owner may already meet it
    trivial = (trivial_bound_matrix(Pi) if best_alone is None
               else float(best_alone.sum() - best_alone[owner]))
    W = float(vals @ start)
    if W >= min(trivial, upper) - 1e-9 * max(1.0, abs(W)):
        return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    order = los_order(Pi, 0.5, Pi.normalised_size())
    x = first_fit_matrix(Pi, order, start=start)
    W = float(vals @ x)
    pooled = pool.best_without(owner, vals) if pool is not None else None
    if pooled is not None and float(vals @ pooled) > W:
        x2 = first_fit_matrix(Pi, order, start=pooled)
        if float(vals @ x2) > W:
            x, W = x2, float(vals @ x2)
    if W >= min(trivial, upper) - 1e-9 * max(1.0, abs(W)):
        return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    # cheap local search: with a bidder gone, the others' bundles can often grow; the main
    # duals' bound is frequently met right after
    x2 = first_fit_matrix(Pi, order, start=upgrade_swaps(Pi, x))
    if float(vals @ x2) > W + 1e-12:
        x, W = x2, float(vals @ x2)
        if W >= min(trivial, upper) - 1e-9 * max(1.0, abs(W)):
            return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    if callable(lp):
        lp = lp()
    rc = np.where(mine, -np.inf, lp.rc)
    # the dual objective of (y, u) on the pivot problem; reduced-cost fixing must use exactly
    # this value (v.x <= B_dual + sum_j min(rc_j, 0) x_j), not a smaller bound from elsewhere
    B_dual = float(P.cap @ lp.y + lp.u.sum() - lp.u[owner] + np.maximum(rc, 0.0).sum())
    B = min(B_dual, upper, trivial)
    tol = 1e-9 * max(1.0, abs(B))
    if W >= B - tol:
        return PivotResult(W, W, True, time.perf_counter() - t0, "dual-bound")
    eligible = np.flatnonzero(rc >= -(B_dual - W) - 1e-9)
    if eligible.size <= max_restricted:
        cols = np.union1d(eligible, np.flatnonzero(x > 0.5))
        settled = pool.settled_bounds(owner) if pool is not None else {}
        # owners whose own pivot is settled at or below W must win (see the docstring)
        must = np.asarray([o for o, b in settled.items() if b <= W], dtype=np.int64) if settled else None
        # no objective cap at B: as a CP-SAT constraint it slowed CATS pivots by a third
        sub = solve_exact_restricted(Pi, cols, time_limit=time_limit, hint=x, threads=threads, seed=seed,
                                     must_win=must)
        w = float(vals @ sub.x)
        if w > W and _feasible(Pi, sub.x):
            W = w
            if pool is not None:
                pool.add(sub.x)
        if sub.optimal:
            return PivotResult(W, W, True, time.perf_counter() - t0, "reduced-cost-fixing")
        if sub.bound is not None:
            B = min(B, max(W, sub.bound))
        return PivotResult(W, max(W, B), W >= B - tol, time.perf_counter() - t0, "reduced-cost-fixing")
    remaining = None if time_limit is None else max(0.05, time_limit - (time.perf_counter() - t0))
    res = anytime_solve(Pi, time_limit=remaining, seed=seed, threads=threads)
    W = max(W, res.welfare)
    B = min(B, res.bound)
    return PivotResult(W, max(W, B), res.proven or W >= B - tol, time.perf_counter() - t0, "anytime")
