"""Lavi–Swamy on the clique relaxation (option ``relaxation="clique"``).

Independent certificates: the conflict graph is rebuilt here from the instance's demands and
owners, *every* maximal clique of it is enumerated and the LP with all of them is solved with
SciPy (not through :mod:`gensolver.mechanisms`); integral optima by brute force over subsets.
"""

from __future__ import annotations

import itertools
import json
import random

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

from gensolver.errors import InputError
from gensolver.mechanisms import outcome_to_dict, run_mechanism
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.model.tolerances import capacity_limit

from .test_lavi_swamy_truthful import max_gain, misreports, small_round
from .test_order_independence import shuffled, strip

ALPHA = 2.0


def resource_round(seed: int) -> Instance:
    """Slots where bundles conflict on one resource or another (``units`` for the misreports' extra bids)."""
    rng = random.Random(seed)
    slots = tuple(Slot(f"s{k}", {"mem": 4.0, "cmp": 1.0, "units": 2.0}) for k in range(rng.randint(2, 3)))
    bids = []
    for i in range(rng.randint(3, 5)):
        for k in range(rng.randint(1, 2)):
            chosen = rng.sample([s.id for s in slots], rng.randint(1, 2))
            demand = {s: {"mem": float(rng.choice([1, 2, 3])), "cmp": rng.choice([0.25, 0.5, 0.75])} for s in chosen}
            bids.append(Bid(f"b{i}_{k}", f"B{i}", float(rng.randint(1, 9)), demand))
    return Instance(slots, tuple(bids))


def feasible(inst: Instance, chosen: list[Bid]) -> bool:
    if len({b.bidder for b in chosen}) < len(chosen):
        return False
    for s in inst.slots:
        for r, c in s.capacity.items():
            if sum(b.demand.get(s.id, {}).get(r, 0.0) for b in chosen) > capacity_limit(c):
                return False
    return True


def brute_optimum(inst: Instance) -> float:
    bids = [b for b in inst.bids if b.value > 0]
    return max(sum(b.value for b in S) for k in range(len(bids) + 1) for S in itertools.combinations(bids, k)
               if feasible(inst, list(S)))


def clique_lp(inst: Instance, without: str | None = None, cliques: bool = True) -> float:
    """The LP over the bids that fit alone (of ``without``'s rivals), with every maximal clique of
    the whole conflict graph when ``cliques`` (else the plain relaxation)."""
    bids = [b for b in inst.bids if b.value > 0 and b.bidder != without and feasible(inst, [b])]
    n = len(bids)
    if n == 0:
        return 0.0
    rows, rhs = [], []
    for s in inst.slots:
        for r, c in s.capacity.items():
            rows.append([b.demand.get(s.id, {}).get(r, 0.0) for b in bids])
            rhs.append(c)
    for o in {b.bidder for b in bids}:
        rows.append([1.0 if b.bidder == o else 0.0 for b in bids])
        rhs.append(1.0)
    if cliques:
        G = nx.Graph()
        G.add_nodes_from(range(n))
        G.add_edges_from((a, b) for a, b in itertools.combinations(range(n), 2) if not feasible(inst, [bids[a], bids[b]]))
        for C in nx.find_cliques(G):
            rows.append([1.0 if k in C else 0.0 for k in range(n)])
            rhs.append(1.0)
    res = linprog(-np.array([b.value for b in bids]), A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(-res.fun)


def run(inst: Instance, relaxation: str = "clique", alpha: float | None = ALPHA) -> dict:
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy",
                        options={"alpha": alpha, "relaxation": relaxation})
    return out.details


@pytest.mark.parametrize("seed", range(6))
def test_lp_is_the_clique_relaxation_between_opt_and_the_plain_lp(seed: int) -> None:
    inst = resource_round(seed) if seed % 2 else small_round(seed)
    d, plain = run(inst), run(inst, "plain")
    full = clique_lp(inst)
    assert d["relaxation"]["name"] == "clique" and d["relaxation"]["closed"] is True
    assert d["lp_welfare"] == pytest.approx(full, abs=1e-6)
    assert brute_optimum(inst) - 1e-6 <= d["lp_welfare"] <= plain["lp_welfare"] + 1e-6
    assert plain["lp_welfare"] == pytest.approx(clique_lp(inst, cliques=False), abs=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_fractional_utilities_are_vcg_on_the_clique_relaxation(seed: int) -> None:
    """Each bidder's expected utility times alpha is LP*(all) - LP*(without it), both over every clique."""
    inst = resource_round(seed) if seed % 2 else small_round(seed)
    d = run(inst)
    full = clique_lp(inst)
    for bidder in inst.bidder_ids:
        assert d["expected_utilities"][bidder] * d["alpha"] == pytest.approx(
            full - clique_lp(inst, without=bidder), abs=1e-6)


def test_a_conflict_triangle_needs_no_scaling() -> None:
    """Three bundles pairwise sharing a good: the plain LP gives each one half (alpha 1.5), the
    clique relaxation one in all (alpha 1, the expected welfare the best allocation's)."""
    slots = tuple(Slot(g, {"units": 1.0}) for g in "ABC")
    bids = tuple(Bid(i, f"B{k}", 2.0, {g: {"units": 1.0} for g in i}) for k, i in enumerate(("AB", "BC", "CA")))
    inst = Instance(slots, bids)
    plain, clique = run(inst, "plain", None), run(inst, "clique", None)
    assert plain["lp_welfare"] == pytest.approx(3.0) and plain["alpha_verified"] == pytest.approx(1.5)
    assert clique["lp_welfare"] == pytest.approx(2.0) and clique["alpha_verified"] == pytest.approx(1.0)
    assert clique["expected_welfare"] == pytest.approx(brute_optimum(inst))


@pytest.mark.parametrize("seed", range(3))
def test_no_misreport_gains_with_alpha_fixed(seed: int) -> None:
    inst = resource_round(seed) if seed % 2 else small_round(seed)
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"alpha": ALPHA, "relaxation": "clique"})
    assert outcome_to_dict(out)["truthful"] is True
    assert max_gain(inst, ALPHA, options={"relaxation": "clique"}) <= 1e-7
    # the misreports include bids that change the cliques (an unvalued extra bid on every slot)
    assert any(name.startswith("add unvalued") for name, _ in misreports(inst, inst.bidder_ids[0]))


@pytest.mark.parametrize("seed", range(3))
def test_shuffled_bids_give_the_same_outcome(seed: int) -> None:
    inst = resource_round(seed)
    a = run_mechanism(inst, mechanism="lavi-swamy", method="auto", time_limit=1,
                      options={"alpha": ALPHA, "relaxation": "clique", "threads": 1})
    b = run_mechanism(shuffled(inst, seed), mechanism="lavi-swamy", method="auto", time_limit=1,
                      options={"alpha": ALPHA, "relaxation": "clique", "threads": 1})
    assert json.dumps(strip(outcome_to_dict(a, details=True)), sort_keys=True) == \
        json.dumps(strip(outcome_to_dict(b, details=True)), sort_keys=True)


def test_an_unknown_relaxation_is_refused_by_name() -> None:
    with pytest.raises(InputError, match="relaxation"):
        run(small_round(0), "configuration")


@pytest.mark.parametrize(("family", "seed"), [("gpu", 3), ("trace-philly", 3)])
def test_a_generated_round_ends_with_no_violated_clique(family: str, seed: int, request: pytest.FixtureRequest) -> None:
    """On rounds that need several separation rounds, the decomposed LP optimum (the lottery's
    mean times alpha) violates no clique of its support's conflict graph, rebuilt here; the
    plain LP's optimum violates one."""
    from gensolver.instances import generate

    if family.startswith("trace-"):
        request.getfixturevalue("shared_dir")  # the trace is read from ../shared: skip without it
    inst = generate(family, seed=seed)
    by_id = {b.id: b for b in inst.bids}

    def heaviest_clique(details: dict) -> float:
        x: dict[str, float] = {}
        for entry in details["decomposition"]:
            for w in entry["winners"]:
                x[w] = x.get(w, 0.0) + entry["probability"] * details["alpha"]
        support = [by_id[w] for w, v in x.items() if v > 1e-9]
        G = nx.Graph()
        G.add_nodes_from(b.id for b in support)
        G.add_edges_from((a.id, b.id) for a, b in itertools.combinations(support, 2) if not feasible(inst, [a, b]))
        return max(sum(x[w] for w in C) for C in nx.find_cliques(G))

    opts = {"alpha": None, "optima": 0}
    clique = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={**opts, "relaxation": "clique"})
    plain = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options=opts)
    assert clique.details["relaxation"]["closed"] is True and clique.details["relaxation"]["rounds"] > 2
    assert heaviest_clique(clique.details) <= 1.0 + 1e-6
    assert heaviest_clique(plain.details) > 1.0 + 1e-3
    assert clique.details["lp_welfare"] <= plain.details["lp_welfare"] + 1e-6


def test_the_cli_passes_the_relaxation(tmp_path, capsys) -> None:
    from gensolver.cli import main
    from gensolver.model import write_instance

    slots = tuple(Slot(g, {"units": 1.0}) for g in "ABC")
    bids = tuple(Bid(i, f"B{k}", 2.0, {g: {"units": 1.0} for g in i}) for k, i in enumerate(("AB", "BC", "CA")))
    path = tmp_path / "triangle.json"
    write_instance(Instance(slots, bids), path)
    args = ["solve", str(path), "--mechanism", "lavi-swamy", "--method", "greedy", "--alpha", "1", "--json"]
    assert main([*args, "--relaxation", "clique"]) == 0
    lot = json.loads(capsys.readouterr().out)["lottery"]
    assert lot["relaxation"]["name"] == "clique" and lot["truthful_in_expectation"] is True
    assert lot["expected_welfare"] == pytest.approx(2.0)
    assert main(args) == 0  # the plain LP cannot be decomposed at alpha 1 here
    lot = json.loads(capsys.readouterr().out)["lottery"]
    assert lot["relaxation"]["name"] == "plain" and lot["truthful_in_expectation"] is False
    assert main([*args, "--relaxation", "config"]) == 2
    assert "--relaxation" in capsys.readouterr().err
    assert main(["solve", str(path), "--mechanism", "vcg", "--relaxation", "clique"]) == 2
