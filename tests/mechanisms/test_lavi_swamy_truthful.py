"""Lavi–Swamy with alpha fixed before the reports: no misreport raises expected utility.

Brute force over misreports (every bid's value scaled, one bid's value scaled, a bid dropped,
a bid added that the bidder does not value) on small rounds; each bidder's expected utility is
recomputed here from the lottery in ``details["decomposition"]`` under its *true* values,
independently of :mod:`gensolver.verify`.
"""

from __future__ import annotations

import random
from typing import Any, Iterator

import pytest

from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot

ALPHA = 2.0


def small_round(seed: int) -> Instance:
    rng = random.Random(seed)
    goods = [f"g{k}" for k in range(rng.randint(2, 3))]
    slots = tuple(Slot(g, {"units": 1.0}) for g in goods)
    bids = []
    for i in range(rng.randint(3, 4)):
        for k in range(rng.randint(1, 2)):
            chosen = rng.sample(goods, rng.randint(1, 2))
            bids.append(Bid(f"b{i}_{k}", f"B{i}", float(rng.randint(1, 9)), {g: {"units": 1.0} for g in chosen}))
    return Instance(slots, tuple(bids))


def true_value(truth: Instance, bidder: str, bid: Bid) -> float:
    """The bidder's value for what ``bid`` wins: its best true bid contained in that bundle."""
    best = 0.0
    for t in truth.bids:
        if t.bidder == bidder and all(q <= bid.demand.get(s, {}).get(r, 0.0) + 1e-12
                                      for s, res in t.demand.items() for r, q in res.items()):
            best = max(best, t.value)
    return best


def expected_utility(truth: Instance, bidder: str, reported: Instance, out: Any) -> float:
    doc = outcome_to_dict(out, details=True)
    lottery = doc.get("details", {}).get("decomposition")
    if lottery is None:  # a deterministic mechanism: one allocation with probability 1
        lottery = [{"probability": 1.0, "winners": list(out.allocation.winners), "payments": dict(out.payments)}]
    by_id = {b.id: b for b in reported.bids}
    u = 0.0
    for entry in lottery:
        won = [by_id[w] for w in entry["winners"] if by_id[w].bidder == bidder]
        value = true_value(truth, bidder, won[0]) if won else 0.0
        u += entry["probability"] * (value - float(entry["payments"].get(bidder, 0.0)))
    return u


def misreports(inst: Instance, bidder: str) -> Iterator[tuple[str, Instance]]:
    mine = [b for b in inst.bids if b.bidder == bidder]
    others = [b for b in inst.bids if b.bidder != bidder]
    for f in (0.0, 0.5, 0.9, 1.1, 2.0, 5.0):
        yield f"all x{f}", inst.replace_bids(others + [Bid(b.id, b.bidder, b.value * f, b.demand) for b in mine])
    for b in mine:
        for f in (0.5, 3.0):
            rest = [c if c.id != b.id else Bid(c.id, c.bidder, c.value * f, c.demand) for c in mine]
            yield f"{b.id} x{f}", inst.replace_bids(others + rest)
        if len(mine) > 1:
            yield f"drop {b.id}", inst.replace_bids(others + [c for c in mine if c.id != b.id])
    for s in inst.slots:
        for v in (1.0, 20.0):
            fake = Bid(f"fake_{s.id}", bidder, v, {s.id: {"units": 1.0}})
            yield f"add unvalued {s.id} at {v}", inst.replace_bids(inst.bids + (fake,))


def run(inst: Instance, alpha: float | None, options: dict[str, Any] | None = None) -> Any:
    return run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"alpha": alpha, **(options or {})})


def max_gain(inst: Instance, alpha: float | None, mechanism: str = "lavi-swamy",
             options: dict[str, Any] | None = None) -> float:
    """Largest gain in expected utility of any bidder by any misreport above (``options`` go to lavi-swamy)."""
    go = (lambda i: run(i, alpha, options)) if mechanism == "lavi-swamy" else (
        lambda i: run_mechanism(i, mechanism=mechanism, method="cpsat"))
    base = go(inst)
    worst = 0.0
    for bidder in inst.bidder_ids:
        u0 = expected_utility(inst, bidder, inst, base)
        for _, rep in misreports(inst, bidder):
            u = expected_utility(inst, bidder, rep, go(rep))
            worst = max(worst, u - u0)
    return worst


@pytest.mark.parametrize("seed", range(3))
def test_no_misreport_gains_with_alpha_fixed(seed: int) -> None:
    inst = small_round(seed)
    out = run(inst, ALPHA)
    assert outcome_to_dict(out)["truthful"] is True
    assert max_gain(inst, ALPHA) <= 1e-7


def test_alpha_from_the_reports_is_flagged_not_truthful() -> None:
    out = run(small_round(0), None)
    doc = outcome_to_dict(out)
    assert doc["truthful"] is False and doc["lottery"]["alpha_requested"] is None
    assert "not fixed before the reports" in out.message


def test_the_regret_check_can_fail() -> None:
    """First price pays to shade: the brute force above finds the gain."""
    assert max_gain(small_round(0), None, mechanism="pay-as-bid") > 0.1


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 30))
def test_no_misreport_gains_with_alpha_fixed_many(seed: int) -> None:
    test_no_misreport_gains_with_alpha_fixed(seed)
