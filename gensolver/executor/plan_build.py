"""Building a plan: :func:`to_plan` lays a cleared round (instance and allocation) out per device."""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Sequence

from ..model import Instance
from .plan_model import (
    _TOL,
    GIB,
    MAX_PLAN_BYTES,
    DevicePlan,
    ExecutionPlan,
    PlanEntry,
    PlanError,
    PlanTask,
    PreemptionPoint,
    Run,
    _runs,
)

logger = logging.getLogger("gensolver.executor.plan")  # the name it always logged under


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
    cap_mem, cap_cmp = _capacities(instance, memory_unit)
    raw, plan_tasks = _entries(instance, winners, tasks, memory_unit)
    merged = _merge(raw)
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


def _capacities(instance: Instance, memory_unit: int) -> tuple[dict[str, int | None], dict[str, float | None]]:
    """Each device's memory (bytes) and compute capacity: the largest any of its slots offers."""
    cap_mem: dict[str, int | None] = {}
    cap_cmp: dict[str, float | None] = {}
    for s in instance.slots:
        if s.gpu is None:
            continue
        m = s.capacity.get("memory")
        c = s.capacity.get("compute")
        if m is not None:
            if not m * memory_unit <= MAX_PLAN_BYTES:
                raise PlanError(f"/slots/{s.id}/capacity/memory",
                                f"{m!r} units of {memory_unit} bytes is over the largest memory of a plan, 2**80 bytes")
            cap_mem[s.gpu] = max(cap_mem.get(s.gpu) or 0, int(m * memory_unit))
        else:
            cap_mem.setdefault(s.gpu, None)
        if c is not None:
            cap_cmp[s.gpu] = max(cap_cmp.get(s.gpu) or 0.0, float(c))
        else:
            cap_cmp.setdefault(s.gpu, None)
    return cap_mem, cap_cmp


def _entries(instance: Instance, winners: tuple[str, ...], tasks: dict[str, Any],
             memory_unit: int) -> tuple[list[PlanEntry], dict[str, PlanTask]]:
    """One entry per (winning bid, slot) and one :class:`PlanTask` per winner; checks the slots."""
    slot_by_id = {s.id: s for s in instance.slots}
    bid_by_id = {b.id: b for b in instance.bids}
    raw: list[PlanEntry] = []
    plan_tasks: dict[str, PlanTask] = {}
    for k, w in enumerate(winners):
        bid = bid_by_id.get(w)
        if bid is None:
            raise PlanError(f"/winners/{k}", f"unknown bid {w!r}")
        spec = tasks.get(bid.bidder)
        command = tuple(getattr(spec, "command", ()) or ())
        preemptible = bool(getattr(spec, "preemptible", True))
        urgency = getattr(spec, "urgency", None)
        plan_tasks[bid.bidder] = PlanTask(bid.bidder, bid.id, bid.value, preemptible, command,
                                          str(getattr(spec, "tenant", "") or ""),
                                          None if urgency is None else float(urgency))
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
    return raw, plan_tasks


def _merge(raw: list[PlanEntry]) -> list[PlanEntry]:
    """Consecutive slots of one task on one device with the same grant, merged into one entry."""
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
    return merged


def lease_plan(assignments: Mapping[str, tuple[Sequence[str], float, float]],
               devices: Mapping[str, tuple[float, float]], tasks: Mapping[str, Any], *,
               value: Mapping[str, float] | None = None, name: str = "") -> ExecutionPlan:
    """The plan of one committed round: each task on its devices from 0 to its end (seconds).

    Parameters
    ----------
    assignments : mapping of task id to (devices, memory GiB, end seconds)
        What a round engine committed (e.g. :class:`gensolver.market.engine.CreditEngine`'s
        starts), each held from the round's start to ``end``.
    devices : mapping of device id to (memory GiB, compute share)
    tasks : mapping of task id to :class:`~gensolver.model.Task`
        For compute, command, tenant and urgency.
    value : mapping of task id to float, optional
        Written as each task's value (default: the task's ``value``).
    """
    from ..model.instance import Bid, Slot

    slots, bids = [], []
    for tid, (devs, memory, end) in sorted(assignments.items()):
        ids = [f"{d}#{tid}" for d in devs]
        slots += [Slot(i, {"memory": devices[d][0], "compute": devices[d][1]}, d, 0.0, float(end))
                  for i, d in zip(ids, devs)]
        worth = float(value[tid]) if value is not None else float(tasks[tid].value)
        bids.append(Bid(f"{tid}|lease", tid, worth, {i: {"memory": float(memory), "compute": tasks[tid].compute}
                                                     for i in ids}))
    return to_plan(Instance(tuple(slots), tuple(bids), name=name), [b.id for b in bids], tasks, name=name or None)
