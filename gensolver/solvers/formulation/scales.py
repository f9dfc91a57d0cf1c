"""Every scale, lift and tolerance that turns the welfare problem into a backend's numbers.

One definition of each constant. Two tolerances are genuinely different and named apart:

- :data:`CAPACITY_TOL` (``1e-9``, absolute) is the *format's*, the absolute part of the one
  capacity rule of :mod:`gensolver.model.tolerances` (with a relative part ``1e-12``: a row
  holds when the exact sum of its demands is at most ``capacity_limit(capacity)``). Every
  answer is checked against that rule, and every first fit and integer row applies it.
- :data:`BACKEND_FEASIBILITY_TOL` (``1e-6``, absolute) is the floating-point MIP backends'
  (HiGHS, SCIP, CBC primal feasibility tolerance): rows they accept can overfill by this much,
  so answers are re-checked and rows are lifted or normalised (:func:`row_lift`) to keep it
  relative; :data:`TIGHT_MARGIN` lies just above it.

CP-SAT needs integers: :func:`integer_scale` finds the power of ten (up to
``10**ROW_SCALE_POWER`` for capacity rows, ``10**VALUE_SCALE_POWER`` for values) that makes
data integral up to floating-point noise; :func:`integer_row` rounds a row that has none
conservatively (or, for a relaxation, the other way); :func:`objective_scale` rounds
floating-point values finely with a certified error.

References
----------
Goldberg, "What every computer scientist should know about floating-point arithmetic", ACM
Computing Surveys 23(1), 1991 (powers of two change no digit; ulps).
Perron & Didier, "CP-SAT", OR-Tools (Google), https://developers.google.com/optimization.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...model.tolerances import CAPACITY_ABS_TOL, capacity_limit, capacity_slack

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["CAPACITY_TOL", "BACKEND_FEASIBILITY_TOL", "DEFAULT_MIP_GAP", "LARGE_ROW", "LARGE_OBJECTIVE", "TIGHT_MARGIN",
           "ROW_SCALE_POWER", "VALUE_SCALE_POWER", "within_mip_gap", "power_of_two_scales", "row_lift",
           "row_lifts", "objective_lift", "integer_scale", "integer_row", "certified_value_scale", "objective_scale",
           "value_downscale"]

#: absolute part of the capacity tolerance (the format's); defined in :mod:`gensolver.model.tolerances`
CAPACITY_TOL = CAPACITY_ABS_TOL
#: absolute primal feasibility tolerance of the floating-point MIP backends (HiGHS, SCIP, CBC):
#: not the format's; answers they accept are checked against :data:`CAPACITY_TOL`
BACKEND_FEASIBILITY_TOL = 1e-6
#: relative MIP gap every backend is run with, so that "optimal" means optimal
DEFAULT_MIP_GAP = 1e-9
#: rows with an entry this large (memory in bytes) are normalised for the floating-point
#: backends: SCIP and CBC returned wrong "optimal" answers on rows of size 1e9 (their absolute
#: tolerances fall below the data's floating-point resolution there)
LARGE_ROW = 2.0**20
#: objective values this large are brought down by a power of two for the floating-point MIP
#: backends (:func:`objective_lift`), well below their "infinity" (1e20 for SCIP)
LARGE_OBJECTIVE = 2.0**60
#: relative tightening of normalised rows for an answer that surely fits after a normalised
#: solve's answer did not (above :data:`BACKEND_FEASIBILITY_TOL`)
TIGHT_MARGIN = 2e-6
#: largest power of ten tried to make a capacity row integral for CP-SAT
ROW_SCALE_POWER = 9
#: largest power of ten tried to make the values integral for CP-SAT (CATS prices have four
#: decimals); other values are rounded at :func:`certified_value_scale`
VALUE_SCALE_POWER = 6

_INT_LIMIT = 2**52
_NOISE = 1e-15  # relative residual treated as floating-point noise by integer_scale (~4 ulps)
_EXACT_MAX = 2.0**40  # no value is called integral above this magnitude
#: integer units of slack when rounding a scaled row that is integral up to round-off (a
#: guard against ``0.3 * 10 = 3.0000000000000004`` rounding the wrong way)
_ROUNDING_GUARD = 1e-9
#: integer units a relaxed row moves each number by, beyond its rounding: ample room for the
#: round-off of the scaled float (so no feasible allocation is cut off)
_RELAX_GUARD = 1e-6
#: largest residual (in scaled units) of values called integral that is still floating-point
#: noise of decimal prices rather than a coarse rounding
_VALUE_NOISE = 1e-6


def within_mip_gap(bound: float, value: float) -> bool:
    """Whether a proven ``bound`` certifies ``value`` as optimal: within ``DEFAULT_MIP_GAP``
    of the bound (relative, with an absolute floor at bounds below 1), the tolerance the MIP
    backends are run with; used where CP-SAT solved finely rounded values."""
    return bound - value <= DEFAULT_MIP_GAP * max(1.0, abs(bound))


def power_of_two_scales(top: np.ndarray, *, above: float = math.inf) -> np.ndarray:
    """Scale factors (powers of two) for rows whose largest entries are ``top``: a row below 1
    is lifted into ``[1, 2)``, a row at or above ``above`` brought down into it, others get 1
    (the rule of :func:`row_lift`, vectorised for sparse rows)."""
    top = np.abs(np.asarray(top, dtype=np.float64))
    f = np.ones(top.size)
    move = (top > 0.0) & np.isfinite(top) & ((top < 1.0) | (top >= above))
    # the exact binary exponent (frexp), not floor(log2(top)): log2 rounds 1.797e308 up to 1024
    _, e = np.frexp(top[move])
    f[move] = np.ldexp(1.0, np.minimum(1 - e, 1023))  # subnormal tops: as far as a finite factor goes
    return f


def row_lift(coefs: np.ndarray, cap: float, *, normalise: bool = False) -> float:
    """Power of two that lifts a capacity row whose entries are all below 1 into ``[1, 2)``.

    Floating-point MIP backends (HiGHS, SCIP, CBC) accept a row as satisfied within an
    *absolute* tolerance (:data:`BACKEND_FEASIBILITY_TOL`). On a row whose capacity is itself
    of that order (a memory of ``1.2e-6``) a bid 20 % over the capacity then "fits", and the
    backend calls an infeasible allocation optimal. Scaled by this factor the tolerance is
    relative to the row's size. A power of two changes no digit of the data (``x * 2**k`` is
    exact in binary floating point and adds no decimal places); rows with an entry of 1 or more
    are left as they are (``1.0``), so the absolute tolerance there stays as strict as the
    format's, unless ``normalise``: then every row is scaled into ``[1, 2)`` (see
    :func:`~gensolver.solvers.exact.common.guarded_solve`, which checks the answer
    against the true rows).
    """
    top = max(float(np.abs(coefs).max()) if len(coefs) else 0.0, abs(float(cap)))
    return float(power_of_two_scales(np.array([top]), above=2.0 if normalise else math.inf)[0])


def row_lifts(rows: sp.csr_matrix, cap: np.ndarray) -> np.ndarray:
    """Per-row power-of-two scale of ``rows x <= cap`` (a sparse matrix) for the floating-point
    backends: rows whose entries are all below 1 are lifted into ``[1, 2)`` (:func:`row_lift`),
    so the absolute feasibility tolerance is relative to them, and rows reaching
    :data:`LARGE_ROW` (bytes) are brought down to ``[1, 2)``, where SCIP and CBC stay accurate;
    the caller checks the answer against the true rows."""
    top = np.abs(np.asarray(cap, dtype=np.float64)).copy()
    if rows.nnz:
        top = np.maximum(top, abs(rows).max(axis=1).toarray().ravel())
    return power_of_two_scales(top, above=LARGE_ROW)


def objective_lift(values: np.ndarray) -> float:
    """Power of two for the objective of the floating-point MIP backends: values all below 1
    (``1e-6`` credits) are scaled into ``[1, 2)``, as the backends' absolute gap tolerances
    (HiGHS stops within ``1e-6``) would otherwise call any answer optimal; values reaching
    :data:`LARGE_OBJECTIVE` are brought down into ``[1, 2)`` as well, as the backends take
    coefficients near their "infinity" (``1e20`` for SCIP, ``1e30`` for CBC) for unbounded and
    fail on values near ``1e308``. Divide objective values and bounds read back by it."""
    vals = np.abs(np.asarray(values, dtype=np.float64))
    top = float(vals.max()) if vals.size else 0.0
    return float(power_of_two_scales(np.array([top]), above=LARGE_OBJECTIVE)[0])


def integer_scale(values: np.ndarray, max_power: int, limit: float = _INT_LIMIT) -> tuple[float, bool]:
    """Smallest ``10**k`` (k <= ``max_power``) making ``values`` integral, and whether it is exact.

    When none is exact, returns the largest power of ten keeping ``sum(|values|) * scale``
    below ``limit`` (at most ``10**max_power``; at least ``1``) and ``False``.
    """
    vals = np.abs(np.asarray(values, dtype=np.float64))
    with np.errstate(over="ignore"):
        total = float(vals.sum()) or 1.0  # inf for values near 1e308: no exact scale then
    for k in range(max_power + 1):
        scale = 10.0**k
        if total * scale > limit:
            break
        scaled = vals * scale
        if vals.size and float(scaled.max()) > _EXACT_MAX:
            break  # ulps too coarse to tell a decimal from a rounded value (see below)
        # integral up to floating-point noise (a few ulps: 0.3 * 10 = 3.0000000000000004).
        # A looser relative test (1e-9) would call every value above 0.5 "integral" at 10**9
        # and round 6.666666666666666 up, so two such demands would not fit a capacity of
        # twice that, and CP-SAT would "prove" a wrong optimum. Below 2**40 the noise allowed
        # moves a value by at most 1e-3 of a unit, so a row's rounded sum cannot cross its
        # rounded capacity unless the true sum is within the format's tolerance of it.
        if np.all(np.abs(scaled - np.round(scaled)) <= _NOISE * np.maximum(1.0, scaled)):
            return scale, True
    k = max_power
    while k > 0 and total * 10.0**k > limit:
        k -= 1
    return 10.0**k, False


def integer_row(coefs: np.ndarray, cap: float, *, relax: bool = False) -> tuple[np.ndarray, int, bool]:
    """A capacity row ``coefs . x <= cap`` as CP-SAT integers: ``(int coefs, int cap, exact)``.

    Scaled exactly by a power of ten up to ``10**ROW_SCALE_POWER`` where one makes the row
    integral (:func:`integer_scale`). Otherwise the row is first lifted by a power of two
    (:func:`row_lift`, so tiny capacities keep their digits) and rounded *conservatively*
    (demands up, capacity limit down: every integer answer fits the true row), or with
    ``relax=True`` the other way (demands down, capacity limit up: every feasible allocation
    stays feasible, so the integer optimum bounds the true one).

    The row holds the capacity rule of :mod:`gensolver.model.tolerances`: on an exactly scaled
    row the integer capacity is ``cap * scale`` plus the whole units of the slack
    (``capacity_slack(cap) * scale``; one unit at ``10**9``, so nine-decimal demands that sum
    to ``cap + 1e-9`` fit here as in every other method), otherwise the rounding starts from
    ``capacity_limit(cap)``.
    """
    coefs = np.asarray(coefs, dtype=np.float64)
    cap = float(cap)
    scale, exact = integer_scale(np.append(coefs, cap), ROW_SCALE_POWER)
    if exact:
        extra = int(math.floor(capacity_slack(cap) * scale * (1.0 + 1e-12)))
        return np.round(coefs * scale).astype(np.int64), int(round(cap * scale)) + extra, True
    limit = capacity_limit(cap)
    lift = row_lift(coefs, limit)
    scale = integer_scale(np.append(coefs, limit) * lift, ROW_SCALE_POWER)[0] * lift
    if relax:
        icoef = np.maximum(np.floor(coefs * scale - _RELAX_GUARD), 0).astype(np.int64)
        icap = int(np.ceil(limit * scale + _RELAX_GUARD))
    else:
        icoef = np.ceil(coefs * scale - _ROUNDING_GUARD).astype(np.int64)
        icap = int(np.floor(limit * scale + _ROUNDING_GUARD))
    return icoef, icap, False


def value_downscale(values: np.ndarray) -> float:
    """A power of two (``<= 1``) that brings ``values`` into a range where any allocation's
    total stays finite: 1 for every realistic input; for values near ``1.8e308`` (whose sum
    overflows to ``inf``), the smallest power of two ``2**-k`` with ``sum(|values|) * 2**-k``
    finite and below ``2**1000``. Multiplying by a power of two changes no digit, so every
    comparison and ratio of scaled values is the original's."""
    vals = np.abs(np.asarray(values, dtype=np.float64))
    if not vals.size:
        return 1.0
    with np.errstate(over="ignore"):
        total = float(vals.sum())
    if math.isfinite(total) and total < 2.0**1000:
        return 1.0
    top = float(vals.max())
    if not math.isfinite(top):
        raise ValueError("values must be finite")
    # sum <= n * top; bring n * top below 2**1000
    k = math.ceil(math.log2(top) + math.log2(vals.size)) - 1000
    return 2.0 ** (-max(k, 0))


def certified_value_scale(values: np.ndarray, owners: np.ndarray) -> float:
    """Scale for rounding floating-point values to CP-SAT's integers.

    As fine as possible while any allocation's value (at most every owner's best bid) stays
    below ``2**53``, where doubles still count every integer, and the sum of all coefficients
    below ``2**61`` (CP-SAT's overflow checks). A whole allocation's rounding error (half a
    unit per winner) is then of the order of ``1e-15`` of its value, far inside the ``1e-9``
    relative gap to which the MIP backends prove optimality, so a CP-SAT optimum on the
    rounded values, with its bound widened by that error, is an optimality proof in the same
    sense. (Measured on GPU rounds and CATS: no slower than a scale of ``1e7 / max value``.)
    Values whose total overflows (``1e308``) are first brought down by
    :func:`value_downscale`, so the scale stays positive and finite.
    """
    a = np.abs(np.asarray(values, dtype=np.float64))
    down = value_downscale(a)
    a = a * down
    owners = np.asarray(owners, dtype=np.int64)
    best = np.zeros(int(owners.max()) + 1 if owners.size else 1)
    np.maximum.at(best, owners, a)
    top, total = float(best.sum()), float(a.sum())
    if top <= 0.0:
        return 1.0
    return min(2.0**53 / top, 2.0**61 / total) * down


def objective_scale(values: np.ndarray, owners: np.ndarray) -> tuple[float, bool, float]:
    """CP-SAT's objective scale for ``values``, whether it is exact, and the largest rounding
    error of one winner's value (in the values' units).

    Values that a power of ten up to ``10**VALUE_SCALE_POWER`` makes integral, up to
    floating-point noise (CATS prices with four decimals), keep that scale: exact, error 0 or
    the noise. Any other values are rounded at :func:`certified_value_scale`, with an error of
    half a unit. A bound on the rounded objective, divided by the scale, plus this error times
    the number of possible winners bounds the true objective.
    """
    vals = np.asarray(values, dtype=np.float64)
    scale, exact = integer_scale(vals, VALUE_SCALE_POWER, limit=2.0**53)
    if exact:
        resid = float(np.abs(vals * scale - np.round(vals * scale)).max()) if vals.size else 0.0
        if resid <= _VALUE_NOISE:  # floating-point noise of decimal prices, not a coarse rounding
            return scale, True, resid / scale
    scale = certified_value_scale(vals, owners)
    return scale, False, 0.5 / scale
