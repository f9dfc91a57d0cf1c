"""The CATS distributions (Leyton-Brown, Pearson & Shoham, EC 2000), written from the paper.

Each function returns an :class:`~gensolver.model.Instance` of single-unit goods (slots
``g0..g{N-1}`` with capacity ``{"units": 1}``) and XOR bidders, as CATS writes them: dominated
bids of a bidder are removed (a bid is dropped when another bid of the same bidder asks for a
subset at a price at least as high), bidders are drawn until at least ``n_bids`` bids exist (so
an instance may hold slightly more), and a bidder left with one bid has no dummy good (it is a
bidder of its own). Use :func:`gensolver.model.write_cats` to obtain CATS text.

The code follows the published description and the summary in ``shared/CATS.md``; where the
paper leaves a detail open the choice made here is stated in the function's docstring
("reconstruction").

References
----------
.. [1] K. Leyton-Brown, M. Pearson, Y. Shoham. "Towards a Universal Test Suite for
   Combinatorial Auction Algorithms", ACM EC 2000, pp. 66-76.
.. [2] T. Sandholm. "Algorithm for optimal winner determination in combinatorial auctions",
   Artificial Intelligence 135 (2002) — the random, weighted random, uniform and decay
   distributions (L1-L4).
.. [3] K. Fujishima, K. Leyton-Brown, Y. Shoham. "Taming the computational complexity of
   combinatorial auctions", IJCAI 1999 — binomial and exponential (L6, L7).
.. [4] H. Hoos, C. Boutilier. "Solving combinatorial auctions using stochastic local search",
   AAAI 2000 — normal bundle sizes and prices (L5).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import networkx as nx
import numpy as np

from ..errors import InputError
from ..model import Instance
from ._common import Bundle, check_int, check_pos, check_prob, remove_dominated, rng_of, single_unit_instance

__all__ = ["arbitrary", "regions", "paths", "matching", "scheduling", "legacy", "LEGACY"]

_MAX_BIDDERS_FACTOR = 50  # give up after n_bids * 50 bidders that produced no bid


def _fill(n_bids: int, draw: Callable[[], list[Bundle]]) -> list[list[Bundle]]:
    """Draw bidders (each a list of bids, dominated ones removed) until ``n_bids`` bids exist."""
    bidders: list[list[Bundle]] = []
    total = tries = 0
    while total < n_bids:
        tries += 1
        if tries > _MAX_BIDDERS_FACTOR * n_bids + 100:
            raise InputError("generator produced no bids; check the parameters")
        bids = remove_dominated(draw())
        if bids:
            bidders.append(bids)
            total += len(bids)
    return bidders


def _meta(family: str, seed: Any, **params: Any) -> dict[str, Any]:
    return {"family": family, "seed": seed if isinstance(seed, int) else None, "params": params,
            "source": "CATS (Leyton-Brown, Pearson & Shoham, EC 2000)"}


# ------------------------------------------------------------------ arbitrary / regions
def _region_graph(n_goods: int, rng: np.random.Generator, remove_neighbor: float,
                  additional_neighbor: float) -> np.ndarray:
    """Boolean adjacency of goods on a grid of ``floor(sqrt(N))`` rows (row-major, the last
    row possibly short); each grid edge removed with ``remove_neighbor``; each good gains one
    random diagonal neighbour with ``additional_neighbor``."""
    rows = max(1, math.isqrt(n_goods))
    cols = math.ceil(n_goods / rows)
    adj = np.zeros((n_goods, n_goods), dtype=bool)

    def idx(r: int, c: int) -> int | None:
        k = r * cols + c
        return k if 0 <= r < rows and 0 <= c < cols and k < n_goods else None

    for k in range(n_goods):
        r, c = divmod(k, cols)
        for dr, dc in ((0, 1), (1, 0)):
            j = idx(r + dr, c + dc)
            if j is not None and rng.random() >= remove_neighbor:
                adj[k, j] = adj[j, k] = True
        if rng.random() < additional_neighbor:
            diag = [idx(r + dr, c + dc) for dr in (-1, 1) for dc in (-1, 1)]
            diag = [d for d in diag if d is not None]
            if diag:
                j = diag[int(rng.integers(len(diag)))]
                adj[k, j] = adj[j, k] = True
    return adj


def _location_bids(n_goods: int, n_bids: int, rng: np.random.Generator, compat: np.ndarray, *,
                   max_good_value: float, deviation: float, deviation_model: str, additivity: float,
                   additional_location: float, jump_prob: float, max_substitutable_bids: int,
                   budget_factor: float, resale_factor: float) -> list[list[Bundle]]:
    common = rng.uniform(1.0, max_good_value, size=n_goods)
    goods = np.arange(n_goods)

    def build(first: int, private: np.ndarray, weight: np.ndarray) -> tuple[int, ...]:
        in_bundle = np.zeros(n_goods, dtype=bool)
        in_bundle[first] = True
        while not in_bundle.all() and rng.random() < additional_location:
            free = ~in_bundle
            if rng.random() < jump_prob:
                choice = rng.choice(goods[free])
            else:
                # Pitfall seen in several Python ports: indexing the compatibility matrix with
                # an integer 0/1 array (compat[in_bundle.astype(int)]) selects rows 0 and 1, not
                # the bundle's goods. ``in_bundle`` is a *boolean* mask: rows of the goods held.
                affinity = compat[in_bundle].sum(axis=0)
                p = np.where(free, weight * affinity, 0.0)
                if p.sum() <= 0:
                    break
                choice = rng.choice(n_goods, p=p / p.sum())
            in_bundle[choice] = True
        return tuple(int(g) for g in np.flatnonzero(in_bundle))

    def value(bundle: tuple[int, ...], private: np.ndarray) -> float:
        return float(private[list(bundle)].sum() + len(bundle) ** (1.0 + additivity))

    def draw() -> list[Bundle]:
        model = deviation_model
        if model == "either":
            model = "uniform" if rng.random() < 0.5 else "normal"
        if model == "uniform":
            dev = rng.uniform(-deviation * max_good_value, deviation * max_good_value, size=n_goods)
        else:
            dev = rng.normal(0.0, 30.0, size=n_goods)
        private = common + dev
        weight = private - private.min() + 1.0  # private values shifted to be positive
        first = int(rng.choice(n_goods, p=weight / weight.sum()))
        bundle = build(first, private, weight)
        v0 = value(bundle, private)
        if v0 <= 0:
            return []
        c0 = float(common[list(bundle)].sum())
        bids: list[Bundle] = [(bundle, round(v0, 4))]
        seen = {bundle}
        for g in rng.permutation(list(bundle)):
            if len(bids) > max_substitutable_bids:
                break
            sub = build(int(g), private, weight)
            if sub in seen:
                continue
            v = value(sub, private)
            if 0 < v <= budget_factor * v0 and float(common[list(sub)].sum()) >= resale_factor * c0:
                seen.add(sub)
                bids.append((sub, round(v, 4)))
        return bids

    return _fill(n_bids, draw)


def _location_params(n_goods: int, n_bids: int, **kw: Any) -> dict[str, Any]:
    check_int("n_goods", n_goods, minimum=2)
    check_int("n_bids", n_bids)
    check_pos("max_good_value", kw["max_good_value"])
    check_pos("deviation", kw["deviation"], allow_zero=True)
    check_pos("additivity", kw["additivity"], allow_zero=True)
    for p in ("additional_location", "jump_prob"):
        check_prob(p, kw[p])
    check_int("max_substitutable_bids", kw["max_substitutable_bids"], minimum=0)
    if kw["deviation_model"] not in ("uniform", "normal", "either"):
        raise InputError(f"deviation_model must be 'uniform', 'normal' or 'either', got {kw['deviation_model']!r}")
    return kw


def arbitrary(n_goods: int = 64, n_bids: int = 200, *, seed: int | np.random.Generator = 0,
              max_good_value: float = 100.0, deviation: float = 0.5, deviation_model: str = "either",
              additivity: float = 0.2, additional_location: float = 0.9, max_substitutable_bids: int = 5,
              budget_factor: float = 1.5, resale_factor: float = 0.5) -> Instance:
    """CATS *arbitrary*: complementarity from a random symmetric compatibility matrix [1]_.

    Common good values ``c ~ U[1, max_good_value]``; per bidder, private values ``c + dev``
    (``dev ~ U[-deviation*max, deviation*max]`` or ``N(0, 30)``; ``deviation_model="either"``
    picks one of the two per bidder — the paper's plain names). A first good is drawn with
    probability proportional to the (positively shifted) private value; further goods are
    added while a coin with ``p = additional_location`` comes up, each with probability
    proportional to shifted private value x the summed compatibility with the goods already
    held. Bundle value = sum of private values + ``|B| ** (1 + additivity)``. Up to
    ``max_substitutable_bids`` substitute bundles, one started from each good of the first,
    are kept when worth at most ``budget_factor`` x the first bundle and with a common value
    of at least ``resale_factor`` x its common value. XOR per bidder.

    Parameters
    ----------
    n_goods, n_bids : int
        Goods and (at least) bids.
    seed : int or numpy.random.Generator, keyword-only
    max_good_value, deviation, deviation_model, additivity, additional_location,
    max_substitutable_bids, budget_factor, resale_factor
        The paper's parameters with CATS's defaults.

    Returns
    -------
    Instance
        Compatibility: ``d[i, j] ~ U[0, 1]`` symmetric, zero diagonal (reconstruction of the
        paper's random weights; no jumps, ``jump_prob = 0``).

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 4.2 ("arbitrary relationships").
    """
    kw = _location_params(n_goods, n_bids, max_good_value=max_good_value, deviation=deviation,
                          deviation_model=deviation_model, additivity=additivity,
                          additional_location=additional_location, jump_prob=0.0,
                          max_substitutable_bids=max_substitutable_bids, budget_factor=budget_factor,
                          resale_factor=resale_factor)
    rng = rng_of(seed)
    upper = np.triu(rng.uniform(0.0, 1.0, size=(n_goods, n_goods)), 1)
    compat = upper + upper.T
    bidders = _location_bids(n_goods, n_bids, rng, compat, **kw)
    return single_unit_instance(n_goods, bidders, name=f"arbitrary-{n_goods}x{n_bids}-s{seed}",
                                metadata=_meta("arbitrary", seed, n_goods=n_goods, n_bids=n_bids, **kw))


def regions(n_goods: int = 64, n_bids: int = 200, *, seed: int | np.random.Generator = 0,
            max_good_value: float = 100.0, deviation: float = 0.5, deviation_model: str = "either",
            additivity: float = 0.2, additional_location: float = 0.9, jump_prob: float = 0.05,
            remove_neighbor: float = 0.1, additional_neighbor: float = 0.2, max_substitutable_bids: int = 5,
            budget_factor: float = 1.5, resale_factor: float = 0.5) -> Instance:
    """CATS *regions*: goods are locations on a grid; bundles are spatially connected [1]_.

    Goods sit on a grid of ``floor(sqrt(N))`` rows; grid neighbours are compatible, except that
    each grid edge is removed with ``remove_neighbor``, and each good gains a random diagonal
    neighbour with ``additional_neighbor``. Bundles grow as in :func:`arbitrary`, through
    compatible (adjacent) goods, except that with ``jump_prob`` the next good is any free good.

    Parameters
    ----------
    n_goods, n_bids : int
    seed : int or numpy.random.Generator, keyword-only
    remove_neighbor, additional_neighbor, jump_prob
        Graph parameters (CATS defaults 0.1, 0.2, 0.05).
    max_good_value, deviation, deviation_model, additivity, additional_location,
    max_substitutable_bids, budget_factor, resale_factor
        As in :func:`arbitrary`.

    Returns
    -------
    Instance

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 4.1 ("proximity in space").
    """
    kw = _location_params(n_goods, n_bids, max_good_value=max_good_value, deviation=deviation,
                          deviation_model=deviation_model, additivity=additivity,
                          additional_location=additional_location, jump_prob=jump_prob,
                          max_substitutable_bids=max_substitutable_bids, budget_factor=budget_factor,
                          resale_factor=resale_factor)
    check_prob("remove_neighbor", remove_neighbor)
    check_prob("additional_neighbor", additional_neighbor)
    rng = rng_of(seed)
    compat = _region_graph(n_goods, rng, remove_neighbor, additional_neighbor).astype(np.float64)
    bidders = _location_bids(n_goods, n_bids, rng, compat, **kw)
    return single_unit_instance(n_goods, bidders, name=f"regions-{n_goods}x{n_bids}-s{seed}",
                                metadata=_meta("regions", seed, n_goods=n_goods, n_bids=n_bids,
                                               remove_neighbor=remove_neighbor,
                                               additional_neighbor=additional_neighbor, **kw))


# ------------------------------------------------------------------------------ paths
def paths(n_cities: int = 20, n_bids: int = 150, *, seed: int | np.random.Generator = 0,
          initial_connections: int = 2, edge_density: float = 3.0, building_penalty: float = 1.7,
          shipping_cost_factor: float = 1.5, max_bid_set_size: int = 5) -> Instance:
    """CATS *paths in space*: goods are links of a transport network between cities [1]_.

    Cities are uniform points in the unit square. Each city is linked to its
    ``initial_connections`` nearest neighbours; then links are added until there are
    ``edge_density * n_cities`` of them, each time the candidate pair (among 4 x n_cities
    random pairs) with the largest ratio of current network distance to
    ``building_penalty`` x straight-line distance (a link is built where the detour is worst).
    A bidder wants to ship between two random cities; it values the connection at
    ``shipping_cost_factor`` x the shortest-path length (times ``U[1, 1.2]``) and bids, XOR, on
    up to ``max_bid_set_size`` cheapest simple paths whose length is below that value, each
    at price ``value - path length`` (the surplus of shipping over that path). The goods are the
    links (``g<k>`` is the k-th link), so ``n_goods`` follows from ``n_cities`` and
    ``edge_density``. Reconstruction: the paper's building cost and pricing are described in
    words only; the rules above are the choices made here. Prices are scaled by 100.

    Parameters
    ----------
    n_cities, n_bids : int
    seed : int or numpy.random.Generator, keyword-only
    initial_connections : int
    edge_density, building_penalty, shipping_cost_factor : float
    max_bid_set_size : int

    Returns
    -------
    Instance
        ``metadata["links"]`` lists each good's two cities.

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 4.1 ("paths in space").
    """
    check_int("n_cities", n_cities, minimum=3)
    check_int("n_bids", n_bids)
    check_int("initial_connections", initial_connections)
    check_pos("edge_density", edge_density)
    check_pos("building_penalty", building_penalty)
    check_pos("shipping_cost_factor", shipping_cost_factor)
    check_int("max_bid_set_size", max_bid_set_size)
    if shipping_cost_factor <= 1.0:
        raise InputError("shipping_cost_factor must exceed 1 (otherwise no path is worth bidding on)")
    rng = rng_of(seed)
    pts = rng.uniform(0.0, 1.0, size=(n_cities, 2))
    dist = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=2)
    g = nx.Graph()
    g.add_nodes_from(range(n_cities))
    for i in range(n_cities):
        for j in np.argsort(dist[i])[1:initial_connections + 1]:
            g.add_edge(i, int(j), weight=float(dist[i, j]))
    target = min(int(round(edge_density * n_cities)), n_cities * (n_cities - 1) // 2)
    while g.number_of_edges() < target:
        cand = rng.integers(0, n_cities, size=(4 * n_cities, 2))
        best, best_ratio = None, -1.0
        lengths = dict(nx.all_pairs_dijkstra_path_length(g)) if n_cities <= 200 else None
        for a, b in cand:
            a, b = int(a), int(b)
            if a == b or g.has_edge(a, b):
                continue
            net = lengths[a].get(b, math.inf) if lengths is not None else math.inf
            ratio = net / (building_penalty * dist[a, b])
            if ratio > best_ratio:
                best, best_ratio = (a, b), ratio
        if best is None:
            continue
        g.add_edge(*best, weight=float(dist[best]))
    links = sorted(tuple(sorted(e)) for e in g.edges())
    link_id = {e: k for k, e in enumerate(links)}

    def draw() -> list[Bundle]:
        a, b = (int(x) for x in rng.choice(n_cities, size=2, replace=False))
        try:
            gen = nx.shortest_simple_paths(g, a, b, weight="weight")
            first = next(gen)
        except (nx.NetworkXNoPath, StopIteration):
            return []
        length0 = nx.path_weight(g, first, "weight")
        value = shipping_cost_factor * length0 * rng.uniform(1.0, 1.2)
        bids: list[Bundle] = []
        path = first
        while path is not None and len(bids) < max_bid_set_size:
            length = nx.path_weight(g, path, "weight")
            if length >= value:
                break
            goods = tuple(sorted(link_id[tuple(sorted((path[k], path[k + 1])))] for k in range(len(path) - 1)))
            bids.append((goods, round(100.0 * (value - length), 4)))
            path = next(gen, None)
        return bids

    bidders = _fill(n_bids, draw)
    meta = _meta("paths", seed, n_cities=n_cities, n_bids=n_bids, initial_connections=initial_connections,
                 edge_density=edge_density, building_penalty=building_penalty,
                 shipping_cost_factor=shipping_cost_factor, max_bid_set_size=max_bid_set_size)
    meta["links"] = [list(e) for e in links]
    return single_unit_instance(len(links), bidders, name=f"paths-{n_cities}x{n_bids}-s{seed}", metadata=meta)


# ------------------------------------------------------------------------------ matching
def matching(n_goods: int = 64, n_bids: int = 200, *, seed: int | np.random.Generator = 0,
             n_airports: int = 4, max_airport_price: float = 5.0, early_takeoff_deviation: int = 1,
             late_takeoff_deviation: int = 2, early_land_deviation: int = 1, late_land_deviation: int = 2,
             deviation: float = 0.5, delay_coeff: float = 0.9, late_coeff: float = 0.75) -> Instance:
    """CATS *matching*: take-off and landing slots at congested airports [1]_.

    ``n_goods`` slots are split evenly over ``n_airports`` airports (``T = N / airports`` time
    slots each; good ``a*T + t`` is slot ``t`` of airport ``a``). Airports sit at uniform points
    in the unit square and have a common value ``U[0, max_airport_price]``. A bidder (an
    airline flight) flies between two random airports, taking ``ceil(T/4 * distance)`` slots
    (at least 1); it prefers take-off ``t0`` (uniform among feasible ones) and values the
    flight at ``(v_from + v_to) * U[1 - deviation, 1 + deviation]``. It bids XOR on every
    (take-off, landing) pair with take-off in ``t0 - early .. t0 + late`` and landing from the
    flight time on up to ``late_land_deviation`` slots later; a pair is worth the value times
    ``delay_coeff ** |take-off shift|`` times ``late_coeff ** (extra landing slots)``
    (reconstruction of the paper's description). Every bid is a 2-good bundle.

    Parameters
    ----------
    n_goods, n_bids : int
        ``n_goods`` must be divisible by ``n_airports``.
    seed : int or numpy.random.Generator, keyword-only
    n_airports, max_airport_price, early_takeoff_deviation, late_takeoff_deviation,
    early_land_deviation, late_land_deviation, deviation, delay_coeff, late_coeff
        CATS's defaults (``early_land_deviation`` is accepted for completeness; landing earlier
        than the flight time is impossible here).

    Returns
    -------
    Instance

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 4.3 ("matching").
    """
    check_int("n_goods", n_goods)
    check_int("n_bids", n_bids)
    check_int("n_airports", n_airports, minimum=2)
    if n_goods % n_airports:
        raise InputError(f"n_goods ({n_goods}) must be divisible by n_airports ({n_airports})")
    slots_per = n_goods // n_airports
    if slots_per < 3:
        raise InputError("need at least 3 time slots per airport")
    for name, v in (("early_takeoff_deviation", early_takeoff_deviation), ("late_takeoff_deviation", late_takeoff_deviation),
                    ("early_land_deviation", early_land_deviation), ("late_land_deviation", late_land_deviation)):
        check_int(name, v, minimum=0)
    check_pos("max_airport_price", max_airport_price)
    check_prob("deviation", deviation)
    check_prob("delay_coeff", delay_coeff)
    check_prob("late_coeff", late_coeff)
    rng = rng_of(seed)
    where = rng.uniform(0.0, 1.0, size=(n_airports, 2))
    price = rng.uniform(0.0, max_airport_price, size=n_airports)

    def draw() -> list[Bundle]:
        a, b = (int(x) for x in rng.choice(n_airports, size=2, replace=False))
        flight = max(1, math.ceil(slots_per / 4 * float(np.linalg.norm(where[a] - where[b]))))
        if flight >= slots_per:
            return []
        t0 = int(rng.integers(0, slots_per - flight))
        base = (price[a] + price[b]) * rng.uniform(1 - deviation, 1 + deviation)
        bids: list[Bundle] = []
        for shift in range(-early_takeoff_deviation, late_takeoff_deviation + 1):
            t = t0 + shift
            for extra in range(0, late_land_deviation + 1):
                land = t + flight + extra
                if t < 0 or land >= slots_per:
                    continue
                v = base * delay_coeff ** abs(shift) * late_coeff ** extra
                if v > 0:
                    bids.append(((a * slots_per + t, b * slots_per + land), round(float(v), 4)))
        return bids

    bidders = _fill(n_bids, draw)
    meta = _meta("matching", seed, n_goods=n_goods, n_bids=n_bids, n_airports=n_airports,
                 max_airport_price=max_airport_price, early_takeoff_deviation=early_takeoff_deviation,
                 late_takeoff_deviation=late_takeoff_deviation, early_land_deviation=early_land_deviation,
                 late_land_deviation=late_land_deviation, deviation=deviation, delay_coeff=delay_coeff,
                 late_coeff=late_coeff)
    return single_unit_instance(n_goods, bidders, name=f"matching-{n_goods}x{n_bids}-s{seed}", metadata=meta)


# ---------------------------------------------------------------------------- scheduling
def scheduling(n_goods: int = 64, n_bids: int = 200, *, seed: int | np.random.Generator = 0,
               max_length: int = 10, deviation: float = 0.5, prob_additional_deadline: float = 0.7,
               additivity: float = 0.2) -> Instance:
    """CATS *scheduling*: goods are time slots of one machine; jobs bid for windows [1]_.

    Per bidder: job length ``l ~ U{1..max_length}`` (capped at N), first deadline
    ``d1 ~ U{l-1..N-1}``, deviation factor ``dev ~ U[1 - deviation, 1 + deviation]``. For the
    current deadline ``d`` the bidder bids on every window of ``l`` consecutive slots ending at
    or before ``d`` and after the previous deadline, worth ``dev * l ** (1 + additivity) * d1 / d``
    (``d1 / d`` read with 1-based slot numbers, so ``d = 0`` is well defined); with probability
    ``prob_additional_deadline`` (while ``d < N - 1``) it draws a later deadline
    ``U{d+1..N-1}`` and repeats. One XOR set per bidder; every bundle is a run of slots.

    Parameters
    ----------
    n_goods, n_bids : int
    seed : int or numpy.random.Generator, keyword-only
    max_length, deviation, prob_additional_deadline, additivity
        CATS's defaults 10, 0.5, 0.7, 0.2.

    Returns
    -------
    Instance

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 4.4 ("temporal scheduling").
    """
    check_int("n_goods", n_goods)
    check_int("n_bids", n_bids)
    check_int("max_length", max_length)
    check_prob("deviation", deviation)
    check_prob("prob_additional_deadline", prob_additional_deadline)
    check_pos("additivity", additivity, allow_zero=True)
    rng = rng_of(seed)
    n = n_goods

    def draw() -> list[Bundle]:
        length = int(rng.integers(1, min(max_length, n) + 1))
        d1 = int(rng.integers(length - 1, n))
        dev = rng.uniform(1 - deviation, 1 + deviation)
        bids: list[Bundle] = []
        prev, d = -1, d1
        while True:
            v = dev * length ** (1 + additivity) * (d1 + 1) / (d + 1)
            for end in range(max(prev + 1, length - 1), d + 1):
                bids.append((tuple(range(end - length + 1, end + 1)), round(float(v), 4)))
            if d >= n - 1 or rng.random() >= prob_additional_deadline:
                break
            prev, d = d, int(rng.integers(d + 1, n))
        return bids

    bidders = _fill(n_bids, draw)
    return single_unit_instance(n, bidders, name=f"scheduling-{n_goods}x{n_bids}-s{seed}",
                                metadata=_meta("scheduling", seed, n_goods=n_goods, n_bids=n_bids, max_length=max_length,
                                               deviation=deviation, prob_additional_deadline=prob_additional_deadline,
                                               additivity=additivity))


# ------------------------------------------------------------------------------ legacy
LEGACY = ("L1", "L2", "L3", "L4", "L5", "L6", "L7")


def _legacy_bid(kind: str, n: int, rng: np.random.Generator) -> Bundle:
    if kind in ("L1", "L2"):
        count = int(rng.integers(1, n + 1))
    elif kind == "L3":
        count = min(3, n)
    elif kind == "L4":
        count = 1
        while count < n and rng.random() < 0.55:
            count += 1
    elif kind == "L5":
        count = int(min(n, max(1, round(rng.normal(4.0, 1.0)))))
    elif kind == "L6":
        # exponential: P(count = k) proportional to exp(-k / 5), k = 1..N
        k = np.arange(1, n + 1)
        p = np.exp(-k / 5.0)
        count = int(rng.choice(k, p=p / p.sum()))
    else:  # L7 binomial: each good with p = 0.2 (at least one)
        count = max(1, int(rng.binomial(n, 0.2)))
    goods = tuple(sorted(int(g) for g in rng.choice(n, size=count, replace=False)))
    if kind in ("L1", "L3"):
        price = rng.uniform(0.0, 1.0)
    elif kind == "L5":
        price = max(0.0, rng.normal(16.0, 3.0))
    else:  # linear in the number of goods
        price = rng.uniform(0.0, count)
    return goods, round(float(price), 6)


def legacy(kind: str, n_goods: int = 64, n_bids: int = 200, *, seed: int | np.random.Generator = 0) -> Instance:
    """The legacy distributions L1-L7 of the earlier literature, as listed by CATS [1]_.

    Goods are drawn uniformly without replacement; every bid is a bidder of its own (no XOR).

    ========  ============================================  =========================
    kind      number of goods                               price
    ========  ============================================  =========================
    L1        ``U{1..N}`` (random)                          ``U[0, 1]``
    L2        ``U{1..N}`` (weighted random)                 ``U[0, count]``
    L3        3 (uniform)                                   ``U[0, 1]``
    L4        1, then +1 while a coin with p = 0.55 (decay)  ``U[0, count]``
    L5        ``round(N(4, 1))``, at least 1 (normal)       ``N(16, 3)``, at least 0
    L6        ``P(k) ~ exp(-k/5)`` (exponential, q = 5)     ``U[0, count]``
    L7        ``Binomial(N, 0.2)``, at least 1              ``U[0, count]``
    ========  ============================================  =========================

    Parameters
    ----------
    kind : {"L1", ..., "L7"}
    n_goods, n_bids : int
    seed : int or numpy.random.Generator, keyword-only

    Returns
    -------
    Instance

    References
    ----------
    .. [1] Leyton-Brown, Pearson & Shoham, EC 2000, section 2 (legacy distributions), after
       Sandholm (2002), Fujishima et al. (1999), Hoos & Boutilier (2000).
    """
    if kind not in LEGACY:
        raise InputError(f"unknown legacy distribution {kind!r}; valid: {', '.join(LEGACY)}")
    check_int("n_goods", n_goods)
    check_int("n_bids", n_bids)
    rng = rng_of(seed)
    bidders = [[_legacy_bid(kind, n_goods, rng)] for _ in range(n_bids)]
    return single_unit_instance(n_goods, bidders, name=f"{kind}-{n_goods}x{n_bids}-s{seed}",
                                metadata=_meta(kind, seed, n_goods=n_goods, n_bids=n_bids))
