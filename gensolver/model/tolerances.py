"""The one table of numerical tolerances, and the one capacity rule every method applies.

Capacity rule
-------------
A set of winning bids fits a capacity row ``(slot, resource)`` of capacity ``c`` when the
*correctly rounded* sum of their demands on the row (:func:`math.fsum`, independent of the
order of the bids) is at most :func:`capacity_limit` ``(c) = c + CAPACITY_ABS_TOL +
CAPACITY_REL_TOL * |c|``:

- :data:`CAPACITY_ABS_TOL` (``1e-9``) is the format's documented absolute tolerance
  (``INSTANCE_FORMAT.md``): demands written with nine decimals (``0.666666667`` three times on a
  capacity of ``2``) fit;
- :data:`CAPACITY_REL_TOL` (``1e-12``) keeps the slack above floating-point round-off at every
  magnitude: on a memory row in bytes (``8e10``) one ulp is ``1.5e-5``, far above ``1e-9``,
  so an absolute tolerance alone would leave the answer to the order of a sum.

The model check (:func:`gensolver.verify.check_allocation`), the matrix form's feasibility test
(:func:`gensolver.solvers.formulation.problem.violation`, which every backend's answer passes),
the first fits of the heuristics, the anytime engine and the mechanisms, and the integer rows of
CP-SAT all apply this rule, so an instance at the boundary gets one answer from every method.
Fast paths compare floating-point sums and fall back to :func:`math.fsum` whenever a row is
within :func:`boundary_guard` of its limit (:func:`row_fits`).

Exact payments
--------------
A mechanism reports ``exact=True`` only when every payment is *proved* within
:func:`payment_tolerance` ``(scale) = max(EXACT_PAYMENT_ABS_TOL, EXACT_PAYMENT_REL_TOL * scale)``
(``scale``: the welfare bound of the round) of the payment of its definition, never from a
relative MIP gap alone: each welfare a payment is computed from must have a certified bound
within a quarter of it. The tolerance is stated in the outcome (``exact_tolerance``).

Other tolerances
----------------
:data:`PAYMENT_TOL` (``1e-9``, absolute) compares payments, values and welfare (budgets,
individual rationality); :data:`WELFARE_REL_TOL` (``1e-9``) compares a claimed welfare with a
recomputed one; :data:`PROB_TOL` (``1e-9``) the probabilities of a lottery.

References
----------
Goldberg, "What every computer scientist should know about floating-point arithmetic", ACM
Computing Surveys 23(1), 1991. Shewchuk, "Adaptive precision floating-point arithmetic and fast
robust geometric predicates", Discrete Comput. Geom. 18, 1997 (exact sums, :func:`math.fsum`).
"""

from __future__ import annotations

import math
from typing import Iterable, overload

import numpy as np

__all__ = ["CAPACITY_ABS_TOL", "CAPACITY_REL_TOL", "PAYMENT_TOL", "EXACT_PAYMENT_ABS_TOL", "EXACT_PAYMENT_REL_TOL",
           "payment_tolerance", "WELFARE_REL_TOL", "PROB_TOL", "capacity_slack",
           "capacity_limit", "boundary_guard", "row_fits", "TOLERANCES"]

#: absolute part of the capacity tolerance (the format's ``1e-9``)
CAPACITY_ABS_TOL = 1e-9
#: relative part of the capacity tolerance (above the round-off of any sum of demands)
CAPACITY_REL_TOL = 1e-12
#: absolute tolerance when comparing payments, values and welfare
PAYMENT_TOL = 1e-9
#: absolute part of the tolerance to which ``exact=True`` payments are proved
EXACT_PAYMENT_ABS_TOL = 1e-6
#: relative part (of the round's welfare bound): above the round-off of a sum of values
EXACT_PAYMENT_REL_TOL = 1e-12
#: relative tolerance between a claimed and a recomputed welfare
WELFARE_REL_TOL = 1e-9
#: tolerance of a lottery's probabilities (sum to 1, none negative)
PROB_TOL = 1e-9
#: rows whose floating-point use lies within this share of their limit are re-summed exactly
_GUARD_REL = 2.0**-36

#: the table, for reports and documentation
TOLERANCES = {"capacity_abs": CAPACITY_ABS_TOL, "capacity_rel": CAPACITY_REL_TOL, "payment": PAYMENT_TOL,
              "welfare_rel": WELFARE_REL_TOL, "probability": PROB_TOL, "exact_payment_abs": EXACT_PAYMENT_ABS_TOL,
              "exact_payment_rel": EXACT_PAYMENT_REL_TOL}

@overload
def capacity_slack(cap: float) -> float: ...
@overload
def capacity_slack(cap: np.ndarray) -> np.ndarray: ...
def capacity_slack(cap: float | np.ndarray) -> float | np.ndarray:
    """``CAPACITY_ABS_TOL + CAPACITY_REL_TOL * |cap|``: how far a row may be overfilled."""
    if isinstance(cap, np.ndarray):
        return CAPACITY_ABS_TOL + CAPACITY_REL_TOL * np.abs(cap)
    return CAPACITY_ABS_TOL + CAPACITY_REL_TOL * abs(float(cap))


@overload
def capacity_limit(cap: float) -> float: ...
@overload
def capacity_limit(cap: np.ndarray) -> np.ndarray: ...
def capacity_limit(cap: float | np.ndarray) -> float | np.ndarray:
    """The largest use a row of capacity ``cap`` admits (scalar or array, elementwise).

    >>> capacity_limit(2.0) > 3 * 0.666666667
    True
    >>> capacity_limit(2.0) > 2.0 + 2e-9
    False
    """
    if isinstance(cap, np.ndarray):
        c = cap.astype(np.float64)
        return c + capacity_slack(c)
    return float(cap) + capacity_slack(float(cap))


@overload
def boundary_guard(limit: float) -> float: ...
@overload
def boundary_guard(limit: np.ndarray) -> np.ndarray: ...
def boundary_guard(limit: float | np.ndarray) -> float | np.ndarray:
    """Distance from a row's limit within which a floating-point sum (in any order, of up to
    about ten thousand demands) cannot decide the rule and :func:`row_fits` is used."""
    if isinstance(limit, np.ndarray):
        return _GUARD_REL * (1.0 + np.abs(limit))
    return _GUARD_REL * (1.0 + abs(float(limit)))


def payment_tolerance(scale: float) -> float:
    """The absolute tolerance to which exact payments of a round with welfare bound ``scale``
    are proved: ``max(1e-6, 1e-12 * |scale|)``.

    >>> payment_tolerance(10.0), payment_tolerance(1e5), round(payment_tolerance(1e9), 15)
    (1e-06, 1e-06, 0.001)
    """
    s = abs(float(scale)) if math.isfinite(scale) else 0.0
    return max(EXACT_PAYMENT_ABS_TOL, EXACT_PAYMENT_REL_TOL * s)


def row_fits(demands: Iterable[float], cap: float) -> bool:
    """The capacity rule for one row: ``fsum(demands) <= capacity_limit(cap)`` (exact in the
    order of the demands).

    >>> row_fits([0.666666667] * 3, 2.0), row_fits([0.6666666677] * 3, 2.0)
    (True, False)
    """
    return math.fsum(demands) <= capacity_limit(float(cap))
