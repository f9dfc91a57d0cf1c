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
  to ``true`` when the caller gave no :class:`~gensolver.model.Task` for it; ``tenant`` (a
  string) and ``urgency`` (a number in [0, 1]) are the task's, written when known (the Slurm
  adapter maps tenants to accounts, the Kubernetes adapter urgency to a PriorityClass).
- ``preemptions``: one point wherever a task's timeline stops at ``time`` and continues at
  ``resume`` (``kind: "gap"``, same devices) or continues on other devices (``kind: "move"``).
  ``mode`` is ``"suspend"`` (SIGSTOP at ``time``, SIGCONT at ``resume``; the process keeps its
  device memory during the gap) when the devices stay the same and the task's memory still fits
  beside the other entries during the gap, otherwise ``"checkpoint"`` (SIGTERM with a grace
  period, then a fresh launch at ``resume`` with ``GENSOLVER_RESUME=1``).
- Unknown keys are ignored by :func:`plan_from_dict`, so consumers can add their own.

See ``docs/reference/plan-format.md`` for the same description with consumer notes.

The code lives in :mod:`.plan_model` (the model), :mod:`.plan_build` (:func:`to_plan`) and
:mod:`.plan_io` (reading and writing); this module re-exports it.
"""

from __future__ import annotations

from .plan_build import lease_plan, to_plan
from .plan_io import plan_from_dict, read_plan, write_plan
from .plan_model import (
    GIB,
    PLAN_SCHEMA,
    DevicePlan,
    ExecutionPlan,
    PlanEntry,
    PlanError,
    PlanTask,
    PreemptionPoint,
    Run,
)

__all__ = [
    "lease_plan",
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
