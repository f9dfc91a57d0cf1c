"""CBC (bundled binary) and HiGHS (highspy) through PuLP.

PuLP's ``LpProblem.status`` says "Optimal" when a time limit stops CBC with an incumbent; the
*solution* status (``sol_status``) distinguishes ``LpSolutionOptimal`` from
``LpSolutionIntegerFeasible``. Only the solution status is mapped, through one table.

The proven bound comes from the backend: HiGHS's ``mip_dual_bound``; for CBC, its log's
``Lower bound`` / ``best possible`` line (CBC minimises the negated objective).

References
----------
Mitchell, O'Sullivan & Dunning, "PuLP: a linear programming toolkit for Python" (2011).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from typing import Any

import numpy as np

from ...errors import check_options
from ...model import Instance
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
from .pulp_import import import_pulp

__all__ = ["solve_pulp_cbc", "solve_pulp_highs", "build_pulp", "SOLUTION_STATUS_TABLE"]

_OPTIONS = {"mip_gap", "hint", "verbose"}


def _table() -> dict[int, tuple[Status | None, str]]:
    pulp = import_pulp()

    return {
        pulp.LpSolutionOptimal: (Status.OPTIMAL, "LpSolutionOptimal"),
        pulp.LpSolutionIntegerFeasible: (Status.FEASIBLE, "LpSolutionIntegerFeasible"),
        pulp.LpSolutionNoSolutionFound: (None, "LpSolutionNoSolutionFound"),
        pulp.LpSolutionInfeasible: (Status.INFEASIBLE, "LpSolutionInfeasible"),
        pulp.LpSolutionUnbounded: (Status.ERROR, "LpSolutionUnbounded"),
    }


SOLUTION_STATUS_TABLE = _table


def build_pulp(P: MatrixProblem, *, margin: float = 0.0, normalise: bool = False) -> tuple[Any, list[Any]]:
    """Build the MILP of ``P`` as a ``pulp.LpProblem``; returns ``(problem, variables)``.

    ``margin``: each capacity is moved by ``margin * (|capacity| + sum |demands|)`` of its row
    (positive: a relaxation, negative: a restriction; see :func:`solve_pulp_cbc`).
    ``normalise``: every row is scaled by a power of two so that its largest entry lies in
    ``[1, 2)`` (by default only rows below 1 are, see :func:`~.common.row_lift`).
    """
    pulp = import_pulp()

    prob = pulp.LpProblem("wdp", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{j}", cat=pulp.LpBinary) for j in range(P.n)]
    lift = objective_lift(P.values)  # tiny values scaled up; bounds are divided back
    prob.setObjective(pulp.LpAffineExpression([(x[j], v) for j, v in enumerate((P.values * lift).tolist())
                                               if v]))
    k = 0
    for cap, cols, coefs in rows_of(P, lift_small=True, normalise=normalise, margin=margin):
        expr = pulp.LpAffineExpression([(x[j], a) for j, a in zip(cols.tolist(), coefs.tolist())])
        prob.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"c{k}", cap))
        k += 1
    for i, group in enumerate(xor_groups(P.owner)):
        expr = pulp.LpAffineExpression([(x[j], 1.0) for j in group])
        prob.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"xor{i}", 1.0))
    return prob, x


_CBC_BOUND = re.compile(r"(?:Lower bound|best possible)[:\s]+(-?[0-9.eE+]+)", re.IGNORECASE)
_CBC_OBJ = re.compile(r"Objective value[:\s]+(-?[0-9.eE+]+)", re.IGNORECASE)


def _cbc_bound_from_log(path: str, welfare: float) -> float | None:
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    bounds = _CBC_BOUND.findall(text)
    if not bounds:
        return None
    raw = float(bounds[-1])
    objs = _CBC_OBJ.findall(text)
    negated = True
    if objs:
        obj = float(objs[-1])
        negated = abs(obj + welfare) <= abs(obj - welfare)
    return -raw if negated else raw


def _highs_minimises(model: Any) -> bool:
    """Whether the ``highspy.Highs`` model PuLP built minimises (PuLP negated the objective)."""
    import highspy

    sense = model.getObjectiveSense()
    if isinstance(sense, tuple):  # highspy returns (HighsStatus, ObjSense)
        sense = sense[-1]
    return sense == highspy.ObjSense.kMinimize


def _solve(P: MatrixProblem, which: str, *, time_limit: float | None, threads: int | None, seed: int,
           opts: dict[str, Any], hint: np.ndarray | None, margin: float = 0.0,
           normalise: bool = False) -> BackendAnswer:
    """One PuLP solve: the backend's answer, its bound and whether it proved it optimal (for
    :func:`~gensolver.solvers.exact.common.guarded_solve`); no status is decided here."""
    pulp = import_pulp()

    name = f"pulp-{which}"
    t0 = time.perf_counter()
    prob, x = build_pulp(P, margin=margin, normalise=normalise)
    if hint is not None:
        for var, val in zip(x, hint.tolist()):
            var.setInitialValue(val)
    gap = float(opts.get("mip_gap", DEFAULT_MIP_GAP))
    msg = bool(opts.get("verbose", False))
    log_path = None
    if which == "cbc":
        fd, log_path = tempfile.mkstemp(prefix="gensolver-cbc-", suffix=".log")
        os.close(fd)
        solver = pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit, gapRel=gap, threads=threads,
                                   warmStart=hint is not None, logPath=log_path,
                                   options=[f"randomSeed {int(seed) + 1}"])
    else:
        if threads is not None:
            # HiGHS keeps one global thread pool per process, sized by the first solve; a later
            # solve asking another size is refused ("Not Solved"). Reset it so ``threads`` holds.
            import highspy

            reset = getattr(highspy.Highs, "resetGlobalScheduler", None)
            if reset is not None:
                reset(True)
        solver = pulp.HiGHS(msg=msg, timeLimit=time_limit, gapRel=gap, threads=threads,
                            warmStart=hint is not None, random_seed=int(seed))
    t1 = time.perf_counter()
    try:
        with quiet_native_output(not msg):
            prob.solve(solver)
    except pulp.PulpSolverError as exc:
        return BackendAnswer(None, backend_status="PulpSolverError", failure=Status.ERROR, details={"backend": name},
                             message=f"PuLP solver error: {exc}", build=t1 - t0, solve=time.perf_counter() - t1)
    t2 = time.perf_counter()
    status, raw_name = SOLUTION_STATUS_TABLE().get(prob.sol_status, (Status.ERROR, f"UNKNOWN({prob.sol_status})"))
    if status is Status.INFEASIBLE and time_limit is not None:
        # CBC stopped by its time limit before any solution may report "Infeasible" (OR-Tools'
        # CBC did at a 10 ms limit on a loaded core); winner determination is never infeasible
        # (x = 0 fits), so under a limit this means "no incumbent".
        status = None
    details = {"backend": name, "raw_status": pulp.LpStatus.get(prob.status, prob.status), "raw_solution_status": raw_name}
    try:
        if status in (Status.ERROR, Status.INFEASIBLE):
            return BackendAnswer(None, backend_status=raw_name, failure=status, details=details,
                                 message=f"PuLP returned {raw_name}", build=t1 - t0, solve=t2 - t1)
        if status is None:
            return BackendAnswer(None, backend_status=raw_name, details=details,
                                 message="no solution within the time limit; empty allocation", build=t1 - t0, solve=t2 - t1)
        xv = np.fromiter(((v.varValue or 0.0) for v in x), dtype=np.float64, count=len(x))
        welfare = float(P.values[xv > 0.5].sum())
        lift = objective_lift(P.values)
        bound = None
        if which == "highs":
            # Without an incumbent HiGHS's info holds no valid dual bound (it reads 0).
            model = getattr(prob, "solverModel", None)
            if model is not None:
                info = model.getInfo()
                raw_bound = float(getattr(info, "mip_dual_bound", float("nan")))
                if np.isfinite(raw_bound):
                    # PuLP hands HiGHS the negated objective of a maximisation problem (HiGHS
                    # then minimises), so the dual bound comes back negated as well.
                    bound = (-raw_bound if _highs_minimises(model) else raw_bound) / lift
        elif log_path is not None and status is not Status.OPTIMAL:
            bound = _cbc_bound_from_log(log_path, welfare * lift)
            bound = None if bound is None else bound / lift
        return BackendAnswer(xv, bound=bound, proven=status is Status.OPTIMAL, backend_status=raw_name,
                             details=details, build=t1 - t0, solve=t2 - t1)
    finally:
        if log_path is not None:
            try:
                os.unlink(log_path)
            except OSError:
                pass


#: relative loosening of each capacity when PuLP's file would round the data (13 significant
#: digits, about 5e-13 relative per number): twenty times the largest rounding of a row
_FILE_MARGIN = 1e-11


def _file_rounds(instance: Instance) -> bool:
    """Whether PuLP's MPS file (``% .12e``: 13 significant digits) would change any demand,
    capacity or value (``1/3`` of anything, or a float computed from bytes)."""
    data = np.concatenate([instance.capacity_matrix.data, instance.capacity, instance.values])
    if not data.size:
        return False
    return bool(np.any(np.array([float(f"{v:.12e}") for v in data.tolist()]) != data))


def solve_pulp_cbc(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                   options: dict[str, Any] | None = None) -> Allocation:
    """Exact MILP with CBC through PuLP. Options: ``mip_gap``, ``hint``, ``verbose``.

    Three numerical traps lead to :func:`~gensolver.solvers.exact.common.guarded_solve` with
    normalised rows (rows scaled to size 1, the answer checked against the true rows, a
    tightened re-solve if it overfills one): PuLP hands CBC an MPS file with 13 significant
    digits, so a row that an allocation fills exactly can look overfull (the capacities are
    then also loosened by ``1e-11`` of their row, keeping the first solve a relaxation); rows of
    size ``1e9`` (bytes) fall outside CBC's absolute tolerances; and CBC may then call a winner
    determination problem "infeasible", which it never is (nobody winning is feasible).
    """
    opts = check_options(options, _OPTIONS, "method 'pulp-cbc'")
    P = from_instance(instance)
    hint = hint_vector(instance, opts)

    def once(**kw: Any) -> BackendAnswer:
        return _solve(P, "cbc", threads=threads, seed=seed, opts=opts, hint=hint, **kw)

    rounds = _file_rounds(instance)
    first = None
    if not rounds and not has_large_rows(P):
        t0 = time.perf_counter()
        first = once(time_limit=time_limit)
        if first.details.get("raw_status") == "Infeasible":
            first = None  # CBC lost its footing: solve again from normalised rows
            time_limit = None if time_limit is None else max(0.1, time_limit - (time.perf_counter() - t0))
    answer = guarded_solve(instance, P, once, time_limit=time_limit, normalise=first is None,
                           first_margin=_FILE_MARGIN if rounds else 0.0, first=first)
    return finish_answer(instance, answer, method="pulp-cbc")


def solve_pulp_highs(instance: Instance, *, time_limit: float | None = None, threads: int | None = None, seed: int = 0,
                     options: dict[str, Any] | None = None) -> Allocation:
    """Exact MILP with HiGHS through PuLP (highspy). Options: ``mip_gap``, ``hint``, ``verbose``."""
    opts = check_options(options, _OPTIONS, "method 'pulp-highs'")
    P = from_instance(instance)
    hint = hint_vector(instance, opts)

    def once(**kw: Any) -> BackendAnswer:
        return _solve(P, "highs", threads=threads, seed=seed, opts=opts, hint=hint, **kw)

    answer = guarded_solve(instance, P, once, time_limit=time_limit, normalise=has_large_rows(P))
    return finish_answer(instance, answer, method="pulp-highs")
