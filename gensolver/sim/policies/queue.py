"""Arrival-order policies: whole GPUs, packing, elastic memory."""

from __future__ import annotations

from ...errors import InputError
from ..engine import TOL, Cluster, TaskState
from .base import Policy, find_placement

__all__ = ["FcfsWholeGpu", "FcfsPacking", "Elastic"]


class FcfsWholeGpu(Policy):
    """Each task takes whole GPUs (memory and compute), in arrival order.

    The task runs at the speed its memory allows (``min(GPU memory, preferred)``) and needs GPUs
    with at least its minimum memory; among idle GPUs it takes the smallest that holds its
    preferred memory (best fit), else the largest.
    """

    name = "fcfs-whole-gpu"

    def __init__(self, *, strict: bool = False) -> None:
        super().__init__()
        self.strict = strict

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        for st in cluster.waiting():
            gpus = find_placement(cluster, st, st.task.preferred_memory, whole=True)
            if gpus is None:
                if self.strict:
                    return
                continue
            cluster.start(st.id, gpus, cluster.gpus[gpus[0]].spec.memory, whole=True)


class FcfsPacking(Policy):
    """Arrival order; each task gets its preferred memory on a shared GPU (first or best fit)."""

    name = "fcfs-packing"

    def __init__(self, *, fit: str = "best", strict: bool = False) -> None:
        super().__init__()
        if fit not in ("best", "first"):
            raise InputError(f"fit must be 'best' or 'first', got {fit!r}")
        self.fit, self.strict = fit, strict

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        for st in cluster.waiting():
            gpus = find_placement(cluster, st, st.task.preferred_memory, fit=self.fit)
            if gpus is None:
                if self.strict:
                    return
                continue
            cluster.start(st.id, gpus, st.task.preferred_memory)


class Elastic(Policy):
    """Arrival order with elastic memory.

    1. Each waiting task starts with its preferred memory where that fits (best fit); otherwise,
       on the group with the most free memory, with ``min(preferred, free)`` when that is at
       least ``max(min_memory, start_fraction * preferred)``.
    2. Then running tasks below their preferred memory grow, in arrival order, by what is free
       on their GPUs (up to preferred).
    """

    name = "elastic"

    def __init__(self, *, start_fraction: float = 0.0, strict: bool = False) -> None:
        super().__init__()
        if not 0 <= start_fraction <= 1:
            raise InputError(f"start_fraction must be in [0, 1], got {start_fraction!r}")
        self.start_fraction, self.strict = start_fraction, strict

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        for st in cluster.waiting():
            t = st.task
            gpus = find_placement(cluster, st, t.preferred_memory)
            if gpus is not None:
                cluster.start(st.id, gpus, t.preferred_memory)
                continue
            floor = max(t.min_memory, self.start_fraction * t.preferred_memory)
            gpus = find_placement(cluster, st, floor, fit="most")
            if gpus is None:
                if self.strict:
                    break
                continue
            free = min(cluster.gpus[g].free_memory for g in gpus)
            cluster.start(st.id, gpus, min(t.preferred_memory, free))
        for st in cluster.running():
            if st.memory + TOL < st.task.preferred_memory and st.task.preferred_memory <= _gpu_cap(cluster, st):
                free = min(cluster.gpus[g].free_memory for g in st.gpus)
                if free > TOL:
                    cluster.resize(st.id, min(st.task.preferred_memory, st.memory + free))


def _gpu_cap(cluster: Cluster, st: TaskState) -> float:
    return min(cluster.gpus[g].spec.memory for g in st.gpus) if st.gpus else 0.0


