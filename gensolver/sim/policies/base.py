"""The policy interface, the placement helper and the policy registry."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ...errors import UnknownNameError
from ...registry import Registry
from ..engine import TOL, Cluster, TaskState

__all__ = ["Policy", "POLICIES", "register_policy", "get_policy", "list_policies", "UnknownPolicyError",
           "find_placement"]


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


def pinned_free_capacity(cluster: Cluster) -> dict[str, tuple[float, float]]:
    """``{gpu: (memory, compute)}`` left on each up GPU by its non-preemptible tasks: what a
    policy that may preempt can re-plan (preemptible tasks' shares count as free)."""
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
    return cap


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
            if not gs.up or not cluster.model_ok(t.id, g):
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


#: name -> factory(**options) returning a Policy (filled by :mod:`gensolver.sim.policies`)
POLICIES: Registry[Callable[..., Policy]] = Registry("policy", plural="policies", error=UnknownPolicyError)


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
