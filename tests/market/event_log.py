"""What a simulation had committed at a step, read from its event log: the independent side of
the replay tests (the service's and ``run --market``'s rounds against ``simulate``)."""

from __future__ import annotations

from typing import Any, Iterable


def sim_state(events: Iterable[Any], at: float) -> tuple[dict, dict]:
    """``({task: (gpus, memory)}, {task: charge})`` of a simulation after every event up to
    step ``at`` (charges: the payments at ``at``), read from its event log."""
    placed: dict[str, tuple[list[str], float]] = {}
    charges: dict[str, float] = {}
    for e in events:
        if e.time > at:
            break
        if e.kind == "start":
            placed[e.task] = (list(e.gpus), e.memory)
        elif e.kind == "resize":
            placed[e.task] = (placed[e.task][0], e.memory)
        elif e.kind in ("stop", "finish"):
            placed.pop(e.task, None)
        elif e.kind == "credit" and e.note == "payment" and e.time == at:
            charges[e.task] = charges.get(e.task, 0.0) - e.amount
    return placed, charges
