"""Independent references for mechanism tests: payments recomputed by brute force."""

from __future__ import annotations

from gensolver import from_dict
from gensolver.model import Instance
from gensolver.verify import brute_force

#: exact solver of the mechanism tests ("auto": CP-SAT or a float MILP; one thread is fastest on tiny models)
EXACT = {"method": "auto", "options": {"threads": 1}}


def goods_instance(bids: list[tuple[str, str, float, list[str]]], goods: list[str], **extra) -> Instance:
    """Single-unit goods; ``bids`` as ``(bid_id, bidder, value, [goods])``."""
    doc = {
        "schema": "gensolver.instance/v1",
        "slots": [{"id": g, "capacity": {"units": 1}} for g in goods],
        "bids": [{"id": b, "bidder": i, "value": v, "demand": {g: {"units": 1} for g in gs}} for b, i, v, gs in bids],
        **extra,
    }
    return from_dict(doc)


def value_of(instance: Instance, winners, bidder: str) -> float:
    """Value of ``bidder``'s winning bid among ``winners`` (0 if it loses)."""
    index = instance.bid_index
    return sum(instance.bids[index[w]].value for w in winners if instance.bids[index[w]].bidder == bidder)


def clarke_by_brute_force(instance: Instance, winners) -> dict[str, float]:
    """Clarke payments at the allocation ``winners`` (which must be optimal), by brute force.

    ``p_i = W*(-i) - (W* - v_i(x))``, every ``W`` by enumerating all allocations.
    """
    w_star, _ = brute_force(instance)
    out = {}
    for i in instance.bidder_ids:
        w_minus, _ = brute_force(instance.without_bidder(i))
        out[i] = w_minus - (w_star - value_of(instance, winners, i))
    return out
