"""The GPU market: GenTask specifications and round-by-round clearing with credits.

- :mod:`.spec` reads the GenTask YAML users write into :class:`gensolver.model.tasks.Task`;
- :mod:`.engine` is the one market engine (:class:`.engine.CreditEngine`: credits,
  finish-time fairness, prices), on any cluster shaped like :class:`.pool.Pool`: the
  simulator's ``market`` policy, ``gensolver serve`` and ``gensolver run --market`` clear
  their rounds with it;
- :mod:`.market` is the deprecated welfare auction (:class:`.market.Market`, ``gensolver serve
  --market '{"engine": "auction"}'``, one release more).

Names are imported on first use, so the simulator's placement helpers (:mod:`.pool`) do not
load the solver layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .market import Assignment, Candidate, Clearing, CreditEntry, Market, MarketConfig, Reservation
    from .spec import SpecError, load_gentasks, loads_gentasks, parse_duration, parse_gentask, parse_quantity

__all__ = ["Market", "MarketConfig", "Candidate", "Reservation", "Assignment", "Clearing", "CreditEntry",
           "SpecError", "load_gentasks", "loads_gentasks", "parse_gentask", "parse_quantity", "parse_duration"]

_HOME = {**{n: ".market" for n in __all__[:7]}, **{n: ".spec" for n in __all__[7:]}}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
