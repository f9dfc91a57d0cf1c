"""Lavi–Swamy over other optima of the LP relaxation (option ``optima``).

Independent certificates: every optimum of the face is LP-feasible and LP-optimal by a SciPy
solve built from the bids' demand dicts; the fractional VCG re-priced at it matches payments
recomputed with SciPy's ``LP*(-i)``, and each bidder's fractional utility is the same at every
optimum (which is why the choice keeps truthfulness); the lottery kept has mean (chosen
optimum) / alpha; with alpha fixed, brute-force misreports gain nothing on rounds where only
another optimum verifies that alpha.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from gensolver.errors import InputError
from gensolver.mechanisms import run_mechanism
from gensolver.mechanisms.fractional import SECOND_STAGES, at_optimum, face_optima, fractional_vcg
from gensolver.mechanisms.lavi_swamy import lavi_swamy
from gensolver.model.canonical import canonical
from gensolver.model.instance import Bid, Instance, Slot
from gensolver.solvers.engine import from_instance

from .test_lavi_swamy import check_outcome, independent_lp, lp_feasible
from .test_lavi_swamy_truthful import max_gain

#: rounds (seeds of ``multi_unit_round``) whose LP has several optima of different verified alpha
SEEDS = (0, 54, 75, 113)


def multi_unit_round(seed: int) -> Instance:
    """2–3 slots of 1–3 units, 3–5 bidders with 1–2 bids of 1–2 units on 1–2 slots."""
    rng = random.Random(seed)
    goods = [f"g{k}" for k in range(rng.randint(2, 3))]
    slots = tuple(Slot(g, {"units": float(rng.randint(1, 3))}) for g in goods)
    bids = []
    for i in range(rng.randint(3, 5)):
        for k in range(rng.randint(1, 2)):
            chosen = rng.sample(goods, rng.randint(1, 2))
            bids.append(Bid(f"b{i}_{k}", f"B{i}", float(rng.randint(1, 9)),
                            {g: {"units": float(rng.randint(1, 2))} for g in chosen}))
    return canonical(Instance(slots, tuple(bids)))


def by_bid(P, x: np.ndarray) -> dict[str, float]:
    return {P.column_id(int(j)): float(x[j]) for j in np.flatnonzero(x)}


def is_lp_optimum(inst: Instance, point: dict[str, float]) -> bool:
    """The independent certificate: feasible, and worth the SciPy LP optimum."""
    lp_star, _, _ = independent_lp(inst)
    value = sum(inst.bids[inst.bid_index[k]].value * s for k, s in point.items())
    return lp_feasible(inst, point) and abs(value - lp_star) <= 1e-9 * max(1.0, lp_star)


def independent_payments(inst: Instance, point: dict[str, float]) -> dict[str, float]:
    """Fractional VCG at ``point``: ``LP*(-i) - (LP* - v_i . x_i)``, every LP by SciPy."""
    lp_star, _, _ = independent_lp(inst)
    out = {}
    for bidder in inst.bidder_ids:
        v_i = sum(inst.bids[inst.bid_index[k]].value * s for k, s in point.items()
                  if inst.bids[inst.bid_index[k]].bidder == bidder)
        out[bidder] = min(max(independent_lp(inst, exclude=bidder)[0] - (lp_star - v_i), 0.0), v_i) if v_i > 0 else 0.0
    return out


def face(seed: int):
    inst = multi_unit_round(seed)
    P = from_instance(inst)
    fv = fractional_vcg(P)
    return inst, P, fv, face_optima(P, fv, len(SECOND_STAGES))


@pytest.mark.parametrize("seed", SEEDS)
def test_every_face_optimum_is_an_lp_optimum(seed: int) -> None:
    inst, P, fv, optima = face(seed)
    assert optima and any(not np.allclose(x, fv.lp.x) for _, x in optima)
    for _, x in optima:
        assert is_lp_optimum(inst, by_bid(P, x))


@pytest.mark.parametrize("seed", SEEDS)
def test_fractional_utility_is_the_same_at_every_optimum(seed: int) -> None:
    inst, P, fv, optima = face(seed)
    lp_star, _, _ = independent_lp(inst)
    moved = False
    for _, x in [("simplex", fv.lp.x), *optima]:
        g = at_optimum(P, fv, x)
        assert g.exact
        pay = independent_payments(inst, by_bid(P, x))
        for o, bidder in enumerate(inst.bidder_ids):
            assert g.payments[o] == pytest.approx(pay[bidder], abs=1e-7)
            utility = g.owner_value[o] - g.payments[o]
            assert utility == pytest.approx(lp_star - independent_lp(inst, exclude=bidder)[0], abs=1e-7)
        moved = moved or not np.allclose(g.payments, fv.payments, atol=1e-7)
    assert moved  # some optimum moves a bidder's value and payment: x*'s payments would be wrong there


def test_the_certificates_can_fail() -> None:
    inst, P, fv, optima = face(0)
    x = next(x for _, x in optima if not np.allclose(x, fv.lp.x))
    assert not is_lp_optimum(inst, by_bid(P, x / 2))  # feasible, not optimal
    assert not is_lp_optimum(inst, by_bid(P, 2 * x))  # infeasible
    pay = independent_payments(inst, by_bid(P, x))
    stale = {b: float(fv.payments[o]) for o, b in enumerate(inst.bidder_ids)}  # priced at x*, not x
    assert any(abs(stale[b] - pay[b]) > 1e-6 for b in inst.bidder_ids)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_kept_optimum_is_decomposed_and_priced(seed: int) -> None:
    inst = multi_unit_round(seed)
    base = lavi_swamy(inst, method="greedy", options={"optima": 0})
    out = lavi_swamy(inst, method="greedy")
    assert out.details["alpha_verified"] < base.details["alpha_verified"] - 1e-9
    assert out.details["optimum"] != "simplex" and base.details["optimum"] == "simplex"
    assert out.exact
    check_outcome(inst, out)  # alpha * lottery mean is an independent LP optimum, payments recomputed


@pytest.mark.parametrize(("seed", "alpha"), [(0, 1.0), (54, 1.34), (75, 1.0), (113, 1.0)])
def test_no_misreport_gains_when_another_optimum_verifies_alpha(seed: int, alpha: float) -> None:
    inst = multi_unit_round(seed)
    out = run_mechanism(inst, mechanism="lavi-swamy", method="greedy", options={"alpha": alpha})
    assert out.details["optimum"] != "simplex" and out.details["truthful_in_expectation"]
    assert max_gain(inst, alpha) <= 1e-7


def test_an_unconverged_lp_has_no_face() -> None:
    _, P, fv, _ = face(0)
    stale = dataclasses.replace(fv, lp=dataclasses.replace(fv.lp, converged=False))
    assert face_optima(P, stale, len(SECOND_STAGES)) == []
    with pytest.raises(ValueError, match="converged"):
        at_optimum(P, stale, fv.lp.x)


@pytest.mark.parametrize("bad", [-1, len(SECOND_STAGES) + 1, True, 1.5, "all"])
def test_bad_optima_are_refused(bad) -> None:
    with pytest.raises(InputError, match="optima"):
        lavi_swamy(multi_unit_round(0), method="greedy", options={"optima": bad})


def test_a_unique_optimum_is_decomposed_once() -> None:
    """One good, values 5 > 3: the LP optimum (A gets it) is unique, so every second stage
    returns it and nothing else is decomposed."""
    inst = Instance((Slot("g", {"units": 1.0}),), (Bid("a", "A", 5.0, {"g": {"units": 1.0}}),
                                                   Bid("b", "B", 3.0, {"g": {"units": 1.0}})))
    P = from_instance(canonical(inst))
    assert len(face_optima(P, fractional_vcg(P), len(SECOND_STAGES))) == len(SECOND_STAGES)
    out = lavi_swamy(inst, method="greedy")
    assert [t["optimum"] for t in out.details["optima_tried"]] == ["simplex"]
