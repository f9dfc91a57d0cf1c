"""The anytime solver behind ``method="auto"`` and the compact task-level path."""

from .engine import AnytimeResult, anytime_solve, column_generation, first_fit_matrix, lagrangian_bound
from .problem import MatrixProblem, from_instance, from_round

__all__ = ["AnytimeResult", "anytime_solve", "column_generation", "first_fit_matrix", "lagrangian_bound",
           "MatrixProblem", "from_instance", "from_round"]
