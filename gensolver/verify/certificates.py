"""Independent certificates for winner determination: feasibility and brute force.

These functions re-derive everything from the instance's plain objects (dicts of demands),
never from the sparse matrices the solvers use, so they can catch a bug in either.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import InputError, InputTypeError
from ..model import Instance
from ..model.tolerances import CAPACITY_ABS_TOL, CAPACITY_REL_TOL, WELFARE_REL_TOL

__all__ = ["Certificate", "check_allocation", "check_tolerance", "brute_force", "BRUTE_FORCE_LIMIT"]

#: absolute part of the capacity tolerance (:data:`gensolver.model.tolerances.CAPACITY_ABS_TOL`)
TOL = CAPACITY_ABS_TOL
BRUTE_FORCE_LIMIT = 2_000_000


@dataclass(frozen=True)
class Certificate:
    """Result of :func:`check_allocation`.

    Attributes
    ----------
    feasible : bool
        No capacity exceeded (beyond ``tol``), no bidder winning twice, every id known.
    welfare : float
        Sum of the winners' values, recomputed.
    violations : tuple of str
        One human-readable line per violation (empty when feasible).
    """

    feasible: bool
    welfare: float
    violations: tuple[str, ...]

    def __bool__(self) -> bool:
        return self.feasible


def check_tolerance(tol: Any, name: str = "tol") -> float:
    """``tol`` as a float, or ``ValueError``: it must be a finite number ``>= 0`` (a NaN would
    make every comparison pass, a negative one fail allocations that fit exactly)."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {tol!r}")
    return float(tol)


def check_allocation(instance: Instance, winners: Iterable[str], *, welfare: float | None = None,
                     tol: float = TOL) -> Certificate:
    """Check an allocation against the instance, independently of any solver.

    Parameters
    ----------
    instance : Instance
    winners : iterable of str
        Winning bid ids.
    welfare : float, optional
        A claimed welfare; a mismatch beyond ``1e-9`` relative is a violation.
    tol : float
        Absolute part of the capacity tolerance (the format's ``1e-9``). A row holds when the
        exact sum (:func:`math.fsum`) of its demands is at most ``cap + tol + 1e-12 * |cap|``:
        with the default, the capacity rule of :mod:`gensolver.model.tolerances`, which every
        method applies (re-implemented here from the plain objects, never the matrices).

    Returns
    -------
    Certificate
    """
    if not isinstance(instance, Instance):
        raise InputTypeError(f"instance must be an Instance, got {type(instance).__name__}")
    if hasattr(winners, "winners") and not isinstance(winners, (str, bytes)):
        winners = winners.winners  # an Allocation (or an Outcome's allocation) passed whole
    if isinstance(winners, (str, bytes)) or not isinstance(winners, Iterable):
        raise InputTypeError(f"winners must be an iterable of bid ids or an Allocation, got {type(winners).__name__}")
    check_tolerance(tol)
    by_id = {b.id: b for b in instance.bids}
    caps = {s.id: dict(s.capacity) for s in instance.slots}
    used: dict[tuple[str, str], list[float]] = {}
    violations: list[str] = []
    owner: dict[str, str] = {}
    total = 0.0
    seen: set[str] = set()
    for w in winners:
        if w in seen:
            violations.append(f"bid {w!r} listed twice")
            continue
        seen.add(w)
        bid = by_id.get(w)
        if bid is None:
            violations.append(f"unknown bid {w!r}")
            continue
        if bid.bidder in owner:
            violations.append(f"bidder {bid.bidder!r} wins both {owner[bid.bidder]!r} and {w!r} (XOR)")
        owner[bid.bidder] = w
        total += bid.value
        for s, res in bid.demand.items():
            for r, q in res.items():
                used.setdefault((s, r), []).append(float(q))
    for (s, r), qs in used.items():
        cap = caps.get(s, {}).get(r)
        q = math.fsum(qs)
        if cap is None:
            violations.append(f"slot {s!r} has no resource {r!r}")
        elif q > cap + (tol + CAPACITY_REL_TOL * abs(cap)):
            violations.append(f"slot {s!r} resource {r!r}: demand {q:.12g} exceeds capacity {cap:.12g}")
    if welfare is not None and not math.isclose(welfare, total, rel_tol=WELFARE_REL_TOL, abs_tol=WELFARE_REL_TOL):
        violations.append(f"claimed welfare {welfare!r} != recomputed {total!r}")
    return Certificate(not violations, total, tuple(violations))


def brute_force(instance: Instance, *, limit: int = BRUTE_FORCE_LIMIT) -> tuple[float, tuple[str, ...]]:
    """Optimal welfare and winners by enumerating every bidder's choice (none or one bid).

    Exponential: refuses instances with more than ``limit`` combinations.
    """
    groups = [list(bids) for bids in instance.bids_of_bidder.values()]
    combos = 1
    for g in groups:
        combos *= len(g) + 1
        if combos > limit:
            raise InputError(f"instance: brute force would enumerate more than {limit} combinations")
    best_val = 0.0
    best: tuple[str, ...] = ()
    for choice in itertools.product(*[[None, *g] for g in groups]):
        winners = tuple(c for c in choice if c is not None)
        cert = check_allocation(instance, winners)
        if cert.feasible and cert.welfare > best_val + 1e-12:
            best_val, best = cert.welfare, winners
    return best_val, best
