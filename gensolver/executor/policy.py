"""The executor's policy (:class:`ExecutorPolicy`, documented in :mod:`gensolver.executor.runner`) and its error."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError

OVER_GRANT_POLICIES = ("warn", "suspend", "terminate")
#: default cap of one task log file (bytes)
DEFAULT_LOG_MAX_BYTES = 64 * 2 ** 20


class ExecutorError(InputError):
    """The plan cannot be executed with this backend (unknown device, task without command, ...)."""


@dataclass(frozen=True)
class ExecutorPolicy:
    """How the executor treats grants, preemption and lost processes (see the module docstring).

    Attributes
    ----------
    over_grant : {"warn", "suspend", "terminate"}
    over_grant_tolerance : int
        Bytes a process may use beyond its grant before it is over.
    grace : float
        Wall seconds between SIGTERM and SIGKILL.
    preempt : {"plan", "checkpoint"}
        Follow each point's mode, or always checkpoint (SIGTERM and relaunch).
    lost : {"restart", "skip"}
        What a restarted executor does with a run whose process vanished.
    include_descendants : bool
        Count the memory of the launched process's descendants too.
    """

    over_grant: str = "warn"
    over_grant_tolerance: int = 0
    grace: float = 10.0
    preempt: str = "plan"
    lost: str = "restart"
    include_descendants: bool = True

    def __post_init__(self) -> None:
        if self.over_grant not in OVER_GRANT_POLICIES:
            raise ExecutorError(f"over_grant must be one of {OVER_GRANT_POLICIES}, got {self.over_grant!r}")
        if self.preempt not in ("plan", "checkpoint"):
            raise ExecutorError(f"preempt must be 'plan' or 'checkpoint', got {self.preempt!r}")
        if self.lost not in ("restart", "skip"):
            raise ExecutorError(f"lost must be 'restart' or 'skip', got {self.lost!r}")
        if not (isinstance(self.grace, (int, float)) and math.isfinite(self.grace) and self.grace >= 0):
            raise ExecutorError(f"grace must be a non-negative number of seconds, got {self.grace!r}")
        if isinstance(self.over_grant_tolerance, bool) or not isinstance(self.over_grant_tolerance, int) or self.over_grant_tolerance < 0:
            raise ExecutorError(f"over_grant_tolerance must be a non-negative integer (bytes), got {self.over_grant_tolerance!r}")

