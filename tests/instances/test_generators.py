"""Generators: determinism, documented statistics on samples, CATS text round trip."""

from __future__ import annotations

import gzip
import math
from collections import Counter, defaultdict

import numpy as np
import pytest

from gensolver.instances import LEGACY, UnknownFamilyError, cats, generate, list_families
from gensolver.model import Instance, format_cats, parse_cats, read_instance, write_cats

CATS_SMALL = {
    "arbitrary": dict(n_goods=24, n_bids=40),
    "regions": dict(n_goods=25, n_bids=40),
    "paths": dict(n_cities=10, n_bids=30),
    "matching": dict(n_goods=24, n_bids=40),
    "scheduling": dict(n_goods=16, n_bids=40),
    **{k: dict(n_goods=20, n_bids=30) for k in LEGACY},
    "gpu": dict(n_gpus=3, n_tasks=5, steps=4),
}


def _bundles(inst: Instance) -> list[tuple[str, frozenset[int], float]]:
    return [(b.bidder, frozenset(int(s[1:]) for s in b.demand), b.value) for b in inst.bids]


@pytest.mark.parametrize("family", sorted(CATS_SMALL))
def test_deterministic_for_a_seed(family: str) -> None:
    a = generate(family, seed=11, **CATS_SMALL[family])
    b = generate(family, seed=11, **CATS_SMALL[family])
    c = generate(family, seed=12, **CATS_SMALL[family])
    assert a.to_dict() == b.to_dict()
    assert a.to_dict()["bids"] != c.to_dict()["bids"]


@pytest.mark.parametrize("family", ["arbitrary", "regions", "paths", "matching", "scheduling", *LEGACY])
def test_cats_shape_and_no_dominated_bids(family: str) -> None:
    params = CATS_SMALL[family]
    inst = generate(family, seed=5, **params)
    assert all(dict(s.capacity) == {"units": 1.0} for s in inst.slots)
    assert [s.id for s in inst.slots] == [f"g{k}" for k in range(inst.n_slots)]
    assert inst.n_bids >= params["n_bids"]
    per = defaultdict(list)
    for bidder, goods, value in _bundles(inst):
        assert goods and value >= 0
        assert all(q == {"units": 1.0} for b in inst.bids for q in map(dict, b.demand.values()))
        per[bidder].append((goods, value))
    biggest = max(len(v) for v in per.values())
    assert inst.n_bids < params["n_bids"] + biggest  # stops with the bidder that crossed n_bids
    for bidder, bids in per.items():
        # XOR bidders are d<k>, single bids their own b<j> (CATS's dummy-good convention)
        assert bidder.startswith("d") == (len(bids) > 1)
        for i, (gi, vi) in enumerate(bids):
            for j, (gj, vj) in enumerate(bids):
                if i != j and gj <= gi:
                    assert vj < vi, f"{bidder}: bid {i} dominated by bid {j}"


@pytest.mark.parametrize("family", ["arbitrary", "regions", "paths", "matching", "scheduling", "L1", "L5"])
def test_cats_text_round_trip(family: str, tmp_path) -> None:  # noqa: ANN001
    inst = generate(family, seed=2, **CATS_SMALL[family])
    back = parse_cats(format_cats(inst))
    assert [s.to_dict() for s in back.slots] == [s.to_dict() for s in inst.slots]
    assert [b.to_dict() for b in back.bids] == [b.to_dict() for b in inst.bids]
    path = write_cats(inst, tmp_path / f"{family}.txt.gz")
    text = gzip.decompress(path.read_bytes()).decode()
    assert text.splitlines()[1:3] == [f"goods {inst.n_slots}", f"bids {inst.n_bids}"]
    assert int(text.splitlines()[3].split()[1]) == sum(1 for b in inst.bidder_ids if b.startswith("d"))
    again = read_instance(path)
    assert [b.to_dict() for b in again.bids] == [b.to_dict() for b in inst.bids]


def test_scheduling_statistics() -> None:
    inst = cats.scheduling(32, 300, seed=4, max_length=6)
    per = defaultdict(list)
    for bidder, goods, value in _bundles(inst):
        g = sorted(goods)
        assert g == list(range(g[0], g[-1] + 1)), "a window is a run of consecutive slots"
        assert 1 <= len(g) <= 6
        per[bidder].append((len(g), value))
    for bids in per.values():
        assert len({n for n, _ in bids}) == 1  # one job length per bidder
    lengths = [bids[0][0] for bids in per.values()]
    assert 2.0 < np.mean(lengths) < 5.0  # U{1..6}: mean 3.5
    # value = dev * l^1.2 * d1/d with dev in [0.5, 1.5] and d >= d1
    assert all(v <= 1.5 * n ** 1.2 + 1e-6 for bids in per.values() for n, v in bids)


def test_matching_statistics() -> None:
    inst = cats.matching(40, 200, seed=3)
    per_airport = 10
    for bid in inst.bids:
        goods, value = [int(s[1:]) for s in bid.demand], bid.value
        assert len(goods) == 2
        take, land = goods  # demand lists the take-off slot first
        assert take // per_airport != land // per_airport
        assert take % per_airport < land % per_airport  # lands after it takes off
        assert 0 <= value <= 2 * 5.0 * 1.5
    with pytest.raises(ValueError, match="divisible"):
        cats.matching(30, 10, seed=0)


def _grid_neighbours(n: int) -> dict[int, set[int]]:
    rows = math.isqrt(n)
    cols = math.ceil(n / rows)
    nb: dict[int, set[int]] = {k: set() for k in range(n)}
    for k in range(n):
        r, c = divmod(k, cols)
        for j in ((k + 1) if c + 1 < cols else None, k + cols):
            if j is not None and j < n:
                nb[k].add(j)
                nb[j].add(k)
    return nb


def test_regions_bundles_are_connected_without_jumps() -> None:
    # With no jumps and no random edges, compatibility is the grid: every bundle must be a
    # connected set of grid cells. Indexing the compatibility matrix with an integer 0/1 mask
    # (a known pitfall) grows bundles from rows 0 and 1 instead and breaks this.
    n = 36
    inst = cats.regions(n, 150, seed=9, jump_prob=0.0, remove_neighbor=0.0, additional_neighbor=0.0)
    nb = _grid_neighbours(n)
    sizes = []
    for _, goods, _ in _bundles(inst):
        start = next(iter(goods))
        seen, todo = {start}, [start]
        while todo:
            for j in nb[todo.pop()] & goods:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        assert seen == goods
        sizes.append(len(goods))
    assert np.mean(sizes) > 2.5  # additional_location 0.9 grows real bundles


def test_arbitrary_statistics() -> None:
    inst = cats.arbitrary(40, 300, seed=1, deviation_model="uniform")
    counts = Counter(b.bidder for b in inst.bids)
    assert max(counts.values()) <= 6  # first bundle + at most 5 substitutes
    sizes = [len(b.demand) for b in inst.bids]
    assert 3 < np.mean(sizes) < 15
    # value = sum of private values (each <= 100 + 50) + |B|^1.2
    assert all(b.value <= len(b.demand) * 150 + len(b.demand) ** 1.2 + 1e-6 for b in inst.bids)


def test_paths_bundles_are_simple_paths() -> None:
    inst = cats.paths(12, 60, seed=2)
    links = inst.metadata["links"]
    assert len(links) == inst.n_slots == round(3.0 * 12)
    for b in inst.bids:
        deg = Counter()
        for s in b.demand:
            u, v = links[int(s[1:])]
            deg[u] += 1
            deg[v] += 1
        assert max(deg.values()) <= 2 and sum(1 for d in deg.values() if d == 1) == 2


@pytest.mark.parametrize(
    "kind, mean_size, price_max",
    [("L1", None, 1.0), ("L2", None, None), ("L3", 3.0, 1.0), ("L4", 1 / 0.45, None),
     ("L5", 4.0, None), ("L6", None, None), ("L7", 0.2 * 30, None)],
)
def test_legacy_statistics(kind: str, mean_size: float | None, price_max: float | None) -> None:
    inst = cats.legacy(kind, 30, 400, seed=7)
    assert inst.n_bids == 400 and inst.n_bidders == 400
    sizes = np.array([len(b.demand) for b in inst.bids])
    prices = np.array([b.value for b in inst.bids])
    if mean_size is not None:
        assert abs(sizes.mean() - mean_size) < 0.25 * mean_size
    if price_max is not None:
        assert prices.max() <= price_max
    if kind in ("L2", "L4", "L6", "L7"):
        assert np.all(prices <= sizes)  # linear in the number of goods
    if kind == "L5":
        assert 14.5 < prices.mean() < 17.5
    if kind == "L3":
        assert set(sizes) == {3}


def test_registry_errors() -> None:
    names = [f.name for f in list_families()]
    assert {"arbitrary", "regions", "paths", "matching", "scheduling", "gpu", "trace-alibaba", "trace-philly"} <= set(names)
    with pytest.raises(UnknownFamilyError, match="valid: arbitrary, regions"):
        generate("nope", seed=0)
    with pytest.raises(ValueError, match="n_goods"):
        generate("arbitrary", seed=0, n_goods=0)
    with pytest.raises(ValueError, match="seed"):
        generate("L1", seed=-1)
    with pytest.raises(TypeError):
        generate("L1", seed=0, bogus=1)
