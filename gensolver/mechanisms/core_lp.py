"""The budget of a core run, and its LP and QP stages on that budget.

:func:`~gensolver.mechanisms.core.core` spends one ``time_limit`` on everything it runs: the VCG
stage, the separation MILPs, the minimum-revenue LP, the VCG-nearest QP and the rational
certificate. :class:`CoreBudget` keeps it, in wall-clock seconds or, in deterministic mode, in
work units (about a second each on the 2-core reference machine, the footing of
:class:`~gensolver.solvers.engine.WorkClock`): the LP and QP are charged per simplex or QP
iteration and per non-zero of their rows (:data:`WORK_PER_ITER_NNZ`), plus a fixed cost per
call, and stopped by an iteration limit computed from what is left, so the charge, and every
decision taken on it, is the same on every run. The rational certificate counts its operations
(:data:`WORK_PER_RATIONAL_OP`).

The LP is solved by HiGHS's simplex (SciPy's ``linprog`` when ``highspy`` is missing); the QP
(``min ||p - c||^2`` over the core rows at the LP's revenue) by HiGHS's QP solver with an
iteration cap (0.03-0.3 s for 150-300 winners), and where that fails (it cycled on an
18-winner problem of a bundled round) by a primal active-set method from the LP point
(:func:`active_set_qp`). SciPy's SLSQP, used before, took 170-200 s on 150 winners (load 12).

References
----------
Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10 (2018).
Nocedal & Wright, *Numerical Optimization*, 2nd ed., Springer 2006, §16.5 (active-set methods).
Day & Cramton, "Quadratic core-selecting payment rules for combinatorial auctions",
Operations Research 60(3), 2012.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["CoreBudget", "LpQp", "lp_qp", "active_set_qp", "WORK_PER_ITER_NNZ", "WORK_PER_CALL",
           "WORK_PER_RATIONAL_OP"]

#: work units per simplex or QP iteration, per non-zero of the rows and bounds (HiGHS, measured
#: 1-2e-8 s on 300 winners x 600 rows on the loaded 2-core reference machine)
WORK_PER_ITER_NNZ = 2e-8
#: work units per LP or QP call (model building and the Python around it)
WORK_PER_CALL = 5e-3
#: work units per rational operation of the exact certificate (a :class:`fractions.Fraction`
#: multiply-add is a few microseconds)
WORK_PER_RATIONAL_OP = 3e-6


class CoreBudget:
    """What is left of one core run's budget: wall seconds, or work units (``deterministic``).

    ``total=None``: no limit. In wall mode :meth:`used` is the time since the start and
    :meth:`charge` does nothing; in deterministic mode :meth:`used` is what was charged.
    """

    def __init__(self, total: float | None, *, deterministic: bool) -> None:
        self.total, self.det = total, bool(deterministic)
        self.t0 = time.perf_counter()
        self.work = 0.0
        #: charges by stage (work units in deterministic mode, else estimates on the same footing)
        self.by_stage: dict[str, float] = {}

    def used(self) -> float:
        return self.work if self.det else time.perf_counter() - self.t0

    def left(self) -> float | None:
        return None if self.total is None else self.total - self.used()

    def charge(self, stage: str, units: float) -> None:
        units = max(0.0, float(units))
        self.by_stage[stage] = self.by_stage.get(stage, 0.0) + units
        if self.det:
            self.work += units

    def affords(self, units: float) -> bool:
        left = self.left()
        return left is None or units <= left


@dataclass(frozen=True)
class LpQp:
    """The minimum-revenue LP point, the VCG-nearest QP point, and whether both finished."""

    p_lp: np.ndarray
    p: np.ndarray
    complete: bool


def _iterations(budget: CoreBudget, nnz: int) -> int | None:
    """The iteration limit what is left of ``budget`` pays for (``None``: no limit)."""
    left = budget.left()
    if left is None:
        return None
    return max(0, int(math.floor((left - WORK_PER_CALL) / (WORK_PER_ITER_NNZ * max(1, nnz)))))


def _highs_lp(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              budget: CoreBudget) -> np.ndarray | None:
    """``min sum(p)`` s.t. ``A p >= b``, ``lo <= p <= hi`` with HiGHS's simplex, stopped by the
    iteration limit the budget pays for (``None``: not finished)."""
    import highspy
    import scipy.sparse as sp

    from ..solvers.engine import new_highs

    n = len(lo)
    M = sp.csc_matrix(A.reshape(-1, n))
    M.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, int(M.shape[0])
    lp.col_cost_ = np.ones(n)
    lp.col_lower_, lp.col_upper_ = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    lp.row_lower_, lp.row_upper_ = np.asarray(b, dtype=float), np.full(len(b), highspy.kHighsInf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = M.indptr.astype(np.int32)
    lp.a_matrix_.index_ = M.indices.astype(np.int32)
    lp.a_matrix_.value_ = M.data.astype(np.float64)
    h = new_highs()
    limit = _iterations(budget, int(M.nnz) + n)
    if limit is not None:
        h.setOptionValue("simplex_iteration_limit", limit)
        if not budget.det:
            h.setOptionValue("time_limit", max(1e-3, float(budget.left() or 0.0)))
    h.passModel(lp)
    h.run()
    its = int(max(0, h.getInfo().simplex_iteration_count))
    budget.charge("lp", WORK_PER_CALL + WORK_PER_ITER_NNZ * its * (int(M.nnz) + n))
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.clip(np.asarray(h.getSolution().col_value, dtype=float), lo, hi)


def _highs_qp(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, c: np.ndarray, revenue: float,
              budget: CoreBudget) -> np.ndarray | None:
    """``min ||p - c||^2`` s.t. ``A p >= b``, ``lo <= p <= hi``, ``sum(p) <= revenue`` with HiGHS's
    QP solver, at most ``10 (n + rows) + 1000`` iterations and what the budget pays for
    (``None``: not finished; it cycled on an 18-winner problem of a bundled round)."""
    import highspy
    import scipy.sparse as sp

    from ..solvers.engine import new_highs

    n = len(lo)
    M = sp.vstack([sp.csr_matrix(A.reshape(-1, n)), sp.csr_matrix(np.ones((1, n)))], format="csc")
    M.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, int(M.shape[0])
    lp.col_cost_ = -2.0 * np.asarray(c, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    lp.row_lower_ = np.concatenate([np.asarray(b, dtype=float), [-highspy.kHighsInf]])
    lp.row_upper_ = np.concatenate([np.full(len(b), highspy.kHighsInf), [revenue + 1e-9 * max(1.0, abs(revenue))]])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = M.indptr.astype(np.int32)
    lp.a_matrix_.index_ = M.indices.astype(np.int32)
    lp.a_matrix_.value_ = M.data.astype(np.float64)
    hess = highspy.HighsHessian()
    hess.dim_, hess.format_ = n, highspy.HessianFormat.kTriangular
    hess.start_ = np.arange(n + 1, dtype=np.int32)
    hess.index_ = np.arange(n, dtype=np.int32)
    hess.value_ = np.full(n, 2.0)
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    h = new_highs()
    cap = 10 * (n + int(M.shape[0])) + 1000
    limit = _iterations(budget, int(M.nnz) + n)
    limit = cap if limit is None else min(cap, limit)
    h.setOptionValue("simplex_iteration_limit", limit)
    h.setOptionValue("qp_iteration_limit", limit)
    if budget.total is not None and not budget.det:
        h.setOptionValue("time_limit", max(1e-3, float(budget.left() or 0.0)))
    h.passModel(model)
    h.run()
    info = h.getInfo()
    its = int(max(0, info.simplex_iteration_count)) + int(max(0, getattr(info, "qp_iteration_count", 0)))
    budget.charge("qp", WORK_PER_CALL + WORK_PER_ITER_NNZ * its * (int(M.nnz) + n))
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.clip(np.asarray(h.getSolution().col_value, dtype=float), lo, hi)


def _scipy_lp(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, budget: CoreBudget) -> np.ndarray | None:
    from scipy.optimize import linprog

    n = len(lo)
    limit = _iterations(budget, A.size + n)
    opts: dict[str, float | int] = {} if limit is None else {"maxiter": limit}
    if limit is not None and not budget.det:
        opts["time_limit"] = max(1e-3, float(budget.left() or 0.0))
    lp = linprog(np.ones(n), A_ub=-A, b_ub=-b, bounds=list(zip(lo, hi)), method="highs", options=opts)
    budget.charge("lp", WORK_PER_CALL + WORK_PER_ITER_NNZ * int(getattr(lp, "nit", 0) or 0) * (A.size + n))
    return np.clip(lp.x, lo, hi) if lp.status == 0 else None


def _independent_rows(M: np.ndarray, tol: float) -> list[int]:
    """Indices of a maximal linearly independent subset of the rows of ``M`` (in order)."""
    keep: list[int] = []
    Q = np.zeros((0, M.shape[1]))
    for k, row in enumerate(M):
        r = row - Q.T @ (Q @ row)
        nr = float(np.linalg.norm(r))
        if nr > tol * max(1.0, float(np.linalg.norm(row))):
            keep.append(k)
            Q = np.vstack([Q, r / nr])
    return keep


def active_set_qp(G: np.ndarray, h: np.ndarray, c: np.ndarray, p0: np.ndarray, *, budget: CoreBudget,
                  scale: float, max_iter: int) -> np.ndarray | None:
    """``min ||p - c||^2`` over ``G p >= h`` and ``sum(p) = sum(p0)``, from the feasible ``p0``.

    The primal active-set method (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg.
    16.3) with the identity Hessian: each step projects ``c - p`` on the null space of the
    working rows; a zero step with non-negative multipliers is the optimum (KKT), a negative
    one drops its row, a blocking row joins the set (the lowest index on ties). Each iteration
    is charged ``WORK_PER_ITER_NNZ`` per entry of ``G`` and of the working rows' products, and
    the loop stops when the budget does not cover the next, or after ``max_iter``: ``None``
    then. The fallback of :func:`_highs_qp`, which cycled on a degenerate 18-winner problem of a
    bundled GPU round (976,835 iterations).
    """
    n = len(c)
    ones = np.ones((1, n))
    tol = 1e-9 * scale
    p = p0.copy()
    slack = G @ p - h
    cand = [int(k) for k in np.argsort(slack, kind="stable") if slack[k] <= tol]
    keep = _independent_rows(np.vstack([ones, G[cand]]) if cand else ones, 1e-10)
    work_set = [cand[k - 1] for k in keep if k > 0][: n - 1]
    for _ in range(max_iter):
        k = len(work_set) + 1
        cost = WORK_PER_CALL / 10 + WORK_PER_ITER_NNZ * (G.size + 2 * k * n * min(k, n))
        if not budget.affords(cost):
            return None
        budget.charge("qp", cost)
        M = np.vstack([ones, G[work_set]]) if work_set else ones
        g = c - p
        y = np.linalg.lstsq(M.T, g, rcond=None)[0]
        d = g - M.T @ y
        if float(np.abs(d).max()) <= 1e-12 * scale:
            lam = -2.0 * y[1:]  # M^T lam = 2 (p - c) = -2 (g)
            if not work_set or float(lam.min()) >= -1e-9 * scale:
                return p
            work_set.pop(int(np.argmin(lam)))
            continue
        Gd = G @ d
        slack = G @ p - h
        block = [j for j in np.flatnonzero(Gd < -1e-14 * max(1.0, float(np.abs(d).max()))) if j not in work_set]
        alpha, hit = 1.0, -1
        for j in block:
            a = max(0.0, float(slack[j])) / -float(Gd[j])
            if a < alpha:
                alpha, hit = a, int(j)
        p = p + alpha * d
        if hit >= 0:
            work_set.append(hit)
    return None


def lp_qp(rows: list[tuple[np.ndarray, float]], lo: np.ndarray, hi: np.ndarray, c: np.ndarray,
          budget: CoreBudget) -> LpQp | None:
    """The minimum-revenue LP point and the QP point nearest ``c`` at that revenue, on ``budget``.

    ``None`` when the LP did not finish (iteration or time limit): there is no point to report.
    A QP that did not finish leaves the LP point (``complete=False``); a QP point less feasible
    than the LP point (beyond round-off) is replaced by it too.
    """
    n = len(lo)
    if not rows:
        return LpQp(c.copy(), c.copy(), True)
    A = np.array([r[0] for r in rows], dtype=float).reshape(-1, n)
    b = np.array([r[1] for r in rows], dtype=float)
    try:
        p0 = _highs_lp(A, b, lo, hi, budget)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        p0 = _scipy_lp(A, b, lo, hi, budget)
    if p0 is None:
        return None
    revenue = float(p0.sum())
    eye = np.eye(n)
    scale = max(1.0, float(np.abs(hi).max()), float(np.abs(c).max()))
    try:
        p = _highs_qp(A, b, lo, hi, c, revenue, budget)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        p = None
    if p is None:
        p = active_set_qp(np.vstack([A, eye, -eye]), np.concatenate([b, lo, -hi]), c, p0, budget=budget,
                          scale=scale, max_iter=2 * (n + len(b)) + 50)
    if p is None:
        return LpQp(p0, p0.copy(), False)
    # keep the QP point only if it is as feasible as the LP point (solver tolerances)
    scale = 1e-7 * max(1.0, abs(revenue))
    if np.max(b - A @ p, initial=-np.inf) > np.max(b - A @ p0, initial=-np.inf) + scale or p.sum() > revenue + scale:
        return LpQp(p0, p0.copy(), True)
    return LpQp(p0, p, True)
