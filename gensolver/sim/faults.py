"""Fault schedules: a GPU or a whole node fails at a time and (optionally) comes back."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from ..errors import InputError

__all__ = ["Fault", "parse_fault", "FaultError", "unknown_target"]


class FaultError(InputError):
    """A malformed fault specification."""


@dataclass(frozen=True)
class Fault:
    """``kind`` (``"gpu"`` or ``"node"``) ``target`` is down from ``start`` to ``end`` (steps).

    ``end=None`` means it never comes back. Running tasks are requeued when it fails:
    preemptible ones from their last checkpoint, the others from the start.
    """

    kind: str
    target: str
    start: float
    end: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("gpu", "node"):
            raise FaultError(f"fault kind must be 'gpu' or 'node', got {self.kind!r}")
        if not self.target:
            raise FaultError("fault target must not be empty")
        if not math.isfinite(self.start) or self.start < 0:
            raise FaultError(f"fault start must be a non-negative time, got {self.start!r}")
        if self.end is not None and not self.end > self.start:
            raise FaultError(f"fault end must come after its start, got {self.start}-{self.end}")


_SPEC = re.compile(r"^(gpu|node):([^@\s]+)@(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$", re.ASCII)


def parse_fault(text: str) -> Fault:
    """Parse ``gpu:ID@T1-T2`` or ``node:NAME@T1`` (times in steps; no ``-T2``: permanent).

    Raises
    ------
    FaultError
        Naming the expected form.
    """
    m = _SPEC.match(text.strip())
    if not m:
        raise FaultError(f"bad fault {text!r}: expected gpu:ID@T1-T2 or node:NAME@T1-T2 (times in steps)")
    kind, target, t1, t2 = m.groups()
    return Fault(kind, target, float(t1), None if t2 is None else float(t2))


def unknown_target(fault: Fault, gpus: Sequence[str], nodes: Sequence[str]) -> str | None:
    """Why ``fault`` names no GPU or node of a cluster (``gpus`` and ``nodes``: their names in
    order), listing up to eight valid names; ``None`` when its target exists.

    >>> unknown_target(Fault("gpu", "g9", 1.0), ["g0", "g1"], ["n0"])
    "names unknown GPU 'g9'; GPUs: g0, g1"
    >>> unknown_target(Fault("node", "n0", 1.0), ["g0", "g1"], ["n0"]) is None
    True
    """
    names = list(gpus if fault.kind == "gpu" else nodes)
    if fault.target in names:
        return None
    what = "GPU" if fault.kind == "gpu" else "node"
    shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
    return f"names unknown {what} {fault.target!r}; {what}s: {shown}"
