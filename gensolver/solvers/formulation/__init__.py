"""The one internal form of the welfare problem and everything computed from it.

- :mod:`.problem`: :class:`MatrixProblem` (values, capacity matrix, capacities, XOR owners),
  built from an :class:`~gensolver.model.Instance` or a compact
  :class:`~gensolver.model.GpuRound`; residual capacities, the feasibility check, XOR groups
  and the LOS key.
- :mod:`.scales`: the tolerances, power-of-two lifts and CP-SAT's integer scales.
- :mod:`.bounds`: the LP relaxation with its certified dual bound, the Lagrangian bound and
  the trivial bound.
"""

from .bounds import LpRelaxation, dual_bound, lagrangian_bound, lp_relaxation, owner_best_alone, trivial_bound
from .problem import MatrixProblem, RoundColumns, fit_mask, from_instance, from_round, los_key, xor_groups
from .scales import BACKEND_FEASIBILITY_TOL, CAPACITY_TOL, DEFAULT_MIP_GAP

__all__ = ["MatrixProblem", "RoundColumns", "from_instance", "from_round", "fit_mask", "xor_groups", "los_key",
           "LpRelaxation", "dual_bound", "lagrangian_bound", "lp_relaxation", "owner_best_alone", "trivial_bound",
           "CAPACITY_TOL", "BACKEND_FEASIBILITY_TOL", "DEFAULT_MIP_GAP"]
