"""The policy registry and its front end (:mod:`gensolver.sim.policies.base`): names resolved
through one registry, instances and factories passed through, the retired ``auction`` name
running the market with its label and warning, and a user policy run by the simulator."""

from __future__ import annotations

import pytest

from gensolver import GensolverDeprecationWarning
from gensolver.errors import InputError
from gensolver.sim import UnknownPolicyError, audit_log, simulate, synthetic_workload
from gensolver.sim.policies.base import (
    DEPRECATED_POLICIES,
    POLICIES,
    Policy,
    deprecated_policy_note,
    get_policy,
    list_policies,
    policy_label,
    register_policy,
)
from gensolver.sim.policies.queue import FcfsPacking


class _Nothing(Policy):
    """Starts nothing: every task stays waiting."""

    name = "nothing"

    def schedule(self, cluster, boundary):  # type: ignore[no-untyped-def]
        return None


def test_names_instances_and_factories_resolve() -> None:
    assert isinstance(get_policy("fcfs-packing", fit="first"), FcfsPacking)
    mine = _Nothing()
    assert get_policy(mine) is mine
    assert isinstance(get_policy(_Nothing), _Nothing)
    with pytest.raises(InputError, match="options cannot be applied to a policy instance"):
        get_policy(mine, strict=True)
    with pytest.raises(UnknownPolicyError, match="fcfs-packing"):  # the message lists the valid names
        get_policy("no-such-policy")
    assert list_policies() == sorted(list_policies()) and "auction" not in list_policies()


def test_a_taken_name_is_refused_unless_replaced() -> None:
    with pytest.raises(ValueError, match="market"):
        register_policy("market", _Nothing)
    register_policy("test-nothing", _Nothing)
    try:
        assert "test-nothing" in list_policies()
        w = synthetic_workload(4, seed=1)
        res = simulate(w, policy="test-nothing", until=20)
        audit_log(res.events).raise_if_failed()
        assert not [e for e in res.events if e.kind == "start"]  # it ran the user's policy
        register_policy("test-nothing", FcfsPacking, replace=True)
        assert isinstance(get_policy("test-nothing"), FcfsPacking)
    finally:
        POLICIES.unregister("test-nothing")


def test_the_retired_name_runs_the_market_under_its_label() -> None:
    assert set(DEPRECATED_POLICIES) == {"auction"}
    assert policy_label("auction") == "market-solver" and policy_label("market") == "market"
    note = deprecated_policy_note("auction")
    assert note is not None and "'market' with clearing=solver" in note and deprecated_policy_note("market") is None
    with pytest.warns(GensolverDeprecationWarning, match="'auction' is deprecated"):
        pol = get_policy("auction")
    assert pol.name == "market-solver" and type(pol).__name__ == "MarketPolicy"
    with pytest.warns(GensolverDeprecationWarning), pytest.raises(InputError, match="'late_value' belonged"):
        get_policy("auction", late_value=1.0)
