"""Verification: independent certificates for allocations (and, later, mechanism properties)."""

from .certificates import BRUTE_FORCE_LIMIT, Certificate, brute_force, check_allocation

__all__ = ["Certificate", "check_allocation", "brute_force", "BRUTE_FORCE_LIMIT"]
