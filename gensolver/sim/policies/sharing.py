"""GPU sharing modes operators run today, as baseline policies (arrival order, no preemption).

Each mode has a documented performance model; all three place tasks in arrival order (the
next task that fits, as the Kubernetes scheduler does), gangs on one node.

``time-slicing`` (NVIDIA device-plugin time-slicing)
    Each GPU offers ``replicas`` slots; a task takes one slot per GPU (compute allocation
    ``1 / replicas``, so the audit's compute capacity holds) and its memory (memory is not
    isolated; the sum must fit). The resident tasks take turns on the *whole* device: with
    ``k`` tasks resident, each runs at ``(1 - switch_cost) / k`` of its speed alone
    (``switch_cost`` is the context-switch overhead, charged only when ``k > 1``), whatever its
    compute share: time-slicing cannot run two small kernels at once.
``mps`` (CUDA Multi-Process Service)
    Tasks run concurrently with their compute share as a hard limit
    (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``) and their memory; co-located tasks contend for
    memory bandwidth: a task runs at ``1 / (1 + interference * C)`` of its speed, where ``C``
    is the sum of the compute shares of the *other* tasks on its GPU(s) (the worst of its
    GPUs for a gang).
``mig`` (Multi-Instance GPU, A100/H100)
    A GPU is cut into instances of fixed profiles ``Ng.Mgb``: ``N`` of 7 compute slices and
    ``M`` GiB (scaled to the card: 1g.10gb .. 7g.80gb on an 80 GiB card, 1g.5gb .. 7g.40gb on
    40 GiB; :func:`mig_profiles`). A task takes the smallest profile with at least its
    preferred memory and compute (speed ``min(1, (N/7) / compute)``, no interference: MIG
    isolates); the instance's whole memory and compute are allocated. The instances on a GPU
    use at most 7 compute slices and its memory (placement rules inside the card are not
    modelled). Creating an instance of a profile no free instance on that GPU has costs
    ``reconfig_steps`` of set-up work (the GPU's other instances keep running); a freed
    instance stays for the next task of that profile.

References
----------
.. [1] NVIDIA, "Time-Slicing GPUs in Kubernetes", GPU Operator documentation.
.. [2] NVIDIA, "Multi-Process Service", CUDA documentation.
.. [3] NVIDIA, "Multi-Instance GPU User Guide" (A100/H100 profiles).
"""

from __future__ import annotations

import math

from ...errors import InputError
from ...model.tasks import Task
from ..engine import TOL, Cluster, TaskState
from .base import Policy

__all__ = ["TimeSlicing", "Mps", "Mig", "mig_profiles"]


def _node_groups(cluster: Cluster, st: TaskState, ok) -> tuple[str, ...] | None:  # type: ignore[no-untyped-def]
    """The first node (in cluster order) with ``st.task.gpus`` GPUs satisfying ``ok(gpu)``."""
    for members in cluster.nodes.values():
        good = [g for g in members if cluster.gpus[g].up and cluster.model_ok(st.id, g) and ok(g)]
        if len(good) >= st.task.gpus:
            return tuple(good[:st.task.gpus])
    return None


class TimeSlicing(Policy):
    """Time-slicing with ``replicas`` slots per GPU (see the module docstring)."""

    name = "time-slicing"

    def __init__(self, *, replicas: int = 4, switch_cost: float = 0.05) -> None:
        super().__init__()
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
            raise InputError(f"replicas must be a positive integer, got {replicas!r}")
        if not 0 <= switch_cost < 1:
            raise InputError(f"switch_cost must be in [0, 1), got {switch_cost!r}")
        self.replicas, self.switch_cost = replicas, switch_cost

    def share(self, k: int) -> float:
        """Speed factor of each of ``k`` resident tasks."""
        return 1.0 if k <= 1 else (1.0 - self.switch_cost) / k

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        slot = 1.0 / self.replicas
        for st in cluster.waiting():
            need = st.task.preferred_memory
            gpus = _node_groups(cluster, st, lambda g, need=need: cluster.gpus[g].fits(need, slot))
            if gpus is not None:
                cluster.start(st.id, gpus, st.task.preferred_memory, compute=slot)
        self.rebalance(cluster)

    def rebalance(self, cluster: Cluster) -> None:
        for st in cluster.running():
            k = max(len(cluster.gpus[g].tasks) for g in st.gpus)
            cluster.set_factor(st.id, self.share(k))


class Mps(Policy):
    """CUDA MPS with memory-bandwidth interference (see the module docstring)."""

    name = "mps"

    def __init__(self, *, interference: float = 0.2) -> None:
        super().__init__()
        if not (math.isfinite(interference) and interference >= 0):
            raise InputError(f"interference must be a finite number >= 0, got {interference!r}")
        self.interference = interference

    def factor(self, cluster: Cluster, st: TaskState) -> float:
        """``1 / (1 + interference * compute of the others``, worst GPU)."""
        worst = 0.0
        for g in st.gpus:
            others = sum(cluster.tasks[t].compute for t in sorted(cluster.gpus[g].tasks) if t != st.id)
            worst = max(worst, others)
        return 1.0 / (1.0 + self.interference * worst)

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        for st in cluster.waiting():
            t = st.task
            gpus = _node_groups(cluster, st, lambda g, t=t: cluster.gpus[g].fits(t.preferred_memory, t.compute))
            if gpus is not None:
                cluster.start(st.id, gpus, t.preferred_memory)
        for st in cluster.running():
            cluster.set_factor(st.id, self.factor(cluster, st))


#: MIG profiles of an 80 GiB card: (compute slices of 7, memory GiB)
MIG_80GB = ((1, 10.0), (2, 20.0), (3, 40.0), (4, 40.0), (7, 80.0))


def mig_profiles(memory: float) -> tuple[tuple[int, float], ...]:
    """The MIG profiles of a card with ``memory`` GiB: the 80 GiB table scaled (A100-40GB: 1g.5gb..)."""
    return tuple((g, m * memory / 80.0) for g, m in MIG_80GB)


class Mig(Policy):
    """Multi-Instance GPU with fixed profiles and a reconfiguration cost (module docstring)."""

    name = "mig"

    def __init__(self, *, reconfig_steps: float = 1.0) -> None:
        super().__init__()
        if not (math.isfinite(reconfig_steps) and reconfig_steps >= 0):
            raise InputError(f"reconfig_steps must be a finite number >= 0, got {reconfig_steps!r}")
        self.reconfig_steps = reconfig_steps
        self.idle: dict[str, list[int]] = {}  # gpu -> compute slices of configured idle instances
        self.placed: dict[str, tuple[tuple[str, ...], int]] = {}  # running task -> (gpus, slices)

    @staticmethod
    def profile(card_memory: float, memory: float, compute: float) -> tuple[int, float] | None:
        """Smallest profile ``(slices, GiB)`` of a ``card_memory`` GiB card that holds ``memory``
        GiB and ``compute`` (a task needing more compute than 7g still fits 7g), or ``None``."""
        for g, m in mig_profiles(card_memory):
            if m + TOL >= memory and (g / 7.0 + TOL >= compute or g == 7):
                return g, m
        return None

    def _used(self, cluster: Cluster, gpu: str) -> int:
        return sum(round(cluster.tasks[t].compute * 7) for t in cluster.gpus[gpu].tasks)

    def schedule(self, cluster: Cluster, boundary: bool) -> None:
        for tid in list(self.placed):  # instances of tasks that left stay configured, idle
            if cluster.tasks[tid].state != "running":
                gpus, slices = self.placed.pop(tid)
                for g in gpus:
                    self.idle.setdefault(g, []).append(slices)
        for st in cluster.waiting():
            t = st.task
            fits: dict[str, tuple[int, float]] = {}

            def ok(g: str, t: Task = t, fits: dict[str, tuple[int, float]] = fits) -> bool:
                gs = cluster.gpus[g]
                prof = self.profile(gs.spec.memory, t.preferred_memory, t.compute)
                if prof is None or self._used(cluster, g) + prof[0] > 7 or not gs.fits(prof[1], prof[0] / 7.0):
                    return False
                fits[g] = prof
                return True

            group = _node_groups(cluster, st, ok)
            if group is None or any(fits[g] != fits[group[0]] for g in group):
                continue  # (a gang needs the same profile on each GPU)
            slices, mem = fits[group[0]]
            setup = 0.0
            for g in group:
                kept = self.idle.setdefault(g, [])
                if slices in kept:
                    kept.remove(slices)
                else:
                    setup = self.reconfig_steps
            speed = min(1.0, (slices / 7.0) / t.compute)
            cluster.start(st.id, group, mem, compute=slices / 7.0, factor=speed, setup=setup)
            self.placed[st.id] = (group, slices)
