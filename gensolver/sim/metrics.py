"""Metrics of a simulation, computed from its event log.

Nothing is dropped: every average is over all the tasks the run accepted, shown beside
``completed`` of ``tasks`` (and ``rejected``, the tasks that fit on no node, which have no
JCT). A task still unfinished when the run stops (``until``, a stall) counts with
``JCT = max(end - arrival, duration)`` (its JCT is at least that): then ``unfinished > 0``
and every JCT, wait and ``rho`` figure below is a lower bound of what the policy will take
(censored).

- **JCT** (job completion time) ``finish - arrival``; average and 95th percentile (linear
  interpolation, :func:`numpy.percentile`).
- **Queueing delay** ``first start - arrival`` (never started: ``end - arrival``).
- **Makespan** ``last finish - first arrival`` (``end`` when a task is unfinished).
- **Memory held and memory used** over time: ``memory_held`` is the memory allocated to tasks
  (a whole-GPU task holds its whole card) over the capacity of the GPUs that are up;
  ``memory_used`` counts only what each task's speed law makes useful, ``min(held,
  useful)`` per GPU with ``useful`` its true preferred memory (its true minimum when its
  elasticity is 0: memory then does not speed it up), for the share of the time the task runs
  (its speed over the speed law's at that memory: time-slicing and interference slow it while
  it holds the memory) and the share of its executed work that was its own (restores, MIG
  setup and rolled-back work are not): a task at its preferred memory uses ``preferred x
  duration`` GiB-steps under every policy, so a policy that keeps tasks resident longer does
  not look better for it. **Compute** likewise (allocated share).
  Piecewise constant between events; time-averaged over the makespan.
- **Finish-time fairness** ``rho = JCT / duration`` (Mahajan et al., NSDI 2020, with the
  ideal time taken as the task's duration alone at preferred memory); max and distribution.
- **Jain's index** ``(sum x)^2 / (n sum x^2)`` of ``x_i = 1 / rho_i`` over the accepted tasks
  (Jain, Chiu & Hawe, DEC-TR-301, 1984): 1 when every task is slowed down equally.
- **Preemptions**, **lost work** (rolled back by faults, in steps), **credits spent**.
- **Welfare achieved**: the sum over finished tasks of their *true* value at their finish
  (:func:`gensolver.model.tasks.task_value` of the true type; 0 when it finished after its
  deadline or did not finish); **deadline hit rate**: the share of tasks with a deadline that
  finished by it (``None`` when no task has one); **value-weighted JCT**
  ``sum v_j JCT_j / sum v_j``.
- **Per tenant** (the true owner, also under false names): value achieved, credits spent,
  mean rho. **Sharing incentive** (Themis): the share of tenants whose mean rho is at most
  ``N`` (the number of tenants), i.e. no slower than alone on a private ``1/N`` of the
  cluster at full speed; **envy**: the largest ``(rho_i - rho_j) / rho_i`` over pairs of
  tenants' mean rho (0: no tenant is served relatively better than another).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..model.tasks import speed_law
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
    value: float = 0.0
    achieved: float = 0.0
    deadline: float | None = None
    #: most memory per GPU the task's speed law can use (``None``: all it holds)
    useful_memory: float | None = None
    #: the true elasticity of its speed law (``None``: memory held counts unweighted)
    elasticity: float | None = None
    #: work executed beside its own: restores after preemption, setup (MIG reconfiguration)
    overhead: float = 0.0

    @property
    def deadline_met(self) -> bool | None:
        """Finished by its deadline (``None``: the task has no deadline)."""
        if self.deadline is None:
            return None
        return self.finish is not None and self.finish <= self.deadline + 1e-9

    @property
    def jct(self) -> float | None:
        return None if self.finish is None else self.finish - self.arrival

    def jct_at_least(self, end: float) -> float:
        """The JCT, or a lower bound when the task has not finished by ``end``: ``end - arrival``,
        and at least its work (no task runs faster than speed 1)."""
        return self.finish - self.arrival if self.finish is not None else max(end - self.arrival, self.duration)

    @property
    def wait(self) -> float | None:
        return None if self.first_start is None else self.first_start - self.arrival

    @property
    def rho(self) -> float | None:
        return None if self.finish is None else (self.finish - self.arrival) / self.duration


@dataclass(frozen=True)
class Metrics:
    """Frozen summary of one run (times in steps; see the module docstring).

    ``tasks`` accepted (``completed`` of them finished, ``unfinished`` not), ``rejected`` at
    arrival; when ``unfinished > 0`` the JCT, wait and rho figures are lower bounds.
    """

    tasks: int
    completed: int
    rejected: int
    avg_jct: float
    p95_jct: float
    avg_wait: float
    p95_wait: float
    makespan: float
    memory_held: float
    memory_used: float
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
    welfare: float = 0.0
    deadline_hit_rate: float | None = None
    value_weighted_jct: float | None = None
    sharing_incentive: float | None = None
    envy: float | None = None
    tenant_value: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    tenant_spent: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    tenant_rho: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    unfinished: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: (dict(v) if isinstance(v, Mapping) else v)
                for k, v in ((k, getattr(self, k)) for k in self.__dataclass_fields__)}


def utilisation_series(events: Sequence[Event], useful: Mapping[str, float] | None = None,
                       work: Mapping[str, tuple[float, float]] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(times, memory fraction, compute fraction)`` after each event time (step function).

    The memory is what tasks hold, or with ``useful`` (task id -> most useful memory per GPU)
    what they use: ``min(held, useful)`` per GPU. With ``work`` too (task id -> ``(elasticity,
    share)``), what they use for their own work: that memory times the share of the time the
    task runs (its speed over the speed law's at that memory, ``(min(m, useful) / useful) **
    elasticity``: below 1 under time-slicing or interference) times ``share``, the part of the
    work it executed that was its own (not restores, setup or work rolled back). A task at its
    preferred memory then uses ``preferred x duration`` GiB-steps under any policy.
    """
    cap = dict(useful or {})
    law = dict(work or {})

    def used(e: Event) -> float:
        m = min(e.memory, cap.get(e.task, e.memory))
        if e.task not in law or e.task not in cap:
            return m
        elasticity, share = law[e.task]
        alone = speed_law(m, cap[e.task], elasticity)  # alone on its GPUs, at that memory
        part = min(1.0, e.speed / alone) if e.speed > 0 and alone > 0 else 1.0
        return m * (1.0 if abs(part - 1.0) <= 1e-9 else part) * share
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
            m = used(e)
            alloc[e.task] = (m, e.compute, k)
            use_m += m * k
            use_c += e.compute * k
        elif e.kind == "resize":
            m0, c0, k = alloc[e.task]
            m = used(e)
            use_m += (m - m0) * k
            alloc[e.task] = (m, c0, k)
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


def useful_work(records: Iterable[TaskRecord]) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """The ``useful`` and ``work`` arguments of :func:`utilisation_series` for memory used:
    per task its useful memory, and its elasticity with the share of its executed work
    (``duration + overhead + lost``) that was its own."""
    useful: dict[str, float] = {}
    work: dict[str, tuple[float, float]] = {}
    for r in records:
        if r.useful_memory is None:
            continue
        useful[r.id] = r.useful_memory
        if r.elasticity is not None:
            executed = r.duration + r.overhead + r.lost
            work[r.id] = (r.elasticity, r.duration / executed if executed > 0 else 1.0)
    return useful, work


def _time_average(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> float:
    if times.size == 0 or t1 <= t0:
        return 0.0
    edges = np.clip(np.append(times, t1), t0, t1)
    widths = np.diff(edges)
    return float(np.sum(widths * values) / (t1 - t0))


def compute_metrics(events: Sequence[Event], records: Mapping[str, TaskRecord], rounds: Sequence[Mapping[str, Any]],
                    *, end: float | None = None) -> Metrics:
    """The :class:`Metrics` of a run from its log, task records and round statistics.

    ``end``: the time the run stopped (default: its last event); unfinished tasks count with
    ``JCT = end - arrival`` (see the module docstring).
    """
    if end is None:
        end = max((e.time for e in events), default=0.0)
    recs = list(records.values())
    done = [r for r in recs if r.finish is not None]
    unfinished = len(recs) - len(done)
    jct = np.array([r.jct_at_least(end) for r in recs], dtype=float)
    waits = np.array([r.wait if r.wait is not None else max(0.0, end - r.arrival) for r in recs], dtype=float)
    rho = jct / np.array([r.duration for r in recs], dtype=float) if recs else np.zeros(0)
    arrivals = [r.arrival for r in recs]
    t0 = min(arrivals) if arrivals else 0.0
    t1 = max((r.finish for r in done if r.finish is not None), default=t0)
    if unfinished:
        t1 = max(t1, end)
    times, mem, comp = utilisation_series(events)
    _, mem_used, _ = utilisation_series(events, *useful_work(recs))
    spent = -sum(e.amount for e in events if e.kind == "credit" and e.note == "payment")
    secs = np.array([float(r.get("seconds", 0.0)) + float(r.get("build_seconds", 0.0)) for r in rounds], dtype=float)
    nan = float("nan")
    owner = {r.id: r.tenant for r in recs}
    t_spent: dict[str, float] = {}
    for e in events:
        if e.kind == "credit" and e.note == "payment":
            who = owner.get(e.task, e.tenant)
            t_spent[who] = t_spent.get(who, 0.0) - e.amount
    t_value: dict[str, float] = {}
    t_rho: dict[str, list[float]] = {}
    for r, x in zip(recs, rho):
        t_value[r.tenant] = t_value.get(r.tenant, 0.0) + r.achieved
        t_rho.setdefault(r.tenant, []).append(float(x))
    mean_rho = {k: float(np.mean(v)) for k, v in sorted(t_rho.items())}
    n_ten = len(mean_rho)
    with_deadline = [bool(r.deadline_met) for r in recs if r.deadline is not None]
    vals = np.array([r.value for r in recs], dtype=float)
    rhos = np.array(list(mean_rho.values()), dtype=float)
    return Metrics(
        tasks=len(recs),
        completed=len(done),
        rejected=sum(1 for e in events if e.kind == "reject"),
        avg_jct=float(jct.mean()) if jct.size else nan,
        p95_jct=float(np.percentile(jct, 95)) if jct.size else nan,
        avg_wait=float(waits.mean()) if waits.size else nan,
        p95_wait=float(np.percentile(waits, 95)) if waits.size else nan,
        makespan=float(t1 - t0),
        memory_held=_time_average(times, mem, t0, t1),
        memory_used=_time_average(times, mem_used, t0, t1),
        compute_utilisation=_time_average(times, comp, t0, t1),
        preemptions=sum(1 for e in events if e.kind == "stop" and e.note == "preempt"),
        lost_work=float(sum(e.lost for e in events if e.kind == "stop")),
        jain=jain_index(1.0 / rho) if rho.size else nan,  # no task: undefined, like rho
        rho_max=float(rho.max()) if rho.size else nan,
        rho_mean=float(rho.mean()) if rho.size else nan,
        rho_p95=float(np.percentile(rho, 95)) if rho.size else nan,
        credits_spent=float(spent),
        rounds=len(rounds),
        solver_seconds_total=float(secs.sum()),
        solver_seconds_mean=float(secs.mean()) if secs.size else 0.0,
        solver_seconds_max=float(secs.max()) if secs.size else 0.0,
        welfare=float(sum(r.achieved for r in records.values())),
        deadline_hit_rate=float(np.mean(with_deadline)) if with_deadline else None,
        value_weighted_jct=float(np.dot(vals, jct) / vals.sum()) if vals.size and vals.sum() > 0 else None,
        sharing_incentive=float(np.mean(rhos <= n_ten + 1e-9)) if n_ten else None,
        envy=float(max(0.0, (rhos.max() - rhos.min()) / rhos.max())) if n_ten else None,
        tenant_value=MappingProxyType(dict(sorted(t_value.items()))),
        tenant_spent=MappingProxyType(dict(sorted(t_spent.items()))),
        tenant_rho=MappingProxyType(mean_rho),
        unfinished=unfinished,
    )
