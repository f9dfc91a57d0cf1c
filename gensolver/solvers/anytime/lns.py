"""Large-neighbourhood search over row neighbourhoods with restricted sub-MIPs.

Grown from a random row, a neighbourhood frees the incumbent's winners on a connected set of
rows (:func:`row_neighbourhood`); every other winner stays fixed, and a sub-MIP (CP-SAT by
default, SCIP optionally) re-optimises the free bidders' columns that fit the residual
capacity, warm-started from the incumbent. Neighbourhoods grow when solved to optimality
without gain and shrink when the sub-MIP times out (:func:`lns_search`).

References
----------
Shaw, "Using constraint programming and local search methods to solve vehicle routing
problems", CP 1998 (large neighbourhood search).
Danna, Rothberg & Le Pape, "Exploring relaxation induced neighborhoods to improve MIP
solutions", Math. Prog. 102, 2005.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..formulation.problem import MatrixProblem, fit_mask
from ..formulation.scales import CAPACITY_TOL
from .column_generation import LpState
from .restricted_mip import SubResult, solve_restricted, solve_restricted_cpsat
from .state import SearchState

__all__ = ["row_neighbourhood", "lns_search", "merge_moves"]

#: LNS iterations of a warm start that grow their neighbourhoods from the changed rows
FOCUS_ITERATIONS = 6


def row_neighbourhood(P: MatrixProblem, x: np.ndarray, rng: np.random.Generator,
                      free_target: int, max_cols: int, score: np.ndarray,
                      start_row: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An LNS neighbourhood grown from a random row: ``(cols, residual_cap, fixed_x)``.

    Starting from a random row, winners touching the current rows are freed and their rows
    added (breadth first) until ``free_target`` winners are free. Every other winner stays
    fixed; the candidate columns are those of owners without a fixed winner that fit the
    residual capacity on their own, best ``max_cols`` by ``score`` (freed winners always in).
    ``start_row``: grow from this row instead of a random one.
    """
    winners = np.flatnonzero(x > 0.5)
    # rows -> the winners on them: the rows of the winners' columns only (not of all of A)
    Aw = P.A[:, winners].tocsr()
    used_rows = np.flatnonzero(np.diff(Aw.indptr)) if winners.size else np.arange(P.cap.size)
    if start_row is not None:
        start = int(start_row)
    else:
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
    fits = fit_mask(P.A, None, residual + CAPACITY_TOL)
    cand = np.flatnonzero(fits & ~owner_fixed[P.owner] & (P.values > 0))
    if cand.size > max_cols:
        cand = cand[np.argsort(-score[cand], kind="stable")[:max_cols]]
    cols = np.union1d(cand, freed_arr)
    return cols, residual, fixed


def merge_moves(P: MatrixProblem, x: np.ndarray, candidates: list[np.ndarray]) -> np.ndarray:
    """Combine the moves of neighbourhoods solved side by side on the same incumbent ``x``.

    Each candidate differs from ``x`` on its own neighbourhood; its *move* is that difference.
    Moves are applied in decreasing order of gain, each only when the sum stays a 0/1 vector
    that passes the feasibility check (capacities and one column per owner), so the answer is
    feasible whenever ``x`` is and worth at least the best single candidate. Neighbourhoods
    grown from different rows often touch different winners: their gains then add up instead
    of all but one being thrown away.
    """
    gains = [float(P.values @ c) - float(P.values @ x) for c in candidates]
    order = [k for k in np.argsort(gains, kind="stable")[::-1].tolist() if gains[k] > 0]
    if not order:
        return x
    merged = candidates[order[0]].copy()
    for k in order[1:]:
        trial = merged + (candidates[k] - x)
        if trial.min() < -0.5 or trial.max() > 1.5:
            continue  # both moves change the same column
        if P.feasible(trial):
            merged = trial
    return merged


def lns_search(S: SearchState, lp: LpState, *, K: int, threads: int | None, seed: int, sub_method: str,
               rng: np.random.Generator, focus_rows: np.ndarray | None = None) -> None:
    """Improve ``S``'s incumbent by LNS until the budget is spent or it meets the bound.

    Independent neighbourhoods of the same incumbent are solved side by side, one solver
    thread each, on all CPUs (``threads`` caps them); the best answer is kept. Sub-MIPs run in
    short slices: one that times out shrinks the next neighbourhood, and a long timeout wastes
    the budget (16x24x150 at 30 s, four seeds: mean welfare 10,326 with a 1 s cap against
    10,256 with 3 s).

    ``focus_rows`` (a warm start's changed rows): the first iterations (at most
    ``FOCUS_ITERATIONS``, and only while they gain) grow their neighbourhoods from these rows,
    where the previous round's answer is most likely to be improvable, before random rows take
    over.
    """
    P, clock, det = S.P, S.clock, S.clock.det
    values = P.values
    score = lp.rc
    n_win = max(1, int(np.count_nonzero(S.x)))
    free_target = max(4, n_win // 4)
    it = 0
    n_par = max(1, min(int(threads) if threads else (os.cpu_count() or 1), 8))
    sub_threads = 1 if n_par > 1 else threads
    lns_pool = ThreadPoolExecutor(n_par) if n_par > 1 else None
    if lns_pool is None:
        n_par = 1
    try:
        while not S.proven and not S.settled:
            remaining = clock.left()
            if remaining is None or remaining < 0.1:
                break
            it += 1
            slice_s = min(remaining, max(0.5, min(1.0, remaining / 4)))
            focus = focus_rows if focus_rows is not None and focus_rows.size and it <= FOCUS_ITERATIONS else None
            hoods = [row_neighbourhood(P, S.x, rng, free_target, K, score,
                                       None if focus is None else int(rng.choice(focus))) for _ in range(n_par)]

            def run(k: int, hood: tuple[np.ndarray, np.ndarray, np.ndarray], x_inc: np.ndarray = S.x,
                    slice_s: float = slice_s, it: int = it) -> SubResult:
                cols, residual, fixed = hood
                if sub_method == "cpsat" or det:  # SCIP stops on the wall clock only
                    sub = solve_restricted_cpsat(P, cols, time_limit=slice_s, hint=x_inc, threads=sub_threads,
                                                 cap=residual, fixed=fixed, seed=seed + n_par * it + k,
                                                 deterministic=det)
                    assert sub is not None  # only exact mode declines a problem
                    return sub
                return solve_restricted(P, cols, time_limit=slice_s, hint=x_inc, threads=sub_threads, cap=residual,
                                        fixed=fixed)

            if lns_pool is None:
                subs = [run(0, hoods[0])]
            else:
                subs = [f.result() for f in [lns_pool.submit(run, k, h) for k, h in enumerate(hoods)]]
            # neighbourhoods ran side by side: the clock advances by the longest
            clock.charge(max(0.01, max(r.work for r in subs) + 1e-8 * P.A.nnz * len(subs)))
            best_k = max(range(len(subs)), key=lambda k: float(values @ subs[k].x))
            merged = merge_moves(P, S.x, [r.x for r in subs]) if len(subs) > 1 else subs[best_k].x
            gained = S.offer(merged, margin=1e-9 * max(1.0, S.W))
            if focus is not None and not gained:
                focus_rows = None  # the changed rows gave what they had: random rows from now on
            # adapt: solved fast to optimality -> bigger neighbourhoods; timed out -> smaller
            all_optimal = all(r.optimal for r in subs)
            if all_optimal and not gained:
                free_target = min(free_target + max(1, free_target // 3), int(np.count_nonzero(S.x)) or 1)
            elif not all_optimal:
                free_target = max(3, int(free_target * 0.7))
            if it <= 50 or gained:
                S.note("lns", iteration=it, columns=int(hoods[best_k][0].size), free=free_target,
                       optimal=all_optimal, welfare=S.W, seconds=round(max(r.seconds for r in subs), 3),
                       parallel=len(subs), merged=bool(gained and float(values @ merged)
                                                         > float(values @ subs[best_k].x) + 1e-9))
            S.proven = S.meets_bound()
    finally:
        if lns_pool is not None:
            lns_pool.shutdown()
