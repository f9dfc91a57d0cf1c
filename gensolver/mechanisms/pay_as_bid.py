"""Pay-as-bid (first price): winners pay their reported bid.

Guarantee
---------
Individually rational under reported values (utility 0 for every bidder) and *not* truthful:
a winner gains by shading its bid whenever it would still win. It is the non-truthful baseline
against which truthful mechanisms are compared; its bidding game is studied with
:func:`gensolver.verify.best_response_dynamics`.

Algorithm
---------
Solve the welfare problem on the reports (any method); each winner pays its winning bid's
value. Payments are exact whenever the allocation is (they need no further solve); when the
solve is not proven optimal ``exact`` is ``False`` and the payments are those of the returned
allocation (their interval is degenerate: the rule charges the bid).

Budgets
-------
A bid above the budget would be charged above it; the payment is capped at the budget and the
bidder listed in ``Outcome.budget_capped``.

References
----------
Vickrey, "Counterspeculation, auctions, and competitive sealed tenders", J. Finance 16, 1961
(first-price sealed-bid auctions).
Krishna, *Auction Theory*, 2nd ed., Academic Press, 2010, ch. 2.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any, Callable, Mapping

from .._deprecation import method_alias
from ..errors import check_options
from ..model import Instance
from ..solvers import Status
from .common import check_call, make_outcome, solve_wdp, winning_bids
from .outcome import Outcome

__all__ = ["pay_as_bid"]

_DEFAULTS: dict[str, Any] = {"threads": None}


def pay_as_bid(
    instance: Instance,
    *,
    method: str | Callable[..., Any] = "auto",
    time_limit: float | None = None,
    executor: Executor | None = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
) -> Outcome:
    """First-price payments (see the module docstring).

    Parameters
    ----------
    instance : Instance
    method : str or callable, keyword-only
        Winner determination method (:func:`gensolver.solve`; ``"auto"`` is the anytime
        method, exact without a time limit).
    time_limit : float, optional
        Seconds for the solve.
    executor : Executor, optional
        Unused (one solve).
    options : mapping, optional
        ``threads``: solver threads.
    solver : str or callable, optional
        Deprecated alias of ``method`` (a :class:`~gensolver.GensolverDeprecationWarning`;
        removed in the next release).
    """
    method = method_alias(method, solver, where="pay_as_bid")
    instance = check_call(instance, executor)
    opts = check_options(options, _DEFAULTS, "mechanism 'pay-as-bid'")
    alloc = solve_wdp(instance, method=method, time_limit=time_limit, threads=opts["threads"])
    payments = {b: bid.value for b, bid in winning_bids(instance, alloc).items()}
    exact = alloc.status is Status.OPTIMAL
    msg = "" if exact else "allocation not proven optimal; payments are the bids of the returned allocation"
    return make_outcome("pay-as-bid", instance, alloc, payments, exact=exact, message=msg)
