"""Hypothesis strategies for tiny winner-determination instances.

Three shapes, all small enough for :func:`gensolver.verify.brute_force`:

- :func:`single_unit_instances`: classic CATS-style single-unit goods (``{"units": 1}``),
  XOR bidders with one to three bids;
- :func:`single_minded_instances`: the same goods, one bid per bidder (the setting of the LOS
  greedy guarantee);
- :func:`multi_resource_instances`: GPU-style slots with ``memory`` and ``compute`` capacity,
  bids demanding fractional amounts on one or more slots, XOR bidders;
- :func:`rescaled_instances`: the GPU-style shape with each resource and the values
  multiplied by powers of ten (capacities from about ``1e-6`` to ``1e11``, values from
  ``1e-6`` to ``1e14``), where a backend's absolute feasibility tolerance is too coarse or too
  fine for the data.

Values are drawn on a coarse grid (multiples of 0.25) so that ties and equal-welfare optima
occur often, which is where solvers tend to disagree.
"""

from __future__ import annotations

from hypothesis import strategies as st

from gensolver.model import Bid, Instance, Slot

__all__ = ["single_unit_instances", "single_minded_instances", "multi_resource_instances",
           "rescaled_instances", "values"]

#: bid values: multiples of 0.25 in [0, 50], with zero allowed
values = st.integers(min_value=0, max_value=200).map(lambda k: k / 4)


@st.composite
def single_unit_instances(draw, *, max_goods: int = 5, max_bidders: int = 5, max_bids_per_bidder: int = 3) -> Instance:
    """Single-unit goods ``g0..``, XOR bidders ``i0..`` with bids on non-empty bundles."""
    n_goods = draw(st.integers(1, max_goods))
    slots = [Slot(f"g{k}", {"units": 1.0}) for k in range(n_goods)]
    n_bidders = draw(st.integers(1, max_bidders))
    bids = []
    for i in range(n_bidders):
        for _ in range(draw(st.integers(1, max_bids_per_bidder))):
            goods = draw(st.sets(st.integers(0, n_goods - 1), min_size=1, max_size=n_goods))
            bids.append(Bid(f"b{len(bids)}", f"i{i}", draw(values), {f"g{k}": {"units": 1.0} for k in sorted(goods)}))
    return Instance(tuple(slots), tuple(bids), name="single-unit")


def single_minded_instances(*, max_goods: int = 6, max_bidders: int = 7) -> st.SearchStrategy[Instance]:
    """Single-unit goods, one bid per bidder (single-minded)."""
    return single_unit_instances(max_goods=max_goods, max_bidders=max_bidders, max_bids_per_bidder=1)


@st.composite
def multi_resource_instances(draw, *, max_slots: int = 3, max_bidders: int = 4, max_bids_per_bidder: int = 3) -> Instance:
    """GPU-style slots (``memory`` GiB and ``compute`` share) and fractional demands."""
    n_slots = draw(st.integers(1, max_slots))
    slots = []
    for k in range(n_slots):
        memory = draw(st.sampled_from([16.0, 24.0, 40.0, 80.0]))
        compute = draw(st.sampled_from([0.5, 1.0]))
        slots.append(Slot(f"gpu{k // 2}t{k % 2}", {"memory": memory, "compute": compute}, gpu=f"gpu{k // 2}",
                          start=float(60 * (k % 2)), end=float(60 * (k % 2) + 60)))
    n_bidders = draw(st.integers(1, max_bidders))
    bids = []
    for i in range(n_bidders):
        for _ in range(draw(st.integers(1, max_bids_per_bidder))):
            chosen = draw(st.sets(st.integers(0, n_slots - 1), min_size=1, max_size=n_slots))
            demand = {}
            for k in sorted(chosen):
                res = {"memory": float(draw(st.sampled_from([4, 8, 10, 20, 30, 40, 60])))}
                if draw(st.booleans()):
                    res["compute"] = draw(st.sampled_from([0.1, 0.25, 0.3, 0.5, 1.0]))
                demand[slots[k].id] = res
            bids.append(Bid(f"b{len(bids)}", f"task{i}", draw(values), demand))
    return Instance(tuple(slots), tuple(bids), name="multi-resource")


@st.composite
def rescaled_instances(draw, **kwargs) -> Instance:
    """:func:`multi_resource_instances` with every ``memory`` amount, every ``compute`` amount
    and every value multiplied by its own power of ten, the amounts possibly by a third as
    well (no finite decimal form). The smallest factor (``1e-7 / 3``) keeps
    the smallest excess over a capacity (``0.1`` compute) above ``3e-9``, three times the
    format's ``1e-9`` tolerance, so the scaled instance has the same feasible allocations."""
    base = draw(multi_resource_instances(**kwargs))
    powers = st.sampled_from([-7, -5, -3, 0, 3, 6, 9])
    # a third: capacities with no finite decimal form (CP-SAT then rounds rows both ways)
    thirds = st.sampled_from([1.0, 1.0 / 3.0])
    factor = {"memory": 10.0 ** draw(powers) * draw(thirds), "compute": 10.0 ** draw(powers) * draw(thirds)}
    vf = 10.0 ** draw(st.sampled_from([-6, 0, 6, 12]))
    slots = tuple(Slot(s.id, {r: a * factor[r] for r, a in s.capacity.items()}, gpu=s.gpu, start=s.start,
                       end=s.end) for s in base.slots)
    bids = tuple(Bid(b.id, b.bidder, b.value * vf,
                     {sid: {r: a * factor[r] for r, a in dem.items()} for sid, dem in b.demand.items()})
                 for b in base.bids)
    return Instance(slots, bids, name="rescaled")
