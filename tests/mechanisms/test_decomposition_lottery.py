"""Lavi–Swamy's decomposition (:mod:`gensolver.mechanisms.decomposition`) against references of
its own: the LP optimum from SciPy's ``linprog`` on rows built here from the bids, every drawn
allocation checked by the feasibility certificate, and the lottery's mean compared with
``x* / alpha`` coordinate by coordinate."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.optimize import linprog

from gensolver import from_dict
from gensolver.mechanisms.decomposition import decompose
from gensolver.solvers.engine import from_instance
from gensolver.verify import check_allocation


def _round(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    slots = [{"id": f"s{k}", "capacity": {"u": 1.0}} for k in range(5)]
    bids = []
    for b in range(8):  # pairs of slots of close values: odd cycles make the LP fractional
        for j in range(rng.randint(1, 2)):
            picked = rng.sample([s["id"] for s in slots], 2)
            bids.append({"id": f"b{b}.{j}", "bidder": f"B{b}", "value": rng.randint(5, 8),
                         "demand": {s: {"u": 1.0} for s in picked}})
    return from_dict({"schema": "gensolver.instance/v1", "slots": slots, "bids": bids})


def _lp_optimum(inst) -> tuple[np.ndarray, float]:  # type: ignore[no-untyped-def]
    """x* of the LP relaxation, rows built from the bids' demand dicts (not the package's matrix)."""
    ids = [b.id for b in inst.bids]
    rows, rhs = [], []
    for s in inst.slots:
        for r, cap in s.capacity.items():
            rows.append([b.demand.get(s.id, {}).get(r, 0.0) for b in inst.bids])
            rhs.append(cap)
    for bidder in {b.bidder for b in inst.bids}:  # XOR: one bid per bidder at most
        rows.append([1.0 if b.bidder == bidder else 0.0 for b in inst.bids])
        rhs.append(1.0)
    res = linprog(-np.array([b.value for b in inst.bids]), A_ub=rows, b_ub=rhs, bounds=(0, 1), method="highs")
    assert res.status == 0 and len(ids) == res.x.size
    return res.x, -res.fun


@pytest.mark.parametrize("oracle", ["greedy", "auto"])
@pytest.mark.parametrize("seed", range(5))
def test_the_lottery_draws_feasible_allocations_whose_mean_is_x_over_alpha(seed: int, oracle: str) -> None:
    inst = _round(seed)
    x, _ = _lp_optimum(inst)
    x = np.where(x > 1e-9, x, 0.0)
    assert np.any((x > 1e-6) & (x < 1 - 1e-6))  # a fractional optimum: a real lottery
    P = from_instance(inst)
    assert [P.column_id(j) for j in range(P.n)] == [b.id for b in inst.bids]
    dec = decompose(P, x, oracle=oracle, seed=0, threads=1, deterministic=True, max_iterations=2000)
    assert dec.alpha >= max(1.0, dec.alpha_verified) - 1e-9
    assert np.all(dec.probabilities >= -1e-12) and dec.probabilities.sum() <= 1 + 1e-9
    assert dec.null_probability == pytest.approx(1 - dec.probabilities.sum(), abs=1e-9)
    for cols in dec.allocations:
        winners = [P.column_id(int(j)) for j in cols]
        assert winners and check_allocation(inst, winners).feasible, winners
    assert np.allclose(dec.mean(P.n), x / dec.alpha, atol=1e-7)


def test_an_alpha_asked_for_above_the_verified_one_is_kept() -> None:
    inst = _round(1)
    x, _ = _lp_optimum(inst)
    P = from_instance(inst)
    x = np.where(x > 1e-9, x, 0.0)
    dec = decompose(P, x, alpha=5.0, oracle="greedy", deterministic=True)
    assert dec.alpha == 5.0 and x.sum() > 0
    assert np.allclose(dec.mean(P.n), x / 5.0, atol=1e-7)
    # every allocation holds a bid, so the draws cover at most sum(x*) / 5 of the probability
    assert dec.null_probability >= 1 - x.sum() / 5.0 - 1e-9
