"""The front end: :func:`solve`."""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import time
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError, InputTypeError, check_seed, check_time_limit
from ..model import Bid, Bidder, Instance, Slot, coerce_instance
from ..model.canonical import canonical, in_caller_order
from .registry import get_method
from .result import Allocation, Status, finish

logger = logging.getLogger(__name__)

__all__ = ["solve"]


def _check_args(time_limit: Any, threads: Any, seed: Any, options: Any) -> dict[str, Any]:
    check_time_limit(time_limit)  # NumPy scalars are numbers too; bool is not
    if threads is not None:
        if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral) or threads < 1:
            raise InputError(f"threads must be a positive integer or None, got {threads!r}")
    check_seed(seed)
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InputTypeError(f"options must be a mapping, got {type(options).__name__}")
    return dict(options)


def solve(
    bids: Instance | Sequence[Bid | Mapping[str, Any]],
    slots: Sequence[Slot | Mapping[str, Any]] | None = None,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    threads: int | None = None,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    bidders: Sequence[Bidder | Mapping[str, Any]] | None = None,
) -> Allocation:
    """Solve the winner determination problem of one clearing round.

    Parameters
    ----------
    bids : Instance or sequence of Bid or dict
        The bids (``{"id", "bidder", "value", "demand"}`` dicts are accepted), or a whole
        :class:`~gensolver.model.Instance` (then ``slots`` is omitted).
    slots : sequence of Slot or dict, optional
        The supply (``{"id", "capacity", ...}`` dicts are accepted).
    method : str or callable, keyword-only
        A registry name (``gensolver methods`` lists them: ``auto``, ``cpsat``, ``scip``,
        ``highs``, ``cbc``, ``pulp-cbc``, ``pulp-highs``, ``greedy``, ``lp``) or a callable
        ``f(instance, *, time_limit, threads, seed, options)`` returning an
        :class:`Allocation` or an iterable of winning bid ids.
    time_limit : float, optional
        Wall-clock seconds for the backend. A solve stopped by it is never reported optimal.
    threads : int, optional
        Worker threads, where the backend honours it.
    seed : int
        Random seed, where the backend uses one.
    options : mapping, optional
        Method-specific options (each method's docstring lists them; unknown keys raise).
    bidders : sequence of Bidder or dict, optional
        Per-bidder data (budgets).

    Returns
    -------
    Allocation
        Frozen result; see its docstring for which fields may be ``None``. A registered method
        solves the canonical form of the instance (:func:`gensolver.model.canonical.canonical`:
        everything sorted by id), so the answer does not depend on the order of the bids; the
        winners are listed in the caller's order.

    Raises
    ------
    gensolver.InstanceError
        Invalid input, with a JSON pointer to the offending place.
    gensolver.solvers.UnknownMethodError
        Unknown method name (the message lists the valid ones).
    gensolver.solvers.BackendUnavailableError
        The method's backend is not installed here.

    Examples
    --------
    >>> from gensolver import solve
    >>> slots = [{"id": "g0t0", "capacity": {"memory": 80}}]
    >>> bids = [{"id": "a", "bidder": "A", "value": 5, "demand": {"g0t0": {"memory": 50}}},
    ...         {"id": "b", "bidder": "B", "value": 4, "demand": {"g0t0": {"memory": 40}}}]
    >>> solve(bids, slots, method="greedy").winners
    ('a',)
    """
    opts = _check_args(time_limit, threads, seed, options)
    time_limit = None if time_limit is None else float(time_limit)  # plain Python numbers for the backends
    threads = None if threads is None else int(threads)
    instance = coerce_instance(bids, slots, bidders)
    if callable(method):
        return _call_user_method(method, instance, time_limit, threads, int(seed), opts)
    if not isinstance(method, str):
        raise InputTypeError(f"method must be a name or a callable, got {type(method).__name__}")
    func = get_method(method).load()
    canon = canonical(instance)
    if canon is not instance:
        hint = opts.get("hint")
        if isinstance(hint, np.ndarray) and hint.dtype != object and hint.shape == (instance.n_bids,):
            opts["hint"] = [instance.bids[j].id for j in np.flatnonzero(hint > 0.5).tolist()]
    logger.info("solve: %d bids, %d slots, %d bidders with %s (time limit %s s)", instance.n_bids,
                instance.n_slots, instance.n_bidders, method, "none" if time_limit is None else f"{time_limit:g}")
    result = func(canon, time_limit=time_limit, threads=threads, seed=int(seed), options=opts)
    if canon is not instance:
        result = dataclasses.replace(result, winners=in_caller_order(instance, result.winners))
    logger.info("solve: %s %s, welfare %.6g, bound %s, %.3f s", method, result.status.value, result.welfare,
                "none" if result.bound is None else f"{result.bound:.6g}", result.seconds.total)
    return result


def _call_user_method(func: Callable[..., Any], instance: Instance, time_limit: float | None,
                      threads: int | None, seed: int, options: dict[str, Any]) -> Allocation:
    name = getattr(func, "__name__", type(func).__name__)
    t0 = time.perf_counter()
    out = func(instance, time_limit=time_limit, threads=threads, seed=seed, options=options)
    t1 = time.perf_counter()
    claimed: Allocation | None = None
    if isinstance(out, Allocation):
        if out.status in (Status.ERROR, Status.INFEASIBLE):
            return out
        claimed, winners = out, out.winners
    elif isinstance(out, str):
        winners = (out,)
    else:
        winners = out
    index = instance.bid_index
    x = np.zeros(instance.n_bids)
    for w in winners:
        if w not in index:
            return finish(instance, None, method=name, proven_optimal=False, bound=None, build=0.0, solve=t1 - t0,
                          status=Status.ERROR, message=f"method returned unknown bid id {w!r}")
        x[index[w]] = 1.0
    if claimed is not None:
        # A user's Allocation is checked like any backend's answer: known ids, feasibility
        # and the welfare it claims; a faulty one becomes ``ERROR``.
        checked = finish(instance, x, method=claimed.method, proven_optimal=claimed.status is Status.OPTIMAL,
                         bound=claimed.bound, build=claimed.seconds.build, solve=claimed.seconds.solve,
                         details=claimed.details, message=claimed.message)
        if checked.status is Status.ERROR:
            return checked
        if not math.isclose(checked.welfare, claimed.welfare, rel_tol=1e-9, abs_tol=1e-9):
            return finish(instance, None, method=claimed.method, proven_optimal=False, bound=None,
                          build=claimed.seconds.build, solve=claimed.seconds.solve, details=claimed.details,
                          status=Status.ERROR, message=(f"method claimed welfare {claimed.welfare!r} for winners "
                                                        f"worth {checked.welfare!r}"))
        return claimed
    return finish(instance, x, method=name, proven_optimal=False, bound=None, build=0.0, solve=t1 - t0,
                  details=MappingProxyType({"user_method": True}))
