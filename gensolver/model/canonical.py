"""One canonical order of an instance, so that answers do not depend on the order of the input.

An LP or a MIP often has several optima, and a solver returns one of them by the order of its
columns and rows; a greedy breaks ties by position. Solving the *canonical* instance (slots,
resources, bids and bidders sorted by their ids, which are unique) instead of the instance as
listed makes every deterministic method give the same allocation, payments and lottery for any
order of the same bids: :func:`gensolver.solve` and :func:`gensolver.mechanisms.run_mechanism`
both do, and report winners in the caller's order again (:func:`in_caller_order`).

>>> from gensolver.model import Bid, Instance, Slot
>>> inst = Instance((Slot("s", {"u": 1}),), (Bid("b", "B", 1, {"s": {"u": 1}}), Bid("a", "A", 1, {"s": {"u": 1}})))
>>> [b.id for b in canonical(inst).bids]
['a', 'b']
>>> c = canonical(inst)
>>> canonical(c) is c
True
"""

from __future__ import annotations

from typing import Iterable

from .instance import Bid, Bidder, Instance, Slot

__all__ = ["canonical", "is_canonical", "in_caller_order"]


def _sorted(keys: Iterable[str]) -> bool:
    k = list(keys)
    return all(a < b for a, b in zip(k, k[1:]))


def is_canonical(instance: Instance) -> bool:
    """Whether ``instance`` is already in canonical order (then :func:`canonical` returns it)."""
    if instance.__dict__.get("_canonical"):
        return True
    slots, bids, bidders = instance.slots, instance.bids, instance.bidders
    if any(a.id > b.id for a, b in zip(slots, slots[1:])) or any(a.id > b.id for a, b in zip(bids, bids[1:])):
        return False
    if any(a.id > b.id for a, b in zip(bidders, bidders[1:])):
        return False
    if any(list(s.capacity) != sorted(s.capacity) for s in slots):
        return False
    for b in bids:
        keys = list(b.demand)
        if keys != sorted(keys) or any(list(r) != sorted(r) for r in b.demand.values()):
            return False
    # implicit bidders are listed in order of first bid: canonical only if that order is sorted
    ids = instance.bidder_ids
    return all(a < b for a, b in zip(ids, ids[1:])) or not bids


def canonical(instance: Instance) -> Instance:
    """``instance`` with slots, each slot's resources, bids, each bid's demand and the bidders
    sorted by id, every bidder listed (so bidder order is sorted too); the instance itself when
    already canonical. Validation carries over (the same objects, reordered)."""
    if is_canonical(instance):
        instance.__dict__["_canonical"] = True
        return instance
    slots = tuple(s if _sorted(s.capacity) else Slot(s.id, {r: s.capacity[r] for r in sorted(s.capacity)}, s.gpu,
                                                         s.start, s.end)
                  for s in sorted(instance.slots, key=lambda s: s.id))
    bids = tuple(b if _sorted(b.demand) and all(_sorted(r) for r in b.demand.values())
                 else Bid(b.id, b.bidder, b.value, {s: {r: b.demand[s][r] for r in sorted(b.demand[s])}
                                                    for s in sorted(b.demand)})
                 for b in sorted(instance.bids, key=lambda b: b.id))
    budgets = instance.budgets
    bidders = tuple(Bidder(i, budgets.get(i)) for i in sorted(instance.bidder_ids))
    out = Instance(slots, bids, bidders, instance.name, instance.metadata)
    if instance.__dict__.get("_validated"):
        out.__dict__["_validated"] = True
    out.__dict__["_canonical"] = True
    return out


def in_caller_order(instance: Instance, winners: Iterable[str]) -> tuple[str, ...]:
    """``winners`` (bid ids) in the order of ``instance``'s bids."""
    index = instance.bid_index
    return tuple(sorted(winners, key=lambda w: index[w]))
