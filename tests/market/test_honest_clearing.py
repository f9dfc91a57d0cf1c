"""A clearing records whether its payments are exact, each bidder's interval and why not."""

from __future__ import annotations

import pytest

from gensolver.market import Candidate, Market, MarketConfig
from gensolver.model.tasks import GpuSpec, Task

GPUS = [GpuSpec("g0", 16.0, 1.0, "n0"), GpuSpec("g1", 8.0, 1.0, "n0")]


def task(tid, pref, dur=4):
    return Task(tid, pref, pref, dur, value=dur * pref / 10, tenant=tid)


CANDS = [Candidate(task("a", 12), 4), Candidate(task("b", 12), 4), Candidate(task("c", 4), 4)]


def test_unproven_vcg_clearing_is_marked_inexact_with_intervals():
    m = Market(MarketConfig(mechanism="vcg", solver="greedy"))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.payments_exact is False and "not proven optimal" in c.payments_note
    assert set(c.payment_bounds) == {"a", "b", "c"}
    assert all(lo <= hi for lo, hi in c.payment_bounds.values())


def test_exact_vcg_clearing_has_degenerate_intervals():
    m = Market(MarketConfig(mechanism="vcg", solver="cpsat", time_limit=10.0))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.payments_exact is True and c.payments_note == ""
    for lo, hi in c.payment_bounds.values():
        assert lo == pytest.approx(hi)


def test_lavi_swamy_clears_a_market_round():
    m = Market(MarketConfig(mechanism="lavi-swamy", solver="greedy"))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.assignments and c.payments_exact is True
    assert all(v >= 0 for v in m.balances.values())
