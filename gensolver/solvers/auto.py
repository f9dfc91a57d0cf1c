"""``auto``: the anytime method — never worse than the greedy, always with a proven bound.

Within ``time_limit`` (``None``: until optimality is proven) it runs the stages of
:mod:`gensolver.solvers.anytime`: greedy incumbents from several LOS orderings, an LP
bound by column generation (certified by Lagrangian duality), LP-guided rounding, then
reduced-cost fixing and large-neighbourhood search with warm-started restricted MIPs (CP-SAT,
or SCIP where the data do not scale to integers exactly). Without OR-Tools (a core-only
install) the exact restricted MIP is solved by SciPy's ``milp`` (:mod:`.anytime.scipy_mip`)
and no LNS follows.
The first incumbent is the greedy's, so the answer is never worse than ``greedy``; every
reported bound is a valid upper bound on the optimum.

The same engine solves a compact :class:`~gensolver.model.GpuRound` without materialising its
bundles (:func:`solve_round`).

Determinism: without a time limit the result is deterministic. With one, restricted MIPs are
stopped by wall-clock slices by default, so two runs on differently loaded machines can return
different (equally valid) answers; ``options={"deterministic": True}`` makes the budget one of
work units instead (CP-SAT's deterministic time and calibrated estimates for the other stages),
and the answer is then the same on every run for a seed and a thread count.

References
----------
See :mod:`gensolver.solvers.anytime.driver`.
"""

from __future__ import annotations

import time
from typing import Any

from .._deprecation import option_alias
from ..errors import check_options
from ..model import Instance
from ..model.tasks import GpuRound
from .anytime.driver import anytime_solve
from .anytime.incremental import warm_start_for
from .formulation.problem import from_instance, from_round
from .result import Allocation, finish

__all__ = ["solve_auto", "solve_round"]

_OPTIONS = {"lp_share", "k0", "full_lp_nnz", "sub_method", "exact_share", "deterministic", "warm_start",
            "sub_solver"}


def _budget_left(time_limit: float | None, build_s: float, opts: dict[str, Any]) -> float | None:
    """The budget left for the engine: wall seconds minus the build, or all the work units."""
    if time_limit is None:
        return None
    if opts.get("deterministic"):
        return float(time_limit)  # a work budget: the (machine-dependent) build time is not charged
    return max(0.05, time_limit - build_s)


def _options(options: dict[str, Any] | None) -> dict[str, Any]:
    """The options of ``auto``, checked (``sub_solver`` read as ``sub_method``, with a warning)."""
    return option_alias(check_options(options, _OPTIONS, "method 'auto'"), "sub_solver", "sub_method",
                        where="method 'auto'")


def solve_auto(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
               options: dict[str, Any] | None = None) -> Allocation:
    """Anytime portfolio (see module docstring).

    Options: ``lp_share`` (largest fraction of the budget for the LP bound, default 0.35),
    ``k0`` (largest restricted-MIP size in columns), ``full_lp_nnz`` (up to this many
    non-zeros the LP is solved over all columns at once, default 20,000; above it, by column
    generation),
    ``sub_method`` (``"cpsat"``, default, or ``"scip"`` for the LNS sub-MIPs; ``sub_solver``
    is its deprecated alias, removed in the next release),
    ``exact_share`` (fraction of the remaining time for the exact restricted MIP, 0.5),
    ``deterministic`` (default False: ``time_limit`` is wall-clock seconds; True: it is a
    budget of work units, about a second each on a 2-core reference machine, and the answer
    is the same on every run for a seed and a thread count; see
    :func:`~gensolver.solvers.anytime.driver.anytime_solve`),
    ``warm_start`` (a previous round's :class:`Allocation` or winning bid ids: the hint is
    mapped by bid id, repaired to fit, and the answer is never worse than it; see
    :mod:`gensolver.solvers.anytime.incremental`).
    """
    opts = _options(options)
    previous = opts.pop("warm_start", None)
    t0 = time.perf_counter()
    P = from_instance(instance)
    warm = None if previous is None else warm_start_for(instance, previous)
    t1 = time.perf_counter()
    remaining = _budget_left(time_limit, t1 - t0, opts)
    res = anytime_solve(P, time_limit=remaining, seed=seed, threads=threads, warm=warm, **opts)
    t2 = time.perf_counter()
    return finish(instance, res.x, method="auto", proven_optimal=res.proven, bound=res.bound, build=t1 - t0,
                  solve=t2 - t1, details={"stages": list(res.stages)})


def solve_round(rnd: GpuRound, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                options: dict[str, Any] | None = None) -> Allocation:
    """Solve a compact :class:`GpuRound` without materialising its bundles as bids.

    The constraint matrix is built vectorised from the round's options
    (:func:`~gensolver.solvers.formulation.problem.from_round`); winners are reported by the same
    bid ids :meth:`GpuRound.expand` would give, so the answer can be checked against the
    expansion.
    """
    opts = _options(options)
    previous = opts.pop("warm_start", None)
    t0 = time.perf_counter()
    P, _cols = from_round(rnd)
    warm = None
    if previous is not None:
        warm = warm_start_for({P.column_id(j): j for j in range(P.n)}, previous)
    t1 = time.perf_counter()
    remaining = _budget_left(time_limit, t1 - t0, opts)
    res = anytime_solve(P, time_limit=remaining, seed=seed, threads=threads, warm=warm, **opts)
    t2 = time.perf_counter()
    details = {"stages": list(res.stages), "columns": P.n, "nnz": int(P.A.nnz), "compact": True}
    # the status is decided as for every method: by ``finish``, on the matrix form
    return finish(P, res.x, method="auto", proven_optimal=res.proven, bound=res.bound, build=t1 - t0,
                  solve=t2 - t1, details=details)
