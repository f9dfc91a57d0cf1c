"""The ``others-price`` rule: hand-computed prices, no tenant's bid moves its own price, winners
never pay more than they bid; in the market, a tenant scaling its values keeps its charge
(pay-as-bid, where a tenant's own bid is its price, fails the same check)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver.market import Candidate, Market, MarketConfig
from gensolver.market.pricing import gib_steps, others_payments, others_prices
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.model.tasks import GpuSpec, Task


def _one_slot(values):
    """One 10 GiB slot of 5 steps; bids (bidder, tenant, value, memory)."""
    slot = Slot("s0", {"memory": 10.0}, "g0", 0.0, 5.0)
    bids = tuple(Bid(f"{b}|0", b, v, {"s0": {"memory": m}}) for b, _, v, m in values)
    return Instance((slot,), bids), {b: t for b, t, _, _ in values}


def test_hand_computed_prices_and_payments():
    # densities (value per GiB-step): a1 50/40 = 1.25, b1 30/30 = 1.0, c1 10/20 = 0.5; a1 wins
    inst, tenant_of = _one_slot([("a1", "A", 50.0, 8.0), ("b1", "B", 30.0, 6.0), ("c1", "C", 10.0, 4.0)])
    assert gib_steps(inst, inst.bids[0]) == 40.0
    pays, prices = others_payments(inst, ["a1|0"], tenant_of)
    assert prices == {"A": 1.0, "B": 0.5, "C": 1.0}  # B's own losing bid does not price B
    assert pays == {"a1": 40.0}  # 1.0 per GiB-step x 40 GiB-steps, below its bid of 50
    # a price above the winner's density: it pays its bid, never more
    pays, _ = others_payments(inst, ["c1|0"], tenant_of)
    assert pays == {"c1": 10.0}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(rows=st.lists(st.tuples(st.sampled_from("ABC"), st.floats(0.1, 100.0), st.floats(0.5, 10.0)),
                     min_size=2, max_size=8),
       win=st.lists(st.booleans(), min_size=8, max_size=8), scale=st.floats(0.01, 100.0))
def test_no_tenant_sets_its_own_price(rows, win, scale):
    values = [(f"t{i}", t, v, m) for i, (t, v, m) in enumerate(rows)]
    inst, tenant_of = _one_slot(values)
    winners = [f"t{i}|0" for i in range(len(values)) if win[i]]
    pays, prices = others_payments(inst, winners, tenant_of)
    losers = [(tenant_of[b.bidder], b.value / gib_steps(inst, b)) for b in inst.bids if b.id not in winners]
    for t, p in prices.items():
        others = [d for u, d in losers if u != t]
        assert p == (max(others) if others else 0.0)  # the best turned-away density of the others
        # any change of t's own bids (here: all scaled) leaves t's price where it was
        moved = tuple(replace(b, value=b.value * scale) if tenant_of[b.bidder] == t else b for b in inst.bids)
        assert others_prices(replace(inst, bids=moved), winners, tenant_of)[t] == pytest.approx(p)
    for w in winners:
        b = inst.bids[inst.bid_index[w]]
        assert 0 <= pays[b.bidder] <= b.value + 1e-12


def _round(mechanism, scale_a):
    gpus = [GpuSpec("g0", 16.0, 1.0, "n0")]
    a = Task("a", 12.0, 12.0, 5, 50.0 * scale_a, tenant="A")
    b = Task("b", 8.0, 8.0, 5, 6.0, tenant="B")
    c = Task("c", 8.0, 8.0, 5, 4.0, tenant="C")
    m = Market(MarketConfig(mechanism=mechanism, method="auto", time_limit=1.0,
                            blocks=1, memory_levels=1))
    return m.clear(0, gpus=gpus, candidates=[Candidate(t, 5.0) for t in (a, b, c)])


def test_a_tenant_scaling_its_values_keeps_its_charge():
    base, scaled = _round("others-price", 1.0), _round("others-price", 10.0)
    assert set(base.assignments) == set(scaled.assignments) == {"a"}
    assert base.charges["a"] == pytest.approx(scaled.charges["a"]) and base.charges["a"] > 0
    # pay-as-bid: the same lie moves the charge (the check can fail)
    pab, pab10 = _round("pay-as-bid", 1.0), _round("pay-as-bid", 10.0)
    assert set(pab.assignments) == set(pab10.assignments) == {"a"}
    assert pab10.charges["a"] != pytest.approx(pab.charges["a"])
