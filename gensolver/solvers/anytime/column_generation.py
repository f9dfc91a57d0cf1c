"""The LP bound by column generation, and the state it leaves for the later stages.

The restricted master LP (HiGHS) over a working set of columns gives row duals ``y >= 0`` and
XOR duals ``u``; pricing computes every column's reduced cost ``rc = v - A^T y - u_owner`` with
one sparse product and adds the best columns of each bidder with ``rc > 0``. At every iteration
the Lagrangian bound (:func:`~gensolver.solvers.formulation.bounds.lagrangian_bound`) is a
valid upper bound; at convergence it equals the LP optimum. Only the working set enters an LP,
so rounds with hundreds of thousands of bundles are bounded in seconds.

References
----------
Desrosiers & Lübbecke, "A primer in column generation", in *Column Generation*, Springer 2005.
Gondzio, González-Brevis & Munari, "New developments in the primal-dual column generation
technique", European J. Oper. Res. 224(1), 2013 (interior-point masters).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..exact.common import add_packing_columns, highs_packing_master
from ..formulation.bounds import dual_bound, lagrangian_bound, reduced_costs
from ..formulation.problem import MatrixProblem
from .budget import WORK_PER_NNZ_IPM, WORK_PER_NNZ_PRICING, WorkClock

__all__ = ["LpState", "column_generation"]


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
    from scipy.optimize import linprog  # here, not at the top: the CLI starts without it

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
        return 20 * WORK_PER_NNZ_IPM * (self.P.A[:, self.cols].nnz + self.cols.size)

    def solve(self, time_limit: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
        res, xc, duals = _master(self.P, self.cols, time_limit)
        if duals is None or xc is None:
            return None
        return float(-res.fun), xc, duals


class _HighsMaster:
    """Restricted master kept in one ``highspy.Highs`` object; new columns are appended with
    ``addCols`` (no rebuild of the model) and the LP is re-solved by interior point."""

    def __init__(self, P: MatrixProblem, cols: np.ndarray, vertex_duals: bool = False) -> None:
        self.P = P
        self.cols = np.zeros(0, dtype=np.int64)
        # interior point without crossover: on these degenerate masters it is several times
        # faster than simplex re-optimisation, and its central duals price better columns
        # (primal-dual column generation, Gondzio et al. 2013); any y >= 0 gives a valid bound.
        # Crossover on request: vertex duals give an exact dual objective (VCG pivots compare
        # it with incumbents to the last digit); interior duals lose ~1e-5 in sum(max(rc, 0)).
        # No "threads" option: HiGHS fixes its thread pool at the first run in the process.
        self.h = highs_packing_master(P, {"solver": "ipm", "run_crossover": "on" if vertex_duals else "off"})
        self.nnz = 0
        self.add(cols)

    def add(self, new: np.ndarray) -> None:
        new = np.asarray(new, dtype=np.int64)
        if new.size == 0:
            return
        self.nnz += add_packing_columns(self.h, self.P, new)
        self.cols = np.concatenate([self.cols, new])

    def work(self) -> float:
        """Work units of the last solve: interior-point iterations x non-zeros of the master."""
        # HiGHS reports the iterations of the last run; at least one is charged per call
        its = max(1, int(self.h.getInfo().ipm_iteration_count))
        return WORK_PER_NNZ_IPM * its * self.nnz

    def solve(self, time_limit: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
        return highs_rerun(self.h, time_limit)


def highs_rerun(h: Any, time_limit: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
    """Re-run the ``highspy.Highs`` model ``h`` for at most ``time_limit`` more seconds.

    Returns ``(objective, primal x, row duals)`` at an optimum, ``None`` otherwise. HiGHS
    measures ``time_limit`` on the object's cumulative run clock, hence the offset.
    """
    import highspy

    limit = highspy.kHighsInf if time_limit is None else h.getRunTime() + max(1e-3, float(time_limit))
    h.setOptionValue("time_limit", float(limit))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    return (float(h.getInfo().objective_function_value), np.asarray(sol.col_value, dtype=np.float64),
            np.asarray(sol.row_dual, dtype=np.float64))


def _new_master(P: MatrixProblem, cols: np.ndarray, vertex_duals: bool = False) -> _HighsMaster | _ScipyMaster:
    try:
        return _HighsMaster(P, cols, vertex_duals)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        return _ScipyMaster(P, cols)


def column_generation(P: MatrixProblem, *, init_cols: np.ndarray, deadline: float | None,
                      max_iterations: int = 500, per_owner: int = 3, rel_tol: float = 0.0,
                      vertex_duals: bool = False, clock: WorkClock | None = None,
                      until: float | None = None) -> LpState:
    """Column generation for the LP relaxation (see the module docstring).

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
    for it in range(1, max_iterations + 1):  # noqa: B007 - the count is read after the loop
        remaining = clock.left(until)
        if remaining is not None and remaining <= 0:
            break
        out = master.solve(None if clock.det else remaining)
        clock.charge(WORK_PER_NNZ_PRICING * P.A.nnz + master.work())
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
    rc = reduced_costs(P, y, u)
    dual_obj = dual_bound(P, y, u, rc)
    return LpState(y, u, float(min(best_bound, dual_obj)), dual_obj, rc, master_cols, x_cols, lp_value, converged, it,
                   time.perf_counter() - t0)
