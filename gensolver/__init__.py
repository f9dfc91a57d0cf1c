"""gensolver: GPU sharing as a market, cleared with real optimisation.

The main entry points:

- :func:`solve` — winner determination for one round (exact and approximate methods);
- :func:`read_instance` / :func:`write_instance` — the ``gensolver.instance/v1`` format and CATS;
- :func:`check_allocation` — an independent feasibility certificate.
"""

from ._deprecation import GensolverDeprecationWarning
from .model import (
    SCHEMA,
    Bid,
    Bidder,
    Instance,
    InstanceError,
    Slot,
    from_dict,
    read_instance,
    write_instance,
)
from .solvers import Allocation, Status, list_methods, solve
from .verify import check_allocation

__version__ = "0.1.0"

__all__ = [
    "SCHEMA",
    "Bid",
    "Bidder",
    "Instance",
    "InstanceError",
    "Slot",
    "from_dict",
    "read_instance",
    "write_instance",
    "solve",
    "Allocation",
    "Status",
    "list_methods",
    "check_allocation",
    "GensolverDeprecationWarning",
    "__version__",
]
