"""The state the anytime stages share: the incumbent, the proven bound, the clock and the log."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formulation.problem import MatrixProblem
from ..formulation.scales import DEFAULT_MIP_GAP
from .budget import WorkClock

#: the stages are logged as the anytime engine's (``gensolver.solvers.anytime``)
logger = logging.getLogger(__name__.rpartition(".")[0])

__all__ = ["SearchState", "AnytimeResult", "proven_by_bound"]


def proven_by_bound(welfare: float, bound: float) -> bool:
    """Whether ``welfare`` meets ``bound`` within the MIP gap ``1e-9`` (relative; absolute
    below 1)."""
    return welfare >= bound - DEFAULT_MIP_GAP * max(1.0, bound)


@dataclass(frozen=True)
class AnytimeResult:
    """Best allocation (0/1 over columns), its welfare, a proven bound, and a log of stages.

    For callers that reuse the run (VCG pivots): ``lp`` is the LP state of the run (``None``
    when no LP was solved), ``found`` the incumbents it accepted (the last few, best last) and
    ``work`` the work units charged (deterministic mode; ``0.0`` otherwise).
    """

    x: np.ndarray
    welfare: float
    bound: float
    proven: bool
    stages: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    lp: Any = None
    found: tuple[np.ndarray, ...] = ()
    work: float = 0.0
    #: ``(seconds since the start, welfare)`` at every incumbent improvement
    trace: tuple[tuple[float, float], ...] = field(default_factory=tuple)

    @property
    def lp_cols(self) -> np.ndarray | None:
        """The columns of the last LP master (``None`` when no LP was solved): a warm start's seed."""
        return None if self.lp is None else self.lp.cols


@dataclass
class SearchState:
    """Incumbent ``x`` (welfare ``W``) and proven bound ``B`` of one anytime run.

    Each stage reads and improves them: :meth:`offer` replaces the incumbent by a better
    feasible answer, :meth:`tighten` lowers the bound; ``proven`` says the two have met (or a
    stage proved the incumbent optimal) and ``settled`` that no further search can gain.
    """

    P: MatrixProblem
    clock: WorkClock
    x: np.ndarray
    W: float = 0.0
    B: float = np.inf
    proven: bool = False
    settled: bool = False
    log: list[dict[str, Any]] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)
    lp: Any = None  # the LP state, once solved (kept for callers that reuse the run)
    found: list[np.ndarray] = field(default_factory=list)  # accepted incumbents, the last 16
    trace: list[tuple[float, float]] = field(default_factory=list)  # (seconds, welfare) per improvement

    def note(self, stage: str, **kw: Any) -> None:
        """Log a stage (with the wall time, and the work charged in deterministic mode)."""
        entry = {"stage": stage, "t": round(time.perf_counter() - self.t0, 4), **kw}
        if self.clock.det:
            entry["work"] = round(self.clock.now(), 4)
        self.log.append(entry)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("auto: %s", " ".join(f"{k}={v}" for k, v in entry.items()))

    def offer(self, x: np.ndarray, *, margin: float = 0.0, check: bool = True) -> bool:
        """Take ``x`` as the incumbent when it is worth more than ``W + margin`` (and, with
        ``check``, passes the feasibility check); returns whether it was taken."""
        with np.errstate(over="ignore"):  # values near 1e308: finish reports the overflow
            w = float(self.P.values @ x)
        if w > self.W + margin and (not check or self.P.feasible(x)):
            self.x, self.W = x, w
            self.found.append(x)
            del self.found[:-16]
            self.trace.append((time.perf_counter() - self.t0, w))
            return True
        return False

    def tighten(self, bound: float) -> None:
        """Lower the proven bound to ``bound`` if that is tighter."""
        self.B = min(self.B, bound)

    def meets_bound(self) -> bool:
        return proven_by_bound(self.W, self.B)

    def result(self) -> AnytimeResult:
        return AnytimeResult(self.x, self.W, self.B, bool(self.proven), tuple(self.log), self.lp,
                             tuple(self.found), self.clock.used, tuple(self.trace))
