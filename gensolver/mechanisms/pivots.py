"""VCG pivots on the anytime engine: the optimum without one bidder, from the main solve's state.

The main LP's duals stay dual feasible when a bidder's columns are removed, so each pivot starts
with a bound for free; the main winners minus the bidder (extended first fit) give the
incumbent; reduced-cost fixing then leaves a small exact restricted MIP, or nothing at all when
the incumbent meets the bound (:func:`pivot_solve`). Pivots of one VCG run share a
:class:`SolutionPool` of solutions and settled bounds.

References
----------
Nisan & Ronen, "Computationally feasible VCG mechanisms", JAIR 29, 2007.
Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, Wiley 1988 (reduced-cost fixing).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..solvers.anytime.column_generation import LpState, column_generation
from ..solvers.anytime.driver import anytime_solve
from ..solvers.anytime.exact_restricted import solve_exact_restricted
from ..solvers.formulation.bounds import owner_best_alone, trivial_bound
from ..solvers.formulation.problem import MatrixProblem
from ..solvers.formulation.scales import DEFAULT_MIP_GAP
from ..solvers.heuristics import first_fit_matrix, los_order, upgrade_swaps

__all__ = ["PivotResult", "SolutionPool", "lp_state", "pivot_solve", "owner_best_alone"]


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


def pivot_solve(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: LpState | Callable[[], LpState], *, upper: float,
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


def _pivot_solve(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: LpState | Callable[[], LpState], *, upper: float,
                time_limit: float | None = None, threads: int | None = None, max_restricted: int = 20_000,
                seed: int = 0, pool: SolutionPool | None = None,
                best_alone: np.ndarray | None = None) -> PivotResult:
    t0 = time.perf_counter()
    mine = P.owner == owner
    Pi = P.without_owner(owner)
    vals = Pi.values
    start = np.where(mine, 0.0, x_star)
    # the cheapest bound first: each other owner's best column alone (from ``best_alone``,
    # computed once per VCG run, when given); x_star minus the owner may already meet it
    trivial = (trivial_bound(Pi) if best_alone is None
               else float(best_alone.sum() - best_alone[owner]))
    W = float(vals @ start)
    if W >= min(trivial, upper) - DEFAULT_MIP_GAP * max(1.0, abs(W)):
        return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    order = los_order(Pi, 0.5, Pi.normalised_size())
    x = first_fit_matrix(Pi, order, start=start)
    W = float(vals @ x)
    pooled = pool.best_without(owner, vals) if pool is not None else None
    if pooled is not None and float(vals @ pooled) > W:
        x2 = first_fit_matrix(Pi, order, start=pooled)
        if float(vals @ x2) > W:
            x, W = x2, float(vals @ x2)
    if W >= min(trivial, upper) - DEFAULT_MIP_GAP * max(1.0, abs(W)):
        return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    # cheap local search: with a bidder gone, the others' bundles can often grow; the main
    # duals' bound is frequently met right after
    x2 = first_fit_matrix(Pi, order, start=upgrade_swaps(Pi, x))
    if float(vals @ x2) > W + 1e-12:
        x, W = x2, float(vals @ x2)
        if W >= min(trivial, upper) - DEFAULT_MIP_GAP * max(1.0, abs(W)):
            return PivotResult(W, W, True, time.perf_counter() - t0, "trivial-bound")
    if callable(lp):
        lp = lp()
    rc = np.where(mine, -np.inf, lp.rc)
    # the dual objective of (y, u) on the pivot problem; reduced-cost fixing must use exactly
    # this value (v.x <= B_dual + sum_j min(rc_j, 0) x_j), not a smaller bound from elsewhere
    B_dual = float(P.cap @ lp.y + lp.u.sum() - lp.u[owner] + np.maximum(rc, 0.0).sum())
    B = min(B_dual, upper, trivial)
    tol = DEFAULT_MIP_GAP * max(1.0, abs(B))
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
        if w > W and Pi.feasible(sub.x):
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
