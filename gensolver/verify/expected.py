"""Exact regret in expectation for randomised mechanisms (no sampling).

A randomised mechanism that exposes its lottery in ``Outcome.details["decomposition"]`` — a
list of ``{"probability": p, "winners": [bid ids], "payments": {bidder: payment}}`` whose
probabilities sum to 1 (``lavi-swamy`` does) — has, for every bidder, an expected utility that
is a finite weighted sum::

    E[u_i] = sum_l p_l (true_value_i(allocation_l) - payment_i(allocation_l))

with ``true_value`` the free-disposal value of :func:`gensolver.verify.true_value`. The
functions below evaluate it exactly over the same misreport families as
:func:`gensolver.verify.regret` (:data:`gensolver.verify.FAMILIES`). A deterministic outcome
(no ``decomposition``) is the lottery with one allocation of probability 1, so for
deterministic mechanisms :func:`expected_regret` equals :func:`gensolver.verify.regret`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._deprecation import NOT_GIVEN, keyword_alias, method_alias
from ..errors import InputError
from ..model import Instance
from .regret import (
    DEFAULT_FACTORS,
    FAMILIES,
    MaxRegretResult,
    Misreport,
    RegretResult,
    max_regret,
    regret,
    true_value,
)

__all__ = ["lottery", "expected_utility", "expected_regret", "max_expected_regret"]

_PROB_TOL = 1e-9


def lottery(outcome: Any) -> list[tuple[float, tuple[str, ...], Mapping[str, float]]]:
    """``(probability, winners, payments)`` of every allocation the outcome may draw.

    Raises ``ValueError`` when the probabilities are negative or do not sum to 1.
    """
    dec = outcome.details.get("decomposition") if outcome.details else None
    if dec is None:
        return [(1.0, tuple(outcome.allocation.winners), dict(outcome.payments))]
    out: list[tuple[float, tuple[str, ...], Mapping[str, float]]] = [
        (float(a["probability"]), tuple(a["winners"]), dict(a.get("payments", {}))) for a in dec]
    total = math.fsum(p for p, _, _ in out)
    if any(p < -_PROB_TOL for p, _, _ in out) or abs(total - 1.0) > _PROB_TOL:
        raise InputError(f"outcome.details['decomposition']: the lottery is not a probability distribution (sum {total!r})")
    return out


def expected_utility(instance: Instance, bidder: str, reported: Instance, outcome: Any,
                     identities: Sequence[str] | None = None) -> float:
    """Expected utility under true values of ``bidder`` (controlling ``identities``).

    ``reported`` is the instance the mechanism ran on and ``outcome`` its :class:`Outcome`;
    the expectation is the exact weighted sum over :func:`lottery`.
    """
    ids = set(identities or (bidder,))
    index = reported.bid_index
    terms = []
    for p, winners, payments in lottery(outcome):
        if p == 0.0:
            continue
        got: dict[str, dict[str, float]] = {}
        for w in winners:
            bid = reported.bids[index[w]]
            if bid.bidder in ids:
                for s, res in bid.demand.items():
                    slot = got.setdefault(s, {})
                    for r, q in res.items():
                        slot[r] = slot.get(r, 0.0) + q
        paid = math.fsum(float(payments.get(i, 0.0)) for i in ids)
        terms.append(p * (true_value(instance, bidder, got) - paid))
    return math.fsum(terms)


def expected_regret(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    bidder: str,
    *,
    misreports: Iterable[Misreport] | None = None,
    families: Sequence[str] = FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
    method: str | Callable[..., Any] = "auto",
    per_run_limit: float | None = None,
    executor: Any = None,
    options: Mapping[str, Any] | None = None,
    truthful: Any = None,
    solver: str | Callable[..., Any] | None = None,
    time_limit: Any = NOT_GIVEN,
) -> RegretResult:
    """Largest gain in *expected* utility of ``bidder`` from misreporting (exact sums).

    Parameters and result as :func:`gensolver.verify.regret` (``per_run_limit``: the ``time_limit``
    of every run of the mechanism; ``time_limit`` is its deprecated alias); utilities are
    :func:`expected_utility`.
    """
    per_run_limit = keyword_alias(per_run_limit, time_limit, old="time_limit", new="per_run_limit",
                                  where="expected_regret", default=None)
    method = method_alias(method, solver, where="expected_regret")
    return regret(mechanism, instance, bidder, misreports=misreports, families=families, factors=factors,
                  method=method, per_run_limit=per_run_limit, executor=executor, options=options,
                  truthful=truthful,
                  utility=expected_utility)


def max_expected_regret(
    mechanism: str | Callable[..., Any],
    instance: Instance,
    *,
    bidders: Sequence[str] | None = None,
    families: Sequence[str] = FAMILIES,
    factors: Sequence[float] = DEFAULT_FACTORS,
    method: str | Callable[..., Any] = "auto",
    per_run_limit: float | None = None,
    executor: Any = None,
    options: Mapping[str, Any] | None = None,
    solver: str | Callable[..., Any] | None = None,
    time_limit: Any = NOT_GIVEN,
) -> MaxRegretResult:
    """:func:`expected_regret` of every bidder (or of ``bidders``); the largest and who has it.

    ``per_run_limit`` is the ``time_limit`` of every run of the mechanism (``time_limit`` is its
    deprecated alias), as in :func:`gensolver.verify.max_regret`.
    """
    per_run_limit = keyword_alias(per_run_limit, time_limit, old="time_limit", new="per_run_limit",
                                  where="max_expected_regret", default=None)
    method = method_alias(method, solver, where="max_expected_regret")
    return max_regret(mechanism, instance, bidders=bidders, families=families, factors=factors, method=method,
                      per_run_limit=per_run_limit, executor=executor, options=options, utility=expected_utility)
