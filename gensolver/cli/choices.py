"""Enumerated option values shown in ``--help`` and offered by shell completion.

The options stay plain strings checked by their command, so that a wrong value keeps its
message (``error: --preempt must be plan or checkpoint, got 'x'``, exit 2) instead of the
generic one of a parser-level choice; :func:`choice` gives such an option the metavar
``[a|b|c]`` and a completion callback over the same values.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["choice", "METHODS", "MECHANISMS", "SIM_MECHANISMS", "POLICIES", "DEFAULT_POLICIES", "BACKENDS",
           "BACKENDS_HELP"]

#: policies of ``gensolver simulate`` (kept equal to :func:`gensolver.sim.list_policies` by a test)
POLICIES: tuple[str, ...] = ("fcfs-whole-gpu", "fcfs-packing", "elastic", "time-slicing", "mps", "mig",
                             "finish-time-fair", "market")
#: what ``gensolver simulate`` compares when no ``--policy`` is given
DEFAULT_POLICIES: tuple[str, ...] = ("fcfs-whole-gpu", "fcfs-packing", "elastic", "finish-time-fair", "market")


def _backends() -> tuple[str, ...]:
    from ..executor.execution import EXECUTION_BACKENDS

    return tuple(EXECUTION_BACKENDS)


def _backends_help() -> str:
    from ..executor.execution import EXECUTION_BACKENDS

    parts = [f"{name} ({EXECUTION_BACKENDS.get(name).description})" for name in EXECUTION_BACKENDS]
    return (", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else "".join(parts)) + "."


def _methods() -> tuple[str, ...]:
    from ..solvers import list_methods

    return tuple(m.name for m in list_methods())


def _mechanisms() -> tuple[str, ...]:
    from ..mechanisms import MECHANISMS as registry

    return tuple(registry)


def _sim_mechanisms() -> tuple[str, ...]:
    return ("others-price",)  # the market's rule (the welfare auction's mechanisms are retired)


#: execution backends of ``gensolver run`` (:data:`gensolver.executor.execution.EXECUTION_BACKENDS`)
BACKENDS = _backends()
#: ``--backend`` help: each execution backend with its description
BACKENDS_HELP = _backends_help()
#: solver methods (:func:`gensolver.solvers.list_methods`)
METHODS = _methods()
#: mechanisms (:data:`gensolver.mechanisms.MECHANISMS`)
MECHANISMS = _mechanisms()
SIM_MECHANISMS = _sim_mechanisms()


def choice(values: Sequence[str] | Callable[[], Sequence[str]]) -> dict[str, Any]:
    """``typer.Option`` keywords listing ``values`` in ``--help`` and in shell completion."""
    shown = tuple(values() if callable(values) else values)

    def complete(incomplete: str) -> list[str]:
        now = values() if callable(values) else values
        return [v for v in now if v.startswith(incomplete)]

    return {"metavar": "[" + "|".join(shown) + "]", "autocompletion": complete}
