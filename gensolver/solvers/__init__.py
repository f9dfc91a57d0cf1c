"""Winner determination: :func:`solve`, the method registry and the result type."""

from .api import solve
from .registry import (
    BackendNotInstalledError,
    BackendUnavailableError,
    Method,
    UnknownMethodError,
    get_method,
    list_methods,
    register,
)
from .result import Allocation, Status, Timing, relative_gap

__all__ = [
    "solve",
    "Allocation",
    "Status",
    "Timing",
    "relative_gap",
    "Method",
    "register",
    "get_method",
    "list_methods",
    "UnknownMethodError",
    "BackendUnavailableError",
    "BackendNotInstalledError",
]
