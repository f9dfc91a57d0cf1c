"""The public hypothesis strategies and ``assert_truthful``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from gensolver.model import validate
from gensolver.testing import assert_truthful, gpu_round_instances, instances, single_minded_instances
from tests.mechanisms.helpers import EXACT, goods_instance


@settings(max_examples=20, deadline=None)
@given(instances())
def test_instances_are_valid(inst):
    assert validate(inst) is inst
    assert 1 <= inst.n_bidders <= 4 and inst.n_bids >= 1


@settings(max_examples=20, deadline=None)
@given(single_minded_instances())
def test_single_minded(inst):
    assert all(len(bids) == 1 for bids in inst.bids_of_bidder.values())
    assert all(dict(s.capacity) == {"units": 1.0} for s in inst.slots)


@settings(max_examples=20, deadline=None)
@given(gpu_round_instances())
def test_gpu_rounds_are_consecutive_steps_of_one_gpu(inst):
    validate(inst)
    for s in inst.slots:
        assert set(s.capacity) == {"memory", "compute"}
    for bid in inst.bids:
        gpus = {s.split("t")[0] for s in bid.demand}
        steps = sorted(int(s.split("t")[1]) for s in bid.demand)
        assert len(gpus) == 1
        assert steps == list(range(steps[0], steps[0] + len(steps)))


@settings(max_examples=8, deadline=None)
@given(single_minded_instances(max_bidders=4))
def test_assert_truthful_passes_for_greedy_critical(inst):
    assert_truthful("greedy-critical", inst)


def test_assert_truthful_fails_for_pay_as_bid():
    inst = goods_instance([("a", "A", 10, ["g"]), ("b", "B", 4, ["g"])], ["g"])
    with pytest.raises(AssertionError, match="bidder 'A' gains 5 .*scale all values by 0.5"):
        assert_truthful("pay-as-bid", inst, **EXACT)
