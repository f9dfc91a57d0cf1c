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

from ...errors import check_options
from ...model import Instance
from ..formulation.bounds import lp_relaxation
from ..formulation.problem import MatrixProblem, from_instance, xor_groups
from ..result import Allocation, BackendAnswer, Status, finish_answer
from .common import (
    DEFAULT_MIP_GAP,
    guarded_solve,
    has_large_rows,
    hint_vector,
    objective_lift,
    quiet_native_output,
    rows_of,
)

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
    for group in xor_groups(P.owner):
        ct = solver.RowConstraint(-inf, 1.0, "")
        for j in group:
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
    """One solve (rows of byte-sized data normalised) and, if its answer overfills a true row,
    the tightened re-solve of :func:`~gensolver.solvers.exact.common.guarded_solve`; the status
    is decided once, by :func:`~gensolver.solvers.result.finish_answer`."""
    opts = check_options(options, _OPTIONS, f"method {name!r}")
    P = from_instance(instance)
    hint = hint_vector(instance, opts)

    def once(**kw: Any) -> BackendAnswer:
        return _solve_once(P, backend, threads=threads, opts=opts, hint=hint, **kw)

    answer = guarded_solve(instance, P, once, time_limit=time_limit, normalise=has_large_rows(P))
    return finish_answer(instance, answer, method=name)


def _highs_parameters(gap: float) -> str:
    """HiGHS's own gap options, passed as its solver-specific parameter string.

    OR-Tools' HiGHS interface ignores ``RELATIVE_MIP_GAP`` (``SetRelativeMipGap`` is a no-op),
    so HiGHS kept its default ``mip_rel_gap = 1e-4`` and called answers up to ``1e-4`` below
    the optimum optimal (a 7-bid round lost a 2.5 bid beside a 1e6 one). The string is read
    by HiGHS even though the wrapper's setter reports ``False``.
    """
    return f"mip_rel_gap={gap!r},mip_abs_gap={DEFAULT_MIP_GAP!r}"


def _solve_once(P: MatrixProblem, backend: str, *, time_limit: float | None, threads: int | None,
                opts: dict[str, Any], hint: np.ndarray | None, normalise: bool = False,
                margin: float = 0.0) -> BackendAnswer:
    """Build and solve once; the backend's answer, bound and claim, without any status decided."""
    from ortools.linear_solver import pywraplp

    t0 = time.perf_counter()
    with quiet_native_output(not opts.get("verbose")):
        solver, x = build_pywraplp(P, backend, normalise=normalise, margin=margin)
    details: dict[str, Any] = {"backend": f"ortools-{backend.lower()}"}
    if hint is not None:
        if backend == "HIGHS":
            # OR-Tools' pywraplp HiGHS interface segfaults in Solve() after SetHint (seen with
            # ortools 9.15); the warm start is dropped for this backend.
            details["hint_ignored"] = "pywraplp HiGHS crashes with a solution hint; hint not passed"
        else:
            solver.SetHint(x, hint.tolist())
    if time_limit is not None:
        solver.SetTimeLimit(max(1, int(time_limit * 1000)))
    threads_ok = None
    if threads is not None:
        threads_ok = bool(solver.SetNumThreads(int(threads)))
    if opts.get("verbose"):
        solver.EnableOutput()
    gap = float(opts.get("mip_gap", DEFAULT_MIP_GAP))
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, gap)
    if backend == "HIGHS":
        solver.SetSolverSpecificParametersAsString(_highs_parameters(gap))
    t1 = time.perf_counter()
    with quiet_native_output(not opts.get("verbose")):
        raw = solver.Solve(params)
    t2 = time.perf_counter()
    table = STATUS_TABLE()
    status, raw_name = table.get(raw, (Status.ERROR, f"UNKNOWN({raw})"))
    if status is Status.ERROR and raw not in table and time_limit is not None:
        # OR-Tools' HiGHS interface answers MPSOLVER_UNKNOWN_STATUS (99) when the time limit
        # stops it, with no solution readable. The empty allocation is still feasible.
        status = None
    if status is Status.INFEASIBLE and time_limit is not None:
        # CBC answers INFEASIBLE when its time limit stops it before any solution (seen at a
        # 10 ms limit on a loaded core); winner determination is never infeasible (x = 0 fits).
        status = None
    details.update({"raw_status": raw_name, "threads_accepted": threads_ok, "nodes": solver.nodes(),
                    "seed_note": "backend is deterministic for a fixed model; seed unused"})
    if status in (Status.ERROR, Status.INFEASIBLE):
        return BackendAnswer(None, backend_status=raw_name, failure=status, details=details,
                             message=f"{backend} returned {raw_name}", build=t1 - t0, solve=t2 - t1)
    if status is None:  # no incumbent before the limit: the empty allocation is feasible
        return BackendAnswer(None, backend_status=raw_name, details=details,
                             message=f"{backend} found no solution within the time limit; "
                                     "returning the empty allocation", build=t1 - t0, solve=t2 - t1)
    xv = np.fromiter((v.solution_value() for v in x), dtype=np.float64, count=len(x))
    optimal = status is Status.OPTIMAL
    bound: float | None = None
    if backend == "HIGHS":
        # OR-Tools reports HiGHS's objective value as its "best bound": no proof at all. The
        # optimality claim stands on HiGHS's own gap (set above); without it the bound is an
        # independent one (the LP relaxation's certified dual bound)
        optimal = optimal and gap <= DEFAULT_MIP_GAP
        if not optimal:
            left = None if time_limit is None else max(0.05, 0.1 * time_limit)
            bound = lp_relaxation(P, time_limit=left).bound
            details["bound_kind"] = "LP relaxation (HiGHS's bound is not available through OR-Tools)"
    else:
        lift = objective_lift(P.values)
        try:
            bound = float(solver.Objective().BestBound()) / lift
        except Exception:  # pragma: no cover - backend without a bound
            bound = None
        if bound is not None and abs(bound) * lift >= solver.infinity():
            bound = None  # the backend's "infinity" (e.g. SCIP's 1e20 before the root LP) bounds nothing
    return BackendAnswer(xv, bound=bound, proven=optimal, backend_status=raw_name, details=details, build=t1 - t0, solve=t2 - t1)


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
