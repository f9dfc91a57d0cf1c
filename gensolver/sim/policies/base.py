"""The policy interface, the placement helper and the policy registry."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping

from ..._deprecation import GensolverDeprecationWarning
from ...errors import InputError, InputTypeError, UnknownNameError
from ...market.pool import find_placement, pinned_free_capacity
from ...registry import Registry
from ..engine import Cluster

__all__ = ["Policy", "POLICIES", "DEPRECATED_POLICIES", "register_policy", "get_policy", "list_policies",
           "UnknownPolicyError", "find_placement", "pinned_free_capacity", "deprecated_policy_note", "policy_label"]


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


#: retired policy names, kept one release: name -> (the policy it runs, its options, retired options)
DEPRECATED_POLICIES: Mapping[str, tuple[str, Mapping[str, Any], tuple[str, ...]]] = {
    # the welfare auction was a second market; its name now runs the one market, solver-cleared
    "auction": ("market", {"clearing": "solver"}, ("mechanism", "time_limit", "late_value", "market",
                                                   "between_solver")),
}


def policy_label(name: str) -> str:
    """The name results carry for policy ``name``: itself, or for a retired name the policy it
    runs and its preset values (``auction`` -> ``market-solver``)."""
    if name not in DEPRECATED_POLICIES:
        return name
    target, options, _ = DEPRECATED_POLICIES[name]
    return "-".join([target, *map(str, options.values())])


def deprecated_policy_note(name: str) -> str | None:
    """What using the retired policy ``name`` says (``None`` for a current name)."""
    if name not in DEPRECATED_POLICIES:
        return None
    target, options, _ = DEPRECATED_POLICIES[name]
    opts = ",".join(f"{k}={v}" for k, v in options.items())
    return (f"policy {name!r} is deprecated and will be removed in the next release: it runs the one market, "
            f"{target!r} with {opts}, as {policy_label(name)!r} (one engine, one code path)")


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
            raise InputError("options cannot be applied to a policy instance")
        return policy
    if callable(policy):
        return policy(**options)
    if not isinstance(policy, str):
        raise InputTypeError(f"policy must be a name, a Policy or a factory, got {type(policy).__name__}")
    if policy in DEPRECATED_POLICIES and policy not in POLICIES:
        target, preset, retired = DEPRECATED_POLICIES[policy]
        warnings.warn(deprecated_policy_note(policy) or "", GensolverDeprecationWarning, stacklevel=2)
        gone = sorted(set(options) & set(retired))
        if gone:
            raise InputError(f"policy {policy!r}: option {gone[0]!r} belonged to the retired welfare auction; "
                             f"{policy!r} now runs {target!r} (options: its CreditEngine options)")
        pol = POLICIES.get(target)(**{**preset, **options})
        pol.name = policy_label(policy)
        return pol
    return POLICIES.get(policy)(**options)
