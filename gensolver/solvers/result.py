"""The result of a winner-determination solve: :class:`Allocation` and :class:`Status`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ..model import Instance
from ..model.io import json_safe
from .formulation.problem import MatrixProblem, violation
from .formulation.scales import CAPACITY_TOL, DEFAULT_MIP_GAP

#: how far a reported bound may lie below the welfare, or a claimed optimum's own bound above
#: it, and still be taken as round-off (relative, absolute below 1); far beyond the MIP gap
BOUND_ROUNDOFF = 1e-6

__all__ = ["Status", "Timing", "Allocation", "BackendAnswer", "relative_gap", "finish", "finish_answer",
           "feasibility_violation", "CAPACITY_TOL"]


class Status(str, Enum):
    """Outcome class of a solve. Values are lowercase strings (stable in JSON)."""

    OPTIMAL = "optimal"
    """The allocation is proven optimal: the backend proved it, or its welfare meets a proven
    upper bound (within 1e-9 relative). A solve stopped by a time limit is only ``OPTIMAL`` when
    the proof completed before the limit."""

    FEASIBLE = "feasible"
    """A feasible allocation without a proof of optimality; ``bound`` and ``gap`` say how far
    from optimal it can be when the method has a bound (``None`` otherwise)."""

    INFEASIBLE = "infeasible"
    """The backend declared the model infeasible. The empty allocation is always feasible for
    valid input, so this signals inconsistent input (or a backend fault)."""

    ERROR = "error"
    """The backend failed (crash, numerical trouble, an infeasible answer caught by the
    built-in check); ``message`` says why. ``winners`` is empty."""


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of a solve: model ``build``, backend ``solve``, and ``total``."""

    build: float
    solve: float
    total: float


@dataclass(frozen=True)
class Allocation:
    """Frozen result of :func:`gensolver.solve`.

    Always present
    --------------
    status : Status
    winners : tuple of str
        Winning bid ids, in instance order (empty for ``ERROR``).
    welfare : float
        Sum of the winners' values, recomputed from the instance.
    method : str
        The method's registry name (or the callable's name).
    seconds : Timing
    details : Mapping
        Backend details: raw status, node counts, parameters actually used, ...
    message : str

    May be ``None``
    ---------------
    bound : float or None
        A proven upper bound on the optimal welfare, where the method has one.
    gap : float or None
        ``(bound - welfare) / max(|bound|, |welfare|)``; ``None`` without a bound; ``0.0``
        when both are zero.
    """

    status: Status
    winners: tuple[str, ...]
    welfare: float
    method: str
    seconds: Timing
    bound: float | None = None
    gap: float | None = None
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    message: str = ""

    @property
    def optimal(self) -> bool:
        """``True`` when the allocation is proven optimal."""
        return self.status is Status.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``status`` as its string value)."""
        return {
            "status": self.status.value,
            "welfare": self.welfare,
            "bound": self.bound,
            "gap": self.gap,
            "winners": list(self.winners),
            "method": self.method,
            "seconds": {"build": self.seconds.build, "solve": self.seconds.solve, "total": self.seconds.total},
            "details": json_safe(dict(self.details), default=str),
            "message": self.message,
        }


@dataclass(frozen=True)
class BackendAnswer:
    """What a backend returns before any status is decided (:func:`finish_answer` decides it).

    Attributes
    ----------
    x : ndarray or None
        The backend's 0/1 vector over the columns; ``None``: no answer at all (then
        ``failure`` says why, or the empty allocation is meant when ``failure`` is ``None``).
    bound : float or None
        An upper bound on the optimum of the *original* problem that the backend proved (in its
        units; already divided by any scale), or ``None``.
    proven : bool
        Whether the backend proved ``x`` optimal for the original problem, to the MIP gap
        ``DEFAULT_MIP_GAP`` (a proof for a rounded or tolerance-loosened model is not one).
    backend_status : str
        The backend's own status name (``"OPTIMAL"``, ``"FEASIBLE"``, ...).
    failure : Status or None
        ``INFEASIBLE`` or ``ERROR`` when the backend gave no usable answer; else ``None``.
    details, message, build, solve
        As in :class:`Allocation` (seconds of model building and of the solve).
    """

    x: np.ndarray | None
    bound: float | None = None
    proven: bool = False
    backend_status: str = ""
    failure: Status | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""
    build: float = 0.0
    solve: float = 0.0




def relative_gap(welfare: float, bound: float | None) -> float | None:
    """``(bound - welfare) / max(|bound|, |welfare|)``, clipped at 0; ``None`` without bound."""
    if bound is None:
        return None
    denom = max(abs(bound), abs(welfare))
    if denom <= 1e-12:
        return 0.0
    return max(0.0, (bound - welfare) / denom)


def feasibility_violation(problem: Instance | MatrixProblem, x: np.ndarray) -> str | None:
    """The feasibility check (:func:`~gensolver.solvers.formulation.problem.violation`) of a
    0/1 vector; a description of the first violation (naming the slot and resource of an
    instance's row, or the bidder), ``None`` when feasible."""
    if x.size == 0:
        return None
    if isinstance(problem, MatrixProblem):
        found = problem.violation(x)
    else:
        found = violation(problem.capacity_matrix, problem.capacity, problem.bidder_of_bid, problem.n_bidders, x)
    if found is None:
        return None
    kind, k, used = found
    if isinstance(problem, MatrixProblem):
        if kind == "capacity":
            return f"row {k}: demand {used:.12g} > capacity {problem.cap[k]:.12g}"
        return f"owner {k} wins {int(used)} columns (XOR)"
    if kind == "capacity":
        slot, res = problem.row_labels[k]
        return f"slot {slot!r} resource {res!r}: demand {used:.12g} > capacity {problem.capacity[k]:.12g}"
    return f"bidder {problem.bidder_ids[k]!r} wins {int(used)} bids (XOR)"


def finish(
    instance: Instance | MatrixProblem,
    x: np.ndarray | None,
    *,
    method: str,
    proven_optimal: bool,
    bound: float | None,
    build: float,
    solve: float,
    details: Mapping[str, Any] | None = None,
    message: str = "",
    status: Status | None = None,
) -> Allocation:
    """Build an :class:`Allocation` the same way for every method.

    ``instance`` is the problem ``x`` answers: an :class:`~gensolver.model.Instance` (winners
    are its bid ids) or a :class:`~gensolver.solvers.formulation.problem.MatrixProblem` (winners
    are its ``column_id`` values, as for a compact round). ``x`` is a 0/1 vector over the bids or
    columns (``None``: no answer). Welfare is recomputed,
    feasibility is checked (an infeasible answer becomes ``ERROR``), the bound is lifted to at
    least the welfare only when it is within round-off, and the status is ``OPTIMAL`` only when
    ``proven_optimal`` or the welfare meets the bound; a ``proven_optimal`` claim whose own
    bound exceeds the welfare by more than ``1e-6`` of the bound (at least ``1e-6``) is not
    believed (``FEASIBLE``).
    """
    details = dict(details or {})
    total = build + solve
    if status in (Status.ERROR, Status.INFEASIBLE) or x is None:
        return Allocation(
            status or Status.ERROR, (), 0.0, method, Timing(build, solve, total), bound, None,
            MappingProxyType(details), message or "no solution",
        )
    x = (np.asarray(x, dtype=np.float64) > 0.5).astype(np.float64)
    problem = feasibility_violation(instance, x)
    if problem is not None:
        details["infeasible_answer"] = problem
        return Allocation(
            Status.ERROR, (), 0.0, method, Timing(build, solve, total), bound, None,
            MappingProxyType(details), f"backend returned an infeasible allocation: {problem}",
        )
    idx = np.flatnonzero(x)
    with np.errstate(over="ignore"):
        welfare = float(instance.values[idx].sum())
    if not math.isfinite(welfare):
        # values near the float maximum (1e308) whose sum overflows: no welfare can be reported
        return Allocation(
            Status.ERROR, (), 0.0, method, Timing(build, solve, total), None, None, MappingProxyType(details),
            "the winners' values add up beyond the largest float (about 1.8e308); scale the values down",
        )
    column_id = instance.column_id if isinstance(instance, MatrixProblem) else (lambda j: instance.bids[j].id)
    if bound is not None:
        bound = float(bound) + 0.0  # + 0.0: no "-0.0" bound (HiGHS negates a zero objective)
        if not math.isfinite(bound):
            bound = None
        elif bound < welfare:
            # A valid bound is never below a feasible welfare; allow only round-off.
            if welfare - bound > BOUND_ROUNDOFF * max(1.0, abs(welfare)):
                details["bound_below_welfare"] = bound
                bound = None
            else:
                bound = welfare
    gap = relative_gap(welfare, bound)
    if proven_optimal and bound is not None and bound - welfare > BOUND_ROUNDOFF * max(1.0, abs(bound)):
        # a claim of optimality that its own bound contradicts (far beyond the backends' 1e-9
        # gap) is not a proof: report the answer as feasible, with the bound
        details["optimality_claim_rejected"] = gap
        proven_optimal = False
        message = message or f"the backend reported optimal, but its bound leaves a gap of {gap:.3g}"
    if proven_optimal or (gap is not None and gap <= DEFAULT_MIP_GAP):
        st = Status.OPTIMAL
        if bound is None:
            bound = welfare
            gap = 0.0
    else:
        st = Status.FEASIBLE
    winners = tuple(column_id(int(j)) for j in idx)
    return Allocation(st, winners, welfare, method, Timing(build, solve, total), bound, gap, MappingProxyType(details), message)


def finish_answer(problem: Instance | MatrixProblem, answer: BackendAnswer, *, method: str) -> Allocation:
    """:func:`finish` for a backend's :class:`BackendAnswer`: the one place its status is decided.

    No answer (``x`` ``None``) without a ``failure`` is the empty allocation, which is always
    feasible (a backend stopped by its time limit before its first solution)."""
    x = answer.x
    if x is None and answer.failure is None:
        x = np.zeros(problem.n if isinstance(problem, MatrixProblem) else problem.n_bids)
    return finish(problem, x, method=method, proven_optimal=answer.proven, bound=answer.bound, build=answer.build,
                  solve=answer.solve, details=answer.details, message=answer.message, status=answer.failure)
