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

import dataclasses
import math
import os
import threading
import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .._deprecation import warn_renamed
from ..model.tolerances import payment_tolerance
from ..solvers import Status
from ..solvers.engine import (
    DEFAULT_MIP_GAP,
    WORK_PER_NNZ_GREEDY,
    LpState,
    MatrixProblem,
    WorkClock,
    anytime_solve,
    column_generation,
    first_fit_matrix,
    los_order,
    owner_best_alone,
    solve_exact_restricted,
    trivial_bound,
    upgrade_swaps,
)

__all__ = ["PivotResult", "PivotBudget", "SolutionPool", "lp_state", "pivot_solve", "run_pivots",
           "owner_best_alone", "MIN_PIVOT_SOLVE", "MainProof", "prove_main"]

#: a pivot whose share of the budget is below this (seconds, or work units in deterministic
#: mode) gets no MIP solve: its interval comes from the free incumbent and the LP duals
MIN_PIVOT_SOLVE = 0.05
#: an estimate of the cost of building a restricted MIP (seconds, or work units), per non-zero
#: of its columns: a share that does not cover it starts no MIP, and a MIP that starts is given
#: its share less this, so the solve ends within the share (measured: 17,000-column GPU pivots
#: took about a second beyond a 0.5 s CP-SAT limit on the loaded 2-core reference machine)
SETUP_PER_NNZ = 5e-6


@dataclass(frozen=True)
class PivotResult:
    """The optimum without one bidder, ``W(-i)``: proved (``exact``), or an interval ``[welfare, bound]``.

    The one record of a VCG pivot, however it was settled: by :func:`pivot_solve` on the
    ``"auto"`` fast path, by a re-solve with another method
    (:func:`~gensolver.mechanisms.vcg.pivot_welfare`), or by the trivial bound with no solve.
    Frozen and picklable, so it returns from worker processes as it is; :meth:`to_dict` is its
    JSON form in ``Outcome.details["pivots"]``.

    Attributes
    ----------
    status : Status
        ``OPTIMAL`` when ``W(-i)`` is proved (``exact``), ``FEASIBLE`` for an interval; a
        re-solve's own status otherwise (its ``welfare`` and ``bound`` are then not used).
    welfare : float
        The best welfare found without the bidder (a lower bound on ``W(-i)``).
    bound : float or None
        A proven upper bound on ``W(-i)``; ``None``: the method gives none.
    seconds : float
        Wall-clock seconds the pivot took.
    how : str
        How the pivot was settled: on the fast path ``"trivial-bound"``, ``"dual-bound"``,
        ``"reduced-cost-fixing"``, ``"anytime"`` or ``"budget-spent"`` (a second pass joins two
        with ``+``); with no solve ``"trivial-bound"``; a re-solve's message otherwise.
    work : float or None
        The work units charged (deterministic mode; an estimate on the same footing in wall
        mode); ``None``: not counted (a re-solve by another method, no solve at all).
    limit : float or None
        The share of the budget :func:`pivot_solve` was given; ``None``: none, or not a pivot of
        the fast path.
    winners : tuple of str
        The winning bids without the bidder, where known (a re-solve, a pivot with no solve).
    """

    status: Status
    welfare: float
    bound: float | None
    seconds: float
    how: str
    work: float | None = None
    limit: float | None = None
    winners: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        """Whether ``W(-i)`` is proved (``status`` is ``OPTIMAL``)."""
        return self.status is Status.OPTIMAL

    @property
    def width(self) -> float:
        """``bound - welfare``: how far ``W(-i)`` may lie above ``welfare`` (infinite without a bound)."""
        return math.inf if self.bound is None else self.bound - self.welfare

    @property
    def method(self) -> str:
        """Deprecated alias of :attr:`how` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release)."""
        warn_renamed("PivotResult", "method", "how")
        return self.how

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``status`` (its value), ``welfare``, ``bound``, ``seconds``, ``how``,
        ``limit`` and ``work``, as in ``Outcome.details["pivots"]``."""
        return {"status": self.status.value, "welfare": self.welfare, "bound": self.bound, "seconds": self.seconds,
                "how": self.how, "limit": self.limit, "work": self.work}

    def __getitem__(self, key: str) -> Any:
        """Deprecated dict access, the dict form :func:`~gensolver.mechanisms.vcg.pivot_welfare`
        had: ``status`` (its value), ``welfare``, ``bound``, ``seconds``, ``winners`` (a list) and
        ``message`` (:attr:`how`); a :class:`~gensolver.GensolverDeprecationWarning`, removed in
        the next release."""
        if key not in ("status", "welfare", "bound", "seconds", "message", "winners"):
            raise KeyError(key)
        name = "how" if key == "message" else key
        warn_renamed("PivotResult", f"[{key!r}]", f".{name}")
        value = getattr(self, name)
        return value.value if name == "status" else list(value) if name == "winners" else value


def lp_state(P: MatrixProblem, *, time_limit: float | None = None, deterministic: bool = False) -> LpState:
    """The LP relaxation of ``P`` (all columns when small, column generation otherwise).

    ``deterministic=True``: ``time_limit`` is in work units (see :func:`lp_state_work`, which
    also returns the work charged).
    """
    return lp_state_work(P, time_limit=time_limit, deterministic=deterministic)[0]


def lp_state_work(P: MatrixProblem, *, time_limit: float | None = None, deterministic: bool = False,
                  init: np.ndarray | None = None) -> tuple[LpState, float]:
    """:func:`lp_state` and the work units it charged (``0.0`` in wall mode).

    ``init``: the first working set of column generation when ``P`` is too large to take all
    columns at once (the main run's LP columns, say); by default the first positive ones.
    """
    if P.A.nnz <= 400_000:
        init = np.arange(P.n)
    elif init is None:
        init = np.flatnonzero(P.values > 0)[: 20 * P.n_owners]
    if deterministic and time_limit is not None:
        clock = WorkClock(time_limit, True)
        lp = column_generation(P, init_cols=init, deadline=None, vertex_duals=True, clock=clock, until=time_limit)
        return lp, clock.used
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    return column_generation(P, init_cols=init, deadline=deadline, vertex_duals=True), 0.0


class PivotBudget:
    """The budget the pivots of one VCG run share: wall seconds, or work units (deterministic).

    Each pivot takes its share when it starts (:meth:`share`): what is left, split evenly. In
    wall mode over the *waves* of ``slots`` pivots running side by side (``ceil(n / slots)``
    for ``n`` pivots not yet started); in deterministic mode over the pivots themselves, since
    work adds up whatever runs in parallel, and the shares of running pivots are held back
    until they report what they used (:meth:`done`). A pivot that settles early (from the
    trivial bound, the LP duals or the shared pool) leaves its share to those after it, so
    the budget is re-split as pivots settle. ``total=None``: no limit.
    """

    def __init__(self, total: float | None, n: int, *, slots: int = 1, deterministic: bool = False) -> None:
        self.total, self.pending = total, int(n)
        self.slots, self.det = max(1, int(slots)), bool(deterministic)
        self.t0 = time.perf_counter()
        self.spent = self.reserved = 0.0
        self._lock = threading.Lock()

    def left(self) -> float | None:
        """Seconds (work units) not yet spent or held by running pivots; ``None``: no limit."""
        if self.total is None:
            return None
        if self.det:
            return self.total - self.spent - self.reserved
        return self.total - (time.perf_counter() - self.t0)

    def share(self) -> float | None:
        """The share of one pivot that starts now."""
        with self._lock:
            n = max(1, self.pending)
            self.pending -= 1
            left = self.left()
            if left is None:
                return None
            left = max(0.0, left)
            s = left / n if self.det else left / math.ceil(n / self.slots)
            if self.det:
                self.reserved += s
            return s

    def done(self, share: float | None, work: float) -> None:
        """A pivot given ``share`` finished having charged ``work`` units."""
        with self._lock:
            if self.det and share is not None:
                self.reserved -= share
            self.spent += max(0.0, work)


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

    def copy(self) -> SolutionPool:
        """A snapshot (for a pivot that must not see what others find meanwhile)."""
        new = SolutionPool.__new__(SolutionPool)
        new.P, new.size, new._lock = self.P, self.size, threading.Lock()
        with self._lock:
            new._sols, new._pivot_ub = list(self._sols), dict(self._pivot_ub)
        return new

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
                seed: int = 0, pool: SolutionPool | None = None, best_alone: np.ndarray | None = None,
                deterministic: bool = False) -> PivotResult:
    """``max welfare`` with every column of ``owner`` removed, warm-started from ``x_star``.

    ``time_limit`` is this pivot's share of the budget: seconds, or work units with
    ``deterministic=True`` (CP-SAT on deterministic time; first-fit passes charged at
    ``WORK_PER_NNZ_GREEDY`` per non-zero and skipped when the share does not cover them).
    Below :data:`MIN_PIVOT_SOLVE` no MIP is started and the answer is the interval
    ``[incumbent, bound]`` of the steps before it (``exact`` when they meet). The result's
    ``work`` is the work charged.

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
                     max_restricted=max_restricted, seed=seed, pool=pool, best_alone=best_alone,
                     deterministic=deterministic)
    r = dataclasses.replace(r, limit=time_limit)
    if pool is not None and r.bound is not None:
        pool.settle(owner, r.bound)
    return r


def _answer(welfare: float, bound: float, exact: bool, how: str, t0: float, work: float) -> PivotResult:
    """A pivot of :func:`pivot_solve` settled: proved when ``exact``, an interval otherwise."""
    return PivotResult(Status.OPTIMAL if exact else Status.FEASIBLE, welfare, bound, time.perf_counter() - t0, how, work)


def _pivot_solve(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: LpState | Callable[[], LpState], *, upper: float,
                time_limit: float | None = None, threads: int | None = None, max_restricted: int = 20_000,
                seed: int = 0, pool: SolutionPool | None = None,
                best_alone: np.ndarray | None = None, deterministic: bool = False) -> PivotResult:
    t0 = time.perf_counter()
    # "exact" is proved to a quarter of the payment tolerance, absolute, never by the relative
    # MIP gap alone (a 1e-9 relative gap at values near 1e6 moved payments by 1e-3)
    gap_tol = payment_tolerance(upper) / 4
    mine = P.owner == owner
    Pi = P.without_owner(owner)
    vals = Pi.values
    start = np.where(mine, 0.0, x_star)
    ff_work = WORK_PER_NNZ_GREEDY * P.A.nnz  # one first-fit pass
    work = 0.0

    def afford(units: float) -> bool:  # the share covers ``units`` more work
        return time_limit is None or (work + units <= time_limit if deterministic
                                      else time.perf_counter() - t0 < time_limit)

    # the cheapest bound first: each other owner's best column alone (from ``best_alone``,
    # computed once per VCG run, when given); x_star minus the owner may already meet it
    trivial = (trivial_bound(Pi) if best_alone is None
               else float(best_alone.sum() - best_alone[owner]))
    x, W = start, float(vals @ start)
    if W >= min(trivial, upper) - gap_tol:
        return _answer(W, W, True, "trivial-bound", t0, work)
    pooled = pool.best_without(owner, vals) if pool is not None else None
    if pooled is not None and float(vals @ pooled) > W:  # pooled solutions are feasible without owner
        x, W = pooled, float(vals @ pooled)
    order = None
    if afford(ff_work):
        order = los_order(Pi, 0.5, Pi.normalised_size())
        for s0 in ((start,) if pooled is None else (start, pooled)):
            if not afford(ff_work):
                break
            x2 = first_fit_matrix(Pi, order, start=s0)
            work += ff_work
            if float(vals @ x2) > W:
                x, W = x2, float(vals @ x2)
    if W >= min(trivial, upper) - gap_tol:
        return _answer(W, W, True, "trivial-bound", t0, work)
    # cheap local search: with a bidder gone, the others' bundles can often grow; the main
    # duals' bound is frequently met right after
    if order is not None and afford(2 * ff_work):
        x2 = first_fit_matrix(Pi, order, start=upgrade_swaps(Pi, x))
        work += 2 * ff_work
        if float(vals @ x2) > W + 1e-12:
            x, W = x2, float(vals @ x2)
            if W >= min(trivial, upper) - gap_tol:
                return _answer(W, W, True, "trivial-bound", t0, work)
    if callable(lp):
        lp = lp()
    rc = np.where(mine, -np.inf, lp.rc)
    # the dual objective of (y, u) on the pivot problem (valid for any y, u >= 0, so for the
    # duals of an LP stopped early too); reduced-cost fixing must use exactly this value
    # (v.x <= B_dual + sum_j min(rc_j, 0) x_j), not a smaller bound from elsewhere
    B_dual = float(P.cap @ lp.y + lp.u.sum() - lp.u[owner] + np.maximum(rc, 0.0).sum())
    B = min(B_dual, upper, trivial)
    tol = min(DEFAULT_MIP_GAP * max(1.0, abs(B)), gap_tol)
    if W >= B - tol:
        return _answer(W, W, True, "dual-bound", t0, work)
    left = None if time_limit is None else (time_limit - work if deterministic
                                            else time_limit - (time.perf_counter() - t0))
    if left is not None and left < MIN_PIVOT_SOLVE:
        # no share left for a solve: the interval of the free steps
        return _answer(W, max(W, B), False, "budget-spent", t0, work)
    eligible = np.flatnonzero(rc >= -(B_dual - W) - 1e-9)
    if eligible.size <= max_restricted:
        cols = np.union1d(eligible, np.flatnonzero(x > 0.5))
        if left is not None:
            setup = SETUP_PER_NNZ * float(np.diff(P.A.indptr)[cols].sum() if P.A.format == "csc"
                                          else P.A[:, cols].nnz)
            if left - setup < MIN_PIVOT_SOLVE:
                return _answer(W, max(W, B), False, "budget-spent", t0, work)
            left -= setup
        settled = pool.settled_bounds(owner) if pool is not None else {}
        # owners whose own pivot is settled at or below W must win (see the docstring)
        must = np.asarray([o for o, b in settled.items() if b <= W], dtype=np.int64) if settled else None
        # no objective cap at B: as a CP-SAT constraint it slowed CATS pivots by a third
        sub = solve_exact_restricted(Pi, cols, time_limit=left, hint=x, threads=threads, seed=seed,
                                     must_win=must, deterministic=deterministic)
        work += sub.work
        w = float(vals @ sub.x)
        if w > W and Pi.feasible(sub.x):
            W = w
            if pool is not None:
                pool.add(sub.x)
        if sub.bound is not None:
            B = min(B, max(W, sub.bound))
        if sub.optimal and (sub.bound is None or B - W <= gap_tol):
            # a proof to the absolute tolerance, not only to the backend's relative gap
            return _answer(W, W, True, "reduced-cost-fixing", t0, work)
        return _answer(W, max(W, B), W >= B - tol, "reduced-cost-fixing", t0, work)
    res = anytime_solve(Pi, time_limit=left, seed=seed, threads=threads, deterministic=deterministic)
    work += res.work
    if res.welfare > W and pool is not None:
        pool.add(np.where(mine, 0.0, res.x))
    W = max(W, res.welfare)
    B = min(B, res.bound)
    return _answer(W, max(W, B), W >= B - tol, "anytime", t0, work)


@dataclass(frozen=True)
class MainProof:
    """:func:`prove_main`'s answer: the best allocation ``x`` (0/1 over columns), a proven bound
    on the optimum, whether they meet to the tolerance asked, and the work charged."""

    x: np.ndarray
    bound: float
    proved: bool
    work: float
    columns: int


def prove_main(P: MatrixProblem, x: np.ndarray, lp: LpState | None, *, bound: float, tol: float,
               time_limit: float | None, threads: int | None = None, deterministic: bool = False) -> MainProof:
    """Re-prove an optimum claimed to the relative MIP gap to the absolute tolerance ``tol``.

    The anytime engine stops when its bound is within ``1e-9`` of the welfare, relative: on
    values near ``1e6`` that is ``1e-3``, far above the tolerance of exact payments. Reduced-cost
    fixing with the duals of ``lp`` (valid for any ``y, u >= 0``: ``v.x <= B + sum_j min(rc_j,
    0) x_j``) leaves the columns that could beat ``x``; one exact restricted MIP over them
    (CP-SAT on finely rounded values, its bound widened by the rounding error, see
    :func:`~gensolver.solvers.engine.solve_exact_restricted`) then bounds the optimum by
    ``max(W, B_R)``. Without ``lp`` every column is kept. ``time_limit``: seconds, or work
    units with ``deterministic=True``.
    """
    W = float(P.values @ x)
    cols = np.arange(P.n)
    if lp is not None:
        B_dual = float(P.cap @ lp.y + lp.u.sum() + np.maximum(lp.rc, 0.0).sum())
        bound = min(bound, B_dual)
        cols = np.union1d(np.flatnonzero(lp.rc >= -(B_dual - W) - 1e-9), np.flatnonzero(x > 0.5))
    if bound - W <= tol:
        return MainProof(x, max(W, bound), True, 0.0, 0)
    sub = solve_exact_restricted(P, cols, time_limit=time_limit, hint=x, threads=threads,
                                 deterministic=deterministic)
    if float(P.values @ sub.x) > W and P.feasible(sub.x):
        x, W = sub.x, float(P.values @ sub.x)
    if sub.bound is not None:
        bound = min(bound, max(W, sub.bound))
    return MainProof(x, max(W, bound), bound - W <= tol, sub.work, int(cols.size))


def _pivot_task(P: MatrixProblem, owner: int, x_star: np.ndarray, lp: LpState, upper: float,
                time_limit: float | None, threads: int | None, best_alone: np.ndarray,
                settled: Mapping[int, float], start: np.ndarray | None,
                deterministic: bool) -> tuple[PivotResult, list[np.ndarray]]:
    """One pivot with a snapshot of the pool (module level, so it pickles for processes).

    ``settled`` (proven bounds of finished pivots) and ``start`` (the best solution known
    without ``owner``) stand in for the shared pool; the solutions the pivot finds go back as
    column indices.
    """
    pool = SolutionPool(P, x_star)
    if start is not None:
        pool.add(start)
    for o, b in settled.items():
        pool.settle(o, b)
    r = pivot_solve(P, owner, x_star, lp, upper=upper, time_limit=time_limit, threads=threads, pool=pool,
                    best_alone=best_alone, deterministic=deterministic)
    known = [x_star] if start is None else [x_star, start]
    found = [np.flatnonzero(x > 0.5) for x in pool.solutions() if not any(np.array_equal(x, k) for k in known)]
    return r, found


def executor_width(executor: Executor | None) -> int:
    """How many tasks ``executor`` runs at once (``os.cpu_count()`` when it does not say)."""
    if executor is None:
        return 1
    return max(1, int(getattr(executor, "_max_workers", 0) or (os.cpu_count() or 1)))


def run_pivots(P: MatrixProblem, owners: list[int], x_star: np.ndarray, lp: LpState | Callable[[], LpState], *,
               upper: float, budget: PivotBudget, pool: SolutionPool, best_alone: np.ndarray,
               executor: Executor | None = None, threads: int | None = None,
               deterministic: bool = False) -> dict[int, PivotResult]:
    """Solve the pivots of ``owners`` (in that order) within ``budget``, on ``executor``.

    As many run at once as the executor has workers (one, in this thread, with
    ``executor=None``); each is given its share of the budget when it starts
    (:meth:`PivotBudget.share`). On threads in wall mode the pivots share ``pool`` as they run;
    on other executors (processes, a cluster) each gets the bounds settled so far and the best
    solution known without its owner, and its findings join the pool when it returns. In
    deterministic mode the pivots run in waves of that width, each on a snapshot of the pool
    taken at the start of its wave, and results join in submission order, so the answer
    depends on the seed, thread count and width only, not on timing.
    """
    width = executor_width(executor) if executor is not None else 1
    width = max(1, min(width, len(owners) or 1))
    shared = executor is None or (isinstance(executor, ThreadPoolExecutor) and not deterministic)
    lp_now: LpState | None = None  # what workers without shared memory are sent
    if not shared:
        lp_now = lp if isinstance(lp, LpState) else lp()
    Pp = P if isinstance(executor, ThreadPoolExecutor) or executor is None else dataclasses.replace(P, column_id=str)
    out: dict[int, PivotResult] = {}
    pending = list(owners)
    running: dict[Any, tuple[int, float | None]] = {}

    def collect(o: int, share: float | None, r: PivotResult, found: list[np.ndarray]) -> None:
        for idx in found:
            x = np.zeros(P.n)
            x[idx] = 1.0
            pool.add(x)
        if r.bound is not None:
            pool.settle(o, r.bound)
        budget.done(share, r.work or 0.0)
        out[o] = r

    while pending or running:
        while pending and len(running) < width:
            o = pending.pop(0)
            share = budget.share()
            if executor is None:
                collect(o, share, pivot_solve(P, o, x_star, lp, upper=upper, time_limit=share, threads=threads,
                                              pool=pool, best_alone=best_alone, deterministic=deterministic), [])
            elif shared:
                running[executor.submit(pivot_solve, P, o, x_star, lp, upper=upper, time_limit=share,
                                        threads=threads, pool=pool, best_alone=best_alone)] = (o, share)
            else:
                start = pool.best_without(o, np.where(P.owner == o, 0.0, P.values))
                assert lp_now is not None
                running[executor.submit(_pivot_task, Pp, o, x_star, lp_now, upper, share, threads, best_alone,
                                        pool.settled_bounds(o), start, deterministic)] = (o, share)
        if not running:
            continue
        done, _ = wait(list(running), return_when=ALL_COMPLETED if deterministic else FIRST_COMPLETED)
        for f in [f for f in running if f in done]:  # submission order
            o, share = running.pop(f)
            res = f.result()
            r, found = (res, []) if isinstance(res, PivotResult) else res
            collect(o, share, r, found)
    return out
