"""The market on its own: clearing, credits conservation, weights, feedback hooks."""

from __future__ import annotations

import pytest

from gensolver.market import Candidate, Market, MarketConfig, Reservation
from gensolver.model.tasks import GpuSpec, Task

GPUS = [GpuSpec("g0", 16.0, 1.0, "n0"), GpuSpec("g1", 8.0, 1.0, "n0")]


def task(tid, pref, mini=None, dur=4, tenant="", **kw):
    return Task(tid, pref, mini or pref, dur, value=dur * pref / 10, tenant=tenant or tid, **kw)


def test_clear_places_both_tasks_on_the_right_cards():
    m = Market(MarketConfig(method="auto", time_limit=1.0))
    c = m.clear(0, gpus=GPUS, candidates=[Candidate(task("big", 12), 4), Candidate(task("small", 4), 4)])
    assert c.assignments["big"].gpus == ("g0",) and c.assignments["small"].gpus == ("g1",)
    # pay-as-bid: each winner pays its (pro-rated) bid; the ledger holds budgets and payments only
    spent = -sum(e.amount for e in m.ledger if e.reason == "payment")
    assert spent == pytest.approx(sum(c.charges.values())) and spent > 0
    for tenant, bal in m.balances.items():
        assert bal == pytest.approx(sum(e.amount for e in m.ledger if e.tenant == tenant))
        assert bal >= 0


def test_reservations_block_capacity_and_refills_follow_schedule():
    m = Market(MarketConfig(refill=10.0, refill_every=5, budget=100.0, budget_cap=105.0))
    res = [Reservation("g0", 16.0, 1.0, 100), Reservation("g1", 8.0, 1.0, 100)]
    c = m.clear(0, gpus=GPUS, candidates=[Candidate(task("a", 4), 4)], reservations=res)
    assert not c.assignments
    m.clear(12, gpus=GPUS, candidates=[Candidate(task("a", 4), 4)], reservations=res)
    refills = [e for e in m.ledger if e.reason == "refill"]
    assert len(refills) == 1 and sum(e.amount for e in refills) == pytest.approx(5.0)  # capped at 105


def test_observe_adjusts_next_round():
    m = Market()
    t = task("a", 16, 4, dur=10)
    m.observe("a", memory_gib=6.0, progress=0.5)
    inst, meta = m.build(0, GPUS, [Candidate(t, 10)])
    mems = {v[2] for v in meta.values()}
    assert max(mems) == pytest.approx(6.0)  # bids for what it was seen to use
    lengths = {v[4] for v in meta.values() if v[2] == pytest.approx(6.0)}
    assert lengths == {5}  # half of the work left, at (observed) preferred speed
    with pytest.raises(ValueError, match="progress"):
        m.observe("a", progress=2)


def test_weights_move_towards_the_underserved():
    m = Market(MarketConfig(eta=1.0))
    gpus = [GpuSpec("g0", 8.0, 1.0, "n0")]
    m.clear(0, gpus=gpus, candidates=[Candidate(task("a", 8, tenant="A"), 4), Candidate(task("b", 8, tenant="B"), 4)])
    assert m.weights["A"] != m.weights["B"]
    loser = min(m.weights, key=m.weights.get)
    assert m.weights[loser] < 1 < max(m.weights.values())


def test_unknown_mechanism_and_option_list_valid_ones():
    with pytest.raises(ValueError, match="valid mechanisms"):
        Market(mechanism="dutch")
    with pytest.raises(ValueError, match="unknown market option"):
        Market(colour="red")


@pytest.mark.parametrize("mechanism", ["vcg", "greedy-critical", "core", "pay-as-bid"])
def test_any_registered_mechanism(mechanism):
    m = Market(MarketConfig(mechanism=mechanism, time_limit=1.0))
    c = m.clear(0, gpus=GPUS, candidates=[Candidate(task("a", 12, tenant="A"), 4), Candidate(task("b", 12, tenant="B"), 4),
                                          Candidate(task("c", 4, tenant="C"), 4)])
    assert c.assignments and all(v >= 0 for v in m.balances.values())
