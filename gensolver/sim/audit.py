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
    bad: list[str] = []
    cap: dict[str, tuple[float, float]] = {}
    up: dict[str, bool] = {}
    used: dict[str, list[float]] = {}
    arrived: dict[str, float] = {}
    work: dict[str, float] = {}
    preemptible: dict[str, bool] = {}
    extra: dict[str, float] = {}
    executed: dict[str, float] = {}
    run: dict[str, dict[str, Any]] = {}
    finished: list[str] = []
    balances: dict[str, float] = {}
    last = float("-inf")

    def advance(tid: str, t: float) -> None:
        r = run[tid]
        executed[tid] = executed.get(tid, 0.0) + (t - r["since"]) * r["speed"]
        r["since"] = t

    def release(tid: str) -> None:
        r = run.pop(tid)
        for g in r["gpus"]:
            used[g][0] -= r["memory"]
            used[g][1] -= r["compute"]

    for n, e in enumerate(events):
        t = float(_get(e, "time"))
        kind = _get(e, "kind")
        tid = _get(e, "task", "")
        gpus = tuple(_get(e, "gpus", ()) or ())
        where = f"event {n} (t={t:.6g}, {kind} {tid or ','.join(gpus)})"
        if t < last - tol:
            bad.append(f"{where}: time goes backwards (previous {last:.6g})")
        last = max(last, t)
        if kind == "gpu_up":
            g = gpus[0]
            cap[g] = (float(_get(e, "memory")), float(_get(e, "compute")))
            if up.get(g):
                bad.append(f"{where}: GPU already up")
            up[g] = True
            used.setdefault(g, [0.0, 0.0])
            if abs(used[g][0]) > tol or abs(used[g][1]) > tol:
                bad.append(f"{where}: GPU comes up with allocations")
        elif kind == "gpu_down":
            g = gpus[0]
            if not up.get(g):
                bad.append(f"{where}: GPU not up")
            up[g] = False
            if any(g in r["gpus"] for r in run.values()):
                bad.append(f"{where}: tasks still run on a GPU that went down")
        elif kind == "arrive":
            if tid in arrived:
                bad.append(f"{where}: task arrives twice")
            arrived[tid] = t
            work[tid] = float(_get(e, "work"))
            preemptible[tid] = _get(e, "note") != "fixed"
            extra[tid] = 0.0
            executed[tid] = 0.0
        elif kind == "reject":
            pass
        elif kind == "start":
            if tid not in arrived:
                bad.append(f"{where}: start of a task that never arrived")
                continue
            if t < arrived[tid] - tol:
                bad.append(f"{where}: starts before it arrives (t={arrived[tid]:.6g})")
            if tid in run:
                bad.append(f"{where}: starts while running")
                continue
            if tid in finished:
                bad.append(f"{where}: starts after finishing")
            mem, comp, speed = float(_get(e, "memory")), float(_get(e, "compute")), float(_get(e, "speed"))
            if not speed > 0:
                bad.append(f"{where}: non-positive speed {speed}")
            for g in gpus:
                if g not in cap:
                    bad.append(f"{where}: unknown GPU {g}")
                    continue
                if not up.get(g):
                    bad.append(f"{where}: starts on GPU {g} that is down")
                used[g][0] += mem
                used[g][1] += comp
            run[tid] = {"gpus": gpus, "memory": mem, "compute": comp, "speed": speed, "since": t}
            setup = float(_get(e, "work", 0.0))
            if setup < -tol:
                bad.append(f"{where}: negative setup work {setup}")
            extra[tid] = extra.get(tid, 0.0) + max(0.0, setup)
        elif kind == "resize":
            if tid not in run:
                bad.append(f"{where}: resize of a task that is not running")
                continue
            advance(tid, t)
            r = run[tid]
            mem = float(_get(e, "memory"))
            for g in r["gpus"]:
                used[g][0] += mem - r["memory"]
            r["memory"] = mem
            r["speed"] = float(_get(e, "speed"))
        elif kind in ("stop", "finish"):
            if tid not in run:
                bad.append(f"{where}: {kind} of a task that is not running")
                continue
            advance(tid, t)
            release(tid)
            if kind == "stop":
                reason = _get(e, "note")
                overhead, lost = float(_get(e, "work", 0.0)), float(_get(e, "lost", 0.0))
                if overhead < -tol or lost < -tol:
                    bad.append(f"{where}: negative overhead or lost work")
                useful = executed[tid] - extra[tid]
                if reason == "preempt" and not preemptible.get(tid, True):
                    bad.append(f"{where}: a non-preemptible task was preempted")
                if reason == "fault":
                    if lost > useful + tol * max(1.0, work[tid]):
                        bad.append(f"{where}: loses {lost:.6g} but had done only {useful:.6g}")
                    if not preemptible.get(tid, True) and abs(lost - useful) > tol * max(1.0, work[tid]):
                        bad.append(f"{where}: non-preemptible task must lose all {useful:.6g} done, lost {lost:.6g}")
                extra[tid] += overhead + lost
            else:
                need = work[tid] + extra[tid]
                if abs(executed[tid] - need) > tol * max(1.0, need):
                    bad.append(f"{where}: executed {executed[tid]:.9g} != work {work[tid]:.9g} + overhead/lost "
                               f"{extra[tid]:.9g}")
                finished.append(tid)
        elif kind == "credit":
            tenant = _get(e, "tenant")
            balances[tenant] = balances.get(tenant, 0.0) + float(_get(e, "amount"))
            if balances[tenant] < -tol:
                bad.append(f"{where}: tenant {tenant} balance {balances[tenant]:.6g} < 0")
        else:
            bad.append(f"{where}: unknown event kind {kind!r}")
        for g in gpus if kind in ("start", "resize") else ():
            if g in cap and (used[g][0] > cap[g][0] + tol * max(1.0, cap[g][0]) or used[g][1] > cap[g][1] + tol):
                bad.append(f"{where}: GPU {g} over capacity: memory {used[g][0]:.6g}/{cap[g][0]:.6g}, "
                           f"compute {used[g][1]:.6g}/{cap[g][1]:.6g}")
    if run and require_complete:
        bad.append(f"end: {len(run)} task(s) still running")
    if require_complete:
        missing = sorted(set(arrived) - set(finished))
        if missing:
            bad.append(f"end: {len(missing)} arrived task(s) never finished, e.g. {missing[:5]}")
    return AuditReport(not bad, tuple(bad), MappingProxyType(dict(balances)), MappingProxyType(dict(executed)),
                       tuple(finished))
