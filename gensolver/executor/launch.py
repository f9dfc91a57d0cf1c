"""Launching, signalling and ending a task's processes (rules in :mod:`gensolver.executor.runner`)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from .plan import Run
from .procs import (
    descendants,
    find_all_by_env,
    is_same_process,
    proc_start_time,
    safe_file_name,
)
from .taskstate import _Proc, _RunnerBase, _Task


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


class _Launcher(_RunnerBase):
    """Logs, memory check before a start, launch, poll and termination."""

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

    def _terminate(self, ts: _Task, pr: _Proc, reason: str) -> None:
        _signal_tree(pr.pid, pr.run_id, signal.SIGTERM)
        if pr.state in ("suspended", "stopped"):
            _signal_tree(pr.pid, pr.run_id, signal.SIGCONT)  # a stopped process handles SIGTERM only once continued
        self._emit("signalled", task=ts.id, run=pr.run, attempt=pr.attempt, pid=pr.pid, signal="SIGTERM", reason=reason)

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

