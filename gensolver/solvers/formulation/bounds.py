"""Upper bounds on the welfare optimum that every solver shares: the LP relaxation with a
certified dual bound, the Lagrangian bound of any row prices, and the trivial bound.

All three are valid whatever the tolerances of the solver that produced their inputs: a bound
is always recomputed here from a dual point made feasible by construction (weak duality).

References
----------
Nemhauser & Wolsey, *Integer and Combinatorial Optimization*, Wiley 1988 (LP duality,
Lagrangian relaxation).
Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10 (2018)
(the HiGHS LP solver behind :func:`lp_relaxation`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .problem import MatrixProblem, fit_mask

__all__ = ["reduced_costs", "dual_bound", "lagrangian_bound", "LpRelaxation", "lp_relaxation", "owner_best_alone", "trivial_bound"]


def reduced_costs(P: MatrixProblem, y_cap: np.ndarray, y_xor: np.ndarray) -> np.ndarray:
    """``rc = v - A^T y - u_owner`` of every column for row duals ``y >= 0``, ``u >= 0``."""
    return P.values - P.A.T @ y_cap - y_xor[P.owner]


def dual_bound(P: MatrixProblem, y_cap: np.ndarray, y_xor: np.ndarray, rc: np.ndarray | None = None) -> float:
    """Weak-duality bound from any row duals (negative entries are clipped to 0).

    With ``y >= 0`` on the capacity rows and ``u >= 0`` on the XOR rows, ``z = max(0, rc)``
    (:func:`reduced_costs`) makes ``(y, u, z)`` dual feasible, so ``cap.y + sum(u) + sum(z)``
    bounds the LP optimum and therefore the integer one. ``rc``: the reduced costs of these
    (already non-negative) duals, when at hand.
    """
    y_cap = np.maximum(np.asarray(y_cap, dtype=np.float64), 0.0)
    y_xor = np.maximum(np.asarray(y_xor, dtype=np.float64), 0.0)
    if rc is None:
        rc = reduced_costs(P, y_cap, y_xor)
    return float(P.cap @ y_cap + y_xor.sum() + np.maximum(rc, 0.0).sum())


def lagrangian_bound(P: MatrixProblem, y: np.ndarray) -> tuple[float, np.ndarray]:
    """``L(y) = cap.y + sum_i max(0, max_{j of i} (v_j - A_j.y))`` and the reduced values
    ``v - A^T y``, for row prices ``y`` (clipped at 0): the Lagrangian bound with the capacity
    rows dualised, valid for every ``y >= 0``."""
    y = np.maximum(y, 0.0)
    d = P.values - P.A.T @ y
    best = np.zeros(P.n_owners)
    np.maximum.at(best, P.owner, d)
    return float(P.cap @ y + best.sum()), d


def owner_best_alone(P: MatrixProblem) -> np.ndarray:
    """Per owner, the value of its best column that fits alone (0 if none)."""
    fits = fit_mask(P.A, None, P.limit)
    best = np.zeros(P.n_owners)
    np.maximum.at(best, P.owner, np.where(fits, P.values, 0.0))
    return best


def trivial_bound(P: MatrixProblem) -> float:
    """Sum over owners of the best column that fits alone: a valid upper bound."""
    return float(owner_best_alone(P).sum())


@dataclass(frozen=True)
class LpRelaxation:
    """Solution of the LP relaxation: primal ``x`` (or ``None``), certified ``bound``."""

    x: np.ndarray | None
    bound: float
    lp_value: float | None
    status: str
    seconds: float


def lp_relaxation(P: MatrixProblem, *, time_limit: float | None = None) -> LpRelaxation:
    """Solve ``max v.x s.t. A x <= cap, X x <= 1, 0 <= x <= 1`` over every column (HiGHS
    through :func:`scipy.optimize.linprog`); the bound is :func:`dual_bound` of its duals,
    not the LP's floating-point optimum.

    If the LP does not finish (time limit, numerical trouble) the bound falls back to
    :func:`trivial_bound` and ``x`` is ``None``.
    """
    t0 = time.perf_counter()
    A = sp.vstack([P.A_rows, P.X], format="csr")
    b = np.concatenate([P.cap, np.ones(P.n_owners)])
    opts: dict[str, Any] = {"presolve": True}
    if time_limit is not None:
        opts["time_limit"] = float(max(time_limit, 1e-3))
    from scipy.optimize import linprog  # here, not at the top: the CLI starts without it

    res = linprog(-P.values, A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs", options=opts)
    trivial = trivial_bound(P)
    if res.status != 0 or res.x is None:
        return LpRelaxation(None, trivial, None, str(res.message), time.perf_counter() - t0)
    y = -np.asarray(res.ineqlin.marginals)
    n_rows = P.cap.size
    bound = min(dual_bound(P, y[:n_rows], y[n_rows:]), trivial)
    return LpRelaxation(np.asarray(res.x), bound, float(-res.fun), "optimal", time.perf_counter() - t0)
