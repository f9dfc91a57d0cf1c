"""Critical values at the capacity boundary agree with the greedy's own capacity rule.

Three bids whose demands sum to the slot's limit within a rounding error: the sequential
floating-point residual and the exact sum can disagree there. The critical value is checked
by brute force on the allocation rule (the bid's value moved just above and below it)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from gensolver.mechanisms import run_mechanism
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.model.tolerances import capacity_limit


def boundary_round(seed: int) -> Instance | None:
    rng = random.Random(seed)
    cap = rng.choice([1.0, 2.0, 0.7, 3.3])
    limit = float(capacity_limit(np.array([cap]))[0])
    a, b = rng.uniform(0.05, cap / 2), rng.uniform(0.05, cap / 2)
    for c in (limit - a - b, math.nextafter(limit - a - b, 0.0), math.nextafter(limit - a - b, 9.0)):
        if c > (limit - a) - b and math.fsum([a, b, c]) <= limit:  # the float residual and the exact sum disagree
            vals = [round(rng.uniform(1, 100), 2) for _ in range(3)]
            bids = tuple(Bid(f"b{k}", f"B{k}", v, {"s": {"units": d}}) for k, (v, d) in enumerate(zip(vals, (a, b, c))))
            return Instance((Slot("s", {"units": cap}),), bids)
    return None


def wins(inst: Instance, bid_id: str, value: float) -> bool:
    bids = tuple(Bid(b.id, b.bidder, value if b.id == bid_id else b.value, b.demand) for b in inst.bids)
    out = run_mechanism(Instance(inst.slots, bids), mechanism="greedy-critical")
    return bid_id in out.allocation.winners


SEEDS = [s for s in range(60) if boundary_round(s) is not None]


def test_the_boundary_generator_finds_rounds():
    assert len(SEEDS) >= 20


@pytest.mark.parametrize("seed", SEEDS)
def test_critical_values_at_the_boundary_match_brute_force(seed: int) -> None:
    inst = boundary_round(seed)
    assert inst is not None
    out = run_mechanism(inst, mechanism="greedy-critical")
    assert out.exact and set(out.allocation.winners) == {"b0", "b1", "b2"}  # all three fit exactly
    for w in out.allocation.winners:
        bidder = inst.bids[inst.bid_index[w]].bidder
        p = out.payments[bidder]
        assert wins(inst, w, p * (1 + 1e-9) + 1e-9)
        if p > 0:
            assert not wins(inst, w, p * (1 - 1e-9))
