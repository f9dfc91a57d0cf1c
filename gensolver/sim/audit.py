"""An independent audit of a simulation's event log.

:func:`audit_log` rebuilds the cluster's state from the event log *only* (it imports nothing
from the simulator) and checks the conservation invariants every policy must keep:

1. **Capacity.** After every event, the memory and compute allocated on each GPU are within its
   capacity (``gpu_up`` events carry it), and nothing is allocated on a GPU that is down.
2. **Causality.** A task starts only after it arrived, never while it runs, and finishes or
   stops only while it runs; times never go backwards.
3. **Work.** Integrating each task's logged speed over its run intervals gives exactly its
   work (``arrive.work``) plus set-up work (``start.work``), the checkpoint overheads
   (``stop.work``) and the work lost to
   faults (``stop.lost``) — within ``tol`` relative. A non-preemptible task is never
   preempted, and a fault rolls it back to zero (it loses all its useful progress).
4. **Credits.** Balances rebuilt from ``credit`` events never go negative; they are returned so
   a caller can compare them with the reported ones (conservation: final = budgets + refills -
   payments).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from ..errors import GensolverError

__all__ = ["AuditReport", "AuditError", "audit_log"]


class AuditError(GensolverError, AssertionError):
    """Raised by :meth:`AuditReport.raise_if_failed`."""


@dataclass(frozen=True)
class AuditReport:
    """Frozen result of :func:`audit_log`.

    Attributes
    ----------
    ok : bool
    violations : tuple of str
        One line per broken invariant (time, what).
    balances : Mapping[str, float]
        Credit balances rebuilt from the log.
    executed : Mapping[str, float]
        Work executed per task, integrated from the log.
    finished : tuple of str
    """

    ok: bool
    violations: tuple[str, ...]
    balances: Mapping[str, float]
    executed: Mapping[str, float]
    finished: tuple[str, ...]

    def raise_if_failed(self) -> None:
        if not self.ok:
            head = "\n".join(self.violations[:20])
            raise AuditError(f"{len(self.violations)} audit violation(s):\n{head}")


def _get(e: Any, name: str, default: Any = None) -> Any:
    if isinstance(e, Mapping):
        return e.get(name, default)
    return getattr(e, name, default)


class _Audit:
    """The cluster state rebuilt from the log, one method per event kind."""

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.bad: list[str] = []
        self.cap: dict[str, tuple[float, float]] = {}
        self.up: dict[str, bool] = {}
        self.used: dict[str, list[float]] = {}
        self.arrived: dict[str, float] = {}
        self.work: dict[str, float] = {}
        self.preemptible: dict[str, bool] = {}
        self.extra: dict[str, float] = {}
        self.executed: dict[str, float] = {}
        self.run: dict[str, dict[str, Any]] = {}
        self.finished: list[str] = []
        self.balances: dict[str, float] = {}

    def advance(self, tid: str, t: float) -> None:
        r = self.run[tid]
        self.executed[tid] = self.executed.get(tid, 0.0) + (t - r["since"]) * r["speed"]
        r["since"] = t

    def release(self, tid: str) -> None:
        r = self.run.pop(tid)
        for g in r["gpus"]:
            self.used[g][0] -= r["memory"]
            self.used[g][1] -= r["compute"]

    def end_run(self, where: str, kind: str, tid: str, t: float) -> bool:
        """Close the run of ``tid`` at ``t`` (``False``, a violation, when it is not running)."""
        if tid not in self.run:
            self.bad.append(f"{where}: {kind} of a task that is not running")
            return False
        self.advance(tid, t)
        self.release(tid)
        return True

    def gpu_up(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        g, tol, used = gpus[0], self.tol, self.used
        self.cap[g] = (float(_get(e, "memory")), float(_get(e, "compute")))
        if self.up.get(g):
            self.bad.append(f"{where}: GPU already up")
        self.up[g] = True
        used.setdefault(g, [0.0, 0.0])
        if abs(used[g][0]) > tol or abs(used[g][1]) > tol:
            self.bad.append(f"{where}: GPU comes up with allocations")
        return True

    def gpu_down(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        g = gpus[0]
        if not self.up.get(g):
            self.bad.append(f"{where}: GPU not up")
        self.up[g] = False
        if any(g in r["gpus"] for r in self.run.values()):
            self.bad.append(f"{where}: tasks still run on a GPU that went down")
        return True

    def arrive(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        if tid in self.arrived:
            self.bad.append(f"{where}: task arrives twice")
        self.arrived[tid] = t
        self.work[tid] = float(_get(e, "work"))
        self.preemptible[tid] = _get(e, "note") != "fixed"
        self.extra[tid] = 0.0
        self.executed[tid] = 0.0
        return True

    def reject(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        return True

    def start(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        bad, tol = self.bad, self.tol
        if tid not in self.arrived:
            bad.append(f"{where}: start of a task that never arrived")
            return False
        if t < self.arrived[tid] - tol:
            bad.append(f"{where}: starts before it arrives (t={self.arrived[tid]:.6g})")
        if tid in self.run:
            bad.append(f"{where}: starts while running")
            return False
        if tid in self.finished:
            bad.append(f"{where}: starts after finishing")
        mem, comp, speed = float(_get(e, "memory")), float(_get(e, "compute")), float(_get(e, "speed"))
        if not speed > 0:
            bad.append(f"{where}: non-positive speed {speed}")
        for g in gpus:
            if g not in self.cap:
                bad.append(f"{where}: unknown GPU {g}")
                continue
            if not self.up.get(g):
                bad.append(f"{where}: starts on GPU {g} that is down")
            self.used[g][0] += mem
            self.used[g][1] += comp
        self.run[tid] = {"gpus": gpus, "memory": mem, "compute": comp, "speed": speed, "since": t}
        setup = float(_get(e, "work", 0.0))
        if setup < -tol:
            bad.append(f"{where}: negative setup work {setup}")
        self.extra[tid] = self.extra.get(tid, 0.0) + max(0.0, setup)
        return True

    def resize(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        if tid not in self.run:
            self.bad.append(f"{where}: resize of a task that is not running")
            return False
        self.advance(tid, t)
        r = self.run[tid]
        mem = float(_get(e, "memory"))
        for g in r["gpus"]:
            self.used[g][0] += mem - r["memory"]
        r["memory"] = mem
        r["speed"] = float(_get(e, "speed"))
        return True

    def stop(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        bad, tol, work = self.bad, self.tol, self.work
        if not self.end_run(where, "stop", tid, t):
            return False
        reason = _get(e, "note")
        overhead, lost = float(_get(e, "work", 0.0)), float(_get(e, "lost", 0.0))
        if overhead < -tol or lost < -tol:
            bad.append(f"{where}: negative overhead or lost work")
        useful = self.executed[tid] - self.extra[tid]
        if reason == "preempt" and not self.preemptible.get(tid, True):
            bad.append(f"{where}: a non-preemptible task was preempted")
        if reason == "fault":
            if lost > useful + tol * max(1.0, work[tid]):
                bad.append(f"{where}: loses {lost:.6g} but had done only {useful:.6g}")
            if not self.preemptible.get(tid, True) and abs(lost - useful) > tol * max(1.0, work[tid]):
                bad.append(f"{where}: non-preemptible task must lose all {useful:.6g} done, lost {lost:.6g}")
        self.extra[tid] += overhead + lost
        return True

    def finish(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        if not self.end_run(where, "finish", tid, t):
            return False
        need = self.work[tid] + self.extra[tid]
        if abs(self.executed[tid] - need) > self.tol * max(1.0, need):
            self.bad.append(f"{where}: executed {self.executed[tid]:.9g} != work {self.work[tid]:.9g} + "
                            f"overhead/lost {self.extra[tid]:.9g}")
        self.finished.append(tid)
        return True

    def credit(self, e: Any, where: str, t: float, tid: str, gpus: tuple[str, ...]) -> bool:
        tenant = _get(e, "tenant")
        self.balances[tenant] = self.balances.get(tenant, 0.0) + float(_get(e, "amount"))
        if self.balances[tenant] < -self.tol:
            self.bad.append(f"{where}: tenant {tenant} balance {self.balances[tenant]:.6g} < 0")
        return True

    def check_capacity(self, where: str, gpus: tuple[str, ...]) -> None:
        cap, used, tol = self.cap, self.used, self.tol
        for g in gpus:
            if g in cap and (used[g][0] > cap[g][0] + tol * max(1.0, cap[g][0]) or used[g][1] > cap[g][1] + tol):
                self.bad.append(f"{where}: GPU {g} over capacity: memory {used[g][0]:.6g}/{cap[g][0]:.6g}, "
                                f"compute {used[g][1]:.6g}/{cap[g][1]:.6g}")


#: event kind -> the :class:`_Audit` method that checks it
_HANDLERS = {"gpu_up": _Audit.gpu_up, "gpu_down": _Audit.gpu_down, "arrive": _Audit.arrive,
             "reject": _Audit.reject, "start": _Audit.start, "resize": _Audit.resize, "stop": _Audit.stop,
             "finish": _Audit.finish, "credit": _Audit.credit}


def audit_log(events: Iterable[Any], *, tol: float = 1e-6, require_complete: bool = False) -> AuditReport:
    """Check the invariants listed in the module docstring.

    Parameters
    ----------
    events : iterable of Event or dict
        The log, in order (objects or dicts with the same fields).
    tol : float
        Relative/absolute tolerance of the numeric checks.
    require_complete : bool
        Also require every arrived task to have finished.

    Returns
    -------
    AuditReport
    """
    a = _Audit(tol)
    bad = a.bad
    last = float("-inf")
    for n, e in enumerate(events):
        t = float(_get(e, "time"))
        kind = _get(e, "kind")
        tid = _get(e, "task", "")
        gpus = tuple(_get(e, "gpus", ()) or ())
        where = f"event {n} (t={t:.6g}, {kind} {tid or ','.join(gpus)})"
        if t < last - tol:
            bad.append(f"{where}: time goes backwards (previous {last:.6g})")
        last = max(last, t)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            bad.append(f"{where}: unknown event kind {kind!r}")
        elif handler(a, e, where, t, tid, gpus) and kind in ("start", "resize"):
            a.check_capacity(where, gpus)
    if a.run and require_complete:
        bad.append(f"end: {len(a.run)} task(s) still running")
    if require_complete:
        missing = sorted(set(a.arrived) - set(a.finished))
        if missing:
            bad.append(f"end: {len(missing)} arrived task(s) never finished, e.g. {missing[:5]}")
    return AuditReport(not bad, tuple(bad), MappingProxyType(dict(a.balances)), MappingProxyType(dict(a.executed)),
                       tuple(a.finished))
