"""SCIP, HiGHS and CBC through OR-Tools' linear solver wrapper (``pywraplp``).

Exact MILP on the XOR-bundle formulation of ``shared/INSTANCE_FORMAT.md``: one binary per
bid, one ``<= capacity`` row per (slot, resource), one ``<= 1`` row per bidder with several
bids. The relative MIP gap is set to ``options["mip_gap"]`` (default ``1e-9``) so that
``optimal`` means optimal, not "within 0.01 %".

References
----------
Achterberg, "SCIP: solving constraint integer programs", Math. Prog. Comp. 1 (2009).
Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp. 10 (2018).
Forrest & Lougee-Heimer, "CBC user guide", INFORMS Tutorials (2005).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...model import Instance
from ..formulation.problem import MatrixProblem, from_instance
from ..result import Allocation, Status, finish
from .common import (DEFAULT_MIP_GAP, has_large_rows, hint_vector, numerically_guarded, objective_lift, pop_options,
                     quiet_native_output, rows_of, xor_groups)

__all__ = ["solve_scip", "solve_highs", "solve_cbc", "build_pywraplp", "STATUS_TABLE"]

_OPTIONS = {"mip_gap", "hint", "verbose"}


def _status_table() -> dict[int, tuple[Status | None, str]]:
    from ortools.linear_solver import pywraplp

    S = pywraplp.Solver
    # raw code -> (status, meaning); None means "no incumbent": the empty allocation is returned.
    return {
        S.OPTIMAL: (Status.OPTIMAL, "OPTIMAL"),
        S.FEASIBLE: (Status.FEASIBLE, "FEASIBLE"),
        S.INFEASIBLE: (Status.INFEASIBLE, "INFEASIBLE"),
        S.UNBOUNDED: (Status.ERROR, "UNBOUNDED"),
        S.ABNORMAL: (Status.ERROR, "ABNORMAL"),
        S.MODEL_INVALID: (Status.ERROR, "MODEL_INVALID"),
        S.NOT_SOLVED: (None, "NOT_SOLVED"),
    }


STATUS_TABLE = _status_table  # callable: the table needs ortools imported


def build_pywraplp(P: MatrixProblem, backend: str, *, normalise: bool = False,
                   margin: float = 0.0) -> tuple[Any, list[Any]]:
    """Build the MILP of ``P`` in a ``pywraplp.Solver`` for ``backend`` ("SCIP", "HIGHS", "CBC").

    ``normalise``/``margin``: see :func:`~gensolver.solvers.exact.common.rows_of`.
    """
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver(backend)
    if solver is None:
        raise RuntimeError(f"OR-Tools was built without the {backend} backend")
    inf = solver.infinity()
    x = [solver.BoolVar(f"x{j}") for j in range(P.n)]
    for cap, cols, coefs in rows_of(P, lift_small=True, normalise=normalise, margin=margin):
        ct = solver.RowConstraint(-inf, cap, "")
        for j, a in zip(cols.tolist(), coefs.tolist()):
            ct.SetCoefficient(x[j], a)
    for cols in xor_groups(P):
        ct = solver.RowConstraint(-inf, 1.0, "")
        for j in cols.tolist():
            ct.SetCoefficient(x[j], 1.0)
    obj = solver.Objective()
    lift = objective_lift(P.values)  # tiny values scaled up; bounds are divided back
    for j, v in enumerate((P.values * lift).tolist()):
        if v:
            obj.SetCoefficient(x[j], v)
    obj.SetMaximization()
    return solver, x


def _solve(instance: Instance, backend: str, name: str, *, time_limit: float | None, threads: int | None,
           seed: int, options: dict[str, Any]) -> Allocation:
    """One solve; rows of byte-sized data go through
    :func:`~gensolver.solvers.exact.common.numerically_guarded` (normalised, answer checked)."""
    def once(**kw: Any) -> tuple[Allocation, np.ndarray | None, bool]:
        return _solve_once(instance, backend, name, threads=threads, seed=seed, options=options, **kw)

    if has_large_rows(from_instance(instance)):
        return numerically_guarded(instance, once, method=name, time_limit=time_limit)
    t0 = time.perf_counter()
    first = once(time_limit=time_limit)
    if first[0].status is not Status.ERROR or first[1] is None:
        return first[0]
    # the answer overfills a row within the backend's tolerance: a tightened re-solve
    left = None if time_limit is None else max(0.1, time_limit - (time.perf_counter() - t0))
    return numerically_guarded(instance, once, method=name, time_limit=left, first=first)


def _solve_once(instance: Instance, backend: str, name: str, *, time_limit: float | None, threads: int | None,
                seed: int, options: dict[str, Any], normalise: bool = False,
                margin: float = 0.0) -> tuple[Allocation, np.ndarray | None, bool]:
    from ortools.linear_solver import pywraplp

    opts = pop_options(dict(options), _OPTIONS, name)
    t0 = time.perf_counter()
    with quiet_native_output(not opts.get("verbose")):
        solver, x = build_pywraplp(from_instance(instance), backend, normalise=normalise, margin=margin)
    hint = hint_vector(instance, opts)
    hint_ignored = False
    if hint is not None:
        if backend == "HIGHS":
            # OR-Tools' pywraplp HiGHS interface segfaults in Solve() after SetHint (seen with
            # ortools 9.15); the warm start is dropped for this backend.
            hint_ignored = True
        else:
            solver.SetHint(x, hint.tolist())
    if time_limit is not None:
        solver.SetTimeLimit(max(1, int(time_limit * 1000)))
    threads_ok = None
    if threads is not None:
        threads_ok = bool(solver.SetNumThreads(int(threads)))
    if opts.get("verbose"):
        solver.EnableOutput()
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, float(opts.get("mip_gap", DEFAULT_MIP_GAP)))
    t1 = time.perf_counter()
    with quiet_native_output(not opts.get("verbose")):
        raw = solver.Solve(params)
    t2 = time.perf_counter()
    status, raw_name = STATUS_TABLE().get(raw, (Status.ERROR, f"UNKNOWN({raw})"))
    if status is Status.ERROR and raw not in STATUS_TABLE() and time_limit is not None:
        # OR-Tools' HiGHS interface answers MPSOLVER_UNKNOWN_STATUS (99) when the time limit
        # stops it, with no solution readable. The empty allocation is still feasible.
        status = None
    details = {"backend": f"ortools-{backend.lower()}", "raw_status": raw_name, "threads_accepted": threads_ok,
               "nodes": solver.nodes(), "seed_note": "backend is deterministic for a fixed model; seed unused"}
    if hint_ignored:
        details["hint_ignored"] = "pywraplp HiGHS crashes with a solution hint; hint not passed"
    if status in (Status.ERROR, Status.INFEASIBLE):
        return finish(instance, None, method=name, proven_optimal=False, bound=None, build=t1 - t0,
                      solve=t2 - t1, details=details, status=status, message=f"{backend} returned {raw_name}"), None, False
    bound: float | None = None
    if status is None:  # no incumbent before the limit: the empty allocation is feasible
        xv = np.zeros(instance.n_bids)
        message = f"{backend} found no solution within the time limit; returning the empty allocation"
    else:
        xv = np.fromiter((v.solution_value() for v in x), dtype=np.float64, count=len(x))
        message = ""
        try:
            bound = float(solver.Objective().BestBound()) / objective_lift(instance.values)
        except Exception:  # pragma: no cover - backend without a bound
            bound = None
        if bound is not None and abs(bound) * objective_lift(instance.values) >= solver.infinity():
            bound = None  # the backend's "infinity" (e.g. SCIP's 1e20 before the root LP) bounds nothing
    return (finish(instance, xv, method=name, proven_optimal=status is Status.OPTIMAL, bound=bound,
                   build=t1 - t0, solve=t2 - t1, details=details, message=message),
            xv if status is not None else None, status is Status.OPTIMAL)


def solve_scip(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
               options: dict[str, Any] | None = None) -> Allocation:
    """Exact MILP with SCIP (OR-Tools ``pywraplp``). Options: ``mip_gap``, ``hint``, ``verbose``."""
    return _solve(instance, "SCIP", "scip", time_limit=time_limit, threads=threads, seed=seed, options=options or {})


def solve_highs(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                options: dict[str, Any] | None = None) -> Allocation:
    """Exact MILP with HiGHS (OR-Tools ``pywraplp``). Options: ``mip_gap``, ``hint``, ``verbose``."""
    return _solve(instance, "HIGHS", "highs", time_limit=time_limit, threads=threads, seed=seed, options=options or {})


def solve_cbc(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
              options: dict[str, Any] | None = None) -> Allocation:
    """Exact MILP with CBC (OR-Tools ``pywraplp``). Options: ``mip_gap``, ``hint``, ``verbose``."""
    return _solve(instance, "CBC", "cbc", time_limit=time_limit, threads=threads, seed=seed, options=options or {})
