"""Greedy heuristics on the matrix form: first fit in a ranking order, and a local search.

Both the ``greedy``/``lp`` methods (:mod:`gensolver.solvers.approximation`) and the anytime
engine (:mod:`gensolver.solvers.anytime`) build their incumbents with these.

References
----------
Lehmann, O'Callaghan & Shoham, "Truth revelation in approximately efficient combinatorial
auctions", J. ACM 49(5), 2002 (ranking by ``value / size**alpha``, first fit).
"""

from __future__ import annotations

import math

import numpy as np

from ..model.tolerances import boundary_guard
from .formulation.problem import MatrixProblem, fit_mask, los_key

__all__ = ["first_fit_matrix", "upgrade_swaps", "los_order"]


def first_fit_matrix(P: MatrixProblem, order: np.ndarray, *, start: np.ndarray | None = None) -> np.ndarray:
    """Accept columns in ``order`` while they fit (XOR and capacity); returns a 0/1 vector.

    Residual capacities only shrink, so a column that does not fit now never will, and an
    owner that has won stays out. The order is therefore processed in chunks: before each
    chunk, one vectorised pass drops every later column of a winning owner or that no longer
    fits alone, and only the survivors are checked one by one. The result is exactly the
    sequential first fit's, at a fraction of the Python work on large problems.

    "Fits" is the capacity rule of :mod:`gensolver.model.tolerances`: a column is checked on
    the floating-point residual of ``P.limit``, and where that is within
    :func:`~gensolver.model.tolerances.boundary_guard` of deciding the other way, on the exact
    sum (:func:`math.fsum`) of the row's accepted demands, so the answer agrees with
    :func:`~gensolver.solvers.formulation.problem.violation` on every instance.
    """
    A = P.A
    limit = P.limit
    residual = limit.copy()
    guard = boundary_guard(limit)
    won = np.zeros(P.n_owners, dtype=bool)
    x = np.zeros(P.n)
    owner = P.owner
    taken: dict[int, list[float]] = {}  # row -> accepted demands (for the exact check)

    def take(rows: list[int], dems: list[float]) -> None:
        for r, d in zip(rows, dems):
            taken.setdefault(r, []).append(d)

    if start is not None:
        for j in np.flatnonzero(start > 0.5):
            x[j] = 1.0
            won[owner[j]] = True
            lo, hi = A.indptr[j], A.indptr[j + 1]
            residual[A.indices[lo:hi]] -= A.data[lo:hi]
            take(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist())
    lim_l = limit.tolist()
    guard_l = guard.tolist()
    rest = np.asarray(order, dtype=np.int64)
    rest = rest[P.values[rest] > 0]
    chunk = 256
    while rest.size:
        rest = rest[~won[owner[rest]]]
        if rest.size == 0:
            break
        rest = rest[fit_mask(A, rest, residual + guard)]
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
            fits = True
            for t in range(lo, hi):
                r, d = idx_l[t], dat_l[t]
                gap = res_l[r] - d
                if gap < -guard_l[r] or (gap <= guard_l[r] and math.fsum([*taken.get(r, []), d]) > lim_l[r]):
                    fits = False
                    break
            if not fits:
                continue
            for t in range(lo, hi):
                res_l[idx_l[t]] -= dat_l[t]
                taken.setdefault(idx_l[t], []).append(dat_l[t])
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
    # conservative near the boundary (a swap is only made where it clearly fits the rule)
    residual = P.limit - boundary_guard(P.limit) - A @ x
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
            ok = better[fit_mask(A, better, free)]
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
    return np.lexsort((-P.values, -los_key(P.values, size, alpha)))
