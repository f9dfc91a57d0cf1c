"""OR-Tools CP-SAT on the XOR-bundle formulation.

CP-SAT needs integer coefficients (the scales are
:mod:`gensolver.solvers.formulation.scales`'). Each capacity row is scaled by the smallest
power of ten (up to ``10**9``) that makes all its coefficients and its capacity integral; the
objective likewise (up to ``10**6``; values that do not scale exactly are rounded at the finest
scale that keeps every allocation's value below ``2**53``). When no such power exists the row is rounded *conservatively*
(demands up, capacity down, after lifting tiny rows by a power of two), so every answer
stays feasible. Optimality for the original problem is then proven by a second solve with the
rows rounded the other way (a relaxation, hinted with the first answer): its bound bounds the
original optimum, and when it meets the first answer the result is ``optimal``; otherwise it is
``feasible`` with that bound (``None`` when a time limit left no room for it). Values
that cannot be scaled exactly are rounded to the nearest integer after scaling, and the
reported bound is widened by the largest possible total rounding error, so it stays valid.

References
----------
Perron & Didier, "CP-SAT", OR-Tools (Google), https://developers.google.com/optimization.
Stuckey, "Lazy clause generation: combining the power of SAT and CP (and MIP?) solving",
CPAIOR 2010.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from ...errors import check_options
from ...model import Instance
from ..formulation.problem import MatrixProblem, from_instance, xor_groups
from ..formulation.scales import integer_row, objective_scale, within_mip_gap
from ..result import Allocation, BackendAnswer, Status, finish_answer
from .common import hint_vector, rows_of

__all__ = ["solve_cpsat", "build_cpsat", "STATUS_TABLE"]

_OPTIONS = {"hint", "mip_gap", "verbose", "workers"}
def build_cpsat(P: MatrixProblem, *, relax: bool = False) -> tuple[Any, list[Any], dict[str, Any]]:
    """Build the CP-SAT model of ``P``; returns ``(model, variables, scaling_info)``.

    Each row becomes integers by :func:`~gensolver.solvers.formulation.scales.integer_row`:
    exactly where a power of ten up to ``10**9`` makes it integral, else rounded
    *conservatively* (every answer is feasible), or with ``relax=True`` the other way (every
    feasible allocation stays feasible, so the optimum bounds the original problem's).
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{j}") for j in range(P.n)]
    exact_rows = True
    for cap, cols, coefs in rows_of(P):
        icoef, icap, exact = integer_row(coefs, cap, relax=relax)
        exact_rows = exact_rows and exact
        if int(icoef.sum()) <= icap:
            continue  # row can never bind
        model.add(cp_model.LinearExpr.WeightedSum([x[j] for j in cols], icoef.tolist()) <= icap)
    for group in xor_groups(P.owner):
        model.add_at_most_one([x[j] for j in group])
    # floating-point values are rounded finely enough that the widened bound below still
    # proves optimality within the 1e-9 gap (``finish`` reports OPTIMAL then)
    vscale, vexact, err = objective_scale(P.values, P.owner)
    ivals = np.round(P.values * vscale).astype(np.int64)
    model.maximize(cp_model.LinearExpr.WeightedSum(x, ivals.tolist()))
    # Largest total rounding error of any solution's objective (at most one winner per bidder).
    slack = min(P.n, P.n_owners) * err
    return model, x, {"value_scale": vscale, "values_exact": vexact, "rows_exact": exact_rows, "bound_slack": slack}


def _status_table() -> dict[Any, tuple[Status | None, str]]:
    from ortools.sat.python import cp_model

    return {
        cp_model.OPTIMAL: (Status.OPTIMAL, "OPTIMAL"),
        cp_model.FEASIBLE: (Status.FEASIBLE, "FEASIBLE"),
        cp_model.INFEASIBLE: (Status.INFEASIBLE, "INFEASIBLE"),
        cp_model.MODEL_INVALID: (Status.ERROR, "MODEL_INVALID"),
        cp_model.UNKNOWN: (None, "UNKNOWN"),
    }


STATUS_TABLE = _status_table


def _relaxed_proof(P: MatrixProblem, xv: np.ndarray, params: Any,
                   time_limit: float | None) -> tuple[np.ndarray, float | None, str]:
    """Solve the model with capacities rounded the other way (:func:`build_cpsat` with
    ``relax=True``), hinted with ``xv``: its bound (widened by the values' rounding slack)
    bounds the original problem. Returns the better feasible answer, that bound (``None``
    when the relaxation found nothing) and the relaxation's status name."""
    from ortools.sat.python import cp_model

    model, x, scaling = build_cpsat(P, relax=True)
    for var, val in zip(x, (xv > 0.5).tolist()):
        model.add_hint(var, int(val))
    solver = cp_model.CpSolver()
    for name in ("num_workers", "random_seed", "relative_gap_limit", "log_search_progress"):
        setattr(solver.parameters, name, getattr(params, name))
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    raw = solver.Solve(model)
    if raw not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return xv, None, solver.StatusName(raw)
    bound = solver.BestObjectiveBound() / scaling["value_scale"] + scaling["bound_slack"]
    rx = np.fromiter((solver.BooleanValue(v) for v in x), dtype=np.float64, count=len(x))
    if P.feasible(rx) and float(P.values @ rx) > float(P.values @ xv):
        xv = rx  # the relaxation's answer happens to fit the original capacities
    return xv, bound, solver.StatusName(raw)


def solve_cpsat(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                options: dict[str, Any] | None = None) -> Allocation:
    """Exact winner determination with CP-SAT.

    Options: ``hint`` (bid ids or 0/1 vector used as a solution hint), ``mip_gap`` (relative
    gap limit, default 0), ``verbose``. ``threads`` sets ``num_workers`` (default: the number
    of CPUs); with ``threads`` and ``seed`` fixed and no time limit, results are reproducible.
    """
    from ortools.sat.python import cp_model

    opts = check_options(options, _OPTIONS, "method 'cpsat'")
    t0 = time.perf_counter()
    P = from_instance(instance)
    model, x, scaling = build_cpsat(P)
    hint = hint_vector(instance, opts)
    if hint is not None:
        for var, val in zip(x, hint.tolist()):
            model.add_hint(var, int(val))
    solver = cp_model.CpSolver()
    p = solver.parameters
    if time_limit is not None:
        p.max_time_in_seconds = float(time_limit)
    p.num_workers = int(threads) if threads else max(1, min(8, os.cpu_count() or 1))
    p.random_seed = int(seed)
    p.relative_gap_limit = float(opts.get("mip_gap", 0.0))
    p.log_search_progress = bool(opts.get("verbose", False))
    t1 = time.perf_counter()
    raw = solver.Solve(model)
    t2 = time.perf_counter()
    status, raw_name = STATUS_TABLE().get(raw, (Status.ERROR, f"UNKNOWN({raw})"))
    details = {"backend": "ortools-cpsat", "raw_status": raw_name, "workers": p.num_workers,
               "branches": solver.NumBranches(), "conflicts": solver.NumConflicts(), **scaling}
    if status in (Status.ERROR, Status.INFEASIBLE):
        return finish_answer(instance, BackendAnswer(None, backend_status=raw_name, failure=status, details=details,
                                                     message=f"CP-SAT returned {raw_name}", build=t1 - t0,
                                                     solve=t2 - t1), method="cpsat")
    notes = []
    xv, bound = None, None
    if status is None:
        notes.append("CP-SAT found no solution within the time limit; returning the empty allocation")
    elif scaling["rows_exact"]:
        xv = np.fromiter((solver.BooleanValue(v) for v in x), dtype=np.float64, count=len(x))
        # CP-SAT's bound on the scaled values, widened by their largest total rounding error.
        # (Without a solution, UNKNOWN, the response's bound is the proto default 0, which would
        # "prove" the empty allocation optimal: only a response with a solution has one.)
        bound = solver.BestObjectiveBound() / scaling["value_scale"] + scaling["bound_slack"]
    else:
        xv = np.fromiter((solver.BooleanValue(v) for v in x), dtype=np.float64, count=len(x))
        left = None if time_limit is None else float(time_limit) - (time.perf_counter() - t1)
        if status is Status.OPTIMAL and (left is None or left > 0.01):
            # step 2: the same rows rounded the other way are a relaxation, whose bound is a
            # bound of the original problem; equal optima prove the answer
            xv, bound, details["relaxed_rows"] = _relaxed_proof(P, xv, p, left)
    # the one decision: CP-SAT's optimum of the model it solved is a proof for the original
    # problem when its bound there (exact, or widened by the rounding) meets the answer within
    # the backends' gap, with the engine's absolute floor (so an empty answer is not left
    # "feasible" by a rounding error of 1e-11)
    proven = (status is Status.OPTIMAL and xv is not None and bound is not None
              and within_mip_gap(bound, float(P.values @ xv)))
    if status is not None and not scaling["rows_exact"] and not proven:
        notes.append("capacities could not be scaled to integers exactly; rows were rounded conservatively, " + (
            "so optimality is not proven for the original problem" if status is not Status.OPTIMAL else
            "and the same rows rounded the other way (a relaxation) did not prove optimality"))
    t2 = time.perf_counter()
    return finish_answer(instance, BackendAnswer(xv, bound=bound, proven=proven, backend_status=raw_name,
                                                 details=details, message="; ".join(notes), build=t1 - t0,
                                                 solve=t2 - t1), method="cpsat")
