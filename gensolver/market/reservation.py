"""Planned starts: a reservation for the waiting task that has waited longest (EASY backfilling).

Smith's rule ranks a long task last, so without a plan it starts only when a gap opens that
nothing ranked higher fits, and a non-preemptible one then holds its place for its whole run:
its start is a lottery over everybody's reports. A reservation replaces the lottery by a plan.

A waiting non-preemptible task is *due* once it has waited ``reserve`` times its (calibrated)
reported duration. The due task that arrived first (ties: id) gets the one reservation of the
pass (:func:`plan`): the GPU group (one node, ``gpus`` of them) on which its preferred memory
and compute are free earliest, counting only non-preemptible running tasks, each ending at its
projected end (calibrated reported remaining work over its speed); the *planned start* is that
time. The engine then ranks the due task above every other task (it starts first wherever it
fits now, preempting preemptible tasks at a round boundary), and every other start keeps the
plan (:func:`hold_capacity`, :func:`start_around`): on the reserved GPUs, a task may use the
memory the due task will need at its planned start only if its own projected end is no later
than that start (EASY backfilling: whatever fits idle capacity without delaying the
reservation starts; nothing else is refused).

The engine counts the durations of a tenant proved to over-report (a finished task that
worked less than ``1 - tolerance`` of its report) at its smallest such ratio here, so
inflating durations to pass ``reserve_long`` buys no reservation once one inflated task has
finished.

With ``reserve_hold`` a long task that is not due yet does not start at all while another
task waits (:func:`held_back`): it starts when due or when nothing else waits.

The plan is a function of the state and the reports alone (no memory between passes), so a
restarted engine plans as this one would and reruns are byte-identical.

References
----------
.. [1] D. Lifka, "The ANL/IBM SP scheduling system", in *Job Scheduling Strategies for
   Parallel Processing* (JSSPP), LNCS 949, pp. 295-303, 1995 (EASY backfilling: one
   reservation, for the job at the head of the queue).
.. [2] A. W. Mu'alem and D. G. Feitelson, "Utilization, predictability, workloads, and user
   runtime estimates in scheduling the IBM SP2 with backfilling", *IEEE Transactions on
   Parallel and Distributed Systems* 12(6), pp. 529-543, 2001 (backfilling on users' run-time
   estimates, which are often inflated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..model.tasks import task_speed
from .pool import TOL, Pool, Steer, TaskView, backfill_queue, backfill_start, find_placement, remaining

__all__ = ["Reservation", "due_task", "held_back", "plan", "reserve_first", "hold_capacity", "start_around", "room", "backfill",
           "gang_steer"]


@dataclass(frozen=True)
class Reservation:
    """The reservation of one pass: task ``task`` starts on ``gpus`` at step ``start`` with
    ``memory`` GiB and ``compute`` per GPU; ``slack`` is, per reserved GPU, the memory its
    non-preemptible tasks still running at ``start`` and the reserved task leave free then."""

    task: str
    gpus: tuple[str, ...]
    start: float
    memory: float
    compute: float
    slack: Mapping[str, float]


def due_task(states: Sequence[TaskView], now: float, duration: np.ndarray, *, wait: float,
             long: float) -> int | None:
    """Index in ``states`` of the due task that arrived first (see the module docstring), or
    ``None``: a waiting non-preemptible task whose calibrated reported duration (``duration``;
    infinite for a task that proved its report false: never due) is at least ``long`` steps,
    and that has waited at least ``wait`` times that duration."""
    best: int | None = None
    for k, s in enumerate(states):
        d = float(duration[k])
        if s.state != "waiting" or s.task.preemptible or math.isinf(d) or d < long - 1e-9 \
                or now - s.arrival < wait * d - 1e-9:
            continue
        if best is None or (s.arrival, s.id) < (states[best].arrival, states[best].id):
            best = k
    return best


def reserve_first(cluster: Pool, states: Sequence[TaskView], score: np.ndarray, duration: np.ndarray,
                  kappa: Mapping[str, float], *, wait: float, long: float, low: Mapping[str, float] | None = None,
                  hold: bool = False) -> tuple[Reservation | None, Mapping[str, float], frozenset[str]]:
    """This pass's reservation (:func:`due_task`, :func:`plan`), the duration factors it was
    planned with, and (``hold``) the tasks :func:`held_back`; the due task's ``score`` is raised
    above every other (in place), so it starts first wherever it fits. ``low``: per tenant, the
    smallest ratio work / report of its over-reported finished tasks; its durations (and
    ``kappa``) count at that ratio."""
    low = low or {}
    duration = duration * np.fromiter((low.get(s.task.tenant, 1.0) for s in states), float, len(states))
    kappa = {**kappa, **{t: kappa.get(t, 1.0) * f for t, f in low.items()}}
    k = due_task(states, cluster.now, duration, wait=wait, long=long)
    res = None if k is None else plan(cluster, states[k], kappa)
    if k is not None and res is not None:
        score[k] = max(float(score.max()), 1e-300) * 1e9
    return res, kappa, held_back(states, cluster.now, duration, wait=wait, long=long) if hold else frozenset()


def held_back(states: Sequence[TaskView], now: float, duration: np.ndarray, *, wait: float,
              long: float) -> frozenset[str]:
    """Ids of the waiting non-preemptible tasks long enough to become due (:func:`due_task`)
    that are not due yet: they do not start before then, unless no other task of ``states``
    waits (then holding them would only leave capacity idle)."""
    ids = frozenset(s.id for k, s in enumerate(states) if s.state == "waiting" and not s.task.preemptible
                    and math.isfinite(float(duration[k])) and float(duration[k]) >= long - 1e-9
                    and now - s.arrival < wait * float(duration[k]) - 1e-9)
    return ids if any(s.state == "waiting" and s.id not in ids for s in states) else frozenset()


def projected_end(st: TaskView, now: float, kappa: float) -> float:
    """Step at which running task ``st`` ends if its calibrated report holds (now, once past it)."""
    rem = remaining(st, now, kappa)
    return now + (rem / st.speed if st.speed > 0 else 0.0)


def plan(cluster: Pool, st: TaskView, kappa: Mapping[str, float]) -> Reservation | None:
    """The reservation of waiting task ``st``: the GPU group where its preferred memory and
    compute are free earliest as non-preemptible running tasks end (projected, with the tenants'
    duration factors ``kappa``); ``None`` when no group ever fits it (GPUs down or too small)."""
    t = st.task
    now = cluster.now
    when: dict[str, float] = {}  # per GPU: the earliest step it can host the task
    for g, gs in cluster.gpus.items():
        if not gs.up or not cluster.model_ok(t.id, g) or gs.spec.memory + TOL < t.preferred_memory:
            continue
        pinned = [cluster.tasks[x] for x in sorted(gs.tasks) if not cluster.tasks[x].task.preemptible]
        ends = sorted((projected_end(p, now, kappa.get(p.task.tenant, 1.0)), p.id, p.memory, p.compute) for p in pinned)
        mem = gs.spec.memory - sum(p.memory for p in pinned)
        comp = gs.spec.compute - sum(p.compute for p in pinned)
        at = now
        for end, _, m, c in ends:
            if mem + TOL >= t.preferred_memory and comp + TOL >= t.compute:
                break
            at, mem, comp = max(now, end), mem + m, comp + c
        if mem + TOL >= t.preferred_memory and comp + TOL >= t.compute:
            when[g] = at
    best: tuple[float, str, tuple[str, ...]] | None = None
    for members in cluster.nodes.values():
        ok = sorted((when[g], g) for g in members if g in when)
        if len(ok) < t.gpus:
            continue
        group = ok[: t.gpus]
        key = (group[-1][0], group[0][1], tuple(g for _, g in group))
        if best is None or key < best:
            best = key
    if best is None:
        return None
    start, _, gpus = best
    slack = {}
    for g in gpus:
        gs = cluster.gpus[g]
        kept = sum(cluster.tasks[x].memory for x in sorted(gs.tasks) if not cluster.tasks[x].task.preemptible
                   and projected_end(cluster.tasks[x], now, kappa.get(cluster.tasks[x].task.tenant, 1.0)) > start + 1e-9)
        slack[g] = max(0.0, gs.spec.memory - kept - t.preferred_memory)
    return Reservation(t.id, gpus, start, t.preferred_memory, t.compute, slack)


def hold_capacity(res: Reservation | None, cap: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """``cap`` (``{gpu: (memory, compute)}`` a round may plan on) with the reserved GPUs cut to
    their slack while the reserved task cannot start now (a round plans tasks that may outlast
    the planned start); unchanged when it can (it is ranked first and takes its place)."""
    if res is None or all(g in cap and cap[g][0] + TOL >= res.memory and cap[g][1] + TOL >= res.compute
                          for g in res.gpus):
        return cap
    return {g: (min(m, res.slack[g]) if g in res.slack else m, c) for g, (m, c) in cap.items()}


def _outlasting(cluster: Pool, g: str, res: Reservation, kappa: Mapping[str, float]) -> float:
    """Memory on reserved GPU ``g`` held by running tasks projected to run past the planned start."""
    now = cluster.now
    return sum(s.memory for s in (cluster.tasks[x] for x in sorted(cluster.gpus[g].tasks))
               if projected_end(s, now, kappa.get(s.task.tenant, 1.0)) > res.start + 1e-9)


def _void(cluster: Pool, res: Reservation | None) -> bool:
    """No reservation, or its task no longer waits (it started: its memory is its own now)."""
    return res is None or cluster.tasks[res.task].state != "waiting"


def room(cluster: Pool, g: str, res: Reservation | None, kappa: Mapping[str, float]) -> float:
    """Free memory on GPU ``g`` that a task running past the planned start may take: all of it
    off the reserved GPUs, else what the reserved task and the tasks outlasting the start leave."""
    free = cluster.gpus[g].free_memory
    if res is None or _void(cluster, res) or g not in res.gpus:
        return free
    return max(0.0, min(free, cluster.gpus[g].spec.memory - res.memory - _outlasting(cluster, g, res, kappa)))


def _capacity(cluster: Pool, st: TaskView, memory: float, res: Reservation,
              kappa: Mapping[str, float]) -> dict[str, tuple[float, float]] | None:
    """What waiting task ``st`` with ``memory`` GiB may use under ``res``: ``None`` (all that is
    free) for the reserved task and a task projected to end by the planned start."""
    if st.id == res.task or _void(cluster, res):
        return None
    speed = task_speed(st.task, memory)
    rem = remaining(st, cluster.now, kappa.get(st.task.tenant, 1.0))
    if speed > 0 and cluster.now + rem / speed <= res.start + 1e-9:
        return None
    return {g: (room(cluster, g, res, kappa), gs.free_compute) for g, gs in cluster.gpus.items()}


def start_around(cluster: Pool, st: TaskView, *, elastic: bool, res: Reservation, kappa: Mapping[str, float]) -> bool:
    """:func:`~gensolver.market.pool.backfill_start` keeping reservation ``res``: on a reserved
    GPU a task may use the reserved memory only if its projected end (calibrated report at the
    speed of the memory it gets; the minimum's for an elastic start) is no later than the
    planned start. ``True`` when ``st`` started."""
    t = st.task
    cap = _capacity(cluster, st, t.preferred_memory, res, kappa)
    gpus = find_placement(cluster, st, t.preferred_memory, capacity=cap)
    if gpus is not None:
        cluster.start(st.id, gpus, t.preferred_memory)
        return True
    if not elastic or t.min_memory >= t.preferred_memory:
        return False
    cap = _capacity(cluster, st, t.min_memory, res, kappa)
    gpus = find_placement(cluster, st, t.min_memory, fit="most", capacity=cap)
    if gpus is None:
        return False
    free = min((cap[g][0] if cap is not None else cluster.gpus[g].free_memory) for g in gpus)
    cluster.start(st.id, gpus, max(t.min_memory, min(t.preferred_memory, free)))
    return True


def gang_steer(cluster: Pool, states: Sequence[TaskView], kappa: Mapping[str, float]) -> Steer | None:
    """Keep the node a waiting gang is planned on clear of the starts that would delay it.

    The waiting multi-GPU task of ``states`` that arrived first (ties: id) is planned as a
    reservation would plan it (:func:`plan`: the node whose non-preemptible tasks, at their
    projected ends, free its GPUs first). The waiting non-preemptible tasks that would still
    run at that planned start even at full speed (calibrated remaining work, duration factors
    ``kappa``) are steered off that node (:class:`~gensolver.market.pool.Steer`): they take
    it only where no other node fits them, so nothing waits that fits. Preemptible tasks are
    not steered (a round boundary can stop them), nor are tasks that end by the planned start
    (EASY backfilling's rule [1]_, as a preference, not a reservation). ``None``: no gang
    waits, or none fits anywhere.
    """
    gangs = [s for s in states if s.state == "waiting" and s.task.gpus > 1]
    if not gangs:
        return None
    first = min(gangs, key=lambda s: (s.arrival, s.id))
    res = plan(cluster, first, kappa)
    if res is None:
        return None
    now = cluster.now
    node = cluster.gpus[res.gpus[0]].spec.node
    movers = frozenset(
        s.id for s in states if s.state == "waiting" and s.id != first.id and not s.task.preemptible
        and now + remaining(s, now, kappa.get(s.task.tenant, 1.0)) > res.start + 1e-9)
    return Steer(frozenset(cluster.nodes[node]), movers)


def backfill(cluster: Pool, order: Sequence[TaskView], *, elastic: bool, res: Reservation | None,
             kappa: Mapping[str, float], steer: Steer | None = None) -> None:
    """The engine's backfill: waiting tasks of ``order`` start on free capacity, in that order,
    every one at its preferred memory first, then (``elastic``) those still waiting at less, at
    least their minimum (:func:`~gensolver.market.pool.backfill_queue`); under reservation
    ``res`` through :func:`start_around`, else steered by ``steer`` (:func:`gang_steer`)."""
    if res is None:
        backfill_queue(cluster, order, elastic=elastic,
                       start=lambda c, st, *, elastic: backfill_start(c, st, elastic=elastic, steer=steer))
    else:
        backfill_queue(cluster, order, elastic=elastic,
                       start=lambda c, st, *, elastic: start_around(c, st, elastic=elastic, res=res, kappa=kappa))
