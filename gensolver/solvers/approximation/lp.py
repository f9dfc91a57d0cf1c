"""LP relaxation with a certified bound, plus LP-guided rounding and repair.

Bound
-----
The relaxation ``max v.x s.t. A x <= c, X x <= 1, 0 <= x <= 1`` is solved with HiGHS
(through :func:`scipy.optimize.linprog`). The reported bound is not the LP's floating-point
optimum but the dual objective of an explicitly *repaired* dual point: with ``y >= 0`` the
row duals returned by HiGHS, set ``z = max(0, v - A^T y)``; then ``(y, z)`` is dual feasible
by construction and ``c.y + sum(z)`` is a valid upper bound on the integer optimum (weak
duality), whatever the solver's tolerances.

Rounding and repair
-------------------
Bids are accepted first-fit in order of decreasing LP value ``x_b`` (ties by the LOS key);
the result is compared with the plain LOS greedy and the better one is returned, so the
method is never worse than ``greedy``. No approximation ratio is claimed.

References
----------
Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10 (2018).
de Vries & Vohra, "Combinatorial auctions: a survey", INFORMS J. Computing 15(3), 2003.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import check_options
from ...model import Instance
from ..formulation.bounds import LpRelaxation
from ..formulation.bounds import dual_bound as _dual_bound
from ..formulation.bounds import lp_relaxation as _lp_relaxation
from ..formulation.problem import from_instance
from ..result import Allocation, finish
from .greedy import first_fit, greedy_order

__all__ = ["solve_lp", "lp_relaxation", "LpRelaxation", "dual_bound"]


def dual_bound(instance: Instance, y_cap: np.ndarray, y_xor: np.ndarray) -> float:
    """Weak-duality bound from any row duals (negative entries are clipped to 0): see
    :func:`gensolver.solvers.formulation.bounds.dual_bound`."""
    return _dual_bound(from_instance(instance), y_cap, y_xor)


def lp_relaxation(instance: Instance, *, time_limit: float | None = None) -> LpRelaxation:
    """Solve the LP relaxation; the bound is certified by :func:`dual_bound` (see
    :func:`gensolver.solvers.formulation.bounds.lp_relaxation`)."""
    return _lp_relaxation(from_instance(instance), time_limit=time_limit)


def solve_lp(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
             options: dict[str, Any] | None = None) -> Allocation:
    """LP relaxation bound plus LP-guided rounding (never worse than ``greedy``).

    No options. ``time_limit`` bounds the LP solve; ``threads``/``seed`` are unused.
    """
    check_options(options, (), "method 'lp'")
    t0 = time.perf_counter()
    _ = instance.capacity_matrix
    t1 = time.perf_counter()
    relax = lp_relaxation(instance, time_limit=time_limit)
    x_greedy = first_fit(instance, greedy_order(instance))
    best = x_greedy
    source = "greedy"
    if relax.x is not None:
        los = greedy_order(instance)
        rank = np.empty(instance.n_bids)
        rank[los] = -np.arange(instance.n_bids)  # higher is better
        order = np.lexsort((-rank, -np.round(relax.x, 9)))
        x_round = first_fit(instance, order)
        if instance.values @ x_round > instance.values @ best:
            best, source = x_round, "lp-rounding"
    t2 = time.perf_counter()
    details = {"lp_status": relax.status, "lp_value": relax.lp_value, "lp_seconds": relax.seconds, "incumbent": source}
    return finish(instance, best, method="lp", proven_optimal=False, bound=relax.bound, build=t1 - t0,
                  solve=t2 - t1, details=details)
