"""Import PuLP so that OR-Tools' HiGHS keeps working in the same process.

PuLP imports highspy, whose native core carries its own HiGHS (1.16 here); OR-Tools bundles
another HiGHS (1.12) inside its native library. When highspy's core is loaded first, OR-Tools'
library, loaded later, binds part of its HiGHS symbols to highspy's copy, and the next
``pywraplp`` HiGHS solve crashes the process (segmentation fault). Loaded the other way round,
each keeps its own: :func:`import_pulp` loads OR-Tools' linear-solver library (when installed)
before PuLP, so ``highs`` and ``pulp-highs`` both work in one process, whatever the order of the
solves. A process that imported PuLP by itself first is detected by
:func:`ortools_highs_safe` (the ``highs`` method then says why it is unavailable).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["import_pulp", "ortools_highs_safe"]

#: whether OR-Tools' native library was loaded before PuLP (None: PuLP not imported by us)
_ORTOOLS_FIRST: bool | None = None


def _ortools_loaded() -> bool:
    return any(name in sys.modules for name in ("ortools.linear_solver.pywraplp", "ortools.sat.python.cp_model",
                                                 "ortools.linear_solver.python.model_builder"))


def import_pulp() -> Any:
    """The ``pulp`` module, imported after OR-Tools' native library when OR-Tools is installed."""
    global _ORTOOLS_FIRST
    if "pulp" not in sys.modules:
        first = _ortools_loaded()
        if not first and importlib.util.find_spec("ortools") is not None:
            try:
                from ortools.linear_solver import pywraplp  # noqa: F401  (loads libortools first)

                first = True
            except ImportError:
                first = False
        import pulp

        _ORTOOLS_FIRST = first or "highspy" not in sys.modules
        return pulp
    import pulp

    return pulp


def ortools_highs_safe() -> bool:
    """False when highspy's HiGHS was loaded (through PuLP) before OR-Tools' own."""
    if "pulp" not in sys.modules or importlib.util.find_spec("highspy") is None:
        return True
    return bool(_ORTOOLS_FIRST)
