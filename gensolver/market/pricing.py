"""Prices set by the others: the ``others-price`` payment rule of the round-by-round market.

A round's winners pay, per GiB-step they hold, the highest value per GiB-step among the bids
of *other tenants'* tasks that won nothing (the best demand the round turned away, the
opportunity cost of the capacity), and at most their own winning bid::

    price[i]   = max { value(b) / gib_steps(b) : b a bid of a losing task of a tenant != i }
    payment[j] = min(value(w_j), price[tenant(j)] * gib_steps(w_j))

where ``gib_steps(b)`` is the memory a bid holds summed over its slots, times each slot's
length (``end - start``; 1 when a slot has no window). ``price[i]`` is 0 when no other
tenant lost.

What is proved (by construction, and checked by ``tests/market/test_pricing.py``): given the
round's allocation, ``price[i]`` reads no bid of tenant ``i``, so no report of a tenant sets
its own price; and no winner pays more than it bid (individual rationality). What is *not*
proved: the allocation itself depends on every report, so a tenant can change who else
loses (and so its price) by bidding differently; and the cap at one's own bid binds only when
the price exceeds it, which a greedy clearing rules out but an optimal one does not. How much
a lie gains overall is measured (``benchmarks/bench_market.py``), not claimed.

References
----------
.. [1] D. Lehmann, L. I. O'Callaghan, Y. Shoham, "Truth revelation in approximately efficient
   combinatorial auctions", J. ACM 49(5), 2002 (critical values of greedy allocations).
.. [2] K. Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..model.instance import Bid, Instance

__all__ = ["gib_steps", "others_prices", "others_payments"]


def gib_steps(instance: Instance, bid: Bid) -> float:
    """Memory (GiB) the bid holds, summed over its slots times each slot's length."""
    slots = instance.slot_index
    total = 0.0
    for sid, res in bid.demand.items():
        s = instance.slots[slots[sid]]
        length = (s.end - s.start) if s.start is not None and s.end is not None else 1.0
        total += float(res.get("memory", 0.0)) * float(length)
    return total


def others_prices(instance: Instance, winners: Sequence[str], tenant_of: Mapping[str, str]) -> dict[str, float]:
    """Per tenant (``tenant_of``: bidder -> tenant), the highest value per GiB-step among the
    bids of other tenants' bidders that won nothing (0 when none lost)."""
    won = {instance.bids[instance.bid_index[w]].bidder for w in winners}
    best: dict[str, float] = {}  # tenant -> best density of its losing bids
    for b in instance.bids:
        if b.bidder in won:
            continue
        size = gib_steps(instance, b)
        if size <= 0:
            continue
        t = tenant_of[b.bidder]
        best[t] = max(best.get(t, 0.0), b.value / size)
    out: dict[str, float] = {}
    for t in sorted(set(tenant_of.values())):
        out[t] = max((v for u, v in best.items() if u != t), default=0.0)
    return out


def others_payments(instance: Instance, winners: Sequence[str], tenant_of: Mapping[str, str]
                    ) -> tuple[dict[str, float], dict[str, float]]:
    """``(payments by bidder, prices by tenant)`` of the ``others-price`` rule (module docstring)."""
    prices = others_prices(instance, winners, tenant_of)
    pays: dict[str, float] = {}
    for w in winners:
        b = instance.bids[instance.bid_index[w]]
        pays[b.bidder] = min(b.value, prices[tenant_of[b.bidder]] * gib_steps(instance, b))
    return pays, prices
