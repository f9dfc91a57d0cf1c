"""``auto``: an anytime portfolio that is never worse than the greedy.

Steps, within ``time_limit`` (unbounded when ``None``):

1. Greedy incumbents from several orderings (LOS ``alpha`` in 0.5, 1, 0) — milliseconds.
2. A certified bound from the LP relaxation's repaired dual (:mod:`.approximation.lp`), with
   LP-guided rounding as one more incumbent, when the LP fits in a fraction of the budget.
3. CP-SAT on the full model, warm-started (solution hint) from the best incumbent, for the
   remaining time; its bound tightens the LP bound.

The answer is the best incumbent found; the bound the smallest valid one. If the instance is
proven optimal by the bound alone (welfare meets it), the exact stage is skipped.

References
----------
Lehmann, O'Callaghan & Shoham, J. ACM 49(5), 2002 (greedy); Perron & Didier, CP-SAT.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..model import Instance
from .approximation.greedy import first_fit, greedy_order, trivial_bound
from .approximation.lp import lp_relaxation
from .result import Allocation, Status, finish

__all__ = ["solve_auto"]

_OPTIONS = {"exact", "lp", "alphas"}


def solve_auto(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
               options: dict[str, Any] | None = None) -> Allocation:
    """Anytime portfolio (see module docstring).

    Options: ``exact`` (backend for stage 3, default ``"cpsat"``, ``None`` to skip),
    ``lp`` (bool, default True), ``alphas`` (greedy exponents).
    """
    from .registry import get_method

    opts = dict(options or {})
    unknown = set(opts) - _OPTIONS
    if unknown:
        raise ValueError(f"method 'auto' does not take option(s) {sorted(unknown)}; valid options: {sorted(_OPTIONS)}")
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    _ = instance.capacity_matrix, instance.normalised_size
    t_build = time.perf_counter() - t0
    values = instance.values
    best_x = None
    best_val = -1.0
    source = ""
    for alpha in opts.get("alphas", (0.5, 1.0, 0.0)):
        x = first_fit(instance, greedy_order(instance, alpha))
        val = float(values @ x)
        if val > best_val:
            best_x, best_val, source = x, val, f"greedy(alpha={alpha})"
    bound = trivial_bound(instance)
    stages: dict[str, Any] = {"greedy": best_val}
    if opts.get("lp", True):
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        if remaining is None or remaining > 0.05:
            relax = lp_relaxation(instance, time_limit=None if remaining is None else 0.5 * remaining)
            bound = min(bound, relax.bound)
            stages["lp_bound"] = relax.bound
            if relax.x is not None:
                order = np.lexsort((-values, -np.round(relax.x, 9)))
                x = first_fit(instance, order)
                val = float(values @ x)
                if val > best_val:
                    best_x, best_val, source = x, val, "lp-rounding"
    exact = opts.get("exact", "cpsat")
    proven = best_val >= bound - 1e-9 * max(1.0, abs(bound))
    details: dict[str, Any] = {"stages": stages}
    if exact and not proven:
        method = get_method(exact)
        if method.available()[0]:
            remaining = None if deadline is None else deadline - time.perf_counter()
            if remaining is None or remaining > 0.05:
                res = method.load()(instance, time_limit=remaining, threads=threads, seed=seed,
                                    options={"hint": best_x})
                stages[exact] = {"status": res.status.value, "welfare": res.welfare, "bound": res.bound}
                if res.status in (Status.OPTIMAL, Status.FEASIBLE):
                    if res.bound is not None:
                        bound = min(bound, res.bound)
                    if res.welfare > best_val:
                        idx = instance.bid_index
                        best_x = np.zeros(instance.n_bids)
                        best_x[[idx[w] for w in res.winners]] = 1.0
                        best_val, source = res.welfare, exact
                    proven = proven or res.status is Status.OPTIMAL
        else:
            details["exact_skipped"] = method.available()[1]
    details["incumbent"] = source
    total = time.perf_counter() - t0
    return finish(instance, best_x, method="auto", proven_optimal=proven, bound=bound, build=t_build,
                  solve=total - t_build, details=details)
