"""The anytime engine's driver: :func:`anytime_solve` runs its stages over one incumbent/bound state.

Stages (each yields a better incumbent or a tighter proven bound; all work on a
:class:`~gensolver.solvers.formulation.problem.MatrixProblem`):

1. **Greedy incumbents** from a few LOS orderings (``value / size**alpha``), and the trivial
   bound (every owner's best column that fits alone).
2. **LP bound by column generation** (:mod:`.column_generation`): a valid Lagrangian bound at
   every pricing round, the LP optimum at convergence.
3. **LP-guided rounding** (first fit in order of LP value).
4. **Reduced-cost fixing + exact restricted MIP.** With ``B = cap.y + sum(u) + sum(max(rc,
   0))`` (the dual objective), every feasible ``x`` satisfies ``v.x <= B + sum_j min(rc_j, 0)
   x_j``; so a solution better than the incumbent ``W`` uses only columns with ``rc_j >= -(B -
   W)``. When few columns are eligible, one exact restricted MIP over all of them
   (:mod:`.exact_restricted`) certifies ``OPT <= max(W, B_R)`` with its bound ``B_R``;
   without a time limit this proves optimality. Under a wall-clock limit with two or more
   threads, CP-SAT runs alone for a tenth of the time, then, without a proof, beside SCIP
   (:func:`~.exact_restricted.portfolio_exact`): the better answer, the tighter bound.
5. **Large-neighbourhood search** (:mod:`.lns`) with the budget left; without a time limit,
   the restricted MIP over every eligible column instead, which proves the optimum.

A :class:`WarmStart` (previous round's answer mapped onto this problem, see
:mod:`.incremental`) adds two things: its incumbent, repaired by first fit in its own order
(so a feasible hint is taken whole and the answer is never worse than it), is offered right
after the greedy stage; its LP columns join the master's first working set.

Budgets are kept by a :class:`~.budget.WorkClock`: wall-clock seconds by default, or, in
deterministic mode, work units charged by every stage, so that every decision taken on the
budget is the same on every run.

References
----------
Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (greedy).
Desrosiers & Lübbecke, "A primer in column generation", in *Column Generation*, Springer 2005.
Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, Wiley 1988 (reduced-cost fixing).
Shaw, "Using constraint programming and local search methods to solve vehicle routing
problems", CP 1998 (large neighbourhood search).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np

from ..formulation.bounds import trivial_bound
from ..formulation.problem import MatrixProblem
from ..heuristics import first_fit_matrix, los_order
from .budget import WORK_PER_NNZ_GREEDY, WorkClock
from .column_generation import LpState, column_generation
from .exact_restricted import portfolio_exact, solve_exact_restricted
from .lns import lns_search
from .state import AnytimeResult, SearchState

__all__ = ["anytime_solve", "AnytimeResult", "WarmStart"]

#: columns each owner may add to the LP master per pricing round. On big rounds every master
#: solve (interior point) costs seconds, so fewer, larger rounds reach a tighter bound in the
#: same time: 32x32x400 (822,088 columns), LP stage of 20 s: Lagrangian bound 37,153 with 3
#: per owner, 36,977 with 8; on 8x16x60 and 16x24x150 the LP converges either way.
PRICING_PER_OWNER = 8

#: the exact restricted MIP under a wall-clock limit: CP-SAT alone on every worker for this
#: share of its time (at least PORTFOLIO_SOLO_S seconds), then CP-SAT beside SCIP for the rest
PORTFOLIO_SOLO_SHARE = 0.1
PORTFOLIO_SOLO_S = 1.0


@dataclass(frozen=True)
class WarmStart:
    """A warm start over the columns of one :class:`MatrixProblem`.

    Attributes
    ----------
    x : int64 array
        Columns of the hinted incumbent (need not be feasible: it is repaired by first fit).
    cols : int64 array
        Columns to put in the first LP working set (a previous round's master).
    changed : int64 array
        Columns new or changed since the previous round (empty: unknown); the first LNS
        neighbourhoods grow from the rows of those the LP prices best.
    """

    x: np.ndarray
    cols: np.ndarray
    changed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _focus_rows(S: SearchState, lp: LpState, changed: np.ndarray) -> np.ndarray:
    """Rows of the changed columns with a positive reduced cost whose owner is not winning."""
    P = S.P
    changed = np.asarray(changed, dtype=np.int64)
    won = np.zeros(P.n_owners, dtype=bool)
    won[P.owner[S.x > 0.5]] = True
    cols = changed[(lp.rc[changed] > 1e-9) & ~won[P.owner[changed]]]
    if cols.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(P.A[:, cols].indices)


def _warm_stage(S: SearchState, warm: WarmStart, size: np.ndarray) -> None:
    """Offer the hint, repaired by first fit in order of value (a feasible hint fits whole),
    then filled by first fit of every other column in LOS order (new bids take the capacity
    that leaving ones freed)."""
    P = S.P
    hint = np.unique(np.asarray(warm.x, dtype=np.int64))
    order = hint[np.argsort(-P.values[hint], kind="stable")]
    x = first_fit_matrix(P, order)
    kept = int(np.count_nonzero(x))
    x = first_fit_matrix(P, los_order(P, 0.5, size), start=x)
    S.clock.charge(2 * WORK_PER_NNZ_GREEDY * P.A.nnz)
    taken = S.offer(x, check=False)  # first fit keeps every answer feasible
    S.note("warm-start", hinted=int(hint.size), kept=kept, filled=int(np.count_nonzero(x)) - kept,
           welfare=float(P.values @ x), taken=taken)


def _greedy_stage(S: SearchState, size: np.ndarray, time_limit: float | None) -> None:
    """Stage 1: first fit in a few LOS orderings; the best is the first incumbent."""
    orderings = 0
    for alpha in (0.5, 1.0, 0.0):
        x = first_fit_matrix(S.P, los_order(S.P, alpha, size))
        S.clock.charge(WORK_PER_NNZ_GREEDY * S.P.A.nnz)
        orderings += 1
        S.offer(x, check=False)  # first fit keeps every answer feasible
        if time_limit is not None and S.clock.now() > 0.05 * time_limit:
            break  # on huge rounds one ordering is all a short budget affords
    S.note("greedy", welfare=S.W, orderings=orderings)


def _working_set(P: MatrixProblem, size: np.ndarray, x: np.ndarray, full_lp_nnz: int) -> np.ndarray:
    """The master's first columns: the incumbent and each owner's best three by density
    (every column when the matrix is small: one LP over all beats pricing rounds)."""
    if P.A.nnz <= full_lp_nnz:
        return np.arange(P.n)
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
    return np.union1d(np.flatnonzero(first_k), np.flatnonzero(x))


def _lp_stage(S: SearchState, init: np.ndarray, lp_share: float) -> LpState:
    """Stages 2 and 3: the LP bound (a share of the budget left), then LP-guided rounding."""
    P, clock = S.P, S.clock
    left = clock.left()  # None exactly when there is no time limit
    lp_until = None if left is None else clock.now() + lp_share * max(0.0, left)
    lp = column_generation(P, init_cols=init, deadline=None, clock=clock, until=lp_until, rel_tol=1e-4,
                           per_owner=PRICING_PER_OWNER)
    S.tighten(lp.bound)
    S.lp = lp
    S.note("lp-bound", bound=lp.bound, lp_value=lp.lp_value, converged=lp.converged, iterations=lp.iterations,
           working_set=int(lp.cols.size), seconds=round(lp.seconds, 3))
    if lp.x_cols is not None:
        prio = np.zeros(P.n)
        prio[lp.cols] = lp.x_cols
        x = first_fit_matrix(P, np.lexsort((-lp.rc, -np.round(prio, 9))))
        clock.charge(WORK_PER_NNZ_GREEDY * P.A.nnz)
        S.offer(x, check=False)
        S.note("lp-rounding", welfare=float(P.values @ x))
    return lp


def _eligible(S: SearchState, lp: LpState) -> np.ndarray:
    """Columns that reduced-cost fixing leaves: those that could be in a better answer."""
    return np.flatnonzero(lp.rc >= -(lp.dual_objective - S.W) - 1e-9)


def _better(P: MatrixProblem, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a if float(P.values @ a) >= float(P.values @ b) else b


def _scipy_stage(S: SearchState, lp: LpState | None, *, K_exact: int) -> None:
    """Stage 4 without OR-Tools: the exact restricted MIP with SciPy's HiGHS
    (:mod:`.scipy_mip`), no LNS after it. Skipped under a work budget (SciPy stops on the wall
    clock only, which would make the answer depend on the machine's load)."""
    from .scipy_mip import solve_restricted_scipy

    if S.proven or lp is None or (S.clock.det and S.clock.left() is not None):
        return
    eligible = _eligible(S, lp)
    remaining = S.clock.left()
    if eligible.size > K_exact or (remaining is not None and remaining <= 0.2):
        S.note("scipy-restricted-skipped", eligible=int(eligible.size))
        return
    W_sel = S.W
    cols = np.union1d(eligible, np.flatnonzero(S.x > 0.5))
    sub = solve_restricted_scipy(S.P, cols, time_limit=remaining)
    S.offer(sub.x, margin=1e-12)
    if sub.bound is not None:
        S.tighten(max(W_sel, sub.bound))
    S.proven = sub.optimal or S.meets_bound()
    S.note("scipy-restricted", columns=int(cols.size), optimal=sub.optimal, welfare=S.W, bound=S.B)


def _restricted_stage(S: SearchState, lp: LpState, *, K_exact: int, exact_share: float, threads: int | None,
                      seed: int) -> None:
    """Stage 4: if few columns can beat the incumbent, one exact restricted MIP over them."""
    P, clock = S.P, S.clock
    eligible = _eligible(S, lp)
    S.note("rc-fixing", eligible=int(eligible.size), columns=P.n)
    if S.proven or eligible.size > K_exact:
        return
    remaining = clock.left()
    if remaining is not None and remaining <= 0.2:
        return
    W_sel = S.W
    cols = np.union1d(eligible, np.flatnonzero(S.x > 0.5))
    # with a time limit, a share of it; the rest goes to LNS if this does not finish. When
    # fixing removed (almost) nothing, the restricted MIP is the whole problem and LNS would
    # only repeat the search the MIP solver does internally: all the time.
    whole = cols.size >= 0.9 * P.n
    share = None if remaining is None else (remaining if whole else exact_share * remaining)
    pair = share is not None and not clock.det and (threads or os.cpu_count() or 1) >= 2
    # with a pair in prospect, CP-SAT on every worker first for a short slice: most small
    # restricted MIPs are proved in it (CP-SAT on one worker beside SCIP took 2-3x longer)
    first = None if share is None or not pair else min(share, max(PORTFOLIO_SOLO_S, PORTFOLIO_SOLO_SHARE * share))
    sub = solve_exact_restricted(P, cols, time_limit=first if pair else share, hint=S.x, threads=threads, seed=seed,
                                 deterministic=clock.det)
    portfolio = False
    if (pair and share is not None and first is not None and not sub.optimal and not sub.rounded_optimal
            and share - sub.seconds > 0.5):
        # CP-SAT for answers beside SCIP for the bound (SCIP stops on the wall clock only)
        more = portfolio_exact(P, cols, time_limit=share - sub.seconds, hint=_better(P, sub.x, S.x),
                               threads=threads, seed=seed)
        if more is not None:
            portfolio = True
            bounds = [b for b in (sub.bound, more.bound) if b is not None]
            sub = dataclasses.replace(more, x=_better(P, more.x, sub.x), bound=min(bounds) if bounds else None,
                                      seconds=sub.seconds + more.seconds, work=sub.work + more.work,
                                      rounded_optimal=more.rounded_optimal or sub.rounded_optimal)
    clock.charge(sub.work)
    S.offer(sub.x, margin=1e-12)
    if sub.bound is not None:
        S.tighten(max(W_sel, sub.bound))
    S.proven = sub.optimal or S.meets_bound()
    # every column that could improve was in, and CP-SAT solved it to optimality with finely
    # rounded values: no search can gain more than the rounding, so stop (the widened bound
    # stands; HiGHS's proof, if any, already ran)
    S.settled = sub.rounded_optimal
    S.note("exact-restricted", columns=int(cols.size), optimal=sub.optimal, welfare=S.W, bound=S.B,
           seconds=round(sub.seconds, 3), portfolio=portfolio)


def _proof_stage(S: SearchState, lp: LpState, *, threads: int | None, seed: int) -> None:
    """Stage 5 without a time limit: the restricted MIP over every eligible column, which
    proves the optimum."""
    W_sel = S.W
    cols = np.union1d(_eligible(S, lp), np.flatnonzero(S.x > 0.5))
    sub = solve_exact_restricted(S.P, cols, time_limit=None, hint=S.x, threads=threads, seed=seed)
    S.offer(sub.x, margin=1e-12)
    if sub.bound is not None:
        S.tighten(max(W_sel, sub.bound))
    S.proven = sub.optimal
    S.note("exact-restricted", columns=int(cols.size), optimal=sub.optimal, welfare=S.W, bound=S.B)


def anytime_solve(P: MatrixProblem, *, time_limit: float | None, seed: int = 0, threads: int | None = None,
                  lp_share: float = 0.35, k0: int | None = None, full_lp_nnz: int = 20_000,
                  sub_method: str = "cpsat", exact_share: float = 0.5, deterministic: bool = False,
                  warm: WarmStart | None = None) -> AnytimeResult:
    """Run the stages within ``time_limit`` seconds (``None``: until proven optimal).

    ``deterministic=True``: ``time_limit`` is a budget of work units (about a second each on a
    2-core reference machine; see :class:`~.budget.WorkClock`) instead of wall-clock seconds,
    and the answer is the same on every run for a seed and a thread count. The wall time then
    varies with the machine; restricted MIPs run on CP-SAT's deterministic time, and a rounded
    CP-SAT solve is not re-proven by HiGHS (which only has a wall-clock limit).

    ``warm``: a :class:`WarmStart` (``None``, the default, is a cold start and changes
    nothing): its repaired incumbent is offered after the greedy stage, and its columns join
    the LP's first working set.
    """
    clock = WorkClock(time_limit, deterministic and time_limit is not None)
    S = SearchState(P, clock, np.zeros(P.n), t0=clock.t0)
    rng = np.random.default_rng(seed)
    size = P.normalised_size()
    _greedy_stage(S, size, time_limit)
    if warm is not None:
        _warm_stage(S, warm, size)
    S.B = trivial_bound(P)
    S.note("trivial-bound", bound=S.B)
    if S.meets_bound():
        S.proven = True
        return S.result()
    init = _working_set(P, size, S.x, full_lp_nnz)
    if warm is not None and init.size < P.n:
        init = np.union1d(init, np.asarray(warm.cols, dtype=np.int64))
    lp = _lp_stage(S, init, lp_share)
    try:
        import ortools  # noqa: F401
    except ImportError:
        S.note("lns-skipped", reason="OR-Tools not installed")
        S.proven = S.meets_bound()
        _scipy_stage(S, lp, K_exact=k0 or max(1000, 3 * (P.cap.size + P.n_owners), 3000))
        return S.result()
    K = k0 or max(1000, 3 * (P.cap.size + P.n_owners))  # LNS sub-MIP size
    # up to a few thousand columns the MIP solver searches the whole problem better than LNS
    K_exact = k0 or max(K, 3000)
    S.proven = S.meets_bound()
    _restricted_stage(S, lp, K_exact=K_exact, exact_share=exact_share, threads=threads, seed=seed)
    if not S.proven and not S.settled:
        if clock.left() is None:
            _proof_stage(S, lp, threads=threads, seed=seed)
        else:
            focus = None if warm is None or warm.changed.size == 0 else _focus_rows(S, lp, warm.changed)
            lns_search(S, lp, K=K, threads=threads, seed=seed, sub_method=sub_method, rng=rng, focus_rows=focus)
    S.B = max(S.B, S.W)
    return S.result()
