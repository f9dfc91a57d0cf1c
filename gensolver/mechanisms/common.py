"""Helpers shared by the mechanisms: solving, budgets, building the :class:`Outcome`."""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from ..errors import InputError, InputTypeError, check_executor, check_time_limit
from ..model import Bid, Instance
from ..model.tolerances import PAYMENT_TOL
from ..solvers import Allocation, Status, UnknownMethodError, get_method, solve
from .outcome import Outcome

__all__ = [
    "solve_wdp",
    "winning_bids",
    "apply_budgets",
    "make_outcome",
    "TOL",
]


#: absolute tolerance used when comparing payments, values and welfare
#: (:data:`gensolver.model.tolerances.PAYMENT_TOL`)
TOL = PAYMENT_TOL


def check_call(instance: Any, executor: Any) -> Instance:
    """The instance a mechanism function was called with, checked (an :class:`Instance`, or a
    ``gensolver.instance/v1`` document, which is read), and its ``executor`` (``None`` or a
    :class:`concurrent.futures.Executor`): direct calls get the same clear errors as
    :func:`~gensolver.mechanisms.run_mechanism`."""
    from ..model import coerce_instance

    if not isinstance(instance, (Instance, Mapping)):
        raise InputTypeError(f"instance must be an Instance or an instance document, got {type(instance).__name__}")
    check_executor(executor)
    return instance if isinstance(instance, Instance) else coerce_instance(instance)


def check_method_and_limit(method: Any, time_limit: Any) -> None:
    """``ValueError``/``UnknownMethodError`` for a method name not in the registry (callables
    pass) or a ``time_limit`` that is not a positive finite number or ``None``."""
    from ..solvers import get_method

    if isinstance(method, str):
        get_method(method)
    elif not callable(method):
        raise InputError(f"method must be a method name or a callable, got {method!r}")
    check_time_limit(time_limit)


def _takes_hints(method: str | Callable[..., Any]) -> bool:
    """Whether ``method`` is a registered method that declares :attr:`~gensolver.solvers.Method.hints`."""
    if not isinstance(method, str):
        return False
    try:
        return get_method(method).hints
    except UnknownMethodError:
        return False  # solve() raises the error that lists the valid names


def solve_wdp(
    instance: Instance,
    *,
    method: str | Callable[..., Any],
    time_limit: float | None,
    threads: int | None = None,
    hint: Iterable[str] | None = None,
    mip_gap: float | None = None,
) -> Allocation:
    """Solve the winner determination problem; pass ``hint`` and ``mip_gap`` (a relative gap,
    to prove payments to an absolute tolerance) only to methods that take them
    (:attr:`gensolver.solvers.Method.hints`: the exact backends)."""
    options: dict[str, Any] = {}
    if hint is not None and _takes_hints(method):
        options["hint"] = list(hint)
    if mip_gap is not None and _takes_hints(method):
        options["mip_gap"] = float(mip_gap)
    if instance.n_bids == 0:
        import numpy as np

        from ..solvers.engine import finish

        return finish(instance, np.zeros(0), method=str(method), proven_optimal=True, bound=0.0, build=0.0, solve=0.0)
    return solve(instance, method=method, time_limit=time_limit, threads=threads, options=options or None)


def winning_bids(instance: Instance, allocation: Allocation) -> dict[str, Bid]:
    """The winning :class:`Bid` of every winning bidder."""
    index = instance.bid_index
    out: dict[str, Bid] = {}
    for w in allocation.winners:
        bid = instance.bids[index[w]]
        out[bid.bidder] = bid
    return out


def apply_budgets(
    instance: Instance,
    payments: dict[str, float],
    bounds: dict[str, tuple[float, float]],
) -> tuple[dict[str, float], dict[str, tuple[float, float]], tuple[str, ...]]:
    """Cap every payment (and its interval) at the bidder's budget; return the capped bidders."""
    capped: list[str] = []
    budgets = instance.budgets
    for bidder, p in list(payments.items()):
        budget = budgets.get(bidder)
        if budget is None:
            continue
        lo, hi = bounds[bidder]
        if p > budget + TOL:
            payments[bidder] = float(budget)
            capped.append(bidder)
        bounds[bidder] = (min(lo, budget), min(hi, budget))
    return payments, bounds, tuple(capped)


def make_outcome(
    mechanism: str,
    instance: Instance,
    allocation: Allocation,
    payments: Mapping[str, float],
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    exact: bool,
    message: str = "",
    details: Mapping[str, Any] | None = None,
    budgets: bool = True,
) -> Outcome:
    """Fill in losers (payment 0), apply budgets, compute utilities and revenue."""
    pay = {b: 0.0 for b in instance.bidder_ids}
    for b, p in payments.items():
        pay[b] = float(p)
    bnd = {b: (pay[b], pay[b]) for b in instance.bidder_ids}
    if bounds is not None:
        for b, (lo, hi) in bounds.items():
            bnd[b] = (float(lo), float(hi))
    capped: tuple[str, ...] = ()
    if budgets:
        pay, bnd, capped = apply_budgets(instance, pay, bnd)
    won = winning_bids(instance, allocation)
    util = {b: (won[b].value if b in won else 0.0) - pay[b] for b in instance.bidder_ids}
    msgs = [message] if message else []
    if capped:
        msgs.append(f"payments of {len(capped)} bidder(s) capped at their budget: {', '.join(capped)}")
    if allocation.status not in (Status.OPTIMAL, Status.FEASIBLE):
        msgs.append(f"winner determination ended with status {allocation.status.value}: {allocation.message}")
    revenue = float(math.fsum(pay.values()))
    return Outcome(
        mechanism=mechanism,
        allocation=allocation,
        payments=MappingProxyType(pay),
        utilities=MappingProxyType(util),
        revenue=revenue,
        payment_bounds=MappingProxyType(bnd),
        exact=bool(exact),
        budget_capped=capped,
        message="; ".join(msgs),
        details=MappingProxyType(dict(details or {})),
    )
