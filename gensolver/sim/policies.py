"""Scheduling policies behind one registry.

Every policy is an object with a ``name`` and ``schedule(cluster, boundary)``, called by the
simulator after each batch of simultaneous events (arrivals, completions, failures,
recoveries; ``boundary=False``) and at every round boundary (``boundary=True``, every
``lease`` steps). It acts through :meth:`Cluster.start`, :meth:`Cluster.stop` and
:meth:`Cluster.resize`.

=====================  =======================================================================
name                   behaviour
=====================  =======================================================================
``fcfs-whole-gpu``     arrival order; each task holds whole GPUs (Kubernetes ``nvidia.com/gpu``)
``fcfs-packing``       arrival order; preferred memory, first fit or best fit on shared GPUs
``elastic``            like packing, but starts with less than preferred (>= minimum) when only
                       that is free, and grows tasks back as memory frees
``finish-time-fair``   Themis-like: each round favours the worst finish-time fairness rho
``auction``            the market (:mod:`gensolver.market`) with any mechanism
=====================  =======================================================================

Arrival-order policies skip a task that does not fit and try the next (as the Kubernetes
scheduler does); ``strict=True`` stops at the first task that does not fit (head-of-line).
Gangs (``gpus > 1``) take GPUs of one node.

References
----------
.. [1] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020.
.. [2] Q. Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
   Fragmentation Gradient Descent", USENIX ATC 2023.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from ..errors import UnknownNameError
from ..registry import Registry
from .engine import TOL, Cluster, TaskState

__all__ = ["Policy", "POLICIES", "register_policy", "get_policy", "list_policies", "UnknownPolicyError",
           "find_placement", "FcfsWholeGpu", "FcfsPacking", "Elastic", "FinishTimeFair", "finish_time_rho"]


class UnknownPolicyError(UnknownNameError):
    """An unknown policy name; the message lists the valid ones."""


class Policy:
    """Base class: ``name`` and ``schedule``. ``rounds`` holds per-round statistics (auction)."""

    name = "policy"

    def __init__(self) -> None:
        self.rounds: list[dict[str, Any]] = []

    def attach(self, cluster: Cluster) -> None:
        """Called once before the run."""

    def schedule(self, cluster: Cluster, boundary: bool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def find_placement(cluster: Cluster, st: TaskState, memory: float, *, fit: str = "best", whole: bool = False,
                   capacity: Mapping[str, tuple[float, float]] | None = None) -> tuple[str, ...] | None:
    """GPUs (one node, ``st.task.gpus`` of them) that can host ``memory`` GiB each, or ``None``.

    ``fit="best"`` picks the group with the least memory left over (best fit), ``"first"`` the
    first in GPU order, ``"most"`` the one with the most free memory. ``whole`` needs idle GPUs
    with at least the task's minimum memory. ``capacity`` (gpu -> free memory, compute)
    overrides the cluster's free capacity (used for planning).
    """
    t = st.task
    k = t.gpus
    best: tuple[float, tuple[str, ...]] | None = None
    for members in cluster.nodes.values():
        ok: list[tuple[float, str]] = []
        for g in members:
            gs = cluster.gpus[g]
            if not gs.up:
                continue
            fm, fc = capacity[g] if capacity is not None else (gs.free_memory, gs.free_compute)
            if whole:
                if gs.tasks or gs.spec.memory + TOL < t.min_memory or fm + TOL < gs.spec.memory:
                    continue
                ok.append((gs.spec.memory - t.preferred_memory if gs.spec.memory >= t.preferred_memory
                           else 1e6 + t.preferred_memory - gs.spec.memory, g))
            elif fm + TOL >= memory and fc + TOL >= t.compute:
                ok.append((fm - memory + 1e-6 * gs.spec.memory, g))  # ties: the smaller card
        if whole and k > 1:  # a whole-GPU gang takes identical devices
            buckets: dict[float, list[tuple[float, str]]] = {}
            for sc, g in ok:
                buckets.setdefault(cluster.gpus[g].spec.memory, []).append((sc, g))
            ok = min((b for b in buckets.values() if len(b) >= k), key=lambda b: b[0][0], default=[])
        if len(ok) < k:
            continue
        if fit == "first":
            group = tuple(g for _, g in ok[:k])
            return group
        ok.sort(key=lambda p: -p[0] if fit == "most" else p[0])
        chosen = ok[:k]
        score = sum(s for s, _ in chosen)
        if fit == "most":
            score = -score
        if best is None or score < best[0] - 1e-12:
            best = (score, tuple(g for _, g in chosen))
    if best is None:
        return None
    return best[1]


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
            raise ValueError(f"fit must be 'best' or 'first', got {fit!r}")
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
            raise ValueError(f"start_fraction must be in [0, 1], got {start_fraction!r}")
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


def finish_time_rho(st: TaskState, now: float) -> float:
    """Estimated finish-time fairness ``rho = T_shared / T_ideal`` of a task at ``now``.

    ``T_shared = (now - arrival) + remaining / speed`` (speed 1 assumed for a waiting task),
    ``T_ideal = duration`` (alone, with preferred memory). Mahajan et al., NSDI 2020.
    """
    speed = st.speed if st.state == "running" and st.speed > 0 else 1.0
    return ((now - st.arrival) + st.remaining / speed) / st.task.duration


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
            raise ValueError(f"fairness_knob must be in [0, 1), got {fairness_knob!r}")
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
        cap: dict[str, tuple[float, float]] = {}
        for g, gs in cluster.gpus.items():
            if not gs.up:
                continue
            m, c = gs.spec.memory, gs.spec.compute
            for tid in gs.tasks:
                s = cluster.tasks[tid]
                if not s.task.preemptible:
                    m -= s.memory
                    c -= s.compute
            cap[g] = (m, c)
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


#: name -> factory(**options) returning a Policy (``auction`` is imported on first use)
POLICIES: Registry[Callable[..., Policy]] = Registry("policy", plural="policies", error=UnknownPolicyError)
for _name, _factory in (("fcfs-whole-gpu", FcfsWholeGpu), ("fcfs-packing", FcfsPacking), ("elastic", Elastic),
                        ("finish-time-fair", FinishTimeFair), ("auction", "gensolver.sim.auction:AuctionPolicy")):
    POLICIES.register(_name, _factory)


def register_policy(name: str, factory: Callable[..., Policy] | str, *, replace: bool = False) -> None:
    """Add a policy factory (or its ``"module:attribute"`` path) under ``name``; a name already
    taken is refused unless ``replace=True``."""
    POLICIES.register(name, factory, replace=replace)


def list_policies() -> list[str]:
    """Registered policy names."""
    return POLICIES.names(sort=True)


def get_policy(policy: str | Policy | Callable[..., Policy], **options: Any) -> Policy:
    """A policy instance from a registry name (with options), an instance or a factory.

    Raises
    ------
    UnknownPolicyError
        For an unknown name; the message lists the valid ones.
    """
    if isinstance(policy, Policy):
        if options:
            raise ValueError("options cannot be applied to a policy instance")
        return policy
    if callable(policy):
        return policy(**options)
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a name, a Policy or a factory, got {type(policy).__name__}")
    return POLICIES.get(policy)(**options)
