"""Verification: independent certificates for allocations and mechanism properties."""

from .certificates import BRUTE_FORCE_LIMIT, Certificate, brute_force, check_allocation
from .expected import expected_regret, expected_utility, lottery, max_expected_regret
from .nash import Deviation, Dynamics, NashCheck, best_response_dynamics, is_nash_equilibrium
from .properties import PropertyCheck, in_core, is_budget_feasible, is_envy_free, is_individually_rational
from .regret import (
    DEFAULT_FACTORS,
    FAMILIES,
    TRUTHFUL_FAMILIES,
    MaxRegretResult,
    Misreport,
    RegretResult,
    apply_misreport,
    max_regret,
    misreports,
    regret,
    true_utility,
    true_value,
)

__all__ = [
    "Certificate",
    "check_allocation",
    "brute_force",
    "BRUTE_FORCE_LIMIT",
    "PropertyCheck",
    "is_individually_rational",
    "is_budget_feasible",
    "is_envy_free",
    "in_core",
    "Misreport",
    "RegretResult",
    "MaxRegretResult",
    "FAMILIES",
    "TRUTHFUL_FAMILIES",
    "DEFAULT_FACTORS",
    "misreports",
    "apply_misreport",
    "true_value",
    "true_utility",
    "regret",
    "max_regret",
    "lottery",
    "expected_utility",
    "expected_regret",
    "max_expected_regret",
    "Deviation",
    "NashCheck",
    "Dynamics",
    "is_nash_equilibrium",
    "best_response_dynamics",
]
