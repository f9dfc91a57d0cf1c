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

import logging
import math
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import InputError
from .backends import GpuBackend
from .clock import SYSTEM_CLOCK, Clock
from .devices import resolve_devices
from .journal import Journal, JournalError
from .launch import _signal_tree
from .plan import ExecutionPlan, Run
from .policy import DEFAULT_LOG_MAX_BYTES, OVER_GRANT_POLICIES, ExecutorError, ExecutorPolicy
from .procs import (
    find_all_by_env,
    find_by_env,
    is_same_process,
    proc_start_time,
)
from .report import FEEDBACK_SCHEMA, SUCCESS_OUTCOMES, ExecutionReport, UsageFeedback
from .taskstate import _Proc, _Task
from .usage import _UsageSampler

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

_DEPRECATED_EXECUTOR = ("gensolver.executor.Executor is deprecated; use gensolver.executor.PlanRunner (the old name "
                        "clashed with the executor= arguments, which take a concurrent.futures.Executor)")
_EPS = 1e-9


class PlanRunner(_UsageSampler):
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
    clock : Clock, keyword-only, optional
        Where plan time and the journal's times come from, and how the runner waits between
        polls (default the wall clock; a :class:`~gensolver.executor.clock.ManualClock` moves
        only when its caller says, so a test waits on events rather than on wall time). The
        ``timeout`` of :meth:`run` is always wall time.

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
                 log_max_bytes: int = DEFAULT_LOG_MAX_BYTES, clock: Clock | None = None) -> None:
        self.clock: Clock = SYSTEM_CLOCK if clock is None else clock
        if isinstance(log_max_bytes, bool) or not isinstance(log_max_bytes, int) or log_max_bytes < 1:
            raise InputError(f"log_max_bytes must be a positive integer (bytes), got {log_max_bytes!r}")
        self.log_max_bytes = log_max_bytes
        if not (isinstance(time_scale, (int, float)) and math.isfinite(time_scale) and time_scale > 0):
            raise InputError(f"time_scale must be a positive number, got {time_scale!r}")
        if not (isinstance(poll_interval, (int, float)) and math.isfinite(poll_interval) and poll_interval > 0):
            raise InputError(f"poll_interval must be a positive number of seconds, got {poll_interval!r}")
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
        rec = self._journal.append(event, time=self.clock.time(), **fields)
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
            self._emit("plan", plan=self.plan.name, digest=self.plan.digest, t0=self.clock.time(),
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
        return ((self.clock.time() if now is None else now) - self.t0) / self.time_scale

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
        began = time.monotonic()
        self._open()
        try:
            while any(ts.outcome is None for ts in self._tasks.values()):
                if timeout is not None and time.monotonic() - began > timeout:
                    raise TimeoutError(f"plan {self.plan.name!r} not finished after {timeout} s")
                self._usage_cache = {}
                for ts in sorted(self._tasks.values(), key=lambda t: (t.runs[min(t.idx, len(t.runs) - 1)].start, t.id)):
                    if ts.outcome is None:
                        self._step(ts)
                self.clock.sleep(self.poll_interval)
            if not self._journal.records or self._journal.records[-1]["event"] != "finished":  # type: ignore[union-attr]
                self._emit("finished")
        finally:
            assert self._journal is not None
            self._journal.close()
        return self.report(seconds=time.monotonic() - began)

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
        now = self.clock.time()
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


def __getattr__(name: str) -> Any:
    if name == "Executor":  # the deprecated name of PlanRunner
        import warnings

        from .._deprecation import GensolverDeprecationWarning

        warnings.warn(_DEPRECATED_EXECUTOR, GensolverDeprecationWarning, stacklevel=2)
        return PlanRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
