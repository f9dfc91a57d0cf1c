"""Reading and writing plans: :func:`plan_from_dict` (the one validation of a document), :func:`read_plan`, :func:`write_plan`."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from ..model.inputs import GZIP_MAGIC, ReadError, decompress_limited, loads_json, read_limited
from ..model.io import atomic_write
from .plan_model import (
    MAX_PLAN_BYTES,
    PLAN_SCHEMA,
    DevicePlan,
    ExecutionPlan,
    PlanEntry,
    PlanError,
    PlanTask,
    PreemptionPoint,
)


def _num(value: Any, where: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise PlanError(where, f"expected a finite non-negative number, got {value!r}")
    return float(value)


def _bytes(value: Any, where: str, *, allow_none: bool = False) -> int | None:
    """A memory amount in bytes: finite, non-negative, at most :data:`MAX_PLAN_BYTES`."""
    num = _num(value, where, allow_none=allow_none)
    if num is None:
        return None
    if num > MAX_PLAN_BYTES:
        raise PlanError(where, f"{value!r} bytes is over the largest memory of a plan, 2**80 bytes")
    return int(num)


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
        tenant = t.get("tenant", "")
        if not isinstance(tenant, str):
            raise PlanError(f"{where}/tenant", "expected a string")
        urgency = t.get("urgency")
        if urgency is not None:
            urgency = _num(urgency, f"{where}/urgency")
            if urgency is None or not 0.0 <= float(urgency) <= 1.0:
                raise PlanError(f"{where}/urgency", f"expected a number in [0, 1], got {t.get('urgency')!r}")
            urgency = float(urgency)
        tasks.append(PlanTask(t["id"], str(t.get("bid", "")), float(_num(t.get("value", 0.0), f"{where}/value") or 0.0),
                              pre, _argv(t.get("command"), f"{where}/command"), tenant, urgency))
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
        mem = _bytes(d.get("memory"), f"{where}/memory", allow_none=True)
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
            memory = _bytes(e.get("memory"), f"{ew}/memory")
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
        A UTF-8 JSON file, plain or gzip-compressed.

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
        data = read_limited(p)
        if data[:2] == GZIP_MAGIC:  # a gzip-compressed plan, as instances may be
            data = decompress_limited(data)
        text = data.decode("utf-8")
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
