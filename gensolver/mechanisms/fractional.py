"""The LP relaxation of the welfare problem and fractional VCG payments (Lavi–Swamy, steps 1–2).

The relaxation is the welfare problem of :mod:`gensolver.model.instance` with ``0 <= x_j``
instead of ``x_j in {0, 1}`` (``x_j <= 1`` follows from the XOR row), over the bids that fit
alone: a bundle that exceeds some capacity on its own can never be allocated, so its column is
fixed at 0. The feasible set is a polytope that does not depend on the reported values, which is
what makes fractional VCG on it truthful (it is maximal in range over the fractional
allocations).

:class:`RestrictedLp` keeps one restricted master LP (HiGHS dual simplex, through ``highspy``)
over a working set of columns and prices the others by column generation, as the anytime
engine does (:func:`gensolver.solvers.anytime.column_generation.column_generation`), but with a simplex so
that re-solves are warm-started from the previous basis and the primal ``x*`` is a vertex (a
sparse support, which the decomposition needs). Every answer carries a certified dual bound
``cap.y + sum_i max(u_i, max_{j of i} (v_j - A_j.y))``, valid for any ``y >= 0``, so the LP
optimum is known to lie in ``[value, bound]`` whether or not pricing converged.

The fractional VCG (Clarke pivot) payment of bidder ``i`` is
``p_i = LP*(-i) - (LP* - v_i . x*_i)``; a bidder with ``x*_i = 0`` pays 0 without a re-solve
(``x*`` is feasible without it), every other one takes one warm-started re-solve with its
columns fixed at 0.

Other optima: the LP often has a face of optima. :func:`face_optima` maximises second-stage
objectives over that face, described exactly by complementary slackness with the optimal duals
(reduced-cost-negative columns at 0, rows of positive dual tight), and :func:`at_optimum`
re-prices fractional VCG at another optimum from the same ``LP*(-i)`` intervals: each owner's
value and payment move by the same amount and its utility ``LP* - LP*(-i)`` does not (the
argument is in :mod:`gensolver.mechanisms.lavi_swamy`).

References
----------
Lavi & Swamy, "Truthful and near-optimal mechanism design via linear programming", J. ACM
58(6), 2011 (FOCS 2005), Section 2.
Desrosiers & Lübbecke, "A primer in column generation", in *Column Generation*, Springer 2005.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..model.tolerances import payment_tolerance
from ..solvers.engine import MatrixProblem, add_packing_columns, fit_mask, highs_packing_master, highs_rerun

__all__ = ["LpSolution", "RestrictedLp", "fits_alone", "FractionalVcg", "fractional_vcg", "at_optimum", "face_optima",
           "SECOND_STAGES"]


def fits_alone(P: MatrixProblem, chunk_nnz: int = 1 << 20) -> np.ndarray:
    """``bool[n]``: the columns whose every demand is within capacity (the capacity rule of
    :mod:`gensolver.model.tolerances`): :func:`~gensolver.solvers.formulation.problem.fit_mask`
    over every column."""
    return fit_mask(P.A, None, P.limit, chunk_nnz)


@dataclass(frozen=True)
class LpSolution:
    """One LP relaxation optimum.

    Attributes
    ----------
    value : float
        ``v . x`` of the returned ``x`` (primal feasible up to the solver's tolerance).
    bound : float
        Certified upper bound on the LP optimum (dual objective of the final prices).
    x : float64[n]
        The primal solution over all columns (0 outside the working set).
    converged : bool
        Pricing found no column with a positive reduced cost: ``bound`` meets ``value``
        up to the tolerances.
    iterations : int
        Master solves.
    seconds : float
    duals : (float64[rows], float64[n_owners]) or None
        The final master's capacity and XOR-row duals (full problem only): with them the
        optimal face is known exactly by complementary slackness (:func:`face_optima`).
    """

    value: float
    bound: float
    x: np.ndarray
    converged: bool
    iterations: int
    seconds: float
    duals: tuple[np.ndarray, np.ndarray] | None = None


class _HighsMaster:
    """Restricted master ``max v.x, A x <= cap, X x <= 1, x >= 0`` in one ``highspy.Highs``."""

    def __init__(self, P: MatrixProblem) -> None:
        import highspy

        self._hs = highspy
        self.P = P
        self.h = highs_packing_master(P, {"solver": "simplex", "presolve": "off"})
        self.cols = np.zeros(0, dtype=np.int64)

    def add(self, new: np.ndarray) -> None:
        new = np.asarray(new, dtype=np.int64)
        if new.size == 0:
            return
        add_packing_columns(self.h, self.P, new)
        self.cols = np.concatenate([self.cols, new])

    def fix(self, positions: np.ndarray, zero: bool) -> None:
        """Fix the master columns at ``positions`` to 0 (``zero``) or free them again."""
        if positions.size == 0:
            return
        upper = np.zeros(positions.size) if zero else np.full(positions.size, self._hs.kHighsInf)
        self.h.changeColsBounds(int(positions.size), positions.astype(np.int32), np.zeros(positions.size), upper)

    def prune(self, keep: np.ndarray) -> None:
        """Delete the master columns where ``keep`` (over master positions) is false; they must
        be nonbasic (the basis stays valid)."""
        drop = np.flatnonzero(~keep)
        if drop.size == 0:
            return
        self.h.deleteCols(int(drop.size), drop.astype(np.int32))
        self.cols = self.cols[keep]

    def basic(self) -> np.ndarray:
        """``bool`` over master positions: basic columns of the current basis."""
        b = self.h.getBasis()
        st = np.asarray([int(c) for c in b.col_status]) if b.valid else np.zeros(self.cols.size, dtype=int)
        return st == int(self._hs.HighsBasisStatus.kBasic)

    def save_basis(self) -> None:
        """Remember the current (optimal) basis; :meth:`restore_basis` starts from it again."""
        b = self.h.getBasis()
        self._basis = (list(b.col_status), list(b.row_status)) if b.valid else None

    def restore_basis(self) -> None:
        saved = getattr(self, "_basis", None)
        if saved is None:
            return
        cols, rows = saved
        b = self._hs.HighsBasis()
        b.col_status = cols + [self._hs.HighsBasisStatus.kLower] * (self.cols.size - len(cols))
        b.row_status = rows
        b.valid = True
        self.h.setBasis(b)

    def solve(self, time_limit: float | None, primal: bool = True) -> tuple[float, np.ndarray, np.ndarray] | None:
        """Re-optimise from the current basis: primal simplex after columns were added (the
        basis stays primal feasible), dual simplex after columns were fixed at 0."""
        self.h.setOptionValue("simplex_strategy", 4 if primal else 1)
        return highs_rerun(self.h, time_limit)


class _ScipyMaster:
    """The same master re-solved from scratch by SciPy's HiGHS (when ``highspy`` is missing)."""

    def __init__(self, P: MatrixProblem) -> None:
        self.P = P
        self.cols = np.zeros(0, dtype=np.int64)
        self.zero = np.zeros(0, dtype=bool)

    def add(self, new: np.ndarray) -> None:
        new = np.asarray(new, dtype=np.int64)
        self.cols = np.concatenate([self.cols, new])
        self.zero = np.concatenate([self.zero, np.zeros(new.size, dtype=bool)])

    def fix(self, positions: np.ndarray, zero: bool) -> None:
        self.zero[positions] = zero

    def save_basis(self) -> None:
        pass

    def prune(self, keep: np.ndarray) -> None:
        self.cols, self.zero = self.cols[keep], self.zero[keep]

    def basic(self) -> np.ndarray:
        return np.ones(self.cols.size, dtype=bool)

    def restore_basis(self) -> None:
        pass

    def solve(self, time_limit: float | None, primal: bool = True) -> tuple[float, np.ndarray, np.ndarray] | None:
        from scipy.optimize import linprog

        P, cols = self.P, self.cols
        X = sp.csr_matrix((np.ones(cols.size), (P.owner[cols], np.arange(cols.size))), shape=(P.n_owners, cols.size))
        A = sp.vstack([P.A[:, cols].tocsr(), X], format="csr")
        bounds = [(0.0, 0.0 if z else None) for z in self.zero]
        opts: dict[str, Any] = {} if time_limit is None else {"time_limit": max(1e-3, float(time_limit))}
        res = linprog(-P.values[cols], A_ub=A, b_ub=np.concatenate([P.cap, np.ones(P.n_owners)]), bounds=bounds,
                      method="highs", options=opts)
        if res.status != 0 or res.x is None:
            return None
        return float(-res.fun), np.asarray(res.x), -np.asarray(res.ineqlin.marginals)


class RestrictedLp:
    """The LP relaxation of one problem as a stateful restricted master LP, re-solvable without
    any one owner (warm-started). (The frozen record of one LP solve is
    :class:`gensolver.solvers.formulation.bounds.LpRelaxation`.)

    Parameters
    ----------
    P : MatrixProblem
    per_owner : int
        Columns added per owner and pricing round.
    rel_tol : float
        Pricing adds columns with reduced cost above ``rel_tol * max(1, max value)``.
    prune_share : float
        After the full problem's optimum, master columns with reduced cost below
        ``-prune_share * max value`` (nonbasic) are dropped before the re-solves.
    """

    def __init__(self, P: MatrixProblem, *, per_owner: int = 10, rel_tol: float = 1e-9,
                 prune_share: float = 0.02) -> None:
        self.P = P
        self.prune_share = prune_share
        self.allowed = fits_alone(P) & (P.values > 0)
        self.tol = rel_tol * max(1.0, float(P.values.max(initial=0.0)))
        self.per_owner = per_owner
        try:
            self.master: _HighsMaster | _ScipyMaster = _HighsMaster(P)
        except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
            self.master = _ScipyMaster(P)
        self.in_set = np.zeros(P.n, dtype=bool)
        cand = np.flatnonzero(self.allowed)
        if cand.size > 8 * P.n_owners:
            # the best few columns of every owner by value to start with; pricing adds the rest
            order = np.lexsort((-P.values[cand], P.owner[cand]))
            cand = cand[order]
            own = P.owner[cand]
            first = np.r_[True, own[1:] != own[:-1]]
            rank = np.arange(cand.size) - np.flatnonzero(first)[np.cumsum(first) - 1]
            cand = cand[rank < 5]
        self._add(cand)

    def _add(self, new: np.ndarray) -> None:
        new = np.asarray(new, dtype=np.int64)
        self.in_set[new] = True
        self.master.add(new)

    def solve(self, *, exclude: int | None = None, time_limit: float | None = None,
              max_iterations: int = 1000) -> LpSolution:
        """The LP optimum, or without every column of owner ``exclude``."""
        t0 = time.perf_counter()
        P, m = self.P, self.master
        allowed = self.allowed if exclude is None else self.allowed & (P.owner != exclude)
        if not allowed.any():  # nothing can be allocated: the optimum is the empty allocation
            return LpSolution(0.0, 0.0, np.zeros(P.n), True, 0, time.perf_counter() - t0)
        fixed = np.flatnonzero(P.owner[m.cols] == exclude) if exclude is not None else np.zeros(0, dtype=np.int64)
        if exclude is not None:
            m.restore_basis()  # the full problem's optimal basis: a few dual simplex pivots away
        m.fix(fixed, True)
        R = P.cap.size
        value, x_cols, cols = 0.0, np.zeros(0), m.cols
        y, u = np.zeros(R), np.zeros(P.n_owners)
        converged, it = False, 0
        try:
            for it in range(1, max_iterations + 1):
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    break
                out = m.solve(left, primal=exclude is None or it > 1)
                if out is None:
                    break
                value, x_cols, duals = out
                cols = m.cols.copy()
                y, u = np.maximum(duals[:R], 0.0), np.maximum(duals[R:], 0.0)
                rc = P.values - P.A.T @ y - u[P.owner]
                cand = np.flatnonzero((rc > self.tol) & allowed & ~self.in_set)
                if cand.size == 0:
                    converged = True
                    break
                order = np.lexsort((-rc[cand], P.owner[cand]))
                cand = cand[order]
                own = P.owner[cand]
                first = np.r_[True, own[1:] != own[:-1]]
                rank = np.arange(cand.size) - np.flatnonzero(first)[np.cumsum(first) - 1]
                self._add(cand[rank < self.per_owner])
        finally:
            m.fix(fixed, False)
        if exclude is None and converged:
            # re-solves without one owner start here: columns far from pricing in are dropped
            # from the master (pricing adds back any that a re-solve needs), so the dual simplex
            # iterations of the re-solves are cheaper
            rc_m = P.values[m.cols] - P.A[:, m.cols].T @ y - u[P.owner[m.cols]]
            keep = m.basic() | (rc_m >= -self.prune_share * max(1.0, float(P.values.max(initial=0.0))))
            if keep.size == m.cols.size and not keep.all():
                pos = np.flatnonzero(keep)
                x_keep = np.zeros(m.cols.size)
                x_keep[: x_cols.size] = x_cols
                m.prune(keep)
                self.in_set[:] = False
                self.in_set[m.cols] = True
                cols, x_cols = m.cols.copy(), x_keep[pos]
            m.save_basis()
        x = np.zeros(P.n)
        if x_cols.size:
            np.add.at(x, cols, np.maximum(x_cols, 0.0))
        x[~allowed] = 0.0
        value = float(P.values @ x)
        # certified bound: raise each owner's dual to cover its best reduced cost
        rc = np.where(allowed, P.values - P.A.T @ y, -np.inf)
        best = np.full(P.n_owners, -np.inf)
        np.maximum.at(best, P.owner, rc)
        if exclude is not None:
            best[exclude] = 0.0
            u = u.copy()
            u[exclude] = 0.0
        bound = float(P.cap @ y + np.maximum(u, np.maximum(best, 0.0)).sum())
        return LpSolution(value, max(bound, value), x, converged, it, time.perf_counter() - t0,
                          (y, u) if exclude is None else None)


@dataclass(frozen=True)
class FractionalVcg:
    """Fractional VCG on the LP relaxation.

    Attributes
    ----------
    lp : LpSolution
        The LP optimum ``x*`` (``lp.value = LP*``).
    owner_value : float64[n_owners]
        ``v_i . x*_i`` per owner.
    payments : float64[n_owners]
        ``p_i = LP*(-i) - (LP* - v_i . x*_i)``, clipped to ``[0, v_i . x*_i]``.
    bounds : float64[n_owners, 2]
        Certified interval of each exact fractional payment (from the LPs' dual bounds).
    pivots : dict
        Per re-solved owner: value, bound, converged, seconds.
    exact : bool
        Every LP converged with its certified dual bound within a quarter of
        :func:`~gensolver.model.tolerances.payment_tolerance` (absolute) of its value, so every
        payment is proved to that tolerance.
    seconds : float
    tolerance : float
        That payment tolerance.
    without : float64[n_owners, 2] or None
        Certified interval ``[lo, hi]`` of every owner's ``LP*(-i)``, which does not depend on
        the optimum ``x*`` (:func:`at_optimum` re-prices another optimum with it).
    allowed : bool[n] or None
        The columns of the relaxation (bids that fit alone, of positive value).
    """

    lp: LpSolution
    owner_value: np.ndarray
    payments: np.ndarray
    bounds: np.ndarray
    pivots: dict[int, dict[str, Any]]
    exact: bool
    seconds: float
    tolerance: float = 1e-6
    without: np.ndarray | None = None
    allowed: np.ndarray | None = None


def _price(P: MatrixProblem, lp: LpSolution, without: np.ndarray, pivots_converged: bool,
           ptol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Owner values, fractional VCG payments, their certified intervals and exactness at the
    optimum ``lp.x``, from the intervals ``without`` of every ``LP*(-i)``."""
    ov = np.bincount(P.owner, weights=P.values * lp.x, minlength=P.n_owners)
    won = np.bincount(P.owner, weights=lp.x, minlength=P.n_owners) > 0
    others = lp.value - ov
    lo_val = np.maximum(without[:, 0], others)  # x* without i is feasible without i: LP(-i) >= others
    pay = np.where(won, np.minimum(np.maximum(lo_val - others, 0.0), ov), 0.0)
    lo = np.where(won, np.minimum(np.maximum(lo_val - (lp.bound - ov), 0.0), ov), 0.0)
    hi = np.where(won, np.minimum(np.maximum(without[:, 1] - others, 0.0), ov), 0.0)
    bounds = np.stack([np.minimum(lo, pay), np.maximum(hi, pay)], axis=1)
    exact = (lp.converged and pivots_converged and lp.bound - lp.value <= ptol / 4
             and bool(np.all(without[won, 1] - lo_val[won] <= ptol / 4)))
    return ov, pay, bounds, bool(exact)


def fractional_vcg(P: MatrixProblem, *, support_tol: float = 1e-10, time_limit: float | None = None) -> FractionalVcg:
    """Solve the LP relaxation and every winner's pivot LP; fractional VCG payments.

    Entries of ``x*`` below ``support_tol`` are read as 0 (simplex round-off).
    """
    t0 = time.perf_counter()
    relax = RestrictedLp(P)
    lp = relax.solve(time_limit=time_limit)
    x = np.where(lp.x > support_tol, lp.x, 0.0)
    lp = LpSolution(float(P.values @ x), max(lp.bound, float(P.values @ x)), x, lp.converged, lp.iterations,
                    lp.seconds, lp.duals)
    share = np.bincount(P.owner, weights=x, minlength=P.n_owners)
    pivots: dict[int, dict[str, Any]] = {}
    # exact: every LP proved to a quarter of the payment tolerance (absolute, not relative)
    ptol = payment_tolerance(lp.bound)
    # LP*(-i) of an owner without a share is LP*: x* is feasible without it
    without = np.tile([lp.value, lp.bound], (P.n_owners, 1))
    converged = True
    for o in np.flatnonzero(share > 0).tolist():
        left = None if time_limit is None else max(0.05, time_limit - (time.perf_counter() - t0))
        s = relax.solve(exclude=o, time_limit=left)
        without[o] = (s.value, s.bound)
        converged = converged and s.converged
        pivots[o] = {"value": s.value, "bound": s.bound, "converged": s.converged, "seconds": s.seconds}
    owner_value, pay, bounds, exact = _price(P, lp, without, converged, ptol)
    for o, piv in pivots.items():
        piv["value"] = max(piv["value"], lp.value - float(owner_value[o]))
    if not lp.converged:
        # x* is not known to be optimal: the exact fractional payment (at an LP optimum) is only
        # known to lie in [0, v_i . x_i] with x_i the optimum's share, at most the best bid
        best = np.zeros(P.n_owners)
        np.maximum.at(best, P.owner, np.where(relax.allowed, P.values, 0.0))
        bounds[:, 0] = 0.0
        bounds[:, 1] = np.maximum(best, bounds[:, 1])
    return FractionalVcg(lp, owner_value, pay, bounds, pivots, exact, time.perf_counter() - t0, ptol, without,
                         relax.allowed)


def at_optimum(P: MatrixProblem, fv: FractionalVcg, x: np.ndarray) -> FractionalVcg:
    """Fractional VCG at another optimum ``x`` of the same LP (the pivot LPs ``LP*(-i)`` are
    the same at every optimum; each owner's value and payment move by the same amount).

    ``fv`` must have converged; ``exact`` is re-checked against ``x``'s own value.
    """
    if fv.without is None or not fv.lp.converged:
        raise ValueError("at_optimum needs a converged fractional VCG")
    value = float(P.values @ x)
    lp = LpSolution(value, max(fv.lp.bound, value), x, True, fv.lp.iterations, fv.lp.seconds, fv.lp.duals)
    without = fv.without.copy()
    # x* without i is feasible without i as well: LP(-i) >= LP*(x*) - v_i . x*_i
    without[:, 0] = np.maximum(without[:, 0], fv.lp.value - fv.owner_value)
    converged = all(bool(p["converged"]) for p in fv.pivots.values())
    owner_value, pay, bounds, exact = _price(P, lp, without, converged, fv.tolerance)
    return FractionalVcg(lp, owner_value, pay, bounds, fv.pivots, exact, fv.seconds, fv.tolerance,
                         without, fv.allowed)


#: the second-stage objectives of :func:`face_optima`, in the order they are tried
SECOND_STAGES = ("values", "-values", "ones", "-ones", "random-0", "random-1", "random-2")


def _second_stage(P: MatrixProblem, name: str) -> np.ndarray:
    if name.startswith("random-"):  # fixed seeds over the canonical column order
        return np.random.default_rng(int(name.split("-")[1])).random(P.n)
    base = P.values if name.endswith("values") else np.ones(P.n)
    return -base if name.startswith("-") else base


def face_optima(P: MatrixProblem, fv: FractionalVcg, stages: int) -> list[tuple[str, np.ndarray]]:
    """Other optima of the LP relaxation: the first ``stages`` objectives of
    :data:`SECOND_STAGES` maximised over the optimal face.

    The face is described exactly by complementary slackness with the optimal duals ``(y, u)``
    of ``fv`` (no slack on the objective): columns of negative reduced cost are fixed at 0,
    capacity rows with ``y_r > 0`` and XOR rows with ``u_i > 0`` are tight, so every point of
    it has value ``cap.y + sum u``, the dual bound. Numerically "negative" and "positive" are
    read beyond ``1e-9 * max(1, max v)`` (the pricing tolerance); each answer's value is checked against the
    certified bound, and an answer more than a quarter of the payment tolerance below
    ``fv``'s own value is dropped. Returns ``(name, x)`` pairs (support below ``1e-10`` read
    as 0); empty when ``fv`` did not converge.
    """
    from scipy.optimize import linprog

    if not fv.lp.converged or fv.lp.duals is None or fv.allowed is None or stages <= 0:
        return []
    y, u = fv.lp.duals
    tol = 1e-9 * max(1.0, float(np.abs(P.values).max(initial=0.0)))
    rc = P.values - P.A.T @ y - u[P.owner]
    cols = np.flatnonzero(fv.allowed & (rc >= -tol))
    if cols.size == 0:
        return []
    X = sp.csr_matrix((np.ones(cols.size), (P.owner[cols], np.arange(cols.size))), shape=(P.n_owners, cols.size))
    M = sp.vstack([P.A[:, cols].tocsr(), X], format="csr")
    b = np.concatenate([P.cap, np.ones(P.n_owners)])
    tight = np.concatenate([y > tol, u > tol])
    eq = (M[tight], b[tight]) if tight.any() else (None, None)
    ub = (M[~tight], b[~tight]) if not tight.all() else (None, None)
    out: list[tuple[str, np.ndarray]] = []
    for name in SECOND_STAGES[:stages]:
        res = linprog(-_second_stage(P, name)[cols], A_ub=ub[0], b_ub=ub[1], A_eq=eq[0], b_eq=eq[1],
                      bounds=(0, None), method="highs-ds")
        if res.status != 0 or res.x is None:
            continue
        x = np.zeros(P.n)
        x[cols] = np.where(res.x > 1e-10, res.x, 0.0)
        if float(P.values @ x) >= fv.lp.value - fv.tolerance / 4:
            out.append((name, x))
    return out
