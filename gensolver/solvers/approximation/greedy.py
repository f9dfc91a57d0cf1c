"""Lehmann–O'Callaghan–Shoham greedy winner determination.

Guarantee
---------
For single-minded bidders on single-unit goods (every slot has capacity 1 of one resource and
every bid asks one unit of each good it names; the CATS setting), ranking by
``value / sqrt(|bundle|)`` and accepting bids first-fit gives welfare at least
``OPT / sqrt(m)``, where ``m`` is the number of goods (Lehmann, O'Callaghan & Shoham 2002,
Thm. 1). No constant guarantee holds with XOR bidders or divisible capacities; there the
method is a fast heuristic whose answer is always feasible.

Algorithm
---------
1. ``size_b = sum over (slot, resource) of demand / capacity`` (the normalised size; equal to
   ``|bundle|`` in the single-unit case).
2. Rank bids by ``value_b / size_b ** alpha`` (``alpha = 0.5`` is LOS), ties broken by value
   then by instance order (deterministic).
3. Scan in rank order; accept a bid when its bidder has not won yet and every resource it
   demands still fits (the capacity rule of :mod:`gensolver.model.tolerances`).

Running time ``O(B log B + nnz)`` for ``B`` bids with ``nnz`` demand entries.

References
----------
Lehmann, O'Callaghan & Shoham, "Truth revelation in approximately efficient combinatorial
auctions", J. ACM 49(5), 2002.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import check_options
from ...model import Instance
from ..formulation.bounds import trivial_bound
from ..formulation.problem import from_instance, los_key
from ..heuristics import first_fit_matrix
from ..result import Allocation, finish

__all__ = ["solve_greedy", "greedy_keys", "greedy_order", "first_fit"]


def greedy_keys(instance: Instance, alpha: float = 0.5) -> np.ndarray:
    """Ranking key ``value / size**alpha`` of every bid
    (:func:`~gensolver.solvers.formulation.problem.los_key`); ``-inf`` for bids of value 0."""
    values = instance.values
    return np.where(values > 0, los_key(values, instance.normalised_size, alpha), -np.inf)


def greedy_order(instance: Instance, alpha: float = 0.5, *, priority: np.ndarray | None = None) -> np.ndarray:
    """Bid indices in greedy rank order (descending ``value / size**alpha``).

    ``priority``, when given, replaces the ranking key (descending; ties by value).
    """
    values = instance.values
    if priority is None:
        key = greedy_keys(instance, alpha)
    else:
        key = np.asarray(priority, dtype=np.float64)
    # lexsort: last key is primary. Stable, so instance order breaks remaining ties.
    return np.lexsort((-values, -key))


def first_fit(instance: Instance, order: np.ndarray, *, start: np.ndarray | None = None) -> np.ndarray:
    """Accept bids in ``order`` while they fit; returns the 0/1 vector.

    ``start`` is an already-accepted feasible 0/1 vector to extend (its bids stay accepted and
    their bidders take no other bid). Bids with value 0 are never accepted. The scan is
    :func:`gensolver.solvers.heuristics.first_fit_matrix` on the instance's matrices.
    """
    return first_fit_matrix(from_instance(instance), np.asarray(order, dtype=np.int64), start=start)


def solve_greedy(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                 options: dict[str, Any] | None = None) -> Allocation:
    """LOS greedy: rank by ``value / size**alpha``, accept first fit.

    Options: ``alpha`` (default 0.5, the LOS rule; 0 ranks by value, 1 by value density).
    The reported ``bound`` is the trivial per-bidder bound
    (:func:`~gensolver.solvers.formulation.bounds.trivial_bound`).
    ``time_limit``, ``threads`` and ``seed`` are accepted for interface symmetry and unused
    (the method is deterministic and runs in ``O(B log B + nnz)``).
    """
    alpha = float(check_options(options, {"alpha": 0.5}, "method 'greedy'")["alpha"])
    t0 = time.perf_counter()
    _ = instance.capacity_matrix, instance.normalised_size  # build once
    t1 = time.perf_counter()
    x = first_fit(instance, greedy_order(instance, alpha))
    bound = trivial_bound(from_instance(instance))
    t2 = time.perf_counter()
    return finish(instance, x, method="greedy", proven_optimal=False, bound=bound, build=t1 - t0, solve=t2 - t1,
                  details={"alpha": alpha, "bound_kind": "sum of best winnable bid per bidder"})
