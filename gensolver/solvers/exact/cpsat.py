"""OR-Tools CP-SAT on the XOR-bundle formulation.

CP-SAT needs integer coefficients. Each capacity row is scaled by the smallest power of ten
(up to ``10**9``) that makes all its coefficients and its capacity integral; the objective
likewise (up to ``10**6``; values that do not scale exactly are rounded with the largest near
``10**7``). When no such power exists the row is rounded *conservatively*
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

from ...model import Instance
from ..result import CAPACITY_TOL, Allocation, Status, feasibility_violation, finish
from .common import hint_vector, pop_options, row_lift, rows_of, within_mip_gap, xor_groups

__all__ = ["solve_cpsat", "build_cpsat", "integer_scale", "certified_value_scale", "objective_scale", "STATUS_TABLE"]

_OPTIONS = {"hint", "mip_gap", "verbose", "workers"}
_INT_LIMIT = 2**52
_NOISE = 1e-15  # relative residual treated as floating-point noise by integer_scale (~4 ulps)
_EXACT_MAX = 2.0**40  # no value is called integral above this magnitude


def integer_scale(values: np.ndarray, max_power: int, limit: float = _INT_LIMIT) -> tuple[float, bool]:
    """Smallest ``10**k`` (k <= ``max_power``) making ``values`` integral, and whether it is exact.

    When none is exact, returns the largest power of ten keeping ``sum(|values|) * scale``
    below ``limit`` (at most ``10**max_power``) and ``False``.
    """
    vals = np.abs(np.asarray(values, dtype=np.float64))
    total = float(vals.sum()) or 1.0
    for k in range(max_power + 1):
        scale = 10.0**k
        if total * scale > limit:
            break
        scaled = vals * scale
        if vals.size and float(scaled.max()) > _EXACT_MAX:
            break  # ulps too coarse to tell a decimal from a rounded value (see below)
        # integral up to floating-point noise (a few ulps: 0.3 * 10 = 3.0000000000000004).
        # A looser relative test (1e-9) called every value above 0.5 "integral" at 10**9 and
        # rounded 6.666666666666666 up, so two such demands no longer fitted a capacity of
        # twice that, and CP-SAT "proved" a wrong optimum. Below 2**40 the noise allowed
        # moves a value by at most 1e-3 of a unit, so a row's rounded sum cannot cross its
        # rounded capacity unless the true sum is within the format's tolerance of it.
        if np.all(np.abs(scaled - np.round(scaled)) <= _NOISE * np.maximum(1.0, scaled)):
            return scale, True
    k = max_power
    while k > 0 and total * 10.0**k > limit:
        k -= 1
    return 10.0**k, False


def certified_value_scale(values: np.ndarray, owners: np.ndarray) -> float:
    """Scale for rounding floating-point values to CP-SAT's integers.

    As fine as possible while any allocation's value (at most every owner's best bid) stays
    below ``2**53``, where doubles still count every integer, and the sum of all coefficients
    below ``2**61`` (CP-SAT's overflow checks). A whole allocation's rounding error (half a
    unit per winner) is then of the order of ``1e-15`` of its value, far inside the ``1e-9``
    relative gap to which the MIP backends prove optimality, so a CP-SAT optimum on the
    rounded values, with its bound widened by that error, is an optimality proof in the same
    sense. (Measured on GPU rounds and CATS: no slower than a scale of ``1e7 / max value``.)
    """
    a = np.abs(np.asarray(values, dtype=np.float64))
    owners = np.asarray(owners, dtype=np.int64)
    best = np.zeros(int(owners.max()) + 1 if owners.size else 1)
    np.maximum.at(best, owners, a)
    top, total = float(best.sum()), float(a.sum())
    if top <= 0.0:
        return 1.0
    return min(2.0**53 / top, 2.0**61 / total)


def objective_scale(values: np.ndarray, owners: np.ndarray) -> tuple[float, bool, float]:
    """CP-SAT's objective scale for ``values``, whether it is exact, and the largest rounding
    error of one winner's value (in the values' units).

    Values that a power of ten up to ``1e6`` makes integral, up to floating-point noise
    (CATS prices with four decimals), keep that scale: exact, error 0 or the noise. Any other
    values are rounded at :func:`certified_value_scale`, with an error of half a unit. A
    bound on the rounded objective, divided by the scale, plus this error times the number of
    possible winners bounds the true objective.
    """
    vals = np.asarray(values, dtype=np.float64)
    scale, exact = integer_scale(vals, 6, limit=2.0**53)
    if exact:
        resid = float(np.abs(vals * scale - np.round(vals * scale)).max()) if vals.size else 0.0
        if resid <= 1e-6:  # floating-point noise of decimal prices, not a coarse rounding
            return scale, True, resid / scale
    scale = certified_value_scale(vals, owners)
    return scale, False, 0.5 / scale


def build_cpsat(instance: Instance, *, relax: bool = False) -> tuple[Any, list[Any], dict[str, Any]]:
    """Build the CP-SAT model; returns ``(model, variables, scaling_info)``.

    Rows that no power of ten up to ``10**9`` makes integral are first lifted by a power of two
    (:func:`~gensolver.solvers.exact.common.row_lift`, so tiny capacities keep their digits)
    and rounded *conservatively* (demands up, capacity down: every answer is feasible), or with
    ``relax=True`` the other way (demands down, capacity plus the format's tolerance up: every
    feasible allocation stays feasible, so the optimum bounds the original problem's).
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{j}") for j in range(instance.n_bids)]
    exact_rows = True
    for cap, cols, coefs in rows_of(instance):
        scale, exact = integer_scale(np.append(coefs, cap), 9)
        if exact:
            icoef = np.round(coefs * scale).astype(np.int64)
            icap = int(round(cap * scale))
        else:
            exact_rows = False
            lift = row_lift(coefs, cap)
            scale = integer_scale(np.append(coefs, cap) * lift, 9)[0] * lift
            if relax:
                icoef = np.maximum(np.floor(coefs * scale - 1e-6), 0).astype(np.int64)
                icap = int(np.ceil((cap + CAPACITY_TOL) * scale + 1e-6))
            else:
                icoef = np.ceil(coefs * scale - 1e-9).astype(np.int64)
                icap = int(np.floor(cap * scale + 1e-9))
        if int(icoef.sum()) <= icap:
            continue  # row can never bind
        model.Add(cp_model.LinearExpr.WeightedSum([x[j] for j in cols.tolist()], icoef.tolist()) <= icap)
    for cols in xor_groups(instance):
        model.AddAtMostOne([x[j] for j in cols.tolist()])
    values = instance.values
    # floating-point values are rounded finely enough that the widened bound below still
    # proves optimality within the 1e-9 gap (``finish`` reports OPTIMAL then)
    vscale, vexact, err = objective_scale(values, instance.bidder_of_bid)
    ivals = np.round(values * vscale).astype(np.int64)
    model.Maximize(cp_model.LinearExpr.WeightedSum(x, ivals.tolist()))
    # Largest total rounding error of any solution's objective (at most one winner per bidder).
    slack = min(instance.n_bids, instance.n_bidders) * err
    return model, x, {"value_scale": vscale, "values_exact": vexact, "rows_exact": exact_rows, "bound_slack": slack}


def _status_table() -> dict[int, tuple[Status | None, str]]:
    from ortools.sat.python import cp_model

    return {
        cp_model.OPTIMAL: (Status.OPTIMAL, "OPTIMAL"),
        cp_model.FEASIBLE: (Status.FEASIBLE, "FEASIBLE"),
        cp_model.INFEASIBLE: (Status.INFEASIBLE, "INFEASIBLE"),
        cp_model.MODEL_INVALID: (Status.ERROR, "MODEL_INVALID"),
        cp_model.UNKNOWN: (None, "UNKNOWN"),
    }


STATUS_TABLE = _status_table


def _relaxed_proof(instance: Instance, xv: np.ndarray, params: Any,
                   time_limit: float | None) -> tuple[np.ndarray, float | None, str]:
    """Solve the model with capacities rounded the other way (:func:`build_cpsat` with
    ``relax=True``), hinted with ``xv``: its bound (widened by the values' rounding slack)
    bounds the original problem. Returns the better feasible answer, that bound (``None``
    when the relaxation found nothing) and the relaxation's status name."""
    from ortools.sat.python import cp_model

    model, x, scaling = build_cpsat(instance, relax=True)
    for var, val in zip(x, (xv > 0.5).tolist()):
        model.AddHint(var, int(val))
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
    if feasibility_violation(instance, rx) is None and float(instance.values @ rx) > float(instance.values @ xv):
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

    opts = pop_options(options or {}, _OPTIONS, "cpsat")
    t0 = time.perf_counter()
    model, x, scaling = build_cpsat(instance)
    hint = hint_vector(instance, opts)
    if hint is not None:
        for var, val in zip(x, hint.tolist()):
            model.AddHint(var, int(val))
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
        return finish(instance, None, method="cpsat", proven_optimal=False, bound=None, build=t1 - t0,
                      solve=t2 - t1, details=details, status=status, message=f"CP-SAT returned {raw_name}")
    exact = scaling["rows_exact"] and scaling["values_exact"]
    bound = None
    if status is None:
        xv = np.zeros(instance.n_bids)
        message = "CP-SAT found no solution within the time limit; returning the empty allocation"
    else:
        xv = np.fromiter((solver.BooleanValue(v) for v in x), dtype=np.float64, count=len(x))
        message = ""
    proven = status is Status.OPTIMAL and exact
    if scaling["rows_exact"] and status is not None:
        # Without a solution (UNKNOWN) CP-SAT's response carries no bound: its
        # best_objective_bound is the proto default 0, which would "prove" the empty
        # allocation optimal. Only a response with a solution has a meaningful bound.
        bound = solver.BestObjectiveBound() / scaling["value_scale"] + scaling["bound_slack"]
    elif status is Status.OPTIMAL:
        # capacities rounded conservatively: the same problem rounded the other way is a
        # relaxation, whose bound is a bound of the original problem; equal optima prove it
        left = None if time_limit is None else float(time_limit) - (time.perf_counter() - t1)
        if left is None or left > 0.01:
            xv, bound, relaxed = _relaxed_proof(instance, xv, p, left)
            details["relaxed_rows"] = relaxed
    if status is Status.OPTIMAL and not scaling["rows_exact"]:
        proven = bound is not None and within_mip_gap(bound, float(instance.values @ xv))
        if not proven:
            message = (message + "; " if message else "") + (
                "capacities could not be scaled to integers exactly; rows were rounded conservatively, "
                "and the same rows rounded the other way (a relaxation) did not prove optimality")
    elif not scaling["rows_exact"]:
        message = (message + "; " if message else "") + (
            "capacities could not be scaled to integers exactly; rows were rounded conservatively, "
            "so optimality is not proven for the original problem")
    if status is Status.OPTIMAL and scaling["rows_exact"] and not exact and bound is not None:
        # rounded values: a proof when the widened bound is within the backends' gap (with
        # the same absolute floor as the engine, so an empty answer is not left "feasible")
        proven = within_mip_gap(bound, float(instance.values @ xv))
    t2 = time.perf_counter()
    return finish(instance, xv, method="cpsat", proven_optimal=proven, bound=bound,
                  build=t1 - t0, solve=t2 - t1, details=details, message=message)
