"""The budget of one anytime run: wall-clock seconds, or work units charged by every stage.

In deterministic mode every stage charges calibrated work units (CP-SAT's deterministic time
for the MIPs, estimates per non-zero for the greedy, pricing and interior-point iterations),
so every decision taken on the budget is the same on every run, however loaded the machine.
"""

from __future__ import annotations

import time

__all__ = ["WorkClock", "cpsat_work_factor", "WORK_PER_NNZ_GREEDY", "WORK_PER_NNZ_PRICING", "WORK_PER_NNZ_IPM"]

# Work units of deterministic mode, calibrated on a 2-core reference machine so that one unit is
# about one second there (CP-SAT's own "deterministic time" is on the same footing)
WORK_PER_NNZ_GREEDY = 1e-7  # one first-fit ordering, per non-zero of A
WORK_PER_NNZ_PRICING = 3e-8  # one pricing round, per non-zero of A
WORK_PER_NNZ_IPM = 1.5e-7  # one interior-point iteration, per non-zero of the master
WORK_PER_CPSAT_DET = 2.5  # per unit of CP-SAT deterministic time of one worker (model building included)
WORK_PER_CPSAT_DET_INTERLEAVED = 1.25  # the same per worker when several interleave their search


def cpsat_work_factor(workers: int) -> float:
    """Work units per unit of CP-SAT deterministic time (which adds up over the workers)."""
    return WORK_PER_CPSAT_DET if workers <= 1 else WORK_PER_CPSAT_DET_INTERLEAVED / workers


class WorkClock:
    """The budget of one anytime run: wall-clock seconds, or charged work units.

    In wall mode ``now()`` is the time since the start. In deterministic mode it is the work
    charged so far: CP-SAT's deterministic time for its solves and calibrated estimates
    (``WORK_PER_*``) for the engine's own stages, so every decision taken on the clock is the
    same on every run, however loaded the machine.
    """

    def __init__(self, limit: float | None, deterministic: bool = False) -> None:
        self.limit, self.det = limit, bool(deterministic)
        self.t0 = time.perf_counter()
        self.used = 0.0

    def now(self) -> float:
        return self.used if self.det else time.perf_counter() - self.t0

    def left(self, until: float | None = None) -> float | None:
        """What is left before ``until`` (default: the end of the budget); ``None``: no limit."""
        end = self.limit if until is None else until
        return None if end is None else end - self.now()

    def charge(self, units: float) -> None:
        if self.det:
            self.used += max(0.0, float(units))
