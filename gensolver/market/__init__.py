"""The GPU market: GenTask specifications and round-by-round clearing with credits.

- :mod:`.spec` reads the GenTask YAML users write into :class:`gensolver.model.tasks.Task`;
- :mod:`.market` clears rounds (auction, mechanism, credits, fairness weights, feedback).
"""

from .market import Assignment, Candidate, Clearing, CreditEntry, Market, MarketConfig, Reservation
from .spec import SpecError, load_gentasks, loads_gentasks, parse_duration, parse_gentask, parse_quantity

__all__ = ["Market", "MarketConfig", "Candidate", "Reservation", "Assignment", "Clearing", "CreditEntry",
           "SpecError", "load_gentasks", "loads_gentasks", "parse_gentask", "parse_quantity", "parse_duration"]
