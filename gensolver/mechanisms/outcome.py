"""The result of a mechanism run: :class:`Outcome`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..solvers import Allocation

__all__ = ["Outcome"]


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
        """JSON-ready dict (non-finite numbers become ``None``)."""

        def num(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        from ..model.io import json_safe

        return {
            "mechanism": self.mechanism,
            "allocation": self.allocation.to_dict(),
            "payments": {k: num(v) for k, v in self.payments.items()},
            "utilities": {k: num(v) for k, v in self.utilities.items()},
            "revenue": self.revenue,
            "payment_bounds": {k: [num(lo), num(hi)] for k, (lo, hi) in self.payment_bounds.items()},
            "exact": self.exact,
            "budget_capped": list(self.budget_capped),
            "message": self.message,
            "details": json_safe(dict(self.details), default=str),
        }
