"""Budget refills cost work bounded by the budget, not by the time elapsed (issue: the
``auction`` policy hung on a 10**15-step outage: the first round after it applied one refill
per ``refill_every`` steps of the outage, 2e14 loop passes)."""

from __future__ import annotations

import pytest

from gensolver.market import Market, MarketConfig
from gensolver.market.records import CreditEntry


def _market(**cfg: float) -> Market:
    m = Market(MarketConfig(**{"refill": 7.0, "refill_every": 5, "budget": 100.0, "budget_cap": 150.0, **cfg}))
    for name in ("c", "a", "b"):
        m.tenant(name)
    m.balances["a"] = 3.0  # as after payments: three tenants at different distances from the cap
    m.balances["b"] = 149.5
    return m


def _one_refill_at_a_time(m: Market, now: float, due: int) -> tuple[list[CreditEntry], dict[str, float]]:
    """The schedule's definition, refill by refill: each tenant gets ``min(refill, cap - balance)``."""
    bal, out = dict(m.balances), []
    for _ in range(due):
        for name in sorted(bal):
            amount = min(m.config.refill, max(0.0, m.config.budget_cap - bal[name]))
            if amount:
                bal[name] += amount
                out.append(CreditEntry(now, name, amount, "refill"))
    return out, bal


@pytest.mark.parametrize("due", [0, 1, 3, 21, 22, 500])
def test_refills_match_the_schedule_refill_by_refill(due: int) -> None:
    m = _market()
    before = list(m.ledger)
    now = float(due * 5 + 2)
    expected, balances = _one_refill_at_a_time(m, now, due)
    m.refill(now)
    assert m.ledger[len(before):] == expected and m.balances == balances


def test_a_refill_of_zero_credits_nothing() -> None:
    m = _market(refill=0.0)
    before = list(m.ledger)
    m.refill(5e15)
    assert m.ledger == before


@pytest.mark.parametrize("steps", [10**5, 10**15])
def test_refill_work_does_not_grow_with_the_time_elapsed(steps: int, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _market()
    calls = 0
    credit = Market._credit

    def counting(self: Market, *args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        credit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Market, "_credit", counting)
    m.refill(float(steps))
    # 'a' needs ceil(147 / 7) = 21 refills to reach the cap; three tenants a pass, one pass more
    assert calls <= 3 * 22, calls  # one pass per refill due before: 3 * steps / 5 calls
    assert all(b == pytest.approx(150.0) for b in m.balances.values())
    m.refill(float(steps) + 5.0)  # the next refill is still scheduled: at the cap, it credits nothing
    assert calls <= 3 * 22
