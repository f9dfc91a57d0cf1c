"""Behaviour of :mod:`gensolver.mechanisms.core_certify`: the exact core payment point.

The certified point is checked against independent solvers (scipy's HiGHS LP for the minimum
revenue, SLSQP for the nearest point) and, exactly, against every row in rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gensolver.mechanisms.core_certify import certify_core_point

optimize = pytest.importorskip("scipy.optimize")


def instance(seed: int, n: int = 4, coalitions: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``G p >= h`` of a core problem: coalition rows ``sum_S p >= h_S`` (``h_S`` below the
    bids of ``S``, so the bids are feasible), lower bounds ``p >= c`` (the VCG payments) and
    upper bounds ``-p >= -bid``; and ``c``. Numbers are on a 1/8 grid, as bids often are."""
    rng = np.random.default_rng(seed)
    bid = rng.integers(8, 80, n) / 8
    c = np.floor(bid * rng.uniform(0.1, 0.6, n) * 8) / 8
    rows, rhs = [], []
    for _ in range(coalitions):
        s = rng.random(n) < 0.5
        if not s.any():
            s[rng.integers(n)] = True
        rows.append(s.astype(float))
        rhs.append(np.floor(bid[s].sum() * rng.uniform(0.5, 0.95) * 8) / 8)
    G = np.vstack([np.array(rows), np.eye(n), -np.eye(n)])
    h = np.concatenate([rhs, c, -bid])
    return G, h, c


def float_points(G: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The LP point (min revenue), the QP point (nearest to ``c`` at that revenue), the revenue."""
    n = G.shape[1]
    lp = optimize.linprog(np.ones(n), A_ub=-G, b_ub=-h, bounds=[(None, None)] * n, method="highs")
    assert lp.status == 0
    revenue = float(lp.fun)
    qp = optimize.minimize(lambda p: float(((p - c) ** 2).sum()), lp.x, jac=lambda p: 2 * (p - c), method="SLSQP",
                           constraints=[{"type": "ineq", "fun": lambda p: G @ p - h, "jac": lambda p: G},
                                        {"type": "eq", "fun": lambda p: np.array([p.sum() - revenue]),
                                         "jac": lambda p: np.ones((1, n))}],
                           options={"ftol": 1e-14, "maxiter": 500})
    assert qp.success, qp.message
    return lp.x, qp.x, revenue


def assert_core_point(G: np.ndarray, h: np.ndarray, c: np.ndarray, p: np.ndarray, revenue: float,
                      p_ref: np.ndarray) -> None:
    """``p`` satisfies every row (exactly, up to the float rounding of the point), has the
    minimum revenue and is the reference nearest point."""
    exact = [Fraction(float(x)) for x in p]
    for row, rhs in zip(G, h):
        lhs = sum((Fraction(float(a)) * x for a, x in zip(row, exact)), Fraction(0))
        assert lhs - Fraction(float(rhs)) >= Fraction(-1, 10 ** 9), (row, rhs, p)
    assert float(p.sum()) == pytest.approx(revenue, abs=1e-7)
    assert np.allclose(p, p_ref, atol=1e-5), (p, p_ref)


@pytest.mark.parametrize("seed", range(8))
def test_the_certified_point_is_the_core_point_of_independent_solvers(seed):
    G, h, c = instance(seed)
    p_lp, p_qp, revenue = float_points(G, h, c)
    p = certify_core_point(G, h, c, p_lp, p_qp, slack=1e-7)
    assert p is not None
    assert_core_point(G, h, c, p, revenue, p_qp)
    # the point is exact: every tight row holds with equality in rationals, no tolerance
    tight = [k for k in range(len(h)) if abs(float(G[k] @ p) - h[k]) < 1e-7]
    assert tight


@pytest.mark.parametrize("seed", range(8))
def test_a_wrong_guess_of_the_face_is_corrected(seed):
    # the LP vertex given as the QP point: it has rows tight that the nearest point has not (in
    # most seeds), which the active-set loop must drop by their negative multipliers
    G, h, c = instance(seed)
    p_lp, p_qp, revenue = float_points(G, h, c)
    p = certify_core_point(G, h, c, p_lp, p_lp, slack=1e-7)
    assert p is not None
    assert_core_point(G, h, c, p, revenue, p_qp)


def test_no_certificate_when_no_row_is_taken_as_tight():
    G, h, c = instance(0)
    p_lp, p_qp, _ = float_points(G, h, c)
    assert certify_core_point(G, h, c, p_lp, p_qp, slack=-1.0) is None


def test_the_check_rejects_a_point_that_is_not_the_core_point():
    G, h, c = instance(1)
    p_lp, p_qp, revenue = float_points(G, h, c)
    with pytest.raises(AssertionError):
        assert_core_point(G, h, c, c, revenue, p_qp)  # the VCG point: below some coalition row
    shifted = p_qp.copy()
    shifted[0] += 0.25
    shifted[1] -= 0.25  # same revenue, another point
    with pytest.raises(AssertionError):
        assert_core_point(G, h, c, shifted, revenue, p_qp)
