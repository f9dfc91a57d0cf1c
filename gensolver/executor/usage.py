"""Usage sampling and the over-grant policy (rules in :mod:`gensolver.executor.runner`)."""

from __future__ import annotations

import signal
import warnings
from typing import Mapping

from .launch import _Launcher, _signal_tree
from .procs import proc_stat
from .taskstate import _Proc, _Task


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


class _UsageSampler(_Launcher):
    """Memory used by a task's processes, sampled every poll, against its grant."""

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

