"""Finish-time fairness (Themis-like)."""

from __future__ import annotations

import math

from ...errors import InputError
from ..engine import TOL, Cluster, TaskState
from .base import Policy, find_placement, pinned_free_capacity

__all__ = ["FinishTimeFair", "finish_time_rho"]


def finish_time_rho(st: TaskState, now: float) -> float:
    """Estimated finish-time fairness ``rho = T_shared / T_ideal`` of a task at ``now``.

    ``T_shared = (now - arrival) + remaining / speed`` (speed 1 assumed for a waiting task),
    ``T_ideal = duration`` (alone, with preferred memory). Mahajan et al., NSDI 2020. Only what
    the tenant reported enters: arrival, duration and the remaining work estimated from them
    (:attr:`TaskState.est_remaining`).
    """
    speed = st.speed if st.state == "running" and st.speed > 0 else 1.0
    return ((now - st.arrival) + st.est_remaining / speed) / st.task.duration


class FinishTimeFair(Policy):
    """Themis-like finish-time fairness (Mahajan et al., NSDI 2020), with preferred memory.

    At every round boundary, the waiting and running preemptible tasks are ranked by their
    estimated ``rho`` (:func:`finish_time_rho`, worst first) and placed again from scratch on
    the capacity left by non-preemptible tasks: a running task keeps its GPUs when they still
    fit, others take a best-fit placement; running tasks left out are preempted (checkpoint
    cost). Between boundaries, free capacity goes to waiting tasks in ``rho`` order without
    preemption. (Themis' partial auction across apps is replaced by this direct ranking; a
    ``fairness_knob`` of f lets only the worst ``1 - f`` fraction preempt, as in Themis.)
    """

    name = "finish-time-fair"

    def __init__(self, *, fairness_knob: float = 0.0) -> None:
        super().__init__()
        if not 0 <= fairness_knob < 1:
            raise InputError(f"fairness_knob must be in [0, 1), got {fairness_knob!r}")
        self.knob = fairness_knob

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        now = cluster.now
        if not boundary:
            for st in sorted(cluster.waiting(), key=lambda s: (-finish_time_rho(s, now), s.arrival)):
                gpus = find_placement(cluster, st, st.task.preferred_memory)
                if gpus is not None:
                    cluster.start(st.id, gpus, st.task.preferred_memory)
            return
        movable = [s for s in cluster.running() if s.task.preemptible]
        cands = sorted(cluster.waiting() + movable, key=lambda s: (-finish_time_rho(s, now), s.arrival))
        n_priv = max(1, math.ceil((1 - self.knob) * len(cands))) if cands else 0
        cap = pinned_free_capacity(cluster)
        plan: dict[str, tuple[str, ...]] = {}
        place: tuple[str, ...] | None
        for rank, st in enumerate(cands):
            mem = st.memory if st.state == "running" else st.task.preferred_memory
            if st.state == "running" and all(cap[g][0] + TOL >= mem and cap[g][1] + TOL >= st.compute for g in st.gpus):
                place = st.gpus
            elif st.state == "running" or rank < n_priv:
                place = find_placement(cluster, st, st.task.preferred_memory, capacity=cap)
                mem = st.task.preferred_memory
            else:
                place = None
            if place is None:
                continue
            plan[st.id] = place
            for g in place:
                cap[g] = (cap[g][0] - mem, cap[g][1] - st.task.compute)
        for st in movable:
            if plan.get(st.id) != st.gpus:
                cluster.stop(st.id, reason="preempt")
        for st in cands:
            if st.state == "waiting" and st.id in plan:
                place = plan[st.id]
                if all(cluster.gpus[g].fits(st.task.preferred_memory, st.task.compute) for g in place):
                    cluster.start(st.id, place, st.task.preferred_memory)


