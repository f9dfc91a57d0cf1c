"""An independent certificate for plans: :func:`check_plan`.

It does not trust :func:`~gensolver.executor.to_plan`: it recomputes, from the entries and the
preemption points alone, the memory and compute held on every device at every instant, and
reports each place where a device is over its capacity. A task suspended at a ``"suspend"``
preemption point keeps holding its memory (not its compute) until it resumes, because a stopped
CUDA process keeps its device allocations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .plan import ExecutionPlan

__all__ = ["PlanViolation", "PlanCheck", "check_plan"]

#: absolute tolerance for compute shares (memory is in whole bytes and compared exactly)
COMPUTE_TOL = 1e-9


@dataclass(frozen=True)
class PlanViolation:
    """One broken invariant.

    Attributes
    ----------
    device : str
    time : float
        Plan time at which it starts.
    kind : str
        ``"memory"``, ``"compute"``, ``"overlap"`` (one task twice on a device at once) or
        ``"interval"`` (an entry with ``start >= end``).
    used, capacity : float
        What is held and what the device has (``0`` for non-capacity kinds).
    tasks : tuple of str
        The tasks holding the device at that instant.
    """

    device: str
    time: float
    kind: str
    used: float
    capacity: float
    tasks: tuple[str, ...]

    def __str__(self) -> str:
        if self.kind in ("memory", "compute"):
            return (f"{self.device} at t={self.time:g}: {self.kind} {self.used:g} > capacity {self.capacity:g} "
                    f"(tasks {', '.join(self.tasks)})")
        return f"{self.device} at t={self.time:g}: {self.kind} ({', '.join(self.tasks)})"


@dataclass(frozen=True)
class PlanCheck:
    """Result of :func:`check_plan`: ``ok`` and the ``violations`` (empty when ok)."""

    ok: bool
    violations: tuple[PlanViolation, ...]

    def __bool__(self) -> bool:
        return self.ok


def check_plan(plan: ExecutionPlan, device_memory: int | Mapping[str, int] | None = None, *,
               device_compute: float | Mapping[str, float] | None = None) -> PlanCheck:
    """Check that no device is over memory or compute at any instant.

    Parameters
    ----------
    plan : ExecutionPlan
    device_memory : int or mapping of str to int, optional
        Memory of every device in bytes (one number for all, or per device id). ``None`` uses
        the capacities recorded in the plan; a device without either is not checked for memory.
    device_compute : float or mapping, keyword-only, optional
        Compute capacity (1.0 = one device). ``None``: the plan's, else 1.0.

    Returns
    -------
    PlanCheck

    Notes
    -----
    Holdings only change at entry starts and ends and at preemption points, so checking the
    sum of what is held just after each of those instants covers every instant. The memory of a
    task suspended at a ``"suspend"`` point counts from ``time`` to ``resume``.
    """
    violations: list[PlanViolation] = []
    for dev in plan.devices:
        if isinstance(device_memory, Mapping):
            mem_cap = device_memory.get(dev.id, dev.memory)
        elif device_memory is not None:
            mem_cap = device_memory
        else:
            mem_cap = dev.memory
        if isinstance(device_compute, Mapping):
            cmp_cap = device_compute.get(dev.id, dev.compute if dev.compute is not None else 1.0)
        elif device_compute is not None:
            cmp_cap = device_compute
        else:
            cmp_cap = dev.compute if dev.compute is not None else 1.0
        # (start, end, task, memory, compute)
        holds = [(e.start, e.end, e.task, e.memory, e.compute) for e in dev.entries]
        for e in dev.entries:
            if not e.start < e.end:
                violations.append(PlanViolation(dev.id, e.start, "interval", 0.0, 0.0, (e.task,)))
        for p in plan.preemptions:
            if p.mode == "suspend" and dev.id in p.from_devices and p.resume > p.time:
                held = max((e.memory for e in dev.entries if e.task == p.task and abs(e.end - p.time) < 1e-9), default=0)
                holds.append((p.time, p.resume, p.task, held, 0.0))
        instants = sorted({h[0] for h in holds})
        for t in instants:
            active = [h for h in holds if h[0] <= t < h[1]]
            names = tuple(sorted({h[2] for h in active}))
            per_task: dict[str, int] = {}
            for h in holds[:len(dev.entries)]:
                if h[0] <= t < h[1]:
                    per_task[h[2]] = per_task.get(h[2], 0) + 1
            dup = tuple(sorted(k for k, n in per_task.items() if n > 1))
            if dup:
                violations.append(PlanViolation(dev.id, t, "overlap", 0.0, 0.0, dup))
            mem = sum(h[3] for h in active)
            if mem_cap is not None and mem > mem_cap:
                violations.append(PlanViolation(dev.id, t, "memory", float(mem), float(mem_cap), names))
            cmp_ = sum(h[4] for h in active)
            if cmp_ > cmp_cap + COMPUTE_TOL:
                violations.append(PlanViolation(dev.id, t, "compute", float(cmp_), float(cmp_cap), names))
    return PlanCheck(not violations, tuple(violations))
