"""Core payments on one budget (:mod:`gensolver.mechanisms.core_lp`): the VCG stage, every
separation, LP, QP and certificate together.

Independent checks: a spy on the solves the run starts adds up the limits they are given
(never above the budget); on tiny rounds the payment intervals of a run cut short contain the
brute-force core point (exact rational arithmetic, :mod:`tests.mechanisms.test_core_exact`); the
QP point is checked by its KKT conditions with a non-negative least-squares fit of the
multipliers (:func:`scipy.optimize.nnls`), which rejects the LP point it starts from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from gensolver import read_instance
from gensolver.mechanisms import run_mechanism
from gensolver.mechanisms.core_lp import WORK_PER_CALL, CoreBudget, active_set_qp, lp_qp
from gensolver.model.instance import Instance

from .test_core_exact import check_core
from .test_exact_payments import tiny_rounds

SMALL = Path(__file__).resolve().parents[2] / "gensolver" / "data" / "suites" / "small"
CORE = sys.modules["gensolver.mechanisms.core"]
#: CP-SAT stops on its deterministic clock a little after its limit (as in test_vcg_budget)
DET_OVERSHOOT = 0.25


def limits_within(calls: list[tuple[float | None, float]], budget: float) -> bool:
    """Whether each solve of a run (``(limit given, work it charged)``, in order) was given at
    most what the solves before it left of ``budget``."""
    spent = 0.0
    for limit, work in calls:
        if limit is None or limit > budget - spent + 1e-9:
            return False
        spent += work
    return True


def test_limits_checker_can_fail() -> None:
    assert limits_within([(0.5, 0.4), (0.3, 0.3), (0.1, 0.0)], 1.0)
    assert not limits_within([(1.0, 0.2), (1.0, 0.1)], 1.0)  # the old rule: the whole budget each
    assert not limits_within([(None, 0.0)], 1.0)


@pytest.mark.parametrize("budget", [0.3, 1.0])
def test_solves_share_one_budget(monkeypatch: pytest.MonkeyPatch, budget: float) -> None:
    """The VCG stage and every separation get shares that add up to the budget, and the work
    charged by all stages stays within it (plus CP-SAT's overshoot); the run repeats exactly."""
    inst = read_instance(SMALL / "small-gpu-1.json.gz")
    calls: list[tuple[float | None, float]] = []
    real_vcg, real_separate = CORE.vcg, CORE.separate

    def vcg_spy(*a, **k):  # type: ignore[no-untyped-def]
        out = real_vcg(*a, **k)
        calls.append((k["time_limit"], out.details["work"]["total"]))
        return out

    def separate_spy(*a, **k):  # type: ignore[no-untyped-def]
        sep = real_separate(*a, **k)
        calls.append((k["time_limit"], sep.work))
        return sep

    monkeypatch.setattr(CORE, "vcg", vcg_spy)
    monkeypatch.setattr(CORE, "separate", separate_spy)
    outs = []
    for _ in range(2):
        calls.clear()
        out = run_mechanism(inst, mechanism="core", method="auto", time_limit=budget,
                            options={"threads": 1, "vcg_share": 0.1})
        assert len(calls) >= 2 and limits_within(calls, budget), calls
        assert sum(w for _, w in calls) <= budget + DET_OVERSHOOT
        work = out.details["work"]
        assert work["total"] == pytest.approx(sum(v for k, v in work.items() if k != "total"))
        assert work["total"] <= budget + DET_OVERSHOOT, work
        assert work.get("separation", 0.0) > 0.0
        outs.append(out)
    assert outs[0].payments == outs[1].payments and outs[0].payment_bounds == outs[1].payment_bounds


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=tiny_rounds(), budget=st.sampled_from([1e-3, 0.02, 0.1, 0.4]))
def test_runs_cut_short_say_so_and_keep_the_truth(inst: Instance, budget: float) -> None:
    """Whatever the budget: within it, and an inexact run's intervals hold the core point."""
    out = run_mechanism(inst, mechanism="core", method="auto", time_limit=budget, options={"threads": 1})
    assert out.details["work"]["total"] <= budget + DET_OVERSHOOT
    check_core(inst, out)


def kkt_holds(G: np.ndarray, h: np.ndarray, c: np.ndarray, p: np.ndarray, scale: float) -> bool:
    """``p`` minimises ``||p - c||^2`` over ``G p >= h`` and ``sum(p) = sum(p)``: feasible, and
    ``2 (p - c) = G_A^T lam + mu 1`` with ``lam >= 0`` on the tight rows ``A`` (least squares)."""
    if np.min(G @ p - h) < -1e-7 * scale:
        return False
    tight = np.flatnonzero(G @ p - h <= 1e-7 * scale)
    ones = np.ones((len(p), 1))
    M = np.hstack([G[tight].T, ones, -ones])
    _, resid = nnls(M, 2.0 * (p - c))
    return resid <= 1e-6 * scale


def _random_core_rows(rng: np.random.Generator, n: int, m: int) -> tuple[list[tuple[np.ndarray, float]], np.ndarray,
                                                                           np.ndarray]:
    lo = rng.uniform(0, 10, n)
    hi = lo + rng.uniform(1, 10, n)
    rows = []
    for _ in range(m):
        coef = (rng.random(n) < 0.6).astype(float)
        rows.append((coef, float(coef @ (lo + (hi - lo) * rng.uniform(0.2, 0.9)))))
    return rows, lo, hi


@pytest.mark.parametrize("n, m", [(5, 3), (20, 40), (60, 31), (150, 300)])
def test_qp_point_meets_kkt_and_the_lp_point_does_not(n: int, m: int) -> None:
    rows, lo, hi = _random_core_rows(np.random.default_rng(n + m), n, m)
    res = lp_qp(rows, lo, hi, lo, CoreBudget(None, deterministic=True))
    assert res is not None and res.complete
    A = np.array([r[0] for r in rows])
    G = np.vstack([A, np.eye(n), -np.eye(n)])
    h = np.concatenate([[r[1] for r in rows], lo, -hi])
    assert abs(res.p.sum() - res.p_lp.sum()) <= 1e-6 * max(1.0, res.p_lp.sum())
    assert kkt_holds(G, h, lo, res.p, float(hi.max()))
    if np.abs(res.p - res.p_lp).max() > 1e-3:  # the LP vertex is not the nearest point: rejected
        assert not kkt_holds(G, h, lo, res.p_lp, float(hi.max()))


def test_kkt_checker_can_fail() -> None:
    """Any other feasible point at the same revenue is not the (unique) nearest one."""
    n, m = 20, 11
    rows, lo, hi = _random_core_rows(np.random.default_rng(4), n, m)
    res = lp_qp(rows, lo, hi, lo, CoreBudget(None, deterministic=True))
    assert res is not None
    G = np.vstack([np.array([r[0] for r in rows]), np.eye(n), -np.eye(n)])
    h = np.concatenate([[r[1] for r in rows], lo, -hi])
    moved = 0
    for i in range(n):
        for j in range(n):
            q = res.p.copy()
            q[i] += 0.05
            q[j] -= 0.05
            if i != j and np.min(G @ q - h) >= 0:
                assert not kkt_holds(G, h, lo, q, float(hi.max()))
                moved += 1
    assert moved > 0


def test_active_set_qp_meets_kkt() -> None:
    """The fallback QP on its own, from the LP point."""
    for seed in range(5):
        rows, lo, hi = _random_core_rows(np.random.default_rng(seed), 12, 8)
        res = lp_qp(rows, lo, hi, lo, CoreBudget(None, deterministic=True))
        assert res is not None
        n = len(lo)
        A = np.array([r[0] for r in rows])
        G = np.vstack([A, np.eye(n), -np.eye(n)])
        h = np.concatenate([[r[1] for r in rows], lo, -hi])
        p = active_set_qp(G, h, lo, res.p_lp, budget=CoreBudget(None, deterministic=True), scale=float(hi.max()),
                          max_iter=500)
        assert p is not None and kkt_holds(G, h, lo, p, float(hi.max()))


def test_lp_and_qp_stop_on_their_budget() -> None:
    """A budget too small for the LP: no point, and no more charged than it (plus one call)."""
    rows, lo, hi = _random_core_rows(np.random.default_rng(3), 150, 300)
    small = CoreBudget(0.006, deterministic=True)
    res = lp_qp(rows, lo, hi, lo, small)
    assert res is None or not res.complete
    assert small.work <= 0.006 + WORK_PER_CALL
