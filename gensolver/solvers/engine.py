"""The solver engine: the public building blocks beneath :func:`gensolver.solve`.

:func:`gensolver.solve` and the method registry (:mod:`gensolver.solvers`) answer one winner
determination problem. A mechanism needs more than that: many related solves (VCG's pivots,
the lottery's oracle calls, the core's separation), each warm-started from the last, sharing one
budget and one matrix view. This module is the one place the layers above the solvers (the
mechanisms first) take those parts from; the subpackages behind it (``anytime``, ``exact``,
``formulation``, ``approximation``, ``heuristics``, ``result``) are the engine's inside and may
change. The rule is stated as a contract in ``pyproject.toml`` (``[tool.importlinter]``, run by
``lint-imports``) and checked by ``tests/test_layers.py``.

The problem and its bounds
--------------------------
:class:`MatrixProblem`
    ``max v.x  s.t.  A x <= cap``, one XOR row per owner, ``x`` binary: the matrix view every
    stage works on.
:func:`from_instance`
    The :class:`MatrixProblem` of an :class:`~gensolver.model.Instance` (cached on it).
:func:`fit_mask`
    Which columns fit a residual capacity on their own (the capacity rule of
    :mod:`gensolver.model.tolerances`).
:func:`owner_best_alone`, :func:`trivial_bound`
    Per owner, the best column that fits alone; their sum, an upper bound on welfare.
:data:`DEFAULT_MIP_GAP`
    The relative gap at which the exact backends stop (1e-9).

Heuristics
----------
:func:`first_fit_matrix`
    Accept columns in a given order while they fit (XOR and capacity).
:func:`los_order`
    Columns by descending ``value / size**alpha`` (Lehmann, O'Callaghan & Shoham 2002).
:func:`upgrade_swaps`
    Local search: each winner's column replaced by its owner's best column that fits.
:func:`first_fit`, :func:`greedy_keys`, :func:`greedy_order`
    The same first fit and ranking on an :class:`~gensolver.model.Instance` (the ``greedy``
    method's steps).

Anytime search, relaxations and exact restricted solves
-------------------------------------------------------
:func:`anytime_solve`
    The ``auto`` method's engine: LP by column generation, first fit, LNS, an exact restricted
    MIP, with an optional warm start; budget in seconds or work units.
:class:`WorkClock`, :data:`WORK_PER_NNZ_GREEDY`
    The budget of a run (wall seconds, or deterministic work units) and the work charged for
    one first-fit pass per non-zero of ``A``.
:func:`column_generation`, :class:`LpState`
    The LP relaxation by column generation, and its duals, bound and working set.
:func:`solve_exact_restricted`
    The exact MIP over a subset of columns (CP-SAT when the data scale to integers, else HiGHS).
:func:`new_highs`, :func:`highs_rerun`
    A quiet ``highspy.Highs`` object, and re-running one within a time limit.
:func:`highs_rows_model`, :func:`highs_packing_master`, :func:`add_packing_columns`
    A HiGHS LP built column by column: rows without columns yet, the LP relaxation of a
    :class:`MatrixProblem` (capacity and XOR rows), and its columns appended in place.

Answers
-------
:func:`finish`
    An :class:`~gensolver.solvers.Allocation` from a 0/1 vector, checked by the formulation's
    feasibility rule (the one decider of :func:`gensolver.solve`'s status).
"""

from __future__ import annotations

from .anytime.budget import WORK_PER_NNZ_GREEDY, WorkClock
from .anytime.column_generation import LpState, column_generation, highs_rerun
from .anytime.driver import anytime_solve
from .anytime.exact_restricted import solve_exact_restricted
from .approximation.greedy import first_fit, greedy_keys, greedy_order
from .exact.common import add_packing_columns, highs_packing_master, highs_rows_model, new_highs
from .formulation.bounds import owner_best_alone, trivial_bound
from .formulation.problem import MatrixProblem, fit_mask, from_instance
from .formulation.scales import DEFAULT_MIP_GAP
from .heuristics import first_fit_matrix, los_order, upgrade_swaps
from .result import finish

__all__ = [
    "MatrixProblem",
    "from_instance",
    "fit_mask",
    "owner_best_alone",
    "trivial_bound",
    "DEFAULT_MIP_GAP",
    "first_fit_matrix",
    "los_order",
    "upgrade_swaps",
    "first_fit",
    "greedy_keys",
    "greedy_order",
    "anytime_solve",
    "WorkClock",
    "WORK_PER_NNZ_GREEDY",
    "column_generation",
    "LpState",
    "solve_exact_restricted",
    "new_highs",
    "highs_rows_model",
    "highs_packing_master",
    "add_packing_columns",
    "highs_rerun",
    "finish",
]
