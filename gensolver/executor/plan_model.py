"""The plan model: :class:`ExecutionPlan` and its parts, and :class:`PlanError` (format: :mod:`gensolver.executor.plan`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..errors import InputError

PLAN_SCHEMA = "gensolver.plan/v1"
#: bytes per GiB: instance memory (GiB) times this is plan memory (bytes)
GIB = 1 << 30
#: the largest memory (bytes) of a device or an entry of a plan, 2**80: the largest quantity
#: :mod:`gensolver.model.quantity` reads, so every backend can hold it
MAX_PLAN_BYTES = 1 << 80
_TOL = 1e-9


class PlanError(InputError):
    """An allocation that cannot be laid out, or a malformed plan document.

    Parameters
    ----------
    pointer : str
        JSON pointer (RFC 6901) to the offending place (``""``: the whole document or file).
    reason : str
    path : str, keyword-only, optional
        The file the document came from; the message then starts with it.

    Attributes
    ----------
    pointer : str
    reason : str
    path : str or None
    """

    def __init__(self, pointer: str, reason: str, *, path: str | None = None) -> None:
        self.pointer = pointer
        self.reason = reason
        self.path = path
        if path is None:
            message = f"{pointer or '/'}: {reason}"
        else:
            message = f"{path}: {pointer}: {reason}" if pointer else f"{path}: {reason}"
        super().__init__(message)


@dataclass(frozen=True)
class PlanEntry:
    """One task on one device over ``[start, end)`` seconds with a fixed grant.

    Attributes
    ----------
    task : str
        Task id (the winning bid's ``bidder``).
    device : str
        Device id as named by the slots' ``gpu``.
    start, end : float
        Seconds from the round's start, ``start < end``.
    memory : int
        Granted device memory in bytes.
    compute : float
        Granted share of the device's compute (1.0 = whole device).
    command : tuple of str
        Argv to launch (empty when unknown).
    bid : str
        The winning bid.
    slots : tuple of str
        The merged slots, in time order.
    """

    task: str
    device: str
    start: float
    end: float
    memory: int
    compute: float
    command: tuple[str, ...] = ()
    bid: str = ""
    slots: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The entry's JSON object."""
        return {"task": self.task, "start": self.start, "end": self.end, "memory": self.memory,
                "compute": self.compute, "command": list(self.command), "bid": self.bid,
                "slots": list(self.slots)}


@dataclass(frozen=True)
class PreemptionPoint:
    """Where a task stops at ``time`` and continues at ``resume`` (see the module docstring).

    Attributes
    ----------
    task : str
    time : float
        Plan time at which the task must stop running on ``from_devices``.
    resume : float
        Plan time at which it runs again on ``to_devices``.
    from_devices, to_devices : tuple of str
    kind : {"gap", "move"}
    mode : {"suspend", "checkpoint"}
    """

    task: str
    time: float
    resume: float
    from_devices: tuple[str, ...]
    to_devices: tuple[str, ...]
    kind: str
    mode: str

    def to_dict(self) -> dict[str, Any]:
        """The point's JSON object."""
        return {"task": self.task, "time": self.time, "resume": self.resume,
                "from": list(self.from_devices), "to": list(self.to_devices),
                "kind": self.kind, "mode": self.mode}


@dataclass(frozen=True)
class DevicePlan:
    """A device and its timeline (entries sorted by start)."""

    id: str
    memory: int | None
    compute: float | None
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True)
class PlanTask:
    """A winning task: its bid, value, preemptibility, command, and (when known) its tenant and
    urgency (0..1, the task model's value decay; cluster adapters map it to a priority)."""

    id: str
    bid: str = ""
    value: float = 0.0
    preemptible: bool = True
    command: tuple[str, ...] = ()
    tenant: str = ""
    urgency: float | None = None


@dataclass(frozen=True)
class Run:
    """A maximal stretch of a task's timeline without a stop or a device change.

    The executor launches (or resumes) a task once per run. ``grants`` maps each device to its
    ``(memory bytes, compute share)``: the smallest memory and compute of the run's entries on
    that device (what the process may rely on for the whole run).
    """

    task: str
    index: int
    start: float
    end: float
    devices: tuple[str, ...]
    grants: Mapping[str, tuple[int, float]]
    command: tuple[str, ...]

    @property
    def memory(self) -> int:
        """Smallest per-device memory grant of the run (bytes)."""
        return min(m for m, _ in self.grants.values())

    @property
    def compute(self) -> float:
        """Smallest per-device compute share of the run."""
        return min(c for _, c in self.grants.values())


@dataclass(frozen=True, eq=False)
class ExecutionPlan:
    """Frozen per-device timelines of one round (the ``gensolver.plan/v1`` document).

    Build with :func:`to_plan` or :func:`read_plan`; check with
    :func:`gensolver.executor.check_plan`; render with :func:`gensolver.executor.plot_plan`.
    """

    name: str
    devices: tuple[DevicePlan, ...]
    tasks: tuple[PlanTask, ...]
    preemptions: tuple[PreemptionPoint, ...] = ()
    horizon: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "preemptions", tuple(self.preemptions))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    # ------------------------------------------------------------------ views
    @property
    def entries(self) -> tuple[PlanEntry, ...]:
        """Every entry of every device, sorted by (start, device, task)."""
        return tuple(sorted((e for d in self.devices for e in d.entries),
                            key=lambda e: (e.start, e.device, e.task)))

    def device(self, device_id: str) -> DevicePlan:
        """The :class:`DevicePlan` named ``device_id`` (``KeyError`` if absent)."""
        for d in self.devices:
            if d.id == device_id:
                return d
        raise KeyError(device_id)

    def task(self, task_id: str) -> PlanTask:
        """The :class:`PlanTask` named ``task_id`` (``KeyError`` if absent)."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    def entries_of(self, task_id: str) -> tuple[PlanEntry, ...]:
        """The task's entries on every device, sorted by (start, device)."""
        return tuple(e for e in self.entries if e.task == task_id)

    def runs(self, task_id: str) -> tuple[Run, ...]:
        """The task's runs (see :class:`Run`), in time order."""
        return _runs(task_id, self.entries_of(task_id), self.task(task_id).command)

    def preemptions_of(self, task_id: str) -> tuple[PreemptionPoint, ...]:
        """The task's preemption points, in time order."""
        return tuple(sorted((p for p in self.preemptions if p.task == task_id), key=lambda p: p.time))

    # ------------------------------------------------------------------ I/O
    def to_dict(self) -> dict[str, Any]:
        """The ``gensolver.plan/v1`` document as plain dicts."""
        return {
            "schema": PLAN_SCHEMA,
            "name": self.name,
            "time_unit": "s",
            "horizon": self.horizon,
            "devices": [{"id": d.id, "memory": d.memory, "compute": d.compute,
                         "entries": [e.to_dict() for e in d.entries]} for d in self.devices],
            "tasks": [{"id": t.id, "bid": t.bid, "value": t.value, "preemptible": t.preemptible,
                       "command": list(t.command), **({"tenant": t.tenant} if t.tenant else {}),
                       **({"urgency": t.urgency} if t.urgency is not None else {})} for t in self.tasks],
            "preemptions": [p.to_dict() for p in self.preemptions],
            "metadata": dict(self.metadata),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The document as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)

    @property
    def digest(self) -> str:
        """SHA-256 (hex, first 16 digits) of the canonical JSON: identifies the plan in journals."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return (f"ExecutionPlan(name={self.name!r}, devices={len(self.devices)}, tasks={len(self.tasks)}, "
                f"entries={len(self.entries)}, preemptions={len(self.preemptions)})")


def _runs(task_id: str, entries: Sequence[PlanEntry], command: tuple[str, ...]) -> tuple[Run, ...]:
    """Group a task's entries into runs: contiguous elementary intervals with one device set."""
    if not entries:
        return ()
    cuts = sorted({e.start for e in entries} | {e.end for e in entries})
    pieces: list[tuple[float, float, dict[str, tuple[int, float]]]] = []
    for a, b in zip(cuts, cuts[1:]):
        active = {e.device: (e.memory, e.compute) for e in entries if e.start <= a + _TOL and e.end >= b - _TOL}
        if active:
            pieces.append((a, b, active))
    runs: list[Run] = []
    cur: list[tuple[float, float, dict[str, tuple[int, float]]]] = []

    def flush() -> None:
        grants: dict[str, tuple[int, float]] = {}
        for _, _, act in cur:
            for dev, (m, c) in act.items():
                pm, pc = grants.get(dev, (m, c))
                grants[dev] = (min(pm, m), min(pc, c))
        runs.append(Run(task_id, len(runs), cur[0][0], cur[-1][1], tuple(sorted(grants)),
                        MappingProxyType(grants), command))

    for piece in pieces:
        if cur and (abs(cur[-1][1] - piece[0]) > _TOL or set(cur[-1][2]) != set(piece[2])):
            flush()
            cur = []
        cur.append(piece)
    if cur:
        flush()
    return tuple(runs)
