"""Helpers shared by the exact backends: option parsing, warm starts, constraint rows from the
one problem form (:class:`~gensolver.solvers.formulation.problem.MatrixProblem`), native output."""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from ...model import Instance
from ..formulation.problem import MatrixProblem
from ..formulation.scales import (
    DEFAULT_MIP_GAP,
    LARGE_ROW,
    TIGHT_MARGIN,
    objective_lift,
    power_of_two_scales,
    row_lift,
    within_mip_gap,
)
from ..result import BackendAnswer, feasibility_violation

__all__ = ["rows_of", "has_large_rows", "guarded_solve", "hint_vector",
           "new_highs", "highs_rows_model", "highs_packing_master", "add_packing_columns", "quiet_native_output",
           # the scales live in gensolver.solvers.formulation.scales; re-exported for the backends
           "DEFAULT_MIP_GAP", "LARGE_ROW", "TIGHT_MARGIN", "objective_lift", "power_of_two_scales", "row_lift",
           "within_mip_gap"]

def has_large_rows(P: MatrixProblem) -> bool:
    """Whether any demand or capacity reaches :data:`LARGE_ROW` (then the floating-point
    backends solve normalised rows under :func:`guarded_solve`)."""
    data = P.A.data
    return bool((data.size and float(np.abs(data).max()) >= LARGE_ROW)
                or (P.cap.size and float(np.abs(P.cap).max()) >= LARGE_ROW))


def rows_of(P: MatrixProblem, *, lift_small: bool = False, normalise: bool = False,
            margin: float = 0.0) -> Iterator[tuple[float, np.ndarray, np.ndarray]]:
    """Yield ``(capacity, columns, coefficients)`` for every non-empty capacity row of ``P``.

    ``lift_small=True`` (floating-point MIP backends): rows with every entry below 1 come
    scaled by :func:`row_lift`; ``normalise=True``: every row does. ``margin``: each capacity
    is then moved by ``margin * (|capacity| + sum |demands|)`` (positive loosens, negative
    tightens; see :func:`guarded_solve`).
    """
    mat = P.A_rows
    # the floating-point backends (lift_small) get the capacity rule's limit as right-hand side
    # (gensolver.model.tolerances; their answers are checked against the rule); CP-SAT's
    # integer rows apply the rule themselves (integer_row)
    cap = P.limit if lift_small or normalise else P.cap
    indptr, indices, data = mat.indptr, mat.indices, mat.data
    for r in range(mat.shape[0]):
        lo, hi = indptr[r], indptr[r + 1]
        if hi > lo:
            c, coefs = float(cap[r]), data[lo:hi]
            if lift_small or normalise:
                f = row_lift(coefs, c, normalise=normalise)
                if f != 1.0:
                    c, coefs = c * f, coefs * f
            if margin:
                c = c + margin * (abs(c) + float(np.abs(coefs).sum()))
            yield c, indices[lo:hi], coefs


def hint_vector(instance: Instance, options: dict[str, Any]) -> np.ndarray | None:
    """The warm start in ``options["hint"]`` (bid ids, or a 0/1 vector) as a 0/1 vector."""
    hint = options.get("hint")
    if hint is None:
        return None
    if isinstance(hint, np.ndarray) and hint.dtype != object and hint.shape == (instance.n_bids,):
        return (hint > 0.5).astype(np.float64)
    x = np.zeros(instance.n_bids)
    index = instance.bid_index
    for bid_id in hint:
        if bid_id not in index:
            raise InputError(f"options['hint'] names unknown bid {bid_id!r}")
        x[index[bid_id]] = 1.0
    return x


_QUIET_LOCK = threading.Lock()
_quiet_depth = 0
_quiet_saved: int | None = None


class quiet_native_output:
    """Silence native libraries that print banners to the process's stdout (fd 1).

    HiGHS prints a copyright banner from C++ even when its output flag is off; inside
    ``gensolver solve --json`` that would corrupt the JSON. Python-level ``sys.stdout`` is
    untouched; fd 1 is pointed at ``/dev/null`` for the duration and then restored.

    Safe to use from several threads at once (VCG pivots, parallel LNS): fd 1 is redirected
    by the first thread in and restored by the last one out, so overlapping uses can never
    restore ``/dev/null`` as the process's stdout.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._entered = False

    def __enter__(self) -> quiet_native_output:
        global _quiet_depth, _quiet_saved
        if not self.enabled:
            return self
        with _QUIET_LOCK:
            if _quiet_depth == 0:
                try:
                    sys.stdout.flush()
                    saved = os.dup(1)
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.close(devnull)
                    _quiet_saved = saved
                except (OSError, ValueError):  # pragma: no cover - no fd 1 (embedded interpreters)
                    _quiet_saved = None
            _quiet_depth += 1
            self._entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        global _quiet_depth, _quiet_saved
        if not self._entered:
            return
        with _QUIET_LOCK:
            self._entered = False
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                os.dup2(_quiet_saved, 1)
                os.close(_quiet_saved)
                _quiet_saved = None


def new_highs() -> Any:
    """A ``highspy.Highs`` object with its output off, created without HiGHS's banner.

    HiGHS prints its copyright banner to fd 1 from the constructor of the first ``Highs``
    object in a process, before any option can turn output off.
    """
    import highspy

    with quiet_native_output():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h



def highs_rows_model(row_lower: np.ndarray, row_upper: np.ndarray, *, maximize: bool,
                     options: Mapping[str, Any] | None = None) -> Any:
    """A :func:`new_highs` object holding an LP with rows ``row_lower <= A x <= row_upper`` and no
    columns yet (column-wise: columns come with ``addCols``), maximised or minimised.

    ``options`` (HiGHS option name -> value) are set, in order, before the model is passed.
    """
    import highspy

    h = new_highs()
    for name, value in (options or {}).items():
        h.setOptionValue(name, value)
    lp = highspy.HighsLp()
    lp.num_col_ = 0
    lp.num_row_ = int(np.size(row_lower))
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.zeros(1, dtype=np.int32)
    h.passModel(lp)
    return h


def highs_packing_master(P: MatrixProblem, options: Mapping[str, Any] | None = None) -> Any:
    """The LP relaxation of ``P`` with no columns yet: ``max v.x  s.t.  A x <= cap``, one XOR row
    ``sum_{owner(j)=i} x_j <= 1`` per owner, in a :func:`highs_rows_model`; columns come with
    :func:`add_packing_columns`."""
    import highspy

    n_rows = P.cap.size + P.n_owners
    return highs_rows_model(np.full(n_rows, -highspy.kHighsInf),
                            np.concatenate([P.cap, np.ones(P.n_owners)]).astype(np.float64),
                            maximize=True, options=options)


def add_packing_columns(h: Any, P: MatrixProblem, new: np.ndarray) -> int:
    """Append the columns ``new`` of ``P`` (their ``A`` entries and XOR row, value as cost,
    bounds ``[0, inf)``) to a :func:`highs_packing_master`; returns their number of non-zeros.

    No column upper bound: ``x <= 1`` follows from the XOR row, and a bound's dual would not be
    seen by the row duals that price columns.
    """
    import highspy

    X = sp.csc_matrix((np.ones(new.size), (P.owner[new], np.arange(new.size))), shape=(P.n_owners, new.size))
    M = sp.vstack([P.A[:, new].tocsc(), X], format="csc")
    M.sort_indices()
    h.addCols(int(new.size), P.values[new].astype(np.float64), np.zeros(new.size),
              np.full(new.size, highspy.kHighsInf), int(M.nnz), M.indptr[:-1].astype(np.int32),
              M.indices.astype(np.int32), M.data.astype(np.float64))
    return int(M.nnz)


def guarded_solve(instance: Instance, P: MatrixProblem, solve_once: Callable[..., BackendAnswer], *,
                  time_limit: float | None, normalise: bool, first_margin: float = 0.0,
                  first: BackendAnswer | None = None) -> BackendAnswer:
    """One solve, then an explicit tightened re-solve if the answer overfills a true row.

    ``solve_once(margin=, normalise=, time_limit=)`` returns the backend's
    :class:`~gensolver.solvers.result.BackendAnswer` for rows moved by ``margin`` (see
    :func:`rows_of`). The first solve (``first``, when already made) uses ``normalise`` and
    ``first_margin >= 0``: normalised rows (every row scaled to size 1 by a power of two) keep
    SCIP and CBC inside their numerical range, and plain rows leave the backend its own
    ``1e-6`` tolerance; either way it is a *relaxation* of the true problem (the backend's
    tolerance only adds to the format's), so its optimum bounds the true one, and an answer
    that fits the true rows is the answer.

    Step 2, only when that answer overfills a true row (by less than the backend's tolerance,
    e.g. ``40 + 4e-8`` beside ``40`` in ``80``): a second solve with normalised rows, each
    tightened by :data:`~gensolver.solvers.formulation.scales.TIGHT_MARGIN`, whose answer
    surely fits; it is returned unproven, with the first solve's bound (its optimum when the
    backend proved it).
    """
    t0 = time.perf_counter()
    if first is None:
        first = solve_once(margin=first_margin, normalise=normalise, time_limit=time_limit)
    else:  # made before: its time counts against the limit too
        t0 -= first.build + first.solve
    if first.failure is not None or first.x is None:
        return first
    overfilled = feasibility_violation(instance, (first.x > 0.5).astype(np.float64))
    if overfilled is None:
        return first
    bound = first.bound
    if first.proven:  # the relaxation's optimum (its answer merely overfills by round-off)
        bound = float(P.values @ (first.x > 0.5))
    left = None if time_limit is None else max(0.1, time_limit - (time.perf_counter() - t0))
    tight = solve_once(margin=-TIGHT_MARGIN, normalise=True, time_limit=left)
    if tight.failure is not None or tight.x is None:
        return tight
    details = dict(tight.details)
    details["numerics"] = (f"the backend's answer overfilled a true row ({overfilled}); "
                           f"rows tightened by {TIGHT_MARGIN:g}")
    return dataclasses.replace(
        tight, bound=bound, proven=False, details=details, build=first.build + tight.build,
        solve=first.solve + tight.solve,
        message="the backend's answer overfilled a capacity within its tolerance; "
                "this answer (rows tightened) fits, with the first solve's bound")
