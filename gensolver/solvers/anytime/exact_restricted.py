"""The exact restricted MIP: which backend proves it, and the race of two when both can.

CP-SAT when the capacities scale to integers exactly (values rounded finely with a certified
error when they do not), HiGHS for floating-point capacities, both side by side when a proof of
a floating-point problem is wanted without a time limit (:func:`race_exact`), and CP-SAT beside
SCIP under a time limit when the restricted MIP is the whole problem (:func:`portfolio_exact`):
CP-SAT finds the better answers, SCIP proves the tighter bounds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ..formulation.problem import MatrixProblem
from ..formulation.scales import objective_scale
from .restricted_mip import Race, SubResult, solve_restricted, solve_restricted_cpsat, solve_restricted_highs

__all__ = ["solve_exact_restricted", "race_exact", "portfolio_exact"]


def values_scale_exactly(P: MatrixProblem, cols: np.ndarray) -> bool:
    cols = np.asarray(cols, dtype=np.int64)
    return objective_scale(P.values[cols], P.owner[cols])[1]


def _side_by_side(P: MatrixProblem, calls: list[Callable[[Race], SubResult | None]], *,
                  decline_stops: bool) -> SubResult | None:
    """Run ``calls`` (each given the shared :class:`Race`) in parallel threads; the first proof
    stops the others. Returns the proof, else the best answer with the tightest of the proven
    bounds; ``None`` when no call answered, or (``decline_stops``) when one declined the
    problem (returned ``None``) and nobody proved it."""
    from concurrent.futures import FIRST_COMPLETED, wait

    race = Race()
    results: list[SubResult] = []
    declined = False
    with ThreadPoolExecutor(len(calls)) as ex:
        pending: set[Future[SubResult | None]] = {ex.submit(call, race) for call in calls}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    r = f.result()
                except ImportError:  # pragma: no cover - a backend missing: the others decide
                    r = None
                if r is None:
                    declined = True
                else:
                    results.append(r)
            if any(r.optimal for r in results) or (declined and decline_stops):
                while pending:  # stop the others, again until they have returned
                    race.stop()
                    _, pending = wait(pending, timeout=0.05)
    proven = [r for r in results if r.optimal]
    if proven:
        return proven[0]
    if not results or (declined and decline_stops):
        return None
    best = max(results, key=lambda r: float(P.values @ r.x))
    bounds = [r.bound for r in results if r.bound is not None]
    return SubResult(best.x, False, min(bounds) if bounds else None, max(r.seconds for r in results),
                     any(r.rounded_optimal for r in results), sum(r.work for r in results))


def _workers_but_one(threads: int | None) -> int:
    return max(1, (int(threads) if threads else (os.cpu_count() or 2)) - 1)


def race_exact(P: MatrixProblem, cols: np.ndarray, *, hint: np.ndarray | None, threads: int | None,
                seed: int) -> SubResult | None:
    """CP-SAT and HiGHS side by side on the same restricted MIP, without a time limit; the
    first proof wins and the other solver is stopped. Neither dominates: on one GPU round
    CP-SAT proved the WDP in 8 s and HiGHS in 11 s, while on a core separation problem of the
    same round HiGHS took 5 s and CP-SAT 75 s. Returns ``None`` when neither is installed."""
    workers = _workers_but_one(threads)
    return _side_by_side(P, [
        lambda race: solve_restricted_cpsat(P, cols, time_limit=None, hint=hint, threads=workers, seed=seed,
                                            exact=True, race=race),
        lambda race: solve_restricted_highs(P, cols, time_limit=None, hint=hint, threads=1, race=race),
    ], decline_stops=False)


def portfolio_exact(P: MatrixProblem, cols: np.ndarray, *, time_limit: float, hint: np.ndarray | None,
                    threads: int | None, seed: int) -> SubResult | None:
    """CP-SAT (all workers but one) beside SCIP (one thread) on the same restricted MIP, both
    for ``time_limit`` seconds; the first proof stops the other. The answer is the better of
    the two, the bound the tighter of their two proven bounds.

    Neither backend dominates on both counts. On CATS arbitrary 256 goods x 2,005 bids at 60 s
    (2 cores): CP-SAT found 17,192 (bound 19,408, its LP's), SCIP 17,118 with the bound
    19,131, HiGHS 17,172 with 19,246; the pair gives the better answer and SCIP's bound.
    Returns ``None`` when CP-SAT declines the problem (capacities that do not scale exactly to
    integers) or a backend is missing: the caller then solves it alone.
    """
    workers = _workers_but_one(threads)
    return _side_by_side(P, [
        lambda race: solve_restricted_cpsat(P, cols, time_limit=time_limit, hint=hint, threads=workers, seed=seed,
                                            exact=True, race=race),
        lambda race: solve_restricted(P, cols, time_limit=time_limit, hint=hint, threads=1, race=race),
    ], decline_stops=True)


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
    (:func:`race_exact`).
    ``deterministic=True`` with a time limit: CP-SAT on deterministic time, and no HiGHS proof
    after a rounded solve (HiGHS has only a wall-clock limit); the widened bound stands.
    ``must_win`` (see :func:`solve_restricted_cpsat`) constrains CP-SAT's exact mode only;
    HiGHS and the heuristic fallback solve the restricted problem without it, a superset, so
    their answers and proofs remain valid (as HiGHS rows the constraints made GPU pivots ten
    times slower).
    """
    res = None
    if (time_limit is None and not deterministic and (must_win is None or not len(must_win))
            and (threads or os.cpu_count() or 1) >= 2 and not values_scale_exactly(P, cols)):
        # a proof of a floating-point problem is wanted, and both backends can give one for
        # the same problem: race them. (With integral values CP-SAT on all workers is faster:
        # CATS 100x500 main solves 8.0 / 9.6 / 16.0 s against 16.4 / 15.0 / 15.4 raced.)
        raced = race_exact(P, cols, hint=hint, threads=threads, seed=seed)
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
        heuristic = solve_restricted_cpsat(P, cols, time_limit=time_limit, hint=hint, threads=threads, seed=seed,
                                           deterministic=True)
        assert heuristic is not None  # only exact mode declines a problem
        return heuristic
    try:  # floating-point data: HiGHS (several times faster than SCIP here), else SCIP
        return solve_restricted_highs(P, cols, time_limit=time_limit, hint=hint, threads=threads)
    except ImportError:  # pragma: no cover - highspy ships with the 'solvers' extra
        return solve_restricted(P, cols, time_limit=time_limit, hint=hint, threads=threads)
