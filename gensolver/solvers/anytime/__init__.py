"""The anytime solver behind ``method="auto"``, one module per concern.

- :mod:`.budget`: the work clock (wall seconds or deterministic work units);
- :mod:`.column_generation`: the LP bound by column generation and its state (the function
  is :func:`.column_generation.column_generation`);
- :mod:`.restricted_mip`: restricted MIPs on CP-SAT, HiGHS and SCIP;
- :mod:`.exact_restricted`: which backend proves a restricted MIP, and the race of two;
- :mod:`.lns`: neighbourhoods and the large-neighbourhood search loop;
- :mod:`.state` and :mod:`.driver`: :func:`anytime_solve`, its stages over one
  incumbent/bound state;
- :mod:`.incremental`: :class:`IncrementalSolver`, round ``k + 1`` warm-started from round ``k``.

The problem form is :mod:`gensolver.solvers.formulation`; the greedy heuristics are
:mod:`gensolver.solvers.heuristics`; VCG pivots on this engine are
:mod:`gensolver.mechanisms.pivots`.
"""

from ..formulation.bounds import lagrangian_bound
from ..formulation.problem import MatrixProblem, from_instance, from_round
from ..heuristics import first_fit_matrix
from .column_generation import LpState
from .driver import WarmStart, anytime_solve
from .incremental import IncrementalSolver, warm_start_for
from .state import AnytimeResult

__all__ = ["AnytimeResult", "anytime_solve", "WarmStart", "IncrementalSolver", "warm_start_for", "LpState", "first_fit_matrix", "lagrangian_bound",
           "MatrixProblem", "from_instance", "from_round"]
