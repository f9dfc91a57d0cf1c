"""Metrics of a simulation, computed from its event log.

- **JCT** (job completion time) ``finish - arrival``; average and 95th percentile (linear
  interpolation, :func:`numpy.percentile`).
- **Queueing delay** ``first start - arrival``.
- **Makespan** ``last finish - first arrival``.
- **Utilisation** over time: allocated memory (compute) over the capacity of the GPUs that are
  up, piecewise constant between events; time-averaged over the makespan.
- **Finish-time fairness** ``rho = JCT / duration`` (Mahajan et al., NSDI 2020, with the
  ideal time taken as the task's duration alone at preferred memory); max and distribution.
- **Jain's index** ``(sum x)^2 / (n sum x^2)`` of ``x_i = 1 / rho_i`` over finished tasks
  (Jain, Chiu & Hawe, DEC-TR-301, 1984): 1 when every task is slowed down equally.
- **Preemptions**, **lost work** (rolled back by faults, in steps), **credits spent**.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .engine import Event

__all__ = ["Metrics", "TaskRecord", "compute_metrics", "jain_index", "utilisation_series"]


def jain_index(x: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)`` (1.0 for an empty input).

    Jain, Chiu & Hawe, "A Quantitative Measure of Fairness and Discrimination for Resource
    Allocation in Shared Computer Systems", DEC-TR-301, 1984.
    """
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.any(a):
        return 1.0
    return float(a.sum() ** 2 / (a.size * np.square(a).sum()))


@dataclass(frozen=True)
class TaskRecord:
    """Per-task outcome (times in steps; ``None`` when it did not happen)."""

    id: str
    tenant: str
    arrival: float
    duration: float
    first_start: float | None
    finish: float | None
    preemptions: int
    faults: int
    lost: float

    @property
    def jct(self) -> float | None:
        return None if self.finish is None else self.finish - self.arrival

    @property
    def wait(self) -> float | None:
        return None if self.first_start is None else self.first_start - self.arrival

    @property
    def rho(self) -> float | None:
        return None if self.finish is None else (self.finish - self.arrival) / self.duration


@dataclass(frozen=True)
class Metrics:
    """Frozen summary of one run (times in steps; see the module docstring)."""

    tasks: int
    completed: int
    rejected: int
    avg_jct: float
    p95_jct: float
    avg_wait: float
    p95_wait: float
    makespan: float
    memory_utilisation: float
    compute_utilisation: float
    preemptions: int
    lost_work: float
    jain: float
    rho_max: float
    rho_mean: float
    rho_p95: float
    credits_spent: float
    rounds: int
    solver_seconds_total: float
    solver_seconds_mean: float
    solver_seconds_max: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def utilisation_series(events: Sequence[Event]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(times, memory fraction, compute fraction)`` after each event time (step function)."""
    cap_m = cap_c = 0.0
    use_m = use_c = 0.0
    gpu_cap: dict[str, tuple[float, float]] = {}
    alloc: dict[str, tuple[float, float, int]] = {}
    times: list[float] = []
    mem: list[float] = []
    comp: list[float] = []
    for e in events:
        if e.kind == "gpu_up":
            gpu_cap[e.gpus[0]] = (e.memory, e.compute)
            cap_m += e.memory
            cap_c += e.compute
        elif e.kind == "gpu_down":
            m, c = gpu_cap[e.gpus[0]]
            cap_m -= m
            cap_c -= c
        elif e.kind == "start":
            k = len(e.gpus)
            alloc[e.task] = (e.memory, e.compute, k)
            use_m += e.memory * k
            use_c += e.compute * k
        elif e.kind == "resize":
            m0, c0, k = alloc[e.task]
            use_m += (e.memory - m0) * k
            alloc[e.task] = (e.memory, c0, k)
        elif e.kind in ("stop", "finish"):
            m0, c0, k = alloc.pop(e.task)
            use_m -= m0 * k
            use_c -= c0 * k
        else:
            continue
        fm = use_m / cap_m if cap_m > 0 else 0.0
        fc = use_c / cap_c if cap_c > 0 else 0.0
        if times and abs(times[-1] - e.time) < 1e-12:
            mem[-1], comp[-1] = fm, fc
        else:
            times.append(e.time)
            mem.append(fm)
            comp.append(fc)
    return np.array(times), np.clip(np.array(mem), 0, None), np.clip(np.array(comp), 0, None)


def _time_average(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> float:
    if times.size == 0 or t1 <= t0:
        return 0.0
    edges = np.clip(np.append(times, t1), t0, t1)
    widths = np.diff(edges)
    return float(np.sum(widths * values) / (t1 - t0))


def compute_metrics(events: Sequence[Event], records: Mapping[str, TaskRecord], rounds: Sequence[Mapping[str, Any]]) -> Metrics:
    """The :class:`Metrics` of a run from its log, task records and round statistics."""
    done = [r for r in records.values() if r.finish is not None]
    jct = np.array([r.jct for r in done], dtype=float)
    waits = np.array([r.wait for r in records.values() if r.wait is not None], dtype=float)
    rho = np.array([r.rho for r in done], dtype=float)
    arrivals = [r.arrival for r in records.values()]
    t0 = min(arrivals) if arrivals else 0.0
    t1 = max((r.finish for r in done if r.finish is not None), default=t0)
    times, mem, comp = utilisation_series(events)
    spent = -sum(e.amount for e in events if e.kind == "credit" and e.note == "payment")
    secs = np.array([float(r.get("seconds", 0.0)) + float(r.get("build_seconds", 0.0)) for r in rounds], dtype=float)
    nan = float("nan")
    return Metrics(
        tasks=len(records),
        completed=len(done),
        rejected=sum(1 for e in events if e.kind == "reject"),
        avg_jct=float(jct.mean()) if jct.size else nan,
        p95_jct=float(np.percentile(jct, 95)) if jct.size else nan,
        avg_wait=float(waits.mean()) if waits.size else nan,
        p95_wait=float(np.percentile(waits, 95)) if waits.size else nan,
        makespan=float(t1 - t0),
        memory_utilisation=_time_average(times, mem, t0, t1),
        compute_utilisation=_time_average(times, comp, t0, t1),
        preemptions=sum(1 for e in events if e.kind == "stop" and e.note == "preempt"),
        lost_work=float(sum(e.lost for e in events if e.kind == "stop")),
        jain=jain_index(1.0 / rho) if rho.size else nan,  # no finished task: undefined, like rho
        rho_max=float(rho.max()) if rho.size else nan,
        rho_mean=float(rho.mean()) if rho.size else nan,
        rho_p95=float(np.percentile(rho, 95)) if rho.size else nan,
        credits_spent=float(spent),
        rounds=len(rounds),
        solver_seconds_total=float(secs.sum()),
        solver_seconds_mean=float(secs.mean()) if secs.size else 0.0,
        solver_seconds_max=float(secs.max()) if secs.size else 0.0,
    )
