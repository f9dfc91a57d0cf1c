"""The policy interface, the placement helper and the policy registry."""

from __future__ import annotations

from typing import Any, Callable

from ...errors import UnknownNameError
from ...market.pool import find_placement, pinned_free_capacity
from ...registry import Registry
from ..engine import Cluster

__all__ = ["Policy", "POLICIES", "register_policy", "get_policy", "list_policies", "UnknownPolicyError",
           "find_placement",
           "pinned_free_capacity"]


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
