"""The canonical order (``gensolver.model.canonical``): any listing of the same instance gives
one canonical instance, which holds exactly the same slots, bids, demands and budgets."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gensolver.model import Bid, Bidder, Instance, Slot
from gensolver.model.canonical import canonical, in_caller_order, is_canonical
from tests.strategies import multi_resource_instances


def _content(inst: Instance) -> tuple[Any, ...]:
    """What an instance says, independent of any order: sets of slots, bids and budgets."""
    slots = sorted((s.id, tuple(sorted(s.capacity.items())), s.gpu, s.start, s.end) for s in inst.slots)
    bids = sorted((b.id, b.bidder, b.value, tuple(sorted((sid, tuple(sorted(r.items()))) for sid, r in b.demand.items())))
                  for b in inst.bids)
    return tuple(slots), tuple(bids), tuple(sorted(inst.budgets.items())), tuple(sorted(inst.bidder_ids))


def _ids_sorted(inst: Instance) -> bool:
    """The canonical rule, checked from the plain objects: every id list and key list sorted."""
    def ok(keys: Any) -> bool:
        keys = list(keys)
        return keys == sorted(keys)

    return (ok(s.id for s in inst.slots) and ok(b.id for b in inst.bids) and ok(b.id for b in inst.bidders)
            and len(inst.bidders) == len(inst.bidder_ids) and all(ok(s.capacity) for s in inst.slots)
            and all(ok(b.demand) and all(ok(r) for r in b.demand.values()) for b in inst.bids))


def _relisted(inst: Instance, rnd: Any) -> Instance:
    """The same instance listed in another order: slots, bids, each demand and resource, bidders."""
    def shuffled(items: Any) -> list[Any]:
        out = list(items)
        rnd.shuffle(out)
        return out

    slots = tuple(Slot(s.id, dict(shuffled(s.capacity.items())), s.gpu, s.start, s.end) for s in shuffled(inst.slots))
    bids = tuple(Bid(b.id, b.bidder, b.value, {sid: dict(shuffled(r.items())) for sid, r in shuffled(b.demand.items())})
                 for b in shuffled(inst.bids))
    bidders = tuple(Bidder(i, inst.budgets.get(i)) for i in shuffled(inst.bidder_ids))
    return Instance(slots, bids, bidders, inst.name)


@settings(max_examples=60, deadline=None)
@given(multi_resource_instances(max_slots=4, max_bidders=4), st.randoms(use_true_random=False))
def test_every_listing_gives_one_canonical_instance_with_the_same_content(inst: Instance, rnd: Any) -> None:
    other = _relisted(inst, rnd)
    a, b = canonical(inst), canonical(other)
    assert a.to_dict() == b.to_dict()
    assert _content(a) == _content(inst) == _content(other)
    assert _ids_sorted(a) and is_canonical(a)
    assert canonical(a) is a  # idempotent, and recognised without a copy


@settings(max_examples=40, deadline=None)
@given(multi_resource_instances(max_slots=4, max_bidders=4), st.randoms(use_true_random=False))
def test_is_canonical_agrees_with_the_rule(inst: Instance, rnd: Any) -> None:
    other = _relisted(inst, rnd)
    assert is_canonical(other) == _ids_sorted(other)


@settings(max_examples=40, deadline=None)
@given(multi_resource_instances(max_slots=3, max_bidders=4), st.randoms(use_true_random=False))
def test_winners_come_back_in_the_callers_order(inst: Instance, rnd: Any) -> None:
    chosen = [b.id for b in inst.bids if rnd.random() < 0.5]
    rnd.shuffle(chosen)
    position = {b.id: k for k, b in enumerate(inst.bids)}
    out = in_caller_order(inst, chosen)
    assert sorted(out) == sorted(chosen) and [position[w] for w in out] == sorted(position[w] for w in chosen)


def test_the_rule_check_can_fail() -> None:
    """_ids_sorted is the test's own certificate: it refuses an unsorted listing."""
    s = (Slot("b", {"u": 1.0}), Slot("a", {"u": 1.0}))
    inst = Instance(s, (Bid("x", "X", 1.0, {"a": {"u": 1.0}}),))
    assert not _ids_sorted(inst) and not is_canonical(inst) and _ids_sorted(canonical(inst))
