"""Execution plans: an allocation laid out as per-device timelines (``gensolver.plan/v1``).

:func:`to_plan` turns a cleared round (an :class:`~gensolver.model.Instance` whose slots carry
``gpu``, ``start`` and ``end`` metadata, and an :class:`~gensolver.solvers.Allocation`) into a
frozen :class:`ExecutionPlan`: for every device, the entries ``(task, start, end, memory,
compute, command)`` it runs, with consecutive slots of one task merged into one entry, and the
explicit :class:`PreemptionPoint` objects where a task's timeline has a gap or moves to other
devices. Plans serialise to JSON so that another scheduler can consume them.

The ``gensolver.plan/v1`` document
----------------------------------
::

    {
      "schema": "gensolver.plan/v1",
      "name": "node-a-round-17",
      "time_unit": "s",
      "horizon": 240.0,
      "devices": [
        {"id": "GPU-5d8c...", "memory": 85899345920, "compute": 1.0,
         "entries": [
           {"task": "llm-001", "start": 0.0, "end": 120.0, "memory": 32212254720,
            "compute": 0.5, "command": ["python", "train.py"],
            "bid": "llm-001|gpu0|m0|s0", "slots": ["gpu0@t0", "gpu0@t1"]}
         ]}
      ],
      "tasks": [
        {"id": "llm-001", "bid": "llm-001|gpu0|m0|s0", "value": 42.5,
         "preemptible": true, "command": ["python", "train.py"]}
      ],
      "preemptions": [
        {"task": "llm-001", "time": 120.0, "resume": 180.0, "from": ["GPU-5d8c..."],
         "to": ["GPU-5d8c..."], "kind": "gap", "mode": "suspend"}
      ],
      "metadata": {}
    }

- ``devices[].id`` is the slots' ``gpu`` value: an NVML UUID (``GPU-...``), a device index
  (``"0"``) or a name (``"gpu0"``, ``"cuda:0"``); executors resolve it against their backend.
  ``memory`` (bytes) and ``compute`` (share, 1.0 = one device) are the largest capacity any slot
  of that device offers; either may be ``null`` when the slots do not say.
- ``entries`` are sorted by ``start``; ``start < end`` in seconds from the round's start;
  ``memory`` is in **bytes** (the instance's GiB times 2**30, rounded down), ``compute`` a share
  of one device. An entry is one task on one device over a maximal run of consecutive slots
  with the same grant.
- ``tasks`` lists every winning task (the winning bid's ``bidder``); ``preemptible`` defaults
  to ``true`` when the caller gave no :class:`~gensolver.model.Task` for it.
- ``preemptions``: one point wherever a task's timeline stops at ``time`` and continues at
  ``resume`` (``kind: "gap"``, same devices) or continues on other devices (``kind: "move"``).
  ``mode`` is ``"suspend"`` (SIGSTOP at ``time``, SIGCONT at ``resume``; the process keeps its
  device memory during the gap) when the devices stay the same and the task's memory still fits
  beside the other entries during the gap, otherwise ``"checkpoint"`` (SIGTERM with a grace
  period, then a fresh launch at ``resume`` with ``GENSOLVER_RESUME=1``).
- Unknown keys are ignored by :func:`plan_from_dict`, so consumers can add their own.

See ``docs/reference/plan-format.md`` for the same description with consumer notes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InputError
from ..model import Instance
from ..model.inputs import ReadError, loads_json, read_limited
from ..model.io import atomic_write

logger = logging.getLogger(__name__)

__all__ = [
    "PLAN_SCHEMA",
    "GIB",
    "PlanError",
    "PlanEntry",
    "PreemptionPoint",
    "DevicePlan",
    "PlanTask",
    "Run",
    "ExecutionPlan",
    "to_plan",
    "plan_from_dict",
    "read_plan",
    "write_plan",
]

PLAN_SCHEMA = "gensolver.plan/v1"
#: bytes per GiB: instance memory (GiB) times this is plan memory (bytes)
GIB = 1 << 30
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
    """A winning task: its bid, value, preemptibility and command."""

    id: str
    bid: str = ""
    value: float = 0.0
    preemptible: bool = True
    command: tuple[str, ...] = ()


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
                       "command": list(t.command)} for t in self.tasks],
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


# ---------------------------------------------------------------------- building
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


def _other_peak(entries: Iterable[PlanEntry], task: str, device: str, t0: float, t1: float) -> int:
    """Largest memory the other tasks' entries on ``device`` hold at any instant of [t0, t1)."""
    others = [e for e in entries if e.device == device and e.task != task and e.start < t1 - _TOL and e.end > t0 + _TOL]
    peak = 0
    for probe in {t0} | {e.start for e in others if e.start > t0}:
        peak = max(peak, sum(e.memory for e in others if e.start <= probe + _TOL and e.end > probe + _TOL))
    return peak


def _preemptions(task: PlanTask, runs: Sequence[Run], entries: Sequence[PlanEntry],
                 capacity: Mapping[str, int | None]) -> list[PreemptionPoint]:
    points = []
    for a, b in zip(runs, runs[1:]):
        kind = "gap" if a.devices == b.devices else "move"
        mode = "checkpoint"
        if kind == "gap":
            fits = True
            for dev in a.devices:
                cap = capacity.get(dev)
                held = a.grants[dev][0]
                if cap is None or _other_peak(entries, task.id, dev, a.end, b.start) + held > cap:
                    fits = False
            mode = "suspend" if fits else "checkpoint"
        points.append(PreemptionPoint(task.id, a.end, b.start, a.devices, b.devices, kind, mode))
    return points


def to_plan(instance: Instance, allocation: Any, tasks: Mapping[str, Any] | None = None, *,
            name: str | None = None, memory_unit: int = GIB) -> ExecutionPlan:
    """Lay out an allocation as per-device timelines.

    Parameters
    ----------
    instance : Instance
        The cleared round. Every slot a winning bid uses must carry ``gpu``, ``start`` and
        ``end`` metadata (as :meth:`gensolver.model.GpuRound.expand` writes them).
    allocation : Allocation or iterable of str
        The solve's result (its ``winners``), or the winning bid ids themselves.
    tasks : mapping of str to Task, optional
        Task id (= the bid's ``bidder``) to :class:`~gensolver.model.Task`, for the command and
        the ``preemptible`` flag. Tasks absent from it have no command and are preemptible.
    name : str, optional
        Plan name (default: the instance's).
    memory_unit : int, keyword-only
        Bytes per unit of the instance's ``memory`` resource (default 2**30: GiB, as
        ``shared/INSTANCE_FORMAT.md`` defines it).

    Returns
    -------
    ExecutionPlan

    Raises
    ------
    PlanError
        A used slot lacks metadata (pointer ``/slots/<id>``), a winning bid is unknown, or a
        non-preemptible task's allocation has a gap or moves between devices.

    Notes
    -----
    Consecutive slots (``end`` of one equal to ``start`` of the next, same device) with the same
    grant merge into one entry. A task's stops and device changes become
    :class:`PreemptionPoint` objects; suspension is chosen only where it is safe for memory
    (a SIGSTOPped CUDA process keeps its device allocations).
    """
    winners = tuple(getattr(allocation, "winners", allocation))
    tasks = dict(tasks or {})
    slot_by_id = {s.id: s for s in instance.slots}
    bid_by_id = {b.id: b for b in instance.bids}
    # device capacities: the largest any slot of the device offers
    cap_mem: dict[str, int | None] = {}
    cap_cmp: dict[str, float | None] = {}
    for s in instance.slots:
        if s.gpu is None:
            continue
        m = s.capacity.get("memory")
        c = s.capacity.get("compute")
        if m is not None:
            cap_mem[s.gpu] = max(cap_mem.get(s.gpu) or 0, int(m * memory_unit))
        else:
            cap_mem.setdefault(s.gpu, None)
        if c is not None:
            cap_cmp[s.gpu] = max(cap_cmp.get(s.gpu) or 0.0, float(c))
        else:
            cap_cmp.setdefault(s.gpu, None)

    raw: list[PlanEntry] = []
    plan_tasks: dict[str, PlanTask] = {}
    for k, w in enumerate(winners):
        bid = bid_by_id.get(w)
        if bid is None:
            raise PlanError(f"/winners/{k}", f"unknown bid {w!r}")
        spec = tasks.get(bid.bidder)
        command = tuple(getattr(spec, "command", ()) or ())
        preemptible = bool(getattr(spec, "preemptible", True))
        plan_tasks[bid.bidder] = PlanTask(bid.bidder, bid.id, bid.value, preemptible, command)
        for sid, res in bid.demand.items():
            slot = slot_by_id[sid]
            for key in ("gpu", "start", "end"):
                if getattr(slot, key) is None:
                    raise PlanError(f"/slots/{sid}/{key}", f"bid {bid.id!r} uses slot {sid!r}, which has no {key!r} metadata")
            if not float(slot.start) < float(slot.end):  # type: ignore[arg-type]
                raise PlanError(f"/slots/{sid}", f"start {slot.start} must be before end {slot.end}")
            raw.append(PlanEntry(bid.bidder, str(slot.gpu), float(slot.start), float(slot.end),  # type: ignore[arg-type]
                                 int(float(res.get("memory", 0.0)) * memory_unit), float(res.get("compute", 0.0)),
                                 command, bid.id, (sid,)))
    # merge consecutive slots of one task on one device with the same grant
    raw.sort(key=lambda e: (e.device, e.task, e.start))
    merged: list[PlanEntry] = []
    for e in raw:
        last = merged[-1] if merged else None
        if (last is not None and last.device == e.device and last.task == e.task
                and abs(last.end - e.start) <= _TOL and last.memory == e.memory
                and abs(last.compute - e.compute) <= _TOL):
            merged[-1] = PlanEntry(last.task, last.device, last.start, e.end, last.memory, last.compute,
                                   last.command, last.bid, last.slots + e.slots)
        else:
            merged.append(e)
    devices = []
    for dev in sorted({e.device for e in merged} | set(cap_mem)):
        ents = tuple(sorted((e for e in merged if e.device == dev), key=lambda e: (e.start, e.task)))
        if not ents and dev not in {s.gpu for s in instance.slots}:
            continue
        devices.append(DevicePlan(dev, cap_mem.get(dev), cap_cmp.get(dev), ents))
    points: list[PreemptionPoint] = []
    for tid in sorted(plan_tasks):
        t_entries = [e for e in merged if e.task == tid]
        runs = _runs(tid, sorted(t_entries, key=lambda e: (e.start, e.device)), plan_tasks[tid].command)
        pts = _preemptions(plan_tasks[tid], runs, merged, cap_mem)
        if pts and not plan_tasks[tid].preemptible:
            p = pts[0]
            raise PlanError(f"/tasks/{tid}", f"task is not preemptible but its allocation stops at t={p.time:g} "
                                             f"and continues at t={p.resume:g} ({p.kind})")
        points.extend(pts)
    horizon = max((float(s.end) for s in instance.slots if s.end is not None), default=0.0)
    meta = {"instance": instance.name, "welfare": float(getattr(allocation, "welfare", instance.welfare_of(winners)))}
    method = getattr(allocation, "method", None)
    if method:
        meta["method"] = method
    logger.info("plan: %d winning tasks on %d devices, %d preemption points, horizon %g", len(plan_tasks),
                len(devices), len(points), horizon)
    return ExecutionPlan(name if name is not None else instance.name, tuple(devices),
                         tuple(plan_tasks[t] for t in sorted(plan_tasks)), tuple(points), horizon, meta)


# ---------------------------------------------------------------------- reading
def _num(value: Any, where: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise PlanError(where, f"expected a finite non-negative number, got {value!r}")
    return float(value)


def _argv(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(a, str) for a in value):
        raise PlanError(where, "expected an argv list of strings (a shell string is not accepted)")
    return tuple(value)


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(a, str) and a for a in value):
        raise PlanError(where, "expected a list of non-empty strings")
    return tuple(value)


def plan_from_dict(doc: Any) -> ExecutionPlan:
    """Build an :class:`ExecutionPlan` from a ``gensolver.plan/v1`` document.

    Raises
    ------
    PlanError
        With a JSON pointer to the offending place.
    """
    if not isinstance(doc, Mapping):
        raise PlanError("", f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("schema") != PLAN_SCHEMA:
        raise PlanError("/schema", f"expected {PLAN_SCHEMA!r}, got {doc.get('schema')!r}")
    if doc.get("time_unit", "s") != "s":
        raise PlanError("/time_unit", f"only 's' is defined, got {doc.get('time_unit')!r}")
    tasks: list[PlanTask] = []
    raw_tasks = doc.get("tasks", [])
    if not isinstance(raw_tasks, list):
        raise PlanError("/tasks", "expected a list")
    for k, t in enumerate(raw_tasks):
        where = f"/tasks/{k}"
        if not isinstance(t, Mapping) or not isinstance(t.get("id"), str) or not t.get("id"):
            raise PlanError(where, "expected an object with a non-empty string 'id'")
        pre = t.get("preemptible", True)
        if not isinstance(pre, bool):
            raise PlanError(f"{where}/preemptible", "expected true or false")
        tasks.append(PlanTask(t["id"], str(t.get("bid", "")), float(_num(t.get("value", 0.0), f"{where}/value") or 0.0),
                              pre, _argv(t.get("command"), f"{where}/command")))
    task_ids = {t.id for t in tasks}
    if len(task_ids) != len(tasks):
        raise PlanError("/tasks", "duplicate task ids")
    devices: list[DevicePlan] = []
    raw_devices = doc.get("devices")
    if not isinstance(raw_devices, list):
        raise PlanError("/devices", "expected a list")
    for k, d in enumerate(raw_devices):
        where = f"/devices/{k}"
        if not isinstance(d, Mapping) or not isinstance(d.get("id"), str) or not d.get("id"):
            raise PlanError(where, "expected an object with a non-empty string 'id'")
        mem = _num(d.get("memory"), f"{where}/memory", allow_none=True)
        cmp_ = _num(d.get("compute"), f"{where}/compute", allow_none=True)
        entries = []
        raw_entries = d.get("entries", [])
        if not isinstance(raw_entries, list):
            raise PlanError(f"{where}/entries", "expected a list")
        for j, e in enumerate(raw_entries):
            ew = f"{where}/entries/{j}"
            if not isinstance(e, Mapping):
                raise PlanError(ew, "expected an object")
            task = e.get("task")
            if not isinstance(task, str) or task not in task_ids:
                raise PlanError(f"{ew}/task", f"unknown task {task!r} (not in /tasks)")
            start = _num(e.get("start"), f"{ew}/start")
            end = _num(e.get("end"), f"{ew}/end")
            if not start < end:  # type: ignore[operator]
                raise PlanError(ew, f"start {start} must be before end {end}")
            memory = _num(e.get("memory"), f"{ew}/memory")
            compute = _num(e.get("compute", 0.0), f"{ew}/compute")
            entries.append(PlanEntry(task, d["id"], start, end, int(memory), compute,  # type: ignore[arg-type]
                                     _argv(e.get("command"), f"{ew}/command"), str(e.get("bid", "")),
                                     _str_list(e.get("slots", []), f"{ew}/slots") if e.get("slots") else ()))
        entries.sort(key=lambda e: (e.start, e.task))
        devices.append(DevicePlan(d["id"], None if mem is None else int(mem), cmp_, tuple(entries)))
    if len({d.id for d in devices}) != len(devices):
        raise PlanError("/devices", "duplicate device ids")
    points = []
    raw_points = doc.get("preemptions", [])
    if not isinstance(raw_points, list):
        raise PlanError("/preemptions", "expected a list")
    for k, p in enumerate(raw_points):
        where = f"/preemptions/{k}"
        if not isinstance(p, Mapping) or not isinstance(p.get("task"), str) or p["task"] not in task_ids:
            raise PlanError(where, "expected an object naming a task of /tasks")
        if p.get("kind") not in ("gap", "move"):
            raise PlanError(f"{where}/kind", f"expected 'gap' or 'move', got {p.get('kind')!r}")
        if p.get("mode") not in ("suspend", "checkpoint"):
            raise PlanError(f"{where}/mode", f"expected 'suspend' or 'checkpoint', got {p.get('mode')!r}")
        time_ = _num(p.get("time"), f"{where}/time")
        resume = _num(p.get("resume"), f"{where}/resume")
        if resume < time_:  # type: ignore[operator]
            raise PlanError(where, "resume must not be before time")
        if p["mode"] == "suspend" and p.get("from") != p.get("to"):
            raise PlanError(f"{where}/mode", "a task can only be suspended and resumed on the same devices")
        points.append(PreemptionPoint(p["task"], time_, resume, _str_list(p.get("from", []), f"{where}/from"),  # type: ignore[arg-type]
                                      _str_list(p.get("to", []), f"{where}/to"), p["kind"], p["mode"]))
    meta = doc.get("metadata", {})
    if not isinstance(meta, Mapping):
        raise PlanError("/metadata", "expected an object")
    horizon = _num(doc.get("horizon", 0.0), "/horizon")
    return ExecutionPlan(str(doc.get("name", "")), tuple(devices), tuple(tasks), tuple(points), float(horizon or 0.0), meta)


def read_plan(path: str | os.PathLike[str]) -> ExecutionPlan:
    """Read a ``gensolver.plan/v1`` JSON file.

    Parameters
    ----------
    path : path
        A UTF-8 JSON file.

    Returns
    -------
    ExecutionPlan

    Raises
    ------
    PlanError
        The file cannot be read (missing, a directory, unreadable), is not UTF-8 JSON, or is not
        a valid plan; the message names the file (:attr:`PlanError.path`) and, for a bad
        document, the JSON pointer.
    """
    p = Path(path)
    try:
        text = read_limited(p).decode("utf-8")
    except ReadError as exc:
        raise PlanError("", str(exc), path=str(p)) from None
    except FileNotFoundError:
        raise PlanError("", "no such file", path=str(p)) from None
    except IsADirectoryError:
        raise PlanError("", "is a directory, not a plan file", path=str(p)) from None
    except UnicodeDecodeError as exc:
        raise PlanError("", f"not a UTF-8 JSON file (byte {exc.start} cannot be decoded)", path=str(p)) from None
    except OSError as exc:
        raise PlanError("", f"cannot read it: {exc.strerror or exc}", path=str(p)) from None
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise PlanError("", f"not JSON ({exc})", path=str(p)) from None
    except ReadError as exc:
        raise PlanError("", f"not JSON ({exc})", path=str(p)) from None
    try:
        return plan_from_dict(doc)
    except PlanError as exc:
        raise PlanError(exc.pointer, exc.reason, path=str(p)) from None


def write_plan(plan: ExecutionPlan, path: str | os.PathLike[str]) -> None:
    """Write ``plan`` as JSON, atomically (temporary file, fsync, rename)."""
    with atomic_write(path) as fh:
        fh.write(plan.to_json())
        fh.write("\n")
