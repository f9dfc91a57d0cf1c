"""The result of a mechanism run: :class:`Outcome`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..solvers import Allocation

__all__ = ["Outcome", "outcome_to_dict", "inexact_reason", "result_to_dict", "RESULT_SCHEMA"]

#: the version tag of the report :func:`result_to_dict` builds
RESULT_SCHEMA = "gensolver.result/v1"


@dataclass(frozen=True)
class Outcome:
    """Frozen result of :func:`gensolver.mechanisms.run_mechanism`.

    Attributes
    ----------
    mechanism : str
        Registry name of the mechanism (or the callable's name).
    allocation : Allocation
        The winner determination result the payments refer to.
    payments : Mapping[str, float]
        Payment charged to every bidder of the instance (losers pay 0).
    utilities : Mapping[str, float]
        ``value of the bidder's winning bid - payment`` under the *reported* values.
    revenue : float
        Sum of the payments.
    payment_bounds : Mapping[str, tuple[float, float]]
        For every bidder an interval ``(lo, hi)`` certain to contain the payment the mechanism
        would charge if every optimisation it needs were solved exactly. Degenerate
        (``lo == hi == payment``) when ``exact``.
    exact : bool
        ``True`` when every optimisation was proven optimal, so ``payments`` are the exact
        payments of the mechanism's definition.
    budget_capped : tuple of str
        Bidders whose payment was capped at their budget (see each mechanism's docstring:
        capping breaks truthfulness).
    message : str
        Why the outcome is not exact, or other notes; ``""`` otherwise.
    details : Mapping
        Mechanism specific data (pivot welfare values, timings, constraint counts, ...).
    """

    mechanism: str
    allocation: Allocation
    payments: Mapping[str, float]
    utilities: Mapping[str, float]
    revenue: float
    payment_bounds: Mapping[str, tuple[float, float]]
    exact: bool
    budget_capped: tuple[str, ...] = ()
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (non-finite numbers become ``None``): :func:`outcome_to_dict` with the
        allocation, the utilities and every detail."""
        return outcome_to_dict(self, allocation=True, details=True)


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def inexact_reason(outcome: Outcome) -> str:
    """Why ``outcome``'s payments are not exact (``""`` when they are)."""
    if outcome.exact:
        return ""
    return outcome.message or "not every optimisation the mechanism needs was proven optimal"


#: scalar facts of a randomised outcome's lottery copied into every report
_LOTTERY_KEYS = ("alpha", "alpha_requested", "alpha_verified", "alpha_floor", "lp_welfare", "expected_welfare",
                 "truthful_in_expectation", "expected_payments", "relaxation")


def outcome_to_dict(outcome: Outcome, *, allocation: bool = False, details: bool = False) -> dict[str, Any]:
    """The payment block of an :class:`Outcome` in JSON-ready form (CLI, service, bench, market).

    Reports of a whole round use :func:`result_to_dict`, which merges this block into the
    allocation's fields.

    Always carries ``exact``, each bidder's ``payment_bounds`` ``[low, high]`` (certain to
    contain the payment of the mechanism's definition) and ``inexact_reason`` (``""`` when
    exact), so a time-limited answer is never mistaken for the exact payments. A randomised
    outcome (with a ``decomposition`` in its details) adds ``lottery``: its scaling ``alpha``,
    expected welfare and expected payments. Mechanisms that prove their payments (``vcg``,
    ``core``, ``lavi-swamy``) add ``exact_tolerance``: ``exact`` means every payment is within that
    absolute tolerance of the payment of the definition; ``lavi-swamy`` adds ``truthful``
    (``false`` when alpha was not fixed before the reports). Non-finite numbers become ``None``.

    Parameters
    ----------
    outcome : Outcome
    allocation : bool, keyword-only
        Include the allocation (:meth:`Allocation.to_dict`) and the utilities.
    details : bool, keyword-only
        Include the mechanism's ``details`` (for ``lavi-swamy``: the whole lottery).
    """
    from ..model.io import json_safe

    out: dict[str, Any] = {"mechanism": outcome.mechanism}
    if allocation:
        out["allocation"] = outcome.allocation.to_dict()
    out["payments"] = {k: _num(v) for k, v in outcome.payments.items()}
    if allocation:
        out["utilities"] = {k: _num(v) for k, v in outcome.utilities.items()}
    out.update({
        "revenue": _num(outcome.revenue),
        "exact": bool(outcome.exact),
        "payment_bounds": {k: [_num(lo), _num(hi)] for k, (lo, hi) in outcome.payment_bounds.items()},
        "inexact_reason": inexact_reason(outcome),
        "budget_capped": list(outcome.budget_capped),
        "message": outcome.message,
    })
    d = outcome.details or {}
    if "payment_tolerance" in d:
        # the absolute tolerance to which exact payments are proved
        out["exact_tolerance"] = _num(float(d["payment_tolerance"]))
    if "truthful_in_expectation" in d:
        # visible at the top: a lottery whose alpha came from the reports is not truthful
        out["truthful"] = bool(d["truthful_in_expectation"])
    if "decomposition" in d:
        out["lottery"] = json_safe({k: d[k] for k in _LOTTERY_KEYS if k in d}, default=str)
    if details:
        out["details"] = json_safe(dict(d), default=str)
    return out


def result_to_dict(result: Allocation, *, outcome: Outcome | None = None,
                   mechanism: str | None = None) -> dict[str, Any]:
    """The report of one round: the JSON object of ``gensolver solve --json`` and ``POST /v1/solve``.

    One flat object tagged ``"schema": "gensolver.result/v1"`` (:data:`RESULT_SCHEMA`): the
    allocation's :meth:`~gensolver.solvers.Allocation.to_dict` and, with a mechanism's
    ``outcome``, its payment block (:func:`outcome_to_dict`: payments with ``exact``,
    ``payment_bounds`` and ``inexact_reason``) and ``mechanism``.

    Parameters
    ----------
    result : Allocation
        The winner determination result (``outcome.allocation`` when there is an outcome).
    outcome : Outcome, optional, keyword-only
        The mechanism's outcome, when payments were computed.
    mechanism : str, optional, keyword-only
        The mechanism's name as requested (reported as ``mechanism``; only with ``outcome``).

    Examples
    --------
    >>> from gensolver import from_dict, solve
    >>> inst = from_dict({"schema": "gensolver.instance/v1",
    ...     "slots": [{"id": "s", "capacity": {"units": 1}}],
    ...     "bids": [{"id": "a", "bidder": "A", "value": 5, "demand": {"s": {"units": 1}}}]})
    >>> doc = result_to_dict(solve(inst, method="greedy"))
    >>> doc["schema"], doc["winners"], doc["welfare"]
    ('gensolver.result/v1', ['a'], 5.0)
    """
    doc: dict[str, Any] = {"schema": RESULT_SCHEMA, **result.to_dict()}
    if outcome is not None:
        doc.update(outcome_to_dict(outcome))  # payments with exact, intervals and the reason
        doc["mechanism"] = mechanism
    return doc
