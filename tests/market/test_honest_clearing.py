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
    m = Market(MarketConfig(mechanism="vcg", method="greedy"))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.payments_exact is False and "not proven optimal" in c.payments_note
    assert set(c.payment_bounds) == {"a", "b", "c"}
    assert all(lo <= hi for lo, hi in c.payment_bounds.values())


def test_exact_vcg_clearing_has_degenerate_intervals():
    m = Market(MarketConfig(mechanism="vcg", method="cpsat", time_limit=10.0))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.payments_exact is True and c.payments_note == ""
    for lo, hi in c.payment_bounds.values():
        assert lo == pytest.approx(hi)


def test_lavi_swamy_clears_a_market_round():
    m = Market(MarketConfig(mechanism="lavi-swamy", method="greedy"))
    c = m.clear(0, gpus=GPUS, candidates=CANDS)
    assert c.assignments and c.payments_exact is True
    assert all(v >= 0 for v in m.balances.values())


def test_lavi_swamy_takes_alpha_fixed_by_the_config(monkeypatch):
    """``MarketConfig.alpha`` reaches the mechanism (fixed before the reports: truthful in
    expectation), with the config's work budget; a bad alpha is refused by name."""
    import gensolver.mechanisms as mechanisms

    seen = []
    real = mechanisms.run_mechanism

    def spy(*args, **kw):
        out = real(*args, **kw)
        seen.append(out.details)
        return out

    monkeypatch.setattr(mechanisms, "run_mechanism", spy)
    m = Market(MarketConfig(mechanism="lavi-swamy", method="auto", alpha=2.0))
    m.clear(0, gpus=GPUS, candidates=CANDS)  # the draw may be the empty allocation (probability >= 1/2)
    assert not m.errors
    assert seen and seen[-1]["alpha_requested"] == 2.0 and seen[-1]["truthful_in_expectation"] is True
    assert seen[-1]["budget"] == "work units"
    with pytest.raises(ValueError, match="MarketConfig.alpha"):
        MarketConfig(alpha=0.5)
