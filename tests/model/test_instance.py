"""Bid.rebid: the same bundle under another id, bidder and value, its demand shared."""

from __future__ import annotations

import dataclasses

import pytest

from gensolver.model.instance import Bid


def test_rebid_is_the_bid_built_from_scratch():
    base = Bid("x", "a", 1, {"g1": {"memory": 4, "compute": 0.5}, "g0": {"memory": 4, "compute": 0.5}})
    again = base.rebid("y", "b", 7)
    fresh = Bid("y", "b", 7.0, {"g1": {"memory": 4.0, "compute": 0.5}, "g0": {"memory": 4.0, "compute": 0.5}})
    assert again.to_dict() == fresh.to_dict() and again == fresh
    assert again.demand is base.demand and isinstance(again.value, float)
    assert base.to_dict()["id"] == "x" and base.value == 1.0  # the original is unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.value = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        again.demand["g0"]["memory"] = 1.0  # type: ignore[index]
