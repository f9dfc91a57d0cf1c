"""What a run reports: one :class:`UsageFeedback` per task in an :class:`ExecutionReport`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..model.io import atomic_write

#: task outcomes that count as success for the CLI's exit status
SUCCESS_OUTCOMES = frozenset({"completed", "expired", "exited"})
FEEDBACK_SCHEMA = "gensolver.feedback/v1"


@dataclass(frozen=True)
class UsageFeedback:
    """What a task really used: the record the market reads for the next round.

    Attributes
    ----------
    task : str
    outcome : str
        See the module docstring.
    exit_code : int or None
        Of the last process (negative: killed by that signal; ``None``: unknown or never run).
    peak_memory : int or None
        Largest per-device memory observed (bytes); ``None`` when never observed.
    granted_memory : int
        Largest per-device memory grant of the task (bytes).
    run_seconds : float
        Wall seconds its processes ran, excluding suspensions.
    attempts : int
        Processes launched (including relaunches after checkpoints or losses).
    over_grant : bool
        Whether it was ever seen over its grant.
    devices : tuple of str
        Backend UUIDs it ran on.
    """

    task: str
    outcome: str
    exit_code: int | None
    peak_memory: int | None
    granted_memory: int
    run_seconds: float
    attempts: int
    over_grant: bool
    devices: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"task": self.task, "outcome": self.outcome, "exit_code": self.exit_code,
                "peak_memory": self.peak_memory, "granted_memory": self.granted_memory,
                "run_seconds": self.run_seconds, "attempts": self.attempts,
                "over_grant": self.over_grant, "devices": list(self.devices)}


@dataclass(frozen=True)
class ExecutionReport:
    """Frozen result of :meth:`PlanRunner.run`.

    Attributes
    ----------
    plan : str
        The plan's name.
    digest : str
        The plan's digest.
    journal : str or None
    feedback : tuple of UsageFeedback
        One per task, in plan order.
    restarts : int
        How many times the journal was reopened by a restarted executor.
    seconds : float
        Wall seconds of this :meth:`PlanRunner.run` call.
    """

    plan: str
    digest: str
    journal: str | None
    feedback: tuple[UsageFeedback, ...]
    restarts: int
    seconds: float

    @property
    def ok(self) -> bool:
        """``True`` when every task's outcome is in :data:`SUCCESS_OUTCOMES`."""
        return all(f.outcome in SUCCESS_OUTCOMES for f in self.feedback)

    @property
    def outcomes(self) -> Mapping[str, str]:
        """Task id to outcome."""
        return MappingProxyType({f.task: f.outcome for f in self.feedback})

    def for_task(self, task: str) -> UsageFeedback:
        """The feedback record of ``task`` (``KeyError`` if absent)."""
        for f in self.feedback:
            if f.task == task:
                return f
        raise KeyError(task)

    def to_dict(self) -> dict[str, Any]:
        """The ``gensolver.feedback/v1`` document: plan, digest, restarts and task records."""
        return {"schema": FEEDBACK_SCHEMA, "plan": self.plan, "digest": self.digest, "restarts": self.restarts,
                "seconds": self.seconds, "tasks": [f.to_dict() for f in self.feedback]}

    def write_feedback(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON, atomically."""
        with atomic_write(path) as fh:
            json.dump(self.to_dict(), fh, indent=2)
            fh.write("\n")

