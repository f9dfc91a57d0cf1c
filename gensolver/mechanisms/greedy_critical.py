"""LOS greedy allocation with critical-value payments.

Guarantee
---------
For **single-minded** bidders (one bid each) truthful reporting of both value and bundle is a
dominant strategy: the greedy allocation rule is monotone (a winner still wins with a higher
value or a smaller demand) and every winner pays its critical value, the infimum of the values
at which it still wins (Lehmann, O'Callaghan & Shoham 2002, Thm. 5 and 8). Payments lie in
``[0, value]``, so the mechanism is individually rational. On single-unit goods the welfare is
at least ``OPT / sqrt(m)`` (``m`` goods).

For bidders with **several XOR bids** the rule is no longer truthful: the critical value of the
winning bid is set by the bidder's *own* other bids, so dropping a bid can lower the payment
(``tests/mechanisms/test_greedy_critical.py`` shows one). The payments below are still each
winning bid's critical value with the bidder's other bids held fixed.

Algorithm
---------
1. Rank bids by ``value / size ** alpha`` (``alpha = 0.5``; :func:`~gensolver.solvers.
   approximation.greedy.greedy_order`) and accept first fit
   (:func:`~gensolver.solvers.approximation.greedy.first_fit`).
2. Critical value of a winning bid ``b`` (exact, rank based, no bisection): run the greedy
   once more without ``b``. Greedy decisions above ``b``'s rank do not depend on ``b``, so ``b``
   wins exactly when it is ranked above the first bid ``j`` of that run that is accepted and
   either belongs to ``b``'s bidder or leaves too little capacity for ``b``. The critical value
   is ``key_j * size_b ** alpha`` (0 when no such ``j`` exists). Ties in rank are broken by
   value and instance order, so the critical value is an infimum: reporting exactly it may win
   or lose.

Running time ``O(W (B log B + nnz))`` for ``W`` winners.

Budgets
-------
A payment above the budget is capped at the budget (the bidder is listed in
``Outcome.budget_capped``). Capping breaks truthfulness.

References
----------
Lehmann, O'Callaghan & Shoham, "Truth revelation in approximately efficient combinatorial
auctions", J. ACM 49(5), 2002.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from typing import Any, Callable, Mapping

import numpy as np

from .._deprecation import method_alias
from ..errors import InputError, check_options
from ..model import Instance
from ..model.tolerances import boundary_guard, capacity_limit
from ..solvers.engine import finish, first_fit, greedy_keys, greedy_order
from .common import check_call, check_method_and_limit, make_outcome
from .outcome import Outcome

__all__ = ["greedy_critical", "critical_value"]

_DEFAULTS: dict[str, Any] = {"alpha": 0.5}


def _fits(rows: np.ndarray, need: np.ndarray, residual: np.ndarray, taken: Mapping[int, list[float]],
          limit: np.ndarray, guard: np.ndarray) -> bool:
    """Whether demands ``need`` on ``rows`` fit: the capacity rule of first fit
    (:func:`gensolver.solvers.heuristics.first_fit_matrix`), the floating-point residual away
    from the boundary and the exact sum (:func:`math.fsum`) of the accepted demands near it."""
    for r, d in zip(rows.tolist(), need.tolist()):
        gap = float(residual[r]) - d
        if gap < -guard[r] or (gap <= guard[r] and math.fsum([*taken.get(r, []), d]) > limit[r]):
            return False
    return True


def critical_value(instance: Instance, bid_id: str, *, alpha: float = 0.5) -> float:
    """Infimum of the values at which ``bid_id`` wins the LOS greedy (others' bids fixed).

    Returns ``inf`` when the bid cannot win at any value (it does not fit alone).
    """
    j = instance.bid_index[bid_id]
    bid = instance.bids[j]
    size = float(instance.normalised_size[j])
    col = instance.capacity_matrix.getcol(j).tocoo()
    need_rows, need = col.row, col.data
    limit = capacity_limit(np.asarray(instance.capacity, dtype=np.float64))
    residual = limit.copy()
    guard = boundary_guard(limit)
    taken: dict[int, list[float]] = {}  # row -> accepted demands, for the exact check at the boundary
    if not _fits(need_rows, need, residual, taken, limit, guard):
        return float("inf")
    if size == 0.0:
        return 0.0
    rest = instance.replace_bids([b for b in instance.bids if b.id != bid_id])
    if rest.n_bids == 0:
        return 0.0
    keys = greedy_keys(rest, alpha)
    order = greedy_order(rest, alpha)
    x = first_fit(rest, order)
    csc = rest.capacity_matrix.tocsc()
    residual = residual.copy()
    for k in order.tolist():
        if not x[k]:
            continue
        other = rest.bids[k]
        lo, hi = csc.indptr[k], csc.indptr[k + 1]
        residual[csc.indices[lo:hi]] -= csc.data[lo:hi]
        for r, d in zip(csc.indices[lo:hi].tolist(), csc.data[lo:hi].tolist()):
            taken.setdefault(r, []).append(d)
        if other.bidder == bid.bidder or not _fits(need_rows, need, residual, taken, limit, guard):
            return float(keys[k]) * size**alpha
    return 0.0


def greedy_critical(
    instance: Instance,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """LOS greedy with critical payments (see the module docstring).

    Parameters
    ----------
    instance : Instance
        Reported bids.
    method, time_limit, executor : keyword-only
        Accepted for a uniform interface and ignored: the allocation *is* the greedy (using an
        optimal method instead would break monotonicity, hence truthfulness).
    options : mapping, optional
        ``alpha`` (default 0.5, the LOS rule ``value / sqrt(size)``).
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).

    Returns
    -------
    Outcome
        Always ``exact`` (the critical values are computed exactly, not by bisection).
    """
    method = method_alias(method, solver, where="greedy_critical")
    instance = check_call(instance, executor)
    opts = check_options(options, _DEFAULTS, "mechanism 'greedy-critical'")
    # ignored, but checked like every mechanism's: a typo is not silently accepted
    check_method_and_limit(method, time_limit)
    alpha = opts["alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha < 0:
        raise InputError(f"greedy-critical option alpha must be a finite number >= 0, got {alpha!r}")
    alpha = float(alpha)
    t0 = time.perf_counter()
    x = first_fit(instance, greedy_order(instance, alpha)) if instance.n_bids else np.zeros(0)
    t1 = time.perf_counter()
    alloc = finish(instance, x, method=f"greedy(alpha={alpha})", proven_optimal=False, bound=None,
                   build=0.0, solve=t1 - t0, details={"alpha": alpha})
    payments: dict[str, float] = {}
    crit: dict[str, float] = {}
    index = instance.bid_index
    for w in alloc.winners:
        bid = instance.bids[index[w]]
        c = critical_value(instance, w, alpha=alpha)
        crit[bid.bidder] = c
        payments[bid.bidder] = min(max(c, 0.0), bid.value)
    details = {"alpha": alpha, "critical_values": crit, "seconds": time.perf_counter() - t0}
    return make_outcome("greedy-critical", instance, alloc, payments, exact=True, details=details)
