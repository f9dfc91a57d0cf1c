"""The executor: runs an :class:`~gensolver.executor.ExecutionPlan` as real processes.

:class:`PlanRunner` launches every run of every task (see :meth:`ExecutionPlan.runs`) as a
subprocess (an argv list, never a shell string) at the run's start, in a session and process
group of its own, with its grant in the environment (``CUDA_VISIBLE_DEVICES``,
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``,
``GENSOLVER_MEMORY_LIMIT``; see :mod:`gensolver.executor.child`). It then polls, every
``poll_interval`` seconds, until every task is finished.

Time
----
Plan time ``p`` (seconds from the round's start) happens at wall-clock time
``t0 + p * time_scale``; ``time_scale = 0.01`` runs a 10-minute plan in 6 seconds. ``t0`` is
written in the journal, so a restarted executor keeps the same clock. Grace periods and poll
intervals are wall-clock seconds, not scaled.

Policies (documented behaviour)
-------------------------------
**Memory before a start.** A run starts only when, on each of its devices, the backend's free
memory minus what the executor's own running processes have been granted but not yet used is at
least the run's grant. Otherwise the run *waits* (journal ``waiting``) and is re-checked every
poll; if its window closes first it is *skipped*. A process is never started into an OOM.

**Over a grant** (``over_grant``; usage sampled from the backend every poll, counting the
launched process and its descendants; over means ``used > grant + over_grant_tolerance``):

- ``warn`` (default): record ``over_grant`` once per launch and issue a ``RuntimeWarning``;
- ``suspend``: SIGSTOP the process group; it stays stopped (keeping its memory, using no
  compute) until its run ends, then it is terminated as below; outcome ``killed``;
- ``terminate``: SIGTERM the process group, SIGKILL after ``grace`` seconds; outcome ``killed``.

**Preemption** at a plan :class:`~gensolver.executor.PreemptionPoint`: mode ``suspend`` sends
SIGSTOP at the point's ``time`` and SIGCONT at ``resume``; mode ``checkpoint`` (or policy
``preempt="checkpoint"``) sends SIGTERM (the job should checkpoint), SIGKILL after ``grace``
seconds, and launches the command again at ``resume`` with ``GENSOLVER_RESUME=1``.

**End of a grant.** A process still running when its last run ends is terminated (SIGTERM,
then SIGKILL after ``grace``); outcome ``expired``.

**The whole task.** Every signal (SIGTERM, SIGKILL, SIGSTOP, SIGCONT) goes to the process
group and to every other process of the task: descendants that left the group or session
(``setsid``) and orphans still carrying its ``GENSOLVER_RUN_ID``; when a terminated process
exits, what is left of its task is killed.

**Exits.** Exit status 0: ``completed`` (later runs of the task are dropped). Any other status
or a signal not sent by the executor: ``crashed`` (not retried). A command that cannot be
spawned is ``crashed`` with exit code 127.

**Restart from the journal.** Reopening a journal replays it. For a run ``started`` without
``exited``, the process is *adopted* when ``/proc/<pid>/stat`` still shows the recorded start
time; otherwise it is *lost*: if its window is still open and ``lost="restart"`` (default) it
is launched again (next attempt, ``GENSOLVER_RESUME=1``), else skipped (outcome ``lost``). A
``launching`` record without ``started`` (a crash between the two) is matched to a live
process by its ``GENSOLVER_RUN_ID`` environment entry and adopted, else it is *lost* by the
same rule (journal ``lost`` with ``pid`` null; launched again, or skipped with reason
``lost: the executor died while launching it``). An
adopted process is not the executor's child, so its exit status is unknown: outcome ``exited``
with exit code ``None``. Processes survive the executor's death (own sessions); a stopped
executor never kills them, a restarted one takes them back.

Task outcomes: ``completed``, ``crashed``, ``killed``, ``expired``, ``exited``, ``not_started``
(its windows closed while waiting for memory), ``incomplete`` (preempted, then its next window
closed while waiting), ``lost``.

References
----------
.. [MPS] NVIDIA Multi-Process Service documentation, https://docs.nvidia.com/deploy/mps/
.. [NVML] NVML API Reference, https://docs.nvidia.com/deploy/nvml-api/
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from ..errors import InputError
from ..model.io import atomic_write
from .backends import GpuBackend
from .journal import Journal, JournalError
from .plan import ExecutionPlan, PreemptionPoint, Run
from .procs import (
    descendants,
    find_all_by_env,
    find_by_env,
    is_same_process,
    proc_start_time,
    proc_stat,
    safe_file_name,
)

logger = logging.getLogger(__name__)
#: journal fields shown in the log lines of the executor
_LOGGED = ("task", "run", "attempt", "outcome", "exit_code", "mode", "pid")

__all__ = [
    "ExecutorPolicy",
    "PlanRunner",
    "ExecutionReport",
    "UsageFeedback",
    "ExecutorError",
    "OVER_GRANT_POLICIES",
    "SUCCESS_OUTCOMES",
    "FEEDBACK_SCHEMA",
    "resolve_devices",
]

OVER_GRANT_POLICIES = ("warn", "suspend", "terminate")
_DEPRECATED_EXECUTOR = ("gensolver.executor.Executor is deprecated; use gensolver.executor.PlanRunner (the old name "
                        "clashed with the executor= arguments, which take a concurrent.futures.Executor)")
#: default cap of one task log file (bytes)
DEFAULT_LOG_MAX_BYTES = 64 * 2 ** 20
#: task outcomes that count as success for the CLI's exit status
SUCCESS_OUTCOMES = frozenset({"completed", "expired", "exited"})
FEEDBACK_SCHEMA = "gensolver.feedback/v1"
_EPS = 1e-9


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
            raise ValueError(f"over_grant must be one of {OVER_GRANT_POLICIES}, got {self.over_grant!r}")
        if self.preempt not in ("plan", "checkpoint"):
            raise ValueError(f"preempt must be 'plan' or 'checkpoint', got {self.preempt!r}")
        if self.lost not in ("restart", "skip"):
            raise ValueError(f"lost must be 'restart' or 'skip', got {self.lost!r}")
        if not (isinstance(self.grace, (int, float)) and math.isfinite(self.grace) and self.grace >= 0):
            raise ValueError(f"grace must be a non-negative number of seconds, got {self.grace!r}")
        if isinstance(self.over_grant_tolerance, bool) or not isinstance(self.over_grant_tolerance, int) or self.over_grant_tolerance < 0:
            raise ValueError(f"over_grant_tolerance must be a non-negative integer (bytes), got {self.over_grant_tolerance!r}")


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


# ---------------------------------------------------------------------- device names
_INDEXED = re.compile(r"^(?:cuda:|gpu|GPU|sim|SIM-GPU-)?(\d+)$")


def resolve_devices(names: Sequence[str], backend: GpuBackend, device_map: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map plan device names to backend UUIDs.

    Rules, in order: ``device_map[name]`` (a UUID or an index); a backend UUID equal to the name;
    a decimal index (``"0"``); an indexed name ``gpu<N>``, ``cuda:<N>`` or ``SIM-GPU-<N>``.

    Raises
    ------
    ExecutorError
        A name matches no device (the message lists the backend's devices).
    """
    devs = backend.devices()
    by_uuid = {d.uuid: d for d in devs}
    out = {}
    for name in names:
        key = (device_map or {}).get(name, name)
        if key in by_uuid:
            out[name] = key
            continue
        m = _INDEXED.match(key)
        if m and int(m.group(1)) < len(devs):
            out[name] = devs[int(m.group(1))].uuid
            continue
        listing = ", ".join(f"{d.index}={d.uuid}" for d in devs) or "none"
        raise ExecutorError(f"plan device {name!r} matches no {backend.name} device (devices: {listing}); "
                            f"use a UUID, an index, or a device map")
    return out


# ---------------------------------------------------------------------- state
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


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_tree(pid: int, run_id: str, sig: int) -> None:
    """Send ``sig`` to a task's process group and to every other process of it: descendants
    that left the group or session (``setsid``), and orphans still tagged with its run id."""
    _killpg(pid, sig)
    try:
        group = os.getpgid(pid)
    except OSError:
        group = pid
    for other in (descendants(pid) | find_all_by_env("GENSOLVER_RUN_ID", run_id)) - {pid}:
        try:
            if os.getpgid(other) == group:
                continue  # already signalled with the group
            os.kill(other, sig)
        except OSError:
            pass


def _is_descendant(pid: int, ancestor: int) -> bool:
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        f = proc_stat(pid)
        if f is None:
            return False
        pid = int(f[3])
        seen += 1
    return pid == ancestor


class PlanRunner:
    """Run a plan as real processes, with a journal that survives crashes.

    (Named ``Executor`` before 0.2; that name clashed with the ``executor=`` argument, a
    :class:`concurrent.futures.Executor`, everywhere else. The old name still works and warns.)

    Parameters
    ----------
    plan : ExecutionPlan
    backend : GpuBackend, keyword-only
        :class:`~gensolver.executor.NvmlBackend` or :class:`~gensolver.executor.SimulatedBackend`.
    journal : path, keyword-only, optional
        The append-only journal (JSON lines). Reopening an existing journal resumes the plan it
        was written for (see the module docstring). ``None``: in memory only, no resume.
    policy : ExecutorPolicy, keyword-only, optional
    time_scale : float, keyword-only
        Wall seconds per plan second (see "Time"); a resumed journal keeps its own.
    poll_interval : float, keyword-only
        Wall seconds between polls (default 0.05).
    device_map : mapping, keyword-only, optional
        Plan device name to backend UUID or index (see :func:`resolve_devices`).
    log_dir : path, keyword-only, optional
        Each process's stdout and stderr go to ``<log_dir>/<task>.<run>.<attempt>.log`` (the task
        id encoded by :func:`~gensolver.executor.procs.safe_file_name`, so ``a b`` and ``a_b``
        get two files); default: the executor's standard error (its standard output is left to
        its own report, e.g. ``gensolver run --json``).
    log_max_bytes : int, keyword-only
        Cap of one log file (default 64 MiB): checked every poll, a longer log is cut back to its
        first ``log_max_bytes`` bytes and a line ``[gensolver: log cut at N bytes]`` (it may
        exceed the cap by what the process writes within one poll; a log written while no
        executor runs is cut when one adopts the process).
    env : mapping, keyword-only, optional
        Extra environment for every process.
    on_event : callable, keyword-only, optional
        Called with each journal record after it is written.

    Raises
    ------
    ExecutorError
        A task has no command, or a device cannot be resolved.
    JournalError
        The journal is locked by another executor or belongs to another plan.
    """

    def __init__(self, plan: ExecutionPlan, *, backend: GpuBackend, journal: str | os.PathLike[str] | None = None,
                 policy: ExecutorPolicy | None = None, time_scale: float = 1.0, poll_interval: float = 0.05,
                 device_map: Mapping[str, str] | None = None, log_dir: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, on_event: Callable[[Mapping[str, Any]], None] | None = None,
                 log_max_bytes: int = DEFAULT_LOG_MAX_BYTES) -> None:
        if isinstance(log_max_bytes, bool) or not isinstance(log_max_bytes, int) or log_max_bytes < 1:
            raise ValueError(f"log_max_bytes must be a positive integer (bytes), got {log_max_bytes!r}")
        self.log_max_bytes = log_max_bytes
        if not (isinstance(time_scale, (int, float)) and math.isfinite(time_scale) and time_scale > 0):
            raise ValueError(f"time_scale must be a positive number, got {time_scale!r}")
        if not (isinstance(poll_interval, (int, float)) and math.isfinite(poll_interval) and poll_interval > 0):
            raise ValueError(f"poll_interval must be a positive number of seconds, got {poll_interval!r}")
        self.plan = plan
        self.backend = backend
        self.policy = policy or ExecutorPolicy()
        self.poll_interval = float(poll_interval)
        self.log_dir = None if log_dir is None else Path(log_dir)
        self.extra_env = dict(env or {})
        self.on_event = on_event
        missing = [t.id for t in plan.tasks if plan.entries_of(t.id) and not t.command
                   and not any(e.command for e in plan.entries_of(t.id))]
        if missing:
            raise ExecutorError(f"tasks without a command cannot be executed: {', '.join(missing)}")
        used = sorted({e.device for e in plan.entries})
        self.uuids = resolve_devices(used, backend, device_map)
        self._tasks: dict[str, _Task] = {}
        for t in plan.tasks:
            runs = plan.runs(t.id)
            if not t.command:
                cmd = next(e.command for e in plan.entries_of(t.id) if e.command)
                runs = tuple(Run(r.task, r.index, r.start, r.end, r.devices, r.grants, cmd) for r in runs)
            if runs:
                self._tasks[t.id] = _Task(t.id, runs, plan.preemptions_of(t.id))
        self._requested_scale = float(time_scale)
        self.time_scale = float(time_scale)
        self.t0 = 0.0
        self.restarts = 0
        self._journal_path = journal
        self._journal: Journal | None = None
        self._usage_cache: dict[str, Mapping[int, int | None]] = {}

    # ------------------------------------------------------------------ journal
    def _emit(self, event: str, **fields: Any) -> dict[str, Any]:
        assert self._journal is not None
        rec = self._journal.append(event, **fields)
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s %s", event, " ".join(f"{k}={v}" for k, v in fields.items() if k in _LOGGED))
        self._apply(rec)
        if self.on_event is not None:
            self.on_event(rec)
        return rec

    def _apply(self, rec: Mapping[str, Any]) -> None:
        """The one place where state changes: live events and journal replay both go here."""
        ev = rec["event"]
        if ev == "plan":
            self.t0 = float(rec["t0"])
            self.time_scale = float(rec["time_scale"])
            return
        if ev == "restart":
            self.restarts += 1
            return
        if ev == "finished":
            return
        ts = self._tasks.get(rec.get("task", ""))
        if ts is None:
            return
        pr = ts.proc
        if ev == "waiting":
            ts.waiting.add(int(rec["run"]))
        elif ev == "launching":
            ts.attempts = max(ts.attempts, int(rec["attempt"]))
            ts.pending = (rec["run_id"], int(rec["run"]), int(rec["attempt"]))
        elif ev == "started":
            run = ts.runs[int(rec["run"])]
            ts.idx = run.index
            ts.pending = None
            ts.attempts = max(ts.attempts, int(rec["attempt"]))
            ts.devices.update(rec.get("devices", []))
            ts.proc = _Proc(int(rec["pid"]), rec.get("pid_start"), int(rec["attempt"]), rec["run_id"], run.index,
                            run.devices, {d: g[0] for d, g in run.grants.items()}, float(rec["time"]))
        elif ev == "usage" and pr is not None:
            pr.peak = max(pr.peak or 0, int(rec["peak"]))
            ts.peak = max(ts.peak or 0, int(rec["peak"]))
        elif ev == "over_grant":
            ts.over_grant = True
            if pr is not None:
                pr.warned = True
        elif ev == "suspended" and pr is not None:
            pr.state = "suspended" if rec["reason"] == "preemption" else "stopped"
            pr.susp_since = float(rec["time"])
            if rec["reason"] == "preemption":
                ts.idx = int(rec["next_run"])
        elif ev == "resumed" and pr is not None:
            pr.state = "running"
            pr.susp_seconds += float(rec["time"]) - pr.susp_since
        elif ev == "signalled" and pr is not None:
            if rec["signal"] == "SIGTERM":
                if pr.state in ("suspended", "stopped"):
                    pr.susp_seconds += float(rec["time"]) - pr.susp_since
                pr.state = "terminating"
                pr.term_reason = rec["reason"]
                pr.term_deadline = float(rec["time"]) + self.policy.grace
            elif rec["signal"] == "SIGKILL":
                pr.killed = True
        elif ev == "exited":
            ts.seconds += float(rec.get("run_seconds") or 0.0)
            if rec.get("peak") is not None:
                ts.peak = max(ts.peak or 0, int(rec["peak"]))
            ts.exit_code = rec.get("exit_code")
            ts.last_outcome = rec["outcome"]
            ts.proc = None
            ts.pending = None
            if rec["outcome"] == "preempted":
                ts.idx = int(rec["run"]) + 1
        elif ev == "lost":
            ts.proc = None
            ts.lost += 1
            ts.last_outcome = "lost"
        elif ev == "skipped":
            ts.idx = int(rec["run"]) + 1
            ts.pending = None
        elif ev == "task_finished":
            ts.outcome = rec["outcome"]
            ts.exit_code = rec.get("exit_code", ts.exit_code)

    def _open(self) -> None:
        self._journal = Journal(self._journal_path)
        old = list(self._journal.records)
        if old:
            first = old[0]
            if first.get("event") != "plan" or first.get("digest") != self.plan.digest:
                self._journal.close()
                raise JournalError(f"{self._journal_path} was written for another plan "
                                   f"(digest {first.get('digest')!r}, this plan {self.plan.digest!r})")
            for rec in old:
                self._apply(rec)
            if self._requested_scale != self.time_scale:
                warnings.warn(f"the journal's time_scale {self.time_scale} is kept (asked for {self._requested_scale})",
                              RuntimeWarning, stacklevel=3)
            self._emit("restart", pid=os.getpid())
            self._recover()
        else:
            self._emit("plan", plan=self.plan.name, digest=self.plan.digest, t0=time.time(),
                       time_scale=self._requested_scale, pid=os.getpid())

    def _recover(self) -> None:
        """Adopt or mark lost the processes the journal says are running (documented rule)."""
        now_p = self._plan_time()
        for ts in self._tasks.values():
            if ts.outcome is not None:
                continue
            if ts.proc is None and ts.pending is not None:
                run_id, run, attempt = ts.pending
                pid = find_by_env("GENSOLVER_RUN_ID", run_id)
                r = ts.runs[run]
                if pid is not None:
                    self._emit("started", task=ts.id, run=run, attempt=attempt, run_id=run_id, pid=pid,
                               pid_start=proc_start_time(pid), devices=[self.uuids[d] for d in r.devices],
                               grants={d: g[0] for d, g in r.grants.items()}, argv=list(r.command), recovered=True)
                else:  # the executor died while launching it: a lost run, by the same rule as below
                    ts.pending = None
                    action = "restart" if self.policy.lost == "restart" and now_p < r.end - _EPS else "skip"
                    self._emit("lost", task=ts.id, run=run, attempt=attempt, pid=None, action=action)
                    if action == "skip":
                        self._emit("skipped", task=ts.id, run=run, reason="lost: the executor died while launching it")
                        if ts.idx >= len(ts.runs):
                            self._finish(ts, "lost")
                        continue
            pr = ts.proc
            if pr is None:
                continue
            if is_same_process(pr.pid, pr.pid_start):
                self._emit("adopted", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, state=pr.state)
                continue
            current = ts.runs[ts.idx]
            action = "restart" if self.policy.lost == "restart" and now_p < current.end - _EPS else "skip"
            self._emit("lost", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, action=action)
            if action == "skip":
                self._emit("skipped", task=ts.id, run=ts.idx, reason="lost")
                if ts.idx >= len(ts.runs):
                    self._finish(ts, "lost")

    # ------------------------------------------------------------------ time
    def _plan_time(self, now: float | None = None) -> float:
        return ((time.time() if now is None else now) - self.t0) / self.time_scale

    def wall_time(self, plan_time: float) -> float:
        """Wall-clock time (epoch seconds) of ``plan_time``."""
        return self.t0 + plan_time * self.time_scale

    # ------------------------------------------------------------------ main loop
    def run(self, *, timeout: float | None = None) -> ExecutionReport:
        """Execute the plan (or resume it from the journal) until every task is finished.

        Parameters
        ----------
        timeout : float, keyword-only, optional
            Give up after this many wall seconds (raises ``TimeoutError``; processes are left
            running and the journal open for a restart).

        Returns
        -------
        ExecutionReport
        """
        began = time.time()
        self._open()
        try:
            while any(ts.outcome is None for ts in self._tasks.values()):
                if timeout is not None and time.time() - began > timeout:
                    raise TimeoutError(f"plan {self.plan.name!r} not finished after {timeout} s")
                self._usage_cache = {}
                for ts in sorted(self._tasks.values(), key=lambda t: (t.runs[min(t.idx, len(t.runs) - 1)].start, t.id)):
                    if ts.outcome is None:
                        self._step(ts)
                time.sleep(self.poll_interval)
            if not self._journal.records or self._journal.records[-1]["event"] != "finished":  # type: ignore[union-attr]
                self._emit("finished")
        finally:
            assert self._journal is not None
            self._journal.close()
        return self.report(seconds=time.time() - began)

    def report(self, *, seconds: float = 0.0) -> ExecutionReport:
        """The current :class:`ExecutionReport` (complete once :meth:`run` returned)."""
        fb = []
        for t in self.plan.tasks:
            ts = self._tasks.get(t.id)
            if ts is None:
                continue
            granted = max((g[0] for r in ts.runs for g in r.grants.values()), default=0)
            fb.append(UsageFeedback(t.id, ts.outcome or "running", ts.exit_code, ts.peak, granted, ts.seconds,
                                    ts.attempts, ts.over_grant, tuple(sorted(ts.devices))))
        return ExecutionReport(self.plan.name, self.plan.digest,
                               None if self._journal_path is None else str(self._journal_path),
                               tuple(fb), self.restarts, seconds)

    def _finish(self, ts: _Task, outcome: str) -> None:
        self._emit("task_finished", task=ts.id, outcome=outcome, exit_code=ts.exit_code)

    def _step(self, ts: _Task) -> None:
        now = time.time()
        p = self._plan_time(now)
        pr = ts.proc
        if pr is not None:
            self._cap_log(ts.id, pr.run, pr.attempt)
            exited, code = self._poll(pr)
            if exited:
                self._on_exit(ts, pr, code, now)
                return
            if pr.state == "terminating":
                if now >= pr.term_deadline and not pr.killed:
                    _signal_tree(pr.pid, pr.run_id, signal.SIGKILL)
                    self._emit("signalled", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid,
                               signal="SIGKILL", reason=pr.term_reason)
                return
            if pr.state == "running":
                self._sample(ts, pr)
                if ts.proc is not pr or pr.state != "running":
                    return
            run = ts.runs[ts.idx]
            if pr.state in ("running", "stopped") and p >= run.end - _EPS:
                point = ts.point_after(ts.idx)
                if pr.state == "stopped":
                    self._terminate(ts, pr, "over_grant")
                elif point is None:
                    self._terminate(ts, pr, "expired")
                elif point.mode == "suspend" and self.policy.preempt == "plan":
                    _signal_tree(pr.pid, pr.run_id, signal.SIGSTOP)
                    self._emit("suspended", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid,
                               reason="preemption", next_run=ts.idx + 1)
                else:
                    self._terminate(ts, pr, "preempted")
            elif pr.state == "suspended" and p >= run.start - _EPS:
                _signal_tree(pr.pid, pr.run_id, signal.SIGCONT)
                self._emit("resumed", task=ts.id, run=ts.idx, attempt=pr.attempt, pid=pr.pid)
            return
        run = ts.runs[ts.idx]
        if p >= run.end - _EPS:
            self._emit("skipped", task=ts.id, run=run.index, reason="window closed before memory was free")
            if ts.idx >= len(ts.runs):
                self._finish(ts, "not_started" if ts.attempts == 0 else
                             ("lost" if ts.last_outcome == "lost" else "incomplete"))
            return
        if p < run.start - _EPS:
            return
        short = self._memory_short(ts, run)
        if short is not None:
            if run.index not in ts.waiting:
                dev, free, need = short
                self._emit("waiting", task=ts.id, run=run.index, device=self.uuids[dev], free=free, need=need)
            return
        self._launch(ts, run)

    # ------------------------------------------------------------------ helpers
    def _log_path(self, task: str, run: int, attempt: int) -> Path | None:
        if self.log_dir is None:
            return None
        return self.log_dir / f"{safe_file_name(task)}.{run}.{attempt}.log"

    def _cap_log(self, task: str, run: int, attempt: int) -> None:
        """Cut a log over :attr:`log_max_bytes` back to its head and a marker line (the process
        appends, so its next writes land after the marker and are cut at the next poll)."""
        path = self._log_path(task, run, attempt)
        if path is None:
            return
        cap = self.log_max_bytes
        mark = f"\n[gensolver: log cut at {cap} bytes]\n".encode()
        try:
            if os.stat(path).st_size <= cap + len(mark):
                return
            with open(path, "r+b") as fh:
                fh.seek(cap)
                if fh.read(len(mark)) != mark:
                    fh.seek(cap)
                    fh.write(mark)
                fh.truncate(cap + len(mark))
        except OSError:
            pass

    def _poll(self, pr: _Proc) -> tuple[bool, int | None]:
        if pr.popen is not None:
            code = pr.popen.poll()
            return (code is not None), code
        return (not is_same_process(pr.pid, pr.pid_start)), None

    def _on_exit(self, ts: _Task, pr: _Proc, code: int | None, now: float) -> None:
        self._cap_log(ts.id, pr.run, pr.attempt)
        if pr.state == "terminating":  # what is left of a process tree told to end goes now
            for other in find_all_by_env("GENSOLVER_RUN_ID", pr.run_id):
                try:
                    os.kill(other, signal.SIGKILL)
                except OSError:
                    pass
        if pr.state in ("suspended", "stopped"):
            pr.susp_seconds += now - pr.susp_since
        seconds = max(0.0, now - pr.t_started - pr.susp_seconds)
        reason = pr.term_reason if pr.state == "terminating" else ""
        if reason == "preempted":
            outcome = "preempted"
        elif reason == "expired":
            outcome = "expired"
        elif reason == "over_grant":
            outcome = "killed"
        elif code is None:
            outcome = "exited"
        elif code == 0:
            outcome = "completed"
        else:
            outcome = "crashed"
        self._emit("exited", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, exit_code=code,
                   outcome=outcome, run_seconds=seconds, peak=pr.peak)
        if outcome == "preempted" and ts.idx < len(ts.runs):
            return
        self._finish(ts, outcome)

    def _terminate(self, ts: _Task, pr: _Proc, reason: str) -> None:
        _signal_tree(pr.pid, pr.run_id, signal.SIGTERM)
        if pr.state in ("suspended", "stopped"):
            _signal_tree(pr.pid, pr.run_id, signal.SIGCONT)  # a stopped process handles SIGTERM only once continued
        self._emit("signalled", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, signal="SIGTERM", reason=reason)

    def _usage(self, uuid: str) -> Mapping[int, int | None]:
        if uuid not in self._usage_cache:
            self._usage_cache[uuid] = self.backend.process_memory(uuid)
        return self._usage_cache[uuid]

    def _sample(self, ts: _Task, pr: _Proc) -> None:
        over: tuple[str, int, int] | None = None
        for dev in pr.devices:
            uuid = self.uuids[dev]
            usage = self._usage(uuid)
            used = 0
            for pid, b in usage.items():
                if b and (pid == pr.pid or (self.policy.include_descendants and _is_descendant(pid, pr.pid))):
                    used += b
            pr.last_usage[dev] = used
            if used > (pr.peak or 0) and (pr.peak is None or used - pr.peak >= max(1 << 20, pr.peak // 20)):
                self._emit("usage", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, peak=used)
            elif used > (pr.peak or 0):
                pr.peak = used
                ts.peak = max(ts.peak or 0, used)
            grant = ts.runs[ts.idx].grants[dev][0] if dev in ts.runs[ts.idx].grants else pr.grants[dev]
            if used > grant + self.policy.over_grant_tolerance and over is None:
                over = (uuid, used, grant)
        if over is None:
            return
        uuid, used, grant = over
        action = self.policy.over_grant
        if action == "warn":
            if not pr.warned:
                self._emit("over_grant", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, device=uuid,
                           used=used, grant=grant, action="warn")
                warnings.warn(f"task {ts.id!r} (pid {pr.pid}) uses {used} bytes on {uuid}, over its grant of {grant}",
                              RuntimeWarning, stacklevel=2)
            return
        self._emit("over_grant", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, device=uuid,
                   used=used, grant=grant, action=action)
        if action == "suspend":
            _signal_tree(pr.pid, pr.run_id, signal.SIGSTOP)
            self._emit("suspended", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, reason="over_grant",
                       next_run=ts.idx)
        else:
            self._terminate(ts, pr, "over_grant")

    def _memory_short(self, ts: _Task, run: Run) -> tuple[str, int, int] | None:
        """``None`` when every device of ``run`` has its grant free, else (device, free, need)."""
        for dev in run.devices:
            uuid = self.uuids[dev]
            need = run.grants[dev][0]
            info = self.backend.memory_info(uuid)
            reserved = 0
            for other in self._tasks.values():
                op = other.proc
                if op is None or other is ts or dev not in op.grants:
                    continue
                reserved += max(0, op.grants[dev] - op.last_usage.get(dev, 0))
            free = info.free - reserved
            if free < need:
                return dev, free, need
        return None

    def _launch(self, ts: _Task, run: Run) -> None:
        attempt = ts.attempts + 1
        digest = self._journal.records[0]["digest"] if self._journal and self._journal.records else self.plan.digest
        stamp = int(self._journal.records[0]["t0"] * 1000) if self._journal and self._journal.records else 0
        run_id = f"{digest}-{stamp}:{ts.id}:{run.index}:{attempt}"
        uuids = [self.uuids[d] for d in run.devices]
        mem = run.memory
        pct = max(1, min(100, int(round(run.compute * 100))))
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update({
            "CUDA_VISIBLE_DEVICES": ",".join(uuids),
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(pct),
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": ",".join(f"{k}={run.grants[d][0] >> 20}M" for k, d in enumerate(run.devices)),
            "GENSOLVER_MEMORY_LIMIT": str(mem),
            "GENSOLVER_COMPUTE_SHARE": repr(run.compute),
            "GENSOLVER_TASK": ts.id,
            "GENSOLVER_RUN": str(run.index),
            "GENSOLVER_ATTEMPT": str(attempt),
            "GENSOLVER_RUN_ID": run_id,
            "GENSOLVER_RESUME": "1" if attempt > 1 else "0",
            "GENSOLVER_RUN_END": repr(self.wall_time(run.end)),
        })
        env.update(self.backend.child_env(run_id))
        self._emit("launching", task=ts.id, run=run.index, attempt=attempt, run_id=run_id)
        out: Any = None
        log = self._log_path(ts.id, run.index, attempt)
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = open(log, "ab")
        try:
            # without a log folder the output goes to the executor's stderr: its stdout is its own
            popen = subprocess.Popen(list(run.command), env=env, stdin=subprocess.DEVNULL,
                                     stdout=out if out is not None else 2,
                                     stderr=subprocess.STDOUT if out is not None else None,
                                     start_new_session=True, close_fds=True)
        except OSError as exc:
            self._emit("exited", task=ts.id, run=run.index, attempt=attempt, pid=None, exit_code=127,
                       outcome="crashed", run_seconds=0.0, peak=None, error=f"{type(exc).__name__}: {exc}")
            self._finish(ts, "crashed")
            return
        finally:
            if out is not None:
                out.close()
        self._emit("started", task=ts.id, run=run.index, attempt=attempt, run_id=run_id, pid=popen.pid,
                   pid_start=proc_start_time(popen.pid), devices=uuids, grants={d: g[0] for d, g in run.grants.items()},
                   argv=list(run.command))
        assert ts.proc is not None
        ts.proc.popen = popen


def __getattr__(name: str) -> Any:
    if name == "Executor":  # the deprecated name of PlanRunner
        import warnings

        warnings.warn(_DEPRECATED_EXECUTOR, DeprecationWarning, stacklevel=2)
        return PlanRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
