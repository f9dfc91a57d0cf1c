"""The runner's state of each task and of its running process (rebuilt from the journal)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .backends import GpuBackend
from .journal import Journal
from .plan import ExecutionPlan, PreemptionPoint, Run
from .policy import ExecutorPolicy


@dataclass
class _Proc:
    pid: int
    pid_start: int | None
    attempt: int
    run_id: str
    run: int
    devices: tuple[str, ...]            # plan device names
    grants: dict[str, int]              # plan device -> bytes
    t_started: float
    state: str = "running"              # running | suspended | stopped | terminating
    term_reason: str = ""
    term_deadline: float = 0.0
    killed: bool = False
    susp_since: float = 0.0
    susp_seconds: float = 0.0
    peak: int | None = None
    warned: bool = False
    last_usage: dict[str, int] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None


@dataclass
class _Task:
    id: str
    runs: tuple[Run, ...]
    points: tuple[PreemptionPoint, ...]
    idx: int = 0
    proc: _Proc | None = None
    attempts: int = 0
    pending: tuple[str, int, int] | None = None   # run_id, run, attempt of a 'launching'
    waiting: set[int] = field(default_factory=set)
    peak: int | None = None
    seconds: float = 0.0
    exit_code: int | None = None
    last_outcome: str = ""
    over_grant: bool = False
    lost: int = 0
    outcome: str | None = None
    devices: set[str] = field(default_factory=set)

    def point_after(self, run: int) -> PreemptionPoint | None:
        if run + 1 >= len(self.runs):
            return None
        end = self.runs[run].end
        for p in self.points:
            if abs(p.time - end) <= 1e-6:
                return p
        nxt = self.runs[run + 1]
        kind = "gap" if nxt.devices == self.runs[run].devices else "move"
        return PreemptionPoint(self.id, end, nxt.start, self.runs[run].devices, nxt.devices, kind, "checkpoint")


class _RunnerBase:
    """What the parts of :class:`~gensolver.executor.runner.PlanRunner` share (declarations only)."""

    plan: ExecutionPlan
    backend: GpuBackend
    policy: ExecutorPolicy
    uuids: dict[str, str]
    log_dir: Path | None
    log_max_bytes: int
    extra_env: dict[str, str]
    _tasks: dict[str, _Task]
    _journal: Journal | None
    _usage_cache: dict[str, Mapping[int, int | None]]

    if TYPE_CHECKING:
        def _emit(self, event: str, **fields: Any) -> dict[str, Any]: ...

        def _finish(self, ts: _Task, outcome: str) -> None: ...

        def wall_time(self, plan_time: float) -> float: ...
