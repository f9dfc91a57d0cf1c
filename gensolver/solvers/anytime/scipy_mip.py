"""The exact restricted MIP on a core-only install: SciPy's :func:`scipy.optimize.milp`.

SciPy (a core dependency) ships the HiGHS MIP solver [1]_ inside it, so ``auto`` can prove
optimality without the ``solvers`` extra: when OR-Tools is absent, the restricted MIP over the
columns reduced-cost fixing leaves (:func:`gensolver.solvers.anytime.driver.anytime_solve`) is
solved here instead of by CP-SAT or SCIP. No LNS runs on such an install; a problem whose
restricted MIP is too large, or not solved in the time left, keeps its greedy/LP answer and
the LP bound.

References
----------
.. [1] Q. Huangfu and J. A. J. Hall, "Parallelizing the dual revised simplex method",
   Mathematical Programming Computation 10 (2018) 119-142; HiGHS's MIP solver as shipped in
   SciPy (``scipy.optimize.milp``).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..formulation.problem import MatrixProblem, xor_groups
from ..formulation.scales import CAPACITY_TOL, DEFAULT_MIP_GAP, objective_lift, row_lifts
from .restricted_mip import SubResult

__all__ = ["solve_restricted_scipy"]


def solve_restricted_scipy(P: MatrixProblem, cols: np.ndarray, *, time_limit: float | None) -> SubResult:
    """Exact MIP over the columns ``cols`` (others fixed to 0) with :func:`scipy.optimize.milp`.

    Same contract as :func:`~gensolver.solvers.anytime.restricted_mip.solve_restricted`:
    original floating-point data; ``optimal`` only when SciPy reports an optimum within
    ``DEFAULT_MIP_GAP`` *and* the point passes the format's feasibility check; ``bound`` is
    SciPy's proven dual bound (``None`` when it has none).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    t0 = time.perf_counter()
    cols = np.asarray(cols, dtype=np.int64)
    full = np.zeros(P.n)
    if cols.size == 0:
        return SubResult(full, True, 0.0, time.perf_counter() - t0)
    Ac = P.A[:, cols].tocsr()
    can_bind = np.flatnonzero(np.asarray(Ac.sum(axis=1)).ravel() > P.cap + CAPACITY_TOL)
    groups = xor_groups(P.owner[cols])
    gi = np.repeat(np.arange(len(groups)), [len(g) for g in groups]) if groups else np.zeros(0, np.int64)
    gj = np.fromiter((j for g in groups for j in g), dtype=np.int64, count=int(gi.size))
    Xg = sp.csr_matrix((np.ones(gi.size), (gi, gj)), shape=(len(groups), cols.size))
    lift = row_lifts(Ac[can_bind], P.cap[can_bind])  # tiny rows scaled up (absolute tolerances)
    M = sp.vstack([sp.diags(lift) @ Ac[can_bind], Xg], format="csr")
    upper = np.concatenate([np.maximum(P.cap[can_bind], 0.0) * lift, np.ones(len(groups))])
    lift_obj = objective_lift(P.values[cols])
    options: dict[str, float | bool] = {"mip_rel_gap": DEFAULT_MIP_GAP, "disp": False}
    if time_limit is not None:
        options["time_limit"] = max(1e-3, float(time_limit))
    res = milp(-(P.values[cols] * lift_obj), integrality=np.ones(cols.size), bounds=Bounds(0.0, 1.0),
               constraints=[LinearConstraint(M, -np.inf, upper)] if M.shape[0] else [], options=options)
    bound = None
    optimal = False
    if res.x is not None:
        xs = np.asarray(res.x) > 0.5
        full[cols[xs]] = 1.0
        dual = getattr(res, "mip_dual_bound", None)
        if dual is not None and np.isfinite(dual):
            bound = -float(dual) / lift_obj
        # status 0: optimal within the gap; the format's tolerance is checked here
        optimal = res.status == 0 and P.feasible(full)
        if optimal and bound is None:
            bound = float(P.values @ full)
    return SubResult(full, optimal, bound, time.perf_counter() - t0)
